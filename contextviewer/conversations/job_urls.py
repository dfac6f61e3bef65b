from django.urls import path

from . import job_views

urlpatterns = [
    path("import/", job_views.upload, name="upload"),
    path("jobs/", job_views.jobs_page, name="jobs"),
    path("jobs/<int:job_id>/", job_views.job_detail, name="job_detail"),
    path("jobs/<int:job_id>/cancel/", job_views.job_cancel, name="job_cancel"),
    path("jobs/<int:job_id>/retry/", job_views.job_retry, name="job_retry"),
]

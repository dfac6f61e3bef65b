from django.urls import path

from . import job_views

urlpatterns = [
    path("import/", job_views.upload, name="upload"),
    path("jobs/", job_views.jobs, name="jobs"),
    path("jobs/<int:job_id>/", job_views.job_detail, name="job_detail"),
]

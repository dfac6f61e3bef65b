from django.urls import path

from contextviewer.jobs import views

urlpatterns = [
    path("jobs/", views.jobs_page, name="jobs"),
    path("jobs/<int:job_id>/", views.job_detail, name="job_detail"),
    path("jobs/<int:job_id>/cancel/", views.job_cancel, name="job_cancel"),
    path("jobs/<int:job_id>/retry/", views.job_retry, name="job_retry"),
]

from django.urls import path

from . import views

urlpatterns = [
    path("projects/<slug:project>/usage/", views.analytics, name="project_usage"),
    path("projects/<slug:project>/usage/tools/", views.tools, name="project_usage_tools"),
]

from django.urls import path

from . import views

urlpatterns = [
    path("projects/<slug:project>/providers/", views.provider_settings, name="provider_settings"),
]

from django.urls import path

from contextviewer.ingest import views

urlpatterns = [
    path("import/", views.upload, name="upload"),
]

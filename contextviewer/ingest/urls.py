from django.urls import path

from contextviewer.ingest import push_script, views

urlpatterns = [
    path("import/", views.upload, name="upload"),
    path("push.py", push_script.push_script, name="push_script"),
]

from django.apps import AppConfig


class JobsConfig(AppConfig):
    name = "contextviewer.jobs"
    label = "jobs"

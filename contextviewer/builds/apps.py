from django.apps import AppConfig


class BuildsConfig(AppConfig):
    name = "contextviewer.builds"
    label = "builds"

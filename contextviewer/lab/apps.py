from django.apps import AppConfig


class LabConfig(AppConfig):
    name = "contextviewer.lab"
    label = "lab"

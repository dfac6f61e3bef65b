from django.apps import AppConfig


class DisplayConfig(AppConfig):
    name = "contextviewer.display"
    label = "display"

from django.apps import AppConfig


class UsageConfig(AppConfig):
    name = "contextviewer.usage"
    label = "usage"

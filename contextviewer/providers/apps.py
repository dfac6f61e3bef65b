from django.apps import AppConfig


class ProvidersConfig(AppConfig):
    name = "contextviewer.providers"
    label = "providers"

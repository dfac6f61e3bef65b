from django.apps import AppConfig


class IngestConfig(AppConfig):
    name = "contextviewer.ingest"
    label = "ingest"

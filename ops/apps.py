from django.apps import AppConfig


class OpsConfig(AppConfig):
    """Operations beside the product: the supervised server (`serve`) and the benchmarks (`bench`)."""

    name = "ops"
    label = "ops"

from django.apps import AppConfig


class LabConfig(AppConfig):
    name = "contextviewer.lab"
    label = "lab"
    # A replay that failed keeps its error, which may quote the conversation (see ingest/remask.py).
    masked_copies = (("lab", "PolicyReplay", ("error",), ()),)

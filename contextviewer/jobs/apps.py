from django.apps import AppConfig


class JobsConfig(AppConfig):
    name = "contextviewer.jobs"
    label = "jobs"
    masked_copies = (("jobs", "Job", ("error", "progress_text"), ("result",)),)  # see ingest/remask.py

from django.apps import AppConfig


class JobsConfig(AppConfig):
    name = "contextviewer.jobs"
    label = "jobs"
    masked_copies = (("jobs", "Job", ("error", "progress_text"), ("result",)),)  # see ingest/remask.py

    def ready(self) -> None:
        from contextviewer.jobs import forks  # lazy: needs the apps loaded (Django's signals)

        forks.install()  # a forked child never closes its parent's database connections

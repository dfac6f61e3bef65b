from django.apps import AppConfig


class ReviewConfig(AppConfig):
    name = "contextviewer.review"
    label = "review"
    masked_copies = (  # see ingest/remask.py
        ("fact probes", "FactProbe", (), ("facts",)),
        ("judge runs", "JudgeRun", ("prompt", "answer"), ("details",)),
    )

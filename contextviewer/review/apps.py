from django.apps import AppConfig


class ReviewConfig(AppConfig):
    name = "contextviewer.review"
    label = "review"
    fold_panels = ("contextviewer.review.queues.summaries_card",)  # under a fold's summary (viewer/panels.py)
    usage_fold_measures = "contextviewer.review.usage_measures.needed_again"  # the usage page's folds (usage/page.py)
    masked_copies = (  # see ingest/remask.py
        ("fact probes", "FactProbe", (), ("facts", "background", "continuation")),
        ("judge runs", "JudgeRun", ("prompt", "answer"), ("details",)),
    )

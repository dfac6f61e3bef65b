from django.apps import AppConfig


class BuildsConfig(AppConfig):
    name = "contextviewer.builds"
    label = "builds"
    # Cards on the conversation page (viewer/panels.py): the Handoff and "Fold at X %" cards.
    conversation_panels = ("contextviewer.builds.handoffs.handoff_card", "contextviewer.builds.handoffs.fold_preview_card")

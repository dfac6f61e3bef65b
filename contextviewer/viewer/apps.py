from django.apps import AppConfig


class ViewerConfig(AppConfig):
    """The pages of a stored conversation: the index, the conversation page and its fragments (turns,
    segments, tool views, the gauge and curve, live follow) and the read API. The store it reads
    (models, the segment loader, search) is `conversations`, below it."""

    name = "contextviewer.viewer"
    label = "viewer"

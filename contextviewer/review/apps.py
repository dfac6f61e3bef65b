from django.apps import AppConfig


class ReviewConfig(AppConfig):
    name = "contextviewer.review"
    label = "review"

from django.apps import AppConfig


class ConversationsConfig(AppConfig):
    name = "contextviewer.conversations"
    label = "conversations"

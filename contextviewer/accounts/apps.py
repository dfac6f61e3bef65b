from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "contextviewer.accounts"
    label = "accounts"

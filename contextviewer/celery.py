import os

from celery import Celery

from contextviewer import broker

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "contextviewer.settings")
broker.install()  # "filesystem://" with atomic message files (see contextviewer/broker.py)

app = Celery("contextviewer")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

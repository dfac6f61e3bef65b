"""Fingerprints of secrets found by their context, kept to mask them by value in later imports
(see contextviewer/ingest/remask.py). Never the secret itself: a keyed hash and its length.
And the files push clients send (PushFile, contextviewer/ingest/push.py)."""

from django.db import models

from contextviewer.accounts.models import PushClient
from contextviewer.conversations.models import Conversation


class SecretPrint(models.Model):
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="secret_prints")  # the root
    kind = models.CharField(max_length=40)
    length = models.IntegerField()
    digest = models.CharField(max_length=64)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["conversation", "digest"], name="secret_print_once")]


class PushFile(models.Model):
    """A file a push client sends (push.py): its path relative to the folder it pushes, and the size
    and sha256 of the bytes held of it (the client appends to them, checked against the hash)."""

    client = models.ForeignKey(PushClient, on_delete=models.CASCADE, related_name="files")
    path = models.CharField(max_length=1024)  # relative to the pushed folder's root, as the client names it
    size = models.BigIntegerField(default=0)
    sha256 = models.CharField(max_length=64)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["client", "path"], name="push_file_once")]

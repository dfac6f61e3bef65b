"""Celery's filesystem broker, made safe for a web server and a worker on one machine.

kombu's filesystem transport writes a message file in place while the worker may already be
moving and reading it: under load the worker read an empty file, raised JSONDecodeError and its
consumer died (the message was lost too). Here a message is written to a hidden temporary name
and renamed into the queue folder, so a reader only ever sees complete files; a file that still
cannot be decoded is logged and skipped instead of stopping the worker.
"""

from __future__ import annotations

import logging
import os
import uuid
from json import JSONDecodeError
from queue import Empty
from time import monotonic

from kombu.transport import TRANSPORT_ALIASES, filesystem
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps

log = logging.getLogger(__name__)


class Channel(filesystem.Channel):
    def _put(self, queue, payload, **kwargs):
        name = f"{int(round(monotonic() * 1000))}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        partial = os.path.join(self.data_folder_out, f".{uuid.uuid4()}.partial")  # never matches "*.msg"
        with open(partial, "wb") as fh:
            fh.write(str_to_bytes(dumps(payload)))
        os.replace(partial, final)

    def _get(self, queue):
        try:
            return super()._get(queue)
        except JSONDecodeError:
            log.error("skipped an unreadable message file in queue %s", queue)
            raise Empty() from None


class Transport(filesystem.Transport):
    Channel = Channel

    @property
    def default_connection_params(self):
        # A folder has no host: without this, kombu warns "No hostname was supplied. Reverting to
        # default 'localhost'" on every connection (every `manage.py import` printed it).
        return {"port": self.default_port}


def install() -> None:
    """Make "filesystem://" mean this transport in this process."""
    TRANSPORT_ALIASES["filesystem"] = "contextviewer.broker:Transport"

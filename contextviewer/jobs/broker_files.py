"""The embedded default's broker: kombu's filesystem transport, with every message seen whole and
taken once (settings.py selects it for ``filesystem://``).

kombu's own transport creates a message's file in the queue folder and then writes into it; a
worker polling at that moment (every 0.05 s here) moves the still empty file away, reads nothing
and the message is gone: a job stays queued until the reconciler sends it again, an hour later
(seen: 7 of 3,000 messages put by one process while another consumed; a job recovery test waited
for a job that never came). Here a message is written under a name no consumer reads
(``<name>.partial``) and renamed into place, which is atomic within a folder. A consumer takes a
message by renaming it into the processed folder beside the queue (kombu moves it to the system's
temporary folder, a copy and a delete when that is another file system): of two consumers, one
wins the rename and the other goes on to the next file.

A worker on this transport runs Celery's blocking loop, which looks for a stop request only
between two waits for a message, of 2 s each; here a wait also ends as soon as a stop is asked
for, so a worker told to stop (Ctrl+C, `serve` stopping, SIGTERM) starts stopping at once.
"""

from __future__ import annotations

import os
import socket
import uuid
from queue import Empty
from time import monotonic

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import bytes_to_str, str_to_bytes
from kombu.utils.json import dumps, loads


class Channel(filesystem.Channel):
    def _put(self, queue, payload, **kwargs):
        """Put a message on `queue`: written whole under a name consumers skip, then renamed."""
        name = f"{int(round(monotonic() * 1000))}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        partial = final + ".partial"  # its part after the first dot is not "<queue>.msg": never read
        try:
            with open(partial, "wb") as fh:
                fh.write(str_to_bytes(dumps(payload)))
            os.replace(partial, final)
        except OSError as exc:
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc

    def _get(self, queue):
        """The next message of `queue`, taken by an atomic rename (one consumer gets it)."""
        wanted = f"{queue}.msg"
        taken_folder = self.processed_folder
        for name in sorted(os.listdir(self.data_folder_in)):
            if name.partition(".")[2] != wanted:
                continue
            taken = os.path.join(taken_folder, f"{os.getpid()}-{name}")
            try:
                os.rename(os.path.join(self.data_folder_in, name), taken)
            except OSError:  # another consumer took it first, or it is gone
                continue
            try:
                with open(taken, "rb") as fh:
                    payload = fh.read()
                if not self.store_processed:
                    os.remove(taken)
            except OSError as exc:
                raise ChannelError(f"Cannot read file {taken!r} from queue.") from exc
            return loads(bytes_to_str(payload))
        raise Empty()


class Transport(filesystem.Transport):
    Channel = Channel

    @property
    def default_connection_params(self) -> dict:
        # No host: a folder. (kombu's says "localhost", then warns on every connection given by
        # class, as this one is, that no host name was supplied.)
        return {}

    def drain_events(self, connection, timeout=None):
        """Wait for a message as kombu does, in steps of STEP seconds, and end the wait early
        (as a timeout) once the worker is asked to stop."""
        deadline = None if timeout is None else monotonic() + timeout
        while True:
            step = STEP if deadline is None else max(0.0, min(STEP, deadline - monotonic()))
            try:
                return super().drain_events(connection, timeout=step)
            except socket.timeout:
                if _stop_asked() or (deadline is not None and monotonic() >= deadline):
                    raise


STEP = 0.1  # seconds: how soon a wait for a message notices a stop request


def _stop_asked() -> bool:
    from celery.worker import state  # lazy: only a worker's loop asks; loaded with the worker

    # Set to the exit code (0 for a warm stop), as Celery's own maybe_shutdown() reads them.
    return any(flag is not None and flag is not False for flag in (state.should_stop, state.should_terminate))

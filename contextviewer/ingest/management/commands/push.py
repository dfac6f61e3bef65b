"""python manage.py push --server URL --token TOKEN [--watch] [--mask] [FOLDERS | auto]

push.py (served by every server at /push.py) run from the project: the same code
(contextviewer/ingest/push_client.py), with this installation's registry of each agent's default
folders (``auto``) and its masking rules. Sends this machine's sessions to another contextviewer
server; see docs/push.md."""

import sys

from django.core.management.base import BaseCommand

from contextviewer.core import secrets
from contextviewer.ingest import push_client
from contextviewer.ingest.watch import auto_locations


class Command(BaseCommand):
    # A client of another server: no database and no system checks needed.
    requires_system_checks = []
    help = "Send this machine's agent sessions to a contextviewer server (push.py)."

    def add_arguments(self, parser):
        push_client.add_arguments(parser)

    def handle(self, *args, **opts):
        opts = _Options(opts)
        code = push_client.run(opts, locations=auto_locations(), secrets=secrets, out=self.stdout)
        if code:
            sys.exit(code)


class _Options:
    """The command's options as push.py's argparse namespace names them."""

    def __init__(self, opts: dict):
        self.__dict__.update(opts)

"""python manage.py formats [--json] [PATH ...]

The formats contextviewer reads (with where each agent writes its logs), or, given paths, which
format claims each one and how strongly."""

import json
from pathlib import Path

from django.core.management.base import BaseCommand

from contextviewer.importers import formats


class Command(BaseCommand):
    # Data commands skip Django's system checks: they load the URL configuration and the API's
    # schemas (0.3 s of every run). The server and `manage.py check` run them.
    requires_system_checks = []
    help = "List the session-log formats contextviewer reads, or say which format claims each PATH."

    def add_arguments(self, parser):
        parser.add_argument("paths", nargs="*")
        parser.add_argument("--json", action="store_true", help="print JSON")

    def handle(self, *args, **opts):
        if opts["paths"]:
            rows = []
            for raw in opts["paths"]:
                path = Path(raw).expanduser()
                claims = formats.scores(path)
                rows.append({
                    "path": str(path),
                    "format": claims[0][1].name if claims else None,
                    "claims": [{"format": f.name, "score": round(s, 3)} for s, f in claims],
                    "refusal": None if claims else formats.refusal(path),
                })
            if opts["json"]:
                self.stdout.write(json.dumps(rows, indent=2))
            else:
                for row in rows:
                    verdict = row["format"] or row["refusal"]
                    self.stdout.write(f"{row['path']}: {verdict}")
            return
        rows = [
            {"name": f.name, "label": f.label, "storage": f.storage, "where": f.where, "watched": list(f.locations)}
            for f in formats.registry()
        ]
        if opts["json"]:
            self.stdout.write(json.dumps(rows, indent=2))
            return
        for row in rows:
            self.stdout.write(f"{row['label']} ({row['name']}): {row['where']}")

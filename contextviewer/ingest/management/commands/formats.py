"""python manage.py formats [--list] [--json] [PATH ...]

The formats contextviewer reads (with where each agent writes its logs), or, given paths, which
format claims each one and how strongly. A folder that no format reads as one session is answered
as ``import`` would read it, file by file: the same discovery (importers/formats.py ``discover``)
and the same skip reasons (ingest/files.py), so the two never disagree."""

import json
from pathlib import Path

from django.core.management.base import BaseCommand

from contextviewer.importers import formats
from contextviewer.ingest.files import UNREAD, companions_read, refusal_of, skipped_files


class Command(BaseCommand):
    # Data commands skip Django's system checks: they load the URL configuration and the API's
    # schemas (0.3 s of every run). The server and `manage.py check` run them.
    requires_system_checks = []
    help = "List the session-log formats contextviewer reads, or say which format claims each PATH."

    def add_arguments(self, parser):
        parser.add_argument("paths", nargs="*")
        parser.add_argument("--json", action="store_true", help="print JSON")
        parser.add_argument("--list", action="store_true",
                            help="list the formats with where each agent writes its logs (what no PATH does too)")

    def handle(self, *args, **opts):
        if opts["paths"] and not opts["list"]:
            rows = []
            for raw in opts["paths"]:
                path = Path(raw).expanduser()
                if path.is_dir() and formats.claim(path) is None:
                    rows.append(_folder(path))
                    continue
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
                    if "sessions" in row:
                        self._write_folder(row)
                        continue
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

    def _write_folder(self, row: dict) -> None:
        sessions, skipped = row["sessions"], row["skipped"]
        if not sessions:
            self.stdout.write(f"{row['path']}: {row['refusal']}")
        else:
            files = sum(1 + len(s["subagents"]) for s in sessions)
            self.stdout.write(
                f"{row['path']}: a folder; import reads {len(sessions)} session{'s' if len(sessions) != 1 else ''} "
                f"from {files} file{'s' if files != 1 else ''}, skips {len(skipped)}"
            )
        for session in sessions:
            self.stdout.write(f"  {session['main'] or '(no main file)'}: {session['format']}")
            for companion in session["read_with"]:
                self.stdout.write(f"    {companion}: read with it")
            for sub in session["subagents"]:
                what = "compaction" if sub["compaction"] else "sub-agent"
                self.stdout.write(f"    {sub['path']}: {session['format']}, {what} {sub['agent_id']}")
                for companion in sub["read_with"]:
                    self.stdout.write(f"      {companion}: read with it")
        for item in skipped:
            self.stdout.write(f"  {item['path']}: skipped: {item['reason']}")


def _folder(path: Path) -> dict:
    """What ``import`` does with a folder: the sessions it reads (each file and the format that reads
    it) and the files it skips, with why."""
    found = formats.discover(path)
    skipped = skipped_files(found)
    beside: dict[str, list[str]] = {}
    for companion, with_file in companions_read(found).items():
        if companion.is_file():
            beside.setdefault(str(with_file), []).append(str(companion))
    for item in skipped:
        if item["reason"] == UNREAD:  # say what it looked like, as the refusal of that file would
            item["reason"] = formats.refusal(Path(item["path"]))
    return {
        "path": str(path),
        "format": None,
        "sessions": [
            {
                "format": group.format,
                "main": str(group.main) if group.main is not None else None,
                "session_id": group.session_id,
                "read_with": beside.get(str(group.main), []),
                "subagents": [
                    {"path": str(s.path), "agent_id": s.agent_id, "compaction": s.is_compaction,
                     "read_with": beside.get(str(s.path), [])}
                    for s in group.subagents
                ],
            }
            for group in found.sessions
        ],
        "skipped": skipped,
        "refusal": None if found.sessions else refusal_of(path, found),
    }

"""python manage.py import PATH [PATH ...] [--project NAME] [--json] [--queue]

Runs the same import job the web upload and the API start: in this process, with progress on
stderr (or, with --queue, on the running worker)."""

import gc
import json
import sys
from pathlib import Path

from django.core.management.base import BaseCommand


class Command(BaseCommand):
    # Data commands skip Django's system checks: they load the URL configuration and the API's
    # schemas (0.3 s of every run). The server and `manage.py check` run them.
    requires_system_checks = []
    help = (
        "Import agent session logs (a file, or a folder searched recursively: ~/.claude/projects, "
        "~/.codex/sessions, ...); each file is read by the format that claims it."
    )

    def add_arguments(self, parser):
        parser.add_argument("paths", nargs="+")
        parser.add_argument("--project", default="Default", help="project name (created if missing)")
        parser.add_argument("--json", action="store_true", help="print one JSON object")
        parser.add_argument("--queue", action="store_true", help="hand the job to the running worker")

    def handle(self, *args, **opts):
        from contextviewer.accounts.services import get_or_create_project  # lazy: `import --help` loads no models (bench startup)
        from contextviewer.ingest import imports as services  # lazy: nor the import machinery
        from contextviewer.jobs import queue as jobs  # lazy: nor the job queue
        from contextviewer.jobs.models import JobStatus  # lazy: nor the job model

        gc.freeze()  # what start-up loaded stays: no collection scans it again
        gc.enable()  # manage.py turned collection off while the modules loaded

        project = get_or_create_project(opts["project"])
        paths = [str(Path(p).expanduser().resolve()) for p in opts["paths"]]
        job, _ = services.start_import(project, paths=paths, enqueue=opts["queue"])
        if opts["queue"]:
            self.stdout.write(f"queued import job {job.pk}")
            return
        last = [-1]

        def show(fraction: float, text: str) -> None:
            pct = int(fraction * 100)
            step = 1 if sys.stderr.isatty() else 10  # a log file gets a line per 10 %
            if pct // step != last[0]:
                last[0] = pct // step
                sys.stderr.write(f"\r{pct:3d}% {text[:70]:<70}")
                sys.stderr.flush()

        job = jobs.run(job.pk, on_progress=None if opts["json"] else show)
        if not opts["json"]:
            sys.stderr.write("\n")
        if job is None or job.status != JobStatus.SUCCEEDED:
            error = job.error if job else "the job was taken by another process"
            if opts["json"]:
                errors = (job.result or {}).get("errors") if job else None
                errors = errors or [{"path": "", "line": 0, "reason": error}]
                self.stdout.write(json.dumps({"conversations": [], "errors": errors}))
            else:
                self.stderr.write(f"import failed: {error}")
            sys.exit(2)
        result = job.result
        if opts["json"]:
            self.stdout.write(json.dumps(result, default=str))
        else:
            self._print_human(result)
        file_errors = [e for e in result["errors"] if not e.get("line")]
        if file_errors and not result["conversations"]:
            sys.exit(1)

    def _print_human(self, result):
        for c in result["conversations"]:
            indent = "  " if c["parent_external_id"] else ""
            folds = f", {len(c['folds'])} folds" if c["folds"] else ""
            bad = f", {c['bad_lines']} bad lines" if c["bad_lines"] else ""
            self.stdout.write(
                f"{indent}{c['external_id']}: {c['messages']} messages, {c['model_calls']} model calls, "
                f"{c['tool_calls']} tool calls{folds}{bad}  {c['title'][:60]}"
            )
        for e in result["errors"]:
            where = f"{e.get('path', '')}:{e['line']}" if e.get("line") else e.get("path", "")
            self.stderr.write(f"{where}: {e['reason']}")
        files = result["files"]
        unchanged = sum(1 for f in files if f["status"] == "unchanged")
        self.stdout.write(
            f"{len(files)} files, {unchanged} unchanged, {len(result['conversations'])} conversations, "
            f"{len(result['errors'])} problems"
        )

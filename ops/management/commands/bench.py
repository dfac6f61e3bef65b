"""python manage.py bench import [--mb 200] | bench pages [--sizes 1000,10000,50000]
| bench load [--clients 20] [--seconds 30] [--messages 41000] | bench startup
| bench vs-claude-code-log [--file SESSION.jsonl]
| bench scale [--sessions 1000] [--scale-workers 1,2] [--repeat 2] [--unsplit] (PostgreSQL + Redis)
| bench usage [--sessions 1000] (the analytics page and the usage API)
| bench vs-agentsview folder|search|file [--sessions 1000] [--size 55] [--repeat 3] [--rounds 20] [--database-url URL] (ops/bench/agentsview.py)

Benchmarks print figures; they are not timed tests. `bench import` runs in a throw-away SQLite
database (or the configured PostgreSQL) under a temporary data folder, never in your own data.
`bench load` starts the default web server on a free port of 127.0.0.1 over a scratch data folder
with a synthetic conversation, runs concurrent readers for a bounded time and number of requests,
and prints p50/p95/errors (conversations/bench_load.py).
"""

import json
import resource
import sys
import tempfile
import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from contextviewer.importers.codex import synthetic as codex_synthetic
from contextviewer.importers.claude_code import synthetic
from ops.bench import agentsview as bench_agentsview, ccl as bench_ccl, live as bench_live, load as bench_load, pages as bench_pages, scale as bench_scale, startup as bench_startup, usage as bench_usage


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class Command(BaseCommand):
    help = ("Benchmarks: `bench import` (import speed and memory), `bench pages` (page speed) and "
            "`bench load` (concurrent readers against the web server).")

    def add_arguments(self, parser):
        parser.add_argument("what", choices=["import", "pages", "load", "startup", "vs-claude-code-log", "scale", "usage",
                                             "vs-agentsview", "live"])
        parser.add_argument("measure", nargs="?", choices=["folder", "search", "file"],
                            help="bench vs-agentsview: a folder of --sessions small sessions imported, search across "
                            "them, or one --size MB session imported, each beside agentsview")
        parser.add_argument("--size", type=float, default=55.0, help="bench vs-agentsview file: MB of the session")
        parser.add_argument("--rounds", type=int, default=20, help="bench vs-agentsview search: rounds of the searches")
        parser.add_argument("--mb", type=float, default=200.0, help="bench import: size of the synthetic session "
                            "(a Claude Code session, then a Codex rollout of the same size)")
        parser.add_argument("--no-codex", action="store_true", help="bench import: only the Claude Code session")
        parser.add_argument("--file", help="bench import: an existing session file instead of a synthetic one")
        parser.add_argument("--small", type=int, default=0, help="bench import: instead, N small generated sessions "
                            "(30 message lines each, a sub-agent in every fourth) imported one by one: the cost per "
                            "file (wall, and CPU of the writer, the parsing process and a local PostgreSQL server)")
        parser.add_argument("--sizes", default="1000,10000,50000", help="bench pages: conversation sizes")
        parser.add_argument("--folds-mb", type=float, default=55.0, help="bench pages: size of the synthetic "
                            "Claude Code session with --folds compactions whose first page is measured (0: none)")
        parser.add_argument("--folds", type=int, default=16, help="bench pages: compactions of that session")
        parser.add_argument("--keep", action="store_true", help="keep the generated files")
        parser.add_argument("--repeat", type=int, default=None, help="bench import: runs of the floor and the import, "
                            "interleaved; the figures are the fastest of each (a noisy machine slows runs, never speeds them) "
                            "(default 3); bench load: load runs against the same server, then the best and the spread (default 1)")
        parser.add_argument("--database-url", default="", help="bench import, bench scale, bench vs-agentsview search: a "
                            "scratch PostgreSQL database (default: a fresh SQLite file in a temporary folder)")
        parser.add_argument("--clients", type=int, default=20, help="bench load: concurrent readers")
        parser.add_argument("--seconds", type=float, default=30.0, help="bench load: length of a run (it stops then)")
        parser.add_argument("--messages", type=int, default=41_000, help="bench load: messages of the conversation")
        parser.add_argument("--requests", type=int, default=None, help="bench load: at most this many requests "
                            "in a run (default 500 per client)")
        parser.add_argument("--workers", type=int, default=None, help="bench load: server processes "
                            "(default CONTEXTVIEWER_WEB_WORKERS or 2)")
        parser.add_argument("--threads", type=int, default=None, help="bench load: threads per server process "
                            "(default CONTEXTVIEWER_WEB_THREADS or 24)")
        parser.add_argument("--worker-class", choices=["gthread", "sync"], default="gthread",
                            help="bench load: sync is the server as it was before threads, to compare")
        parser.add_argument("--port", type=int, default=None, help="bench load: the server's port (default: a free one)")
        parser.add_argument("--reuse", help="bench load: a folder kept by an earlier `bench load --keep` "
                            "(its conversation, no new import)")
        parser.add_argument("--during-import", type=float, default=None, metavar="MB", help="bench load: a synthetic "
                            "session of MB megabytes imported back to back during each run (at the worker's nice)")
        parser.add_argument("--sessions", type=int, default=1000, help="bench scale: generated sessions in the folder; bench usage: sessions written")
        parser.add_argument("--session-messages", type=int, default=30, help="bench scale: messages of each session")
        parser.add_argument("--scale-workers", default="1,2", help="bench scale: worker counts to run, each a "
                            "process of one pool process")
        parser.add_argument("--upload-store", default="database", choices=["files", "database"],
                            help="bench scale: where the workers read the folder: uploaded to the database store, "
                                 "each worker with its own data folder (default), or read from this disk (files)")
        parser.add_argument("--broker-url", default="", help="bench scale: a scratch Redis database for the broker "
                            f"(default {bench_scale.DEFAULT_BROKER})")
        parser.add_argument("--cache-url", default="", help=f"bench scale: a scratch Redis database for the cache "
                            f"(default {bench_scale.DEFAULT_CACHE})")
        parser.add_argument("--unsplit", action="store_true", help="bench scale: also one worker importing the "
                            "folder as one job (no parts), to show what the parts cost")
        parser.add_argument("--part-seconds", default="", help="bench scale: CONTEXTVIEWER_IMPORT_PART_SECONDS "
                            "for the workers (default: the import's own)")
        parser.add_argument("--folder", help="bench scale: an existing folder of sessions instead of generated ones")

    def handle(self, *args, **opts):
        if opts["what"] == "import":
            opts["repeat"] = 3 if opts["repeat"] is None else opts["repeat"]
            self.bench_import(opts)
        elif opts["what"] == "vs-agentsview":
            if not opts["measure"]:
                raise CommandError("bench vs-agentsview folder|search|file")
            try:
                bench_agentsview.run(self.stdout, what=opts["measure"], sessions=opts["sessions"],
                                     repeat=opts["repeat"] or 3, size_mb=opts["size"], rounds=opts["rounds"],
                                     keep=opts["keep"], database_url=opts["database_url"])
            except RuntimeError as e:
                raise CommandError(str(e)) from e
        elif opts["what"] == "usage":
            bench_usage.run(self.stdout, sessions=opts["sessions"])
        elif opts["what"] == "live":  # --clients open pages, --rounds appended turns
            try:
                bench_live.run(self.stdout, pages=opts["clients"], rounds=opts["rounds"], keep=opts["keep"])
            except RuntimeError as e:
                raise CommandError(str(e)) from e
        elif opts["what"] == "startup":
            bench_startup.run(self.stdout, repeat=opts["repeat"] or 5)
        elif opts["what"] == "vs-claude-code-log":
            try:
                bench_ccl.run(self.stdout, path=opts["file"], repeat=opts["repeat"] or 3, keep=opts["keep"])
            except RuntimeError as e:
                raise CommandError(str(e)) from e
        elif opts["what"] == "scale":
            try:
                bench_scale.run(
                    self.stdout, sessions=opts["sessions"], messages=opts["session_messages"],
                    workers=[int(n) for n in opts["scale_workers"].split(",") if n.strip()],
                    repeat=opts["repeat"] or 2, database_url=opts["database_url"], broker_url=opts["broker_url"],
                    cache_url=opts["cache_url"], unsplit=opts["unsplit"], part_seconds=opts["part_seconds"],
                    keep=opts["keep"], folder=opts["folder"], store=opts["upload_store"],
                )
            except RuntimeError as e:
                raise CommandError(str(e)) from e
        elif opts["what"] == "load":
            if opts["clients"] < 1 or opts["seconds"] <= 0 or opts["messages"] < 1:
                raise CommandError("--clients, --seconds and --messages must be positive")
            try:
                bench_load.run(
                    self.stdout, clients=opts["clients"], seconds=opts["seconds"], messages=opts["messages"],
                    max_requests=opts["requests"], repeat=opts["repeat"] or 1, workers=opts["workers"],
                    threads=opts["threads"], worker_class=opts["worker_class"], keep=opts["keep"], reuse=opts["reuse"],
                    port=opts["port"], during_import_mb=opts["during_import"],
                )
            except RuntimeError as e:
                raise CommandError(str(e)) from e
        else:
            sizes = tuple(int(s) for s in opts["sizes"].split(",") if s)
            bench_pages.run(self.stdout, sizes=sizes, folds_mb=opts["folds_mb"], folds=opts["folds"])

    def bench_import(self, opts):
        # The floor and the import run in separate child processes so that each peak RSS is its own.
        workdir = Path(tempfile.mkdtemp(prefix="contextviewer-bench-"))
        if opts["small"] > 0:
            self.measure_small(workdir, opts)
            return
        if opts["file"]:
            path = Path(opts["file"]).resolve()
            if not path.exists():
                raise CommandError(f"no such file: {path}")
        else:
            t0 = time.perf_counter()
            path = synthetic.write_session(workdir / "sessions", target_bytes=int(opts["mb"] * 1e6), seed=1)
            self.stdout.write(f"generated {path.stat().st_size / 1e6:.1f} MB in {time.perf_counter() - t0:.1f} s: {path}")
        self.measure(path, workdir, opts, "main + sub-agent files")
        if not opts["file"] and not opts["no_codex"]:
            # The same method on a Codex rollout of the same size (its own format, its own figures).
            t0 = time.perf_counter()
            codex_path = codex_synthetic.write_rollout(workdir / "codex", target_bytes=int(opts["mb"] * 1e6), seed=1)
            self.stdout.write("")
            self.stdout.write(f"generated a Codex rollout of {codex_path.stat().st_size / 1e6:.1f} MB in "
                              f"{time.perf_counter() - t0:.1f} s: {codex_path}")
            self.measure(codex_path, workdir, opts, "Codex rollout")
        if not opts["keep"]:
            import shutil

            shutil.rmtree(workdir, ignore_errors=True)

    def measure(self, path: Path, workdir: Path, opts, what: str) -> None:
        """Floor and import of the files beside `path`, in child processes, the fastest of --repeat."""
        import os
        import subprocess

        from django.conf import settings

        size_mb = sum(p.stat().st_size for p in session_files(path)) / 1e6
        env = {
            "CONTEXTVIEWER_DATA_DIR": str(workdir / "data"),
            "TIKTOKEN_CACHE_DIR": str(settings.TIKTOKEN_CACHE_DIR),
            "DATABASE_URL": opts["database_url"],
        }
        child_env = {**os.environ, **env}
        base = [sys.executable, "-c", _CHILD, str(path)]
        floors, runs = [], []
        for n in range(max(1, opts["repeat"])):
            # Every import starts from an empty database: a fresh SQLite file, or emptied tables.
            child_env["CONTEXTVIEWER_SQLITE_PATH"] = str(workdir / "data" / f"bench-{n}.sqlite3")
            floor = subprocess.run([*base, "floor"], env=child_env, capture_output=True, text=True)
            if floor.returncode != 0:
                raise CommandError(floor.stderr[-3000:])
            floors.append(json.loads(floor.stdout))
            run = subprocess.run([*base, "import"], env=child_env, capture_output=True, text=True)
            if run.returncode != 0:
                raise CommandError(run.stderr[-3000:])
            runs.append(json.loads(run.stdout))
            if not opts["keep"]:
                for leftover in (workdir / "data").glob(f"bench-{n}.sqlite3*"):
                    leftover.unlink()
        floor = min(floors, key=lambda r: r["seconds"])
        count_floor = min(floors, key=lambda r: r["count_seconds"])
        result = min(runs, key=lambda r: r["seconds"])
        ratio = result["seconds"] / floor["seconds"] if floor["seconds"] else float("nan")
        count_ratio = result["seconds"] / count_floor["count_seconds"] if count_floor["count_seconds"] else float("nan")
        w = self.stdout.write
        w(f"file:     {size_mb:.1f} MB ({what}), {result['messages']} messages, "
          f"{result['model_calls']} model calls, {result['folds']} folds")
        w(f"database: {result['database']}")
        w(f"import:   {result['seconds']:.2f} s  {size_mb / result['seconds']:.1f} MB/s  "
          f"{result['messages'] / result['seconds']:.0f} messages/s  CPU {result['cpu_seconds']:.1f} s "
          f"(parsing process {result['cpu_children']:.1f} s)  "
          f"peak RSS {result['peak_rss_mb']:.0f} MB (+ parsing process {result['child_peak_rss_mb']:.0f} MB)")
        w(f"floor:    {floor['seconds']:.2f} s  {size_mb / floor['seconds']:.1f} MB/s  (one thread: json.loads and tiktoken o200k "
          f"encode_ordinary of every message string, same process kind)  peak RSS {floor['peak_rss_mb']:.0f} MB")
        w(f"counting: {count_floor['count_seconds']:.2f} s  {size_mb / count_floor['count_seconds']:.1f} MB/s  (the floor of "
          f"the ratio below: one thread counting every message string with tiktoken o200k, "
          f"len(encode_ordinary(s)) for each of {count_floor['strings']} strings, {count_floor['chars'] / 1e6:.1f} M characters, "
          f"{count_floor['count_tokens']} tokens; the strings are read out of the JSON before the clock starts)")
        if len(runs) > 1:
            imports = ", ".join("%.1f" % r["seconds"] for r in runs)
            floor_times = ", ".join("%.1f" % r["seconds"] for r in floors)
            count_times = ", ".join("%.1f" % r["count_seconds"] for r in floors)
            w(f"runs:     import {imports} s; floor {floor_times} s; counting {count_times} s (the fastest of each is used)")
        w(f"ratio:    import / counting = {count_ratio:.2f}x (target <= 1.25x)")
        w(f"          import / floor = {ratio:.2f}x (target <= 2x); peak RSS target < 512 MB")


    def measure_small(self, workdir: Path, opts) -> None:
        """Per-file cost of many small sessions, each imported as `import_path` imports one (one
        transaction per file), in a child process on a fresh database, the fastest of --repeat."""
        import os
        import shutil
        import subprocess

        from django.conf import settings

        folder = workdir / "small"
        t0 = time.perf_counter()
        for n in range(opts["small"]):
            synthetic.write_session(folder / f"s{n:04d}", messages=30, seed=n, subagent=n % 4 == 0, compaction=False)
        files = sorted(folder.rglob("*.jsonl"))
        self.stdout.write(f"generated {opts['small']} sessions, {len(files)} files, "
                          f"{sum(f.stat().st_size for f in files) / 1e6:.1f} MB in {time.perf_counter() - t0:.1f} s")
        env = {**os.environ, "CONTEXTVIEWER_DATA_DIR": str(workdir / "data"), "DATABASE_URL": opts["database_url"],
               "TIKTOKEN_CACHE_DIR": str(settings.TIKTOKEN_CACHE_DIR)}
        runs = []
        for n in range(max(1, opts["repeat"])):
            env["CONTEXTVIEWER_SQLITE_PATH"] = str(workdir / "data" / f"small-{n}.sqlite3")
            run = subprocess.run([sys.executable, "-c", _SMALL_CHILD, str(folder)], env=env, capture_output=True, text=True)
            if run.returncode != 0:
                raise CommandError(run.stderr[-3000:])
            runs.append(json.loads(run.stdout))
            for leftover in (workdir / "data").glob(f"small-{n}.sqlite3*"):
                leftover.unlink()
        best = min(runs, key=lambda r: r["seconds"])
        per = 1000 / best["files"]
        w = self.stdout.write
        w(f"database: {best['database']}")
        w(f"per file: {best['seconds'] * per:.1f} ms wall; CPU {best['cpu_total'] * per:.1f} ms = writer "
          f"{best['cpu_writer'] * per:.1f} + parsing process {best['cpu_parser'] * per:.1f} + database server "
          + (f"{best['cpu_server'] * per:.1f}" if best["cpu_server"] is not None
             else "0 (SQLite: in the writer)" if best["database"].startswith("sqlite") else "n/a (not on this machine)")
          + f" ms; {best['queries'] / best['files']:.1f} statements ({best['messages']} messages in all)")
        if len(runs) > 1:
            w("runs:     " + ", ".join("%.1f" % (r["seconds"] * 1000 / r["files"]) for r in runs)
              + " ms per file (the fastest is used; the CPU figures change less on a busy machine)")
        if not opts["keep"]:
            shutil.rmtree(workdir, ignore_errors=True)


def session_files(path: Path) -> list[Path]:
    """What `import_path(path)` reads and the floor counts: the file, and its sub-agent files where
    the session has a companion folder (`<session>/subagents/*.jsonl`), not the rest of its folder."""
    path = Path(path)
    companion = path.with_suffix("") if path.suffix == ".jsonl" else None
    subs = sorted(companion.rglob("*.jsonl")) if companion is not None and companion.is_dir() else []
    return [path, *subs]


# Runs in a child process: "floor" parses and tokenizes the same texts; "import" runs the real import.
_CHILD = r"""
import json, os, resource, sys, time
path, mode = sys.argv[1], sys.argv[2]
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "contextviewer.settings")
import django
django.setup()
from pathlib import Path
from contextviewer.core import tokens


def rss():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

tokens.get_encoding()
from ops.management.commands.bench import session_files
files = session_files(Path(path))
if mode == "floor":
    enc = tokens.get_encoding()

    def texts(obj):
        if isinstance(obj, str):
            yield obj
        elif isinstance(obj, dict):
            for k, v in obj.items():
                if k in ("data", "signature", "encrypted_content"):
                    continue
                yield from texts(v)
        elif isinstance(obj, list):
            for v in obj:
                yield from texts(v)

    def message_texts(files):
        # Every string of every message as the model saw it, parsed from the lines as it goes.
        for f in files:
            with open(f, "rb") as fh:
                for line in fh:
                    try:
                        obj = json.loads(line)
                    except ValueError:
                        continue
                    msg = obj.get("message") if isinstance(obj, dict) else None
                    if isinstance(msg, dict):
                        yield from texts(msg.get("content"))
                    elif isinstance(obj, dict) and obj.get("type") in ("response_item", "compacted"):
                        # Codex: the item as the model saw it (encrypted content is not text)
                        yield from texts(obj.get("payload"))

    # The floor: JSON-parse the lines and count their strings, timed together.
    t0 = time.perf_counter()
    n = 0
    for t in message_texts(files):
        n += len(enc.encode_ordinary(t))
    seconds, peak = time.perf_counter() - t0, rss()
    # The counting floor: the same strings, read out first (not timed), then only counted, one
    # thread, one encode_ordinary call per string.
    strings = list(message_texts(files))
    encode = enc.encode_ordinary
    t0 = time.perf_counter()
    counted = 0
    for t in strings:
        counted += len(encode(t))
    count_seconds = time.perf_counter() - t0
    print(json.dumps({"seconds": seconds, "tokens": n, "peak_rss_mb": peak, "count_seconds": count_seconds,
                      "count_tokens": counted, "strings": len(strings), "chars": sum(map(len, strings))}))
else:
    from django.conf import settings
    from django.core.management import call_command
    call_command("migrate", verbosity=0)
    from contextviewer.accounts.services import get_or_create_project
    from contextviewer.ingest import files as ingest
    from contextviewer.conversations.models import Fold, Message, ModelCall
    project = get_or_create_project("Bench")
    from contextviewer.conversations.models import Conversation, Source
    Conversation.objects.filter(project=project).delete()  # a PostgreSQL scratch database, run again
    Source.objects.filter(project=project).delete()
    t0 = time.perf_counter()
    c0 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    ingest.import_path(project, path)
    seconds = time.perf_counter() - t0
    c1 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_self, cpu_children = (b.ru_utime + b.ru_stime - a.ru_utime - a.ru_stime for a, b in zip(c0, c1))
    db = settings.DATABASES["default"]
    print(json.dumps({
        "seconds": seconds, "peak_rss_mb": rss(), "cpu_seconds": cpu_self + cpu_children, "cpu_children": cpu_children,
        "child_peak_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
        "messages": Message.objects.count(),
        "model_calls": ModelCall.objects.count(), "folds": Fold.objects.count(),
        "database": db["ENGINE"].rsplit(".", 1)[-1] + " " + str(db["NAME"]),
    }))
"""


# bench import --small: the sessions of a folder imported one by one into an emptied database.
_SMALL_CHILD = r"""
import json, os, resource, sys, time
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "contextviewer.settings")
import django
django.setup()
from pathlib import Path
from django.conf import settings
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
call_command("migrate", verbosity=0)
from contextviewer.accounts.services import get_or_create_project
from contextviewer.conversations.models import Conversation, Message, Source
from contextviewer.core import tokens
from contextviewer.ingest import child, files as ingest
tokens.get_encoding()
project, project2 = get_or_create_project("Bench small"), get_or_create_project("Bench small (statements)")
for p in (project, project2):  # a PostgreSQL scratch database, run again
    Conversation.objects.filter(project=p).delete()
    Source.objects.filter(project=p).delete()
folder = Path(sys.argv[1])
sessions = sorted(p for p in folder.iterdir() if p.is_dir())


def server_cpu():
    if connection.vendor != "postgresql" or settings.DATABASES["default"]["HOST"] not in ("127.0.0.1", "localhost", ""):
        return None
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu():
    return [u.ru_utime + u.ru_stime for u in (resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN))]


queries = 0
s0, (w0, p0), t0 = server_cpu(), cpu(), time.perf_counter()
with child.parsing():
    for session in sessions:
        ingest.import_path(project, session)
seconds = time.perf_counter() - t0
(w1, p1), s1 = cpu(), server_cpu()
with child.parsing(), CaptureQueriesContext(connection) as ctx:  # the statements, counted on a second copy
    for session in sessions:
        ingest.import_path(project2, session)
nfiles = sum(1 for _ in folder.rglob("*.jsonl"))
server = None if s0 is None or s1 is None else s1 - s0
db = settings.DATABASES["default"]
print(json.dumps({
    "seconds": seconds, "files": nfiles, "cpu_writer": w1 - w0, "cpu_parser": p1 - p0, "cpu_server": server,
    "cpu_total": (w1 - w0) + (p1 - p0) + (server or 0), "queries": len(ctx.captured_queries),
    "messages": Message.objects.filter(conversation__project=project).count(),
    "database": db["ENGINE"].rsplit(".", 1)[-1] + " " + str(db["NAME"]),
}))
"""

"""`python manage.py bench pages`: how the conversation page scales with the conversation's length.

Generates synthetic Claude Code sessions (importers/claude_code/synthetic.py) and imports them into a throw-away test database, then measures
through Django's test client (middleware, view, queries, template; no network):
- the conversation page's first response: server time (median of 10), HTML bytes, SQL queries;
- expanding one turn (the htmx fragment): server time (median of 10).
Targets: 50,000 messages in at most 200 ms and 300 KB, queries independent of length, a turn < 50 ms.
Then a synthetic Claude Code session of 55 MB with 16 folds (importers/claude_code/synthetic.py), imported for
real: its first page at most 100 KB however many folds (--folds-mb 0 skips it).
"""

from __future__ import annotations

import statistics
import sys
import time
from typing import TextIO

from contextviewer.accounts.models import Membership, Project, Role
from contextviewer.conversations.models import Conversation
from contextviewer.importers.claude_code import synthetic
from contextviewer.ingest import files as ingest

REPEAT = 10


def _median_ms(fn, repeat: int = REPEAT) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def _many_folds(out: TextIO, client, project, mb: float, folds: int) -> dict:
    """A synthetic Claude Code session of `mb` MB with `folds` compactions, imported for real: the
    first page's size (target: at most 100 KB however many folds), time and queries."""
    import shutil
    import tempfile
    from pathlib import Path

    from django.urls import reverse


    folder = Path(tempfile.mkdtemp(prefix="contextviewer-bench-folds-"))
    try:
        start = time.perf_counter()
        path = synthetic.write_session(folder, target_bytes=int(mb * 1e6), seed=16, folds=folds)
        size = sum(p.stat().st_size for p in folder.rglob("*.jsonl"))
        ingest.import_path(project, path)
        build_s = time.perf_counter() - start
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    conv = Conversation.objects.filter(project=project, external_id=path.stem).first()
    url = reverse("conversation", args=[conv.id])
    start = time.perf_counter()
    first = client.get(url)
    first_ms = (time.perf_counter() - start) * 1000
    assert first.status_code == 200, first.status_code
    page_ms = _median_ms(lambda: client.get(url), repeat=5)
    row = {"mb": size / 1e6, "messages": conv.message_count, "folds": conv.fold_count, "build_s": build_s,
           "first_ms": first_ms, "page_ms": page_ms, "html_bytes": len(first.content)}
    out.write(
        f"\nClaude Code session of {row['mb']:.0f} MB, {row['messages']} messages, {row['folds']} folds "
        f"(generated and imported in {build_s:.1f} s):\n"
        f"  first page {row['html_bytes'] / 1024:.1f} KB (target <= 100 KB), first request {first_ms:.0f} ms, "
        f"then {page_ms:.0f} ms (median of 5)\n"
    )
    out.flush()
    return row


def run(stdout: TextIO | None = None, sizes: tuple[int, ...] = (1000, 10000, 50000), folds_mb: float = 55.0,
        folds: int = 16) -> list[dict]:
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext, setup_test_environment, teardown_test_environment
    from django.urls import reverse

    out = stdout or sys.stdout
    old_name = connection.settings_dict["NAME"]
    # A database of its own: never the data, nor the test database a test run may be using.
    test_settings = connection.settings_dict.setdefault("TEST", {})
    if connection.vendor == "sqlite":
        from django.conf import settings

        test_settings["NAME"] = str(settings.DATA_DIR / "bench_pages.sqlite3")
    else:
        test_settings["NAME"] = f"bench_pages_{old_name}"
    setup_test_environment()
    connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    results = []
    try:
        import shutil
        import tempfile
        from pathlib import Path

        from django.contrib.auth import get_user_model


        project = Project.objects.create(slug="bench", name="Bench")
        user = get_user_model().objects.create_user("bench", password=None)
        Membership.objects.create(user=user, project=project, role=Role.OWNER)
        client = Client()
        client.force_login(user)
        out.write(f"{'messages':>9} {'build s':>8} {'page ms':>8} {'HTML KB':>8} {'queries':>8} {'turn ms':>8}\n")
        for size in sizes:
            folder = Path(tempfile.mkdtemp(prefix="contextviewer-bench-pages-"))
            try:
                start = time.perf_counter()  # a synthetic Claude Code session, generated and imported
                path = synthetic.write_session(folder, messages=size, seed=size, folds=max(1, size // 10_000))
                ingest.import_path(project, path)
                build_s = time.perf_counter() - start
            finally:
                shutil.rmtree(folder, ignore_errors=True)
            conv = Conversation.objects.get(project=project, external_id=path.stem)
            turn_count = conv.messages.order_by("-turn").values_list("turn", flat=True).first() or 1
            url = reverse("conversation", args=[conv.id])
            first = client.get(url)
            assert first.status_code == 200, first.status_code
            with CaptureQueriesContext(connection) as queries:
                response = client.get(url)
            query_count = len(queries.captured_queries)  # now: the log is reset by the next request
            page_ms = _median_ms(lambda: client.get(url))
            turn_no = max(1, turn_count // 2)
            turn_url = reverse("turn", args=[conv.id, turn_no])
            assert client.get(turn_url, HTTP_HX_REQUEST="true").status_code == 200
            turn_ms = _median_ms(lambda: client.get(turn_url, HTTP_HX_REQUEST="true"))
            row = {
                "messages": conv.message_count,
                "build_s": build_s,
                "page_ms": page_ms,
                "html_bytes": len(response.content),
                "queries": query_count,
                "turn_ms": turn_ms,
            }
            results.append(row)
            out.write(
                f"{row['messages']:>9} {build_s:>8.1f} {page_ms:>8.1f} {row['html_bytes'] / 1024:>8.1f}"
                f" {row['queries']:>8} {turn_ms:>8.1f}\n"
            )
            out.flush()
        if folds_mb:
            results.append(_many_folds(out, client, project, folds_mb, folds))
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)
        teardown_test_environment()
    return results

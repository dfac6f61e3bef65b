"""`python manage.py bench pages`: how the conversation page scales with the conversation's length.

Builds synthetic conversations (tests/factories.py) in a throw-away test database, then measures
through Django's test client (middleware, view, queries, template; no network):
- the conversation page's first response: server time (median of 10), HTML bytes, SQL queries;
- expanding one turn (the htmx fragment): server time (median of 10).
Targets: 50,000 messages in at most 200 ms and 300 KB, queries independent of length, a turn < 50 ms.
"""

from __future__ import annotations

import statistics
import sys
import time
from typing import TextIO

REPEAT = 10


def _median_ms(fn, repeat: int = REPEAT) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def run(stdout: TextIO | None = None, sizes: tuple[int, ...] = (1000, 10000, 50000)) -> list[dict]:
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
        from tests.factories import build_conversation, make_project, make_user

        project = make_project("bench")
        user = make_user("bench", project=project)
        client = Client()
        client.force_login(user)
        out.write(f"{'messages':>9} {'build s':>8} {'page ms':>8} {'HTML KB':>8} {'queries':>8} {'turn ms':>8}\n")
        for size in sizes:
            start = time.perf_counter()
            built = build_conversation(
                project, messages=size, fold_at=160_000, per_turn_tokens=3_000, external_id=f"bench-{size}"
            )
            build_s = time.perf_counter() - start
            conv = built.conversation
            url = reverse("conversation", args=[conv.id])
            first = client.get(url)
            assert first.status_code == 200, first.status_code
            with CaptureQueriesContext(connection) as queries:
                response = client.get(url)
            query_count = len(queries.captured_queries)  # now: the log is reset by the next request
            page_ms = _median_ms(lambda: client.get(url))
            turn_no = built.turns // 2
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
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)
        teardown_test_environment()
    return results


if __name__ == "__main__":  # python -m contextviewer.conversations.bench_pages
    import django
    import os

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "contextviewer.settings")
    django.setup()
    run()

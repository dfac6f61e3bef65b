"""`python manage.py bench usage [--sessions 1000]`: the analytics page and the usage API at scale.

Writes N sessions straight into a throw-away test database (rows, not logs: what is measured is the
page, not the import), each of 100 model calls over 30 days, an assistant message with a tool call
per call, three people and a fold in every third session, then measures through Django's test client:
the page's first response (bytes, SQL queries) and its time (median of 5), and the API's monthly
report. Targets (issue 37): first page at most 100 KB and 300 ms at 1,000 sessions.
"""

from __future__ import annotations

import os
import random
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from typing import TextIO

from contextviewer.accounts.models import Membership, Project, Role
from contextviewer.conversations.models import Conversation, Fold, Message, ModelCall
from contextviewer.jobs.models import Job

CALLS = 100
TOOLS = ("Read", "Bash", "Edit", "Grep", "Write", "TodoWrite", "mcp__github__create_issue")
MODELS = ("claude-opus-4-6", "claude-sonnet-4-5", "claude-haiku-4-5")
PEOPLE = ("ana", "bo", "chen")


def _median_ms(fn, repeat: int = 5) -> tuple[float, float]:
    """Median wall and CPU time of this process (SQLite runs in it: on a busy machine the CPU time
    is what the page costs, the wall time also waits for the other jobs)."""
    wall, cpu = [], []
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()
        wall.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - start_cpu) * 1000)
    return statistics.median(wall), statistics.median(cpu)


def populate(project, users, sessions: int, *, seed: int = 37) -> None:
    """`sessions` sessions of CALLS calls each in the 30 days up to 2026-02-28, by `users` in turn."""
    rng = random.Random(seed)
    end = datetime(2026, 2, 28, 18, tzinfo=UTC)
    convs = []
    for n in range(sessions):
        start = end - timedelta(days=rng.randrange(30), hours=rng.randrange(10), minutes=rng.randrange(60))
        convs.append(Conversation(project=project, external_id=f"bench-{n:05d}", started_at=start,
                                  model_names=[MODELS[n % 3]], model_call_count=CALLS, tool_call_count=CALLS,
                                  peak_context=rng.randrange(20_000, 200_000), measured_calls=CALLS,
                                  fold_count=1 if n % 3 == 0 else 0, message_count=CALLS))
    Conversation.objects.bulk_create(convs, batch_size=500)
    convs = list(Conversation.objects.filter(project=project).order_by("id"))
    messages = []
    for conv in convs:
        for i in range(CALLS):
            tool = TOOLS[rng.randrange(len(TOOLS))]
            block = {"kind": "tool_call", "tool_name": tool, "tool_id": f"t{i}", "tool_input": {"x": i}, "text": ""}
            messages.append(Message(conversation=conv, position=i, turn=i, role="assistant", record_type="assistant",
                                    blocks=[{"kind": "text", "text": "ok"}, block], raw="{}",
                                    timestamp=conv.started_at + timedelta(minutes=i)))
    Message.objects.bulk_create(messages, batch_size=2000)
    ids = dict(((m["conversation_id"], m["position"]), m["id"]) for m in
               Message.objects.filter(conversation__project=project).values("id", "conversation_id", "position"))
    calls = []
    for conv in convs:
        for i in range(CALLS):
            calls.append(ModelCall(conversation=conv, message_id=ids[(conv.id, i)], position=i, api_message_id=f"m{conv.id}-{i}",
                                   model=conv.model_names[0], input_uncached=rng.randrange(10, 500),
                                   cache_write=rng.randrange(0, 5000), cache_read=rng.randrange(10_000, 150_000),
                                   output=rng.randrange(50, 2000), timestamp=conv.started_at + timedelta(minutes=i)))
    ModelCall.objects.bulk_create(calls, batch_size=2000)
    Fold.objects.bulk_create([Fold(conversation=c, key=f"f{c.id}", position=CALLS // 2,
                                   timestamp=c.started_at + timedelta(minutes=CALLS // 2)) for c in convs[::3]])
    for k, user in enumerate(users):  # the person of a session: the user whose import brought it in
        mine = [{"id": c.id} for i, c in enumerate(convs) if i % len(users) == k]
        Job.objects.create(kind="import", project=project, created_by=user, idempotency_key=f"bench-usage-{k}", result={"conversations": mine})


def run(stdout: TextIO | None = None, sessions: int = 1000) -> dict:
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import setup_test_environment, teardown_test_environment

    out = stdout or sys.stdout
    old_name = connection.settings_dict["NAME"]
    test_settings = connection.settings_dict.setdefault("TEST", {})
    if connection.vendor == "sqlite":
        from django.conf import settings

        test_settings["NAME"] = str(settings.DATA_DIR / "bench_usage.sqlite3")
    else:
        test_settings["NAME"] = f"bench_usage_{old_name}"
    setup_test_environment()
    connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    try:
        project = Project.objects.create(slug="bench", name="Bench")
        users = [get_user_model().objects.create_user(name, password=None) for name in PEOPLE]
        for user in users:
            Membership.objects.create(user=user, project=project, role=Role.OWNER)
        start = time.perf_counter()
        populate(project, users, sessions)
        out.write(f"{sessions} sessions, {sessions * CALLS:,} model calls and tool calls written in "
                  f"{time.perf_counter() - start:.1f} s ({connection.vendor})\n")
        client = Client()
        client.force_login(users[0])
        row = {"sessions": sessions}
        for name, url in (("page", "/projects/bench/usage/?since=2026-01-30&until=2026-02-28"),
                          ("top tools (after)", "/projects/bench/usage/tools/?since=2026-01-30&until=2026-02-28"),
                          ("page, one person", "/projects/bench/usage/?since=2026-01-30&until=2026-02-28&person=bo"),
                          ("API monthly", "/api/projects/bench/usage?period=monthly")):
            first = client.get(url)
            assert first.status_code == 200, (url, first.status_code)
            queries = []  # counted by a wrapper: each request empties connection.queries when it starts
            with connection.execute_wrapper(lambda execute, sql, *args: queries.append(sql) or execute(sql, *args)):
                client.get(url)
            ms, cpu = _median_ms(lambda url=url: client.get(url))
            row[name] = {"ms": ms, "cpu_ms": cpu, "bytes": len(first.content), "queries": len(queries)}
            out.write(f"{name:<18} {ms:7.0f} ms wall, {cpu:5.0f} ms CPU (medians of 5)  {len(first.content) / 1024:6.1f} KB  "
                      f"{len(queries)} queries\n")
        out.write(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; "
                  "targets: first page <= 100 KB and <= 300 ms at 1,000 sessions\n")
        return row
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)
        teardown_test_environment()

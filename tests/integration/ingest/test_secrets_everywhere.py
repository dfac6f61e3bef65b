"""Secrets in every field, masked in every copy.

A synthetic Claude Code session and a Codex rollout carry each kind of secret the masking newly
knows (an AWS secret access key after its name or next to its key id, a JWT, a password in a URL, a
PEM private key with no END line) in each field a log has: message text, tool input, tool result,
thinking, a compaction summary, the custom title, the ai-title, the title of a summary record, and
the Codex rollout's message, tool call, output, reasoning, compaction and title. They are imported,
handed off with the builtin provider and with a provider on a local HTTP server that records what
it receives, titled, and then looked for everywhere: the database file's bytes (and the words of
the search index; on PostgreSQL every row of every table), every page (index, conversation,
segments, turns, blocks, jobs, review), search results, the four exports and the requests the
provider received. Not one piece of a planted secret may be found.

`python manage.py mask` is tested on rows stored unmasked (imported with masking switched off):
afterwards no piece of a secret is in the database file or the search index, and a second run
changes nothing.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import random
import re
import string
import subprocess
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest
from django.core.management import call_command
from django.db import connection
from django.urls import reverse

from contextviewer.builds import services as builds, handoffs as handoff
from contextviewer.ingest import files as ingest
from contextviewer.jobs import queue as jobs
from contextviewer.conversations import search
from contextviewer.conversations.models import Conversation, Fold, Message
from contextviewer.jobs.models import Job, JobStatus
from contextviewer.core import secrets
from contextviewer.providers import services as provider_services
from tests.fake_providers import FakeProvider
from tests.sessions import SessionBuilder, write_lines
from tests.unit import test_codex_importer as cx

pytestmark = pytest.mark.django_db(transaction=True)

ALNUM = string.ascii_letters + string.digits


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


class Planted:
    """The four secrets planted in one field, different for every field, and the pieces of them
    that must not be found anywhere (each secret, and every run of 10+ letters and digits in it)."""

    def __init__(self, field: str):
        rng = random.Random(field)
        self.field = field
        self.key_id = "AKIA" + "".join(rng.choice(string.ascii_uppercase + string.digits) for _ in range(16))
        self.aws = "Qz" + "".join(rng.choice(ALNUM + "/+") for _ in range(38))
        header = _b64url(b'{"alg":"HS256","typ":"JWT"}')
        payload = _b64url(json.dumps({"sub": f"user-{rng.randrange(10**9)}", "field": field}).encode())
        self.jwt = f"{header}.{payload}.{_b64url(hashlib.sha256(field.encode()).digest())}"
        self.password = "Pw" + "".join(rng.choice(ALNUM) for _ in range(16))
        self.url = f"postgres://deploy:{self.password}@db-{hashlib.md5(field.encode()).hexdigest()[:8]}.internal:5432/app"
        body = base64.b64encode(rng.randbytes(48 * 3)).decode()
        self.pem_lines = [body[i : i + 64] for i in range(0, len(body), 64)]
        self.pem = "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(self.pem_lines)
        self.one_line = "title" in field or field == "codex message"  # written with title(): one line of the key

    def text(self) -> str:
        """All four, as they would be written in a message or an output (the PEM cut off)."""
        return (
            f"Deploy with aws_secret_access_key={self.aws} and Authorization: Bearer {self.jwt}\n"
            f"DATABASE_URL={self.url}\n{self.pem}\n\n(the key above is truncated)"
        )

    def csv(self) -> str:
        """The AWS key next to its key id, as the console's credentials file writes it."""
        return (
            f"User name,Access key ID,Secret access key\ndeploy,{self.key_id},{self.aws}\n"
            f"token {self.jwt} url {self.url}\n{self.pem}"
        )

    def title(self) -> str:
        """One line: a title (the key flattened onto the line, one base64 run of it)."""
        return f"Deploy {self.url} {self.jwt} aws_secret_access_key={self.aws} -----BEGIN RSA PRIVATE KEY----- {self.pem_lines[0]}"

    def pieces(self) -> list[str]:
        pem = self.pem_lines[:1] if self.one_line else self.pem_lines
        whole = [self.aws, self.jwt, self.jwt.split(".")[1], self.jwt.split(".")[2], self.password, *pem]
        runs = {run for secret in whole for run in re.findall(r"[A-Za-z0-9]{10,}", secret)}
        runs.discard(_b64url(b'{"alg":"HS256","typ":"JWT"}'))  # the JWT header is the same in every token
        return [*whole, *sorted(runs)]


FIELDS = [
    "message text", "tool input", "tool result", "thinking", "fold summary",
    "custom title", "ai-title", "summary record title",
    "codex message", "codex tool input", "codex tool result", "codex reasoning", "codex fold summary",
]
PLANTED = {name: Planted(name) for name in FIELDS}


def leaks(text: str) -> list[str]:
    """`field: piece` of every planted piece found in `text` (also once HTML entities are decoded,
    and in lower case, as a search index keeps words)."""
    if not text:
        return []
    forms = (text, html.unescape(text), text.lower())
    found = []
    for planted in PLANTED.values():
        for piece in planted.pieces():
            if any(piece in form for form in forms[:2]) or (len(piece) >= 10 and piece.isalnum() and piece.lower() in forms[2]):
                found.append(f"{planted.field}: {piece[:24]}")
    return found


# -- the synthetic logs ---------------------------------------------------------------------------


def _assistant(b: SessionBuilder, blocks: list[dict]) -> list[str]:
    b.calls += 1
    usage = {"input_tokens": 3, "cache_creation_input_tokens": 900, "cache_read_input_tokens": 12000 + b.calls * 900,
             "output_tokens": 40}
    return [
        json.dumps(b._envelope(
            "assistant", requestId=f"req_{b.calls:06d}",
            message={"id": f"msg_{b.calls:06d}", "type": "message", "role": "assistant", "model": "claude-opus-4-6",
                     "content": [block], "stop_reason": None, "usage": usage},
        ))
        for block in blocks
    ]


def claude_session(path: Path, session_id: str, title_record: dict | None, *, planted: bool) -> None:
    """A session folded once; after the fold, every field holds its planted secrets."""
    b = SessionBuilder(session_id=session_id)
    lines = [b.user("Set up the deployment scripts"), *_assistant(b, [{"type": "text", "text": "Reading the scripts."}])]
    boundary = b._envelope("system", subtype="compact_boundary", content="Conversation compacted",
                           compactMetadata={"trigger": "auto", "preTokens": 160000}, logicalParentUuid=b.parent)
    lines.append(json.dumps(boundary))
    summary = PLANTED["fold summary"].text() if planted else "Set up the deployment scripts."
    lines.append(json.dumps(b._envelope("user", isCompactSummary=True, isVisibleInTranscriptOnly=True,
                                        message={"role": "user", "content": f"This session is being continued.\n{summary}"})))
    if planted:
        lines.append(b.user(PLANTED["message text"].text()))
        lines += _assistant(b, [
            {"type": "thinking", "thinking": PLANTED["thinking"].text(), "signature": "c2lnbmF0dXJl"},
            {"type": "tool_use", "id": "toolu_secret", "name": "Bash", "input": {"command": PLANTED["tool input"].text()}},
        ])
        lines.append(json.dumps(b._envelope("user", message={"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_secret", "content": PLANTED["tool result"].csv()}]})))
    else:
        lines.append(b.user("Write the deploy script"))
    lines += _assistant(b, [{"type": "text", "text": "The deploy script is written."}])
    if title_record:
        lines.append(json.dumps({**title_record, "sessionId": session_id}))
    write_lines(path, lines)


def codex_rollout(path: Path) -> None:
    text = PLANTED["codex message"].title()  # a prompt on one line: it is also the title
    lines = [
        cx.meta(base_instructions={"text": "You are Codex, a coding agent."}),
        cx.turn_context(),
        cx.env("compacted", {"message": PLANTED["codex fold summary"].text(), "replacement_history": []}),
        cx.event("context_compacted"),
        cx.user(text),
        cx.event("user_message", message=text, images=[]),
        cx.reasoning(PLANTED["codex reasoning"].text(), encrypted=False),
        cx.call("call_1", PLANTED["codex tool input"].text()),
        cx.usage(10_000, 200, 10_000, 0, 200),
        cx.output("call_1", PLANTED["codex tool result"].csv()),
        cx.assistant("Deployed."),
        cx.usage(21_000, 400, 11_000, 9_984, 200),
    ]
    cx.write(path, lines)


SESSIONS = {
    "aaaaaaaa-0000-4000-8000-000000000001": {"type": "custom-title", "customTitle": PLANTED["custom title"].title()},
    "aaaaaaaa-0000-4000-8000-000000000002": {"type": "ai-title", "aiTitle": PLANTED["ai-title"].title()},
    "aaaaaaaa-0000-4000-8000-000000000003": {"type": "summary", "summary": PLANTED["summary record title"].title(),
                                             "leafUuid": "aaaaaaaa-ffff-4000-8000-000000000000"},
}


def write_logs(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for n, (session_id, title) in enumerate(SESSIONS.items()):
        path = folder / f"{session_id}.jsonl"
        claude_session(path, session_id, title, planted=n < 2)  # the third: its title only
        paths.append(path)
    path = folder / f"rollout-2026-02-23T12-00-00-{cx.SID}.jsonl"
    codex_rollout(path)
    paths.append(path)
    return paths


def test_the_logs_really_hold_every_planted_piece(tmp_path):
    # The test below is only worth something if the files carry what it looks for.
    raw = "\n".join(p.read_text() for p in write_logs(tmp_path / "logs"))
    decoded = raw.replace("\\n", "\n").replace("\\/", "/")
    for planted in PLANTED.values():
        for piece in planted.pieces():
            assert piece in decoded, (planted.field, piece)


# -- where to look --------------------------------------------------------------------------------


def _read_elsewhere(path: Path) -> bytes:
    """A database file's bytes, read by another process: closing a file this process opened would
    drop every POSIX lock the process holds on it, SQLite's own included (its connections would
    then think nobody else has the database open, and the last to close would remove the -wal and
    -shm files under the others' feet)."""
    return subprocess.run(["cat", str(path)], capture_output=True, check=True).stdout


def database_leaks() -> list[str]:
    """Pieces found in the database: the file's bytes (SQLite, with its write-ahead log) and the
    words of the search index, or every row of every table (PostgreSQL)."""
    found = []
    if connection.vendor == "sqlite":
        name = Path(connection.settings_dict["NAME"])
        data = b"".join(_read_elsewhere(p) for p in (name, Path(f"{name}-wal")) if p.exists())
        found += leaks(data.decode("latin-1"))
        with connection.cursor() as cursor:
            cursor.execute(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.secrets_vocab USING fts5vocab(main, {search.FTS_TABLE}, row)"
            )
            cursor.execute("SELECT term FROM temp.secrets_vocab")
            found += [f"search index: {hit}" for hit in leaks(" ".join(row[0] for row in cursor.fetchall()))]
            cursor.execute("DROP TABLE temp.secrets_vocab")
    else:
        with connection.cursor() as cursor:
            cursor.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
            for (table,) in cursor.fetchall():
                cursor.execute(f'SELECT row_to_json(t)::text FROM "{table}" t')
                found += [f"{table}: {hit}" for row in cursor.fetchall() for hit in leaks(row[0])]
    return found


def page_urls(user) -> list[tuple[str, dict]]:
    """(url, query) of every page to look at."""
    urls = [reverse("index"), reverse("jobs")]
    for conv in Conversation.objects.all():
        pk = conv.pk
        urls += [reverse("conversation", args=[pk]), f"{reverse('conversation', args=[pk])}?all=1"]
        urls += [reverse("segment_turns", args=[pk, i]) for i in range(conv.folds.count() + 2)]
        urls += [reverse("turn", args=[pk, t]) for t in sorted(set(conv.messages.values_list("turn", flat=True)))]
        for message in conv.messages.all():
            urls += [reverse("block", args=[pk, message.pk, i]) for i in range(len(message.blocks))]
        urls += [reverse("export_download", args=[pk, fmt]) for fmt in builds.CONTENT_TYPES]
        urls += [f"/api/conversations/{pk}/export?format={fmt}" for fmt in builds.CONTENT_TYPES]
        urls += [reverse("review_fold", args=[f.pk]) for f in conv.folds.all()]
        urls += [f"/api/review/folds/{f.pk}/probe" for f in conv.folds.all()]
    for job in Job.objects.all():
        urls += [reverse("job_detail", args=[job.pk]), f"/api/jobs/{job.pk}"]
    pages = [(url, {}) for url in urls]
    for planted in PLANTED.values():  # searching for a secret finds nothing, and shows nothing
        pages += [(reverse("index"), {"q": piece}) for piece in planted.pieces()[:6]]
    pages += [(reverse("index"), {"q": "masked"}), (reverse("index"), {"q": "deploy"})]
    return pages


def everything_a_user_sees(client, user) -> dict[str, list[str]]:
    """Leaks by place: every page, search result and export."""
    client.force_login(user)
    seen: dict[str, list[str]] = {}
    statuses = {}
    for url, query in page_urls(user):
        response = client.get(url, query)
        url = f"{url}?{query}" if query else url
        statuses[url] = response.status_code
        body = (b"".join(response.streaming_content) if response.streaming else response.content).decode("utf-8", "replace")
        if query:  # the search box and the page's links repeat what was typed: not a leak
            body = html.unescape(body)
            q = query["q"]
            for typed in (q, quote_plus(q), quote(q, safe=""), quote(q, safe="/"), quote(q)):
                body = body.replace(typed, "")
        if hits := leaks(body):
            seen[url] = hits
    # 404: past the last segment, a block too short to have a page; 400: an export refused (a Codex
    # conversation as Claude Code JSONL).
    assert statuses[reverse("index")] == 200 and all(s in (200, 404) or "export" in u for u, s in statuses.items()), {
        u: s for u, s in statuses.items() if s not in (200, 404)
    }
    assert sum(1 for s in statuses.values() if s == 200) > 100
    for planted in PLANTED.values():
        for piece in planted.pieces():
            hits = search.search(user, piece)
            if hits:
                seen[f"search {piece[:24]}"] = [f"{h.conversation_id}:{h.position}" for h in hits]
    for hit in search.search(user, "masked", limit=200) + search.search(user, "deploy", limit=200):
        if found := leaks(" ".join((hit.conversation_title, hit.before, hit.match, hit.after))):
            seen[f"search hit {hit.message_id}"] = found
    for conv in Conversation.objects.all():
        for fmt in builds.CONTENT_TYPES:
            try:
                content = builds.export(conv, fmt).content
            except builds.ExportRefused:
                assert fmt in ("claude-code", "codex") and fmt != conv.agent  # another agent's own session file
                continue
            if found := leaks(content):
                seen[f"export {fmt} of {conv.pk}"] = found
    return seen


def _configure(project, protocol: str, server: FakeProvider) -> None:
    provider_services.save_config(
        project, protocol, base_url=server.url(protocol), model="test-model", api_key="sk-test-0123456789abcdef",
        make_default=True, allow_private_network=True, may_allow_private=True,
    )


def _run(job) -> Job:
    done = jobs.run(job.pk)
    assert done is not None and done.status == JobStatus.SUCCEEDED, done and done.error
    return done


def _import_and_hand_off(project, tmp_path, monkeypatch) -> tuple[list[dict], dict[str, str]]:
    """Import the logs, hand off with builtin, openai and anthropic, title every conversation:
    (the requests the provider server received, the titles as imported by external id)."""
    monkeypatch.setenv("CONTEXTVIEWER_PROVIDER_BACKOFF", "0.01")
    for path in write_logs(tmp_path / "logs"):
        report = ingest.import_file(project, path)
        assert report.status == "imported", report.errors
    titles = dict(Conversation.objects.values_list("external_id", "title"))
    claude = Conversation.objects.get(external_id=next(iter(SESSIONS)))
    codex = Conversation.objects.get(agent="codex")
    others = Conversation.objects.exclude(pk__in=[claude.pk, codex.pk])
    with FakeProvider() as server:
        _run(handoff.start_handoff(claude, provider="builtin", enqueue=False)[0])
        _configure(project, "anthropic", server)
        _run(handoff.start_handoff(codex, provider="anthropic", enqueue=False)[0])
        _configure(project, "openai", server)
        for conv in others:
            _run(handoff.start_handoff(conv, provider="openai", enqueue=False)[0])
        for conv in Conversation.objects.all():
            _run(jobs.create_job(project, "title", {"conversation_id": conv.pk}, enqueue=False)[0])
    for job in Job.objects.filter(kind="probes", status=JobStatus.QUEUED):  # the handoffs asked for them
        _run(job)
        return server.requests, titles


def test_no_planted_secret_is_stored_shown_searched_exported_or_sent(project, user, client, tmp_path, monkeypatch):
    requests, titles = _import_and_hand_off(project, tmp_path, monkeypatch)

    # What was imported: every field arrived, as a masked copy.
    claude = Conversation.objects.get(external_id=next(iter(SESSIONS)))
    codex = Conversation.objects.get(agent="codex")
    assert Conversation.objects.count() == 4
    for session_id in SESSIONS:
        assert titles[session_id].startswith("Deploy postgres://deploy:[masked url_password]@db-"), titles[session_id]
        assert "[masked jwt]" in titles[session_id] and "[masked aws_secret_key]" in titles[session_id]
        assert "[masked private_key]" in titles[session_id]
    assert titles[codex.external_id].startswith("Deploy postgres://deploy:[masked url_password]@db-")
    assert "[masked jwt]" in titles[codex.external_id]
    for conv in (claude, codex):
        imported = conv.folds.get(origin="imported")
        for kind in ("aws_secret_key", "jwt", "url_password", "private_key"):
            assert f"[masked {kind}]" in imported.summary_text, (conv.agent, kind)
        generated = conv.folds.get(origin="generated")
        assert generated.summary_text and not leaks(generated.summary_text)
    flagged = Message.objects.filter(flags__has_key="secrets").count() if connection.vendor != "sqlite" else sum(
        1 for flags in Message.objects.values_list("flags", flat=True) if flags.get("secrets")
    )
    # Claude: 5 lines in each of two sessions (summary, message, thinking, tool call, tool result).
    # Codex: 6 lines hold a secret; the user_message event repeats the message (not stored) and the
    # compacted line is two messages (the fold's marker and its summary, both keeping the line).
    assert flagged == 2 * 5 + 6
    kinds = {k for flags in Message.objects.values_list("flags", flat=True) for k in flags.get("secrets", [])}
    assert {"aws_secret_key", "aws_access_key", "jwt", "url_password", "private_key"} <= kinds

    # The provider got the loaded views (summary, message, tool call and result) of three
    # conversations and one title request (the logs' own titles are kept), masked.
    asked_titles = [r for r in requests if "name coding-agent sessions" in json.dumps(r["body"])]
    assert (len(requests) - len(asked_titles), len(asked_titles)) == (3, 1)
    assert [r["protocol"] for r in requests].count("anthropic") == 1
    sent = json.dumps([r["body"] for r in requests])
    for field in ("message text", "tool input", "tool result", "fold summary", "codex message", "codex tool result"):
        assert PLANTED[field].url.split(":")[2].split("@")[1] in sent, field  # the host is kept: the field was sent
    assert "[masked url_password]" in sent and "[masked jwt]" in sent and "[masked aws_secret_key]" in sent
    assert leaks(sent) == []

    assert database_leaks() == []
    assert everything_a_user_sees(client, user) == {}
    assert search.search(user, "masked")  # the masked copies are what is searchable


def test_manage_py_mask_masks_rows_stored_unmasked_and_a_second_run_changes_nothing(
    project, user, client, tmp_path, monkeypatch, capsys
):
    with monkeypatch.context() as off:  # an installation from before: nothing was masked
        off.setattr(secrets, "_RULES", ())
        off.setattr(secrets, "_HINTS", ())
        off.setattr(secrets, "_HINT_PATTERNS", ())
        _import_and_hand_off(project, tmp_path, monkeypatch)
        assert len(database_leaks()) > 100  # the secrets are stored as they were written
        assert search.search(user, PLANTED["message text"].password)
        job = Job.objects.filter(kind="handoff", status=JobStatus.SUCCEEDED).first()
        Job.objects.filter(pk=job.pk).update(error=f"could not connect to {PLANTED['message text'].url}")

    messages, folds, convs = Message.objects.count(), Fold.objects.count(), Conversation.objects.count()
    call_command("mask", "--dry-run", "--quiet")
    out, err = capsys.readouterr()
    assert f"messages: 16 of {messages} would change" in out and not err, out
    assert len(database_leaks()) > 100  # a dry run changes nothing
    call_command("mask")
    out, err = capsys.readouterr()
    # The 16 messages the first test finds flagged (2 x 5 Claude, 6 Codex).
    assert f"messages: 16 of {messages} changed" in out, out
    # The three imported summaries, and the builtin handoff's of the first session (it quotes them).
    assert f"folds: 4 of {folds} changed" in out, out
    # The three log titles (the Codex title, its first prompt, was replaced by its title job).
    assert f"conversations: 3 of {convs} changed" in out, out
    # The builtin handoff's result (its summary), the title jobs' of the three log titles, and the
    # job given an error.
    assert re.search(r"jobs: 5 of \d+ changed", out), out
    assert re.search(r"fact probes: \d+ of [1-9]\d* changed", out), out  # read too (their facts hold none here)
    # SQLite's contentless index is filled again whole; PostgreSQL's rows of the 16 are rewritten.
    reindexed = messages if connection.vendor == "sqlite" else 16
    assert f"search index: {reindexed} messages indexed again" in out, out
    assert "messages:" in err  # progress

    assert database_leaks() == []
    assert search.search(user, PLANTED["message text"].password) == []
    assert everything_a_user_sees(client, user) == {}
    assert "[masked url_password]" in Job.objects.get(pk=job.pk).error

    call_command("mask")
    out, _ = capsys.readouterr()
    assert out.strip().endswith("0 rows changed (nothing to do)"), out
    assert "search index" not in out


def test_a_provider_never_receives_a_secret_even_from_rows_stored_unmasked(project, tmp_path, monkeypatch):
    monkeypatch.setenv("CONTEXTVIEWER_PROVIDER_BACKOFF", "0.01")
    with monkeypatch.context() as off:  # rows from before: stored as written
        off.setattr(secrets, "_RULES", ())
        off.setattr(secrets, "_HINTS", ())
        off.setattr(secrets, "_HINT_PATTERNS", ())
        for path in write_logs(tmp_path / "logs"):
            ingest.import_file(project, path)
    first, second = (Conversation.objects.get(external_id=s) for s in list(SESSIONS)[:2])
    codex = Conversation.objects.get(agent="codex")
    assert leaks(json.dumps(list(first.messages.values_list("blocks", flat=True))))  # unmasked indeed
    with FakeProvider() as server:
        _configure(project, "openai", server)
        _run(handoff.start_handoff(first, provider="openai", enqueue=False)[0])
        _run(jobs.create_job(project, "title", {"conversation_id": codex.pk}, enqueue=False)[0])
        _configure(project, "anthropic", server)
        _run(handoff.start_handoff(codex, provider="anthropic", enqueue=False)[0])
        _run(handoff.start_handoff(second, provider="builtin", enqueue=False)[0])
        requests = server.requests
    assert [r["protocol"] for r in requests] == ["openai", "openai", "anthropic"]
    sent = json.dumps([r["body"] for r in requests])
    assert leaks(sent) == []
    assert sent.count("[masked aws_secret_key]") >= 5 and "[masked private_key]" in sent
    # The builtin provider writes its summary from the (masked) prompt.
    summary = second.folds.get(origin="generated").summary_text
    assert "[masked" in summary and leaks(summary) == []

"""Masking by value (issue 21, items 3-5): a secret found once is masked wherever it stands.

Every kind of secret the detector knows is planted once WITH its context (an AWS secret key after
`aws_secret_access_key =`, a password inside a URL, the others as themselves) in a sub-agent's file,
imported after the main session, and again BARE in every field of the main session, stored
earlier: the custom title, user text, assistant text, a tool input's value and a tool input's JSON
KEY, a tool result, a fold summary, and a raw line where one character of each secret is written as
a `\\u` escape. They go through the real import path (an import job of the folder). Afterwards no
clear value may be found in any text column of the database (messages' raw lines and blocks,
titles, sub-agent links, fold summaries, job results), on the conversation, turn, block and search
pages, in the search index, or in any export.

A growing file appended to (the value known only by a fingerprint from the first import) and
`manage.py mask` on rows stored unmasked are tested too.
"""

from __future__ import annotations

import base64
import html
import json
import random
import string

import pytest
from django.core.management import call_command
from django.urls import reverse

from contextviewer.builds import services as builds
from contextviewer.conversations import search
from contextviewer.conversations.models import Conversation, Fold, Message
from contextviewer.core import secrets
from contextviewer.ingest import files as ingest, imports
from contextviewer.ingest.models import SecretPrint
from contextviewer.jobs import queue as jobs
from contextviewer.jobs.models import Job, JobStatus
from tests.sessions import SessionBuilder, write_lines

pytestmark = pytest.mark.django_db(transaction=True)

rng = random.Random(21)
ALNUM = string.ascii_letters + string.digits


def _chars(n: int, alphabet: str = ALNUM) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


_PEM_BODY = base64.b64encode(rng.randbytes(96)).decode()
# kind -> (the secret's value, the text that gives it away where it is planted with its context)
VALUES = {
    "aws_secret_key": "Qz" + _chars(36, ALNUM + "/+") + "a1",
    "url_password": "Pw" + _chars(16),
    "anthropic_key": "sk-ant-api03-" + _chars(40),
    "openai_key": "sk-proj-" + _chars(40),
    "github_token": "ghp_" + _chars(36),
    "aws_access_key": "AKIA" + _chars(16, string.ascii_uppercase + string.digits),
    "slack_token": "xoxb-" + _chars(12, string.digits) + "-" + _chars(24),
    "google_api_key": "AIza" + _chars(35),
    "stripe_key": "sk_live_" + _chars(24),
    "jwt": ".".join([_b64url(b'{"alg":"HS256","typ":"JWT"}'), _b64url(b'{"sub":"by-value-test"}'), _chars(43)]),
    "private_key": "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(_PEM_BODY[i : i + 64] for i in range(0, 128, 64))
    + "\n-----END RSA PRIVATE KEY-----",
}
CONTEXT = {
    "aws_secret_key": f"aws_secret_access_key = {VALUES['aws_secret_key']}",
    "url_password": f"postgres://deploy:{VALUES['url_password']}@db.internal:5432/app",
}
SESSION = "bbbbbbbb-0000-4000-8000-000000000021"
AGENT = "a21bvalue"


def with_context() -> str:
    return "\n".join(CONTEXT.get(kind, f"{kind}: {value}") for kind, value in VALUES.items())


def bare(without: tuple[str, ...] = ()) -> str:
    return " and ".join(value for kind, value in VALUES.items() if kind not in without)


def _escaped(line: str) -> str:
    """A JSON line with one character of every planted value written as a `\\u` escape."""
    for value in VALUES.values():
        encoded = json.dumps(value)[1:-1]
        at = next(i for i in range(9, len(encoded)) if encoded[i].isalnum())
        line = line.replace(encoded, f"{encoded[:at]}\\u{ord(encoded[at]):04x}{encoded[at + 1:]}")
    return line


def pieces() -> list[str]:
    """What must not be found: each value, its middle, and each line of the PEM's body."""
    out = []
    for value in VALUES.values():
        out += [value, value[4:-4]]
    out += [_PEM_BODY[:64], _PEM_BODY[64:128]]
    return out


def leaks(text) -> list[str]:
    if not isinstance(text, str):
        text = json.dumps(text, ensure_ascii=False)
    forms = [text, html.unescape(text), text.replace("\\n", "\n").replace("\\/", "/")]
    return sorted({p[:20] for p in pieces() for form in forms if p in form})


def write_logs(folder) -> None:
    """The main session (every field holds the bare values), then its sub-agent (with context)."""
    b = SessionBuilder(session_id=SESSION)
    lines = [b.user(f"Deploy it: {bare()}")]
    lines += b.assistant(f"I will use {bare()}", tool=("Bash", {"command": f"deploy {bare()}",
                                                               "headers": {value: "x" for value in VALUES.values()}}))
    lines.append(b.tool_result(f"deployed with {bare()}"))
    lines.append(_escaped(b.user(f"Escaped: {bare()}")))
    lines.append(json.dumps(b._envelope("system", subtype="compact_boundary", content="Conversation compacted",
                                        compactMetadata={"trigger": "auto", "preTokens": 160000}, logicalParentUuid=b.parent)))
    lines.append(json.dumps(b._envelope("user", isCompactSummary=True, isVisibleInTranscriptOnly=True, message={
        "role": "user", "content": f"This session is being continued.\nSummary: deployed with {bare()}"})))
    lines += b.assistant("Done.")
    title = " ".join(VALUES[k] for k in ("aws_secret_key", "url_password", "github_token", "jwt"))
    lines.append(json.dumps({"type": "custom-title", "customTitle": f"Deploy {title}", "sessionId": SESSION}))
    write_lines(folder / f"{SESSION}.jsonl", lines)

    sub = SessionBuilder(session_id=SESSION)
    sub_lines = [json.dumps({**json.loads(line), "isSidechain": True, "agentId": AGENT})
                 for line in [sub.user(f"Credentials:\n{with_context()}"), *sub.assistant("Noted.")]]
    (folder / SESSION / "subagents").mkdir(parents=True)
    write_lines(folder / SESSION / "subagents" / f"agent-{AGENT}.jsonl", sub_lines)


def database_leaks() -> dict[str, list[str]]:
    """Leaks in every text column of the rows a conversation has, and in the search index."""
    found: dict[str, list[str]] = {}
    for pk, raw, blocks in Message.objects.values_list("pk", "raw", "blocks"):
        decoded = json.dumps(json.loads(raw), ensure_ascii=False) if raw.startswith("{") else raw
        if hits := leaks(raw) + leaks(decoded) + leaks(blocks):
            found[f"message {pk}"] = hits
    for pk, *values in Conversation.objects.values_list("pk", "title", "agent_links", "lineage", "agent_type"):
        if hits := leaks(values):
            found[f"conversation {pk}"] = hits
    for pk, summary in Fold.objects.values_list("pk", "summary_text"):
        if hits := leaks(summary):
            found[f"fold {pk}"] = hits
    for pk, *values in Job.objects.values_list("pk", "result", "error", "progress_text", "params"):
        if hits := leaks(values):
            found[f"job {pk}"] = hits
    return found


def search_leaks(user) -> list[str]:
    words = [w for value in VALUES.values() for w in search.terms(value) if len(w) >= 10]
    return [w for w in words if search.search(user, w)]


def page_leaks(client, user) -> dict[str, list[str]]:
    client.force_login(user)
    urls = [reverse("index"), f"{reverse('index')}?q=deploy", f"{reverse('index')}?q=masked", reverse("jobs")]
    for conv in Conversation.objects.all():
        pk = conv.pk
        urls += [reverse("conversation", args=[pk]), f"{reverse('conversation', args=[pk])}?all=1"]
        urls += [reverse("segment_turns", args=[pk, i]) for i in range(conv.folds.count() + 1)]
        urls += [reverse("turn", args=[pk, t]) for t in sorted(set(conv.messages.values_list("turn", flat=True)))]
        for message in conv.messages.all():
            urls += [reverse("block", args=[pk, message.pk, i]) for i in range(len(message.blocks))]
    found: dict[str, list[str]] = {}
    ok = 0
    for url in urls:
        response = client.get(url)
        ok += response.status_code == 200
        body = (b"".join(response.streaming_content) if response.streaming else response.content).decode("utf-8", "replace")
        if hits := leaks(body):
            found[url] = hits
    assert ok >= 15, ok  # the pages were shown
    return found


def export_leaks(minimum: int = 2 * 4) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    exported = 0
    for conv in Conversation.objects.all():
        for fmt in builds.CONTENT_TYPES:
            try:
                content = builds.export(conv, fmt).content
            except builds.ExportRefused:  # another agent's own format (a Claude Code conversation as Codex)
                continue
            exported += 1
            if hits := leaks(content if isinstance(content, str) else content.decode("utf-8", "replace")):
                found[f"{fmt} of {conv.pk}"] = hits
    assert exported >= minimum
    return found


def _import(project, folder) -> Job:
    job = imports.start_import(project, paths=[str(folder)], enqueue=False)[0]
    done = jobs.run(job.pk)
    assert done is not None and done.status == JobStatus.SUCCEEDED, done and done.error
    return done


def test_the_logs_hold_every_value_in_every_field(tmp_path):
    write_logs(tmp_path)
    main = (tmp_path / f"{SESSION}.jsonl").read_text()
    lines = main.splitlines()
    decoded = [json.dumps(json.loads(line), ensure_ascii=False) for line in lines]
    for value in VALUES.values():
        encoded = json.dumps(value)[1:-1]
        # user, assistant text, tool call (value and key), tool result, summary, title: bare in the main file
        in_title = value in json.loads(lines[-1])["customTitle"]
        assert sum(line.count(encoded) for line in lines) == 6 + in_title, value[:12]
        assert encoded not in lines[4] and encoded in decoded[4]  # the escaped line hides it
    assert set(secrets.KINDS) == set(VALUES)  # every kind the detector knows is planted
    # Bare, the two kinds known by context only are not found by the patterns alone.
    for kind in ("aws_secret_key", "url_password"):
        assert secrets.mask(f"see {VALUES[kind]} here")[0] == f"see {VALUES[kind]} here"


def test_a_secret_found_once_is_masked_everywhere(project, user, client, tmp_path):
    write_logs(tmp_path)
    job = _import(project, tmp_path)
    main = Conversation.objects.get(external_id=SESSION)
    assert Conversation.objects.filter(parent=main).count() == 1  # the sub-agent
    assert main.folds.count() == 1 and main.title.startswith("Deploy [masked aws_secret_key] [masked url_password]")
    assert job.result  # the job's result is looked at too

    assert database_leaks() == {}
    assert search_leaks(user) == []
    assert page_leaks(client, user) == {}
    assert export_leaks() == {}
    # Masked, not dropped: the masks stand where the values stood, keys included.
    call = next(b for m in main.messages.all() for b in m.blocks if b.get("kind") == "tool_call")
    headers = json.dumps(call, ensure_ascii=False)
    for kind in ("aws_secret_key", "url_password", "github_token", "private_key"):
        assert f'"[masked {kind}]' in headers, kind
    escaped = main.messages.get(raw__contains="Escaped:")
    assert escaped.raw.count("[masked ") >= len(VALUES) - 1, escaped.raw
    assert search.search(user, "masked")
    # A fingerprint is kept, never the value.
    prints = list(SecretPrint.objects.values_list("kind", "length", "digest"))
    # (The lines of a PEM block's body too: one quoted alone is recognised in a later import.)
    assert {p[0] for p in prints} == {"aws_secret_key", "url_password", "private_key"}
    assert not leaks(prints)


def test_an_appended_line_is_masked_by_a_value_found_in_an_earlier_import(project, user, tmp_path):
    b = SessionBuilder(session_id=SESSION)
    path = tmp_path / f"{SESSION}.jsonl"
    lines = [b.user(f"Credentials:\n{with_context()}"), *b.assistant("Noted.")]
    write_lines(path, lines)
    assert ingest.import_file(project, path).status == "imported"
    assert database_leaks() == {}
    lines += [b.user(f"Now use {VALUES['aws_secret_key']} and {VALUES['url_password']}"), *b.assistant("Using them.")]
    write_lines(path, lines)
    report = ingest.import_file(project, path)
    assert report.status == "imported" and report.added_messages == 2
    assert database_leaks() == {}
    latest = Message.objects.get(raw__contains="Now use")
    assert "[masked aws_secret_key]" in latest.raw and "[masked url_password]" in latest.raw
    assert search_leaks(user) == []


def test_a_secret_only_a_json_key_or_only_escaped_is_masked(project, tmp_path):
    # Each secret stands once: as a header name, or with one character as a `\u` escape.
    b = SessionBuilder(session_id=SESSION)
    token, key = VALUES["github_token"], VALUES["anthropic_key"]
    lines = [b.user("Call the API"), *b.assistant("Calling.", tool=("Fetch", {"headers": {token: "yes"}})),
             _escaped(b.user(f"My key is {key}"))]
    assert key not in lines[-1]
    path = tmp_path / f"{SESSION}.jsonl"
    write_lines(path, lines)
    assert ingest.import_file(project, path).status == "imported"
    assert database_leaks() == {}
    call = next(b for m in Message.objects.all() for b in m.blocks if b.get("kind") == "tool_call")
    assert "[masked github_token]" in json.dumps(call)
    assert "My key is [masked anthropic_key]" in Message.objects.get(raw__contains="My key is").raw
    assert export_leaks(minimum=4) == {}


def test_manage_py_mask_masks_by_value_rows_stored_unmasked(project, user, tmp_path, monkeypatch, capsys):
    write_logs(tmp_path)
    with monkeypatch.context() as off:  # rows from before: stored as written
        off.setattr(secrets, "_RULES", ())
        off.setattr(secrets, "_HINTS", ())
        off.setattr(secrets, "_HINT_PATTERNS", ())
        _import(project, tmp_path)
    assert database_leaks() and search_leaks(user)  # stored in clear indeed
    call_command("mask", "--quiet")
    out, _ = capsys.readouterr()
    assert "masked by value" in out, out
    assert database_leaks() == {}
    assert search_leaks(user) == []
    call_command("mask", "--quiet")
    out, _ = capsys.readouterr()
    assert out.strip().endswith("0 rows changed (nothing to do)"), out

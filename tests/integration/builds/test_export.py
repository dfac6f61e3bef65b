"""Exports of imported conversations and of builds: every Claude Code line valid against the schema
of the version it claims, and importing an export gives back the same turns and text."""

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client

from contextviewer.core import build as core_build, export as core_export, export_claude
from contextviewer.builds import services as builds
from contextviewer.ingest import files as ingest
from contextviewer.jobs import queue as jobs
from contextviewer.conversations.models import Conversation
from contextviewer.jobs.models import JobStatus
from tests.conftest import claude_code_fixture_files
from tests.module_worlds import project_and_user
from tests.sessions import session_lines, write_lines
from tests.unit.test_export import schema_validator

FIXTURES = [
    "marot__spotter__4d5611e5-241a-462a-8d15-5122611a9569.jsonl",  # a compaction, thinking, Task
    "oneryalcin__fasthooks__sample_main_transcript.jsonl",  # a manual /compact, tool errors
    "marot__spotter__tool_heavy.jsonl",
    "moredip__session-share__images-in-tool-results.jsonl",  # base64 images in tool results
    "d-kimuson__claude-code-viewer__fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl",  # 1.0.x, legacy tool names
]


# tests/integration/conftest.py's project and user, made once for the module (tests/module_worlds.py).
_module_world, project, user = project_and_user()


def view(conv: Conversation) -> list[tuple]:
    """What an export must keep, per turn: text, tool calls (name as Claude Code accepts it, input),
    tool results (text, error flag, images) and images, in order."""
    dicts = builds.export_messages(conv)
    out = []
    for m in core_export.conversational(dicts):
        items = []
        for b in m["blocks"]:
            kind = b.get("kind")
            if kind == "text" and b.get("text"):
                items.append(("text", b["text"]))
            elif kind == "tool_call":
                items.append(("call", export_claude.claude_code_tool_name(b.get("tool_name")), json.dumps(core_export._tool_input(b), sort_keys=True)))
            elif kind == "tool_result":
                items.append(("result", b.get("text") or "", bool(b.get("is_error")), int(b.get("images") or 0)))
            elif kind == "image":
                items.append(("image",) if b.get("data") else ("text", f"[image{': ' + b['media_type'] if b.get('media_type') else ''} not exported]"))
            elif kind == "other" and b.get("text"):
                items.append(("text", f"[{b.get('raw_type') or 'other'}] {b['text']}"))
        if items:
            out.append((m["turn"], m["role"], bool(m.get("is_compact_summary")), items))
    return out


def _client(user) -> Client:
    c = Client()
    c.force_login(user)
    return c


def _reimport(project, tmp_path, content: str, name: str) -> Conversation:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    report = ingest.import_file(project, path)
    assert report.bad_lines == 0, report.errors
    return Conversation.objects.get(pk=report.conversation_ids[0])


def _legacy_named(line: dict, legacy: frozenset[str]) -> dict:
    """The line with calls of the tools in `legacy` named as the schema knows them (the export keeps
    the name the agent itself wrote, which the real client sends back; see tests/agents)."""
    content = (line.get("message") or {}).get("content")
    if not legacy or not isinstance(content, list):
        return line
    blocks = [{**b, "name": export_claude.claude_code_tool_name(b["name"])} if b.get("type") == "tool_use" and b.get("name") in legacy
              else b for b in content]
    return {**line, "message": {**line["message"], "content": blocks}}


def check_claude_code(content: str, legacy: frozenset[str] = frozenset()) -> list[dict]:
    """The lines of a Claude Code export, each valid against the schema of the version it claims
    (calls of `legacy` tools, names the source's own lines hold, apart)."""
    validator = schema_validator()
    lines = [json.loads(line) for line in content.splitlines()]
    assert lines, "the export is empty"
    for n, line in enumerate(lines, 1):
        errors = sorted({e.message[:200] for e in validator.iter_errors(_legacy_named(line, legacy))})
        assert errors == [], f"line {n} ({line.get('type')}): {errors}"
    title = lines.pop() if lines[-1]["type"] == "custom-title" else None
    assert title is None or title["sessionId"] == lines[0]["sessionId"]
    assert {line["version"] for line in lines} == {export_claude.CLAUDE_CODE_VERSION}
    known = set()
    for line in lines:
        assert line["parentUuid"] is None or line["parentUuid"] in known
        known.add(line["uuid"])
    assert len({line["sessionId"] for line in lines}) == 1
    return lines


# Every main session of the corpus (sub-agent files are imported with their session).
MAIN_FILES = [p.name for p in claude_code_fixture_files() if "subagents" not in p.parts] or FIXTURES


@pytest.mark.django_db
@pytest.mark.parametrize("name", MAIN_FILES)
def test_a_claude_code_export_of_a_real_session_validates_and_imports_back_the_same(project, user, fixtures_dir, tmp_path, name):
    report = ingest.import_path(project, fixtures_dir / "claude-code" / name)
    source = Conversation.objects.get(pk=report.conversation_ids[0])
    # The whole record: it imports back as the source (the loaded view holds less; test_export_views.py).
    r = _client(user).get(f"/api/conversations/{source.pk}/export", {"format": "claude-code", "view": "full"})
    assert r.status_code == 200
    session_id = r["X-Session-Id"]
    assert r["Content-Disposition"] == f'attachment; filename="{session_id}.jsonl"'
    names = {b.get("tool_name") for blocks in source.messages.values_list("blocks", flat=True) for b in blocks or ()
             if b.get("kind") == "tool_call"}
    legacy = frozenset(n for n in names if n and export_claude.claude_code_tool_name(n) != n)
    lines = check_claude_code(r.content.decode(), legacy)
    assert lines[0]["sessionId"] == session_id and lines[0]["cwd"] == (source.cwd or "/")
    if legacy:
        said = r["X-Export-Notes"]
        assert all(f"call of {n} kept under the name the agent wrote" in said for n in legacy if f'"name":"{n}"' in r.content.decode())

    again = _reimport(project, tmp_path, r.content.decode(), f"{session_id}.jsonl")
    assert again.pk != source.pk and again.external_id == session_id
    assert again.title == " ".join(source.title.split())[:200]
    assert view(again) == view(source)
    figures = lambda c: list(c.folds.filter(kind="compact").order_by("position").values_list("trigger", "tokens_before"))  # noqa: E731
    assert figures(again) == figures(source)


@pytest.mark.django_db
def test_exports_of_a_build_in_every_format(project, user, fixtures_dir, tmp_path):
    report = ingest.import_path(project, fixtures_dir / "claude-code" / FIXTURES[0])
    source = Conversation.objects.get(pk=report.conversation_ids[0])
    spans = builds.turn_spans(source)
    excluded = set(core_build.exclusions(spans, builds.fold_infos(source))[1])
    turns = [spans[1].turn, *[t.turn for t in spans if t.turn not in excluded][-2:]]
    turns = [t for t in turns if t not in excluded]
    job = builds.start_build(source, turns, [1], user=user)
    done = jobs.run(job.pk)
    assert done.status == JobStatus.SUCCEEDED, done.error
    built = Conversation.objects.get(pk=done.result["conversation_id"])
    client = _client(user)

    r = client.get(f"/api/conversations/{built.pk}/export", {"format": "claude-code"})
    lines = check_claude_code(r.content.decode())
    # A build has no fold markers: resuming it loads all of it, summary included.
    assert not [line for line in lines if line["type"] == "system"]
    assert sum(1 for line in lines if line.get("isCompactSummary")) == 1
    again = _reimport(project, tmp_path, r.content.decode(), "build.jsonl")
    assert view(again) == view(built)

    doc = json.loads(client.get(f"/api/conversations/{built.pk}/export", {"format": "anthropic"}).content)
    roles = [m["role"] for m in doc["messages"]]
    assert roles[0] == "user" and all(a != b for a, b in zip(roles, roles[1:]))
    for i, m in enumerate(doc["messages"]):
        uses = [b["id"] for b in m["content"] if b["type"] == "tool_use"]
        if uses:
            assert [b["tool_use_id"] for b in doc["messages"][i + 1]["content"] if b["type"] == "tool_result"] == uses

    doc = json.loads(client.get(f"/api/conversations/{built.pk}/export", {"format": "openai"}).content)
    pending: list[str] = []
    for m in doc["messages"]:
        if m["role"] == "tool":
            assert m["tool_call_id"] == pending.pop(0)
        else:
            assert pending == [], "tool messages must follow their call"
            pending = [c["id"] for c in m.get("tool_calls", [])]
    assert pending == []

    md = client.get(f"/api/conversations/{built.pk}/export", {"format": "markdown"})
    assert md["Content-Type"].startswith("text/markdown")
    text = md.content.decode()
    assert text.startswith(f"# {built.title}") and f"built from conversation {source.pk}" in text
    summary = builds.fold_infos(source)[0].summary_text
    assert summary.splitlines()[0] in text


@pytest.mark.django_db
def test_bad_export_requests_say_why(project, user):
    client = _client(user)
    assert client.get("/api/conversations/999999/export", {"format": "markdown"}).status_code == 404
    conv = Conversation.objects.create(project=project, external_id="x")
    r = client.get(f"/api/conversations/{conv.pk}/export", {"format": "pdf"})
    assert r.status_code == 400 and "claude-code" in r.json()["detail"]
    assert client.get(f"/api/conversations/{conv.pk}/export").status_code in (400, 422)
    assert Client().get(f"/api/conversations/{conv.pk}/export", {"format": "markdown"}).status_code == 401


@pytest.mark.django_db
def test_the_export_command_writes_a_file_and_says_how_to_resume(project, tmp_path):
    write_lines(tmp_path / "s.jsonl", session_lines(3))
    report = ingest.import_path(project, tmp_path / "s.jsonl")
    conv = Conversation.objects.get(pk=report.conversation_ids[0])
    out, err = StringIO(), StringIO()
    call_command("export", conv.external_id, format="claude-code", output=str(tmp_path / "out.jsonl"), stdout=out, stderr=err)
    lines = check_claude_code((tmp_path / "out.jsonl").read_text())
    assert f"claude --resume {lines[0]['sessionId']}" in err.getvalue()
    assert f"~/.claude/projects/{export_claude.encoded_project_dir(conv.cwd)}/" in err.getvalue()
    out = StringIO()
    call_command("export", str(conv.pk), format="markdown", stdout=out)
    assert "## Turn 2" in out.getvalue()


@pytest.mark.django_db
def test_every_export_is_audited(project, user, tmp_path):
    from contextviewer.accounts.models import AuditEvent

    write_lines(tmp_path / "s.jsonl", session_lines(2))
    report = ingest.import_path(project, tmp_path / "s.jsonl")
    conv = Conversation.objects.get(pk=report.conversation_ids[0])
    client = _client(user)
    client.get(f"/api/conversations/{conv.pk}/export", {"format": "openai"})
    client.get(f"/c/{conv.pk}/export/markdown/")
    call_command("export", str(conv.pk), format="anthropic", stdout=StringIO(), stderr=StringIO())
    events = list(AuditEvent.objects.filter(action="export.conversation").order_by("pk"))
    assert [(e.details["format"], e.actor) for e in events] == [("openai", user), ("markdown", user), ("anthropic", None)]
    assert all(e.project == project and e.target == f"conversation {conv.pk}" for e in events)

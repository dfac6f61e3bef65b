"""Handoff with the builtin provider: on every real fixture with a compaction, and cumulative."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contextviewer.builds import handoffs as handoff
from contextviewer.ingest import files as ingest
from contextviewer.jobs import queue as jobs
from contextviewer.conversations.models import Conversation, Fold, Message
from contextviewer.jobs.models import Job, JobStatus
from contextviewer.core import handoff as core
from contextviewer.core.tokens import count_text
from contextviewer.providers.models import SpendEntry
from tests.conftest import shared_fixtures_dir
from tests.sessions import SessionBuilder, session_lines, write_lines

pytestmark = pytest.mark.django_db


def _compacted_fixtures() -> list:
    root = shared_fixtures_dir()
    files = [p for p in sorted((root / "claude-code").rglob("*.jsonl")) if "compact_boundary" in p.read_text(errors="replace")] if root else []
    return files or [pytest.param(None, marks=pytest.mark.skip(reason="../shared/fixtures is absent"))]


def _run_handoff(conv, provider=None):
    job, _ = handoff.start_handoff(conv, provider=provider, enqueue=False)
    done = jobs.run(job.pk)
    assert done.status == JobStatus.SUCCEEDED, done.error
    return done, Fold.objects.get(conversation=conv, key=job.idempotency_key)


def _tool_inputs_after(conv, position):
    """Paths and commands of the tool calls after `position`, read straight from the stored blocks."""
    paths, commands = [], []
    for blocks in Message.objects.filter(conversation=conv, position__gt=position).order_by("position").values_list("blocks", flat=True):
        for b in blocks:
            if b.get("kind") != "tool_call" or not isinstance(b.get("tool_input"), dict):
                continue
            data = b["tool_input"]
            if isinstance(data.get("file_path"), str):
                paths.append(data["file_path"])
            if b.get("tool_name") == "Bash" and isinstance(data.get("command"), str):
                commands.append(" ".join(data["command"].split())[:60])
    return paths, commands


@pytest.mark.fixtures
@pytest.mark.parametrize("path", _compacted_fixtures(), ids=lambda p: p.name if isinstance(p, Path) else "absent")
def test_builtin_handoff_on_every_compacted_fixture_keeps_paths_and_commands(project, path):
    ingest.import_path(project, path)
    convs = [c for c in Conversation.objects.filter(project=project) if c.folds.filter(kind="compact").exists()]
    assert convs, f"{path.name}: the compaction was not imported"
    for conv in convs:
        latest = conv.folds.filter(kind="compact").order_by("-position").first()
        last = conv.messages.order_by("-position").first().position
        if latest.position >= last:
            continue
        before = conv.folds.count()
        if latest.summary_text:  # the imported compaction summary is read again (cumulative)
            view = handoff.loaded_input(conv)
            assert [e.role for e in view.entries].count("summary") == 1
            assert " ".join(latest.summary_text.split())[:200] in " ".join(view.entries[0].text.split())
        job, fold = _run_handoff(conv)
        assert conv.folds.count() == before + 1
        assert fold.origin == "generated" and fold.kind == "handoff"
        assert fold.position == last  # at the current end
        sections = core.validate_sections(fold.summary_text)
        assert all(sections[s].strip() for s in core.SECTIONS)
        state = sections["State and what is done"]
        paths, commands = _tool_inputs_after(conv, latest.position)
        # Vendored, build and temporary paths are not the work: left out, with the commands naming them.
        paths = [p for p in paths if not core.is_noise_path(p)]
        commands = [c for c in commands if not core.names_noise_path(c)]
        for p in list(dict.fromkeys(paths))[-3:]:
            assert p in state, f"{p} missing from State"
        for c in list(dict.fromkeys(commands))[-3:]:
            assert c in state, f"{c!r} missing from State"
        assert count_text(fold.summary_text) <= core.DEFAULT_BUDGET
        assert fold.tokens_before > 0 and fold.tokens_after == count_text(fold.summary_text)
        assert job.result["fold_id"] == fold.pk
        assert SpendEntry.objects.filter(job=job, role="handoff", conversation=conv).count() == 1
        # Nothing after the new fold: a second handoff is refused with a reason.
        with pytest.raises(handoff.NothingToFold, match="no message after the latest fold"):
            handoff.start_handoff(conv, enqueue=False)


def test_the_next_handoff_folds_the_previous_summary_in(project, tmp_path):
    builder = SessionBuilder()
    path = tmp_path / "s.jsonl"
    lines = [builder.user("Build the parser in src/parser.py. Never use regex for JSON; always run pytest -q first.")]
    lines += session_lines(3, builder)
    write_lines(path, lines)
    ingest.import_file(project, path)
    conv = Conversation.objects.get()
    _, first = _run_handoff(conv)
    s1 = core.parse_sections(first.summary_text)
    assert "src/parser.py" in s1["Goal"]
    assert "Never use regex for JSON" in s1["Constraints and preferences"]
    assert "pytest tests/test_2.py" in s1["State and what is done"]

    # The session goes on; the next handoff reads the first summary plus the new turns.
    more = builder.turn(7) + [builder.user("Now document src/parser.py in docs/parser.md")]
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("\n".join(more) + "\n")
    ingest.import_file(project, path)
    view = handoff.loaded_input(conv)
    assert view.entries[0].role == "summary" and view.entries[0].text == first.summary_text
    assert len([e for e in view.entries if e.role == "user"]) == 2  # only what came after the first fold
    _, second = _run_handoff(conv)
    assert second.position > first.position
    # What the second summary replaced: the first summary and the new turns, estimated (the recorded
    # calls still carried the whole history, so their measurement is not this view's size).
    latest_call = conv.model_calls.order_by("-position").first()
    assert second.tokens_before == view.tokens_estimate < latest_call.context_size
    s2 = core.parse_sections(second.summary_text)
    assert "src/parser.py" in s2["Goal"] and "docs/parser.md" in s2["Goal"]  # first goal kept, latest request named
    state = s2["State and what is done"]
    assert "pytest tests/test_7.py" in state  # new
    assert "pytest tests/test_2.py" in state  # carried from the first summary
    assert "Never use regex for JSON" in s2["Constraints and preferences"]
    assert "docs/parser.md" in s2["Next steps"]  # the request is not answered yet
    assert conv.folds.count() == 2


def test_a_job_run_twice_makes_one_fold(project, tmp_path):
    path = tmp_path / "s.jsonl"
    write_lines(path, session_lines(2))
    ingest.import_file(project, path)
    conv = Conversation.objects.get()
    job, fold = _run_handoff(conv)
    # The worker died after writing the fold, before marking the job done: it is run again.
    Job.objects.filter(pk=job.pk).update(status=JobStatus.RUNNING)
    assert jobs.retry(job)
    again = jobs.run(job.pk)
    assert again.status == JobStatus.SUCCEEDED and again.result["fold_id"] == fold.pk
    assert Fold.objects.filter(conversation=conv, origin="generated").count() == 1
    # The new fold gets its fact probes, once.
    probes = Job.objects.filter(kind="probes", params__conversation_id=conv.pk)
    assert probes.count() == 1


def test_handoff_command_prints_json_and_accepts_the_external_id(project, tmp_path, capsys):
    from django.core.management import call_command

    path = tmp_path / "s.jsonl"
    write_lines(path, session_lines(2))
    ingest.import_file(project, path)
    conv = Conversation.objects.get()
    call_command("handoff", conv.external_id, "--json")
    out = json.loads(capsys.readouterr().out)
    assert out["status"] == "succeeded" and out["result"]["conversation_id"] == conv.pk
    assert "## Goal" in out["result"]["summary"]
    with pytest.raises(SystemExit):
        call_command("handoff", "no-such-conversation")
    assert "no conversation" in capsys.readouterr().err

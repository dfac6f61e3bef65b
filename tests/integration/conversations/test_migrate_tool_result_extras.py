"""Messages stored before the importers put what a log records beside a tool result's text on the
result block's `extra` get it from the data migration (conversations 0012), re-derived from their
stored raw records by the importers' own functions: the page shows a Claude Code Bash call's
stdout and stderr apart as before, and the policy lab finds the same clips and originals."""

import json
from importlib import import_module

import pytest
from django.apps import apps
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from contextviewer.viewer import turn_content
from contextviewer.conversations.models import Conversation, Message
from contextviewer.ingest import files as ingest
from contextviewer.lab import replays
from tests.factories import make_project
from tests.sessions import SessionBuilder, write_lines

BEFORE = [("conversations", "0011_fold_kind_choices")]
CLIPPED = (
    "src/store.ts:12: save(\n[…compaction: ~5200 tokens of this grep output omitted. 37 more matches in 9 files. "
    "To retrieve it, re-run grep with a narrower pattern.]\nsrc/store.ts:400: save("
)


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor


def _latest():
    return _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())


def _claude_code_session(tmp_path):
    b = SessionBuilder()
    lines = [b.user("Build it, then show me the log.")]
    lines += b.assistant("Building.", tool=("Bash", {"command": "make build", "description": "Build"}))
    lines.append(b.tool_result("built\nwarning: deprecated", tool_use_result={
        "stdout": "built", "stderr": "warning: deprecated", "interrupted": False, "isImage": False}))
    lines.append(b.user("Now the full log."))
    lines += b.assistant("Reading it.", tool=("Bash", {"command": "cat build.log"}))
    original = "\n".join(f"log line {i}: compiling module_{i}" for i in range(400))
    lines.append(b.tool_result(original[:1500] + "\n\n... [350 lines truncated] ...", tool_use_result={
        "stdout": original, "stderr": "", "interrupted": False, "isImage": False}))
    lines += b.assistant("Done.")
    path = tmp_path / f"{b.session_id}.jsonl"
    write_lines(path, lines)
    return path, original


def _as_stored_before(conv) -> dict[int, list]:
    """Every block's extra taken away, as rows imported before the importers wrote it; the blocks
    as imported now, by message id."""
    now = {}
    for m in Message.objects.filter(conversation__in=conv):
        if any("extra" in b for b in m.blocks):
            now[m.pk] = m.blocks
            m.blocks = [{k: v for k, v in b.items() if k != "extra"} for b in m.blocks]
            m.save(update_fields=["blocks"])
    return now


@pytest.mark.django_db(transaction=True)
def test_the_migration_fills_the_extra_of_tool_results_stored_without_it(tmp_path):
    project = make_project()
    path, original = _claude_code_session(tmp_path)
    ingest.import_path(project, path)
    conv = Conversation.objects.get(project=project, kind="main")
    clipped_conv = Conversation.objects.create(project=project, agent="efferent", external_id="c1")
    Message.objects.create(conversation=clipped_conv, position=0, turn=0, role="tool", record_type="tool", raw="{}",
                           blocks=[{"kind": "tool_result", "tool_id": "call-1", "tool_name": "grep", "text": CLIPPED}],
                           flags={"clipped": True, "clipped_tokens_omitted": 5200})  # fmt: skip
    lab_before = replays.load_session(conv)
    imported = _as_stored_before([conv])
    assert len(imported) == 2  # the two Bash results

    # What nothing reads any longer is gone: the page and the lab see no run, no clip.
    view = turn_content.turn_view(conv, 0)
    (call,) = [b for mv in view.messages for b in mv.blocks if b.kind == "tool_call"]
    assert call.tool.bash.combined is True
    assert replays.load_session(conv).clips == []

    try:
        _migrate(BEFORE)
    finally:
        _latest()

    for pk, blocks in imported.items():
        assert Message.objects.get(pk=pk).blocks == blocks  # exactly what an import writes now
    (efferent_result,) = Message.objects.get(conversation=clipped_conv).blocks
    assert efferent_result["extra"] == {"clip": {"marker": CLIPPED.split("\n")[1], "omitted_tokens": 5200}}

    view = turn_content.turn_view(conv, 0)
    (call,) = [b for mv in view.messages for b in mv.blocks if b.kind == "tool_call"]
    bash = call.tool.bash
    assert (bash.combined, bash.stdout, bash.stderr, bash.exit_code) == (False, "built", "warning: deprecated", 0)
    lab = replays.load_session(conv)
    (clip,) = lab.clips
    assert clip.original == original and clip.marker == "... [350 lines truncated] ..."
    assert [(c.position, c.original, c.clipped_tokens) for c in lab.clips] == [
        (c.position, c.original, c.clipped_tokens) for c in lab_before.clips
    ]
    assert [m.original_text for m in lab.session.messages] == [m.original_text for m in lab_before.session.messages]

    # Run again (a migration stopped midway runs again): nothing changes.
    migration = import_module("contextviewer.conversations.migrations.0012_tool_result_extras")
    before = list(Message.objects.order_by("pk").values_list("blocks", flat=True))
    migration.fill_extras(apps, None)
    assert list(Message.objects.order_by("pk").values_list("blocks", flat=True)) == before
    assert json.loads(Message.objects.get(pk=min(imported)).raw)["toolUseResult"]["stdout"] == "built"  # the raw line untouched

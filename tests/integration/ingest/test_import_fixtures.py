"""Every real Claude Code fixture imports, and the stored figures match plain JSON counting.

The expected numbers are computed here, independently of the importer, with a few lines of json.
"""

import json
from pathlib import Path

import pytest

from contextviewer.ingest import files as ingest
from contextviewer.conversations.models import Conversation, Fold, Message, ModelCall, Source
from contextviewer.core.segments import FoldSpan, segments
from contextviewer.importers.claude_code.parser import KNOWN_METADATA_TYPES
from tests.conftest import shared_fixtures_dir

pytestmark = [pytest.mark.django_db, pytest.mark.fixtures]


def _main_files() -> list[Path]:
    root = shared_fixtures_dir()
    if root is None:
        return []
    return sorted((root / "claude-code").glob("*.jsonl"))


MAIN_FILES = _main_files()
if not MAIN_FILES:
    MAIN_FILES = [pytest.param(None, marks=pytest.mark.skip(reason="../shared/fixtures is absent"))]


def count_independently(path: Path) -> dict:
    """Plain counting: what a person would count by reading the file."""
    seen_uuids: dict[str, dict] = {}  # uuid -> its first line, but for the session id and time
    counts = {"messages": 0, "bad_lines": 0, "tool_calls": 0, "folds": 0, "sidechain_roots": 0}
    own_agent = None  # a file whose first message line is a sub-agent's is that sub-agent's file
    other_agents = set()
    calls = set()
    sidechain_uuids = set()
    boundaries = []
    queued = 0
    lines = path.read_bytes().split(b"\n")
    for raw in lines:
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            counts["bad_lines"] += 1
            continue
        if not isinstance(obj, dict):
            counts["bad_lines"] += 1
            continue
        kind = obj.get("type")
        if kind == "queue-operation" and obj.get("operation") == "enqueue":
            content = obj.get("content")
            if isinstance(content, str) and content.strip():
                queued += 1  # what was typed while the agent worked: a queued user message
            continue
        if kind in KNOWN_METADATA_TYPES:
            continue
        uid = obj.get("uuid")
        if isinstance(uid, str):
            plain = {k: v for k, v in obj.items() if k not in ("sessionId", "timestamp")}
            if uid in seen_uuids:
                # The same record written again (a resume), or the later record of a streamed call,
                # is not said; another record under the uuid is (a bad line: not stored again).
                message = obj.get("message") if isinstance(obj.get("message"), dict) else {}
                streamed = kind == "assistant" and isinstance(message.get("usage"), dict) and (
                    message.get("id"), obj.get("requestId")) in calls
                if plain != seen_uuids[uid] and not streamed:
                    counts["bad_lines"] += 1
                continue
            seen_uuids[uid] = plain
        if counts["messages"] == 0 and obj.get("isSidechain") is True and obj.get("agentId"):
            own_agent = obj["agentId"]
        counts["messages"] += 1
        if obj.get("agentId") and obj["agentId"] != own_agent:
            other_agents.add(obj["agentId"])
        if obj.get("isSidechain") is True and not obj.get("agentId"):
            if obj.get("parentUuid") not in sidechain_uuids:
                counts["sidechain_roots"] += 1
            if isinstance(uid, str):
                sidechain_uuids.add(uid)
        if kind == "system" and obj.get("subtype") in ("compact_boundary", "microcompact_boundary"):
            counts["folds"] += 1
            meta = obj.get("compactMetadata") or {}
            boundaries.append((uid, meta.get("preTokens"), bool(calls)))
        message = obj.get("message")
        if kind == "assistant" and isinstance(message, dict):
            content = message.get("content")
            if isinstance(content, list):
                counts["tool_calls"] += sum(
                    1 for b in content if isinstance(b, dict) and b.get("type") in ("tool_use", "server_tool_use")
                )
            if isinstance(message.get("usage"), dict) and message.get("id") and message.get("model") != "<synthetic>":
                calls.add((message["id"], obj.get("requestId")))
    counts["messages"] += queued
    counts["model_calls"] = len(calls)
    counts["children"] = counts["sidechain_roots"] + len(other_agents)
    counts["boundaries"] = boundaries
    return counts


@pytest.mark.parametrize("path", MAIN_FILES, ids=lambda p: p.name[:60] if p else "absent")
def test_fixture_file_imports_with_independent_counts(project, path):
    expected = count_independently(path)
    report = ingest.import_file(project, path)

    assert report.status == "imported"
    source = Source.objects.get(project=project)
    conversations = Conversation.objects.filter(source=source)
    assert Message.objects.filter(conversation__in=conversations).count() == expected["messages"]
    assert ModelCall.objects.filter(conversation__in=conversations).count() == expected["model_calls"]
    assert sum(c.tool_call_count for c in conversations) == expected["tool_calls"]
    assert Fold.objects.filter(conversation__in=conversations).count() == expected["folds"]
    assert source.error_count == expected["bad_lines"]
    assert len(report.errors) == expected["bad_lines"]
    for err in report.errors:
        assert err["line"] >= 1 and err["reason"]
    # Inline sidechains (1.0.x) become sub-agent conversations under the main one.
    main = conversations.order_by("pk").first()
    if expected["messages"]:
        assert main is not None
        assert main.children.count() == expected["children"]
        assert main.message_count + sum(c.message_count for c in main.children.all()) == expected["messages"]
    # Re-importing the same file adds nothing.
    again = ingest.import_file(project, path)
    assert again.status == "unchanged"
    assert Message.objects.filter(conversation__in=conversations).count() == expected["messages"]


SESSIONS_WITH_SUBAGENTS = [p for p in MAIN_FILES if isinstance(p, Path) and (p.parent / p.stem / "subagents").is_dir()]


@pytest.mark.parametrize("path", SESSIONS_WITH_SUBAGENTS, ids=lambda p: p.name[:60])
def test_session_folder_links_subagent_files(project, path):
    report = ingest.import_path(project, path)
    assert not [e for e in report.errors if not e["line"]]
    sub_files = sorted((path.parent / path.stem / "subagents").glob("agent-*.jsonl"))
    main = Conversation.objects.get(project=project, source__path=str(path.resolve()))
    children = {c.agent_id: c for c in main.children.all()}
    assert len(children) == len(sub_files) + count_independently(path)["children"]
    for sub in sub_files:
        agent_id = sub.stem.removeprefix("agent-")
        assert agent_id in children, f"{sub.name} not linked under its session"
        child = children[agent_id]
        expected = count_independently(sub)
        assert child.message_count == expected["messages"]
        assert child.model_call_count == expected["model_calls"]
        assert child.tool_call_count == expected["tool_calls"]
        assert child.fold_count == expected["folds"]
        if agent_id.startswith("acompact"):
            assert child.kind == "compaction"
        else:
            assert child.kind == "subagent"
            # Linked to the Task/Agent tool call that started it, when the parent logged one.
            if agent_id in (main.agent_links or {}):
                assert child.parent_tool_use_id == main.agent_links[agent_id]["tool_use_id"]
    # The compaction sub-agent's usage is the cost of the fold.
    if any(s.stem.startswith("agent-acompact") for s in sub_files) and main.folds.exists():
        fold = main.folds.get()
        assert fold.cost["calls"] >= 1
        assert fold.cost["cache_read"] + fold.cost["cache_write"] + fold.cost["input_uncached"] > 0


COMPACTED = [
    p for p in MAIN_FILES if isinstance(p, Path)
    and any(isinstance(pre, int) and pre > 0 for _, pre, _ in count_independently(p)["boundaries"])
]


@pytest.mark.parametrize("path", COMPACTED, ids=lambda p: p.name[:60])
def test_compaction_matches_the_log(project, path):
    expected = count_independently(path)
    ingest.import_file(project, path)
    main = Conversation.objects.filter(source__project=project).order_by("pk").first()
    boundaries = {uid: (pre, had_calls) for uid, pre, had_calls in expected["boundaries"] if isinstance(pre, int) and pre > 0}
    folds = list(main.folds.order_by("position"))
    assert folds
    checked = 0
    for fold in folds:
        if fold.key not in boundaries:
            continue
        pre, had_calls = boundaries[fold.key]
        assert fold.tokens_before == pre
        checked += 1
        if not had_calls:  # a schema catalogue with a boundary but no model call before it
            continue
        # The measured context of the last model call before the boundary is within 5 % of preTokens.
        last_call = main.model_calls.filter(position__lt=fold.position).order_by("-position").first()
        assert abs(last_call.context_size - pre) <= 0.05 * pre, (last_call.context_size, pre)
    assert checked
    # The loaded segment starts with the (latest) summary.
    last = main.messages.order_by("-position").first().position
    spans = [FoldSpan(key=f.key, position=f.position, summary_position=None) for f in folds]
    loaded = [s for s in segments(0, last, spans) if s.kind == "loaded"][0]
    first_loaded = main.messages.get(position=loaded.start)
    assert first_loaded.is_compact_summary
    assert folds[-1].summary_message_id == first_loaded.pk
    # An auto-compaction below 200k means Claude Code ran the 200k window, whatever the API offers.
    if folds[-1].trigger == "auto" and main.peak_context < 200_000 and main.model_names:
        assert main.window in (None, 200_000)
        if "opus-4-6" in main.model_names[-1]:
            assert main.window == 200_000
    summary_text = "".join(b.get("text", "") for b in first_loaded.blocks)
    assert summary_text and folds[-1].summary_text == summary_text

"""A fold's figures through the ingest service (issue 20, items 1 and 2): the window after it
(``tokens_after``, from the first measured call after it) and the cost of its summary call (the
summarizer's call only, from the last record of its message id, where Claude Code 2.1's compaction
file replays the whole parent conversation first).

Every expected figure is counted from the raw lines here, with plain ``json``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.urls import reverse

from contextviewer.conversations.models import Conversation, ConversationKind, Fold
from contextviewer.importers.claude_code import synthetic
from contextviewer.ingest import files as ingest
from contextviewer.ingest.imports import conversation_summary

pytestmark = pytest.mark.django_db


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _context(usage: dict) -> int:
    return usage.get("input_tokens", 0) + usage.get("cache_creation_input_tokens", 0) + usage.get("cache_read_input_tokens", 0)


def _first_call_after_boundary(lines: list[dict]) -> int | None:
    """The measured input of the first assistant line after the (first) compact_boundary line."""
    seen = False
    for obj in lines:
        if obj.get("type") == "system" and obj.get("subtype") == "compact_boundary":
            seen = True
        elif seen and obj.get("type") == "assistant" and isinstance(obj.get("message", {}).get("usage"), dict):
            return _context(obj["message"]["usage"])
    return None


# -- item 1: Claude Code 2.1's replaying compaction file --------------------------------------------


def test_a_2_1_compaction_file_costs_its_summarizer_call_only(project, client, user, tmp_path):
    main = synthetic.write_session(tmp_path, messages=160, seed=4, compaction_replay=True)
    (acompact,) = sorted((tmp_path / main.stem / "subagents").glob("agent-acompact-*.jsonl"))
    parent_lines, lines = _lines(main), _lines(acompact)
    parent_uuids = {o["uuid"] for o in parent_lines if "uuid" in o}
    parent_ids = {o["message"]["id"] for o in parent_lines if o.get("type") == "assistant"}
    own = [o for o in lines if o["uuid"] not in parent_uuids]
    summarizer = [o for o in lines if o.get("type") == "assistant" and o["message"]["id"] not in parent_ids]
    # The file is the 2.1 layout: mostly the parent's own records, one call of its own, written as
    # a streaming placeholder and again (same uuid) with the real output.
    assert len(lines) - len(own) > 50 and len({o["message"]["id"] for o in summarizer}) == 1
    assert sum(1 for o in lines if o.get("type") == "assistant" and o["message"]["id"] in parent_ids) > 20
    placeholder, last = summarizer[0]["message"]["usage"], summarizer[-1]["message"]["usage"]
    assert placeholder["output_tokens"] == 6 and last["output_tokens"] > 1000

    report = ingest.import_path(project, main)
    assert not report.errors
    conv = Conversation.objects.get(pk=report.conversation_ids[0])
    fold = Fold.objects.get(conversation=conv, kind="compact")
    cost = fold.cost
    assert cost["calls"] == 1
    assert cost["input_uncached"] + cost["cache_write"] + cost["cache_read"] == _context(last)
    assert cost["output"] == last["output_tokens"]

    # The compaction conversation holds the summarizer's prompt and answer, not the replayed records.
    compaction = conv.children.get(kind=ConversationKind.COMPACTION)
    own_messages = {o["uuid"] for o in own if o.get("type") in ("user", "assistant", "system")}
    own_tools = sum(1 for o in own for b in (o.get("message") or {}).get("content") or [] if isinstance(b, dict) and b.get("type") == "tool_use")
    assert (compaction.message_count, compaction.model_call_count, compaction.tool_call_count) == (len(own_messages), 1, own_tools)
    assert compaction.spend_tokens == _context(last) + last["output_tokens"]

    # What a user reads: the page and import --json.
    summary = conversation_summary(conv)
    assert summary["folds"][0]["cost"]["input_tokens"] == _context(last)
    assert summary["folds"][0]["cost"]["output_tokens"] == last["output_tokens"]
    client.login(username="alice", password="pw-alice-123")
    html = client.get(reverse("conversation", args=[conv.pk])).content.decode()
    from contextviewer.display.templatetags.cv import tok

    assert f"summary call {tok(_context(last))} in, {tok(last['output_tokens'])} out" in html

    # Importing again changes nothing.
    ingest.import_path(project, main)
    compaction.refresh_from_db()
    assert compaction.model_call_count == 1


def test_the_older_compaction_file_still_costs_its_one_call(project, tmp_path):
    main = synthetic.write_session(tmp_path, messages=120, seed=5)
    (acompact,) = (tmp_path / main.stem / "subagents").glob("agent-acompact-*.jsonl")
    (call,) = [o for o in _lines(acompact) if o.get("type") == "assistant"]
    conv = Conversation.objects.get(pk=ingest.import_path(project, main).conversation_ids[0])
    cost = Fold.objects.get(conversation=conv, kind="compact").cost
    usage = call["message"]["usage"]
    assert (cost["calls"], cost["input_uncached"] + cost["cache_write"] + cost["cache_read"]) == (1, _context(usage))


# -- item 2: tokens_after ---------------------------------------------------------------------------


def test_tokens_after_is_the_first_call_after_the_fold_and_an_append_fills_it(project, client, user, tmp_path):
    source = synthetic.write_session(tmp_path / "src", messages=140, seed=6, subagent=False)
    lines = source.read_text(encoding="utf-8").splitlines(keepends=True)
    parsed = [json.loads(line) for line in lines]
    summary_at = next(i for i, o in enumerate(parsed) if o.get("isCompactSummary"))
    want = _first_call_after_boundary(parsed)
    assert want  # the synthetic session goes on after its fold

    # First the file as it was right after the fold: no call after it yet.
    path = tmp_path / "live" / source.name
    path.parent.mkdir()
    path.write_text("".join(lines[: summary_at + 1]), encoding="utf-8")
    conv = Conversation.objects.get(pk=ingest.import_path(project, path).conversation_ids[0])
    fold = Fold.objects.get(conversation=conv, kind="compact")
    assert fold.tokens_before and fold.tokens_after is None
    assert conversation_summary(conv)["folds"][0]["tokens_after"] is None
    client.login(username="alice", password="pw-alice-123")
    html = client.get(reverse("conversation", args=[conv.pk])).content.decode()
    assert "no call after it yet" in html and "→ – tokens" not in html

    # The file grows: the appended import fills it from the call that came.
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("".join(lines[summary_at + 1 :]))
    report = ingest.import_path(project, path)
    assert report.files[0].status == "imported"
    fold.refresh_from_db()
    assert fold.tokens_after == want
    assert conversation_summary(conv)["folds"][0]["tokens_after"] == want
    html = client.get(reverse("conversation", args=[conv.pk])).content.decode()
    from contextviewer.display.templatetags.cv import tok

    assert f"{tok(fold.tokens_before)} → {tok(want)} tokens" in html and "no call after it yet" not in html


# The real folds, checked by hand from the raw lines (a short json script reading each line):
# - Codex, madshn 12-54-34: the remote compaction is lines 1788 (`compacted`) and 1789
#   (`context_compacted`); the last measured token_count before it is line 1785 (input_tokens
#   209,950); line 1791 repeats a zero last_token_usage (not a call); the first call after it is
#   line 1799, last_token_usage.input_tokens 48,297 (cached 22,912; Codex's input includes cached).
# - Claude Code, marot 4d5611e5: compact_boundary line 754 (preTokens 170,251); the first
#   assistant line after it, line 760: input 3 + cache_creation + cache_read = 36,081.
# - Claude Code, marot 8463c716: boundary line 714 (preTokens 167,731); line 719: 42,603.
# - Claude Code, marot ae4a77f8: boundary line 1481 (preTokens 142,431); line 1492: 45,263.
# - Claude Code, oneryalcin sample_main_transcript: boundary line 59 (manual, preTokens 21,558);
#   no assistant line after it: tokens_after stays empty.
REAL_FOLDS = [
    ("codex/madshn__localpush__rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl", 209_950, 48_297),
    ("claude-code/marot__spotter__4d5611e5-241a-462a-8d15-5122611a9569.jsonl", 170_251, 36_081),
    ("claude-code/marot__spotter__8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl", 167_731, 42_603),
    ("claude-code/marot__spotter__ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl", 142_431, 45_263),
    ("claude-code/oneryalcin__fasthooks__sample_main_transcript.jsonl", 21_558, None),
]


@pytest.mark.parametrize("name,before,after", REAL_FOLDS, ids=[r[0].split("__")[-1][:30] for r in REAL_FOLDS])
def test_real_folds_have_the_window_after_them(project, fixtures_dir, name, before, after):
    report = ingest.import_path(project, fixtures_dir / name)  # with its sub-agent folder, as it lies
    conv = Conversation.objects.get(pk=report.conversation_ids[0])
    (fold,) = conv.folds.filter(kind="compact")
    assert (fold.tokens_before, fold.tokens_after) == (before, after)
    assert conversation_summary(conv)["folds"][0]["tokens_after"] == after


def _last_call_before_boundary(lines: list[dict]) -> int:
    last = None
    for obj in lines:
        if obj.get("type") == "system" and obj.get("subtype") == "compact_boundary":
            return last
        if obj.get("type") == "assistant" and isinstance(obj.get("message", {}).get("usage"), dict):
            last = _context(obj["message"]["usage"])
    raise AssertionError("no compact_boundary")


def test_the_window_after_is_the_next_call_not_the_logs_post_tokens_and_a_missing_pre_tokens_is_the_last_call(project, tmp_path):
    """Claude Code's compactMetadata.postTokens is its estimate of the summary alone (2,912 where the
    next call measured 22,404 in issue 33's run): the fold's window after is the next call's input.
    A boundary without preTokens takes the last measured call before it."""
    source = synthetic.write_session(tmp_path / "src", messages=140, seed=6, subagent=False)
    lines = _lines(source)
    for obj in lines:
        if obj.get("subtype") == "compact_boundary":
            obj.setdefault("compactMetadata", {})["postTokens"] = 750
            obj["compactMetadata"].pop("preTokens", None)
    path = tmp_path / "edited" / source.name
    path.parent.mkdir()
    path.write_text("".join(json.dumps(o) + "\n" for o in lines), encoding="utf-8")
    conv = Conversation.objects.get(pk=ingest.import_path(project, path).conversation_ids[0])
    fold = Fold.objects.get(conversation=conv, kind="compact")
    assert fold.tokens_after == _first_call_after_boundary(lines) != 750
    assert fold.tokens_before == _last_call_before_boundary(lines)

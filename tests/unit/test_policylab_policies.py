"""Policy lab: each policy against the numbers of policy-lab.md, on synthetic sessions."""

from __future__ import annotations

from dataclasses import replace

import pytest

from contextviewer.core.policylab import get, names
from contextviewer.core.policylab.claude_code import CLEARED_MARKER, threshold
from contextviewer.core.policylab.codex import auto_compact_limit
from contextviewer.core.policylab.common import (
    api_round_start,
    find_safe_boundary,
    keep_last_assistant_turns,
    separates_pair,
    snap_back_to_ai,
)
from contextviewer.core.policylab.cwm import zone_of
from contextviewer.core.policylab.deepagents import preview, should_evict
from contextviewer.core.policylab.efferent import compress_string
from tests.policylab_sessions import LabBuilder, text_of


def fires(replay, kind):
    return [e for e in replay.events if e.kind == kind]


def one_big_result(result_tokens: int, window: int = 200_000, tool: str = "Read", agent: str = "claude-code"):
    b = LabBuilder(window=window, agent=agent)
    b.user(text_of(1_000))
    b.tool_turn(tool, text_of(result_tokens))
    b.final_call()
    return b.session()


# -- Claude Code §3 ----------------------------------------------------------------------------


def test_claude_code_threshold_numbers():
    assert threshold(200_000) == 167_000
    assert threshold(1_000_000) == 967_000
    assert threshold(200_000, pct=50) == 90_000  # the override only lowers it
    assert threshold(200_000, pct=99) == 167_000


def test_claude_code_fires_at_167000_not_166999():
    at = get("claude_code").replay(one_big_result(166_000))  # 1,000 + 166,000 = 167,000
    below = get("claude_code").replay(one_big_result(165_999))
    assert len(fires(at, "fold")) == 1 and fires(at, "fold")[0].call_index == 1
    assert fires(below, "fold") == []
    folded = at.windows[1]
    assert folded.items[0].state == "summary" and folded.total_tokens < 30_000
    assert "This session is being continued" in folded.items[0].text_or_marker


def test_claude_code_uses_the_sessions_own_summary_size():
    s = one_big_result(166_000)
    s = type(s)(**{**{f: getattr(s, f) for f in s.__dataclass_fields__}, "real_summary_tokens": (3_900,)})
    w = get("claude_code").replay(s).windows[1]
    summary = [i for i in w.items if i.state == "summary"][0]
    assert summary.tokens == 3_900 + 80 and "modelled" not in summary.text_or_marker


def test_claude_code_legacy_microcompact_clears_all_but_last_3():
    b = LabBuilder()
    b.user("go")
    for _ in range(6):
        b.tool_turn("Read", text_of(25_000))
    b.final_call()
    r = get("claude_code").replay(b.session(), microcompact="legacy")
    last = r.windows[-1]
    cleared = [i for i in last.items if i.state == "cleared"]
    assert cleared and all(i.text_or_marker == CLEARED_MARKER for i in cleared)
    assert len([i for i in last.items if i.role == "tool" and i.state == "full"]) == 3


# -- efferent §1 -------------------------------------------------------------------------------


def test_efferent_clips_16001_chars_not_16000():
    assert compress_string("a" * 16_000, "Read") is None
    text, marker = compress_string("a" * 16_001, "Read")
    assert marker == (
        "[…compaction: ~500 tokens of this Read output omitted. To retrieve it, re-run the tool narrower — "
        "read_file with offset/limit, a more specific grep, or bash piped through head/tail.]"
    )
    assert text.startswith("a" * 12_000 + "\n[…") and text.endswith("]\n" + "a" * 2_000)


def test_efferent_grep_planner_keeps_five_matches_per_file_within_budget():
    grep = "\n".join(f"src/pkg/file{i % 40}.py:{i}:    value = {i}  # {'y' * 60}" for i in range(2_000))
    text, marker = compress_string(grep, "Grep")
    assert len(text) <= 16_000 + len(marker) + 1
    assert "(50 matches, showing 5)" in text
    shown = text.count("(50 matches, showing 5)")
    assert 1 <= shown < 40
    assert marker == (
        f"[…compaction: {2_000 - 5 * shown} of 2000 matched lines omitted (40 files, {shown} shown, first 5 matches "
        "each). To retrieve, re-run the search narrower — a more specific pattern, a subdirectory, or fewer context lines.]"
    )


def test_efferent_log_planner_keeps_errors_head_and_tail_for_bash_only():
    lines = [f"compiling unit {i:05d} ............................." for i in range(1_000)]
    lines[500] = "ERROR: build broke in unit 500"
    log = "\n".join(lines + ["12 passed, 1 failed"])
    text, marker = compress_string(log, "Bash")
    assert "ERROR: build broke in unit 500" in text and "12 passed, 1 failed" in text
    assert "compiling unit 00000" in text and "lines omitted…]" in text
    assert marker.startswith("[…compaction: ") and "1 error block(s)" in marker
    _, other = compress_string(log, "Read")  # not Bash: blind clip
    assert "tokens of this Read output omitted" in other


def test_efferent_hands_off_at_85_percent_at_the_end_of_a_user_turn():
    b = LabBuilder(window=100_000)
    b.user("start")
    b.call(tools=("Read",))
    b.result(text_of(84_000))  # clipped to 16k chars at append time: far below 85 %
    b.call()
    b.user(text_of(90_000))  # a huge prompt pushes the next turn above 85 %
    b.call()
    b.user("next")
    b.call()
    r = get("efferent").replay(b.session())
    assert fires(r, "clip") and r.windows[1].items[2].state == "clipped"
    handoffs = fires(r, "handoff")
    assert [e.call_index for e in handoffs] == [3]
    assert r.windows[3].items[0].state == "summary"
    assert r.windows[3].items[0].text_or_marker.startswith("[System note: the earlier history")


# -- deepagents §2 -----------------------------------------------------------------------------


def test_deepagents_offloads_over_80000_chars_except_exempt_tools():
    assert not should_evict("execute", "a" * 80_000)
    assert should_evict("execute", "a" * 80_001)
    assert not should_evict("read_file", "a" * 200_000)
    r = get("deepagents").replay(one_big_result(20_001, tool="execute", window=1_000_000))
    item = r.windows[1].items[2]
    assert item.state == "evicted_to_file"
    assert item.text_or_marker.startswith("Tool result too large, the result of this tool call t0 was saved")
    assert "/large_tool_results/t0" in item.text_or_marker
    assert item.tokens < 1_000
    exempt = get("deepagents").replay(one_big_result(20_001, tool="grep", window=1_000_000))
    assert exempt.windows[1].items[2].state == "full"


def test_deepagents_preview_is_first_5_and_last_5_lines():
    text = "\n".join(f"row {i}" for i in range(1, 31))
    p = preview(text).split("\n")
    assert p[0] == "     1\trow 1" and p[4] == "     5\trow 5"
    assert p[5] == "... [20 lines truncated] ..."
    assert p[6] == "    26\trow 26" and p[-1] == "    30\trow 30"
    assert preview("a\nb") == "     1\ta\n     2\tb"


def test_deepagents_summarizes_at_85_percent_keeping_10_percent():
    b = LabBuilder(window=100_000)
    for _ in range(9):
        b.user("go")
        b.tool_turn("read_file", text_of(10_000))
    b.final_call()
    r = get("deepagents").replay(b.session())
    ev = fires(r, "summarize")
    assert ev, "85 % of 100,000 is crossed"
    w = r.windows[ev[0].call_index]
    assert w.items[0].state == "summary"
    assert sum(i.tokens for i in w.items[1:]) <= 10_000 + 100
    assert not separates_pair([m for m in b.messages if m.id not in ev[0].dropped_msg_ids], 0)


def test_deepagents_clear_tool_uses_keeps_last_3():
    b = LabBuilder(window=1_000_000)
    b.user("go")
    for _ in range(6):
        b.tool_turn("read_file", text_of(20_000))
    b.final_call()
    r = get("deepagents").replay(b.session(), clear_tool_uses=True)
    items = r.windows[-1].items
    assert [i.state for i in items if i.role == "tool"] == ["cleared"] * 3 + ["full"] * 3
    assert all(i.text_or_marker == "[cleared]" for i in items if i.state == "cleared")


# -- Codex §4 ----------------------------------------------------------------------------------


def test_codex_compacts_at_90_percent_of_272k():
    assert auto_compact_limit(272_000) == 244_800
    at = get("codex").replay(one_big_result(243_800, window=272_000, tool="shell"), trunc_limit=10**9)
    below = get("codex").replay(one_big_result(243_799, window=272_000, tool="shell"), trunc_limit=10**9)
    assert [e.call_index for e in fires(at, "fold")] == [1]
    assert fires(below, "fold") == []
    items = at.windows[1].items
    assert items[-1].state == "summary" and [i.role for i in items[:-1]] == ["user"]


def _codex_rollout(usage: int):
    """A gpt-5 rollout: the log's window is the usable 95 % (258,400) of the model's 272,000; the
    first call measured `usage` tokens, then a small result and a second call."""
    b = LabBuilder(window=258_400, agent="codex")
    b.user(text_of(1_000))
    b.tool_turn("shell", text_of(10), usage=usage)
    b.final_call()
    s = b.session()
    return replace(s, calls=tuple(replace(c, input_limit=272_000) for c in s.calls))


def test_codex_limit_is_90_percent_of_the_models_window_not_of_the_logged_one():
    """232,560 (90 % of the logged 258,400) does not fire; 244,800 (90 % of 272,000) does."""
    below = get("codex").replay(_codex_rollout(240_000))
    at = get("codex").replay(_codex_rollout(244_800))
    assert fires(below, "fold") == []
    assert [e.call_index for e in fires(at, "fold")] == [1]
    assert "≥ 244,800" in fires(at, "fold")[0].detail


def test_the_trigger_counts_from_the_measured_usage_not_the_estimate():
    """The lab's estimate of call 0's window (1,000 tokens of text) is far below what the provider
    measured (166,990): Claude Code's count starts from the measured usage and fires at call 1."""
    b = LabBuilder()
    b.user(text_of(1_000))
    b.tool_turn("Read", text_of(10), usage=166_990)
    b.final_call(usage=167_010)
    r = get("claude_code").replay(b.session())
    assert [e.call_index for e in fires(r, "fold")] == [1]
    assert r.windows[0].total_tokens == 166_990


def test_codex_truncates_tool_output_in_the_middle():
    r = get("codex").replay(one_big_result(20_000, window=272_000, tool="shell"))
    item = r.windows[1].items[2]
    assert item.state == "clipped" and "tokens truncated…" in item.text_or_marker


# -- picoclaw §5 -------------------------------------------------------------------------------


def test_picoclaw_summarizes_after_20_messages():
    b = LabBuilder(window=10_000_000)
    for k in range(8):  # 3 messages per turn: user, assistant(tool), tool + final assistant
        b.user(f"turn {k}")
        b.tool_turn("exec", "out")
    b.user("last")
    b.final_call()
    r = get("picoclaw").replay(b.session())
    ev = fires(r, "summarize")
    assert ev and ev[0].call_index == 7  # 21 messages after turn 7 ends
    w = r.windows[ev[0].call_index]
    assert w.items[0].state == "summary" and w.items[0].text_or_marker.startswith("CONTEXT_SUMMARY:")


def test_picoclaw_summarizes_at_75_percent():
    b = LabBuilder(window=100_000)
    b.user("first")
    b.tool_turn("exec", "small")
    b.user("second")
    b.tool_turn("exec", "a" * 187_500)  # (chars+12)·2/5 > 75,000 with only 7 messages
    b.call()
    b.user("next")
    b.call()
    r = get("picoclaw").replay(b.session(), max_tokens=0)
    assert [e.call_index for e in fires(r, "summarize")] == [3]
    below = LabBuilder(window=100_000)
    below.user("first")
    below.tool_turn("exec", "small")
    below.user("second")
    below.tool_turn("exec", "a" * 187_400)
    below.call()
    below.user("next")
    below.call()
    assert fires(get("picoclaw").replay(below.session(), max_tokens=0), "summarize") == []


def test_picoclaw_emergency_drops_the_oldest_half_of_turns():
    b = LabBuilder(window=131_072)
    for k in range(3):
        b.user(f"turn {k}")
        b.tool_turn("exec", "a" * 60_000)  # 24,000 est. tokens per turn, 3 messages
    b.user("fourth")  # 72k of history + 60k MaxTokens > 131,072, yet < 75 % and < 20 messages
    b.final_call()
    r = get("picoclaw").replay(b.session(), max_tokens=60_000)
    assert fires(r, "summarize") == []
    drops = fires(r, "drop")
    assert [e.call_index for e in drops] == [3]
    assert drops[0].dropped_msg_ids == tuple(m.id for m in b.messages[:6])  # turns 0 and 1 of 4
    w = r.windows[3]
    note = [i for i in w.items if i.state == "note"][0]
    assert note.text_or_marker == "[Emergency compression dropped 6 oldest messages due to context limit]"
    assert [i.text_or_marker for i in w.items if i.role == "user"] == ["turn 2", "fourth"]


# -- OpenHands §6 ------------------------------------------------------------------------------


def test_openhands_condenses_over_120_events_keeping_first_4():
    b = LabBuilder(window=10_000_000)
    b.user("task")
    for _ in range(70):
        b.tool_turn("execute_bash", "ok")
    b.final_call()
    r = get("openhands").replay(b.session())
    ev = fires(r, "condense")
    assert ev
    w = r.windows[ev[0].call_index]
    assert len(w.items) == 4 + 1 + 55 and w.items[4].state == "summary"


# -- CWM §7 ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fill", "zone"),
    [(49_999, "green"), (50_000, "yellow"), (74_999, "yellow"), (75_000, "orange"), (89_999, "orange"), (90_000, "red")],
)
def test_cwm_zone_boundaries(fill, zone):
    assert zone_of(fill, 100_000) == zone


def test_cwm_orange_evicts_back_under_75_percent():
    b = LabBuilder(window=100_000)
    b.user("go")
    for _ in range(8):
        b.tool_turn("exec", text_of(10_000))
    b.final_call()
    r = get("cwm").replay(b.session())
    assert fires(r, "evict")
    assert all(w.total_tokens < 90_000 for w in r.windows)


# -- safe cut points §0 ------------------------------------------------------------------------


def _pairs_session():
    b = LabBuilder()
    for k in range(5):
        b.user(f"u{k}")
        b.call(tools=("Read", "Grep"))
        b.result("r1")
        b.result("r2")
        b.call(text="done")
    return b.messages


@pytest.mark.parametrize("helper", [snap_back_to_ai, find_safe_boundary, api_round_start])
def test_safe_cut_points_never_separate_a_call_from_its_result(helper):
    msgs = _pairs_session()
    for target in range(len(msgs)):
        cut = helper(msgs, target)
        assert not separates_pair(msgs, cut), (helper.__name__, target, cut)
    assert any(separates_pair(msgs, t) for t in range(len(msgs)))  # the check itself can fail


def test_efferent_engine_keeps_whole_assistant_turns():
    msgs = _pairs_session()
    for keep in (1, 2, 3):
        cut = keep_last_assistant_turns(msgs, keep)
        assert cut > 0 and msgs[cut].role == "assistant" and not separates_pair(msgs, cut)


# -- every policy ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", names())
def test_every_policy_returns_one_window_per_call(name):
    b = LabBuilder(window=120_000, overhead=2_000)
    for k in range(12):
        b.user(f"step {k}")
        b.tool_turn("Bash", text_of(9_000))
    b.final_call()
    s = b.session()
    r = get(name).replay(s)
    assert [w.call_index for w in r.windows] == [c.index for c in s.calls]
    assert r.open_loop and r.peak == max(w.total_tokens for w in r.windows)
    full = {m.id: m.tokens for m in s.messages}
    for w in r.windows:
        for i in w.items:
            if i.state in ("clipped", "cleared", "evicted_to_file") and i.msg_id:
                assert i.tokens < full[i.msg_id]


def test_unknown_policy_and_parameter_are_clear_errors():
    with pytest.raises(KeyError, match="unknown policy 'nope'"):
        get("nope")
    with pytest.raises(ValueError, match="unknown parameter"):
        get("codex").replay(one_big_result(10), bogus=1)


def test_recorded_curve_uses_measured_input_and_restarts_after_the_sessions_own_fold():
    from dataclasses import replace

    b = LabBuilder(window=200_000, overhead=1_000)
    b.user(text_of(5_000))
    b.call(usage=7_000)
    b._add("system", "compact boundary", kind="boundary")
    b._add("user", text_of(300), kind="summary")
    b.user("again")
    b.call()
    s = b.session()
    r = get("recorded").replay(s)
    assert r.windows[0].total_tokens == 7_000
    assert [i.state for i in r.windows[1].items][0] == "full"
    assert r.windows[1].total_tokens == 1_000 + sum(i.tokens for i in r.windows[1].items) < 7_000
    other = get("claude_code").replay(replace(s, real_summary_tokens=(300,)))
    own = {m.id for m in s.messages if m.kind}
    assert len(own) == 2 and not own & {i.msg_id for w in other.windows for i in w.items}  # not replayed


def test_each_policy_declares_its_summary_wrapper_and_the_lab_defaults():
    """§8 "Always add": the wrapper each harness puts around a summary is the policy's own
    (`wrapper_tokens` on its module, read through the registry), and so is whether the lab draws it
    for every conversation (`default`)."""
    from contextviewer.core.policylab import defaults, registry

    wrappers = {name: registry.wrapper_tokens(name) for name in names() if name != "recorded"}
    assert wrappers == {
        "claude_code": 80, "efferent": 45, "efferent_engine": 45, "deepagents": 50, "codex": 100,
        "picoclaw": 35, "openhands": 20, "cwm": 20,
    }
    assert defaults() == ["claude_code", "efferent", "deepagents"]

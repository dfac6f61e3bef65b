"""The own harness's rule in the policy lab (issue 34, item 3): the rule of the session's recorded
version, one fold per crossing of the threshold, and a fold that cannot bring the window under its
limit said, not repeated at every call.

The version figures are the real clients' (docs/policy-lab.md "Checked against the real clients"):
`manage.py agent_thresholds --claude var/agents/claude-code-2.0.57` bisected Claude Code 2.0.57 on
claude-opus-4-6 to a last usage of 155,000 (compact_boundary preTokens 155,000; at 154,999 it did not
compact), and 2.1.197 / 2.1.332 to 167,000 (preTokens 167,000). 2.0.57's bundle reserves
min(CLAUDE_CODE_MAX_OUTPUT_TOKENS or 32,000, the model's max output): 200,000 - 32,000 - 13,000."""

from __future__ import annotations

from dataclasses import replace

import pytest

from contextviewer.core.harness import Harness, VersionRule, version_rule
from contextviewer.core.policylab import get
from contextviewer.core.policylab.claude_code import threshold
from contextviewer.core.policylab.common import Trigger
from contextviewer.importers import formats
from tests.policylab_sessions import LabBuilder, text_of

CLAUDE = formats.harness("claude-code")
CODEX = formats.harness("codex")


def folds(replay) -> list[int]:
    return [e.call_index for e in replay.events if e.kind == "fold"]


def grows_by(step: int, calls: int, window: int = 200_000, overhead: int = 1_000, model: str | None = None):
    """A session whose window grows by one `step`-token Read result per call (no usage measured)."""
    b = LabBuilder(window=window, overhead=overhead, model=model)
    b.user("go")
    for _ in range(calls):
        b.tool_turn("Read", text_of(step))
    b.final_call()
    return b.session()


# --- the rule of the recorded version -----------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "at"),
    [("2.0.57", 155_000), ("2.0.76", 155_000), ("2.1.39", 167_000), ("2.1.197", 167_000), ("2.1.332", 167_000)],
)
def test_claude_code_version_picks_its_measured_threshold(version, at):
    params, note = CLAUDE.rule_for(version)
    p = {**get("claude_code").params, **params}
    assert threshold(200_000, p["max_output"], None, None, p["reserve_cap"]) == at
    assert "no measured rule" not in note and version in note


@pytest.mark.parametrize("version", ["1.0.88", "2.2.0", "2.10.1", None, ""])
def test_a_version_without_a_measured_rule_says_so(version):
    params, note = CLAUDE.rule_for(version)
    assert params == {}  # the policy's defaults: the rule measured on 2.1.x
    assert note.startswith("no measured rule for ")
    assert "2.0.57" in note and "2.1.197" in note  # the versions that were measured
    assert (version or "the log does not name it") in note


def test_codex_058_checks_mid_turn_only_and_0104_has_no_measured_rule():
    # Bisected on the real 0.58.0 (a response that calls a tool, then its follow-up): it compacts from
    # a response total of 244,800 (gpt-5 and gpt-5-codex), not 244,799; resumed at any last usage up
    # to 500,000 it never compacted before the new turn. 0.171.0 compacts before the new turn too.
    b = LabBuilder(window=272_000, agent="codex")
    b.user("go")
    b.call(usage=100_000)
    b.user("next")
    b.call(usage=250_000)  # call 1: its total is over 244,800
    b.user("more")
    b.call(usage=251_000, tools=("shell",))  # call 2: a new prompt came first (pre-turn)
    b.result("done")
    b.call(usage=252_000)  # call 3: mid-turn, after a tool call
    s = replace(b.session(), own_policy="codex")
    new, _ = CODEX.rule_for("0.171.0")
    old, note = CODEX.rule_for("0.58.0")
    assert folds(get("codex").replay(s, **new)) == [2]
    assert folds(get("codex").replay(s, **old)) == [3]
    assert "no measured rule" not in note and "0.58.0: the rule measured on 0.58.0" in note
    params, note = CODEX.rule_for("0.104.0-alpha.1")
    assert params == {} and "no measured rule for Codex CLI 0.104.0-alpha.1" in note


def test_a_version_prefix_holds_its_patch_versions_only():
    rules = (VersionRule("2.0", "2.0.57"), VersionRule("2.1", "2.1.197"))
    assert version_rule(rules, "2.0.57").versions == "2.0"
    assert version_rule(rules, "2.10.1") is None and version_rule(rules, "20.1") is None
    assert Harness().rule_for("1.0") == ({}, "")  # a harness without measured rules says nothing


def test_a_200k_session_at_160k_folds_under_the_2_0_rule_and_not_under_the_2_1_rule():
    s = grows_by(40_000, 4)  # 1,000 + 4 x 40,000 = 161,000 before the last call
    params, _ = CLAUDE.rule_for("2.0.57")
    assert folds(get("claude_code").replay(s, **params)) == [4]
    assert folds(get("claude_code").replay(s)) == []


# --- which models fold on the threshold (2.1.153 on) ----------------------------------------------
# Measured on the real clients with `manage.py agent_thresholds --models ... --at 199000` (a last usage
# over 167,000 and under the 200k window; docs/policy-lab.md "Which models compact on the threshold"):
# 2.1.39 and 2.1.152 compacted every model; 2.1.153 to 2.1.162 none; 2.1.163, 2.1.197 and 2.1.332 only
# claude-opus-4-6 and claude-sonnet-4-6 (not opus-4-5, sonnet-4-5, haiku-4-5, opus-4-1, sonnet-4);
# on 1M, 2.1.332 compacted claude-sonnet-5 from 967,000 (bisected: last usage 966,044 + 956) and never
# claude-opus-4-6 [1m] (up to 999,000). The versions between were bisected by installing npm's releases.


@pytest.mark.parametrize(
    ("version", "auto_windows"),
    [("2.1.152", None), ("2.1.153", ()), ("2.1.162", ()), ("2.1.163", "listed"), ("2.1.197", "listed"), ("2.1.332", "listed"),
     ("2.1.400", "listed"), ("2.1.160-beta.1", ())],
)
def test_the_2_1_rule_is_picked_by_the_release_within_2_1(version, auto_windows):
    params, note = CLAUDE.rule_for(version)
    assert "no measured rule" not in note
    got = params.get("auto_windows")
    if auto_windows == "listed":
        assert dict(got) == {"claude-opus-4-6": 200_000, "claude-sonnet-4-6": 200_000, "claude-sonnet-5": 1_000_000}
    else:
        assert got == auto_windows


@pytest.mark.parametrize(
    ("version", "model", "window", "step", "fold_detail"),
    [
        # 200k: 1k + 6 x 30k = 181k at call 6 (over 167,000), 211k at call 7 (over the window).
        ("2.1.39", "claude-opus-4-5", 200_000, 30_000, (6, "auto-compact")),
        ("2.1.332", "claude-opus-4-5", 200_000, 30_000, (7, "reactive compact")),
        ("2.1.332", "claude-haiku-4-5-20251001", 200_000, 30_000, (7, "reactive compact")),
        ("2.1.332", "claude-opus-4-6", 200_000, 30_000, (6, "auto-compact")),
        ("2.1.332", "claude-sonnet-4-6", 200_000, 30_000, (6, "auto-compact")),
        ("2.1.155", "claude-opus-4-6", 200_000, 30_000, (7, "reactive compact")),
        # 1M: 1k + 7 x 140k = 981k at call 7 (over 967,000), 1,121k at call 8 (over the window).
        ("2.1.39", "claude-opus-4-6", 1_000_000, 140_000, (7, "auto-compact")),
        ("2.1.332", "claude-opus-4-6", 1_000_000, 140_000, (8, "reactive compact")),
        ("2.1.332", "claude-sonnet-5", 1_000_000, 140_000, (7, "auto-compact")),
    ],
)
def test_a_model_the_version_does_not_compact_on_its_threshold_folds_only_past_the_window(version, model, window, step, fold_detail):
    params, _ = CLAUDE.rule_for(version)
    r = get("claude_code").replay(grows_by(step, 9, window=window, model=model), **params)
    fold = next(e for e in r.events if e.kind == "fold")
    assert (fold.call_index, fold.detail.split(" at ")[0].split(":")[0]) == fold_detail


def test_a_release_range_holds_its_own_releases_only():
    rules = (VersionRule("2.1", "a", until="2.1.152"), VersionRule("2.1", "b", since="2.1.163"))
    assert version_rule(rules, "2.1.152").measured == "a" and version_rule(rules, "2.1.9").measured == "a"
    assert version_rule(rules, "2.1.163").measured == "b" and version_rule(rules, "2.1.1000").measured == "b"
    assert version_rule(rules, "2.1.157") is None and version_rule(rules, "2.2.0") is None


# --- once per crossing --------------------------------------------------------------------------


def test_each_crossing_folds_once_and_the_trigger_rearms_below_the_threshold():
    # 60k per call: crosses 167,000 at call 3 (1k + 180k), the fold leaves ~a summary, then the
    # window grows again past it at call 6: two crossings, two folds.
    r = get("claude_code").replay(grows_by(60_000, 7))
    assert folds(r) == [3, 6]
    assert r.unresolved == ()


def test_a_fold_that_cannot_get_under_the_threshold_fires_once_and_is_said():
    # What the harness carries besides the log (a session that starts full: its calibrated overhead)
    # is 170,000, over the 167,000 threshold: no fold can bring the window under it.
    b = LabBuilder(overhead=170_000)
    b.user("go on")
    for _ in range(6):
        b.tool_turn("Read", text_of(500))
    b.final_call()
    r = get("claude_code").replay(b.session())
    # Not before the first call (the client counts its messages only there, no usage yet), once
    # after it, and never again at every later call.
    assert folds(r) == [1]
    (call, after, limit), = r.unresolved
    assert call == 1 and after >= limit == 167_000


def test_codex_folds_once_per_crossing_too():
    b = LabBuilder(window=272_000, agent="codex", overhead=250_000)
    b.user("go on")
    for _ in range(5):
        b.tool_turn("shell", text_of(500))
    b.final_call()
    r = get("codex").replay(b.session())
    assert len(folds(r)) == 1 and len(r.unresolved) == 1


def test_trigger():
    t = Trigger()
    assert not t.fires(10, 20) and t.fires(25, 20)
    t.acted(3, 21, 20)  # still over: not armed again until a count is under
    assert not t.fires(30, 20) and not t.fires(22, 20)
    assert not t.fires(5, 20) and t.fires(20, 20)
    t.acted(7, 4, 20)
    assert t.armed and t.unresolved == [(3, 21, 20)]


def test_efferent_hands_off_once_when_the_handoff_cannot_get_under_85_percent():
    # 175,000 carried besides the log, over 85 % of 200,000 (170,000): the first handoff (at the
    # second prompt, after a measured input) cannot get under it and is not made at every prompt after.
    b = LabBuilder(overhead=175_000)
    for i in range(5):
        b.user(f"prompt {i}")
        b.call(text=text_of(300))
    r = get("efferent").replay(b.session())
    assert [e.call_index for e in r.events if e.kind == "handoff"] == [1]
    assert [c for c, _after, limit in r.unresolved] == [1] and r.unresolved[0][2] == 170_000


def test_picoclaw_says_when_its_emergency_drop_cannot_get_under_its_budget():
    # 176,000 carried besides the log: over picoclaw's budget (its window less its 32,768 max output)
    # whatever it drops; it checks again at every turn, and each drop is said.
    b = LabBuilder(overhead=176_000)
    for i in range(4):
        b.user(f"prompt {i}")
        b.tool_turn("Read", text_of(500))
    b.final_call()
    r = get("picoclaw").replay(b.session())
    drops = [e.call_index for e in r.events if e.kind == "drop"]
    assert drops and [c for c, _after, _limit in r.unresolved] == drops
    assert all(after > limit == 200_000 - 32_768 for _c, after, limit in r.unresolved)

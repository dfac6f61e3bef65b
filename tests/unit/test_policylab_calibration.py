"""Policy lab: calibration per session (policy-lab.md §0), tokens saved, actions by kind, and the
probes' prepared texts (core/facts.py prepare/merge), on synthetic sessions."""

from __future__ import annotations

from contextviewer.core import facts
from contextviewer.core.policylab import get
from contextviewer.core.policylab.common import calibrate
from tests.policylab_sessions import LabBuilder, text_of

OVERHEAD, SCALE = 12_000, 1.3


def measured_session(turns: int = 8, result_tokens: int = 4_000, tool: str = "Read"):
    """Every call measured as a provider whose tokens are 1.3 lab tokens, plus 12,000 overhead."""
    b = LabBuilder()
    b.user(text_of(500))
    seen = 500
    for _ in range(turns):
        b.call(usage=round(OVERHEAD + SCALE * seen), tools=(tool,))
        seen += round(len("ok") / 4)
        b.result(text_of(result_tokens))
        seen += result_tokens
    b.final_call(usage=round(OVERHEAD + SCALE * seen))
    return b.session()


def test_calibration_fits_scale_and_overhead():
    s = calibrate(measured_session())
    assert abs(s.scale - SCALE) < 0.01
    assert abs(s.overhead_tokens - OVERHEAD) < 50


def test_a_policy_that_never_acts_draws_the_recorded_curve_and_saves_nothing():
    s = calibrate(measured_session())
    recorded = get("recorded").replay(s)
    for name in ("claude_code", "codex", "cwm"):
        r = get(name).replay(s)
        assert r.fires == 0 and r.saved_tokens == 0, name
        for w, rec in zip(r.windows, recorded.windows, strict=True):
            assert abs(w.total_tokens - rec.total_tokens) <= 0.01 * rec.total_tokens, (name, w.call_index)


def test_clips_are_counted_as_clips_and_only_save():
    s = calibrate(measured_session(turns=3, result_tokens=9_000, tool="Bash"))  # 36,000 chars > 30,000
    r = get("claude_code").replay(s)
    assert r.actions["clips"] == 3 and r.actions["folds"] == 0 and r.fires == 3
    assert r.saved_tokens > 0
    assert all(e.tokens_after < e.tokens_before for e in r.events)


def test_merged_prepared_texts_keep_what_the_joined_text_keeps():
    parts = [
        "Edited src/app/models.py and ran `make test` in 2.5 s.",
        "See https://example.com/docs. We must never touch vendor/ again.",
        "TypeError: cannot read property of undefined",
    ]
    msgs = [{"position": i, "turn": i, "role": "assistant", "blocks": [{"kind": "text", "text": t}]} for i, t in enumerate(parts)]
    found = facts.extract(msgs)
    assert found
    whole, merged = facts.prepare("\n".join(parts)), facts.merge([facts.prepare(p) for p in parts])
    assert [facts.is_kept(f, merged) for f in found] == [facts.is_kept(f, whole) for f in found]
    assert all(facts.is_kept(f, merged) for f in found)


def test_the_harness_counts_from_what_the_provider_would_have_measured():
    """Claude Code fires at 167,000 provider tokens (§3.1: last usage + chars/4), and its last usage
    is the replayed window as the provider counts it: with 1.3 provider tokens per lab token it
    fires while the lab-token window is still far below 167,000, and never above the window."""
    s = calibrate(measured_session(turns=40))
    assert abs(s.scale - SCALE) < 0.01
    r = get("claude_code").replay(s)
    folds = [e for e in r.events if e.kind == "fold"]
    assert folds, "the session passes 167,000 provider tokens"
    first = folds[0]
    assert 167_000 <= first.tokens_before < 167_000 + 2 * 4_000 * SCALE + 1_000  # within a call of the threshold
    assert r.peak < 200_000


def test_a_slope_no_tokenizer_has_fails_the_calibration_and_says_why():
    """Redacted logs: the measured input grows 7 tokens per token of logged text."""
    b = LabBuilder()
    b.user(text_of(500))
    seen = 500
    for _ in range(5):
        b.call(usage=round(OVERHEAD + 7 * seen), tools=("Read",))
        b.result(text_of(1_000))
        seen += 1_000
    b.final_call(usage=round(OVERHEAD + 7 * seen))
    s = calibrate(b.session())
    assert not s.calibrated and s.scale == 1.0
    assert "7.00 tokens per token" in s.calibration_note and "redacted" in s.calibration_note
    assert calibrate(measured_session()).calibrated and calibrate(measured_session()).calibration_note == ""


def test_a_session_with_nothing_measured_is_all_estimate_and_says_so():
    b = LabBuilder()
    b.user(text_of(500))
    b.tool_turn("Read", text_of(1_000))
    b.final_call()
    s = calibrate(b.session())
    assert s.calibrated and "no measured model call" in s.calibration_note


def test_measured_calls_only_after_the_first_fold_fail_the_calibration_with_their_overhead():
    """No measured call saw the unmodified history (the log's usage starts after its own fold):
    nothing to fit the scale on, so the calibration fails and says so; the overhead is the first
    measured call's input less its logged window (the summary and what followed), so the replays
    are not drawn 12,000 tokens below the recorded curve as if the harness read nothing else."""
    b = LabBuilder()
    b.user(text_of(2_000))
    b.tool_turn("Read", text_of(3_000))  # calls with no usage
    b.user("[compacted]", kind="boundary")
    b.user(text_of(400), kind="summary")
    b.user(text_of(100))
    b.call(usage=OVERHEAD + 500)  # the window: the summary (400) and the prompt (100)
    b.result(text_of(1_000))
    b.final_call(usage=OVERHEAD + 1_500)
    s = calibrate(b.session())
    assert not s.calibrated and s.scale == 1.0
    assert "after the session's own first fold" in s.calibration_note
    assert abs(s.overhead_tokens - OVERHEAD) <= 5

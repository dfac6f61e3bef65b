"""Budgets and gauges: measured and estimated numbers kept apart."""

import pytest

from contextviewer.core import budget
from contextviewer.core.budget import (
    Gauge,
    calibration,
    estimate_input,
    fit,
    measured_context,
)
from contextviewer.core.model_specs import ModelSpec, lookup
from contextviewer.core.tokens import CATEGORIES
from contextviewer.importers import formats


# A bare model (no conversation, so no agent) is drawn by the rules of the harness that usually
# runs its provider's models (formats.harness(None, spec)); the core takes the rules it is given.
def gauge(categories, *, spec, **kwargs):
    return budget.gauge(categories, spec=spec, rules=formats.harness(None, spec), **kwargs)


def output_reserve(spec):
    return budget.output_reserve(spec, formats.harness(None, spec))


def thresholds(spec):
    return budget.thresholds(spec, formats.harness(None, spec))


def test_measured_context():
    assert measured_context(3, 1_000, 40_000) == 41_003
    assert measured_context(0, 0, 0) == 0


def test_estimate_input_adds_harness_overhead_when_measured():
    result = estimate_input({"user": 100, "assistant": 50, "tool_results": 850}, measured=11_000)
    assert list(result) == list(CATEGORIES)
    assert result["harness_overhead"] == 10_000  # 11,000 measured - 1,000 visible
    assert result["user"] == 100 and result["system_prompt"] == 0


def test_estimate_input_without_measurement_has_no_overhead():
    result = estimate_input({"user": 100}, measured=None)
    assert result["harness_overhead"] == 0
    assert sum(result.values()) == 100


def test_estimate_input_unknown_keys_go_to_other_and_old_overhead_is_recomputed():
    result = estimate_input({"user": 10, "weird": 5, "harness_overhead": 999}, measured=100)
    assert result["other"] == 5
    assert result["harness_overhead"] == 85


def test_overhead_never_negative_and_calibration():
    result = estimate_input({"user": 1000}, measured=800)
    assert result["harness_overhead"] == 0
    assert calibration(1000, 800) == pytest.approx(0.8)
    assert calibration(800, 1000) == pytest.approx(1.25)  # applies below the measurement too
    assert calibration(1000, None) is None
    assert calibration(0, 10) is None


def test_output_reserve_rules():
    assert output_reserve(lookup("claude-sonnet-4-5")) == 20_000  # Claude Code's reserve
    assert output_reserve(lookup("claude-3-haiku")) == 4_096  # output limit below 20k
    assert output_reserve(lookup("gpt-5")) == 128_000  # 400k window, 272k input
    assert output_reserve(lookup("o3")) == 40_000  # 100k output limit, capped at 20 % of 200k
    assert output_reserve(lookup("gpt-4o")) == 16_384
    assert output_reserve(ModelSpec("zero", 0, 0)) == 0


def test_thresholds_for_claude_include_auto_compact():
    assert thresholds(lookup("claude-sonnet-4-5")) == [
        ("warn 70 %", 140_000),
        ("Claude Code auto-compact", 167_000),
        ("critical 90 %", 180_000),
    ]
    assert ("Codex compact 90 %", 244_800) in thresholds(lookup("gpt-5"))  # 90 % of 272k
    assert thresholds(ModelSpec("zero", 0, 0)) == []


def test_measured_gauge():
    g = gauge(
        {"user": 20_000, "tool_results": 100_000},
        spec=lookup("claude-sonnet-4-5"),
        measured=150_000,
        cache_read=120_000,
    )
    assert isinstance(g, Gauge)
    assert g.measured_or_estimated == "measured" and g.is_measured
    assert (g.window, g.max_output, g.output_reserve) == (200_000, 64_000, 20_000)
    assert g.scaled["harness_overhead"] == 30_000  # no calibration: the whole gap, at factor 1
    assert g.estimate == 120_000
    assert g.used == 150_000
    assert g.free == 30_000  # 200k - 150k - 20k reserve
    assert g.fraction == pytest.approx(0.75)
    assert g.severity == "warn"
    assert g.cache_fraction == pytest.approx(0.8)
    assert g.calibration == pytest.approx(1.0) and g.factor is None
    assert ("Claude Code auto-compact", 167_000) in g.thresholds
    bar = g.bar()
    assert [key for key, _label, _v in bar] == ["harness_overhead", "user", "tool_results", "output_reserve", "free"]
    assert sum(v for _k, _l, v in bar) == 200_000


def test_estimated_gauge_says_so():
    g = gauge({"user": 20_000, "tool_results": 100_000}, spec=lookup("claude-sonnet-4-5"), measured=None)
    assert g.measured_or_estimated == "estimated" and not g.is_measured
    assert g.used == 120_000 and g.measured is None
    assert g.scaled["harness_overhead"] == 0
    assert g.cache_fraction is None
    assert g.free == 60_000


def test_gauge_calibrates_the_bar_not_the_figures():
    g = gauge({"user": 1_000}, spec=lookup("claude-sonnet-4-5"), measured=800)
    assert g.calibration == pytest.approx(0.8)
    assert g.categories["user"] == 1_000  # the estimate stays an estimate
    assert dict((k, v) for k, _l, v in g.bar())["user"] == 800  # scaled to the measurement


def test_overflowing_gauge_and_unknown_model():
    g = gauge({"user": 10}, spec=lookup("mystery"), measured=195_000)
    assert not g.model_known
    assert g.free == 0 and g.severity == "critical"
    assert g.output_reserve == 32_000  # default rule: the output limit, at most 20 % of 200k


def test_zero_window_gauge():
    g = gauge({"user": 10}, spec=ModelSpec("zero", 0, 0), measured=100)
    assert (g.window, g.free, g.fraction, g.severity, g.thresholds) == (0, 0, 0.0, "ok", [])


def test_window_override_and_extra_thresholds():
    g = gauge(
        {"user": 50_000},
        spec=lookup("claude-sonnet-4-5", override_window=100_000),
        measured=None,
        reserve=0,
        extra_thresholds=[("policy 60 % clear", 60_000)],
    )
    assert g.window == 100_000 and g.fraction == 0.5 and g.free == 50_000
    assert g.thresholds[0] == ("policy 60 % clear", 60_000)
    assert ("Claude Code auto-compact", 67_000) in g.thresholds


# ---------------------------------------------------------------- calibration


def _session(factor, overheads, estimates_per_segment, folds):
    """Calls whose measurement is factor x estimate + the segment's overhead; segment i's calls
    come after fold i - 1."""
    calls = []
    for i, (overhead, estimates) in enumerate(zip(overheads, estimates_per_segment, strict=True)):
        start = folds[i - 1] + 1 if i else 1
        calls += [(start + j, round(factor * est + overhead), est) for j, est in enumerate(estimates)]
    return calls


def test_fit_finds_the_factor_and_one_overhead_per_segment():
    folds = [10]
    calls = _session(1.36, [23_000, 30_000], [[100, 5_000, 20_000, 40_000, 60_000, 90_000], [4_000, 9_000, 30_000]], folds)
    fitted = fit(calls, folds)
    assert fitted.factor == pytest.approx(1.36, abs=0.001)
    assert fitted.overhead_at(0) == pytest.approx(23_000, abs=2)
    assert fitted.overhead_at(1) == pytest.approx(30_000, abs=2)
    assert fitted.overhead_at(None) == fitted.overhead_at(1)
    assert fitted.calls == 9


def test_fit_applies_when_the_estimate_exceeds_the_measurement_too():
    calls = _session(0.8, [2_000], [[1_000, 20_000, 50_000, 80_000]], [])
    assert fit(calls).factor == pytest.approx(0.8, abs=0.001)


def test_fit_ignores_unmeasured_calls_and_needs_enough_of_them():
    calls = [(1, None, 100), (2, 0, 5_000), (3, 0, 9_000)]
    fitted = fit(calls)
    assert fitted.factor is None and fitted.calls == 0 and fitted.overhead_at(None) is None
    assert fit([(1, 20_000, 100), (2, 30_000, 7_000)]).factor is None  # two calls fit nothing


def test_calibrated_gauge_adds_up_to_the_measurement_with_a_constant_overhead():
    folds = []
    estimates = [500, 20_000, 50_000, 100_000]
    calls = _session(1.3, [25_000], [estimates], folds)
    fitted = fit(calls, folds)
    overheads = []
    for _pos, measured, est in calls:
        g = gauge({"user": est // 5, "tool_results": est - est // 5}, spec=lookup("claude-sonnet-4-5"), measured=measured, fitted=fitted, segment=0)
        assert sum(g.scaled.values()) == measured == g.used
        overheads.append(g.scaled["harness_overhead"])
    assert max(overheads) - min(overheads) <= 1  # constant, not a growing gap
    assert g.scaled["tool_results"] == pytest.approx(1.3 * (100_000 - 20_000), rel=0.01)


def test_captured_prompt_fills_the_overhead_and_is_sized_down_to_it():
    fitted = fit(_session(1.25, [30_000], [[100, 10_000, 40_000]], []))
    g = gauge({"user": 40_000}, spec=lookup("claude-sonnet-4-5"), measured=80_000, fitted=fitted, segment=0, prompt=(4_000, 12_000))
    assert (g.scaled["system_prompt"], g.scaled["tool_definitions"]) == (5_000, 15_000)  # x 1.25
    assert g.scaled["harness_overhead"] == 10_000 and not g.captured_fitted
    g = gauge({"user": 40_000}, spec=lookup("claude-sonnet-4-5"), measured=80_000, fitted=fitted, segment=0, prompt=(20_000, 60_000))
    assert g.scaled["system_prompt"] + g.scaled["tool_definitions"] == 30_000 and g.captured_fitted
    assert g.scaled["harness_overhead"] == 0 and sum(g.scaled.values()) == 80_000


def test_unmeasured_gauge_is_an_estimate_scaled_by_the_fitted_factor():
    fitted = fit(_session(1.5, [20_000], [[100, 10_000, 40_000]], []))
    g = gauge({"summary": 4_000}, spec=lookup("claude-sonnet-4-5"), measured=None, fitted=fitted, unavailable=["system_prompt"])
    assert not g.is_measured
    assert g.scaled["summary"] == 6_000 and g.scaled["harness_overhead"] == 20_000
    assert g.used == 26_000 and g.unavailable == ("system_prompt",)

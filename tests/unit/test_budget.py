"""Budgets and gauges: measured and estimated numbers kept apart."""

import pytest

from contextviewer.core.budget import (
    Gauge,
    calibration,
    estimate_input,
    gauge,
    measured_context,
    output_reserve,
    thresholds,
)
from contextviewer.core.registry import ModelSpec, lookup
from contextviewer.core.tokens import CATEGORIES


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
    assert calibration(800, 1000) is None  # the gap is overhead, not miscounting
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
    assert g.categories["harness_overhead"] == 30_000
    assert g.estimate == 120_000
    assert g.used == 150_000
    assert g.free == 30_000  # 200k - 150k - 20k reserve
    assert g.fraction == pytest.approx(0.75)
    assert g.severity == "warn"
    assert g.cache_fraction == pytest.approx(0.8)
    assert g.calibration is None
    assert ("Claude Code auto-compact", 167_000) in g.thresholds
    bar = g.bar()
    assert [key for key, _label, _v in bar] == ["harness_overhead", "user", "tool_results", "output_reserve", "free"]
    assert sum(v for _k, _l, v in bar) == 200_000


def test_estimated_gauge_says_so():
    g = gauge({"user": 20_000, "tool_results": 100_000}, spec=lookup("claude-sonnet-4-5"), measured=None)
    assert g.measured_or_estimated == "estimated" and not g.is_measured
    assert g.used == 120_000 and g.measured is None
    assert g.categories["harness_overhead"] == 0
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

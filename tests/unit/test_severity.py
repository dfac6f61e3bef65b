"""Severity: ok below 70 %, warn from 70 %, critical from 90 %; unknown window is ok."""

import pytest

from contextviewer.core.severity import CRITICAL_AT, WARN_AT, fraction, severity, severity_of_fraction


def test_thresholds():
    assert (WARN_AT, CRITICAL_AT) == (0.70, 0.90)


@pytest.mark.parametrize(
    ("used", "window", "expected"),
    [
        (0, 200_000, "ok"),
        (139_999, 200_000, "ok"),
        (140_000, 200_000, "warn"),  # exactly 70 %
        (179_999, 200_000, "warn"),
        (180_000, 200_000, "critical"),  # exactly 90 %
        (250_000, 200_000, "critical"),  # over the window
        (7, 10, "warn"),
        (9, 10, "critical"),
        (699_999, 1_000_000, "ok"),
    ],
)
def test_severity_levels(used, window, expected):
    assert severity(used, window) == expected


@pytest.mark.parametrize("window", [None, 0, -5])
def test_unknown_or_zero_window_is_ok(window):
    assert severity(10**9, window) == "ok"
    assert fraction(10**9, window) == 0.0


def test_fraction():
    assert fraction(50, 200) == 0.25
    assert fraction(None, 200) == 0.0
    assert fraction(-3, 200) == 0.0
    assert fraction(300, 200) == 1.5


def test_severity_of_fraction():
    assert [severity_of_fraction(f) for f in (0.0, 0.6999, 0.7, 0.8999, 0.9, 2.0)] == [
        "ok", "ok", "warn", "warn", "critical", "critical"
    ]

"""Severity of a fill level: the ONE function every surface (gauge, curve, lists, API) uses.

ok below 70 % of the window, warn from 70 %, critical from 90 % (DESIGN.md, vocabulary).
"""

from __future__ import annotations

WARN_AT = 0.70
CRITICAL_AT = 0.90

OK = "ok"
WARN = "warn"
CRITICAL = "critical"
LEVELS = (OK, WARN, CRITICAL)


def fraction(used: int | float | None, window: int | None) -> float:
    """used / window; 0.0 when the window is unknown (None or 0) or nothing is used."""
    if not window or window <= 0 or not used or used <= 0:
        return 0.0
    return used / window


def severity_of_fraction(value: float) -> str:
    if value >= CRITICAL_AT:
        return CRITICAL
    if value >= WARN_AT:
        return WARN
    return OK


def severity(used: int | float | None, window: int | None) -> str:
    """"ok" | "warn" | "critical" for `used` tokens of a `window`; an unknown window is "ok"."""
    return severity_of_fraction(fraction(used, window))

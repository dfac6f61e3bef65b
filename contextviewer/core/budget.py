"""Budgets: what one model call's input held, against the model's window.

Two kinds of numbers meet here and are never mixed silently (invariant 4):
- measured: the provider's usage of the call (uncached input + cache writes + cache reads);
- estimated: our tiktoken counts of the messages the call could see (tokens.py, curve.py).
The gap between them is the harness overhead (system prompt and tool definitions, which Claude Code
does not write to its logs). When the estimate exceeds the measurement (our tokenizer counts more
than the provider's), the calibration factor measured / estimate says by how much.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from . import harness
from .registry import ModelSpec
from .severity import CRITICAL_AT, WARN_AT, fraction as _fraction, severity as _severity
from .tokens import CATEGORIES, LABELS

MEASURED = "measured"
ESTIMATED = "estimated"

_INPUT_CATEGORIES = frozenset(CATEGORIES)


def measured_context(input_uncached: int, cache_write: int, cache_read: int) -> int:
    """Context size of a call as the provider measured it.

    Anthropic: uncached input + cache writes + cache reads. OpenAI and Gemini report the input
    including cached tokens; importers store it as input_uncached = input - cached and
    cache_read = cached, so the same sum gives their input tokens.
    """
    return (input_uncached or 0) + (cache_write or 0) + (cache_read or 0)


def visible_total(categories: dict[str, int]) -> int:
    """Sum of the categories seen in the log (everything but the derived harness overhead)."""
    return sum(v for k, v in categories.items() if k != "harness_overhead" and k in _INPUT_CATEGORIES)


def estimate_input(category_totals: dict[str, int], measured: int | None) -> dict[str, int]:
    """Per-category estimate of a call's input, every CATEGORIES key in order.

    Unknown keys are added to "other". When `measured` is known, "harness_overhead" is what the
    measurement holds beyond the visible estimate: max(0, measured - visible); otherwise it is 0
    (unknown, not zero: the gauge says the figure is an estimate).
    """
    result = dict.fromkeys(CATEGORIES, 0)
    for key, value in category_totals.items():
        if key == "harness_overhead":
            continue
        result[key if key in _INPUT_CATEGORIES else "other"] += int(value or 0)
    if measured is not None:
        result["harness_overhead"] = max(0, measured - visible_total(result))
    return result


def calibration(estimate: int, measured: int | None) -> float | None:
    """measured / estimate when the estimate exceeds the measurement (the tokenizer overcounts);
    None otherwise (no measurement, or the gap is harness overhead, not miscounting)."""
    if measured is None or estimate <= 0 or estimate <= measured:
        return None
    return measured / estimate


def output_reserve(spec: ModelSpec, agent: str | None = None) -> int:
    """Tokens of the window kept for the response, by the rules of the conversation's agent
    (harness.py); with no agent, those of the harness that usually runs this model."""
    return harness.output_reserve(agent, spec)


def thresholds(spec: ModelSpec, agent: str | None = None) -> list[tuple[str, int]]:
    """The fill levels drawn on a gauge or curve: severity bands, then the point where the
    conversation's agent folds on its own (harness.py). Sorted by tokens."""
    window = spec.window
    if window <= 0:
        return []
    lines = [
        (f"warn {round(WARN_AT * 100)} %", round(WARN_AT * window)),
        (f"critical {round(CRITICAL_AT * 100)} %", round(CRITICAL_AT * window)),
    ]
    fold_line = harness.rules(agent, spec).fold_line(spec)
    if fold_line is not None:
        lines.append(fold_line)
    return sorted(lines, key=lambda line: line[1])


@dataclass(frozen=True, slots=True)
class Gauge:
    """One model call's input against its model's window. Every figure says what it is: `used`
    is `measured_or_estimated`; `categories` are estimates (harness_overhead derived from the
    measurement); `bar()` scales them to the measurement and says so."""

    model: str
    model_known: bool
    window: int
    max_output: int
    output_reserve: int
    categories: dict[str, int]  # CATEGORIES order, estimated; harness_overhead derived when measured
    estimate: int  # visible messages, estimated (no harness overhead)
    measured: int | None
    used: int  # measured when known, else the estimate
    measured_or_estimated: str  # "measured" | "estimated"
    free: int
    fraction: float
    severity: str
    cache_read: int
    cache_fraction: float | None  # cache_read / measured
    calibration: float | None  # measured / estimate when the estimate is larger
    thresholds: list[tuple[str, int]] = field(default_factory=list)

    @property
    def is_measured(self) -> bool:
        return self.measured_or_estimated == MEASURED

    def bar(self) -> list[tuple[str, str, int]]:
        """(category, label, tokens) to stack across the window: input categories (scaled by the
        calibration factor when the estimate exceeds the measurement, so they add up to `used`),
        then output_reserve and free. Zero parts are left out."""
        factor = self.calibration or 1.0
        parts = []
        for key in CATEGORIES:
            value = self.categories.get(key, 0)
            if key != "harness_overhead":
                value = round(value * factor)
            if value > 0:
                parts.append((key, LABELS[key], value))
        for key, value in (("output_reserve", self.output_reserve), ("free", self.free)):
            if value > 0:
                parts.append((key, LABELS[key], value))
        return parts


def gauge(
    categories: dict[str, int],
    *,
    spec: ModelSpec,
    measured: int | None,
    cache_read: int = 0,
    reserve: int | None = None,
    extra_thresholds: Iterable[tuple[str, int]] = (),
    agent: str | None = None,
) -> Gauge:
    """The gauge of one call: `categories` are the estimated tokens of the visible messages in its
    input (sum of the loaded view's message.tokens), `measured` its measured context size or None.
    `agent` (the conversation's) picks the harness rules: output reserve and auto-fold line."""
    per_category = estimate_input(categories, measured)
    estimate = visible_total(per_category)
    used = measured if measured is not None else estimate
    window = max(0, spec.window)
    output_reserve_tokens = output_reserve(spec, agent) if reserve is None else max(0, reserve)
    lines = sorted([*thresholds(spec, agent), *extra_thresholds], key=lambda line: line[1])
    return Gauge(
        model=spec.name,
        model_known=spec.known,
        window=window,
        max_output=spec.max_output,
        output_reserve=output_reserve_tokens,
        categories=per_category,
        estimate=estimate,
        measured=measured,
        used=used,
        measured_or_estimated=MEASURED if measured is not None else ESTIMATED,
        free=max(0, window - used - output_reserve_tokens),
        fraction=_fraction(used, window),
        severity=_severity(used, window),
        cache_read=cache_read,
        cache_fraction=(cache_read / measured) if measured else None,
        calibration=calibration(estimate, measured),
        thresholds=lines,
    )

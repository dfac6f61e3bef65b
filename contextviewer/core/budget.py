"""Budgets: what one model call's input held, against the model's window.

Two kinds of numbers meet here and are never mixed silently (invariant 4):
- measured: the provider's usage of the call (uncached input + cache writes + cache reads);
- estimated: our tiktoken counts of the messages the call could see (tokens.py, curve.py).

Calibration (README "The gauge"): the gap between them has two parts. One is constant over
a segment: what the harness sends besides the messages (system prompt, tool definitions, hooks),
the harness overhead, measured once per segment as the residual at the segment's first measured
call (after the start or a fold). The other grows with the window: o200k counts differently from
the provider's tokenizer. The tokenizer factor (provider tokens per o200k token) is fitted per
conversation, by least squares over its measured calls with one intercept per segment (the
overhead). The gauge scales the categories by it, so they add up to the measured total.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from .harness import Harness
from .model_specs import ModelSpec
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
    """measured / estimate of one call, whether the estimate is above or below the measurement;
    None without a measurement or an estimate."""
    if measured is None or measured <= 0 or estimate <= 0:
        return None
    return measured / estimate


# A fitted factor outside this range says the fit found something else than a tokenizer (content
# cleared in place, a model change): the gauge then does without one.
FACTOR_RANGE = (0.5, 3.0)
MIN_FIT_CALLS = 3


@dataclass(frozen=True, slots=True)
class Calibration:
    """A conversation's tokenizer factor and the harness overhead of each segment."""

    factor: float | None  # provider tokens per o200k token; None when it cannot be fitted
    calls: int  # measured calls the fit used
    overheads: tuple[tuple[int, int], ...] = ()  # (segment index, overhead in provider tokens)
    folds: tuple[int, ...] = ()  # positions of the folds the calls saw, sorted (segment boundaries)

    def segment_of(self, position: int) -> int:
        return segment_of(position, self.folds)

    def overhead_at(self, segment: int | None) -> int | None:
        """The overhead measured in `segment`, else in the latest segment before it (None: the
        latest known); None when no segment up to there was measured."""
        found = None
        for index, overhead in self.overheads:
            if segment is None or index <= segment:
                found = overhead
        return found


def segment_of(position: int, fold_positions: Sequence[int]) -> int:
    """Index of the segment a call at `position` belongs to: the folds before it (sorted positions)."""
    return bisect.bisect_left(fold_positions, position)


def fit(calls: Iterable[tuple[int, int | None, int | None]], fold_positions: Iterable[int] = ()) -> Calibration:
    """Calibrate from (position, measured or None, estimated) per model call.

    Factor k: least squares of measured against estimated with one intercept per segment (the
    slope of measured over estimate within segments). Overhead of a segment: measured - k x
    estimate at its first measured call (k = 1 when no factor is fitted), at least 0.
    Unmeasured calls (usage 0 or absent) take no part."""
    folds = sorted(set(fold_positions))
    by_segment: dict[int, list[tuple[int, int]]] = {}
    for position, measured, estimated in sorted(calls, key=lambda c: c[0]):
        if not measured or measured <= 0 or estimated is None:
            continue
        by_segment.setdefault(segment_of(position, folds), []).append((measured, max(0, estimated)))
    n = sum(len(points) for points in by_segment.values())
    num = den = 0.0
    for points in by_segment.values():
        if len(points) < 2:
            continue
        mean_m = sum(m for m, _e in points) / len(points)
        mean_e = sum(e for _m, e in points) / len(points)
        for m, e in points:
            num += (e - mean_e) * (m - mean_m)
            den += (e - mean_e) ** 2
    factor = None
    if n >= MIN_FIT_CALLS and den > 0:
        k = num / den
        if FACTOR_RANGE[0] <= k <= FACTOR_RANGE[1]:
            factor = k
    k = factor if factor is not None else 1.0
    overheads = tuple(
        (index, max(0, round(points[0][0] - k * points[0][1]))) for index, points in sorted(by_segment.items())
    )
    return Calibration(factor, n, overheads, tuple(folds))


def output_reserve(spec: ModelSpec, rules: Harness) -> int:
    """Tokens of the window kept for the response, by `rules`: the harness rules of the
    conversation's agent (``formats.harness(agent, spec)``; with no agent, those of the harness that
    usually runs this model)."""
    return rules.output_reserve(spec)


def thresholds(spec: ModelSpec, rules: Harness) -> list[tuple[str, int]]:
    """The fill levels drawn on a gauge or curve: severity bands, then the point where the harness
    of `rules` (the conversation's agent's) folds on its own (harness.py). Sorted by tokens."""
    window = spec.window
    if window <= 0:
        return []
    lines = [
        (f"warn {round(WARN_AT * 100)} %", round(WARN_AT * window)),
        (f"critical {round(CRITICAL_AT * 100)} %", round(CRITICAL_AT * window)),
    ]
    fold_line = rules.fold_line(spec)
    if fold_line is not None:
        lines.append(fold_line)
    return sorted(lines, key=lambda line: line[1])


_UNLOGGED = ("system_prompt", "tool_definitions", "harness_overhead")


@dataclass(frozen=True, slots=True)
class Gauge:
    """One model call's input against its model's window. Every figure says what it is: `used`
    is `measured_or_estimated`; `categories` are the o200k estimates of the visible messages (and
    of a captured system prompt and tools); `scaled` are the same on the provider's scale (times
    the tokenizer factor) with the harness overhead, adding up to `used`."""

    model: str
    model_known: bool
    window: int
    max_output: int
    output_reserve: int
    categories: dict[str, int]  # CATEGORIES order, o200k estimates
    estimate: int  # visible messages, o200k estimate (no system prompt, tools or overhead)
    measured: int | None
    used: int  # measured when known, else the estimate on the provider's scale
    measured_or_estimated: str  # "measured" | "estimated"
    free: int
    fraction: float
    severity: str
    cache_read: int
    cache_fraction: float | None  # cache_read / measured
    calibration: float | None  # the factor the visible categories were scaled by at this call
    thresholds: list[tuple[str, int]] = field(default_factory=list)
    scaled: dict[str, int] = field(default_factory=dict)  # CATEGORIES order, provider's scale, sum = used
    factor: float | None = None  # the conversation's fitted tokenizer factor
    fit_calls: int = 0  # measured calls the factor was fitted over
    overhead: int | None = None  # the segment's harness overhead (system prompt, tools and the rest)
    unavailable: tuple[str, ...] = ()  # categories the gauge cannot size ("not available", not 0)
    captured_version: str | None = None  # the Claude Code capture the prompt and tools come from
    captured_exact: bool = False  # ... of the session's own CLI version
    captured_fitted: bool = False  # ... larger than this session's overhead: sized down to it

    @property
    def is_measured(self) -> bool:
        return self.measured_or_estimated == MEASURED

    @property
    def factor_inverse(self) -> float | None:
        """o200k tokens per provider token (1 / factor)."""
        return 1 / self.factor if self.factor else None

    def bar(self) -> list[tuple[str, str, int]]:
        """(category, label, tokens) to stack across the window: input categories on the
        provider's scale (they add up to `used`), then output_reserve and free. Zero parts are
        left out."""
        parts = [(key, LABELS[key], value) for key, value in self.scaled.items() if value > 0]
        for key, value in (("output_reserve", self.output_reserve), ("free", self.free)):
            if value > 0:
                parts.append((key, LABELS[key], value))
        return parts


def _split_overhead(overhead: int, prompt: tuple[int, int] | None, scale: float) -> tuple[int, int, int, bool]:
    """(system prompt, tool definitions, the rest of the overhead, sized down) on the provider's
    scale: a captured prompt and tools fill the overhead first; larger than it, they are sized
    down to it in proportion."""
    if prompt is None:
        return 0, 0, overhead, False
    system, tools = prompt[0] * scale, prompt[1] * scale
    if system + tools <= overhead:
        system_i, tools_i = round(system), round(tools)
        return system_i, tools_i, max(0, overhead - system_i - tools_i), False
    shrink = overhead / (system + tools) if system + tools > 0 else 0.0
    system_i = round(system * shrink)
    return system_i, overhead - system_i, 0, True


def gauge(
    categories: dict[str, int],
    *,
    spec: ModelSpec,
    measured: int | None,
    rules: Harness,
    cache_read: int = 0,
    reserve: int | None = None,
    extra_thresholds: Iterable[tuple[str, int]] = (),
    fitted: Calibration | None = None,
    segment: int | None = None,
    prompt: tuple[int, int] | None = None,
    unavailable: Iterable[str] = (),
    captured_version: str | None = None,
    captured_exact: bool = False,
) -> Gauge:
    """The gauge of one call: `categories` are the estimated tokens of the visible messages in its
    input (sum of the loaded view's message.tokens before the call), `measured` its measured
    context size or None. `rules`: the harness rules of the conversation's agent
    (``formats.harness(agent, spec)``): output reserve and auto-fold line. `fitted`: the
    conversation's calibration, `segment` the call's segment in it (None: after the latest).
    `prompt`: o200k tokens of a system prompt and tool definitions the log does not hold (a
    capture); `unavailable`: categories that cannot be sized."""
    per_category = estimate_input(categories, None)
    estimate = visible_total(per_category)
    factor = fitted.factor if fitted is not None else None
    overhead = fitted.overhead_at(segment) if fitted is not None else None
    overhead, call_factor = _call_fit(measured, estimate, factor, overhead)
    scaled, captured_fitted = _scaled(per_category, overhead, prompt, call_factor or 1.0, factor)
    if prompt is not None:
        per_category["system_prompt"] += prompt[0]
        per_category["tool_definitions"] += prompt[1]
    used = _used(scaled, measured)
    window = max(0, spec.window)
    output_reserve_tokens = output_reserve(spec, rules) if reserve is None else max(0, reserve)
    lines = sorted([*thresholds(spec, rules), *extra_thresholds], key=lambda line: line[1])
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
        calibration=call_factor,
        thresholds=lines,
        scaled=scaled,
        factor=factor,
        fit_calls=fitted.calls if fitted is not None else 0,
        overhead=overhead,
        unavailable=tuple(k for k in CATEGORIES if k in set(unavailable)),
        captured_version=captured_version,
        captured_exact=captured_exact,
        captured_fitted=captured_fitted,
    )


def _call_fit(measured: int | None, estimate: int, factor: float | None, overhead: int | None) -> tuple[int | None, float | None]:
    """(harness overhead, factor the visible categories are scaled by) at one call. Measured: the
    segment's overhead, unless unknown or over the measurement (then what the measurement leaves
    over the estimate on the fitted scale), and the factor the rest makes of the estimate (None
    without an estimate: then the measurement is all overhead). Not measured: the fitted ones."""
    if measured is None:
        return overhead, factor
    if overhead is None or overhead > measured:
        overhead = max(0, round(measured - (factor or 1.0) * estimate))
    call_factor = (measured - overhead) / estimate if estimate > 0 else None
    if call_factor is None:
        overhead = measured
    return overhead, call_factor


def _scaled(
    per_category: dict[str, int], overhead: int | None, prompt: tuple[int, int] | None, scale: float, factor: float | None
) -> tuple[dict[str, int], bool]:
    """The categories on the provider's scale (CATEGORIES order): the visible ones times `scale`, the
    overhead split into system prompt, tool definitions (a captured prompt sizes them) and the rest;
    without an overhead, a captured prompt scaled. With whether the capture was sized down to fit."""
    scaled = dict.fromkeys(CATEGORIES, 0)
    for key, value in per_category.items():
        if key not in _UNLOGGED or value:
            scaled[key] = round(value * scale)
    captured_fitted = False
    if overhead is not None:
        system, tools, rest, captured_fitted = _split_overhead(overhead, prompt, factor or scale)
    elif prompt is not None:
        system, tools, rest = round(prompt[0] * scale), round(prompt[1] * scale), 0
    else:
        system = tools = rest = 0
    scaled["system_prompt"] += system
    scaled["tool_definitions"] += tools
    scaled["harness_overhead"] = rest
    return scaled, captured_fitted


def _used(scaled: dict[str, int], measured: int | None) -> int:
    """The call's context size: measured, with `scaled` made to add up to it exactly (the rounding
    drift goes to the biggest category), else the sum of `scaled`."""
    if measured is None:
        return sum(scaled.values())
    drift = measured - sum(scaled.values())
    if drift:
        biggest = max(scaled, key=lambda k: scaled[k])
        scaled[biggest] = max(0, scaled[biggest] + drift)
    return measured

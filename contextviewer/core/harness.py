"""Harness rules: the window a harness runs a model in, the output it reserves, where it folds on
its own, and how it estimates tokens. Pure, and it names no harness.

The model specs (model_specs.py) know models; this module knows what a harness's rules can say.
The same model folds at different points under different harnesses (a 200k Claude model: Claude
Code at 167k, deepagents at 170k, efferent at 170k, Gemini-style 50 % at 100k), so every surface
that draws a harness's rule (the gauge, the curve, the "Fold at X %" preview, the policy lab) asks
for the rules of the conversation's agent, never the model's provider.

Each format declares its harness's rules on its own module (``HARNESS = Harness(...)`` in
``importers/<format>.py``, passed as ``Format(harness=HARNESS)``, with the numbers and their sources
beside them); ``importers/formats.py`` looks them up by name (``formats.harness(agent, spec)``).
The core sits below the importers and never imports them, so it never looks rules up by an agent's
name: a caller finds them with ``formats.harness`` and hands them in (``budget.gauge(rules=...)``,
``harness_window(rules, ...)``). A format that declares nothing gets ``DEFAULT_RULES`` under its
own name: no automatic fold; reserve the model's output limit, at most 20 % of the window; chars/4.

Every harness is bound by the model's own split first: a model whose input limit is below its
window (GPT-5 family: 272k of 400k) reserves the rest of the window for output.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from .model_specs import ModelSpec, lookup, normalize


@dataclass(frozen=True, slots=True)
class VersionRule:
    """The auto-fold rule of a harness's versions as measured on the real client: the params of its
    own policy (core/policylab) under those versions, and how they were measured (docs/policy-lab.md)."""

    versions: str  # a version prefix: "2.0" holds 2.0.57 and 2.0.76, not 2.10.1
    measured: str  # the versions the rule was measured on ("2.0.57")
    params: tuple[tuple[str, object], ...] = ()  # the own policy's params under it
    label: str = ""  # the rule in words, with its figure on the usual window
    since: str = ""  # within the prefix, the first version it holds ("2.1.163"), bisected on npm's releases
    until: str = ""  # ... and the last ("2.1.152")

    def holds(self, version: str) -> bool:
        if not (version == self.versions or version.startswith(self.versions + ".")):
            return False
        v = release(version)
        return (not self.since or v >= release(self.since)) and (not self.until or v <= release(self.until))


def release(version: str) -> tuple[int, ...]:
    """"2.1.153" -> (2, 1, 153); a pre-release or build suffix is left out ("0.104.0-alpha.1" -> (0, 104, 0))."""
    head = re.split(r"[-+ ]", version.strip(), maxsplit=1)[0]
    return tuple(int(p) if p.isdigit() else 0 for p in head.split("."))


def version_rule(rules: tuple[VersionRule, ...], version: str | None) -> VersionRule | None:
    """The measured rule of a client's version, or None when no measured rule covers it."""
    v = (version or "").strip()
    return next((r for r in rules if v and r.holds(v)), None)

DEFAULT = "default"
DEFAULT_RESERVE_FRACTION = 0.20  # the output limit, but never more than a fifth of the window
DEFAULT_CHARS_PER_TOKEN = 4.0

# Units a harness counts when it estimates: characters, or UTF-8 bytes (Codex).
CHARS = "chars"
BYTES = "bytes"


@dataclass(frozen=True, slots=True)
class Harness:
    """The rules of one harness. Fractions are of the model's input limit (its window unless the
    provider caps input lower); `fold_margin` folds at the effective window minus that margin."""

    agent: str = ""  # the format's name (formats.harness fills it in)
    label: str = ""  # what people call the harness (default: the format's label)
    fold_label: str = ""  # the line drawn on the gauge and the curve at the auto-fold point
    fold_fraction: float | None = None  # auto-fold at this share of the input limit
    fold_margin: int | None = None  # auto-fold at effective window - margin (Claude Code)
    fold_at_effective: bool = False  # auto-fold when the input outgrows the effective window
    fold_events: int | None = None  # folds by event count instead of tokens (OpenHands)
    reserve_cap: int | None = None  # output reserve = min(max output, cap)
    reserve_fraction: float | None = DEFAULT_RESERVE_FRACTION  # else min(max output, share of window)
    usable_fraction: float | None = None  # effective window = this share of the input limit ...
    usable_less_reserve: bool = False  # ... less the output reserve (deepagents' input budget)
    # Codex's "context window" is the model's input limit even when the conversation's window is
    # the usable share Codex logs (model_context_window 258,400 of 272k): fractions apply to it.
    fractions_of_model_input: bool = False
    default_window: int | None = None  # the window the harness runs in when nothing says otherwise
    # ... only for this provider's models, and not for a model name the user opted out with
    # ("[1m]"): Claude Code runs Anthropic models in 200k unless "[1m]" was chosen.
    default_window_provider: str | None = None
    chars_per_token: float = DEFAULT_CHARS_PER_TOKEN
    anthropic_chars_per_token: float | None = None  # a different ratio for Anthropic models
    units: str = CHARS
    rounding: str = "round"  # round (half up) | ceil | floor, as the harness computes it
    # The policy-lab module that replays this harness (core/policylab/registry.py), drawn by default
    # beside the others on the lab page of a conversation it recorded.
    own_policy: str | None = None
    # The harness does not log its system prompt and tool definitions: captured requests of them lie
    # under <schemas>/<this folder>/captured/ (core/captured.py).
    captured_prompt: str | None = None
    # A bare model with no conversation (so no agent) is drawn by the rules of the harness that
    # usually runs its provider's models: the providers this harness is that harness for.
    usual_for: tuple[str, ...] = ()
    # The own policy's rule per client version, as measured on the real client (VersionRule); the
    # first is the one the policy's defaults are, used (and said so) for a version none covers.
    version_rules: tuple[VersionRule, ...] = ()

    def rule_for(self, version: str | None) -> tuple[dict, str]:
        """(params of the own policy, what the page says about the rule) for a session recorded by
        `version` of this harness. A version no measured rule covers is replayed with the policy's
        defaults, and the text says so."""
        if not self.version_rules:
            return {}, ""
        rule = version_rule(self.version_rules, version)
        name = self.label or self.agent
        if rule is not None:
            return dict(rule.params), f"{name} {version}: the rule measured on {rule.measured} ({rule.label})"
        default = self.version_rules[0]
        said = f"{name} {version}" if version else f"the {name} version (the log does not name it)"
        return dict(default.params), (
            f"no measured rule for {said}: replayed with the rule measured on {default.measured} ({default.label}); "
            f"measured versions: {', '.join(r.measured for r in self.version_rules)}"
        )

    # --- the window ---------------------------------------------------------------------------

    def input_limit(self, spec: ModelSpec) -> int:
        """The largest input the model accepts: its window, or the provider's lower input cap.
        (Codex: the model's input cap even above a conversation's window, see above.)"""
        window = max(0, spec.window)
        if spec.max_input is not None and 0 < spec.max_input < window:
            return spec.max_input
        if self.fractions_of_model_input and spec.max_input and window > 0:
            return spec.max_input
        return window

    def input_limit_logged(self, logged_window: int | None) -> int | None:
        """The harness's own window for the model, from the usable share of it its log records:
        Codex logs `model_context_window` = 95 % of the window it keeps per model (258,400 of 272,000;
        475,000 of gpt-6.2-sol's 500,000) and compacts at 90 % of that window, whatever the model's
        API limit (docs/policy-lab.md, measured on 0.171.0). None for a harness that logs no such share."""
        if self.fractions_of_model_input and self.usable_fraction and logged_window and logged_window > 0:
            return round(logged_window / self.usable_fraction)
        return None

    def output_reserve(self, spec: ModelSpec) -> int:
        """Tokens of the window kept for the response."""
        window, max_output = spec.window, max(0, spec.max_output)
        if window <= 0:
            return 0
        if spec.max_input is not None and spec.max_input < window:
            return window - spec.max_input
        if self.fractions_of_model_input and spec.max_input:
            return 0  # the window is an input window (Codex logs one): the output lies outside it
        if self.reserve_cap is not None:
            return min(max_output, self.reserve_cap)
        if self.reserve_fraction is not None:
            return min(max_output, int(window * self.reserve_fraction))
        return min(max_output, window)

    def effective_window(self, spec: ModelSpec) -> int:
        """The input the harness lets a call carry before it must fold (or fail)."""
        if spec.window <= 0:
            return 0
        if self.usable_fraction is not None:
            usable = int(self.input_limit(spec) * self.usable_fraction)
            if self.usable_less_reserve:
                usable -= max(0, spec.max_output)
            return max(0, usable)
        return max(0, spec.window - self.output_reserve(spec))

    def auto_fold_at(self, spec: ModelSpec) -> int | None:
        """Tokens of input at which the harness folds on its own; None when it does not fold by
        tokens (or not at all)."""
        if spec.window <= 0:
            return None
        points = []
        if self.fold_margin is not None:
            points.append(self.effective_window(spec) - self.fold_margin)
        if self.fold_fraction is not None:
            points.append(int(self.input_limit(spec) * self.fold_fraction))
            if self.usable_less_reserve:  # deepagents also folds a request over its input budget
                points.append(self.effective_window(spec))
        if self.fold_at_effective:
            points.append(self.effective_window(spec))
        points = [p for p in points if p > 0]
        return min(points) if points else None

    def auto_fold_fraction(self, spec: ModelSpec) -> float | None:
        """auto_fold_at as a share of the model's window (what "Fold at X %" speaks in)."""
        at = self.auto_fold_at(spec)
        return at / spec.window if at is not None and spec.window > 0 else None

    def fold_line(self, spec: ModelSpec) -> tuple[str, int] | None:
        """(label, tokens) of the auto-fold point for a gauge or curve, or None."""
        at = self.auto_fold_at(spec)
        if at is None or not self.fold_label:
            return None
        if self.usable_less_reserve and self.fold_fraction is not None and at < int(self.input_limit(spec) * self.fold_fraction):
            return f"{self.label} summarize (over its input budget)", at
        return self.fold_label, at

    # --- estimates ----------------------------------------------------------------------------

    def chars_per_token_for(self, spec: ModelSpec | None = None) -> float:
        if self.anthropic_chars_per_token is not None and spec is not None and spec.provider == "anthropic":
            return self.anthropic_chars_per_token
        return self.chars_per_token

    def estimate_tokens(self, text: str, spec: ModelSpec | None = None) -> int:
        """Tokens of `text` as this harness estimates them (for its own fold decisions; the
        viewer displays its own tiktoken counts)."""
        size = len(text.encode("utf-8")) if self.units == BYTES else len(text)
        value = size / self.chars_per_token_for(spec)
        if self.rounding == "ceil":
            return math.ceil(value)
        if self.rounding == "floor":
            return math.floor(value)
        return math.floor(value + 0.5)  # Math.round in the TypeScript harnesses: halves go up


DEFAULT_RULES = Harness(DEFAULT, "unknown harness")

def harness_window(harness: Harness, model: str | None, peak_context: int) -> int | None:
    """The window `harness` (a conversation's agent's rules, ``formats.harness(agent)``) actually ran
    with, where it differs from the model's API window, or None (the model's window holds).

    Claude Code runs Anthropic models in a 200k window unless the user opted into 1M ("[1m]"), and
    its logs name the plain API model either way: a session whose measured context never passed
    200k ran in the 200k window (its auto-compaction at ~167k says so too). picoclaw runs in
    MaxTokens x 4 = 131,072 unless configured otherwise (nothing in its log says so)."""
    if not model or harness.default_window is None:
        return None
    spec = lookup(model)
    if harness.default_window_provider is not None:
        _name, one_m = normalize(model)
        if spec.provider != harness.default_window_provider or one_m:
            return None
    if spec.window <= harness.default_window or peak_context > harness.default_window:
        return None
    return harness.default_window

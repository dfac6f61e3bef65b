"""Harness rules, keyed by agent: the window a harness runs a model in, the output it reserves,
where it folds on its own, and how it estimates tokens. Pure.

The model registry (registry.py) knows models; this module knows the harnesses that run them. The
same model folds at different points under different harnesses (a 200k Claude model: Claude Code
at 167k, deepagents at 170k, efferent at 170k, Gemini-style 50 % at 100k), so every surface that
draws a harness's rule (the gauge, the curve, the "Fold at X %" preview, later the policy lab)
asks for the conversation's agent here, never the model's provider.

Numbers, from DESIGN.md "Policies" and ../shared/docs/policy-lab.md (section in brackets):

- claude-code [3.1]: effective window = window - min(max output, 20,000); auto-compact at the
  effective window - 13,000 (167,000 on 200k); output reserve min(max output, 20,000); runs
  Anthropic models in a 200k window unless the user opted into 1M; chars/4.
- codex [4.1]: auto-compact at 90 % of the context window (the model's input limit: 272k -> 244,800,
  also when the conversation's window is the usable 95 % a rollout logs, 258,400); usable window 95 %
  of it; the output lies outside an input window (no reserve in it); bytes/4.
- langgraph (deepagents) [2.4]: summarize at 85 % of max_input_tokens, or when the request is over
  int(0.95 * max_input) - max_output (its effective window); reserve = the model's max output;
  ceil(chars/4), 3.3 chars per token for Anthropic models.
- efferent [1.2, 1.4] (classic CLI, the DESIGN rule): cumulative handoff at 85 % of the window;
  round(chars/4).
- picoclaw [5.1, 5.2]: window = MaxTokens x 4 = 131,072 when not configured; summarize above 75 % of
  the window; reserve MaxTokens (32,768); 2.5 chars per token (chars * 2 // 5).
- openhands [6]: condensers count events, not tokens (app default: fold above 120 events, keep the
  first 4 + about 55): no token threshold.
- gemini: not in the policy docs; Gemini CLI's chatCompressionService compresses at 50 % of the
  model's token limit (DEFAULT_COMPRESSION_TOKEN_THRESHOLD = 0.5, keeping the last 30 %).
- opencode: not in the policy docs; opencode compacts on overflow: input above the model's input
  limit, else the window less min(max output, 32,000) (session/compaction.ts isOverflow).
- swe-agent, aider, messages: no automatic fold of the window is recorded (SWE-agent's history
  processors and aider's chat summary are not logged; a plain message array has no harness).
- default (any other agent): no automatic fold; reserve the model's output limit, at most 20 % of
  the window; chars/4.

Every harness is bound by the model's own split first: a model whose input limit is below its
window (GPT-5 family: 272k of 400k) reserves the rest of the window for output.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .registry import ModelSpec, lookup, normalize

DEFAULT = "default"
DEFAULT_RESERVE_FRACTION = 0.20  # the output limit, but never more than a fifth of the window
DEFAULT_CHARS_PER_TOKEN = 4.0

# Claude Code (policy-lab 3.1): MAX_OUTPUT_TOKENS_FOR_SUMMARY and AUTOCOMPACT_BUFFER_TOKENS.
CLAUDE_CODE_OUTPUT_RESERVE = 20_000
CLAUDE_CODE_AUTOCOMPACT_BUFFER = 13_000
CLAUDE_CODE_DEFAULT_WINDOW = 200_000
# Codex CLI (policy-lab 4.1): auto_compact_token_limit = 90 % of the context window;
# effective_context_window_percent = 95.
CODEX_COMPACT_AT = 0.90
CODEX_USABLE = 0.95
# picoclaw (policy-lab 5.1): MaxTokens default, ContextWindow = MaxTokens x 4 when not configured.
PICOCLAW_MAX_TOKENS = 32_768

# Units a harness counts when it estimates: characters, or UTF-8 bytes (Codex).
CHARS = "chars"
BYTES = "bytes"


@dataclass(frozen=True, slots=True)
class Harness:
    """The rules of one harness. Fractions are of the model's input limit (its window unless the
    provider caps input lower); `fold_margin` folds at the effective window minus that margin."""

    agent: str
    label: str
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


_HARNESSES = [
    Harness(
        "claude-code",
        "Claude Code",
        fold_label="Claude Code auto-compact",
        fold_margin=CLAUDE_CODE_AUTOCOMPACT_BUFFER,
        reserve_cap=CLAUDE_CODE_OUTPUT_RESERVE,
        default_window=CLAUDE_CODE_DEFAULT_WINDOW,
        default_window_provider="anthropic",
        own_policy="claude_code",
        captured_prompt="claude-code",
    ),
    Harness(
        "codex",
        "Codex CLI",
        fold_label=f"Codex compact {round(CODEX_COMPACT_AT * 100)} %",
        fold_fraction=CODEX_COMPACT_AT,
        usable_fraction=CODEX_USABLE,
        fractions_of_model_input=True,
        units=BYTES,
        own_policy="codex",
    ),
    Harness(
        "langgraph",
        "deepagents",
        fold_label="deepagents summarize 85 %",
        fold_fraction=0.85,
        reserve_fraction=None,  # the model's whole max output
        usable_fraction=0.95,
        usable_less_reserve=True,
        anthropic_chars_per_token=3.3,
        rounding="ceil",
        own_policy="deepagents",
    ),
    Harness("efferent", "efferent", fold_label="efferent handoff 85 %", fold_fraction=0.85, own_policy="efferent"),
    Harness(
        "picoclaw",
        "picoclaw",
        fold_label="picoclaw summarize 75 %",
        fold_fraction=0.75,
        reserve_cap=PICOCLAW_MAX_TOKENS,
        default_window=PICOCLAW_MAX_TOKENS * 4,
        chars_per_token=2.5,
        rounding="floor",
        own_policy="picoclaw",
    ),
    Harness("openhands", "OpenHands", fold_events=120, own_policy="openhands"),
    Harness("gemini", "Gemini CLI", fold_label="Gemini CLI compress 50 %", fold_fraction=0.50),
    Harness("opencode", "opencode", fold_label="opencode compact", fold_at_effective=True, reserve_cap=32_000),
    Harness("swe-agent", "SWE-agent"),
    Harness("aider", "aider"),
    Harness("messages", "message array"),
    Harness(DEFAULT, "unknown harness"),
]

HARNESSES: dict[str, Harness] = {h.agent: h for h in _HARNESSES}

# A bare model with no conversation (so no agent): the harness that most often runs that
# provider's models. Every surface with a conversation passes the conversation's agent instead.
_USUAL_AGENT = {"anthropic": "claude-code", "openai": "codex", "google": "gemini"}


def rules(agent: str | None, spec: ModelSpec | None = None) -> Harness:
    """The rules of `agent` (a conversation's agent); an unknown agent gets the default rules.
    With no agent at all, the usual harness of `spec`'s provider, else the default."""
    if agent is None:
        agent = _USUAL_AGENT.get(spec.provider if spec is not None else "", DEFAULT)
    return HARNESSES.get(agent, HARNESSES[DEFAULT])


def output_reserve(agent: str | None, spec: ModelSpec) -> int:
    return rules(agent, spec).output_reserve(spec)


def effective_window(agent: str | None, spec: ModelSpec) -> int:
    return rules(agent, spec).effective_window(spec)


def auto_fold_at(agent: str | None, spec: ModelSpec) -> int | None:
    return rules(agent, spec).auto_fold_at(spec)


def estimate_tokens(agent: str | None, text: str, spec: ModelSpec | None = None) -> int:
    return rules(agent, spec).estimate_tokens(text, spec)


def harness_window(agent: str, model: str | None, peak_context: int) -> int | None:
    """The window a harness actually ran with, where it differs from the model's API window, or
    None (the model's window holds).

    Claude Code runs Anthropic models in a 200k window unless the user opted into 1M ("[1m]"), and
    its logs name the plain API model either way: a session whose measured context never passed
    200k ran in the 200k window (its auto-compaction at ~167k says so too). picoclaw runs in
    MaxTokens x 4 = 131,072 unless configured otherwise (nothing in its log says so)."""
    harness = HARNESSES.get(agent)
    if harness is None or harness.default_window is None or not model:
        return None
    spec = lookup(model)
    if harness.default_window_provider is not None:
        _name, one_m = normalize(model)
        if spec.provider != harness.default_window_provider or one_m:
            return None
    if spec.window <= harness.default_window or peak_context > harness.default_window:
        return None
    return harness.default_window

"""Known models: context window, output limit and list prices.

The window (how much a call's input plus its output may hold) and the output limit (how much one
response may write) are kept apart: a gauge draws the output reserve out of the window, it does not
shrink the window. Prices are USD per million tokens, None where not published or not known here.

Sources: the providers' model and pricing pages as published in 2026 (Anthropic's "Model pricing"
table, OpenAI's model pages and Codex rate card, Google's model cards). Prices change: treat every
cost as "at list price" and keep the numbers in this one table.

Anthropic cache prices follow Anthropic's rule where a model page gives no other figure: 5-minute
cache write 1.25x input, 1-hour cache write 2x input, cache read 0.1x input. OpenAI and Google bill
no cache-write premium (writes are ordinary input; Google's cache storage per hour is not modelled).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, replace

DEFAULT_WINDOW = 200_000
DEFAULT_MAX_OUTPUT = 32_000
ONE_MILLION = 1_000_000


@dataclass(frozen=True, slots=True)
class Prices:
    """One price tier, USD per million tokens."""

    input: float | None
    output: float | None
    cache_write_5m: float | None
    cache_write_1h: float | None
    cache_read: float | None


@dataclass(frozen=True, slots=True)
class ModelSpec:
    name: str
    window: int
    max_output: int
    input_per_mtok: float | None = None
    output_per_mtok: float | None = None
    cache_write_5m_per_mtok: float | None = None
    cache_write_1h_per_mtok: float | None = None
    cache_read_per_mtok: float | None = None
    known: bool = True
    provider: str = ""  # "anthropic" | "openai" | "google" | ""
    # Largest input the provider accepts when it is less than window - max_output is not the rule
    # (OpenAI's GPT-5 family: 400k window = 272k input + 128k output). None: input may use the window.
    max_input: int | None = None
    # Long-prompt tier: when a call's prompt (uncached + cache writes + cache reads) exceeds this,
    # every token of that call, output included, is billed at long_prompt_prices.
    long_prompt_over: int | None = None
    long_prompt_prices: Prices | None = None

    @property
    def prices(self) -> Prices:
        return Prices(
            self.input_per_mtok,
            self.output_per_mtok,
            self.cache_write_5m_per_mtok,
            self.cache_write_1h_per_mtok,
            self.cache_read_per_mtok,
        )


def _r(x: float | None) -> float | None:
    return None if x is None else round(float(x), 6)


def _anthropic(
    name: str,
    window: int,
    max_output: int,
    inp: float,
    out: float,
    read: float | None = None,
    *,
    long_over: int | None = None,
    long: tuple[float, float, float] | None = None,  # (input, output, read) of the long tier
) -> ModelSpec:
    long_prices = None
    if long is not None:
        li, lo, lr = long
        long_prices = Prices(_r(li), _r(lo), _r(li * 1.25), _r(li * 2), _r(lr))
    return ModelSpec(
        name,
        window,
        max_output,
        _r(inp),
        _r(out),
        _r(inp * 1.25),
        _r(inp * 2),
        _r(inp * 0.1 if read is None else read),
        provider="anthropic",
        long_prompt_over=long_over,
        long_prompt_prices=long_prices,
    )


def _openai(
    name: str,
    window: int,
    max_output: int,
    inp: float | None,
    out: float | None,
    cached: float | None,
    max_input: int | None = None,
) -> ModelSpec:
    return ModelSpec(name, window, max_output, inp, out, inp, inp, cached, provider="openai", max_input=max_input)


def _google(
    name: str,
    window: int,
    max_output: int,
    inp: float | None,
    out: float | None,
    cached: float | None,
    *,
    long_over: int | None = None,
    long: tuple[float, float, float] | None = None,
) -> ModelSpec:
    long_prices = None
    if long is not None:
        li, lo, lr = long
        long_prices = Prices(li, lo, li, li, lr)
    return ModelSpec(
        name,
        window,
        max_output,
        inp,
        out,
        inp,
        inp,
        cached,
        provider="google",
        long_prompt_over=long_over,
        long_prompt_prices=long_prices,
    )


_1M = ONE_MILLION
_GEMINI_1M = 1_048_576
_GPT5_400K = dict(window=400_000, max_output=128_000, max_input=272_000)

_SPECS: list[ModelSpec] = [
    # --- Anthropic (window, max output, input $, output $, cache read $ where not 0.1x) ---
    _anthropic("claude-fable-5-1", _1M, 128_000, 10, 50, 0.25),
    _anthropic("claude-mythos-5-1", _1M, 128_000, 10, 50, 0.25),
    _anthropic("claude-fable-5", _1M, 128_000, 10, 50, 1.0),
    _anthropic("claude-mythos-5", _1M, 128_000, 10, 50, 1.0),
    _anthropic("claude-opus-5-5", _1M, 128_000, 4, 20, 0.20),
    _anthropic("claude-opus-5", _1M, 128_000, 5, 25),
    _anthropic("claude-opus-4-8", _1M, 128_000, 5, 25),
    _anthropic("claude-opus-4-7", _1M, 128_000, 5, 25),
    _anthropic("claude-opus-4-6", _1M, 128_000, 5, 25),
    _anthropic("claude-opus-4-5", 200_000, 64_000, 5, 25),
    _anthropic("claude-opus-4-1", 200_000, 32_000, 15, 75),
    _anthropic("claude-opus-4", 200_000, 32_000, 15, 75),
    _anthropic("claude-opus-4-0", 200_000, 32_000, 15, 75),
    _anthropic("claude-sonnet-5-5", _1M, 128_000, 2, 10, 0.10),
    _anthropic("claude-sonnet-5", _1M, 128_000, 2, 10),
    _anthropic("claude-sonnet-4-6", _1M, 128_000, 3, 15),
    # Sonnet 4 / 4.5: 200k, or 1M where the name carries [1m]; prompts over 200k cost more.
    _anthropic("claude-sonnet-4-5", 200_000, 64_000, 3, 15, long_over=200_000, long=(6, 22.5, 0.6)),
    _anthropic("claude-sonnet-4", 200_000, 64_000, 3, 15, long_over=200_000, long=(6, 22.5, 0.6)),
    _anthropic("claude-sonnet-4-0", 200_000, 64_000, 3, 15, long_over=200_000, long=(6, 22.5, 0.6)),
    # Haiku 5.5 is priced by prompt length: over 100k tokens the whole call pays the higher band.
    _anthropic("claude-haiku-5-5", _1M, 128_000, 0.10, 0.50, 0.01, long_over=100_000, long=(0.5, 2.5, 0.05)),
    _anthropic("claude-haiku-4-5", 200_000, 64_000, 1, 5),
    _anthropic("claude-3-7-sonnet", 200_000, 64_000, 3, 15),
    _anthropic("claude-3-5-sonnet", 200_000, 8_192, 3, 15),
    _anthropic("claude-3-5-haiku", 200_000, 8_192, 0.80, 4),
    _anthropic("claude-3-opus", 200_000, 4_096, 15, 75),
    _anthropic("claude-3-sonnet", 200_000, 4_096, 3, 15),
    ModelSpec("claude-3-haiku", 200_000, 4_096, 0.25, 1.25, 0.30, 0.50, 0.03, provider="anthropic"),
    # --- OpenAI (window, max output, input $, output $, cached input $) ---
    _openai("gpt-5.5", _1M, 128_000, 5.0, 30.0, 0.50),
    _openai("gpt-5.5-pro", _1M, 128_000, 30.0, 180.0, None),
    _openai("gpt-5.4", _1M, 128_000, 2.50, 15.0, 0.25),
    _openai("gpt-5.4-mini", _1M, 128_000, 0.75, 4.50, 0.075),
    _openai("gpt-5.4-nano", _1M, 128_000, 0.20, 1.25, 0.02),
    _openai("gpt-5.4-pro", _1M, 128_000, 30.0, 180.0, None),
    _openai("gpt-5.3-codex", inp=1.75, out=14.0, cached=0.175, **_GPT5_400K),
    _openai("gpt-5.2", inp=1.75, out=14.0, cached=0.175, **_GPT5_400K),
    _openai("gpt-5.2-codex", inp=1.75, out=14.0, cached=0.175, **_GPT5_400K),
    _openai("gpt-5.2-pro", inp=None, out=None, cached=None, **_GPT5_400K),
    _openai("gpt-5.1", inp=1.25, out=10.0, cached=0.125, **_GPT5_400K),
    _openai("gpt-5.1-codex", inp=1.25, out=10.0, cached=0.125, **_GPT5_400K),
    _openai("gpt-5.1-codex-max", inp=1.25, out=10.0, cached=0.125, **_GPT5_400K),
    _openai("gpt-5.1-codex-mini", inp=0.25, out=2.0, cached=0.025, **_GPT5_400K),
    _openai("gpt-5", inp=1.25, out=10.0, cached=0.125, **_GPT5_400K),
    _openai("gpt-5-codex", inp=1.25, out=10.0, cached=0.125, **_GPT5_400K),
    _openai("gpt-5-codex-mini", inp=0.25, out=2.0, cached=0.025, **_GPT5_400K),
    _openai("gpt-5-mini", inp=0.25, out=2.0, cached=0.025, **_GPT5_400K),
    _openai("gpt-5-nano", inp=0.05, out=0.40, cached=0.005, **_GPT5_400K),
    _openai("gpt-5-pro", 400_000, 272_000, 15.0, 120.0, None),
    _openai("gpt-4.1", 1_047_576, 32_768, 2.0, 8.0, 0.50),
    _openai("gpt-4.1-mini", 1_047_576, 32_768, 0.40, 1.60, 0.10),
    _openai("gpt-4.1-nano", 1_047_576, 32_768, 0.10, 0.40, 0.025),
    _openai("gpt-4o", 128_000, 16_384, 2.50, 10.0, 1.25),
    _openai("gpt-4o-mini", 128_000, 16_384, 0.15, 0.60, 0.075),
    _openai("gpt-4-turbo", 128_000, 4_096, 10.0, 30.0, None),
    _openai("gpt-4", 8_192, 8_192, 30.0, 60.0, None),
    _openai("o4-mini", 200_000, 100_000, 1.10, 4.40, 0.275),
    _openai("o3", 200_000, 100_000, 2.0, 8.0, 0.50),
    _openai("o3-pro", 200_000, 100_000, 20.0, 80.0, None),
    _openai("o3-mini", 200_000, 100_000, 1.10, 4.40, 0.55),
    _openai("o1", 200_000, 100_000, 15.0, 60.0, 7.50),
    _openai("o1-mini", 128_000, 65_536, 1.10, 4.40, 0.55),
    _openai("codex-mini", 200_000, 100_000, 1.50, 6.0, 0.375),
    # --- Google (window, max output, input $, output $, cached $; long tier over 200k) ---
    _google("gemini-3.1-pro", _GEMINI_1M, 65_536, 2.0, 12.0, 0.20, long_over=200_000, long=(4.0, 18.0, 0.40)),
    _google("gemini-3-pro", _GEMINI_1M, 65_536, 2.0, 12.0, 0.20, long_over=200_000, long=(4.0, 18.0, 0.40)),
    _google("gemini-3-flash", _GEMINI_1M, 65_536, 0.50, 3.0, 0.05),
    _google("gemini-2.5-pro", _GEMINI_1M, 65_536, 1.25, 10.0, 0.125, long_over=200_000, long=(2.5, 15.0, 0.25)),
    _google("gemini-2.5-flash", _GEMINI_1M, 65_536, 0.30, 2.50, 0.03),
    _google("gemini-2.5-flash-lite", _GEMINI_1M, 65_536, 0.10, 0.40, 0.01),
    _google("gemini-2.0-flash", _GEMINI_1M, 8_192, 0.10, 0.40, 0.025),
    _google("gemini-2.0-flash-lite", _GEMINI_1M, 8_192, 0.075, 0.30, None),
    _google("gemini-1.5-pro", 2_097_152, 8_192, None, None, None),
    _google("gemini-1.5-flash", _GEMINI_1M, 8_192, None, None, None),
]

MODELS: dict[str, ModelSpec] = {spec.name: spec for spec in _SPECS}
# Longest keys first, so the first prefix that matches is the longest one.
_KEYS_BY_LENGTH = sorted(MODELS, key=len, reverse=True)

_ONE_M_RE = re.compile(r"\[1m\]", re.IGNORECASE)
_BRACKET_RE = re.compile(r"\[[^\]]*\]")
_REGION_RE = re.compile(r"^(?:us|eu|apac|global|au|jp|ca)\.")
_VERSION_SUFFIX_RE = re.compile(r"-v\d+$")  # Bedrock: ...-v1 (after ":0" is cut)
_DATE_RES = (
    re.compile(r"-\d{8}$"),  # Anthropic: -20250514
    re.compile(r"-\d{4}-\d{2}-\d{2}$"),  # OpenAI: -2025-04-14
)
_DIGIT_DOT_RE = re.compile(r"(?<=\d)\.(?=\d)")
# A sub-version is one or two digits ("-6", ".1"); four digits are a snapshot ("gpt-4-0613").
_SUBVERSION_RE = re.compile(r"^[-.]\d{1,2}(?!\d)")


def normalize(model: str | None) -> tuple[str, bool]:
    """(normalized name, whether the name asks for the 1M window via "[1m]").

    Lowercase; drop provider prefixes ("anthropic/", "models/", Bedrock "us.anthropic."), Vertex
    "@date", Bedrock "-v1:0", "-latest", snapshot dates; Claude names written with dots
    ("claude-sonnet-4.5", "claude-3.5-sonnet") become the API's dashes.
    """
    name = (model or "").strip().lower()
    one_m = bool(_ONE_M_RE.search(name))
    name = _BRACKET_RE.sub("", name).strip()
    name = name.rsplit("/", 1)[-1]
    name = _REGION_RE.sub("", name)
    if name.startswith("anthropic."):
        name = name[len("anthropic.") :]
    name = name.split("@", 1)[0].split(":", 1)[0]
    name = _VERSION_SUFFIX_RE.sub("", name)
    if name.endswith("-latest"):
        name = name[: -len("-latest")]
    for date_re in _DATE_RES:
        name = date_re.sub("", name)
    if name.startswith("claude"):
        name = _DIGIT_DOT_RE.sub("-", name)
    return name, one_m


def _match(name: str) -> ModelSpec | None:
    for key in _KEYS_BY_LENGTH:
        if not name.startswith(key):
            continue
        rest = name[len(key) :]
        if not rest:
            return MODELS[key]
        # "gpt-5" must not stand for "gpt-5.6" nor "gpt-50": a match ends at a separator, and what
        # follows must not be another version number ("-preview", "-thinking" are fine).
        if rest[0] in "-_." and not _SUBVERSION_RE.match(rest):
            return MODELS[key]
    return None


@functools.lru_cache(maxsize=1024)
def _lookup(model: str | None) -> ModelSpec:
    name, one_m = normalize(model)
    spec = _match(name) if name else None
    if spec is None:
        spec = ModelSpec(name or "unknown", DEFAULT_WINDOW, DEFAULT_MAX_OUTPUT, known=False)
    if one_m and spec.window < ONE_MILLION:
        spec = replace(spec, name=spec.name + "[1m]", window=ONE_MILLION)
    return spec


def lookup(model: str | None, override_window: int | None = None) -> ModelSpec:
    """The spec of `model` by its longest known prefix; unknown models get a default spec
    (200k window, 32k output, no prices) with known=False. A positive `override_window` (the
    conversation's own setting) replaces the window; 0 or None means no override."""
    spec = _lookup(model)
    if override_window and override_window > 0:
        spec = replace(spec, window=int(override_window))
    return spec


def split_cache_write(cache_write: int, cache_write_5m: int | None, cache_write_1h: int | None) -> tuple[int, int]:
    """(5-minute, 1-hour) cache writes from a usage record; without the split (older logs), every
    write counts as a 5-minute write, which is what it was billed as."""
    if cache_write_5m is None and cache_write_1h is None:
        return cache_write, 0
    if cache_write_1h is None:
        return cache_write_5m or 0, max(0, cache_write - (cache_write_5m or 0))
    if cache_write_5m is None:
        return max(0, cache_write - cache_write_1h), cache_write_1h
    return cache_write_5m, cache_write_1h


def cost(
    spec: ModelSpec,
    input_uncached: int,
    cache_write_5m: int,
    cache_write_1h: int,
    cache_read: int,
    output: int,
) -> float | None:
    """USD at list price for one call, or None when a price needed for a non-zero count is unknown."""
    prices = spec.prices
    prompt = input_uncached + cache_write_5m + cache_write_1h + cache_read
    if spec.long_prompt_over is not None and spec.long_prompt_prices is not None and prompt > spec.long_prompt_over:
        prices = spec.long_prompt_prices
    total = 0.0
    for count, price in (
        (input_uncached, prices.input),
        (cache_write_5m, prices.cache_write_5m),
        (cache_write_1h, prices.cache_write_1h),
        (cache_read, prices.cache_read),
        (output, prices.output),
    ):
        if not count:
            continue
        if price is None:
            return None
        total += count * price
    return total / 1_000_000


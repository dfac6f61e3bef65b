"""List prices of model calls, from genai-prices (pydantic's maintained price database, shipped
with its data: no network) or a price file the user supplies (settings.USAGE_PRICES_FILE).

Pure: no Django. A price is per token kind and per call: a call's whole prompt (uncached input +
cache writes + cache reads) picks its tier (genai-prices' "cliff" tiers: past a threshold every
token of the call pays the tier's rate), and the date of the call picks the price that was current
then. A model neither knows is unknown: cost() answers None and the caller says so, never $0.

The price file is JSON, one of two shapes (docs/usage.md):
- a list: genai-prices' own data file (prices/data.json of its repository), which replaces the
  shipped database: how a user updates prices without upgrading the package;
- an object ``{"models": {"<model name>": {"input": 3, "output": 15, "cache_read": 0.3,
  "cache_write": 3.75, "cache_write_1h": 6}}}``, USD per million tokens, consulted before the
  database. A name ending in ``*`` matches every model that starts with the rest. ``input`` and
  ``output`` are required; cache reads and writes default to ``input``, 1-hour writes to
  ``cache_write``.
"""

from __future__ import annotations

import bisect
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import genai_prices
from genai_prices import Usage
from genai_prices.data_snapshot import DataSnapshot, get_snapshot
from genai_prices import types as genai_types
from genai_prices.types import TieredPrices

MTOK = Decimal(1_000_000)
_KINDS = ("input", "output", "cache_read", "cache_write", "cache_write_1h")


class PriceFileError(ValueError):
    """The price file cannot be used; the message says why and where."""


@dataclass(frozen=True, slots=True)
class Rates:
    """USD per token of each kind, for one model at one tier and date, and where they come from."""

    input: Decimal
    output: Decimal
    cache_read: Decimal
    cache_write: Decimal
    cache_write_1h: Decimal
    source: str


@dataclass(frozen=True, slots=True)
class CallUsage:
    """One model call's measured tokens; cache_write counts every write, cache_write_1h the 1-hour ones among them."""

    input_uncached: int = 0
    cache_write: int = 0
    cache_write_1h: int = 0
    cache_read: int = 0
    output: int = 0

    @property
    def prompt(self) -> int:
        return self.input_uncached + self.cache_write + self.cache_read


def _override_rates(name: str, entry: object) -> Rates:
    if not isinstance(entry, dict):
        raise PriceFileError(f"model {name!r}: give an object of prices per million tokens, not {type(entry).__name__}")
    unknown = set(entry) - set(_KINDS)
    if unknown:
        raise PriceFileError(f"model {name!r}: unknown price {sorted(unknown)[0]!r} (known: {', '.join(_KINDS)})")
    values: dict[str, Decimal] = {}
    for kind in _KINDS:
        value = entry.get(kind)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or value != value:
            raise PriceFileError(f"model {name!r}: {kind} must be a number of dollars per million tokens, not {value!r}")
        values[kind] = Decimal(repr(value)) / MTOK
    for kind in ("input", "output"):
        if kind not in values:
            raise PriceFileError(f"model {name!r}: {kind} price missing")
    write = values.get("cache_write", values["input"])
    return Rates(values["input"], values["output"], values.get("cache_read", values["input"]), write,
                 values.get("cache_write_1h", write), source="price file")


def read_price_file(path: str | Path) -> tuple[dict[str, Rates], DataSnapshot | None]:
    """(model overrides, a replacement database or None) from a price file; PriceFileError says what is wrong."""
    path = Path(path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise PriceFileError(f"price file {path}: cannot read it ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise PriceFileError(f"price file {path}: not JSON ({exc})") from None
    if isinstance(raw, list):
        reader = getattr(genai_types, "_providers_from_raw", None)  # its own reader of its data file (a private name)
        if reader is None:
            raise PriceFileError(f"price file {path}: genai-prices {genai_prices.__version__} reads no data file here; "
                                 'give {"models": ...} instead')
        try:
            return {}, DataSnapshot(providers=reader(raw), from_auto_update=False)
        except Exception as exc:  # pydantic's validation error names the bad entry
            raise PriceFileError(f"price file {path}: not a genai-prices data file ({str(exc)[:300]})") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("models"), dict):
        raise PriceFileError(f'price file {path}: give {{"models": {{"<model>": {{"input": .., "output": ..}}}}}} '
                             "or a genai-prices data file (a list of providers)")
    try:
        return {str(k).lower(): _override_rates(str(k), v) for k, v in raw["models"].items()}, None
    except PriceFileError as exc:
        raise PriceFileError(f"price file {path}: {exc}") from None


class PriceBook:
    """Rates per (model, date, tier), looked up once each; cost() of a call is then arithmetic."""

    def __init__(self, overrides: dict[str, Rates] | None = None, snapshot: DataSnapshot | None = None):
        self.overrides = overrides or {}
        self.snapshot = snapshot or get_snapshot()
        self.database = "genai-prices " + genai_prices.__version__ + ("" if snapshot is None else " (data from the price file)")
        self._models: dict[str, object] = {}
        self._rates: dict[tuple, Rates] = {}

    @classmethod
    def from_file(cls, path: str | Path | None) -> PriceBook:
        if not path:
            return cls()
        overrides, snapshot = read_price_file(path)
        return cls(overrides, snapshot)

    def _override(self, model: str) -> Rates | None:
        name = model.lower()
        if name in self.overrides:
            return self.overrides[name]
        prefixes = [k for k in self.overrides if k.endswith("*") and name.startswith(k[:-1])]
        return self.overrides[max(prefixes, key=len)] if prefixes else None

    def _model(self, model: str):
        if model not in self._models:
            try:
                self._models[model] = self.snapshot.find_provider_model(model, None, None, None)
            except LookupError:
                self._models[model] = None
        return self._models[model]

    def known(self, model: str) -> bool:
        return bool(model) and (self._override(model) is not None or self._model(model) is not None)

    def rates(self, model: str, when: datetime | None, prompt: int) -> Rates | None:
        """The model's rates for a call of `prompt` tokens at `when` (None: now); None when no price is known."""
        if not model:
            return None
        override = self._override(model)
        if override is not None:
            return override
        found = self._model(model)
        if found is None:
            return None
        provider, info = found
        when = (when or datetime.now(UTC)).astimezone(UTC)
        price = info.get_prices(when)
        starts = sorted({t.start for v in vars(price).values() if isinstance(v, TieredPrices) for t in v.tiers})
        tier = bisect.bisect_left(starts, prompt)  # genai-prices: a tier applies when the prompt is > its start
        key = (id(price), tier)
        if key not in self._rates:
            self._rates[key] = _rates_of(price, (starts[tier - 1] + 1) if tier else 1, f"{self.database}: {provider.id} {info.id}")
        return self._rates[key]

    def tier_starts(self, model: str, when: datetime | None = None) -> list[int]:
        """The prompt sizes past which the model's price changes (its long-context tiers)."""
        found = None if self._override(model or "") is not None else (self._model(model) if model else None)
        if found is None:
            return []
        price = found[1].get_prices((when or datetime.now(UTC)).astimezone(UTC))
        return sorted({t.start for v in vars(price).values() if isinstance(v, TieredPrices) for t in v.tiers})

    def cost(self, model: str, when: datetime | None, usage: CallUsage, prompt: int | None = None) -> Decimal | None:
        """The call's cost in USD at list price, None when the model's price is not known. `prompt`:
        the size that picks the tier, when `usage` sums several calls of one tier."""
        rates = self.rates(model, when, usage.prompt if prompt is None else prompt)
        if rates is None:
            return None
        return (usage.input_uncached * rates.input + usage.output * rates.output + usage.cache_read * rates.cache_read
                + (usage.cache_write - usage.cache_write_1h) * rates.cache_write + usage.cache_write_1h * rates.cache_write_1h)


def _rates_of(price, n: int, source: str) -> Rates:
    """Per-token rates of a genai-prices ModelPrice at a prompt of n tokens, asked of genai-prices
    itself (its own rules for a kind it has no price for: a cache write without one is input)."""

    def per_token(**usage) -> Decimal:
        return Decimal(price.calc_price(Usage(**usage))["total_price"]) / n

    base = per_token(input_tokens=n)
    return Rates(
        input=base,
        output=per_token(input_tokens=n, output_tokens=n) - base,
        cache_read=per_token(input_tokens=n, cache_read_tokens=n),
        cache_write=per_token(input_tokens=n, cache_write_tokens=n),
        cache_write_1h=per_token(input_tokens=n, cache_write_tokens=n, cache_write_1h_tokens=n),
        source=source,
    )

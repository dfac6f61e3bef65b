"""Prices and the usage table, on plain rows (no database). Every expected dollar figure is worked
by hand beside its assertion, from the providers' list prices per million tokens (Anthropic's
"Model pricing" page: Sonnet 4.5 $3 input, $15 output, $3.75 5-minute cache write, $6 1-hour write,
$0.30 cache read, and over 200k prompt tokens $6 / $22.50 / $7.50 / $12 / $0.60; Opus 4.6 $5, $25,
$6.25, $10, $0.50; OpenAI's GPT-5: $1.25 input, $0.125 cached input, $10 output)."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest

from contextviewer.usage.prices import CallUsage, PriceBook, PriceFileError, read_price_file
from contextviewer.usage.report import Call, FoldRow, Options, Session, table

FEB = datetime(2026, 2, 10, 12, 0, tzinfo=UTC)


def test_a_call_is_priced_token_kind_by_token_kind():
    # Opus 4.6, 2,000 uncached + 10,000 1-hour writes + 100,000 reads + 1,000 output:
    # 2,000 x 5 = 10,000; 10,000 x 10 = 100,000; 100,000 x 0.5 = 50,000; 1,000 x 25 = 25,000 -> 185,000 / 1e6 = $0.185
    usage = CallUsage(input_uncached=2000, cache_write=10000, cache_write_1h=10000, cache_read=100000, output=1000)
    assert PriceBook().cost("claude-opus-4-6", FEB, usage) == Decimal("0.185")
    # The same writes at the 5-minute rate (what a tool that ignores the 1-hour split would say):
    # 10,000 x 6.25 = 62,500 -> 147,500 / 1e6 = $0.1475
    five = CallUsage(input_uncached=2000, cache_write=10000, cache_write_1h=0, cache_read=100000, output=1000)
    assert PriceBook().cost("claude-opus-4-6", FEB, five) == Decimal("0.1475")


def test_a_long_prompt_pays_the_long_tier_on_every_token_of_that_call():
    # Sonnet 4.5, prompt 1,000 + 2,000 + 150,000 = 153,000 (under 200k): 1,000 x 3 + 2,000 x 3.75 +
    # 150,000 x 0.3 + 300 x 15 = 3,000 + 7,500 + 45,000 + 4,500 = 60,000 -> $0.06
    book = PriceBook()
    assert book.cost("claude-sonnet-4-5-20250929", FEB, CallUsage(1000, 2000, 0, 150000, 300)) == Decimal("0.06")
    # prompt 1,000 + 2,000 + 250,000 = 253,000 (over 200k): 1,000 x 6 + 2,000 x 7.5 + 250,000 x 0.6 +
    # 300 x 22.5 = 6,000 + 15,000 + 150,000 + 6,750 = 177,750 -> $0.17775
    assert book.cost("claude-sonnet-4-5-20250929", FEB, CallUsage(1000, 2000, 0, 250000, 300)) == Decimal("0.17775")


def test_an_unknown_model_has_no_price_never_zero():
    book = PriceBook()
    assert book.cost("qwen3-coder-plus-unknown-to-the-database", FEB, CallUsage(100, 0, 0, 0, 10)) is None
    assert book.cost("", FEB, CallUsage(100, 0, 0, 0, 10)) is None
    assert not book.known("qwen3-coder-plus-unknown-to-the-database")


def test_a_price_file_prices_a_model_and_overrides_the_database(tmp_path):
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"models": {"qwen3-coder-plus": {"input": 1, "output": 5, "cache_read": 0.1},
                                           "claude-opus-4-6": {"input": 1, "output": 1}, "local-*": {"input": 0, "output": 0}}}))
    book = PriceBook.from_file(path)
    # 1,000,000 input x $1 + 200,000 output x $5 = $2.00; 500,000 reads x $0.1 = $0.05
    assert book.cost("qwen3-coder-plus", FEB, CallUsage(1_000_000, 0, 0, 500_000, 200_000)) == Decimal("2.05")
    # the file's $1/$1 over the database's $5/$25; a write with no write price is input: 1M x $1
    assert book.cost("claude-opus-4-6", FEB, CallUsage(0, 1_000_000, 0, 0, 1_000_000)) == Decimal("2")
    assert book.cost("local-llama-3", FEB, CallUsage(1000, 0, 0, 0, 1000)) == Decimal("0")  # priced at 0 by the user, on purpose
    assert book.rates("qwen3-coder-plus", FEB, 10).source == "price file"


@pytest.mark.parametrize("content, words", [
    ("{not json", "not JSON"),
    ('{"models": {"m": {"input": 1}}}', "output price missing"),
    ('{"models": {"m": {"input": "1", "output": 2}}}', "input must be a number"),
    ('{"models": {"m": {"input": 1, "output": 2, "cache_reads": 1}}}', "unknown price 'cache_reads'"),
    ('{"prices": []}', 'give {"models"'),
    ('[{"id": 3}]', "not a genai-prices data file"),
])
def test_a_bad_price_file_says_what_is_wrong(tmp_path, content, words):
    path = tmp_path / "prices.json"
    path.write_text(content)
    with pytest.raises(PriceFileError, match="price file .*") as exc:
        read_price_file(path)
    assert words in str(exc.value)


def test_a_price_file_missing_says_so(tmp_path):
    with pytest.raises(PriceFileError, match="cannot read it"):
        read_price_file(tmp_path / "none.json")


def _session(sid=1, started=FEB, **kw) -> Session:
    return Session(id=sid, label=f"s{sid}", agent="claude-code", project="p", person="", started=started, **kw)


def test_the_table_prefers_the_agent_s_own_cost_and_names_what_it_cannot_price():
    sessions = [_session(1), _session(2)]
    calls = [
        Call(1, "gpt-5", FEB, CallUsage(10_000, 0, 0, 90_000, 1_000)),  # list price
        Call(1, "gpt-5", FEB, CallUsage(10_000, 0, 0, 90_000, 1_000), recorded_cost=Decimal("0.5")),  # the agent's figure
        Call(2, "mystery-model", FEB, CallUsage(5_000, 0, 0, 0, 100)),
    ]
    t = table(sessions, calls, [FoldRow(1, FEB)], PriceBook(), Options("daily", UTC))
    (line,) = t["lines"]
    # GPT-5: 10,000 x 1.25 + 90,000 x 0.125 + 1,000 x 10 = 12,500 + 11,250 + 10,000 = 33,750 -> $0.03375
    assert line["cost_estimated_usd"] == 0.03375
    assert line["cost_recorded_usd"] == 0.5
    assert line["cost_complete"] is False and line["unpriced_models"] == ["mystery-model"] and line["unpriced_calls"] == 1
    assert line["tokens"]["input"] == 25_000 and line["tokens"]["cache_read"] == 180_000
    # cache hit: 180,000 read of 205,000 prompt tokens
    assert line["cache_hit_rate"] == round(180_000 / 205_000, 4)
    assert (line["sessions"], line["model_calls"], line["folds"]) == (2, 3, 1)
    assert t["unpriced_models"] == ["mystery-model"]


def test_days_are_the_reader_s_days_and_weeks_are_iso_weeks():
    late = datetime(2026, 2, 10, 23, 30, tzinfo=UTC)  # 00:30 on the 11th in Paris
    calls = [Call(1, "gpt-5", late, CallUsage(1000, 0, 0, 0, 0))]
    assert table([_session()], calls, [], PriceBook(), Options("daily", UTC))["lines"][0]["period"] == "2026-02-10"
    paris = ZoneInfo("Europe/Paris")
    assert table([_session()], calls, [], PriceBook(), Options("daily", paris))["lines"][0]["period"] == "2026-02-11"
    assert table([_session()], calls, [], PriceBook(), Options("weekly", UTC))["lines"][0]["period"] == "2026-W07"
    # --until 2026-02-10 in Paris leaves it out; in UTC keeps it
    assert table([_session()], calls, [], PriceBook(), Options("daily", paris, until=date(2026, 2, 10)))["lines"] == []
    assert len(table([_session()], calls, [], PriceBook(), Options("daily", UTC, until=date(2026, 2, 10)))["lines"]) == 1


def test_a_session_cost_kept_per_session_is_recorded_once_and_its_calls_are_not_priced_again():
    s = _session(1, model="claude-haiku-4.5", recorded_cost=Decimal("0.20369145"))
    calls = [Call(1, "claude-haiku-4.5", FEB, CallUsage()) for _ in range(3)]  # calls with no usage in the log
    t = table([s], calls, [], PriceBook(), Options("monthly", UTC, breakdown=True))
    assert t["total"]["cost_usd"] == 0.203691 and t["total"]["cost_recorded_usd"] == 0.203691
    assert t["total"]["cost_complete"] is True and t["total"]["unmeasured_calls"] == 3 and t["total"]["model_calls"] == 3
    assert [(ln.get("model"), ln["cost_usd"]) for ln in t["lines"]] == [(None, 0.203691), ("claude-haiku-4.5", 0.203691)]


def test_genai_prices_own_data_file_replaces_the_shipped_data(tmp_path):
    # A data file in genai-prices' own shape (a list of providers with their models' prices per million):
    # 1M input x $2 + 1M output x $8 = $10; a model only the shipped data knows is no longer priced.
    raw = [{"id": "house", "name": "House", "api_pattern": r"https://house\.example", "model_match": {"starts_with": "house-"},
            "models": [{"id": "house-model-7", "match": {"equals": "house-model-7"}, "prices": {"input_mtok": 2, "output_mtok": 8}}]}]
    path = tmp_path / "data.json"
    path.write_text(json.dumps(raw))
    book = PriceBook.from_file(path)
    assert book.cost("house-model-7", FEB, CallUsage(1_000_000, 0, 0, 0, 1_000_000)) == Decimal("10")
    assert book.cost("claude-opus-4-6", FEB, CallUsage(1000)) is None
    assert "data from the price file" in book.database


def test_a_call_s_day_is_its_day_in_a_zone_of_half_hours_too():
    from contextviewer.usage.rows import local, whole_hours

    kolkata = ZoneInfo("Asia/Kolkata")  # UTC+05:30: 18:40 UTC is 00:10 the next day
    assert not whole_hours(kolkata) and whole_hours(ZoneInfo("Europe/Paris")) and whole_hours(UTC)
    assert local("2026-02-10 18:40", kolkata).date() == date(2026, 2, 11)
    assert local("2026-02-10 18", ZoneInfo("Europe/Paris")).isoformat() == "2026-02-10T19:00:00+01:00"

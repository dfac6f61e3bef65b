"""Model registry: windows, output limits, prefix matching, overrides, cost."""

import pytest

from contextviewer.core.model_specs import (
    DEFAULT_MAX_OUTPUT,
    DEFAULT_WINDOW,
    MODELS,
    ModelSpec,
    cost,
    lookup,
    normalize,
    split_cache_write,
)


@pytest.mark.parametrize(
    ("model", "name", "window", "max_output"),
    [
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5", 200_000, 64_000),
        ("claude-opus-4-1-20250805", "claude-opus-4-1", 200_000, 32_000),
        ("claude-opus-4-20250514", "claude-opus-4", 200_000, 32_000),
        ("claude-haiku-4-5-20251001", "claude-haiku-4-5", 200_000, 64_000),
        ("claude-3-5-sonnet-20241022", "claude-3-5-sonnet", 200_000, 8_192),
        ("claude-3-7-sonnet-20250219", "claude-3-7-sonnet", 200_000, 64_000),
        ("anthropic/claude-sonnet-4.5", "claude-sonnet-4-5", 200_000, 64_000),
        ("us.anthropic.claude-sonnet-4-20250514-v1:0", "claude-sonnet-4", 200_000, 64_000),
        ("claude-3-5-sonnet@20240620", "claude-3-5-sonnet", 200_000, 8_192),
        ("Claude-Opus-4-6", "claude-opus-4-6", 1_000_000, 128_000),
        ("gpt-4o-2024-08-06", "gpt-4o", 128_000, 16_384),
        ("gpt-4o-mini", "gpt-4o-mini", 128_000, 16_384),
        ("gpt-4.1-2025-04-14", "gpt-4.1", 1_047_576, 32_768),
        ("gpt-5", "gpt-5", 400_000, 128_000),
        ("gpt-5-codex", "gpt-5-codex", 400_000, 128_000),
        ("openai/gpt-5.1-codex-max", "gpt-5.1-codex-max", 400_000, 128_000),
        ("o3-2025-04-16", "o3", 200_000, 100_000),
        ("o4-mini", "o4-mini", 200_000, 100_000),
        ("codex-mini-latest", "codex-mini", 200_000, 100_000),
        ("models/gemini-2.5-pro-preview-06-05", "gemini-2.5-pro", 1_048_576, 65_536),
        ("gemini-2.5-flash", "gemini-2.5-flash", 1_048_576, 65_536),
        ("gemini-2.5-flash-lite", "gemini-2.5-flash-lite", 1_048_576, 65_536),
        ("gemini-3-pro-preview", "gemini-3-pro", 1_048_576, 65_536),
        ("gpt-4-0613", "gpt-4", 8_192, 8_192),
    ],
)
def test_lookup_known_models(model, name, window, max_output):
    spec = lookup(model)
    assert (spec.name, spec.window, spec.max_output, spec.known) == (name, window, max_output, True)


def test_longest_prefix_wins():
    assert lookup("gpt-5-mini-2025-08-07").name == "gpt-5-mini"
    assert lookup("gpt-4.1-nano").name == "gpt-4.1-nano"
    assert lookup("o3-mini").name == "o3-mini"
    assert lookup("claude-opus-4-5-20251101").name == "claude-opus-4-5"


def test_a_prefix_never_stands_for_another_version():
    # "gpt-5" must not price "gpt-5.9"; "claude-opus-4" must not size "claude-opus-4-9".
    for model in ("gpt-5.9", "claude-opus-4-9", "gpt-50", "o33"):
        assert lookup(model).known is False, model


@pytest.mark.parametrize("model", [None, "", "<synthetic>", "some-local-llama"])
def test_unknown_model_gets_default_spec(model):
    spec = lookup(model)
    assert spec.known is False
    assert (spec.window, spec.max_output) == (DEFAULT_WINDOW, DEFAULT_MAX_OUTPUT) == (200_000, 32_000)
    assert spec.input_per_mtok is None


def test_one_million_variant():
    spec = lookup("claude-sonnet-4-5-20250929[1m]")
    assert (spec.name, spec.window, spec.max_output) == ("claude-sonnet-4-5[1m]", 1_000_000, 64_000)
    assert lookup("claude-sonnet-4-6[1m]").window == 1_000_000  # already 1M: unchanged
    assert normalize("sonnet[1M]") == ("sonnet", True)


def test_window_override_keeps_output_limit():
    spec = lookup("claude-sonnet-4-5", override_window=500_000)
    assert (spec.window, spec.max_output, spec.known) == (500_000, 64_000, True)
    unknown = lookup("mystery", override_window=32_000)
    assert (unknown.window, unknown.known) == (32_000, False)


@pytest.mark.parametrize("override", [None, 0, -1])
def test_no_override_for_none_zero_or_negative(override):
    assert lookup("gpt-4o", override_window=override).window == 128_000


def test_window_and_output_limit_are_separate_everywhere():
    for spec in MODELS.values():
        assert spec.window > 0 and spec.max_output > 0
        assert spec.max_output <= spec.window, spec.name


def test_anthropic_cache_prices_follow_the_multipliers():
    spec = lookup("claude-sonnet-4-5")
    assert (spec.input_per_mtok, spec.output_per_mtok) == (3.0, 15.0)
    assert (spec.cache_write_5m_per_mtok, spec.cache_write_1h_per_mtok, spec.cache_read_per_mtok) == (3.75, 6.0, 0.3)


def test_cost_of_a_call():
    spec = lookup("claude-sonnet-4-5")
    # 1000*3 + 2000*3.75 + 3000*6 + 10000*0.30 + 500*15 = 39,000 micro-dollars
    assert cost(spec, 1000, 2000, 3000, 10_000, 500) == pytest.approx(0.039)
    assert cost(spec, 0, 0, 0, 0, 0) == 0.0


def test_cost_long_prompt_tier():
    spec = lookup("claude-sonnet-4-5[1m]")
    # 200,000 is not over the threshold: base prices
    assert cost(spec, 200_000, 0, 0, 0, 0) == pytest.approx(0.6)
    # 250,000 input over 200k: every token at $6 in / $22.50 out
    assert cost(spec, 250_000, 0, 0, 0, 1000) == pytest.approx(1.5225)


def test_cost_unknown_prices():
    unknown = lookup("mystery")
    assert cost(unknown, 10, 0, 0, 0, 0) is None
    assert cost(unknown, 0, 0, 0, 0, 0) == 0.0
    no_cache_price = ModelSpec("x", 1000, 100, 1.0, 2.0)
    assert cost(no_cache_price, 1_000_000, 0, 0, 0, 1_000_000) == pytest.approx(3.0)
    assert cost(no_cache_price, 1, 0, 0, 1, 0) is None


def test_openai_cached_input_is_the_cache_read_price():
    spec = lookup("gpt-4o")
    # 1M uncached at 2.50 + 1M cached at 1.25 + 1M output at 10
    assert cost(spec, 1_000_000, 0, 0, 1_000_000, 1_000_000) == pytest.approx(13.75)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ((1000, None, None), (1000, 0)),
        ((1000, 400, 600), (400, 600)),
        ((1000, 400, None), (400, 600)),
        ((1000, None, 300), (700, 300)),
    ],
)
def test_split_cache_write(args, expected):
    assert split_cache_write(*args) == expected


def test_claude_code_runs_anthropic_models_in_200k_unless_the_log_shows_more():
    from contextviewer.core import harness  # moved from registry: rules per agent live in harness.py
    from contextviewer.importers import formats

    def harness_window(agent, model, peak_context):
        return harness.harness_window(formats.harness(agent), model, peak_context)

    assert lookup("claude-opus-4-6").window == 1_000_000  # the API's window
    assert harness_window("claude-code", "claude-opus-4-6", 170_251) == 200_000
    assert harness_window("claude-code", "claude-opus-4-6", 450_000) is None  # it ran with 1M
    assert harness_window("claude-code", "claude-opus-4-6[1m]", 100_000) is None
    assert harness_window("claude-code", "claude-haiku-4-5", 100_000) is None  # 200k already
    assert harness_window("codex", "gpt-5", 100_000) is None

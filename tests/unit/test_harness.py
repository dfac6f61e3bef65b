"""Harness rules per agent, with the numbers DESIGN.md "Policies" and docs/policy-lab.md state.

The rules are declared on each format's module (importers/<format>.py HARNESS) and found through
the format registry (formats.harness); the core receives them from its callers."""

import subprocess
import sys

import pytest

from contextviewer.core import budget, harness
from contextviewer.core.model_specs import ModelSpec, lookup
from contextviewer.importers import formats

# A 200k and a 400k model; small output limits unless a rule is about the output limit.
M200 = ModelSpec("m200", 200_000, 8_000)
M400 = ModelSpec("m400", 400_000, 8_000)
M200_BIG_OUT = ModelSpec("m200-big-out", 200_000, 64_000)
M400_BIG_OUT = ModelSpec("m400-big-out", 400_000, 128_000)
GPT5 = lookup("gpt-5")  # 400k window of which 272k input


def rules(agent, spec=None):
    return formats.harness(agent, spec)


def at(agent, spec):
    return rules(agent, spec).auto_fold_at(spec)


def reserve(agent, spec):
    return rules(agent, spec).output_reserve(spec)


def effective(agent, spec):
    return rules(agent, spec).effective_window(spec)


def estimate(agent, text, spec=None):
    return rules(agent, spec).estimate_tokens(text, spec)


def window(agent, model, peak_context):
    return harness.harness_window(rules(agent), model, peak_context)


def test_claude_code_compacts_13k_below_its_effective_window():
    # effective = window - min(max output, 20k); threshold = effective - 13k (policy-lab 3.1)
    assert effective("claude-code", M200_BIG_OUT) == 180_000
    assert at("claude-code", M200_BIG_OUT) == 167_000  # "about 167k on a 200k window"
    assert at("claude-code", M400_BIG_OUT) == 367_000
    assert reserve("claude-code", M200_BIG_OUT) == 20_000
    assert reserve("claude-code", M400_BIG_OUT) == 20_000
    # A model that writes less than 20k reserves its output limit.
    assert reserve("claude-code", M200) == 8_000
    assert at("claude-code", M200) == 200_000 - 8_000 - 13_000
    assert at("claude-code", ModelSpec("1m", 1_000_000, 128_000)) == 967_000  # "1M model: 967,000"
    assert estimate("claude-code", "x" * 400) == 100  # round(chars / 4)


def test_claude_code_runs_anthropic_models_in_200k():
    assert window("claude-code", "claude-opus-4-6", 170_251) == 200_000
    assert window("claude-code", "claude-opus-4-6", 450_000) is None
    assert window("claude-code", "claude-opus-4-6[1m]", 10) is None
    assert window("codex", "claude-opus-4-6", 10) is None  # another harness: the model's window


def test_codex_compacts_at_90_percent_of_its_context_window():
    assert at("codex", M200) == 180_000
    assert at("codex", M400) == 360_000
    # GPT-5: the context window is the 272k input limit -> 244,800; usable 95 % = 258,400 (policy-lab 4.1)
    assert at("codex", GPT5) == 244_800
    assert effective("codex", GPT5) == 258_400
    # A rollout's conversation window is the usable 258,400 Codex logs: it still compacts at 244,800.
    logged = lookup("gpt-5", override_window=258_400)
    assert at("codex", logged) == 244_800 and effective("codex", logged) == 258_400
    assert reserve("codex", logged) == 0  # an input window: the 128k output lies outside it
    assert reserve("codex", GPT5) == 128_000  # the rest of the 400k window
    assert reserve("codex", M200_BIG_OUT) == 40_000  # default: at most 20 % of the window
    assert estimate("codex", "é" * 4) == 2  # bytes / 4: 8 UTF-8 bytes


def test_deepagents_summarizes_at_85_percent_or_over_its_input_budget():
    assert at("langgraph", M200) == 170_000
    assert at("langgraph", M400) == 340_000
    assert reserve("langgraph", M200_BIG_OUT) == 64_000  # the model's max output
    # budget = int(0.95 * max_input) - max_output: with a 64k output limit it fires first (126k)
    assert effective("langgraph", M200_BIG_OUT) == 126_000
    assert at("langgraph", M200_BIG_OUT) == 126_000
    assert rules("langgraph").fold_line(M200_BIG_OUT)[0].endswith("(over its input budget)")
    claude = ModelSpec("claude-x", 200_000, 8_000, provider="anthropic")
    assert estimate("langgraph", "x" * 33, claude) == 10  # 3.3 chars/token for Anthropic
    assert estimate("langgraph", "x" * 33, M200) == 9  # ceil(33 / 4)


def test_efferent_hands_off_at_85_percent():
    assert at("efferent", M200) == 170_000
    assert at("efferent", M400) == 340_000
    assert reserve("efferent", M200_BIG_OUT) == 40_000
    assert estimate("efferent", "x" * 10) == 3  # Math.round(10 / 4): halves go up


def test_picoclaw_summarizes_at_75_percent_and_estimates_2_5_chars_per_token():
    assert at("picoclaw", M200) == 150_000
    assert at("picoclaw", M400) == 300_000
    assert reserve("picoclaw", M200_BIG_OUT) == 32_768  # MaxTokens
    assert estimate("picoclaw", "x" * 11) == 4  # chars * 2 // 5
    # Unconfigured: ContextWindow = MaxTokens x 4 = 131,072 (policy-lab 5.1)
    assert window("picoclaw", "some-model", 0) == 131_072
    assert at("picoclaw", ModelSpec("p", 131_072, 32_768)) == 98_304  # "98,304 at the default"


def test_gemini_and_opencode():
    assert at("gemini", M200) == 100_000 and at("gemini", M400) == 200_000
    # opencode: overflow above the window less min(max output, 32k), or the model's input limit
    assert reserve("opencode", M200_BIG_OUT) == 32_000
    assert at("opencode", M200_BIG_OUT) == 168_000
    assert at("opencode", M400_BIG_OUT) == 368_000
    assert at("opencode", GPT5) == 272_000


@pytest.mark.parametrize("agent", ["openhands", "swe-agent", "aider", "messages", "default"])
def test_agents_that_do_not_fold_by_tokens(agent):
    assert at(agent, M200) is None and at(agent, M400) is None
    assert reserve(agent, M200_BIG_OUT) == 40_000  # the output limit, at most 20 %
    assert reserve(agent, M400_BIG_OUT) == 80_000
    assert effective(agent, M200_BIG_OUT) == 160_000
    assert budget.thresholds(M200_BIG_OUT, rules(agent, M200_BIG_OUT)) == [("warn 70 %", 140_000), ("critical 90 %", 180_000)]


def test_openhands_folds_by_events():
    assert rules("openhands").fold_events == 120


def test_an_unknown_agent_gets_the_default():
    assert rules("some-new-agent") is harness.DEFAULT_RULES
    assert rules("some-new-agent", lookup("claude-sonnet-4-5")) is harness.DEFAULT_RULES
    assert at("some-new-agent", lookup("claude-sonnet-4-5")) is None
    assert reserve("some-new-agent", M200_BIG_OUT) == 40_000
    assert estimate("some-new-agent", "x" * 40) == 10
    assert window("some-new-agent", "claude-opus-4-6", 10) is None


def test_every_named_agent_has_rules():
    for agent in ["claude-code", "codex", "gemini", "langgraph", "efferent", "picoclaw", "openhands",
                  "swe-agent", "aider", "opencode", "messages", "default"]:
        assert rules(agent).agent == agent


def test_the_gauge_reads_the_conversations_agent_not_the_models_provider():
    claude = lookup("claude-sonnet-4-5")
    under_codex = budget.gauge({"user": 10}, spec=claude, measured=None, rules=rules("codex", claude))
    assert under_codex.output_reserve == 40_000  # Codex reserves no 20k for a Claude model
    assert ("Codex compact 90 %", 180_000) in under_codex.thresholds
    under_cc = budget.gauge({"user": 10}, spec=claude, measured=None, rules=rules("claude-code", claude))
    assert under_cc.output_reserve == 20_000 and ("Claude Code auto-compact", 167_000) in under_cc.thresholds
    assert all("Claude Code" not in label for label, _ in budget.thresholds(claude, rules("aider", claude)))


def test_zero_window():
    zero = ModelSpec("zero", 0, 0)
    assert at("claude-code", zero) is None and reserve("codex", zero) == 0
    assert effective("langgraph", zero) == 0


def test_every_harness_own_policy_is_a_registered_policy():
    """The lab draws a conversation's own harness policy by default: each rule names a real one."""
    from contextviewer.core import policylab

    owned = {h.agent: h.own_policy for h in formats.harnesses().values() if h.own_policy}
    assert len(owned) >= 6
    assert set(owned.values()) <= set(policylab.names())


def test_rules_come_from_the_format_registry():
    """A format's module declares its harness; formats.harness finds it, with the name filled in."""
    for fmt in formats.registry():
        assert formats.harness(fmt.name) is formats.harnesses()[fmt.name]
        assert formats.harness(fmt.name).agent == fmt.name
    assert formats.harness(None, lookup("claude-sonnet-4-5")).agent == formats.harness("claude-code").agent
    assert formats.harness(None) is harness.DEFAULT_RULES
    usual = [p for h in formats.harnesses().values() for p in h.usual_for]
    assert len(usual) == len(set(usual))  # one usual harness per provider


def test_the_core_looks_no_rules_up_by_name():
    """No lookup installed into the core at import time: the core's rules come from its callers, so
    it works with the format registry never imported."""
    assert not hasattr(harness, "install") and not hasattr(harness, "rules")
    code = (
        "import sys\n"
        "from contextviewer.core import budget, harness, model_specs\n"
        "spec = model_specs.lookup('claude-sonnet-4-5')\n"
        "g = budget.gauge({'user': 10}, spec=spec, measured=None, rules=harness.DEFAULT_RULES)\n"
        "assert g.output_reserve == 40_000, g.output_reserve\n"
        "assert not [m for m in sys.modules if m.startswith('contextviewer.importers')]\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)

"""Claude Code's auto-compact threshold, the real client (2.1.197, `bin/setup --agents`) as the oracle.

How the truth is established: a prefix of a real Claude Code session (cut at an assistant message
that ends a turn with text) is resumed by the real `claude --resume <id> -p "say ok"` in a temp HOME
against a fake Anthropic server on 127.0.0.1 (ops/agents.py). The last assistant line's usage is
rewritten; nothing else changes. Claude Code compacted when it sent its summarization request
before the real one AND appended a compact_boundary to the session file. The rule's count is the
last usage (input + cache creation + cache read + output) + round(chars/4) of every message after
it, read from what the client itself sent after the last assistant message (the prompt and the
agent listing it attaches; other attachments are switched off with CLAUDE_CODE_DISABLE_ATTACHMENTS
because they are computed under a 1 s deadline and vary with the machine's load). Bisection
(`manage.py agent_thresholds`) finds the client compacting from a count of exactly 167,000 on
claude-opus-4-6, which is the lab's `claude_code.threshold(200_000)`.
"""

from __future__ import annotations

import pytest

from contextviewer.importers import formats
from tests.agents import CLAUDE_PREFIXES, MARGIN, case, lab_fires_at_last_call

pytestmark = pytest.mark.fixtures

NAMES = [name for name, _ in CLAUDE_PREFIXES]


@pytest.mark.parametrize("name", NAMES, ids=lambda n: n[:40])
def test_real_claude_code_compacts_exactly_where_the_rule_says(name):
    """0.5 % under the lab's threshold (by the rule's count) the real client does not compact; 0.5 %
    over it, it does: the lab's rule agrees with Claude Code within 0.5 %."""
    c = case("claude-code", name)
    below, above = c.run(c.usage_for(-1)), c.run(c.usage_for(+1))
    assert not below.compacted, (f"Claude Code {below.version} compacted at a count {MARGIN:.1%} under the lab's "
                                 f"threshold {c.threshold:,} (usage {c.usage_for(-1):,} + {c.tail:,}): {below.detail}")
    assert above.compacted, (f"Claude Code {above.version} did not compact at a count {MARGIN:.1%} over the lab's "
                             f"threshold {c.threshold:,} (usage {c.usage_for(+1):,} + {c.tail:,}): {above.detail}")


@pytest.mark.django_db
@pytest.mark.parametrize("name", NAMES, ids=lambda n: n[:40])
def test_lab_replay_folds_exactly_when_real_claude_code_compacts(name):
    """The same prefix and usages, with the would-be next exchange appended (the prompt, the lines the
    client writes for it, a reply with a usage), imported and replayed by the lab's claude_code
    policy: it folds at the last call exactly when the real client compacted.

    Needs the lab to count from the previous call's measured usage (a concurrent change); before it,
    the lab counts from a calibrated estimate and this test may fail."""
    c = case("claude-code", name)
    for side in (-1, +1):
        usage = c.usage_for(side)
        real = c.run(usage).compacted
        fired, detail = lab_fires_at_last_call(c, usage, "claude_code")
        assert fired == real, (f"last usage {usage:,} (rule count {usage + c.tail:,}, lab threshold {c.threshold:,}): "
                               f"Claude Code compacted={real}, the lab folded at the last call={fired}; {detail}")


@pytest.mark.django_db
@pytest.mark.parametrize("model", ["claude-opus-4-5", "claude-haiku-4-5"])
def test_a_model_without_an_auto_compact_window_is_compacted_on_the_threshold_by_neither_the_client_nor_the_lab(model):
    """From 2.1.163 the client compacts on its threshold only the models it has an auto-compact
    window for (claude-opus-4-6 and claude-sonnet-4-6 in 200k): the same prefix resumed with
    `--model claude-opus-4-5` 0.5 % over the 167,000 count, and well over it (199,000, under the
    200k window), is not compacted; the lab's replay under the rule of the client's version does not
    fold there either. claude-opus-4-6 on the same counts is compacted (the tests above)."""
    c = case("claude-code", NAMES[1], model)
    params, note = formats.harness("claude-code").rule_for(c.probe.version)
    assert "no measured rule" not in note, note
    for usage in (c.usage_for(+1), 199_000 - c.tail):
        out = c.run(usage)
        assert not out.compacted, f"Claude Code {out.version} compacted {model} at a last usage of {usage:,}: {out.detail}"
        fired, detail = lab_fires_at_last_call(c, usage, "claude_code", params)
        assert not fired, f"{model} at {usage:,}: the lab folded under the rule of {c.probe.version}; {detail}"

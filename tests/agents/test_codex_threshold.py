"""Codex's auto-compaction limit, the real client (codex-cli 0.171.0, `bin/setup --agents`) as the oracle.

How the truth is established: a prefix of a real gpt-5.x rollout (madshn__localpush, cut after a
completed turn) is put under a temp HOME's .codex/sessions/YYYY/MM/DD and resumed by the real
`codex exec --skip-git-repo-check resume <id> "say ok"` against a fake OpenAI Responses server on
127.0.0.1 (ops/agents.py; the WebSocket upgrade is refused so it falls back to HTTP). The last
token_count's last_token_usage is rewritten; nothing else changes. Codex compacted when it sent its
compaction request (remote compaction v2: a /v1/responses request whose input ends with a
`compaction_trigger` item, answered with one `compaction` item) and wrote a `compacted` line.
The rule's count is the last response's total_tokens + bytes/4 of the items recorded since (none
here: Codex checks before the new turn records its prompt and context). Bisection
(`manage.py agent_thresholds`) finds the client compacting from exactly 244,800 = 90 % of the
272,000 window (the rollouts log 258,400 = 95 %), the lab's `codex.auto_compact_limit(272_000)`.
"""

from __future__ import annotations

import pytest

from tests.agents import CODEX_PREFIXES, MARGIN, case, lab_fires_at_last_call

pytestmark = pytest.mark.fixtures

NAMES = [name for name, _ in CODEX_PREFIXES]


@pytest.mark.parametrize("name", NAMES, ids=lambda n: n.split("__")[-1][:40])
def test_real_codex_compacts_exactly_where_the_rule_says(name):
    """0.5 % under the lab's limit (by the rule's count) the real client does not compact; 0.5 % over
    it, it does: the lab's rule agrees with Codex within 0.5 %."""
    c = case("codex", name)
    below, above = c.run(c.usage_for(-1)), c.run(c.usage_for(+1))
    assert not below.compacted, (f"Codex {below.version} compacted at a count {MARGIN:.1%} under the lab's limit "
                                 f"{c.threshold:,} (usage {c.usage_for(-1):,} + {c.tail:,}): {below.detail}")
    assert above.compacted, (f"Codex {above.version} did not compact at a count {MARGIN:.1%} over the lab's limit "
                             f"{c.threshold:,} (usage {c.usage_for(+1):,} + {c.tail:,}): {above.detail}")


@pytest.mark.django_db
@pytest.mark.parametrize("name", NAMES, ids=lambda n: n.split("__")[-1][:40])
def test_lab_replay_folds_exactly_when_real_codex_compacts(name):
    """The same prefix and usages, with the would-be next turn appended (the lines the client writes
    for it in a run that does not compact, the reply's token_count), imported and replayed by the
    lab's codex policy: it folds at the last call exactly when the real client compacted.

    Needs the lab to count from the previous call's measured usage (a concurrent change); before it,
    the lab counts from a calibrated estimate and this test may fail."""
    c = case("codex", name)
    for side in (-1, +1):
        usage = c.usage_for(side)
        real = c.run(usage).compacted
        fired, detail = lab_fires_at_last_call(c, usage, "codex")
        assert fired == real, (f"last usage {usage:,} (rule count {usage + c.tail:,}, lab limit {c.threshold:,}): "
                               f"Codex compacted={real}, the lab folded at the last call={fired}; {detail}")

"""Lost paths and errors of real folds against a truth checked by hand (issue 34, item 5).

The folds: every real Claude Code fold of the shared corpus (../shared/fixtures/claude-code, see its
SOURCES.md; all MIT): marot/spotter's three sessions (CC 2.1.39, two auto folds and one manual
/compact) and oneryalcin/fasthooks' sample transcript (CC 2.0.76, a manual /compact). The corpus has
no Windows-path fold, no sub-agent's own fold and no Codex local compaction with readable text
(its one Codex compaction is redacted); the path forms they use are covered by the matcher's unit
tests (tests/unit/test_pathmatch.py). These four folds write their paths in POSIX forms the previous
matcher read too (the test passes on it as well): here they guard against regressions and check the
error rules on real failures; the forms the issue found missed are proven by test_pathmatch.py.
Measured with this module: lost paths precision 7/7, recall 7/7; errors precision 12/13 (the stray
one: a `** (BadMapError)` a command printed in the output of a call that did not fail, spotter-4te line 485), recall 12/12.

How the truth was made (written before the probe was run on these folds with the new matcher):
for each fold, the raw JSONL was read with a 30-line script that uses `json` only (no project
code): the main thread's lines before the `compact_boundary` record (the replaced segment), every
`tool_use` input (`file_path`, a `path` naming a file, the files a `command` names) and every
`tool_result` with `is_error`. Each path used was then looked for in the summary (the
`isCompactSummary` line) by reading it, in any form a reviewer accepts: relative, absolute, a base
name no other used path has, a folder or glob naming it. Vendored trees (`deps/`), temp files
(`/tmp/...`), npm package names (`highlight.js`) and bare repeats of a path already listed are left
out (tier C or not files). Errors: every failed call (is_error, a non-zero exit), one per episode (the
same failure again is one: the five Dialyzer refusals of spotter-4te); a user's rejection would be
its own kind (none in these folds). Each error is named by its tool_use id and a piece of its message
that its headline must show.
"""

from __future__ import annotations

import pytest

from contextviewer.core import facts, pathmatch
from tests.unit.test_fact_tiers import fold_and_after

# file -> (project root the paths are relative to, {path: named by the summary}, [(tool_use ids of one episode, message piece)])
TRUTH = {
    # Boundary line 754 (auto, preTokens 170,251), summary line 755; segment lines 1-753. Used: Read/Edit/Write
    # file_path inputs (lines 116-743), `mix test <file>` commands (382-485). pane_list_live.ex (Read at 124)
    # is nowhere in the summary; the others are named by their relative path (summary lines 79-176).
    # No tool_result has is_error: the compile errors the summary speaks of came from hooks, not calls.
    "marot__spotter__4d5611e5-241a-462a-8d15-5122611a9569.jsonl": (
        "/home/USER/projects/spotter-worktrees/spotter-dov",
        {
            "lib/spotter_web/live/session_live.ex": True,
            "lib/spotter_web/live/subagent_live.ex": True,
            "lib/spotter_web/live/pane_list_live.ex": False,
            "test/spotter_web/live/session_live_test.exs": True,
            "lib/spotter_web/live/transcript_computers.ex": True,
            "lib/spotter_web/components/transcript_components.ex": True,
            "test/spotter_web/live/subagent_live_test.exs": True,
            "lib/spotter/services/transcript_renderer.ex": True,
            "test/spotter/services/transcript_renderer_test.exs": True,
            "assets/js/app.js": True,
            "priv/static/assets/spotter.css": True,
        },
        [],
    ),
    # Boundary line 1481 (manual /compact, preTokens 142,431), summary line 1482. mix.lock (grepped at line 104)
    # is not in the summary; config/dev.exs, test.exs, runtime.exs are named as "config/config.exs, dev.exs,
    # test.exs, runtime.exs" (base names no other used path has); the plugin scripts by full relative path.
    "marot__spotter__ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl": (
        "/home/USER/projects/spotter-worktrees/spotter-4te",
        {
            "mix.exs": True,
            "mix.lock": False,
            "lib/spotter/application.ex": True,
            "config/config.exs": True,
            "config/dev.exs": True,
            "config/test.exs": True,
            "config/runtime.exs": True,
            "lib/spotter/telemetry/otel.ex": True,
            "spotter-plugin/scripts/notify-session.sh": True,
            "spotter-plugin/scripts/tool-call-capture.sh": True,
            "spotter-plugin/scripts/post-tool-capture.sh": True,
            "spotter-plugin/scripts/lib/trace_context.sh": True,
            "lib/spotter_web/controllers/session_hook_controller.ex": True,
            "lib/spotter_web/controllers/hooks_controller.ex": True,
            "lib/spotter_web/controllers/otel_trace_helpers.ex": True,
            ".dialyzerignore": True,
        },
        [
            ({"toolu_01NkiH6UJoP8DhVQCaout4Wo"}, "String to replace not found"),  # line 259, an Edit refused
            ({"toolu_01LbtdVUWbsLDTFPcZ2ShTTy"}, "Code is not formatted"),  # 661, the pre-commit hook
            ({"toolu_01YDjEpStFiJFinHC2e4tCQh"}, "permission denied"),  # 916, Bash exit 1
            ({"toolu_01TvAEBCAjRTemkSG67XM3wt"}, "CREDO"),  # 1209, Function is too complex
            ({"toolu_01WWrDx5fzMNaU9jDJzyFTBx"}, "String to replace not found"),  # 1300, another Edit, other text
            ({"toolu_01EGvi6agZyQcoGm6KtR4yjn", "toolu_01UnDE8JfasE2hsBrmFLwa24", "toolu_019MCyZ85iw9xKpwct7zfjuV",
              "toolu_017KTmYsMom3GiceahYbkKJe", "toolu_013pG5nAvZqKznWmBjiRXqVm"}, "DIALYZER"),  # 1343-1463: one refusal, five times
            ({"toolu_01DUw3PsG8cXcMcPaRaQ9HB7"}, "CREDO"),  # 1389, Prefer using an implicit try
        ],
    ),
    # Boundary line 714 (auto, preTokens 167,731; the boundary's cwd is .../spotter-fum/assets, the agent had cd'd
    # there, so paths come absolute, project-relative and assets-relative), summary line 715. Lost: the plan file
    # (~/.claude/plans, line 120), lib/spotter/transcripts/session.ex (526), .gitignore (569: the summary says
    # "was gitignored", not the file), config/config.exs (576), config/dev.exs (587).
    "marot__spotter__8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl": (
        "/home/USER/projects/spotter-worktrees/spotter-fum",
        {
            "lib/spotter/services/transcript_renderer.ex": True,
            "lib/spotter/transcripts/jsonl_parser.ex": True,
            "test/spotter/services/transcript_renderer_test.exs": True,
            "test/fixtures/transcripts/tool_heavy.jsonl": True,
            "test/fixtures/transcripts/subagent.jsonl": True,
            "test/fixtures/transcripts/short.jsonl": True,
            "lib/spotter_web/live/session_live.ex": True,
            "lib/spotter_web/live/pane_view_live.ex": True,
            "/home/USER/.claude/plans/drifting-tumbling-whisper.md": False,
            "lib/spotter_web/components/layouts/root.html.heex": True,
            "priv/static/assets/spotter.css": True,
            "lib/spotter/transcripts/session.ex": False,
            ".gitignore": False,
            "config/config.exs": False,
            "config/dev.exs": False,
            "assets/build.js": True,
            "assets/js/app.js": True,
            "assets/package.json": True,
        },
        [
            ({"toolu_01QKgHsyMTCzfusHirKBAZNC"}, "exceeds maximum allowed tokens"),  # line 69, Read refused
            ({"toolu_01WD7R52g4Tq4muwnGEgs9nD"}, "main..HEAD"),  # 321, a command of a slash command failed
            ({"toolu_015FbbF8GZborUDrwHW7ZA82"}, "ignored by one of your .gitignore files"),  # 568, git add, exit 1
        ],
    ),
    # Boundary line 59 (manual /compact, preTokens 21,558, CC 2.0.76), summary line 60. Every file is named
    # (`/workspace/hello_world.py`, `/workspace/number_generator.py`, `/workspace/data.txt`, `cat nonexistent.txt`).
    "oneryalcin__fasthooks__sample_main_transcript.jsonl": (
        "/workspace",
        {"hello_world.py": True, "number_generator.py": True, "data.txt": True, "nonexistent.txt": True},
        [
            ({"toolu_019doGxDkQSYiVCqN4AXSfQW"}, "No such file or directory"),  # line 30, cat, exit 1
            ({"toolu_018vFotHvxxm3NcDcXDk1wSh"}, "command not found"),  # line 48, python, exit 127
        ],
    ),
}


@pytest.fixture(scope="module")
def probed():
    out = {}
    for name in TRUTH:
        segment, summary, cwd, _ = fold_and_after(name)  # skips without the shared fixtures
        out[name] = (segment, facts.probe(segment, summary, cwd=cwd), cwd)
    return out


def _result_ids(segment: list[dict]) -> dict[int, set[str]]:
    """Position -> the tool_use ids of the results its message holds."""
    return {m["position"]: {b.get("tool_id") for b in m["blocks"] if b.get("kind") == "tool_result"} for m in segment}


def test_lost_paths_precision_and_recall_across_the_folds(probed):
    """Of the paths each fold's segment used, the probe calls lost the ones the summary does not
    name: precision and recall at least 0.9 over the four folds."""
    hits = said_lost = truly_lost = 0
    wrong, missed = [], []
    for name, (root, truth, _) in TRUTH.items():
        _, report, _ = probed[name]
        keys = {pathmatch.path_key(p, root): named for p, named in truth.items()}
        lost = {pathmatch.path_key(f.text, root) for f in report.lost if f.kind == "path"}
        # Only the used paths are judged (the truth's universe); a used path the probe never found is a miss.
        judged = lost & set(keys)
        hits += sum(1 for k in judged if not keys[k])
        said_lost += len(judged)
        truly_lost += sum(1 for named in keys.values() if not named)
        wrong += [(name, k) for k in judged if keys[k]]
        missed += [(name, k) for k, named in keys.items() if not named and k not in lost]
    precision, recall = hits / max(said_lost, 1), hits / max(truly_lost, 1)
    assert precision >= 0.9, (precision, wrong)
    assert recall >= 0.9, (recall, missed)


def test_errors_precision_recall_and_message_across_the_folds(probed):
    """Every failed call is an error (failed reads, refused edits, non-zero exits, hooks' refusals),
    one per episode, shown by its message: precision and recall at least 0.8."""
    found = matched = 0
    episodes = sum(len(errors) for _, _, errors in TRUTH.values())
    caught: set[tuple[str, int]] = set()
    stray, unshown = [], []
    for name, (_, _, errors) in TRUTH.items():
        segment, report, _ = probed[name]
        ids = _result_ids(segment)
        for fact in (f for f in report.facts if f.kind == "error"):
            found += 1
            episode = next((i for i, (tool_ids, _) in enumerate(errors) if tool_ids & ids.get(fact.position, set())), None)
            if episode is None:
                stray.append((name, fact.text))
                continue
            matched += 1
            caught.add((name, episode))
            if errors[episode][1].lower() not in fact.text.lower():
                unshown.append((name, errors[episode][1], fact.text))
    precision, recall = matched / max(found, 1), len(caught) / max(episodes, 1)
    assert precision >= 0.8, (precision, stray)
    assert recall >= 0.8, (recall, len(caught), episodes)
    assert not unshown, unshown  # each error shows its message, not the first line of its output


def test_no_user_decision_is_an_error_and_each_fold_has_its_truth(probed):
    for name in TRUTH:
        _, report, _ = probed[name]
        assert not [f for f in report.facts if f.kind == "error" and "doesn't want to proceed" in f.text]

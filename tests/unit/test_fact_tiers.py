"""Salience tiers of the fact probes (core/facts.py, core/salience.py), on two real folds checked by
hand and on hand-made transcripts for each rule.

Tiers: A = Edit/Write/MultiEdit/apply_patch targets and paths in user messages; B = Read/Grep/Glob
inputs, paths in Bash arguments and in assistant prose; C = paths only in tool output (promoted to B
when a later tool input uses them), vendored and build trees, temp dirs, stack frames. The default
report (retention, the lost list) is A + B; C is `background`.
"""

from pathlib import Path

import pytest

from contextviewer.core import facts, salience
from contextviewer.core import segments as core_segments
from contextviewer.core import turns as core_turns
from contextviewer.core.records import FoldRecord, MessageRecord, SessionInfo
from contextviewer.importers.claude_code import parser as claude_code
from tests.conftest import shared_fixtures_dir

# --- the real folds ---------------------------------------------------------------------------


def fold_and_after(name: str) -> tuple[list[dict], str, str, list[dict]]:
    """The first archived segment of a Claude Code fixture's main thread, its summary, the session's
    cwd, and the messages after that fold up to the next fold (inclusive) or the end: parsed by the
    importer, turns and segments by the core (no Django)."""
    root = shared_fixtures_dir()
    if root is None or not (root / "claude-code" / name).is_file():
        pytest.skip(f"shared fixture claude-code/{name} not found (set CONTEXTVIEWER_FIXTURES to ../shared/fixtures)")
    records, folds, cwd, seen = [], [], "", set()
    with open(Path(root) / "claude-code" / name, "rb") as stream:
        for r in claude_code.parse(stream):
            if isinstance(r, MessageRecord) and not r.agent_id and not r.agent_kind and r.uuid not in seen:
                seen.add(r.uuid)
                records.append(r)
            elif isinstance(r, FoldRecord) and not r.agent_id and r.kind == "compact":
                folds.append(r)
            elif isinstance(r, SessionInfo) and not r.agent_id:
                cwd = r.cwd or cwd
    blocks = [[b.as_dict() for b in r.blocks] for r in records]
    turns = core_turns.assign_turns((r.role, b, r.is_meta, r.is_compact_summary) for r, b in zip(records, blocks))
    messages = [
        {"position": i, "turn": t, "role": r.role, "blocks": b, "is_meta": r.is_meta, "is_compact_summary": r.is_compact_summary}
        for i, (r, b, t) in enumerate(zip(records, blocks, turns))
    ]
    position = {r.uuid: i for i, r in enumerate(records)}
    spans = [core_segments.FoldSpan(f.boundary_uuid, position[f.boundary_uuid], position.get(f.summary_uuid))
             for f in folds if f.boundary_uuid in position]
    first, following = core_segments.segments(0, len(records) - 1, spans)[:2]  # the next archived one, or the loaded one
    assert first.kind == core_segments.ARCHIVED
    return messages[first.start : first.end + 1], folds[0].summary_text, cwd, messages[following.start : following.end + 1]


def _fold(name: str) -> tuple[list[dict], str, str]:
    return fold_and_after(name)[:3]


# How both folds were checked. Every tool call of the archived segment was listed with the importer
# (the tool_input of each tool_call block: file_path of Read/Edit/Write/MultiEdit, path and pattern of
# Grep/Glob, command of Bash), with every user text block and every tool_result marked is_error, and
# the paths in the assistant's prose; then each path was looked for in the summary by hand (its
# relative path, else its basename, read in the summary text). Vendored trees (deps/), temp dirs
# (/tmp/...) and paths only seen in tool output are tier C by rule and so not in these sets; neither
# are directories searched (test/fixtures/transcripts, config, spotter-plugin/scripts), glob patterns
# (test/fixtures/transcripts/*.jsonl) nor npm package names (highlight.js).
# Errors: every is_error tool_result, and every exception / `fatal:` / `error:` header in the output
# of a command (Read and Grep outputs are file contents: not errors; compiler warnings are not either);
# one error per episode (the same failure repeated is one), looked for in the summary by hand.

# marot__spotter__8463c716 (cwd .../spotter-worktrees/spotter-fum): A+B path -> kept by the summary.
SPOTTER_FUM = "marot__spotter__8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl"
SPOTTER_FUM_PATHS = {
    # A: Write/Edit file_path inputs.
    "lib/spotter/services/transcript_renderer.ex": True,  # "**`lib/spotter/services/transcript_renderer.ex`**"
    "test/spotter/services/transcript_renderer_test.exs": True,  # named by its relative path
    "priv/static/assets/spotter.css": True,
    "lib/spotter_web/components/layouts/root.html.heex": True,
    "lib/spotter_web/live/session_live.ex": True,
    "assets/js/app.js": True,
    "/home/USER/.claude/plans/drifting-tumbling-whisper.md": False,  # "wrote plan": the file is never named
    # B: Read file_path and Grep path inputs, assistant prose.
    "lib/spotter/transcripts/jsonl_parser.ex": True,
    "test/fixtures/transcripts/tool_heavy.jsonl": True,  # "`tool_heavy.jsonl`": a basename no other A/B path has
    "test/fixtures/transcripts/subagent.jsonl": True,
    "test/fixtures/transcripts/short.jsonl": True,
    "lib/spotter_web/live/pane_view_live.ex": True,  # "`pane_view_live.ex`"
    "assets/build.js": True,  # "esbuild JS pipeline (assets/build.js)"
    "assets/package.json": True,
    "xterm.css": True,  # assistant prose; "after xterm.css"
    "lib/spotter/transcripts/session.ex": False,  # Grep path; "session.cwd" is not the file
    ".gitignore": False,  # Grep path; the summary says "gitignored", never the file
    "config/config.exs": False,  # Grep path; not named
    "config/dev.exs": False,  # Read; not named
}
SPOTTER_FUM_ERRORS = {  # a piece of the error's headline -> kept by the summary
    "exceeds maximum allowed tokens": False,  # Read of subagent.jsonl refused: not mentioned
    "main..HEAD": False,  # `fatal: ambiguous argument 'main..HEAD'` from the commit skill: not mentioned
    ".gitignore files": True,  # "Git ignored `priv/static/assets/` -> used `git add -f`"
}

# marot__spotter__ae4a77f8 (cwd .../spotter-worktrees/spotter-4te).
SPOTTER_4TE = "marot__spotter__ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl"
SPOTTER_4TE_PATHS = {
    # A: Write/Edit file_path inputs; the summary lists each under "Key files modified/created".
    "mix.exs": True,
    "lib/spotter/application.ex": True,
    "lib/spotter/telemetry/otel.ex": True,
    "config/config.exs": True,
    "config/dev.exs": True,  # "**config/dev.exs**"
    "config/test.exs": True,
    "config/runtime.exs": True,
    "spotter-plugin/scripts/lib/trace_context.sh": True,
    "spotter-plugin/scripts/notify-session.sh": True,
    "spotter-plugin/scripts/tool-call-capture.sh": True,
    "spotter-plugin/scripts/post-tool-capture.sh": True,
    "lib/spotter_web/controllers/otel_trace_helpers.ex": True,
    "lib/spotter_web/controllers/session_hook_controller.ex": True,
    "lib/spotter_web/controllers/hooks_controller.ex": True,
    ".dialyzerignore": True,  # "**.dialyzerignore** (new, NOT committed)"
    # B: Bash arguments (the deps/ files grepped and read are vendored: tier C).
    "mix.lock": False,  # `grep -A 2 opentelemetry_bandit mix.lock`: never named
}
SPOTTER_4TE_ERRORS = {
    "String to replace not found": False,  # two Edit refusals (otel.ex, otel_trace_helpers.ex): not mentioned
    "BadMapError": True,  # `mix test` output `** (BadMapError) expected a map`: "BadMapError in OTEL processor config"
    "[FORMAT]": False,  # pre-commit "Code is not formatted": the summary lists the hooks, never this failure
    "permission denied": False,  # `(eval):1: permission denied:` sourcing the script: not mentioned
    "cyclomatic complexity is 13": True,  # pre-commit credo: "Cyclomatic complexity (13 > 9) in tool_call/2"
    "[DIALYZER]": True,  # five commits refused by the same dialyzer warning: "Dialyzer false positive (UNRESOLVED)"
    "implicit `try`": True,  # pre-commit credo: "Credo: explicit try: Used implicit try"
}
FOLDS = [(SPOTTER_FUM, SPOTTER_FUM_PATHS, SPOTTER_FUM_ERRORS), (SPOTTER_4TE, SPOTTER_4TE_PATHS, SPOTTER_4TE_ERRORS)]


@pytest.fixture(scope="module")
def reports():
    out = {}
    for name, _, _ in FOLDS:
        messages, summary, cwd = _fold(name)
        out[name] = facts.probe(messages, summary, cwd=cwd)
    return out


def _errors_of(report, piece: str) -> list:
    found = [f for f in report.facts if f.kind == "error" and piece.lower() in _lines_of(f)]
    assert found, (piece, [f.text for f in report.facts if f.kind == "error"])
    return found


def _lines_of(fact) -> str:
    return (fact.text + " " + " ".join(fact.terms)).lower()


def test_lost_paths_recall_and_precision_on_both_folds(reports):
    pooled = {"hit": 0, "lost_by_hand": 0, "lost_by_probe": 0}
    for name, truth, _ in FOLDS:
        report = reports[name]
        paths = {f.key: f for f in report.facts if f.kind == "path"}
        assert set(truth) <= set(paths), (name, set(truth) - set(paths))
        lost_by_hand = {p for p, kept in truth.items() if not kept}
        lost_by_probe = {key for key, f in paths.items() if not f.kept}  # the default lost list, all of it
        hit = len(lost_by_hand & lost_by_probe)
        recall, precision = hit / len(lost_by_hand), hit / max(len(lost_by_probe), 1)
        assert recall >= 0.9 and precision >= 0.9, (name, lost_by_probe - lost_by_hand, lost_by_hand - lost_by_probe)
        pooled["hit"] += hit
        pooled["lost_by_hand"] += len(lost_by_hand)
        pooled["lost_by_probe"] += len(lost_by_probe)
    assert pooled["hit"] / pooled["lost_by_hand"] >= 0.9 and pooled["hit"] / pooled["lost_by_probe"] >= 0.9


def test_no_tier_c_path_in_the_default_list(reports):
    for name, _, _ in FOLDS:
        report = reports[name]
        assert all(f.tier in {"A", "B"} for f in report.facts), name
        assert all(f.tier == "C" for f in report.background), name
        for f in report.facts:
            if f.kind == "path":
                assert not salience.is_background_path(f.text), (name, f.text)
        background = {f.key for f in report.background if f.kind == "path"}
        assert background, name  # the outputs' paths are there, apart
    # Vendored files a command grepped and read, and a temp dir, are background.
    background = {f.key for f in reports[SPOTTER_4TE].background if f.kind == "path"}
    assert {"deps/opentelemetry_api/src/opentelemetry.erl", "deps/opentelemetry_bandit/lib/opentelemetry_bandit.ex"} <= background
    assert not [f for f in reports[SPOTTER_FUM].facts if "/tmp/" in f.text and f.kind == "path"]


def test_errors_precision_and_kept_on_both_folds(reports):
    for name, _, truth in FOLDS:
        report = reports[name]
        errors = [f for f in report.facts if f.kind == "error"]
        real = [f for f in errors if any(piece.lower() in _lines_of(f) for piece in truth)]
        assert len(real) / max(len(errors), 1) >= 0.8, (name, [f.text for f in errors if f not in real])
        judged = [(f.kept, kept) for piece, kept in truth.items() for f in _errors_of(report, piece)]
        assert sum(a == b for a, b in judged) / len(judged) >= 0.8, (name, judged)
        # Of the errors reported lost, how many the hand check finds lost.
        lost = [f for f in real if not f.kept]
        lost_by_hand = [f for f in lost if any(not kept and p.lower() in _lines_of(f) for p, kept in truth.items())]
        assert len(lost_by_hand) / max(len(lost), 1) >= 0.8, (name, [f.text for f in lost])
    # One episode: the five commits refused by the same dialyzer warning are one error, unresolved.
    (dialyzer,) = _errors_of(reports[SPOTTER_4TE], "[DIALYZER]")
    assert dialyzer.occurrences >= 5 and dialyzer.resolved is False
    # An Edit refused and then done on the same file is resolved.
    assert all(f.resolved for f in _errors_of(reports[SPOTTER_4TE], "String to replace not found"))


# --- each rule on a hand-made transcript ------------------------------------------------------


def msg(position, role, *blocks, turn=0, is_compact_summary=False):
    return {"position": position, "turn": turn, "role": role, "blocks": list(blocks), "is_meta": False,
            "is_compact_summary": is_compact_summary}


def text(t):
    return {"kind": "text", "text": t}


def call(name, tool_id="t", **inp):
    return {"kind": "tool_call", "tool_name": name, "tool_input": inp, "text": str(inp), "tool_id": tool_id}


def result(t, tool_id="t", error=False):
    return {"kind": "tool_result", "text": t, "tool_id": tool_id, "is_error": error}


def tiers(found, kind="path"):
    return {f.key: f.tier for f in found if f.kind == kind}


def test_path_tiers_and_the_promotion_of_an_output_path():
    seg = [
        msg(0, "user", text("Please look at docs/plan.md first.")),
        msg(1, "assistant", call("Edit", "e", file_path="/repo/app/models.py")),
        msg(2, "assistant", call("Read", "r", file_path="/repo/app/views.py")),
        msg(3, "assistant", call("Bash", "b", command="ls app")),
        msg(4, "tool", result("app/urls.py\napp/forms.py\nnode_modules/x/index.js", "b")),
        msg(5, "assistant", call("Read", "r2", file_path="/repo/app/forms.py")),
        msg(6, "tool", result('Traceback:\n  File "/repo/app/admin.py", line 3, in <module>\n/usr/lib/python3/x.py:12:4: boom', "r2")),
        msg(7, "assistant", call("Bash", "b2", command="cat /tmp/run/out.log && cat .venv/lib/site.py")),
    ]
    found = facts.extract(seg, "/repo")
    assert tiers(found) == {
        "docs/plan.md": "A", "app/models.py": "A", "app/views.py": "B",
        "app/urls.py": "C", "app/forms.py": "B",  # seen in an output, then read: promoted, linked to the Read
        "node_modules/x/index.js": "C", "app/admin.py": "C", "/usr/lib/python3/x.py": "C",  # vendored, stack frames
        "/tmp/run/out.log": "C", ".venv/lib/site.py": "C",  # a temp dir, a virtualenv
    }
    forms = next(f for f in found if f.key == "app/forms.py")
    assert forms.position == 5
    report = facts.probe(seg, "Nothing named.", cwd="/repo")
    assert {f.key for f in report.lost if f.kind == "path"} == {"docs/plan.md", "app/models.py", "app/views.py", "app/forms.py"}
    assert "app/urls.py" in {f.key for f in report.background}


def test_a_basename_is_unique_over_a_and_b_only():
    seg = [
        msg(0, "assistant", call("Edit", "e", file_path="/repo/priv/repo/migrations/0001_init.exs")),
        msg(1, "assistant", call("Read", "r", file_path="/repo/_build/dev/priv/repo/migrations/0001_init.exs")),
        msg(2, "assistant", call("Write", "w", file_path="/repo/scripts/deploy.sh")),
        msg(3, "assistant", call("Bash", "b", command="ls")),
        msg(4, "tool", result("other/place/deploy.sh", "b")),
    ]
    report = facts.probe(seg, "Added 0001_init.exs; deploy.sh runs it.", cwd="/repo")
    kept = {f.key: f.kept for f in report.facts if f.kind == "path"}
    assert kept == {"priv/repo/migrations/0001_init.exs": True, "scripts/deploy.sh": True}
    # Named by its path relative to a repository root (the session ran elsewhere): kept as well.
    report = facts.probe(seg, "Added priv/repo/migrations/0001_init.exs.", cwd="/elsewhere")
    assert next(f for f in report.facts if f.key.endswith("priv/repo/migrations/0001_init.exs")).kept
    # A word that only contains the name is not the name.
    report = facts.probe(seg, "Added my0001_init.exs2 and deploy.shx.", cwd="/repo")
    assert not any(f.kept for f in report.facts if f.kind == "path")


def test_commands_are_normalized_and_split_into_lookups_and_actions():
    assert salience.normalize_command("cd /repo/app && mix test test/x_test.exs 2>&1 | tail -20") == "mix test test/x_test.exs"
    assert salience.normalize_command("git log --oneline -5 | head -3") == "git log --oneline -5"
    for cmd in ("mix test", "npm install highlight.js", "git commit -m x", "python manage.py migrate", "make build",
                "cd x && pytest -q", "bd close spotter-1", "uv pip install x"):
        assert salience.command_tier(cmd) == "A", cmd
    for cmd in ("ls -la", "git status", "cat README.md", "grep -r foo .", "bd show spotter-1", "gh issue view 17"):
        assert salience.command_tier(cmd) == "C", cmd
    assert salience.command_tier("cat a > b") == "B"  # writes a file: not a lookup
    seg = [msg(0, "assistant", call("Bash", command="cd /repo && mix test 2>&1 | tail -5")), msg(1, "assistant", call("Bash", command="git status"))]
    report = facts.probe(seg, "Ran `mix test`.")
    (action,) = [f for f in report.facts if f.kind == "command"]
    assert action.key == "mix test" and action.tier == "A" and action.kept
    assert [f.key for f in report.background if f.kind == "command"] == ["git status"]


def test_errors_come_from_error_results_and_headers_only():
    seg = [
        msg(0, "assistant", call("Bash", "b1", command="git log main..HEAD")),
        msg(1, "tool", result("fatal: ambiguous argument 'main..HEAD': unknown revision", "b1", error=True)),
        msg(2, "assistant", call("Read", "r", file_path="/repo/app.py")),
        msg(3, "tool", result("  10→    raise ValueError('bad')\n  11→error: str = ''\nValueError: not an error here", "r")),
        msg(4, "assistant", call("Bash", "b2", command="python app.py")),
        msg(5, "tool", result("Traceback (most recent call last):\n  File \"app.py\", line 3\nKeyError: 'user_id'", "b2")),
        msg(6, "assistant", call("Bash", "b3", command="mix compile")),
        msg(7, "tool", result("warning: unused variable\nerror: undefined function foo/1", "b3")),
    ]
    errors = {f.text: f for f in facts.extract(seg) if f.kind == "error"}
    assert set(errors) == {"fatal: ambiguous argument 'main..HEAD': unknown revision", "KeyError: 'user_id'",
                           "error: undefined function foo/1"}
    assert salience.ERROR_RE.search("fatal: not a git repository")  # the colon ends it: no \b needed after
    # Kept when the summary states its key terms, in other words too; lost when it does not.
    report = facts.probe(seg, "The lookup of user_id raised a KeyError, fixed. Checked main..HEAD: an ambiguous argument.")
    kept = {f.text: f.kept for f in report.facts if f.kind == "error"}
    assert kept == {"fatal: ambiguous argument 'main..HEAD': unknown revision": True, "KeyError: 'user_id'": True,
                    "error: undefined function foo/1": False}


def test_an_error_episode_is_one_fact_resolved_when_the_same_call_succeeds():
    seg = [
        msg(0, "assistant", call("Edit", "e1", file_path="/r/a.py")),
        msg(1, "tool", result("<tool_use_error>String to replace not found in file.</tool_use_error>", "e1", error=True)),
        msg(2, "assistant", call("Edit", "e2", file_path="/r/a.py")),
        msg(3, "tool", result("The file /r/a.py has been updated.", "e2")),
        msg(4, "assistant", call("Bash", "b1", command="git commit -m x")),
        msg(5, "tool", result("Exit code 1\nPre-commit failed: [LINT] line too long (131 > 130)", "b1", error=True)),
        msg(6, "assistant", call("Bash", "b2", command="git commit -m y")),
        msg(7, "tool", result("Exit code 1\nPre-commit failed: [LINT] line too long (135 > 130)", "b2", error=True)),
    ]
    errors = [f for f in facts.extract(seg) if f.kind == "error"]
    assert [(f.occurrences, f.resolved) for f in errors] == [(1, True), (2, False)]


def test_user_messages_are_facts_and_the_compaction_summary_is_not_user_text():
    seg = [
        msg(0, "user", text("This session is being continued from a previous conversation. Never touch prod. See old/file.py."), is_compact_summary=True),
        msg(1, "user", text("Rename the column in schema.ex (prefer id over uuid) and keep lib/app.ex as is.")),
        msg(2, "user", text("<command-name>/clear</command-name>")),
    ]
    found = facts.extract(seg)
    requests = [f for f in found if f.kind == "request"]
    assert [(f.position, f.tier) for f in requests] == [(1, "A")]
    constraints = [f.text for f in found if f.kind == "constraint"]
    # Not cut at the dot of a file name; nothing taken from the summary as the user's word.
    assert constraints == ["Rename the column in schema.ex (prefer id over uuid) and keep lib/app.ex as is."]
    assert tiers(found) == {"old/file.py": "C", "schema.ex": "A", "lib/app.ex": "A"}
    assert all(f.position >= 0 and f.tier in "ABC" for f in found)
    # The report keeps the data shape the pages and the API read.
    report = facts.probe(seg, "Rename the column in schema.ex; prefer id over uuid; keep lib/app.ex.")
    assert {"kind", "text", "key", "position", "turn", "kept", "how", "tier"} <= set(report.facts[0].as_dict())
    assert "background" in report.as_dict() and report.per_kind()["request"]["kept"] == 1

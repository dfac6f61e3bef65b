"""Fact probes on hand-made transcripts: what is extracted, linked to which turn, and kept when."""

from contextviewer.core import facts


def msg(position, turn, role, *blocks, is_meta=False):
    return {"position": position, "turn": turn, "role": role, "blocks": list(blocks), "is_meta": is_meta}


def text(t):
    return {"kind": "text", "text": t}


def call(name, **inp):
    return {"kind": "tool_call", "tool_name": name, "tool_input": inp, "text": str(inp), "tool_id": "t"}


def result(t, error=False):
    return {"kind": "tool_result", "text": t, "tool_id": "t", "is_error": "True" if error else ""}


SEGMENT = [
    msg(0, 0, "user", text("Fix the login bug. Never push to main directly. Use pnpm not npm.")),
    msg(1, 0, "assistant", {"kind": "thinking", "text": "secret_thought_function() in hidden/thinking.py"}),
    msg(2, 0, "assistant", call("Read", file_path="/repo/src/auth/login.py")),
    msg(3, 0, "user", result("def check_password(user):\n    ...")),
    msg(4, 0, "assistant", call("Bash", command="pytest tests/test_login.py -q")),
    msg(5, 0, "user", result("E   KeyError: 'session_id'\n1 failed in 0.42s", error=True)),
    msg(6, 1, "user", text("See https://example.com/docs/auth#tokens for the token format. The limit is 500 ms.")),
    msg(7, 1, "assistant", text("I'll use `validate_token()` from TokenStore instead of parsing by hand. The cache holds 128 MB.")),
]


def by(report, kind):
    return {f.text: f for f in report.facts if f.kind == kind}


def test_extracts_each_kind_with_its_turn_and_skips_thinking():
    found = facts.extract(SEGMENT)
    kinds = {(f.kind, f.text): (f.position, f.turn) for f in found}
    assert kinds[("path", "/repo/src/auth/login.py")] == (2, 0)
    assert kinds[("command", "pytest tests/test_login.py -q")] == (4, 0)
    assert kinds[("error", "E   KeyError: 'session_id'")] == (5, 0)
    assert kinds[("url", "https://example.com/docs/auth#tokens")] == (6, 1)
    assert kinds[("number", "500 ms")] == (6, 1)
    assert kinds[("number", "128 MB")] == (7, 1)
    assert kinds[("identifier", "validate_token")] == (7, 1)
    assert ("constraint", "Never push to main directly.") in kinds
    assert ("constraint", "Use pnpm not npm.") in kinds
    assert any(k == "decision" and "validate_token" in t for k, t in kinds)
    # Thinking is not what the summarizer reads.
    assert not any("secret_thought_function" in t or "hidden/thinking.py" in t for _, t in kinds)


def test_a_fact_is_kept_only_when_the_summary_states_it():
    summary = (
        "Goal: fix login in src/auth/login.py. Constraint: never push to main directly.\n"
        "Decision: use validate_token() from TokenStore rather than parsing by hand.\n"
        "Docs: https://example.com/docs/auth/. Latency limit 500ms. Tests run with pytest."
    )
    report = facts.probe(SEGMENT, summary, cwd="/repo")
    assert by(report, "path")["/repo/src/auth/login.py"].kept  # relative to the working directory
    assert by(report, "url")["https://example.com/docs/auth#tokens"].kept  # fragment and slash normalized
    assert by(report, "number")["500 ms"].kept  # "500ms" is the same number and unit
    assert not by(report, "number")["128 MB"].kept
    assert by(report, "constraint")["Never push to main directly."].kept
    assert not by(report, "constraint")["Use pnpm not npm."].kept
    # "pytest" alone is a word of the command, not the command.
    assert not by(report, "command")["pytest tests/test_login.py -q"].kept
    assert not by(report, "error")["E   KeyError: 'session_id'"].kept
    assert [f for f in report.facts if f.kind == "decision"][0].kept


def test_a_shared_word_does_not_keep_a_path_or_an_identifier():
    seg = [
        msg(0, 0, "user", text("Look at lib/billing/invoice.ex and call compute_total_amount() there.")),
    ]
    report = facts.probe(seg, "We looked at the invoice code and the total amount in lib/other/invoice.ex.")
    assert not by(report, "path")["lib/billing/invoice.ex"].kept
    assert not by(report, "identifier")["compute_total_amount"].kept
    report = facts.probe(seg, "Files: lib/billing/invoice.ex; compute_total_amount/1 computes it.")
    assert by(report, "path")["lib/billing/invoice.ex"].kept
    assert by(report, "identifier")["compute_total_amount"].kept


def test_errors_match_without_the_shell_prefix_and_case():
    seg = [msg(0, 0, "tool", result("Exit code 127\n/bin/bash: line 1: python: command not found", error=True))]
    report = facts.probe(seg, "Running it failed: PYTHON: command not found, so we used python3.")
    (error,) = [f for f in report.facts if f.kind == "error"]
    assert error.text == "python: command not found" and error.kept and error.how == "normalized"
    assert not [f for f in report.facts if f.kind == "path" and f.text == "/bin/bash"]


def test_retention_per_kind_overall_compression_and_lost_list():
    report = facts.probe(SEGMENT, "Nothing useful.", folded_tokens=9000, summary_tokens=300)
    per_kind = report.per_kind()
    # The file read and the test file the command runs.
    assert per_kind["path"] == {"total": 2, "kept": 0, "retention": 0.0}
    assert per_kind["url"]["total"] == 1
    assert report.retention == 0.0
    assert report.compression_ratio == 30.0
    assert len(report.lost) == len(report.facts) > 8
    empty = facts.probe([], "x")
    assert empty.retention is None and empty.per_kind()["decision"]["retention"] is None
    assert facts.probe([], "x", folded_tokens=10, summary_tokens=0).compression_ratio is None


def test_noise_is_not_taken_for_facts():
    seg = [msg(0, 0, "assistant", text("Version 1.2.3 on 2024/01/05, i.e. and/or e.g. Enum.map/2 and JavaScript."))]
    found = {(f.kind, f.text) for f in facts.extract(seg)}
    assert not [t for k, t in found if k == "path"]
    assert ("identifier", "JavaScript") not in found


def test_meta_messages_and_huge_outputs_are_bounded():
    big = "x" * (facts.MAX_TEXT * 5) + " /tail/never/seen.py"
    seg = [msg(0, 0, "user", text("always run make lint"), is_meta=True), msg(1, 0, "tool", result(big))]
    assert facts.extract(seg) == []
    many = [msg(i, i, "user", text(f"edit src/m{i}.py")) for i in range(facts.MAX_FACTS_PER_KIND + 50)]
    assert len([f for f in facts.extract(many) if f.kind == "path"]) == facts.MAX_FACTS_PER_KIND


def test_a_basename_keeps_a_path_only_when_no_other_path_of_the_segment_has_it():
    seg = [
        msg(0, 0, "assistant", call("Read", file_path="/repo/lib/app/otel.ex")),
        msg(1, 0, "assistant", call("Read", file_path="/repo/config/dev.exs")),
        msg(2, 0, "assistant", call("Read", file_path="/repo/test/dev.exs")),
        msg(3, 0, "assistant", call("Write", file_path="/repo/.dialyzerignore")),
    ]
    report = facts.probe(seg, "Created `otel.ex`; changed dev.exs and .dialyzerignore.", cwd="/repo")
    paths = {f.key: f for f in report.facts if f.kind == "path"}
    assert paths["lib/app/otel.ex"].kept and paths["lib/app/otel.ex"].how == "normalized"  # unique basename
    assert not paths["config/dev.exs"].kept and not paths["test/dev.exs"].kept  # two dev.exs: ambiguous
    assert paths[".dialyzerignore"].kept  # a file without an extension, named as written
    # A tail longer than the basename disambiguates; the relative path always does.
    report = facts.probe(seg, "Edited config/dev.exs.", cwd="/repo")
    kept = {f.key for f in report.facts if f.kind == "path" and f.kept}
    assert kept == {"config/dev.exs"}
    # Written as an absolute path in one place and relative in another, it is one fact.
    seg2 = seg + [msg(4, 1, "user", text("Look at lib/app/otel.ex again."))]
    assert [f.key for f in facts.extract(seg2, "/repo") if f.kind == "path"].count("lib/app/otel.ex") == 1


def test_a_bare_file_name_is_the_one_path_that_ends_with_it():
    seg = [
        msg(0, 0, "user", text("Check notify.sh please.")),
        msg(1, 0, "assistant", call("Read", file_path="/repo/plugin/scripts/notify.sh")),
    ]
    (path,) = [f for f in facts.extract(seg, "/repo") if f.kind == "path"]
    assert path.text == "/repo/plugin/scripts/notify.sh" and path.position == 0 and path.occurrences == 2


def test_directories_routes_and_slash_words_are_not_paths():
    seg = [
        msg(0, 0, "user", text(
            "Sessions are active/inactive/ended; blocks are message/type/tool. The route /api/v1/users "
            "and /api/hooks/tool-call return JSON. Look in lib/spotter/ and deps/opentelemetry_api/src/. "
            "Call Mix.env() and with_span/2-3. Files: lib/spotter/application.ex, build/Makefile, docs/Dockerfile."
        )),
        msg(1, 0, "assistant", call("Grep", pattern="otel", path="/repo/deps/opentelemetry")),
        msg(2, 0, "assistant", call("Bash", command="find spotter-plugin/scripts -name '*.sh'")),
        msg(3, 0, "assistant", call("Read", file_path="/repo/bin/server")),  # a file by the tool's contract
    ]
    paths = {f.key for f in facts.extract(seg, "/repo") if f.kind == "path"}
    assert paths == {"lib/spotter/application.ex", "build/Makefile", "docs/Dockerfile", "bin/server"}


def test_a_long_command_is_checked_by_its_head():
    body = "feat: add tracing\n\n" + "- a line of the commit message\n" * 20
    long_cmd = f'git add -A && git commit -m "{body}"'
    assert len(long_cmd) > facts.LONG_COMMAND
    seg = [msg(0, 0, "assistant", call("Bash", command=long_cmd)), msg(1, 0, "assistant", call("Bash", command=f"cat <<'EOF' > notes.txt\n{body}EOF"))]
    commands = [(f.key, f.text) for f in facts.extract(seg) if f.kind == "command"]
    # The heredoc's head is a bare `cat`: too short to say anything, so it is no fact.
    assert commands == [("git add -A && git commit -m", "git add -A && git commit -m …")]
    report = facts.probe(seg, "Committed with `git add -A && git commit -m` (feat: add tracing).")
    assert by(report, "command")["git add -A && git commit -m …"].kept
    assert not facts.probe(seg, "Committed the tracing work.").facts[0].kept
    # The head is cut on a word, at most HEAD_CHARS long.
    head = facts.command_head("python -m tool " + "--flag-number-x " * 40 + '"' + "x" * 400 + '"')
    assert head.startswith("python -m tool --flag-number-x") and len(head) <= facts.HEAD_CHARS and not head.endswith("-")


# --- properties -------------------------------------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_words = st.sampled_from(
    ["fix", "the", "parser", "src/app/models.py", "`load_config()`", "128 MB", "https://example.org/a/b",
     "never", "always", "use", "pnpm", "not", "npm", "I'll", "switch", "to", "uv", "README.md", "3.5s", "."]
)
_text = st.lists(_words, max_size=30).map(" ".join)
_message = st.tuples(st.sampled_from(["user", "assistant", "tool"]), _text, st.booleans())


def _as_messages(items):
    out = []
    for i, (role, t, error) in enumerate(items):
        block = result(t, error) if role == "tool" else text(t)
        out.append(msg(i, i // 3, role, block))
    return out


@settings(max_examples=150, deadline=None)
@given(st.lists(_message, max_size=12))
def test_a_summary_that_states_every_fact_keeps_every_fact(items):
    messages = _as_messages(items)
    found = facts.extract(messages)
    report = facts.probe(messages, "\n".join(f.text for f in found))
    assert [f.text for f in report.facts if not f.kept] == []
    assert all(not f.kept for f in facts.probe(messages, "").facts)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400), st.text(max_size=200))
def test_any_text_is_probed_without_error(segment_text, summary):
    report = facts.probe([msg(0, 0, "user", text(segment_text)), msg(1, 0, "tool", result(segment_text, True))], summary)
    assert report.retention is None or 0.0 <= report.retention <= 1.0
    assert all(f.kind in facts.KINDS for f in report.facts)

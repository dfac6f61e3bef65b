"""Issue 36, item 6: agents' own tools that were shown raw. deepagents' `execute` as a shell run (its
`[Command failed with exit code N]` trailer, its `[stderr] ` lines apart); Gemini CLI's
`update_topic` and `save_memory` as a short note, its `ask_user` as the questions and the answers;
a Codex shell result logged as JSON (a Windows session's CRLF) as the lines the command printed."""

from __future__ import annotations

import json

from contextviewer.viewer import tool_agents, tool_shell
from contextviewer.viewer.tool_display import tool_view

# --- deepagents' execute ----------------------------------------------------------------------


def test_deepagents_execute_is_a_shell_run_with_its_exit_code_and_stderr_apart():
    result = "6 passed\n[stderr] DeprecationWarning: old API\n[stderr] \n\n[Command failed with exit code 2]"
    view = tool_view("execute", {"command": "pytest -q", "timeout": 120}, result)
    assert view.kind == "bash" and view.command == "pytest -q"
    assert view.bash.exit_code == 2 and not view.bash.exit_unknown
    assert view.bash.stdout.strip() == "6 passed"
    assert view.bash.stderr == "DeprecationWarning: old API"
    assert not view.bash.combined and view.shows_result


def test_deepagents_execute_success_and_a_cut_output():
    view = tool_view("execute", {"command": "ls"}, "a.py\nb.py\n\n[Command succeeded with exit code 0]\n[Output was truncated due to size limits]")
    assert view.bash.exit_code == 0
    assert view.bash.stdout == "a.py\nb.py" and view.bash.stderr == ""
    assert "size limit" in view.bash.note
    assert "[Command" not in view.bash.stdout


def test_a_shell_output_that_only_mentions_stderr_is_left_alone():
    out = tool_agents.shell_output("[stderr] is how the log marks it\nno trailer here")
    assert out.exit_code is None and out.stderr == "" and out.output.startswith("[stderr]")


# --- Gemini CLI's notes -------------------------------------------------------------------------


def test_update_topic_is_a_note_with_its_title_intent_and_summary():
    args = {"title": "Fix the parser", "summary": "Read the **tests**; the empty case fails.", "strategic_intent": "Make parse() return []."}
    view = tool_view("update_topic", args, 'Current topic: "Fix the parser"\nTopic summary: ...')
    assert (view.kind, view.label, view.description, view.intent) == ("note", "topic", "Fix the parser", "Make parse() return [].")
    assert view.report == "Read the **tests**; the empty case fails."
    assert view.shows_result  # the result repeats the note: kept under "raw result"
    only_intent = tool_view("update_topic", {"strategic_intent": "Run the suite again."})
    assert (only_intent.kind, only_intent.label, only_intent.description, only_intent.intent) == ("note", "intent", "", "Run the suite again.")
    assert not only_intent.shows_result


def test_save_memory_is_a_note_of_the_fact_remembered():
    view = tool_view("save_memory", {"fact": "The user prefers tabs."}, '{"success":true,"message":"Okay, I\'ve remembered that."}')
    assert (view.kind, view.label, view.report) == ("note", "remembered", "The user prefers tabs.")
    failed = tool_view("save_memory", {"fact": "x"}, "Error: could not write GEMINI.md", True)
    assert failed.kind == "note" and not failed.shows_result  # an error stays in sight


# --- Gemini CLI's questions ---------------------------------------------------------------------

QUESTIONS = {"questions": [
    {"header": "Database", "question": "Which database?", "type": "choice",
     "options": [{"label": "PostgreSQL", "description": "server"}, {"label": "SQLite", "description": "a file"}]},
    {"header": "Name", "question": "The project's name?", "type": "text"},
]}  # fmt: skip


def test_ask_user_shows_each_question_its_options_and_the_answer_chosen():
    view = tool_view("ask_user", QUESTIONS, json.dumps({"answers": {"0": "SQLite", "1": "wombat"}}))
    assert view.kind == "ask" and view.shows_result and view.note == ""
    first, second = view.questions
    assert (first.header, first.text, first.answer) == ("Database", "Which database?", "SQLite")
    assert [(o.label, o.chosen) for o in first.options] == [("PostgreSQL", False), ("SQLite", True)]
    assert (second.header, second.answer, second.options) == ("Name", "wombat", [])


def test_ask_user_several_chosen_dismissed_or_not_answered_yet():
    multi = {"questions": [{"header": "Checks", "question": "Run which?", "multiSelect": True,
                            "options": [{"label": "lint"}, {"label": "tests"}, {"label": "types"}]}]}  # fmt: skip
    view = tool_view("ask_user", multi, '{"answers":{"0":"lint, types"}}')
    assert [o.chosen for o in view.questions[0].options] == [True, False, True]
    dismissed = tool_view("ask_user", QUESTIONS, "User dismissed ask_user dialog without answering.")
    assert dismissed.note == "dismissed without an answer" and all(q.answer is None for q in dismissed.questions)
    assert tool_view("ask_user", QUESTIONS, '{"answers":{}}').note == "submitted without an answer"
    pending = tool_view("ask_user", QUESTIONS)
    assert pending.kind == "ask" and not pending.shows_result and pending.questions[1].answer is None


# --- Codex's shell output logged as JSON ----------------------------------------------------------


def test_a_codex_result_logged_as_json_reads_as_its_output_with_lf_line_ends():
    logged = json.dumps({"output": "Python 3.12.4\r\n M src/a.py\r\n", "metadata": {"exit_code": 0, "duration_seconds": 0.4}})
    assert tool_shell.logged_output(logged) == "Python 3.12.4\n M src/a.py\n"
    assert tool_shell.logged_output('{"output": "x"}') is None  # not Codex's shape
    assert tool_shell.logged_output("plain text") is None
    view = tool_view("shell", {"command": ["powershell.exe", "-Command", "python --version"]}, logged)
    assert view.bash.stdout == "Python 3.12.4\n M src/a.py\n" and view.bash.exit_code == 0

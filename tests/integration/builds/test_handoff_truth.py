"""A builtin handoff states only what the log shows (issue 34, item 4), on real sessions of
../shared/fixtures read in place (skipped without them; tests/unit/test_handoff_truth.py always
runs the same rules on synthetic transcripts, paths with spaces and Windows paths included: no
session of the shared corpus has either).

Each session is imported and handed off through the real job (builds/handoffs.py, builtin
provider). Then every statement the checks below can read is checked against the raw log, read
here straight from the JSONL (not through the importer):

- a "Ran `…`" line is a command of a tool call whose result does not say it never ran (a
  `<tool_use_error>`, the user's rejection); a long one is a whole-word head of it, said with " …";
- "Files read" and "Files changed" name files of Read / Edit-Write calls whose result is no error;
- every listed path is written whole somewhere in the log (not only inside a longer word, after an
  escaped newline, or before a cut);
- a "Searched:" item is a search call of the log (tool, pattern, path); an "Error seen:" line is
  the message of a failed call of that tool;
- a line ends on a whole sentence: "…" only closes a command's head.

Hand-checked statements (read in the raw file with grep and a few lines of Python printing each
tool call with its result's is_error and first characters; line numbers are the file's):

marot/spotter 4d5611e5 (Claude Code 2.1.39, after its auto compaction; the view opens on the
compaction summary, line 755, isCompactSummary):
- "Ran `git push --set-upstream origin spotter-dov 2>&1`": the Bash call of line 1477.
- slice_builder.ex under Files changed: its Edits of lines 1291 and 1428, results (1302, 1438)
  without is_error.
- `cannot invoke remote function Access.get/2 inside a guard` is only in the compaction summary
  (line 755), in prose: the old handoff said "Ran" it (false); the old `s/waiting_summary/
  slice_builder.ex` and `priv/static/assets/spotter.cs` were pieces of paths at a transcript cut.
Mai0313/VibeCodingTracker, Claude Code 1.0.95:
- go.mod under Files changed: the Edit of line 18 was rejected by the user (line 19), the Edit of
  line 23 succeeded (line 24: "The file ... has been updated").
- "Ran `rm /home/wei/repo/claude-code/TODO.md`": the Bash call of line 45, result line 46 is_error false.
- No "Error seen": both is_error results (lines 19 and 62) are the user's rejections.
- The latest request was answered (line 81, "已完成！..."); the lines after it are the harness's
  (a caveat, `/exit` and its empty stdout, lines 82-84): not "Answer the latest request" (the old handoff said so).
d-kimuson/claude-code-viewer fe5e1c67 (Claude Code 1.0.98), the sub-agent asked to "Create the main
page layout" (sidechain lines):
- the Read of `/path/to/Demo/todo-app/src/components` (line 310) failed with EISDIR (line 311): not
  under Files read, an error with its message instead.
Mai0313/VibeCodingTracker, Codex (shell calls as ["bash", "-lc", script]):
- "Ran `ls -la`" (line 17) and "Ran `sed -n '1,200p' go.mod`" (line 24): the scripts the shell ran.
- `examples/claude_code_log.json` is named whole; the old `nexamples/claude_code_log.json` and
  `nREADME.zh-CN.md` were read across an escaped newline of an output (line 32: `3.10---\\nexamples/...`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from django.conf import settings

from contextviewer.builds import handoffs as handoff
from contextviewer.conversations.models import Conversation
from contextviewer.core import handoff as core
from contextviewer.ingest import files as ingest
from contextviewer.jobs import queue as jobs
from contextviewer.jobs.models import JobStatus
from tests.conftest import shared_fixtures_dir

pytestmark = [pytest.mark.django_db, pytest.mark.fixtures]

SPOTTER = "claude-code/marot__spotter__4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
CC_1_0_95 = "claude-code/Mai0313__VibeCodingTracker__test_conversation_claude_code.jsonl"
CC_SUBAGENTS = "claude-code/d-kimuson__claude-code-viewer__fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"
CODEX = "codex/Mai0313__VibeCodingTracker__test_conversation_codex.jsonl"

READ_TOOLS = {"Read", "NotebookRead"}
EDIT_TOOLS = {"Edit", "MultiEdit", "Write", "NotebookEdit"}


def _fixture(name: str) -> Path:
    root = shared_fixtures_dir()
    if root is None:
        pytest.skip(f"shared fixtures not found at {settings.FIXTURES_DIR} (set CONTEXTVIEWER_FIXTURES)")
    path = root / name
    if not path.is_file():
        pytest.skip(f"fixture {name} not found under {root}")
    return path


# --- the raw log, read here without the importer -------------------------------------------------

def _records(path: Path):
    """The records of the session file and of its sub-agents' files (Claude Code: <session>/subagents/)."""
    files = [path, *sorted((path.parent / path.stem / "subagents").glob("*.jsonl"))]
    for line in (ln for f in files for ln in f.read_text(encoding="utf-8").splitlines()):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            yield record


def _calls(path: Path) -> list[dict]:
    """Every tool call of the log: name, input, command, result text and is_error."""
    calls: dict[str, dict] = {}
    for r in _records(path):
        payload = r.get("payload") if isinstance(r.get("payload"), dict) else {}
        if payload.get("type") == "function_call":  # Codex
            try:
                args = json.loads(payload.get("arguments") or "{}")
            except ValueError:
                args = {}
            command = args.get("command") if isinstance(args, dict) else None
            if isinstance(command, list):
                command = command[2] if len(command) >= 3 and command[1] in ("-lc", "-c") else " ".join(command)
            calls[payload["call_id"]] = {"name": payload.get("name"), "input": args, "command": command, "result": None, "is_error": False}
        elif payload.get("type") == "function_call_output" and payload.get("call_id") in calls:
            calls[payload["call_id"]]["result"] = str(payload.get("output"))
        message = r.get("message") if isinstance(r.get("message"), dict) else {}
        content = message.get("content")
        for b in content if isinstance(content, list) else ():
            if not isinstance(b, dict):
                continue
            if b.get("type") == "tool_use":
                data = b.get("input") if isinstance(b.get("input"), dict) else {}
                calls[b["id"]] = {"name": b.get("name"), "input": data, "command": data.get("command") if b.get("name") == "Bash" else None,
                                  "result": None, "is_error": False}
            elif b.get("type") == "tool_result" and b.get("tool_use_id") in calls:
                result = b.get("content")
                calls[b["tool_use_id"]].update(result=result if isinstance(result, str) else json.dumps(result), is_error=bool(b.get("is_error")))
    return list(calls.values())


def _strings(value, out: list[str]) -> list[str]:
    """Every string of a record, and of the JSON written inside a string (Codex arguments, outputs)."""
    if isinstance(value, str):
        out.append(value)
        if value[:1] in "{[":
            try:
                _strings(json.loads(value), out)
            except ValueError:
                pass
    elif isinstance(value, dict):
        for v in value.values():
            _strings(v, out)
    elif isinstance(value, list):
        for v in value:
            _strings(v, out)
    return out


def _never_ran(call: dict) -> bool:
    result = call["result"] or ""
    return result.lstrip().startswith("<tool_use_error>") or "doesn't want to proceed" in result or "rejected by user" in result


def _written_whole(path: str, text: str) -> bool:
    for m in re.finditer(re.escape(path), text):
        left = text[m.start() - 1] if m.start() else " "
        right = text[m.end()] if m.end() < len(text) else " "
        if not re.match(r"[\w/\\.@~-]", left) and not re.match(r"[\w…]", right):
            return True
    return False


# --- the handoff -------------------------------------------------------------------------------

def _handoffs(project, path: Path) -> dict[str, str]:
    """The builtin handoff of every conversation of the file, by its first request."""
    ingest.import_path(project, path)
    out = {}
    for conv in Conversation.objects.filter(project=project).order_by("pk"):
        job, _ = handoff.start_handoff(conv, provider="builtin", enqueue=False)
        done = jobs.run(job.pk)
        assert done.status == JobStatus.SUCCEEDED, done.error
        out[core.parse_sections(done.result["summary"])["Goal"][:60]] = done.result["summary"]
    return out


def _listed(summary: str, label: str) -> list[str]:
    line = next((ln for ln in summary.split("\n") if ln.startswith(f"- {label}: ")), "")
    return re.findall(r"`([^`]+)`", line)


def _check_against_the_log(summary: str, path: Path) -> None:
    calls = _calls(path)
    ran = {" ".join(c["command"].split()) for c in calls if isinstance(c["command"], str) and c["result"] is not None and not _never_ran(c)}
    for line in summary.split("\n"):
        if line.startswith("- Ran `"):
            command = line[len("- Ran `") : -1]
            assert command in ran or (command.endswith(" …") and any(c.startswith(command[:-2]) for c in ran)), f"not a command that ran: {line}"
    for label, tools in (("Files read", READ_TOOLS), ("Files changed", EDIT_TOOLS)):
        for p in _listed(summary, label):
            assert any(c["name"] in tools and c["input"].get("file_path") == p and not c["is_error"] and c["result"] is not None for c in calls), \
                f"{label}: {p} has no successful call in the log"
    for line in summary.split("\n"):
        if line.startswith("- Searched: "):
            for search in line[len("- Searched: ") :].split("; "):
                assert any(f"{c['name']} {c['input'].get('pattern')!r}" + (f" in {c['input']['path']}" if c["input"].get("path") else "") == search
                           for c in calls if isinstance(c["input"], dict)), f"no such search in the log: {search}"
        if line.startswith("- Error seen: "):
            tool, _, message = line[len("- Error seen: ") :].partition(": ")
            message = re.sub(r" \(on `[^`]*`\)$", "", message)
            failed = [" ".join(re.sub(r"</?[a-z_]+>", "", c["result"] or "").split()) for c in calls if c["name"] == tool and c["is_error"]]
            assert any(message.rstrip("…") in r for r in failed), f"no failed {tool} call says: {message}"
    text = "\n".join(_strings(list(_records(path)), []))
    for label in ("Files read", "Files changed", "Paths mentioned"):
        for p in _listed(summary, label):
            assert _written_whole(p, text), f"{label}: {p} is not written whole in the log"
    for line in summary.split("\n"):
        assert not re.search(r"\w…", line), f"ends mid-phrase: {line[-120:]}"


# --- the sessions ------------------------------------------------------------------------------

def test_claude_code_2_1_after_its_compaction(project):
    path = _fixture(SPOTTER)
    summaries = _handoffs(project, path)  # the session and its sub-agents (subagents/ beside it)
    for summary in summaries.values():
        _check_against_the_log(summary, path)
    summary = next(s for goal, s in summaries.items() if goal.startswith("From the earlier summary"))
    assert "- Ran `git push --set-upstream origin spotter-dov 2>&1`" in summary
    assert "/home/USER/projects/spotter-worktrees/spotter-dov/lib/spotter/services/waiting_summary/slice_builder.ex" in _listed(summary, "Files changed")
    assert not any("cannot invoke remote function" in ln for ln in summary.split("\n") if ln.startswith("- Ran"))
    for piece in ("`s/waiting_summary/slice_builder.ex`", "`priv/static/assets/spotter.cs`"):
        assert piece not in summary


def test_claude_code_1_0_a_rejected_edit_then_a_successful_one(project):
    path = _fixture(CC_1_0_95)
    (summary,) = _handoffs(project, path).values()
    _check_against_the_log(summary, path)
    assert "/home/wei/repo/claude-code/go.mod" in _listed(summary, "Files changed")
    assert "- Ran `rm /home/wei/repo/claude-code/TODO.md`" in summary
    assert "Error seen" not in summary  # the two is_error results are the user's rejections
    assert "- Latest request (see Last state for where it stands): 不對 幫我查一下pydantic文檔的Field用法 整理成markdown保存" in summary
    assert "Answer the latest request" not in summary


def test_claude_code_sub_agents_a_failed_read_is_no_read(project):
    path = _fixture(CC_SUBAGENTS)
    summaries = _handoffs(project, path)
    assert len(summaries) >= 2  # the main session and its sub-agents
    for summary in summaries.values():
        _check_against_the_log(summary, path)
    layout = next(s for goal, s in summaries.items() if goal.startswith("Create the main page layout"))
    assert "/path/to/Demo/todo-app/src/components" not in _listed(layout, "Files read")
    assert "- Error seen: Read: EISDIR: illegal operation on a directory, read (on `/path/to/Demo/todo-app/src/components`)" in layout


def test_codex_shell_scripts_are_the_commands_and_paths_stay_whole(project):
    path = _fixture(CODEX)
    (summary,) = _handoffs(project, path).values()
    _check_against_the_log(summary, path)
    assert "- Ran `ls -la`" in summary and "- Ran `sed -n '1,200p' go.mod`" in summary
    assert "examples/claude_code_log.json" in _listed(summary, "Paths mentioned")
    for piece in ("nexamples/claude_code_log.json", "nREADME.zh-CN.md", "ncore/telemetry/parser.go"):
        assert f"`{piece}`" not in summary

"""`manage.py formats` lists every registered format (docs/importing.md's list is checked against it) and
says which format claims a path."""

import io
import json
import re
from pathlib import Path

import pytest
from django.core.management import call_command

from contextviewer.importers import formats
from tests.sessions import session_lines, write_lines

IMPORTING_DOC = Path(__file__).resolve().parents[3] / "docs" / "importing.md"

def test_it_lists_every_format_with_where_its_agent_writes_logs():
    out = io.StringIO()
    call_command("formats", "--json", stdout=out)
    rows = json.loads(out.getvalue())
    assert [r["name"] for r in rows] == [f.name for f in formats.registry()]
    assert all(r["where"] for r in rows)


def test_list_names_each_format_with_its_folder_among_them_the_agents_checked_by_their_own_cli():
    out = io.StringIO()
    call_command("formats", "--list", stdout=out)
    lines = out.getvalue().splitlines()
    assert len(lines) == len(formats.registry())
    # Issue 39's agents whose own CLI ran here, each named with where it writes its logs.
    for label, folder in (("GitHub Copilot CLI (copilot)", "~/.copilot/session-state"), ("Kimi CLI (kimi)", "~/.kimi/sessions"),
                          ("Mistral Vibe (vibe)", "~/.vibe/logs/session"), ("gptme (gptme)", "gptme/logs")):
        assert any(line.startswith(label + ":") and folder in line for line in lines), (label, lines)


def test_it_says_which_format_claims_a_path(tmp_path):
    write_lines(tmp_path / "s.jsonl", session_lines(1))
    (tmp_path / "notes.txt").write_text("hello\n")
    out = io.StringIO()
    call_command("formats", str(tmp_path / "s.jsonl"), str(tmp_path / "notes.txt"), "--json", stdout=out)
    rows = json.loads(out.getvalue())
    assert rows[0]["format"] == "claude-code" and rows[0]["refusal"] is None
    assert rows[1]["format"] is None and "not a format contextviewer reads" in rows[1]["refusal"]
def test_the_importing_doc_lists_every_registered_format():
    section = IMPORTING_DOC.read_text(encoding="utf-8").split("\n## Formats\n", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"^\| `([a-z0-9-]+)` \|", section, flags=re.M))
    assert listed == {f.name for f in formats.registry()}


@pytest.mark.django_db
def test_a_folder_is_answered_file_by_file_as_import_reads_it(tmp_path, project):
    """`formats FOLDER` says what `import FOLDER` does (issue 20, item 4): which format reads each
    session's files, sub-agents and compaction runs included, and which files are skipped and why."""
    from contextviewer.importers.codex import synthetic as codex_synthetic
    from contextviewer.importers.claude_code import synthetic
    from contextviewer.ingest import files as ingest

    folder = tmp_path / "logs"
    rollouts = [codex_synthetic.write_rollout(folder / "codex", target_bytes=40_000, seed=s) for s in (1, 2)]
    main = synthetic.write_session(folder / "claude" / "-home-dev-app", messages=80, seed=1)
    subagents = sorted(str(p) for p in (main.parent / main.stem / "subagents").glob("agent-*.jsonl"))
    meta = sorted(str(p) for p in (main.parent / main.stem / "subagents").glob("*.meta.json"))
    (folder / "notes.txt").write_text("what I did today\n")
    assert len(subagents) == 2 and len(meta) == 1  # the Task sub-agent and the compaction run

    out = io.StringIO()
    call_command("formats", str(folder), "--json", stdout=out)
    (row,) = json.loads(out.getvalue())
    assert row["refusal"] is None
    mains = {s["main"]: s for s in row["sessions"]}
    assert set(mains) == {str(p) for p in rollouts} | {str(main)}
    assert all(mains[str(p)]["format"] == "codex" for p in rollouts)
    claude = mains[str(main)]
    assert claude["format"] == "claude-code"
    assert sorted(s["path"] for s in claude["subagents"]) == subagents
    assert {Path(s["path"]).name.startswith("agent-acompact-"): s["compaction"] for s in claude["subagents"]} == {
        True: True, False: False}
    # The sub-agent's .meta.json (its agent type) is read with it, not skipped.
    assert [c for s in claude["subagents"] for c in s["read_with"]] == meta
    skipped = {s["path"]: s["reason"] for s in row["skipped"]}
    assert set(skipped) == {str(folder / "notes.txt")}
    assert "a text file starting 'what I did today'" in skipped[str(folder / "notes.txt")]

    # The same answer as the import itself: every file it names is read, the skipped ones are not.
    report = ingest.import_path(project, folder)
    assert {f.path for f in report.files if f.status == "imported"} == {str(p) for p in rollouts} | {str(main), *subagents}
    assert {s["path"] for s in report.skipped} == set(skipped)

    text = io.StringIO()
    call_command("formats", str(folder), stdout=text)
    said = text.getvalue()
    assert "not a format contextviewer reads" not in said.splitlines()[0]
    assert f"{folder}: a folder; import reads 3 sessions from 5 files, skips 1" in said
    assert f"  {main}: claude-code" in said and f"  {rollouts[0]}: codex" in said


def test_a_folder_nothing_reads_is_refused_as_import_refuses_it(tmp_path):
    (tmp_path / "notes.txt").write_text("hello\n")
    out = io.StringIO()
    call_command("formats", str(tmp_path), "--json", stdout=out)
    (row,) = json.loads(out.getvalue())
    assert row["sessions"] == [] and row["refusal"].startswith("no session log in this folder: notes.txt")

"""Roo Code's and Kilo Code's VS Code task folders (issue 39): Cline's task folders (the same files, read
by importers/cline/parser.py), named after the extension whose globalStorage folder they lie in:
``rooveterinaryinc.roo-cline/tasks/<id>/`` (Roo Code's package.json: publisher RooVeterinaryInc, name
roo-cline) and ``kilocode.kilo-code/tasks/<id>/`` (Kilo Code's: publisher kilocode, name kilo-code). The
task folders are tests/cline_folders.py's, built from the extensions' types; what each holds is counted
there while writing, not by reading it back."""

from __future__ import annotations

from pathlib import Path

import pytest

from contextviewer.core.records import BadLine, FoldRecord, MessageRecord, UsageRecord
from contextviewer.importers import formats
from contextviewer.importers.formats import ParseInput
from contextviewer.ingest import watch
from tests.cline_folders import make_task
from tests.importers import of

STORAGE = {"roo-code": "rooveterinaryinc.roo-cline", "kilo-code": "kilocode.kilo-code"}


def tasks_of(root: Path, agent: str) -> Path:
    return root / ".config" / "Code" / "User" / "globalStorage" / STORAGE[agent] / "tasks"


@pytest.mark.parametrize("agent", ["roo-code", "kilo-code"])
def test_a_task_folder_in_the_extension_folder_is_the_extension_s(tmp_path, agent):
    written = make_task(tasks_of(tmp_path, agent), "roo", condense=True)
    fmt = formats.claim(written.folder)
    assert fmt is not None and fmt.name == agent
    assert fmt.label == {"roo-code": "Roo Code", "kilo-code": "Kilo Code"}[agent]
    # One of its files names the folder too; the folder of tasks (as `watch auto` looks in it) finds it.
    assert formats.claim(written.folder / "ui_messages.json").name == agent
    found = formats.discover(tasks_of(tmp_path, agent).parent.parent)
    assert [(s.format, s.main) for s in found.sessions] == [(agent, written.folder)]
    records = list(fmt.parse(ParseInput(path=written.folder)))
    assert not of(records, BadLine)
    # As written: one call per request, the condense one fold, every history message kept.
    assert len(of(records, UsageRecord)) == len(written.requests)
    assert len(of(records, FoldRecord)) == written.summaries == 1
    assert len([m for m in of(records, MessageRecord) if m.subtype != "compact_boundary"]) == len(written.history)


def test_the_same_folder_elsewhere_stays_cline_s(tmp_path):
    written = make_task(tmp_path / "tasks", "roo", condense=True)
    assert formats.claim(written.folder).name == "cline"
    cline = make_task(tmp_path / ".config" / "Code" / "User" / "globalStorage" / "saoudrizwan.claude-dev" / "tasks", "cline")
    assert formats.claim(cline.folder).name == "cline"


def test_watch_auto_looks_in_the_extensions_folders(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    for agent in STORAGE:
        make_task(tasks_of(tmp_path, agent), "roo")
    found = [str(p) for p in watch.auto_folders()]
    assert str(tasks_of(tmp_path, "roo-code")) in found and str(tasks_of(tmp_path, "kilo-code")) in found


def test_a_broken_file_is_said_and_the_other_task_is_kept(tmp_path):
    tasks = tasks_of(tmp_path, "roo-code")
    broken = make_task(tasks, "roo", task_id="0199a1b2-broken")
    kept = make_task(tasks, "roo", task_id="0199a1b2-kept")
    (broken.folder / "ui_messages.json").write_text('[{"ts": 1,')
    fmt = formats.get("roo-code")
    bad = of(list(fmt.parse(ParseInput(path=broken.folder))), BadLine)
    assert bad and any("ui_messages.json" in b.reason for b in bad)
    records = list(fmt.parse(ParseInput(path=kept.folder)))
    assert not of(records, BadLine) and len(of(records, UsageRecord)) == len(kept.requests)
    assert sorted(s.main.name for s in formats.discover(tasks).sessions) == ["0199a1b2-broken", "0199a1b2-kept"]


def test_the_task_folders_tools_read_as_people_read_them():
    """A task folder's calls (tests/cline_folders.py's STEPS, the shapes of the extensions' source)
    get the shell, read and search views; a SEARCH/REPLACE diff keeps the generic view."""
    from contextviewer.viewer.tool_agents import normalize

    from tests.cline_folders import STEPS

    views = {name: normalize(name, args) for name, args, _result in STEPS}
    assert views["execute_command"] == ("Bash", {"command": "git diff --stat", "description": "", "workdir": ""})
    assert views["read_file"][0] == "Read" and views["read_file"][1]["file_path"] == "tests/test_utils.py"
    assert views["search_files"] == ("Search", {"pattern": "add\\(", "path": "src"})
    assert normalize("write_to_file", {"path": "a.py", "content": "x = 1\n"})[0] == "Write"
    assert normalize("list_files", {"path": "src", "recursive": True})[0] == "Search"
    assert views["replace_in_file"] is None

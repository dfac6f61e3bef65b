"""Formats loaded on demand: sniffing a path imports the light entries (importers/<format>/entry.py) and
only the module of the format that claims it; the light entries say what the full formats say."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from contextviewer.importers import formats
from tests.integration.ingest.test_every_format import SAMPLES

ROOT = Path(__file__).resolve().parents[2]
# In a fresh interpreter (nothing imported before): what discovering the path loaded.
DISCOVER = """
import json, sys
from contextviewer.importers import formats
found = formats.discover(sys.argv[1])
refused = formats.refusal(found.skipped[0][0]) if found.skipped and not found.sessions else ""
print(json.dumps({"formats": sorted({s.format for s in found.sessions}), "refused": refused,
                  "modules": sorted(m for m in sys.modules if m.startswith("contextviewer.importers."))}))
"""
MODULES = {entry.name: entry.module for entry in formats.entries()}


def _discover_alone(path: Path) -> dict:
    done = subprocess.run([sys.executable, "-c", DISCOVER, str(path)], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _langgraph_db(tmp: Path, fx) -> Path:
    # The tables and columns LangGraph's SqliteSaver makes: all the sniff looks at (no rows needed).
    path = tmp / "checkpoints.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, "
                   "checkpoint, metadata)")
        db.execute("CREATE TABLE writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value)")
    db.close()
    return path


CASES = [(s.id, s.agent, s.write) for s in SAMPLES if not s.fixture and s.agent != "langgraph"]
CASES.append(("langgraph", "langgraph", _langgraph_db))  # the sample runs real graphs: a bare database is enough here


@pytest.mark.parametrize(("agent", "write"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_discovering_a_file_imports_only_the_module_of_the_format_that_claims_it(tmp_path, agent, write):
    path = write(tmp_path, None)
    found = _discover_alone(path)
    assert found["formats"] == [agent]
    assert MODULES[agent] in found["modules"]
    others = sorted(m for name, m in MODULES.items() if name != agent and m in found["modules"])
    assert others == [], f"discovering a {agent} file imported {others}"
    if agent not in ("crush", "opencode-go"):  # their reader, shared: the sniff is in charm/store.py
        assert "contextviewer.importers.charm.db" not in found["modules"]


def test_a_file_no_format_reads_is_refused_without_importing_any_format(tmp_path):
    path = tmp_path / "notes.jsonl"
    path.write_text('{"ts": 1, "event": "Stop"}\n')
    found = _discover_alone(path)
    assert found["formats"] == []
    # The refusal lists every format by its label, from the light entries.
    assert found["refused"].endswith(f"not a format contextviewer reads ({formats.labels()})")
    assert [m for m in MODULES.values() if m in found["modules"]] == []


@pytest.mark.parametrize("entry", formats.entries(), ids=lambda e: e.name)
def test_each_light_entry_says_what_its_full_format_says(entry):
    fmt = entry.load()
    assert fmt is formats.get(entry.name)
    for field in ("name", "label", "storage", "sniff", "where", "extensions", "locations"):
        assert getattr(fmt, field) == getattr(entry, field), f"{entry.name}: {field} differs"


def test_the_registry_loads_every_format_in_the_entries_order():
    assert [f.name for f in formats.registry()] == [e.name for e in formats.entries()]
    assert len({e.name for e in formats.entries()}) == len(formats.REGISTRY)


def test_what_the_upload_page_and_refusals_read_is_the_same_from_the_entries(monkeypatch):
    full = (formats.labels(), formats.upload_extensions(), formats.default_name(),
            [formats.label(f.name) for f in formats.registry()])
    assert formats._REGISTRY is not None  # computed from the loaded formats above
    monkeypatch.setattr(formats, "_REGISTRY", None)  # from the light entries now
    light = (formats.labels(), formats.upload_extensions(), formats.default_name(),
             [formats.label(e.name) for e in formats.entries()])
    assert light == full
    assert formats.harness(formats.default_name()) is formats.harnesses()[formats.default_name()]

"""`manage.py formats` lists every registered format (the README's list is checked against it) and
says which format claims a path."""

import io
import json
import re
from pathlib import Path

from django.core.management import call_command

from contextviewer.importers import formats
from tests.sessions import session_lines, write_lines

README = Path(__file__).resolve().parents[2] / "README.md"

def test_it_lists_every_format_with_where_its_agent_writes_logs():
    out = io.StringIO()
    call_command("formats", "--json", stdout=out)
    rows = json.loads(out.getvalue())
    assert [r["name"] for r in rows] == [f.name for f in formats.registry()]
    assert all(r["where"] for r in rows)


def test_it_says_which_format_claims_a_path(tmp_path):
    write_lines(tmp_path / "s.jsonl", session_lines(1))
    (tmp_path / "notes.txt").write_text("hello\n")
    out = io.StringIO()
    call_command("formats", str(tmp_path / "s.jsonl"), str(tmp_path / "notes.txt"), "--json", stdout=out)
    rows = json.loads(out.getvalue())
    assert rows[0]["format"] == "claude-code" and rows[0]["refusal"] is None
    assert rows[1]["format"] is None and "not a format contextviewer reads" in rows[1]["refusal"]
def test_the_readme_lists_every_registered_format():
    section = README.read_text(encoding="utf-8").split("## Formats", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"^\| `([a-z0-9-]+)` \|", section, flags=re.M))
    assert listed == {f.name for f in formats.registry()}

"""`manage.py agents check` as a user runs it (issue 33, item 6): per agent and version, a row with its
main calls, folds and result, the differences under it, exit 0 when every agent passes; an unknown
agent is refused with the known ones. Codex is the quickest real run (about 5 s)."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from contextviewer.conversations.models import Conversation
from ops.drivers.pins import PINS
from ops.management.commands.agents import latest_extras

pytestmark = pytest.mark.django_db


def test_the_check_prints_a_row_per_agent_and_leaves_no_project_behind():
    if PINS["codex"].missing():
        pytest.skip(PINS["codex"].missing())
    out = StringIO()
    call_command("agents", "check", "--agent", "codex", stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[0].split() == ["agent", "version", "main", "calls", "folds", "seconds", "result"]
    row = lines[1].split()
    assert row[0] == "codex" and row[1] == PINS["codex"].version and int(row[2]) >= 8 and row[3] == "1" and row[-1] == "pass"
    assert lines[-1].endswith("1 of 1 pass")
    assert not Conversation.objects.exists()  # the throw-away project is gone (--keep keeps it)


def test_an_unknown_agent_is_refused_with_the_known_ones():
    with pytest.raises(CommandError, match=r"no driver for nope; known: .*codex"):
        call_command("agents", "check", "--agent", "nope")


def test_latest_installs_each_platform_binary_at_a_release_it_has():
    """--latest took the shim's newest version for its platform binary too: Droid's shim 0.225.1 has its
    linux-x64 binary at 0.225.2 only, so `npm install` failed (ETARGET) and the row said "not
    installed". A binary with no release of the shim's version is taken at its own newest, with a
    note; one that has it stays with it. The registry's answers as npm gave them on 2026-12-07."""
    published = {"@factory/cli-linux-x64": "0.225.2", "@factory/cli-linux-x64@0.225.2": "0.225.2",
                 "@kilocode/cli-linux-x64": "7.7.9", "@kilocode/cli-linux-x64@7.7.7": "7.7.7"}

    def view(spec: str) -> str:
        return published.get(spec, "")

    assert latest_extras(PINS["droid"], "0.225.1", view) == (
        ("@factory/cli-linux-x64@0.225.2",),
        "@factory/cli-linux-x64 has no 0.225.1: its newest, 0.225.2, installed beside it",
    )
    assert latest_extras(PINS["kilo"], "7.8.1", view) == (
        ("@kilocode/cli-linux-x64@7.7.9",),
        "@kilocode/cli-linux-x64 has no 7.8.1: its newest, 7.7.9, installed beside it",
    )
    assert latest_extras(PINS["kilo"], "7.7.7", view) == (("@kilocode/cli-linux-x64@7.7.7",), "")
    assert latest_extras(PINS["codex"], "0.171.0", view) == ((), "")

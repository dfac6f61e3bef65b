"""`manage.py agents check` as a user runs it (issue 33, item 6): per agent and version, a row with its
main calls, folds and result, the differences under it, exit 0 when every agent passes; an unknown
agent is refused with the known ones. Codex is the quickest real run (about 5 s)."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from contextviewer.conversations.models import Conversation
from ops.drivers.pins import PINS

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

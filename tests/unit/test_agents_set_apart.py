"""`agents check` says on an agent's row what the check set apart because the agent's files cannot
hold it, from what the driver's Run names (ops/drivers/*.py; the conformance tests assert the same)."""

from __future__ import annotations

from types import SimpleNamespace

from ops.drivers import droid, hermes
from ops.management.commands.agents import set_apart


def test_a_row_names_what_its_files_cannot_hold():
    assert set_apart(SimpleNamespace(unrecorded=frozenset(), after_fold_ignores=None)) == ""
    assert set_apart(SimpleNamespace(unrecorded=hermes.UNRECORDED, after_fold_ignores=None)) == (
        "set apart (not in its files): tokens_after, tokens_before")
    assert set_apart(SimpleNamespace(unrecorded=droid.UNRECORDED, after_fold_ignores=droid.re_rendered)) == (
        "set apart (not in its files): tokens_after, tokens_before, re-rendered texts after a fold")


def test_droid_sets_apart_its_re_rendered_reminders_only():
    assert droid.re_rendered("  <system-reminder>\nTools you can use: ...</system-reminder>")
    assert not droid.re_rendered("<system-reminder>User system info: linux, /home/dev</system-reminder>")
    assert not droid.re_rendered("cv-prompt-1: list the files in this project")

"""`manage.py import` as a person runs it: its output arrives whole and its exit code is right,
although the process ends without the interpreter's teardown (manage.py _exit)."""

import json
import subprocess
import sys

import pytest

from contextviewer.conversations.models import Conversation
from tests.sessions import session_lines, write_lines
from tests.worker import ROOT, worker_env


def _manage(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in worker_env().items() if k != "PYTHONUNBUFFERED"}  # buffered, as in a pipe
    return subprocess.run([sys.executable, str(ROOT / "manage.py"), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.django_db(transaction=True)
def test_import_prints_its_whole_result_and_stores_everything(tmp_path):
    path = tmp_path / "s.jsonl"
    write_lines(path, session_lines(40))  # a result line longer than a pipe's buffer
    done = _manage("import", str(path), "--project", "Cli", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)  # cut output would not parse
    assert [c["messages"] for c in result["conversations"]] == [40 * 5]
    assert Conversation.objects.get(project__name="Cli").messages.count() == 40 * 5
    assert "Traceback" not in done.stderr and "hostname" not in done.stderr


@pytest.mark.django_db(transaction=True)
def test_import_failures_keep_their_exit_codes(tmp_path):
    missing = _manage("import", str(tmp_path / "missing.jsonl"), "--json")
    assert missing.returncode != 0
    assert "missing.jsonl" in missing.stdout + missing.stderr
    usage = _manage("import")  # no path: argparse's usage error
    assert usage.returncode == 2 and "paths" in usage.stderr

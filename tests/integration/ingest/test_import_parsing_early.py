"""`manage.py import` forks its parsing process before Django loads (ingest/early.py): that process
loads the tokenizer and counts, on the other core, while the command sets Django up. What a person
gets is unchanged: the same counts (tiktoken o200k, exactly) as an import anywhere else; and the
command's own process never loads the tokenizer, nor a parser of another format, for a small file."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from contextviewer.accounts.services import get_or_create_project
from contextviewer.conversations.models import Message
from contextviewer.core import tokens
from contextviewer.importers import formats
from contextviewer.importers.formats import ParseInput
from contextviewer.ingest import child, early, files as ingest, prepare
from tests.sessions import session_lines, write_lines
from tests.worker import ROOT, worker_env

# manage.py as a person runs it, and at its exit (manage.py runs the exit handlers before it ends)
# what the command's own process had loaded.
RUN = """
import atexit, json, runpy, sys
def loaded():
    names = sorted(m for m in sys.modules if m == "tiktoken" or m.startswith("contextviewer.importers."))
    print("LOADED " + json.dumps(names), file=sys.stderr)
atexit.register(loaded)
sys.argv = ["manage.py", *sys.argv[1:]]
runpy.run_path("manage.py", run_name="__main__")
"""


def _counts(project) -> list[tuple]:
    rows = Message.objects.filter(conversation__project=project).order_by("conversation__external_id", "position")
    return list(rows.values_list("conversation__external_id", "position", "token_total", "tokens"))


@pytest.mark.django_db(transaction=True)
def test_the_import_command_counts_in_its_parsing_process_the_same_tokens(tmp_path):
    path = tmp_path / "s.jsonl"
    write_lines(path, session_lines(6))
    done = subprocess.run([sys.executable, "-c", RUN, "import", str(path), "--project", "Cli", "--json"], cwd=ROOT,
                          env=worker_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert [c["messages"] for c in json.loads(done.stdout)["conversations"]] == [6 * 5]
    loaded = json.loads(done.stderr.split("LOADED ", 1)[1].splitlines()[0])
    assert "tiktoken" not in loaded  # counted in the parsing process
    parsers = {e.module for e in formats.entries()}
    assert sorted(parsers & set(loaded)) == ["contextviewer.importers.claude_code.parser"]

    ingest.import_path(get_or_create_project("Here"), path)  # in this process, as a worker does
    cli = _counts(get_or_create_project("Cli"))
    assert cli == _counts(get_or_create_project("Here"))
    assert sum(row[2] for row in cli) > 0


@pytest.mark.parametrize("writer_counts", [False, True])
def test_the_early_parsing_process_gives_the_records_prepared_here(tmp_path, monkeypatch, writer_counts):
    """Counted there whole (the writer has no encoding), or left to the writer batch by batch when
    it has one and waits: the same prepared records as preparing them in this process."""
    monkeypatch.setattr(tokens, "_PRELOAD_DEFERRED", False)  # fork_parsing defers this process's preload
    monkeypatch.setattr(prepare, "PREPARE_BATCH", 7)  # several batches
    path = tmp_path / "s.jsonl"
    write_lines(path, session_lines(8))
    fmt = formats.claim(path)
    with open(path, "rb") as stream:
        expected = prepare.prepare_batch(list(fmt.parse(ParseInput(path=path, stream=stream))))

    early.fork_parsing([str(path)], child.serve_early)
    with child.parsing() as process:
        assert process.forks == 1 and len(process.tally.map) > early.WRITER_COUNTS  # the early process, taken over
        if writer_counts:
            process._writer_counts()
        got = list(process.parse(fmt.name, ParseInput(path=path)))
    assert early.take() is None
    assert _comparable(got) == _comparable(expected)
    assert sum(m.token_total for m in got if isinstance(m, prepare.PreparedMessage)) > 0


def _comparable(records: list) -> list:
    return [r._replace(secret_values=None) if isinstance(r, prepare.PreparedMessage) else repr(r) for r in records]

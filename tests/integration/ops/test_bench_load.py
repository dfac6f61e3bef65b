"""`manage.py bench load`: a bounded run of concurrent readers against a server it starts itself.

No timing is asserted (the figures go in the README); the test checks that the run happens, ends
by itself, prints the three figures for every page a reader opens, and leaves nothing behind:
no server listening, no scratch folder.
"""

from __future__ import annotations

import re
import socket
import tempfile
from io import StringIO

from django.core.management import call_command

PAGES = ("conversation", "turn", "segment", "index", "search")


def test_bench_load_prints_p50_p95_and_errors(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the scratch folder goes here
    out = StringIO()
    call_command("bench", "load", "--clients", "2", "--seconds", "3", "--messages", "2000", stdout=out)
    text = out.getvalue()

    figures = re.search(r"^p50 (\d+) ms  p95 (\d+) ms  errors (\d+)", text, re.M)
    assert figures, text
    p50, p95, errors = map(int, figures.groups())
    assert p50 <= p95
    assert errors == 0, text  # every page answered 200 to the signed-in reader

    run = re.search(r"^2 clients, [\d.]+ s, (\d+) requests", text, re.M)
    assert run and int(run.group(1)) >= len(PAGES), text
    per_page = re.search(r"^per page \(p50/p95 ms\): (.*)$", text, re.M)
    assert per_page, text
    for page in PAGES:
        assert re.search(rf"\b{page} \d+/\d+", per_page.group(1)), (page, text)

    # The conversation served is the size asked for (the generator ends the turn it is in).
    messages = int(re.search(r"^conversation: ([\d,]+) messages", text, re.M).group(1).replace(",", ""))
    assert messages >= 2000

    # The server it started on 127.0.0.1 is stopped, and its scratch folder is gone.
    port = int(re.search(r"--bind 127\.0\.0\.1:(\d+)", text).group(1))
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", port)) != 0
    assert list(tmp_path.iterdir()) == []


def test_bench_load_takes_a_port_and_refuses_one_in_use(tmp_path, monkeypatch):
    import pytest
    from django.core.management.base import CommandError

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(CommandError, match=f"port {port} is in use"):
            call_command("bench", "load", "--clients", "1", "--seconds", "1", "--messages", "50", "--port", str(port), stdout=StringIO())

"""`manage.py bench import --file F` measures F (and its own sub-agent files), not every session
file that happens to share F's folder (issue 23: a 55 MB file was reported as 102.8 MB)."""

from __future__ import annotations

import re
from io import StringIO

from django.core.management import call_command

from contextviewer.importers.claude_code import synthetic


def test_bench_import_file_measures_that_file_only(tmp_path):
    folder = tmp_path / "sessions"
    small = synthetic.write_session(folder, target_bytes=200_000, seed=3)
    big = synthetic.write_session(folder, target_bytes=1_500_000, seed=4)
    assert small.parent == big.parent and small != big
    own = [small, *sorted(small.with_suffix("").rglob("*.jsonl"))]
    expected_mb = sum(p.stat().st_size for p in own) / 1e6

    out = StringIO()
    call_command("bench", "import", "--file", str(small), "--repeat", "1", stdout=out)
    text = out.getvalue()
    size = re.search(r"^file: +([\d.]+) MB", text, re.M)
    assert size, text
    assert float(size.group(1)) == round(expected_mb, 1), text
    assert "one thread" in text  # the floor says what it is

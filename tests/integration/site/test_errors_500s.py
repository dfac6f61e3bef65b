"""Issue 40, item 4: the 500s under restart, load and a lost database. Each answers a clear page or
a clear API error, and the next request works."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

# A fresh interpreter (a web process just restarted): the first thread to highlight code is held
# inside pygments' formatter package while it loads; a second thread renders meanwhile.
_FIRST_RENDERS = textwrap.dedent(
    """
    import importlib.abc, sys, threading, time
    entered = threading.Event()

    class SlowFormatters(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "pygments.formatters._mapping" and not entered.is_set():
                entered.set()
                time.sleep(0.5)
            return None

    sys.meta_path.insert(0, SlowFormatters())
    from contextviewer.display.rendering import highlight_lines

    errors = []

    def render(name):
        try:
            assert "<li>" in highlight_lines("def f():\\n    return 1\\n", name)
        except Exception as exc:
            errors.append(repr(exc))

    first = threading.Thread(target=render, args=("a.py",))
    first.start()
    entered.wait(10)
    second = threading.Thread(target=render, args=("b.py",))
    second.start()
    first.join()
    second.join()
    print(errors or "ok")
    """
)


@pytest.mark.backend_independent
def test_first_concurrent_renders_after_a_restart_all_highlight():
    done = subprocess.run(
        [sys.executable, "-c", _FIRST_RENDERS], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok", done.stdout

"""A web process warms up as it starts (contextviewer/warmup.py, from wsgi.py): the first request
finds the URL configuration, the page templates and the Markdown parser loaded."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

CHECK = r"""
import sys
import contextviewer.wsgi
from contextviewer.display import rendering
from django.urls import get_resolver
assert "contextviewer.api" in sys.modules, "the URL configuration (and its API) is not loaded"
assert get_resolver()._populated, "the reverse lookup tables are not built"
assert rendering._MD is not None, "the Markdown parser is not made"
assert "tiktoken" not in sys.modules, "the warm-up loaded the tokenizer"
print("warm")
"""


def test_the_wsgi_application_warms_up_as_it_starts(tmp_path):
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "contextviewer.settings",
           "CONTEXTVIEWER_DATA_DIR": os.environ.get("CONTEXTVIEWER_DATA_DIR", str(tmp_path))}
    done = subprocess.run([sys.executable, "-c", CHECK], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "warm"

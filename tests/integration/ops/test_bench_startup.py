"""`manage.py bench startup` prints what a small import costs from the command line ("10 KB import:
X s", the README quotes it): the real command, into a scratch database, never this one. Timings are
printed, never asserted."""

from __future__ import annotations

import os
import re
from io import StringIO

import pytest

from contextviewer.conversations.models import Conversation
from ops.bench import startup


@pytest.mark.django_db(transaction=True)
def test_bench_startup_prints_the_small_import_and_leaves_nothing_behind(fixtures_dir, settings):
    out = StringIO()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    result = startup.small_import(out, env, repeat=1)
    text = out.getvalue()
    found = re.search(r"^10 KB import: (\d+\.\d+) s .*of a 10,943-byte session file", text, re.M)
    assert found, text
    assert result["bytes"] == 10_943 and f"{result['wall_s']:.3f}" == found.group(1)
    assert re.search(r"^target: 10 KB import under 0.25 s: (met|NOT met)$", text, re.M), text
    assert not Conversation.objects.exists()  # imported into the scratch databases only
    assert not list(settings.DATA_DIR.glob("bench-startup-*"))  # and those are gone

"""A compaction whose usage the log keeps on the fold, not as a call of the conversation (Codex
0.171+: the `compacted` record's `latest_token_usage_record`), is counted once: a model call of its
session, its tokens and its list price added. Written here with the project's own Codex rollout
generator (importers/codex/synthetic.py), its `compacted` line given a usage record."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from contextviewer.conversations.models import Fold, ModelCall
from contextviewer.importers.codex.synthetic import write_rollout
from contextviewer.ingest import files as ingest
from contextviewer.usage.prices import CallUsage, PriceBook

pytestmark = pytest.mark.django_db

COMPACTION = {"input_tokens": 50_000, "cached_input_tokens": 40_000, "output_tokens": 2_000}


def _usage() -> dict:
    out = StringIO()
    call_command("usage", "session", "--json", stdout=out)
    return json.loads(out.getvalue())["total"]


def test_a_compaction_kept_on_the_fold_is_one_more_call(project, tmp_path):
    path = write_rollout(tmp_path, target_bytes=60_000)
    lines = path.read_text().splitlines()
    for i, line in enumerate(lines):
        obj = json.loads(line)
        if obj.get("type") == "compacted":
            obj["payload"]["compaction_response_id"] = "resp_compact"
            obj["payload"]["latest_token_usage_record"] = {"response_id": "resp_compact", "usage": COMPACTION}
            lines[i] = json.dumps(obj)
    path.write_text("\n".join(lines) + "\n")
    ingest.import_path(project, path)
    fold = Fold.objects.get(conversation__project=project)
    assert fold.cost["input_uncached"] == 10_000 and "conversation_id" not in fold.cost
    calls = list(ModelCall.objects.filter(conversation__project=project))
    t = _usage()
    assert t["model_calls"] == len(calls) + 1
    assert t["tokens"]["input"] == sum(c.input_uncached for c in calls) + 10_000
    assert t["tokens"]["cache_read"] == sum(c.cache_read for c in calls) + 40_000
    assert t["tokens"]["output"] == sum(c.output for c in calls) + 2_000
    model = fold.cost["model"]
    book = PriceBook()
    # the calls' list price plus the compaction's: 10,000 uncached, 40,000 cached, 2,000 output
    expected = sum(book.cost(c.model, c.timestamp, CallUsage(c.input_uncached, c.cache_write, 0, c.cache_read, c.output))
                   for c in calls) + book.cost(model, fold.timestamp, CallUsage(10_000, 0, 0, 40_000, 2_000))
    assert t["cost_usd"] == pytest.approx(float(expected), abs=1e-6)
    assert t["folds"] == 1

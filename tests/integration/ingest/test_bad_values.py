"""One bad value in a log is one bad record, never a whole upload lost (issue 40, item 2).

- A lone surrogate in a JSON key (mini-swe-agent, Gemini JSON and JSONL) once ended the import job
  "failed" with a raw UnicodeEncodeError: the record is stored (its raw line keeps the escape), the
  job succeeds, and its other files are stored too.
- An error nothing else caught fails its own file (said in words), not the job's other files.
- A NUL, a lone surrogate or a NaN in the field that tells a record's kind (Gemini, OpenHands,
  SWE-agent, mini-swe-agent, LangChain and OpenAI message arrays) once had the whole file refused
  ("not a format"): the file imports, the record is kept, and the import's errors name it with its
  place and the true reason.
- 100,000-character ids (Gemini JSON, LangChain) once had the file refused: it imports whole, as
  the JSON lines formats do.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from contextviewer.conversations.models import Message
from contextviewer.ingest import files as ingest
from contextviewer.ingest import imports as services
from contextviewer.jobs import queue as jobs
from tests.factories import make_project
from tests.unit import test_gemini_importer as gemini_t
from tests.unit import test_messages_importer as messages_t
from tests.unit import test_openhands_importer as openhands_t
from tests.unit import test_swe_agent_importer as swe_t
from tests.unit.test_mini_swe_agent_importer import toolcall_trajectory

pytestmark = pytest.mark.django_db

LANGCHAIN = [
    {"type": "system", "data": {"content": "Be helpful.", "type": "system", "id": None}},
    {"type": "human", "data": {"content": "Read a.txt", "type": "human", "id": "h1"}},
    {"type": "ai", "data": {"content": "Reading it now.", "id": "ai1", "type": "ai", "tool_calls": []}},
    {"type": "human", "data": {"content": "Thanks", "type": "human", "id": "h2"}},
]


def _gemini_jsonl(doc: dict) -> bytes:
    meta = {k: v for k, v in doc.items() if k != "messages"}
    return b"".join(json.dumps(o).encode() + b"\n" for o in [meta, *[m for m in doc["messages"] if isinstance(m, dict)]])


# name -> (file name, document, where its records are, the field that tells a record's kind)
DOCS = {
    "gemini-json": ("chats/session-2026-01-16T18-34-3739ef95.json", gemini_t.LEGACY, "messages", "type"),
    "gemini-jsonl": ("chats/session-2026-01-16T18-34-3739ef95.jsonl", gemini_t.LEGACY, "messages", "type"),
    "openhands": ("trajectory.json", openhands_t.v0_events(), None, "action"),
    "swe-agent": ("fc.traj", swe_t.fc_traj(), "history", "role"),
    "mini-swe-agent": ("last_mini_run.traj.json", toolcall_trajectory(), "messages", "role"),
    "langchain": ("lc.json", LANGCHAIN, None, "type"),
    "openai-chat": ("chat.json", messages_t.OPENAI_CHAT, None, "role"),
}


def _records(doc):
    return doc if isinstance(doc, list) else doc


def _write(tmp: Path, name: str, doc) -> Path:
    rel = DOCS[name][0]
    path = tmp / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if rel.endswith(".jsonl"):
        path.write_bytes(_gemini_jsonl(doc))
    else:
        path.write_text(json.dumps(doc, allow_nan=True))
    return path


def _planted(name: str, number: int, change) -> object:
    """The format's document with record ``number`` (from 1) changed by ``change(record)``."""
    _rel, doc, key, _field = DOCS[name]
    doc = copy.deepcopy(doc)
    records = doc[key] if key else doc
    change(records[number - 1])
    return doc


def _messages_of(path: Path, slug: str) -> tuple[object, int]:
    project = make_project(slug)
    report = ingest.import_path(project, path)
    return report, Message.objects.filter(conversation__project=project).count()


def _clean_count(tmp: Path, name: str) -> int:
    _report, count = _messages_of(_write(tmp / "clean", name, DOCS[name][1]), f"clean-{name}")
    assert count > 2
    return count


# -- a lone surrogate in a key: the record stored, the job succeeds ----------------------------------


@pytest.mark.parametrize("name", ["mini-swe-agent", "gemini-json", "gemini-jsonl"])
def test_a_lone_surrogate_in_a_key_is_stored_and_the_job_succeeds_with_its_other_files(name, tmp_path, settings):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    expected = _clean_count(tmp_path, name)
    project = make_project("upload")
    bad = _write(tmp_path / "bad", name, _planted(name, 2, lambda r: r.update({"\ud800note": "x"})))
    good = _write(tmp_path / "good", "langchain", LANGCHAIN)
    uploads = [services.store_upload(SimpleUploadedFile(p.name, p.read_bytes())) for p in (bad, good)]

    done = jobs.run(services.start_import(project, uploads=uploads, enqueue=False)[0].pk)

    assert done.status == "succeeded", done.error
    assert [f["status"] for f in done.result["files"]] == ["imported", "imported"]
    stored = Message.objects.filter(conversation__project=project)
    assert stored.count() == expected + len(LANGCHAIN)
    # The record's raw keeps the key as the log writes it: the escape, readable as JSON.
    (raw,) = [m.raw for m in stored if "note" in m.raw]
    assert "\\ud800note" in raw and json.loads(raw)["\ud800note"] == "x"


def test_an_unexpected_error_fails_its_own_file_and_the_job_lists_the_others(tmp_path, settings, monkeypatch):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    project = make_project("upload")
    real = ingest.import_file_isolated

    def import_file_isolated(project, path, options=None, **kw):
        if options is not None and options.display_name == "bad.json":
            raise UnicodeEncodeError("utf-8", "\ud800", 0, 1, "surrogates not allowed")
        return real(project, path, options, **kw)

    monkeypatch.setattr(ingest, "import_file_isolated", import_file_isolated)
    data = json.dumps(LANGCHAIN).encode()
    uploads = [services.store_upload(SimpleUploadedFile(n, data.replace(b"h1", n.encode()))) for n in ("bad.json", "good.json")]

    done = jobs.run(services.start_import(project, uploads=uploads, enqueue=False)[0].pk)

    assert done.status == "succeeded", done.error
    assert [(f["path"], f["status"]) for f in done.result["files"]] == [("bad.json", "failed"), ("good.json", "imported")]
    (error,) = done.result["errors"]
    assert error["path"] == "bad.json"
    assert error["reason"].startswith("the import stopped on an unexpected error while reading this (UnicodeEncodeError")
    assert "rolled back whole" in error["reason"] and "went on with its other files" in error["reason"]
    assert len(done.result["conversations"]) == 1
    assert Message.objects.filter(conversation__project=project).count() == len(LANGCHAIN)


# -- NUL, a lone surrogate, NaN where a record's kind is told: one bad record --------------------------

BAD = {"nul": ("user\x00", "holds a NUL character"), "surrogate": ("user\udc80", "holds a lone surrogate (U+DC80)"),
       "nan": (float("nan"), "is NaN")}


@pytest.mark.parametrize("value", list(BAD))
@pytest.mark.parametrize("name", list(DOCS))
@pytest.mark.parametrize("number", [1, 2])
def test_a_bad_value_is_one_bad_record_named_with_its_place(name, value, number, tmp_path):
    expected = _clean_count(tmp_path, name)
    field = DOCS[name][3]
    bad, words = BAD[value]
    path = _write(tmp_path / "bad", name, _planted(name, number, lambda r: r.update({field: bad})))

    report, count = _messages_of(path, "bad")

    assert not report.refused, report.errors
    assert [f.status for f in report.files] == ["imported"]
    # The record is kept (as one of unknown kind); a record whose result it carried may go with it.
    assert count >= expected - 3 and count > 2
    place = {"gemini-jsonl": "line", "gemini-json": "message", "openhands": "event", "mini-swe-agent": "message"}.get(name, "element")
    line = number + 1 if name == "gemini-jsonl" else number
    said = [e for e in report.errors if e["line"] == line and f'its "{field}" {words}' in e["reason"]]
    assert said, report.errors
    assert said[0]["reason"].startswith(f"{place} {line}: ") and ", so it was kept as a" in said[0]["reason"]


# -- 100,000-character ids -------------------------------------------------------------------------

LONG = "x" * 100_000


@pytest.mark.parametrize(
    ("name", "change"),
    [
        ("gemini-json", lambda doc: doc.update({"sessionId": LONG})),
        ("gemini-json", lambda doc: doc["messages"][0].update({"id": LONG})),
        ("langchain", lambda doc: doc[0]["data"].update({"id": LONG})),
        ("langchain", lambda doc: doc[1]["data"].update({"id": LONG})),
        ("openai-chat", lambda doc: doc[0].update({"content": LONG})),
        ("openhands", lambda doc: doc[0].update({"message": LONG})),
    ],
    ids=["gemini-session-id", "gemini-message-id", "langchain-first-id", "langchain-second-id", "chat-long-first",
         "openhands-long-first"],
)
def test_a_100000_character_id_imports_the_file_whole(name, change, tmp_path):
    expected = _clean_count(tmp_path, name)
    doc = copy.deepcopy(DOCS[name][1])
    change(doc)
    report, count = _messages_of(_write(tmp_path / "long", name, doc), "long")
    assert not report.refused, report.errors
    assert [f.status for f in report.files] == ["imported"]
    assert count == expected

"""OpenHands: the light entry of ``importers/openhands/parser.py`` (its name, label, where its logs are, the
file endings it reads, and its sniff); see ``importers/formats.py``."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from contextviewer.importers.common import bad_value, first_items, head_text
from contextviewer.importers.formats import DOCUMENT, Entry
from contextviewer.importers.jsondoc import head_value_cut
from contextviewer.importers.openhands.tools import TOOLS


NAME = "openhands"
SOURCES = frozenset({"user", "agent", "environment"})


V1_EVENT_FILE = re.compile(r"^event-(\d+)(?:-.*)?\.json$")


_V0_HEAD = re.compile(r'^\[\s*\{\s*"id"\s*:\s*\d+\s*,')
_V0_SOURCE = re.compile(r'"source"\s*:\s*"(?:user|agent|environment)"')
_V0_KIND = re.compile(r'"(?:action|observation)"\s*:\s*"[a-z_]+"')


def _is_v0_event(obj: Any) -> bool:
    return (
        isinstance(obj, dict)
        and obj.get("id").__class__ is int
        and obj.get("source") in SOURCES
        and (isinstance(obj.get("action"), str) or isinstance(obj.get("observation"), str))
        and "timestamp" in obj
    )


def _v1_event_files(folder: Path, limit: int | None = None) -> list[tuple[int, str]]:
    out = []
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                m = V1_EVENT_FILE.match(entry.name)
                if m and entry.is_file():
                    out.append((int(m.group(1)), entry.name))
                    if limit is not None and len(out) >= limit:
                        break
    except OSError:
        return []
    out.sort()
    return out


def sniff(path: Path, head: bytes) -> float:
    """v1: a folder with base_state.json and an events/ folder (or events/ of event-*.json files).
    v0: a JSON array whose events carry an integer id, a timestamp, a source (user, agent,
    environment) and an action or observation name."""
    if path.is_dir():
        events = path / "events"
        if not events.is_dir():
            return 0.0
        if (path / "base_state.json").is_file():
            return 0.9
        return 0.6 if _v1_event_files(events, limit=1) else 0.0
    if not head:
        return 0.0
    text = head_text(head)
    if not text.startswith("["):
        return 0.0
    # An event whose fields hold a bad value (NUL, a lone surrogate, NaN: common.bad_value) is a bad
    # record of the file, said when it is read: it is not counted either way.
    objects = [v for v in first_items(text) if isinstance(v, dict) and (_is_v0_event(v) or not bad_value(v))]
    if objects:
        hits = sum(1 for v in objects if _is_v0_event(v))
        return 0.85 if hits and hits * 2 >= len(objects) and _is_v0_event(objects[0]) else 0.0
    # The first event is larger than the head (a system prompt with its tools): its first keys.
    if _V0_HEAD.match(text) and _V0_SOURCE.search(text) and _V0_KIND.search(text):
        return 0.7
    # ... or a value of it (a long message, before its action) runs past the head: its first keys.
    first, _more, cut = head_value_cut(head)
    if cut and first.__class__ is list and len(first) == 1 and first[0].get("id").__class__ is int:
        event = first[0]
        if event.get("source") in SOURCES and "timestamp" in event:
            return 0.6
    return 0.0


ENTRY = Entry(
    tools=TOOLS,
    module="contextviewer.importers.openhands.parser",
    name=NAME,
    label="OpenHands",
    storage=DOCUMENT,
    sniff=sniff,
    extensions=(".json",),
    where="v0: a trajectory JSON (event list); v1 (the OpenHands CLI): ~/.openhands/conversations/<id>/ (base_state.json + events/; a sub-agent in subagents/<id>/)",
    locations=("~/.openhands/conversations",),
)

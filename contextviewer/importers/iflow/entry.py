"""iFlow CLI (iflow.cn, ``@iflow-ai/iflow-cli``, built on Gemini CLI): the light entry of
``importers/iflow/parser.py`` (its name, label, where its logs are, the file endings it reads, and its
sniff); see ``importers/formats.py``.

iFlow CLI writes one JSON-lines file per session, ``~/.iflow/projects/<project>/session-<uuid>.jsonl``
(``$IFLOW_DIR`` where set). A line has Claude Code's envelope (``uuid``, ``parentUuid``, ``sessionId``,
``timestamp``, ``type``, ``isSidechain``, ``userType``, ``cwd``, ``gitBranch``, ``version``, an
Anthropic-shaped ``message``) and is told apart from Claude Code's by what Claude Code never writes: its
``sessionId`` is the file's name, ``session-<uuid>`` (Claude Code's is the bare uuid), and a tool result's
content is Gemini CLI's ``{callId, responseParts: {functionResponse}, resultDisplay}`` (sources in the
parser's docstring)."""

from __future__ import annotations

from pathlib import Path

from contextviewer.importers.common import head_text, json_lines
from contextviewer.importers.formats import DOCUMENT, Entry
from contextviewer.importers.iflow.tools import TOOLS

NAME = "iflow"
PREFIX = "session-"
SUFFIX = ".jsonl"
TYPES = frozenset({"user", "assistant"})


def is_session_name(name: str) -> bool:
    return name.startswith(PREFIX) and name.endswith(SUFFIX) and len(name) > len(PREFIX) + len(SUFFIX)


def _result_is_iflow(content: object) -> bool:
    """A tool result block of iFlow's shape: its content an object with ``callId`` and ``responseParts``."""
    if content.__class__ is not list:
        return False
    for block in content:
        if block.__class__ is dict and block.get("type") == "tool_result":
            inner = block.get("content")
            if inner.__class__ is dict and "callId" in inner and "responseParts" in inner:
                return True
    return False


def _is_iflow(obj: dict) -> bool:
    """A line of iFlow's own: the envelope, and a ``session-`` sessionId or an iFlow tool result."""
    if obj.get("type") not in TYPES or "uuid" not in obj or obj.get("message").__class__ is not dict:
        return False
    sid = obj.get("sessionId")
    if sid.__class__ is str and sid.startswith(PREFIX) and len(sid) > len(PREFIX):
        return True
    return _result_is_iflow(obj["message"].get("content"))


def sniff(path: Path, head: bytes) -> float:
    """iFlow CLI: JSON lines of user/assistant records with the uuid envelope, most of them iFlow's own
    (a ``session-<uuid>`` sessionId, or a tool result holding ``responseParts``). 0.95: above Claude
    Code's 0.9, which sees the envelope alone; the name alone claims nothing."""
    if path.is_dir() or not head:
        return 0.0
    objects = [obj for _n, obj in json_lines(head_text(head))][:200]
    messages = [obj for obj in objects if obj.get("type") in TYPES]
    if not messages:
        return 0.0
    hits = sum(1 for obj in messages if _is_iflow(obj))
    if hits * 2 <= len(messages):
        return 0.0
    return 0.96 if is_session_name(path.name) else 0.93


ENTRY = Entry(
    tools=TOOLS,
    module="contextviewer.importers.iflow.parser",
    name=NAME,
    label="iFlow CLI",
    storage=DOCUMENT,
    sniff=sniff,
    extensions=(SUFFIX,),
    where="~/.iflow/projects/<project>/session-<uuid>.jsonl ($IFLOW_DIR where set): JSON lines with Claude"
          " Code's envelope, Gemini CLI's tools and tool results",
    locations=("~/.iflow/projects",),
)

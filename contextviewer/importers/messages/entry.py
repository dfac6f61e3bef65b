"""Message arrays: the light entry of ``importers/messages/parser.py`` (its name, label, where its logs are, the
file endings it reads, and its sniff); see ``importers/formats.py``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from contextviewer.importers.common import bad_value
from contextviewer.importers.formats import DOCUMENT, Entry
from contextviewer.importers.messages.tools import TOOLS
from contextviewer.importers.jsondoc import head_value


CHAT_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
LC_TYPES = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system", "function": "tool",
            "chat": None, "developer": "system", "remove": None}
LC_CLASSES = {"HumanMessage": "human", "AIMessage": "ai", "ToolMessage": "tool", "SystemMessage": "system",
              "FunctionMessage": "function", "ChatMessage": "chat", "RemoveMessage": "remove"}
RESPONSES_CALLS = frozenset({"function_call", "custom_tool_call"})
RESPONSES_OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output"})
RESPONSES_TYPES = frozenset({"message", "reasoning", "compaction", "item_reference", "web_search_call",
                             "file_search_call", "computer_call", "computer_call_output", "local_shell_call",
                             "local_shell_call_output", "mcp_call", "mcp_list_tools", "image_generation_call",
                             "code_interpreter_call"}) | RESPONSES_CALLS | RESPONSES_OUTPUTS
# Keys that say an element is some agent's event record, not a message (OpenHands, SWE-agent,
# Claude Code, Gemini CLI): such arrays are not claimed.
FOREIGN_KEYS = frozenset({"action", "observation", "message_type", "parentUuid", "sessionId", "toolCalls",
                          "thoughts", "agentId", "isSidechain"})
# (An Amp thread: its "nextMessageId", "agentMode", "usageLedger".)
FOREIGN_BODY_KEYS = frozenset({"trajectory", "history", "projectHash", "sessionId", "info", "environment", "nextMessageId",
                               "agentMode", "usageLedger"})


def _lc_form(obj: dict) -> tuple[str, dict] | None:
    """(LangChain type, fields) of a LangChain-serialized message, or None."""
    if obj.get("lc") == 1 and obj.get("type") == "constructor":
        ids = obj.get("id")
        kwargs = obj.get("kwargs")
        if ids.__class__ is list and ids and ids[-1].__class__ is str and kwargs.__class__ is dict:
            name = ids[-1].removesuffix("Chunk")
            kind = LC_CLASSES.get(name)
            if kind is not None:
                return kind, kwargs
        return None
    kind = obj.get("type")
    if kind in LC_TYPES:
        data = obj.get("data")
        if data.__class__ is dict and "content" in data and "role" not in obj:
            return kind, data
        if "content" in obj and "role" not in obj and "data" not in obj:
            return kind, obj
    return None


def shape(obj: Any) -> str | None:
    """Which message shape an element has: "langchain", "responses", "chat", or None."""
    if obj.__class__ is not dict:
        return None
    if any(key in obj for key in FOREIGN_KEYS):
        return None
    if _lc_form(obj) is not None:
        return "langchain"
    kind = obj.get("type")
    if kind in RESPONSES_TYPES:
        if kind == "message" and obj.get("role") not in CHAT_ROLES:
            return None
        if kind in RESPONSES_CALLS and "call_id" not in obj and "name" not in obj:
            return None
        if kind in RESPONSES_OUTPUTS and "call_id" not in obj:
            return None
        return "responses"
    role = obj.get("role")
    if role in CHAT_ROLES and kind is None and any(k in obj for k in ("content", "tool_calls", "function_call")):
        return "chat"
    return None


def _message_list(doc: Any) -> tuple[list | None, str | None]:
    """(the message list, the body key holding it) of a document."""
    if doc.__class__ is list:
        return doc, None
    if doc.__class__ is dict:
        for key in ("messages", "input"):
            value = doc.get(key)
            if value.__class__ is list:
                return value, key
    return None, None


def sniff(path: Path, head: bytes) -> float:
    """A JSON array (or a body's ``messages``/``input`` list) whose elements are messages of the
    shapes above. Not JSON lines, not another agent's event list."""
    if path.is_dir() or not head:
        return 0.0
    value, more = head_value(head)
    if value is None or more:
        return 0.0
    if value.__class__ is dict and any(k in value for k in FOREIGN_BODY_KEYS):
        return 0.0
    items, key = _message_list(value)
    if not items:
        return 0.0
    # An element whose fields hold a bad value (NUL, a lone surrogate, NaN: common.bad_value) is a
    # bad record of the file, said when it is read: it is not counted either way.
    shapes = [shape(item) for item in items[:200]]
    shapes = [s for s, item in zip(shapes, items) if s is not None or not bad_value(item)]
    known = sum(1 for s in shapes if s is not None)
    unknown = len(shapes) - known
    if not known or unknown * 10 > len(shapes):
        return 0.0
    if unknown == 0 and (known >= 2 or key is not None):
        return 0.6
    return 0.5


ENTRY = Entry(
    tools=TOOLS,
    module="contextviewer.importers.messages.parser",
    name="messages",
    label="Message arrays",
    storage=DOCUMENT,
    sniff=sniff,
    extensions=(".json", ".json.gz"),
    where="any .json file holding a message array: OpenAI Chat / Anthropic Messages / Responses API items / LangChain messages, bare or as a request body's messages (or input)",
    locations=(),
)

"""What one request carried, protocol-neutral: the items of its window in the request's order. Each
protocol adapter (ops/scripted/anthropic.py, responses.py, chat.py, gemini.py) turns a request body
into a View; the conformance check (ops/conformance.py) compares it with what contextviewer shows
for that call (`manage.py window`). Pure data."""

from __future__ import annotations

from dataclasses import dataclass, field

# Item kinds, as `manage.py window --json` prints them.
KINDS = ("text", "tool_call", "tool_result", "summary", "thinking", "image", "other")


@dataclass
class Item:
    role: str  # user | assistant | system | tool
    kind: str  # one of KINDS
    text: str = ""  # text; a tool call's input as JSON; a tool result's output
    tool_id: str | None = None
    tool_name: str | None = None

    def as_dict(self) -> dict:
        return {"role": self.role, "kind": self.kind, "tool_id": self.tool_id, "tool_name": self.tool_name, "text": self.text}


@dataclass
class View:
    model: str = ""
    system: str = ""  # the system prompt as sent (not a window item: every harness sends one)
    tools: list[str] = field(default_factory=list)  # names of the tools offered
    items: list[Item] = field(default_factory=list)
    compaction: bool = False  # the protocol says this is a compaction request (Codex's compaction_trigger)

    def user_texts(self) -> list[str]:
        return [i.text for i in self.items if i.role == "user" and i.kind == "text"]

    def last_user_text(self) -> str:
        texts = self.user_texts()
        return texts[-1] if texts else ""

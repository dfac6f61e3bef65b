"""What the scripted model server answers (ops/scripted/server.py): a plan of prompts, each a list of
tool calls to make one per response and a final text, plus the summary a compaction request gets and
the text a side call (a title, a memory note) gets. Pure data.

A request is matched to a prompt by the prompt's marker: the last user text of the request that
holds a marker names the prompt (a sub-agent's prompt is written by the parent's tool call, so it
carries its own marker). Each prompt's tool calls are issued once each, in order, then its answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SUMMARY = (
    "<analysis>Scripted summary.</analysis>\n<summary>1. Primary Request and Intent: the scripted prompts.\n"
    "2. Key facts: the project folder was listed, a file read and edited, a command run.\n"
    "3. Pending Tasks: none.</summary>"
)
SIDE_TEXT = "Scripted session"
# Text in a request's last user message that makes it a compaction (summarization) request. An
# agent's driver adds its own (Plan.compaction_markers); protocol-level ones (Codex's
# compaction_trigger item) are the adapter's.
COMPACTION_MARKERS = (
    "summary of the conversation",
    "summarize the conversation",
    "create a detailed summary",
    "<state_snapshot>",
    "context checkpoint compaction",
)


@dataclass(frozen=True)
class Tool:
    """One tool call the model makes: the tool's name as the agent offers it, and its input."""

    name: str
    args: dict[str, Any]


@dataclass
class Prompt:
    text: str  # what the user (or the parent agent) writes; holds `marker`
    marker: str  # unique: finds the prompt in a request
    tools: list[Tool] = field(default_factory=list)
    answer: str = "Done."
    agent: str = "main"  # "main", or the sub-agent's name: whose calls these are
    # response index (0 .. len(tools)) -> the input tokens the server reports for that response;
    # unset: an estimate of the request's size (len of its JSON / 4)
    input_tokens: dict[int, int] = field(default_factory=dict)


@dataclass
class Plan:
    prompts: list[Prompt]
    summary: str = SUMMARY
    side_text: str = SIDE_TEXT
    compaction_markers: tuple[str, ...] = COMPACTION_MARKERS
    # input tokens reported for a compaction request (its cost); unset: the size estimate
    compaction_input: int | None = None

    def prompt_for(self, user_texts: list[str]) -> int | None:
        """The index of the prompt whose marker is in the LAST user text that holds any marker."""
        for text in reversed(user_texts):
            for i, p in enumerate(self.prompts):
                if p.marker in text:
                    return i
        return None

    def is_compaction(self, last_user_text: str) -> bool:
        low = last_user_text.lower()
        return any(m.lower() in low for m in self.compaction_markers)

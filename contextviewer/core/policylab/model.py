"""Input and output types of the policy lab (policy-lab.md §0, "Common replay model"). Pure.

The replay is OPEN LOOP: the recorded user messages, assistant turns, tool calls and tool results
are fixed; a policy only decides what its harness would have put in the window before each
recorded model call. After the first fold the real agent would have behaved differently.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

ROLES = ("system", "user", "assistant", "tool")

# Item states (§0 output per call).
FULL = "full"
CLIPPED = "clipped"
CLEARED = "cleared"
MASKED = "masked"
EVICTED_TO_FILE = "evicted_to_file"
ARGS_TRUNCATED = "args_truncated"
FOLDED = "folded"
SUMMARY = "summary"
NOTE = "note"
STATES = (FULL, CLIPPED, CLEARED, MASKED, EVICTED_TO_FILE, ARGS_TRUNCATED, FOLDED, SUMMARY, NOTE)

# Event kinds (open list; these are the ones the modules emit).
EVENT_KINDS = (
    "clip",
    "offload",
    "clear",
    "fold",
    "handoff",
    "summarize",
    "drop",
    "evict",
    "compress",
    "microcompact",
    "args_truncate",
    "mask",
    "condense",
)

# Zones of a call window, by fill fraction of the window (display; policies may set their own).
ZONES = ("ok", "warn", "critical", "red")


@dataclass(frozen=True, slots=True)
class Msg:
    """One recorded message, normalized. `tokens` is the lab tokenizer's count of `text`."""

    id: str
    seq: int
    role: str  # system | user | assistant | tool
    text: str
    tool_name: str | None = None
    tool_call_ids: tuple[str, ...] = ()  # assistant: ids of the calls it makes; tool: id(s) it answers
    call_index: int | None = None  # the model call that produced (assistant) or first saw this message
    ts: str | None = None
    tokens: int = 0
    chars: int = 0
    original_text: str | None = None  # the unclipped original, when the log holds it
    kind: str = ""  # "summary": the session's own compaction summary; "boundary": a fold marker

    @property
    def is_recorded_fold(self) -> bool:
        """The recorded harness's own compaction artifacts; replays of other policies skip them."""
        return self.kind in ("summary", "boundary")

    @property
    def is_tool_result(self) -> bool:
        return self.role == "tool"

    @property
    def makes_tool_calls(self) -> bool:
        return self.role == "assistant" and bool(self.tool_call_ids)


@dataclass(frozen=True, slots=True)
class Call:
    """One recorded model call. It sees every message with seq < `seq`."""

    index: int
    seq: int  # position of the call in the message sequence
    usage_input: int = 0  # measured prompt tokens incl. cache read/write; 0 when unmeasured
    output: int = 0
    model: str | None = None
    window: int | None = None
    # The model's own input limit when the harness counts against it rather than the window the log
    # gives (Codex logs the usable 95 %, 258,400, of gpt-5's 272,000 and compacts at 90 % of 272,000).
    input_limit: int | None = None


@dataclass(frozen=True, slots=True)
class RecordedFold:
    """One of the session's own folds as its log records it: where it sits, what triggered it and
    the token figures the harness logged (0 when the log has none)."""

    seq: int  # position of its boundary (or its summary when there is no boundary)
    kind: str = "compact"  # compact | handoff | microcompact | ...
    trigger: str = ""  # auto | manual | "" (the log does not say)
    tokens_before: int = 0
    tokens_after: int = 0


@dataclass(frozen=True, slots=True)
class Session:
    agent: str
    messages: tuple[Msg, ...]
    calls: tuple[Call, ...]
    window: int
    real_summary_tokens: tuple[int, ...] = ()  # sizes of the session's own compaction summaries
    overhead_tokens: int = 0  # system prompt + tool schemas, not in the message log (provider tokens)
    scale: float = 1.0  # provider tokens per lab token, fitted per session (common.calibrate, §0)
    recorded_folds: tuple[RecordedFold, ...] = ()
    # Whether the fit of scale and overhead held (common.calibrate); when it did not, every replayed
    # figure after the first action is an uncalibrated estimate and `calibration_note` says why.
    calibrated: bool = True
    calibration_note: str = ""
    own_policy: str = ""  # the policy of the harness that recorded the session (the format's own_policy)


@dataclass(frozen=True, slots=True)
class Item:
    """One entry of a replayed window: a message (key = its id) or a synthetic entry."""

    key: str  # msg id, or a synthetic key such as "summary:3" / "note:files"
    state: str  # one of STATES
    text_or_marker: str  # short: the marker, the preview, or a clipped head of the text
    tokens: int
    msg_id: str | None = None  # None for synthetic items
    role: str | None = None


@dataclass(frozen=True, slots=True)
class Event:
    call_index: int
    kind: str  # clip | offload | clear | fold | handoff | summarize | drop | evict | compress ...
    tokens_before: int
    tokens_after: int
    dropped_msg_ids: tuple[str, ...] = ()
    clipped_msg_ids: tuple[str, ...] = ()
    detail: str = ""
    # What tokens_before/after measure, and so how they become provider tokens (common.finish):
    # "window" a whole window in lab tokens (overhead + scale x messages), "message" one message in
    # lab tokens (scale only: a clip reports the tokens it removed), "provider" already provider tokens.
    scope: str = "window"

    @property
    def saved(self) -> int:
        return self.tokens_before - self.tokens_after


@dataclass(frozen=True, slots=True)
class CallWindow:
    call_index: int
    items: tuple[Item, ...]
    total_tokens: int  # items + overhead
    zone: str = "ok"
    events: tuple[Event, ...] = ()


@dataclass(frozen=True, slots=True)
class Replay:
    policy: str
    label: str
    windows: list[CallWindow]
    events: list[Event]
    peak: int
    saved_tokens: int  # sum over calls of (the unmodified history's total - this policy's total)
    fires: int  # every action (the fire points); by kind in `actions`
    red_zone_calls: int
    open_loop: bool = True
    params: Mapping[str, Any] = field(default_factory=dict)
    actions: Mapping[str, int] = field(default_factory=dict)  # folds, clips, clears, offloads, drops
    overflow_calls: int = 0  # calls whose window holds more than the model's context window
    # The first call whose figure is an estimate (the policy's first action or the first call after
    # the session's own first fold); every call before it is the measured input. None: all measured.
    estimated_from: int | None = None
    # Actions after which the window stayed at or over the policy's own limit: (call index, the count
    # after the action, the limit). The policy could not bring the window under it; it does not act
    # again until the count is under the limit once more (common.Trigger), and every surface says so.
    unresolved: tuple[tuple[int, int, int], ...] = ()

    @property
    def folds(self) -> int:
        return self.actions.get("folds", 0)


@runtime_checkable
class Policy(Protocol):
    name: str
    label: str
    params: Mapping[str, Any]  # defaults; replay(**params) overrides them

    def replay(self, session: Session, **params: Any) -> Replay: ...

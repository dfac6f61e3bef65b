"""Synthetic sessions for the policy lab's unit tests: a tiny builder over policylab.model.

Token counts follow the simple rule 1 token = 4 chars, so a message of n tokens is 4·n chars."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from contextviewer.core.policylab.model import Call, Msg, Session

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def text_of(tokens: int, line: str = "x") -> str:
    """A text of exactly 4·tokens chars made of newline-separated lines."""
    n = 4 * tokens
    unit = (line * 79)[:79] + "\n"
    return (unit * (n // 80 + 1))[:n]


class LabBuilder:
    def __init__(self, window: int = 200_000, agent: str = "claude-code", overhead: int = 0, model: str | None = None):
        self.window, self.agent, self.overhead, self.model = window, agent, overhead, model
        self.messages: list[Msg] = []
        self.calls: list[Call] = []
        self.real_summaries: list[int] = []
        self.seq = 0
        self.minutes = 0
        self.n_tool = 0

    def _add(self, role: str, text: str, **kw) -> Msg:
        self.seq += 1
        self.minutes += kw.pop("gap", 1)
        m = Msg(
            id=f"m{self.seq}",
            seq=self.seq,
            role=role,
            text=text,
            ts=(T0 + timedelta(minutes=self.minutes)).isoformat(),
            tokens=kw.pop("tokens", None) or round(len(text) / 4),
            chars=len(text),
            **kw,
        )
        self.messages.append(m)
        return m

    def user(self, text: str = "please go on", **kw) -> Msg:
        return self._add("user", text, **kw)

    def call(self, usage: int = 0, output: int = 0, text: str = "ok", tools: tuple[str, ...] = ()) -> Msg:
        """A model call (it sees everything so far) and the assistant message it produced."""
        self.seq += 1
        index = len(self.calls)
        self.calls.append(Call(index=index, seq=self.seq, usage_input=usage, output=output, window=self.window,
                               model=self.model))
        ids = tuple(f"t{self.n_tool + k}" for k in range(len(tools)))
        self.n_tool += len(tools)
        self._pending = list(zip(ids, tools, strict=True))
        return self._add("assistant", text, tool_call_ids=ids, call_index=index, tool_name=tools[0] if tools else None)

    def result(self, text: str, tool: str | None = None, call_id: str | None = None, **kw) -> Msg:
        """The result of the oldest pending tool call of the last assistant message."""
        cid, name = self._pending.pop(0) if self._pending else (call_id or f"t{self.n_tool}", tool)
        return self._add("tool", text, tool_name=tool or name, tool_call_ids=(call_id or cid,), **kw)

    def tool_turn(self, tool: str, text: str, usage: int = 0) -> None:
        self.call(usage=usage, tools=(tool,))
        self.result(text)

    def final_call(self, usage: int = 0) -> None:
        self.call(usage=usage)

    def session(self) -> Session:
        return Session(
            agent=self.agent,
            messages=tuple(self.messages),
            calls=tuple(self.calls),
            window=self.window,
            real_summary_tokens=tuple(self.real_summaries),
            overhead_tokens=self.overhead,
        )

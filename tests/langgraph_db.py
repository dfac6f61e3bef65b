"""A LangGraph checkpointer database written by langgraph's own SqliteSaver, for the importer's
tests: real graphs with a scripted model (no network), in the shapes deepagents writes.

Threads (in the order they begin):

- ``alpha``: a ``task`` tool call that runs a sub-agent graph (namespace ``tools:<task id>``; the
  sub-agent calls ``read_file`` itself), then the answer; 1 + 2 + 1 + 1 main messages.
- ``beta``: an older deepagents / LangChain summarization: the ``messages`` list rewritten as
  ``REMOVE_ALL`` + a summary ``HumanMessage`` + the last 2 messages, plus the reply.
- ``gamma``: deepagents >= 0.4: ``_summarization_event`` (cutoff index, summary, offload file)
  with the messages list left whole; the offload file is written beside the database.
- ``delta``: the ``messages`` channel a ``DeltaChannel`` (2026): checkpoints hold no messages
  except every 2nd update's snapshot; the list lives in ``writes``.

Every AI message of the scripts carries ``usage_metadata`` unless said otherwise.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Annotated, Any, NotRequired, TypedDict

import pytest

pytest.importorskip("langgraph.checkpoint.sqlite")

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, RemoveMessage, ToolMessage  # noqa: E402
from langgraph.channels.delta import DeltaChannel  # noqa: E402
from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: E402
from langgraph.graph import END, START, StateGraph  # noqa: E402
from langgraph.graph.message import REMOVE_ALL_MESSAGES, _messages_delta_reducer, add_messages  # noqa: E402

MODEL = "claude-sonnet-4-5"
SUMMARY_BETA = "Here is a summary of the conversation to date:\n\nThe user asked to list /src; main.py and util.py are there."
SUMMARY_GAMMA = (
    "You are in the middle of a conversation that has been summarized.\n\n"
    "The full conversation history has been saved to /conversation_history/gamma.md should you need to refer back to it.\n\n"
    "<summary>\nThe user wants the tests fixed; pytest fails in test_io.py.\n</summary>"
)
OFFLOAD_GAMMA = "## Summarized at 2026-03-01T10:00:00Z\n\nHuman: fix the tests\nAI: running pytest\n\n"


def ai(mid: str, text: str = "", calls: list[tuple[str, str, dict]] = (), *, inp=100, out=10, read=0, write=0,
       usage: bool = True) -> AIMessage:
    meta = None
    if usage:
        meta = {"input_tokens": inp, "output_tokens": out, "total_tokens": inp + out,
                "input_token_details": {"cache_read": read, "cache_creation": write}}
    return AIMessage(
        content=text, id=mid,
        tool_calls=[{"name": name, "args": args, "id": cid, "type": "tool_call"} for cid, name, args in calls],
        usage_metadata=meta, response_metadata={"model_name": MODEL, "id": f"msg_{mid}"},
    )


class SubState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


class MainState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    _summarization_event: NotRequired[dict]


class DeltaState(TypedDict):
    messages: Annotated[list, DeltaChannel(_messages_delta_reducer, snapshot_frequency=2)]


def _tool_result(call: dict, config) -> ToolMessage:
    name, args = call["name"], call["args"]
    if name == "fail":
        return ToolMessage(content="Error: no such file", tool_call_id=call["id"], name=name, status="error")
    return ToolMessage(content=f"{name} output for {sorted(args.items())}", tool_call_id=call["id"], name=name,
                       id=f"tool-{call['id']}")


class Scripted:
    """Graphs whose model node answers from a script per thread (one reply per model call)."""

    def __init__(self, scripts: dict[str, list[Any]]):
        self.scripts = {k: list(v) for k, v in scripts.items()}

    def graph(self, saver, state=MainState, sub=None, key=""):
        def model(state, config):
            reply = self.scripts[config["configurable"]["thread_id"] + key].pop(0)
            return reply(state) if callable(reply) else {"messages": [reply]}

        def tools(state, config):
            out = []
            for call in state["messages"][-1].tool_calls:
                if call["name"] == "task" and sub is not None:
                    # Invoked inside the node: langgraph checkpoints it under the namespace tools:<task id>.
                    result = sub.invoke({"messages": [HumanMessage(content=call["args"]["description"], id=f"sub-{call['id']}")]})
                    out.append(ToolMessage(content=result["messages"][-1].content, tool_call_id=call["id"], name="task",
                                           id=f"tool-{call['id']}"))
                else:
                    out.append(_tool_result(call, config))
            return {"messages": out}

        def route(state):
            return "tools" if getattr(state["messages"][-1], "tool_calls", None) else END

        builder = StateGraph(state)
        builder.add_node("model", model)
        builder.add_node("tools", tools)
        builder.add_edge(START, "model")
        builder.add_conditional_edges("model", route, ["tools", END])
        builder.add_edge("tools", "model")
        return builder.compile(checkpointer=saver) if saver is not None else builder.compile()


def _beta_summarize(state):
    tail = state["messages"][-2:]
    summary = HumanMessage(content=SUMMARY_BETA, id="beta-summary", additional_kwargs={"lc_source": "summarization"})
    return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), summary, *tail, ai("beta-ai-4", "Both files look fine.")]}


def _gamma_summarize(state):
    event = {
        "cutoff_index": 3,
        "summary_message": HumanMessage(content=SUMMARY_GAMMA, additional_kwargs={"lc_source": "summarization"}),
        "file_path": "/conversation_history/gamma.md",
    }
    return {"messages": [ai("gamma-ai-3", "Fixed test_io.py; pytest passes.", inp=900, out=40, read=800, write=50)],
            "_summarization_event": event}


SCRIPTS = {
    "alpha": [
        ai("alpha-ai-1", "", [("call-task-1", "task", {"description": "find the config file", "subagent_type": "general-purpose"})],
           inp=1200, out=30, read=1000, write=150),
        ai("alpha-ai-2", "The config is in settings.toml.", inp=1300, out=20, read=1150, write=0),
    ],
    "alpha:sub": [
        ai("sub-ai-1", "", [("call-read-1", "read_file", {"path": "settings.toml"})], inp=300, out=15),
        ai("sub-ai-2", "Found it: settings.toml", inp=400, out=12),
    ],
    "beta": [
        ai("beta-ai-1", "", [("call-ls-1", "ls", {"path": "/src"}), ("call-fail-1", "fail", {"path": "/nope"})], inp=500, out=20),
        ai("beta-ai-2", "There are main.py and util.py.", inp=600, out=15),
        ai("beta-ai-3", "", [("call-read-2", "read_file", {"path": "/src/main.py"})], inp=700, out=18),
        _beta_summarize,
    ],
    "gamma": [
        ai("gamma-ai-1", "", [("call-sh-1", "shell", {"command": "pytest"})], inp=800, out=25, read=600, write=100),
        ai("gamma-ai-2", "test_io.py fails.", inp=850, out=10, usage=False),
        _gamma_summarize,
    ],
    "delta": [
        ai("delta-ai-1", "", [("call-grep-1", "grep", {"pattern": "TODO"})], inp=200, out=8),
        ai("delta-ai-2", "3 TODOs.", inp=260, out=6),
    ],
}
# What each thread's users say, per invocation.
TURNS = {
    "alpha": [("alpha-h-1", "Where is the config?")],
    "beta": [("beta-h-1", "List /src"), ("beta-h-2", "Read main.py")],
    "gamma": [("gamma-h-1", "Fix the tests"), ("gamma-h-2", "Go on")],
    "delta": [("delta-h-1", "Count the TODOs")],
}
# Independent counts, from the scripts above (not from the importer):
MAIN_MESSAGES = {
    "alpha": 1 + 1 + 1 + 1,  # human, ai(task), tool result, ai
    "beta": 1 + 1 + 2 + 1 + 1 + 1 + 1 + 1 + 1,  # h, ai(2 calls), 2 results, ai, h, ai(read), result, summary, ai
    "gamma": 1 + 1 + 1 + 1 + 1 + 1,  # h, ai(shell), result, ai, h, ai; + the event's summary message
    "delta": 1 + 1 + 1 + 1,
}
SUB_MESSAGES = 1 + 1 + 1 + 1  # the task prompt, ai(read_file), result, ai
TOOL_CALLS = {"alpha": 1, "beta": 3, "gamma": 1, "delta": 1}
SUB_TOOL_CALLS = 1


def connect(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(str(path), check_same_thread=False)


def build(path: Path, threads=("alpha", "beta", "gamma", "delta")) -> Path:
    """Write the database (and gamma's offload file beside it); returns its path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    scripted = Scripted(SCRIPTS)
    conn = connect(path)
    try:
        saver = SqliteSaver(conn)
        sub = scripted.graph(None, SubState, key=":sub")
        main = scripted.graph(saver, MainState, sub=sub)
        delta = scripted.graph(saver, DeltaState)
        for thread in threads:
            graph = delta if thread == "delta" else main
            for mid, text in TURNS[thread]:
                graph.invoke({"messages": [HumanMessage(content=text, id=mid)]}, {"configurable": {"thread_id": thread}})
    finally:
        conn.close()
    offload = path.parent / "conversation_history" / "gamma.md"
    offload.parent.mkdir(exist_ok=True)
    offload.write_text(OFFLOAD_GAMMA)
    return path


def add_turn(path: Path, thread: str = "alpha", text: str = "Thanks, and the port?") -> int:
    """One more user turn on a thread (a database that grew); returns the new messages' count."""
    scripted = Scripted({thread: [ai(f"{thread}-ai-late", "Port 8080.", inp=1400, out=5)]})
    conn = connect(path)
    try:
        graph = scripted.graph(SqliteSaver(conn), MainState)
        graph.invoke({"messages": [HumanMessage(content=text, id=f"{thread}-h-late")]}, {"configurable": {"thread_id": thread}})
    finally:
        conn.close()
    return 2


def history_ids(path: Path, thread: str, ns: str = "") -> list[str]:
    """Every message id the thread ever held, in first-seen order, read with langgraph's own saver
    (its deserializer and its delta-channel reconstruction), not with the importer."""
    conn = connect(path)
    try:
        saver = SqliteSaver(conn)
        graph = Scripted({}).graph(saver, DeltaState if thread == "delta" else MainState)
        seen: dict[str, None] = {}
        if ns:
            tuples = sorted(saver.list({"configurable": {"thread_id": thread, "checkpoint_ns": ns}}),
                            key=lambda t: t.checkpoint["id"])
            for t in tuples:
                for m in t.checkpoint["channel_values"].get("messages", []):
                    seen.setdefault(m.id, None)
            return list(seen)
        states = sorted(graph.get_state_history({"configurable": {"thread_id": thread}}),
                        key=lambda s: s.config["configurable"]["checkpoint_id"])
        for s in states:
            for m in s.values.get("messages", []):
                seen.setdefault(m.id, None)
        return list(seen)
    finally:
        conn.close()


def namespaces(path: Path, thread: str) -> list[str]:
    conn = connect(path)
    try:
        return [r[0] for r in conn.execute(
            "SELECT DISTINCT checkpoint_ns FROM checkpoints WHERE thread_id = ? AND checkpoint_ns != ''", (thread,))]
    finally:
        conn.close()

"""Synthetic Mistral Vibe 3.0 session folders (``~/.vibe/logs/session/unified/<id>/``), written here
in the layout Vibe 3.0.3 wrote when run for real (ops/drivers/vibe.py): ``meta.json``, ``CURRENT``,
``generations/<n>/{manifest,checkpoint}.json``, content-addressed ``chunks/<sha256>.json`` and the
last turn's ``journal/<n>.jsonl``. Small, and only the keys the format's facts need.

The session: turn 1 (a bash call; then ONE response with two read_file calls; an answer), turn 2
(an edit; an answer), then an automatic compaction at the start of turn 3, and turn 3 (a bash call;
an answer). Only turn 3's journal is left (Vibe drops older segments); the generation before it
records the last reported context of turn 2. `Written` says what was written, for the tests.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

START_MS = 1_800_000_000_000
MODEL = "devstral-small"
SUMMARY = "1. The user asked for the notes. 2. Files were listed, read and edited."


@dataclass
class Written:
    folder: Path
    prompts: list[str] = field(default_factory=list)
    responses: int = 0  # model calls of the agent (not the compaction call)
    tool_calls: list[tuple[str, str]] = field(default_factory=list)  # (call id, model-facing name)
    measured: list[tuple[int, int]] = field(default_factory=list)  # (input, output) of the journal's agent calls
    last_context_before_fold: int = 0
    compaction_usage: tuple[int, int] = (0, 0)


def _chunk(folder: Path, value) -> str:
    text = json.dumps(value)
    name = hashlib.sha256(text.encode()).hexdigest()
    (folder / "chunks" / f"{name}.json").write_text(text)
    return name


def _text(text: str) -> list[dict]:
    return [{"text": text, "type": "text"}]


CHILD = "child-5eed0000aaaa"
TASK = "read a.md and say what it holds"


def make_child(unified: Path) -> Path:
    """A sub-agent's folder beside its parent: no meta.json; a task, one read_file call, an answer."""
    folder = unified / CHILD
    for sub in ("chunks", "journal", "generations/0000000000000009"):
        (folder / sub).mkdir(parents=True)
    entries = [
        {"type": "message", "role": "user", "id": "user-child-1", "content": _text(TASK), "createdAt": START_MS + 5_000},
        {"type": "effect", "id": "effect-child-read", "createdAt": START_MS + 5_100,
         "detail": {"kind": "tool", "toolName": "file_system.read_file", "input": {"path": "a.md"}},
         "state": {"output": {"type": "success", "structured_content": {"content": "alpha", "path": "a.md"}}}},
        {"type": "message", "role": "assistant", "id": "assistant-child-2", "content": _text("a.md holds alpha."), "createdAt": START_MS + 5_200},
    ]
    context = [{"message": {"role": "assistant", "content": [{"type": "tool_call", "id": "call_cr", "name": "read_file",
                                                              "arguments": {"type": "json", "value": {"path": "a.md"}}}]},
                "source": "history", "turn_index": 0}]
    manifest = {"checkpoint": {"chunks": [_chunk(folder, context)]}, "projection_state": {"chunks": [_chunk(folder, entries)]}}
    (folder / "generations" / "0000000000000009" / "manifest.json").write_text(json.dumps(manifest))
    (folder / "CURRENT").write_text(json.dumps({"generation": "0000000000000009", "session_id": CHILD,
                                                "store_format": "mistral.vibe.unified-session-store/v1"}))
    return folder


def make_session(root: Path, sid: str = "9e1c0de0-0000-4000-8000-00000000abcd", cwd: str = "/work/demo",
                 child: bool = False) -> Written:
    """The session (see above); ``child``: turn 2 first spawns a sub-agent from run_typescript code and
    waits for it (the runtime's notification of its answer in the context), its folder beside."""
    folder = root / sid
    for sub in ("chunks", "journal", "generations"):
        (folder / sub).mkdir(parents=True)
    w = Written(folder)
    clock = iter(range(START_MS, START_MS + 100_000, 250))
    entries: list[dict] = []
    context: list[dict] = []  # the model's context before the fold (an older generation's chunk)

    def user(turn: str, text: str) -> None:
        w.prompts.append(text)
        entries.append({"type": "message", "role": "user", "id": f"user-{turn}", "turnId": turn, "content": _text(text),
                        "createdAt": next(clock), "source": "turn_start"})
        context.append({"message": {"role": "user", "content": _text(text)}, "source": "history", "turn_index": 0})

    def tools(turn: str, calls: list[tuple[str, str, str, dict, dict]]) -> None:
        """One response asking for ``calls``: (call id, name, store name, input, structured output)."""
        w.responses += 1
        context.append({"message": {"role": "assistant", "content": [
            {"type": "tool_call", "id": cid, "name": name, "arguments": {"type": "json", "value": args, "raw": json.dumps(args)}}
            for cid, name, _store, args, _out in calls]}, "source": "history", "turn_index": 0})
        for cid, name, store, args, out in calls:
            w.tool_calls.append((cid, name))
            entries.append({"type": "effect", "id": f"effect-{cid}-action", "turnId": turn, "createdAt": next(clock),
                            "detail": {"kind": "tool", "toolName": store, "input": {**args, "timeout_seconds": 120}},
                            "state": {"status": "completed", "output": {"type": "success", "content": [], "structured_content": out}}})
            context.append({"message": {"role": "tool", "tool_call_id": cid, "name": name,
                                        "content": _text(json.dumps(out, sort_keys=True, separators=(",", ":")))},
                            "source": "history", "turn_index": 0})

    def answer(turn: str, action: str, text: str) -> None:
        w.responses += 1
        entries.append({"type": "message", "role": "assistant", "id": f"assistant-{action}", "turnId": turn, "content": _text(text),
                        "createdAt": next(clock), "source": "harness"})
        context.append({"message": {"role": "assistant", "content": _text(text)}, "source": "history", "turn_index": 0})

    user("turn-1", "tidy the notes: list the files and read both notes")
    tools("turn-1", [("call_ls", "bash", "file_system.bash", {"command": "ls"}, {"command": "ls", "returncode": 0, "stdout": "a.md\nb.md\n"})])
    tools("turn-1", [("call_ra", "read_file", "file_system.read_file", {"path": "a.md"}, {"content": "alpha", "path": "a.md"}),
                     ("call_rb", "read_file", "file_system.read_file", {"path": "b.md"}, {"content": "beta", "path": "b.md"})])
    answer("turn-1", "a-1", "a.md says alpha, b.md says beta.")
    user("turn-2", "replace alpha with gamma in a.md")
    if child:
        w.responses += 2  # the run_typescript call, the wait
        code = f"return await tools.agents.spawn({{name: 'reader', message: {json.dumps(TASK)}}});"
        w.tool_calls += [("call_ts", "run_typescript"), ("call_wt", "wait")]
        context.append({"message": {"role": "assistant", "content": [{"type": "tool_call", "id": "call_ts", "name": "run_typescript",
                                                                      "arguments": {"type": "json", "value": {"code": code}}}]},
                        "source": "history", "turn_index": 0})
        entries.append({"type": "effect", "id": "effect-spawn", "turnId": "turn-2", "createdAt": next(clock),
                        "detail": {"kind": "subagent", "toolName": "agents.spawn", "agentName": "reader", "childSessionId": CHILD,
                                   "input": {"agent": "generic", "task": TASK}},
                        "state": {"output": {"type": "success", "structured_content": {"type": "success"}, "_meta": {
                            "mistral.vibe.subagent": {"childSessionId": CHILD, "spawnCallId": "typescript:3:call_ts:0:tool:0"}}}}})
        context.append({"message": {"role": "tool", "tool_call_id": "call_ts", "name": "run_typescript", "content": _text('{"type":"success"}')},
                        "source": "history", "turn_index": 0})
        context.append({"message": {"role": "user", "content": _text("Runtime notification:\n{\"message\": \"Subagent reader completed turn 1.\"}")
                                    + _text("a.md holds alpha.")}, "source": "injection", "turn_index": 0})
        tools("turn-2", [("call_wt", "wait", "self.wait", {"timeout_ms": 5000}, {"reason": "timeout"})])
        w.tool_calls.pop()  # tools() added the wait again
        w.responses -= 1
        make_child(root)
    tools("turn-2", [("call_ed", "edit", "file_system.edit", {"file_path": "a.md", "old_string": "alpha", "new_string": "gamma"},
                      {"file": "a.md", "lines_changed": 1})])
    answer("turn-2", "a-2", "a.md now says gamma.")
    _chunk(folder, list(context))  # the context of turn 2's generation, left beside (call ids of the earlier turns)
    w.last_context_before_fold = 31_009
    (folder / "generations" / "0000000000000030").mkdir()
    (folder / "generations" / "0000000000000030" / "checkpoint.json").write_text(json.dumps(
        {"checkpoint_version": 1, "compaction_count": 0, "last_reported_context_tokens": w.last_context_before_fold}))

    # Turn 3: the compaction first, then a bash call and an answer; its journal is kept.
    user("turn-3", "now count the lines of a.md")
    compaction = "cafe0000-0000-5000-8000-000000000001"
    entries.append({"type": "checkpoint", "kind": "compaction", "id": f"checkpoint-compaction-{compaction}", "turnId": "turn-3",
                    "createdAt": next(clock), "message": "Context compacted",
                    "details": {"attempt": 1, "summaryLength": len(SUMMARY), "trigger": "automatic"}})
    kept = [
        {"message": {"role": "user", "content": _text("You are continuing a trajectory after a context compaction.\n\n<previous_user_messages>")},
         "source": "injection", "turn_index": 0},
        {"message": {"role": "user", "content": _text("tidy the notes: list the files and read both notes")}, "source": "history", "turn_index": 0},
        {"message": {"role": "user", "content": _text("replace alpha with gamma in a.md")}, "source": "history", "turn_index": 0},
        {"message": {"role": "user", "content": _text(f"</previous_user_messages>\n\n<compaction_summary>\n{SUMMARY}\n</compaction_summary>")},
         "source": "injection", "turn_index": 0},
        {"message": {"role": "assistant", "content": _text("a.md now says gamma.")}, "source": "history", "turn_index": 0},
        {"message": {"role": "user", "content": _text("now count the lines of a.md")}, "source": "history", "turn_index": 0},
    ]
    context[:] = kept
    tools("turn-3", [("call_wc", "bash", "file_system.bash", {"command": "wc -l a.md"}, {"command": "wc -l a.md", "stdout": "1 a.md\n"})])
    answer("turn-3", "a-3", "a.md has one line.")
    journal = []
    seq = iter(range(31, 200))

    def rec(kind: str, payload: dict) -> None:
        journal.append({"type": kind, "sequence": next(seq), "payload": payload})

    w.compaction_usage = (9_345, 54)
    rec("action_intent", {"kind": "completion", "action_id": compaction,
                          "request": {"purpose": "compaction", "compaction_id": compaction, "trigger": "automatic"}})
    rec("projection_delta", {"delta": [{"op": "append_entry", "entry": next(e for e in entries if e["type"] == "checkpoint")}]})
    rec("action_result", {"action_id": compaction, "result": {"type": "completion_succeeded", "result": {
        "parts": _text(SUMMARY), "usage": {"input_tokens": 9_345, "output_tokens": 54}}}})
    for action, usage, parts in (("agent-5", (8_684, 19), [{"type": "tool_call", "id": "call_wc", "name": "bash",
                                                             "arguments_json": json.dumps({"command": "wc -l a.md"})}]),
                                 ("a-3", (8_828, 8), _text("a.md has one line."))):
        w.measured.append(usage)
        rec("action_intent", {"kind": "completion", "action_id": action, "request": {"purpose": "agent"}})
        rec("action_result", {"action_id": action, "result": {"type": "completion_succeeded", "result": {
            "parts": parts, "usage": {"input_tokens": usage[0], "output_tokens": usage[1], "cached_input_tokens": 0}}}})
        if action == "agent-5":
            rec("action_intent", {"kind": "tool", "action_id": "call_wc-action", "request": {"call_id": "call_wc"}})
    (folder / "journal" / "0000000000000031.jsonl").write_text("".join(json.dumps(r) + "\n" for r in journal))

    generation = "0000000000000040"
    (folder / "generations" / generation).mkdir()
    manifest = {"generation": generation, "checkpoint": {"chunks": [_chunk(folder, context)]},
                "projection_state": {"chunks": [_chunk(folder, entries)]}}
    (folder / "generations" / generation / "manifest.json").write_text(json.dumps(manifest))
    (folder / "generations" / generation / "checkpoint.json").write_text(json.dumps({"last_reported_context_tokens": 8_836}))
    (folder / "CURRENT").write_text(json.dumps({"generation": generation, "session_id": sid,
                                                "store_format": "mistral.vibe.unified-session-store/v1"}))
    (folder / "meta.json").write_text(json.dumps({
        "session_id": sid, "parent_session_id": None, "start_time": "2027-01-15T08:00:00+00:00",
        "end_time": "2027-01-15T08:05:00+00:00", "environment": {"working_directory": cwd}, "title": None,
        "config": {"active_model": "devstral", "model_name": MODEL}}))
    return w

"""The Codex rollout (pure, no Django): the Codex format's own export target's writer (declared on
importers/codex/parser.py).

``codex_rollout_lines`` writes a rollout `codex resume` reads: the source's own rollout items as
they were where it has them, the others written from their blocks, every call answered;
``codex_session`` adds the file's name and how to resume it; ``codex_commands`` are the commands
that put it in place and resume it. The shared preparation and notes are core/export.py's.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from .export import ExportMeta, Written, _iso, _Notes, _timestamp, export_session_id, openai_function_name, shell_path


CODEX_ITEMS = frozenset({"response_item", "compacted"})


def _codex_line(m: dict) -> dict | None:
    """The message's stored rollout line (``raw``), if it is one."""
    raw = m.get("raw")
    if not isinstance(raw, str) or not raw.startswith("{"):
        return None
    try:
        obj = json.loads(raw)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) and isinstance(obj.get("payload"), dict) else None


def _codex_items(m: dict, notes: _Notes) -> list[dict]:
    """Responses API input items of one message written from its stored blocks."""
    role = m.get("role")
    out: list[dict] = []
    texts: list[str] = []

    def flush():
        if texts:
            kind = "output_text" if role == "assistant" else "input_text"
            out.append({"type": "message", "role": "assistant" if role == "assistant" else "user",
                        "content": [{"type": kind, "text": t} for t in texts]})
            texts.clear()

    for b in m.get("blocks") or ():
        kind, text = b.get("kind"), b.get("text") or ""
        if kind == "text":
            if text.strip():
                texts.append(text)
        elif kind == "tool_call":
            flush()
            value = b.get("tool_input")
            arguments = text if value is None else json.dumps(value, ensure_ascii=False)
            out.append({"type": "function_call", "name": openai_function_name(b.get("tool_name")),
                        "arguments": arguments or "{}", "call_id": b.get("tool_id")})
        elif kind == "tool_result":
            flush()
            out.append({"type": "function_call_output", "call_id": b.get("tool_id"), "output": text})
        elif kind == "thinking":
            if text:
                notes.add("reasoning left out (the rollout needs its encrypted content, which only the agent's own line holds)")
        elif kind == "image":
            notes.add("image left out (the rollout is written from text, calls and outputs here)")
        elif text.strip():
            texts.append(f"[{b.get('raw_type') or kind}] {text}")
    flush()
    return out


CODEX_CALLS = {"function_call": "function_call_output", "custom_tool_call": "custom_tool_call_output",
               "local_shell_call": "function_call_output"}
CODEX_OUTPUTS = frozenset(CODEX_CALLS.values())


def _paired(lines: list[dict], notes: _Notes) -> list[dict]:
    """Every call answered in the file: an output whose call is not before it is left out; a call
    left without an output gets "aborted" right after it, as Codex itself answers it when it
    resumes (a selection that cut a turn, a session that ended mid-call)."""
    answered: set[str] = set()
    for line in lines:
        p = line["payload"]
        if line["type"] == "response_item" and p.get("type") in CODEX_OUTPUTS:
            answered.add(p.get("call_id"))
    out: list[dict] = []
    open_calls: set[str] = set()
    for line in lines:
        p = line["payload"]
        kind = p.get("type") if line["type"] == "response_item" else None
        if line["type"] == "compacted":
            open_calls.clear()
        elif kind in CODEX_OUTPUTS:
            if p.get("call_id") not in open_calls:
                notes.add("tool output without its call left out")
                continue
            open_calls.discard(p.get("call_id"))
        out.append(line)
        if kind in CODEX_CALLS and p.get("call_id"):
            if p["call_id"] in answered:
                open_calls.add(p["call_id"])
            else:
                out.append({**line, "payload": {"type": CODEX_CALLS[kind], "call_id": p["call_id"], "output": "aborted"}})
                notes.add("tool call without its output answered \"aborted\" (as Codex answers it when it resumes)")
    return out


def codex_rollout_lines(messages: Sequence[dict], *, session_id: str, cwd: str, model: str = "",
                        start: datetime | None = None) -> tuple[list[dict], list[str]]:
    """A rollout `codex resume` reads: ``session_meta`` (the source's own, with a new id), then one
    line per input item. A message whose stored line is a rollout item is written as that line held
    it (reasoning with its encrypted content, a developer message, the agent's own compaction);
    others are written from their blocks. A fold's summary carried into the file is a ``compacted``
    line whose ``replacement_history`` is what came before it and the summary. Calls and outputs are
    paired (core.build.repair_tool_pairs); what is left out is said in the notes."""
    notes = _Notes()
    kept = []
    for m in messages:
        if (m.get("flags") or {}).get("queued") is True:
            notes.add("queued line left out (typed while the agent worked; the agent read it where it was delivered)")
        else:
            kept.append(m)
    # The conversation's own first time (a summary standing alone carries its fold's); a file whose
    # messages have no time at all is dated when it is written, as Codex dates a new rollout.
    clock = start or next((t for t in (_timestamp(m.get("timestamp")) for m in kept) if t), None) or datetime.now(UTC)
    first = clock
    meta_payload: dict = {}
    lines: list[dict] = []
    history: list[dict] = []

    def add(kind: str, payload: dict):
        lines.append({"timestamp": _iso(clock), "type": kind, "payload": payload})

    for m in kept:
        ts = _timestamp(m.get("timestamp"))
        clock = ts if ts is not None and ts >= clock else clock + timedelta(milliseconds=1)
        line = _codex_line(m)
        if line is not None and line.get("type") == "session_meta":
            meta_payload = dict(line["payload"])
            continue
        if m.get("is_compact_summary") and (line is None or line.get("type") not in CODEX_ITEMS):
            summary = "\n".join(b.get("text") or "" for b in m.get("blocks") or () if b.get("kind") == "text")
            item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": summary}]}
            history.append(item)
            add("compacted", {"message": summary, "replacement_history": list(history)})
            continue
        if line is not None and line.get("type") in CODEX_ITEMS:
            add(line["type"], line["payload"])
            if line["type"] == "compacted" and isinstance(line["payload"].get("replacement_history"), list):
                history = list(line["payload"]["replacement_history"])
            else:
                history.append(line["payload"])
            continue
        if m.get("role") not in ("user", "assistant", "tool"):
            notes.add(f"{m.get('role')} line{' (' + m['subtype'] + ')' if m.get('subtype') else ''} left out (bookkeeping)")
            continue
        for item in _codex_items(m, notes):
            add("response_item", item)
            history.append(item)
            if item["type"] == "message" and item["role"] == "user":
                add("event_msg", {"type": "user_message", "message": "\n".join(c["text"] for c in item["content"]),
                                  "images": [], "local_images": [], "text_elements": []})
    lines = _paired(lines, notes)
    meta_payload.update({"id": session_id, "timestamp": _iso(first), "cwd": cwd or meta_payload.get("cwd") or "/"})
    meta_payload.setdefault("originator", "contextviewer")
    meta_payload.setdefault("cli_version", "0.171.0")
    meta_payload.setdefault("source", "cli")
    meta_payload.setdefault("model_provider", "openai")
    head = {"timestamp": _iso(first), "type": "session_meta", "payload": meta_payload}
    return [head, *lines], notes.render()


def codex_session(messages: Sequence[dict], meta: ExportMeta) -> Written:
    """A rollout `codex resume <id>` reads, with where to save it (the Codex format's own export
    target, declared on its module)."""
    session_id = export_session_id(meta.session_seed)
    lines, notes = codex_rollout_lines(messages, session_id=session_id, cwd=meta.cwd, model=meta.model)
    stamp = lines[0]["timestamp"]
    name = f"rollout-{stamp[:19].replace(':', '-')}-{session_id}.jsonl"
    content = "".join(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n" for line in lines)
    hint = f"Save as ~/.codex/sessions/{stamp[:4]}/{stamp[5:7]}/{stamp[8:10]}/{name}, then run: codex resume {session_id}"
    return Written(content, notes, name, session_id, hint)

# How to continue the rollout in Codex (the pages show it beside the links).
RESUME_HELP = (
    "To continue the Codex rollout: save it under ~/.codex/sessions/YYYY/MM/DD/ (the date in its name) and run "
    "codex resume <the id at the end of its name> (codex exec resume <id> \"...\" without the terminal interface)."
)


def codex_commands(filename: str, session_id: str, cwd: str, download: str) -> list[str]:
    """The commands that move a downloaded rollout where Codex looks (the date in its name) and resume it."""
    stamp = filename.removeprefix("rollout-")[:10]
    folder = f"~/.codex/sessions/{stamp[:4]}/{stamp[5:7]}/{stamp[8:10]}"
    return [f"mkdir -p {folder}", f"mv {download} {folder}/", f"cd {shell_path(cwd or '~')} && codex resume {session_id}"]

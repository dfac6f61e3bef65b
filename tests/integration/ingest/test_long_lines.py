"""Lines of 40 MB and 150 MB, over the 32 MB in-memory cap, import under a memory cap.

A Claude Code session with tool results holding a huge text and a huge base64 image, and a Codex
rollout with huge function_call_output lines: each big line's message is there, its tool result
is paired with its call and ends with a marker saying how much was not kept (shown on the page),
the import says which lines were imported reduced, the lines after them import as usual, and an
over-cap line that is not JSON is still a bad line. The files are written into tmp_path here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from contextviewer.ingest import files as ingest
from contextviewer.viewer import turn_content
from contextviewer.conversations.models import Conversation, Message
from contextviewer.importers.lines import human_size
from tests.sessions import SessionBuilder

pytestmark = pytest.mark.django_db

MB = 1024 * 1024
CAP = 32 * MB
SIZES = (40 * MB, 150 * MB)
# What a line of tool output looks like inside a JSON string (quotes and newlines escaped).
OUTPUT_LINE = b'PASSED tests/test_app.py::test_case \\"quoted\\" 0.01s\\n'
BASE64 = b"iVBORw0KGgoAAAANSUhEUgAA" + b"QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo" * 3
CODEX_SID = "019c0000-aaaa-7bbb-8ccc-00000000beef"
# A memory cap the parse must stay under: far below the 150 MB line, so holding it whole fails.
PEAK_GROWTH_LIMIT = 100 * MB
PEAK_LIMIT = 400 * MB


def _write_big_string(fh, pattern: bytes, size: int) -> int:
    """Write about ``size`` bytes of ``pattern`` (in 1 MB pieces); returns how many were written."""
    piece = pattern * (MB // len(pattern))
    written = 0
    while written + len(piece) <= size:
        fh.write(piece)
        written += len(piece)
    rest = pattern * ((size - written) // len(pattern))
    fh.write(rest)
    return written + len(rest)


def _write_line_around(fh, obj: dict, placeholder: str, pattern: bytes, size: int) -> int:
    """Write ``obj`` as one line, its ``placeholder`` string replaced by ~``size`` bytes of
    ``pattern``; returns the line's length (without its newline)."""
    before, after = json.dumps(obj).encode().split(json.dumps(placeholder).encode())
    fh.write(before + b'"')
    n = _write_big_string(fh, pattern, size - len(before) - len(after) - 2)
    fh.write(b'"' + after + b"\n")
    return len(before) + n + 2 + len(after)


def write_claude_session(path: Path) -> dict:
    """Four turns, each with a tool call answered by a big line (text 40 MB, image 40 MB, text
    150 MB, image 150 MB), then a non-JSON over-cap line, then a last normal turn. Returns what the
    file holds, counted as it is written."""
    b = SessionBuilder()
    expect = {"messages": 0, "big": [], "after": [], "bad_line": None}
    line_no = 0
    with open(path, "wb") as fh:

        def put(line: str) -> None:
            nonlocal line_no
            fh.write(line.encode() + b"\n")
            line_no += 1
            expect["messages"] += 1

        kinds = [("text", SIZES[0]), ("image", SIZES[0]), ("text", SIZES[1]), ("image", SIZES[1])]
        for i, (kind, size) in enumerate(kinds):
            put(b.user(f"Step {i}: read the output"))
            tool = ("Bash", {"command": "pytest -v"}) if kind == "text" else ("Read", {"file_path": "/tmp/shot.png"})
            for line in b.assistant("Reading it", tool=tool):
                put(line)
            tool_id = f"toolu_{b.calls:06d}"
            if kind == "text":
                content: object = "HUGE"
                pattern = OUTPUT_LINE
            else:
                content = [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "HUGE"}}]
                pattern = BASE64
            obj = json.loads(b.tool_result("x"))
            obj["message"]["content"] = [{"type": "tool_result", "tool_use_id": tool_id, "content": content}]
            length = _write_line_around(fh, obj, "HUGE", pattern, size)
            line_no += 1
            expect["messages"] += 1
            expect["big"].append({"line": line_no, "uuid": obj["uuid"], "tool_id": tool_id, "kind": kind, "size": length})
            for line in b.assistant(f"Done with step {i}"):
                put(line)
                expect["after"].append(json.loads(line)["uuid"])
        fh.write(b"this is not json, " * (34 * MB // 18) + b"\n")
        line_no += 1
        expect["bad_line"] = line_no
        put(b.user("Last step"))
        for line in b.assistant("All done"):
            put(line)
            expect["after"].append(json.loads(line)["uuid"])
    return expect


def write_codex_rollout(path: Path) -> dict:
    def env(kind: str, payload: dict) -> dict:
        return {"timestamp": "2026-02-23T12:00:00.000Z", "type": kind, "payload": payload}

    expect = {"messages": 0, "big": [], "after": []}
    line_no = 0
    with open(path, "wb") as fh:

        def put(obj: dict, message: bool = True) -> None:
            nonlocal line_no
            fh.write(json.dumps(obj).encode() + b"\n")
            line_no += 1
            expect["messages"] += message

        put(env("session_meta", {"id": CODEX_SID, "timestamp": "2026-02-23T11:59:59.000Z", "cwd": "/work/app",
                                 "originator": "codex_cli_rs", "cli_version": "0.104.0"}), message=False)
        for i, size in enumerate(SIZES):
            put(env("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": f"Step {i}"}]}))
            call_id = f"call_{i}"
            put(env("response_item", {"type": "function_call", "name": "shell", "call_id": call_id,
                                      "arguments": json.dumps({"command": ["bash", "-lc", "pytest -v"]})}))
            obj = env("response_item", {"type": "function_call_output", "call_id": call_id, "output": "HUGE"})
            length = _write_line_around(fh, obj, "HUGE", OUTPUT_LINE, size)
            line_no += 1
            expect["messages"] += 1
            expect["big"].append({"line": line_no, "tool_id": call_id, "kind": "text", "size": length})
            put(env("response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": f"Done with step {i}"}]}))
            expect["after"].append(line_no)
    return expect


@pytest.fixture(scope="module")
def big_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("long-lines")
    claude = folder / "claude" / "11111111-2222-4333-8444-555555555555.jsonl"
    claude.parent.mkdir()
    codex = folder / "codex" / f"rollout-2026-02-23T12-00-00-{CODEX_SID}.jsonl"
    codex.parent.mkdir()
    files = {"claude": (claude, write_claude_session(claude)), "codex": (codex, write_codex_rollout(codex))}
    yield files
    for path, _ in files.values():
        path.unlink()


def _marker(size: int) -> str:
    return f"of this string not kept; the line was {human_size(size)}]"


PARSE_UNDER_A_MEMORY_CAP = textwrap.dedent(
    """
    import json, resource, sys
    from contextviewer.core.records import BadLine, MessageRecord
    from contextviewer.importers.claude_code import parser as claude_code
    from contextviewer.importers.codex import parser as codex

    def peak():
        # This process's own high-water mark (VmHWM): ru_maxrss would carry over the parent's peak
        # across fork + exec (a large pytest process would seem to be this one).
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KB

    out = {"before": peak(), "files": {}}
    for name, path in json.loads(sys.argv[1]).items():
        with open(path, "rb") as fh:
            records = claude_code.parse(fh) if name == "claude" else codex.parse(fh, path=None)
            messages, bad = [], []
            for r in records:
                if isinstance(r, MessageRecord):
                    results = [(b.tool_id, b.text[-200:], b.images) for b in r.blocks if b.kind == "tool_result"]
                    messages.append({"line": r.line_no, "uuid": r.uuid, "results": results, "raw": len(r.raw)})
                elif isinstance(r, BadLine):
                    bad.append([r.line_no, r.reason])
        out["files"][name] = {"messages": messages, "bad": bad}
    out["after"] = peak()
    print(json.dumps(out))
    """
)


def test_big_lines_parse_within_a_memory_cap(big_files):
    """The parse, alone in a process: its peak memory grows by far less than the biggest line."""
    paths = {name: str(path) for name, (path, _) in big_files.items()}
    env = {**os.environ, "CONTEXTVIEWER_MAX_LINE_BYTES": str(CAP)}
    done = subprocess.run(
        [sys.executable, "-c", PARSE_UNDER_A_MEMORY_CAP, json.dumps(paths)],
        capture_output=True, text=True, env=env, cwd=Path(__file__).resolve().parents[3], timeout=900,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["after"] - out["before"] < PEAK_GROWTH_LIMIT, out
    assert out["after"] < PEAK_LIMIT, out
    for name, (_, expect) in big_files.items():
        got = out["files"][name]
        assert len(got["messages"]) == expect["messages"], name
        by_line = {m["line"]: m for m in got["messages"]}
        for big in expect["big"]:
            message = by_line[big["line"]]
            ((tool_id, tail, images),) = message["results"]
            assert tool_id == big["tool_id"]
            assert tail.endswith(_marker(big["size"]))
            assert images == (1 if big["kind"] == "image" else 0)
            assert message["raw"] < 2 * MB  # the stored line is the reduced one
        notices = [(n, reason) for n, reason in got["bad"] if "imported reduced" in reason]
        assert [n for n, _ in notices] == [big["line"] for big in expect["big"]]
        for (n, reason), big in zip(notices, expect["big"]):
            assert reason.startswith(f"line {n} is {human_size(big['size'])}, over the 32.0 MiB limit: imported reduced (")


def test_big_lines_import_with_their_results_paired_and_marked_on_the_page(big_files, project, user, client, settings):
    settings.MAX_LINE_BYTES = CAP
    client.force_login(user)
    for name, (path, expect) in big_files.items():
        report = ingest.import_path(project, path)
        conv = Conversation.objects.get(pk=report.conversation_ids[0])
        assert Message.objects.filter(conversation=conv).count() == expect["messages"], name
        reasons = {e["line"]: e["reason"] for e in report.errors}
        for big in expect["big"]:
            assert "imported reduced" in reasons[big["line"]], reasons
        if expect.get("bad_line"):
            bad = expect["bad_line"]
            assert reasons[bad].startswith(f"line {bad} is 34.0 MiB, over the 32.0 MiB limit, and is not valid JSON (")
            assert reasons[bad].endswith("; skipped")
            assert len(reasons) == len(expect["big"]) + 1
        else:
            assert len(reasons) == len(expect["big"])

        for big in expect["big"]:
            message = Message.objects.get(conversation=conv, line_no=big["line"])
            (result,) = [b for b in message.blocks if b["kind"] == "tool_result"]
            assert result["tool_id"] == big["tool_id"]
            marker = _marker(big["size"])
            assert result["text"].endswith(marker)
            assert marker in message.raw and len(message.raw) < 2 * MB
            # Paired with its call: the page shows the result, marker and all, under the call.
            view = turn_content.turn_view(conv, message.turn)
            (call,) = [b for m in view.messages for b in m.blocks if b.kind == "tool_call" and b.tool_id == big["tool_id"]]
            assert call.result is not None and call.result.text.endswith(marker)
            assert client.get(f"/c/{conv.pk}/?turn={message.turn}").status_code == 200
            # The turn as the page shows it when opened: the call, then its result ending with the marker.
            html = client.get(f"/c/{conv.pk}/turns/{message.turn}/", headers={"HX-Request": "true"}).content.decode()
            assert marker in html
            assert html.index(big["tool_id"]) < html.index(marker)
        # The lines after each big line are there as written.
        if name == "claude":
            assert Message.objects.filter(conversation=conv, uuid__in=expect["after"]).count() == len(expect["after"])
        else:
            assert Message.objects.filter(conversation=conv, line_no__in=expect["after"]).count() == len(expect["after"])

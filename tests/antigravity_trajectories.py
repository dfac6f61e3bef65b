"""Antigravity CLI trajectory files written here from the facts other readers of the CLI's files record (the
CLI does not run here: it needs a Google login). The facts and where each comes from are in
``contextviewer/importers/antigravity_cli/parser.py``'s docstring: wesm/agentsview's
``internal/parser/antigravity_cli.go`` (a5de5dac; the folder, the ``<uuid>.trajectory.json`` decode, its
step types and payloads, ``generatorMetadata`` usage written as strings, ``agyReader.parentCascadeId``,
``history.jsonl``), wk23aau/GPI's ``trajectory/README.md`` and volcanlock/antigravity2api-nodejs's
``src/utils/trajectory.js`` (``chatStartMetadata.createdAt``, ``MODEL_PLACEHOLDER_`` models).

What is in them, counted by hand (the tests state these):

- ``MAIN`` ("Fix the failing test in calc.py", workspace /home/dev/calc in ``history.jsonl``): 12 steps.
  user: 0 and 10 (prompts) and the checkpoint 6 (its summary) -> 3; assistant (planner responses) 1, 4, 7,
  11 -> 4; tool: 2 (VIEW_FILE), 3 (RUN_COMMAND, exit 1), 5 (CODE_ACTION, a diff of 2 lines), 9
  (GREP_SEARCH) -> 4; other: 8 (an EPHEMERAL_MESSAGE) -> 1; 12 messages, and 1 fold (the checkpoint,
  whose marker makes 13 records). Tool calls c1 view_file, c2 run_command, c3 replace_file_content, c4
  invoke_subagent, c5 grep_search (5); results for c1, c2, c3, c5 (4; what answers a sub-agent call is not
  in the facts, so c4 has none). Generations: 0 over steps 1-3, 1 over 4-5, 2 over 7-9 with the usage in
  ``USAGE``; 3 over step 11 with an empty usage (a failed generation) -> 11 is a call of its own, unmeasured:
  4 calls.
- ``CHILD``: a sub-agent trajectory (``agyReader.parentCascadeId`` = MAIN): a prompt and one planner
  response, one generation (input 400, output 20).
"""

from __future__ import annotations

import json
from pathlib import Path

MAIN = "5a1c7e2d-3b4f-4c6a-8d9e-0f1a2b3c4d5e"
CHILD = "9b8a7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d"
MODEL = "MODEL_PLACEHOLDER_M26"
CWD = "/home/dev/calc"
PROMPT = "Fix the failing test in calc.py"
SUMMARY = "The add() bug was found by the test run and fixed; a reviewer sub-agent was asked to check it."
# generation -> (inputTokens, outputTokens (thinking included), thinkingOutputTokens, cacheReadTokens)
USAGE = {0: (1_200, 150, 40, 0), 1: (300, 90, 0, 1_300), 2: (250, 60, 0, 1_500)}


def _at(second: int) -> str:
    return f"2026-03-02T10:00:{second:02d}.123456789Z"


def _step(kind: str, second: int, execution: str | None = None, **payload) -> dict:
    meta = {"createdAt": _at(second)}
    if execution:
        meta["executionId"] = execution
    return {"type": f"CORTEX_STEP_TYPE_{kind}", "status": "CORTEX_STEP_STATUS_DONE", "metadata": meta, **payload}


def _call(cid: str, name: str, args: dict) -> dict:
    return {"id": cid, "name": name, "argumentsJson": json.dumps(args)}


def _gen(indices: list[int], usage: tuple | None, second: int) -> dict:
    chat = {"model": MODEL, "chatStartMetadata": {"createdAt": _at(second), "checkpointIndex": -1,
                                                  "contextWindowMetadata": {"estimatedTokensUsed": 3000}}}
    if usage is None:
        chat["usage"] = {}
    else:
        i, o, t, c = usage
        # Counts written as JSON strings, as the daemon writes them; generation 2's as numbers (read too).
        fmt = (lambda n: n) if indices[0] == 7 else str
        chat["usage"] = {"model": MODEL, "inputTokens": fmt(i), "outputTokens": fmt(o), "thinkingOutputTokens": fmt(t),
                         "cacheReadTokens": fmt(c)}
    return {"stepIndices": indices, "chatModel": chat}


def main_trajectory() -> dict:
    calc = f"{CWD}/calc.py"
    steps = [
        _step("USER_INPUT", 0, userInput={"userResponse": PROMPT}),
        _step("PLANNER_RESPONSE", 1, plannerResponse={
            "thinking": "Read the file, then run the tests.", "response": "Let me look at calc.py and run the tests.",
            "toolCalls": [_call("c1", "view_file", {"AbsolutePath": calc}),
                          _call("c2", "run_command", {"CommandLine": "pytest -q", "Cwd": CWD})]}),
        _step("VIEW_FILE", 2, "c1", viewFile={"absolutePathUri": f"file://{calc}", "content": "def add(a, b):\n    return a - b\n"}),
        _step("RUN_COMMAND", 3, "c2", runCommand={"commandLine": "pytest -q", "cwd": CWD, "exitCode": 1,
                                                  "combinedOutput": {"stdout": "1 failed, 3 passed"}}),
        _step("PLANNER_RESPONSE", 4, plannerResponse={"toolCalls": [_call("c3", "replace_file_content", {
            "TargetFile": calc, "TargetContent": "return a - b", "ReplacementContent": "return a + b"})]}),
        _step("CODE_ACTION", 5, "c3", codeAction={"description": "fix add", "actionResult": {"edit": {"diff": {"unifiedDiff": {"lines": [
            {"text": "    return a - b", "type": "UNIFIED_DIFF_LINE_TYPE_DELETE"},
            {"text": "    return a + b", "type": "UNIFIED_DIFF_LINE_TYPE_INSERT"}]}}}}}),
        _step("CHECKPOINT", 6, checkpoint={"userRequests": [PROMPT], "sessionSummary": SUMMARY}),
        _step("PLANNER_RESPONSE", 7, plannerResponse={"response": "I will ask a reviewer and check other callers.", "toolCalls": [
            _call("c4", "invoke_subagent", {"name": "reviewer", "Prompt": "Review the fix in calc.py"}),
            _call("c5", "grep_search", {"Query": "add(", "SearchPath": CWD})]}),
        _step("EPHEMERAL_MESSAGE", 8, ephemeralMessage={"content": "<artifact_reminder>none yet</artifact_reminder>"}),
        _step("GREP_SEARCH", 9, "c5", grepSearch={"query": "add(", "searchPathUri": f"file://{CWD}"}),
        _step("USER_INPUT", 10, userInput={"userResponse": "thanks"}),
        _step("PLANNER_RESPONSE", 11, plannerResponse={"response": "Done: add() is fixed and the tests pass."}),
    ]
    gens = [_gen([1, 2, 3], USAGE[0], 1), _gen([4, 5], USAGE[1], 4), _gen([7, 8, 9], USAGE[2], 7), _gen([11], None, 11)]
    return {"trajectoryId": "0d0e0f10-1112-4314-9516-171819202122", "cascadeId": MAIN, "steps": steps,
            "generatorMetadata": gens, "executorMetadatas": [{"lastStepIdx": 11, "numGeneratorInvocations": 4}]}


def child_trajectory() -> dict:
    steps = [_step("USER_INPUT", 20, userInput={"userResponse": "Review the fix in calc.py"}),
             _step("PLANNER_RESPONSE", 21, plannerResponse={"response": "The fix is right."})]
    return {"trajectoryId": "2a2b2c2d-2e2f-4031-8233-343536373839", "cascadeId": CHILD, "steps": steps,
            "generatorMetadata": [{"stepIndices": [1], "chatModel": {"model": MODEL, "usage": {
                "inputTokens": "400", "outputTokens": "20", "thinkingOutputTokens": "0", "cacheReadTokens": "0"}}}],
            "agyReader": {"parentCascadeId": MAIN}}


def write_trajectory(folder: Path, doc: dict | None = None) -> Path:
    doc = doc if doc is not None else main_trajectory()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{doc['cascadeId']}.trajectory.json"
    path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    return path


def write_home(root: Path) -> Path:
    """``<root>/`` laid out as ``~/.gemini/antigravity-cli``: both trajectories in ``conversations/`` and a
    ``history.jsonl`` naming MAIN's workspace; the conversations folder."""
    folder = root / "conversations"
    write_trajectory(folder, main_trajectory())
    write_trajectory(folder, child_trajectory())
    row = {"display": PROMPT, "workspace": CWD, "timestamp": 1_772_445_600_000, "conversationId": MAIN}
    (root / "history.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    return folder

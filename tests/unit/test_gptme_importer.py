"""gptme conversation folders (importers/gptme), on folders this test writes from the format's facts
(gptme 0.35.1's own source and what it wrote here, offline: ops/drivers/gptme.py; the real CLI's
run is tests/agents/test_gptme_conformance.py). The generator below writes what gptme writes: a
conversation.jsonl of message lines (`@tool(call id): {json}` calls in assistant text, results as
system lines with a call_id, usage in metadata), a checkpoint request and its answer, the view the
compaction made, config.toml, and a sub-agent folder beside it. The expected counts are counted from
what the generator wrote (its list of lines), not from the importer."""

from __future__ import annotations

import json
from pathlib import Path

from contextviewer.core.records import AgentLink, BadLine, FoldRecord, MessageRecord, SessionInfo, UsageRecord
from contextviewer.importers import formats
from contextviewer.importers.gptme.parser import assistant_blocks, group, parse
from tests.importers import of, parse_path

T = "2026-12-07T10:00:{:02d}.000000"


def msg(role: str, content: str, second: int, **extra) -> dict:
    return {"role": role, "content": content, "timestamp": T.format(second), **extra}


def call(text: str, tool: str, call_id: str, args: dict, second: int, input_tokens: int) -> dict:
    return msg("assistant", f"{text}\n@{tool}({call_id}): {json.dumps(args)}", second,
               metadata={"model": "local/m", "usage": {"input_tokens": input_tokens, "output_tokens": 9}})


def result(call_id: str, text: str, second: int) -> dict:
    return msg("system", text, second, call_id=call_id)


SUMMARY = "## Objective\nList and read.\n## Current State\nDone."
HEAD = [
    msg("system", "You are gptme v0.35.1, a general-purpose AI assistant.", 0, pinned=True, hide=True),
    msg("system", "## System Information\n\n**Working Directory:** /home/dev/app", 0, pinned=True, hide=True),
]
BEFORE = [  # history the compaction keeps verbatim
    msg("user", "list the files", 1),
    call("Listing.", "shell", "call_1", {"command": "ls"}, 2, 1200),
    result("call_1", "a.py\nb.py", 3),
    msg("system", "<system_warning>Token usage: 900/128000</system_warning>", 3, hide=True),
    call("", "read", "call_2", {"path": "/home/dev/app/a.py"}, 4, 150_000),
    result("call_2", "print('a')", 5),
]
CHECKPOINT = [
    msg("user", "Context budget has been reached — produce a structured checkpoint before history is compacted.", 6,
        metadata={"compaction_checkpoint_view": ""}),
    msg("assistant", SUMMARY, 7, metadata={"model": "local/m", "usage": {"input_tokens": 1500, "output_tokens": 40}}),
    msg("system", "✅ LLM-powered resume completed:\n• View: compacted-001", 8, hide=True, ui_only=True),
]
AFTER = [
    msg("user", "now ask a sub-agent", 9),
    call("", "ipython", "call_3", {"code": "subagent('reader', 'read b.py')\nsubagent_wait('reader')"}, 10, 1700),
    result("call_3", "Executed code block.", 12),
    call("", "complete", "call_4", {}, 13, 1800),
    result("call_4", "Task complete. Autonomous session finished.", 13),
]
HISTORY = HEAD + BEFORE + CHECKPOINT + AFTER


def write_jsonl(path: Path, lines: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def write_logs(root: Path, history: list[dict] = HISTORY, view: bool = True) -> Path:
    """A logs folder: the conversation `work` (its view when `view`) and its sub-agent `subagent-reader-ab12`."""
    conv = root / "work"
    write_jsonl(conv / "conversation.jsonl", history)
    (conv / "config.toml").write_text('[chat]\nmodel = "local/m"\nname = "Files and a sub-agent"\n')
    write_jsonl(conv / "events.jsonl", [])
    if view:
        intro = msg("system", "Previous conversation resumed from /home/dev/.local/share/gptme/logs/work/RESUME.md:", 8)
        write_jsonl(conv / "views" / "compacted-001.jsonl", HEAD + [intro, msg("assistant", SUMMARY, 8)] + BEFORE + CHECKPOINT[2:] + AFTER)
    (conv / "compaction.jsonl").write_text(json.dumps({"trigger": "budget", "method": "summarize",
                                                       "tokens": {"before_estimated": 700, "after_estimated": 650}}) + "\n")
    sub = root / "subagent-reader-ab12"
    write_jsonl(sub / "conversation.jsonl", [
        HEAD[0], msg("user", "read b.py", 10), call("", "shell", "call_5", {"command": "cat b.py"}, 11, 300),
        result("call_5", "print('b')", 11), call("", "complete", "call_6", {}, 11, 350), result("call_6", "Task complete.", 11),
    ])
    (sub / "config.toml").write_text('[chat]\nname = "Sub"\n')
    (sub / "subagent-meta.json").write_text(json.dumps({"agent_id": "reader", "prompt": "read b.py",
                                                        "parent_logdir": str(root / "work"), "started_at": 1e12}))
    return conv


def test_a_conversation_folder_gives_its_messages_calls_tools_and_fold(tmp_path):
    records = parse_path(parse, write_logs(tmp_path))
    messages, calls = of(records, MessageRecord), of(records, UsageRecord)
    # Every line is a message, plus the fold's boundary marker.
    assert len(messages) == len(HISTORY) + 1
    # Model calls: the assistant lines with usage, less the checkpoint's answer (the fold's cost).
    answered = [m for m in HISTORY if m["role"] == "assistant"]
    assert len(calls) == len(answered) - 1 == 4
    assert [c.input_uncached for c in calls] == [1200, 150_000, 1700, 1800]
    tool_calls = [b for m in messages for b in m.blocks if b.kind == "tool_call"]
    assert [(b.tool_name, b.tool_id) for b in tool_calls] == [("shell", "call_1"), ("read", "call_2"), ("ipython", "call_3"),
                                                              ("complete", "call_4")]
    results = [m for m in messages if m.role == "tool"]
    assert [m.blocks[0].tool_id for m in results] == ["call_1", "call_2", "call_3", "call_4"]
    (fold,) = of(records, FoldRecord)
    assert fold.trigger == "auto" and fold.summary_text == SUMMARY and fold.tokens_before is None
    assert fold.cost["calls"] == 1 and fold.cost["input_uncached"] == 1500
    # What the view kept: the BEFORE lines, found in the history (uuid = <folder>:<line>).
    first = len(HEAD) + 1
    assert fold.preserved_uuids == [f"work:{n}" for n in range(first, first + len(BEFORE))]
    summary = next(m for m in messages if m.is_compact_summary)
    assert summary.role == "assistant" and summary.api_message_id is None
    info = of(records, SessionInfo)[-1]
    assert (info.external_id, info.title, info.cwd, info.cli_version) == ("work", "Files and a sub-agent", "/home/dev/app", "0.35.1")


def test_the_sub_agent_is_read_with_its_parent_under_the_call_that_started_it(tmp_path):
    write_logs(tmp_path)
    found = formats.discover(tmp_path)
    assert [(s.format, s.main.name, [f.agent_id for f in s.subagents]) for s in found.sessions] == [
        ("gptme", "work", ["subagent-reader-ab12"])]
    (link,) = of(parse_path(parse, tmp_path / "work"), AgentLink)
    assert (link.agent_id, link.tool_use_id, link.agent_type) == ("subagent-reader-ab12", "call_3", "reader")
    # The sub-agent's folder named alone goes under its parent's conversation.
    (alone,) = group([tmp_path / "subagent-reader-ab12"])
    assert alone.main is None and alone.session_id == "work"


def test_a_fold_whose_view_is_gone_keeps_its_summary(tmp_path):
    (fold,) = of(parse_path(parse, write_logs(tmp_path, view=False)), FoldRecord)
    assert fold.summary_text == SUMMARY and fold.preserved_uuids == []


def test_an_unapplied_checkpoint_is_no_fold_and_its_answer_a_call(tmp_path):
    history = HEAD + BEFORE + CHECKPOINT[:2] + AFTER  # no view, no "resume completed": it did not apply
    records = parse_path(parse, write_logs(tmp_path, history, view=False))
    assert not of(records, FoldRecord)
    assert len(of(records, UsageRecord)) == 5


def test_tool_calls_in_an_assistant_line():
    blocks = assistant_blocks('Let me look.\n@shell(call_a): {"command": "echo \\"}\\""}\n'
                              '```text\n@shell(call_b): {"command": "not a call"}\n```\n@save(c-1): {"path": "x", "content": "y"}')
    assert [(b.kind, b.tool_id) for b in blocks] == [("text", None), ("tool_call", "call_a"), ("text", None), ("tool_call", "c-1")]
    assert blocks[1].tool_input == {"command": 'echo "}"'} and "not a call" in blocks[2].text
    assert [b.kind for b in assistant_blocks("plain text, no call")] == ["text"]


def test_bad_lines_are_said_and_the_rest_is_read(tmp_path):
    conv = write_logs(tmp_path)
    with open(conv / "conversation.jsonl", "a") as fh:
        fh.write('{"role": "user", "content": "cut sho\n[1, 2]\n')
    records = parse_path(parse, conv)
    reasons = [b.reason for b in of(records, BadLine)]
    assert len(reasons) == 2 and "not JSON" in reasons[0] and "not a gptme message" in reasons[1]
    assert len(of(records, UsageRecord)) == 4


def test_a_folder_without_its_history_is_refused_by_name(tmp_path):
    (tmp_path / "work").mkdir()
    records = parse_path(parse, tmp_path / "work")
    (bad,) = of(records, BadLine)
    assert "no gptme conversation folder" in bad.reason


def test_the_log_alone_is_gptme_and_look_alikes_are_not(tmp_path):
    conv = write_logs(tmp_path)
    alone = tmp_path / "elsewhere" / "chat.jsonl"
    alone.parent.mkdir()
    alone.write_bytes((conv / "conversation.jsonl").read_bytes())
    assert formats.claim(alone).name == "gptme"
    assert formats.claim(conv / "conversation.jsonl").name == "gptme"
    # A chat-message JSONL without gptme's system prompt or keys is not gptme's.
    other = tmp_path / "other.jsonl"
    write_jsonl(other, [{"role": "user", "content": "hi", "timestamp": T.format(1)}, {"role": "assistant", "content": "yo", "timestamp": T.format(2)}])
    claimed = formats.claim(other)
    assert claimed is None or claimed.name != "gptme"


def test_the_markdown_tool_format_gives_calls_and_their_outputs(tmp_path):
    # gptme's default format: a tool call is a fenced block tagged with the tool (tools/base.py
    # ToolUse._from_codeblock), its output the system lines after it (no call id in either).
    conv = tmp_path / "md"
    answer = {"model": "local/m", "usage": {"input_tokens": 500, "output_tokens": 5}}
    write_jsonl(conv / "conversation.jsonl", [
        HEAD[0], msg("user", "list, then write hello.py", 1),
        msg("assistant", "Let me list.\n```shell\nls -la\n```", 2, metadata=answer),
        msg("system", "Ran command: `ls -la`\n```stdout\na.py\n```", 3),
        msg("system", "<system_warning>Token usage: 900/128000</system_warning>", 3, hide=True),
        msg("assistant", "```save /home/dev/app/hello.py\nprint('hi')\n```\nSaved it.", 4, metadata=answer),
        msg("system", "Saved to /home/dev/app/hello.py", 5),
        msg("assistant", "Done: ```python\nnot a tool\n```", 6, metadata=answer),
    ])
    (conv / "config.toml").write_text('[chat]\ntool_format = "markdown"\n')
    records = parse_path(parse, conv)
    messages = of(records, MessageRecord)
    calls = [b for m in messages for b in m.blocks if b.kind == "tool_call"]
    assert [(b.tool_name, b.tool_input) for b in calls] == [
        ("shell", {"command": "ls -la"}), ("save", {"path": "/home/dev/app/hello.py", "content": "print('hi')"})]
    results = [m.blocks[0] for m in messages if m.role == "tool"]
    assert [r.tool_id for r in results] == [c.tool_id for c in calls] and "a.py" in results[0].text
    assert len(of(records, UsageRecord)) == 3
    # The same lines in the tool format (config.toml says so): fenced blocks are text, not calls.
    (conv / "config.toml").write_text('[chat]\ntool_format = "tool"\n')
    assert not [b for m in of(parse_path(parse, conv), MessageRecord) for b in m.blocks if b.kind == "tool_call"]


def test_a_manual_compact_folds_where_it_completed_with_the_summary_its_view_holds(tmp_path):
    # /compact while in the compacted view: the history gets the command and gptme's status lines;
    # the view is written again (its intro at the time of the /compact): the new checkpoint, then
    # what it kept (here all of it: the first fold's kept lines and what followed).
    manual_summary = "## Objective\nBy hand."
    tail = [
        msg("user", "/compact", 20), msg("system", "🔄 Generating conversation resume with LLM...", 21, ui_only=True),
        msg("system", "✅ LLM-powered resume completed:\n• Conversation history replaced", 22, ui_only=True),
        call("", "complete", "call_9", {}, 23, 1900), result("call_9", "Task complete.", 23),
    ]
    conv = write_logs(tmp_path, HISTORY + tail, view=False)
    intro = msg("system", "Previous conversation resumed from /home/dev/.local/share/gptme/logs/work/RESUME.md:", 21)
    write_jsonl(conv / "views" / "compacted-001.jsonl",
                HEAD + [intro, msg("assistant", manual_summary, 21)] + BEFORE + CHECKPOINT[2:] + AFTER + tail[2:])
    records = parse_path(parse, conv)
    auto, manual = of(records, FoldRecord)
    assert (auto.trigger, manual.trigger) == ("auto", "manual")
    assert auto.summary_text == SUMMARY and manual.summary_text == manual_summary and manual.cost is None
    first = len(HEAD) + 1
    # The automatic fold's kept lines come from the head of the rewritten view's tail.
    assert auto.preserved_uuids == [f"work:{n}" for n in range(first, first + len(BEFORE))]
    # The manual one kept everything before the /compact line (the automatic checkpoint request and
    # answer were never in the view).
    request = len(HISTORY) + 1
    kept = [n for n in range(first, request) if n not in (first + len(BEFORE), first + len(BEFORE) + 1)]
    assert manual.preserved_uuids == [f"work:{n}" for n in kept]
    summary = next(m for m in of(records, MessageRecord) if m.uuid == manual.summary_uuid)
    assert summary.role == "assistant" and summary.blocks[0].text == manual_summary
    assert len(of(records, UsageRecord)) == 5  # the /compact summarizer call is in no file


def test_a_manual_compact_outside_a_view_reads_the_history_from_lossless(tmp_path):
    # No view: /compact rewrote conversation.jsonl (system lines, intro, checkpoint, recent tail) and
    # kept the full history in lossless.jsonl, both appended to since.
    history = HEAD + BEFORE + [msg("user", "/compact", 6), msg("system", "✅ LLM-powered resume completed", 7, ui_only=True),
                               msg("user", "go on", 8), call("", "complete", "call_9", {}, 9, 900)]
    conv = write_logs(tmp_path, history, view=False)
    write_jsonl(conv / "lossless.jsonl", history)
    intro = msg("system", "Previous conversation resumed from RESUME.md:", 7)
    write_jsonl(conv / "conversation.jsonl", HEAD + [intro, msg("assistant", "By hand.", 7)] + BEFORE[3:] + history[-3:])
    records = parse_path(parse, conv)
    (fold,) = of(records, FoldRecord)
    assert (fold.trigger, fold.summary_text) == ("manual", "By hand.")
    first = len(HEAD) + 1
    assert fold.preserved_uuids == [f"work:{n}" for n in range(first + 3, first + len(BEFORE))]
    assert len(of(records, UsageRecord)) == 3

"""An agent's tool vocabulary: which of its tools is a shell, an edit, a read, a search, a sub-agent...

Pure (no Django). Each format declares its agent's names in ``importers/<format>/tools.py``
(``TOOLS = ToolVocabulary(...)``), passed to its entry (``Entry(tools=TOOLS)``); the viewer reads them
through the registry (``formats.tool_vocabulary()``, every format's names together: a stored tool call
does not say which agent's vocabulary it is in, and the names of different agents do not clash) and
shows each call as the view of its kind (viewer/tool_agents.py, viewer/tool_display.py). The kinds are
named after the canonical views, which are Claude Code's tools: Bash, Edit, MultiEdit, Write, Read,
Search (Glob, Grep), TodoWrite, Task, and Browse, Think, Code for what Claude Code has no tool of.

Names are lower case (a call's name is lowered before it is looked up), except ``exec`` and
``patch``, matched as written (Codex's own tools, read by the viewer's own views)."""

from __future__ import annotations

from dataclasses import dataclass, fields

Names = frozenset[str]
NONE: Names = frozenset()


@dataclass(frozen=True)
class ToolVocabulary:
    shell: Names = NONE  # runs a command line: {command, description, cwd|workdir}
    edit: Names = NONE  # edits a file: old and new text (str_replace), an insert, a create
    multi_edit: Names = NONE  # several edits of one file: {file_path, edits: [{old_string, new_string}]}
    write: Names = NONE  # writes a whole file: {path, content}
    read: Names = NONE  # reads a file (a range of it)
    search: Names = NONE  # glob, grep, list a folder: {pattern, path}
    todo: Names = NONE  # the agent's todo list: {todos: [{content, status}]}
    task: Names = NONE  # starts a sub-agent: {prompt, description, subagent_type}
    browse: Names = NONE  # opens a web page: {url} or browser code
    think: Names = NONE  # a thought with no effect: {thought}
    code: Names = NONE  # runs code in a kernel: {code}
    note: Names = NONE  # a note the agent keeps or shows, with no effect on files: a topic {title, summary,
    # strategic_intent}, a memory {fact}
    ask: Names = NONE  # asks the user: {questions: [{question, header, options: [{label, description}]}]}
    commands: Names = NONE  # the agent's own commands when it writes a call as an action line (SWE-agent)
    exec: Names = NONE  # a shell tool taking {cmd|command: argv or line, workdir}, answered in its own shape
    patch: Names = NONE  # applies a patch (a shell call that sends an apply_patch heredoc is one too)

    def __or__(self, other: ToolVocabulary) -> ToolVocabulary:
        return ToolVocabulary(**{f.name: getattr(self, f.name) | getattr(other, f.name) for f in fields(self)})


def names(*words: str) -> Names:
    return frozenset(words)


NO_TOOLS = ToolVocabulary()

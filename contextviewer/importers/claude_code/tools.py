"""Claude Code's tools (tool_vocabulary.py). Its tools are the canonical views themselves (Bash, Edit,
MultiEdit, Write, Read, Glob, Grep, TodoWrite, Task, Agent, matched as written by
viewer/tool_display.py); the lower-case names here are another agent's tools of the same name."""

from contextviewer.importers.tool_vocabulary import ToolVocabulary, names

TOOLS = ToolVocabulary(
    shell=names("bash"),
    edit=names("edit"),
    multi_edit=names("multiedit"),
    write=names("write"),
    read=names("read"),
    search=names("glob", "grep"),
    todo=names("todowrite"),
    task=names("task", "agent"),
)

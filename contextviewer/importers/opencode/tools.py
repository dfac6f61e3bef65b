"""opencode's tools (tool_vocabulary.py)."""

from contextviewer.importers.tool_vocabulary import ToolVocabulary, names

TOOLS = ToolVocabulary(
    shell=names("bash"),
    edit=names("edit"),
    multi_edit=names("multiedit"),
    write=names("write"),
    read=names("read"),
    search=names("glob", "grep", "ls", "list"),
    todo=names("todowrite"),
    task=names("task", "agent"),
    browse=names("webfetch"),
)

"""Kilo's tools (tool_vocabulary.py): opencode's, and its own background processes."""

from contextviewer.importers.tool_vocabulary import ToolVocabulary, names

TOOLS = ToolVocabulary(
    shell=names("bash", "background_process"),
    edit=names("edit"),
    multi_edit=names("multiedit"),
    write=names("write"),
    read=names("read"),
    search=names("glob", "grep", "ls", "list"),
    todo=names("todowrite"),
    task=names("task", "agent"),
    browse=names("webfetch"),
)

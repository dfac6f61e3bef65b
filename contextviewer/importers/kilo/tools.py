"""Kilo's tools (tool_vocabulary.py): opencode's (its `background_process`, `board_*` and
`kilo_local_recall` have no view of their own: a background process is started, listed, stopped...)."""

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

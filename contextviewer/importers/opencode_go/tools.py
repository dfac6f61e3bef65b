"""The Go-era opencode's tools (tool_vocabulary.py), Crush's ancestors."""

from contextviewer.importers.tool_vocabulary import ToolVocabulary, names

TOOLS = ToolVocabulary(
    shell=names("bash"),
    edit=names("edit"),
    write=names("write"),
    read=names("view"),
    search=names("glob", "grep", "ls"),
    browse=names("fetch"),
)

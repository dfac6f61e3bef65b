"""Kimi CLI's tools (tool_vocabulary.py), as its 1.51 requests offer them."""

from contextviewer.importers.tool_vocabulary import ToolVocabulary, names

TOOLS = ToolVocabulary(
    shell=names("shell"),
    edit=names("strreplacefile"),  # {path, edit: {old, new}} (as the 1.51 CLI took it in tests/agents)
    write=names("writefile"),
    read=names("readfile"),
    search=names("glob", "grep"),
    todo=names("settodolist"),
    task=names("agent"),
    browse=names("fetchurl"),
    think=names("think"),
    ask=names("askuserquestion"),
)

"""GitHub Copilot CLI's tools (tool_vocabulary.py), as its 1.0.102 requests offer them."""

from contextviewer.importers.tool_vocabulary import ToolVocabulary, names

TOOLS = ToolVocabulary(
    shell=names("bash"),
    edit=names("edit"),
    write=names("create"),
    read=names("view"),
    search=names("grep", "glob"),
    task=names("task"),
)

"""pi's tools (tool_vocabulary.py), as its 0.73 requests offer them."""

from contextviewer.importers.tool_vocabulary import ToolVocabulary, names

TOOLS = ToolVocabulary(
    shell=names("bash"),
    edit=names("edit"),
    write=names("write"),
    read=names("read"),
    search=names("grep", "find", "ls"),
)

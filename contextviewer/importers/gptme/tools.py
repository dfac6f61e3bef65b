"""gptme's tools (tool_vocabulary.py), as its 0.35 requests offer them (`--tool-format tool`)."""

from contextviewer.importers.tool_vocabulary import ToolVocabulary, names

TOOLS = ToolVocabulary(
    shell=names("shell"),
    edit=names("patch"),
    write=names("save", "append"),
    read=names("read"),
    code=names("ipython"),
)

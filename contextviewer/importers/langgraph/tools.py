"""deepagents' tools (tool_vocabulary.py): its file system tools, a sandbox's shell (`execute`), todo list
and sub-agents."""

from contextviewer.importers.tool_vocabulary import ToolVocabulary, names

TOOLS = ToolVocabulary(
    shell=names("execute"),
    edit=names("edit_file"),
    write=names("write_file"),
    read=names("read_file"),
    search=names("ls", "glob", "grep"),
    todo=names("write_todos"),
    task=names("task"),
)

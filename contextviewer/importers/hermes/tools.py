"""Hermes Agent's tool vocabulary (see importers/tool_vocabulary.py): the names of its tool schemas
(``tools/terminal_tool.py``: terminal; ``tools/file_tools.py``: read_file, write_file, patch,
search_files; ``tools/delegate_tool.py``: delegate_task; ``tools/todo_tool.py``: todo)."""

from contextviewer.importers.tool_vocabulary import ToolVocabulary, names

TOOLS = ToolVocabulary(
    shell=names("terminal"),
    edit=names("patch"),
    write=names("write_file"),
    read=names("read_file"),
    search=names("search_files"),
    task=names("delegate_task"),
    todo=names("todo"),
)

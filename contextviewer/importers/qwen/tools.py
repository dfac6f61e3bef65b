"""Qwen Code's tools (tool_vocabulary.py), as its 0.24 requests offer them."""

from contextviewer.importers.tool_vocabulary import ToolVocabulary, names

TOOLS = ToolVocabulary(
    shell=names("run_shell_command"),
    edit=names("edit"),
    write=names("write_file"),
    read=names("read_file"),
    search=names("glob", "grep_search", "list_directory"),
    todo=names("todo_write"),
    task=names("agent"),
)

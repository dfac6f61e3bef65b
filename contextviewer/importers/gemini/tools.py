"""Gemini CLI's tools (tool_vocabulary.py)."""

from contextviewer.importers.tool_vocabulary import ToolVocabulary, names

TOOLS = ToolVocabulary(
    shell=names("run_shell_command"),
    edit=names("replace"),
    write=names("write_file"),
    read=names("read_file"),
    search=names("glob", "list_directory", "search_file_content"),
    todo=names("write_todos"),
)

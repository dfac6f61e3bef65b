"""Gemini CLI's tools (tool_vocabulary.py): its file and shell tools, its notes (a topic, a memory) and
its questions to the user."""

from contextviewer.importers.tool_vocabulary import ToolVocabulary, names

TOOLS = ToolVocabulary(
    shell=names("run_shell_command"),
    edit=names("replace"),
    write=names("write_file"),
    read=names("read_file"),
    search=names("glob", "list_directory", "search_file_content"),
    todo=names("write_todos"),
    note=names("update_topic", "save_memory"),
    ask=names("ask_user"),
)

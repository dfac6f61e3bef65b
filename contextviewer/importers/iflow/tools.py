"""iFlow CLI's tool vocabulary (see importers/tool_vocabulary.py). iFlow CLI is built on Gemini CLI and
keeps its tool names: ``read_file`` with ``absolute_path`` and ``replace`` with ``file_path``,
``old_string``, ``new_string`` are in a real iFlow log (wesm/agentsview
``internal/parser/testdata/iflow/session-5de701fc-….jsonl``, commit 069d7fe0); ``run_shell_command``,
``write_file``, ``glob``, ``search_file_content``, ``list_directory``, ``read_many_files``, ``web_fetch``,
``save_memory`` are Gemini CLI's (importers/gemini/tools.py); ``task`` is iFlow's Sub Agent call
(platform.iflow.cn/en/cli/examples/subagent), ``todo_write``/``todo_read`` its to-do list."""

from contextviewer.importers.tool_vocabulary import ToolVocabulary, names

TOOLS = ToolVocabulary(
    shell=names("run_shell_command"),
    edit=names("replace"),
    write=names("write_file"),
    read=names("read_file", "read_many_files"),
    search=names("glob", "list_directory", "search_file_content"),
    todo=names("todo_write", "todo_read"),
    task=names("task"),
    browse=names("web_fetch", "web_search"),
    note=names("save_memory"),
)

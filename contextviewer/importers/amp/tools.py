"""Amp's tool vocabulary (see importers/tool_vocabulary.py). The names are those other readers of Amp's
threads list for its tools (wesm/agentsview ``internal/parser/taxonomy.go`` and ``content.go``, commit
aea2eb12: ``Bash`` with ``cmd``, ``Read``/``look_at`` with ``path``, ``edit_file``/``create_file`` with
``path``, ``glob`` with ``filePattern``, ``Grep``, ``finder`` with ``query``, ``read_web_page`` with
``url``, ``Task``); Amp's own ``Bash``, ``Read``, ``Grep`` and ``Task`` are shown by the viewer's own views
(their names as Claude Code's), the lower-case ones below through tool_agents."""

from contextviewer.importers.tool_vocabulary import ToolVocabulary, names

TOOLS = ToolVocabulary(
    shell=names("bash"),
    edit=names("edit_file"),
    write=names("create_file"),
    read=names("look_at"),
    search=names("glob", "finder"),
    todo=names("todo_write"),
    task=names("task"),
    browse=names("read_web_page"),
)

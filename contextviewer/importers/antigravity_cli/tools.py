"""Antigravity CLI's tool vocabulary (see importers/tool_vocabulary.py). The names are those wesm/agentsview's
reader of the CLI's trajectories names (``internal/parser/antigravity_cli.go``, commit a5de5dac, its
``agyToolDetail``): ``run_command``, ``view_file`` (``AbsolutePath``), ``write_to_file``,
``replace_file_content``, ``multi_replace_file_content`` (``TargetFile``), ``grep_search``, ``list_dir``,
``invoke_subagent``, ``search_web``, ``read_url_content``, ``manage_task``, ``ask_question``; and
``task_boundary`` / ``notify_user`` from the system prompt volcanlock/antigravity2api-nodejs keeps
(``src/utils/trajectory.js``, commit 2f2fd97e)."""

from contextviewer.importers.tool_vocabulary import ToolVocabulary, names

TOOLS = ToolVocabulary(
    shell=names("run_command"),
    edit=names("replace_file_content"),
    multi_edit=names("multi_replace_file_content"),
    write=names("write_to_file"),
    read=names("view_file", "list_dir", "view_file_outline"),
    search=names("grep_search", "find_by_name", "codebase_search"),
    todo=names("manage_task", "task_boundary"),
    task=names("invoke_subagent"),
    browse=names("search_web", "read_url_content"),
    ask=names("ask_question", "notify_user"),
)

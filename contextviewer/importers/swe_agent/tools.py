"""SWE-agent's tools (tool_vocabulary.py): bash, its editor, its search commands, and the commands it
writes as an action line (`open src/a.py 40`, `edit 12:14 ... end_of_edit`)."""

from contextviewer.importers.tool_vocabulary import ToolVocabulary, names

TOOLS = ToolVocabulary(
    shell=names("bash"),
    edit=names("str_replace_editor", "edit"),
    search=names("find_file", "search_dir", "search_file", "find"),
    commands=names("open", "goto", "scroll_up", "scroll_down", "create", "edit", "insert", "submit", "find_file",
                   "search_dir", "search_file"),
)

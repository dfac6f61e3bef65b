"""OpenHands' tools (tool_vocabulary.py): the v1 tools (terminal, file_editor, task_tracker, browser), the
v0 function calls (execute_bash, str_replace_editor, browse...), the v0 actions (run, edit, read, write,
browse, think) and the v1 action kinds (lower-cased: CmdRunAction...)."""

from contextviewer.importers.tool_vocabulary import ToolVocabulary, names

TOOLS = ToolVocabulary(
    shell=names("execute_bash", "terminal", "run", "cmdrunaction", "executebashaction", "terminalaction"),
    edit=names("str_replace_editor", "file_editor", "edit", "str_replace", "fileeditaction", "strreplaceeditoraction",
               "fileeditoraction"),
    write=names("write", "create_file", "filewriteaction"),
    read=names("read", "filereadaction"),
    todo=names("task_tracker"),
    browse=names("browse", "web_read", "browseurlaction", "browsernavigateaction", "browser_navigate", "browse_interactive",
                 "browser", "browseinteractiveaction"),
    think=names("think", "agentthinkaction", "thinkaction"),
    code=names("execute_ipython_cell", "run_ipython", "ipythonruncellaction"),
    task=names("task", "taskaction"),
)

"""The tools of Cline's VS Code task folders (and Roo Code's and Kilo Code's, its forks), as
tests/cline_folders.py writes them from the extensions' own source: ``execute_command`` {command},
``read_file`` {path}, ``search_files`` {path, regex}, ``list_files`` {path}, ``write_to_file`` {path,
content}. ``replace_in_file`` / ``apply_diff`` carry a SEARCH/REPLACE diff, not old and new text: they
keep the generic view. (The Cline CLI's own tools, ``run_commands`` and ``read_files``, take lists.)"""

from contextviewer.importers.tool_vocabulary import ToolVocabulary, names

TOOLS = ToolVocabulary(
    shell=names("execute_command"),
    write=names("write_to_file"),
    read=names("read_file"),
    search=names("search_files", "list_files"),
)

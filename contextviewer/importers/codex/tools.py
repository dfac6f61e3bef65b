"""Codex CLI's tools (tool_vocabulary.py): its shell tools (a command line or an argv, answered in
Codex's own shape) and apply_patch, matched as written."""

from contextviewer.importers.tool_vocabulary import ToolVocabulary, names

TOOLS = ToolVocabulary(
    exec=names("shell", "shell_command", "local_shell", "exec_command", "container.exec"),
    patch=names("apply_patch"),
)

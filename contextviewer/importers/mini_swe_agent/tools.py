"""mini-swe-agent's one tool, bash (tool_vocabulary.py); its actions are command lines."""

from contextviewer.importers.tool_vocabulary import ToolVocabulary, names

TOOLS = ToolVocabulary(shell=names("bash"))

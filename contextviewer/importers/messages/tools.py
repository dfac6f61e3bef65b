"""The tools of plain LangChain message arrays (tool_vocabulary.py): deepagents' (the arrays this format
reads come from LangGraph agents)."""

from contextviewer.importers.langgraph.tools import TOOLS  # noqa: F401 - the same agents' tools

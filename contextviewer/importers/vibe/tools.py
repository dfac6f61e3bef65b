"""Mistral Vibe's tools (tool_vocabulary.py), as its 3.0 requests offer them (the model-facing names;
its session store names them with their group, ``file_system.bash``, and the parser strips it)."""

from contextviewer.importers.tool_vocabulary import ToolVocabulary, names

TOOLS = ToolVocabulary(
    shell=names("bash"),
    edit=names("edit"),
    write=names("write_file"),
    read=names("read_file"),
    search=names("grep"),
    todo=names("todo"),
    code=names("run_typescript"),
)

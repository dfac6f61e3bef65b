"""Goose's tool vocabulary (see importers/tool_vocabulary.py). Goose names a tool of an MCP extension
``<extension>__<tool>``; the names below are those its own compaction reads as file reads and writes
(``crates/goose/src/context_mgmt/mod.rs``: READ_TOOLS, WRITE_TOOLS) and its developer extension's
shell, with and without the ``developer__`` prefix."""

from contextviewer.importers.tool_vocabulary import ToolVocabulary, names

TOOLS = ToolVocabulary(
    shell=names("developer__shell"),
    edit=names("developer__edit", "developer__text_editor"),
    write=names("developer__write"),
    read=names("developer__read"),
)

"""Cursor's agent tool vocabulary (see importers/tool_vocabulary.py): the tool names its agent transcripts
hold, as counted in HulkInTherapy/potsherd ``docs/formats/cursor.md`` (commit 2d019e70: ``Shell``,
``ReadFile``, ``ApplyPatch``, ``Read``, ``TodoWrite``, ``Glob``, ``EditNotebook``, ``ReadLints``,
``AwaitShell``, ``rg``, ``Delete``, ``StrReplace``, ``Write``, ``WebSearch``, ``WebFetch``, ``Grep``,
``SemanticSearch``, ``Subagent``) and in wesm/agentsview ``internal/parser/taxonomy.go`` (``Shell``,
``StrReplace``, ``LS``). Names are matched in lower case; ``Read``, ``Write``, ``Glob``, ``Grep`` and
``TodoWrite`` are Claude Code's names too (its own views), ``ApplyPatch`` sends a patch text."""

from contextviewer.importers.tool_vocabulary import ToolVocabulary, names

TOOLS = ToolVocabulary(
    shell=names("shell"),
    edit=names("strreplace"),
    read=names("readfile"),
    search=names("rg", "semanticsearch", "ls"),
    todo=names("todowrite"),
    task=names("subagent"),
    browse=names("webfetch"),
    patch=names("ApplyPatch"),
)

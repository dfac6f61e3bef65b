"""Factory Droid's tools (tool_vocabulary.py), as its 0.225 requests offer them (`droid exec --list-tools`)."""

from contextviewer.importers.tool_vocabulary import ToolVocabulary, names

TOOLS = ToolVocabulary(
    shell=names("Execute"),
    edit=names("Edit"),
    write=names("Create"),
    read=names("Read"),
    search=names("LS", "Grep", "Glob"),
    todo=names("TodoWrite"),
    task=names("Task"),
    browse=names("FetchUrl"),
)

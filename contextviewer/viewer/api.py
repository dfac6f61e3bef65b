"""API operations on conversations themselves (deletion). Every operation checks project membership
(accounts/permissions.py: 404 when not visible to the request, 403 with the reason when the role may not)."""

from __future__ import annotations

from ninja import Router, Schema
from ninja.responses import Status

from contextviewer.accounts.permissions import get_conversation_for_user
from contextviewer.conversations.deletion import delete_conversation as delete
from contextviewer.jobs.api import ErrorOut

router = Router(tags=["imports"])
DELETE_REFUSAL = "delete conversations: only owners and admins may"


class DeletedOut(Schema):
    id: int
    external_id: str
    title: str
    conversations: int
    subagents: int
    messages: int
    search_entries: int
    sources_removed: int
    uploads_removed: int
    builds_kept: int


@router.delete(
    "/conversations/{conversation_id}", response={200: DeletedOut, 403: ErrorOut, 404: ErrorOut}, tags=["conversations"]
)
def delete_conversation(request, conversation_id: int):
    """Delete a conversation with its sub-agents, folds, probes, review items, search entries and
    unused upload (owners and admins; builds made from it keep their copy). Answers what went."""
    conv = get_conversation_for_user(request, conversation_id, "delete", doing=DELETE_REFUSAL)
    return Status(200, delete(conv, actor=request, via="api").as_dict())

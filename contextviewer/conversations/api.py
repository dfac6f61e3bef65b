"""API operations on conversations themselves (deletion). Every operation checks project membership."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from ninja import Router, Schema
from ninja.responses import Status

from contextviewer.accounts.auth import allowed_projects
from contextviewer.conversations.deletion import delete_conversation as delete, refusal
from contextviewer.conversations.models import Conversation
from contextviewer.jobs.api import ErrorOut

router = Router(tags=["imports"])


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
    conv = get_object_or_404(Conversation.objects.filter(project__in=allowed_projects(request)), pk=conversation_id)
    if not allowed_projects(request, "delete").filter(pk=conv.project_id).exists():
        return Status(403, {"detail": refusal(request.user, conv) or "Your role in this project may not delete conversations."})
    return Status(200, delete(conv, actor=request, via="api").as_dict())

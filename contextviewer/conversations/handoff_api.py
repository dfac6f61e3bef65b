"""POST /api/conversations/{id}/handoff: start a handoff job (answered with the job to poll)."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from ninja import Router, Schema
from ninja.responses import Status

from contextviewer.accounts.auth import allowed_projects
from contextviewer.api import api
from contextviewer.providers.base import ProviderError

from . import handoff
from .api import ErrorOut, JobOut, job_out
from .models import Conversation

router = Router(tags=["handoff"])


class HandoffIn(Schema):
    provider: str | None = None  # builtin | openai | anthropic; default: the project's
    idempotency_key: str | None = None


@router.post("/conversations/{conversation_id}/handoff", response={202: JobOut, 400: ErrorOut, 403: ErrorOut, 404: ErrorOut})
def start_handoff(request, conversation_id: int, data: HandoffIn | None = None):
    """Fold the loaded view into a handoff summary: a new fold at the current end."""
    conv = get_object_or_404(Conversation.objects.filter(project__in=allowed_projects(request)), pk=conversation_id)
    if not allowed_projects(request, "edit").filter(pk=conv.project_id).exists():
        return Status(403, {"detail": "Your role in this project may not fold conversations."})
    data = data or HandoffIn()
    key = f"handoff:{conv.pk}:{request.user.pk}:{data.idempotency_key}"[:255] if data.idempotency_key else None
    try:
        job, _ = handoff.start_handoff(conv, user=request.user, provider=data.provider or None, idempotency_key=key)
    except ProviderError as exc:
        return Status(400, {"detail": str(exc)})
    return Status(202, job_out(request, job))


api.add_router("/", router)

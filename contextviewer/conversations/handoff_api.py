"""POST /api/conversations/{id}/handoff: start a handoff job (answered with the job to poll)."""

from __future__ import annotations

import json

from django.shortcuts import get_object_or_404
from ninja import Router, Schema
from pydantic import ValidationError
from ninja.responses import Status

from contextviewer.accounts.auth import allowed_projects
from contextviewer.api import api
from contextviewer.providers.base import ProviderError

from . import handoff, idempotency
from .api import ErrorOut, JobOut, job_out
from .models import Conversation

router = Router(tags=["handoff"])


class HandoffIn(Schema):
    provider: str | None = None  # builtin | openai | anthropic; default: the project's
    idempotency_key: str | None = None


@router.post(
    "/conversations/{conversation_id}/handoff",
    response={202: JobOut, 400: ErrorOut, 403: ErrorOut, 404: ErrorOut},
    openapi_extra={
        "requestBody": {
            "required": False,
            "content": {"application/json": {"schema": HandoffIn.model_json_schema()}},
        }
    },
)
def start_handoff(request, conversation_id: int):
    """Fold the loaded view into a handoff summary: a new fold at the current end.

    The JSON body is optional: {"provider": "builtin|openai|anthropic", "idempotency_key": "..."}."""
    conv = get_object_or_404(Conversation.objects.filter(project__in=allowed_projects(request)), pk=conversation_id)
    if not allowed_projects(request, "edit").filter(pk=conv.project_id).exists():
        return Status(403, {"detail": "Your role in this project may not fold conversations."})
    try:
        if request.content_type == "application/json":
            raw = json.loads(request.body) if request.body.strip() else {}
        else:  # no body, or form fields
            raw = {k: v for k, v in request.POST.items() if k in ("provider", "idempotency_key")}
        data = HandoffIn(**raw) if isinstance(raw, dict) else None
    except (ValueError, TypeError, ValidationError) as exc:
        return Status(400, {"detail": f"The body must be a JSON object like {{\"provider\": \"builtin\"}} ({str(exc)[:200]})."})
    if data is None:
        return Status(400, {"detail": 'The body must be a JSON object like {"provider": "builtin"}.'})
    try:
        idempotency.check(data.idempotency_key)
    except idempotency.IdempotencyKeyTooLong as exc:
        return Status(400, {"detail": str(exc)})
    key = f"handoff:{conv.pk}:{request.user.pk}:{data.idempotency_key}" if data.idempotency_key else None
    try:
        job, _ = handoff.start_handoff(conv, user=request.user, provider=data.provider or None, idempotency_key=key)
    except ProviderError as exc:
        return Status(400, {"detail": str(exc)})
    return Status(202, job_out(request, job))


api.add_router("/", router)

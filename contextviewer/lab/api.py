"""The read API's policy replays of a conversation (issue 22, item 8): the rows the policy table stored
(lab.PolicyReplay, computed by its `policy_table` job); nothing is replayed here. A row is up to date
while its revision is the conversation's current one (table.revision_of)."""

from __future__ import annotations

from datetime import datetime

from ninja import Router, Schema
from ninja.responses import Status

from contextviewer.accounts.permissions import get_conversation_for_user
from contextviewer.accounts.audit import audit_read
from contextviewer.jobs.api import ErrorOut
from contextviewer.lab import replays, table
from contextviewer.lab.models import PolicyReplay

router = Router(tags=["read"])


class PolicyReplayOut(Schema):
    policy: str
    up_to_date: bool  # computed at the conversation's current revision
    calls: int
    peak: int
    recorded_peak: int
    fires: int
    folds: int
    actions: dict
    tokens_saved: int
    red_zone_calls: int
    overflow_calls: int
    facts_at_risk: int
    cost: float | None
    calibrated: bool
    calibration_note: str
    error: str  # why the conversation could not be replayed (no figures then)
    computed_at: datetime


FIELDS = [f for f in PolicyReplayOut.model_fields if f != "up_to_date"]


@router.get("/conversations/{conversation_id}/policies", response={200: list[PolicyReplayOut], 403: ErrorOut, 404: ErrorOut})
def conversation_policies(request, conversation_id: int):
    """The stored policy replays of the conversation (open loop: the recorded calls replayed under each
    policy), baseline first; [] until the project's policy table was computed."""
    conv = get_conversation_for_user(request, conversation_id)
    revision = table.revision_of(conv)
    rows = PolicyReplay.objects.filter(conversation=conv).order_by("computed_at", "id")
    out = [{**{f: getattr(r, f) for f in FIELDS}, "up_to_date": r.revision == revision} for r in rows]
    out.sort(key=lambda r: r["policy"] != replays.BASELINE)
    audit_read(request, conv.project, "policies", f"conversation {conv.pk}")
    return Status(200, out)

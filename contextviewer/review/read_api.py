"""The read API's probes of a fold (issue 22, item 8): the review app's probes loader (probes.probe_for,
as the fold's pages read it), answered as GET /api/review/folds/{id}/probe answers it, hidden by the
same blind-review rule as the pages (queues.hides_fold: a blind item of this segment awaits the
caller's score)."""

from __future__ import annotations

from ninja import Router
from ninja.responses import Status

from contextviewer.accounts.permissions import get_fold_for_user
from contextviewer.accounts.audit import audit_read
from contextviewer.jobs.api import ErrorOut
from contextviewer.review import probes as fact_probes, queues as review_queues
from contextviewer.review.api import ProbeOut, _probe_out

router = Router(tags=["read"])


@router.get("/conversations/{conversation_id}/folds/{fold_id}/probes", response={200: ProbeOut, 403: ErrorOut, 404: ErrorOut})
def fold_probes(request, conversation_id: int, fold_id: int):
    """The fold's fact probe (`fold_id`: the fold's id, as GET /api/conversations/{id} lists it): retention,
    compression, every fact with its turn, what was lost; while a blind review of this segment waits
    for the caller's score, retention, which facts were kept, the summary's size and the compression
    stay hidden (`hidden`: true). An encrypted summary has no size: `summary_encrypted`, `summary_tokens` null."""
    fold = get_fold_for_user(request, conversation_id, fold_id)
    probe = fact_probes.probe_for(fold)
    audit_read(request, fold.conversation.project, "probes", f"fold {fold.pk}", conversation=conversation_id)
    return Status(200, _probe_out(probe, review_queues.hides_fold(request.user, fold)))

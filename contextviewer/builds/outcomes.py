"""What a finished build job made, for its job page (jobs/kinds.py ``OUTCOMES``): the built
conversation, what it was built from, and where to go next (its page, the export and how to
continue it in the agent live there)."""

from __future__ import annotations

from django.template.loader import render_to_string
from django.urls import reverse

from contextviewer.conversations.models import Conversation

from . import services as builds

MAX_RANGES = 40  # turn ranges named on the job page; the rest are counted


def build_outcome(job) -> dict | None:
    result = job.result or {}
    if not result.get("conversation_id"):
        return None
    conv = Conversation.objects.filter(pk=result["conversation_id"], project=job.project).first()
    if conv is None:
        return {"heading": "The built conversation", "gone": "The conversation this build made no longer exists."}
    figures = [("Conversation", conv.title or conv.external_id), ("Messages", f"{conv.message_count:,}"),
               ("Turns", f"{int(result.get('turns') or 0):,}")]
    source = Conversation.objects.filter(pk=result.get("source_id"), project=job.project).first()
    if result.get("selection"):
        figures.append(("Selection", selection_html(result["selection"], source)))
    links = [("Open the built conversation (export, continue in the agent)", reverse("conversation", args=[conv.pk]))]
    if source is not None:
        links.append(("Back to the source conversation", reverse("conversation", args=[source.pk])))
    return {"heading": "The built conversation", "figures": figures, "links": links}


def selection_html(selection: dict, source: Conversation | None) -> str:
    """What a build took, in words: "The summary of fold 1 and turns 10–11.", each fold linked to
    its page and each turn to the source conversation's turn (plain words once the source is gone)."""
    turns = sorted({int(t) for t in selection.get("turns") or []})
    folds = sorted({int(f) for f in selection.get("folds") or []})
    after = selection.get("after_fold")
    fold_pks = {n: f.pk for n, f in enumerate(builds.build_folds(source), start=1)} if source is not None and (folds or after) else {}

    def turn_url(n: int) -> str | None:
        return f"{reverse('conversation', args=[source.pk])}?turn={n}#turn-{n}" if source is not None else None

    def fold_url(n: int) -> str | None:
        return reverse("review_fold", args=[fold_pks[n]]) if n in fold_pks else None

    ranges = []
    for first, last in _runs(turns)[:MAX_RANGES]:
        ranges.append({"first": first, "first_url": turn_url(first), "last": last if last != first else None,
                       "last_url": turn_url(last) if last != first else None})
    shown = sum(r["last"] - r["first"] + 1 if r["last"] is not None else 1 for r in ranges)
    return render_to_string("builds/_selection.html", {
        "folds": [{"number": n, "url": fold_url(n)} for n in folds],
        "turn_ranges": ranges,
        "turn_count": len(turns),
        "more_turns": len(turns) - shown,
        "after": {"number_text": str(int(after)), "url": fold_url(int(after))} if after not in (None, "") else None,
    })


def _runs(numbers: list[int]) -> list[tuple[int, int]]:
    """[3, 4, 5, 9] -> [(3, 5), (9, 9)]."""
    out: list[list[int]] = []
    for n in numbers:
        if out and out[-1][1] == n - 1:
            out[-1][1] = n
        else:
            out.append([n, n])
    return [(a, b) for a, b in out]

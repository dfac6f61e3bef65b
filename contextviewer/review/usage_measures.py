"""What the usage page (a lower layer, which may not import review) is given about folds: declared
on ReviewConfig as `usage_fold_measures` and looked up by the page (usage/page.py)."""

from __future__ import annotations

from contextviewer.review.models import FactProbe


def needed_again(fold_ids: list[int]) -> dict[int, int]:
    """Fold id -> how many facts the fold lost that the conversation needed again after it (the
    fold page's "needed again": tiers A, B and C, not kept, used after the fold), for each fold
    probed with what followed it; a fold not probed, or with nothing after it, is left out."""
    out: dict[int, int] = {}
    rows = FactProbe.objects.filter(fold_id__in=fold_ids).values_list("fold_id", "facts", "background", "continuation")
    for fold_id, facts, background, continuation in rows:
        if not continuation:
            continue
        out[fold_id] = sum(1 for f in [*(facts or []), *(background or [])]
                           if isinstance(f, dict) and not f.get("kept") and f.get("used_after"))
    return out

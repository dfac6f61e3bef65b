"""The review dashboard: retention per fact kind beside the baseline, compression, summary size
(p50, p99), human fidelity scores and judge/human agreement, per group and overall. An encrypted
summary (Codex's remote compaction) has no size we know: it is counted apart (`encrypted`) and
left out of the compression and size figures."""

from __future__ import annotations

import math
import re
from collections import defaultdict
from statistics import median

from contextviewer.conversations.models import Fold
from contextviewer.core import facts as core_facts
from contextviewer.review.models import PROBE_VERSION, FactProbe, JudgeRun, Review
from contextviewer.review.probes import compute_probe, review_folds

GROUPS = ("agent", "source", "cli_version", "provider", "month")


def percentile(values: list[float], p: float) -> float | None:
    """Nearest-rank percentile (p in 0..100)."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


def cohen_kappa(pairs: list[tuple]) -> float | None:
    """Unweighted Cohen's kappa of two raters over paired labels; None with fewer than two pairs."""
    if len(pairs) < 2:
        return None
    n = len(pairs)
    labels = {a for a, _ in pairs} | {b for _, b in pairs}
    observed = sum(1 for a, b in pairs if a == b) / n
    expected = sum((sum(1 for a, _ in pairs if a == k) / n) * (sum(1 for _, b in pairs if b == k) / n) for k in labels)
    if expected == 1:
        return 1.0 if observed == 1 else None
    return (observed - expected) / (1 - expected)


def _group_value(fold: Fold, group: str) -> str:
    conv = fold.conversation
    if group == "agent":
        return conv.agent or "?"
    if group == "source":
        return conv.source.format if conv.source_id and conv.source else ("generated" if fold.origin == "generated" else "?")
    if group == "cli_version":
        return conv.cli_version or "?"
    if group == "provider":
        # Folds made here name their provider (cost, or the trigger "handoff (openai)"); imported
        # folds were written by the agent's own summarizer.
        named = (fold.cost or {}).get("provider") or (m.group(1) if (m := re.match(r"handoff \((\w+)\)", fold.trigger or "")) else "")
        return named or (f"{conv.agent} (own)" if fold.origin == "imported" else "generated")
    when = fold.timestamp or fold.created_at
    return when.strftime("%Y-%m") if when else "?"


def dashboard(projects, group: str = "agent") -> dict:
    """Retention per kind beside the baseline, compression, summary size p50/p99, fidelity and
    judge/human agreement, per group value and overall."""
    if group not in GROUPS:
        group = "agent"
    folds = list(review_folds(conversation__project__in=projects).select_related("conversation", "conversation__source"))
    probes = {p.fold_id: p for p in FactProbe.objects.filter(fold__in=folds)}
    missing = [f for f in folds if f.pk not in probes or probes[f.pk].version != PROBE_VERSION]
    for f in missing[:200]:  # lazily, bounded per page view; the probes job covers the rest
        probes[f.pk] = compute_probe(f)
    fidelity: dict[int, list[int]] = defaultdict(list)
    for r in Review.objects.filter(fold__in=folds).values("fold_id", "scores"):
        value = (r["scores"] or {}).get("fidelity")
        if isinstance(value, int):
            fidelity[r["fold_id"]].append(value)
    judged: dict[int, int] = {}
    for run in JudgeRun.objects.filter(fold__in=folds).order_by("created_at"):
        if run.fidelity is not None:
            judged[run.fold_id] = run.fidelity
    buckets: dict[str, list[Fold]] = defaultdict(list)
    for f in folds:
        buckets[_group_value(f, group)].append(f)
    rows = [_row(name, members, probes, fidelity, judged) for name, members in sorted(buckets.items())]
    total = _row("all", folds, probes, fidelity, judged)
    return {"group": group, "groups": GROUPS, "rows": rows, "total": total, "baseline": core_facts.BASELINE, "kinds": core_facts.KINDS}


def _row(name: str, folds: list[Fold], probes: dict, fidelity: dict, judged: dict) -> dict:
    ps = [probes[f.pk] for f in folds if f.pk in probes]
    kinds = {}
    for kind in core_facts.KINDS:
        total = sum((p.per_kind.get(kind) or {}).get("total", 0) for p in ps)
        kept = sum((p.per_kind.get(kind) or {}).get("kept", 0) for p in ps)
        kinds[kind] = {"total": total, "kept": kept, "retention": kept / total if total else None}
    all_total = sum(k["total"] for k in kinds.values())
    all_kept = sum(k["kept"] for k in kinds.values())
    known = [p for p in ps if not p.summary_encrypted]
    ratios = [p.compression_ratio for p in known if p.compression_ratio is not None]
    sizes = [p.summary_tokens for p in known if p.summary_tokens]
    scores = [s for f in folds for s in fidelity.get(f.pk, [])]
    pairs = [
        (judged[f.pk], round(sum(fidelity[f.pk]) / len(fidelity[f.pk])))
        for f in folds
        if f.pk in judged and fidelity.get(f.pk)
    ]
    return {
        "name": name,
        "folds": len(folds),
        "kinds": kinds,
        "retention": all_kept / all_total if all_total else None,
        "encrypted": len(ps) - len(known),
        "compression_p50": median(ratios) if ratios else None,
        "summary_p50": percentile(sizes, 50),
        "summary_p99": percentile(sizes, 99),
        "fidelity_mean": sum(scores) / len(scores) if scores else None,
        "reviews": len(scores),
        "kappa": cohen_kappa(pairs),
        "kappa_pairs": len(pairs),
    }


def dashboard_csv_rows(data: dict) -> list[list]:
    header = [data["group"], "folds", "retention"] + [f"{k}_retention" for k in data["kinds"]] + [
        "compression_p50", "summary_tokens_p50", "summary_tokens_p99", "fidelity_mean", "reviews", "kappa",
        "summaries_encrypted",
    ]
    out = [header]
    for row in [*data["rows"], data["total"]]:
        out.append(
            [row["name"], row["folds"], row["retention"]]
            + [row["kinds"][k]["retention"] for k in data["kinds"]]
            + [row["compression_p50"], row["summary_p50"], row["summary_p99"], row["fidelity_mean"], row["reviews"], row["kappa"]]
            + [row["encrypted"]]
        )
    return out


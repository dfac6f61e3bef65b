"""The segments of a conversation, loaded from the database: ONE loader for every surface.

Pages (segments, gauge, curve), handoff (the loaded input it summarizes), builds (what a fold's
summary excludes), review (the archived segment a probe reads) and ingest (the estimated context of
each model call) all load folds here, so "the archived segment of fold N" is the same positions
everywhere. This module only loads rows and hands them to the pure core (core/segments.py for the
segments, core/curve.py for the curve, core/build.py for turn spans and fold exclusion).

Which folds make segments (DESIGN.md: a fold is a summary that stands in for every message up to a
position): every fold except a microcompact. A microcompact (Claude Code's
`microcompact_boundary`) clears old tool results in place and writes no summary; nothing stands in
for anything, no boundary moves, so it makes no archived segment, no loaded-segment start, no fold
a build can take a summary from and no segment a review can probe. It stays a Fold row (the page
counts it and the curve shows its drop in the measured line). See docs/segments.md.

Which folds the recorded calls saw (the curve's estimates): the agent's own folds (imported), not
a handoff made here: the calls recorded after it (a grown file) still carried the unfolded history.

A fold at the same position as the fold before it is another summary of the same archived segment
(two summaries to compare side by side); it puts nothing more away.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from django.db.models import F, Max, Min, OuterRef, Q, Subquery

from contextviewer.core import build as core_build, curve as core_curve, model_specs, tokens
from contextviewer.core.segments import ARCHIVED, LOADED, FoldSpan, Segment, segments as split_segments

from contextviewer.conversations.models import NO_SEGMENT_KINDS, Conversation, Fold, FoldKind, FoldOrigin, Message, ModelCall

# Fold kinds that clear content in place and stand in for nothing (no summary, no boundary):
# NO_SEGMENT_KINDS (models.py, beside FoldKind). Another summary of a fold's archived segment, made
# here ("summarize this fold again"): it shares the segment of the fold at its position, for review
# to probe and compare, but it is never in play (the page, the loaded view, builds and the curve
# read the original). Fold.objects.segment_makers() leaves both out.
ALTERNATIVE = FoldKind.ALTERNATIVE
_UUID_BATCH = 500


def makes_segment(fold: Fold) -> bool:
    return fold.kind not in NO_SEGMENT_KINDS


# --- folds ------------------------------------------------------------------------------------


def segment_folds(conv: Conversation) -> list[Fold]:
    """The folds that make segments, in position order (ties: first stored first). Each carries
    `summary_at`: the position of its summary message, or None."""
    return list(
        conv.folds.segment_makers()
        .annotate(summary_at=F("summary_message__position"))
        .order_by("position", "id")
    )


def uuid_positions(conv: Conversation, uuids: Iterable[str]) -> dict[str, int]:
    wanted = list(dict.fromkeys(u for u in uuids if u))
    out: dict[str, int] = {}
    for i in range(0, len(wanted), _UUID_BATCH):
        chunk = wanted[i : i + _UUID_BATCH]
        out.update(Message.objects.filter(conversation=conv, uuid__in=chunk).values_list("uuid", "position"))
    return out


def fold_spans(conv: Conversation, folds: list[Fold]) -> list[FoldSpan]:
    """The core's FoldSpan of each fold, in the same order: the summary's position and the
    positions of the messages it preserved (`Fold.preserved` holds their uuids)."""
    at = uuid_positions(conv, (u for f in folds for u in (f.preserved or [])))
    # Folds loaded elsewhere (without `summary_at`): their summaries' positions in one query.
    missing = [f.summary_message_id for f in folds if not hasattr(f, "summary_at") and f.summary_message_id]
    summary_pos = dict(Message.objects.filter(pk__in=missing).values_list("pk", "position")) if missing else {}
    spans = []
    for f in folds:
        summary_at = f.summary_at if hasattr(f, "summary_at") else summary_pos.get(f.summary_message_id)
        spans.append(
            FoldSpan(
                key=f.key,
                position=f.position,
                summary_position=summary_at,
                preserved_positions=tuple(sorted({at[u] for u in (f.preserved or []) if u in at})),
                summary_tokens=tokens.count_text(f.summary_text) if summary_at is None and f.summary_text else 0,
            )
        )
    return spans


def bounds(conv: Conversation) -> tuple[int | None, int | None]:
    """First and last message positions (None, None without messages): one query, two index
    look-ups (MIN and MAX side by side in one SELECT would read every position of the conversation)."""
    positions = Message.objects.filter(conversation=OuterRef("pk")).order_by().values("position")
    r = (
        Conversation.objects.filter(pk=conv.pk)
        .annotate(lo=Subquery(positions.order_by("position")[:1]), hi=Subquery(positions.order_by("-position")[:1]))
        .values("lo", "hi")
        .first()
    ) or {"lo": None, "hi": None}
    return r["lo"], r["hi"]


# --- the layout: segments ----------------------------------------------------------------------


@dataclass
class SegmentLayout:
    """Archived segments in order, then the loaded segment, with the folds that head them."""

    conversation: Conversation
    first: int | None
    last: int | None
    folds: list[Fold]  # folds that make segments, in position order
    spans: list[FoldSpan]  # aligned with `folds`
    segments: list[Segment] = field(default_factory=list)  # [] without messages

    def fold_of(self, segment: Segment) -> Fold | None:
        i = segment.fold_index
        return self.folds[i] if i is not None and 0 <= i < len(self.folds) else None

    @property
    def archived(self) -> list[Segment]:
        return [s for s in self.segments if s.kind == ARCHIVED]

    @property
    def loaded(self) -> Segment | None:
        return self.segments[-1] if self.segments else None

    @property
    def latest_fold(self) -> Fold | None:
        return self.fold_of(self.loaded) if self.loaded is not None else None

    def archived_segment(self, fold: Fold) -> Segment | None:
        """The archived segment `fold` put away; None for a fold that makes no segment (a
        microcompact) or that lies beyond the last message."""
        for s in self.segments:
            if s.kind == ARCHIVED and (f := self.fold_of(s)) is not None and f.pk == fold.pk:
                return s
        return None


def load(conv: Conversation, folds: list[Fold] | None = None) -> SegmentLayout:
    """The conversation's layout: three queries whatever its length (bounds, folds, preserved)."""
    first, last = bounds(conv)
    folds = segment_folds(conv) if folds is None else folds
    spans = fold_spans(conv, folds)
    segs = split_segments(first, last, spans) if first is not None and last is not None else []
    return SegmentLayout(conv, first, last, folds, spans, segs)


def archived_segment(fold: Fold) -> Segment | None:
    """The archived segment of one fold (what review probes and judges): the same positions as
    the page's segment headed by that fold."""
    if not makes_segment(fold):
        return None
    layout = load(fold.conversation)
    if fold.kind == ALTERNATIVE:
        original = original_of(fold, layout.folds)
        return layout.archived_segment(original) if original is not None else None
    return layout.archived_segment(fold)


def original_of(alternative: Fold, folds: list[Fold] | None = None) -> Fold | None:
    """The fold in play whose segment an alternative summary stands for (the first at its position)."""
    folds = segment_folds(alternative.conversation) if folds is None else folds
    return next((f for f in folds if f.position == alternative.position), None)


def loaded_input_at(fold: Fold) -> LoadedInput:
    """The loaded view the summarizer of `fold` read (DESIGN invariant 5): the summary of the fold
    before it, that fold's preserved tail and every message after it, up to `fold`'s position."""
    conv = fold.conversation
    before = [f for f in segment_folds(conv) if f.position < fold.position]
    first, _ = bounds(conv)
    if first is None or first > fold.position:
        return LoadedInput(None, None, None, None)
    spans = fold_spans(conv, before)
    layout = SegmentLayout(conv, first, fold.position, before, spans, split_segments(first, fold.position, spans))
    return loaded_input(conv, layout)


def archived_q(segment: Segment) -> Q:
    return Q(position__gte=segment.start, position__lte=segment.end)


# --- the loaded input --------------------------------------------------------------------------


@dataclass
class LoadedInput:
    """What the model sees now: the latest summary, the preserved tail, every message after the
    latest fold. `summary_text` stands for the summary when it has no message of its own (a
    handoff made here); otherwise the summary message is one of `positions_q()`."""

    segment: Segment | None  # the loaded segment; None without messages
    fold: Fold | None  # the latest fold
    first: int | None
    last: int | None

    @property
    def preserved(self) -> tuple[int, ...]:
        return tuple(self.segment.preserved_positions) if self.segment is not None else ()

    @property
    def summary_text(self) -> str:
        if self.fold is None or self.segment is None or self.segment.summary_position is not None:
            return ""
        return self.fold.summary_text or ""

    def positions_q(self) -> Q:
        """The loaded view's messages, as a filter on Message (summary, preserved, active)."""
        if self.segment is None:
            return Q(pk__in=[])
        q = Q(position__gte=self.segment.start, position__lte=self.segment.end)
        if self.segment.summary_position is not None:
            q |= Q(position=self.segment.summary_position)
        if self.preserved:
            q |= Q(position__in=list(self.preserved))
        return q

    def positions(self) -> list[int]:
        """Every position of the loaded view, in order (for tests and small conversations)."""
        if self.segment is None:
            return []
        out = set(self.preserved) | set(range(self.segment.start, self.segment.end + 1))
        if self.segment.summary_position is not None:
            out.add(self.segment.summary_position)
        return sorted(out)


def loaded_input(conv: Conversation, layout: SegmentLayout | None = None) -> LoadedInput:
    layout = load(conv) if layout is None else layout
    return LoadedInput(layout.loaded, layout.latest_fold, layout.first, layout.last)


def loaded_messages(conv: Conversation, loaded: LoadedInput, *fields: str) -> Iterator[tuple]:
    """The loaded view's messages in position order, as value tuples of `fields`."""
    if loaded.segment is None:
        return iter(())
    qs = Message.objects.filter(conversation=conv).filter(loaded.positions_q()).order_by("position")
    return qs.values_list(*fields).iterator(chunk_size=2000)


# --- turn spans and what a fold's summary excludes (builds) -------------------------------------


def turn_spans(conv: Conversation) -> list[core_build.TurnSpan]:
    rows = conv.messages.values("turn").annotate(first=Min("position"), last=Max("position")).order_by("turn")
    return [core_build.TurnSpan(r["turn"], r["first"], r["last"]) for r in rows]


def fold_infos(conv: Conversation, layout: SegmentLayout | None = None) -> list[core_build.FoldInfo]:
    """The folds a build can take a summary from, numbered 1.. in position order (as on the
    page), each putting away its archived segment less the messages it preserved."""
    layout = load(conv) if layout is None else layout
    by_fold = {s.fold_index: s for s in layout.archived}
    infos = []
    for i, (fold, span) in enumerate(zip(layout.folds, layout.spans, strict=True)):
        segment = by_fold.get(i)
        # A fold past the last message puts nothing away yet.
        start = segment.start if segment is not None else fold.position + 1
        infos.append(
            core_build.FoldInfo(
                number=i + 1,
                start=start,
                position=fold.position,
                summary_text=fold.summary_text or "",
                summary_position=span.summary_position,
                preserved=frozenset(span.preserved_positions),
            )
        )
    return infos


# --- the curve: call points ---------------------------------------------------------------------


def curve_fold_spans(conv: Conversation) -> list[FoldSpan]:
    """The folds the recorded calls saw: the agent's own (imported) folds that make segments."""
    folds = [f for f in segment_folds(conv) if f.origin == FoldOrigin.IMPORTED]
    return fold_spans(conv, folds)


def call_estimates(
    conv: Conversation, call_positions: list[int], token_totals: Iterable[tuple[int, int]] | None = None
) -> list[int]:
    """Estimated context of each model call (positions in sorted order): the tokens of the loaded
    view at that call. `token_totals`: (position, token_total) of every message in position order,
    when the caller holds them (else they are read back)."""
    if token_totals is None:
        token_totals = conv.messages.order_by("position").values_list("position", "token_total").iterator(chunk_size=5000)
    return core_curve.estimated_contexts(token_totals, call_positions, curve_fold_spans(conv))


def call_spec(conv: Conversation, model: str | None) -> model_specs.ModelSpec:
    """The model a call ran on, in the window it ran in: the conversation's own (an override, or
    the window its harness ran with), else the model's."""
    names = conv.model_names or []
    return model_specs.lookup(model or (names[-1] if names else ""), override_window=conv.window)


def call_window(conv: Conversation, model: str | None) -> int:
    return call_spec(conv, model).window


def call_points(conv: Conversation) -> list[core_curve.Point]:
    """One point per model call, in position order: measured context (None when the log has no
    usage), estimated context, the call's window, turn and model."""
    rows = list(
        ModelCall.objects.filter(conversation=conv)
        .order_by("position", "id")
        .values_list("position", "input_uncached", "cache_write", "cache_read", "estimated_context", "model", "message__turn")
    )
    windows: dict[str, int] = {}
    calls = []
    for pos, a, b, c, est, model, turn in rows:
        if model not in windows:
            windows[model] = call_window(conv, model)
        calls.append(
            {
                "position": pos,
                "measured": (a + b + c) or None,
                "estimated": est,
                "model": model,
                "turn": turn,
                "window": windows[model],
            }
        )
    return core_curve.curve_points(calls, call_window(conv, None))


__all__ = [
    "ARCHIVED",
    "ALTERNATIVE",
    "LOADED",
    "NO_SEGMENT_KINDS",
    "LoadedInput",
    "SegmentLayout",
    "archived_q",
    "archived_segment",
    "bounds",
    "call_estimates",
    "call_points",
    "call_spec",
    "call_window",
    "curve_fold_spans",
    "fold_infos",
    "fold_spans",
    "load",
    "loaded_input",
    "loaded_input_at",
    "loaded_messages",
    "makes_segment",
    "original_of",
    "segment_folds",
    "turn_spans",
    "uuid_positions",
]

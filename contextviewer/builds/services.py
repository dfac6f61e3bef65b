"""Builds and exports: the service behind the page, the API, the commands and the build job.

A build is a new conversation (kind "build") seeded with selected turns and folds' summaries of a
source conversation. The source is only read. The job is idempotent: the new conversation's
session id derives from the job's idempotency key and the whole build is one transaction, so a
retried or doubled job leaves exactly one conversation.
"""

from __future__ import annotations

import json
import uuid as uuidlib
from dataclasses import dataclass, replace

from django.db import transaction
from django.utils import timezone

from contextviewer.accounts import audit
from contextviewer.core import build as core_build
from contextviewer.core import budget, export as core_export, model_specs, tokens as token_core
from contextviewer.importers import formats

from contextviewer.jobs import queue as jobs
from contextviewer.conversations import search, segments
from contextviewer.conversations.models import Conversation, ConversationKind, Fold, Message, ModelCall
from contextviewer.jobs.models import Job

BATCH = 500
BuildError = core_build.BuildError


# --- reading the source -----------------------------------------------------------------------


def build_folds(conv: Conversation) -> list[Fold]:
    """The folds a build can take a summary from, numbered 1.. in this order (as on the page)."""
    return segments.segment_folds(conv)


def fold_infos(conv: Conversation, folds: list[Fold] | None = None) -> list[core_build.FoldInfo]:
    """What each fold's summary stands for: its archived segment as the page shows it."""
    return segments.fold_infos(conv, segments.load(conv, folds))


def turn_spans(conv: Conversation) -> list[core_build.TurnSpan]:
    return segments.turn_spans(conv)


def validate(conv: Conversation, turns, folds, after_fold=None) -> core_build.Plan:
    spans, infos = turn_spans(conv), fold_infos(conv)
    turns, folds = with_after_fold(turns, folds, after_fold, spans, infos)
    return core_build.validate(turns, folds, spans, infos)


def with_after_fold(turns, folds, after_fold, spans, infos) -> tuple[list[int], list[int]]:
    """The selection with "fold N's summary plus what followed it" added (page, API and command
    alike); without `after_fold`, the selection as given."""
    turns = core_build.parse_numbers(turns, "turn")
    folds = core_build.parse_numbers(folds, "fold")
    if after_fold in (None, ""):
        return turns, folds
    try:
        number = int(str(after_fold).strip())
    except ValueError:
        raise BuildError(f"After fold: give one fold number (from 1), not {str(after_fold)[:40]!r}.") from None
    if number < 1:
        raise BuildError(f"After fold: fold numbers start at 1, not {number}.")
    more_turns, more_folds = core_build.after_fold(number, spans, infos)
    return sorted(set(turns) | set(more_turns)), sorted(set(folds) | set(more_folds))


def message_dict(m: Message) -> dict:
    return {
        "position": m.position,
        "source_position": m.position,
        "turn": m.turn,
        "role": m.role,
        "record_type": m.record_type,
        "subtype": m.subtype,
        "blocks": m.blocks or [],
        "timestamp": m.timestamp,
        "is_meta": m.is_meta,
        "is_compact_summary": m.is_compact_summary,
        "is_sidechain": m.is_sidechain,
        "flags": m.flags or {},
        "api_message_id": m.api_message_id,
        "tokens": m.tokens or {},
        "token_total": m.token_total,
        "raw": None if "raw" in m.get_deferred_fields() else m.raw,
        "uuid": m.uuid,
        "parent_uuid": m.parent_uuid,
        "source_id": m.source_id,
        "line_no": m.line_no,
        "id": m.pk,
    }


# --- the build --------------------------------------------------------------------------------


def start_build(
    conv: Conversation, turns, folds, *, after_fold=None, user=None, idempotency_key: str | None = None, enqueue: bool = True
) -> Job:
    """Check the selection now (a clear error beats a failed job) and enqueue the build job."""
    plan = validate(conv, turns, folds, after_fold)
    key = f"build:{user.pk if user else 0}:{idempotency_key}" if idempotency_key else None
    job, _ = jobs.create_job(
        conv.project,
        "build",
        {"conversation_id": conv.pk, "turns": plan.turns, "folds": plan.folds}
        | ({"after_fold": int(str(after_fold).strip())} if after_fold not in (None, "") else {}),
        user=user,
        idempotency_key=key,
        enqueue=enqueue,
    )
    return job


def build_session_id(job: Job) -> str:
    return str(uuidlib.uuid5(uuidlib.NAMESPACE_URL, f"contextviewer-build:{job.idempotency_key}"))


@dataclass
class Preview:
    plan: core_build.Plan
    result: core_build.BuildResult
    categories: dict
    gauge: object
    spec: object


def assemble(conv: Conversation, plan: core_build.Plan, infos=None, *, with_raw: bool = True) -> core_build.BuildResult:
    infos = fold_infos(conv) if infos is None else infos
    by_turn: dict[int, list[dict]] = {}
    qs = conv.messages.filter(turn__in=plan.turns).order_by("position")
    if not with_raw:
        qs = qs.defer("raw")
    for m in qs.iterator(chunk_size=2000):
        by_turn.setdefault(m.turn, []).append(message_dict(m))
    return core_build.assemble(plan, by_turn, infos)


def preview(conv: Conversation, turns, folds, after_fold=None) -> Preview:
    """What a build of this selection would hold, and its window gauge (estimated)."""
    infos = fold_infos(conv)
    spans = turn_spans(conv)
    turns, folds = with_after_fold(turns, folds, after_fold, spans, infos)
    plan = core_build.validate(turns, folds, spans, infos)
    result = assemble(conv, plan, infos, with_raw=False)
    categories: dict[str, int] = {}
    for m in result.messages:
        counts = _count(m) if m.get("repaired") or not m.get("tokens") else m["tokens"]
        for k, v in counts.items():
            categories[k] = categories.get(k, 0) + int(v or 0)
    spec = model_specs.lookup((conv.model_names or [""])[-1], override_window=conv.window)
    gauge = None
    if spec and spec.window:
        gauge = budget.gauge(categories, spec=spec, measured=None, rules=formats.harness(conv.agent, spec))
    return Preview(plan, result, categories, gauge, spec)


def _count(m: dict) -> dict:
    return token_core.count_message(
        m["role"], m["blocks"], is_compact_summary=bool(m.get("is_compact_summary")), record_type=m.get("record_type") or m["role"]
    )


def run_build(job: Job, progress) -> dict:
    params = job.params or {}
    source = Conversation.objects.filter(pk=params.get("conversation_id"), project=job.project).first()
    if source is None:
        raise BuildError("The source conversation no longer exists.")
    session_id = build_session_id(job)
    existing = Conversation.objects.filter(project=job.project, agent=source.agent, external_id=session_id).first()
    if existing is not None:  # a retry after the commit: the build is already there
        return build_result(existing)
    progress(0.02, "reading the selection")
    infos = fold_infos(source)
    plan = core_build.validate(params.get("turns"), params.get("folds"), turn_spans(source), infos)
    result = assemble(source, plan, infos)
    progress(0.1, f"copying {len(result.messages)} messages")
    with transaction.atomic():
        conv = _create_build(job, source, plan, result, session_id, progress)
    return build_result(conv)


def _create_build(job, source, plan, result, session_id, progress) -> Conversation:
    """The build's conversation and its messages (run_build's transaction), with the progress of the copy."""
    now = timezone.now()
    conv = _build_conversation(job, source, plan, result, session_id, now)
    _fill_timestamps(result.messages, now)
    conv.tool_call_count = _copy_messages(conv, source, result.messages, session_id, now, progress)
    conv.message_count = len(result.messages)
    conv.save(update_fields=["tool_call_count", "message_count"])
    return conv


def _build_conversation(job, source, plan, result, session_id, now) -> Conversation:
    """The build's Conversation row: the source's agent, place and model, the time its messages
    span, and its lineage (the source, the selection, who built it, when, with which job)."""
    user = job.created_by
    title = f"Build of {source.title or source.external_id}"[:500]
    stamps = [m["timestamp"] for m in result.messages if m.get("timestamp")]
    return Conversation.objects.create(
        project=job.project,
        agent=source.agent,
        external_id=session_id,
        kind=ConversationKind.BUILD,
        title=title,
        cwd=source.cwd,
        git_branch=source.git_branch,
        cli_version=source.cli_version,
        model_names=list(source.model_names or []),
        window=source.window,
        started_at=min(stamps) if stamps else now,
        ended_at=max(stamps) if stamps else now,
        lineage={
            "source": {"id": source.pk, "external_id": source.external_id, "title": source.title},
            "selection": {"turns": plan.turns, "folds": plan.folds}
            | ({"after_fold": job.params["after_fold"]} if job.params.get("after_fold") else {}),
            "created_by": {"id": user.pk, "username": user.get_username()} if user else None,
            "created_at": now.isoformat(),
            "job": job.pk,
            "notes": result.notes,
        },
    )


def _fill_timestamps(msgs: list[dict], now) -> None:
    """A summary has no time of its own here: it takes the time of what follows it (else precedes)."""
    later = None
    fill: list = [None] * len(msgs)
    for i in range(len(msgs) - 1, -1, -1):
        fill[i] = later
        later = msgs[i].get("timestamp") or later
    earlier = None
    for i, m in enumerate(msgs):
        if not m.get("timestamp"):
            m["timestamp"] = fill[i] or earlier or now
        earlier = m["timestamp"]


def _copy_messages(conv: Conversation, source: Conversation, msgs: list[dict], session_id: str, now, progress) -> int:
    """The messages written to the build in batches, chained by uuid (derived from the session id
    and the position); the tool calls among them counted."""
    namespace = uuidlib.UUID(session_id)
    parent = None
    rows = []
    total = max(len(msgs), 1)
    tool_calls = 0
    for m in msgs:
        uid = str(uuidlib.uuid5(namespace, f"message:{m['position']}"))
        tool_calls += sum(1 for b in m["blocks"] if b.get("kind") == "tool_call")
        rows.append(_message_row(conv, source, m, uid, parent, now))
        parent = uid
        if len(rows) >= BATCH:
            _flush(conv, rows)
            progress(0.1 + 0.85 * (m["position"] + 1) / total, f"copied {m['position'] + 1} of {total} messages")
            rows = []
    _flush(conv, rows)
    progress(0.97, f"copied {len(msgs)} messages")
    return tool_calls


def _message_row(conv: Conversation, source: Conversation, m: dict, uid: str, parent: str | None, now) -> dict:
    """The Message fields of one build message: its counts (counted again when repaired or never
    counted), where it was copied from, and its raw record."""
    counts = _count(m) if m.get("repaired") or not m.get("tokens") else m["tokens"]
    flags = dict(m.get("flags") or {})
    if "source_position" in m:
        flags["copied_from"] = {"conversation": source.pk, "position": m["source_position"]}
    # A fold's summary has no line of its own in the source: its record says where it came from.
    raw = m.get("raw") or json.dumps(
        {"contextviewer": "fold summary", "role": "user", "content": m["blocks"][0]["text"],
         "from_fold": m.get("from_fold"), "source_conversation": source.pk},
        ensure_ascii=False,
    )
    return dict(
        conversation_id=conv.pk,
        position=m["position"],
        turn=m["turn"],
        uuid=uid,
        parent_uuid=parent,
        role=m["role"],
        record_type=(m.get("record_type") or m["role"])[:60],
        subtype=(m.get("subtype") or "")[:60],
        blocks=m["blocks"],
        raw=raw,
        timestamp=m.get("timestamp") or now,
        is_sidechain=False,
        agent_id="",
        is_meta=bool(m.get("is_meta")),
        is_compact_summary=bool(m.get("is_compact_summary")),
        flags=flags,
        api_message_id=m.get("api_message_id") or "",
        tokens=counts,
        token_total=sum(counts.values()),
        source_id=m.get("source_id"),
        line_no=m.get("line_no"),
    )


def _flush(conv: Conversation, rows: list[dict]) -> None:
    if not rows:
        return
    Message.objects.bulk_create([Message(**r) for r in rows])
    texts = {r["position"]: search.text_of_blocks(r["blocks"]) for r in rows}
    ids = Message.objects.filter(
        conversation_id=conv.pk, position__gte=min(texts), position__lte=max(texts)
    ).values_list("pk", "position")
    search.index_messages(conv.pk, ((pk, texts[pos]) for pk, pos in ids if pos in texts))


def build_result(conv: Conversation) -> dict:
    lineage = conv.lineage or {}
    return {
        "conversation_id": conv.pk,
        "external_id": conv.external_id,
        "title": conv.title,
        "messages": conv.message_count,
        "turns": conv.messages.values("turn").distinct().count(),
        "source_id": (lineage.get("source") or {}).get("id"),
        "selection": lineage.get("selection"),
        "notes": lineage.get("notes") or [],
        # The job page lists these with a link (as it does for imports).
        "conversations": [
            {
                "id": conv.pk, "external_id": conv.external_id, "parent_external_id": None, "kind": conv.kind,
                "title": conv.title, "messages": conv.message_count, "model_calls": 0,
                "tool_calls": conv.tool_call_count, "folds": [], "bad_lines": 0,
            }
        ],
    }


# --- exports ----------------------------------------------------------------------------------

def _export_targets() -> dict[str, core_export.Target]:
    """Every export target by name: each format's own session file (``Format.export``, under the
    format's name, offered only for its conversations), then the plain ones of core/export.py."""
    own = [replace(f.export, name=f.name, agent_session=True) for f in formats.registry() if f.export is not None]
    return {t.name: t for t in (*own, *core_export.TARGETS)}


EXPORT_TARGETS = _export_targets()
CONTENT_TYPES = {name: t.content_type for name, t in EXPORT_TARGETS.items()}  # the export formats


def export_formats(agent: str | None) -> list[str]:
    """The export formats a conversation written by ``agent`` can be exported to honestly (an
    agent's own session file only for that agent's conversations)."""
    return core_export.offered(list(EXPORT_TARGETS.values()), agent)


class ExportRefused(ValueError):
    """An export format that would misrepresent the conversation (another agent's session file)."""


@dataclass
class ExportFile:
    format: str
    filename: str
    content_type: str
    content: str
    notes: list[str]
    session_id: str | None = None
    resume_hint: str = ""

    def __post_init__(self):  # what it says goes out in UTF-8 (a note may quote a log's text)
        self.content = core_export.well_formed(self.content)
        self.notes = [core_export.well_formed(n) for n in self.notes]


VIEWS = {"loaded": "the loaded view", "full": "the full record"}


def loaded_plan(conv: Conversation) -> tuple[core_build.Plan, list] | None:
    """What the agent loads, as a build selection: the latest fold's summary plus its preserved tail
    and what followed it (the builds' "after fold" of the latest fold); None when the conversation
    has no fold with a summary (it loads the whole record)."""
    infos = fold_infos(conv)
    if not infos or not infos[-1].summary_text:
        return None
    spans = turn_spans(conv)
    turns, folds = core_build.after_fold(infos[-1].number, spans, infos)
    return core_build.validate(turns, folds, spans, infos), infos


def _with_preserved(conv: Conversation, messages: list[dict], fold) -> list[dict]:
    """The loaded view's messages with every message the latest fold preserved, right after its
    summary, in position order (as the agent sends them: core/window.py). A build takes whole turns,
    and a preserved tail is often part of one: Claude Code keeps the last answer and the new prompt,
    written before its compact_boundary, in the turn the boundary ends."""
    have = {m.get("source_position") for m in messages}
    missing = sorted(p for p in fold.preserved if p not in have and p != fold.summary_position)
    if not missing:
        return messages
    kept = [message_dict(m) for m in conv.messages.filter(position__in=missing).order_by("position")]
    at = next((i + 1 for i, m in enumerate(messages) if fold.summary_position is not None
               and m.get("source_position") == fold.summary_position), 0)
    if at == 0 and messages and messages[0].get("is_compact_summary"):
        at = 1  # a summary written from the fold (no summary message): it heads the view
    return messages[:at] + kept + messages[at:]


def _summary_times(conv: Conversation, messages: list[dict]) -> None:
    """A fold's summary written into the loaded view (a handoff made here has no message of its
    own) takes the real time of the fold, else of the last message the fold put away: an agent's
    session file names itself by its first time, which must be the conversation's, never made up."""
    folds = None
    for m in messages:
        if m.get("timestamp") or not m.get("from_fold"):
            continue
        if folds is None:
            folds = build_folds(conv)
        fold = folds[m["from_fold"] - 1] if 0 < m["from_fold"] <= len(folds) else None
        if fold is None:
            continue
        m["timestamp"] = fold.timestamp or (
            conv.messages.filter(position__lte=fold.position, timestamp__isnull=False)
            .order_by("-position").values_list("timestamp", flat=True).first()
        ) or conv.ended_at


def export_messages(conv: Conversation, view: str = "full", notes: list[str] | None = None):
    """The conversation's messages as exporter dicts (raw-enriched), with measured usage on the
    first message of each model call: the whole record, or the loaded view (`view="loaded"`;
    what it holds is said in `notes`)."""
    usage = {
        c.position: {
            "input_tokens": c.input_uncached,
            "cache_creation_input_tokens": c.cache_write,
            "cache_read_input_tokens": c.cache_read,
            "output_tokens": c.output,
        }
        for c in ModelCall.objects.filter(conversation=conv)
    }
    folds = {f.position: f for f in conv.folds.filter(kind="compact")}
    fmt = formats.get(conv.agent)
    enrich = fmt.enrich if fmt is not None else (lambda d: d)
    selected = loaded_plan(conv) if view == "loaded" else None
    if selected is None:
        dicts = (message_dict(m) for m in conv.messages.order_by("position").iterator(chunk_size=2000))
        if view == "loaded" and notes is not None and conv.folds.exists():
            notes.append("The latest fold has no summary: the whole record is exported.")
    else:
        plan, infos = selected
        result = assemble(conv, plan, infos)
        loaded = _with_preserved(conv, result.messages, infos[-1])
        _summary_times(conv, loaded)
        dicts = iter(loaded)
        if notes is not None:
            notes.append(f"Loaded view: fold {infos[-1].number}'s summary, its preserved tail and what followed it "
                         f"({len(loaded)} messages); the whole record: view=full.")
            notes.extend(result.notes)
    out = []
    for d in dicts:
        # The stored line ("raw") stays: an agent's own session file takes what it can from it as written.
        d = enrich(d)
        at = d.get("source_position")
        fold = folds.get(at) if d["role"] == "system" and at is not None else None
        if fold is not None:
            d["pre_tokens"], d["trigger"] = fold.tokens_before, fold.trigger
        if d["role"] == "assistant" and at in usage:
            d["usage"] = usage[at]
        d["api_message_id"] = (d.get("api_message_id") or None) if d["role"] == "assistant" else None
        out.append(d)
    return out


def export(conv: Conversation, fmt: str, *, actor=None, view: str = "loaded") -> ExportFile:
    """The conversation as a file: what the agent loads (`view="loaded"`, the default: the latest
    fold's summary, its preserved tail and what followed it) or the whole record (`view="full"`).
    Exports are audited (who took which conversation out, how); `actor` is the request (page, API)
    or None (the command line)."""
    if view not in VIEWS:
        raise ValueError(f"Unknown export view {view!r}: use one of {', '.join(VIEWS)}.")
    if fmt not in CONTENT_TYPES:
        raise ValueError(f"Unknown export format {fmt!r}: use one of {', '.join(EXPORT_TARGETS)}.")
    if fmt not in export_formats(conv.agent):
        raise ExportRefused(
            f"A {formats.label(conv.agent)} conversation cannot be exported as {EXPORT_TARGETS[fmt].label}: that is "
            f"another agent's own session file. Use one of {', '.join(export_formats(conv.agent))}."
        )
    f = _export(conv, fmt, view)
    audit.record(actor, conv.project, "export.conversation", f"conversation {conv.pk}", format=fmt, view=view,
                 external_id=conv.external_id, filename=f.filename, via=audit.via(actor))
    return f


def _export(conv: Conversation, fmt: str, view: str = "loaded") -> ExportFile:
    target = EXPORT_TARGETS[fmt]
    header = [f"{conv.agent} · {conv.kind} · {conv.message_count} messages"]
    if conv.cwd:
        header.append(f"cwd: {conv.cwd}")
    source = (conv.lineage or {}).get("source")
    if source:
        header.append(f"built from conversation {source.get('id')} ({source.get('title') or source.get('external_id')})")
    meta = core_export.ExportMeta(
        # The loaded view keeps the id exports always had; the whole record gets one of its own.
        session_seed=f"{conv.project_id}:{conv.agent}:{conv.external_id}" + (":full" if view == "full" else ""),
        base=f"conversation-{conv.pk}",
        title=conv.title,
        heading=conv.title or conv.external_id,
        header=header,
        cwd=conv.cwd,
        git_branch=conv.git_branch,
        model=(conv.model_names or [""])[-1],
    )
    view_notes: list[str] = []
    written = target.write(export_messages(conv, view, view_notes), meta)
    return ExportFile(fmt, written.filename, target.content_type, written.content, view_notes + written.notes,
                      written.session_id, written.resume_hint)


@dataclass
class ContinueIn:
    """How to continue a conversation in the agent it came from: its own session file (what the
    agent loads) and the commands that put the file in place and resume it."""

    format: str
    label: str
    filename: str
    session_id: str
    commands: list[str]


def continue_in_agent(conv: Conversation) -> ContinueIn | None:
    """The commands to continue `conv` in its agent (None when the agent has no session file of its
    own here, and for conversations other than builds: the file is written to name it, which a
    build's page can afford). The file is the default export (the loaded view), downloaded to ~/Downloads."""
    if conv.kind != ConversationKind.BUILD or conv.agent not in EXPORT_TARGETS or conv.agent not in export_formats(conv.agent):
        return None
    f = _export(conv, conv.agent)
    if not f.session_id:
        return None
    target = EXPORT_TARGETS[conv.agent]
    if target.continue_commands is not None:  # the format's own (its Target): where the agent looks, how it resumes
        commands = target.continue_commands(f.filename, f.session_id, conv.cwd, f"~/Downloads/{f.filename}")
    else:
        commands = [f.resume_hint] if f.resume_hint else []
    return ContinueIn(conv.agent, target.label, f.filename, f.session_id, commands)


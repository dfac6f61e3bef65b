"""Does contextviewer show what the agent sent? One agent run (ops/drivers/) imported as a user would
(`import FOLDER`), compared with the requests the scripted server recorded (ops/scripted/):

- the agent's own label;
- main model calls per conversation (compaction and side calls are not main calls);
- tool calls per conversation;
- sub-agents linked under their parent;
- one fold per compaction, with its trigger; tokens_before = the agent's recorded figure (the
  driver reads it from the raw log: Run.recorded_before) or the last main call's measured input
  (input, or input + output);
  tokens_after = the input the scripted server reported for the first main call after the fold,
  None when none follows;
- the window at every main call: the request's items against `conversations.windows.call_window`
  (the loader the page and the API read), in order: texts, tool calls and results by tool id, the
  summary. Thinking is left out on both sides (providers drop or keep it by their own rules).

A request item the log cannot hold is accepted only through a named Allowance of the Run; every
other mismatch is a Difference.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

from contextviewer.accounts.services import get_or_create_project
from contextviewer.conversations import windows
from contextviewer.conversations.models import Conversation, Fold, FoldKind, FoldOrigin, Message
from contextviewer.ingest import imports
from contextviewer.jobs import queue as jobs
from contextviewer.jobs.models import JobStatus
from ops.drivers.base import Allowance, Run
from ops.scripted.server import Exchange
from ops.scripted.view import Item

MAX_WINDOW_DIFFS = 3  # per call: the first few tell the story


@dataclass
class Difference:
    where: str  # the conversation key ("main", "sub", ...) and call, e.g. "main call 4"
    what: str  # label | calls | tools | parent | folds | trigger | tokens_before | tokens_after | window | conversation
    expected: str
    got: str

    def __str__(self) -> str:
        return f"{self.where}: {self.what}: expected {self.expected}, got {self.got}"


def import_run(run: Run, project_name: str | None = None):
    """Import the run's folder into a new project, as `manage.py import FOLDER` does; the project."""

    project = get_or_create_project(project_name or f"agents check {run.key} {uuid.uuid4().hex[:8]}")
    job, _ = imports.start_import(project, paths=[str(run.folder)], enqueue=False)
    job = jobs.run(job.pk)
    if job is None or job.status != JobStatus.SUCCEEDED:
        raise RuntimeError(f"{run.key}: the import of {run.folder} failed: {job.error if job else 'job taken'}")
    return project


# --- which conversation is which --------------------------------------------------------------


def _keys(run: Run) -> list[str]:
    return list(dict.fromkeys(p.agent for p in run.plan.prompts))


def _first_marker(run: Run, key: str) -> str:
    return next(p.marker for p in run.plan.prompts if p.agent == key)


def find_conversations(run: Run, project) -> dict[str, Conversation | None]:
    """Each conversation key of the plan -> the imported conversation whose user lines hold its first
    prompt's marker (a sub-agent among the conversations with a parent, a main one among the rest)."""
    out: dict[str, Conversation | None] = {}
    for key in _keys(run):
        is_sub = key in run.parents
        marked = Message.objects.filter(conversation__project=project, role="user", raw__contains=_first_marker(run, key))
        convs = Conversation.objects.filter(pk__in=marked.values("conversation_id"), parent__isnull=not is_sub).order_by("pk")
        out[key] = convs.first()
    return out


def _compaction_key(run: Run, ex: Exchange) -> str:
    p = run.plan.prompt_for(ex.view.user_texts()) if ex.view else None
    return run.plan.prompts[p].agent if p is not None else "main"


# --- the check -------------------------------------------------------------------------------


def check(run: Run, project) -> list[Difference]:
    convs = find_conversations(run, project)
    diffs: list[Difference] = []
    with run.server.lock:
        exchanges = list(run.server.exchanges)
    for key, conv in convs.items():
        mains = [e for e in exchanges if e.kind == "main" and e.agent == key]
        if conv is None:
            diffs.append(Difference(key, "conversation", f"a conversation holding {_first_marker(run, key)!r}", "none imported"))
            continue
        if conv.agent != run.label:
            diffs.append(Difference(key, "label", run.label, conv.agent))
        calls = conv.model_calls.count()
        if calls != len(mains):
            diffs.append(Difference(key, "calls", f"{len(mains)} main calls", str(calls)))
        tools = sum(1 for e in mains if e.reply and e.reply.tool is not None)
        if conv.tool_call_count != tools:
            diffs.append(Difference(key, "tools", f"{tools} tool calls", str(conv.tool_call_count)))
        if key in run.parents:
            parent = convs.get(run.parents[key])
            if parent is None or conv.parent_id != parent.pk:
                diffs.append(Difference(key, "parent", f"under {run.parents[key]} ({parent.pk if parent else '?'})",
                                        f"under {conv.parent_id}"))
        compactions = [e for e in exchanges if e.kind == "compaction" and _compaction_key(run, e) == key]
        diffs += check_folds(run, key, conv, exchanges, compactions)
        diffs += check_windows(run, key, conv, mains, compactions)
    return diffs


def check_folds(run: Run, key: str, conv: Conversation, exchanges: list[Exchange], compactions: list[Exchange]) -> list[Difference]:
    diffs: list[Difference] = []
    folds = list(conv.folds.filter(origin=FoldOrigin.IMPORTED).exclude(kind=FoldKind.MICROCOMPACT).order_by("position", "pk"))
    triggers = run.triggers.get(key)
    expected = len(triggers) if triggers is not None else len(compactions)
    if len(folds) != expected:
        diffs.append(Difference(key, "folds", str(expected), str(len(folds))))
        return diffs
    if triggers is not None:
        got = [f.trigger for f in folds]
        if got != triggers:
            diffs.append(Difference(key, "trigger", str(triggers), str(got)))
    recorded = run.recorded_before.get(key) or []
    for n, (fold, ex) in enumerate(zip(folds, compactions), 1):
        figures = _fold_figures(key, n, fold, ex, exchanges, recorded[n - 1] if n <= len(recorded) else None)
        diffs += [d for d in figures if d.what not in run.unrecorded]
    return diffs


def _fold_figures(key: str, n: int, fold: Fold, compaction: Exchange, exchanges: list[Exchange], recorded: int | None) -> list[Difference]:
    diffs = []
    before = [e for e in exchanges if e.kind == "main" and e.agent == key and e.n < compaction.n]
    after = calls_after_fold(exchanges, key, compaction)
    if before:
        last = before[-1].usage
        accepted = {last["input"], last["input"] + last["output"]} | ({recorded} if recorded is not None else set())
        if fold.tokens_before not in accepted:
            diffs.append(Difference(f"{key} fold {n}", "tokens_before", " or ".join(map(str, sorted(accepted))), str(fold.tokens_before)))
    want_after = after[0].usage["input"] if after else None
    if fold.tokens_after != want_after:
        diffs.append(Difference(f"{key} fold {n}", "tokens_after", str(want_after), str(fold.tokens_after)))
    return diffs


def calls_after_fold(exchanges: list[Exchange], key: str, compaction: Exchange) -> list[Exchange]:
    """The main calls of `key` that carry the fold: those sent after the compaction request, from the
    first one whose items hold the summary it returned. A compaction made in the background
    (Copilot) is applied at the first call after its summary came back: a call sent while it ran
    still carried everything, and which of the two reaches the server first is a race. Where no
    later call holds the summary as sent (an agent that rewrites it), every later call counts."""
    later = [e for e in exchanges if e.kind == "main" and e.agent == key and e.n > compaction.n]
    mark = _summary_mark(compaction.reply.text if compaction.reply else "")
    if not mark:
        return later
    first = next((i for i, e in enumerate(later) if e.view and any(mark in item.text for item in e.view.items)), None)
    return later if first is None else later[first:]


def _summary_mark(summary: str) -> str:
    """The summary's longest line without its tags (agents wrap or reformat the rest)."""
    lines = [re.sub(r"<[^>]+>", "", line).strip() for line in summary.splitlines()]
    return max(lines, key=len, default="") if any(len(line) >= 20 for line in lines) else ""


# --- windows ---------------------------------------------------------------------------------


def check_windows(run: Run, key: str, conv: Conversation, mains: list[Exchange],
                  compactions: list[Exchange] | None = None) -> list[Difference]:
    diffs: list[Difference] = []
    count = conv.model_calls.count()
    folded_at = compactions[0].n if compactions else None
    for i, ex in enumerate(mains, 1):
        if i > count:
            break
        sent, got = ex.view.items if ex.view else [], windows.call_window(conv, i).items
        ignores = run.after_fold_ignores
        if ignores is not None and folded_at is not None and ex.n > folded_at:
            sent = [r for r in sent if not (r.kind == "text" and ignores(r.text or ""))]
            got = [g for g in got if not (g["kind"] == "text" and ignores(g["text"] or ""))]
        problems = compare_window(sent, got, run.allowances)
        diffs += [Difference(f"{key} call {i}", "window", e, g) for e, g in problems[:MAX_WINDOW_DIFFS]]
    return diffs


def _norm(text: str | None) -> str:
    return " ".join((text or "").split())


def _same_text(a: str, b: str) -> bool:
    return bool(a and b) and (a == b or a in b or b in a)


def _matches(r: Item, g: dict) -> bool:
    if r.kind in ("tool_call", "tool_result"):
        if g["kind"] != r.kind:
            return False
        if r.tool_id and g.get("tool_id"):
            return r.tool_id == g["tool_id"]
        return r.kind == "tool_call" and r.tool_name == g.get("tool_name")
    if r.kind == "summary" or g["kind"] == "summary":
        if g["kind"] == "summary" and r.kind == "summary":
            return True  # an encrypted summary on both sides
        return g["kind"] == "summary" and _same_text(_norm(r.text), _norm(g["text"]))
    if r.kind in ("image", "other"):
        return g["kind"] == r.kind
    return g["kind"] == "text" and _same_text(_norm(r.text), _norm(g["text"]))


def _describe(kind: str, tool_id: str | None, text: str) -> str:
    return f"{kind}{f' [{tool_id}]' if tool_id else ''} {_norm(text)[:80]!r}"


def compare_window(sent: list[Item], shown: list[dict], allowances: list[Allowance]) -> list[tuple[str, str]]:
    """(expected, got) per mismatch between what a request carried and what the window shows, in
    order. Items are aligned greedily: each sent item is looked for after the last one found; the
    shown items skipped over were not sent, a sent item not found is missing from the window."""
    sent = [r for r in sent if r.kind != "thinking" and (r.kind != "text" or _norm(r.text))]
    shown = [g for g in shown if g["kind"] != "thinking" and (g["kind"] not in ("text",) or _norm(g["text"]))]
    problems: list[tuple[str, str]] = []
    j = 0
    for r in sent:
        k = next((k for k in range(j, len(shown)) if _matches(r, shown[k])), None)
        if k is None:
            if not any(a.matches(r.text) for a in allowances):
                problems.append((f"sent {_describe(r.kind, r.tool_id, r.text)}", "not in the window at this place"))
            continue
        for g in shown[j:k]:
            problems.append(("not sent here", f"window shows {_describe(g['kind'], g.get('tool_id'), g['text'])}"))
        j = k + 1
    for g in shown[j:]:
        problems.append(("not sent here", f"window shows {_describe(g['kind'], g.get('tool_id'), g['text'])}"))
    return problems

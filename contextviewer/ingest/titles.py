"""Titles: after an import, one title job names each new conversation from its first user request
(builtin), or with the project's provider when one is configured. Titles the log itself gives
(Claude Code's summary/ai-title records) are kept."""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.urls import reverse

from contextviewer.core import handoff as core
from contextviewer.core import titles as core_titles
from contextviewer.core.secrets import mask_text
from contextviewer.providers import services as providers

from contextviewer.jobs import queue as jobs
from contextviewer.conversations.models import Conversation, ConversationKind, Message
from contextviewer.jobs.models import Job


def first_request(conv: Conversation) -> str:
    """The first user request: harness tags (reminders, command output) aside; a bare slash command
    only when no real request follows among the first messages."""
    command = ""
    for blocks in (
        Message.objects.filter(conversation=conv, role="user", is_meta=False, is_compact_summary=False)
        .order_by("position")
        .values_list("blocks", flat=True)[:50]
    ):
        kinds = {b.get("kind") for b in blocks if isinstance(b, dict)}
        if "tool_result" in kinds:
            continue
        text = "\n".join(b.get("text") or "" for b in blocks if isinstance(b, dict) and b.get("kind") == "text").strip()
        plain = core_titles.strip_tags(text).strip()
        if not plain:
            continue
        if core_titles.is_command_only(text):
            command = command or plain
            continue
        return plain
    return command


def derived_titles(request: str) -> set[str]:
    """The titles ingest gives a conversation from its first prompt (now, and before tags were stripped)."""
    return {core_titles.from_request(request, 120), " ".join(request.split())[:120]}


def _is_untitled(conv: Conversation, request: str) -> bool:
    """No title, one ingest derived from the first prompt, or one still carrying harness tags (a
    log's own clean title is kept)."""
    title = conv.title or ""
    if not title or title in derived_titles(request) or core_titles.is_command_only(title):
        return True
    return core_titles.strip_tags(title) != title


def after_import(project, conversation_ids, *, user=None) -> list[Job]:
    """One title job for the new top-level conversations of an import (not one per conversation:
    a folder of thousands of sessions would flood the jobs list). The key makes it once per set of
    conversations, so importing the same files again queues nothing.

    Called by every import when it finishes (imports.titles_after_job); the job asks the project's
    provider (at most TITLE_CALL_BUDGET times), the builtin one (the first request, cleaned) when
    none is configured."""
    ids = sorted(
        Conversation.objects.filter(
            pk__in=list(conversation_ids), parent__isnull=True, kind=ConversationKind.MAIN
        ).values_list("pk", flat=True)
    )
    if not ids:
        return []
    key = f"title:{ids[0]}" if len(ids) == 1 else "titles:" + hashlib.sha256(",".join(map(str, ids)).encode()).hexdigest()
    job, new = jobs.create_job(project, "title", {"conversation_ids": ids}, user=user, idempotency_key=key)
    return [job] if new else []


def run_title(job: Job, progress) -> dict:
    """Title the job's conversations (``conversation_ids``; an older job names one,
    ``conversation_id``), reporting "n of N". The project's provider is asked at most
    TITLE_CALL_BUDGET times; past that, and when it fails, a conversation gets the builtin title."""
    if "conversation_id" in job.params:  # one conversation: a job queued before titles were batched
        conv = Conversation.objects.get(pk=job.params["conversation_id"], project=job.project)
        return _title(job, conv, providers.get_provider(job.project), progress)
    ids = list(job.params.get("conversation_ids") or ())
    provider = providers.get_provider(job.project)
    offline = provider if provider.name == "builtin" else providers.get_provider(job.project, "builtin")
    budget = settings.TITLE_CALL_BUDGET
    # A provider attempt is a ProviderCall row counted per job: room for the budget and its retries.
    max_attempts = budget + providers.MAX_ATTEMPTS_PER_JOB
    asked = 0
    past_budget: list[int] = []  # not asked: over the budget, or after the provider failed
    error = ""
    titled: list[dict] = []
    convs = Conversation.objects.filter(pk__in=ids, project=job.project).order_by("pk")
    total = len(ids)
    for n, conv in enumerate(convs.iterator(), 1):
        progress((n - 1) / max(total, 1), f"{n} of {total}")
        use = provider
        if provider is not offline:
            if not _needs_title(conv):
                use = offline  # nothing to ask: _title keeps it
            elif asked >= budget or error:
                use = offline
                past_budget.append(conv.pk)
            else:
                asked += 1
        try:
            titled.append(_title(job, conv, use, None, max_attempts=max_attempts))
        except providers.ProviderError as exc:
            # Retried already (complete): the provider is not asked again by this job.
            error = str(exc)[:500]
            past_budget.append(conv.pk)
            titled.append(_title(job, conv, offline, None))
    progress(1.0, f"{total} of {total}")
    result = {
        "titles": titled,
        "total": total,
        "titled": sum(1 for t in titled if t["changed"]),
        "provider": provider.name,
        "provider_calls": asked,
    }
    if past_budget:
        result["past_budget"] = past_budget
        why = (
            f"{provider.name} failed ({error}), so it was not asked again"
            if error
            else f"{provider.name} was asked for {asked} titles (CONTEXTVIEWER_TITLE_CALL_BUDGET is {budget})"
        )
        result["note"] = f"{why}; {len(past_budget)} conversations keep the builtin title"
    return result


def _needs_title(conv: Conversation) -> bool:
    request = first_request(conv)
    return bool(request) and _is_untitled(conv, request)


def _title(job: Job, conv: Conversation, provider, progress, *, max_attempts: int = providers.MAX_ATTEMPTS_PER_JOB) -> dict:
    request = first_request(conv)
    if not request or not _is_untitled(conv, request):
        return {"conversation_id": conv.pk, "title": conv.title, "changed": False}
    system, prompt = core.title_prompt(request)
    if progress:
        progress(0.2, f"asking {provider.name} for a title")
    completion = providers.complete(
        provider, project=job.project, role="title", system=system, prompt=prompt, max_tokens=60, job=job,
        conversation=conv, max_attempts=max_attempts,
    )
    # Masked before it is cut to length, so a cut never leaves half a secret unrecognised.
    title = core.clean_title(mask_text(completion.text), 120) or core.clean_title(mask_text(request), 80)
    # Only if nobody (a later import with the log's own title) changed it meanwhile.
    changed = Conversation.objects.filter(pk=conv.pk, title=conv.title).update(title=title)
    return {"conversation_id": conv.pk, "title": title, "changed": bool(changed)}


def title_outcome(job: Job) -> dict:
    """The job page's account of a title job (jobs/kinds.py OUTCOMES): how many conversations it
    titled, by which provider, and the first few titles with their conversations."""
    result = job.result or {}
    rows = result.get("titles") or ([result] if "conversation_id" in result else [])
    figures = [
        ("Conversations", result.get("total", len(rows))),
        ("Titled", result.get("titled", sum(1 for r in rows if r.get("changed")))),
    ]
    if result.get("provider") == "builtin":
        figures.append(("Provider", "builtin (offline, no call)"))
    elif result.get("provider"):
        figures.append(("Provider", f"{result['provider']} ({result.get('provider_calls', 0)} calls)"))
    shown = [r for r in rows if r.get("changed")][:10]
    links = [(r.get("title") or f"conversation {r.get('conversation_id')}", reverse("conversation", args=[r["conversation_id"]]))
             for r in shown if r.get("conversation_id")]
    return {"heading": "The titles", "figures": figures, "links": links}

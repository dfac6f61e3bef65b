"""Titles: after an import, a title job names each new conversation from its first user request
(builtin), or with the project's provider when one is configured. Titles the log itself gives
(Claude Code's summary/ai-title records) are kept."""

from __future__ import annotations

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
    """One title job per new top-level conversation (the key makes it once per conversation).

    Called by every import when it finishes (services.run_import); the job asks the project's
    provider, the builtin one (the first request, cleaned) when none is configured."""
    created = []
    for conv in Conversation.objects.filter(pk__in=list(conversation_ids), parent__isnull=True, kind=ConversationKind.MAIN):
        job, new = jobs.create_job(project, "title", {"conversation_id": conv.pk}, user=user, idempotency_key=f"title:{conv.pk}")
        if new:
            created.append(job)
    return created


def run_title(job: Job, progress) -> dict:
    conv = Conversation.objects.get(pk=job.params["conversation_id"], project=job.project)
    request = first_request(conv)
    if not request or not _is_untitled(conv, request):
        return {"conversation_id": conv.pk, "title": conv.title, "changed": False}
    provider = providers.get_provider(job.project)
    system, prompt = core.title_prompt(request)
    progress(0.2, f"asking {provider.name} for a title")
    completion = providers.complete(
        provider, project=job.project, role="title", system=system, prompt=prompt, max_tokens=60, job=job, conversation=conv
    )
    # Masked before it is cut to length, so a cut never leaves half a secret unrecognised.
    title = core.clean_title(mask_text(completion.text), 120) or core.clean_title(mask_text(request), 80)
    # Only if nobody (a later import with the log's own title) changed it meanwhile.
    changed = Conversation.objects.filter(pk=conv.pk, title=conv.title).update(title=title)
    return {"conversation_id": conv.pk, "title": title, "changed": bool(changed)}

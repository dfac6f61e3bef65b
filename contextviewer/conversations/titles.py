"""Titles: after an import, a title job names each new conversation from its first user request
(builtin), or with the project's provider when one is configured. Titles the log itself gives
(Claude Code's summary/ai-title records) are kept."""

from __future__ import annotations

from contextviewer.core import handoff as core
from contextviewer.core.secrets import mask_text
from contextviewer.providers import services as providers

from . import jobs
from .models import Conversation, ConversationKind, Job, Message


def first_request(conv: Conversation) -> str:
    for blocks in (
        Message.objects.filter(conversation=conv, role="user", is_meta=False, is_compact_summary=False)
        .order_by("position")
        .values_list("blocks", flat=True)[:50]
    ):
        kinds = {b.get("kind") for b in blocks if isinstance(b, dict)}
        if "tool_result" in kinds:
            continue
        text = "\n".join(b.get("text") or "" for b in blocks if isinstance(b, dict) and b.get("kind") == "text").strip()
        if text and not text.startswith("<"):  # <command-name>, <local-command-stdout>: not a request
            return text
    return ""


def _is_untitled(conv: Conversation, request: str) -> bool:
    """No title, or the one ingest derived from the first prompt (a log's own title is kept)."""
    return not conv.title or conv.title == " ".join(request.split())[:120]


def after_import(project, conversation_ids, *, user=None) -> list[Job]:
    """One title job per new top-level conversation (the key makes it once per conversation)."""
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

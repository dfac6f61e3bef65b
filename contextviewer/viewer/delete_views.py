"""Deleting a conversation from its page: a confirmation page (works without JavaScript) and the
POST that deletes. Owners and admins only; the work is in deletion.py."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from contextviewer.accounts import permissions
from contextviewer.conversations import deletion
from contextviewer.conversations.models import Conversation


def _refused(request: HttpRequest, conv: Conversation, reason: str) -> HttpResponse:
    return render(request, "viewer/delete.html", {"conv": conv, "refusal": reason}, status=403)


@login_required
@require_http_methods(["GET", "POST"])
def conversation_delete(request: HttpRequest, pk: int) -> HttpResponse:
    conv, member = permissions.get_conversation_and_membership(request, pk)
    reason = deletion.refusal(request.user, conv, member)
    if reason is not None:
        return _refused(request, conv, reason)
    if request.method == "POST" and request.POST.get("confirm") == "yes":
        parent = conv.parent_id
        done = deletion.delete_conversation(conv, actor=request, via="web")
        what = f"{done.messages} message{'s' if done.messages != 1 else ''}"
        if done.conversations > 1:
            what += f", {done.conversations - 1} sub-agent{'s' if done.conversations != 2 else ''}"
        messages.info(request, f"Deleted conversation {done.id} ({done.title or done.external_id}): {what}.")
        if parent is not None and Conversation.objects.filter(pk=parent).exists():
            return redirect("conversation", pk=parent)
        return redirect("index")
    return render(request, "viewer/delete.html", {"conv": conv, "plan": deletion.plan(conv)})

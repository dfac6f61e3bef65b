"""Deleting a conversation (issue 10, item 10): from the page, the API and the command line; by
owners and admins only; everything of it goes (sub-agents, messages, model calls, folds, probes,
review items, search entries, its unused upload), builds made from it keep their copy, other
conversations of the same file stay, and the audit log says who deleted what."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.apps import apps
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.db import connection, models
from django.test import Client
from django.urls import reverse

from contextviewer.accounts.models import AuditEvent, Membership, Role
from contextviewer.builds import services as builds
from contextviewer.ingest import files as ingest, imports as services
from contextviewer.jobs import queue as jobs
from contextviewer.conversations import search
from contextviewer.conversations.models import Conversation, Fold, Message, ModelCall, Source
from contextviewer.review import probes, queues
from contextviewer.review.models import Comment, FactProbe, Review, ReviewItem
from tests.factories import build_conversation, make_project, make_user
from tests.sessions import SessionBuilder, session_lines

pytestmark = pytest.mark.django_db


# --- what is left of a set of conversations ------------------------------------------------------


def search_entries(message_ids: list[int]) -> int:
    """Entries the search index still holds for these messages (read from the index itself)."""
    if not message_ids:
        return 0
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.fts_instances USING fts5vocab(main, {search.FTS_TABLE}, instance)"
            )
            marks = ",".join("%s" for _ in message_ids)
            cursor.execute(f"SELECT count(*) FROM temp.fts_instances WHERE doc IN ({marks})", message_ids)
        else:
            cursor.execute(f"SELECT count(*) FROM {search.PG_TABLE} WHERE message_id = ANY(%s)", [message_ids])
        return cursor.fetchone()[0]


def leftovers(conversation_ids: list[int], message_ids: list[int], fold_ids: list[int]) -> dict[str, int]:
    """Rows of any model still pointing at these conversations, messages or folds (a model added
    later with such a key is checked too), plus search entries."""
    targets = {Conversation: conversation_ids, Message: message_ids, Fold: fold_ids}
    out = {}
    for model in apps.get_models():
        for f in model._meta.get_fields():
            if isinstance(f, models.ForeignKey) and f.related_model in targets and f.concrete:
                n = model.objects.filter(**{f"{f.name}_id__in": targets[f.related_model]}).count()
                if n:
                    out[f"{model._meta.label}.{f.name}"] = n
    for model, ids in targets.items():
        n = model.objects.filter(pk__in=ids).count()
        if n:
            out[model._meta.label] = n
    n = search_entries(message_ids)
    if n:
        out["search entries"] = n
    return out


def ids_of(conv: Conversation) -> tuple[list[int], list[int], list[int]]:
    convs = [conv.pk, *Conversation.objects.filter(parent=conv).values_list("pk", flat=True)]
    return (
        convs,
        list(Message.objects.filter(conversation_id__in=convs).values_list("pk", flat=True)),
        list(Fold.objects.filter(conversation_id__in=convs).values_list("pk", flat=True)),
    )


def member(project, role: str, name: str | None = None):
    return make_user(name or f"zz-{role}", project=project, role=role)


def client_for(user) -> Client:
    c = Client()
    c.force_login(user)
    return c


# --- a conversation with everything hanging on it ------------------------------------------------


@pytest.fixture
def rich(project, user):
    """A conversation with a sub-agent, folds, model calls, search entries, fact probes, a review
    queue item with a review and a comment, and a build made from two of its turns."""
    built = build_conversation(project, turns=16, title="Rich session with a leaked key")
    conv = built.conversation
    assert built.child is not None and built.folds
    for fold in built.folds:
        probes.compute_probe(fold)
    queue = queues.create_queue(project, "All folds", {})
    item = ReviewItem.objects.get(queue=queue, fold=built.folds[0])
    Review.objects.create(item=item, fold=item.fold, reviewer=user, scores={"fidelity": 3})
    Comment.objects.create(project=project, fold=built.folds[0], author=user, turn=1, text="lost the path")
    job = builds.start_build(conv, "1,2", "", user=user, enqueue=False)
    done = jobs.run(job.pk)
    assert done.status == "succeeded", done.error
    build = Conversation.objects.get(pk=done.result["conversation_id"])
    return conv, built.child, build


def test_an_owner_deletes_a_conversation_from_its_page_and_nothing_of_it_is_left(rich, user, project):
    conv, child, build = rich
    convs, messages, folds = ids_of(conv)
    assert child.pk in convs and len(folds) >= 1
    # What there is before, counted from the rows: the check below has something to find.
    before = leftovers(convs, messages, folds)
    assert before["conversations.Message.conversation"] == len(messages) > 0
    assert before["conversations.ModelCall.conversation"] == ModelCall.objects.filter(conversation_id__in=convs).count() > 0
    assert before["review.FactProbe.conversation"] == len(folds)
    assert before["review.ReviewItem.fold"] == len(folds) and before["review.Review.fold"] == 1 and before["review.Comment.fold"] == 1
    assert before["search entries"] > 0
    build_messages = list(build.messages.order_by("position").values_list("position", "role", "blocks", "raw"))
    assert build_messages and before.get("conversations.Conversation.parent") == 1

    c = client_for(user)
    page = c.get(reverse("conversation", args=[conv.pk])).content.decode()
    assert 'id="danger-zone"' in page and reverse("conversation_delete", args=[conv.pk]) in page
    confirm = c.get(reverse("conversation_delete", args=[conv.pk]))
    assert confirm.status_code == 200
    text = confirm.content.decode()
    assert f"{len(messages)} messages" in text and "1 sub-agent conversation" in text and "Delete permanently" in text
    assert "1 build made from it keeps their own copy" in text
    # The form works without JavaScript: a plain POST with the confirmation field.
    r = c.post(reverse("conversation_delete", args=[conv.pk]), {"confirm": "yes"})
    assert r.status_code == 302 and r["Location"] == reverse("index")
    assert leftovers(convs, messages, folds) == {}
    assert not FactProbe.objects.exists() and not ReviewItem.objects.exists() and not Review.objects.exists()
    assert search.search(user, "Rich") == [] or all(h.conversation_id == build.pk for h in search.search(user, "Rich"))

    # The build kept its own copy, opens, exports, and still says where it came from.
    build.refresh_from_db()
    assert list(build.messages.order_by("position").values_list("position", "role", "blocks", "raw")) == build_messages
    assert build.lineage["source"]["id"] == conv.pk and build.lineage["source"]["title"] == "Rich session with a leaked key"
    page = c.get(reverse("conversation", args=[build.pk]))
    assert page.status_code == 200
    assert f"(conversation {conv.pk}, since deleted)" in page.content.decode()
    assert reverse("conversation", args=[conv.pk]) + '"' not in page.content.decode()
    assert builds.export(build, "markdown").content.count("**User**") >= 2

    event = AuditEvent.objects.get(action="conversation.deleted")
    assert event.actor == user and event.project == project
    assert event.details["conversation_id"] == conv.pk and event.details["external_id"] == conv.external_id
    assert event.details["title"] == "Rich session with a leaked key"
    assert event.details["message_count"] == len(messages) and event.details["subagents"] == 1
    assert event.details["via"] == "web"


def test_deleting_a_sub_agent_keeps_its_parent(rich, user):
    conv, child, _build = rich
    parent_messages = conv.messages.count()
    r = client_for(user).post(reverse("conversation_delete", args=[child.pk]), {"confirm": "yes"})
    assert r.status_code == 302 and r["Location"] == reverse("conversation", args=[conv.pk])
    assert not Conversation.objects.filter(pk=child.pk).exists()
    assert conv.messages.count() == parent_messages
    assert client_for(user).get(reverse("conversation", args=[conv.pk])).status_code == 200


def test_a_get_or_an_unconfirmed_post_deletes_nothing(rich, user):
    conv, _child, _build = rich
    c = client_for(user)
    assert c.get(reverse("conversation_delete", args=[conv.pk])).status_code == 200
    assert c.post(reverse("conversation_delete", args=[conv.pk]), {}).status_code == 200
    assert Conversation.objects.filter(pk=conv.pk).exists() and not AuditEvent.objects.filter(action="conversation.deleted").exists()


# --- roles ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("role", [Role.MEMBER, Role.ANNOTATOR, Role.VIEWER])
def test_members_annotators_and_viewers_cannot_delete_and_see_no_button(project, role):
    conv = build_conversation(project, turns=3).conversation
    c = client_for(member(project, role))
    page = c.get(reverse("conversation", args=[conv.pk]))
    assert page.status_code == 200
    assert "danger-zone" not in page.content.decode() and reverse("conversation_delete", args=[conv.pk]) not in page.content.decode()
    for r in (c.get(reverse("conversation_delete", args=[conv.pk])), c.post(reverse("conversation_delete", args=[conv.pk]), {"confirm": "yes"})):
        assert r.status_code == 403
        assert f"Your role ({role})" in r.content.decode() and "only owners and admins may" in r.content.decode()
    assert Conversation.objects.filter(pk=conv.pk).exists()
    assert not AuditEvent.objects.filter(action="conversation.deleted").exists()


def test_an_admin_may_delete_and_an_outsider_does_not_learn_it_exists(project):
    conv = build_conversation(project, turns=3).conversation
    outsider = make_user("zz-outsider", project=make_project("elsewhere"), role=Role.OWNER)
    assert client_for(outsider).post(reverse("conversation_delete", args=[conv.pk]), {"confirm": "yes"}).status_code == 404
    admin = member(project, Role.ADMIN)
    page = client_for(admin).get(reverse("conversation", args=[conv.pk])).content.decode()
    assert 'id="danger-zone"' in page
    assert client_for(admin).post(reverse("conversation_delete", args=[conv.pk]), {"confirm": "yes"}).status_code == 302
    assert not Conversation.objects.filter(pk=conv.pk).exists()
    assert AuditEvent.objects.get(action="conversation.deleted").actor == admin


# --- the API -------------------------------------------------------------------------------------


def _make_token(user, project) -> str:
    from contextviewer.accounts import services as accounts

    _row, secret = accounts.create_token(user, project, "t", "30")
    return secret


def test_the_api_deletes_for_owners_and_admins_and_refuses_other_roles_with_a_reason(project, user):
    conv = build_conversation(project, turns=3).conversation
    convs, messages, folds = ids_of(conv)
    for role in (Role.MEMBER, Role.ANNOTATOR, Role.VIEWER):
        secret = _make_token(member(project, role), project)
        r = Client().delete(f"/api/conversations/{conv.pk}", headers={"Authorization": f"Bearer {secret}"})
        assert r.status_code == 403, role
        assert f"Your role ({role})" in r.json()["detail"]
    other = make_project("other")
    outsider_token = _make_token(make_user("zz-out", project=other, role=Role.OWNER), other)
    assert Client().delete(f"/api/conversations/{conv.pk}", headers={"Authorization": f"Bearer {outsider_token}"}).status_code == 404
    # A token of another project, held by this project's owner, reaches only its own project.
    Membership.objects.create(project=other, user=user, role=Role.OWNER)
    cross = _make_token(user, other)
    assert Client().delete(f"/api/conversations/{conv.pk}", headers={"Authorization": f"Bearer {cross}"}).status_code == 404
    assert Conversation.objects.filter(pk=conv.pk).exists()

    r = Client().delete(f"/api/conversations/{conv.pk}", headers={"Authorization": f"Bearer {_make_token(user, project)}"})
    assert r.status_code == 200, r.content
    body = r.json()
    assert body["id"] == conv.pk and body["external_id"] == conv.external_id
    assert body["messages"] == len(messages) and body["conversations"] == len(convs) and body["subagents"] == len(convs) - 1
    assert leftovers(convs, messages, folds) == {}
    assert Client().delete(f"/api/conversations/{conv.pk}", headers={"Authorization": f"Bearer {_make_token(user, project)}"}).status_code == 404
    event = AuditEvent.objects.get(action="conversation.deleted")
    assert event.actor == user and event.details["via"] == "api" and event.details["message_count"] == len(messages)


def test_the_api_deletes_with_a_session_too(project, user):
    conv = build_conversation(project, turns=2, subagent_turn=None).conversation
    c = Client(enforce_csrf_checks=False)
    c.force_login(user)
    assert c.delete(f"/api/conversations/{conv.pk}").status_code == 200
    assert not Conversation.objects.filter(pk=conv.pk).exists()


# --- the command line ----------------------------------------------------------------------------


def test_the_command_asks_first_and_deletes_on_yes(project, monkeypatch, capsys):
    conv = build_conversation(project, turns=3, subagent_turn=None, external_id="sess-to-delete").conversation
    answers = iter(["no"])
    monkeypatch.setattr("builtins.input", lambda prompt="": next(answers))
    with pytest.raises(SystemExit) as exc:
        call_command("delete", "sess-to-delete")
    assert exc.value.code == 1 and "not confirmed" in capsys.readouterr().err
    assert Conversation.objects.filter(pk=conv.pk).exists()

    monkeypatch.setattr("builtins.input", lambda prompt="": "yes")
    call_command("delete", "sess-to-delete")
    assert not Conversation.objects.filter(pk=conv.pk).exists()
    out = capsys.readouterr().out
    assert f"deleted conversation {conv.pk} (sess-to-delete): {conv.message_count} messages" in out
    event = AuditEvent.objects.get(action="conversation.deleted")
    assert event.actor is None and event.details["via"] == "command" and event.details["external_id"] == "sess-to-delete"


def test_the_command_with_yes_asks_nothing_and_refuses_an_ambiguous_session_id(project, monkeypatch, capsys):
    other = make_project("other")
    a = build_conversation(project, turns=2, subagent_turn=None, external_id="same-session").conversation
    b = build_conversation(other, turns=2, subagent_turn=None, external_id="same-session").conversation
    monkeypatch.setattr("builtins.input", lambda prompt="": pytest.fail("asked"))
    with pytest.raises(SystemExit) as exc:
        call_command("delete", "same-session", "--yes")
    assert exc.value.code == 2 and "names 2 conversations" in capsys.readouterr().err
    call_command("delete", str(b.pk), "--yes")
    assert Conversation.objects.filter(pk=a.pk).exists() and not Conversation.objects.filter(pk=b.pk).exists()
    with pytest.raises(SystemExit):
        call_command("delete", "no-such-session", "--yes")


# --- uploads and sources -------------------------------------------------------------------------


def _upload(project, name: str, data: bytes, user=None) -> list[int]:
    stored = services.store_upload(SimpleUploadedFile(name, data))
    job, _ = services.start_import(project, uploads=[stored], user=user, enqueue=False)
    done = jobs.run(job.pk)
    assert done.status == "succeeded", done.error
    return [c["id"] for c in done.result["conversations"]]


def test_an_uploaded_session_is_deleted_with_its_stored_file_unless_another_project_uses_it(
    project, user, settings, tmp_path, django_capture_on_commit_callbacks
):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    data = ("\n".join(session_lines(3, SessionBuilder(session_id="aaaaaaaa-2222-4333-8444-555555555555"))) + "\n").encode()
    [conv_id] = _upload(project, "session.jsonl", data, user)
    other = make_project("other")
    [other_id] = _upload(other, "session.jsonl", data)
    stored = list((tmp_path / "media" / "uploads").rglob("session.jsonl"))
    assert len(stored) == 1 and Source.objects.filter(path__startswith="upload:").count() == 2
    messages = list(Message.objects.filter(conversation_id=conv_id).values_list("pk", flat=True))
    assert search_entries(messages) > 0

    with django_capture_on_commit_callbacks(execute=True):
        r = client_for(user).post(reverse("conversation_delete", args=[conv_id]), {"confirm": "yes"})
    assert r.status_code == 302
    assert leftovers([conv_id], messages, []) == {}
    assert not Source.objects.filter(project=project).exists()
    assert stored[0].exists(), "the other project's source still needs the stored file"
    other_messages = list(Message.objects.filter(conversation_id=other_id).values_list("pk", flat=True))
    assert search_entries(other_messages) > 0

    with django_capture_on_commit_callbacks(execute=True):
        call_command("delete", str(other_id), "--yes")
    assert not stored[0].exists() and not stored[0].parent.exists()
    assert not Source.objects.exists()
    event = AuditEvent.objects.filter(action="conversation.deleted").order_by("pk").last()
    assert event.details["uploads_removed"] == 1 and event.details["sources_removed"] == 1


AIDER_HISTORY = """# aider chat started at 2024-08-20 09:34:31

#### fix the failing test in app.py

I'll fix the assertion in `app.py`.

# aider chat started at 2024-08-21 10:00:00

#### now add a test for the parser

Added `tests/test_parser.py`.
"""


def test_deleting_one_conversation_of_a_file_on_disk_keeps_the_others_of_that_file(project, user, tmp_path):
    path = tmp_path / ".aider.chat.history.md"
    path.write_text(AIDER_HISTORY, encoding="utf-8")
    report = ingest.import_path(project, path)
    assert not report.errors, report.errors
    # Two "# aider chat started at" headers in the file: two conversations of one source.
    first, second = Conversation.objects.filter(project=project).order_by("started_at")
    assert first.source_id == second.source_id is not None
    kept_messages = list(second.messages.values_list("pk", flat=True))

    call_command("delete", str(first.pk), "--yes")
    assert not Conversation.objects.filter(pk=first.pk).exists()
    second.refresh_from_db()
    assert list(second.messages.values_list("pk", flat=True)) == kept_messages
    assert Source.objects.filter(pk=second.source_id).exists() and Path(path).exists()
    assert search_entries(kept_messages) > 0
    assert client_for(user).get(reverse("conversation", args=[second.pk])).status_code == 200
    # The file has not changed: importing it again does not bring the deleted one back.
    ingest.import_path(project, path)
    assert Conversation.objects.filter(project=project).count() == 1

    # The last conversation of the file goes with its source record (the file itself is not ours).
    call_command("delete", str(second.pk), "--yes")
    assert not Source.objects.exists() and Path(path).exists()


def test_the_job_page_of_the_import_still_opens_after_the_delete(project, user, settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    data = ("\n".join(session_lines(2)) + "\n").encode()
    stored = services.store_upload(SimpleUploadedFile("s.jsonl", data))
    job, _ = services.start_import(project, uploads=[stored], user=user, enqueue=False)
    done = jobs.run(job.pk)
    conv_id = done.result["conversations"][0]["id"]
    call_command("delete", str(conv_id), "--yes")
    r = client_for(user).get(reverse("job_detail", args=[job.pk]))
    assert r.status_code == 200

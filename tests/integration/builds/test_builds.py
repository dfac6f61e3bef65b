"""Builds through the API and the command: lineage, an untouched source, a valid structure."""

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.forms.models import model_to_dict
from django.test import Client

from contextviewer.core import build as core_build
from contextviewer.builds import services as builds
from contextviewer.ingest import files as ingest
from contextviewer.jobs import queue as jobs
from contextviewer.conversations.models import Conversation, ConversationKind, Fold, Message, ModelCall
from contextviewer.jobs.models import Job, JobStatus
from tests.sessions import SessionBuilder, session_lines, write_lines

SPOTTER = "marot__spotter__4d5611e5-241a-462a-8d15-5122611a9569.jsonl"


def dump(conv: Conversation) -> str:
    """Every row of a conversation, every field: compared before and after a build."""
    conv = Conversation.objects.get(pk=conv.pk)
    rows = {
        "conversation": model_to_dict(conv),
        "messages": list(Message.objects.filter(conversation=conv).order_by("pk").values()),
        "folds": list(Fold.objects.filter(conversation=conv).order_by("pk").values()),
        "calls": list(ModelCall.objects.filter(conversation=conv).order_by("pk").values()),
    }
    return json.dumps(rows, default=str, sort_keys=True)


def structure_problems(conv: Conversation) -> list[str]:
    return core_build.check_structure(list(conv.messages.order_by("position").values("position", "blocks")))


def _main(project, path) -> Conversation:
    report = ingest.import_path(project, path)
    return Conversation.objects.get(pk=report.conversation_ids[0])


def _client(user) -> Client:
    c = Client()
    c.force_login(user)
    return c


@pytest.mark.django_db
def test_a_build_through_the_api_from_a_real_session_with_a_compaction(project, user, fixtures_dir):
    source = _main(project, fixtures_dir / "claude-code" / SPOTTER)
    infos = builds.fold_infos(source)
    assert infos and infos[0].summary_text, "the fixture has a compaction with a summary"
    spans = builds.turn_spans(source)
    excluded = set(core_build.exclusions(spans, infos)[1])
    after = [t.turn for t in spans if t.turn not in excluded][-3:]
    before = dump(source)

    r = _client(user).post(
        f"/api/conversations/{source.pk}/builds", {"turns": after, "folds": [1]}, content_type="application/json"
    )
    assert r.status_code == 202, r.content
    job = jobs.run(r.json()["id"])
    assert job.status == JobStatus.SUCCEEDED, job.error

    built = Conversation.objects.get(pk=job.result["conversation_id"])
    assert built.kind == ConversationKind.BUILD
    assert built.lineage["source"]["id"] == source.pk
    assert built.lineage["selection"] == {"turns": after, "folds": [1]}
    assert built.lineage["created_by"]["username"] == user.username
    assert dump(source) == before  # byte for byte
    assert structure_problems(built) == []
    first = built.messages.order_by("position").first()
    assert first.is_compact_summary and first.blocks[0]["text"] == infos[0].summary_text
    # Every selected turn is there whole: same messages (less dropped dangling tool blocks), same text.
    src_texts = [
        b.get("text") for m in source.messages.filter(turn__in=after).order_by("position")
        if not (m.role == "system" and m.subtype in core_build.FOLD_MARKERS)
        for b in m.blocks if b.get("kind") == "text"
    ]
    new_texts = [b.get("text") for m in built.messages.filter(position__gt=0).order_by("position") for b in m.blocks if b.get("kind") == "text"]
    assert new_texts == src_texts
    assert built.messages.values("turn").distinct().count() == len(after) + 1
    # It shows on its page, with where it came from.
    page = _client(user).get(f"/c/{built.pk}/")
    assert page.status_code == 200
    assert f"/c/{source.pk}/" in page.content.decode()


@pytest.mark.django_db
def test_a_build_through_the_command_on_a_synthetic_session_drops_a_dangling_call(project, tmp_path):
    b = SessionBuilder()
    lines = session_lines(3, b)
    # Turn 3: a call whose result lands after the next user message (an interruption).
    lines += [b.user("Step 3: run the linter"), *b.assistant("Running it", tool=("Bash", {"command": "ruff ."}))]
    lines += [b.user("stop, run the tests instead"), b.tool_result("late result"), *b.assistant("ok")]
    write_lines(tmp_path / "s.jsonl", lines)
    source = _main(project, tmp_path / "s.jsonl")
    before = dump(source)

    out = StringIO()
    call_command("build", source.external_id, turns="0,2-3", json=True, stdout=out)
    answer = json.loads(out.getvalue())
    assert answer["status"] == "succeeded"
    built = Conversation.objects.get(pk=answer["result"]["conversation_id"])
    assert dump(source) == before
    assert structure_problems(built) == []
    assert any("tool call without a result" in n for n in answer["result"]["notes"])
    assert built.lineage["selection"] == {"turns": [0, 2, 3], "folds": []}
    assert built.messages.values("turn").distinct().count() == 3
    assert "Running it" in json.dumps(list(built.messages.values_list("blocks", flat=True)))
    out, err = StringIO(), StringIO()
    call_command("build", str(source.pk), turns="1", stdout=out, stderr=err)
    assert out.getvalue().startswith("conversation ") and "messages, 1 turn\n" in out.getvalue()
    assert " 97% copied 5 messages" in err.getvalue()


@pytest.mark.django_db
def test_a_selection_with_a_summary_and_its_turns_is_refused_by_the_api_and_the_command(project, user, fixtures_dir):
    source = _main(project, fixtures_dir / "claude-code" / SPOTTER)
    r = _client(user).post(
        f"/api/conversations/{source.pk}/builds", {"turns": "0", "folds": "1"}, content_type="application/json"
    )
    assert r.status_code == 400
    assert "fold 1 put turn 0 away" in r.json()["detail"]
    r = _client(user).post(f"/api/conversations/{source.pk}/builds", {"turns": "999"}, content_type="application/json")
    assert r.status_code == 400 and "No turn 999" in r.json()["detail"]
    with pytest.raises(SystemExit):
        call_command("build", str(source.pk), turns="0", folds="1", stderr=StringIO(), stdout=StringIO())
    assert not Conversation.objects.filter(kind=ConversationKind.BUILD).exists()


@pytest.mark.django_db
def test_a_job_run_twice_creates_one_conversation(project, user, tmp_path):
    write_lines(tmp_path / "s.jsonl", session_lines(4))
    source = _main(project, tmp_path / "s.jsonl")
    job = builds.start_build(source, "1-2", "", user=user, idempotency_key="same")
    again = builds.start_build(source, "1-2", "", user=user, idempotency_key="same")
    assert again.pk == job.pk
    first = jobs.run(job.pk)
    assert first.status == JobStatus.SUCCEEDED
    # The worker died after the build committed but before the job row said so: it runs again.
    Job.objects.filter(pk=job.pk).update(status=JobStatus.QUEUED)
    second = jobs.run(job.pk)
    assert second.status == JobStatus.SUCCEEDED
    assert second.result["conversation_id"] == first.result["conversation_id"]
    assert Conversation.objects.filter(kind=ConversationKind.BUILD).count() == 1


@pytest.mark.django_db
def test_the_build_page_works_without_javascript_and_says_what_is_wrong(project, user, fixtures_dir):
    source = _main(project, fixtures_dir / "claude-code" / SPOTTER)
    client = _client(user)
    page = client.get(f"/c/{source.pk}/build/", {"turns": "0", "folds": "1"})
    assert page.status_code == 400
    assert "fold 1 put turn 0 away" in page.content.decode()
    r = client.post(f"/c/{source.pk}/build/create/", {"turns": "0", "folds": "1"})
    assert r.status_code == 400 and "Select either the summary or those turns" in r.content.decode()
    spans = builds.turn_spans(source)
    last = spans[-1].turn
    preview = client.get(f"/c/{source.pk}/build/preview/", {"turns": [str(last)], "folds": ["1"]})
    assert "2 turns" in preview.content.decode()
    form = {"turns": [str(last)], "folds": ["1"], "idempotency_key": "k1"}
    r = client.post(f"/c/{source.pk}/build/create/", form)
    assert r.status_code == 302 and "/jobs/" in r["Location"]
    assert client.post(f"/c/{source.pk}/build/create/", form)["Location"] == r["Location"]  # a double submit
    assert 'name="idempotency_key"' in client.get(f"/c/{source.pk}/").content.decode()
    options = client.get(f"/c/{source.pk}/build/options/").json()
    assert options["folds"]["1"][0][0] == 0
    assert not Conversation.objects.filter(kind=ConversationKind.BUILD).exists()  # queued, not run here


@pytest.mark.django_db
def test_a_viewer_may_export_but_not_build(project, tmp_path):
    from contextviewer.accounts.models import Role
    from tests.factories import make_user

    viewer = make_user("vic", project=project, role=Role.VIEWER)
    write_lines(tmp_path / "s.jsonl", session_lines(2))
    source = _main(project, tmp_path / "s.jsonl")
    client = _client(viewer)
    r = client.post(f"/api/conversations/{source.pk}/builds", {"turns": [0]}, content_type="application/json")
    assert r.status_code == 403
    assert client.post(f"/c/{source.pk}/build/create/", {"turns": ["0"]}).status_code == 403
    assert client.get(f"/c/{source.pk}/export/markdown/").status_code == 200
    assert client.get(f"/api/conversations/{source.pk}/export", {"format": "openai"}).status_code == 200
    assert not Conversation.objects.filter(kind=ConversationKind.BUILD).exists()


@pytest.mark.django_db
def test_a_token_for_another_project_cannot_build_or_export_here(project, user, tmp_path):
    from contextviewer.accounts import tokens
    from contextviewer.accounts.models import ApiToken, Role
    from tests.factories import make_project

    other = make_project("other-b")
    user.memberships.create(project=other, role=Role.OWNER)
    secret, prefix = tokens.new_secret()
    ApiToken.objects.create(user=user, project=other, name="b only", prefix=prefix, token_hash=tokens.hash_token(secret))
    write_lines(tmp_path / "s.jsonl", session_lines(2))
    source = _main(project, tmp_path / "s.jsonl")
    bearer = {"HTTP_AUTHORIZATION": f"Bearer {secret}"}
    c = Client()
    r = c.post(f"/api/conversations/{source.pk}/builds", {"turns": [0]}, content_type="application/json", **bearer)
    assert r.status_code == 404
    assert c.get(f"/api/conversations/{source.pk}/export", {"format": "markdown"}, **bearer).status_code == 404
    # The same user's session (a member of both) may.
    assert _client(user).get(f"/api/conversations/{source.pk}/export", {"format": "markdown"}).status_code == 200
    assert not Conversation.objects.filter(kind=ConversationKind.BUILD).exists()


@pytest.mark.django_db
def test_a_handoff_summary_at_the_end_seeds_a_build_and_excludes_the_turns_it_folded(project, user, tmp_path):
    write_lines(tmp_path / "s.jsonl", session_lines(3))
    source = _main(project, tmp_path / "s.jsonl")
    last = source.messages.order_by("-position").first()
    Fold.objects.create(
        conversation=source, key="handoff:test", position=last.position, kind="handoff", origin="generated",
        summary_text="## Goal\nFix the tests.\n## Next steps\nRun pytest.",
    )
    with pytest.raises(builds.BuildError, match="fold 1 put turn 2 away"):
        builds.validate(source, "2", "1")
    job = builds.start_build(source, "", "1", user=user)
    done = jobs.run(job.pk)
    assert done.status == JobStatus.SUCCEEDED, done.error
    built = Conversation.objects.get(pk=done.result["conversation_id"])
    only = list(built.messages.all())
    assert len(only) == 1 and only[0].is_compact_summary and "Run pytest." in only[0].blocks[0]["text"]

"""A database made before the apps were split (the Job model lived in conversations) migrates
forward without losing a row, and its jobs, their spend and their judge runs serve as before.

The "before" state is the migration graph as main had it before the split: conversations 0009,
providers 0001, review 0003 and no jobs app. The rows are written through that state's models (what
the code of that time wrote), then every migration runs forward."""

import pytest
from django.db import connection
from django.utils import timezone
from django.db.migrations.executor import MigrationExecutor
from django.urls import reverse

BEFORE_THE_SPLIT = [
    ("accounts", "0002_apitoken_invitation_auditevent"),
    ("conversations", "0009_conversation_revision"),
    ("providers", "0001_initial"),
    ("review", "0003_alter_factprobe_version"),
    ("jobs", None),
]


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor


def _latest():
    executor = MigrationExecutor(connection)
    return _migrate(executor.loader.graph.leaf_nodes())


@pytest.mark.django_db(transaction=True)
def test_a_database_from_before_the_split_keeps_its_jobs_spend_and_judge_runs(client):
    executor = _migrate(BEFORE_THE_SPLIT)
    try:
        old = executor.loader.project_state([t for t in BEFORE_THE_SPLIT if t[1]]).apps
        assert ("jobs", "job") not in old.all_models or not old.all_models["jobs"]
        project = old.get_model("accounts", "Project").objects.create(slug="old", name="Old")
        job = old.get_model("conversations", "Job").objects.create(
            project=project, kind="handoff", status="succeeded", idempotency_key="old-1", result={"fold": 3, "summary_tokens": 812}
        )
        conv = old.get_model("conversations", "Conversation").objects.create(project=project, agent="claude-code", external_id="s1")
        fold = old.get_model("conversations", "Fold").objects.create(conversation=conv, key="f1", position=10, kind="auto")
        old.get_model("providers", "ProviderCall").objects.create(project=project, job=job, provider="builtin", role="main", ok=True)
        old.get_model("providers", "SpendEntry").objects.create(project=project, conversation=conv, job=job, role="main")
        old.get_model("review", "JudgeRun").objects.create(project=project, fold=fold, job=job, prompt="judge this")
    finally:
        _latest()

    from django.contrib.auth import get_user_model

    from contextviewer.accounts.models import Membership, Role
    from contextviewer.jobs.models import Job
    from contextviewer.providers.models import ProviderCall, SpendEntry
    from contextviewer.review.models import JudgeRun

    moved = Job.objects.get(idempotency_key="old-1")
    assert (moved.pk, moved.kind, moved.result) == (job.pk, "handoff", {"fold": 3, "summary_tokens": 812})
    assert ProviderCall.objects.get().job == moved and SpendEntry.objects.get().job == moved
    assert JudgeRun.objects.get().job == moved and moved.judge_run.prompt == "judge this"

    user = get_user_model().objects.create_user("reader", password="pw")
    Membership.objects.create(project=moved.project, user=user, role=Role.VIEWER)
    client.force_login(user)
    page = client.get(reverse("job_detail", args=[moved.pk]))
    assert page.status_code == 200 and f"Handoff job {moved.pk}" in page.content.decode()
    api = client.get(f"/api/jobs/{moved.pk}")
    assert api.status_code == 200 and api.json()["result"] == {"fold": 3, "summary_tokens": 812}
    listed = client.get(reverse("jobs"))
    assert listed.status_code == 200 and f"/jobs/{moved.pk}/" in listed.content.decode()


@pytest.mark.django_db(transaction=True)
def test_conversations_from_before_measured_calls_get_their_figures(client):
    """0015: a conversation stored before it gets its count of measured calls and, where no call
    records its prompt, its peak as the largest stored estimate, marked as one; one whose messages
    carry a single time between them loses its last time (its duration is not known)."""
    before = [("conversations", "0014_message_lz4")]
    executor = _migrate(before)
    try:
        old = executor.loader.project_state(before).apps
        project = old.get_model("accounts", "Project").objects.create(slug="old2", name="Old 2")
        Conversation = old.get_model("conversations", "Conversation")
        ModelCall = old.get_model("conversations", "ModelCall")
        measured = Conversation.objects.create(project=project, agent="claude-code", external_id="m", model_call_count=3,
                                               peak_context=9_000, spend_tokens=20_000)
        unmeasured = Conversation.objects.create(project=project, agent="crush", external_id="u", model_call_count=2)
        start = timezone.now()
        empty = Conversation.objects.create(project=project, agent="aider", external_id="e", started_at=start, ended_at=start)
        Message = old.get_model("conversations", "Message")
        for i in range(3):  # one time for three messages (aider's session start): no last time
            Message.objects.create(conversation=empty, position=i, turn=0, role="user", blocks=[],
                                   timestamp=start if i == 0 else None)
        same = Conversation.objects.create(project=project, agent="codex", external_id="s", started_at=start, ended_at=start)
        for i in range(2):  # two messages of the same second: a duration of 0 s, as the log says
            Message.objects.create(conversation=same, position=i, turn=0, role="user", blocks=[], timestamp=start)
        for i, (uncached, read, estimate) in enumerate([(100, 0, 50), (0, 0, 70), (1_000, 8_000, 8_900)]):
            ModelCall.objects.create(conversation=measured, position=i, api_message_id=f"m{i}", input_uncached=uncached,
                                     cache_read=read, output=10, estimated_context=estimate)
        for i, estimate in enumerate([1_200, 4_700]):
            ModelCall.objects.create(conversation=unmeasured, position=i, api_message_id=f"u{i}", estimated_context=estimate)
    finally:
        _latest()

    from contextviewer.conversations.models import Conversation as Now

    after = {c.external_id: c for c in Now.objects.filter(project__slug="old2")}
    m, u, e = after["m"], after["u"], after["e"]
    assert (m.measured_calls, m.peak_context, m.peak_estimated, m.usage_coverage) == (2, 9_000, False, "partial")
    assert (u.measured_calls, u.peak_context, u.peak_estimated, u.usage_coverage) == (0, 4_700, True, "none")
    assert (e.measured_calls, e.peak_context, e.peak_estimated, e.usage_coverage) == (0, 0, False, "none")
    assert e.started_at is not None and e.ended_at is None
    assert after["s"].ended_at == after["s"].started_at is not None and m.ended_at is None

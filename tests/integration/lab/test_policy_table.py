"""The project-wide policy table (/policies/): the policy_table job replays every policy over every
main conversation of a project and stores the figures per conversation revision; the page reads
the stored rows only (no replay in the request), with a bounded number of queries."""

from __future__ import annotations

import dataclasses

import pytest
from django.urls import reverse
from django.utils import timezone

from contextviewer.accounts.models import Role
from contextviewer.conversations.models import Conversation
from contextviewer.core import tokens as core_tokens
from contextviewer.ingest import files as ingest
from contextviewer.jobs import queue as jobs
from contextviewer.jobs.models import Job
from contextviewer.lab import replays, table as policy_table
from contextviewer.lab.models import PolicyReplay
from tests.factories import build_conversation, make_project, make_user
from tests.sessions import SessionBuilder, write_lines

pytestmark = pytest.mark.django_db


def _session(tmp_path, n: int, turns: int, per: int = 8000):
    """A Claude Code session of `turns` Bash runs of about `per` tokens each, its measured usage
    following what it holds (so the session calibrates); about 156k tokens at 22 turns, where
    some policies act (picoclaw folds) and others do not (claude_code folds at about 167k)."""
    b = SessionBuilder(session_id=f"11111111-2222-4333-8444-{n:012d}")
    lines, context = [], 14_000
    for i in range(turns):
        lines.append(b.user(f"Step {i}: run the suite for module_{i}"))
        b.context = context
        lines += b.assistant(f"Running module_{i}", tool=("Bash", {"command": f"pytest tests/test_{i}.py"}))
        out = "\n".join(f"tests/test_{i}.py::case_{k} PASSED value={k * 7919 % 10007}" for k in range(per // 20))
        lines.append(b.tool_result(out))
        context += core_tokens.count_text(out) + 60
    b.context = context
    lines += b.assistant("All done.")
    path = tmp_path / f"{b.session_id}.jsonl"
    write_lines(path, lines)
    return path


def _small(project, n: int) -> Conversation:
    return build_conversation(
        project, turns=2, long_block_turn=None, image_turn=None, subagent_turn=None, index_search=False,
        external_id=f"small-{n}", title=f"Small conversation {n}",
    ).conversation


def _run(project, user=None) -> tuple[Job, list[str]]:
    texts: list[str] = []
    job, _ = policy_table.start(project, user=user)
    done = jobs.run(job.pk, on_progress=lambda f, t: texts.append(t))
    return done, texts


def _page(client, project, **params):
    return client.get(reverse("policy_table"), {"project": project.slug, **params})


def test_the_job_fills_every_conversation_and_a_second_run_skips_them(client):
    project = make_project()
    convs = [_small(project, i) for i in range(27)]
    done, texts = _run(project)
    assert done.status == "succeeded", done.error
    assert done.result["conversations"] == 27 and done.result["replayed"] == 27 and not done.result["failed"]
    assert "27 of 27 conversations" in texts and "12 of 27 conversations" in texts
    names = policy_table.table_policies()
    assert PolicyReplay.objects.filter(project=project).count() == 27 * (len(names) + 1)  # and the recorded baseline
    row = PolicyReplay.objects.get(conversation=convs[0], policy="claude_code")
    assert row.calls == convs[0].model_call_count and row.recorded_peak > 0 and row.error == ""
    assert row.revision == policy_table.revision_of(convs[0])

    # A second run finds nothing to do and keeps the rows.
    before = set(PolicyReplay.objects.values_list("pk", flat=True))
    again, _ = _run(project)
    assert again.pk != done.pk and again.status == "succeeded" and again.result["conversations"] == 0
    assert set(PolicyReplay.objects.values_list("pk", flat=True)) == before

    client.force_login(make_user(project=project))
    html = _page(client, project).content.decode()
    assert "27 of 27 conversations with model calls are replayed up to date" in html
    assert 'id="policy-table-start"' not in html  # nothing to update
    for name in names:
        assert f'id="policy-{name}"' in html


def test_a_changed_conversation_becomes_stale_and_only_it_is_replayed_again(client, tmp_path):
    project = make_project()
    ingest.import_path(project, _session(tmp_path, 1, 3, per=400))
    other = _small(project, 1)
    _run(project)
    conv = Conversation.objects.get(project=project, agent="claude-code", external_id__startswith="1111")
    assert policy_table.pending(project) == []

    # The same file grown by two turns and imported again: the conversation's revision changes.
    ingest.import_path(project, _session(tmp_path, 1, 5, per=400))
    conv.refresh_from_db()
    assert [pk for pk, _ in policy_table.pending(project)] == [conv.pk]
    client.force_login(make_user(project=project))
    html = _page(client, project).content.decode()
    assert "1 stale" in html and 'id="policy-table-start"' in html and "Replay 1 conversation" in html

    other_rows = dict(PolicyReplay.objects.filter(conversation=other).values_list("policy", "computed_at"))
    done, _ = _run(project)
    assert done.result["conversations"] == 1
    assert dict(PolicyReplay.objects.filter(conversation=other).values_list("policy", "computed_at")) == other_rows
    assert set(PolicyReplay.objects.filter(conversation=conv).values_list("revision", flat=True)) == {policy_table.revision_of(conv)}
    assert PolicyReplay.objects.get(conversation=conv, policy="recorded").calls == conv.model_call_count


def test_medians_are_over_the_conversations_where_a_policy_acted_and_differ_by_policy(client, tmp_path):
    project = make_project()
    for n in (1, 2):
        ingest.import_path(project, _session(tmp_path, n, 22))
    for n in range(3):
        _small(project, n)
    _run(project)
    t = policy_table.table(project)
    rows = {r.name: r for r in t.rows}
    assert t.up_to_date == 5
    assert rows["picoclaw"].acted == rows["picoclaw"].median_over == 2 and rows["claude_code"].acted == 0
    assert rows["claude_code"].median_peak is None  # it never acts: no median where it acted
    assert rows["picoclaw"].median_peak < rows["picoclaw"].recorded_median_peak  # it folds
    assert rows["picoclaw"].folds_per_100_calls > 0 and rows["claude_code"].folds_per_100_calls == 0
    assert rows["picoclaw"].conversations == rows["claude_code"].conversations == 5

    client.force_login(make_user(project=project))
    html = _page(client, project).content.decode()
    assert "over the 2 conversations it acted in" in html
    picoclaw = html.split('id="policy-picoclaw"', 1)[1].split("</tr>", 1)[0]
    claude = html.split('id="policy-claude_code"', 1)[1].split("</tr>", 1)[0]
    assert picoclaw != claude
    # The list: each conversation links to its lab with its recorded peak and the default policies.
    conv = Conversation.objects.filter(project=project, external_id__startswith="1111").first()
    assert reverse("policy_lab", args=[conv.pk]) in html


def test_a_failed_calibration_is_counted_shown_and_left_out_of_the_medians(client, tmp_path, monkeypatch):
    project = make_project()
    for n in (1, 2):
        ingest.import_path(project, _session(tmp_path, n, 22))
    bad = Conversation.objects.get(project=project, external_id__endswith="000000000002")
    load = replays.load_session

    def uncalibrated(conv):
        lab = load(conv)
        if conv.pk == bad.pk:
            session = dataclasses.replace(lab.session, calibrated=False, calibration_note="the fit's slope is out of range")
            lab = dataclasses.replace(lab, session=session)
        return lab

    monkeypatch.setattr(replays, "load_session", uncalibrated)
    _run(project)
    assert not PolicyReplay.objects.get(conversation=bad, policy="claude_code").calibrated
    assert PolicyReplay.objects.get(conversation=bad, policy="claude_code").calibration_note == "the fit's slope is out of range"
    t = policy_table.table(project)
    assert t.uncalibrated == 1 and t.up_to_date == 2
    assert {r.name: r.median_over for r in t.rows}["picoclaw"] == 1  # it acted in both, one calibrated
    assert {r.name: r.conversations for r in t.rows}["claude_code"] == 2  # counted in the other columns

    client.force_login(make_user(project=project))
    html = _page(client, project).content.decode()
    assert "1 conversation could not be calibrated: its replays are uncalibrated estimates." in html
    assert "left out of the medians" in html and "leaving out the 1 that could not be calibrated" in html
    assert "not calibrated" in html.split(f'id="conv-{bad.pk}"', 1)[1].split("</tr>", 1)[0]


def test_a_conversation_that_fails_to_replay_is_recorded_and_the_job_goes_on(client, monkeypatch):
    project = make_project()
    convs = [_small(project, i) for i in range(3)]
    broken = convs[1]
    load = replays.load_session

    def failing(conv):
        if conv.pk == broken.pk:
            raise ValueError("no window for this model")
        return load(conv)

    monkeypatch.setattr(replays, "load_session", failing)
    done, _ = _run(project)
    assert done.status == "succeeded"
    assert done.result["replayed"] == 2 and done.result["failed"] == [{"conversation_id": broken.pk, "error": "ValueError: no window for this model"}]
    assert set(PolicyReplay.objects.filter(conversation=broken).values_list("error", flat=True)) == {"ValueError: no window for this model"}
    assert PolicyReplay.objects.filter(conversation=convs[0], error="").count() == len(policy_table.table_policies()) + 1
    # Failed at this revision: not tried again until the conversation changes.
    assert policy_table.pending(project) == []
    t = policy_table.table(project)
    assert t.failed == 1 and t.up_to_date == 2 and {r.name: r.conversations for r in t.rows}["codex"] == 2
    client.force_login(make_user(project=project))
    html = _page(client, project).content.decode()
    assert "1 could not be replayed" in html and "no window for this model" in html


def test_the_button_starts_one_job_and_the_page_shows_its_progress(client):
    project = make_project()
    _small(project, 1)
    client.force_login(make_user(project=project))
    html = _page(client, project).content.decode()
    assert "1 not replayed yet" in html and 'id="policy-table-start"' in html
    r = client.post(reverse("policy_table_start"), {"project": project.slug})
    assert r.status_code == 302 and project.slug in r["Location"]
    job = Job.objects.get(project=project, kind="policy_table")
    assert job.status == "queued"
    # Pressed again while it waits: the same job.
    client.post(reverse("policy_table_start"), {"project": project.slug})
    assert Job.objects.filter(project=project, kind="policy_table").count() == 1
    html = _page(client, project).content.decode()
    assert reverse("job_detail", args=[job.pk]) in html and 'hx-trigger="every 1s"' in html
    assert 'id="policy-table-start"' not in html
    poll = client.get(reverse("policy_table"), {"project": project.slug, "poll": "1"}, HTTP_HX_REQUEST="true")
    assert poll.status_code == 200 and 'id="table-job"' in poll.content.decode() and "HX-Refresh" not in poll
    jobs.run(job.pk)
    poll = client.get(reverse("policy_table"), {"project": project.slug, "poll": "1"}, HTTP_HX_REQUEST="true")
    assert poll["HX-Refresh"] == "true"
    html = _page(client, project).content.decode()
    assert "1 of 1 conversation with model calls is replayed up to date" in html and f"job {job.pk}" in html
    # The job's own page (it failed with a 500 before) names its kind in words and says what it did.
    page = client.get(reverse("job_detail", args=[job.pk])).content.decode()
    assert f"Policy table job {job.pk}</h1>" in page and "The policy table</h2>" in page
    assert "<dt>Replayed</dt><dd>1</dd>" in page and "<dt>Failed</dt><dd>0</dd>" in page
    assert f'href="{reverse("policy_table")}?project={project.slug}"' in page
    assert "<td>policy table</td>" in client.get(reverse("jobs")).content.decode()


def test_access_non_members_and_viewers(client):
    project = make_project()
    _small(project, 1)
    other = make_project("other")
    client.force_login(make_user("mallory", project=other))
    page = _page(client, project)
    assert page.status_code == 200
    assert project.name not in page.content.decode().split("<h1>", 1)[1].split("</h1>", 1)[0]
    assert client.post(reverse("policy_table_start"), {"project": project.slug}).status_code == 404
    assert not Job.objects.filter(project=project).exists()

    client.force_login(make_user("vera", project=project, role=Role.VIEWER))
    html = _page(client, project).content.decode()
    assert 'id="policy-table-start"' not in html and "not offered" in html
    assert client.post(reverse("policy_table_start"), {"project": project.slug}).status_code == 403
    assert not Job.objects.filter(project=project).exists()
    client.logout()
    assert _page(client, project).status_code == 302  # to the login page


def test_the_page_reads_500_conversations_rows_in_a_bounded_number_of_queries(client, django_assert_max_num_queries):
    """500 conversations' rows stored (bulk_create, no replay): the page replays nothing and its
    queries do not grow with the conversations."""
    project = make_project()
    now = timezone.now()
    Conversation.objects.bulk_create(
        [
            Conversation(project=project, agent="claude-code", external_id=f"c{i}", title=f"Conversation {i}", model_names=["claude-opus-4-6"],
                         model_call_count=10 + i % 7, message_count=30, peak_context=100_000 + i, started_at=now)
            for i in range(500)
        ]
    )
    names = policy_table.table_policies()
    rows = []
    for i, conv in enumerate(policy_table.conversations(project)):
        revision = policy_table.revision_of(conv)
        for name in [replays.BASELINE, *names]:
            folds = 1 if name == "picoclaw" and i % 2 else 0
            rows.append(
                PolicyReplay(project=project, conversation=conv, policy=name, revision=revision, calls=conv.model_call_count,
                             peak=conv.peak_context - 50_000 * folds, recorded_peak=conv.peak_context, fires=folds, folds=folds,
                             calibrated=i % 50 != 1, computed_at=now)
            )
    PolicyReplay.objects.bulk_create(rows, batch_size=1000)
    client.force_login(make_user(project=project))
    with django_assert_max_num_queries(12):
        r = _page(client, project, page=3)
    html = r.content.decode()
    assert r.status_code == 200
    assert "500 of 500 conversations with model calls are replayed up to date" in html
    assert "Page 3 of 10" in html and html.count('<tr id="conv-') == 50
    assert "10 conversations could not be calibrated" in html
    t = policy_table.table(project)
    rows_by = {r.name: r for r in t.rows}
    picoclaw = rows_by["picoclaw"]
    assert picoclaw.median_over == 240 and picoclaw.median_peak == picoclaw.recorded_median_peak - 50_000
    assert rows_by["codex"].median_peak is None and rows_by["codex"].median_over == 0


def test_a_cancelled_job_keeps_the_conversations_it_did():
    project = make_project()
    for i in range(4):
        _small(project, i)
    job, _ = policy_table.start(project)

    def cancel_during_the_second(fraction, text):  # reported as the second conversation starts
        if text.startswith("1 of"):
            jobs.cancel(Job.objects.get(pk=job.pk))

    done = jobs.run(job.pk, on_progress=cancel_during_the_second)
    assert done.status == "cancelled"
    assert PolicyReplay.objects.filter(project=project).values("conversation").distinct().count() == 2
    assert len(policy_table.pending(project)) == 2
    again, _ = _run(project)  # the next job does the rest
    assert again.status == "succeeded" and again.result["conversations"] == 2 and policy_table.pending(project) == []


def test_a_conversation_whose_log_records_no_usage_is_marked_as_estimates(client, tmp_path):
    """A Crush store records no usage per call: its row's recorded peak is the lab's estimate and
    says so; a measured conversation's row does not."""
    from tests.charm_db import write_store

    project = make_project()
    ingest.import_path(project, _session(tmp_path, 1, 3))
    ingest.import_path(project, write_store(tmp_path / "proj" / ".crush" / "crush.db", keep_wal=True))
    _run(project)
    client.force_login(make_user(project=project))
    html = _page(client, project).content.decode()
    for conv in Conversation.objects.filter(project=project, parent__isnull=True, model_call_count__gt=0):
        row = html.split(f'id="conv-{conv.pk}"', 1)[1].split("</tr>", 1)[0]
        assert ('class="muted estimated"' in row) == (conv.measured_calls == 0), (conv.agent, row)
    assert Conversation.objects.filter(project=project, agent="crush", measured_calls=0).exists()
    assert Conversation.objects.filter(project=project, agent="claude-code", measured_calls__gt=0).exists()

"""The openai and anthropic providers against a local server speaking each protocol: success,
429 then success, 500s until the limit, timeout, malformed JSON; at most 6 HTTP attempts per job."""

from __future__ import annotations

import pytest

from contextviewer.builds import handoffs as handoff
from contextviewer.ingest import files as ingest
from contextviewer.jobs import queue as jobs
from contextviewer.conversations.models import Conversation, Fold
from contextviewer.jobs.models import JobStatus
from contextviewer.core import handoff as core
from contextviewer.providers import services
from contextviewer.providers.models import ProviderCall, SpendEntry
from tests.fake_providers import FakeProvider
from tests.sessions import session_lines, write_lines

pytestmark = pytest.mark.django_db
PROTOCOLS = ["openai", "anthropic"]


@pytest.fixture(autouse=True)
def fast_retries(monkeypatch):
    monkeypatch.setenv("CONTEXTVIEWER_PROVIDER_BACKOFF", "0.01")
    monkeypatch.setenv("CONTEXTVIEWER_PROVIDER_TIMEOUT", "1")


@pytest.fixture
def conv(project, tmp_path):
    path = tmp_path / "s.jsonl"
    write_lines(path, session_lines(3))
    ingest.import_file(project, path)
    return Conversation.objects.get()


def _configure(project, protocol, server, key="sk-test-0123456789abcdef"):
    # 127.0.0.1 is a loopback address: refused unless an admin allows the private network.
    return services.save_config(
        project, protocol, base_url=server.url(protocol), model="test-model", api_key=key,
        make_default=True, allow_private_network=True, may_allow_private=True,
    )


def _handoff(conv):
    job, _ = handoff.start_handoff(conv, enqueue=False)
    return jobs.run(job.pk)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_success_sends_one_flat_transcript_and_records_spend(protocol, project, conv):
    with FakeProvider(["ok"]) as server:
        _configure(project, protocol, server)
        job = _handoff(conv)
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert server.count() == 1
    request = server.requests[0]
    body = request["body"]
    # One user message holding the whole transcript, never replayed as alternating roles.
    users = [m for m in body["messages"] if m["role"] == "user"]
    assert len(users) == 1 and not [m for m in body["messages"] if m["role"] == "assistant"]
    assert users[0]["content"].count("\nUSER: ") == 3 and "TOOL Bash(" in users[0]["content"]
    assert body["model"] == "test-model"
    # The key travels to the provider (Bearer, or Anthropic's x-api-key, as the SDK sends it).
    sent = request["headers"].get("x-api-key") or request["headers"]["authorization"].removeprefix("Bearer ")
    assert sent == "sk-test-0123456789abcdef"
    fold = Fold.objects.get(conversation=conv, origin="generated")
    sections = core.validate_sections(fold.summary_text)
    assert f"fake {protocol} server" in sections["Goal"]
    assert "3 USER lines" in sections["State and what is done"]
    spend = SpendEntry.objects.get(job_id=job.pk)
    assert (spend.role, spend.provider, spend.conversation_id) == ("handoff", protocol, conv.pk)
    assert spend.input_tokens == 1200 and spend.output_tokens in (80, 90)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_429_then_success(protocol, project, conv):
    with FakeProvider(["429", "ok"]) as server:
        _configure(project, protocol, server)
        job = _handoff(conv)
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert server.count() == 2
    assert ProviderCall.objects.filter(job_id=job.pk).count() == 2
    assert "429" in ProviderCall.objects.filter(job_id=job.pk).first().error


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_500s_until_the_limit_then_a_clear_error_and_no_more_attempts_on_retry(protocol, project, conv):
    with FakeProvider(then="500") as server:
        _configure(project, protocol, server)
        job = _handoff(conv)
        assert job.status == JobStatus.FAILED
        assert server.count() == services.MAX_ATTEMPTS_PER_JOB == 6
        assert "gave up after 6 attempts" in job.error and "HTTP 500" in job.error
        # Running the same job again spends no more attempts: the budget is per job, in total.
        assert jobs.retry(job)
        again = jobs.run(job.pk)
        assert again.status == JobStatus.FAILED and "gave up after 6 attempts" in again.error
        assert server.count() == 6
    assert not Fold.objects.filter(conversation=conv, origin="generated").exists()


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_timeout_is_retried_within_the_limit(protocol, project, conv):
    with FakeProvider(["hang", "ok"]) as server:
        _configure(project, protocol, server)
        job = _handoff(conv)
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert server.count() == 2
    assert "timeout" in ProviderCall.objects.filter(job_id=job.pk).first().error


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_timeouts_until_the_limit(protocol, project, conv, monkeypatch):
    monkeypatch.setenv("CONTEXTVIEWER_PROVIDER_TIMEOUT", "0.3")
    with FakeProvider(then="hang") as server:
        _configure(project, protocol, server)
        job = _handoff(conv)
        assert server.count() == 6
    assert job.status == JobStatus.FAILED and "timeout" in job.error


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_malformed_json_fails_the_job_with_a_clear_error(protocol, project, conv):
    with FakeProvider(["malformed"]) as server:
        _configure(project, protocol, server)
        job = _handoff(conv)
    assert job.status == JobStatus.FAILED
    assert server.count() <= 6
    assert protocol in job.error and ("not a valid" in job.error or "not JSON" in job.error), job.error


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_an_answer_without_the_four_sections_is_refused(protocol, project, conv):
    with FakeProvider(["ok"], text="Sure! Here is a summary: all good.") as server:
        _configure(project, protocol, server)
        job = _handoff(conv)
    assert job.status == JobStatus.FAILED
    assert 'missing "Goal"' in job.error and server.count() == 1
    assert not Fold.objects.filter(conversation=conv, origin="generated").exists()


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_redirects_are_not_followed(protocol, project, conv):
    # A checked base URL must not bounce the request elsewhere (e.g. to a metadata address).
    with FakeProvider(["redirect"]) as server:
        _configure(project, protocol, server)
        job = _handoff(conv)
    assert job.status == JobStatus.FAILED and "307" in job.error
    assert [r["path"] for r in server.requests if "stolen" in r["path"]] == []


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_titles_use_the_configured_provider(protocol, project, tmp_path):
    from contextviewer.ingest import titles
    from tests.sessions import SessionBuilder

    builder = SessionBuilder()
    path = tmp_path / "t.jsonl"
    write_lines(path, [builder.user("Please move billing to Stripe v3")] + session_lines(1, builder))
    ingest.import_file(project, path)
    conv = Conversation.objects.get()
    with FakeProvider() as server:
        _configure(project, protocol, server)
        (job,) = titles.after_import(project, [conv.pk])
        done = jobs.run(job.pk)
    assert done.status == JobStatus.SUCCEEDED, done.error
    conv.refresh_from_db()
    assert conv.title == "Stripe billing migration"
    assert "Please move billing to Stripe v3" in server.requests[0]["body"]["messages"][-1]["content"]
    spend = SpendEntry.objects.get(job_id=job.pk)
    assert (spend.role, spend.provider, spend.conversation_id) == ("title", protocol, conv.pk)

"""Provider settings: the SSRF guard, keys encrypted at rest and shown masked, who may change what,
and the spend ledger on the page and through the API."""

from __future__ import annotations

import json

import pytest
from django.db import connection

from contextviewer.accounts.models import Role
from contextviewer.builds import handoffs as handoff
from contextviewer.ingest import files as ingest
from contextviewer.jobs import queue as jobs
from contextviewer.conversations.models import Conversation
from contextviewer.providers import services, ssrf
from contextviewer.providers.models import ProviderConfig, SpendEntry
from tests.factories import make_user
from tests.sessions import session_lines, write_lines

pytestmark = pytest.mark.django_db
KEY = "sk-live-SECRETSECRET-1234567890-wxyz"


@pytest.mark.parametrize(
    "url, kind",
    [
        ("http://169.254.169.254/latest", "metadata"),
        ("http://10.1.2.3:8000/v1", "private"),
        ("http://192.168.1.20/v1", "private"),
        ("http://172.16.0.1/v1", "private"),
        ("http://127.0.0.1:11434/v1", "loopback"),
        ("http://[::1]:8080/v1", "loopback"),
        ("http://localhost:8080/v1", "loopback"),
        ("http://169.254.10.1/", "link-local"),
    ],
)
def test_base_urls_reaching_inside_are_refused_with_the_reason(project, url, kind):
    with pytest.raises(services.ConfigError) as exc:
        services.save_config(project, "openai", base_url=url, api_key=KEY)
    assert kind in str(exc.value) and "refused" in str(exc.value)
    assert not ProviderConfig.objects.exists()


def test_an_admin_may_allow_the_private_network_but_never_metadata(project):
    config = services.save_config(
        project, "openai", base_url="http://127.0.0.1:11434/v1", allow_private_network=True, may_allow_private=True
    )
    assert config.base_url == "http://127.0.0.1:11434/v1" and config.allow_private_network
    with pytest.raises(services.ConfigError, match="metadata"):
        services.save_config(project, "openai", base_url="http://169.254.169.254/", may_allow_private=True)
    with pytest.raises(ssrf.UnsafeBaseURL, match="metadata"):
        ssrf.check_base_url("http://[::ffff:169.254.169.254]/", allow_private=True)


def test_bad_urls_get_a_clear_message():
    for url, words in [("ftp://example.com", "http:// or https://"), ("http://user:pw@example.com", "user name"),
                       ("http://no-such-host.invalid/v1", "does not resolve")]:
        with pytest.raises(ssrf.UnsafeBaseURL, match=words):
            ssrf.check_base_url(url)


def test_the_key_is_stored_encrypted_and_shown_masked(project, user, client):
    services.save_config(project, "anthropic", base_url="", model="claude-x", api_key=KEY, make_default=True)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT api_key_encrypted FROM {ProviderConfig._meta.db_table}")
        (stored,) = cursor.fetchone()
    assert KEY not in stored and "SECRETSECRET" not in stored and stored
    assert ProviderConfig.objects.get().api_key == KEY  # decrypts with the server's secret

    client.force_login(user)
    page = client.get(f"/projects/{project.slug}/providers/").content.decode()
    assert "SECRETSECRET" not in page and "sk-…wxyz" in page
    listed = client.get(f"/api/projects/{project.slug}/providers").json()
    assert listed[0]["api_key"] == "sk-…wxyz" and "SECRET" not in json.dumps(listed)


def test_only_owners_and_admins_change_settings(project, user, client):
    member = make_user("bob", project=project, role=Role.MEMBER)
    client.force_login(member)
    response = client.post(f"/projects/{project.slug}/providers/", {"provider": "openai", "base_url": "https://api.openai.com/v1"})
    assert response.status_code == 403
    response = client.put(
        f"/api/projects/{project.slug}/providers/openai",
        {"base_url": "http://127.0.0.1:1/v1", "allow_private_network": True},
        content_type="application/json",
    )
    assert response.status_code == 403
    assert not ProviderConfig.objects.exists()
    page = client.get(f"/projects/{project.slug}/providers/").content.decode()
    assert "Only owners and admins may change these settings." in page

    client.force_login(user)  # the owner
    response = client.post(
        f"/projects/{project.slug}/providers/",
        {"provider": "openai", "base_url": "http://10.0.0.7/v1", "model": "llama3"},
    )
    assert response.status_code == 400 and "private address" in response.content.decode().replace("a private", "private")
    response = client.post(
        f"/projects/{project.slug}/providers/",
        {"provider": "openai", "base_url": "http://10.0.0.7/v1", "model": "llama3", "allow_private_network": "1",
         "make_default": "1", "api_key": KEY},
        follow=True,
    )
    assert response.status_code == 200
    config = ProviderConfig.objects.get()
    assert config.allow_private_network and config.is_default and config.model == "llama3"
    # Saving again without a key keeps the stored one.
    client.post(f"/projects/{project.slug}/providers/", {"provider": "openai", "base_url": "http://10.0.0.7/v1",
                                                       "allow_private_network": "1", "make_default": "1"})
    assert ProviderConfig.objects.get().api_key == KEY


def test_unknown_or_unconfigured_providers_are_refused_before_a_job_exists(project, user, client, tmp_path):
    path = tmp_path / "s.jsonl"
    write_lines(path, session_lines(2))
    ingest.import_file(project, path)
    conv = Conversation.objects.get()
    client.force_login(user)
    response = client.post(f"/api/conversations/{conv.pk}/handoff", {"provider": "anthropic"}, content_type="application/json")
    assert response.status_code == 400 and "not configured" in response.json()["detail"]
    response = client.post(f"/api/conversations/{conv.pk}/handoff", {"provider": "gpt-9"}, content_type="application/json")
    assert response.status_code == 400 and "unknown provider" in response.json()["detail"]
    viewer = make_user("vic", project=project, role=Role.VIEWER)
    client.force_login(viewer)
    assert client.post(f"/api/conversations/{conv.pk}/handoff", {}, content_type="application/json").status_code == 403


def test_spend_per_conversation_and_per_project_on_the_page_and_the_api(project, user, client, tmp_path):
    from contextviewer.ingest import titles
    from tests.sessions import SessionBuilder

    for i in range(2):
        path = tmp_path / f"s{i}.jsonl"
        write_lines(path, session_lines(2, SessionBuilder(session_id=f"11111111-2222-4333-8444-00000000000{i}")))
        ingest.import_file(project, path)
    convs = list(Conversation.objects.order_by("pk"))
    # conversation 0: a title job and a handoff; conversation 1: a handoff.
    for job in titles.after_import(project, [convs[0].pk]):
        assert jobs.run(job.pk).status == "succeeded"
    for conv in convs:
        job, _ = handoff.start_handoff(conv, enqueue=False)
        assert jobs.run(job.pk).status == "succeeded"
    client.force_login(user)
    api0 = client.get(f"/api/conversations/{convs[0].pk}/spend").json()
    assert api0["calls"] == 2
    assert {r["role"] for r in api0["by_role"]} == {"handoff", "title"}
    assert api0["input_tokens"] == sum(e.input_tokens for e in SpendEntry.objects.filter(conversation=convs[0])) > 0
    project_api = client.get(f"/api/projects/{project.slug}/spend").json()
    assert project_api["calls"] == 3
    assert {c["conversation_id"] for c in project_api["conversations"]} == {convs[0].pk, convs[1].pk}
    page = client.get(f"/projects/{project.slug}/providers/").content.decode()
    assert 'id="spend-by-role"' in page and f'/c/{convs[0].pk}/' in page and "3</strong> calls" in page
    other = make_user("eve")
    client.force_login(other)
    assert client.get(f"/api/projects/{project.slug}/spend").status_code == 404
    assert client.get(f"/api/conversations/{convs[0].pk}/spend").status_code == 404
    assert client.get(f"/projects/{project.slug}/providers/").status_code == 404


def test_titles_name_conversations_from_the_first_request_and_keep_a_log_title(project, tmp_path):
    from contextviewer.ingest import titles
    from tests.sessions import SessionBuilder

    builder = SessionBuilder()
    request = '# "Please migrate the billing module to Stripe v3 and keep the old webhooks working for a month"'
    path = tmp_path / "s.jsonl"
    write_lines(path, [builder.user(request)] + session_lines(1, builder))
    ingest.import_file(project, path)
    conv = Conversation.objects.get()
    (job,) = titles.after_import(project, [conv.pk])
    assert titles.after_import(project, [conv.pk]) == []  # once per conversation
    done = jobs.run(job.pk)
    conv.refresh_from_db()
    assert conv.title.startswith("Please migrate the billing module to Stripe v3")
    assert len(conv.title) <= 80 and not conv.title.startswith(("#", '"'))
    assert done.result["titles"] == [{"conversation_id": conv.pk, "title": conv.title, "changed": True}]
    # A title the log gave (or a person set) is kept.
    Conversation.objects.filter(pk=conv.pk).update(title="Billing migration")
    job2, _ = jobs.create_job(project, "title", {"conversation_id": conv.pk}, enqueue=False)
    assert jobs.run(job2.pk).result["changed"] is False
    conv.refresh_from_db()
    assert conv.title == "Billing migration"

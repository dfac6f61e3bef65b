"""A stored provider key never follows a changed base URL (issue 10, item 4).

An admin who points the base URL at a server they run and leaves the key field empty must not
receive the owner's key with the next handoff: changing the base URL (or the provider kind)
clears the stored key unless a key is entered again, the page says so, and the audit log keeps
the old and the new URL. Two local servers on 127.0.0.1 stand for the real endpoint and the
admin's own; each records the headers it receives."""

from __future__ import annotations

import json

import pytest

from contextviewer.accounts.models import AuditEvent, Role
from contextviewer.builds import handoffs as handoff
from contextviewer.ingest import files as ingest
from contextviewer.jobs import queue as jobs
from contextviewer.conversations.models import Conversation
from contextviewer.jobs.models import JobStatus
from contextviewer.providers import services
from contextviewer.providers.models import ProviderConfig
from tests.factories import make_user
from tests.fake_providers import FakeProvider
from tests.sessions import SessionBuilder, session_lines, write_lines

pytestmark = pytest.mark.django_db
OWNER_KEY = "sk-owner-KEEPTHISSECRET-0123456789"
PROTOCOLS = ["openai", "anthropic"]


@pytest.fixture(autouse=True)
def fast_retries(monkeypatch):
    monkeypatch.setenv("CONTEXTVIEWER_PROVIDER_BACKOFF", "0.01")
    monkeypatch.setenv("CONTEXTVIEWER_PROVIDER_TIMEOUT", "2")


@pytest.fixture
def convs(project, tmp_path):
    """Two conversations: a handoff folds its conversation up to the end, so each run needs its own."""
    for i in range(2):
        path = tmp_path / f"s{i}.jsonl"
        write_lines(path, session_lines(2, SessionBuilder(session_id=f"11111111-2222-4333-8444-00000000000{i}")))
        ingest.import_file(project, path)
    return list(Conversation.objects.order_by("pk"))


@pytest.fixture
def conv(convs):
    return convs[0]


@pytest.fixture
def admin_user(project):
    return make_user("mallory", password="pw-mallory-123", project=project, role=Role.ADMIN)


def _owner_configures(project, protocol, server):
    services.save_config(
        project, protocol, base_url=server.url(protocol), model="test-model", api_key=OWNER_KEY,
        make_default=True, allow_private_network=True, may_allow_private=True,
    )


def _handoff(conv):
    job, _ = handoff.start_handoff(conv, enqueue=False)
    return jobs.run(job.pk)


def _keys_received(server) -> list[str]:
    """Every credential header the server saw (Bearer for OpenAI, x-api-key for Anthropic)."""
    out = []
    for request in server.requests:
        headers = request["headers"]
        for name in ("authorization", "x-api-key"):
            if name in headers:
                out.append(headers[name])
    return out


def _carries_owner_key(server) -> bool:
    return any(OWNER_KEY in value for value in _keys_received(server)) or any(
        OWNER_KEY in json.dumps(r["headers"]) for r in server.requests
    )


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_url_change_on_the_page_with_an_empty_key_field_never_sends_the_old_key(protocol, project, convs, admin_user, client):
    with FakeProvider() as official, FakeProvider() as theirs:
        _owner_configures(project, protocol, official)
        assert _handoff(convs[0]).status == JobStatus.SUCCEEDED
        assert _carries_owner_key(official)  # the key does travel to the endpoint it was entered for

        client.force_login(admin_user)
        response = client.post(
            f"/projects/{project.slug}/providers/",
            {"provider": protocol, "base_url": theirs.url(protocol), "model": "test-model", "api_key": "",
             "allow_private_network": "1", "make_default": "1"},
            follow=True,
        )
        assert response.status_code == 200
        page = response.content.decode()

        _handoff(convs[1])  # it may fail for want of a key; what matters is what was sent
        assert theirs.count() >= 1, "the handoff went to the new base URL"
        assert not _carries_owner_key(theirs)
        assert OWNER_KEY not in json.dumps(theirs.requests)

    config = ProviderConfig.objects.get(provider=protocol)
    assert config.base_url == theirs.url(protocol) and config.api_key == ""
    # The page says what happened, and what to do.
    assert "The stored API key was removed because the base URL changed" in page
    assert "enter the key again" in page

    event = AuditEvent.objects.filter(action="provider.settings_changed", actor_name="mallory").get()
    assert event.details["base_url_old"] == official.url(protocol)
    assert event.details["base_url_new"] == theirs.url(protocol)
    assert event.details["key_cleared"] is True
    assert OWNER_KEY not in json.dumps(event.details)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_url_change_through_the_api_without_a_key_never_sends_the_old_key(protocol, project, conv, admin_user, client):
    with FakeProvider() as official, FakeProvider() as theirs:
        _owner_configures(project, protocol, official)
        client.force_login(admin_user)
        response = client.put(
            f"/api/projects/{project.slug}/providers/{protocol}",
            {"base_url": theirs.url(protocol), "model": "test-model", "default": True},  # api_key left out
            content_type="application/json",
        )
        assert response.status_code == 200, response.content
        body = response.json()
        assert body["api_key"] == "" and body["key_cleared"] is True
        assert "enter the key again" in body["notice"]

        _handoff(conv)
        assert theirs.count() >= 1
        assert not _carries_owner_key(theirs)
        assert official.count() == 0

    event = AuditEvent.objects.get(action="provider.settings_changed", actor_name="mallory")
    assert (event.details["base_url_old"], event.details["base_url_new"]) == (official.url(protocol), theirs.url(protocol))


def test_a_url_change_with_the_key_entered_again_uses_the_new_key(project, conv, admin_user, client):
    new_key = "sk-admin-OWNKEY-9876543210"
    with FakeProvider() as official, FakeProvider() as theirs:
        _owner_configures(project, "openai", official)
        client.force_login(admin_user)
        response = client.post(
            f"/projects/{project.slug}/providers/",
            {"provider": "openai", "base_url": theirs.url("openai"), "model": "test-model", "api_key": new_key,
             "allow_private_network": "1", "make_default": "1"},
            follow=True,
        )
        assert "was removed" not in response.content.decode()
        assert ProviderConfig.objects.get(provider="openai").api_key == new_key
        assert _handoff(conv).status == JobStatus.SUCCEEDED
        assert _keys_received(theirs) == [f"Bearer {new_key}"]
        assert not _carries_owner_key(theirs)
    event = AuditEvent.objects.get(action="provider.settings_changed", actor_name="mallory")
    assert event.details["key_cleared"] is False and event.details["base_url_new"] == theirs.url("openai")


def test_saving_other_fields_with_the_same_url_keeps_the_key(project, admin_user, client):
    with FakeProvider() as official:
        _owner_configures(project, "openai", official)
        client.force_login(admin_user)
        response = client.post(
            f"/projects/{project.slug}/providers/",
            {"provider": "openai", "base_url": official.url("openai"), "model": "other-model", "api_key": "",
             "allow_private_network": "1", "make_default": "1"},
            follow=True,
        )
        assert "was removed" not in response.content.decode()
        config = ProviderConfig.objects.get(provider="openai")
        assert config.api_key == OWNER_KEY and config.model == "other-model"
        # The API too: the same URL (a trailing slash aside) and no key keep the key.
        response = client.put(
            f"/api/projects/{project.slug}/providers/openai",
            {"base_url": official.url("openai") + "/", "model": "m2"},
            content_type="application/json",
        )
        assert response.json()["key_cleared"] is False
        assert ProviderConfig.objects.get(provider="openai").api_key == OWNER_KEY


def test_the_official_endpoint_named_or_left_empty_is_the_same_url(project):
    config = ProviderConfig(project=project, provider="openai", base_url="")
    config.set_api_key(OWNER_KEY)
    config.save()
    config = ProviderConfig.objects.get()
    config.base_url = "https://api.openai.com/v1/"
    config.save()
    config.refresh_from_db()
    assert config.api_key == OWNER_KEY


def test_any_other_path_that_changes_the_url_or_the_kind_clears_the_key(project):
    # The Django shell, a data migration, a future command: the model itself refuses to carry the
    # key over to another endpoint.
    config = ProviderConfig(project=project, provider="openai", base_url="")
    config.set_api_key(OWNER_KEY)
    config.save()
    config = ProviderConfig.objects.get()
    config.base_url = "https://llm.example.net/v1"
    config.save()
    config.refresh_from_db()
    assert config.api_key == ""

    config.set_api_key(OWNER_KEY)
    config.save()
    config = ProviderConfig.objects.get()
    assert config.api_key == OWNER_KEY
    config.provider = "anthropic"
    config.save()
    config.refresh_from_db()
    assert (config.provider, config.api_key) == ("anthropic", "")

    # A key set in the same save is kept.
    config.base_url = "https://other.example.net"
    config.set_api_key("sk-fresh-000000000000")
    config.save()
    config.refresh_from_db()
    assert config.api_key == "sk-fresh-000000000000"

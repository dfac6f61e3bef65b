"""A provider built from a project's settings connects only to the address its base URL was checked
against: a name that answers a public address for the check and 127.0.0.1 afterwards (DNS
rebinding) never reaches a server on 127.0.0.1."""

from __future__ import annotations

import socket

import pytest

from contextviewer.providers import services
from contextviewer.providers.base import RetryableProviderError
from tests.fake_providers import FakeProvider

pytestmark = pytest.mark.django_db
PUBLIC = "93.184.215.14"  # public, so the guard lets it through; never reached from the test


@pytest.fixture
def rebinding(monkeypatch):
    """rebind.test resolves to state["answer"]; every lookup of it and every TCP connect is recorded."""
    real_getaddrinfo = socket.getaddrinfo
    real_create_connection = socket.create_connection
    state = {"answer": PUBLIC, "lookups": 0, "connects": []}

    def getaddrinfo(host, port, *args, **kwargs):
        if host == "rebind.test":
            state["lookups"] += 1
            return real_getaddrinfo(state["answer"], port, *args, **kwargs)
        return real_getaddrinfo(host, port, *args, **kwargs)

    def create_connection(address, *args, **kwargs):
        state["connects"].append(address[0])
        if address[0] == PUBLIC:
            raise ConnectionRefusedError(f"test: {PUBLIC} is not reachable from here")
        return real_create_connection(address, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(socket, "create_connection", create_connection)
    return state


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
def test_a_base_url_that_rebinds_to_loopback_after_the_check_is_not_followed(protocol, project, rebinding):
    with FakeProvider() as server:
        url = server.url(protocol).replace("127.0.0.1", "rebind.test")
        config = services.save_config(project, protocol, base_url=url, model="m", api_key="sk-x", make_default=True)
        assert not config.allow_private_network
        provider = services.build_provider(config)  # resolves and checks: the public answer
        lookups = rebinding["lookups"]
        rebinding["answer"] = "127.0.0.1"  # from now on the name points inside
        with pytest.raises(RetryableProviderError, match="could not connect"):
            provider.complete(system="s", prompt="p", role="handoff")
        assert server.count() == 0  # the server on 127.0.0.1 received nothing
    assert rebinding["lookups"] == lookups  # the client did not resolve the name again
    assert rebinding["connects"] == [PUBLIC]


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
def test_a_name_rebound_before_the_provider_is_built_is_refused(protocol, project, rebinding):
    with FakeProvider() as server:
        url = server.url(protocol).replace("127.0.0.1", "rebind.test")
        config = services.save_config(project, protocol, base_url=url, model="m", api_key="sk-x", make_default=True)
        rebinding["answer"] = "127.0.0.1"
        with pytest.raises(services.ssrf.UnsafeBaseURL, match="loopback address: refused"):
            services.build_provider(config)
        assert server.count() == 0
    assert rebinding["connects"] == []

"""Playwright: the provider settings page refuses a metadata address, stores a local server with
the private network allowed, and shows the key masked."""

from __future__ import annotations


import pytest
from playwright.sync_api import expect

from contextviewer.providers.models import ProviderConfig
from tests.browser.test_viewer_flows import Watch, login
from tests.factories import make_project, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

from tests.browser.screenshots import SCREENSHOTS  # noqa: E402
KEY = "sk-proj-ABCDEFGHIJKLMNOP-9876"


def test_provider_settings_page(page, live_server):
    project = make_project("acme", "Acme backend")
    user = make_user("dana", project=project)
    watch = Watch(page)
    login(page.context, live_server, user)
    page.goto(f"{live_server.url}/projects/{project.slug}/providers/")
    form = page.locator("#provider-openai form")
    form.locator("input[name=base_url]").fill("http://169.254.169.254/v1")
    form.locator("input[name=api_key]").fill(KEY)
    form.locator("button[type=submit]").click()
    expect(page.locator(".flash")).to_contain_text("cloud metadata address")
    assert not ProviderConfig.objects.exists()

    form = page.locator("#provider-openai form")
    form.locator("input[name=base_url]").fill("http://127.0.0.1:11434/v1")
    form.locator("input[name=model]").fill("llama3.1")
    form.locator("input[name=api_key]").fill(KEY)
    form.locator("input[name=allow_private_network]").check()
    form.locator("input[name=make_default]").check()
    form.locator("button[type=submit]").click()
    expect(page.locator(".flash")).to_contain_text("Saved the openai provider settings")
    card = page.locator("#provider-openai")
    expect(card.locator(".key-masked")).to_have_text("sk-…9876")
    expect(card.locator("h2")).to_contain_text("default")
    assert KEY not in page.content()
    assert ProviderConfig.objects.get().api_key == KEY
    page.screenshot(path=str(SCREENSHOTS / "provider-settings.png"), full_page=True)
    # The refused form answered 400 (Chromium logs that status); nothing else went wrong.
    watch.errors = [e for e in watch.errors if "status of 400" not in e]
    watch.assert_clean()

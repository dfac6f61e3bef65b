"""The policy lab in Chromium on a real Claude Code session with a fold and a clipped Bash result:
the open-loop note, the recorded curve beside the chosen policies' curves, toggling a policy
through the form, the clipping view; no CSP violation. Saves var/screenshots/policy-lab.png
(bin/screenshots: docs/screenshots/policy-lab.png)."""

from __future__ import annotations

import pytest

from contextviewer.ingest import files as ingest
from contextviewer.conversations import page_cache
from contextviewer.conversations.models import Conversation
from tests.browser.screenshots import SCREENSHOTS
from tests.browser.test_viewer_flows import Watch, login
from tests.factories import make_project, make_user
from tests.sessions import one_call_session

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

REAL = "claude-code/marot__spotter__8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl"


def test_policy_lab_toggles_a_policy_and_shows_the_clip(page, live_server, fixtures_dir):
    page_cache.clear()
    project = make_project("lab")
    user = make_user("lab-viewer", project=project)
    ingest.import_path(project, fixtures_dir / REAL)
    conv = Conversation.objects.get(project=project, parent__isnull=True, external_id__startswith="8463c716")
    login(page.context, live_server, user)
    watch = Watch(page)
    page.goto(f"{live_server.url}/c/{conv.pk}/")
    page.click("#policy-lab-link")
    page.wait_for_url(f"**/c/{conv.pk}/lab/**")
    assert "replayed unchanged" in page.locator(".open-loop-note").inner_text()

    # Choose exactly Claude Code and efferent, then add Codex.
    form = page.locator("#policy-form")
    for box in form.locator("input[name=policy]").all():
        box.set_checked(box.get_attribute("value") in {"claude_code", "efferent"})
    form.locator("button[type=submit]").click()
    page.wait_for_load_state()
    assert page.locator("svg.curve path.line-policy").count() == 2
    assert page.locator("#policy-codex").count() == 0
    page.check("input[name=policy][value=codex]")
    page.locator("#policy-form button[type=submit]").click()
    page.wait_for_load_state()
    assert page.locator("svg.curve path.line-policy").count() == 3
    assert page.locator("#policy-codex").count() == 1
    assert page.locator("input[name=policy][value=codex]").is_checked()
    # Claude Code's own policy fires where the recorded session folded: a dot on its line.
    assert page.locator("svg.curve circle.fire").count() >= 1

    clip = page.locator("#clipping article.clip").first
    assert "persisted-output" in clip.locator(".clip-sides").inner_text() or "Output too large" in clip.inner_text()
    assert "tokens clipped" in clip.locator("h3").inner_text()

    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(SCREENSHOTS / "policy-lab.png"))
    watch.assert_clean()


def test_policy_lab_draws_the_single_point_of_a_one_call_conversation(page, live_server, tmp_path):
    """One model call: no line to draw, so each curve's point is a filled dot, in the chart."""
    page_cache.clear()
    project = make_project("lab-one")
    user = make_user("lab-one-viewer", project=project)
    ingest.import_path(project, one_call_session(tmp_path))
    conv = Conversation.objects.get(project=project, kind="main")
    assert conv.model_call_count == 1
    login(page.context, live_server, user)
    watch = Watch(page)
    page.goto(f"{live_server.url}/c/{conv.pk}/lab/?policy=claude_code&policy=efferent")
    chart = page.locator("svg.curve")
    dots = chart.locator("circle.point")
    assert dots.count() == 3
    box, dot = chart.bounding_box(), chart.locator("circle.point.line-recorded").bounding_box()
    assert dot["width"] >= 6 and dot["height"] >= 6
    assert box["x"] + box["width"] * 0.3 < dot["x"] < box["x"] + box["width"] * 0.7  # in the middle, not on the axis
    for i in range(dots.count()):
        assert dots.nth(i).evaluate("c => getComputedStyle(c).fill") not in ("none", "")
    chart.screenshot(path=str(tmp_path / "policy-lab-one-call.png"))
    watch.assert_clean()

"""Playwright: a fold page marks the files a summary names only through a glob "named by a pattern",
lists the lost file needed again after the fold, and a user's rejection apart from errors (issue 34)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.screenshots import shot_path
from tests.browser.test_viewer_flows import Watch, login
from tests.factories import make_project, make_user
from tests.integration.review.test_probe_path_forms import SHOTS, WIN, windows_fold

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_fold_page_marks_files_named_by_a_pattern(page, live_server, tmp_path):
    project = make_project("acme", "Acme shop")
    owner = make_user("olivia", project=project)
    _, fold = windows_fold(project)
    watch = Watch(page)
    login(page.context, live_server, owner)
    page.goto(f"{live_server.url}/review/folds/{fold.pk}/")

    patterned = page.locator("ul.facts.salient li.fact.kept", has_text="named by a pattern")
    expect(patterned).to_have_count(4)
    expect(patterned.first).to_contain_text(SHOTS[0])
    expect(page.locator("ul.needed-again li.fact")).to_contain_text(f"{WIN}\\src\\legacy.ts")
    expect(page.locator("ul.facts.salient li.fact", has_text="The user rejected the plan")).to_contain_text("rejection")
    page.screenshot(path=str(shot_path("fold-review-patterns.png", tmp_path)), full_page=True)
    watch.assert_clean()

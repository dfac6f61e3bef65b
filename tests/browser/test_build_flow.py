"""Build in Chromium: select turns and a summary, see them exclude each other, build with the real
worker, open the new conversation, export it (a download). No sleeps."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import expect

from contextviewer.builds import services as builds
from contextviewer.conversations.models import Conversation, ConversationKind
from contextviewer.core import build as core_build
from tests.browser.test_viewer_flows import Watch, login, wait_for_htmx
from tests.factories import TextSource, build_conversation, make_project, make_user

pytestmark = [pytest.mark.browser, pytest.mark.worker, pytest.mark.django_db(transaction=True)]

from tests.browser.screenshots import SCREENSHOTS  # noqa: E402


@pytest.fixture
def seeded(live_server):
    project = make_project("acme", "Acme backend")
    user = make_user("dana", project=project)
    texts = TextSource(title="Fix the parser and keep the API stable")
    built = build_conversation(project, turns=14, fold_at=40_000, texts=texts, external_id="s-build", subagent_turn=None)
    assert built.folds, "the conversation needs a fold"
    return {"user": user, "conv": built.conversation}


def test_select_turns_and_a_summary_build_open_and_export(page, live_server, seeded, worker_process, tmp_path):
    watch = Watch(page)
    login(page.context, live_server, seeded["user"])
    conv = seeded["conv"]
    spans = builds.turn_spans(conv)
    behind = core_build.exclusions(spans, builds.fold_infos(conv))[1]  # the turns fold 1 stands for
    last = spans[-1].turn

    page.goto(f"{live_server.url}/c/{conv.id}/")
    page.wait_for_selector("#build-form[data-ready]", state="attached")
    # Build and export is a control in the bar above the turns (issue 22, item 3): its card is
    # closed until asked for, and the page remembers it open or closed across a reload.
    card, toggle = page.locator("#build"), page.locator("#build-toggle")
    expect(card).to_be_hidden()
    expect(toggle).to_have_attribute("aria-expanded", "false")
    toggle.click()
    expect(card).to_be_visible()
    expect(page.locator("#build-button")).to_be_disabled()
    expect(card.locator("a[data-export='claude-code']")).to_be_visible()
    expect(card.locator("a[data-export-full='markdown']")).to_be_visible()
    expect(card.locator(".resume-help").first).to_contain_text("claude --resume")
    page.reload()
    page.wait_for_selector("#build-form[data-ready]", state="attached")
    expect(card).to_be_visible()
    expect(toggle).to_have_attribute("aria-expanded", "true")
    card.locator("[data-build-close]").click()
    expect(card).to_be_hidden()
    page.reload()
    page.wait_for_selector("#build-form[data-ready]", state="attached")
    expect(card).to_be_hidden()

    # A turn the latest state still holds, and one that fold 1 put away (its segment unfolded).
    # With the card closed, the bar's control counts the selection.
    page.locator(f"#turn-{last} input.pick-turn").check()
    expect(page.locator("#build-count")).to_have_text("1 turn selected")
    archived = page.locator("details.segment.archived").first
    archived.locator("summary.fold-head .seg-range").click()
    archived.locator(f"#turn-{behind[0]}").wait_for()
    wait_for_htmx(page)
    old_turn = page.locator(f"#turn-{behind[0]} input.pick-turn")
    old_turn.check()
    expect(page.locator("#build-count")).to_have_text("2 turns selected")
    page.locator("body").click(position={"x": 5, "y": 5})
    page.keyboard.press("b")  # the key opens the card too
    expect(card).to_be_visible()
    expect(page.locator("#build-selection")).to_be_visible()
    expect(page.locator("#build-selection")).to_contain_text(f"2 turns ({behind[0]}, {last})")
    summary_box = archived.locator("summary.fold-head input.pick-fold")

    # Choosing fold 1's summary clears the turn it stands for, and marks it.
    summary_box.check()
    expect(old_turn).not_to_be_checked()
    expect(page.locator("#build-count")).to_have_text("1 turn + 1 summary selected")
    expect(page.locator(f"#turn-{behind[0]}")).to_have_class(re.compile(r"\bbehind-summary\b"))
    expect(page.locator("#build-selection")).to_contain_text(f"replaces turn {behind[0]}, so it is no longer selected")
    # And the reverse: choosing that turn again clears the summary.
    old_turn.check()
    expect(summary_box).not_to_be_checked()
    # the refusal says what happened and what to select instead (issue 22, item 4)
    expect(page.locator("#build-selection")).to_contain_text("so that summary is no longer selected")
    expect(page.locator("#build-selection")).to_contain_text("tick its “use summary” box again")
    # Space on the current turn selects it too: put the summary back (clears the old turn), then
    # space on the last turn unselects and selects it again.
    summary_box.check()
    expect(old_turn).not_to_be_checked()
    page.locator(f"#turn-{last} .turn-no").click()  # makes it the current turn (and opens it)
    page.keyboard.press(" ")
    expect(page.locator(f"#turn-{last} input.pick-turn")).not_to_be_checked()
    page.keyboard.press(" ")
    expect(page.locator(f"#turn-{last} input.pick-turn")).to_be_checked()

    # The preview: the summary and one turn, with a gauge.
    page.wait_for_selector("#build-preview .build-figures")
    wait_for_htmx(page)
    expect(page.locator("#build-preview .build-figures")).to_contain_text("2 turns")
    expect(page.locator("#build-preview svg.gauge-small")).to_be_visible()
    expect(page.locator("#build-preview .build-turns li").first).to_contain_text("summary")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.locator("#build").screenshot(path=str(SCREENSHOTS / "build-panel.png"))
    page.screenshot(path=str(SCREENSHOTS / "build-selection.png"), full_page=False)

    # Build: the job runs on the worker; its page links the new conversation.
    page.locator("#build-button").click()
    page.wait_for_url("**/jobs/*/")
    link = page.locator("table.import-result a").first
    link.wait_for(timeout=60_000)
    # The job page says what was selected in words, with links (issue 36, item 3), not a dict.
    figures = page.locator(".job-figures")
    expect(figures).to_contain_text(f"The summary of fold 1 and turn {last}.")
    expect(figures).not_to_contain_text("{'turns'")
    fold_1 = builds.build_folds(conv)[0]
    expect(figures.locator("a.sel-fold")).to_have_attribute("href", f"/review/folds/{fold_1.pk}/")
    expect(figures.locator("a.sel-turn")).to_have_attribute("href", f"/c/{conv.id}/?turn={last}#turn-{last}")
    page.locator("#job-progress").screenshot(path=str(SCREENSHOTS / "build-job.png"))
    link.click()
    page.wait_for_selector(".lineage")
    built = Conversation.objects.get(kind=ConversationKind.BUILD)
    assert page.url.endswith(f"/c/{built.id}/")
    expect(page.locator(".lineage")).to_contain_text(f"turns {last}")
    expect(page.locator(".lineage")).to_contain_text("fold 1")
    assert built.lineage["selection"] == {"turns": [last], "folds": [1]}
    page.screenshot(path=str(SCREENSHOTS / "build-result.png"))

    # Continue in the agent (issue 19): the build's build page gives the file and the commands.
    page.locator("a", has_text="Continue in the agent").first.click()
    continue_card = page.locator("#continue")
    expect(continue_card).to_contain_text("claude --resume")
    expect(continue_card).to_contain_text("mkdir -p ~/.claude/projects/")
    continue_card.screenshot(path=str(SCREENSHOTS / "build-continue.png"))
    page.go_back()
    page.wait_for_selector(".lineage")

    # Export it: a download of Claude Code JSONL that starts with the summary.
    with page.expect_download() as info:
        page.locator("a[data-export='claude-code']").click()
    download = info.value
    path = tmp_path / download.suggested_filename
    download.save_as(path)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert download.suggested_filename == f"{lines[0]['sessionId']}.jsonl"
    assert lines[0].get("isCompactSummary") is True
    first_text = next(
        b["text"] for m in conv.messages.filter(turn=last).order_by("position") for b in m.blocks if b.get("kind") == "text"
    )
    assert any(first_text in json.dumps(line, ensure_ascii=False) for line in lines)
    with page.expect_download() as info:
        page.locator("a[data-export='markdown']").click()
    assert info.value.suggested_filename.endswith(".md")
    watch.assert_clean()

    # Without the script: numbers typed on the build page; a conflict is explained there.
    page.goto(f"{live_server.url}/c/{conv.id}/build/?turns={behind[0]}&folds=1")
    expect(page.locator(".build-preview .error")).to_contain_text(f"fold 1 put turn {behind[0]} away")
    page.screenshot(path=str(SCREENSHOTS / "build-page.png"))
    assert watch.csp() == [] and watch.dialogs == []  # (the console notes the 400 answer itself)


def test_a_turn_holding_a_summary_and_the_turns_its_fold_put_away_exclude_each_other(page, live_server, seeded):
    """The server's rule in the page: the turn opening with the latest fold's summary and a turn
    that fold put away cannot both be selected; the other's box is disabled and says why, both ways."""
    watch = Watch(page)
    login(page.context, live_server, seeded["user"])
    conv = seeded["conv"]
    spans, infos = builds.turn_spans(conv), builds.fold_infos(conv)
    n = infos[-1].number  # the latest fold: its summary opens a turn of the loaded view
    holder = next(t.turn for t in spans if t.first <= infos[-1].summary_position <= t.last)
    away = [t for t in core_build.exclusions(spans, infos)[n] if t != holder]
    assert away, f"fold {n} must have put turns away"
    # The server refuses the pair (the rule the page follows).
    with pytest.raises(core_build.BuildError, match=f"turn {holder} holds fold {n}'s summary"):
        core_build.validate([holder, away[0]], [], spans, infos)

    page.goto(f"{live_server.url}/c/{conv.id}/")
    page.wait_for_selector("#build-form[data-ready]", state="attached")
    archived = page.locator("details.segment.archived", has=page.locator(f'input.pick-fold[value="{n}"]'))
    archived.locator("summary.fold-head .seg-range").click()
    archived.locator(f"#turn-{away[0]}").wait_for()
    wait_for_htmx(page)
    holder_box = page.locator(f"#turn-{holder} input.pick-turn")
    away_box = page.locator(f"#turn-{away[0]} input.pick-turn")
    expect(away_box).to_be_enabled()

    holder_box.check()
    expect(away_box).to_be_disabled()
    note = page.locator(f"#turn-{away[0]} .pick-blocked")
    expect(note).to_be_visible()
    expect(note).to_contain_text(f"Turn {holder} (selected) holds the summary of fold {n}, which put turn {away[0]} away")
    expect(away_box).to_have_attribute("title", re.compile(f"holds the summary of fold {n}, which put turn {away[0]} away"))
    expect(page.locator("#build-selection")).to_contain_text(f"1 turn ({holder})")

    holder_box.uncheck()
    expect(away_box).to_be_enabled()
    expect(note).to_be_hidden()
    away_box.check()
    expect(holder_box).to_be_disabled()
    expect(page.locator(f"#turn-{holder} .pick-blocked")).to_contain_text(
        f"Turn {holder} holds the summary of fold {n}, which put away turn {away[0]} (selected)"
    )
    # Space on the holder turn (the keyboard path) does not select it either.
    page.locator(f"#turn-{holder} .turn-no").click()
    page.keyboard.press(" ")
    expect(holder_box).not_to_be_checked()
    expect(page.locator("#build-selection")).to_contain_text("select either")
    away_box.uncheck()
    expect(holder_box).to_be_enabled()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    holder_box.check()
    page.screenshot(path=str(SCREENSHOTS / "build-holder-rule.png"), full_page=False)
    watch.assert_clean()


def test_ticking_the_turn_that_begins_with_a_summary_says_why_use_summary_was_cleared(page, live_server, seeded):
    """Issue 36, item 3: the turn opening with the latest fold's summary and that fold's "use
    summary" exclude each other. Ticking one clears the other, and the cleared box says why beside
    it, in words, with the card closed too."""
    watch = Watch(page)
    login(page.context, live_server, seeded["user"])
    conv = seeded["conv"]
    spans, infos = builds.turn_spans(conv), builds.fold_infos(conv)
    n = infos[-1].number
    holder = next(t.turn for t in spans if t.first <= infos[-1].summary_position <= t.last)

    page.goto(f"{live_server.url}/c/{conv.id}/")
    page.wait_for_selector("#build-form[data-ready]", state="attached")
    expect(page.locator("#build")).to_be_hidden()  # the card stays closed: the words are by the boxes
    use = page.locator(f'section.segment.loaded input.pick-fold[value="{n}"]')
    turn_box = page.locator(f"#turn-{holder} input.pick-turn")
    fold_note = page.locator("section.segment.loaded .fold-summary.current > summary .pick-cleared")
    turn_note = page.locator(f"#turn-{holder} > summary .pick-cleared")

    use.check()
    expect(page.locator("#build-count")).to_have_text("1 summary selected")
    turn_box.check()
    expect(use).not_to_be_checked()
    expect(fold_note).to_be_visible()
    expect(fold_note).to_have_text(f"Cleared: turn {holder}, which you selected, begins with this summary, so the build has it already.")
    expect(page.locator("#build-count")).to_have_text("1 turn selected")
    expect(page.locator("#build-selection")).to_contain_text(
        f"Turn {holder} begins with the summary of fold {n}, so that fold’s “use summary” box was cleared"
    )
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.locator("section.segment.loaded").screenshot(path=str(SCREENSHOTS / "build-cleared-summary.png"))

    # The other way: ticking "use summary" again clears the turn, which says why.
    use.check()
    expect(turn_box).not_to_be_checked()
    expect(fold_note).to_have_count(0)  # the word goes with the next change
    expect(turn_note).to_be_visible()
    expect(turn_note).to_have_text(f"Cleared: this turn begins with the summary of fold {n}, which you selected on its own.")
    expect(page.locator("#build-selection")).to_contain_text(f"Turn {holder} begins with that summary, so it is no longer selected")
    page.locator("section.segment.loaded").screenshot(path=str(SCREENSHOTS / "build-cleared-turn.png"))
    use.uncheck()
    expect(turn_note).to_have_count(0)
    watch.assert_clean()

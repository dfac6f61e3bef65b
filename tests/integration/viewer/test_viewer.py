"""The viewer through Django's test client: index, conversation page, fragments, access, safety."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from contextviewer.viewer import conversation_page
from contextviewer.conversations import figures
from contextviewer.core.severity import severity
from tests.factories import PNG_1PX, TextSource, build_conversation, make_project
from tests.module_worlds import make_user, project_and_user

pytestmark = pytest.mark.django_db


def _project_and_alice():
    project = make_project()
    return project, make_user(project=project)


# The project and its user, made once for the module (tests/module_worlds.py).
_module_world, project, user = project_and_user(_project_and_alice)


@pytest.fixture
def logged_in(client, user):
    client.force_login(user)
    return client


# --- access ----------------------------------------------------------------------------------


def test_pages_need_login(client, project):
    built = build_conversation(project, turns=2)
    for url in [reverse("index"), reverse("conversation", args=[built.conversation.id])]:
        response = client.get(url)
        assert response.status_code == 302
        assert reverse("login") in response["Location"]


def test_non_members_get_404_everywhere(client, project):
    built = build_conversation(project, turns=4, image_turn=3)
    outsider = make_user("mallory", project=make_project("other"))
    client.force_login(outsider)
    c = built.conversation.id
    m = built.image_message
    for url in [
        reverse("conversation", args=[c]),
        reverse("segment_turns", args=[c, 0]),
        reverse("turn", args=[c, 1]),
        reverse("block", args=[c, m.id, 0]),
        reverse("image", args=[c, m.id, 0]),
    ]:
        assert client.get(url).status_code == 404, url
    assert built.conversation.title not in client.get(reverse("index")).content.decode()


# --- index -----------------------------------------------------------------------------------


def test_index_lists_conversations_with_figures_and_subagents_under_their_parent(logged_in, project):
    built = build_conversation(project, turns=20, fold_at=100_000, title="Refactor the parser")
    response = logged_in.get(reverse("index"))
    assert response.status_code == 200
    html = response.content.decode()
    conv = built.conversation
    assert "Refactor the parser" in html
    assert reverse("conversation", args=[conv.id]) in html
    # the sub-agent is listed as a child row right after its parent, not as a top-level row
    rows = re.findall(r'<tr class="conv-row( child)?">.*?href="/c/(\d+)/"', html, re.S)
    assert rows[0] == ("", str(conv.id))
    assert rows[1] == (" child", str(built.child.id))
    spec = figures.model_spec(conv)
    assert f"sev-{severity(conv.peak_context, spec.window)}" in html
    assert "$" in html  # cost: the model's prices are known


def test_index_filters_sort_and_paginate(logged_in, project):
    build_conversation(project, turns=2, title="alpha", subagent_turn=None)
    build_conversation(project, turns=30, fold_at=60_000, title="beta", subagent_turn=None)
    html = logged_in.get(reverse("index"), {"compacted": "1"}).content.decode()
    assert "beta" in html and "alpha" not in html
    html = logged_in.get(reverse("index"), {"sort": "messages"}).content.decode()
    assert html.index(">alpha<") < html.index(">beta<")
    html = logged_in.get(reverse("index"), {"sort": "-messages"}).content.decode()
    assert html.index(">beta<") < html.index(">alpha<")
    assert logged_in.get(reverse("index"), {"sort": "nope", "page": "x", "from": "bad"}).status_code == 200
    html = logged_in.get(reverse("index"), {"model": "sonnet"}).content.decode()
    assert "alpha" in html
    html = logged_in.get(reverse("index"), {"model": "gpt-5"}).content.decode()
    assert "alpha" not in html


def test_index_htmx_request_gets_the_results_partial(logged_in, project):
    build_conversation(project, turns=2, title="alpha")
    response = logged_in.get(reverse("index"), HTTP_HX_REQUEST="true", HTTP_HX_TARGET="results")
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="results">')
    assert "<html" not in html


# --- conversation page ------------------------------------------------------------------------


def test_conversation_page_shows_gauge_curve_segments_and_turns(logged_in, project):
    built = build_conversation(project, turns=30, fold_at=100_000)
    conv = built.conversation
    assert len(built.folds) >= 2
    response = logged_in.get(reverse("conversation", args=[conv.id]))
    assert response.status_code == 200
    html = response.content.decode()
    assert 'class="gauge"' in html and 'class="curve"' in html
    assert html.count('class="fold-mark"') == len(built.folds)
    # the latest archived segment whole, older ones one line each (tests/integration/viewer/test_first_page.py)
    assert html.count('<details class="segment archived"') == 1
    assert html.count('<details class="segment archived') == len(built.folds)
    assert 'class="segment loaded"' in html
    # the loaded segment is open with its turn headers; archived ones load on unfold
    last_turn = conv.messages.order_by("-position").first().turn
    assert f'id="turn-{last_turn}"' in html
    first_fold_summary = built.folds[0].summary_text.splitlines()[0].lstrip("# ")
    assert first_fold_summary in html


def test_archived_segment_unfolds_into_its_turns(logged_in, project):
    built = build_conversation(project, turns=30, fold_at=100_000)
    conv = built.conversation
    fold = built.folds[0]
    response = logged_in.get(reverse("segment_turns", args=[conv.id, 0]), HTTP_HX_REQUEST="true")
    html = response.content.decode()
    expected = sorted(set(conv.messages.filter(position__lte=fold.position).values_list("turn", flat=True)))
    assert re.findall(r'id="turn-(\d+)"', html) == [str(t) for t in expected]
    assert "<html" not in html
    # without htmx: a full page
    assert "<html" in logged_in.get(reverse("segment_turns", args=[conv.id, 0])).content.decode()


def test_turn_expands_into_messages_with_tool_results_under_their_calls(logged_in, project):
    built = build_conversation(project, turns=4, subagent_turn=2, long_block_turn=None)
    conv = built.conversation
    html = logged_in.get(reverse("turn", args=[conv.id, 2]), HTTP_HX_REQUEST="true").content.decode()
    call_at = html.index('class="tool-name"')
    result_at = html.index('class="tool-result')
    assert call_at < result_at
    assert html.count('class="tool-result') == 1  # the result is not shown a second time
    assert "thinking" in html
    assert reverse("conversation", args=[built.child.id]) in html  # the sub-agent under its call
    assert "ansi-green" in html  # ANSI colours as classes


def test_long_block_shows_head_and_tail_and_loads_the_rest(logged_in, project):
    built = build_conversation(project, turns=3, long_block_turn=2)
    conv, m = built.conversation, built.long_message
    html = logged_in.get(reverse("turn", args=[conv.id, 2]), HTTP_HX_REQUEST="true").content.decode()
    assert "Load the rest" in html
    assert "END-OF-LONG-OUTPUT" in html  # the tail
    assert "line 200:" not in html  # the middle waits
    rest = logged_in.get(reverse("block", args=[conv.id, m.id, 0]), HTTP_HX_REQUEST="true").content.decode()
    assert "line 200:" in rest and "Load the rest" not in rest


def test_images_are_click_to_load_from_our_own_endpoint(logged_in, project):
    built = build_conversation(project, turns=3, image_turn=3)
    conv, m = built.conversation, built.image_message
    html = logged_in.get(reverse("turn", args=[conv.id, 3]), HTTP_HX_REQUEST="true").content.decode()
    url = reverse("image", args=[conv.id, m.id, 0])
    assert f'href="{url}"' in html
    assert "<img" not in html
    response = logged_in.get(url)
    assert response.status_code == 200
    assert response["Content-Type"] == "image/png"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response.content == PNG_1PX
    assert logged_in.get(reverse("image", args=[conv.id, m.id, 1])).status_code == 404


def test_image_endpoint_refuses_other_types_and_mismatched_bytes(logged_in, project):
    built = build_conversation(project, turns=3, image_turn=3)
    m = built.image_message
    for media_type, data in [("image/svg+xml", "PHN2Zz48L3N2Zz4="), ("text/html", "PHNjcmlwdD4="), ("image/png", "PHNjcmlwdD4=")]:
        m.raw = '{"message": {"content": [{"type": "image", "source": {"type": "base64", "media_type": "%s", "data": "%s"}}]}}' % (media_type, data)
        m.save()
        assert logged_in.get(reverse("image", args=[built.conversation.id, m.id, 0])).status_code == 404


def test_turn_link_opens_the_segment_holding_the_turn(logged_in, project):
    built = build_conversation(project, turns=30, fold_at=100_000)
    conv = built.conversation
    html = logged_in.get(reverse("conversation", args=[conv.id]), {"turn": 3}).content.decode()
    assert re.search(r'<details class="segment archived" id="segment-0" open', html)
    assert 'id="turn-3"' in html


# --- performance shape ------------------------------------------------------------------------


def _queries(client, url, **extra):
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(url, **extra)
    assert response.status_code == 200
    return len(ctx.captured_queries), response


def test_query_count_does_not_grow_with_length(logged_in, project):
    small = build_conversation(project, turns=30, fold_at=10**9, subagent_turn=None).conversation
    large = build_conversation(project, turns=600, fold_at=10**9, subagent_turn=None).conversation
    n_small, _ = _queries(logged_in, reverse("conversation", args=[small.id]))
    n_large, response = _queries(logged_in, reverse("conversation", args=[large.id]))
    assert 0 < n_small == n_large
    html = response.content.decode()
    assert html.count('<details class="turn') == conversation_page.TURN_PAGE
    assert 'hx-trigger="revealed"' in html


def test_scrolling_on_loads_the_next_window(logged_in, project):
    conv = build_conversation(project, turns=100, fold_at=10**9, subagent_turn=None).conversation
    html = logged_in.get(reverse("segment_turns", args=[conv.id, 0]), {"from": conversation_page.TURN_PAGE + 1}, HTTP_HX_REQUEST="true").content.decode()
    turns = [int(t) for t in re.findall(r'id="turn-(\d+)"', html)]
    assert turns[0] == conversation_page.TURN_PAGE + 1 and len(turns) == conversation_page.TURN_PAGE


# --- safe rendering ---------------------------------------------------------------------------

HOSTILE = '<script>alert(1)</script><img src=x onerror=alert(2)>[x](javascript:alert(3))'


def test_hostile_text_is_escaped_everywhere(logged_in, project):
    texts = TextSource(
        user=lambda t: HOSTILE,
        thinking=lambda t: HOSTILE,
        tool_input=lambda t: {"command": HOSTILE},
        tool_output=lambda t: "\x1b[31m" + HOSTILE + "\x1b[0m",
        answer=lambda t: HOSTILE + '\n\n<a href="javascript:alert(4)">y</a> [z](data:text/html;base64,PHNjcmlwdD4=)',
        summary=lambda k: HOSTILE,
        title=HOSTILE,
    )
    built = build_conversation(project, turns=12, fold_at=60_000, texts=texts)
    conv = built.conversation
    urls = [
        reverse("index"),
        reverse("index") + "?q=alert",
        reverse("conversation", args=[conv.id]),
        reverse("segment_turns", args=[conv.id, 0]),
    ] + [reverse("turn", args=[conv.id, t]) for t in range(1, 5)]
    for url in urls:
        html = logged_in.get(url).content.decode()
        assert "<script>alert" not in html, url
        assert "<img src=x" not in html, url
        assert re.search(r"<[a-z][^<>]*\s(href|src)\s*=\s*[\"']?\s*(javascript|data):", html, re.I) is None, url
        assert re.search(r"<[^>]+\son\w+\s*=", html) is None, url
        assert "style=" not in html, url
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in logged_in.get(reverse("turn", args=[conv.id, 1])).content.decode()


def test_content_regions_are_hx_disabled(logged_in, project):
    built = build_conversation(project, turns=3)
    html = logged_in.get(reverse("turn", args=[built.conversation.id, 1]), HTTP_HX_REQUEST="true").content.decode()
    assert re.search(r'<div class="md" hx-disable>', html)
    assert re.search(r'<pre class="(plain|ansi|json)" hx-disable>', html)


def test_csp_header_forbids_inline_scripts(logged_in, project):
    built = build_conversation(project, turns=2)
    response = logged_in.get(reverse("conversation", args=[built.conversation.id]))
    csp = response["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    html = response.content.decode()
    assert re.search(r"<script(?![^>]*\ssrc=)[^>]*>", html) is None  # no inline script element
    assert '"selfRequestsOnly": true' in html and '"allowEval": false' in html


def test_a_conversation_with_one_model_call_shows_its_point_on_the_curve(logged_in, project, tmp_path):
    """A path through one point draws nothing: the one call's measured point is a dot, mid-chart."""
    from contextviewer.ingest import files as ingest
    from contextviewer.conversations.models import Conversation
    from tests.sessions import one_call_session

    ingest.import_path(project, one_call_session(tmp_path))
    conv = Conversation.objects.get(project=project, kind="main")
    assert conv.model_call_count == 1
    html = logged_in.get(reverse("conversation", args=[conv.id])).content.decode()
    svg = html.split('<svg class="curve"', 1)[1].split("</svg>", 1)[0]
    dots = re.findall(r'<circle class="dot-measured" cx="([^"]+)" cy="([^"]+)" r="([^"]+)"><title>measured: (\d+)', svg)
    assert len(dots) == 1, svg
    cx, cy, r, tokens = dots[0]
    width = int(re.search(r'data-width="(\d+)"', svg).group(1))
    call = conv.model_calls.get()
    assert float(cx) == width / 2 and float(r) >= 3
    assert int(tokens) == call.input_uncached + call.cache_write + call.cache_read > 0

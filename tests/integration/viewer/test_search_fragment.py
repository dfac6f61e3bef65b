"""The index page's results fragment for a search (`/?q=`, HX-Target results: what the search box
fetches): a bounded number of queries whatever the number of hits and sessions, and the kept HTML
of its rows and hits ({% kept %}) never shows what the reader may not see, nor a row as it was."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from contextviewer.conversations import page_cache, search
from tests.factories import TextSource, build_conversation, make_project, make_user

pytestmark = pytest.mark.django_db

MAX_QUERIES = 9  # session, user, count, page, sub-agents, spend, the scope's version, matches, hits


def _fragment(client, query: str):
    with CaptureQueriesContext(connection) as queries:
        response = client.get(reverse("index"), {"q": query}, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="results")
    assert response.status_code == 200
    return len(queries.captured_queries), response.content.decode()


def _build(project, n: int, word: str, start: int = 0) -> list:
    return [
        build_conversation(
            project, turns=3, texts=TextSource(user=lambda t, i=i: f"the {word} number {t} of {i}"), title=f"Session {i}",
            long_block_turn=None, image_turn=None, subagent_turn=2 if i % 2 else None,
        ).conversation
        for i in range(start, start + n)
    ]


def test_a_page_of_results_runs_a_bounded_number_of_queries(client):
    project = make_project()
    user = make_user(project=project)
    client.force_login(user)
    _build(project, 2, "platypus")
    page_cache.clear()
    few, html = _fragment(client, "platypus")
    assert 0 < html.count('<li class="hit">') < search.PER_PAGE

    _build(project, 12, "platypus", start=2)  # more sessions, sub-agents and hits than a page shows
    page_cache.clear()
    many, html = _fragment(client, "platypus")
    assert html.count('<li class="hit">') == search.PER_PAGE and 'rel="next"' in html
    assert html.count('class="conv-row') >= 14
    assert few == many <= MAX_QUERIES, (few, many)

    kept, again = _fragment(client, "platypus")  # its matches, rows and hits kept
    assert kept <= many and again == html


def test_kept_results_show_only_what_the_reader_may_read_and_as_it_is_now(client):
    mine, theirs = make_project("mine"), make_project("theirs")
    alice = make_user("alice", project=mine)
    bob = make_user("bob", project=theirs)
    own = build_conversation(mine, turns=2, texts=TextSource(user=lambda t: "the quokka plan"), title="Alice's plan",
                             subagent_turn=None).conversation
    build_conversation(theirs, turns=2, texts=TextSource(user=lambda t: "the quokka plan"), title="Bob's plan",
                       subagent_turn=None)
    client.force_login(alice)
    _, html = _fragment(client, "quokka")
    assert "Alice&#x27;s plan" in html and "Bob" not in html

    client.force_login(bob)  # the same search, with Alice's rows and hits kept
    _, html = _fragment(client, "quokka")
    assert "Bob&#x27;s plan" in html and "Alice" not in html
    assert reverse("conversation", args=[own.id]) not in html

    own.title = "Alice's renamed plan"  # a title job, say
    own.save(update_fields=["title"])
    client.force_login(alice)
    _, html = _fragment(client, "quokka")
    assert "Alice&#x27;s renamed plan" in html and "Alice&#x27;s plan<" not in html

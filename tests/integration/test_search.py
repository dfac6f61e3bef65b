"""Full-text search: FTS5 on SQLite, tsvector on PostgreSQL; hits link to the turn; projects isolate."""

import pytest
from django.urls import reverse

from contextviewer.conversations import search
from tests.factories import TextSource, build_conversation, make_project, make_user

pytestmark = pytest.mark.django_db


def test_search_finds_words_in_any_block_kind_and_links_to_the_turn(client):
    project = make_project()
    user = make_user(project=project)
    texts = TextSource(thinking=lambda t: f"consider the zanzibar{t} constraint")
    built = build_conversation(project, turns=4, texts=texts, subagent_turn=None)
    hits = search.search(user, "zanzibar3")
    assert len(hits) == 1
    hit = hits[0]
    assert hit.conversation_id == built.conversation.id
    assert hit.turn == 3
    assert hit.match.lower() == "zanzibar3"
    # tool output and tool input are searchable too; the last word matches as a prefix
    assert search.search(user, "test_module_2")
    assert search.search(user, "zanzib")

    client.force_login(user)
    page = client.get(reverse("index"), {"q": "zanzibar3"})
    assert page.status_code == 200
    html = page.content.decode()
    url = reverse("conversation", args=[built.conversation.id])
    assert f"{url}?turn=3#turn-3" in html
    assert "<mark>zanzibar3</mark>" in html


def test_search_is_scoped_to_the_users_projects():
    mine, theirs = make_project("mine"), make_project("theirs")
    alice = make_user("alice", project=mine)
    make_user("bob", project=theirs)
    build_conversation(theirs, turns=2, texts=TextSource(user=lambda t: "secret quokka plans"), subagent_turn=None)
    assert search.search(alice, "quokka") == []


@pytest.mark.parametrize(
    "query",
    ['"', "'", "a AND", "NEAR(", "*", "-x", "col:val", "'; DROP TABLE x; --", "\\", "((", "^", "ü", "日本語", ""],
)
def test_hostile_queries_never_error(query):
    project = make_project()
    user = make_user(project=project)
    build_conversation(project, turns=2, subagent_turn=None)
    assert isinstance(search.search(user, query), list)


def test_index_messages_is_cheap_and_counts_rows():
    project = make_project()
    built = build_conversation(project, turns=1, subagent_turn=None, index_search=False)
    msgs = list(built.conversation.messages.all())
    n = search.index_messages(built.conversation.id, [(m.id, search.text_of_blocks(m.blocks)) for m in msgs] + [(10**9, "")])
    assert n == len([m for m in msgs if search.text_of_blocks(m.blocks).strip()])

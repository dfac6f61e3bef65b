"""Full-text search: FTS5 on SQLite, tsvector on PostgreSQL; hits link to the turn; projects isolate."""

import re
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
    hit_message = hits[0].message_id
    assert f"{url}?q=zanzibar3&amp;turn=3#m-{hit_message}" in html  # opens the turn at the message
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


def test_the_conversation_pages_search_finds_this_conversations_messages_in_order(client):
    project = make_project()
    user = make_user(project=project)
    texts = TextSource(user=lambda t: f"please look at the wombat report {t}" if t % 2 else f"turn {t} plain")
    built = build_conversation(project, turns=8, texts=texts, subagent_turn=None, long_block_turn=None, image_turn=None)
    other = build_conversation(project, turns=3, texts=texts, subagent_turn=None, title="Other")
    client.force_login(user)
    url = reverse("conversation", args=[built.conversation.id])
    page = client.get(url, {"q": "wombat"})
    assert page.status_code == 200
    html = page.content.decode()
    found = page.context["found"]
    turns = [turn for _mid, turn in found.steps]
    assert turns == sorted(turns) and set(turns) == {t for t in range(1, 9) if t % 2}
    mine = set(built.conversation.messages.values_list("id", flat=True))
    assert {mid for mid, _turn in found.steps} <= mine  # the other conversation's hits are not here
    assert other.conversation.messages.exists()
    assert f'action="{url}"' in html  # the box searches this conversation
    assert 'id="conv-hits"' in html and f'data-hits="{found.data}"' in html
    assert "<mark>wombat</mark>" in html
    first_mid, first_turn = found.steps[0]
    assert f'href="?q=wombat&amp;turn={first_turn}#m-{first_mid}"' in html
    assert page.context["page"].focus_turn == first_turn  # the page opens at the first match
    # no match: said so, and the page still works
    none = client.get(url, {"q": "nonexistentword"}).content.decode()
    assert "No message in this conversation matches" in none


def test_the_conversation_search_escapes_the_query(client):
    project = make_project()
    user = make_user(project=project)
    built = build_conversation(project, turns=2, subagent_turn=None)
    client.force_login(user)
    html = client.get(reverse("conversation", args=[built.conversation.id]), {"q": '<script>alert(1)</script>'}).content.decode()
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_index_search_is_paged_and_ordered_newest_first_or_by_rank(client):
    from datetime import timedelta

    project = make_project()
    user = make_user(project=project)
    convs = []
    for i in range(3):
        built = build_conversation(
            project, turns=9, texts=TextSource(user=lambda t: f"the platypus number {t}"), subagent_turn=None,
            long_block_turn=None, image_turn=None, title=f"Conv {i}",
        )
        # conversation i happened i days later
        for m in built.conversation.messages.all():
            m.timestamp = m.timestamp + timedelta(days=i)
            m.save(update_fields=["timestamp"])
        convs.append(built.conversation)
    client.force_login(user)
    first = client.get(reverse("index"), {"q": "platypus"})
    hits = first.context["hits"]
    assert hits.order == "date" and len(hits.hits) == search.PER_PAGE and hits.has_next
    stamps = [h.timestamp for h in hits.hits]
    assert stamps == sorted(stamps, reverse=True)
    assert hits.hits[0].conversation_id == convs[2].id  # newest first
    html = first.content.decode()
    assert "Order: <strong>newest first</strong>" in html
    assert "order=rank" in html and 'rel="next"' in html and "hits=2" in html
    n = search.PER_PAGE
    assert f"<h2>Messages 1–{n} of more than {n} matching “platypus”</h2>" in html  # issue 22: was "1–1 and more"
    second = client.get(reverse("index"), {"q": "platypus", "hits": "2"}).context["hits"]
    assert second.number == 2 and second.has_previous
    assert not {h.message_id for h in second.hits} & {h.message_id for h in hits.hits}
    assert [h.timestamp for h in second.hits] == sorted([h.timestamp for h in second.hits], reverse=True)
    assert second.hits[0].timestamp <= stamps[-1]
    everything = {h.message_id for p in range(1, 6) for h in search.hit_page(user, "platypus", p).hits}
    assert len(everything) == 27  # 9 user messages in each of 3 conversations, none lost or repeated
    last_page = -(-27 // n)
    html = client.get(reverse("index"), {"q": "platypus", "hits": str(last_page)}).content.decode()
    assert f"<h2>Messages {(last_page - 1) * n + 1}–27 of 27 matching" in html or "<h2>Message 27 of 27 matching" in html
    one = client.get(reverse("index"), {"q": "platypus number 4"}).content.decode()
    assert re.search(r"<h2>\d+ messages? matching", one) or "of more than" in one
    ranked = client.get(reverse("index"), {"q": "platypus", "order": "rank"})
    assert ranked.context["hits"].order == "rank"
    assert "Order: <strong>best match first</strong>" in ranked.content.decode()
    # nonsense paging falls back to the first page
    assert client.get(reverse("index"), {"q": "platypus", "hits": "x", "order": "zzz"}).context["hits"].number == 1

"""The read API (issue 22, item 8): conversations (filters, pages), one conversation with its folds,
its turns and messages (pages), search, a fold's probes (blind review hides them as the pages do),
policy replays; every answer checked against the schema /api/openapi.json declares for it; a token
reads only its own project; reads and exports through a token are audited `via: token`.

Expected figures come from the database rows the factory wrote (ORM counts, the Fold and ModelCall
rows), never from the API's own output."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import jsonschema
import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from contextviewer.accounts import services
from contextviewer.accounts.models import AuditEvent, Role
from contextviewer.builds import services as builds
from contextviewer.conversations.models import Conversation, Fold, Message, ModelCall
from contextviewer.lab import table as policy_table
from contextviewer.lab.models import PolicyReplay
from contextviewer.review import queues as review_queues
from tests.factories import TextSource, build_conversation, make_project

pytestmark = pytest.mark.django_db

ALPHA_WORD = "aardvarkish"  # only in project A's messages
BRAVO_WORD = "zebraesque"  # only in project B's messages


def _user(name, *memberships):
    user = get_user_model().objects.create_user(name)
    for project, role in memberships:
        user.memberships.create(project=project, role=role)
    return user


@pytest.fixture
def world():
    a, b = make_project("alpha", name="Alpha"), make_project("bravo", name="Bravo")
    owner = _user("olga", (a, Role.OWNER))
    annotator = _user("anna", (a, Role.ANNOTATOR))
    dual = _user("dora", (a, Role.OWNER), (b, Role.OWNER))  # member of both; her token is for B
    outsider = _user("otto", (b, Role.OWNER))
    texts = TextSource(user=lambda t: f"{ALPHA_WORD} turn {t}: fix module_{t}.py", title="alpha main")
    main = build_conversation(a, turns=8, fold_at=40_000, per_turn_tokens=9_000, texts=texts)
    assert main.folds and main.child is not None
    codex = build_conversation(a, turns=2, subagent_turn=None, title="alpha codex", model="gpt-4o-2024-08-06")
    Conversation.objects.filter(pk=codex.conversation.pk).update(
        agent="codex", started_at=datetime(2026, 3, 1, 10, tzinfo=UTC), ended_at=datetime(2026, 3, 2, 10, tzinfo=UTC))
    extra = [build_conversation(a, turns=1, subagent_turn=None, image_turn=None, long_block_turn=None, title=f"alpha {i}").conversation
             for i in range(3)]
    bravo = build_conversation(b, turns=2, subagent_turn=None, texts=TextSource(user=lambda t: f"{BRAVO_WORD} {t}", title="bravo one"))
    tokens = {
        "owner": services.create_token(owner, a, "cli")[1],
        "annotator": services.create_token(annotator, a, "cli")[1],
        "dual_b": services.create_token(dual, b, "b only")[1],
        "outsider": services.create_token(outsider, b, "cli")[1],
    }
    return {"a": a, "b": b, "owner": owner, "annotator": annotator, "dual": dual, "outsider": outsider,
            "main": main, "codex": codex.conversation, "extra": extra, "bravo": bravo.conversation, "tokens": tokens}


def _get(client, url, token=None, **params):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return client.get(url, params, headers=headers)


def _as(world, who):
    """A client and the bearer token of `who`."""
    return Client(), world["tokens"][who]


# --- the contract: each answer against its declared schema ----------------------------------------


@pytest.fixture
def openapi(client):
    r = client.get("/api/openapi.json")
    assert r.status_code == 200
    return r.json()


def check_contract(openapi, path: str, response, method: str = "get"):
    """The answer's body validates against the schema the OpenAPI document declares for its status."""
    declared = openapi["paths"][path][method]["responses"]
    assert str(response.status_code) in declared, f"{path} answered {response.status_code}, not declared ({sorted(declared)})"
    schema = declared[str(response.status_code)]["content"]["application/json"]["schema"]
    root = {**schema, "components": openapi["components"]}
    jsonschema.Draft202012Validator(root).validate(response.json())
    return response.json()


def test_every_read_operation_answers_as_its_schema_declares(world, openapi):
    client, token = _as(world, "owner")
    conv, fold = world["main"].conversation, world["main"].folds[0]
    PolicyReplay.objects.create(project=world["a"], conversation=conv, policy="recorded", revision="x", computed_at=timezone.now())
    base = "/api/conversations/{conversation_id}"
    cases = [
        ("/api/conversations", "/api/conversations", {}),
        ("/api/conversations", "/api/conversations", {"subagents": "true", "limit": "2"}),
        (base, f"/api/conversations/{conv.pk}", {}),
        (base + "/turns", f"/api/conversations/{conv.pk}/turns", {}),
        (base + "/messages", f"/api/conversations/{conv.pk}/messages", {"limit": "30"}),
        (base + "/messages", f"/api/conversations/{conv.pk}/messages", {"turn": "2"}),
        ("/api/search", "/api/search", {"q": ALPHA_WORD}),
        (base + "/folds/{fold_id}/probes", f"/api/conversations/{conv.pk}/folds/{fold.pk}/probes", {}),
        (base + "/policies", f"/api/conversations/{conv.pk}/policies", {}),
        (base + "/calls/{call}/window", f"/api/conversations/{conv.pk}/calls/last/window", {}),
        (base + "/calls/{call}/window", f"/api/conversations/{conv.pk}/calls/1/window", {}),
    ]
    for path, url, params in cases:
        r = _get(client, url, token, **params)
        assert r.status_code == 200, (url, r.content[:300])
        body = check_contract(openapi, path, r)
        assert body, url
    # Refusals and bad input answer as declared too.
    check_contract(openapi, base, _get(client, f"/api/conversations/{world['bravo'].pk}", token))
    check_contract(openapi, "/api/conversations", _get(client, "/api/conversations", token, started_from="yesterday"))
    # The schema says what a client may rely on: the required fields of a listed conversation.
    item = openapi["components"]["schemas"]["ConversationItem"]
    assert {"id", "title", "agent", "models", "counts", "peak_context", "peak_estimated", "created_at", "parent_id",
            "children"} <= set(item["required"])


def test_the_docs_list_the_read_operations(client, openapi):
    assert client.get("/api/docs").status_code == 200
    for path in ("/api/conversations", "/api/conversations/{conversation_id}", "/api/conversations/{conversation_id}/turns",
                 "/api/conversations/{conversation_id}/messages", "/api/search",
                 "/api/conversations/{conversation_id}/folds/{fold_id}/probes", "/api/conversations/{conversation_id}/policies"):
        assert "get" in openapi["paths"][path], path
        assert openapi["paths"][path]["get"].get("security"), path
    # Deleting a conversation is still routed on the same path.
    assert "delete" in openapi["paths"]["/api/conversations/{conversation_id}"]


# --- a conversation, its folds, turns and messages -------------------------------------------------


def test_a_conversation_with_its_folds_counts_and_subagents(world):
    client, token = _as(world, "owner")
    conv, child = world["main"].conversation, world["main"].child
    body = _get(client, f"/api/conversations/{conv.pk}", token).json()
    assert body["id"] == conv.pk and body["title"] == "alpha main" and body["agent"] == "claude-code"
    assert body["counts"] == {"messages": Message.objects.filter(conversation=conv).count(),
                              "model_calls": ModelCall.objects.filter(conversation=conv).count(),
                              "tool_calls": conv.tool_call_count, "folds": Fold.objects.filter(conversation=conv).count(),
                              "measured_calls": sum(1 for c in ModelCall.objects.filter(conversation=conv) if c.context_size)}
    assert body["peak_estimated"] is False and body["peak_context"] == conv.peak_context > 0
    assert body["children"] == [child.pk] and body["parent_id"] is None
    stored = list(Fold.objects.filter(conversation=conv).order_by("position"))
    assert len(body["folds"]) == len(stored) >= 1
    for number, (got, fold) in enumerate(zip(body["folds"], stored, strict=True), start=1):
        assert got["id"] == fold.pk and got["number"] == number and got["position"] == fold.position
        assert (got["kind"], got["origin"], got["trigger"]) == (fold.kind, fold.origin, fold.trigger)
        assert (got["tokens_before"], got["tokens_after"]) == (fold.tokens_before, fold.tokens_after)
        assert got["summary"] == fold.summary_text and got["summary"].startswith("## Summary")
        assert got["cost"] == fold.cost
    # The sub-agent names its parent.
    assert _get(client, f"/api/conversations/{child.pk}", token).json()["parent_id"] == conv.pk


def test_deleting_still_works_on_the_same_path(world):
    client, token = _as(world, "owner")
    conv = world["extra"][0]
    r = client.delete(f"/api/conversations/{conv.pk}", headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 200, r.content[:300]
    assert not Conversation.objects.filter(pk=conv.pk).exists()
    assert _get(client, f"/api/conversations/{conv.pk}", token).status_code == 404


def test_messages_page_through_the_whole_conversation_with_blocks_and_usage(world):
    client, token = _as(world, "owner")
    conv = world["main"].conversation
    seen, cursor, pages = [], None, 0
    while True:
        params = {"limit": "7"} | ({"from_position": str(cursor)} if cursor is not None else {})
        body = _get(client, f"/api/conversations/{conv.pk}/messages", token, **params).json()
        assert len(body["items"]) <= 7
        seen += body["items"]
        pages += 1
        cursor = body["next_from_position"]
        if cursor is None:
            break
    stored = list(Message.objects.filter(conversation=conv).order_by("position"))
    assert pages > 1
    assert [m["id"] for m in seen] == [m.pk for m in stored]  # every message once, in order
    by_id = {m.pk: m for m in stored}
    calls = {c.position: c for c in ModelCall.objects.filter(conversation=conv)}
    assert calls
    for got in seen:
        m = by_id[got["id"]]
        assert (got["role"], got["position"], got["turn"], got["blocks"], got["tokens"]) == (m.role, m.position, m.turn, m.blocks, m.tokens)
        call = calls.get(m.position)
        if call is None:
            assert got["usage"] is None
        else:
            assert got["usage"]["output"] == call.output and got["usage"]["cache_read"] == call.cache_read
            assert got["usage"]["context"] == call.input_uncached + call.cache_write + call.cache_read


def test_messages_of_one_turn(world):
    client, token = _as(world, "owner")
    conv = world["main"].conversation
    body = _get(client, f"/api/conversations/{conv.pk}/messages", token, turn="3").json()
    expected = list(Message.objects.filter(conversation=conv, turn=3).order_by("position").values_list("pk", flat=True))
    assert expected and [m["id"] for m in body["items"]] == expected
    assert body["next_from_position"] is None


def test_turns_page_through_every_turn(world):
    client, token = _as(world, "owner")
    conv = build_conversation(world["a"], turns=60, subagent_turn=None, fold_at=10**9).conversation
    seen, cursor = [], None
    while True:
        body = _get(client, f"/api/conversations/{conv.pk}/turns", token,
                    **({"from_turn": str(cursor)} if cursor is not None else {})).json()
        seen += body["items"]
        cursor = body["next_from_turn"]
        if cursor is None:
            break
    turns = sorted(set(Message.objects.filter(conversation=conv).values_list("turn", flat=True)))
    assert [t["turn"] for t in seen] == turns and len(turns) == 60
    for t in seen:
        assert t["messages"] == Message.objects.filter(conversation=conv, turn=t["turn"]).count()


def test_bad_paging_input_gets_a_clear_message(world):
    client, token = _as(world, "owner")
    conv = world["main"].conversation
    r = _get(client, f"/api/conversations/{conv.pk}/messages", token, limit="100000")
    assert r.status_code == 400 and "limit" in r.json()["detail"]
    r = _get(client, "/api/conversations", token, limit="0")
    assert r.status_code == 400 and "limit" in r.json()["detail"]
    r = _get(client, "/api/conversations", token, updated_to="31/01/2026")
    assert r.status_code == 400 and "updated_to" in r.json()["detail"]
    r = _get(client, "/api/search", token, q="x", order="sideways")
    assert r.status_code == 400 and "order" in r.json()["detail"]


# --- the list: pages and filters -------------------------------------------------------------------


def _all_ids(client, token, **params) -> list[int]:
    ids, offset = [], 0
    while offset is not None:
        body = _get(client, "/api/conversations", token, limit="2", offset=str(offset), **params).json()
        assert len(body["items"]) <= 2
        ids += [c["id"] for c in body["items"]]
        offset = body["next_offset"]
    return ids


def test_two_pages_add_up_to_the_whole_list(world):
    client, token = _as(world, "owner")
    whole = _get(client, "/api/conversations", token, limit="200").json()
    top_level = set(Conversation.objects.filter(project=world["a"], parent__isnull=True).values_list("pk", flat=True))
    assert {c["id"] for c in whole["items"]} == top_level and whole["count"] == len(top_level) == 5  # main, codex and three more
    paged = _all_ids(client, token)
    assert len(paged) == len(set(paged)) == len(top_level)  # no duplicates, nothing missing
    assert paged == [c["id"] for c in whole["items"]]
    first = _get(client, "/api/conversations", token, limit="3").json()
    second = _get(client, "/api/conversations", token, limit="3", offset="3").json()
    assert [c["id"] for c in first["items"] + second["items"]] == paged
    assert first["next_offset"] == 3 and second["next_offset"] is None


def test_the_list_carries_counts_and_subagents_without_a_query_per_row(world):
    client, token = _as(world, "owner")
    with CaptureQueriesContext(connection) as one_row:
        _get(client, "/api/conversations", token, limit="1", offset="1", subagents="true")
    with CaptureQueriesContext(connection) as every_row:
        body = _get(client, "/api/conversations", token, limit="200", subagents="true").json()
    assert len(body["items"]) == 6 and len(every_row) <= len(one_row)  # the same queries for 1 row or 6
    by_id = {c["id"]: c for c in body["items"]}
    main, child = world["main"].conversation, world["main"].child
    assert by_id[main.pk]["children"] == [child.pk] and by_id[child.pk]["parent_id"] == main.pk
    assert by_id[main.pk]["counts"]["messages"] == Message.objects.filter(conversation=main).count()
    assert by_id[main.pk]["peak_context"] == max(c.context_size for c in ModelCall.objects.filter(conversation=main))
    assert by_id[main.pk]["models"] == main.model_names


def test_filters(world):
    client, token = _as(world, "owner")
    codex = world["codex"]

    def ids(**params):
        return {c["id"] for c in _get(client, "/api/conversations", token, limit="200", **params).json()["items"]}

    assert ids(agent="codex") == {codex.pk}
    assert ids(model="gpt-4o") == {codex.pk}
    assert codex.pk not in ids(model="claude-sonnet") and world["main"].conversation.pk in ids(model="claude-sonnet")
    assert ids(started_from="2026-02-01") == {codex.pk}
    assert codex.pk not in ids(started_to="2026-02-01")
    assert ids(updated_from="2026-03-02", updated_to="2026-03-02") == {codex.pk}  # the whole day
    assert ids(updated_from="2026-03-02T10:00:01Z") == set()
    today = timezone.now().date().isoformat()
    assert len(ids(created_from=today)) == 5 and ids(created_to="2020-01-01") == set()
    assert ids(project="alpha") == ids() and ids(project="bravo") == set()


# --- who sees what -----------------------------------------------------------------------------------


def test_a_token_reads_only_its_own_project(world):
    a_ids = set(Conversation.objects.filter(project=world["a"]).values_list("pk", flat=True))
    conv, fold = world["main"].conversation, world["main"].folds[0]
    for who in ("outsider", "dual_b"):  # dual is an owner of A, but her token is for B
        client, token = _as(world, who)
        for url in (f"/api/conversations/{conv.pk}", f"/api/conversations/{conv.pk}/turns",
                    f"/api/conversations/{conv.pk}/messages", f"/api/conversations/{conv.pk}/folds/{fold.pk}/probes",
                    f"/api/conversations/{conv.pk}/policies"):
            r = _get(client, url, token)
            assert r.status_code in (403, 404), (who, url, r.status_code)
            assert ALPHA_WORD not in r.content.decode()
        listed = {c["id"] for c in _get(client, "/api/conversations", token, limit="200", subagents="true").json()["items"]}
        assert listed == set(Conversation.objects.filter(project=world["b"]).values_list("pk", flat=True))
        assert not listed & a_ids
        assert _get(client, "/api/conversations", token, project="alpha").json()["items"] == []
        assert _get(client, "/api/search", token, q=ALPHA_WORD).json()["items"] == []
        hits = _get(client, "/api/search", token, q=BRAVO_WORD).json()["items"]
        assert hits and {h["conversation_id"] for h in hits} == {world["bravo"].pk}
    # The same user signed in (a session) reads both projects.
    session = Client()
    session.force_login(world["dual"])
    assert _get(session, "/api/search", q=ALPHA_WORD).json()["items"]
    listed = {c["id"] for c in _get(session, "/api/conversations", limit="200").json()["items"]}
    assert world["bravo"].pk in listed and conv.pk in listed


def test_anonymous_gets_401(world):
    assert Client().get("/api/conversations").status_code == 401
    assert Client().get(f"/api/conversations/{world['main'].conversation.pk}").status_code == 401


# --- search ------------------------------------------------------------------------------------------


def test_search_pages_add_up(world):
    client, token = _as(world, "owner")
    conv = world["main"].conversation
    expected = set(Message.objects.filter(conversation=conv, blocks__icontains=ALPHA_WORD).values_list("pk", flat=True))
    assert len(expected) == 8  # one user message per turn
    whole = _get(client, "/api/search", token, q=ALPHA_WORD, limit="200").json()
    assert {h["message_id"] for h in whole["items"]} == expected and whole["next_offset"] is None
    seen, offset = [], 0
    while offset is not None:
        body = _get(client, "/api/search", token, q=ALPHA_WORD, limit="3", offset=str(offset)).json()
        seen += [h["message_id"] for h in body["items"]]
        offset = body["next_offset"]
    assert len(seen) == len(set(seen)) == len(expected) and set(seen) == expected
    hit = whole["items"][0]
    assert hit["match"].lower() == ALPHA_WORD and hit["conversation_id"] == conv.pk
    assert _get(client, "/api/search", token).json()["items"] == []  # no query, no hits


# --- probes and policies --------------------------------------------------------------------------------


def test_probes_are_hidden_while_a_blind_review_waits_for_the_callers_score(world):
    conv, fold = world["main"].conversation, world["main"].folds[0]
    review_queues.create_queue(world["a"], "blind", {}, user=world["owner"], reviewers=[world["annotator"]], blind=True)
    assert review_queues.hides_fold(world["annotator"], fold)  # the rule the fold's pages apply
    url = f"/api/conversations/{conv.pk}/folds/{fold.pk}/probes"
    client, token = _as(world, "annotator")
    hidden = _get(client, url, token).json()
    assert hidden["hidden"] is True and hidden["retention"] is None and hidden["per_kind"] == {}
    assert all("kept" not in f for f in hidden["facts"])
    client, token = _as(world, "owner")  # not a reviewer of the blind queue
    assert review_queues.hides_fold(world["owner"], fold) is False
    shown = _get(client, url, token).json()
    assert shown["hidden"] is False and shown["retention"] is not None and shown["fold_id"] == fold.pk
    assert shown["facts"] and all("kept" in f for f in shown["facts"])  # what the annotator was not shown
    # A fold of another conversation is not found under this one.
    other = world["codex"]
    assert _get(client, f"/api/conversations/{other.pk}/folds/{fold.pk}/probes", token).status_code == 404


def test_policies_are_the_stored_replays(world):
    client, token = _as(world, "owner")
    conv = world["main"].conversation
    assert _get(client, f"/api/conversations/{conv.pk}/policies", token).json() == []
    now = timezone.now()
    PolicyReplay.objects.create(project=world["a"], conversation=conv, policy="fold-at-80", revision="old", calls=16, peak=90_000,
                                recorded_peak=120_000, folds=2, tokens_saved=5_000, computed_at=now)
    PolicyReplay.objects.create(project=world["a"], conversation=conv, policy="recorded", revision=policy_table.revision_of(conv),
                                calls=16, peak=120_000, recorded_peak=120_000, computed_at=now + timedelta(seconds=1))
    rows = _get(client, f"/api/conversations/{conv.pk}/policies", token).json()
    assert [(r["policy"], r["up_to_date"]) for r in rows] == [("recorded", True), ("fold-at-80", False)]
    assert rows[1]["peak"] == 90_000 and rows[1]["tokens_saved"] == 5_000 and rows[1]["folds"] == 2


# --- audit -------------------------------------------------------------------------------------------------


def _new_events(before):
    return list(AuditEvent.objects.exclude(pk__in=before))


def test_exports_are_audited_with_how_they_came(world):
    conv = world["main"].conversation
    url = f"/api/conversations/{conv.pk}/export"
    before = set(AuditEvent.objects.values_list("pk", flat=True))
    client, token = _as(world, "owner")
    assert _get(client, url, token, format="markdown").status_code == 200
    session = Client()
    session.force_login(world["owner"])
    assert session.get(url, {"format": "markdown"}).status_code == 200
    builds.export(conv, "markdown", actor=None)  # the command line
    events = sorted((e for e in _new_events(before) if e.action == "export.conversation"), key=lambda e: e.pk)
    assert [e.details["via"] for e in events] == ["token", "web", "command"]
    assert events[0].actor == world["owner"] and token not in str(events[0].details)


def test_reads_through_a_token_are_audited(world):
    conv = world["main"].conversation
    before = set(AuditEvent.objects.values_list("pk", flat=True))
    client, token = _as(world, "owner")
    assert _get(client, f"/api/conversations/{conv.pk}/messages", token).status_code == 200
    assert _get(client, "/api/search", token, q=ALPHA_WORD).status_code == 200
    events = _new_events(before)
    assert {e.action for e in events} == {"read.messages", "read.search"}
    for e in events:
        assert e.details["via"] == "token" and e.actor == world["owner"] and e.project == world["a"]
        assert token not in str(e.details) + e.target
    # A session's reads are not audited (as its pages are not).
    session = Client()
    session.force_login(world["owner"])
    before = set(AuditEvent.objects.values_list("pk", flat=True))
    assert session.get(f"/api/conversations/{conv.pk}/messages").status_code == 200
    assert _new_events(before) == []

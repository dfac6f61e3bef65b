"""The access matrix: every page and every API operation, against every kind of caller.

Callers: the five roles of project A (owner, admin, member, annotator, viewer), an outsider (owner
of project B only), an anonymous visitor, and an API token for project B held by a user who is
also an OWNER of A (so a token that leaks across projects is caught, not just a user who does).

The URL patterns and the API operations are enumerated at collection time, so pages and
operations added later are covered without editing this file. Path parameters are filled with
project A's objects through PARAMS; an unknown parameter name fails loudly: add it there.

What must hold, for each URL and operation:
- anonymous: pages redirect to the login page, the API answers 401; a bearer token does not log
  anyone in to a page;
- outsider and project-B token: 403/404 for anything addressing A's objects; elsewhere never a
  page or answer carrying A's data; no write changes any of A's rows;
- roles: the writes in PAGE_WRITES / API_WRITES succeed for exactly the roles whose permission
  allows them and are refused (403/404) for the others, changing nothing; a viewer's POST to any
  page or write operation not listed is refused; the owner can read every page that addresses A.
"""

from __future__ import annotations

import json
import re
from urllib.parse import urlencode
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import models, transaction
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from contextviewer.accounts import services
from contextviewer.accounts.models import ROLE_PERMISSIONS, Invitation, Project, Role
from contextviewer.api import api
from contextviewer.jobs import queue as jobs
from contextviewer.conversations.models import Fold
from tests.factories import TextSource, build_conversation, make_project
from tests.sessions import SessionBuilder, session_lines

pytestmark = pytest.mark.django_db

ROLES = [Role.OWNER, Role.ADMIN, Role.MEMBER, Role.ANNOTATOR, Role.VIEWER]
# Strings that exist only in project A's data: a response to an outsider must contain none of them.
A_MARKERS = ["Aardvark Alpha", "alpha-zq", "zq-secret-title", "zq-secret-marker"]
LOGIN_URL = "/login/"
OUTSIDE = ("anonymous", "b_token", "outsider")
# Pages reachable by everyone by design (they show no project data).
PUBLIC = {
    "login", "logout",
    "invitation_join",  # a signed link (test_accounts.py)
    # Asking for a reset link, and using it (test_password_flows.py).
    "password_reset", "password_reset_done", "password_reset_confirm", "password_reset_complete",
    "push_script",  # /push.py: the push client's code, no data (test_push.py)
}


# --- the world: two projects, A's objects, one caller of each kind ------------------------------


@dataclass
class World:
    a: Project
    b: Project
    users: dict[str, Any]
    memberships: dict[str, Any]
    objects: dict[str, Any]
    secrets: dict[str, str] = field(default_factory=dict)


def _user(username: str, project: Project | None = None, role: str = Role.MEMBER):
    # No password: hashing one costs a third of a second, and these callers sign in by force_login.
    user = get_user_model().objects.create_user(username)
    if project is not None:
        user.memberships.create(project=project, role=role)
    return user


def build_world() -> World:
    a = make_project("alpha-zq", name="Aardvark Alpha")
    b = make_project("beta-zq", name="Bravo Beta")
    users, memberships = {}, {}
    for role in ROLES:
        users[role] = _user(f"zq-{role}", a, role)
        memberships[role] = users[role].memberships.get(project=a)
    users["outsider"] = _user("zq-outsider", b, Role.OWNER)
    # Owner of A AND of B; holds a token for B only.
    users["dual"] = _user("zq-dual", a, Role.OWNER)
    users["dual"].memberships.create(project=b, role=Role.OWNER)
    users["newbie"] = _user("zq-newbie")
    users["invitee"] = _user("zq-invitee")

    texts = TextSource(
        title="zq-secret-title",
        user=lambda t: f"zq-secret-marker turn {t}: fix module_{t}.py",
        summary=lambda k: f"## zq-secret-marker summary {k}\nGoal: keep tests green.",
    )
    built = build_conversation(a, turns=8, fold_at=30_000, per_turn_tokens=9_000, texts=texts)
    assert built.folds, "the world needs a fold in A"
    conv, fold = built.conversation, built.folds[0]
    job, _ = jobs.create_job(a, "import", {"uploads": []}, user=users[Role.OWNER])
    handoff_job, _ = jobs.create_job(a, "handoff", {"conversation_id": conv.pk}, user=users[Role.OWNER])
    # A second summary of the first fold's segment (a handoff made here), for pairwise review.
    other_fold = Fold.objects.create(
        conversation=conv, key="zq-handoff", position=fold.position, summary_text="zq-secret-marker handoff summary",
        kind="handoff", origin="generated",
    )
    invitation = Invitation.objects.create(project=a, user=users["invitee"], role=Role.MEMBER, invited_by=users[Role.OWNER])
    owner_token, _ = services.create_token(users[Role.OWNER], a, "owner's token")
    # B's objects exist too, so "B's view" is not merely empty.
    build_conversation(b, turns=2, title="bravo conversation")

    world = World(a=a, b=b, users=users, memberships=memberships, objects={
        "conversation": conv, "fold": fold, "other_fold": other_fold, "job": job, "handoff_job": handoff_job,
        "long_message": built.long_message, "image_message": built.image_message,
        "invitation": invitation, "token": owner_token,
    })
    _review_objects(world)
    for role in ROLES:
        _, world.secrets[role] = services.create_token(users[role], a, f"{role} token")
    _, world.secrets["b_token"] = services.create_token(users["dual"], b, "dual's B token")
    return world


def _review_objects(world: World) -> None:
    """A review queue over A's folds (the review app's queues and items)."""
    from contextviewer.review import queues

    queues.score_config(world.a)  # made on first use; made here so that a refused write finds it made
    queue = queues.create_queue(world.a, "zq queue", {}, user=world.users[Role.OWNER])
    world.objects["queue"] = queue
    world.objects["item"] = queue.items.order_by("order").first()


# Path parameter name -> A's object (or value). Override per URL name in PARAM_OVERRIDES.
PARAMS: dict[str, Callable[[World], Any]] = {
    "pk": lambda w: w.objects["conversation"].pk,  # the viewer's c/<pk>/ routes
    "conversation_id": lambda w: w.objects["conversation"].pk,
    "fold_id": lambda w: w.objects["fold"].pk,
    "job_id": lambda w: w.objects["job"].pk,
    "message_id": lambda w: w.objects["long_message"].pk,
    "index": lambda w: 0,
    "turn": lambda w: 1,
    "call": lambda w: 1,  # a model call of the conversation, from 1 (call_window)
    "project": lambda w: w.a.slug,
    "slug": lambda w: w.a.slug,
    "project_slug": lambda w: w.a.slug,
    "membership_id": lambda w: w.memberships[Role.MEMBER].pk,
    "invitation_id": lambda w: w.objects["invitation"].pk,
    "token_id": lambda w: w.objects["token"].pk,
    "answer": lambda w: "accept",
    "other_id": lambda w: w.objects["other_fold"].pk,  # review_pairwise: a second summary of the same segment
    "queue_id": lambda w: w.objects["queue"].pk,
    "item_id": lambda w: w.objects["item"].pk,
    "fmt": lambda w: "claude-code",  # an export format
    "provider": lambda w: "openai",  # a provider kind
}
PARAM_OVERRIDES: dict[tuple[str, str], Callable[[World], Any]] = {
    ("image", "message_id"): lambda w: w.objects["image_message"].pk,
    ("handoff_status", "job_id"): lambda w: w.objects["handoff_job"].pk,
}


def fill(world: World, name: str, params: list[str]) -> dict[str, Any]:
    out = {}
    for param in params:
        getter = PARAM_OVERRIDES.get((name, param)) or PARAMS.get(param)
        if getter is None:
            pytest.fail(
                f"URL {name!r} has a path parameter {param!r} that the access matrix does not know: add it to "
                f"PARAMS (or PARAM_OVERRIDES) in {__file__} with one of project A's objects"
            )
        out[param] = getter(world)
    return out


# --- what each write needs ------------------------------------------------------------------------


def _session_file() -> SimpleUploadedFile:
    lines = session_lines(2, SessionBuilder(session_id="99999999-2222-4333-8444-555555555555"))
    return SimpleUploadedFile("s.jsonl", ("\n".join(lines) + "\n").encode(), content_type="application/jsonl")


@dataclass
class Write:
    permission: str | None  # a ROLE_PERMISSIONS name; None: any signed-in user; "nobody": refused to all
    data: Callable[[World], dict] = lambda w: {}
    ok: tuple[int, ...] = (200, 201, 202, 204, 302)
    # False for the guessed writes of default_write(): with no valid input, only refusals are checked.
    check_success: bool = True


# Page writes by URL name (POST).
PAGE_WRITES: dict[str, Write] = {
    "upload": Write("import", lambda w: {"project": w.a.slug, "files": _session_file()}),
    "job_cancel": Write("import"),
    "job_retry": Write("import"),
    "projects": Write(None, lambda w: {"name": "A new project"}),
    "invitation_answer": Write("nobody"),  # only the invitee (zq-invitee, not a caller here) may answer
    "member_invite": Write("manage_members", lambda w: {"who": "zq-newbie", "role": "member"}),
    "member_role": Write("manage_members", lambda w: {"role": "annotator"}),
    "member_remove": Write("manage_members"),
    "invitation_cancel": Write("manage_members"),
    "project_tokens": Write("view", lambda w: {"name": "ci", "lifetime": "30"}),
    "token_revoke": Write("manage_members"),  # the owner's token: its owner, or a manager
    # Review (issue 5): annotators score and comment; score settings are settings.
    "review_item": Write("score", lambda w: {"fidelity": "4", "lost_detail": "no", "comment": "zq"}),
    "review_pairwise": Write("score", lambda w: {"choice": "a"}),
    "review_comment": Write("score", lambda w: {"text": "zq comment"}),
    "review_settings": Write("settings", lambda w: {"fields": json.dumps(SCORE_FIELDS)}),
    # Builds and providers (issue 4).
    "build_create": Write("edit", lambda w: {"turns": "1"}),
    "provider_settings": Write("settings", lambda w: {"provider": "openai", "model": "gpt-4o-mini"}),
    "conversation_delete": Write("delete", lambda w: {"confirm": "yes"}),  # issue 10: owners and admins
}
# Pages whose reading needs more than "view".
PAGE_READS: dict[str, str] = {"upload": "import", "project_audit": "manage_members", "review_queue_next": "score", "conversation_delete": "delete"}
SCORE_FIELDS = [
    {"key": "fidelity", "label": "Fidelity", "type": "scale", "min": 1, "max": 5},
    {"key": "lost_detail", "label": "Lost a load-bearing detail", "type": "bool"},
]

# API writes by (method, path as in the OpenAPI schema).
API_WRITES: dict[tuple[str, str], Write] = {
    ("POST", "/api/imports"): Write("import", lambda w: {"project": w.a.slug, "files": _session_file()}),
    ("POST", "/api/jobs/{job_id}/cancel"): Write("import"),
    ("POST", "/api/projects/{project}/invitations"): Write("manage_members", lambda w: {"json": {"who": "zq-newbie", "role": "member"}}),
    ("PATCH", "/api/projects/{project}/members/{membership_id}"): Write("manage_members", lambda w: {"json": {"role": "annotator"}}),
    ("DELETE", "/api/projects/{project}/members/{membership_id}"): Write("manage_members"),
    ("POST", "/api/review/items/{item_id}/reviews"): Write("score", lambda w: {"json": {"scores": {"fidelity": 3, "lost_detail": "yes", "comment": ""}}}),
    ("POST", "/api/review/folds/{fold_id}/comments"): Write("score", lambda w: {"json": {"text": "zq comment"}}),
    ("POST", "/api/review/folds/{fold_id}/summarize-again"): Write("edit", lambda w: {"json": {"provider": "builtin"}}),
    ("PUT", "/api/review/projects/{slug}/score-config"): Write("settings", lambda w: {"json": {"fields": SCORE_FIELDS}}),
    ("POST", "/api/conversations/{conversation_id}/builds"): Write("edit", lambda w: {"json": {"turns": [1]}}),
    ("POST", "/api/conversations/{conversation_id}/handoff"): Write("edit", lambda w: {"json": {"provider": "builtin"}}),
    ("PUT", "/api/projects/{slug}/providers/{provider}"): Write("settings", lambda w: {"json": {"model": "gpt-4o-mini"}}),
    ("DELETE", "/api/conversations/{conversation_id}"): Write("delete"),
    ("PUT", "/api/push/files"): Write("import"),
}
API_READS: dict[tuple[str, str], str] = {("GET", "/api/projects/{project}/audit"): "manage_members",
                                         ("GET", "/api/push/files"): "import", ("GET", "/api/push/config"): "import"}


def default_write(name: str) -> Write | None:
    """Writes added by others and not listed yet: settings and deletions need their permission."""
    if "settings" in name or "provider" in name:
        return Write("settings", check_success=False)
    if "delete" in name:
        return Write("delete", check_success=False)
    return None


def allowed(permission: str | None, role: str) -> bool:
    if permission is None:
        return True
    return permission in ROLE_PERMISSIONS[role]


# --- A's rows, to prove a refused write changed nothing -----------------------------------------


def _path_to_project(model, depth: int = 3) -> str | None:
    """The shortest lookup from `model` to its project through foreign keys (up to `depth` hops)."""
    if model is Project:
        return "pk"
    level = [("", model)]
    for _ in range(depth):
        nxt = []
        for prefix, m in level:
            for f in m._meta.get_fields():
                if isinstance(f, models.ForeignKey) and f.related_model is not None:
                    path = f"{prefix}{f.name}"
                    if f.related_model is Project:
                        return path
                    nxt.append((path + "__", f.related_model))
        level = nxt
    return None


def a_rows(world: World) -> dict[str, list]:
    out = {}
    for model in apps.get_models():
        path = _path_to_project(model)
        if path is None:
            continue
        rows = list(model.objects.filter(**{path: world.a.pk}).order_by("pk").values())
        for row in rows:
            row.pop("last_used_at", None)  # using a token is not a write
        out[model._meta.label] = rows
    return out


def attempt(world: World, request: Callable[[], Any], compare: bool = True) -> tuple[Any, bool]:
    """Send a request in a savepoint that is rolled back; return (response, whether A changed)."""
    before = a_rows(world) if compare else None
    with transaction.atomic():
        response = request()
        changed = compare and a_rows(world) != before
        transaction.set_rollback(True)
    return response, changed


INVALID = (400, 422)


def refused(status: int, reference: int) -> bool:
    """403/404, or a rejection of the input when the owner's identical request was rejected the same
    way (only for requests that address no object of A; for those that do, the tests insist on
    valid input, since a rejected input can hide a leak behind it)."""
    return status in (403, 404) or (status in INVALID and reference in INVALID)


def leaks(response) -> list[str]:
    body = response.content.decode("utf-8", "replace")
    return [m for m in A_MARKERS if m in body]


def is_login_redirect(response) -> bool:
    return response.status_code == 302 and response["Location"].startswith(LOGIN_URL)


# --- enumerate pages --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Page:
    name: str
    params: tuple[str, ...]
    route: str


def _walk(resolvers, prefix="", namespace=None, params=()):
    for p in resolvers:
        if isinstance(p, URLResolver):
            ns = p.namespace
            if ns == "admin":
                continue  # Django's admin: staff only (test_admin_site_is_for_staff_only)
            if ns == api.urls_namespace:
                continue  # API operations: enumerated from the schema below
            sub_params = params + tuple(_param_names(p.pattern))
            yield from _walk(p.url_patterns, prefix + str(p.pattern), ":".join(x for x in (namespace, ns) if x) or None, sub_params)
        elif isinstance(p, URLPattern):
            module = getattr(p.callback, "__module__", "")
            if module.startswith("ninja") or module.startswith("django.contrib.admin"):
                continue  # API operations: enumerated from the schema below
            if module.startswith("django.views.static") or p.name is None:
                continue
            name = f"{namespace}:{p.name}" if namespace else p.name
            yield Page(name, params + tuple(_param_names(p.pattern)), prefix + str(p.pattern))


def _param_names(pattern) -> list[str]:
    converters = getattr(pattern, "converters", None)
    if converters:
        return list(converters)
    regex = getattr(pattern, "regex", None)
    return list(regex.groupindex) if regex is not None else []


def all_pages() -> list[Page]:
    seen, out = set(), []
    for page in _walk(get_resolver().url_patterns):
        if page.name in PUBLIC or page.name in seen:
            continue
        seen.add(page.name)
        out.append(page)
    return out


PAGES = all_pages()


def test_the_matrix_sees_the_pages_it_must():
    names = {p.name for p in PAGES}
    assert {"index", "conversation", "upload", "jobs", "project_members", "project_tokens", "project_audit"} <= names


@pytest.fixture(scope="module")
def _module_world(django_db_setup, django_db_blocker):
    """One world for every case of the module, built in a transaction that is rolled back at the end;
    each case runs in a savepoint inside it (the `db` fixture), so what a case writes is undone."""
    with django_db_blocker.unblock(), transaction.atomic():
        yield build_world()
        transaction.set_rollback(True)


@pytest.fixture
def world(_module_world, db):
    return _module_world


def _clients(world: World) -> dict[str, Client]:
    clients = {"anonymous": Client(), "b_token": Client(headers={"Authorization": f"Bearer {world.secrets['b_token']}"})}
    for who in [*ROLES, "outsider"]:
        clients[who] = Client()
        clients[who].force_login(world.users[who])
    return clients


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_page_access(world, page):
    url = reverse(page.name, kwargs=fill(world, page.name, list(page.params)))
    addresses_a = bool(page.params)
    clients = _clients(world)
    write = PAGE_WRITES.get(page.name) or default_write(page.name)
    problems = []
    data = write.data(world) if write else {}
    reference, _ = attempt(world, lambda: clients[Role.OWNER].post(url, data), compare=False)
    if addresses_a and reference.status_code in INVALID:
        pytest.fail(
            f"POST {page.name} rejects the input the access matrix sends the owner ({reference.status_code}), so it "
            f"cannot tell refused access from refused input: give it valid data in PAGE_WRITES"
        )

    for who, client in clients.items():
        # Reads (rolled back too: opening a review item locks it, and the next caller must find it free).
        r, changed = attempt(world, lambda: client.get(url), compare=who in OUTSIDE)
        if r.status_code >= 500:
            problems.append(f"GET as {who}: {r.status_code}")
        if who in ("anonymous", "b_token", "outsider") and changed:
            problems.append(f"GET as {who} changed A's data")
        if who in ("anonymous", "b_token"):
            if not (is_login_redirect(r) or r.status_code == 405):
                problems.append(f"GET as {who}: {r.status_code}, expected a redirect to the login page")
        elif who == "outsider":
            if addresses_a and r.status_code not in (403, 404, 405):
                problems.append(f"GET as a non-member: {r.status_code} for A's object, expected 403/404")
            elif r.status_code == 200 and leaks(r):
                problems.append(f"GET as a non-member shows A's data: {leaks(r)}")
            if not addresses_a:
                # Lists filtered to project A and searched for words of A's messages (the slug itself
                # may be echoed back in the filter form).
                r = client.get(url, {"project": world.a.slug, "q": "turn"})
                shown = [m for m in leaks(r) if m != world.a.slug] if r.status_code == 200 else []
                if shown:
                    problems.append(f"GET ?project={world.a.slug}&q=turn as a non-member shows A's data: {shown}")
        else:
            need = PAGE_READS.get(page.name, "view")
            if addresses_a and allowed(need, who) and r.status_code in (403, 404):
                problems.append(f"GET as {who}: {r.status_code}; A's {page.params} should be readable (check PARAMS)")
            if not allowed(need, who) and r.status_code not in (403, 404):
                problems.append(f"GET as {who}: {r.status_code}, expected 403/404 (needs {need})")

        # Writes.
        data = write.data(world) if write else {}  # fresh: an upload is read once
        may_write = write is not None and write.permission != "nobody" and who in ROLES and allowed(write.permission, who)
        r, changed = attempt(world, lambda: client.post(url, data), compare=not may_write)
        if r.status_code >= 500:
            problems.append(f"POST as {who}: {r.status_code}")
        if who in ("anonymous", "b_token"):
            if not (is_login_redirect(r) or r.status_code in (403, 405)) or changed:
                problems.append(f"POST as {who}: {r.status_code} (A changed: {changed}), expected a redirect to login")
        elif who == "outsider":
            if changed:
                problems.append(f"POST as a non-member changed A's data ({r.status_code})")
            if addresses_a and r.status_code != 405 and not refused(r.status_code, reference.status_code):
                problems.append(f"POST as a non-member: {r.status_code} for A's object, expected 403/404")
        elif write is not None:
            if allowed(write.permission, who) and write.permission != "nobody":
                if write.check_success and (r.status_code not in write.ok or is_login_redirect(r)):
                    problems.append(f"POST as {who}: {r.status_code}, expected success ({write.permission})")
            elif not refused(r.status_code, reference.status_code) or changed:
                problems.append(f"POST as {who}: {r.status_code} (A changed: {changed}), expected 403/404 ({write.permission})")
        elif who == Role.VIEWER and changed:
            problems.append(
                f"POST as viewer: {r.status_code} changed A's data; a viewer may not write. If this page "
                f"takes writes, add it to PAGE_WRITES with its permission"
            )
    assert not problems, f"{page.name} ({url}):\n  " + "\n  ".join(problems)


# --- enumerate API operations -----------------------------------------------------------------------


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    params: tuple[str, ...]
    query: tuple[str, ...] = ()  # required query parameters


# Required query parameter name -> a valid value.
QUERY_VALUES: dict[str, Any] = {"format": "claude-code", "client": "zq-laptop-0001", "path": "zq/one.jsonl"}


def all_operations() -> list[Operation]:
    schema = api.get_openapi_schema(path_prefix="/api/")
    out = []
    for path, methods in schema["paths"].items():
        for method, spec in methods.items():
            if method.upper() not in {"GET", "POST", "PUT", "PATCH", "DELETE"}:
                continue
            params = tuple(re.findall(r"{(\w+)}", path))
            query = tuple(p["name"] for p in spec.get("parameters", []) if p.get("in") == "query" and p.get("required"))
            out.append(Operation(method.upper(), path, params, query))
            assert spec.get("security"), f"{method.upper()} {path} declares no authentication"
    return out


OPERATIONS = all_operations()


def test_the_matrix_sees_the_operations_it_must():
    keys = {(o.method, o.path) for o in OPERATIONS}
    assert set(API_WRITES) <= keys, set(API_WRITES) - keys
    assert ("GET", "/api/jobs/{job_id}") in keys


def _call(client: Client, op: Operation, url: str, data: dict, headers: dict):
    if "json" in data:
        return client.generic(op.method, url, data=json.dumps(data["json"]), content_type="application/json", headers=headers)
    if op.method == "GET":
        return client.get(url, headers=headers)
    if op.method == "POST":
        return client.post(url, data, headers=headers)
    return client.generic(op.method, url, headers=headers)


@pytest.mark.parametrize("op", OPERATIONS, ids=lambda o: f"{o.method} {o.path}")
def test_api_access(world, op):
    url = op.path
    for param, value in fill(world, op.path, list(op.params)).items():
        url = url.replace("{" + param + "}", str(value))
    unknown = [q for q in op.query if q not in QUERY_VALUES]
    if unknown:
        pytest.fail(f"{op.method} {op.path} needs query parameters {unknown}: add valid values to QUERY_VALUES in {__file__}")
    if op.query:
        url += "?" + urlencode({q: QUERY_VALUES[q] for q in op.query})
    addresses_a = bool(op.params)
    write = API_WRITES.get((op.method, op.path)) if op.method != "GET" else None
    if op.method != "GET" and write is None:
        write = default_write(op.path)
    need = API_READS.get((op.method, op.path), "view")
    callers: list[tuple[str, str | None, Client]] = [("anonymous", None, Client())]
    callers.append(("b_token", None, Client()))
    outsider = Client()
    outsider.force_login(world.users["outsider"])
    callers.append(("outsider", None, outsider))
    for role in ROLES:
        session = Client()
        session.force_login(world.users[role])
        callers.append((role, "session", session))
        callers.append((role, "token", Client()))
    problems = []
    owner = Client()
    owner.force_login(world.users[Role.OWNER])
    reference, _ = attempt(world, lambda: _call(owner, op, url, write.data(world) if write else {}, {}), compare=False)
    if addresses_a and reference.status_code in INVALID:
        pytest.fail(
            f"{op.method} {op.path} rejects the input the access matrix sends the owner ({reference.status_code}: "
            f"{reference.content[:200]!r}), so it cannot tell refused access from refused input: give it valid input "
            f"in API_WRITES (body) or QUERY_VALUES"
        )

    for who, how, client in callers:
        headers = {}
        if who == "b_token":
            headers = {"Authorization": f"Bearer {world.secrets['b_token']}"}
        elif how == "token":
            headers = {"Authorization": f"Bearer {world.secrets[who]}"}
        label = f"{who} ({how})" if how else who
        data = write.data(world) if write else {}
        may_write = write is not None and write.permission != "nobody" and who in ROLES and allowed(write.permission, who)
        compare = who in OUTSIDE or (op.method != "GET" and not may_write)
        r, changed = attempt(world, lambda: _call(client, op, url, data, headers), compare=compare)
        if r.status_code >= 500:
            problems.append(f"as {label}: {r.status_code}")
        if who == "anonymous":
            if r.status_code != 401 or changed:
                problems.append(f"as anonymous: {r.status_code}, expected 401")
        elif who in ("b_token", "outsider"):
            if changed:
                problems.append(f"as {label}: A's data changed ({r.status_code})")
            if addresses_a and not refused(r.status_code, reference.status_code):
                hint = " (a token reaches only its own project: pick objects through allowed_projects(request, permission))" if who == "b_token" else ""
                problems.append(f"as {label}: {r.status_code} for A's object, expected 403/404{hint}")
            elif r.status_code < 300 and leaks(r):
                problems.append(f"as {label}: answer carries A's data {leaks(r)}")
        elif op.method == "GET":
            if allowed(need, who) and addresses_a and r.status_code in (401, 403, 404):
                problems.append(f"as {label}: {r.status_code}; A's {op.params} should be readable (check PARAMS)")
            if not allowed(need, who) and r.status_code not in (403, 404):
                problems.append(f"as {label}: {r.status_code}, expected 403/404 (needs {need})")
        elif write is not None:
            if allowed(write.permission, who) and write.permission != "nobody":
                if write.check_success and r.status_code not in write.ok:
                    problems.append(f"as {label}: {r.status_code} {r.content[:200]!r}, expected success ({write.permission})")
            elif not refused(r.status_code, reference.status_code) or changed:
                problems.append(f"as {label}: {r.status_code} (A changed: {changed}), expected 403/404 ({write.permission})")
        elif who == Role.VIEWER and changed:
            problems.append(
                f"as viewer ({how}): {r.status_code} changed A's data; a viewer may not write. Add "
                f"{op.method} {op.path} to API_WRITES with its permission"
            )
    assert not problems, f"{op.method} {op.path} ({url}):\n  " + "\n  ".join(problems)


def test_a_token_answers_only_for_its_project(world, client):
    """The B token's owner is an owner of A too: through the token, the API shows B alone."""
    headers = {"Authorization": f"Bearer {world.secrets['b_token']}"}
    r = client.get("/api/projects", headers=headers)
    assert r.status_code == 200
    assert [p["slug"] for p in r.json()] == ["beta-zq"]
    # The same user by session sees both.
    client.force_login(world.users["dual"])
    assert sorted(p["slug"] for p in client.get("/api/projects").json()) == ["alpha-zq", "beta-zq"]


def test_admin_site_is_for_staff_only(world):
    for who in ROLES:
        c = Client()
        c.force_login(world.users[who])
        r = c.get("/admin/accounts/apitoken/")
        assert r.status_code == 302 and "/admin/login/" in r["Location"], who


def test_the_list_probe_would_see_a_leak(world):
    """The non-member probe of list pages (?project=A&q=turn) finds A's words when a member asks."""
    owner = Client()
    owner.force_login(world.users[Role.OWNER])
    r = owner.get(reverse("index"), {"project": world.a.slug, "q": "turn"})
    assert "zq-secret-marker" in r.content.decode()

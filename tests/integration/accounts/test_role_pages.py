"""Role-aware pages: what a role cannot do is not offered, and a refusal says why."""

import pytest
from django.urls import reverse

from contextviewer.accounts.models import ROLE_PERMISSIONS, Role
from contextviewer.review.models import ReviewItem  # noqa: F401  (the review app is installed)
from tests.factories import build_conversation, make_project, make_user

pytestmark = pytest.mark.django_db

ROLES = [Role.OWNER, Role.ADMIN, Role.MEMBER, Role.ANNOTATOR, Role.VIEWER]


@pytest.mark.parametrize("role", ROLES)
def test_pages_offer_only_what_the_role_may_do(client, role):
    project = make_project()
    user = make_user(f"u-{role}", project=project, role=role)
    conv = build_conversation(project, turns=3, subagent_turn=None).conversation
    client.force_login(user)
    may = ROLE_PERMISSIONS[role]
    index = client.get(reverse("index")).content.decode()
    assert (f'href="{reverse("upload")}"' in index) == ("import" in may)
    page = client.get(reverse("conversation", args=[conv.pk])).content.decode()
    assert ('id="build-form"' in page) == ("edit" in may)
    assert ('id="handoff-button"' in page) == ("edit" in may)
    if "edit" not in may:
        assert "Build is not offered: your role may view this conversation" in page
        assert "Handoff is not offered" in page


def test_a_refusal_is_a_page_that_says_why(client):
    project = make_project()
    annotator = make_user("ann", project=project, role=Role.ANNOTATOR)
    conv = build_conversation(project, turns=2, subagent_turn=None).conversation
    client.force_login(annotator)
    upload = client.get(reverse("upload"))
    assert upload.status_code == 403
    html = upload.content.decode()
    assert "<h1>Not allowed</h1>" in html and "may view conversations but not import them" in html
    assert 'class="topbar"' in html  # a page of the app, not a bare status
    build = client.post(reverse("build_create", args=[conv.pk]), {"turns": "1"})
    assert build.status_code == 403
    assert "may not build conversations" in build.content.decode() and "<h1>Not allowed</h1>" in build.content.decode()
    # with htmx, the reason alone (the fragment the form swaps in)
    fragment = client.post(reverse("build_create", args=[conv.pk]), {"turns": "1"}, headers={"HX-Request": "true"})
    assert fragment.status_code == 403 and fragment.content.decode().startswith("Your role")
    # a PermissionDenied raised anywhere renders the same page with its message
    members = client.post(reverse("member_invite", args=[project.slug]), {"who": "x@example.com"})
    assert members.status_code == 403
    assert "Your role (annotator) in" in members.content.decode() and "<h1>Not allowed</h1>" in members.content.decode()


def test_the_judge_is_offered_only_with_a_provider_and_says_why_not(client):
    from contextviewer.providers.models import ProviderConfig

    project = make_project()
    owner = make_user("own", project=project, role=Role.OWNER)
    built = build_conversation(project, turns=12, fold_at=40_000, subagent_turn=None)
    fold = built.folds[0]
    client.force_login(owner)
    url = reverse("review_fold", args=[fold.pk])
    html = client.get(url).content.decode()
    assert 'disabled aria-describedby="judge-why-not"' in html
    assert "The judge needs an LLM provider" in html
    assert f'action="{reverse("review_judge", args=[fold.pk])}"' not in html
    refused = client.post(reverse("review_judge", args=[fold.pk]))
    assert refused.status_code == 409 and "The judge cannot run" in refused.content.decode()
    from contextviewer.jobs.models import Job

    assert not Job.objects.filter(kind="judge").exists()  # no job that could only fail
    fields = {f.name for f in ProviderConfig._meta.get_fields()}
    assert "provider" in fields


def test_compaction_runs_are_labelled_as_compaction_not_as_sub_agents(client):
    from contextviewer.conversations.models import Conversation, ConversationKind

    project = make_project()
    user = make_user("cc", project=project)
    main = build_conversation(project, turns=2, subagent_turn=None).conversation
    Conversation.objects.create(project=project, agent="claude-code", external_id="agent-acompact-1", parent=main,
                                kind=ConversationKind.COMPACTION, agent_type="", title="Summarize the conversation")
    Conversation.objects.create(project=project, agent="claude-code", external_id="agent-x", parent=main,
                                kind=ConversationKind.SUBAGENT, agent_type="Explore", title="Find the tests")
    client.force_login(user)
    page = client.get(reverse("conversation", args=[main.pk])).content.decode()
    assert '<span class="badge compaction">compaction</span>: Summarize the conversation' in page
    assert "Explore: Find the tests" in page
    index = client.get(reverse("index")).content.decode()
    assert index.count('class="badge compaction"') == 1


def test_times_show_their_date_and_zone(client):
    project = make_project()
    user = make_user("owner-times", project=project)
    conv = build_conversation(project, turns=2, subagent_turn=None).conversation
    client.force_login(user)
    started = conv.started_at
    assert started is not None
    shown = started.strftime("%Y-%m-%d %H:%M UTC")
    for url in (reverse("index"), reverse("conversation", args=[conv.pk])):
        html = client.get(url).content.decode()
        assert f'<time datetime="{started.isoformat()}" title="{started.strftime("%Y-%m-%d %H:%M:%S UTC")}">{shown}</time>' in html, url

"""The policy lab's Django side: a recorded conversation as the lab's Session, facts at risk, the
clipping view, `manage.py policies`, the lab page and the project table, access and escaping."""

from __future__ import annotations

import json
import re
from io import StringIO

import pytest
from django.core.management import call_command
from django.urls import reverse

from contextviewer.ingest import files as ingest
from contextviewer.conversations import page_cache
from contextviewer.lab import replays as policylab
from contextviewer.conversations.models import Conversation
from contextviewer.display.templatetags.cv import tok
from contextviewer.core.policylab import CallWindow, Event, Item, Replay
from contextviewer.core.policylab.model import FULL
from tests.factories import make_project, make_user
from tests.sessions import SessionBuilder, one_call_session, write_lines

pytestmark = pytest.mark.django_db

HOSTILE = '<script>alert("lab")</script><img src=x onerror=alert(2)>'
ORIGINAL_LINES = [f"line {i}: ok, compiling the next module of the build" for i in range(300)] + [
    "FATAL: disk quota exceeded on /var/cache/unique_quota_file.log",
    HOSTILE,
]


@pytest.fixture(autouse=True)
def _fresh_cache():
    page_cache.clear()
    yield
    page_cache.clear()


def _session(tmp_path, *, clipped: bool = True) -> list[str]:
    """Three turns; the second runs a Bash command whose output Claude Code cut at 30,000
    characters (the whole output stays in `toolUseResult.stdout`)."""
    b = SessionBuilder()
    lines = [b.user("Please read src/only_here_module.py and never touch the vendor folder.")]
    lines += b.assistant("Reading src/only_here_module.py", tool=("Read", {"file_path": "/home/dev/project/src/only_here_module.py"}))
    lines.append(b.tool_result("def only_here(): pass"))
    lines += b.assistant("Done reading.")
    lines.append(b.user("Now run the build."))
    lines += b.assistant("Running it.", tool=("Bash", {"command": "make build"}))
    original = "\n".join(ORIGINAL_LINES)
    given = original[:2000] + "\n\n... [380 lines truncated] ..." if clipped else original
    line = json.loads(b.tool_result(given))
    line["toolUseResult"] = {"stdout": original, "stderr": "", "interrupted": False, "isImage": False}
    lines.append(json.dumps(line))
    lines += b.assistant("The build ran.")
    lines.append(b.user("Thanks, what next?"))
    lines += b.assistant("Next we refactor.")
    path = tmp_path / f"{b.session_id}.jsonl"
    write_lines(path, lines)
    return path


@pytest.fixture
def conv(tmp_path):
    project = make_project()
    ingest.import_path(project, _session(tmp_path))
    return Conversation.objects.get(project=project, kind="main")


def test_the_session_holds_every_message_and_call_with_the_original_of_a_clipped_result(conv):
    lab = policylab.load_session(conv)
    s = lab.session
    assert len(s.calls) == conv.model_call_count
    assert [c.seq for c in s.calls] == sorted(c.seq for c in s.calls)
    assert {m.role for m in s.messages} >= {"user", "assistant", "tool"}
    tool = [m for m in s.messages if m.role == "tool" and m.original_text]
    assert len(tool) == 1 and "unique_quota_file.log" in tool[0].original_text
    assert "unique_quota_file.log" not in tool[0].text  # the model only got the head
    # Every message a call produced points at that call; the rest at the first call that saw it.
    for m in s.messages:
        call = s.calls[m.call_index]
        if m.role == "assistant":
            assert call.seq <= m.seq and (m.call_index + 1 == len(s.calls) or s.calls[m.call_index + 1].seq > m.seq)
        else:
            assert call.seq > m.seq and (m.call_index == 0 or s.calls[m.call_index - 1].seq < m.seq)
    (clip,) = lab.clips
    assert clip.tool_name == "Bash"
    assert "lines truncated" in clip.marker
    assert clip.clipped_tokens == clip.original_tokens - clip.given_tokens > 0
    assert lab.clipped_tokens == clip.clipped_tokens


def test_an_unclipped_result_is_not_a_clip(tmp_path):
    project = make_project()
    ingest.import_path(project, _session(tmp_path, clipped=False))
    lab = policylab.load_session(Conversation.objects.get(project=project, kind="main"))
    assert lab.clips == [] and lab.clipped_tokens == 0


def _replay_dropping(lab, drop_ids: list[str], clip_ids: list[str]) -> Replay:
    """A replay whose only action, at the last call, drops and clips the given messages and keeps
    every later message in full."""
    s = lab.session
    last = s.calls[-1]
    kept = [m for m in s.messages if m.seq < last.seq and m.id not in drop_ids]
    items = tuple(
        Item(m.id, FULL if m.id not in clip_ids else "clipped", "" if m.id not in clip_ids else m.text[:50], m.tokens, m.id, m.role)
        for m in kept
    )
    event = Event(last.index, "fold", 1000, 400, tuple(drop_ids), tuple(clip_ids))
    windows = [CallWindow(c.index, items if c is last else (), 10 if c is not last else 400) for c in s.calls]
    return Replay("fake", "Fake", windows, [event], peak=400, saved_tokens=600, fires=1, red_zone_calls=0)


def test_facts_at_risk_are_those_of_what_an_action_drops_or_clips_that_remain_nowhere(conv):
    lab = policylab.load_session(conv)
    msgs = lab.session.messages
    first_user = next(m for m in msgs if m.role == "user")
    bash_result = next(m for m in msgs if m.original_text)
    result = policylab.summarize(lab, _replay_dropping(lab, [first_user.id], [bash_result.id]))
    (action,) = result.actions
    texts = {f.text for f in action.facts}
    # The clipped tail of the Bash output (read from the original) is at risk ...
    assert any("unique_quota_file.log" in t for t in texts)
    # ... the dropped user message's constraint too ...
    assert any("never touch the vendor folder" in t for t in texts)
    # ... but not a path the window still names (the assistant's reply keeps it).
    assert not any(t.endswith("only_here_module.py") for t in texts)
    assert result.facts_at_risk == len(action.facts)


def test_command_prints_every_policy_and_json(conv):
    out = StringIO()
    call_command("policies", str(conv.pk), stdout=out)
    text = out.getvalue()
    assert "Open loop" in text
    for name in policylab.resolve_names(None):
        assert f"\n{name} (" in text
    out = StringIO()
    call_command("policies", conv.external_id, "--policy", "claude_code", "--policy", "efferent", "--json", stdout=out)
    data = json.loads(out.getvalue())
    assert data["conversation"] == conv.pk and data["open_loop"] is True
    assert [p["policy"] for p in data["policies"]] == ["claude_code", "efferent"]
    for p in data["policies"]:
        assert p["calls"] == conv.model_call_count
        assert {"fires", "fire_points", "tokens_saved", "peak", "red_zone_calls", "facts_at_risk"} <= set(p)
        assert p["facts_at_risk"] == sum(len(a["facts_at_risk"]) for a in p["actions"])
    assert data["clipped_tokens"] > 0


@pytest.mark.parametrize(
    "args, message",
    [(["nope-no-such"], "no conversation with id or session id 'nope-no-such'"), (["{pk}", "--policy", "bogus"], "unknown policy 'bogus'")],
)
def test_command_refuses_unknown_conversation_or_policy(conv, args, message):
    err = StringIO()
    with pytest.raises(SystemExit) as exc:
        call_command("policies", *[a.format(pk=conv.pk) for a in args], stderr=err)
    assert exc.value.code == 2
    assert message in err.getvalue()


def test_lab_page_shows_curves_note_clip_and_escapes_hostile_text(client, conv):
    client.force_login(make_user(project=conv.project))
    page = client.get(reverse("conversation", args=[conv.pk]))
    assert reverse("policy_lab", args=[conv.pk]) in page.content.decode()
    r = client.get(reverse("policy_lab", args=[conv.pk]), {"policy": ["claude_code", "efferent"]})
    assert r.status_code == 200
    html = r.content.decode()
    assert "the recorded actions are replayed unchanged" in html
    assert html.count('class="line-policy') == 2 and 'class="line-recorded"' in html
    assert 'id="policy-claude_code"' in html and 'id="policy-efferent"' in html and 'id="policy-codex"' not in html
    assert 'value="codex"' in html and 'value="claude_code" checked' in html
    # The clipping view: the marker, both sides, the count.
    assert "lines truncated" in html and "unique_quota_file.log" in html
    lab = policylab.load_session(conv)
    assert f"{tok(lab.clipped_tokens)} clipped tokens" in html
    assert "<script>alert" not in html and "&lt;script&gt;alert" in html
    assert "<img src=x" not in html
    assert "script-src" not in r.get("Content-Security-Policy", "") or "unsafe-inline" not in r["Content-Security-Policy"]


def test_lab_page_says_which_policy_it_does_not_know(client, conv):
    client.force_login(make_user(project=conv.project))
    r = client.get(reverse("policy_lab", args=[conv.pk]), {"policy": ["codex", "<b>bogus</b>"]})
    html = r.content.decode()
    assert r.status_code == 200 and "Unknown policy" in html and "&lt;b&gt;bogus&lt;/b&gt;" in html
    assert 'id="policy-codex"' in html


def test_other_projects_users_get_404(client, conv):
    other = make_project("other")
    client.force_login(make_user("mallory", project=other))
    assert client.get(reverse("policy_lab", args=[conv.pk])).status_code == 404
    table = client.get(reverse("policy_table"), {"project": conv.project.slug})
    assert table.status_code == 200
    assert conv.project.name not in table.content.decode().split("<h1>", 1)[1].split("</h1>", 1)[0]
    client.logout()
    assert client.get(reverse("policy_lab", args=[conv.pk])).status_code == 302  # to the login page


def test_lab_page_marks_the_point_of_a_conversation_with_one_model_call(client, tmp_path):
    """One call is one point per curve, and a path through one point draws nothing: each curve's
    point is a dot, in the chart (not on its left edge) and inside it."""
    project = make_project()
    ingest.import_path(project, one_call_session(tmp_path))
    conv = Conversation.objects.get(project=project, kind="main")
    assert conv.model_call_count == 1
    client.force_login(make_user(project=conv.project))
    r = client.get(reverse("policy_lab", args=[conv.pk]), {"policy": ["claude_code", "efferent"]})
    assert r.status_code == 200
    svg = r.content.decode().split('<svg class="curve"', 1)[1].split("</svg>", 1)[0]
    points = re.findall(r'<circle class="point ([^"]+)" cx="([^"]+)" cy="([^"]+)" r="([^"]+)"><title>([^<]*)</title>', svg)
    assert [css.split()[0] for css, *_ in points] == ["line-recorded", "line-policy", "line-policy"], svg
    for _, cx, cy, r_, title in points:
        assert 0 < float(cx) < 1000 and 0 <= float(cy) <= 250 and float(r_) >= 3, svg
        assert "call 0" in title
    assert "recorded (as logged): call 0" in points[0][4]

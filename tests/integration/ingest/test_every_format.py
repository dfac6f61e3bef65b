"""Every registered format on every surface: one sample per format (a real log from
../shared/fixtures where there is one, else, and also, a synthetic one written by the format's own
unit-test builders) imported through ingest, then, as its owner: the index lists it and filters by
agent, the conversation page shows the agent, a gauge and a curve point per model call, every turn
renders, search finds a word of it, a build from its first two turns copies those turns, the
Markdown/OpenAI/Anthropic exports keep every answered tool call (Claude Code's own format only for
Claude Code), and the fact probes give a retention figure for every fold.

Expected figures are counted here from the stored messages or stated per sample, never taken from
the surface under test."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse

from contextviewer.accounts.services import get_or_create_project
from contextviewer.builds import services as builds
from contextviewer.ingest import files as ingest
from contextviewer.jobs import queue as jobs
from contextviewer.conversations import page_cache, search
from contextviewer.conversations.models import Conversation, ConversationKind, Message
from contextviewer.jobs.models import JobStatus
from contextviewer.core import build as core_build
from contextviewer.core.tokens import count_text
from contextviewer.importers import formats
from contextviewer.review import probes
from tests.conftest import shared_fixtures_dir
from tests.module_worlds import alice, fresh, rolled_back
from tests.unit import (
    test_aider_importer as aider_t,
    test_codex_importer as codex_t,
    test_efferent_importer as efferent_t,
    test_gemini_importer as gemini_t,
    test_messages_importer as messages_t,
    test_opencode_importer as opencode_t,
    test_openhands_importer as openhands_t,
    test_picoclaw_importer as picoclaw_t,
    test_pi_importer as pi_t,
    test_qwen_importer as qwen_t,
    test_swe_agent_importer as swe_t,
)

pytestmark = pytest.mark.django_db

CURVE_POINTS = 400  # curve_view.CURVE_POINTS: below it every call is drawn


# -- samples -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sample:
    id: str
    agent: str
    write: Callable[[Path, Path | None], Path]  # (tmp_path, fixtures dir) -> the path to import
    fixture: bool = False  # reads ../shared/fixtures
    external_id: str | None = None  # the conversation to look at, where the path holds several
    folds: int = 0  # folds the sample has, counted by reading it


def _fixture(rel: str) -> Callable[[Path, Path | None], Path]:
    return lambda tmp, fx: fx / rel


def _claude_code(tmp: Path, fx) -> Path:
    from tests.sessions import session_lines, write_lines

    path = tmp / "session.jsonl"
    write_lines(path, session_lines(3))
    return path


def _codex(tmp: Path, fx) -> Path:
    # two_turns() then a local compaction (the unit test's builders): one fold.
    c = codex_t
    lines = c.two_turns() + [
        c.env("compacted", {"message": "Parser fixed; the full suite is next.", "replacement_history": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Thanks, now run the full suite"}]},
        ]}),
        c.event("context_compacted"),
        c.turn_context(),
        c.user("Continue with the suite"),
        c.assistant("Suite passes."),
        c.usage(40_000, 800, 3_000, 0, 100),
    ]
    return c.write(tmp / f"rollout-2026-02-23T12-00-00-{c.SID}.jsonl", lines)


def _gemini(tmp: Path, fx) -> Path:
    chats = tmp / "chats"
    chats.mkdir()
    path = chats / "session-2026-01-16T18-34-3739ef95.json"
    path.write_text(json.dumps(gemini_t.LEGACY, indent=2))
    return path


def _messages(tmp: Path, fx) -> Path:
    path = tmp / "chat.json"
    path.write_text(json.dumps(messages_t.OPENAI_CHAT))
    return path


_LANGGRAPH: list[Path] = []  # built once (it runs real graphs); importing only reads it


def _langgraph(tmp: Path, fx) -> Path:
    lg = pytest.importorskip("tests.langgraph_db")
    if not _LANGGRAPH:
        _LANGGRAPH.append(lg.build(tmp / "checkpoints.sqlite", threads=("gamma",)))
    return _LANGGRAPH[0]


def _openhands(tmp: Path, fx) -> Path:
    return openhands_t.write_v1(tmp / "conversations" / "conv-123")


def _qwen(tmp: Path, fx) -> Path:
    return qwen_t.write_project(tmp / "qwen-project")


def _pi(tmp: Path, fx) -> Path:
    return pi_t.session().write(tmp / "--home-dev-project--" / f"2026-12-07T06-11-46-259Z_{pi_t.SID}.jsonl")


def _swe_agent(tmp: Path, fx) -> Path:
    path = tmp / "fc.traj"
    path.write_text(json.dumps(swe_t.fc_traj()))
    return path


def _aider(tmp: Path, fx) -> Path:
    path = tmp / ".aider.chat.history.md"
    path.write_text(aider_t.HISTORY)
    return path


def _opencode(tmp: Path, fx) -> Path:
    return opencode_t.write_storage(tmp / "storage")


def _kilo(tmp: Path, fx) -> Path:
    from tests.unit.test_kilo_importer import _with_board

    (tmp / "kilo").mkdir()
    return _with_board(opencode_t.write_database(tmp / "kilo" / "kilo.db"))


def _cline_cli(tmp: Path, fx) -> Path:
    from tests.unit.test_cline_cli_sessions import make_session

    (tmp / "sessions").mkdir()
    make_session(tmp / "sessions")
    return tmp / "sessions" / "1800000000000_abcde"


def _efferent(tmp: Path, fx) -> Path:
    folder = tmp / "proj" / ".efferent"
    folder.mkdir(parents=True)
    return efferent_t.write_current_store(folder / "smith.db")


def _crush(tmp: Path, fx) -> Path:
    from tests.charm_db import write_store

    return write_store(tmp / "proj" / ".crush" / "crush.db", keep_wal=True)


def _opencode_go(tmp: Path, fx) -> Path:
    from tests.charm_db import write_store

    return write_store(tmp / "proj" / ".opencode" / "opencode.db", crush=False)


def _mini_swe_agent(tmp: Path, fx) -> Path:
    from tests.unit.test_mini_swe_agent_importer import toolcall_trajectory

    path = tmp / "last_mini_run.traj.json"
    path.write_text(json.dumps(toolcall_trajectory(), indent=2))
    return path


def _cline(tmp: Path, fx) -> Path:
    from tests.cline_folders import make_task

    # A Roo Code task folder with a condense (one fold); the import points at its history file.
    return make_task(tmp / "tasks", "roo", condense=True).folder / "api_conversation_history.json"


def _cline_truncation(tmp: Path, fx) -> Path:
    from tests.cline_folders import make_task

    # A Cline task folder whose context was truncated from the fourth request on (one fold, no summary).
    return make_task(tmp / "tasks", "cline", truncate_at=3, task_id="1760000000000").folder


def _picoclaw(tmp: Path, fx) -> Path:
    # The unit test's session, summarized 13 lines in (its own meta skips only "hello" and "Hi!",
    # which hold no fact to probe): the summary stands for both tool rounds, notes.md read included.
    sessions = tmp / "workspace" / "sessions"
    return picoclaw_t.write_session(sessions, picoclaw_t.FILE_KEY, picoclaw_t.LINES, {**picoclaw_t.META, "skip": 13})


def _copilot(tmp: Path, fx) -> Path:
    from tests.unit import test_copilot_importer as copilot_t

    # Two applied compactions (a background one and /compact) and a cancelled one (no fold); a task sub-agent.
    return copilot_t.session().write(tmp / "session-state" / copilot_t.SID / "events.jsonl")


def _vibe(tmp: Path, fx) -> Path:
    from tests.vibe_folders import make_session

    # A session folder: three turns, a sub-agent (its child folder beside), an automatic compaction
    # at the start of the third (one fold).
    return make_session(tmp / "unified", child=True).folder


def _gptme(tmp: Path, fx) -> Path:
    from tests.unit import test_gptme_importer as gptme_t

    # A logs folder: a conversation folder with its automatic compaction (one fold), a sub-agent's beside it.
    gptme_t.write_logs(tmp / "logs")
    return tmp / "logs"


def _kimi(tmp: Path, fx) -> Path:
    from tests.unit import test_kimi_importer as kimi_t

    # A sessions folder: one session whose compaction set context_1.jsonl aside (one fold), a sub-agent.
    kimi_t.write_session(tmp / "sessions")
    return tmp / "sessions"


def _vscode_fork(extension: str) -> Callable[[Path, Path | None], Path]:
    def write(tmp: Path, fx) -> Path:
        from tests.cline_folders import make_task

        # A Roo-style task folder with a condense (one fold), in the extension's globalStorage folder.
        return make_task(tmp / "globalStorage" / extension / "tasks", "roo", condense=True).folder

    return write


def _goose(tmp: Path, fx) -> Path:
    from tests.goose_store import write_store

    # A sessions.db (facts from Goose's source): an automatic compaction (one fold), a sub-agent session.
    return write_store(tmp / "goose" / "sessions" / "sessions.db")


def _goose_legacy(tmp: Path, fx) -> Path:
    from tests.goose_store import write_legacy

    # A session file of Goose before its SQLite store (no usage per call, no fold).
    return write_legacy(tmp / "goose" / "sessions")


def _antigravity_cli(tmp: Path, fx) -> Path:
    from tests.antigravity_trajectories import write_home

    # A conversations folder (facts from other readers' source): a trajectory with a checkpoint (one fold)
    # and a sub-agent trajectory naming it its parent, and a history.jsonl with its workspace.
    return write_home(tmp / "antigravity-cli")


def _amp(tmp: Path, fx) -> Path:
    from tests.amp_threads import write_threads

    # A threads folder (facts from other readers' source): a thread with an info summary (one fold), and a
    # thread of before message usage (its usageLedger).
    return write_threads(tmp / "amp" / "threads")


def _cursor(tmp: Path, fx) -> Path:
    from tests.cursor_transcripts import write_projects

    # A projects folder (facts from other readers' source): a chat with its sub-agent's transcript, and an
    # earlier .txt transcript. Cursor records no compaction.
    return write_projects(tmp / ".cursor" / "projects")


def _iflow(tmp: Path, fx) -> Path:
    from tests.iflow_sessions import write_projects

    # A projects folder (facts from other readers' source and a real log): a session with a summary line
    # (one fold) and tool calls written again across a response's lines, and a session with no usage.
    return write_projects(tmp / ".iflow" / "projects")


def _droid(tmp: Path, fx) -> Path:
    from tests.unit import test_droid_importer as droid_t

    sessions = tmp / "sessions" / droid_t.FOLDER
    return droid_t.session().write(sessions / f"{droid_t.SID}.jsonl", droid_t.SETTINGS)


def _hermes(tmp: Path, fx) -> Path:
    from tests.hermes_store import write_store

    # A state.db (facts from Hermes Agent's source and a run): an in-place compaction (one fold), a
    # sub-agent session, and a second conversation rotated by a compaction.
    return write_store(tmp / ".hermes" / "state.db")


SAMPLES = [
    # Real logs (skipped where ../shared/fixtures is absent).
    Sample("claude-code-fixture", "claude-code", _fixture("claude-code/oneryalcin__fasthooks__sample_main_transcript.jsonl"),
           fixture=True, folds=1),
    Sample("codex-fixture", "codex",
           _fixture("codex/madshn__localpush__rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl"),
           fixture=True),
    Sample("gemini-fixture", "gemini", _fixture("gemini-cli/Mai0313__VibeCodingTracker__test_conversation_gemini.json"),
           fixture=True),
    Sample("messages-fixture", "messages",
           _fixture("langchain-messages/langchain-ai__deepagents__summarization_seed_messages.json"), fixture=True),
    Sample("opencode-fixture", "opencode", _fixture("opencode/jazzyalex__agent-sessions__storage_v2"), fixture=True,
           external_id="s_stage0_large", folds=1),
    Sample("openhands-fixture", "openhands", _fixture("openhands/All-Hands-AI__OpenHands__wrong_initial_state.json"),
           fixture=True),
    Sample("swe-agent-fixture", "swe-agent", _fixture("swe-agent/SWE-agent__SWE-agent__function_calling_simple.traj"),
           fixture=True),
    Sample("crush-fixture", "crush", _fixture("crush/jbpratt__quay__crush.db"), fixture=True,
           external_id="5ee78d3f-abf5-487a-82f0-02cf36a0e8ee"),
    Sample("opencode-go-fixture", "opencode-go", _fixture("opencode-go/peder1981__futurista__opencode.db"), fixture=True,
           external_id="49df5790-ea83-4c1a-adbc-8cb53d2ff798", folds=4),
    Sample("mini-swe-agent-fixture", "mini-swe-agent",
           _fixture("mini-swe-agent/gruckion__mini-swe-agent__matplotlib__matplotlib-25287.traj.json"), fixture=True),
    # Synthetic: the builders of each format's unit tests (a clone without ../shared runs these).
    Sample("claude-code", "claude-code", _claude_code),
    Sample("codex", "codex", _codex, folds=1),
    Sample("gemini", "gemini", _gemini),
    Sample("messages", "messages", _messages),
    Sample("langgraph", "langgraph", _langgraph, external_id="gamma", folds=1),
    Sample("openhands", "openhands", _openhands, folds=1),
    Sample("swe-agent", "swe-agent", _swe_agent),
    Sample("aider", "aider", _aider, external_id=".aider.chat.history@2024-08-20 09:34:31"),
    Sample("opencode", "opencode", _opencode, external_id="ses_001", folds=1),
    Sample("kilo", "kilo", _kilo, external_id="ses_001", folds=1),
    Sample("efferent", "efferent", _efferent, external_id="c1", folds=2),
    Sample("picoclaw", "picoclaw", _picoclaw, folds=1),
    Sample("qwen-code", "qwen-code", _qwen, folds=2),
    Sample("pi", "pi", _pi, folds=2),
    Sample("mini-swe-agent", "mini-swe-agent", _mini_swe_agent),
    Sample("cline", "cline", _cline, external_id="0199a1b2-roo-task", folds=1),
    Sample("cline-truncation", "cline", _cline_truncation, external_id="1760000000000", folds=1),
    Sample("cline-cli", "cline", _cline_cli, external_id="1800000000000_abcde"),
    Sample("crush", "crush", _crush, external_id="s1", folds=1),
    Sample("opencode-go", "opencode-go", _opencode_go, external_id="s1", folds=1),
    Sample("copilot", "copilot", _copilot, folds=2),
    Sample("vibe", "vibe", _vibe, external_id="9e1c0de0-0000-4000-8000-00000000abcd", folds=1),
    Sample("gptme", "gptme", _gptme, external_id="work", folds=1),
    Sample("kimi", "kimi", _kimi, external_id="0b7e6f4e-1111-4222-8333-444455556666", folds=1),
    Sample("goose", "goose", _goose, external_id="20260301_1", folds=1),
    Sample("goose-legacy", "goose", _goose_legacy, external_id="20250301_101500"),
    Sample("droid", "droid", _droid, folds=1),
    Sample("amp", "amp", _amp, external_id="T-0b9d0362-e377-4f2f-9780-3e637f90eaec", folds=1),
    Sample("cursor", "cursor", _cursor, external_id="0b2f6c1e-4d5a-4e3b-9c8d-7e6f5a4b3c2d"),
    Sample("iflow", "iflow", _iflow, external_id="7c1f4e2a-3b5d-4c6e-8f90-a1b2c3d4e5f6", folds=1),
    Sample("antigravity-cli", "antigravity-cli", _antigravity_cli, external_id="5a1c7e2d-3b4f-4c6a-8d9e-0f1a2b3c4d5e", folds=1),
    Sample("hermes", "hermes", _hermes, external_id="20260301_100000_aaaaaa", folds=1),
    Sample("roo-code", "roo-code", _vscode_fork("rooveterinaryinc.roo-cline"), external_id="0199a1b2-roo-task", folds=1),
    Sample("kilo-code", "kilo-code", _vscode_fork("kilocode.kilo-code"), external_id="0199a1b2-roo-task", folds=1),
]

# (surface, sample id) -> why it fails today; strict, so a fix shows up as XPASS.
KNOWN: dict[tuple[str, str], str] = {}


def params(surface: str, only: Callable[[Sample], bool] = lambda s: True) -> list:
    out = []
    for s in SAMPLES:
        if not only(s):
            continue
        reason = KNOWN.get((surface, s.id))
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        if s.fixture:
            marks.append(pytest.mark.fixtures)
        out.append(pytest.param(s, id=s.id, marks=marks))
    return out


def test_every_registered_format_has_a_sample():
    assert {s.agent for s in SAMPLES} == {f.name for f in formats.registry()}
    assert {s.agent for s in SAMPLES if not s.fixture} == {f.name for f in formats.registry()}


# -- helpers -----------------------------------------------------------------------------------


# Each sample is imported once for the module, not once per test: the project and its owner are
# made once (a transaction rolled back at the module's end), each sample is imported in a savepoint
# inside it that is rolled back when the tests of that sample are done (pytest runs them one after
# the other: `_sample` is module-scoped and parametrized), and each test runs in a savepoint inside
# that (the `db` fixture), so what a test writes (a build, a probe) is undone.


@pytest.fixture(scope="module")
def _module_world(django_db_setup, django_db_blocker):
    with rolled_back(django_db_blocker):
        project = get_or_create_project("Test project")  # tests/integration/conftest.py's project and user
        yield project, alice(project)


@pytest.fixture
def project(_module_world, db):
    return fresh(_module_world[0])


@pytest.fixture
def user(_module_world, db):
    return fresh(_module_world[1])


@pytest.fixture(scope="module")
def _sample(request, _module_world, django_db_blocker, tmp_path_factory) -> int:
    """Import the sample (request.param) into the module's project; the pk of the conversation it is about."""
    sample: Sample = request.param
    fx = shared_fixtures_dir() if sample.fixture else None
    if sample.fixture and fx is None:
        pytest.skip(f"shared fixtures not found at {settings.FIXTURES_DIR} (set CONTEXTVIEWER_FIXTURES)")
    with rolled_back(django_db_blocker):
        project = _module_world[0]
        path = sample.write(tmp_path_factory.mktemp(sample.id), fx)
        report = ingest.import_path(project, path)
        assert not report.refused, report.errors
        assert {f.agent for f in report.files} == {sample.agent}
        convs = Conversation.objects.filter(pk__in=report.conversation_ids, parent__isnull=True)
        if sample.external_id is not None:
            conv = convs.get(external_id=sample.external_id)
        else:
            (conv,) = convs
        assert conv.agent == sample.agent and conv.kind != ConversationKind.SUBAGENT
        assert conv.fold_count == conv.folds.count() == sample.folds
        yield conv.pk


@pytest.fixture
def imported(_sample, db) -> Conversation:
    """The conversation the sample is about, imported into the module's project (read again, and
    nothing of it rendered yet, as for a sample imported for this test alone)."""
    page_cache.clear()
    return Conversation.objects.get(pk=_sample)


@pytest.fixture
def owner(user) -> Client:
    c = Client()
    c.force_login(user)
    return c


def _blocks(conv: Conversation) -> list[tuple[Message, dict]]:
    return [(m, b) for m in conv.messages.order_by("position") for b in m.blocks or []]


def answered_tool_calls(conv: Conversation) -> list[dict]:
    """The tool_call blocks whose result (a tool_result with the same id) is stored too."""
    pairs = _blocks(conv)
    results = {b.get("tool_id") for _, b in pairs if b.get("kind") == "tool_result" and b.get("tool_id")}
    return [b for _, b in pairs if b.get("kind") == "tool_call" and b.get("tool_id") in results]


_TOKEN = re.compile(r"[A-Za-z0-9]+")  # what the search index splits text into (FTS5 unicode61)


def _words(text: str) -> set[str]:
    return {w.lower() for w in _TOKEN.findall(text) if len(w) >= 6 and any(c.isalpha() for c in w)}


def distinctive_word(conv: Conversation) -> tuple[str, set[int]]:
    """A word that as few messages as possible hold (from user and assistant text where there is
    one, else from any block a person can search: thinking, tool input and output), and the turns
    of the messages that hold it."""
    rows = list(conv.messages.order_by("position"))
    for roles, kinds in ((("user", "assistant"), ("text",)), (None, ("text", "thinking", "tool_call", "tool_result"))):
        texts = [
            (m.turn, _words(" ".join(b.get("text") or "" for b in m.blocks or [] if b.get("kind") in kinds)))
            for m in rows if roles is None or m.role in roles
        ]
        df = Counter(w for _, words in texts for w in words)
        if df:
            word = min(df, key=lambda w: (df[w], -len(w), w))
            return word, {turn for turn, words in texts if word in words}
    raise AssertionError(f"{conv} has no word to search for")


# -- the index ---------------------------------------------------------------------------------


@pytest.mark.parametrize("_sample", params("index"), indirect=True)
def test_the_index_lists_it_and_filters_by_its_agent(imported, owner):
    conv = imported
    link = f'class="conv-link" href="{reverse("conversation", args=[conv.pk])}"'
    assert link in owner.get(reverse("index")).content.decode()
    page = owner.get(reverse("index"), {"agent": conv.agent})
    assert page.status_code == 200
    html = page.content.decode()
    assert link in html
    assert f'<option value="{conv.agent}" selected>{formats.label(conv.agent)}</option>' in html
    other = next(f.name for f in formats.registry() if f.name != conv.agent)
    assert link not in owner.get(reverse("index"), {"agent": other}).content.decode()


def index_row(html: str, conv: Conversation) -> str:
    """The index's row of `conv`: from its link to the end of its <tr>."""
    link = f'class="conv-link" href="{reverse("conversation", args=[conv.pk])}"'
    start = html.index(link)
    return html[start : html.index("</tr>", start)]


@pytest.mark.parametrize("_sample", params("figures"), indirect=True)
def test_peak_and_spend_say_when_the_log_records_no_usage(imported, owner):
    """A log that records no usage per call (its calls are stored with none) shows its peak as an
    estimate and its spend and cost as unknown, never as a measured 0 or $0.0000; one whose calls
    all record their prompt shows neither mark. What is expected is read from the stored calls."""
    conv = imported
    calls = list(conv.model_calls.values_list("input_uncached", "cache_write", "cache_read", "output", "estimated_context"))
    measured = [c for c in calls if sum(c[:3]) > 0]
    row = index_row(owner.get(reverse("index")).content.decode(), conv)
    peak = re.search(r'<td class="peak">(.*?)</td>', row, re.S).group(1)
    spend = re.search(r'<td class="num nowrap spend-tokens">(.*?)</td>', row, re.S).group(1)
    cost = re.search(r'<td class="num nowrap spend-cost">(.*?)</td>', row, re.S).group(1)
    header = re.search(r'<span class="header-counts".*?</span>\s*</span>', owner.get(
        reverse("conversation", args=[conv.pk])).content.decode(), re.S).group(0)
    if not calls:
        assert "no model call" in peak and "%" not in peak
    elif not measured:
        assert conv.peak_estimated and conv.peak_context == max(c[4] for c in calls)
        assert "estimated: the log records no usage per call" in peak and "est." in peak, peak
    else:
        assert not conv.peak_estimated and conv.peak_context == max(sum(c[:3]) for c in measured)
        assert "(measured)" in peak and "est." not in peak, peak
    if not any(sum(c[:4]) for c in calls):
        assert "–" in spend and "not known" in spend and "$" not in cost, (spend, cost)
        assert "spend not recorded" in header and "at list price" not in header, header
    elif len(measured) < len(calls):
        assert f"{len(measured)} of {len(calls)} calls record their prompt tokens" in spend, spend
        assert f"(partial: {len(measured)} of {len(calls)} calls record their prompt)" in header, header
    else:
        assert "partial" not in spend + cost + header and "–" not in spend, (spend, header)


# -- the conversation page ---------------------------------------------------------------------


@pytest.mark.parametrize("_sample", params("page"), indirect=True)
def test_the_page_shows_the_agent_a_gauge_a_curve_and_every_turn(imported, owner):
    conv = imported
    page = owner.get(reverse("conversation", args=[conv.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    assert formats.get(conv.agent).label in html
    assert '<svg class="gauge"' in html
    # The gauge names the model the latest call ran on, where the log names one.
    models = [m for m in conv.model_calls.order_by("position").values_list("model", flat=True) if m]
    assert set(models) <= set(conv.model_names)
    if models:
        figures = re.search(r'<p class="gauge-figures">(.*?)</p>', html, re.S).group(1)
        assert not figures.split("·")[1].strip().startswith("unknown"), figures
    calls = conv.model_calls.count()
    assert conv.model_call_count == calls
    # No call: the gauge is the window the next call would read; else what the latest call saw, or
    # the window now when a fold came at or after it (test_handoff_pages checks which).
    assert "Window now" in html if not calls else ("Window at the latest model call" in html) != ("Window now" in html)
    if calls:
        points = re.search(r'<svg class="curve" id="curve"[^>]* data-points="([^"]*)"', html)
        assert points, "a conversation with model calls has a curve"
        assert len(points.group(1).split(";")) == min(calls, CURVE_POINTS)
        assert f"· {calls} call{'s' if calls != 1 else ''}" in html
    turns = sorted(set(conv.messages.values_list("turn", flat=True)))
    assert turns
    for t in turns:
        r = owner.get(reverse("turn", args=[conv.pk, t]))
        assert r.status_code == 200, f"turn {t}"
        r = owner.get(reverse("turn", args=[conv.pk, t]), HTTP_HX_REQUEST="true")
        assert r.status_code == 200, f"turn {t} (htmx)"
    # Every tool call's name shows in its turn.
    names = {b["tool_name"] for _, b in _blocks(conv) if b.get("kind") == "tool_call" and b.get("tool_name")}
    fragments = "".join(owner.get(reverse("turn", args=[conv.pk, t])).content.decode() for t in turns)
    for name in names:
        assert f">{name}<" in fragments, name


# -- search ------------------------------------------------------------------------------------


@pytest.mark.parametrize("_sample", params("search"), indirect=True)
def test_search_finds_a_word_of_it(imported, user, owner):
    conv = imported
    word, turns = distinctive_word(conv)
    hits = [h for h in search.search(user, word) if h.conversation_id == conv.pk]
    assert hits, word
    assert {h.turn for h in hits} >= turns
    html = owner.get(reverse("index"), {"q": word}).content.decode()
    url = reverse("conversation", args=[conv.pk])
    assert any(re.search(rf'href="{url}\?q=[^"&]*&amp;turn={t}#m-\d+"', html) for t in turns), word
    # The hit's link opens the page at that turn.
    t = min(turns)
    page = owner.get(url, {"turn": t})
    assert page.status_code == 200 and f'id="turn-{t}"' in page.content.decode()


# -- builds ------------------------------------------------------------------------------------


def _texts(messages) -> list[str]:
    return [
        b.get("text") for m in messages
        if not (m.role == "system" and m.subtype in core_build.FOLD_MARKERS)
        for b in m.blocks or [] if b.get("kind") == "text"
    ]


def _buildable(conv, turns) -> bool:
    try:
        builds.validate(conv, turns, [])
    except core_build.BuildError:
        return False
    return True


@pytest.mark.parametrize("_sample", params("build"), indirect=True)
def test_a_build_of_its_first_two_turns(imported, user):
    conv = imported
    turns = [s.turn for s in builds.turn_spans(conv)]
    assert turns
    # The first two turns a build may hold together (a fold's summary excludes the turns it stands for).
    first = next((pair for i in range(len(turns)) if _buildable(conv, pair := turns[i : i + 2])), turns[:1])
    builds.validate(conv, first, [])
    job = builds.start_build(conv, first, [], user=user, enqueue=False)
    done = jobs.run(job.pk)
    assert done.status == JobStatus.SUCCEEDED, done.error
    built = Conversation.objects.get(pk=done.result["conversation_id"])
    assert built.kind == ConversationKind.BUILD and built.lineage["source"]["id"] == conv.pk
    assert core_build.check_structure(list(built.messages.order_by("position").values("position", "blocks"))) == []
    assert built.messages.values("turn").distinct().count() == len(first)
    source = conv.messages.filter(turn__in=first).order_by("position")
    assert _texts(built.messages.order_by("position")) == _texts(source)
    # The answered tool calls of those turns are there too.
    results = {b.get("tool_id") for m in source for b in m.blocks or [] if b.get("kind") == "tool_result"}
    kept = [b.get("tool_id") for m in source for b in m.blocks or [] if b.get("kind") == "tool_call" and b.get("tool_id") in results]
    built_calls = [b.get("tool_id") for m in built.messages.order_by("position") for b in m.blocks or [] if b.get("kind") == "tool_call"]
    assert len(built_calls) == len(kept)


# -- exports -----------------------------------------------------------------------------------


@pytest.mark.parametrize("_sample", params("export"), indirect=True)
def test_the_exports_keep_every_answered_tool_call(imported, owner):
    conv = imported
    answered = answered_tool_calls(conv)
    n = len(answered)

    # The whole record (the default export is what the agent loads: after a fold, less).
    markdown = builds.export(conv, "markdown", view="full").content
    assert markdown.count("Tool call `") == n
    for b in answered:
        assert f"Tool call `{b['tool_name']}`" in markdown

    doc = json.loads(builds.export(conv, "openai", view="full").content)
    messages = doc["messages"] if isinstance(doc, dict) else doc
    calls = [c["id"] for m in messages for c in m.get("tool_calls") or []]
    assert len(calls) == n
    assert sorted(m["tool_call_id"] for m in messages if m.get("role") == "tool") == sorted(calls)

    doc = json.loads(builds.export(conv, "anthropic", view="full").content)
    content = [b for m in doc["messages"] if isinstance(m["content"], list) for b in m["content"]]
    uses = [b["id"] for b in content if b.get("type") == "tool_use"]
    assert len(uses) == n
    assert sorted(b["tool_use_id"] for b in content if b.get("type") == "tool_result") == sorted(uses)

    # Claude Code's own session file: offered (and made) for Claude Code only.
    html = owner.get(reverse("conversation", args=[conv.pk])).content.decode()
    if conv.agent == "claude-code":
        assert "claude-code" in builds.export_formats(conv.agent)
        assert 'data-export="claude-code"' in html
        lines = builds.export(conv, "claude-code", view="full").content.splitlines()
        uses = [b for line in lines for b in (json.loads(line).get("message") or {}).get("content") or []
                if isinstance(b, dict) and b.get("type") == "tool_use"]
        assert len(uses) == n
    else:
        own = ["codex"] if conv.agent == "codex" else []  # Codex's own rollout (issue 19)
        assert builds.export_formats(conv.agent) == own + ["openai", "anthropic", "markdown"]
        assert 'data-export="claude-code"' not in html and 'data-export="markdown"' in html
        with pytest.raises(builds.ExportRefused):
            builds.export(conv, "claude-code")
        assert owner.get(reverse("export_download", args=[conv.pk, "claude-code"])).status_code in (400, 403, 404)


# -- fact probes -------------------------------------------------------------------------------


@pytest.mark.parametrize("_sample", params("probes", lambda s: s.folds > 0), indirect=True)
def test_the_fact_probes_give_a_retention_for_every_fold(imported, owner):
    conv = imported
    folds = list(conv.folds.order_by("position", "pk"))
    assert len(folds) == conv.fold_count > 0
    for fold in folds:
        probe = probes.probe_for(fold)
        assert probe.facts, f"fold at {fold.position}: its archived segment holds no fact"
        assert probe.retention is not None and 0.0 <= probe.retention <= 1.0
        kept = sum(1 for f in probe.facts if f["kept"])
        assert probe.retention == pytest.approx(kept / len(probe.facts))
        page = owner.get(reverse("review_fold", args=[fold.pk]))
        assert page.status_code == 200
        assert '<strong id="retention">' in page.content.decode()
    report = probes.probe_report(conv)
    assert [r["fold_id"] for r in report] == [f.pk for f in folds]
    assert all(r["retention"] is not None for r in report)


# -- a fold's summary in the window ------------------------------------------------------------


@pytest.mark.parametrize("_sample", params("summary", lambda s: s.folds > 0), indirect=True)
def test_the_gauge_and_the_curve_count_the_summary_that_stands_for_what_a_fold_put_away(imported, owner):
    """The model sees the latest summary (DESIGN: the loaded segment), whether the log wrote it as
    a message (Claude Code, Codex, LangGraph, OpenHands, opencode) or beside the messages
    (efferent's checkpoints, picoclaw's meta file)."""
    conv = imported
    folds = list(conv.folds.select_related("summary_message").order_by("position", "pk"))
    calls = list(conv.model_calls.order_by("position").values_list("position", "estimated_context"))

    def summary_at(fold) -> int:  # where the summary enters the window
        return fold.summary_message.position if fold.summary_message else fold.position

    def summary_tokens(fold) -> int:
        return fold.summary_message.token_total if fold.summary_message else count_text(fold.summary_text)

    # The curve's estimate of a call after a summary holds at least the summary.
    for position, estimated in calls:
        before = [f for f in folds if summary_at(f) < position and f.summary_text]
        if before:
            fold = before[-1]
            assert estimated >= summary_tokens(fold), f"call at {position} after the fold at {fold.position}"
    # The gauge of the latest call (or of the estimate, with no call) has a summary bar.
    latest = folds[-1]
    if latest.summary_text and (not calls or calls[-1][0] >= summary_at(latest)):
        html = owner.get(reverse("conversation", args=[conv.pk])).content.decode()
        gauge = html[html.index('<svg class="gauge"'):]
        gauge = gauge[:gauge.index("</svg>")]
        assert 'class="cat cat-summary"' in gauge

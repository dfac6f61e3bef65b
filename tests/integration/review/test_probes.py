"""Fact probes on real folds: facts checked by hand, the probes job after an import, the command.

Hand check of oneryalcin__fasthooks__sample_main_transcript.jsonl (one fold at position 48, five
turns put away). Read in the archived segment and looked for in the summary:
- turn 0, `ls -la` output lists README.md, fibonacci.py, hello.py ...: the summary names none of
  them (it says "Python files, JavaScript files, documentation") -> lost paths.
- turn 1, Write /workspace/hello_world.py: the summary names `/workspace/hello_world.py` -> kept.
- turn 3, `cat nonexistent.txt` and "cat: nonexistent.txt: No such file or directory": both quoted
  in the summary -> kept error; the command is a lookup (tier C, background): not in the lost list.
- turn 4, Bash `python3 /workspace/number_generator.py`: the summary says "retried with python3"
  and names the file, but never the command -> lost command.
- turn 4, "/bin/bash: line 1: python: command not found": the summary quotes
  "python: command not found" -> kept error (the shell prefix is normalized away).
- turn 4, the decision "... but let me try with `python3`": the summary states it ("Fixed by using
  python3 instead") -> kept decision.
- turn 4, numbers "4 lines" and "179 bytes" from the answer: both in the summary -> kept.
"""

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from contextviewer.ingest import files as ingest, imports as conv_services
from contextviewer.conversations.models import Conversation, Fold
from contextviewer.jobs.models import Job, JobStatus
from contextviewer.review import probes
from contextviewer.review.models import FactProbe
from tests.worker import wait_for

FASTHOOKS = "claude-code/oneryalcin__fasthooks__sample_main_transcript.jsonl"
SESSION = "c45af7b1-cb7c-4e51-93db-8cbb250a877a"


def _facts(probe):
    return {(f["kind"], f["text"]): f for f in probe.facts}


@pytest.mark.django_db
def test_hand_checked_facts_of_the_fasthooks_fold(project, fixtures_dir):
    ingest.import_path(project, fixtures_dir / FASTHOOKS)
    fold = Fold.objects.get(conversation__external_id=SESSION)
    probe = probes.probe_for(fold)
    facts = _facts(probe)

    def kept(kind, text, turn):
        fact = facts[(kind, text)]
        assert fact["turn"] == turn, (kind, text, fact["turn"])
        return fact["kept"]

    for lost_path in ("README.md", "fibonacci.py", "hello.py", "IMPLEMENTATION_REPORT.md"):
        assert not kept("path", lost_path, 0)
    assert kept("path", "/workspace/hello_world.py", 1)
    assert ("command", "cat nonexistent.txt") not in facts  # a lookup: background, not stored
    assert all(f["tier"] in {"A", "B"} for f in probe.facts)
    assert kept("error", "cat: nonexistent.txt: No such file or directory", 3)
    assert not kept("command", "python3 /workspace/number_generator.py", 4)
    assert kept("error", "python: command not found", 4)
    decision = next(f for f in probe.facts if f["kind"] == "decision" and "let me try with `python3`" in f["text"])
    assert decision["kept"] and decision["turn"] == 4
    assert kept("number", "4 lines", 4) and kept("number", "179 bytes", 4)

    per_kind = probe.per_kind
    assert per_kind["path"]["kept"] < per_kind["path"]["total"]
    assert per_kind["decision"]["retention"] == 1.0
    total = sum(k["total"] for k in per_kind.values())
    assert probe.retention == pytest.approx(sum(k["kept"] for k in per_kind.values()) / total)
    assert probe.summary_tokens > 1000  # the summary is long; the figure is counted, not taken from the log
    assert probe.compression_ratio == pytest.approx(probe.folded_tokens / probe.summary_tokens)


@pytest.mark.django_db
def test_probes_command_text_and_json(project, fixtures_dir):
    ingest.import_path(project, fixtures_dir / FASTHOOKS)
    out = StringIO()
    call_command("probes", SESSION, stdout=out)
    text = out.getvalue()
    assert "retention" in text and "compression" in text and "summary" in text
    assert "turn   0  path       README.md" in text
    assert "python3 /workspace/number_generator.py" in text
    conv = Conversation.objects.get(external_id=SESSION)
    out = StringIO()
    call_command("probes", str(conv.pk), "--json", stdout=out)
    data = json.loads(out.getvalue())
    (fold,) = data["folds"]
    assert fold["per_kind"]["path"]["total"] > fold["per_kind"]["path"]["kept"]
    assert any(f["kind"] == "path" and f["text"] == "README.md" and f["turn"] == 0 for f in fold["lost"])
    assert not any(f["text"] == "/workspace/hello_world.py" for f in fold["lost"])
    with pytest.raises(CommandError, match="No conversation with id or external id 'nope'"):
        call_command("probes", "nope")


@pytest.mark.django_db
def test_a_conversation_without_folds_says_so(project):
    from tests.factories import build_conversation

    built = build_conversation(project, turns=2, fold_at=10**9)
    out = StringIO()
    call_command("probes", built.conversation.external_id, stdout=out)
    assert "no folds" in out.getvalue()


@pytest.mark.django_db
def test_a_missing_or_stale_probe_is_computed_when_read(project):
    from tests.factories import build_conversation

    built = build_conversation(project, turns=8, fold_at=20_000)
    fold = built.conversation.folds.first()
    assert fold is not None and not FactProbe.objects.filter(fold=fold).exists()
    probe = probes.probe_for(fold)
    assert probe.facts and FactProbe.objects.filter(fold=fold).count() == 1
    FactProbe.objects.filter(pk=probe.pk).update(version=0, retention=None)
    assert probes.probe_for(fold).retention is not None


def test_an_import_that_brings_folds_runs_the_probes_job(project, user, worker, fixtures_dir):
    job, _ = conv_services.start_import(project, paths=[str(fixtures_dir / FASTHOOKS)], user=user)
    wait_for(lambda: Job.objects.filter(kind="probes", status=JobStatus.SUCCEEDED).exists(), message="probes job")
    probes_job = Job.objects.get(kind="probes")
    fold = Fold.objects.get(conversation__external_id=SESSION)
    assert probes_job.result["folds"][0]["fold_id"] == fold.pk
    assert FactProbe.objects.get(fold=fold).retention == pytest.approx(probes_job.result["folds"][0]["retention"])
    # Importing the same file again brings no new fold: no second probes job.
    again, _ = conv_services.start_import(project, paths=[str(fixtures_dir / FASTHOOKS)], user=user)
    wait_for(lambda: Job.objects.get(pk=again.pk).is_finished, message="second import")
    assert Job.objects.filter(kind="probes").count() == 1


def test_enqueue_probes_after_a_handoff_style_fold(project, user, worker):
    from tests.factories import build_conversation

    built = build_conversation(project, turns=4, fold_at=10**9)
    conv = built.conversation
    assert probes.enqueue_probes(conv) is None  # no folds, no job
    last = conv.messages.order_by("-position").first()
    Fold.objects.create(
        conversation=conv, key="handoff:test", position=last.position, origin="generated", kind="handoff",
        summary_text="Goal: fix module_1.py. State: pytest tests/test_module_1.py -q passes.",
    )
    job = probes.enqueue_probes(conv, user=user)
    done = wait_for(lambda: Job.objects.filter(pk=job.pk, status=JobStatus.SUCCEEDED).first(), message="probes job")
    assert done.result["folds"][0]["facts"] > 0


@pytest.mark.django_db
def test_the_review_screen_of_a_real_fold_highlights_its_lost_facts(project, user, client, fixtures_dir):
    import re

    ingest.import_path(project, fixtures_dir / FASTHOOKS)
    fold = Fold.objects.get(conversation__external_id=SESSION)
    client.force_login(user)
    page = client.get(f"/review/folds/{fold.pk}/").content.decode()
    lost = re.findall(r'<li class="fact lost">.*?<div class="fact-text">(.*?)</div>', page, re.S)
    kept = re.findall(r'<li class="fact kept">.*?<div class="fact-text">(.*?)</div>', page, re.S)
    assert "README.md" in lost and "python3 /workspace/number_generator.py" in lost
    assert "/workspace/hello_world.py" in kept and "README.md" not in kept
    assert 'id="turn-4"' in page  # the facts link to their turns in the archived segment


# Hand check of marot__spotter__ae4a77f8 (the fold at position 411; cwd .../spotter-4te). Every
# file a tool touched in the archived segment (Read/Write/Edit `file_path`, and the files the Bash
# commands grep, check or source), looked for in the summary by reading it. Kept: the summary names
# the file by its relative path or by a basename no other tier A/B path of the segment has. Lost:
# not named. The vendored files under deps/ are tier C (background): not in the stored facts.
# Left out on purpose: /proc/sys/kernel/random/uuid (a file without a file-like name, read only by
# a shell script), directories searched (deps/opentelemetry, spotter-plugin/scripts).
SPOTTER_4TE = "claude-code/marot__spotter__ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl"
SPOTTER_4TE_PATHS = {
    "mix.exs": True,  # "mix.exs (OTEL deps added)"
    "lib/spotter/application.ex": True,
    "config/config.exs": True,
    "config/dev.exs": True,  # "**config/dev.exs**"
    "config/test.exs": True,
    "config/runtime.exs": True,
    "lib/spotter/telemetry/otel.ex": True,
    "spotter-plugin/scripts/notify-session.sh": True,
    "spotter-plugin/scripts/tool-call-capture.sh": True,
    "spotter-plugin/scripts/post-tool-capture.sh": True,
    "spotter-plugin/scripts/lib/trace_context.sh": True,
    "lib/spotter_web/controllers/session_hook_controller.ex": True,
    "lib/spotter_web/controllers/hooks_controller.ex": True,
    "lib/spotter_web/controllers/otel_trace_helpers.ex": True,
    ".dialyzerignore": True,  # no extension; written by Write, named as "`.dialyzerignore`"
    "mix.lock": False,  # grep -A 2 opentelemetry_bandit mix.lock: never named
}
SPOTTER_4TE_VENDORED = (  # read or grepped, never named: background
    "deps/opentelemetry_api/src/opentelemetry.erl",
    "deps/opentelemetry_bandit/lib/opentelemetry_bandit.ex",  # the package is named, not the file
    "deps/opentelemetry_api/src/otel_propagator_baggage.erl",
    "deps/opentelemetry/src/otel_configuration.erl",
    "deps/opentelemetry/README.md",  # "per the opentelemetry README": not the path
)
# Words with slashes in the segment's commands and prose that are not files.
SPOTTER_4TE_NOT_PATHS = (
    "deps/opentelemetry", "spotter-plugin/scripts", "event/script", "missing/invalid", "with_span/2-3",
    "/api/hooks/tool-call", "/api/hooks/commit-event", "Mix.env", "/proc/sys/kernel/random/uuid",
)


@pytest.mark.django_db
def test_hand_checked_paths_of_the_spotter_fold_precision_and_recall(project, fixtures_dir):
    ingest.import_path(project, fixtures_dir / SPOTTER_4TE)
    fold = Fold.objects.get(conversation__external_id="ae4a77f8-aedd-4bc1-888f-c94edc91af04", kind="compact")
    probe = probes.probe_for(fold)
    paths = {f["key"]: f for f in probe.facts if f["kind"] == "path"}
    assert set(SPOTTER_4TE_PATHS) <= set(paths), set(SPOTTER_4TE_PATHS) - set(paths)
    for word in SPOTTER_4TE_NOT_PATHS + SPOTTER_4TE_VENDORED:
        assert word not in paths and not any(f["text"] == word for f in paths.values()), word
    # One fact per file, however it was written (absolute in the tool call, relative in prose).
    assert not any(f["text"].endswith("/spotter-4te/mix.exs") and key != "mix.exs" for key, f in paths.items())

    lost_by_hand = {p for p, kept in SPOTTER_4TE_PATHS.items() if not kept}
    lost_by_probe = {p for p, f in paths.items() if not f["kept"]}  # the whole default lost list
    recall = len(lost_by_probe & lost_by_hand) / len(lost_by_hand)
    precision = len(lost_by_probe & lost_by_hand) / len(lost_by_probe)
    assert (recall, precision) == (1.0, 1.0), (lost_by_probe - lost_by_hand, lost_by_hand - lost_by_probe)


@pytest.mark.django_db
def test_two_builtin_handoffs_over_the_spotter_segment_keep_what_was_folded(project, fixtures_dir):
    """The archived segment of the real fold, folded in two builtin handoffs (first half, then the
    first summary plus the second half): the second summary keeps 90 % of the paths and commands of
    both halves, as the probes measure them (tiers A and B: the files changed, read or named, the
    actions and other commands; lookups and vendored files are background)."""
    from contextviewer.core import facts as core_facts, handoff as core
    from contextviewer.providers.builtin import BuiltinProvider

    ingest.import_path(project, fixtures_dir / SPOTTER_4TE)
    fold = Fold.objects.get(conversation__external_id="ae4a77f8-aedd-4bc1-888f-c94edc91af04", kind="compact")
    messages = [probes._plain(m) for m in probes.segment_messages(fold)]
    half = len(messages) // 2
    first, second = messages[:half], messages[half:]

    def handoff(entries):
        system, prompt = core.build_prompt(core.render_transcript(entries))
        return BuiltinProvider().complete(system=system, prompt=prompt, role="handoff").text

    def entries(ms):
        return core.entries_from_messages((m["role"], m["blocks"], m["is_meta"], False) for m in ms)

    s1 = handoff(entries(first))
    s2 = handoff([core.Entry("summary", s1)] + entries(second))
    per_kind = core_facts.probe(first + second, s2, cwd=fold.conversation.cwd).per_kind()
    assert per_kind["command"]["total"] >= 20 and per_kind["path"]["total"] >= 15
    assert per_kind["command"]["retention"] >= 0.9 and per_kind["path"]["retention"] >= 0.9, per_kind
    assert len(s2) < sum(len(b.get("text") or "") for m in messages for b in m["blocks"]) / 10  # still a summary

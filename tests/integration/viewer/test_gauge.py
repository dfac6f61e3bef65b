"""The calibrated gauge (issue 11): one harness overhead per segment, a fitted tokenizer factor
that scales the categories to the measured total, Claude Code's system prompt and tools from a
captured request, unmeasured calls as estimates, a handoff's summary in the gauge, and the latest
call's own output left out of its input."""

from __future__ import annotations

import json
import re

import pytest
from django.test import override_settings

from contextviewer.conversations import calibration
from contextviewer.viewer import conversation_page
from contextviewer.ingest import files as ingest
from contextviewer.jobs import queue as jobs
from contextviewer.conversations.models import Conversation
from contextviewer.jobs.models import Job
from contextviewer.core import budget
from tests.sessions import SessionBuilder, session_lines, write_lines

pytestmark = pytest.mark.django_db

REAL = "claude-code/marot__spotter__4d5611e5-241a-462a-8d15-5122611a9569.jsonl"


def _gauge_text(html: str) -> str:
    card = html.split('id="gauge-card"', 1)[1].split("</section>", 1)[0]
    return " ".join(re.sub(r"<[^>]+>", " ", card).split())


@pytest.fixture
def real(project, fixtures_dir):
    ingest.import_path(project, fixtures_dir / REAL)
    return Conversation.objects.get(project=project, parent__isnull=True, external_id__startswith="4d5611e5")


def test_real_session_categories_add_up_to_the_measurement(real):
    page = conversation_page.conversation_page(real)
    g = page.gauge.gauge
    assert g.is_measured
    assert abs(sum(g.scaled.values()) - g.measured) <= 0.01 * g.measured
    assert sum(t for key, _label, t in g.bar() if key not in ("free", "output_reserve")) == pytest.approx(g.measured, rel=0.01)


def test_real_session_factor_is_fitted_between_1_1_and_1_6(real):
    fitted = calibration.calibration(real)
    assert fitted.calls > 100
    assert 1.1 <= fitted.factor <= 1.6  # o200k counts fewer tokens than Claude's tokenizer


def test_real_session_overhead_is_measured_once_per_segment_not_a_growing_gap(real):
    fitted = calibration.calibration(real)
    calls = list(real.model_calls.order_by("position").values_list("position", "input_uncached", "cache_write", "cache_read", "estimated_context"))
    first_segment = [(pos, a + b + c, est) for pos, a, b, c, est in calls if fitted.segment_of(pos) == 0 and a + b + c]
    first_pos, first_measured, first_est = first_segment[0]
    # The overhead is the residual at the segment's first call ...
    assert fitted.overhead_at(0) == pytest.approx(first_measured - fitted.factor * first_est, abs=1)
    assert fitted.overhead_at(0) < 30_000
    # ... while the raw gap grows to far more by the segment's end: that growth is the tokenizer.
    last_gap = first_segment[-1][1] - first_segment[-1][2]
    assert last_gap > fitted.overhead_at(0) + 15_000
    # At the latest call the gauge shows its segment's overhead, not the gap of that call.
    g = conversation_page.conversation_page(real).gauge.gauge
    unlogged = g.scaled["system_prompt"] + g.scaled["tool_definitions"] + g.scaled["harness_overhead"]
    assert unlogged == g.overhead == fitted.overhead_at(fitted.segment_of(real.model_calls.order_by("-position").first().position))
    assert unlogged < g.measured - g.estimate - 10_000  # the old "overhead" was ~55k here
    assert unlogged < 64_000


def test_real_session_page_shows_the_factor_and_the_captured_prompt(client, user, real):
    client.force_login(user)
    text = _gauge_text(client.get(f"/c/{real.pk}/").content.decode())
    factor = float(re.search(r"Tokenizer factor ×([\d.]+)", text).group(1))
    assert 1.1 <= factor <= 1.6
    assert f"o200k counts ×{1 / factor:.2f}" in text or "o200k counts ×" in text
    assert re.search(r"system prompt [\d.,]+k?", text) and re.search(r"tool definitions [\d.,]+k?", text)
    assert "captured request" in text and "(this session: 2.1.39)" in text


def test_without_the_captured_files_the_prompt_is_not_available_not_zero(client, user, project, tmp_path):
    path = tmp_path / "s.jsonl"
    write_lines(path, session_lines(4))
    ingest.import_file(project, path)
    conv = Conversation.objects.get()
    client.force_login(user)
    with override_settings(SCHEMAS_DIR=tmp_path / "no-schemas"):
        text = _gauge_text(client.get(f"/c/{conv.pk}/").content.decode())
    assert "system prompt not available" in text and "tool definitions not available" in text
    assert "system prompt 0" not in text


def test_a_reimported_export_is_estimated_never_zero_measured(client, user, project, tmp_path):
    # The Claude Code exporter writes usage {"input_tokens": 0, "output_tokens": 0} on an assistant
    # message without a recorded call (a built conversation): its re-import has usage 0 throughout.
    zero = {"input_tokens": 0, "output_tokens": 0}
    lines = []
    for line in session_lines(3):
        record = json.loads(line)
        if record["type"] == "assistant":
            record["message"]["usage"] = zero
        lines.append(json.dumps(record))
    path = tmp_path / "export.jsonl"
    write_lines(path, lines)
    ingest.import_path(project, path)
    conv = Conversation.objects.get(agent="claude-code")
    assert conv.model_calls.exists() and all(c.context_size == 0 for c in conv.model_calls.all())
    assert calibration.calibration(conv).factor is None
    client.force_login(user)
    page = client.get(f"/c/{conv.pk}/").content.decode()
    figures = page.split('class="gauge-figures"', 1)[1].split("</p>", 1)[0]
    assert "estimated" in figures and "measured" not in figures
    assert "No measured usage" in _gauge_text(page)


def test_after_a_handoff_the_summary_is_its_own_category(client, user, project, tmp_path):
    path = tmp_path / "s.jsonl"
    write_lines(path, session_lines(6))
    ingest.import_file(project, path)
    conv = Conversation.objects.get()
    before = conversation_page.conversation_page(conv).gauge.gauge
    client.force_login(user)
    client.post(f"/c/{conv.pk}/handoff/", {"provider": "builtin"})
    jobs.run(Job.objects.get(kind="handoff").pk)
    g = conversation_page.conversation_page(conv).gauge.gauge
    assert not g.is_measured  # the latest measurement was of the window before the fold
    assert g.scaled["summary"] > 0
    assert g.scaled["harness_overhead"] <= before.overhead  # the segment's overhead, not the whole window
    assert g.used < before.used
    text = _gauge_text(client.get(f"/c/{conv.pk}/").content.decode())
    assert re.search(r"summary [\d.,]+", text)


def test_the_latest_calls_own_output_is_not_its_input(project, tmp_path):
    b = SessionBuilder()
    lines = session_lines(2, b)
    lines.append(b.user("Write the report."))
    lines += b.assistant("report " * 3000)  # the latest call's output: about 3,000 tokens
    path = tmp_path / "s.jsonl"
    write_lines(path, lines)
    ingest.import_file(project, path)
    conv = Conversation.objects.get()
    g = conversation_page.conversation_page(conv).gauge.gauge
    assert g.categories["assistant"] < 200  # only the earlier, short replies
    latest = conv.model_calls.order_by("-position").first()
    assert g.estimate == latest.estimated_context  # the same input as the curve's estimate


def test_fit_of_a_session_without_folds_has_one_segment(project, tmp_path):
    path = tmp_path / "s.jsonl"
    write_lines(path, session_lines(5))
    ingest.import_file(project, path)
    fitted = calibration.calibration(Conversation.objects.get())
    assert fitted.folds == () and [i for i, _o in fitted.overheads] == [0]
    assert isinstance(fitted, budget.Calibration)


def test_an_import_counts_the_captured_prompt_so_the_first_page_needs_no_tokenizer(
    client, user, project, tmp_path, fixtures_dir, monkeypatch
):
    """The import has the tokenizer loaded; a web process that has not does not load it (0.3 s) to
    show the captured system prompt and tools on the first page."""
    from django.core.cache import cache

    from contextviewer.ingest import imports as services
    from contextviewer.core import captured, tokens

    cache.clear()
    path = tmp_path / "s.jsonl"
    write_lines(path, session_lines(4))
    job, _ = services.start_import(project, paths=[str(path)], enqueue=False)
    assert jobs.run(job.pk).status == "succeeded"
    conv = Conversation.objects.get(project=project)
    captured._count.cache_clear()  # a new process: nothing counted in memory

    def no_tokenizer(*args, **kwargs):
        raise AssertionError("the page loaded the tokenizer")

    monkeypatch.setattr(tokens, "count_text", no_tokenizer)
    client.force_login(user)
    text = _gauge_text(client.get(f"/c/{conv.pk}/").content.decode())
    assert re.search(r"system prompt [\d.,]+k?", text) and "captured request" in text

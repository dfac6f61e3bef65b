"""The LLM judge of a fold: recall of the probe's facts and precision of the summary's statements,
judged over the whole archived segment, stored as a JudgeRun with its own transcript and spend.
Needs a provider that reads (project_provider): the builtin one only writes summaries."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from contextviewer.accounts.models import Project
from contextviewer.conversations.models import Fold, Message
from contextviewer.jobs import queue as jobs
from contextviewer.jobs.models import Job
from contextviewer.providers import services as provider_services
from contextviewer.review.errors import ReviewError
from contextviewer.review.models import RUBRIC, FactProbe, JudgeRun
from contextviewer.review.probes import probe_for, segment_messages

JUDGE_SYSTEM = (
    "You judge a context compaction: a summary that replaced a segment of an AI coding agent's "
    "transcript. Judge only from the segment given. Answer with one JSON object and nothing else."
)
JUDGE_SEGMENT_LIMIT = 120_000  # characters of flat transcript sent to the judge


def flat_transcript(messages: Iterable[Message], limit: int = JUDGE_SEGMENT_LIMIT) -> str:
    """The segment as one flat transcript (USER:/ASSISTANT:/TOOL lines), head and tail kept when long."""
    lines = []
    for m in messages:
        for b in m.blocks or ():
            kind, text = b.get("kind"), (b.get("text") or "")
            if kind == "thinking" or not text:
                continue
            if kind == "tool_call":
                lines.append(f"TOOL CALL {b.get('tool_name', '')}: {text}")
            elif kind == "tool_result":
                lines.append(f"TOOL RESULT: {text}")
            else:
                lines.append(f"{m.role.upper()}: {text}")
    flat = "\n".join(lines)
    if len(flat) > limit:
        half = limit // 2
        flat = flat[:half] + f"\n[... {len(flat) - limit} characters cut ...]\n" + flat[-half:]
    return flat


def judge_prompt(fold: Fold, probe: FactProbe, messages: list[Message]) -> str:
    listed = [{"id": i, "kind": f["kind"], "fact": f["text"][:300]} for i, f in enumerate(probe.facts[:200])]
    return (
        "<segment>\n" + flat_transcript(messages) + "\n</segment>\n\n"
        "<summary>\n" + (fold.summary_text or "") + "\n</summary>\n\n"
        "<facts>\n" + json.dumps(listed, ensure_ascii=False) + "\n</facts>\n\n"
        "1. For each fact, say whether the summary keeps it (states it, not merely a word of it).\n"
        "2. Split the summary into its factual statements; say whether the segment supports each.\n"
        "3. Score the summary 1-5 on: " + ", ".join(RUBRIC) + ".\n"
        'Answer: {"facts": [{"id": 0, "kept": true}], "statements": [{"text": "...", "supported": true}], '
        '"rubric": {"goal": 1, "constraints": 1, "decisions": 1, "state": 1, "next_steps": 1, "important_details": 1}}'
    )


def parse_judge_answer(answer: str, fact_count: int) -> dict:
    """recall, precision and rubric from the judge's JSON (tolerating a fenced or wrapped object)."""
    match = re.search(r"\{.*\}", answer or "", re.S)
    if not match:
        raise ReviewError("The judge's answer holds no JSON object.")
    try:
        data = json.loads(match.group(0))
    except json.JSONDecodeError as exc:
        raise ReviewError(f"The judge's answer is not valid JSON: {exc}") from exc
    judged = [f for f in data.get("facts") or [] if isinstance(f, dict) and isinstance(f.get("id"), int)]
    kept = {f["id"] for f in judged if f.get("kept") is True and 0 <= f["id"] < fact_count}
    statements = [s for s in data.get("statements") or [] if isinstance(s, dict)]
    rubric = {}
    for key in RUBRIC:
        value = (data.get("rubric") or {}).get(key)
        if isinstance(value, int | float) and 1 <= value <= 5:
            rubric[key] = value
    return {
        "recall": (len(kept) / fact_count) if fact_count else None,
        "precision": (sum(1 for s in statements if s.get("supported") is True) / len(statements)) if statements else None,
        "rubric": rubric,
        "details": {"facts": judged[:500], "statements": statements[:200]},
    }


def judge_fold(fold: Fold, provider, *, job: Job | None = None) -> JudgeRun:
    """Ask `provider` (contextviewer.providers.base.Provider) to judge the fold; store the run."""
    probe = probe_for(fold)
    messages = segment_messages(fold)
    prompt = judge_prompt(fold, probe, messages)
    completion = _complete(provider, fold, prompt, job)
    spend = {
        "input_tokens": completion.input_tokens,
        "output_tokens": completion.output_tokens,
        "cache_read_tokens": completion.cache_read_tokens,
        "cache_write_tokens": completion.cache_write_tokens,
        "cost_usd": completion.cost_usd,
    }
    run = JudgeRun(
        project_id=fold.conversation.project_id,
        fold=fold,
        job=job,
        provider=getattr(provider, "name", ""),
        model=completion.model,
        prompt=prompt,
        answer=completion.text,
        spend=spend,
    )
    try:
        parsed = parse_judge_answer(completion.text, len(probe.facts[:200]))
    except ReviewError as exc:
        run.details = {"error": str(exc)}
        run.save()
        raise
    run.recall, run.precision, run.rubric, run.details = parsed["recall"], parsed["precision"], parsed["rubric"], parsed["details"]
    run.save()
    return run


def _complete(provider, fold: Fold, prompt: str, job: Job | None):
    """Through the providers service (bounded retries, spend in the ledger by role)."""
    return provider_services.complete(
        provider, project=fold.conversation.project, role="judge", system=JUDGE_SYSTEM, prompt=prompt,
        max_tokens=4096, job=job, conversation=fold.conversation,
    )


def start_judge(fold: Fold, *, user=None) -> Job:
    job, _ = jobs.create_job(fold.conversation.project, "judge", {"fold_id": fold.pk}, user=user)
    return job


def project_provider(project: Project):
    """The project's provider for the judge; ReviewError saying why when there is none that reads."""
    provider = provider_services.get_provider(project)
    if provider is None or provider.name == "builtin":
        # The builtin provider writes summaries offline; it cannot read and judge one.
        raise ReviewError(
            "The judge needs an LLM provider (OpenAI-compatible or Anthropic): set one as this project's default."
        )
    return provider


def run_judge(job: Job, progress) -> dict:
    fold = Fold.objects.select_related("conversation").filter(pk=job.params.get("fold_id"), conversation__project=job.project).first()
    if fold is None:
        raise ReviewError("The fold no longer exists.")
    existing = JudgeRun.objects.filter(job=job).first()
    if existing is not None:  # run twice: one result
        return {"judge_run_id": existing.pk, "recall": existing.recall, "precision": existing.precision}
    progress(0.1, "asking the judge")
    run = judge_fold(fold, project_provider(job.project), job=job)
    return {"judge_run_id": run.pk, "recall": run.recall, "precision": run.precision, "rubric": run.rubric}

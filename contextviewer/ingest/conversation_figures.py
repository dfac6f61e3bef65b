"""A conversation's index figures (message, call and fold counts, peak context, spend, window) and
each model call's estimated context, set from its rows after an import writes them (row_writer.py)."""

from __future__ import annotations

from django.db import connection

from contextviewer.core import harness
from contextviewer.importers import formats
from contextviewer.conversations import segments
from contextviewer.conversations.models import Conversation, ModelCall


def refresh_figures(conversation: Conversation, token_totals: list[tuple[int, int]] | None = None) -> None:
    """Recompute the index figures and the estimated context of every model call.

    `token_totals`: (position, token_total) of every message in position order when the caller
    holds them all (a first import), else they are read back."""
    calls = list(
        conversation.model_calls.order_by("position", "pk").values_list(
            "pk", "position", "estimated_context", "input_uncached", "cache_write", "cache_read", "output"
        )
    )
    estimates = []
    if calls:
        # The loaded view at each call, from the one loader of folds (window.py).
        estimates = segments.call_estimates(conversation, [c[1] for c in calls], token_totals)
        changed = [(estimate, call[0]) for call, estimate in zip(calls, estimates) if call[2] != estimate]
        if changed:
            with connection.cursor() as cursor:
                cursor.executemany(
                    f"UPDATE {connection.ops.quote_name(ModelCall._meta.db_table)} SET estimated_context = %s WHERE id = %s",
                    changed,
                )
    # Real folds only: a summary written again (kind "alternative") stands beside one, not in the count.
    set_figures(
        conversation, [(*call[3:], estimate) for call, estimate in zip(calls, estimates)],
        message_count=conversation.messages.count(),
        fold_count=conversation.refresh_fold_count(save=False),
    )
    conversation.save(update_fields=FIGURES)


# The index's figures of a conversation (set_figures).
FIGURES = [
    "message_count", "model_call_count", "fold_count", "peak_context", "measured_calls", "spend_tokens", "window",
]


def set_figures(conversation: Conversation, calls: list[tuple], *, message_count: int, fold_count: int) -> None:
    """Set FIGURES (not saved) from the conversation's calls, each (input_uncached, cache_write,
    cache_read, output, estimated_context), and its counts.

    A call whose usage records no prompt tokens is not measured (a log without usage stores its
    calls with none; a prompt of 0 tokens is no real call's). The peak is the largest measured
    prompt; when no call has one, the largest estimated context, marked as an estimate."""
    conversation.message_count = message_count
    conversation.model_call_count = len(calls)
    conversation.fold_count = fold_count
    prompts = [uncached + write + read for uncached, write, read, _out, _estimate in calls]
    measured_peak = max(prompts, default=0)
    conversation.measured_calls = sum(1 for prompt in prompts if prompt > 0)
    conversation.peak_context = (
        max(call[4] for call in calls) if conversation.peak_estimated else measured_peak
    )
    if conversation.window is None and conversation.model_names:
        # Any of its models may be one its harness ran in a smaller window than the API's (a Claude
        # Code session on claude-opus-4-6, 1M by the API, with a haiku call after it ran in 200k).
        rules = formats.harness(conversation.agent)
        conversation.window = next(
            (ran for model in reversed(conversation.model_names)
             if (ran := harness.harness_window(rules, model, measured_peak)) is not None),
            None,
        )
    conversation.spend_tokens = sum(sum(call[:4]) for call in calls)

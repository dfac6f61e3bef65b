"""The gauge's calibration from the database: the conversation's tokenizer factor and the harness
overhead of each segment (core/budget.fit over its model calls), and the system prompt and tool
definitions a harness does not log (Claude Code: from a captured request, core/captured.py, read
where settings.SCHEMAS_DIR points; never copied into the project)."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache

from contextviewer.core import budget, captured
from contextviewer.importers import formats

from contextviewer.conversations import segments as loader
from contextviewer.conversations.models import Conversation, ModelCall



def calibration(conv: Conversation) -> budget.Calibration:
    """Fitted over the conversation's measured calls; segments cut at the folds the calls saw."""
    rows = ModelCall.objects.filter(conversation=conv).order_by("position", "id").values_list(
        "position", "input_uncached", "cache_write", "cache_read", "estimated_context"
    )
    calls = (
        (pos, budget.measured_context(a, b, c) or None, est) for pos, a, b, c, est in rows.iterator(chunk_size=5000)
    )
    folds = [span.position for span in loader.curve_fold_spans(conv)]
    return budget.fit(calls, folds)


@dataclass(frozen=True)
class UnloggedPrompt:
    """The system prompt and tool definitions the log does not hold, in o200k tokens."""

    tokens: tuple[int, int] | None  # (system prompt, tool definitions); None: not available
    unavailable: tuple[str, ...] = ()
    version: str | None = None  # the capture's CLI version
    exact: bool = False  # the session's own version
    tools: int = 0


NONE = UnloggedPrompt(None)


def unlogged_prompt(conv: Conversation) -> UnloggedPrompt:
    folder = formats.harness(conv.agent).captured_prompt  # a harness that leaves them out of its log
    if folder is None:
        return NONE
    found = captured.captured_prompt(getattr(settings, "SCHEMAS_DIR", None), folder, conv.cli_version or None, cache)
    if found is None:
        return UnloggedPrompt(None, ("system_prompt", "tool_definitions"))
    return UnloggedPrompt((found.system_prompt, found.tool_definitions), (), found.version, found.exact, found.tools)


def unlogged_prompt_stamp(conv: Conversation) -> tuple:
    """What `unlogged_prompt(conv)` reads on disk, as it is now (core/captured.captures_stamp): part
    of the version a kept page or fragment of the conversation is kept under (page_cache)."""
    folder = formats.harness(conv.agent).captured_prompt
    return () if folder is None else captured.captures_stamp(getattr(settings, "SCHEMAS_DIR", None), folder)


def after_import(conversations) -> None:
    """Count, once, the unlogged prompt of each CLI version just imported, while the import has the
    tokenizer loaded: the first page of these conversations then reads the counts from the cache."""
    seen = set()
    for conv in conversations:
        if formats.harness(conv.agent).captured_prompt and (conv.agent, conv.cli_version) not in seen:
            seen.add((conv.agent, conv.cli_version))
            unlogged_prompt(conv)


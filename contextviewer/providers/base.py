"""The interface every LLM provider implements (builtin offline, openai-compatible, anthropic).

Pure of Django: a provider gets its configuration as plain values. The Django side
(contextviewer/providers/services.py) picks the provider configured for a project, records the
spend of every call by role, and hands providers to jobs (handoff, title, judge).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol


class ProviderError(Exception):
    """A call failed in a way a person should read (shown on the job)."""


class RetryableProviderError(ProviderError):
    """Rate limit, overload, 5xx, timeout: the job may retry with backoff."""


@dataclass
class Completion:
    text: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = None
    raw: dict = field(default_factory=dict)  # the provider's response, for the job's transcript


class Provider(Protocol):
    name: str  # "builtin" | "openai" | "anthropic"
    model: str  # the model asked for (the Completion says which one answered)

    def complete(self, *, system: str, prompt: str, role: str, max_tokens: int = 4096) -> Completion:
        """One request: `prompt` is the single user message (the flat transcript for a handoff)."""
        ...

"""Anthropic's Messages API through the official SDK; one HTTP attempt per call (max_retries=0)."""

from __future__ import annotations

import anthropic

from contextviewer.core.secrets import mask_text

from . import ssrf
from .base import Completion, ProviderError, RetryableProviderError
from .openai_provider import price, status_error

DEFAULT_BASE_URL = "https://api.anthropic.com"


class AnthropicProvider:
    name = "anthropic"

    def __init__(
        self, *, base_url: str, api_key: str, model: str, timeout: float = 120.0, checked: ssrf.CheckedURL | None = None
    ):
        self.model = model
        self.base_url = base_url or DEFAULT_BASE_URL
        self.client = anthropic.Anthropic(
            api_key=api_key or "not-set",
            base_url=self.base_url,
            max_retries=0,
            timeout=timeout,
            # see openai_provider: no redirects; a checked base URL is pinned to its checked addresses
            http_client=ssrf.pinned_http_client(anthropic.DefaultHttpxClient, checked, follow_redirects=False)
            if checked
            else anthropic.DefaultHttpxClient(follow_redirects=False),
        )

    def complete(self, *, system: str, prompt: str, role: str, max_tokens: int = 4096) -> Completion:
        system, prompt = mask_text(system), mask_text(prompt)  # no secret of a transcript leaves the server
        try:
            response = self.client.messages.create(
                model=self.model,
                system=system,
                messages=[{"role": "user", "content": prompt}],
                max_tokens=max_tokens,
            )
        except anthropic.APITimeoutError as exc:
            raise RetryableProviderError(f"anthropic: no answer from {self.base_url} before the timeout") from exc
        except anthropic.APIConnectionError as exc:
            raise RetryableProviderError(f"anthropic: could not connect to {self.base_url}: {exc}") from exc
        except anthropic.APIStatusError as exc:
            raise status_error("anthropic", exc) from exc
        except (anthropic.APIResponseValidationError, ValueError, TypeError) as exc:
            raise ProviderError(f"anthropic: the answer from {self.base_url} is not a valid message ({exc})") from exc
        try:
            text = "".join(b.text for b in response.content if getattr(b, "type", None) == "text")
        except (AttributeError, TypeError) as exc:
            raise ProviderError(f"anthropic: the answer from {self.base_url} has no content ({exc})") from exc
        if not text.strip():
            raise ProviderError(f"anthropic: the answer from {self.base_url} is empty")
        usage = getattr(response, "usage", None)
        uncached = getattr(usage, "input_tokens", 0) or 0
        read = getattr(usage, "cache_read_input_tokens", 0) or 0
        write = getattr(usage, "cache_creation_input_tokens", 0) or 0
        output = getattr(usage, "output_tokens", 0) or 0
        model = getattr(response, "model", None) or self.model
        return Completion(
            text=mask_text(text),
            model=model,
            input_tokens=uncached + read + write,
            output_tokens=output,
            cache_read_tokens=read,
            cache_write_tokens=write,
            cost_usd=price(model, uncached, write, read, output),
            raw=response.model_dump() if hasattr(response, "model_dump") else {},
        )

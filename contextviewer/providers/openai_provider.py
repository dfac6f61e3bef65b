"""Any OpenAI-compatible chat completions endpoint (OpenAI, Ollama, vLLM, LM Studio, llama.cpp
server) through the official SDK. One HTTP attempt per call (max_retries=0): retries are counted
and spaced by the caller, so a job never makes more than its budget of attempts."""

from __future__ import annotations

import openai

from contextviewer.core import model_specs
from contextviewer.core.secrets import mask_text

from . import ssrf
from .base import Completion, ProviderError, RetryableProviderError

RETRYABLE_STATUS = {408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529}


def status_error(provider: str, exc: Exception) -> ProviderError:
    """A ProviderError (retryable or not) that says what the server answered."""
    status = getattr(exc, "status_code", None)
    message = getattr(exc, "message", None) or str(exc)
    text = f"{provider} answered HTTP {status}: {message}"[:1000]
    if status in RETRYABLE_STATUS or (status or 0) >= 500:
        return RetryableProviderError(text)
    if status in (401, 403):
        return ProviderError(f"{provider} refused the API key (HTTP {status}): check the key on the project's provider settings")
    return ProviderError(text)


def price(model: str, input_uncached: int, cache_write: int, cache_read: int, output: int) -> float | None:
    spec = model_specs.lookup(model)
    if not getattr(spec, "known", True):
        return None
    try:
        return model_specs.cost(spec, input_uncached, cache_write, 0, cache_read, output)
    except Exception:  # an unpriced model is not an error of the call
        return None


class OpenAIProvider:
    name = "openai"

    def __init__(
        self, *, base_url: str, api_key: str, model: str, timeout: float = 120.0, checked: ssrf.CheckedURL | None = None
    ):
        self.model = model
        self.base_url = base_url
        # No redirects: a checked base URL must not bounce the request to an address the SSRF guard refuses.
        # A checked (user-set) base URL: connect only to the addresses that were checked (no DNS rebinding).
        self.client = openai.OpenAI(
            api_key=api_key or "not-needed",
            base_url=base_url or None,
            max_retries=0,
            timeout=timeout,
            http_client=ssrf.pinned_http_client(openai.DefaultHttpxClient, checked, follow_redirects=False)
            if checked
            else openai.DefaultHttpxClient(follow_redirects=False),
        )

    def complete(self, *, system: str, prompt: str, role: str, max_tokens: int = 4096) -> Completion:
        system, prompt = mask_text(system), mask_text(prompt)  # no secret of a transcript leaves the server
        try:
            response = self.client.chat.completions.create(
                model=self.model,
                messages=[{"role": "system", "content": system}, {"role": "user", "content": prompt}],
                max_tokens=max_tokens,
            )
        except openai.APITimeoutError as exc:
            raise RetryableProviderError(f"openai: no answer from {self.base_url} before the timeout") from exc
        except openai.APIConnectionError as exc:
            raise RetryableProviderError(f"openai: could not connect to {self.base_url}: {exc}") from exc
        except openai.APIStatusError as exc:
            raise status_error("openai", exc) from exc
        except (openai.APIResponseValidationError, ValueError, TypeError) as exc:
            raise ProviderError(f"openai: the answer from {self.base_url} is not a valid chat completion ({exc})") from exc
        try:
            choice = response.choices[0]
            text = choice.message.content or ""
        except (AttributeError, IndexError, TypeError) as exc:
            raise ProviderError(f"openai: the answer from {self.base_url} has no message ({exc})") from exc
        if not isinstance(response.choices, list) or not text.strip():
            raise ProviderError(f"openai: the answer from {self.base_url} is empty")
        usage = getattr(response, "usage", None)
        prompt_tokens = getattr(usage, "prompt_tokens", 0) or 0
        output = getattr(usage, "completion_tokens", 0) or 0
        details = getattr(usage, "prompt_tokens_details", None)
        cached = getattr(details, "cached_tokens", 0) or 0
        model = getattr(response, "model", None) or self.model
        return Completion(
            text=mask_text(text),
            model=model,
            input_tokens=prompt_tokens,
            output_tokens=output,
            cache_read_tokens=cached,
            cost_usd=price(model, prompt_tokens - cached, 0, cached, output),
            raw=response.model_dump() if hasattr(response, "model_dump") else {},
        )

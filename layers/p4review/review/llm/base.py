"""The provider interface the review stage calls, and the errors a provider may raise.

A provider turns one `LlmRequest` (instructions + redacted change text + the ReviewResult
schema) into one `LlmResponse` whose `text` is the model's answer, JSON expected; the answer
always goes through `logic.result_parser`, even when the provider used a structured-output
feature. Providers never retry (SDK retries are off): the stage runtime's attempt budget and
backoff are the retry authority, and the token budget's gate (review/capacity.py) asks
once more after a 429 with Retry-After. Failures are raised as the domain errors below, so the
runtime classifies them like any other stage failure."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from p4review.errors import (
    AuthError,
    ConfigError,
    ErrorClass,
    NonRetryableError,
    RetryableError,
)

# The name of the tool/function whose input is the ReviewResult (Anthropic and Bedrock tool use).
RESULT_TOOL_NAME = "report_review"
RESULT_TOOL_DESCRIPTION = "Report the review of the changelist as a ReviewResult object."


@dataclass(frozen=True)
class LlmRequest:
    system: str  # the rendered prompt template: instructions, versions, schema rules
    user: str  # the redacted change (one chunk of it), lines numbered
    json_schema: dict[str, Any]  # REVIEW_RESULT_SCHEMA, for structured-output features
    max_output_tokens: int
    request_id: str  # deterministic per (job, chunk): logged, sent where a provider takes one


@dataclass(frozen=True)
class LlmResponse:
    text: str  # the answer, JSON text expected (tool-use input is serialized with json.dumps)
    input_tokens: int
    output_tokens: int
    provider: str
    model: str
    stop_reason: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    # Of input_tokens: read from the provider's prompt cache (billed at a fraction), and written to
    # it (Anthropic and Bedrock bill a write at a premium). The rest of input_tokens is uncached.
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0


class LlmProvider(Protocol):
    name: str
    model: str

    def complete(self, request: LlmRequest) -> LlmResponse: ...


# A provider's API key: `key_source(False)` may come from a cache; `key_source(True)` re-reads
# the secret (after a 401: the key may have been rotated). Providers re-read once, no more.
KeySource = Callable[[bool], str]


class ProviderRateLimited(RetryableError):
    """429 / throttling; `retry_after` (seconds) from the provider's Retry-After when given."""

    error_class = ErrorClass.RATE_LIMITED


class ProviderUnavailable(RetryableError):
    """5xx, overloaded, connection failures: try again later."""

    error_class = ErrorClass.UPSTREAM_ERROR


class ProviderTimeout(RetryableError):
    error_class = ErrorClass.NETWORK_TIMEOUT


class ProviderAuthError(AuthError):
    """401/403 that survived one re-read of the key."""


class ProviderPolicyRefusal(NonRetryableError):
    """The provider refused the content (content filter, guardrail, refusal stop reason)."""

    error_class = ErrorClass.POLICY_DENIED


class ContextTooLong(NonRetryableError):
    """The request does not fit the model's context window. Not retried as is: the review
    stage splits the chunk and asks again with less (a single file too large is skipped)."""

    error_class = ErrorClass.SCHEMA_INVALID


class ProviderRequestError(ConfigError):
    """Any other 4xx (unknown model, malformed request): a configuration problem."""


_CONTEXT_TOO_LONG_MARKERS = (
    "context length",
    "context_length",
    "context window",
    "maximum context",
    "too many tokens",
    "too long",
    "prompt is too long",
    "input is too long",
    "reduce the length",
)


def mentions_context_too_long(message: str) -> bool:
    """Providers say "context too long" only in a 400's message; these are their phrasings."""
    lowered = message.lower()
    return any(marker in lowered for marker in _CONTEXT_TOO_LONG_MARKERS)

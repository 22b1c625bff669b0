"""Error handling shared by the HTTP SDK providers (openai, anthropic).

Both SDKs raise the same shapes: a status error carrying `status_code`, `response.headers` and
the decoded error `body`, and a connection error with a timeout subclass. `KeyedClient` runs a
call, re-reads the API key once after a 401/403, and turns SDK failures into the provider errors
of `base`. Error messages carry the HTTP status, the provider's error type/code and at most a
short scrubbed excerpt of its message: never the key, the prompt, or the response body."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, Generic, TypeVar

from p4review.error_text import safe_excerpt
from p4review.errors import P4ReviewError, clamp_retry_after
from p4review.review.llm.base import (
    ContextTooLong,
    KeySource,
    LlmRequest,
    ProviderAuthError,
    ProviderPolicyRefusal,
    ProviderRateLimited,
    ProviderRequestError,
    ProviderTimeout,
    ProviderUnavailable,
    mentions_context_too_long,
)

ClientT = TypeVar("ClientT")
ResultT = TypeVar("ResultT")

AUTH_STATUSES = frozenset({HTTPStatus.UNAUTHORIZED, HTTPStatus.FORBIDDEN})
_POLICY_CODES = frozenset({"content_policy_violation", "content_filter"})
_POLICY_MARKERS = ("content policy", "content management policy", "content filter", "content_filter")

_IDENTIFIER_UNSAFE = re.compile(r"[^\w.:-]+")


@dataclass(frozen=True)
class SdkErrors:
    """The exception classes of one SDK (both are generated from the same template)."""

    base: type[Exception]  # everything the SDK raises (OpenAIError / AnthropicError)
    status: type[Exception]  # APIStatusError: an HTTP answer of 4xx/5xx
    connection: type[Exception]  # APIConnectionError
    timeout: type[Exception]  # APITimeoutError (a subclass of the connection error)


class KeyedClient(Generic[ClientT]):
    """An SDK client built from the current API key, rebuilt with a re-read key after a 401/403."""

    def __init__(
        self, provider: str, model: str, key_source: KeySource, build: Callable[[str], ClientT], errors: SdkErrors
    ):
        self._where = f"{provider} ({model})"
        self._key_source = key_source
        self._build = build
        self._errors = errors
        self._client: ClientT | None = None
        self._keys: tuple[str, ...] = ()  # the current and the previous key: scrubbed from messages

    def call(self, send: Callable[[ClientT], ResultT], request: LlmRequest) -> ResultT:
        try:
            try:
                return send(self._current_client(refresh=False))
            except self._errors.status as exc:
                if getattr(exc, "status_code", None) not in AUTH_STATUSES:
                    raise
            # The cached key may have been rotated since it was read: re-read it, once.
            return send(self._current_client(refresh=True))
        except self._errors.base as exc:
            raise self._domain_error(exc, request) from None

    def _current_client(self, *, refresh: bool) -> ClientT:
        if self._client is None or refresh:
            key = self._key_source(refresh)
            if not key:
                raise ProviderAuthError(f"{self._where}: the API key is empty")
            self._keys = (key, *self._keys[:1])
            previous, self._client = self._client, self._build(key)
            close = getattr(previous, "close", None)
            if callable(close):
                close()
        return self._client

    def _domain_error(self, exc: Exception, request: LlmRequest) -> P4ReviewError:
        if isinstance(exc, self._errors.timeout):
            return ProviderTimeout(f"{self._where}: request timed out")
        if isinstance(exc, self._errors.connection):
            return ProviderUnavailable(f"{self._where}: connection failed")
        if isinstance(exc, self._errors.status):
            response = getattr(exc, "response", None)
            return status_error(
                self._where,
                getattr(exc, "status_code", 0),
                getattr(response, "headers", {}),
                getattr(exc, "body", None),
                secrets=self._keys,
                request_texts=(request.system, request.user),
            )
        # Client construction or response decoding failed: the SDK's own message may quote anything.
        return ProviderRequestError(f"{self._where}: {type(exc).__name__}")


def status_error(
    where: str,
    status: int,
    headers: Mapping[str, str],
    body: Any,
    *,
    secrets: Iterable[str] = (),
    request_texts: Iterable[str] = (),
) -> P4ReviewError:
    """The domain error for one HTTP error answer (after any key re-read)."""
    kind, code, message = error_fields(body)
    label = f"HTTP {status}" + "".join(f" {part}" for part in (kind, code) if part)
    if status in AUTH_STATUSES:
        # No provider message: 401 messages quote part of the key that was refused.
        return ProviderAuthError(f"{where}: {label} after re-reading the API key")
    excerpt = safe_excerpt(message, secrets=secrets, request_texts=request_texts)
    text = f"{where}: {label}" + (f": {excerpt}" if excerpt else "")
    if status == HTTPStatus.TOO_MANY_REQUESTS and code != "insufficient_quota":  # out of credit is billing, not a rate
        return ProviderRateLimited(text, retry_after=retry_after_seconds(headers))
    if status >= HTTPStatus.INTERNAL_SERVER_ERROR:  # includes Anthropic's 529 "overloaded"
        return ProviderUnavailable(text, retry_after=retry_after_seconds(headers))
    if status == HTTPStatus.REQUEST_TIMEOUT:
        return ProviderTimeout(text)
    if status == HTTPStatus.REQUEST_ENTITY_TOO_LARGE or (
        status == HTTPStatus.BAD_REQUEST and (code == "context_length_exceeded" or mentions_context_too_long(message))
    ):
        return ContextTooLong(text)
    if status == HTTPStatus.BAD_REQUEST and (
        code in _POLICY_CODES or any(marker in message.lower() for marker in _POLICY_MARKERS)
    ):
        return ProviderPolicyRefusal(text)
    return ProviderRequestError(text)


def error_fields(body: Any) -> tuple[str, str, str]:
    """(type, code, message) of an error body. OpenAI's SDK hands over the inner `error` object,
    Anthropic's the whole body; OpenAI-compatible servers vary (`{"error": "text"}`, top-level
    fields). A body that is not JSON is not used: it may be anything (an HTML page, an echo)."""
    if not isinstance(body, dict):
        return "", "", ""
    inner = body.get("error", body)
    if isinstance(inner, str):
        return "", "", inner
    if not isinstance(inner, dict):
        return "", "", ""

    def identifier(value: Any) -> str:
        return _IDENTIFIER_UNSAFE.sub("", str(value))[:60] if isinstance(value, (str, int)) else ""

    message = inner.get("message")
    return identifier(inner.get("type")), identifier(inner.get("code")), message if isinstance(message, str) else ""


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """OpenAI may send `retry-after-ms`; everyone sends `retry-after` (seconds)."""
    try:
        return clamp_retry_after(float(headers.get("retry-after-ms")) / 1000)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return clamp_retry_after(headers.get("retry-after"))

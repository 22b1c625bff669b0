"""AnthropicProvider against a real local HTTP server speaking the Messages API wire format."""

from __future__ import annotations

import json
import time
import traceback
from typing import Any

import pytest

from p4review.errors import ErrorClass, P4ReviewError
from p4review.models.review_result import REVIEW_RESULT_SCHEMA
from p4review.review.llm.anthropic_provider import AnthropicProvider
from p4review.review.llm.base import (
    RESULT_TOOL_NAME,
    ContextTooLong,
    LlmRequest,
    ProviderAuthError,
    ProviderPolicyRefusal,
    ProviderRateLimited,
    ProviderRequestError,
    ProviderTimeout,
    ProviderUnavailable,
)
from p4review_dev.support.llm_server import Keys, Reply, ScriptedServer, scripted_server  # noqa: F401 (fixture)

MODEL = "claude-sonnet-4-6"  # a family that takes a forced tool choice (model_capabilities.py)
OLD_KEY = "sk-ant-test-old-0123456789abcdef"
NEW_KEY = "sk-ant-test-new-fedcba9876543210"
SYSTEM_TEXT = "You are a code reviewer. SYSTEM-MARKER-51d0 answer with a ReviewResult."
USER_TEXT = "1 | def transfer(amount):  # USER-MARKER-e4f2 proprietary business logic here\n2 |     return amount * 2\n"
ANSWER = {"schema_version": "1.0", "prompt_version": "1.0", "summary": "Naïve doubling", "findings": []}


def _request() -> LlmRequest:
    return LlmRequest(
        system=SYSTEM_TEXT,
        user=USER_TEXT,
        json_schema=REVIEW_RESULT_SCHEMA,
        max_output_tokens=2048,
        request_id="job-1:chunk-0",
    )


def _provider(server: ScriptedServer, keys: Keys | None = None, timeout_seconds: float = 5.0) -> AnthropicProvider:
    return AnthropicProvider(MODEL, keys or Keys(OLD_KEY), base_url=server.root_url, timeout_seconds=timeout_seconds)


def _message(*content: dict[str, Any], stop_reason: str = "tool_use") -> dict[str, Any]:
    return {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": list(content) or [{"type": "tool_use", "id": "toolu_01", "name": RESULT_TOOL_NAME, "input": ANSWER}],
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": 410, "output_tokens": 77, "cache_read_input_tokens": 0},
    }


def _error(status: int, kind: str, message: str, headers: dict[str, str] | None = None) -> Reply:
    return Reply(status, {"type": "error", "error": {"type": kind, "message": message}}, headers or {})


def _presented_key(headers: dict[str, str]) -> str | None:
    """The key as sent: SDK 2.x uses Authorization: Bearer, older ones x-api-key."""
    bearer = headers.get("authorization", "")
    return bearer.removeprefix("Bearer ") if bearer.startswith("Bearer ") else headers.get("x-api-key")


def _assert_safe(exc: P4ReviewError) -> None:
    rendered = "".join(traceback.format_exception(exc))
    for secret in (OLD_KEY, NEW_KEY, "SYSTEM-MARKER-51d0", "USER-MARKER-e4f2", "proprietary business"):
        assert secret not in rendered


def test_success_forces_the_result_tool_and_serializes_its_input(server: ScriptedServer) -> None:
    server.script(Reply(body=_message()))

    response = _provider(server).complete(_request())

    assert json.loads(response.text) == ANSWER
    assert "Naïve" in response.text  # ensure_ascii=False
    assert (response.input_tokens, response.output_tokens) == (410, 77)
    assert (response.provider, response.model, response.stop_reason) == ("anthropic", MODEL, "tool_use")
    [sent] = server.requests
    assert sent.path == "/v1/messages"
    assert _presented_key(sent.headers) == OLD_KEY
    assert "anthropic-version" in sent.headers
    assert sent.body["model"] == MODEL
    assert sent.body["max_tokens"] == 2048
    # The instructions are marked cacheable (with the tool schema before them, the stable prefix).
    assert sent.body["system"] == [{"type": "text", "text": SYSTEM_TEXT, "cache_control": {"type": "ephemeral"}}]
    assert sent.body["messages"] == [{"role": "user", "content": USER_TEXT}]
    assert sent.body["tools"] == [
        {
            "name": RESULT_TOOL_NAME,
            "description": sent.body["tools"][0]["description"],
            "input_schema": REVIEW_RESULT_SCHEMA,
        }
    ]
    assert sent.body["tool_choice"] == {"type": "tool", "name": RESULT_TOOL_NAME}
    assert not {"temperature", "top_p", "top_k"} & sent.body.keys()  # refused by the SDK's API version


def test_text_blocks_are_the_fallback_answer(server: ScriptedServer) -> None:
    server.script(
        Reply(
            body=_message(
                {"type": "text", "text": '{"schema_version": "1.0", '},
                {"type": "text", "text": '"prompt_version": "1.0", "findings": []}'},
                stop_reason="end_turn",
            )
        )
    )

    response = _provider(server).complete(_request())

    assert json.loads(response.text) == {"schema_version": "1.0", "prompt_version": "1.0", "findings": []}
    assert response.stop_reason == "end_turn"


def test_max_tokens_returns_the_partial_answer(server: ScriptedServer) -> None:
    server.script(
        Reply(body=_message({"type": "text", "text": '{"schema_version": "1.0", "fi'}, stop_reason="max_tokens"))
    )

    response = _provider(server).complete(_request())

    assert response.stop_reason == "max_tokens"
    assert response.text == '{"schema_version": "1.0", "fi'


def test_refusal_stop_reason_is_a_policy_refusal(server: ScriptedServer) -> None:
    server.script(
        Reply(body=_message({"type": "text", "text": "I won't review USER-MARKER-e4f2"}, stop_reason="refusal"))
    )

    with pytest.raises(ProviderPolicyRefusal) as raised:
        _provider(server).complete(_request())

    assert raised.value.error_class is ErrorClass.POLICY_DENIED
    _assert_safe(raised.value)


@pytest.mark.parametrize("status, kind", [(500, "api_error"), (503, "api_error"), (529, "overloaded_error")])
def test_server_errors_are_unavailable_and_not_retried_by_the_sdk(
    server: ScriptedServer, status: int, kind: str
) -> None:
    server.script(_error(status, kind, "Internal server error"))

    with pytest.raises(ProviderUnavailable) as raised:
        _provider(server).complete(_request())

    assert len(server.requests) == 1
    assert f"HTTP {status} {kind}" in raised.value.message
    _assert_safe(raised.value)


def test_rate_limited_with_retry_after(server: ScriptedServer) -> None:
    server.script(
        _error(
            429,
            "rate_limit_error",
            "Number of request tokens has exceeded your per-minute rate limit",
            headers={"Retry-After": "7"},
        )
    )

    with pytest.raises(ProviderRateLimited) as raised:
        _provider(server).complete(_request())

    assert raised.value.retry_after == 7
    assert len(server.requests) == 1


def test_overloaded_keeps_the_retry_after(server: ScriptedServer) -> None:
    server.script(_error(529, "overloaded_error", "Overloaded", headers={"Retry-After": "12"}))

    with pytest.raises(ProviderUnavailable) as raised:
        _provider(server).complete(_request())

    assert raised.value.retry_after == 12


def test_a_slow_server_times_out(server: ScriptedServer) -> None:
    server.script(Reply(body=_message(), delay=8.0))

    started = time.monotonic()
    with pytest.raises(ProviderTimeout):
        _provider(server, timeout_seconds=0.3).complete(_request())

    # Seconds of margin, not tenths: the 8 s answer was not waited for (a 0.3 s timeout, no retry).
    assert time.monotonic() - started < 5.0
    assert len(server.requests) == 1


def test_401_rereads_the_key_once_and_retries(server: ScriptedServer) -> None:
    server.script(_error(401, "authentication_error", "invalid x-api-key"), Reply(body=_message()))
    keys = Keys(OLD_KEY, NEW_KEY)

    response = _provider(server, keys).complete(_request())

    assert json.loads(response.text) == ANSWER
    assert keys.calls == [False, True]
    assert [_presented_key(r.headers) for r in server.requests] == [OLD_KEY, NEW_KEY]


def test_auth_failure_twice_is_an_auth_error(server: ScriptedServer) -> None:
    server.script(
        _error(401, "authentication_error", f"invalid x-api-key {OLD_KEY}"),
        _error(403, "permission_error", f"key {NEW_KEY} may not use this model"),
    )
    keys = Keys(OLD_KEY, NEW_KEY)

    with pytest.raises(ProviderAuthError) as raised:
        _provider(server, keys).complete(_request())

    assert len(server.requests) == 2
    assert keys.calls == [False, True]
    _assert_safe(raised.value)


@pytest.mark.parametrize(
    "reply",
    [
        _error(400, "invalid_request_error", "prompt is too long: 215000 tokens > 200000 maximum"),
        _error(413, "request_too_large", "Request exceeds the maximum allowed number of bytes."),
    ],
)
def test_context_too_long(server: ScriptedServer, reply: Reply) -> None:
    server.script(reply)

    with pytest.raises(ContextTooLong):
        _provider(server).complete(_request())


def test_unknown_model_is_a_request_error(server: ScriptedServer) -> None:
    server.script(_error(404, "not_found_error", "model: claude-nope"))

    with pytest.raises(ProviderRequestError) as raised:
        _provider(server).complete(_request())

    assert "HTTP 404 not_found_error" in raised.value.message
    assert len(server.requests) == 1


def test_an_error_echoing_the_prompt_is_not_repeated(server: ScriptedServer) -> None:
    server.script(_error(400, "invalid_request_error", f"messages.0.content: bad text {USER_TEXT}"))

    with pytest.raises(ProviderRequestError) as raised:
        _provider(server).complete(_request())

    _assert_safe(raised.value)


@pytest.mark.spec("RV-16")
def test_prompt_cache_reads_and_writes_are_counted_as_input(server: ScriptedServer) -> None:
    body = _message()
    body["usage"] = {
        "input_tokens": 300,
        "output_tokens": 77,
        "cache_read_input_tokens": 1000,
        "cache_creation_input_tokens": 200,
    }
    server.script(Reply(body=body))
    response = _provider(server).complete(_request())
    assert (response.input_tokens, response.cache_read_tokens, response.cache_write_tokens) == (1500, 1000, 200)


@pytest.mark.spec("LLM-4")
def test_an_adaptive_thinking_model_is_offered_the_tool_without_forcing_it(server: ScriptedServer) -> None:
    """Forced tool choice is refused while thinking is on, and these models cannot turn it off."""
    server.script(Reply(body=_message()))

    AnthropicProvider("claude-opus-4-7", Keys(OLD_KEY), base_url=server.root_url, timeout_seconds=5).complete(
        _request()
    )

    [sent] = server.requests
    assert sent.body["tool_choice"] == {"type": "auto"}
    assert sent.body["tools"][0]["name"] == RESULT_TOOL_NAME

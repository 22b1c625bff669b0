"""OpenAIProvider against a real local HTTP server speaking the chat completions wire format."""

from __future__ import annotations

import json
import socket
import time
import traceback
from typing import Any

import pytest

from p4review.errors import ConfigError, ErrorClass, P4ReviewError
from p4review.models.review_result import REVIEW_RESULT_SCHEMA
from p4review.review.llm.base import (
    ContextTooLong,
    LlmRequest,
    ProviderAuthError,
    ProviderPolicyRefusal,
    ProviderRateLimited,
    ProviderRequestError,
    ProviderTimeout,
    ProviderUnavailable,
)
from p4review.review.llm.openai_provider import OpenAIProvider
from p4review_dev.support.llm_server import Keys, Reply, ScriptedServer, scripted_server  # noqa: F401 (fixture)

MODEL = "gpt-4o"  # a non-reasoning family: temperature 0, max_tokens off api.openai.com
OLD_KEY = "sk-test-old-0123456789abcdef"
NEW_KEY = "sk-test-new-fedcba9876543210"
SYSTEM_TEXT = "You are a code reviewer. SYSTEM-MARKER-7c1e answer with a ReviewResult."
USER_TEXT = "1 | def transfer(amount):  # USER-MARKER-93ab proprietary business logic here\n2 |     return amount * 2\n"
ANSWER = {"schema_version": "1.0", "prompt_version": "1.0", "findings": []}


def _request() -> LlmRequest:
    return LlmRequest(
        system=SYSTEM_TEXT,
        user=USER_TEXT,
        json_schema=REVIEW_RESULT_SCHEMA,
        max_output_tokens=1024,
        request_id="job-1:chunk-0",
    )


def _provider(server: ScriptedServer, keys: Keys | None = None, **options: Any) -> OpenAIProvider:
    options.setdefault("timeout_seconds", 5.0)
    return OpenAIProvider(MODEL, keys or Keys(OLD_KEY), base_url=server.base_url, **options)


def _completion(content: str | None = json.dumps(ANSWER), finish_reason: str = "stop", **message: Any) -> dict:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-test",
        "choices": [
            {
                "index": 0,
                "finish_reason": finish_reason,
                "message": {"role": "assistant", "content": content, **message},
            }
        ],
        "usage": {"prompt_tokens": 321, "completion_tokens": 54, "total_tokens": 375},
    }


def _error(
    status: int,
    message: str,
    *,
    code: str | None = None,
    kind: str = "invalid_request_error",
    headers: dict[str, str] | None = None,
) -> Reply:
    return Reply(status, {"error": {"message": message, "type": kind, "param": None, "code": code}}, headers or {})


def _assert_safe(exc: P4ReviewError) -> None:
    rendered = "".join(traceback.format_exception(exc))
    for secret in (OLD_KEY, NEW_KEY, "SYSTEM-MARKER-7c1e", "USER-MARKER-93ab", "proprietary business"):
        assert secret not in rendered


def test_success_sends_the_wire_format_and_reads_the_answer(server: ScriptedServer) -> None:
    server.script(Reply(body=_completion()))

    response = _provider(server).complete(_request())

    assert json.loads(response.text) == ANSWER
    assert (response.input_tokens, response.output_tokens) == (321, 54)
    assert (response.provider, response.model, response.stop_reason) == ("openai", MODEL, "stop")
    [sent] = server.requests
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {OLD_KEY}"
    assert sent.headers["x-client-request-id"] == "job-1:chunk-0"
    assert sent.body["model"] == MODEL
    assert sent.body["messages"] == [{"role": "system", "content": SYSTEM_TEXT}, {"role": "user", "content": USER_TEXT}]
    assert sent.body["temperature"] == 0  # gpt-4o takes one
    assert sent.body["max_tokens"] == 1024  # a non-reasoning model on an OpenAI-compatible server: max_tokens
    assert "max_completion_tokens" not in sent.body
    assert sent.body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "ReviewResult", "schema": REVIEW_RESULT_SCHEMA, "strict": False},
    }
    assert "stream" not in sent.body or sent.body["stream"] is False


def test_json_object_and_no_structured_output(server: ScriptedServer) -> None:
    server.script(Reply(body=_completion()))

    _provider(server, structured_output="json_object").complete(_request())
    _provider(server, structured_output="none").complete(_request())

    assert server.requests[0].body["response_format"] == {"type": "json_object"}
    assert "response_format" not in server.requests[1].body
    with pytest.raises(ConfigError):
        _provider(server, structured_output="xml")


def test_the_official_api_gets_max_completion_tokens() -> None:
    for base_url in (None, "https://api.openai.com/v1"):
        provider = OpenAIProvider("gpt-test", Keys(OLD_KEY), base_url=base_url, timeout_seconds=5)
        assert provider.token_limit_field == "max_completion_tokens"
        assert provider.base_url == "https://api.openai.com/v1"


@pytest.mark.spec("LLM-2")
def test_azure_openai_gets_max_completion_tokens() -> None:
    """An Azure deployment name is unknown to the table and may be a reasoning model (max_tokens refused)."""
    for base_url in (
        "https://contoso.openai.azure.com/openai/v1/",
        "https://contoso.cognitiveservices.azure.com/openai/v1/",
        "https://contoso.services.ai.azure.com/openai/v1/",
    ):
        provider = OpenAIProvider("review-deployment", Keys(OLD_KEY), base_url=base_url, timeout_seconds=5)
        assert provider.token_limit_field == "max_completion_tokens"


def test_truncated_answer_is_returned_not_raised(server: ScriptedServer) -> None:
    server.script(Reply(body=_completion(content='{"schema_version": "1.0", "find', finish_reason="length")))

    response = _provider(server).complete(_request())

    assert response.stop_reason == "length"
    assert response.text == '{"schema_version": "1.0", "find'


def test_missing_usage_counts_zero(server: ScriptedServer) -> None:
    body = _completion()
    del body["usage"]
    server.script(Reply(body=body))

    response = _provider(server).complete(_request())

    assert (response.input_tokens, response.output_tokens) == (0, 0)


@pytest.mark.parametrize("status", [500, 502, 503, 529])
def test_server_errors_are_unavailable_and_not_retried_by_the_sdk(server: ScriptedServer, status: int) -> None:
    server.script(_error(status, "The server had an error", kind="server_error"))

    with pytest.raises(ProviderUnavailable) as raised:
        _provider(server).complete(_request())

    assert len(server.requests) == 1
    assert raised.value.retryable and raised.value.error_class is ErrorClass.UPSTREAM_ERROR
    assert f"HTTP {status}" in raised.value.message
    _assert_safe(raised.value)


def test_unavailable_keeps_the_retry_after(server: ScriptedServer) -> None:
    server.script(_error(503, "Slow down", kind="server_error", headers={"Retry-After": "3"}))

    with pytest.raises(ProviderUnavailable) as raised:
        _provider(server).complete(_request())

    assert raised.value.retry_after == 3


def test_rate_limited_with_retry_after(server: ScriptedServer) -> None:
    server.script(
        _error(429, "Rate limit reached", code="rate_limit_exceeded", kind="requests", headers={"Retry-After": "7"})
    )

    with pytest.raises(ProviderRateLimited) as raised:
        _provider(server).complete(_request())

    assert raised.value.retry_after == 7
    assert raised.value.error_class is ErrorClass.RATE_LIMITED
    assert len(server.requests) == 1


def test_retry_after_is_clamped_and_ms_preferred(server: ScriptedServer) -> None:
    server.script(
        _error(429, "Rate limit", headers={"Retry-After": "99999"}),
        _error(429, "Rate limit", headers={"retry-after-ms": "1500", "Retry-After": "2"}),
    )
    provider = _provider(server)

    with pytest.raises(ProviderRateLimited) as first:
        provider.complete(_request())
    with pytest.raises(ProviderRateLimited) as second:
        provider.complete(_request())

    assert first.value.retry_after == 300
    assert second.value.retry_after == 1.5


def test_out_of_quota_is_not_a_rate_limit(server: ScriptedServer) -> None:
    server.script(_error(429, "You exceeded your current quota", code="insufficient_quota"))

    with pytest.raises(ProviderRequestError):
        _provider(server).complete(_request())


def test_a_slow_server_times_out(server: ScriptedServer) -> None:
    server.script(Reply(body=_completion(), delay=8.0))

    started = time.monotonic()
    with pytest.raises(ProviderTimeout) as raised:
        _provider(server, timeout_seconds=0.3).complete(_request())

    # Seconds of margin, not tenths: the 8 s answer was not waited for (a 0.3 s timeout, no retry).
    assert time.monotonic() - started < 5.0
    assert len(server.requests) == 1
    assert raised.value.error_class is ErrorClass.NETWORK_TIMEOUT


def test_connection_refused_is_unavailable() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again before the call: nothing listens there
    provider = OpenAIProvider("gpt-test", Keys(OLD_KEY), base_url=f"http://127.0.0.1:{port}/v1", timeout_seconds=2)

    with pytest.raises(ProviderUnavailable):
        provider.complete(_request())


@pytest.mark.spec("SEC-21", "SEC-22")
def test_401_rereads_the_key_once_and_retries(server: ScriptedServer) -> None:
    server.script(
        _error(401, f"Incorrect API key provided: {OLD_KEY}", code="invalid_api_key"), Reply(body=_completion())
    )
    keys = Keys(OLD_KEY, NEW_KEY)
    provider = _provider(server, keys)

    response = provider.complete(_request())
    provider.complete(_request())  # the rebuilt client keeps the new key

    assert json.loads(response.text) == ANSWER
    assert keys.calls == [False, True]
    assert [r.headers["authorization"] for r in server.requests] == [
        f"Bearer {OLD_KEY}",
        f"Bearer {NEW_KEY}",
        f"Bearer {NEW_KEY}",
    ]


@pytest.mark.parametrize("status", [401, 403])
def test_auth_failure_twice_is_an_auth_error(server: ScriptedServer, status: int) -> None:
    server.script(_error(status, f"Incorrect API key provided: {OLD_KEY} / {NEW_KEY}", code="invalid_api_key"))
    keys = Keys(OLD_KEY, NEW_KEY)

    with pytest.raises(ProviderAuthError) as raised:
        _provider(server, keys).complete(_request())

    assert len(server.requests) == 2
    assert keys.calls == [False, True]
    assert raised.value.error_class is ErrorClass.AUTH_DENIED
    _assert_safe(raised.value)


@pytest.mark.parametrize(
    "reply",
    [
        _error(
            400,
            "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
            code="context_length_exceeded",
        ),
        # vLLM: no code, the phrase only
        Reply(
            400,
            {
                "object": "error",
                "message": "This model's maximum context length is 4096 tokens.",
                "type": "BadRequestError",
                "code": 400,
            },
        ),
        _error(413, "Request entity too large"),
    ],
)
def test_context_too_long(server: ScriptedServer, reply: Reply) -> None:
    server.script(reply)

    with pytest.raises(ContextTooLong) as raised:
        _provider(server).complete(_request())

    assert not raised.value.retryable
    _assert_safe(raised.value)


@pytest.mark.parametrize(
    "reply",
    [
        _error(400, "Your request was rejected as a result of our safety system.", code="content_policy_violation"),
        _error(
            400,
            "The response was filtered due to the prompt triggering content management policy.",
            code="content_filter",
        ),
        Reply(body=_completion(content=None, finish_reason="content_filter")),
        Reply(body=_completion(content=None, refusal="I can't help with reviewing this: USER-MARKER-93ab")),
    ],
)
def test_content_filter_is_a_policy_refusal(server: ScriptedServer, reply: Reply) -> None:
    server.script(reply)

    with pytest.raises(ProviderPolicyRefusal) as raised:
        _provider(server).complete(_request())

    assert raised.value.error_class is ErrorClass.POLICY_DENIED
    _assert_safe(raised.value)


def test_unknown_model_is_a_request_error(server: ScriptedServer) -> None:
    server.script(
        _error(404, "The model `gpt-nope` does not exist or you do not have access to it.", code="model_not_found")
    )

    with pytest.raises(ProviderRequestError) as raised:
        _provider(server).complete(_request())

    assert raised.value.error_class is ErrorClass.CONFIG_ERROR
    assert "HTTP 404 invalid_request_error model_not_found" in raised.value.message
    assert len(server.requests) == 1


def test_an_error_echoing_the_prompt_or_key_is_not_repeated(server: ScriptedServer) -> None:
    server.script(
        _error(422, f"Could not process input for key {OLD_KEY}: {SYSTEM_TEXT} {USER_TEXT}"),
        _error(400, f"Invalid value '{USER_TEXT}' for messages[1].content"),
        Reply(400, b"<html>USER-MARKER-93ab proprietary business logic</html>"),
    )
    provider = _provider(server)

    for _ in range(3):
        with pytest.raises(ProviderRequestError) as raised:
            provider.complete(_request())
        _assert_safe(raised.value)
        assert "HTTP 4" in raised.value.message


@pytest.mark.spec("RV-16")
def test_cached_prompt_tokens_are_reported(server: ScriptedServer) -> None:
    body = _completion()
    body["usage"] = {
        "prompt_tokens": 1321,
        "completion_tokens": 54,
        "total_tokens": 1375,
        "prompt_tokens_details": {"cached_tokens": 1024},
    }
    server.script(Reply(body=body))
    response = _provider(server).complete(_request())
    assert (response.input_tokens, response.cache_read_tokens, response.cache_write_tokens) == (1321, 1024, 0)


@pytest.mark.spec("LLM-2")
@pytest.mark.parametrize("model", ["o3-mini", "o4-mini-2025-04-16", "gpt-5-mini"])
def test_a_reasoning_model_through_a_gateway_gets_no_temperature_and_max_completion_tokens(
    server: ScriptedServer, model: str
) -> None:
    """OpenAI's reasoning models refuse temperature (400 unsupported_value) and max_tokens: the
    family decides, not the base URL (docs/llm-models.md)."""
    server.script(Reply(body=_completion()))

    OpenAIProvider(model, Keys(OLD_KEY), base_url=server.base_url, timeout_seconds=5).complete(_request())

    [sent] = server.requests
    assert "temperature" not in sent.body and "max_tokens" not in sent.body
    assert sent.body["max_completion_tokens"] == 1024
    assert sent.body["response_format"]["type"] == "json_schema"
    # The limit counts reasoning tokens: low effort leaves it to the answer.
    assert sent.body["reasoning_effort"] == "low"


def test_an_unknown_model_gets_no_temperature(server: ScriptedServer) -> None:
    server.script(Reply(body=_completion()))

    OpenAIProvider("qwen2.5-coder:32b", Keys(OLD_KEY), base_url=server.base_url, timeout_seconds=5).complete(_request())

    [sent] = server.requests
    assert "temperature" not in sent.body and "reasoning_effort" not in sent.body
    assert sent.body["max_tokens"] == 1024  # what every OpenAI-compatible server knows

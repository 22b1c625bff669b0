"""BedrockProvider on a real bedrock-runtime client with botocore's Stubber (which validates each
request and response against the service model), make_bedrock_client's configuration, and the
provider factory."""

from __future__ import annotations

import json
import traceback
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ConnectTimeoutError, EndpointConnectionError, ReadTimeoutError
from botocore.stub import Stubber

from p4review.errors import ConfigError, P4ReviewError
from p4review.models.review_result import REVIEW_RESULT_SCHEMA
from p4review.review.llm.base import (
    RESULT_TOOL_DESCRIPTION,
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
from p4review.review.llm.bedrock_provider import BedrockProvider, make_bedrock_client
from p4review.review.llm.factory import build_provider
from p4review.settings.blocks import LlmBlock

MODEL = "anthropic.claude-3-7-sonnet-20250219-v1:0"  # caches, takes a forced tool and temperature
SYSTEM_TEXT = "You are a code reviewer. SYSTEM-MARKER-aa01."
USER_TEXT = "1 | secret_sauce = compute()  # USER-MARKER-bb02 proprietary business logic\n"
ANSWER = {"schema_version": "1.0", "prompt_version": "1.0", "findings": []}


def _request(request_id: str = "job-1:chunk-0") -> LlmRequest:
    return LlmRequest(
        system=SYSTEM_TEXT,
        user=USER_TEXT,
        json_schema=REVIEW_RESULT_SCHEMA,
        max_output_tokens=4096,
        request_id=request_id,
    )


def _expected_params(request_id: str | None = "job-1:chunk-0") -> dict[str, Any]:
    params: dict[str, Any] = {
        "modelId": MODEL,
        # MODEL is Claude 3.7 Sonnet: the instructions end with a cache checkpoint.
        "system": [{"text": SYSTEM_TEXT}, {"cachePoint": {"type": "default"}}],
        "messages": [{"role": "user", "content": [{"text": USER_TEXT}]}],
        "inferenceConfig": {"maxTokens": 4096, "temperature": 0},
        "toolConfig": {
            "tools": [
                {
                    "toolSpec": {
                        "name": RESULT_TOOL_NAME,
                        "description": RESULT_TOOL_DESCRIPTION,
                        "inputSchema": {"json": REVIEW_RESULT_SCHEMA},
                    }
                }
            ],
            "toolChoice": {"tool": {"name": RESULT_TOOL_NAME}},
        },
    }
    if request_id is not None:
        params["requestMetadata"] = {"p4review_request_id": request_id}
    return params


def _converse_response(content: list[dict[str, Any]], stop_reason: str = "tool_use") -> dict[str, Any]:
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": stop_reason,
        "usage": {"inputTokens": 500, "outputTokens": 60, "totalTokens": 560},
        "metrics": {"latencyMs": 900},
    }


@pytest.fixture
def stubbed() -> Iterator[tuple[Any, Stubber]]:
    client = boto3.client(
        "bedrock-runtime", region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing"
    )
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()


def _assert_safe(exc: P4ReviewError) -> None:
    rendered = "".join(traceback.format_exception(exc))
    for secret in ("SYSTEM-MARKER-aa01", "USER-MARKER-bb02", "proprietary business"):
        assert secret not in rendered


def test_tool_use_answer(stubbed: tuple[Any, Stubber]) -> None:
    client, stubber = stubbed
    stubber.add_response(
        "converse",
        _converse_response([{"toolUse": {"toolUseId": "t1", "name": RESULT_TOOL_NAME, "input": ANSWER}}]),
        _expected_params(),
    )

    response = BedrockProvider(MODEL, client).complete(_request())

    assert json.loads(response.text) == ANSWER
    assert (response.input_tokens, response.output_tokens) == (500, 60)
    assert (response.provider, response.model, response.stop_reason) == ("bedrock", MODEL, "tool_use")


def test_text_blocks_are_the_fallback(stubbed: tuple[Any, Stubber]) -> None:
    client, stubber = stubbed
    stubber.add_response(
        "converse",
        _converse_response(
            [{"text": '{"schema_version": "1.0", '}, {"text": '"prompt_version": "1.0", "findings": []}'}],
            stop_reason="end_turn",
        ),
        _expected_params(),
    )

    response = BedrockProvider(MODEL, client).complete(_request())

    assert json.loads(response.text) == ANSWER
    assert response.stop_reason == "end_turn"


def test_request_ids_the_metadata_cannot_carry_are_left_out(stubbed: tuple[Any, Stubber]) -> None:
    client, stubber = stubbed
    stubber.add_response("converse", _converse_response([{"text": "{}"}], "end_turn"), _expected_params(None))

    BedrockProvider(MODEL, client).complete(_request(request_id="job|1|chunk*0"))


def test_max_tokens_returns_the_partial_answer(stubbed: tuple[Any, Stubber]) -> None:
    client, stubber = stubbed
    stubber.add_response("converse", _converse_response([{"text": '{"schema_'}], "max_tokens"), _expected_params())

    response = BedrockProvider(MODEL, client).complete(_request())

    assert (response.text, response.stop_reason) == ('{"schema_', "max_tokens")


@pytest.mark.parametrize("stop_reason", ["guardrail_intervened", "content_filtered"])
def test_guardrail_and_content_filter_are_policy_refusals(stubbed: tuple[Any, Stubber], stop_reason: str) -> None:
    client, stubber = stubbed
    stubber.add_response(
        "converse", _converse_response([{"text": "Sorry, USER-MARKER-bb02"}], stop_reason), _expected_params()
    )

    with pytest.raises(ProviderPolicyRefusal) as raised:
        BedrockProvider(MODEL, client).complete(_request())

    _assert_safe(raised.value)


@pytest.mark.parametrize(
    "code, status, message, expected",
    [
        ("ThrottlingException", 429, "Too many requests, please wait before trying again.", ProviderRateLimited),
        ("ServiceQuotaExceededException", 400, "Quota exceeded", ProviderRateLimited),
        ("ModelTimeoutException", 408, "Model has timed out in processing the request.", ProviderTimeout),
        ("InternalServerException", 500, "Internal failure", ProviderUnavailable),
        ("ServiceUnavailableException", 503, "Service unavailable", ProviderUnavailable),
        ("ModelNotReadyException", 429, "Model is not ready", ProviderUnavailable),
        ("ModelErrorException", 424, "The model failed", ProviderUnavailable),
        (
            "AccessDeniedException",
            403,
            "You don't have access to the model with the specified model ID.",
            ProviderAuthError,
        ),
        (
            "UnrecognizedClientException",
            403,
            "The security token included in the request is invalid.",
            ProviderAuthError,
        ),
        ("ValidationException", 400, "Input is too long for requested model.", ContextTooLong),
        ("ValidationException", 400, "prompt is too long: 250000 tokens > 200000 maximum", ContextTooLong),
        ("ValidationException", 400, "The provided model identifier is invalid.", ProviderRequestError),
        ("ResourceNotFoundException", 404, "Model not found", ProviderRequestError),
        ("ValidationException", 400, f"Malformed input request: {USER_TEXT}", ProviderRequestError),
    ],
)
def test_client_errors_are_mapped(
    stubbed: tuple[Any, Stubber], code: str, status: int, message: str, expected: type[P4ReviewError]
) -> None:
    client, stubber = stubbed
    stubber.add_client_error(
        "converse",
        service_error_code=code,
        service_message=message,
        http_status_code=status,
        expected_params=_expected_params(),
    )

    with pytest.raises(expected) as raised:
        BedrockProvider(MODEL, client).complete(_request())

    assert type(raised.value) is expected
    assert code in raised.value.message
    _assert_safe(raised.value)


class _FailingClient:
    def __init__(self, error: Exception):
        self.error = error

    def converse(self, **_: Any) -> dict[str, Any]:
        raise self.error


@pytest.mark.parametrize(
    "error, expected",
    [
        (ReadTimeoutError(endpoint_url="https://bedrock-runtime.us-east-1.amazonaws.com"), ProviderTimeout),
        (ConnectTimeoutError(endpoint_url="https://bedrock-runtime.us-east-1.amazonaws.com"), ProviderTimeout),
        (EndpointConnectionError(endpoint_url="https://bedrock-runtime.us-east-1.amazonaws.com"), ProviderUnavailable),
    ],
)
def test_transport_errors_are_mapped(error: Exception, expected: type[P4ReviewError]) -> None:
    with pytest.raises(expected):
        BedrockProvider(MODEL, _FailingClient(error)).complete(_request())


def test_make_bedrock_client_turns_sdk_retries_off() -> None:
    client = make_bedrock_client("eu-west-1", 45.0)

    config = client.meta.config
    assert client.meta.service_model.service_name == "bedrock-runtime"
    assert client.meta.region_name == "eu-west-1"
    assert config.retries == {"total_max_attempts": 1, "mode": "standard"}
    assert (config.read_timeout, config.connect_timeout) == (45.0, 10)


def test_make_bedrock_client_without_a_region_is_a_config_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))

    with pytest.raises(ConfigError):
        make_bedrock_client(None, 30.0)


def _settings(**values: Any) -> LlmBlock:
    return LlmBlock.model_validate({f"P4REVIEW_{name.upper()}": value for name, value in values.items()})


def test_factory_offline_needs_no_provider() -> None:
    assert build_provider(_settings(), None) is None


def test_factory_builds_bedrock_with_the_injected_client(stubbed: tuple[Any, Stubber]) -> None:
    client, _ = stubbed
    made: list[tuple[Any, ...]] = []

    def factory(region: str | None, timeout: float) -> Any:
        made.append((region, timeout))
        return client

    provider = build_provider(
        _settings(llm_provider="bedrock", llm_model=MODEL, llm_region="eu-central-1", llm_timeout_seconds="42"),
        None,
        bedrock_client_factory=factory,
    )

    assert isinstance(provider, BedrockProvider)
    assert (provider.name, provider.model) == ("bedrock", MODEL)
    assert made == [("eu-central-1", 42.0)]


def test_factory_builds_the_key_based_providers() -> None:
    from p4review.review.llm.anthropic_provider import AnthropicProvider
    from p4review.review.llm.openai_provider import OpenAIProvider

    def keys(force_refresh: bool) -> str:
        return "sk-unused"

    openai_settings = _settings(
        llm_provider="openai",
        llm_model="gpt-test",
        llm_base_url="http://127.0.0.1:9/v1",
        llm_structured_output="json_object",
    )
    openai_provider = build_provider(openai_settings, keys)
    anthropic_provider = build_provider(_settings(llm_provider="anthropic", llm_model="claude-test"), keys)

    assert isinstance(openai_provider, OpenAIProvider)
    assert openai_provider.model == "gpt-test"
    assert openai_provider.base_url == "http://127.0.0.1:9/v1"
    assert openai_provider.structured_output == "json_object"
    assert isinstance(anthropic_provider, AnthropicProvider) and anthropic_provider.model == "claude-test"


@pytest.mark.parametrize("provider", ["openai", "anthropic", "bedrock"])
def test_factory_without_a_model_is_a_config_error(provider: str) -> None:
    with pytest.raises(ConfigError, match="P4REVIEW_LLM_MODEL"):
        build_provider(_settings(llm_provider=provider), lambda force_refresh: "sk-unused")


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_factory_without_a_key_source_is_a_config_error(provider: str) -> None:
    with pytest.raises(ConfigError, match="P4REVIEW_LLM_SECRET_ID"):
        build_provider(_settings(llm_provider=provider, llm_model="m"), None)


@pytest.mark.spec("ERR-3")
def test_throttling_passes_on_retry_after(stubbed: tuple[Any, Stubber]) -> None:
    """Spec ERR-3: Bedrock's Retry-After reaches the runtime's backoff."""
    client, stubber = stubbed
    stubber.add_client_error(
        "converse",
        service_error_code="ThrottlingException",
        service_message="slow down",
        http_status_code=429,
        expected_params=_expected_params(),
        response_meta={"HTTPHeaders": {"retry-after": "12"}},
    )

    with pytest.raises(ProviderRateLimited) as raised:
        BedrockProvider(MODEL, client).complete(_request())

    assert raised.value.retry_after == 12.0


@pytest.mark.spec("RV-16")
def test_prompt_cache_reads_and_writes_are_counted_as_input(stubbed: tuple[Any, Stubber]) -> None:
    client, stubber = stubbed
    answer = _converse_response([{"toolUse": {"toolUseId": "t1", "name": RESULT_TOOL_NAME, "input": ANSWER}}])
    answer["usage"] = {
        "inputTokens": 300,
        "outputTokens": 60,
        "totalTokens": 1560,
        "cacheReadInputTokens": 1000,
        "cacheWriteInputTokens": 200,
    }
    stubber.add_response("converse", answer, _expected_params())
    response = BedrockProvider(MODEL, client).complete(_request())
    assert (response.input_tokens, response.cache_read_tokens, response.cache_write_tokens) == (1500, 1000, 200)


@pytest.mark.spec("RV-16", "LLM-3")
def test_a_model_without_prompt_caching_gets_no_cache_point(stubbed: tuple[Any, Stubber]) -> None:
    client, stubber = stubbed
    other = "meta.llama3-70b-instruct-v1:0"
    # Not in the table: no system block (the instructions open the user message), no cache
    # checkpoint, no tools, no temperature, no maxTokens (the model's maximum): the safe request.
    params = {
        "modelId": other,
        "messages": [{"role": "user", "content": [{"text": f"{SYSTEM_TEXT}\n\n{USER_TEXT}"}]}],
        "requestMetadata": {"p4review_request_id": "job-1:chunk-0"},
    }
    stubber.add_response("converse", _converse_response([{"text": "{}"}], "end_turn"), params)
    BedrockProvider(other, client).complete(_request())


@pytest.mark.spec("LLM-3")
@pytest.mark.parametrize(
    "model, max_tokens", [("amazon.titan-text-premier-v1:0", 3072), ("amazon.titan-text-express-v1", 4096)]
)
def test_a_titan_model_gets_its_instructions_in_the_user_message(
    stubbed: tuple[Any, Stubber], model: str, max_tokens: int
) -> None:
    """Titan answers a system block with "ValidationException: This model doesn't support system
    messages", and has no tool use; its maxTokenCount maximum is per model (Premier: 3,072)."""
    client, stubber = stubbed
    params = {
        "modelId": model,
        "messages": [{"role": "user", "content": [{"text": f"{SYSTEM_TEXT}\n\n{USER_TEXT}"}]}],
        "inferenceConfig": {"maxTokens": max_tokens, "temperature": 0},
        "requestMetadata": {"p4review_request_id": "job-1:chunk-0"},
    }
    stubber.add_response("converse", _converse_response([{"text": "{}"}], "end_turn"), params)
    assert BedrockProvider(model, client).complete(_request()).text == "{}"


def test_claude_2_gets_no_tool_config(stubbed: tuple[Any, Stubber]) -> None:
    client, stubber = stubbed
    model = "anthropic.claude-v2:1"  # Converse: Claude 2.x and earlier have no tool use
    params = {**_expected_params(), "modelId": model, "system": [{"text": SYSTEM_TEXT}]}
    del params["toolConfig"]
    stubber.add_response("converse", _converse_response([{"text": "{}"}], "end_turn"), params)
    BedrockProvider(model, client).complete(_request())

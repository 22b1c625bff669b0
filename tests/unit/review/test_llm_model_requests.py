"""Each model family's request, as its vendor accepts it (review/llm/model_capabilities.py).

- Bedrock: every Converse request the provider builds is validated with botocore's own
  ParamValidator against the bedrock-runtime service model botocore ships.
- OpenAI and Anthropic: the create() arguments are validated against the SDKs' typed request
  parameters (CompletionCreateParamsNonStreaming, MessageCreateParamsNonStreaming) with pydantic,
  extra keys forbidden at every level, and every lazily validated list consumed.
- Per family: what the vendor's documentation says it refuses is not sent (docs/llm-models.md).
"""

from __future__ import annotations

import re
import typing
from collections.abc import Iterator
from typing import Any

import botocore.session
import pytest
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
from botocore.validate import ParamValidator
from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
from openai.types.shared.reasoning_effort import ReasoningEffort
from pydantic import BaseModel, ConfigDict

from p4review.models.review_result import REVIEW_RESULT_SCHEMA
from p4review.review.llm.anthropic_provider import AnthropicProvider
from p4review.review.llm.base import RESULT_TOOL_NAME, LlmRequest
from p4review.review.llm.bedrock_provider import BedrockProvider, supports_prompt_cache
from p4review.review.llm.model_capabilities import (
    ANTHROPIC_FAMILIES,
    BEDROCK_FAMILIES,
    FAMILIES,
    OPENAI_FAMILIES,
    UNKNOWN,
    ModelFamily,
    capabilities,
    normalize_model_id,
    output_token_limit,
)
from p4review.review.llm.openai_provider import OpenAIProvider

GATEWAY = "https://llm-gateway.internal.example/v1"  # an OpenAI-compatible proxy

# At least one real model id per family of the table (and a few unknown ones): the ids come from
# the vendors' model lists (the SDKs' ChatModel / ModelParam literals, Bedrock's model ids).
OPENAI_MODELS = {
    "o1-mini": "o1-mini / o1-preview (retired)",
    "o1-preview-2024-09-12": "o1-mini / o1-preview (retired)",
    "o1": "o-series reasoning (o1, o3, o3-mini, o4-mini)",
    "o1-2024-12-17": "o-series reasoning (o1, o3, o3-mini, o4-mini)",
    "o3": "o-series reasoning (o1, o3, o3-mini, o4-mini)",
    "o3-mini-2025-01-31": "o-series reasoning (o1, o3, o3-mini, o4-mini)",
    "o4-mini": "o-series reasoning (o1, o3, o3-mini, o4-mini)",
    "o4-mini-2025-04-16": "o-series reasoning (o1, o3, o3-mini, o4-mini)",
    "gpt-5": "gpt-5, gpt-5-mini, gpt-5-nano",
    "gpt-5-mini-2025-08-07": "gpt-5, gpt-5-mini, gpt-5-nano",
    "gpt-5-nano": "gpt-5, gpt-5-mini, gpt-5-nano",
    "openai/gpt-5-mini": "gpt-5, gpt-5-mini, gpt-5-nano",
    "gpt-5-chat-latest": "gpt-5 chat (gpt-5-chat-latest, gpt-5.x-chat-latest)",
    "gpt-5.1-chat-latest": "gpt-5 chat (gpt-5-chat-latest, gpt-5.x-chat-latest)",
    "gpt-5.1-2025-11-13": "gpt-5.x, gpt-5 pro/codex and later gpt-N",
    "gpt-5.2-pro": "gpt-5.x, gpt-5 pro/codex and later gpt-N",
    "gpt-5-pro": "gpt-5.x, gpt-5 pro/codex and later gpt-N",
    "gpt-6-sol": "gpt-5.x, gpt-5 pro/codex and later gpt-N",
    "gpt-4o": "gpt-4o / gpt-4o-mini (structured outputs)",
    "gpt-4o-2024-08-06": "gpt-4o / gpt-4o-mini (structured outputs)",
    "gpt-4o-mini-2024-07-18": "gpt-4o / gpt-4o-mini (structured outputs)",
    "chatgpt-4o-latest": "gpt-4o / gpt-4o-mini (structured outputs)",
    "gpt-4.1": "gpt-4.1 / -mini / -nano (structured outputs)",
    "gpt-4.1-nano": "gpt-4.1 / -mini / -nano (structured outputs)",
    "gpt-4o-2024-05-13": "gpt-4-turbo / gpt-3.5-turbo-1106 and later (JSON mode)",
    "gpt-4-turbo-2024-04-09": "gpt-4-turbo / gpt-3.5-turbo-1106 and later (JSON mode)",
    "gpt-4-1106-preview": "gpt-4-turbo / gpt-3.5-turbo-1106 and later (JSON mode)",
    "gpt-3.5-turbo-0125": "gpt-4-turbo / gpt-3.5-turbo-1106 and later (JSON mode)",
    "gpt-4": "gpt-4 before turbo (no JSON mode)",
    "gpt-4-32k-0613": "gpt-4 before turbo (no JSON mode)",
    "gpt-3.5-turbo-0613": "gpt-3.5-turbo before 1106 (no JSON mode)",
    "qwen2.5-coder:32b": "unknown",
    "meta-llama/Llama-3.1-8B-Instruct": "unknown",
    "gpt-oss-120b": "unknown",
    "o3-pro": "unknown",  # Responses API only
}
ANTHROPIC_MODELS = {
    "claude-3-haiku-20240307": "Claude 3 Haiku",
    "claude-3-sonnet-20240229": "Claude 3 Sonnet (retired)",
    "claude-3-opus-latest": "Claude 3 Opus",
    "claude-3-5-sonnet-20240620": "Claude 3.5 Sonnet v1",
    "claude-3-5-sonnet-20241022": "Claude 3.5 Sonnet v2",
    "claude-3-5-sonnet-latest": "Claude 3.5 Sonnet v2",
    "claude-3-5-haiku-20241022": "Claude 3.5 Haiku",
    "claude-3-7-sonnet-latest": "Claude 3.7 Sonnet",
    "claude-sonnet-4-20250514": "Claude Sonnet 4 / 4.5 / 4.6",
    "claude-opus-4-1-20250805": "Claude Opus 4 / 4.1",
    "claude-opus-4-20250514": "Claude Opus 4 / 4.1",
    "claude-sonnet-4-5-20250929": "Claude Sonnet 4 / 4.5 / 4.6",
    "claude-sonnet-4-6": "Claude Sonnet 4 / 4.5 / 4.6",
    "claude-opus-4-5-20251101": "Claude Opus 4.5 / 4.6, Haiku 4.5",
    "claude-opus-4-6": "Claude Opus 4.5 / 4.6, Haiku 4.5",
    "claude-haiku-4-5-20251001": "Claude Opus 4.5 / 4.6, Haiku 4.5",
    "claude-opus-4-7": "Claude Opus 4.7, Mythos, Fable (adaptive thinking only)",
    "claude-mythos-preview": "Claude Opus 4.7, Mythos, Fable (adaptive thinking only)",
    "claude-fable-5-2": "Claude Opus 4.7, Mythos, Fable (adaptive thinking only)",
    "claude-opus-5": "unknown",
    "claude-sonnet-5-5": "unknown",
    "claude-opus-4-8": "unknown",
    "claude-4-sonnet-experimental": "unknown",
}
BEDROCK_MODELS = {
    "anthropic.claude-3-haiku-20240307-v1:0": "Claude 3 Haiku",
    "us.anthropic.claude-3-haiku-20240307-v1:0": "Claude 3 Haiku",
    "anthropic.claude-3-sonnet-20240229-v1:0:200k": "Claude 3 Sonnet (retired)",
    "us.anthropic.claude-3-opus-20240229-v1:0": "Claude 3 Opus",
    "anthropic.claude-3-5-sonnet-20240620-v1:0": "Claude 3.5 Sonnet v1",
    "apac.anthropic.claude-3-5-sonnet-20241022-v2:0": "Claude 3.5 Sonnet v2",
    "us.anthropic.claude-3-5-haiku-20241022-v1:0": "Claude 3.5 Haiku",
    "eu.anthropic.claude-3-7-sonnet-20250219-v1:0": "Claude 3.7 Sonnet",
    "anthropic.claude-sonnet-4-20250514-v1:0": "Claude Sonnet 4 / 4.5 / 4.6",
    "us.anthropic.claude-opus-4-1-20250805-v1:0": "Claude Opus 4 / 4.1",
    "global.anthropic.claude-sonnet-4-5-20250929-v1:0": "Claude Sonnet 4 / 4.5 / 4.6",
    "anthropic.claude-sonnet-4-6": "Claude Sonnet 4 / 4.5 / 4.6",
    "global.anthropic.claude-haiku-4-5-20251001-v1:0": "Claude Opus 4.5 / 4.6, Haiku 4.5",
    "anthropic.claude-opus-4-6-v1": "Claude Opus 4.5 / 4.6, Haiku 4.5",
    "anthropic.claude-opus-4-7": "Claude Opus 4.7, Mythos, Fable (adaptive thinking only)",
    "anthropic.claude-mythos-5": "Claude Opus 4.7, Mythos, Fable (adaptive thinking only)",
    "anthropic.claude-sonnet-5": "other Claude (not in this table)",
    "anthropic.claude-v2": "Claude 2.x / Instant (no tool use)",
    "anthropic.claude-v2:1": "Claude 2.x / Instant (no tool use)",
    "anthropic.claude-v2:1:200k": "Claude 2.x / Instant (no tool use)",
    "anthropic.claude-instant-v1": "Claude 2.x / Instant (no tool use)",
    "amazon.nova-micro-v1:0": "Amazon Nova Micro / Lite / Pro",
    "us.amazon.nova-lite-v1:0": "Amazon Nova Micro / Lite / Pro",
    "eu.amazon.nova-pro-v1:0": "Amazon Nova Micro / Lite / Pro",
    "us.amazon.nova-premier-v1:0": "Amazon Nova Premier",
    "amazon.titan-text-premier-v1:0": "Amazon Titan Text Premier",
    "amazon.titan-text-express-v1": "Amazon Titan Text Express",
    "amazon.titan-text-express-v1:0:8k": "Amazon Titan Text Express",
    "amazon.titan-text-lite-v1": "Amazon Titan Text Lite",
    "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-5-haiku-20241022-v1:0": (
        "Claude 3.5 Haiku"
    ),
    "arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-3-haiku-20240307-v1:0": "Claude 3 Haiku",
    "meta.llama3-70b-instruct-v1:0": "unknown",
    "us.meta.llama3-2-90b-instruct-v1:0": "unknown",
    "mistral.mistral-large-2402-v1:0": "unknown",
    "cohere.command-r-plus-v1:0": "unknown",
    "amazon.titan-tg1-large": "unknown",
    "deepseek.r1-v1:0": "unknown",
    "openai.gpt-oss-120b-1:0": "unknown",
    "amazon.nova-2-lite-v1:0": "unknown",
    "arn:aws:bedrock:us-east-1:123456789012:provisioned-model/abc123": "unknown",
}
FAMILY_SAMPLES = {"openai": OPENAI_MODELS, "anthropic": ANTHROPIC_MODELS, "bedrock": BEDROCK_MODELS}


SYSTEM = "You are a code reviewer. Answer with a ReviewResult."
USER = "1 | print('hello')\n"


def _request(request_id: str = "job-1:chunk-0", max_output_tokens: int = 4096) -> LlmRequest:
    return LlmRequest(
        system=SYSTEM,
        user=USER,
        json_schema=REVIEW_RESULT_SCHEMA,
        max_output_tokens=max_output_tokens,
        request_id=request_id,
    )


def _keys(force_refresh: bool) -> str:
    return "sk-unused"


def _consume(value: Any) -> Any:
    """pydantic validates an Iterable[...] field lazily: iterate it so every item is checked."""
    if isinstance(value, dict):
        return {key: _consume(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)) or isinstance(value, Iterator) or type(value).__name__ == "ValidatorIterator":
        return [_consume(item) for item in value]
    return value


class _OpenAIRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")  # applies to the TypedDicts below it too
    params: CompletionCreateParamsNonStreaming


class _AnthropicRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    params: MessageCreateParamsNonStreaming


@pytest.fixture(scope="module")
def converse_validator() -> tuple[ParamValidator, Any]:
    model = botocore.session.get_session().get_service_model("bedrock-runtime")
    return ParamValidator(), model.operation_model("Converse").input_shape


def _assert_valid_converse(arguments: dict[str, Any], validator: tuple[ParamValidator, Any]) -> None:
    param_validator, shape = validator
    report = param_validator.validate(arguments, shape)
    assert not report.has_errors(), report.generate_report()


# -- the table --------------------------------------------------------------------------------


@pytest.mark.spec("LLM-1")
@pytest.mark.parametrize("provider", ["openai", "anthropic", "bedrock"])
def test_every_family_has_a_source_and_is_reached_by_a_real_model_id(provider: str) -> None:
    samples = FAMILY_SAMPLES[provider]
    for model_id, family in samples.items():
        assert capabilities(provider, model_id).family == family, model_id  # type: ignore[arg-type]
    families: tuple[ModelFamily, ...] = FAMILIES[provider]  # type: ignore[index]
    assert {f.family for f in families} <= set(samples.values())  # no entry without a sample
    assert len({f.family for f in families}) == len(families)
    for family in (*families, UNKNOWN[provider]):  # type: ignore[index]
        assert family.provider == provider
        assert family.source.strip(), family.family
        re.compile(family.pattern)


def test_bedrock_inference_profiles_and_arns_are_matched_by_their_model() -> None:
    for geography in ("us", "eu", "apac", "global", "us-gov", "jp", "au", "ca"):
        assert normalize_model_id("bedrock", f"{geography}.anthropic.claude-3-7-sonnet-20250219-v1:0") == (
            "anthropic.claude-3-7-sonnet-20250219-v1:0"
        )
    # A model id is never mistaken for a profile prefix.
    assert normalize_model_id("bedrock", "amazon.nova-pro-v1:0") == "amazon.nova-pro-v1:0"
    assert normalize_model_id("openai", "OpenAI/GPT-4o") == "gpt-4o"


@pytest.mark.spec("LLM-1")
def test_unknown_models_get_the_safe_choices() -> None:
    openai_unknown = capabilities("openai", "some-new-model")
    assert not openai_unknown.known and not openai_unknown.accepts_temperature
    assert openai_unknown.reasoning_effort is None and openai_unknown.max_output_tokens is None
    bedrock_unknown = capabilities("bedrock", "acme.model-v1:0")
    assert not bedrock_unknown.accepts_temperature and not bedrock_unknown.accepts_system_message
    assert bedrock_unknown.prompt_cache.mechanism == "none" and bedrock_unknown.structured_output == "prompt_only"
    anthropic_unknown = capabilities("anthropic", "claude-next")
    assert anthropic_unknown.structured_output == "auto_tool"


@pytest.mark.spec("LLM-1")
@pytest.mark.parametrize("provider", ["openai", "anthropic", "bedrock"])
def test_every_known_family_has_an_output_ceiling(provider: str) -> None:
    """The configured limit (256-65,536) is lowered to the model's; only unknown models have none."""
    for family in FAMILIES[provider]:  # type: ignore[index]
        assert family.max_output_tokens is not None and family.max_output_tokens >= 256, family.family
        assert family.output_tokens(65_536) == min(65_536, family.max_output_tokens)
        assert family.output_tokens(256) == 256
    assert UNKNOWN[provider].max_output_tokens is None  # type: ignore[index]
    assert UNKNOWN[provider].output_tokens(65_536) == 65_536  # type: ignore[index]


@pytest.mark.spec("LLM-1")
@pytest.mark.parametrize(
    "provider, model_id, expected",
    [
        ("anthropic", "claude-3-haiku-20240307", 4096),
        ("anthropic", "claude-3-5-sonnet-20240620", 4096),
        ("anthropic", "claude-3-5-sonnet-20241022", 8192),
        ("anthropic", "claude-3-5-haiku-20241022", 8192),
        ("anthropic", "claude-3-7-sonnet-latest", 64_000),
        ("anthropic", "claude-sonnet-4-5-20250929", 64_000),
        ("anthropic", "claude-haiku-4-5-20251001", 64_000),
        ("anthropic", "claude-opus-4-1-20250805", 32_000),
        ("anthropic", "claude-opus-5", 65_536),  # unknown: as configured
        ("bedrock", "anthropic.claude-3-5-sonnet-20240620-v1:0", 4096),
        ("bedrock", "us.anthropic.claude-opus-4-20250514-v1:0", 32_000),
        ("bedrock", "us.amazon.nova-pro-v1:0", 5000),
        ("bedrock", "us.amazon.nova-premier-v1:0", 10_000),
        ("bedrock", "amazon.titan-text-premier-v1:0", 3072),
        ("bedrock", "anthropic.claude-v2:1", 4096),
        ("openai", "gpt-4-turbo", 4096),
        ("openai", "gpt-4o-2024-05-13", 4096),
        ("openai", "gpt-3.5-turbo", 4096),
        ("openai", "gpt-4", 8192),
        ("openai", "gpt-4o", 16_384),
        ("openai", "gpt-4o-mini", 16_384),
        ("openai", "gpt-4.1", 32_768),
        ("openai", "o1-mini", 32_768),  # shares o1-preview's family
        ("openai", "o3", 65_536),  # 100,000
        ("openai", "gpt-5", 65_536),  # 128,000
        ("openai", "gpt-5-chat-latest", 16_384),
        ("openai", "qwen2.5-coder:32b", 65_536),  # unknown: as configured
    ],
)
def test_the_output_limit_is_at_most_the_model_ceiling(provider: str, model_id: str, expected: int) -> None:
    assert output_token_limit(provider, model_id, 65_536) == expected  # type: ignore[arg-type]
    request = _request(max_output_tokens=65_536)
    if provider == "openai":
        arguments = OpenAIProvider(model_id, _keys, timeout_seconds=5).build_arguments(request)
        assert arguments["max_completion_tokens"] == expected
    elif provider == "anthropic":
        assert AnthropicProvider(model_id, _keys, timeout_seconds=5).build_arguments(request)["max_tokens"] == expected
    else:
        arguments = BedrockProvider(model_id, client=None).build_arguments(request)
        assert arguments["inferenceConfig"]["maxTokens"] == expected


@pytest.mark.spec("LLM-3")
def test_the_cited_botocore_documentation_still_says_so() -> None:
    """The Bedrock column cites botocore's service model: fail here if a botocore upgrade changes it."""
    model = botocore.session.get_session().get_service_model("bedrock-runtime")
    tool_choice = model.shape_for("ToolChoice")
    assert "Only supported by Anthropic Claude 3 and Amazon Nova models" in tool_choice.members["tool"].documentation
    assert "supported by" not in tool_choice.members["any"].documentation.lower()
    assert "cachePoint" in model.shape_for("SystemContentBlock").members
    # An unknown model is sent no maxTokens: left out, the model's maximum applies.
    max_tokens = model.shape_for("InferenceConfiguration").members["maxTokens"].documentation
    assert "The default value is the maximum allowed value for the model" in max_tokens
    assert "system" not in model.operation_model("Converse").input_shape.required_members


# -- Bedrock Converse -------------------------------------------------------------------------


@pytest.mark.spec("LLM-3")
@pytest.mark.parametrize("model_id", sorted(BEDROCK_MODELS))
def test_every_bedrock_request_passes_botocore_validation(
    model_id: str, converse_validator: tuple[ParamValidator, Any]
) -> None:
    provider = BedrockProvider(model_id, client=None)
    family = provider.capabilities
    for request_id in ("job-1:chunk-0", "job|1|chunk*0"):
        arguments = provider.build_arguments(_request(request_id))
        _assert_valid_converse(arguments, converse_validator)

    arguments = provider.build_arguments(_request())
    normalized = normalize_model_id("bedrock", model_id)
    # cachePoint only where Bedrock documents prompt caching for the model.
    has_cache_point = any("cachePoint" in block for block in arguments.get("system", []))
    assert has_cache_point == (family.prompt_cache.mechanism == "cache_point") == supports_prompt_cache(model_id)
    if re.match(r"anthropic\.claude-3-(haiku|sonnet|opus)-|anthropic\.claude-3-5-sonnet-", normalized):
        assert not has_cache_point  # these refuse a cachePoint with a ValidationException
    # toolChoice.tool only for "Anthropic Claude 3 and Amazon Nova models" (botocore).
    tool_choice = arguments.get("toolConfig", {}).get("toolChoice", {})
    if "tool" in tool_choice:
        assert re.match(r"anthropic\.claude-3-|amazon\.nova-", normalized), model_id
        assert tool_choice == {"tool": {"name": RESULT_TOOL_NAME}}
    inference = arguments.get("inferenceConfig", {})
    assert ("temperature" in inference) == family.accepts_temperature
    # The configured limit, at most the family's ceiling; an unknown model is sent none.
    assert inference.get("maxTokens") == (min(4096, family.max_output_tokens) if family.known else None)
    # A model without system prompts gets its instructions at the start of the user message.
    [user_block] = arguments["messages"][0]["content"]
    assert ("system" in arguments) == family.accepts_system_message
    assert user_block["text"] == (USER if family.accepts_system_message else f"{SYSTEM}\n\n{USER}")
    if not family.known:
        assert set(arguments) == {"modelId", "messages", "requestMetadata"}


@pytest.mark.spec("LLM-1")
@pytest.mark.parametrize(
    "model_id, cache_point, tool_choice, temperature",
    [
        ("us.anthropic.claude-3-haiku-20240307-v1:0", False, {"tool": {"name": RESULT_TOOL_NAME}}, True),
        ("anthropic.claude-3-5-sonnet-20240620-v1:0", False, {"tool": {"name": RESULT_TOOL_NAME}}, True),
        ("us.anthropic.claude-3-5-haiku-20241022-v1:0", True, {"tool": {"name": RESULT_TOOL_NAME}}, True),
        ("eu.anthropic.claude-3-7-sonnet-20250219-v1:0", True, {"tool": {"name": RESULT_TOOL_NAME}}, True),
        ("global.anthropic.claude-sonnet-4-5-20250929-v1:0", True, {"any": {}}, True),
        ("anthropic.claude-opus-4-7", False, None, False),
        ("us.amazon.nova-pro-v1:0", True, {"tool": {"name": RESULT_TOOL_NAME}}, True),
    ],
)
def test_bedrock_request_per_family(model_id: str, cache_point: bool, tool_choice: Any, temperature: bool) -> None:
    arguments = BedrockProvider(model_id, client=None).build_arguments(_request())
    assert (arguments["system"][-1] == {"cachePoint": {"type": "default"}}) is cache_point
    assert arguments["toolConfig"].get("toolChoice") == tool_choice
    assert arguments["toolConfig"]["tools"][0]["toolSpec"]["name"] == RESULT_TOOL_NAME
    assert ("temperature" in arguments["inferenceConfig"]) is temperature


@pytest.mark.spec("LLM-3")
@pytest.mark.parametrize(
    "model_id",
    [
        "amazon.titan-text-premier-v1:0",
        "amazon.titan-text-express-v1",
        "us.amazon.titan-text-lite-v1",
        "meta.llama3-70b-instruct-v1:0",  # unknown
        "acme.model-v1:0",  # unknown
    ],
)
def test_bedrock_models_without_system_prompts_get_the_instructions_in_the_user_message(
    model_id: str, converse_validator: tuple[ParamValidator, Any]
) -> None:
    """Titan refuses a system block ("This model doesn't support system messages"); an unknown
    model may be a Titan model."""
    provider = BedrockProvider(model_id, client=None)
    arguments = provider.build_arguments(_request())
    _assert_valid_converse(arguments, converse_validator)
    assert not provider.capabilities.accepts_system_message
    assert "system" not in arguments
    assert arguments["messages"] == [{"role": "user", "content": [{"text": f"{SYSTEM}\n\n{USER}"}]}]
    assert "toolConfig" not in arguments  # no tool use either


@pytest.mark.spec("LLM-3")
@pytest.mark.parametrize(
    "model_id", ["anthropic.claude-v2", "anthropic.claude-v2:1:200k", "anthropic.claude-instant-v1"]
)
def test_claude_2_and_instant_on_bedrock_get_no_tool_config(
    model_id: str, converse_validator: tuple[ParamValidator, Any]
) -> None:
    """Converse features table: "Anthropic Claude 2.x and earlier": system prompts yes, tool use no."""
    arguments = BedrockProvider(model_id, client=None).build_arguments(_request())
    _assert_valid_converse(arguments, converse_validator)
    assert "toolConfig" not in arguments
    assert arguments["system"] == [{"text": SYSTEM}]
    assert arguments["inferenceConfig"] == {"maxTokens": 4096, "temperature": 0}


@pytest.mark.spec("LLM-3")
def test_an_unknown_bedrock_model_is_sent_no_output_limit(converse_validator: tuple[ParamValidator, Any]) -> None:
    """A maxTokens above the model's maximum is refused; left out, the model's maximum applies."""
    arguments = BedrockProvider("cohere.command-r-plus-v1:0", client=None).build_arguments(
        _request(max_output_tokens=65_536)
    )
    _assert_valid_converse(arguments, converse_validator)
    assert "inferenceConfig" not in arguments


# -- OpenAI -----------------------------------------------------------------------------------


@pytest.mark.spec("LLM-4")
@pytest.mark.parametrize("base_url", [None, GATEWAY])
@pytest.mark.parametrize("structured_output", ["json_schema", "json_object", "none"])
@pytest.mark.parametrize("model_id", sorted(OPENAI_MODELS))
def test_every_openai_request_matches_the_sdk_parameters(
    model_id: str, structured_output: str, base_url: str | None
) -> None:
    provider = OpenAIProvider(
        model_id, _keys, base_url=base_url, timeout_seconds=5, structured_output=structured_output
    )
    arguments = provider.build_arguments(_request())
    extra_headers = arguments.pop("extra_headers")  # a request option of create(), not a body parameter
    assert extra_headers == {"X-Client-Request-Id": "job-1:chunk-0"}
    _consume(_OpenAIRequest.model_validate({"params": arguments}).params)

    family = provider.capabilities
    assert ("temperature" in arguments) == family.accepts_temperature
    assert arguments.get("reasoning_effort") == family.reasoning_effort
    assert len({"max_tokens", "max_completion_tokens"} & arguments.keys()) == 1
    if family.output_limit_field == "max_completion_tokens":
        assert arguments["max_completion_tokens"] == 4096  # even through a gateway
    elif base_url is None:
        assert arguments["max_completion_tokens"] == 4096  # api.openai.com: max_tokens is deprecated
    else:
        assert arguments["max_tokens"] == 4096
    if family.structured_output in ("prompt_only", "json_object"):
        assert arguments.get("response_format", {}).get("type") != "json_schema"
    if family.structured_output == "prompt_only":
        assert "response_format" not in arguments


@pytest.mark.spec("LLM-2")
@pytest.mark.parametrize(
    "model_id", ["o1", "o3-mini", "o4-mini-2025-04-16", "gpt-5", "gpt-5-mini", "gpt-5.1", "gpt-5-nano-2025-08-07"]
)
@pytest.mark.parametrize("base_url", [None, GATEWAY, "http://127.0.0.1:4000"])
def test_reasoning_models_get_no_temperature_and_max_completion_tokens_through_any_base_url(
    model_id: str, base_url: str | None
) -> None:
    arguments = OpenAIProvider(model_id, _keys, base_url=base_url, timeout_seconds=5).build_arguments(_request())
    assert "temperature" not in arguments
    assert "max_tokens" not in arguments and arguments["max_completion_tokens"] == 4096
    assert arguments["response_format"]["type"] == "json_schema"
    assert [m["role"] for m in arguments["messages"]] == ["system", "user"]


@pytest.mark.spec("LLM-2")
@pytest.mark.parametrize(
    "model_id, effort",
    [
        # Default medium effort: low leaves the limit (which counts reasoning tokens) to the answer.
        ("o1", "low"),
        ("o1-2024-12-17", "low"),
        ("o3", "low"),
        ("o3-mini-2025-01-31", "low"),
        ("o4-mini", "low"),
        ("gpt-5", "low"),
        ("gpt-5-mini-2025-08-07", "low"),
        ("gpt-5-nano", "low"),
        # Not sent: refused (o1-mini, o1-preview; gpt-5-pro takes only high), the default is
        # already none (gpt-5.1 and later), not a reasoning model, or unknown.
        ("o1-mini", None),
        ("o1-preview", None),
        ("gpt-5-pro", None),
        ("gpt-5.1", None),
        ("gpt-5-chat-latest", None),
        ("gpt-4o", None),
        ("qwen2.5-coder:32b", None),
    ],
)
def test_reasoning_models_are_asked_for_low_reasoning_effort(model_id: str, effort: str | None) -> None:
    arguments = OpenAIProvider(model_id, _keys, base_url=GATEWAY, timeout_seconds=5).build_arguments(_request())
    assert arguments.get("reasoning_effort") == effort
    arguments.pop("extra_headers")
    _consume(_OpenAIRequest.model_validate({"params": arguments}).params)
    if effort is not None:  # a value of the SDK's own type
        assert effort in typing.get_args(typing.get_args(ReasoningEffort)[0])


@pytest.mark.spec("LLM-2")
@pytest.mark.parametrize(
    "base_url",
    [
        "https://my-resource.openai.azure.com/openai/v1/",
        "https://my-resource.cognitiveservices.azure.com/openai/v1",
        "https://my-project.services.ai.azure.com/openai/v1",
        "https://api.openai.com/v1",
    ],
)
@pytest.mark.parametrize("model_id", ["my-o3-deployment", "gpt-4o", "prod-chat"])
def test_azure_openai_gets_max_completion_tokens_like_the_official_api(model_id: str, base_url: str) -> None:
    """Azure serves deployment names (unknown ids), often reasoning models, which refuse max_tokens."""
    provider = OpenAIProvider(model_id, _keys, base_url=base_url, timeout_seconds=5)
    arguments = provider.build_arguments(_request())
    assert provider.token_limit_field == "max_completion_tokens"
    assert "max_tokens" not in arguments and arguments["max_completion_tokens"] == 4096


@pytest.mark.parametrize(
    "base_url",
    [GATEWAY, "https://azure.example.com/v1", "https://openai.azure.com.evil.example/v1", "http://127.0.0.1:8000/v1"],
)
def test_other_hosts_get_max_tokens_for_a_model_that_takes_both(base_url: str) -> None:
    assert OpenAIProvider("gpt-4o", _keys, base_url=base_url, timeout_seconds=5).token_limit_field == "max_tokens"


def test_o1_mini_gets_its_instructions_in_the_user_message_and_no_response_format() -> None:
    arguments = OpenAIProvider("o1-mini", _keys, timeout_seconds=5).build_arguments(_request())
    assert [m["role"] for m in arguments["messages"]] == ["user"]
    assert arguments["messages"][0]["content"].startswith("You are a code reviewer.")
    assert "response_format" not in arguments and "temperature" not in arguments


@pytest.mark.spec("LLM-1")
@pytest.mark.parametrize(
    "model_id, base_url, expected",
    [
        ("gpt-4o", None, {"temperature": 0, "max_completion_tokens": 4096, "format": "json_schema"}),
        ("gpt-4o", GATEWAY, {"temperature": 0, "max_tokens": 4096, "format": "json_schema"}),
        ("gpt-4o-2024-05-13", GATEWAY, {"temperature": 0, "max_tokens": 4096, "format": "json_object"}),
        ("gpt-4", None, {"temperature": 0, "max_completion_tokens": 4096, "format": None}),
        ("qwen2.5-coder:32b", GATEWAY, {"max_tokens": 4096, "format": "json_schema"}),
        ("some-future-model", None, {"max_completion_tokens": 4096, "format": "json_schema"}),
    ],
)
def test_openai_request_per_family(model_id: str, base_url: str | None, expected: dict[str, Any]) -> None:
    arguments = OpenAIProvider(model_id, _keys, base_url=base_url, timeout_seconds=5).build_arguments(_request())
    fmt = expected.pop("format")
    assert {k: arguments[k] for k in ("temperature", "max_tokens", "max_completion_tokens") if k in arguments} == (
        expected
    )
    assert (arguments["response_format"]["type"] if "response_format" in arguments else None) == fmt


# -- Anthropic --------------------------------------------------------------------------------


@pytest.mark.spec("LLM-4")
@pytest.mark.parametrize("model_id", sorted(ANTHROPIC_MODELS))
def test_every_anthropic_request_matches_the_sdk_parameters(model_id: str) -> None:
    provider = AnthropicProvider(model_id, _keys, timeout_seconds=5)
    arguments = provider.build_arguments(_request())
    _consume(_AnthropicRequest.model_validate({"params": arguments}).params)

    family = provider.capabilities
    assert not {"temperature", "top_p", "top_k", "thinking"} & arguments.keys()
    assert arguments["tools"][0]["name"] == RESULT_TOOL_NAME
    if family.structured_output == "forced_tool":
        assert arguments["tool_choice"] == {"type": "tool", "name": RESULT_TOOL_NAME}
    else:  # thinking may be on (and cannot be turned off): only auto or none are accepted with it
        assert arguments["tool_choice"] == {"type": "auto"}
    assert ("cache_control" in arguments["system"][0]) == (family.prompt_cache.mechanism == "cache_control")


@pytest.mark.spec("LLM-1")
@pytest.mark.parametrize(
    "model_id, tool_choice, cached",
    [
        ("claude-3-haiku-20240307", {"type": "tool", "name": RESULT_TOOL_NAME}, True),
        ("claude-3-sonnet-20240229", {"type": "tool", "name": RESULT_TOOL_NAME}, False),
        ("claude-sonnet-4-6", {"type": "tool", "name": RESULT_TOOL_NAME}, True),
        ("claude-opus-4-7", {"type": "auto"}, True),
        ("claude-opus-5", {"type": "auto"}, True),
    ],
)
def test_anthropic_request_per_family(model_id: str, tool_choice: dict[str, str], cached: bool) -> None:
    arguments = AnthropicProvider(model_id, _keys, timeout_seconds=5).build_arguments(_request())
    assert arguments["tool_choice"] == tool_choice
    assert (arguments["system"][0].get("cache_control") == {"type": "ephemeral"}) is cached


def test_the_tables_are_the_providers_tables() -> None:
    assert FAMILIES == {"openai": OPENAI_FAMILIES, "anthropic": ANTHROPIC_FAMILIES, "bedrock": BEDROCK_FAMILIES}

"""Amazon Bedrock through the Converse API. No API key: the function's IAM role signs the calls.

The request follows the model's family (model_capabilities.py): a `cachePoint` only for the
models Bedrock caches for, `toolChoice.tool` only for Claude 3 and Nova (botocore's
documentation), `toolChoice.any` for later Claude models, the tool offered without a forced choice
where thinking cannot be turned off, no tools for models without tool use (Titan, Claude 2.x),
the instructions in the user message for models without system prompts (Titan), `maxTokens` at
most the family's ceiling, and for an unknown model neither system block, tools, cache
checkpoint, temperature nor `maxTokens`: the instructions open the user message, carry the
schema, and the result parser reads the text."""

from __future__ import annotations

import json
import re
from http import HTTPStatus
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError, ConnectTimeoutError, NoCredentialsError, ReadTimeoutError
from botocore.exceptions import ConnectionError as BotoConnectionError

from p4review.error_text import safe_excerpt
from p4review.errors import ConfigError, P4ReviewError, clamp_retry_after
from p4review.review.llm.base import (
    RESULT_TOOL_DESCRIPTION,
    RESULT_TOOL_NAME,
    ContextTooLong,
    LlmRequest,
    LlmResponse,
    ProviderAuthError,
    ProviderPolicyRefusal,
    ProviderRateLimited,
    ProviderRequestError,
    ProviderTimeout,
    ProviderUnavailable,
    mentions_context_too_long,
)
from p4review.review.llm.model_capabilities import capabilities

CONNECT_TIMEOUT_SECONDS = 10
_REFUSAL_STOP_REASONS = frozenset({"content_filtered", "guardrail_intervened"})
_RATE_LIMITED = frozenset({"ThrottlingException", "ServiceQuotaExceededException"})
_UNAVAILABLE = frozenset(
    {"InternalServerException", "ServiceUnavailableException", "ModelNotReadyException", "ModelErrorException"}
)
_AUTH = frozenset({"AccessDeniedException", "UnrecognizedClientException"})
# Converse's requestMetadata values (shown in invocation logs) must match this.
_METADATA_VALUE = re.compile(r"[a-zA-Z0-9\s:_@$#=/+,\-.]{0,256}")


def make_bedrock_client(region: str | None, timeout_seconds: float) -> Any:
    """A bedrock-runtime client with SDK retries off (the stage runtime owns retries)."""
    import boto3
    from botocore.config import Config
    from botocore.exceptions import NoRegionError

    config = Config(
        retries={"total_max_attempts": 1, "mode": "standard"},
        read_timeout=timeout_seconds,
        connect_timeout=CONNECT_TIMEOUT_SECONDS,
    )
    try:
        return boto3.session.Session().client("bedrock-runtime", region_name=region, config=config)
    except NoRegionError:
        raise ConfigError("bedrock: no AWS region configured (P4REVIEW_LLM_REGION)") from None


def supports_prompt_cache(model_id: str) -> bool:
    """Whether Bedrock takes a cache checkpoint for this model (another model would refuse it)."""
    return capabilities("bedrock", model_id).prompt_cache.mechanism == "cache_point"


class BedrockProvider:
    name = "bedrock"

    def __init__(self, model: str, client: Any):
        self.model = model
        self.capabilities = capabilities("bedrock", model)
        self._client = client

    def complete(self, request: LlmRequest) -> LlmResponse:
        arguments = self.build_arguments(request)
        try:
            response = self._client.converse(**arguments)
        except (ClientError, BotoCoreError) as exc:
            raise self._domain_error(exc, request) from None

        stop_reason = response.get("stopReason")
        if stop_reason in _REFUSAL_STOP_REASONS:
            raise ProviderPolicyRefusal(f"{self.name} ({self.model}): stopped by {stop_reason}")
        # "max_tokens" and the malformed-output reasons: the answer goes back as is; the parser rejects it.
        usage = response.get("usage") or {}
        cache_read = usage.get("cacheReadInputTokens") or 0
        cache_write = usage.get("cacheWriteInputTokens") or 0
        return LlmResponse(
            text=_answer_text(response.get("output", {}).get("message", {}).get("content") or []),
            # Converse reports cache reads and writes apart from inputTokens: all three are input.
            input_tokens=(usage.get("inputTokens") or 0) + cache_read + cache_write,
            cache_read_tokens=cache_read,
            cache_write_tokens=cache_write,
            output_tokens=usage.get("outputTokens") or 0,
            provider=self.name,
            model=self.model,
            stop_reason=stop_reason,
            meta={"response_id": response_id}
            if (response_id := response.get("ResponseMetadata", {}).get("RequestId"))
            else {},
        )

    def build_arguments(self, request: LlmRequest) -> dict[str, Any]:
        """The keyword arguments of `converse` for this model's family."""
        family = self.capabilities
        arguments: dict[str, Any] = {"modelId": self.model}
        if family.accepts_system_message:
            system: list[dict[str, Any]] = [{"text": request.system}]
            if family.prompt_cache.mechanism == "cache_point":
                # A cache checkpoint after the instructions, the same in every request.
                system.append({"cachePoint": {"type": "default"}})
            arguments["system"] = system
            user_text = request.user
        else:  # Titan, an unknown model: "This model doesn't support system messages"
            user_text = f"{request.system}\n\n{request.user}"
        arguments["messages"] = [{"role": "user", "content": [{"text": user_text}]}]
        inference: dict[str, Any] = {}
        if family.known:
            # At most the family's ceiling. An unknown model is sent none: above its maximum it
            # would be refused, and left out "the default value is the maximum allowed value".
            inference["maxTokens"] = family.output_tokens(request.max_output_tokens)
        if family.accepts_temperature:
            inference["temperature"] = 0
        if inference:
            arguments["inferenceConfig"] = inference
        if family.structured_output != "prompt_only":
            tool = {
                "toolSpec": {
                    "name": RESULT_TOOL_NAME,
                    "description": RESULT_TOOL_DESCRIPTION,
                    "inputSchema": {"json": request.json_schema},
                }
            }
            tool_config: dict[str, Any] = {"tools": [tool]}
            if family.structured_output == "forced_tool":
                tool_config["toolChoice"] = {"tool": {"name": RESULT_TOOL_NAME}}
            elif family.structured_output == "any_tool":
                tool_config["toolChoice"] = {"any": {}}
            arguments["toolConfig"] = tool_config  # auto_tool: the default choice, left out
        if _METADATA_VALUE.fullmatch(request.request_id):
            arguments["requestMetadata"] = {"p4review_request_id": request.request_id}
        return arguments

    def _domain_error(self, exc: Exception, request: LlmRequest) -> P4ReviewError:
        where = f"{self.name} ({self.model})"
        if isinstance(exc, (ReadTimeoutError, ConnectTimeoutError)):
            return ProviderTimeout(f"{where}: request timed out")
        if isinstance(exc, BotoConnectionError):  # EndpointConnectionError and kin
            return ProviderUnavailable(f"{where}: connection failed")
        if isinstance(exc, NoCredentialsError):
            return ProviderAuthError(f"{where}: no AWS credentials")
        if not isinstance(exc, ClientError):  # e.g. a request the service model refuses: our bug
            return ProviderRequestError(f"{where}: {type(exc).__name__}")
        error = exc.response.get("Error", {})
        code = str(error.get("Code", "Unknown"))
        message = str(error.get("Message", ""))
        metadata = exc.response.get("ResponseMetadata", {})
        status = metadata.get("HTTPStatusCode", 0)
        excerpt = safe_excerpt(message, request_texts=(request.system, request.user))
        text = f"{where}: {code}" + (f": {excerpt}" if excerpt else "")
        error_type: type[P4ReviewError]
        # Named codes first: ModelNotReadyException, for one, comes with HTTP 429.
        if code in _AUTH:
            return ProviderAuthError(f"{where}: {code}")
        if code in _RATE_LIMITED:
            error_type = ProviderRateLimited
        elif code == "ModelTimeoutException":
            error_type = ProviderTimeout
        elif code in _UNAVAILABLE:
            error_type = ProviderUnavailable
        elif code == "ValidationException" and mentions_context_too_long(message):
            error_type = ContextTooLong
        elif status == HTTPStatus.TOO_MANY_REQUESTS:
            error_type = ProviderRateLimited
        elif status >= HTTPStatus.INTERNAL_SERVER_ERROR:
            error_type = ProviderUnavailable
        else:  # ValidationException, ResourceNotFoundException and any other refusal of the request
            error_type = ProviderRequestError
        if error_type in (ProviderRateLimited, ProviderUnavailable):
            return error_type(text, retry_after=clamp_retry_after(metadata.get("HTTPHeaders", {}).get("retry-after")))
        return error_type(text)


def _answer_text(blocks: list[dict[str, Any]]) -> str:
    for block in blocks:
        tool_use = block.get("toolUse")
        if tool_use and tool_use.get("name") == RESULT_TOOL_NAME:
            return json.dumps(tool_use.get("input"), ensure_ascii=False)
    return "".join(block["text"] for block in blocks if "text" in block)

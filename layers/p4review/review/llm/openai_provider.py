"""OpenAI chat completions, and any OpenAI-compatible server (vLLM, Ollama, ...) via `base_url`.

What the request carries depends on the model's family (model_capabilities.py), not on the base
URL: reasoning models (o-series, gpt-5 family) get no temperature and `max_completion_tokens`
even through a gateway, and low reasoning effort where their default would spend the output
limit on reasoning; an unknown model gets no temperature, and the token limit every server at
that base URL knows (Azure OpenAI counts as OpenAI's own: its deployment names hide the model).
The token limit is the configured one, at most the family's ceiling. This module is imported
only when the provider is `openai`, so the SDK import costs nothing to functions configured
otherwise."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlparse

import openai

from p4review.errors import ConfigError
from p4review.review.llm.base import KeySource, LlmRequest, LlmResponse, ProviderPolicyRefusal
from p4review.review.llm.http_errors import KeyedClient, SdkErrors
from p4review.review.llm.model_capabilities import capabilities

OPENAI_API_BASE_URL = "https://api.openai.com/v1"
# Hosts that serve OpenAI's own models and take max_completion_tokens from every one of them:
# api.openai.com, and Azure OpenAI's resource endpoints, whose deployment names (unknown ids to
# the table) are often reasoning models, which refuse max_tokens (openai SDK
# completion_create_params.py: "not compatible with o-series models"; Azure OpenAI reasoning
# models: https://learn.microsoft.com/azure/ai-foundry/openai/how-to/reasoning, max_completion_tokens).
_OPENAI_HOSTS = ("api.openai.com",)
_AZURE_OPENAI_HOST_SUFFIXES = (".openai.azure.com", ".cognitiveservices.azure.com", ".services.ai.azure.com")
STRUCTURED_OUTPUT_MODES = ("json_schema", "json_object", "none")  # from most to least structure
RESULT_SCHEMA_NAME = "ReviewResult"

_ERRORS = SdkErrors(
    base=openai.OpenAIError,
    status=openai.APIStatusError,
    connection=openai.APIConnectionError,
    timeout=openai.APITimeoutError,
)


class OpenAIProvider:
    name = "openai"

    def __init__(
        self,
        model: str,
        key_source: KeySource,
        *,
        base_url: str | None = None,
        timeout_seconds: float,
        structured_output: str = "json_schema",
    ):
        if structured_output not in STRUCTURED_OUTPUT_MODES:
            raise ConfigError(f"unknown structured output mode {structured_output!r}")
        self.model = model
        self.structured_output = structured_output
        # Explicit, so the SDK does not pick up OPENAI_BASE_URL from the environment.
        self.base_url = base_url or OPENAI_API_BASE_URL
        self.capabilities = capabilities("openai", model)
        field = self.capabilities.output_limit_field
        if field == "either":
            # The model takes both: api.openai.com and Azure OpenAI prefer max_completion_tokens
            # (max_tokens is deprecated there); OpenAI-compatible servers reliably know only max_tokens.
            field = "max_completion_tokens" if serves_openai_models(self.base_url) else "max_tokens"
        self.token_limit_field = field
        # The configured mode, lowered to what the family supports (an unknown model: as configured).
        self.response_format_mode = _lower_of(structured_output, self.capabilities.structured_output)
        self._timeout_seconds = timeout_seconds
        self._client = KeyedClient(self.name, model, key_source, self._build_client, _ERRORS)

    def _build_client(self, api_key: str) -> openai.OpenAI:
        # No SDK retries: the stage runtime owns retries and backoff.
        return openai.OpenAI(api_key=api_key, base_url=self.base_url, timeout=self._timeout_seconds, max_retries=0)

    def complete(self, request: LlmRequest) -> LlmResponse:
        arguments = self.build_arguments(request)
        completion = self._client.call(lambda client: client.chat.completions.create(**arguments), request)

        choice = completion.choices[0] if completion.choices else None
        finish_reason = choice.finish_reason if choice else None
        message = choice.message if choice else None
        # Refusal text is not repeated: it may quote the change.
        if finish_reason == "content_filter":
            raise ProviderPolicyRefusal(f"{self.name} ({self.model}): the content filter stopped the answer")
        if message is not None and getattr(message, "refusal", None):
            raise ProviderPolicyRefusal(f"{self.name} ({self.model}): the model refused the request")
        # finish_reason "length": the truncated text goes back as is; the result parser rejects it.
        usage = getattr(completion, "usage", None)  # some compatible servers leave it out
        # OpenAI caches a prompt's stable prefix by itself (the system message comes first and is
        # the same for every request); prompt_tokens includes what it read from the cache.
        details = getattr(usage, "prompt_tokens_details", None) if usage else None
        return LlmResponse(
            text=(message.content if message else None) or "",
            input_tokens=(usage.prompt_tokens if usage else 0) or 0,
            output_tokens=(usage.completion_tokens if usage else 0) or 0,
            cache_read_tokens=(getattr(details, "cached_tokens", None) or 0) if details else 0,
            provider=self.name,
            model=self.model,
            stop_reason=finish_reason,
            meta={"response_id": response_id} if (response_id := getattr(completion, "id", None)) else {},
        )

    def build_arguments(self, request: LlmRequest) -> dict[str, Any]:
        """The keyword arguments of `chat.completions.create` for this model's family."""
        if self.capabilities.accepts_system_message:
            messages = [{"role": "system", "content": request.system}, {"role": "user", "content": request.user}]
        else:  # o1-mini, o1-preview: no system (or developer) role; the instructions go first
            messages = [{"role": "user", "content": f"{request.system}\n\n{request.user}"}]
        arguments: dict[str, Any] = {"model": self.model, "messages": messages}
        if self.capabilities.accepts_temperature:
            arguments["temperature"] = 0
        # At most the family's ceiling; for reasoning models it counts the reasoning tokens too.
        arguments[self.token_limit_field] = self.capabilities.output_tokens(request.max_output_tokens)
        if self.capabilities.reasoning_effort is not None:
            arguments["reasoning_effort"] = self.capabilities.reasoning_effort
        response_format = self._response_format(request)
        if response_format is not None:
            arguments["response_format"] = response_format
        if request.request_id.isascii():
            arguments["extra_headers"] = {"X-Client-Request-Id": request.request_id[:512]}
        return arguments

    def _response_format(self, request: LlmRequest) -> dict[str, Any] | None:
        if self.response_format_mode == "json_schema":
            # strict False: strict mode wants every property required and a JSON Schema subset.
            return {
                "type": "json_schema",
                "json_schema": {"name": RESULT_SCHEMA_NAME, "schema": request.json_schema, "strict": False},
            }
        if self.response_format_mode == "json_object":
            return {"type": "json_object"}
        return None


def serves_openai_models(base_url: str) -> bool:
    """api.openai.com or an Azure OpenAI endpoint: max_completion_tokens for every model."""
    host = (urlparse(base_url).hostname or "").lower()
    return host in _OPENAI_HOSTS or host.endswith(_AZURE_OPENAI_HOST_SUFFIXES)


def _lower_of(configured: str, supported: str) -> str:
    """The less structured of the two (STRUCTURED_OUTPUT_MODES runs from most to least); the
    table's other values (tools, "prompt_only") mean no response_format."""
    modes = STRUCTURED_OUTPUT_MODES
    supported = supported if supported in modes else "none"
    return modes[max(modes.index(configured), modes.index(supported))]

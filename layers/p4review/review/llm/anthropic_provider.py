"""Anthropic Messages API. The ReviewResult comes back as the input of the result tool's call.

The tool is forced by name for the families that allow it (model_capabilities.py); a model whose
thinking cannot be turned off (and an unknown model) gets tool choice `auto`, the only forced-less
choice accepted with thinking on, and the parser also reads a text answer. Imported only when the
provider is `anthropic`. No sampling parameters are sent: the 2.x SDK dropped them and its
default API version refuses them."""

from __future__ import annotations

import json
from typing import Any

import anthropic

from p4review.review.llm.base import (
    RESULT_TOOL_DESCRIPTION,
    RESULT_TOOL_NAME,
    KeySource,
    LlmRequest,
    LlmResponse,
    ProviderPolicyRefusal,
)
from p4review.review.llm.http_errors import KeyedClient, SdkErrors
from p4review.review.llm.model_capabilities import capabilities

ANTHROPIC_API_BASE_URL = "https://api.anthropic.com"

_ERRORS = SdkErrors(
    base=anthropic.AnthropicError,
    status=anthropic.APIStatusError,
    connection=anthropic.APIConnectionError,
    timeout=anthropic.APITimeoutError,
)


class AnthropicProvider:
    name = "anthropic"

    def __init__(self, model: str, key_source: KeySource, *, base_url: str | None = None, timeout_seconds: float):
        self.model = model
        # Explicit, so the SDK does not pick up ANTHROPIC_BASE_URL or a profile's URL instead.
        self.base_url = base_url or ANTHROPIC_API_BASE_URL
        self.capabilities = capabilities("anthropic", model)
        self._timeout_seconds = timeout_seconds
        self._client = KeyedClient(self.name, model, key_source, self._build_client, _ERRORS)

    def _build_client(self, api_key: str) -> anthropic.Anthropic:
        # An explicit api_key also keeps the SDK from looking for profiles or other credentials.
        return anthropic.Anthropic(
            api_key=api_key, base_url=self.base_url, timeout=self._timeout_seconds, max_retries=0
        )

    def complete(self, request: LlmRequest) -> LlmResponse:
        arguments = self.build_arguments(request)
        message = self._client.call(lambda client: client.messages.create(**arguments), request)

        if message.stop_reason == "refusal":
            raise ProviderPolicyRefusal(f"{self.name} ({self.model}): the model refused the request")
        # "max_tokens": the truncated answer goes back as is; the result parser rejects it.
        usage = message.usage
        cache_write = getattr(usage, "cache_creation_input_tokens", None) or 0
        cache_read = getattr(usage, "cache_read_input_tokens", None) or 0
        return LlmResponse(
            text=_answer_text(message.content),
            # Anthropic reports cache reads and writes apart from input_tokens: all three are input.
            input_tokens=usage.input_tokens + cache_write + cache_read,
            cache_read_tokens=cache_read,
            cache_write_tokens=cache_write,
            output_tokens=usage.output_tokens,
            provider=self.name,
            model=self.model,
            stop_reason=message.stop_reason,
            meta={"response_id": message.id},
        )

    def build_arguments(self, request: LlmRequest) -> dict[str, Any]:
        """The keyword arguments of `messages.create` for this model's family."""
        tool = {"name": RESULT_TOOL_NAME, "description": RESULT_TOOL_DESCRIPTION, "input_schema": request.json_schema}
        system: dict[str, Any] = {"type": "text", "text": request.system}
        if self.capabilities.prompt_cache.mechanism == "cache_control":
            # The instructions (with the tool schema before them) are the same for every request:
            # cached, a later request within five minutes reads them at a tenth of the price.
            system["cache_control"] = {"type": "ephemeral"}
        arguments: dict[str, Any] = {
            "model": self.model,
            # At most the family's ceiling (a larger max_tokens is refused with a 400).
            "max_tokens": self.capabilities.output_tokens(request.max_output_tokens),
            "system": [system],
            "messages": [{"role": "user", "content": request.user}],
            "tools": [tool],
        }
        if self.capabilities.structured_output == "forced_tool":
            arguments["tool_choice"] = {"type": "tool", "name": RESULT_TOOL_NAME}
        else:  # auto_tool: the default, stated
            arguments["tool_choice"] = {"type": "auto"}
        return arguments


def _answer_text(blocks: list[Any]) -> str:
    for block in blocks:
        if block.type == "tool_use" and block.name == RESULT_TOOL_NAME:
            return json.dumps(block.input, ensure_ascii=False)
    return "".join(block.text for block in blocks if block.type == "text")

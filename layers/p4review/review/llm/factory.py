"""Build the configured LLM provider. Each provider module (and its SDK) is imported only in
its own branch, so a function pays only for the provider it runs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from p4review.errors import ConfigError
from p4review.review.llm.base import KeySource, LlmProvider
from p4review.settings.blocks import LlmBlock

# (region, timeout_seconds) -> a bedrock-runtime client; tests pass a stubbed one.
BedrockClientFactory = Callable[[str | None, float], Any]


def build_provider(
    settings: LlmBlock, key_source: KeySource | None, bedrock_client_factory: BedrockClientFactory | None = None
) -> LlmProvider | None:
    """The provider for `settings.llm_provider`, or None for "offline": the review stage then
    runs its offline reviewer, which needs no provider, model or key."""
    provider = settings.llm_provider
    if provider == "offline":
        return None
    model = settings.llm_model
    if not model:
        raise ConfigError(f"llm provider {provider} needs a model (P4REVIEW_LLM_MODEL)")

    if provider == "bedrock":  # signed by the function's IAM role: no key
        from p4review.review.llm.bedrock_provider import BedrockProvider, make_bedrock_client

        make_client = bedrock_client_factory or make_bedrock_client
        return BedrockProvider(model, make_client(settings.llm_region, settings.llm_timeout_seconds))

    if key_source is None:
        raise ConfigError(f"llm provider {provider} needs an API key secret (P4REVIEW_LLM_SECRET_ID)")
    if provider == "openai":
        from p4review.review.llm.openai_provider import OpenAIProvider

        return OpenAIProvider(
            model,
            key_source,
            base_url=settings.llm_base_url,
            timeout_seconds=settings.llm_timeout_seconds,
            structured_output=settings.llm_structured_output,
        )
    if provider == "anthropic":
        from p4review.review.llm.anthropic_provider import AnthropicProvider

        return AnthropicProvider(
            model, key_source, base_url=settings.llm_base_url, timeout_seconds=settings.llm_timeout_seconds
        )
    raise ConfigError(f"unknown llm provider {provider}")

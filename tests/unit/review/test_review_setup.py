"""The review stage's output limit, as requests carry it and the token budget reserves it: the
configured one, at most the model's own (review/llm/model_capabilities.py)."""

import pytest

from p4review.review.settings import ReviewerSettings
from p4review.review.setup import review_config


@pytest.mark.spec("LLM-1")
@pytest.mark.parametrize(
    ("provider", "model", "expected"),
    [
        ("anthropic", "claude-3-haiku-20240307", 4096),  # the model's maximum
        ("bedrock", "anthropic.claude-3-haiku-20240307-v1:0", 4096),
        ("openai", "gpt-4.1", 16_000),  # under the model's maximum: as configured
        ("openai", "some-gateway-model", 16_000),  # unknown: as configured
        ("offline", None, 16_000),
    ],
)
def test_the_reserved_output_limit_is_the_one_the_request_carries(provider, model, expected):
    settings = ReviewerSettings.model_validate(
        {
            "P4REVIEW_LLM_PROVIDER": provider,
            **({"P4REVIEW_LLM_MODEL": model} if model else {}),
            "P4REVIEW_LLM_MAX_OUTPUT_TOKENS": "16000",
        }
    )
    assert review_config(settings).max_output_tokens == expected

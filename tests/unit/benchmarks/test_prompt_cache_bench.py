"""The prompt-cache billing model of benchmarks/prompt_cache.py: a prefix below the providers'
minimum is never cached; above it the first request writes and the others read; Anthropic's tool
prompt is part of the prefix, and OpenAI reads whole 128-token blocks."""

from __future__ import annotations

import pytest

from benchmarks.prompt_cache import PROVIDERS, Pricing, as_estimated, billed

ANTHROPIC, OPENAI_GPT5, OPENAI_GPT41, OPENAI_GPT4O = PROVIDERS
PLAIN_ANTHROPIC = as_estimated(ANTHROPIC)  # no tool prompt, the whole prefix cached


@pytest.mark.spec("RV-16")
def test_a_prefix_below_the_minimum_is_billed_in_full() -> None:
    requests = [(1, 300, 700, 1000)] * 3  # tool schema + instructions = 1,000 < 1,024
    assert billed(requests, PLAIN_ANTHROPIC) == (6000.0, 0)


@pytest.mark.spec("RV-16")
def test_the_first_request_writes_the_prefix_and_the_others_read_it() -> None:
    requests = [(1, 400, 700, 1000)] * 3  # prefix 1,100
    total, read = billed(requests, PLAIN_ANTHROPIC)
    assert read == 2200 and total == 1.25 * 1100 + 1000 + 2 * (0.1 * 1100 + 1000)


def test_anthropics_tool_prompt_is_billed_in_the_prefix_and_can_lift_it_over_the_minimum() -> None:
    # "We also automatically include a special system prompt for the model which enables tool use":
    # 313 tokens for tool_choice any or tool on the Claude 4 models (Anthropic's tool use overview).
    requests = [(1, 300, 700, 1000)] * 2  # 1,000 of ours: under the minimum without the tool prompt
    total, read = billed(requests, ANTHROPIC)
    assert read == 1313 and total == 1.25 * 1313 + 1000 + 0.1 * 1313 + 1000


def test_openai_reads_the_prefix_in_whole_128_token_blocks_and_bills_the_rest_in_full() -> None:
    # OpenAI's cookbook: a match "until the first mismatched token in 128 token blocks".
    requests = [(1, 400, 900, 500)] * 2  # prefix 1,300: 1,280 read, 20 billed in full
    total, read = billed(requests, OPENAI_GPT5)
    assert read == 1280 and total == (1300 + 500) + (0.1 * 1280 + 20 + 500)


def test_openai_caches_the_schema_and_instructions_and_has_no_write_premium() -> None:
    # "The structured output schema serves as a prefix to the system message and can be cached."
    requests = [(1, 400, 1136, 500)] * 2  # prefix 1,536: twelve blocks
    total, read = billed(requests, OPENAI_GPT4O)
    assert read == 1536 and total == (1536 + 500) + (0.5 * 1536 + 500)


def test_openai_models_are_billed_at_their_own_cached_input_price() -> None:
    # OpenAI's pricing page: cached input at a tenth (GPT-5 family), a quarter (GPT-4.1), a half (GPT-4o).
    requests = [(1, 400, 1136, 500)] * 2
    assert [billed(requests, p)[0] for p in (OPENAI_GPT5, OPENAI_GPT41, OPENAI_GPT4O)] == [
        2036 + 0.1 * 1536 + 500,
        2036 + 0.25 * 1536 + 500,
        2036 + 0.5 * 1536 + 500,
    ]


def test_the_estimated_model_is_the_one_issue_30_was_measured_by() -> None:
    assert as_estimated(OPENAI_GPT41) == Pricing(OPENAI_GPT41.name, 1.0, 0.25, OPENAI_GPT41.tokenizer)

"""The prompt-cache billing model of benchmarks/prompt_cache.py: a prefix below the providers'
minimum is never cached; above it the first request writes and the others read."""

from __future__ import annotations

import pytest

from benchmarks.prompt_cache import PROVIDERS, billed

ANTHROPIC, OPENAI_GPT5, OPENAI_GPT41, OPENAI_GPT4O = PROVIDERS


@pytest.mark.spec("RV-16")
def test_a_prefix_below_the_minimum_is_billed_in_full() -> None:
    requests = [(1, 300, 700, 1000)] * 3  # tool schema + instructions = 1,000 < 1,024
    assert billed(requests, ANTHROPIC) == (6000.0, 0)


@pytest.mark.spec("RV-16")
def test_the_first_request_writes_the_prefix_and_the_others_read_it() -> None:
    requests = [(1, 400, 700, 1000)] * 3  # prefix 1,100
    total, read = billed(requests, ANTHROPIC)
    assert read == 2200 and total == 1.25 * 1100 + 1000 + 2 * (0.1 * 1100 + 1000)


def test_openai_caches_the_schema_and_instructions_and_has_no_write_premium() -> None:
    # "The structured output schema serves as a prefix to the system message and can be cached."
    requests = [(1, 400, 1100, 500)] * 2
    total, read = billed(requests, OPENAI_GPT4O)
    assert read == 1500 and total == (1500 + 500) + (0.5 * 1500 + 500)


def test_openai_models_are_billed_at_their_own_cached_input_price() -> None:
    # OpenAI's pricing page: cached input at a tenth (GPT-5 family), a quarter (GPT-4.1), a half (GPT-4o).
    requests = [(1, 400, 1100, 500)] * 2
    assert [billed(requests, p)[0] for p in (OPENAI_GPT5, OPENAI_GPT41, OPENAI_GPT4O)] == [
        2000 + 0.1 * 1500 + 500,
        2000 + 0.25 * 1500 + 500,
        2000 + 0.5 * 1500 + 500,
    ]

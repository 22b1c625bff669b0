"""The cacheable prefix as the providers count it (tools/tokenizers, installed by `make test`):
the estimator the service budgets with cannot tell whether a prompt reaches a caching minimum."""

from __future__ import annotations

import json

from benchmarks.token_counts import CLAUDE, O200K, count_tokens
from p4review.models.review_result import result_schema_for
from p4review.review.prompts import CONTEXT_ENCLOSING, estimate_tokens, load_registry

REGISTRY = load_registry()


def _prefix(version: str) -> list[str]:
    template = REGISTRY.template(version)
    return [json.dumps(result_schema_for(template.schema_version)), template.text]


def test_the_context_prompts_prefix_caches_as_the_providers_count_it():
    """The newest context prompt's prefix, its output schema and instructions, is over the
    1,024-token caching minimum by at least one of OpenAI's 128-token cache blocks, counted by
    OpenAI's o200k_base (exact) and Anthropic's published tokenizer (approximate), without
    Anthropic's tool prompt: a shorter edit would silently stop caching."""
    newest = max(v for v, t in REGISTRY.templates.items() if t.context == CONTEXT_ENCLOSING)
    counts = count_tokens(_prefix(newest))
    for tokenizer in (O200K, CLAUDE):
        assert sum(counts[tokenizer]) >= 1024 + 128, (tokenizer, counts[tokenizer])


def test_the_stable_prompts_prefix_is_under_the_minimum_as_docs_review_md_says():
    """1.2.0's prefix never caches at OpenAI (and at Anthropic only if its tool prompt counts
    toward the minimum), though the estimator puts it within 12 tokens of 1,024."""
    prefix = _prefix(REGISTRY.stable)
    assert 1000 <= sum(estimate_tokens(text) for text in prefix) < 1024
    counted = count_tokens(prefix)
    assert sum(counted[O200K]) < 1024 and sum(counted[CLAUDE]) < 1024

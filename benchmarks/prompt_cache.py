"""Billed-token equivalent of the fixture changelists' reviews with the providers' prompt caching,
against the naive whole-diff prompt (benchmarks/review_tokens.py), in the same run, for the stable
prompt and for the prompt that shows each hunk's enclosing function (review/context/).

No provider answers here, so the providers' caches are modelled from their published rules, and
the requests are the review stage's own (`request_for`, every chunk of every fixture change, in
index order, as a steady stream of reviews would send them). The service skips generated files
(`p4review.change.generated`); the naive prompt is the whole diff, generated files included:

- Anthropic (and Claude on Bedrock, `cachePoint`): the prefix up to the marked system block (the
  tool schema, then the instructions) is cached when it is at least 1,024 tokens (Sonnet/Opus);
  the first request writes it (billed 1.25x), later requests within 5 minutes read it (0.1x).
- OpenAI: automatic for a prompt of 1,024 tokens or more; "the structured output schema serves as
  a prefix to the system message and can be cached" (OpenAI's prompt caching guide, "What can be
  cached"), so the prefix is the schema and the instructions, as for Anthropic; no write premium.
  The cached part's price depends on the model (OpenAI's pricing page, "Cached input"): a tenth of
  the input price for the GPT-5 family (gpt-5.2: $1.75 and $0.175 per million), a quarter for
  GPT-4.1 ($2.00 and $0.50), a half for GPT-4o ($2.50 and $1.25), so each is modelled.

Tokens are estimated at 3.5 characters per token for every part (the same estimator as the naive
side). Output tokens are left out on both sides (they depend on the model, not the prompt).

Run alone: `python -m benchmarks.prompt_cache`."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

GOAL_RATIO = 0.7  # all fixture changes
GOAL_HAND_WRITTEN = 1.0  # the hand-written ones, context included (issue 30)
MIN_CACHEABLE = 1024
GENERATED_CHANGE = 48255  # 290 regenerated protocol headers, skipped by the service as generated


@dataclass(frozen=True)
class Pricing:
    name: str
    write: float  # multiplier of a cache write
    read: float  # multiplier of a cache read


PROVIDERS = (
    Pricing("anthropic / bedrock claude", write=1.25, read=0.10),
    Pricing("openai gpt-5 family (automatic, 0.1x read)", write=1.0, read=0.10),
    Pricing("openai gpt-4.1 (automatic, 0.25x read)", write=1.0, read=0.25),
    Pricing("openai gpt-4o (automatic, 0.5x read)", write=1.0, read=0.50),
)


def _requests(version: str):
    """(change, schema tokens, instruction tokens, user tokens) of every request the review stage
    would send with the prompt `version`."""
    from benchmarks.review_tokens import _review_inputs, stage_requests
    from p4review.review.metric_tracks import TRACK_STABLE
    from p4review.review.prompts import estimate_tokens
    from p4review.review.rollout import PromptChoice
    from p4review.review.settings import ReviewerSettings
    from p4review.review.setup import review_config

    config = review_config(ReviewerSettings())
    choice = PromptChoice(config.registry.template(version), TRACK_STABLE)
    # As the service fetches: generated files are skipped (change/generated.py).
    for change, _snapshot, review_input in _review_inputs(skip_generated=True):
        for request in stage_requests(review_input, config, choice):
            schema = estimate_tokens(json.dumps(request.json_schema))
            yield change, schema, estimate_tokens(request.system), estimate_tokens(request.user)


def billed(requests, pricing: Pricing, minimum: int = MIN_CACHEABLE) -> tuple[float, int]:
    """-> (billed-token equivalent, tokens read from the cache) over the request stream."""
    total = 0.0
    read_tokens = 0
    warm = False
    for _change, schema, system, user in requests:
        prefix = schema + system
        if prefix < minimum:
            total += prefix + user
        elif warm:
            total += pricing.read * prefix + user
            read_tokens += prefix
        else:
            total += pricing.write * prefix + user
            warm = True
    return total, read_tokens


def bench_prompt_cache() -> None:
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "ERROR")
    from benchmarks.review_tokens import _review_inputs, measure
    from p4review.review.prompts import CONTEXT_ENCLOSING
    from p4review.review.settings import ReviewerSettings
    from p4review.review.setup import review_config

    config = review_config(ReviewerSettings())
    naive_by_change = {c: measure(ri, snapshot, config)[2] for c, snapshot, ri in _review_inputs()}
    naive = sum(naive_by_change.values())
    naive_hand = naive - naive_by_change[GENERATED_CHANGE]
    with_context = [v for v, t in sorted(config.registry.templates.items()) if t.context == CONTEXT_ENCLOSING]
    versions = [config.registry.stable, *with_context[-1:]]
    print(
        f"prompt caching on the fixture changelists (estimated tokens; naive whole-diff prompt {naive}, of which "
        f"{naive_hand} on the {len(naive_by_change) - 1} hand-written changes; {GENERATED_CHANGE} is generated "
        "and skipped by the service):"
    )
    for version in versions:
        template = config.registry.template(version)
        requests = list(_requests(version))
        hand = [r for r in requests if r[0] != GENERATED_CHANGE]
        _c, schema, system, _u = requests[0]
        label = "stable" if version == config.registry.stable else "canary"
        print(
            f" prompt {version} ({label}; {template.context}): {len(requests)} requests; prefix {schema} (schema) + "
            f"{system} (instructions) = {schema + system} tokens, "
            f"{'cached' if schema + system >= MIN_CACHEABLE else 'under the minimum, never cached'}"
        )
        plain = sum(r[1] + r[2] + r[3] for r in hand)
        print(f"  hand-written changes without caching: {plain:,}, x{plain / naive_hand:.2f} the naive prompt")
        for pricing in PROVIDERS:
            total, read = billed(requests, pricing)
            total_hand, _ = billed(hand, pricing)
            verdict = "meets" if total_hand / naive_hand <= GOAL_HAND_WRITTEN else "misses"
            print(
                f"  {pricing.name}: all changes x{total / naive:.2f} (goal <= x{GOAL_RATIO}); hand-written "
                f"x{total_hand / naive_hand:.2f} (goal <= x{GOAL_HAND_WRITTEN}: {verdict} it), "
                f"{read:,} tokens read from the cache"
            )
    print(
        f"  the providers cache from {MIN_CACHEABLE} tokens (Claude Haiku from 2,048); a cache lives 5 minutes "
        "(Anthropic) or 5 to 10 (OpenAI) after its last use, so it pays where reviews arrive that often"
    )


if __name__ == "__main__":
    bench_prompt_cache()

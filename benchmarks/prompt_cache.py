"""Billed-token equivalent of the fixture changelists' reviews with the providers' prompt caching,
against the naive whole-diff prompt (benchmarks/review_tokens.py), in the same run.

No provider answers here, so the providers' caches are modelled from their published rules, and
the requests are the review stage's own (`request_for`, every chunk of every fixture change, in
index order, as a steady stream of reviews would send them). The service skips generated files
(`p4review.change.generated`); the naive prompt is the whole diff, generated files included:

- Anthropic (and Claude on Bedrock, `cachePoint`): the prefix up to the marked system block (the
  tool schema, then the instructions) is cached when it is at least 1,024 tokens (Sonnet/Opus);
  the first request writes it (billed 1.25x), later requests within 5 minutes read it (0.1x).
- OpenAI: automatic for a prompt of 1,024 tokens or more; the cached part of a repeated prefix is
  billed at 0.5x (GPT-4o's discount; newer models discount more); no write premium.

Tokens are estimated at 3.5 characters per token for every part (the same estimator as the naive
side). Output tokens are left out on both sides (they depend on the model, not the prompt).

Run alone: `python -m benchmarks.prompt_cache`."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

GOAL_RATIO = 0.7
MIN_CACHEABLE = 1024


@dataclass(frozen=True)
class Pricing:
    name: str
    write: float  # multiplier of a cache write
    read: float  # multiplier of a cache read
    tool_schema_in_prefix: bool  # the tool schema precedes the instructions in the cached prefix


PROVIDERS = (
    Pricing("anthropic / bedrock claude", write=1.25, read=0.10, tool_schema_in_prefix=True),
    Pricing("openai (automatic)", write=1.0, read=0.50, tool_schema_in_prefix=False),
)


def _requests():
    """(change, prefix tokens, rest tokens) of every request the review stage would send."""
    from benchmarks.review_tokens import _review_inputs
    from p4review.review.chunking import plan_chunks
    from p4review.review.prompts import estimate_tokens
    from p4review.review.rollout import choose_prompt
    from p4review.review.settings import ReviewerSettings
    from p4review.review.setup import review_config
    from p4review.review.stage import chunk_files_for, request_for

    config = review_config(ReviewerSettings())
    # As the service fetches: generated files are skipped (change/generated.py).
    for change, snapshot, review_input in _review_inputs(skip_generated=True):
        choice = choose_prompt(config.registry, snapshot.description.changelist_id)
        plan = plan_chunks(
            chunk_files_for(review_input), chunk_tokens=config.chunk_tokens, job_tokens=config.job_tokens
        )
        for chunk in plan.chunks:
            request = request_for(review_input, choice, chunk, max_output_tokens=4096, request_id="b")
            schema = estimate_tokens(json.dumps(request.json_schema))
            yield change, schema, estimate_tokens(request.system), estimate_tokens(request.user)


def billed(requests, pricing: Pricing, minimum: int = MIN_CACHEABLE) -> tuple[float, int]:
    """-> (billed-token equivalent, tokens read from the cache) over the request stream."""
    total = 0.0
    read_tokens = 0
    warm = False
    for _change, schema, system, user in requests:
        prefix = system + (schema if pricing.tool_schema_in_prefix else 0)
        rest = user + (0 if pricing.tool_schema_in_prefix else schema)
        if prefix < minimum:
            total += prefix + rest
        elif warm:
            total += pricing.read * prefix + rest
            read_tokens += prefix
        else:
            total += pricing.write * prefix + rest
            warm = True
    return total, read_tokens


def bench_prompt_cache() -> None:
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "ERROR")
    from benchmarks.review_tokens import _review_inputs, measure
    from p4review.review.settings import ReviewerSettings
    from p4review.review.setup import review_config

    requests = list(_requests())
    config = review_config(ReviewerSettings())
    naive = sum(measure(review_input, snapshot, config)[2] for _c, snapshot, review_input in _review_inputs())
    plain = sum(schema + system + user for _c, schema, system, user in requests)
    print(
        f"prompt caching, {len(requests)} requests of the fixture changelists (estimated tokens; naive whole-diff "
        f"prompt {naive}, ours without caching {plain} incl. the tool schema, x{plain / naive:.2f}):"
    )
    for pricing in PROVIDERS:
        total, read = billed(requests, pricing)
        verdict = "meets" if total / naive <= GOAL_RATIO else "misses"
        print(
            f"  {pricing.name}: billed-token equivalent {total:,.0f} ({read:,} tokens read from the cache), "
            f"x{total / naive:.2f} the naive prompt (goal <= x{GOAL_RATIO}: {verdict} it)"
        )
    _change, schema, system, _user = requests[0]
    print(
        f"  the stable prefix: {schema} (tool schema) + {system} (instructions) = {schema + system} tokens; the "
        f"providers cache from {MIN_CACHEABLE} (Claude Haiku from 2,048), so a prefix below it is never cached"
    )
    total, read = billed(requests, PROVIDERS[0], minimum=0)
    print(f"  what caching could do at most here (no minimum): anthropic x{total / naive:.2f} ({read:,} tokens read)")
    without_large = [r for r in requests if r[0] != 48255]
    naive_small = sum(
        measure(review_input, snapshot, config)[2] for c, snapshot, review_input in _review_inputs() if c != 48255
    )
    total, _ = billed(without_large, PROVIDERS[0])
    print(
        f"  anthropic, leaving out the 300-file generated change (48255: {1 - naive_small / naive:.0%} of the naive "
        f"tokens, skipped by the service as generated): x{total / naive_small:.2f}: on hand-written changes the "
        "saving is not there"
    )


if __name__ == "__main__":
    bench_prompt_cache()

"""Billed-token equivalent of the fixture changelists' reviews with the providers' prompt caching,
against the naive whole-diff prompt (benchmarks/review_tokens.py), in the same run, for the stable
prompt and for the prompts that show each hunk's enclosing function (review/context/).

No provider answers here, so the providers' caches are modelled from their published rules, and
the requests are the review stage's own (`request_for`, every chunk of every fixture change, in
index order, as a steady stream of reviews would send them). The service skips generated files
(`p4review.change.generated`); the naive prompt is the whole diff, generated files included:

- Anthropic (and Claude on Bedrock, `cachePoint`): the prefix up to the marked system block (the
  tool, then the instructions) is cached when it is at least 1,024 tokens (Sonnet 4.x, Opus 4 and
  4.1; 2,048 for Haiku 3 and 3.5, 4,096 for Opus 4.5 and later and Haiku 4.5: not modelled); the
  first request writes it (billed 1.25x), later requests within 5 minutes read it (0.1x). With a
  tool, Anthropic adds "a special system prompt for the model which enables tool use": 313 tokens
  for `tool_choice` any or tool on the Claude 4 models (Anthropic's tool use overview, "Pricing"),
  billed as input and part of the prefix. Whether it counts toward the caching minimum is not
  documented; it is counted here, and the output says what changes if it is not.
- OpenAI: automatic for a prompt of 1,024 tokens or more; "the structured output schema serves as
  a prefix to the system message and can be cached" (OpenAI's prompt caching guide, "What can be
  cached"), so the prefix is the schema and the instructions; no write premium. A hit covers the
  prefix "until the first mismatched token in 128 token blocks" (OpenAI's cookbook, "Prompt
  Caching 201"): 1,024, 1,152, 1,280... tokens are read from the cache, the rest of the prefix is
  billed in full. The cached part's price depends on the model (OpenAI's pricing page, "Cached
  input"): a tenth of the input price for the GPT-5 family (gpt-5.2: $1.75 and $0.175 per
  million), a quarter for GPT-4.1 ($2.00 and $0.50), a half for GPT-4o ($2.50 and $1.25).

Two counts, side by side. "Estimated" is characters / 3.5 for every part (the estimator the
service budgets with), the whole prefix cached and no tool prompt: the figures issue 30 was
measured by. "Counted" uses each provider's tokenizer (benchmarks/token_counts.py: o200k_base,
exact, for OpenAI; Anthropic's published tokenizer, a rough approximation for Claude 3 and later)
on both sides, Anthropic's tool prompt and OpenAI's 128-token blocks; it needs `make tokenizers`.
Output tokens are left out on both sides (they depend on the model, not the prompt).

Run alone: `python -m benchmarks.prompt_cache`."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace

from benchmarks.token_counts import CLAUDE, O200K

GOAL_RATIO = 0.7  # all fixture changes
GOAL_HAND_WRITTEN = 1.0  # the hand-written ones, context included (issue 30)
MIN_CACHEABLE = 1024
GENERATED_CHANGE = 48255  # 290 regenerated protocol headers, skipped by the service as generated
ESTIMATED = "estimated"
ANTHROPIC_TOOL_PROMPT = 313  # Claude 4 models, tool_choice any or tool (Anthropic's tool use overview)
OPENAI_CACHE_BLOCK = 128  # OpenAI's cookbook, "Prompt Caching 201"


@dataclass(frozen=True)
class Pricing:
    name: str
    write: float  # multiplier of a cache write
    read: float  # multiplier of a cache read
    tokenizer: str  # how the provider counts (token_counts.O200K or CLAUDE)
    tool_prompt: int = 0  # tokens the provider adds to the prefix of every request
    cache_block: int = 1  # a hit reads the minimum plus whole blocks of this many tokens


PROVIDERS = (
    Pricing("anthropic / bedrock claude", write=1.25, read=0.10, tokenizer=CLAUDE, tool_prompt=ANTHROPIC_TOOL_PROMPT),
    Pricing("openai gpt-5 family (0.1x read)", write=1.0, read=0.10, tokenizer=O200K, cache_block=OPENAI_CACHE_BLOCK),
    Pricing("openai gpt-4.1 (0.25x read)", write=1.0, read=0.25, tokenizer=O200K, cache_block=OPENAI_CACHE_BLOCK),
    Pricing("openai gpt-4o (0.5x read)", write=1.0, read=0.50, tokenizer=O200K, cache_block=OPENAI_CACHE_BLOCK),
)


def as_estimated(pricing: Pricing) -> Pricing:
    """The model issue 30 was measured by: no tool prompt, the whole prefix read from the cache."""
    return replace(pricing, tool_prompt=0, cache_block=1)


def _request_texts(version: str):
    """(change, tool or output schema, instructions, user message) of every request the review
    stage would send with the prompt `version`."""
    from benchmarks.review_tokens import _review_inputs, stage_requests
    from p4review.review.metric_tracks import TRACK_STABLE
    from p4review.review.rollout import PromptChoice
    from p4review.review.settings import ReviewerSettings
    from p4review.review.setup import review_config

    config = review_config(ReviewerSettings())
    choice = PromptChoice(config.registry.template(version), TRACK_STABLE)
    # As the service fetches: generated files are skipped (change/generated.py).
    for change, _snapshot, review_input in _review_inputs(skip_generated=True):
        for request in stage_requests(review_input, config, choice):
            yield change, json.dumps(request.json_schema), request.system, request.user


def _tool_text() -> str:
    """What Anthropic's tool adds to the schema: its name and description."""
    from p4review.review.llm.base import RESULT_TOOL_DESCRIPTION, RESULT_TOOL_NAME

    return f"{RESULT_TOOL_NAME}\n{RESULT_TOOL_DESCRIPTION}"


def billed(requests, pricing: Pricing, minimum: int = MIN_CACHEABLE) -> tuple[float, int]:
    """-> (billed-token equivalent, tokens read from the cache) over the request stream of
    (change, schema tokens, instruction tokens, user tokens)."""
    total = 0.0
    read_tokens = 0
    warm = False
    for _change, schema, system, user in requests:
        prefix = pricing.tool_prompt + schema + system
        if prefix < minimum:
            total += prefix + user
        elif warm:
            cached = prefix - (prefix - minimum) % pricing.cache_block
            total += pricing.read * cached + (prefix - cached) + user
            read_tokens += cached
        else:
            total += pricing.write * prefix + user
            warm = True
    return total, read_tokens


class _Counter:
    """Token counts of every text the benchmark prices: estimated always, the providers' own
    tokenizers when installed (one node run for all of them)."""

    def __init__(self, texts: list[str]) -> None:
        from benchmarks.token_counts import count_tokens, tokenizers_installed
        from p4review.review.prompts import estimate_tokens

        self.index = {text: i for i, text in enumerate(dict.fromkeys(texts))}
        unique = list(self.index)
        self.counts = {ESTIMATED: [estimate_tokens(text) for text in unique]}
        if tokenizers_installed():
            self.counts.update(count_tokens(unique))

    def has(self, tokenizer: str) -> bool:
        return tokenizer in self.counts

    def __call__(self, tokenizer: str, text: str) -> int:
        return self.counts[tokenizer][self.index[text]]


def bench_prompt_cache() -> None:
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "ERROR")
    from benchmarks.review_tokens import _review_inputs, naive_prompt
    from p4review.review.prompts import CONTEXT_ENCLOSING
    from p4review.review.settings import ReviewerSettings
    from p4review.review.setup import review_config

    config = review_config(ReviewerSettings())
    naive_texts = {change: naive_prompt(ri) for change, _snapshot, ri in _review_inputs()}
    with_context = [v for v, t in sorted(config.registry.templates.items()) if t.context == CONTEXT_ENCLOSING]
    versions = [config.registry.stable, *with_context[-2:]]
    requests_by_version = {version: list(_request_texts(version)) for version in versions}
    count = _Counter(
        [
            _tool_text(),
            *naive_texts.values(),
            *(text for rs in requests_by_version.values() for r in rs for text in r[1:]),
        ]
    )
    tokenizers = [t for t in (ESTIMATED, O200K, CLAUDE) if count.has(t)]

    def naive(tokenizer: str, hand_written: bool) -> int:
        return sum(
            count(tokenizer, text)
            for change, text in naive_texts.items()
            if not (hand_written and change == GENERATED_CHANGE)
        )

    print(
        f"prompt caching on the fixture changelists (naive whole-diff prompt {naive(ESTIMATED, False):,} estimated "
        f"tokens, {naive(ESTIMATED, True):,} on the {len(naive_texts) - 1} hand-written changes; {GENERATED_CHANGE} "
        "is generated and skipped by the service):"
    )
    if not count.has(O200K):
        print("  the providers' tokenizers are not installed (`make tokenizers`): estimated figures only")
    for version in versions:
        template = config.registry.template(version)
        role = {config.registry.stable: "stable", config.registry.canary: "canary"}.get(version, "not rolled out")
        label = f"{role}; {template.context}"
        requests = requests_by_version[version]
        _c, schema, system, _u = requests[0]
        sizes = ", ".join(f"{t} {count(t, schema)} + {count(t, system)}" for t in tokenizers)
        print(f" prompt {version} ({label}): {len(requests)} requests; prefix = schema + instructions: {sizes}")
        for pricing in PROVIDERS:
            figures = []
            for tokenizer, model in ((ESTIMATED, as_estimated(pricing)), (pricing.tokenizer, pricing)):
                if not count.has(tokenizer):
                    continue
                tool = count(tokenizer, _tool_text()) if model.tool_prompt else 0
                stream = [
                    (change, tool + count(tokenizer, s), count(tokenizer, i), count(tokenizer, u))
                    for change, s, i, u in requests
                ]
                hand = [r for r in stream if r[0] != GENERATED_CHANGE]
                total, _read = billed(hand, model)
                ratio = total / naive(tokenizer, True)
                verdict = "meets" if ratio <= GOAL_HAND_WRITTEN else "misses"
                figures.append(f"{'estimated' if tokenizer == ESTIMATED else 'counted'} x{ratio:.2f} ({verdict})")
                if tokenizer == ESTIMATED:
                    everything, _ = billed(stream, model)
                    all_ratio = everything / naive(ESTIMATED, False)
            print(
                f"  {pricing.name}: hand-written {', '.join(figures)} (goal <= x{GOAL_HAND_WRITTEN}); "
                f"all changes, estimated, x{all_ratio:.2f} (goal <= x{GOAL_RATIO})"
            )
        if count.has(CLAUDE):
            prefix = count(CLAUDE, _tool_text()) + count(CLAUDE, schema) + count(CLAUDE, system)
            if prefix < MIN_CACHEABLE <= prefix + ANTHROPIC_TOOL_PROMPT:
                print(
                    f"  (Anthropic: cached only because its {ANTHROPIC_TOOL_PROMPT}-token tool prompt is counted "
                    f"toward the minimum; without it the prefix is {prefix} tokens and is never cached)"
                )
    print(
        "  Anthropic's and Bedrock's Claude Sonnet 4.x and Opus 4/4.1 cache from 1,024 tokens (Haiku 3 and 3.5 from "
        "2,048, Opus 4.5 and later and Haiku 4.5 from 4,096: not reached); a cache lives 5 minutes (Anthropic) or 5 "
        "to 10 (OpenAI) after its last use, so it pays where reviews arrive that often"
    )


if __name__ == "__main__":
    bench_prompt_cache()

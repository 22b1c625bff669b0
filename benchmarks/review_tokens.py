"""Prompt tokens per review for the fixture changelists: the review stage's requests (prompt
template + numbered, chunked diffs of the fetched files) vs a naive whole-diff prompt (a short
instruction, the JSON schema, and every fetched file's diff with its p4 headers, in one request).

Both sides are counted with the same estimator (logic.prompts.estimate_tokens, characters / 3.5):
no tokenizer ships offline, and the ratio is what matters. Output tokens are not compared
(they depend on the model, not on the prompt's size).

Run alone: `python -m benchmarks.review_tokens`."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

NAIVE_INSTRUCTION = (
    "Review the following Perforce changelist. Answer with JSON matching this schema, listing every problem you find.\n"
)


def _review_inputs(skip_generated: bool = False):
    """Every fixture change as the review stage gets it; `skip_generated` as the service fetches
    (the default here is everything, the naive prompt's input)."""
    from p4review.change.analyzer_files import reads_content
    from p4review.change.depot_paths import DEFAULT_ALLOW_LIST, DepotAllowList
    from p4review.change.snapshot_redaction import prepare_review_input, redact_change
    from p4review.models.job import ChangeKind
    from p4review.perforce import ChangeFetcher, P4Runner
    from p4review.settings.blocks import AnalyzerSelectionBlock
    from p4review_dev.stack import repo_root

    os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"]
    root = repo_root()
    runner = P4Runner(str(root / "events" / "bin" / "p4"), timeout_seconds=30)
    analyzers = AnalyzerSelectionBlock().enabled_analyzers()
    fetcher = ChangeFetcher(
        runner,
        allow_list=DepotAllowList(DEFAULT_ALLOW_LIST),
        skip_generated=skip_generated,
        keep_content=lambda path: reads_content(path, analyzers),  # as the service's fetch (perforce/access.py)
    )
    index = json.loads((root / "events" / "depot" / "index.json").read_text())["changelists"]
    for entry in index:
        snapshot = fetcher.fetch(entry["change"], ChangeKind(entry["kind"]))
        yield entry["change"], snapshot, prepare_review_input(redact_change(snapshot).artifact())


def stage_requests(review_input, config, choice) -> list:
    """The requests the review stage sends for a change with the prompt `choice`: its chunk plan,
    each chunk's request (`request_for`), the files shown as the template asks."""
    from p4review.review.chunking import plan_chunks
    from p4review.review.stage import chunk_files_for, request_for

    files = chunk_files_for(
        review_input,
        context=choice.template.context,
        context_tokens=config.context_tokens,
        chunk_tokens=config.chunk_tokens,
    )
    plan = plan_chunks(files, chunk_tokens=config.chunk_tokens, job_tokens=config.job_tokens)
    return [
        request_for(review_input, choice, chunk, max_output_tokens=config.max_output_tokens, request_id="b")
        for chunk in plan.chunks
    ]


def measure(review_input, snapshot, config, version: str | None = None) -> tuple[int, int, int]:
    """-> (our prompt tokens, our requests, naive prompt tokens), with the prompt the change's
    track chooses, or `version`."""
    from p4review.review.metric_tracks import TRACK_STABLE
    from p4review.review.prompts import estimate_tokens
    from p4review.review.rollout import PromptChoice, choose_prompt

    choice = (
        PromptChoice(config.registry.template(version), TRACK_STABLE)
        if version
        else choose_prompt(config.registry, snapshot.description.changelist_id)
    )
    requests = stage_requests(review_input, config, choice)
    ours = sum(estimate_tokens(request.system) + estimate_tokens(request.user) for request in requests)
    return ours, len(requests), estimate_tokens(naive_prompt(review_input))


def naive_prompt(review_input) -> str:
    """The naive prompt: a short instruction, the JSON schema and the whole diff, in one request."""
    from p4review.models.review_result import REVIEW_RESULT_SCHEMA

    return (
        NAIVE_INSTRUCTION
        + json.dumps(REVIEW_RESULT_SCHEMA, indent=2)
        + "\n\n"
        + review_input.description.text
        + "\n\n"
        + "\n".join(f.document.text for f in review_input.files)
    )


def bench_review_tokens() -> None:
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")  # one p4 log line per file otherwise
    from p4review.review.settings import ReviewerSettings
    from p4review.review.setup import review_config

    config = review_config(ReviewerSettings())
    total_ours = total_naive = 0
    print(
        "review prompt tokens per changelist (estimated; ours = template + numbered chunks, "
        "naive = schema + whole diff in one prompt):"
    )
    for change, snapshot, review_input in _review_inputs():
        ours, requests, naive = measure(review_input, snapshot, config)
        total_ours += ours
        total_naive += naive
        print(
            f"  CL {change}: {len(review_input.files):>3} files, ours {ours:>7} tokens in {requests} request(s), "
            f"naive {naive:>7}, ours/naive x{ours / naive:.2f}"
        )
    print(
        f"review prompt tokens, all fixtures: ours {total_ours}, naive {total_naive}, "
        f"ours/naive x{total_ours / total_naive:.2f}"
    )
    from p4review.review.prompts import CONTEXT_ENCLOSING

    for version, template in sorted(config.registry.templates.items()):
        if template.context == CONTEXT_ENCLOSING and version != config.registry.stable:
            ours = sum(measure(ri, snapshot, config, version)[0] for _c, snapshot, ri in _review_inputs())
            print(
                f"  with prompt {version} (the enclosing functions; before prompt caching, benchmarks/prompt_cache.py): "
                f"ours {ours}, x{ours / total_naive:.2f}"
            )


if __name__ == "__main__":
    bench_review_tokens()

"""The reviewers the review stage can ask about one chunk: the offline heuristic reviewer
(deterministic, no network: the local default) and an LLM provider (adapters/llm). Both
answer with ReviewResult JSON text that the stage runs through the parser."""

from __future__ import annotations

import dataclasses

from p4review.change.snapshot_redaction import ReviewInput
from p4review.review.llm.base import LlmProvider, LlmRequest, LlmResponse
from p4review.review.metrics import metered_completion
from p4review.review.offline import OFFLINE_PROMPT_VERSION
from p4review.review.prompts import estimate_tokens
from p4review.review.rollout import PromptChoice


class OfflineReviewer:
    provider = "offline"
    model = f"heuristic-{OFFLINE_PROMPT_VERSION}"
    estimated_usage = True

    def answer_prompt_version(self, choice: PromptChoice) -> str:
        return OFFLINE_PROMPT_VERSION  # its rules are its prompt; the registry's templates do not apply

    def complete(self, request: LlmRequest, review_input: ReviewInput) -> LlmResponse:
        # Imported on the first review, not at cold start: a provider-backed function needs
        # these rules only for an answer it rejects (the stage's fallback).
        from p4review.review.offline.reviewer import review_change

        text = review_change(review_input)
        # No model counts tokens here: estimate what the same request would cost a model.
        return LlmResponse(
            text=text,
            input_tokens=estimate_tokens(request.system) + estimate_tokens(request.user),
            output_tokens=estimate_tokens(text),
            provider=self.provider,
            model=self.model,
        )


class ProviderReviewer:
    estimated_usage = False

    def __init__(self, provider: LlmProvider):
        self._provider = provider
        self.provider = provider.name
        self.model = provider.model

    def answer_prompt_version(self, choice: PromptChoice) -> str:
        return choice.version

    def complete(self, request: LlmRequest, review_input: ReviewInput) -> LlmResponse:
        return metered_completion(lambda: self._provider.complete(request))  # tokens, latency, 429s


def chunk_input(review_input: ReviewInput, paths: list[str]) -> ReviewInput:
    """The ReviewInput restricted to one chunk's files (still only RedactedDocuments)."""
    wanted = set(paths)
    return dataclasses.replace(review_input, files=tuple(f for f in review_input.files if f.diff.depot_path in wanted))

"""Build the review stage from settings: the reviewer (offline or an LLM provider), the
prompt registry with its deploy-time overrides, and the parser/chunking/noise settings.
Everything is validated here, at cold start: a bad setting fails the first invocation with
a ConfigError instead of a job."""

from __future__ import annotations

from p4review.resources import REVIEW_QUEUE
from p4review.review.analyzers.runner import AnalyzerRunner
from p4review.review.capacity import TokenGate
from p4review.review.history_store import StoredReviewHistory
from p4review.review.noise import parse_noise_policy
from p4review.review.prompts import load_registry
from p4review.review.reviewers import OfflineReviewer, ProviderReviewer
from p4review.review.settings import ReviewerSettings
from p4review.review.stage import ChunkReviewer, ReviewConfig, ReviewWork
from p4review.review.stores import ReviewStores, review_stores
from p4review.stores.factory import DataAccess

# Kept free at the end of a review run besides its last call and the analyzers: the S3 writes.
FINISH_MARGIN_SECONDS = 30
MIN_LAST_CALL_SECONDS = 60.0


def review_config(settings: ReviewerSettings) -> ReviewConfig:
    registry = load_registry().with_overrides(
        stable=settings.prompt_stable, canary=settings.prompt_canary, canary_percent=settings.prompt_canary_percent
    )
    return ReviewConfig(
        registry=registry,
        chunk_tokens=settings.review_chunk_tokens,
        job_tokens=settings.review_job_tokens,
        context_tokens=settings.review_context_tokens,
        max_output_tokens=_output_tokens(settings),
        line_policy=settings.line_outside_diff,
        line_tolerance=settings.line_near_diff_lines,
        noise_rules=parse_noise_policy(settings.noise_policy),
        allow_prompt_patch_drift=settings.allow_prompt_patch_drift,
        last_call_seconds=last_call_seconds(settings),
        max_findings=settings.max_findings,
    )


def _output_tokens(settings: ReviewerSettings) -> int:
    """The configured output limit, at most the model's own (review/llm/model_capabilities.py):
    the number each request carries and the token budget reserves."""
    if settings.llm_provider in ("openai", "anthropic", "bedrock") and settings.llm_model:
        # Imported here: building the table costs ~12 ms of cold start the offline reviewer skips.
        from p4review.review.llm.model_capabilities import output_token_limit

        return output_token_limit(settings.llm_provider, settings.llm_model, settings.llm_max_output_tokens)
    return settings.llm_max_output_tokens


def last_call_seconds(settings: ReviewerSettings) -> float:
    """How long after a run begins its last model call may start and still finish, with the
    analyzers and the stored result, inside the function's timeout."""
    spare = (
        REVIEW_QUEUE.function_timeout_seconds
        - settings.llm_timeout_seconds
        - settings.analyzer_timeout_seconds
        - FINISH_MARGIN_SECONDS
    )
    return max(spare, MIN_LAST_CALL_SECONDS)


def build_token_gate(stores: ReviewStores) -> TokenGate | None:
    """The shared LLM token budget's gate, when P4REVIEW_LLM_TOKENS_PER_MINUTE is set."""
    budget = stores.llm_token_budget
    return TokenGate(budget) if budget is not None else None


def build_reviewer(settings: ReviewerSettings, stores: ReviewStores) -> ChunkReviewer:
    if settings.llm_provider == "offline":
        return OfflineReviewer()
    from p4review.review.llm.factory import build_provider  # only real providers pay for SDK imports

    # Bedrock signs with the function's role; the others read their key from the LLM secret.
    key_source = stores.llm_credentials.api_key if settings.llm_provider in ("openai", "anthropic") else None
    return ProviderReviewer(build_provider(settings, key_source))


def build_analyzers(settings: ReviewerSettings, stores: ReviewStores | None = None) -> AnalyzerRunner | None:
    """With P4REVIEW_JS_ANALYZER_FUNCTION set (Lambda), eslint and actionlint run in that function."""
    enabled = settings.enabled_analyzers()
    if not enabled:
        return None
    node_runner = stores.js_analyzer_function if settings.js_analyzer_function and stores else None
    return AnalyzerRunner(enabled, timeout=settings.analyzer_timeout_seconds, node_runner=node_runner)


def build_review_work(
    settings: ReviewerSettings,
    data_access: DataAccess,
    *,
    with_history: bool = True,
    stores: ReviewStores | None = None,
) -> ReviewWork:
    """`with_history`: a versioned rerun compares with the previous version's stored result (the
    jobs table and the results bucket), and calls wait for the shared token budget (the jobs
    table); `p4review review-diff` reviews a lone diff without either. `stores`: the review's own
    stores (review/stores.py), by default those of `data_access`."""
    stores = stores if stores is not None else review_stores(data_access, settings)
    return ReviewWork(
        data_access.redacted_artifacts,
        settings.redaction_policy(),
        build_reviewer(settings, stores),
        review_config(settings),
        build_analyzers(settings, stores),
        StoredReviewHistory(data_access.jobs, data_access.redacted_artifacts) if with_history else None,
        build_token_gate(stores) if with_history else None,
    )

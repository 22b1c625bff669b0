"""The cached factory of the shared stores: one set of clients and repositories per execution
environment. A stage's own stores are built beside it from this one (review/stores.py, ops/stores.py).

Clients are built on first use, so a function only pays for the services it touches
(boto3 itself costs ~180 ms to import and is imported here, lazily)."""

from __future__ import annotations

import threading
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING, Any

from p4review.models.job import STAGE_ORDER
from p4review.settings.blocks import StoresBlock
from p4review.stores.aws_errors import translate

if TYPE_CHECKING:  # the implementations are imported on first use, where they are built
    from p4review.ports import (
        ArtifactStore,
        JobRepository,
        OutboxRepository,
        SecretReader,
        StageQueues,
    )
    from p4review.stores.job_replay import DynamoJobReplay
    from p4review.stores.s3_artifacts import S3ArtifactRetention
    from p4review.stores.secrets import SecretsManagerReader
    from p4review.stores.sqs_dead_letters import SqsDeadLetters


# One Session per execution environment: each new Session loads the service models again
# (~0.1 s a client); clients of one Session share them. A Session is not thread-safe (its
# clients are), so clients are made under a lock.
_session_lock = threading.Lock()
_session: Any = None
# botocore's data loader, which parses and caches the service models (which never change in a
# process). reset_data_access() drops the Session, not this: the local stack and the tests make
# new Sessions many times, each with the credentials and region of its moment, without parsing
# every model again (~75 ms a client against ~15 ms).
_loader: Any = None
_loader_lock = threading.Lock()


def new_session(**options: Any) -> Any:
    """A new boto3 Session (`options`: boto3.Session's, e.g. region_name) that shares the
    process's data loader (`_loader`)."""
    global _loader
    import boto3
    import botocore.session

    core = botocore.session.Session()
    with _loader_lock:
        if _loader is None:
            _loader = core.get_component("data_loader")
        else:
            core.register_component("data_loader", _loader)
    return boto3.session.Session(botocore_session=core, **options)


def aws_client(service: str) -> Any:
    global _session
    from botocore.config import Config

    # The stage runtime owns retries across invocations; SDK retries stay short and bounded.
    config = Config(retries={"mode": "standard", "max_attempts": 3}, connect_timeout=3, read_timeout=10)
    try:
        with _session_lock:
            if _session is None:
                _session = new_session()
            return _session.client(service, config=config)
    except Exception as exc:  # e.g. no region configured: a domain error, not a botocore one
        translate(exc, f"create {service} client")


class DataAccess:
    def __init__(self, settings: StoresBlock):
        self.settings = settings

    def client(self, service: str) -> Any:
        """A client of the execution environment's one Session (a stage's own stores use it)."""
        return aws_client(service)

    @cached_property
    def dynamodb(self) -> Any:
        return aws_client("dynamodb")

    @cached_property
    def jobs(self) -> JobRepository:
        from p4review.stores.dynamo_jobs import DynamoJobRepository

        return DynamoJobRepository(
            self.dynamodb, self.settings.needed("jobs_table"), retention_days=self.settings.retention_days
        )

    @cached_property
    def outbox(self) -> OutboxRepository:
        from p4review.stores.dynamo_outbox import DynamoOutboxRepository

        return DynamoOutboxRepository(
            self.dynamodb, self.settings.needed("outbox_table"), retention_days=self.settings.retention_days
        )

    @cached_property
    def queues(self) -> StageQueues:
        from p4review.stores.sqs_queues import SqsStageQueues

        urls = {stage: getattr(self.settings, f"{stage.value}_queue_url") for stage in STAGE_ORDER}
        dlqs = {stage: getattr(self.settings, f"{stage.value}_dlq_url") for stage in STAGE_ORDER}
        return SqsStageQueues(
            aws_client("sqs"), {k: v for k, v in urls.items() if v}, {k: v for k, v in dlqs.items() if v}
        )

    @cached_property
    def dead_letters(self) -> SqsDeadLetters:  # operator tooling: dlq list/show/redrive
        from p4review.stores.sqs_dead_letters import SqsDeadLetters

        dlqs = {stage: getattr(self.settings, f"{stage.value}_dlq_url") for stage in STAGE_ORDER}
        return SqsDeadLetters(aws_client("sqs"), {k: v for k, v in dlqs.items() if v})

    @cached_property
    def job_replay(self) -> DynamoJobReplay:  # operator replay of dead-lettered jobs
        from p4review.stores.job_replay import DynamoJobReplay

        return DynamoJobReplay(self.dynamodb, self.settings.needed("jobs_table"))

    @cached_property
    def raw_artifacts(self) -> ArtifactStore:  # raw snapshots; fetch only
        from p4review.stores.s3_artifacts import S3ArtifactStore

        return S3ArtifactStore(aws_client("s3"), self.settings.needed("raw_bucket"))

    @cached_property
    def redacted_artifacts(self) -> ArtifactStore:  # redacted snapshots and results
        from p4review.stores.s3_artifacts import S3ArtifactStore

        return S3ArtifactStore(aws_client("s3"), self.settings.needed("redacted_bucket"))

    @cached_property
    def artifact_retention(self) -> S3ArtifactRetention:  # the sweeper's TTL verification
        from p4review import resources
        from p4review.stores.s3_artifacts import S3ArtifactRetention

        buckets = {
            spec.key: (getattr(self.settings, f"{spec.key}_bucket"), spec.expiration_days) for spec in resources.BUCKETS
        }
        return S3ArtifactRetention(aws_client("s3"), {key: value for key, value in buckets.items() if value[0]})

    @cached_property
    def secrets(self) -> SecretReader:
        return self.secrets_manager_reader

    @cached_property
    def secrets_manager_reader(self) -> SecretsManagerReader:  # the one reader (stores/secrets.py)
        from p4review.stores.secrets import SecretsManagerReader

        return SecretsManagerReader(aws_client("secretsmanager"), self.settings.secret_cache_seconds)


@lru_cache(maxsize=1)
def get_data_access() -> DataAccess:
    """The stores of this execution environment, from the stores block of its environment (each
    function's own model, parsed by its handler at import, has already required what it uses)."""
    return DataAccess(StoresBlock.from_env())


def reset_data_access() -> None:
    """Forget cached settings and clients (tests and the local stack change the environment)."""
    global _session
    with _session_lock:
        _session = None
    get_data_access.cache_clear()

"""The one definition of every AWS resource the service uses.

The CDK app (infra/) and the embedded local stack (p4review_dev) both build their
resources from this module, so the deployed stack and the local one cannot drift.
Functions find each resource through the environment variable named here."""

from __future__ import annotations

from dataclasses import dataclass, field

from p4review.models.job import StageName


@dataclass(frozen=True)
class IndexSpec:
    """A global secondary index. Sparse when its key attribute is written only on some items:
    the index then holds those items alone, and a Scan of it reads only them."""

    name: str
    partition_key: str
    # The attributes copied into the index (besides the keys): what its readers need, no more.
    projected: tuple[str, ...] = ()


@dataclass(frozen=True)
class TableSpec:
    key: str
    env_var: str
    partition_key: str
    sort_key: str | None = None
    ttl_attribute: str | None = None
    indexes: tuple[IndexSpec, ...] = ()
    purpose: str = ""


@dataclass(frozen=True)
class QueueSpec:
    key: str
    env_var: str
    stage: StageName
    function_timeout_seconds: int
    # AWS's guidance for an SQS event source: visibility >= 6x the function timeout.
    visibility_timeout_seconds: int
    # Above the per-stage attempt budget (5): redrive is the safety net for crashes only.
    max_receive_count: int = 8
    dlq_retention_days: int = 14
    # One job per invocation: a batch's jobs are worked one after another within one function
    # timeout, so a job would wait behind another's work while a worker is free
    # (`make bench BENCH=email-latency` measures it).
    batch_size: int = 1
    # W: the bound on concurrent workers for this stage (event source maximum concurrency).
    max_concurrency: int = 2

    @property
    def dlq_env_var(self) -> str:
        """Functions that dead-letter find this stage's DLQ through this variable."""
        return self.env_var.replace("_QUEUE_URL", "_DLQ_URL")


@dataclass(frozen=True)
class BucketSpec:
    key: str
    env_var: str
    expiration_days: int
    purpose: str = ""


@dataclass(frozen=True)
class SecretSpec:
    key: str
    env_var: str
    description: str
    # Local stack fills these; in AWS an operator puts the real value.
    local_template: dict[str, str | int] = field(default_factory=dict)


# Retention (spec SEC-23, docs/security.md "Retention"): job items, changelist-version claims and
# outbox rows carry `expires_at` (epoch seconds) and DynamoDB's TTL deletes them after it; the
# changelist head item (CL#<cl>) carries none and stays, so a version at or below one already
# reviewed is refused for ever and nothing is re-emailed after the rows are gone.
RETENTION_TTL_ATTRIBUTE = "expires_at"
DEFAULT_RETENTION_DAYS = 400

# Active jobs (queued, in_progress, retryable_failed) carry `active_job` (their job id); the write
# that moves a job to an end state removes it. The sweeper scans this sparse index: O(active).
ACTIVE_JOBS_INDEX = IndexSpec(
    name="active-jobs",
    partition_key="active_job",
    projected=("job_id", "status", "stages", "created_at", "updated_at", RETENTION_TTL_ATTRIBUTE),
)

JOBS_TABLE = TableSpec(
    key="jobs",
    env_var="P4REVIEW_JOBS_TABLE",
    partition_key="pk",
    ttl_attribute=RETENTION_TTL_ATTRIBUTE,
    indexes=(ACTIVE_JOBS_INDEX,),
    purpose=(
        "Review jobs (pk JOB#id), changelist-version claims (CLV#cl#v), changelist heads (CL#cl) and the "
        "LLM token budget (TPM#provider#model, docs/capacity.md)."
    ),
)
OUTBOX_TABLE = TableSpec(
    key="outbox",
    env_var="P4REVIEW_OUTBOX_TABLE",
    partition_key="pk",
    sort_key="sk",
    ttl_attribute=RETENTION_TTL_ATTRIBUTE,
    purpose="One delivery row per (changelist_id, recipient, review_version): pk CLV#cl#v, sk RCPT#recipient.",
)

FETCH_QUEUE = QueueSpec(
    key="fetch",
    env_var="P4REVIEW_FETCH_QUEUE_URL",
    stage=StageName.FETCH,
    function_timeout_seconds=60,
    visibility_timeout_seconds=360,
)
# Review makes one LLM call per chunk, one after another (up to ~9 at the default budgets, each
# up to P4REVIEW_LLM_TIMEOUT_SECONDS): the Lambda maximum, and one job per invocation so that a
# batch never shares that time. Stored chunk answers make a timed-out job resume, not restart.
REVIEW_QUEUE = QueueSpec(
    key="review",
    env_var="P4REVIEW_REVIEW_QUEUE_URL",
    stage=StageName.REVIEW,
    function_timeout_seconds=900,
    visibility_timeout_seconds=5400,
    batch_size=1,
)
NOTIFY_QUEUE = QueueSpec(
    key="notify",
    env_var="P4REVIEW_NOTIFY_QUEUE_URL",
    stage=StageName.NOTIFY,
    function_timeout_seconds=60,
    visibility_timeout_seconds=360,
)

# Raw and redacted artifacts live apart (spec SEC-29): only fetch ever touches the raw bucket.
# Keys are `changes/<yyyy>/<mm>/<dd>/<job_id>.json` and `results/<yyyy>/<mm>/<dd>/<job_id>.json`
# (the job's creation date, UTC), so TTL verification can list the oldest day cheaply. The
# prefixes are defined here only: the DAL builds keys from them and the stack's IAM grants
# allow exactly them.
CHANGES_PREFIX = "changes/"
RESULTS_PREFIX = "results/"
ARTIFACT_PREFIXES = (CHANGES_PREFIX, RESULTS_PREFIX)
RAW_BUCKET = BucketSpec(
    key="raw",
    env_var="P4REVIEW_RAW_BUCKET",
    # Raw diff snapshots may hold secrets: the spec caps their retention at 7 days.
    expiration_days=7,
    purpose="Raw change snapshots (changes/) as p4 returned them; written by fetch only, read by nobody.",
)
REDACTED_BUCKET = BucketSpec(
    key="redacted",
    env_var="P4REVIEW_REDACTED_BUCKET",
    expiration_days=30,
    purpose="Redacted change snapshots (changes/) and review results (results/): all review and notify read.",
)

SIGNING_SECRET = SecretSpec(
    key="trigger-signing",
    env_var="P4REVIEW_SIGNING_SECRET_ID",
    description="HMAC key the Perforce trigger signs requests with (AWSCURRENT and AWSPREVIOUS accepted).",
)
SMTP_SECRET = SecretSpec(
    key="smtp",
    env_var="P4REVIEW_SMTP_SECRET_ID",
    description="SMTP relay: JSON {host, port, tls_mode, username, password, from_address}.",
)
LLM_SECRET = SecretSpec(
    key="llm",
    env_var="P4REVIEW_LLM_SECRET_ID",
    description="LLM provider API key: JSON {provider, api_key} (unused by the offline reviewer).",
)
P4_SECRET = SecretSpec(
    key="p4",
    env_var="P4REVIEW_P4_SECRET_ID",
    description="Perforce connection: JSON {P4PORT, P4USER, P4TICKET}; reaches p4 through its environment.",
)

TABLES = (JOBS_TABLE, OUTBOX_TABLE)
QUEUES = (FETCH_QUEUE, REVIEW_QUEUE, NOTIFY_QUEUE)
BUCKETS = (RAW_BUCKET, REDACTED_BUCKET)
SECRETS = (SIGNING_SECRET, SMTP_SECRET, LLM_SECRET, P4_SECRET)
QUEUE_FOR_STAGE = {queue.stage: queue for queue in QUEUES}


def physical_name(environment: str, key: str) -> str:
    """Resource names are `p4review-<env>-<key>` everywhere (DLQs add `-dlq`)."""
    return f"p4review-{environment}-{key}"


def dlq_key(queue: QueueSpec) -> str:
    return f"{queue.key}-dlq"

"""The names of the service's own CloudWatch metrics (Powertools EMF) and of their dimensions,
defined once: the code that publishes a metric and the CDK alarm or dashboard widget that reads
it both name it from here. An alarm treats missing data as not breaching, so a misspelt name, or
a dimension the publisher does not set, would silence it without a sound;
tests/infra/test_alarmed_metrics.py and tests/infra/test_dashboard.py check that every metric
they read is published with exactly those dimensions.

A value never goes into a name: `Backlog` with the dimensions {Stage, State}, not
`Backlog_fetch_pending`. Every metric has the `service` dimension (Powertools adds it); those in
`DIMENSIONS` have theirs besides, and are published only through
`p4review.observability.publish_metric`, which refuses any other dimension set. Each dimension's
values come from a closed set (stage names, states, status codes, outcome enums, the pinned
redaction ruleset's classes, the parser's diagnostic kinds): never an id, a user or free text.

The review stage's per-prompt-track rollout metrics are in `p4review.review.metric_tracks`
(dimensions {service, PromptTrack} and {service, PromptVersion})."""

from __future__ import annotations

from enum import StrEnum

NAMESPACE = "P4Review"
SERVICE = "p4review"  # Powertools' service name: the `service` dimension of every metric
SERVICE_DIMENSION = "service"


class Dimension(StrEnum):
    STAGE = "Stage"  # fetch | review | notify (models.job.StageName)
    STATE = "State"  # pending | running (the backlog's stage states)
    KIND = "Kind"  # a redaction class, or a parser diagnostic kind
    STATUS_CODE = "StatusCode"  # the HTTP status an API route answered with
    OUTCOME = "Outcome"  # an email provider's send or lookup outcome (models.outbox)
    TOKEN_TYPE = "TokenType"  # noqa: S105 - a dimension name; values: input | output
    SECRET = "Secret"  # noqa: S105 - a dimension name; values: SecretSpec keys (trigger-signing, smtp, ...)


class BacklogState(StrEnum):
    PENDING = "pending"  # waiting for a worker (its message queued, or delayed for a retry)
    RUNNING = "running"  # claimed by a worker under a lease


class TokenType(StrEnum):
    INPUT = "input"
    OUTPUT = "output"


class MetricName(StrEnum):
    # Runtime (pipeline/stage_runner.py)
    STAGE_COMPLETED = "StageCompleted"  # {Stage}
    LEASE_LOST = "LeaseLost"
    DEAD_LETTERED = "DeadLettered"  # {Stage}
    # A replayed job failed again with the same non-retryable error class (alarmed).
    DEAD_LETTER_ESCALATED = "DeadLetterEscalated"
    # The sweeper (functions/sweeper/handler.py, from runtime/sweeper.SweepReport)
    ACTIVE_JOBS = "ActiveJobs"
    # Seconds since the oldest active job was accepted (its `created_at`).
    OLDEST_ACTIVE_JOB_AGE = "OldestActiveJobAgeSeconds"
    BACKLOG = "Backlog"  # {Stage, State}: active jobs whose current stage is Stage, in State
    OLDEST_JOB_AGE = "OldestJobAgeSeconds"  # {Stage}: as OLDEST_ACTIVE_JOB_AGE, per current stage
    SWEEPER_EXPIRED_LEASES_REQUEUED = "SweeperExpiredLeasesRequeued"
    SWEEPER_STRANDED_HANDOFFS_RESENT = "SweeperStrandedHandoffsResent"
    # The sweeper's TTL verification (ops/retention.py; both alarmed).
    ARTIFACT_TTL_VIOLATIONS = "ArtifactTtlViolations"
    ARTIFACT_TTL_CHECK_FAILED = "ArtifactTtlCheckFailed"
    # Fetch (fetch/stage.py): secrets replaced, per redaction class.
    REDACTIONS = "Redactions"  # {Kind}
    # Review (review/metrics.py): parser diagnostics, per kind.
    PARSER_DIAGNOSTICS = "ParserDiagnostics"  # {Kind}
    # The LLM provider calls (review/metrics.py; the offline reviewer makes none).
    LLM_TOKENS = "LlmTokens"  # {TokenType}: provider-reported tokens of each answered call
    LLM_LATENCY = "LlmLatency"  # milliseconds per answered call: a distribution (use percentiles)
    LLM_RATE_LIMITED = "LlmRateLimited"  # a call refused with 429 / throttling
    # The analyzers (review/metrics.py): (analyzer, file) answers of this review's own runs, and
    # those reused from the previous version's result because the file and analyzer are the same.
    ANALYZER_FILES_ANALYZED = "AnalyzerFilesAnalyzed"
    ANALYZER_FILES_REUSED = "AnalyzerFilesReused"
    # Notify (notify/stage.py)
    EMAIL_SENT = "EmailSent"
    RECIPIENT_REJECTED = "RecipientRejected"
    DELIVERY_BACKFILLED = "DeliveryBackfilled"
    # A resend of an attempt the provider could not confirm: a possible duplicate (alarmed, as a
    # rate of EMAIL_SENT).
    UNCONFIRMED_DELIVERY_RETRIED = "UnconfirmedDeliveryRetried"
    # A delivery row marked sent without provider evidence (alarmed).
    SENT_WITHOUT_EVIDENCE = "SentWithoutEvidence"
    SMTP_CREDENTIALS_REFRESHED = "SmtpCredentialsRefreshed"
    # A Swarm comment posted (notify/swarm/channel.py; not counted when found by its marker).
    SWARM_COMMENT_POSTED = "SwarmCommentPosted"
    # The email provider adapter (notify/email/sender.py)
    EMAIL_PROVIDER_CALLS = "EmailProviderCalls"
    EMAIL_PROVIDER_LATENCY = "EmailProviderLatency"
    EMAIL_OUTCOME = "EmailOutcome"  # {Outcome}: sent | retryable | failed
    EMAIL_LOOKUP = "EmailLookup"  # {Outcome}: found | not_found | unsupported | unavailable
    # The depot allow-list refused a path (perforce/fetcher.py): a security event.
    SECURITY_PATH_DENIED = "SecurityPathDenied"
    # Ingest (ingest/app.py)
    SIGNATURE_REJECTED = "SignatureRejected"
    INGEST_PING = "IngestPing"
    INGEST_RESPONSES = "IngestResponses"  # {StatusCode}: POST /v1/reviews answers
    SWARM_TEST_RESPONSES = "SwarmTestResponses"  # {StatusCode}: POST /v1/swarm/tests answers
    # A Swarm workflow test call without the right token (POST /v1/swarm/tests).
    SWARM_TOKEN_REJECTED = "SwarmTokenRejected"  # noqa: S105 - a metric name
    # Days since a secret's current value was put (ops/credentials.py; alarmed per secret, SEC-20).
    CREDENTIAL_AGE_DAYS = "CredentialAgeDays"  # {Secret}


# The dimensions a metric has besides `service`; a metric not listed has `service` alone.
DIMENSIONS: dict[MetricName, tuple[Dimension, ...]] = {
    MetricName.STAGE_COMPLETED: (Dimension.STAGE,),
    MetricName.DEAD_LETTERED: (Dimension.STAGE,),
    MetricName.BACKLOG: (Dimension.STAGE, Dimension.STATE),
    MetricName.OLDEST_JOB_AGE: (Dimension.STAGE,),
    MetricName.REDACTIONS: (Dimension.KIND,),
    MetricName.PARSER_DIAGNOSTICS: (Dimension.KIND,),
    MetricName.LLM_TOKENS: (Dimension.TOKEN_TYPE,),
    MetricName.EMAIL_OUTCOME: (Dimension.OUTCOME,),
    MetricName.EMAIL_LOOKUP: (Dimension.OUTCOME,),
    MetricName.INGEST_RESPONSES: (Dimension.STATUS_CODE,),
    MetricName.SWARM_TEST_RESPONSES: (Dimension.STATUS_CODE,),
    MetricName.CREDENTIAL_AGE_DAYS: (Dimension.SECRET,),
}


def dimension_names(metric: MetricName) -> frozenset[str]:
    """Every dimension `metric` is published with, `service` included: what a CloudWatch query
    must name, no more and no less, to find it."""
    return frozenset({SERVICE_DIMENSION, *DIMENSIONS.get(metric, ())})

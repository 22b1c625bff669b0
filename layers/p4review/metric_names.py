"""The names of the service's own CloudWatch metrics (Powertools EMF), defined once: the code
that publishes a metric and the CDK alarm that watches it both name it from here. An alarm
treats missing data as not breaching, so a misspelt name would silence it without a sound;
tests/infra/test_alarmed_metrics.py checks that every alarmed metric is published somewhere.

The review stage's per-prompt-track metrics are in `p4review.logic.review_metrics`."""

from __future__ import annotations

from enum import StrEnum

NAMESPACE = "P4Review"
SERVICE = "p4review"  # Powertools' service name: the `service` dimension of every metric


class MetricName(StrEnum):
    # Runtime (runtime/stage_runner.py)
    LEASE_LOST = "LeaseLost"
    DEAD_LETTERED = "DeadLettered"
    # A replayed job failed again with the same non-retryable error class (alarmed).
    DEAD_LETTER_ESCALATED = "DeadLetterEscalated"
    # The sweeper's TTL verification (runtime/retention.py; both alarmed).
    ARTIFACT_TTL_VIOLATIONS = "ArtifactTtlViolations"
    ARTIFACT_TTL_CHECK_FAILED = "ArtifactTtlCheckFailed"
    # Notify (stages/notify.py)
    EMAIL_SENT = "EmailSent"
    RECIPIENT_REJECTED = "RecipientRejected"
    DELIVERY_BACKFILLED = "DeliveryBackfilled"
    # A resend of an attempt the provider could not confirm: a possible duplicate (alarmed, as a
    # rate of EMAIL_SENT).
    UNCONFIRMED_DELIVERY_RETRIED = "UnconfirmedDeliveryRetried"
    # A delivery row marked sent without provider evidence (alarmed).
    SENT_WITHOUT_EVIDENCE = "SentWithoutEvidence"
    SMTP_CREDENTIALS_REFRESHED = "SmtpCredentialsRefreshed"
    # The email provider adapter (adapters/email_sender.py)
    EMAIL_PROVIDER_CALLS = "EmailProviderCalls"
    EMAIL_PROVIDER_LATENCY = "EmailProviderLatency"
    # The depot allow-list refused a path (adapters/p4/fetcher.py): a security event.
    SECURITY_PATH_DENIED = "SecurityPathDenied"
    # Ingest (api/ingest_app.py)
    SIGNATURE_REJECTED = "SignatureRejected"
    INGEST_PING = "IngestPing"
    # A Swarm workflow test call without the right token (POST /v1/swarm/tests).
    SWARM_TOKEN_REJECTED = "SwarmTokenRejected"  # noqa: S105 - a metric name


def stage_completed(stage: str) -> str:
    """`FetchCompleted`, `ReviewCompleted`, `NotifyCompleted`."""
    return f"{stage.capitalize()}Completed"

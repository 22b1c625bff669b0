"""TTL verification (spec SEC-31): S3 lifecycle rules delete artifacts, and the sweeper checks
that they actually do. Artifact keys carry their day (`changes/<yyyy>/<mm>/<dd>/...`), so the
oldest day left under each prefix bounds the oldest object's age from below."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol

from p4review.clock import utc_now
from p4review.errors import P4ReviewError
from p4review.metric_names import MetricName
from p4review.observability import logger, metrics
from p4review.resources import ARTIFACT_PREFIXES

# S3 expires objects asynchronously, rounding up to the next midnight UTC: allow one day.
GRACE = timedelta(days=1)


class RetentionStore(Protocol):
    def buckets(self) -> dict[str, int]: ...

    def oldest_day(self, bucket_key: str, prefix: str) -> str | None: ...


@dataclass(frozen=True)
class TtlViolation:
    bucket: str  # the BucketSpec key: "raw" or "redacted"
    prefix: str
    oldest_day: str  # yyyy/mm/dd
    min_age_days: float  # the youngest an object of that day can be
    ttl_days: int


def verify_retention(store: RetentionStore, now: datetime) -> list[TtlViolation]:
    """Every bucket prefix whose oldest day is older than the bucket's TTL plus the grace day."""
    violations = []
    for bucket, ttl_days in sorted(store.buckets().items()):
        for prefix in ARTIFACT_PREFIXES:
            day = store.oldest_day(bucket, prefix)
            if day is None:
                continue
            try:
                start = datetime.strptime(day, "%Y/%m/%d").replace(tzinfo=UTC)
            except ValueError:
                continue  # not a key this service writes; not ours to judge
            # An object written on `day` was written before its end.
            min_age = now - (start + timedelta(days=1))
            if min_age > timedelta(days=ttl_days) + GRACE:
                violations.append(
                    TtlViolation(
                        bucket=bucket,
                        prefix=prefix,
                        oldest_day=day,
                        min_age_days=round(min_age / timedelta(days=1), 2),
                        ttl_days=ttl_days,
                    )
                )
    return violations


def check_artifact_ttls(store: RetentionStore) -> int | None:
    """The sweeper's TTL check: log each violation and publish `ArtifactTtlViolations` (alarmed
    when > 0). A failed check is reported (`ArtifactTtlCheckFailed`), never raised: it must not
    stop the sweep. Returns the number of violations, None when the check failed."""
    try:
        violations = verify_retention(store, utc_now())
    except P4ReviewError as exc:
        logger.warning("artifact TTL check failed", extra={"error_class": exc.error_class.value})
        metrics.add_metric(name=MetricName.ARTIFACT_TTL_CHECK_FAILED, unit="Count", value=1)
        return None
    for violation in violations:
        logger.error("artifact outlived its TTL", extra=asdict(violation))
    metrics.add_metric(name=MetricName.ARTIFACT_TTL_VIOLATIONS, unit="Count", value=len(violations))
    return len(violations)

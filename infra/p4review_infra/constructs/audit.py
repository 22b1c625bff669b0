"""Optional CloudTrail trail recording every object-level call (S3 data events, read and write) on
the artifact buckets: who read or wrote which artifact, when, from where, with which role.

Server access logs (always on) are best-effort and unauthenticated-request friendly; CloudTrail
data events are delivered reliably, signed (log file validation) and carry the IAM identity, but
cost $0.10 per 100,000 events, so the trail is off by default and enabled per environment with
`-c artifactAuditTrail=true`. It records data events only (no management events: the account's
own trail, if any, covers those) for these buckets only, in this region."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudtrail as cloudtrail
from aws_cdk import aws_s3 as s3
from constructs import Construct

from p4review.resources import physical_name
from p4review_infra.constructs.storage import ArtifactStorage, secure_bucket_defaults

AUDIT_LOG_RETENTION_DAYS = 365
AUDIT_LOG_ACCESS_LOG_PREFIX = "audit-trail/"


def audit_trail_name(environment: str) -> str:
    return physical_name(environment, "artifact-audit")


class ArtifactAuditTrail(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        environment: str,
        storage: ArtifactStorage,
        protect: bool,
    ) -> None:
        super().__init__(scope, construct_id)
        # Its own bucket: SSE-S3 (CloudTrail delivers to SSE-S3 without a key policy), SSL only,
        # no public access, its own reads logged to the shared access-log bucket.
        self.bucket = s3.Bucket(
            self,
            "Logs",
            encryption=s3.BucketEncryption.S3_MANAGED,
            lifecycle_rules=[s3.LifecycleRule(expiration=Duration.days(AUDIT_LOG_RETENTION_DAYS))],
            server_access_logs_bucket=storage.access_logs,
            server_access_logs_prefix=AUDIT_LOG_ACCESS_LOG_PREFIX,
            **secure_bucket_defaults(protect),
        )
        self.trail = cloudtrail.Trail(
            self,
            "Trail",
            trail_name=audit_trail_name(environment),
            bucket=self.bucket,
            enable_file_validation=True,
            is_multi_region_trail=False,
            include_global_service_events=False,
            management_events=cloudtrail.ReadWriteType.NONE,
        )
        self.trail.add_s3_event_selector(
            [cloudtrail.S3EventSelector(bucket=artifact.bucket) for artifact in storage.buckets],
            read_write_type=cloudtrail.ReadWriteType.ALL,
            include_management_events=False,
        )

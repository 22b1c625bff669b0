"""Optional CloudTrail trail recording every object-level call (S3 data events, read and write) on
the artifact buckets: who read or wrote which artifact, when, from where, with which role.

Server access logs (always on) are best-effort and unauthenticated-request friendly; CloudTrail
data events are delivered reliably, signed (log file validation) and carry the IAM identity, but
cost $0.10 per 100,000 events, so the trail is off by default and enabled per environment with
`-c artifactAuditTrail=true`. It records data events only (no management events: the account's
own trail, if any, covers those) for these buckets only, in this region. Its log files are
SSE-KMS with the environment's logs key (constructs/logs_key.py): reading them takes kms:Decrypt."""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_cloudtrail as cloudtrail
from aws_cdk import aws_s3 as s3
from constructs import Construct

from p4review.resources import physical_name
from p4review_infra.constructs.logs_key import logs_key
from p4review_infra.constructs.storage import ArtifactStorage, secure_bucket_defaults
from p4review_infra.scanner_skips import skip_checkov

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
        removal = RemovalPolicy.RETAIN if protect else RemovalPolicy.DESTROY
        # Its own bucket: SSE-S3 by default (the trail encrypts its files with the logs key itself),
        # SSL only, no public access, its own reads logged to the shared access-log bucket.
        self.bucket = s3.Bucket(
            self,
            "Logs",
            encryption=s3.BucketEncryption.S3_MANAGED,
            lifecycle_rules=[s3.LifecycleRule(expiration=Duration.days(AUDIT_LOG_RETENTION_DAYS))],
            server_access_logs_bucket=storage.access_logs,
            server_access_logs_prefix=AUDIT_LOG_ACCESS_LOG_PREFIX,
            **secure_bucket_defaults(protect),
        )
        skip_checkov(
            self.bucket,
            "CKV_AWS_21",
            "CloudTrail writes each log file once, and log file validation (signed hourly digests) "
            "shows any file deleted or changed since; files expire after "
            f"{AUDIT_LOG_RETENTION_DAYS} days, and versioning would only keep the expired ones.",
        )
        # The log files are SSE-KMS with the environment's logs key (CloudTrail may use it for this trail only).
        key = logs_key(self, environment=environment, removal_policy=removal)
        key.allow_trail(audit_trail_name(environment))
        self.trail = cloudtrail.Trail(
            self,
            "Trail",
            trail_name=audit_trail_name(environment),
            bucket=self.bucket,
            encryption_key=key.key,
            enable_file_validation=True,
            is_multi_region_trail=False,
            include_global_service_events=False,
            management_events=cloudtrail.ReadWriteType.NONE,
        )
        skip_checkov(
            self.trail,
            "CKV_AWS_67",
            "Single-region on purpose: it records S3 data events of the artifact buckets only, which are "
            "in this region; management events in every region belong to the account's own trail.",
        )
        self.trail.add_s3_event_selector(
            [cloudtrail.S3EventSelector(bucket=artifact.bucket) for artifact in storage.buckets],
            read_write_type=cloudtrail.ReadWriteType.ALL,
            include_management_events=False,
        )

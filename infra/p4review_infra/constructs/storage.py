"""DynamoDB tables and the S3 artifact storage (one KMS key, the raw and redacted buckets, their
access-log bucket), built from the specs in `p4review.resources`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aws_cdk import Aws, Duration, RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct

from p4review.resources import BucketSpec, TableSpec, physical_name
from p4review_infra.scanner_skips import skip_checkov

ACCESS_LOG_RETENTION_DAYS = 90
# KMS's minimum waiting period before a scheduled key deletion (dev only: protected keys are retained).
KEY_PENDING_WINDOW_DAYS = 7


@dataclass(frozen=True)
class ProvisionedTable:
    spec: TableSpec
    table: dynamodb.Table


class Tables(Construct):
    """One on-demand, PITR-enabled, AWS-managed-encrypted table per TableSpec, with its TTL
    attribute (retention, SEC-23) and its global secondary indexes."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        environment: str,
        specs: tuple[TableSpec, ...],
        protect: bool,
    ) -> None:
        super().__init__(scope, construct_id)
        self.by_key: dict[str, ProvisionedTable] = {}
        for spec in specs:
            table = dynamodb.Table(
                self,
                spec.key.capitalize(),
                table_name=physical_name(environment, spec.key),
                partition_key=dynamodb.Attribute(name=spec.partition_key, type=dynamodb.AttributeType.STRING),
                sort_key=(
                    dynamodb.Attribute(name=spec.sort_key, type=dynamodb.AttributeType.STRING)
                    if spec.sort_key
                    else None
                ),
                time_to_live_attribute=spec.ttl_attribute,
                billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
                point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                    point_in_time_recovery_enabled=True
                ),
                encryption=dynamodb.TableEncryption.AWS_MANAGED,
                deletion_protection=protect,
                removal_policy=RemovalPolicy.RETAIN if protect else RemovalPolicy.DESTROY,
            )
            for index in spec.indexes:
                # Sparse: only items carrying the key are in the index (resources.ACTIVE_JOBS_INDEX).
                table.add_global_secondary_index(
                    index_name=index.name,
                    partition_key=dynamodb.Attribute(name=index.partition_key, type=dynamodb.AttributeType.STRING),
                    projection_type=dynamodb.ProjectionType.INCLUDE,
                    non_key_attributes=list(index.projected),
                )
            self.by_key[spec.key] = ProvisionedTable(spec, table)

    def __getitem__(self, key: str) -> ProvisionedTable:
        return self.by_key[key]


class ArtifactBucket:
    """One artifact bucket (a `BucketSpec`) and the per-prefix grants on it.

    Grants are object-level and prefix-scoped, never bucket-wide wildcards:

    * `grant_read_prefix`: s3:GetObject on `<prefix>*`, s3:ListBucket restricted to that prefix
      (so a missing key is a 404, not a 403), and kms:Decrypt.
    * `grant_write_prefix`: s3:PutObject on `<prefix>*`, kms:GenerateDataKey, and kms:Decrypt
      (S3 needs it to complete a multipart upload, which streamed artifacts above 8 MB use).
    * `grant_list`: s3:ListBucket restricted to the given prefixes; no object action, no KMS.

    The KMS statements are exactly what S3 calls on the caller's behalf for SSE-KMS (PutObject:
    GenerateDataKey; multipart completion and GetObject: Decrypt), and only through S3
    (`kms:ViaService`) for this bucket (`kms:EncryptionContext:aws:s3:arn`: the bucket ARN, which
    is the context while the S3 Bucket Key is on, or an object ARN under the granted prefix if a
    writer ever turns it off). So the one shared key does not let a function decrypt another
    bucket's objects, and a function with no s3:GetObject on an object cannot read it whatever its
    KMS permissions (fetch can decrypt through S3 for its own uploads, but has no s3:GetObject on
    either bucket)."""

    def __init__(self, spec: BucketSpec, bucket: s3.Bucket, key: kms.IKey) -> None:
        self.spec = spec
        self.bucket = bucket
        self.key = key

    @property
    def bucket_name(self) -> str:
        return self.bucket.bucket_name

    def grant_read_prefix(self, grantee: iam.IGrantable, prefix: str) -> None:
        self._object_grant(grantee, ["s3:GetObject"], prefix)
        self.grant_list(grantee, (prefix,))
        self._key_grant(grantee, "kms:Decrypt", prefix)

    def grant_write_prefix(self, grantee: iam.IGrantable, prefix: str) -> None:
        self._object_grant(grantee, ["s3:PutObject"], prefix)
        self._key_grant(grantee, "kms:GenerateDataKey", prefix)
        self._key_grant(grantee, "kms:Decrypt", prefix)  # multipart upload completion

    def grant_list(self, grantee: iam.IGrantable, prefixes: tuple[str, ...]) -> None:
        """s3:ListBucket on this bucket, only for requests whose `Prefix` is under one of
        `prefixes`: key names (job ids, days) become visible, contents do not."""
        for prefix in prefixes:
            _check_prefix(prefix)
        grantee.grant_principal.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["s3:ListBucket"],
                resources=[self.bucket.bucket_arn],
                conditions={"StringLike": {"s3:prefix": [f"{prefix}*" for prefix in prefixes]}},
            )
        )

    def _object_grant(self, grantee: iam.IGrantable, actions: list[str], prefix: str) -> None:
        _check_prefix(prefix)
        grantee.grant_principal.add_to_principal_policy(
            iam.PolicyStatement(actions=actions, resources=[self.bucket.arn_for_objects(f"{prefix}*")])
        )

    def _key_grant(self, grantee: iam.IGrantable, action: str, prefix: str) -> None:
        grantee.grant_principal.add_to_principal_policy(
            iam.PolicyStatement(
                actions=[action],
                resources=[self.key.key_arn],
                conditions={
                    "StringEquals": {"kms:ViaService": f"s3.{Aws.REGION}.amazonaws.com"},
                    "StringLike": {
                        "kms:EncryptionContext:aws:s3:arn": [
                            self.bucket.bucket_arn,
                            self.bucket.arn_for_objects(f"{prefix}*"),
                        ]
                    },
                },
            )
        )


def rotating_key(scope: Construct, *, alias: str, description: str, removal_policy: RemovalPolicy) -> kms.Key:
    """A customer-managed key (construct id `Key`) with yearly rotation; one the environment does
    not retain is deleted after KMS's shortest waiting period."""
    return kms.Key(
        scope,
        "Key",
        alias=alias,
        description=description,
        enable_key_rotation=True,
        removal_policy=removal_policy,
        pending_window=Duration.days(KEY_PENDING_WINDOW_DAYS) if removal_policy == RemovalPolicy.DESTROY else None,
    )


def secure_bucket_defaults(protect: bool) -> dict[str, Any]:
    """What every p4review bucket shares: no public access, SSL only, no ACLs, and the
    environment's data policy (protected: RETAIN; dev: DESTROY, emptied by CDK's auto-delete)."""
    return dict(
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        enforce_ssl=True,
        object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
        removal_policy=RemovalPolicy.RETAIN if protect else RemovalPolicy.DESTROY,
        auto_delete_objects=not protect,
    )


def _check_prefix(prefix: str) -> None:
    if not prefix.endswith("/"):
        raise ValueError(f"S3 grant prefix must end with '/': {prefix!r}")


class ArtifactStorage(Construct):
    """The artifact buckets, one per `BucketSpec` (raw and redacted), and what they share.

    * one customer-managed KMS key (`alias/p4review-<env>-artifacts`, yearly rotation) that
      encrypts every bucket (SSE-KMS with the S3 Bucket Key, so KMS sees one call per bucket
      key rather than one per object);
    * one server-access-log bucket (SSE-S3: log delivery cannot write SSE-KMS), each bucket
      logging under its own prefix `<key>/`.

    Every bucket: SSL only, no public access, bucket-owner-enforced, objects expire after the
    spec's `expiration_days`, incomplete multipart uploads after 1 day. Access is granted per
    bucket and prefix through `self[key].grant_*` (see `ArtifactBucket`) and `grant_list`."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        environment: str,
        specs: tuple[BucketSpec, ...],
        protect: bool,
    ) -> None:
        super().__init__(scope, construct_id)
        removal = RemovalPolicy.RETAIN if protect else RemovalPolicy.DESTROY
        self.key = rotating_key(
            self,
            alias=artifact_key_alias(environment),
            description=f"p4review {environment}: encrypts the artifact buckets (SSE-KMS)",
            removal_policy=removal,
        )
        common = secure_bucket_defaults(protect)

        self.access_logs = s3.Bucket(
            self,
            "AccessLogs",
            # Server access log delivery (bucket-policy based, no ACLs) supports SSE-S3 targets only.
            encryption=s3.BucketEncryption.S3_MANAGED,
            lifecycle_rules=[s3.LifecycleRule(expiration=Duration.days(ACCESS_LOG_RETENTION_DAYS))],
            **common,
        )
        skip_checkov(
            self.access_logs,
            "CKV_AWS_18",
            "This is the server-access-log bucket: S3 advises against a bucket logging to itself (every "
            "delivery would log another), and no p4review role can read or write it.",
        )
        skip_checkov(
            self.access_logs,
            "CKV_AWS_21",
            f"Log files are written once by S3 log delivery and expire after {ACCESS_LOG_RETENTION_DAYS} "
            "days; versioning would only keep the expired ones as noncurrent versions.",
        )
        self.by_key: dict[str, ArtifactBucket] = {}
        for spec in specs:
            bucket = s3.Bucket(
                self,
                spec.key.capitalize(),
                # Bucket names are global: the physical name from resources gets account and region appended.
                bucket_name=f"{physical_name(environment, spec.key)}-{Aws.ACCOUNT_ID}-{Aws.REGION}",
                versioned=False,
                encryption=s3.BucketEncryption.KMS,
                encryption_key=self.key,
                bucket_key_enabled=True,
                lifecycle_rules=[
                    s3.LifecycleRule(
                        id="expire-artifacts",
                        expiration=Duration.days(spec.expiration_days),
                        abort_incomplete_multipart_upload_after=Duration.days(1),
                    )
                ],
                server_access_logs_bucket=self.access_logs,
                server_access_logs_prefix=f"{spec.key}/",
                **common,
            )
            skip_checkov(
                bucket,
                "CKV_AWS_21",
                f"Unversioned on purpose: {spec.key} artifacts must be gone {spec.expiration_days} days after "
                "they are written (the artifact TTL, docs/security.md), and versioning would keep every "
                "expired object as a noncurrent version. No role may delete an artifact, so there is no "
                "early deletion for versions to undo.",
            )
            self.by_key[spec.key] = ArtifactBucket(spec, bucket, self.key)

    def __getitem__(self, key: str) -> ArtifactBucket:
        return self.by_key[key]

    @property
    def buckets(self) -> tuple[ArtifactBucket, ...]:
        return tuple(self.by_key.values())

    def grant_list(self, grantee: iam.IGrantable, prefixes: tuple[str, ...]) -> None:
        """List-only access to every artifact bucket (s3:ListBucket under `prefixes`): no object
        action and no KMS permission. For the sweeper's TTL verification."""
        for artifact_bucket in self.buckets:
            artifact_bucket.grant_list(grantee, prefixes)


def artifact_key_alias(environment: str) -> str:
    return f"alias/{physical_name(environment, 'artifacts')}"

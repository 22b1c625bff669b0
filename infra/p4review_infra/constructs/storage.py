"""DynamoDB tables and the S3 artifact bucket, built from the specs in `p4review.resources`."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Aws, Duration, RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct
from p4review.resources import BucketSpec, TableSpec, physical_name

ACCESS_LOG_RETENTION_DAYS = 90


@dataclass(frozen=True)
class ProvisionedTable:
    spec: TableSpec
    table: dynamodb.Table


class Tables(Construct):
    """One on-demand, PITR-enabled, AWS-managed-encrypted table per TableSpec."""

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
            self.by_key[spec.key] = ProvisionedTable(spec, table)

    def __getitem__(self, key: str) -> ProvisionedTable:
        return self.by_key[key]


class ArtifactBucket(Construct):
    """The artifact bucket (SSE-S3, SSL only, no public access, objects expire) and its access-log bucket.

    Access is granted per key prefix with `grant_read_prefix` / `grant_write_prefix`:
    object-level actions only (GetObject / PutObject), never bucket-wide wildcards."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        environment: str,
        spec: BucketSpec,
        protect: bool,
    ) -> None:
        super().__init__(scope, construct_id)
        self.spec = spec
        removal = RemovalPolicy.RETAIN if protect else RemovalPolicy.DESTROY
        common = dict(
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            encryption=s3.BucketEncryption.S3_MANAGED,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            removal_policy=removal,
            auto_delete_objects=not protect,
        )

        self.access_logs = s3.Bucket(
            self,
            "AccessLogs",
            # Server access log delivery needs ACL-less bucket-policy delivery and SSE-S3.
            lifecycle_rules=[s3.LifecycleRule(expiration=Duration.days(ACCESS_LOG_RETENTION_DAYS))],
            **common,
        )
        self.bucket = s3.Bucket(
            self,
            "Bucket",
            # Bucket names are global: the physical name from resources gets account and region appended.
            bucket_name=f"{physical_name(environment, spec.key)}-{Aws.ACCOUNT_ID}-{Aws.REGION}",
            versioned=False,
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

    @property
    def bucket_name(self) -> str:
        return self.bucket.bucket_name

    def grant_read_prefix(self, grantee: iam.IGrantable, prefix: str) -> None:
        """s3:GetObject on `<prefix>*`, and s3:ListBucket restricted to that prefix (so a missing
        key is a 404, not a 403)."""
        self._object_grant(grantee, ["s3:GetObject"], prefix)
        grantee.grant_principal.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["s3:ListBucket"],
                resources=[self.bucket.bucket_arn],
                conditions={"StringLike": {"s3:prefix": [f"{prefix}*"]}},
            )
        )

    def grant_write_prefix(self, grantee: iam.IGrantable, prefix: str) -> None:
        """s3:PutObject on `<prefix>*` only."""
        self._object_grant(grantee, ["s3:PutObject"], prefix)

    def _object_grant(self, grantee: iam.IGrantable, actions: list[str], prefix: str) -> None:
        if not prefix.endswith("/"):
            raise ValueError(f"S3 grant prefix must end with '/': {prefix!r}")
        grantee.grant_principal.add_to_principal_policy(
            iam.PolicyStatement(actions=actions, resources=[self.bucket.arn_for_objects(f"{prefix}*")])
        )

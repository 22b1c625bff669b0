"""Create the service's AWS resources (on the local moto server) from ``p4review.resources``.

The same specs the CDK app deploys: tables (PAY_PER_REQUEST, keys, TTL), queues with their
dead-letter queues and redrive policies, buckets with their expiration rule, and secrets.
``provision`` is idempotent: running it again converges the existing resources (queue
attributes and secret values are set again; nothing is deleted).

Usage::

    resources = provision(boto3.Session(...), "local", secret_values={"smtp": {...}, ...},
                          endpoint_url=aws.endpoint_url, visibility_timeouts={"fetch": 2})
    os.environ.update(resources.env())
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from p4review import resources as spec
from p4review.models.job import StageName
from p4review.settings.blocks import CredentialAgeBlock

__all__ = ["LocalResources", "QueueResources", "provision"]

_SERVICES = ("dynamodb", "sqs", "s3", "secretsmanager")


@dataclass(frozen=True)
class QueueResources:
    """One stage's queue and its dead-letter queue, as provisioned."""

    key: str
    stage: StageName
    name: str
    url: str
    arn: str
    dlq_name: str
    dlq_url: str
    dlq_arn: str
    visibility_timeout_seconds: int
    max_receive_count: int
    batch_size: int
    max_concurrency: int


@dataclass(frozen=True)
class LocalResources:
    """Physical names of everything ``provision`` created, keyed by the spec's ``key``."""

    environment: str
    region: str
    tables: dict[str, str] = field(default_factory=dict)  # "jobs" -> "p4review-local-jobs"
    queues: dict[str, QueueResources] = field(default_factory=dict)  # "fetch" -> QueueResources
    buckets: dict[str, str] = field(default_factory=dict)  # "artifacts" -> bucket name
    secrets: dict[str, str] = field(default_factory=dict)  # "smtp" -> secret name (the SecretId)

    def queue_for_stage(self, stage: StageName) -> QueueResources:
        return self.queues[spec.QUEUE_FOR_STAGE[stage].key]

    def env(self) -> dict[str, str]:
        """The environment the functions read (each function's settings model, e.g.
        ``p4review.fetch.settings.FetchSettings``): ``P4REVIEW_ENV`` plus ``spec.env_var ->
        physical name / queue URL / secret id`` for every table, queue, bucket and secret,
        ``QueueSpec.dlq_env_var -> DLQ URL`` for every queue, and the credential-age check's list
        of the secrets. AWS endpoint/credential variables
        are not included (the orchestrator owns those)."""
        values: dict[str, str] = {"P4REVIEW_ENV": self.environment}
        for table in spec.TABLES:
            if table.key in self.tables:
                values[table.env_var] = self.tables[table.key]
        for queue in spec.QUEUES:
            if queue.key in self.queues:
                values[queue.env_var] = self.queues[queue.key].url
                dlq_env_var = getattr(queue, "dlq_env_var", None)
                if dlq_env_var:
                    values[dlq_env_var] = self.queues[queue.key].dlq_url
        for bucket in spec.BUCKETS:
            if bucket.key in self.buckets:
                values[bucket.env_var] = self.buckets[bucket.key]
        for secret in spec.SECRETS:
            if secret.key in self.secrets:
                values[secret.env_var] = self.secrets[secret.key]
        # The credential-age check's list, as the CDK app gives it: every secret the stack holds.
        values[CredentialAgeBlock.env_var("credential_age_secrets")] = json.dumps(self.secrets, sort_keys=True)
        return values


def _clients(session_or_clients: Any, endpoint_url: str | None, region: str | None) -> dict[str, Any]:
    """Accept a boto3 Session (or anything with ``.client(name, ...)``) or a mapping of
    service name -> client."""
    if isinstance(session_or_clients, Mapping):
        missing = [name for name in _SERVICES if name not in session_or_clients]
        if missing:
            raise ValueError(f"provision: missing clients for {', '.join(missing)}")
        return {name: session_or_clients[name] for name in _SERVICES}
    kwargs: dict[str, Any] = {}
    if endpoint_url:
        kwargs["endpoint_url"] = endpoint_url
    if region:
        kwargs["region_name"] = region
    return {name: session_or_clients.client(name, **kwargs) for name in _SERVICES}


def _error_code(exc: Exception) -> str:
    response = getattr(exc, "response", None) or {}
    return str(response.get("Error", {}).get("Code", ""))


def _ensure_table(ddb: Any, table: spec.TableSpec, name: str) -> None:
    attributes = [{"AttributeName": table.partition_key, "AttributeType": "S"}]
    keys = [{"AttributeName": table.partition_key, "KeyType": "HASH"}]
    if table.sort_key:
        attributes.append({"AttributeName": table.sort_key, "AttributeType": "S"})
        keys.append({"AttributeName": table.sort_key, "KeyType": "RANGE"})
    indexes = [
        {
            "IndexName": index.name,
            "KeySchema": [{"AttributeName": index.partition_key, "KeyType": "HASH"}],
            "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": list(index.projected)},
        }
        for index in table.indexes
    ]
    attributes += [{"AttributeName": index.partition_key, "AttributeType": "S"} for index in table.indexes]
    try:
        ddb.create_table(
            TableName=name,
            AttributeDefinitions=attributes,
            KeySchema=keys,
            BillingMode="PAY_PER_REQUEST",
            **({"GlobalSecondaryIndexes": indexes} if indexes else {}),
        )
    except ddb.exceptions.ResourceInUseException:
        pass
    ddb.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 30})
    if table.ttl_attribute:
        current = ddb.describe_time_to_live(TableName=name).get("TimeToLiveDescription", {})
        if (
            current.get("TimeToLiveStatus") not in ("ENABLED", "ENABLING")
            or current.get("AttributeName") != table.ttl_attribute
        ):
            ddb.update_time_to_live(
                TableName=name,
                TimeToLiveSpecification={"Enabled": True, "AttributeName": table.ttl_attribute},
            )


def _ensure_queue(sqs: Any, name: str, attributes: dict[str, str]) -> tuple[str, str]:
    """Create the queue, or set its attributes if it exists. Returns (url, arn)."""
    try:
        url = sqs.get_queue_url(QueueName=name)["QueueUrl"]
    except sqs.exceptions.QueueDoesNotExist:
        url = None
    except Exception as exc:  # moto/botocore versions differ in the modelled exception
        if "NonExistentQueue" not in _error_code(exc) and "QueueDoesNotExist" not in _error_code(exc):
            raise
        url = None
    if url is None:
        url = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
    else:
        sqs.set_queue_attributes(QueueUrl=url, Attributes=attributes)
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    return url, arn


def _ensure_bucket(s3: Any, bucket: spec.BucketSpec, name: str, region: str) -> None:
    kwargs: dict[str, Any] = {"Bucket": name}
    if region != "us-east-1":
        kwargs["CreateBucketConfiguration"] = {"LocationConstraint": region}
    try:
        s3.create_bucket(**kwargs)
    except Exception as exc:
        if _error_code(exc) not in ("BucketAlreadyOwnedByYou", "BucketAlreadyExists"):
            raise
    s3.put_public_access_block(
        Bucket=name,
        PublicAccessBlockConfiguration={
            "BlockPublicAcls": True,
            "IgnorePublicAcls": True,
            "BlockPublicPolicy": True,
            "RestrictPublicBuckets": True,
        },
    )
    s3.put_bucket_lifecycle_configuration(
        Bucket=name,
        LifecycleConfiguration={
            "Rules": [
                {
                    "ID": f"expire-after-{bucket.expiration_days}-days",
                    "Status": "Enabled",
                    "Filter": {"Prefix": ""},
                    "Expiration": {"Days": bucket.expiration_days},
                }
            ]
        },
    )


def _secret_string(value: str | Mapping[str, Any]) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return json.dumps(dict(value), sort_keys=True)
    raise TypeError(f"secret value must be str or dict, not {type(value).__name__}")


def _ensure_secret(sm: Any, secret: spec.SecretSpec, name: str, value: str) -> None:
    try:
        sm.create_secret(Name=name, Description=secret.description, SecretString=value)
        return
    except sm.exceptions.ResourceExistsException:
        pass
    current = sm.get_secret_value(SecretId=name).get("SecretString")
    if current != value:
        # Becomes AWSCURRENT; the old value stays readable as AWSPREVIOUS.
        sm.put_secret_value(SecretId=name, SecretString=value)


def provision(
    session_or_clients: Any,
    environment: str = "local",
    *,
    secret_values: Mapping[str, str | Mapping[str, Any]],
    endpoint_url: str | None = None,
    region: str = "us-east-1",
    visibility_timeouts: Mapping[str, int] | None = None,
    max_receive_counts: Mapping[str, int] | None = None,
    extra_secrets: Mapping[str, str | Mapping[str, Any]] | None = None,
) -> LocalResources:
    """Create (or converge) every resource in ``p4review.resources`` for ``environment``.

    ``session_or_clients``: a ``boto3.Session`` (clients are made with ``endpoint_url`` and
    ``region`` when given, else from the environment, e.g. ``AWS_ENDPOINT_URL``) or a mapping
    ``{"dynamodb": c, "sqs": c, "s3": c, "secretsmanager": c}``.

    ``secret_values``: keyed by ``SecretSpec.key`` ("trigger-signing", "smtp", "llm", "p4");
    dicts are JSON-encoded. A secret without a value falls back to its ``local_template`` when
    that is non-empty; otherwise ``ValueError`` (a silent placeholder would hide mistakes).

    ``visibility_timeouts`` / ``max_receive_counts``: overrides keyed by ``QueueSpec.key``
    (tests use short timeouts); anything not listed uses the spec's value.

    ``extra_secrets``: secrets the specs do not list (the local stack's Swarm credentials), keyed
    like ``secret_values``; created as ``physical_name(environment, key)`` and listed in
    ``LocalResources.secrets`` (``env()`` maps only the specs' secrets to variables).
    """
    visibility_timeouts = dict(visibility_timeouts or {})
    max_receive_counts = dict(max_receive_counts or {})
    known_queues = {queue.key for queue in spec.QUEUES}
    unknown = (set(visibility_timeouts) | set(max_receive_counts)) - known_queues
    if unknown:
        raise ValueError(f"provision: unknown queue keys {sorted(unknown)}")
    known_secrets = {secret.key for secret in spec.SECRETS}
    unknown = set(secret_values) - known_secrets
    if unknown:
        raise ValueError(f"provision: unknown secret keys {sorted(unknown)}")
    extra_secrets = dict(extra_secrets or {})
    clashing = set(extra_secrets) & known_secrets
    if clashing:
        raise ValueError(f"provision: extra secrets named like the specs' {sorted(clashing)}")
    secret_strings: dict[str, str] = {}
    for secret in spec.SECRETS:
        if secret.key in secret_values:
            secret_strings[secret.key] = _secret_string(secret_values[secret.key])
        elif secret.local_template:
            secret_strings[secret.key] = _secret_string(secret.local_template)
        else:
            raise ValueError(f"provision: no value for secret {secret.key!r}")

    clients = _clients(session_or_clients, endpoint_url, region)
    ddb, sqs, s3, sm = clients["dynamodb"], clients["sqs"], clients["s3"], clients["secretsmanager"]

    tables: dict[str, str] = {}
    for table in spec.TABLES:
        name = spec.physical_name(environment, table.key)
        _ensure_table(ddb, table, name)
        tables[table.key] = name

    queues: dict[str, QueueResources] = {}
    for queue in spec.QUEUES:
        name = spec.physical_name(environment, queue.key)
        dlq_name = spec.physical_name(environment, spec.dlq_key(queue))
        dlq_url, dlq_arn = _ensure_queue(
            sqs, dlq_name, {"MessageRetentionPeriod": str(queue.dlq_retention_days * 86400)}
        )
        visibility = int(visibility_timeouts.get(queue.key, queue.visibility_timeout_seconds))
        max_receive = int(max_receive_counts.get(queue.key, queue.max_receive_count))
        url, arn = _ensure_queue(
            sqs,
            name,
            {
                "VisibilityTimeout": str(visibility),
                "RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": max_receive}),
            },
        )
        queues[queue.key] = QueueResources(
            key=queue.key,
            stage=queue.stage,
            name=name,
            url=url,
            arn=arn,
            dlq_name=dlq_name,
            dlq_url=dlq_url,
            dlq_arn=dlq_arn,
            visibility_timeout_seconds=visibility,
            max_receive_count=max_receive,
            batch_size=queue.batch_size,
            max_concurrency=queue.max_concurrency,
        )

    buckets: dict[str, str] = {}
    for bucket in spec.BUCKETS:
        name = spec.physical_name(environment, bucket.key)
        _ensure_bucket(s3, bucket, name, region)
        buckets[bucket.key] = name

    secrets: dict[str, str] = {}
    for secret in spec.SECRETS:
        name = spec.physical_name(environment, secret.key)
        _ensure_secret(sm, secret, name, secret_strings[secret.key])
        secrets[secret.key] = name
    for key, value in sorted(extra_secrets.items()):
        name = spec.physical_name(environment, key)
        extra = spec.SecretSpec(key=key, env_var="", description=f"{key} (local stack only)")
        _ensure_secret(sm, extra, name, _secret_string(value))
        secrets[key] = name

    return LocalResources(
        environment=environment, region=region, tables=tables, queues=queues, buckets=buckets, secrets=secrets
    )

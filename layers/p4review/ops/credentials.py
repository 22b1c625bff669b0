"""Credential lifecycle (spec SEC-20; docs/runbook.md, "Credentials"):

* `rotate_signing_secret`: one step of the trigger-signing secret's rotation (functions/rotate_signing);
* `publish_credential_ages`: the age of every secret's current value as `CredentialAgeDays`
  {Secret}, alarmed above the maximum age (functions/credential_age).

The decisions are in ops/secret_rotation.py; this module reads and writes through the DAL."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Protocol

from aws_lambda_powertools.metrics import MetricUnit

from p4review.clock import utc_now
from p4review.errors import ConfigError, P4ReviewError
from p4review.metric_names import Dimension, MetricName
from p4review.models.rotation import RotationRequest, RotationStep
from p4review.observability import logger, publish_metric
from p4review.ops.secret_rotation import (
    CURRENT,
    PENDING,
    RotationRefused,
    credential_age_days,
    current_version,
    new_signing_key,
    signing_key_problem,
    step_has_work,
)


class SecretVersionStore(Protocol):  # p4review.ops.secret_versions.SecretVersions
    def labels(self, secret_id: str) -> dict[str, list[str]]: ...

    def value(self, secret_id: str, version_id: str, stage: str) -> str | None: ...

    def put_pending(self, secret_id: str, version_id: str, value: str) -> None: ...

    def make_current(self, secret_id: str, version_id: str, *, from_version_id: str) -> None: ...

    def current_since(self, secret_id: str) -> datetime: ...


def rotate_signing_secret(
    event: Mapping[str, Any], store: SecretVersionStore, *, new_key: Callable[[], str] = new_signing_key
) -> str:
    """Run the event's step; returns what was done. Raises RotationRefused (Secrets Manager then
    records the rotation as failed and leaves AWSCURRENT where it was)."""
    request = RotationRequest.model_validate(event)
    secret_id, token = request.secret_id, request.token
    labels = store.labels(secret_id)
    if not step_has_work(labels, token, request.step):
        outcome = "nothing to do: the version is already current"
    elif request.step is RotationStep.CREATE:
        # A retried createSecret finds its own value: keep it (the token's value never changes).
        if store.value(secret_id, token, PENDING) is None:
            store.put_pending(secret_id, token, new_key())
            outcome = "pending key created"
        else:
            outcome = "pending key already there"
    elif request.step is RotationStep.SET:
        outcome = "nothing to set: ingest reads the key from this secret"
    elif request.step is RotationStep.TEST:
        pending = store.value(secret_id, token, PENDING)
        if pending is not None and pending == store.value(secret_id, current_version(labels), CURRENT):
            # Secrets Manager's check of a new schedule (RotateImmediately=false) tests a pending copy
            # of the current value: that key is in use already, whatever its shape.
            outcome = "pending copy of the current key: the setup works"
        elif problem := signing_key_problem(pending):
            raise RotationRefused(f"pending version {token} of {secret_id}: {problem}")
        else:
            outcome = "pending key is a signing key"
    else:
        store.make_current(secret_id, token, from_version_id=current_version(labels))
        outcome = "pending key is current; the old one is AWSPREVIOUS"
    logger.info(
        "signing secret rotation step", extra={"step": request.step.value, "version_id": token, "outcome": outcome}
    )
    return outcome


class CredentialAgeCheckFailed(ConfigError):
    """Some secret's age could not be read: the function fails, so its error alarm fires."""


def publish_credential_ages(
    secret_ids: Mapping[str, str], store: SecretVersionStore, *, now: datetime | None = None
) -> dict[str, float]:
    """Publish each secret's age in days (`secret_ids`: SecretSpec key -> secret id). Every secret
    is measured even when one fails; then CredentialAgeCheckFailed names the ones that did."""
    moment = now or utc_now()
    ages: dict[str, float] = {}
    failed: list[str] = []
    for key, secret_id in sorted(secret_ids.items()):
        try:
            ages[key] = credential_age_days(store.current_since(secret_id), moment)
        except P4ReviewError as exc:
            logger.error("credential age unreadable", extra={"secret": key, "error_class": exc.error_class.value})
            failed.append(key)
            continue
        publish_metric(MetricName.CREDENTIAL_AGE_DAYS, ages[key], {Dimension.SECRET: key}, unit=MetricUnit.NoUnit)
    logger.info("credential ages", extra={"age_days": ages})
    if failed:
        raise CredentialAgeCheckFailed(f"the age of {', '.join(failed)} could not be read")
    return ages

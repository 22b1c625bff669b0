"""Credential rotation and age from CDK context (docs/infra.md, "Credential rotation";
docs/runbook.md, "Credentials"). Spec SEC-20: rotate at least every 90 days, or per provider
policy if stricter.

* `signingSecretRotationDays` (default 30): Secrets Manager rotates the trigger-signing secret on
  this schedule; both ends are ours, so nobody has to act. The previous value keeps verifying for
  one whole period (dual-key overlap), which is the trigger hosts' time to pick the new one up.
* `credentialMaxAgeDays` (default 90, at most 90): every secret the stack uses, rotated or not,
  is alarmed once its current value is older than this. The signing secret's schedule must leave
  two days under it (the rotation window and the check's interval), so its alarm means a
  rotation that failed, never one that is merely due."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from p4review_infra.review_config import ContextError, _text

SIGNING_ROTATION_KEY = "signingSecretRotationDays"
MAX_AGE_KEY = "credentialMaxAgeDays"
DEFAULT_SIGNING_ROTATION_DAYS = 30
# A trigger host that syncs the secret daily needs the old value to outlive a few missed syncs.
MIN_SIGNING_ROTATION_DAYS = 7
MAX_CREDENTIAL_AGE_DAYS = 90  # spec SEC-20
# Secrets Manager rotates within a window after the due date; the age check runs every few hours.
ROTATION_SLACK_DAYS = 2


@dataclass(frozen=True)
class RotationConfig:
    signing_rotation_days: int = DEFAULT_SIGNING_ROTATION_DAYS
    credential_max_age_days: int = MAX_CREDENTIAL_AGE_DAYS

    @classmethod
    def from_context(cls, get: Callable[[str], Any]) -> RotationConfig:
        max_age = _days(get, MAX_AGE_KEY, MAX_CREDENTIAL_AGE_DAYS, MIN_SIGNING_ROTATION_DAYS + ROTATION_SLACK_DAYS)
        rotation = _days(get, SIGNING_ROTATION_KEY, DEFAULT_SIGNING_ROTATION_DAYS, MIN_SIGNING_ROTATION_DAYS)
        if rotation > max_age - ROTATION_SLACK_DAYS:
            raise ContextError(
                f"context {SIGNING_ROTATION_KEY}={rotation}: must be at most {MAX_AGE_KEY} ({max_age}) minus "
                f"{ROTATION_SLACK_DAYS} days, or the age alarm fires before each rotation is due"
            )
        return cls(signing_rotation_days=rotation, credential_max_age_days=max_age)


def _days(get: Callable[[str], Any], key: str, default: int, low: int) -> int:
    text = _text(get(key))
    if not text:
        return default
    try:
        days = int(text)
    except ValueError:
        days = 0
    if not low <= days <= MAX_CREDENTIAL_AGE_DAYS:
        raise ContextError(f"context {key}={get(key)!r}: expected whole days, {low}..{MAX_CREDENTIAL_AGE_DAYS}")
    return days

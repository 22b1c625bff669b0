"""Rotation of a secret whose both ends are ours (the trigger-signing key): Secrets Manager's four
steps, as decisions over the secret's version labels (docs/runbook.md, "Credentials").

Secrets Manager calls the rotation function four times with the same ClientRequestToken (the new
version's id), and may call any step again after a failure, so each step is idempotent:

* createSecret: put a new random key under the token as AWSPENDING, unless that version has a value;
* setSecret: nothing to set: no third party holds the key (ingest reads it from the secret itself);
* testSecret: the pending value must be a key the trigger can hold and sign with;
* finishSecret: move AWSCURRENT to the token's version; Secrets Manager labels the old current
  AWSPREVIOUS, which ingest still accepts (dual-key overlap) until the next rotation.

A step for a token that is already AWSCURRENT is a re-run after the rotation finished: nothing to do.

Every other credential is issued by someone else (SMTP relay, LLM provider, Perforce, Swarm): the
service only measures how old its current value is (`credential_age_days`), and an alarm asks an
operator to rotate it."""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta

from p4review.models.rotation import RotationStep

CURRENT = "AWSCURRENT"
PENDING = "AWSPENDING"

SIGNING_KEY_LENGTH = 64
# Letters and digits: nothing a shell, a config file or the trigger's stripping read could change.
SIGNING_KEY_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
# What testSecret accepts: a key an operator put by hand may be longer or use other printable
# characters, but never whitespace (the trigger strips its secret file) and never a short one.
MIN_SIGNING_KEY_LENGTH = 32
MAX_SIGNING_KEY_LENGTH = 4096
_PRINTABLE_NO_SPACE = re.compile(r"[\x21-\x7e]+")


class RotationRefused(Exception):
    """A step the function must not act on; Secrets Manager records the rotation as failed.
    The message names labels and version ids, never a value."""


def step_has_work(versions: Mapping[str, Sequence[str]], token: str, step: RotationStep) -> bool:
    """Whether `step` has anything to do for `token`, given the secret's version id -> labels.

    False when the token's version is already AWSCURRENT (the rotation finished; this is a re-run).
    createSecret may find the token unknown (the version is created by its put); every later
    step needs the token's version to be AWSPENDING."""
    labels = versions.get(token)
    if labels is not None and CURRENT in labels:
        return False
    if labels is None and step is RotationStep.CREATE:
        return True
    if labels is None or PENDING not in labels:
        raise RotationRefused(f"version {token} is not {PENDING}: not the rotation in progress")
    return True


def current_version(versions: Mapping[str, Sequence[str]]) -> str:
    """The version id labelled AWSCURRENT."""
    for version, labels in versions.items():
        if CURRENT in labels:
            return version
    raise RotationRefused(f"the secret has no {CURRENT} version")


def new_signing_key(choice: Callable[[str], str] = secrets.choice) -> str:
    """A fresh key: 64 characters of 62 (~381 bits); `choice` is the CSPRNG's, injectable for tests."""
    return "".join(choice(SIGNING_KEY_ALPHABET) for _ in range(SIGNING_KEY_LENGTH))


def signing_key_problem(value: str | None) -> str | None:
    """Why `value` cannot be a signing key, or None. Never quotes the value."""
    if not value:
        return "the value is empty"
    if not MIN_SIGNING_KEY_LENGTH <= len(value) <= MAX_SIGNING_KEY_LENGTH:
        return f"the value has {len(value)} characters, not {MIN_SIGNING_KEY_LENGTH}..{MAX_SIGNING_KEY_LENGTH}"
    if not _PRINTABLE_NO_SPACE.fullmatch(value):
        return "the value has whitespace, control or non-ASCII characters"
    return None


def credential_age_days(current_since: datetime, now: datetime) -> float:
    """Days since the current value was put, to two decimals (about a quarter of an hour)."""
    if current_since.tzinfo is None or now.tzinfo is None:
        raise ValueError("naive datetime: credential ages are measured in UTC")
    return round((now - current_since) / timedelta(days=1), 2)

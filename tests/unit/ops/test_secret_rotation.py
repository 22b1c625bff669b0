"""The signing key's rotation decisions (ops/secret_rotation.py): which step has work for which
version labels, what a new key looks like, what testSecret refuses, how a credential's age is counted."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import cycle

import pytest

from p4review.models.rotation import RotationRequest, RotationStep
from p4review.ops.secret_rotation import (
    CURRENT,
    PENDING,
    SIGNING_KEY_ALPHABET,
    SIGNING_KEY_LENGTH,
    RotationRefused,
    credential_age_days,
    current_version,
    new_signing_key,
    signing_key_problem,
    step_has_work,
)

PREVIOUS = "AWSPREVIOUS"
STEPS = list(RotationStep)


@pytest.mark.parametrize("step", STEPS)
def test_every_step_has_work_while_the_token_is_pending(step):
    assert step_has_work({"old": [CURRENT], "new": [PENDING]}, "new", step)


@pytest.mark.parametrize("step", STEPS)
def test_a_step_for_a_token_already_current_is_a_finished_rotation(step):
    assert not step_has_work({"old": [PREVIOUS], "new": [CURRENT, PENDING]}, "new", step)


@pytest.mark.spec("SEC-20")
def test_create_may_find_the_token_unknown_the_later_steps_may_not():
    versions = {"old": [CURRENT]}
    assert step_has_work(versions, "new", RotationStep.CREATE)
    for step in (RotationStep.SET, RotationStep.TEST, RotationStep.FINISH):
        with pytest.raises(RotationRefused, match="not AWSPENDING"):
            step_has_work(versions, "new", step)


def test_a_token_that_lost_its_pending_label_is_refused():
    # Another rotation started since (its own token is pending now): this one must not finish.
    with pytest.raises(RotationRefused):
        step_has_work({"old": [CURRENT], "stale": [], "newer": [PENDING]}, "stale", RotationStep.FINISH)


def test_current_version_is_the_one_labelled_current():
    assert current_version({"a": [PREVIOUS], "b": [CURRENT], "c": [PENDING]}) == "b"
    with pytest.raises(RotationRefused):
        current_version({"a": [PENDING]})


def test_a_new_key_is_64_characters_of_the_alphabet_from_the_injected_source():
    drawn = []

    def choice(alphabet: str) -> str:
        drawn.append(alphabet)
        return next(letters)

    letters = cycle("aZ9")
    key = new_signing_key(choice)
    assert len(key) == SIGNING_KEY_LENGTH and key.startswith("aZ9aZ9")
    assert drawn == [SIGNING_KEY_ALPHABET] * SIGNING_KEY_LENGTH
    assert signing_key_problem(key) is None


def test_new_keys_differ():
    assert len({new_signing_key() for _ in range(20)}) == 20


@pytest.mark.parametrize(
    "value, problem",
    [
        (None, "empty"),
        ("", "empty"),
        ("x" * 31, "31 characters"),
        ("x" * 4097, "4097 characters"),
        ("x" * 40 + " ", "whitespace"),
        ("x" * 40 + "\n", "whitespace"),
        ("x" * 40 + "é", "non-ASCII"),
    ],
)
def test_test_secret_refuses_what_the_trigger_could_not_sign_with(value, problem):
    found = signing_key_problem(value)
    assert found is not None and problem in found


def test_an_operators_own_printable_key_passes():
    assert signing_key_problem("k3y-with_punctuation!/+=" + "x" * 10) is None


def test_credential_age_is_days_since_the_current_value_was_put():
    put = datetime(2026, 1, 1, tzinfo=UTC)
    assert credential_age_days(put, put + timedelta(days=90, hours=6)) == 90.25
    assert credential_age_days(put, put) == 0
    with pytest.raises(ValueError):
        credential_age_days(put.replace(tzinfo=None), put)


def test_the_rotation_event_is_read_from_secrets_managers_field_names():
    request = RotationRequest.model_validate(
        {"SecretId": "arn:secret", "ClientRequestToken": "t-1", "Step": "testSecret", "RotationToken": "ignored"}
    )
    assert (request.secret_id, request.token, request.step) == ("arn:secret", "t-1", RotationStep.TEST)
    with pytest.raises(ValueError):
        RotationRequest.model_validate({"SecretId": "arn:secret", "ClientRequestToken": "t-1", "Step": "rotate"})

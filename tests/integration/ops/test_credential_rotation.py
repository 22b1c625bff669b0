"""SEC-20 against the moto server: the trigger-signing secret's rotation (Secrets Manager's four
steps, each idempotent, dual-key overlap) and the age of every credential's current value."""

from __future__ import annotations

import json
import time
import uuid
from datetime import timedelta

import pytest

from p4review import faults
from p4review.cli.api_client import ReviewApiClient
from p4review.ingest import signing
from p4review.metric_names import MetricName
from p4review.models.rotation import RotationStep
from p4review.ops.credentials import CredentialAgeCheckFailed, publish_credential_ages, rotate_signing_secret
from p4review.ops.secret_rotation import SIGNING_KEY_LENGTH, RotationRefused
from p4review.ops.secret_versions import SecretVersions
from p4review.stores.secrets import SecretsManagerReader
from p4review_dev.lambda_context import FakeLambdaContext
from p4review_dev.stack import load_function
from p4review_dev.support.emf import data_points
from p4review_dev.support.harness import ingest_api, provisioned_service

FIRST_KEY = "first-signing-key-" + "a" * 30


@pytest.fixture
def secrets_client(aws_client, aws_reset):
    return aws_client("secretsmanager")


@pytest.fixture
def signing_secret(secrets_client) -> str:
    return secrets_client.create_secret(Name=f"p4review/test/trigger-signing-{uuid.uuid4()}", SecretString=FIRST_KEY)[
        "ARN"
    ]


def _step(store: SecretVersions, secret_id: str, token: str, step: RotationStep) -> str:
    return rotate_signing_secret({"SecretId": secret_id, "ClientRequestToken": token, "Step": step.value}, store)


def _rotate(store: SecretVersions, secret_id: str) -> str:
    """One rotation as Secrets Manager runs it: the four steps with one new token."""
    token = str(uuid.uuid4())
    for step in RotationStep:
        _step(store, secret_id, token, step)
    return token


def _value(client, secret_id: str, stage: str) -> str:
    return client.get_secret_value(SecretId=secret_id, VersionStage=stage)["SecretString"]


def _labels(client, secret_id: str) -> dict[str, list[str]]:
    return {v: sorted(s) for v, s in client.describe_secret(SecretId=secret_id)["VersionIdsToStages"].items() if s}


def _verifies_with(secrets: list[str], key: str) -> int:
    """Which of ingest's accepted values (current first) a request signed with `key` matches."""
    now = int(time.time())
    headers = signing.signed_headers(key, now, "POST", "/v1/reviews", b"{}")
    return signing.verify(
        secrets=secrets,
        timestamp=headers[signing.TIMESTAMP_HEADER],
        signature=headers[signing.SIGNATURE_HEADER],
        method="POST",
        path="/v1/reviews",
        body=b"{}",
        now=now,
        max_age_seconds=300,
    )


@pytest.mark.spec("SEC-20")
def test_a_rotation_makes_a_new_key_current_and_keeps_the_old_one_as_previous(secrets_client, signing_secret):
    token = _rotate(SecretVersions(secrets_client), signing_secret)
    new_key = _value(secrets_client, signing_secret, "AWSCURRENT")
    assert new_key != FIRST_KEY and len(new_key) == SIGNING_KEY_LENGTH and new_key.isalnum()
    assert _value(secrets_client, signing_secret, "AWSPREVIOUS") == FIRST_KEY
    assert "AWSCURRENT" in _labels(secrets_client, signing_secret)[token]


@pytest.mark.spec("SEC-20")
def test_every_step_run_again_changes_nothing(secrets_client, signing_secret):
    store = SecretVersions(secrets_client)
    token = str(uuid.uuid4())
    for step in RotationStep:
        _step(store, signing_secret, token, step)
        labels, pending = _labels(secrets_client, signing_secret), _value(secrets_client, signing_secret, "AWSPENDING")
        # Secrets Manager retries a step after a timeout or an error: the same state again.
        _step(store, signing_secret, token, step)
        assert _labels(secrets_client, signing_secret) == labels, step
        assert _value(secrets_client, signing_secret, "AWSPENDING") == pending, step
    current = _value(secrets_client, signing_secret, "AWSCURRENT")
    # A step delivered after the rotation finished finds the token current: nothing to do.
    for step in RotationStep:
        assert _step(store, signing_secret, token, step).startswith("nothing to do"), step
    assert _value(secrets_client, signing_secret, "AWSCURRENT") == current
    assert _value(secrets_client, signing_secret, "AWSPREVIOUS") == FIRST_KEY


@pytest.mark.spec("SEC-20")
def test_a_request_signed_with_the_old_key_verifies_until_the_next_rotation(secrets_client, signing_secret):
    store, reader = SecretVersions(secrets_client), SecretsManagerReader(secrets_client, cache_seconds=0)
    _rotate(store, signing_secret)
    second_key = _value(secrets_client, signing_secret, "AWSCURRENT")
    # The overlap: ingest accepts both values; a trigger host still holding the first key is fine.
    assert _verifies_with(reader.get_versions(signing_secret), FIRST_KEY) == 1
    assert _verifies_with(reader.get_versions(signing_secret), second_key) == 0

    _rotate(store, signing_secret)
    assert _verifies_with(reader.get_versions(signing_secret), second_key) == 1
    with pytest.raises(signing.SignatureProblem):
        _verifies_with(reader.get_versions(signing_secret), FIRST_KEY)


@pytest.mark.spec("SEC-20")
def test_test_secret_refuses_a_pending_value_the_trigger_cannot_sign_with(secrets_client, signing_secret):
    store, token = SecretVersions(secrets_client), str(uuid.uuid4())
    # An operator staged a short value by hand: the rotation fails before AWSCURRENT moves.
    secrets_client.put_secret_value(
        SecretId=signing_secret, ClientRequestToken=token, SecretString="too-short", VersionStages=["AWSPENDING"]
    )
    _step(store, signing_secret, token, RotationStep.CREATE)  # keeps the value it found
    with pytest.raises(RotationRefused, match="9 characters") as refused:
        _step(store, signing_secret, token, RotationStep.TEST)
    assert "too-short" not in str(refused.value)
    assert _value(secrets_client, signing_secret, "AWSCURRENT") == FIRST_KEY


def test_secrets_managers_setup_check_on_a_copy_of_the_current_key_passes(secrets_client, signing_secret):
    # A new schedule with RotateImmediately=false: testSecret on a pending copy of the current value.
    token = str(uuid.uuid4())
    secrets_client.put_secret_value(
        SecretId=signing_secret, ClientRequestToken=token, SecretString=FIRST_KEY, VersionStages=["AWSPENDING"]
    )
    outcome = _step(SecretVersions(secrets_client), signing_secret, token, RotationStep.TEST)
    assert "copy of the current key" in outcome


def test_a_later_step_for_a_version_that_is_not_pending_is_refused(secrets_client, signing_secret):
    with pytest.raises(RotationRefused, match="not AWSPENDING"):
        _step(SecretVersions(secrets_client), signing_secret, str(uuid.uuid4()), RotationStep.FINISH)
    assert _value(secrets_client, signing_secret, "AWSCURRENT") == FIRST_KEY


@pytest.mark.spec("SEC-20")
def test_the_handler_rotates_and_the_ingest_api_accepts_both_keys_in_the_overlap(moto_endpoint, aws_reset):
    with provisioned_service(moto_endpoint) as service, ingest_api(service):
        secret_id = service.resources.secrets["trigger-signing"]
        rotate = load_function("rotate-signing").lambda_handler
        token = str(uuid.uuid4())
        for step in RotationStep:
            event = {"SecretId": secret_id, "ClientRequestToken": token, "Step": step.value}
            rotate(event, FakeLambdaContext("p4review-test-rotate-signing"))
        new_key = _value(service.client("secretsmanager"), secret_id, "AWSCURRENT")

        old_host = ReviewApiClient(service.gateway.url, service.signing_secret)
        assert old_host.ping().body["signed_with"] == "previous"
        submitted = old_host.submit(changelist_id=91, review_version=1, kind="submitted", idempotency_key="p4-91-v1")
        assert submitted.status == 201
        new_host = ReviewApiClient(service.gateway.url, new_key)
        assert new_host.ping().body["signed_with"] == "current"


@pytest.mark.spec("SEC-20")
def test_credential_ages_are_published_per_secret(secrets_client, capsys):
    created = {
        key: secrets_client.create_secret(Name=f"p4review/test/{key}-{uuid.uuid4()}", SecretString="{}")
        for key in ("p4", "smtp")
    }
    secret_ids = {key: answer["ARN"] for key, answer in created.items()}
    store = SecretVersions(secrets_client)
    put_at = store.current_since(secret_ids["p4"])
    capsys.readouterr()

    ages = publish_credential_ages(secret_ids, store, now=put_at + timedelta(days=91))

    assert ages["p4"] == 91.0 and 90 < ages["smtp"] < 92
    points = {p.dimensions["Secret"]: p for p in data_points(capsys.readouterr().out)}
    assert set(points) == {"p4", "smtp"}
    assert points["p4"].name == MetricName.CREDENTIAL_AGE_DAYS and points["p4"].values == (91.0,)
    assert points["p4"].dimensions == {"service": "p4review", "Secret": "p4"}


@pytest.mark.spec("SEC-20")
def test_an_unreadable_secret_fails_the_check_after_the_others_are_published(secrets_client, capsys):
    p4 = secrets_client.create_secret(Name=f"p4review/test/p4-{uuid.uuid4()}", SecretString="{}")["ARN"]
    capsys.readouterr()
    with pytest.raises(CredentialAgeCheckFailed, match="smtp"):
        publish_credential_ages({"p4": p4, "smtp": "p4review/test/deleted-smtp"}, SecretVersions(secrets_client))
    assert [p.dimensions["Secret"] for p in data_points(capsys.readouterr().out)] == ["p4"]


def test_the_age_handler_reads_its_secrets_from_the_environment(secrets_client, aws_env, monkeypatch, capsys):
    from p4review.stores.factory import reset_data_access

    llm = secrets_client.create_secret(Name=f"p4review/test/llm-{uuid.uuid4()}", SecretString="{}")["ARN"]
    monkeypatch.setenv("P4REVIEW_CREDENTIAL_AGE_SECRETS", json.dumps({"llm": llm}))
    reset_data_access()
    faults.reset()  # the fault plan is re-read from the environment too
    try:
        answer = load_function("credential-age").lambda_handler({}, FakeLambdaContext("p4review-test-credential-age"))
    finally:
        reset_data_access()
        faults.reset()  # the fault plan is re-read from the environment too
    assert set(answer["age_days"]) == {"llm"} and 0 <= answer["age_days"]["llm"] < 1

"""LlmCredentials through the one secret reader on moto's Secrets Manager: caching, forced
re-read after rotation, errors."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from p4review.errors import ConfigError
from p4review.review.llm.credentials import LlmCredentials
from p4review.review.settings import ReviewerSettings
from p4review.review.stores import ReviewStores
from p4review.settings.blocks import StoresBlock
from p4review.stores.factory import DataAccess
from p4review.stores.secrets import SecretsManagerReader

SECRET_ID = "p4review/test/llm"
KEY = "sk-test-current-0123456789"
ROTATED_KEY = "sk-test-rotated-9876543210"


@pytest.fixture
def secrets_client(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for name in ("AWS_ENDPOINT_URL", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    with mock_aws():
        client = boto3.client(
            "secretsmanager", region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing"
        )
        yield client


def _count_reads(client: Any) -> list[dict[str, Any]]:
    """The parameters of every GetSecretValue the client sends."""
    calls: list[dict[str, Any]] = []
    client.meta.events.register(
        "provide-client-params.secrets-manager.GetSecretValue", lambda params, **_: calls.append(dict(params))
    )
    return calls


@pytest.mark.spec("SEC-16")
def test_reads_are_cached(secrets_client: Any) -> None:
    secrets_client.create_secret(Name=SECRET_ID, SecretString=json.dumps({"api_key": KEY}))
    reads = _count_reads(secrets_client)
    credentials = LlmCredentials(SecretsManagerReader(secrets_client, 300), SECRET_ID)

    assert credentials.api_key() == KEY
    assert credentials.api_key(False) == KEY

    assert reads == [{"SecretId": SECRET_ID, "VersionStage": "AWSCURRENT"}]


def test_force_refresh_reads_the_rotated_key(secrets_client: Any) -> None:
    secrets_client.create_secret(Name=SECRET_ID, SecretString=json.dumps({"api_key": KEY}))
    credentials = LlmCredentials(SecretsManagerReader(secrets_client, 300), SECRET_ID)
    assert credentials.api_key() == KEY

    secrets_client.put_secret_value(SecretId=SECRET_ID, SecretString=json.dumps({"api_key": ROTATED_KEY}))

    assert credentials.api_key() == KEY  # still cached
    assert credentials.api_key(True) == ROTATED_KEY
    assert credentials.api_key() == ROTATED_KEY  # the re-read refreshed the cache


def test_zero_cache_seconds_reads_every_time(secrets_client: Any) -> None:
    secrets_client.create_secret(Name=SECRET_ID, SecretString=json.dumps({"api_key": KEY}))
    reads = _count_reads(secrets_client)
    credentials = LlmCredentials(SecretsManagerReader(secrets_client, 0), SECRET_ID)

    credentials.api_key()
    credentials.api_key()

    assert len(reads) == 2


def test_a_plain_string_secret_is_the_key(secrets_client: Any) -> None:
    secrets_client.create_secret(Name=SECRET_ID, SecretString=f"  {KEY}\n")

    assert LlmCredentials(SecretsManagerReader(secrets_client, 300), SECRET_ID).api_key() == KEY


def test_missing_secret_is_a_domain_error(secrets_client: Any) -> None:
    with pytest.raises(ConfigError) as raised:
        LlmCredentials(SecretsManagerReader(secrets_client, 300), "p4review/test/absent").api_key()

    assert "p4review/test/absent" in raised.value.message
    assert "ResourceNotFoundException" in raised.value.message


@pytest.mark.parametrize("document", [{"token": KEY}, {"api_key": ""}, {"api_key": 12345}])
def test_a_json_secret_without_api_key_is_a_config_error(secrets_client: Any, document: dict[str, Any]) -> None:
    secrets_client.create_secret(Name=SECRET_ID, SecretString=json.dumps(document))

    with pytest.raises(ConfigError) as raised:
        LlmCredentials(SecretsManagerReader(secrets_client, 300), SECRET_ID).api_key()

    assert SECRET_ID in raised.value.message
    assert KEY not in raised.value.message


def test_data_access_builds_credentials_from_settings(secrets_client: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    secrets_client.create_secret(Name=SECRET_ID, SecretString=json.dumps({"api_key": KEY}))

    configured = ReviewStores(
        DataAccess(StoresBlock()), ReviewerSettings.model_validate({"P4REVIEW_LLM_SECRET_ID": SECRET_ID})
    )
    assert configured.llm_credentials.api_key() == KEY
    assert configured.llm_credentials is configured.llm_credentials

    with pytest.raises(ConfigError):
        _ = ReviewStores(DataAccess(StoresBlock()), ReviewerSettings()).llm_credentials


@pytest.mark.spec("SEC-16")
def test_the_cache_expires_on_the_injected_clock(secrets_client: Any) -> None:
    """The one reader holds AWSCURRENT for `cache_seconds` of its clock, then reads again."""
    secrets_client.create_secret(Name=SECRET_ID, SecretString=json.dumps({"api_key": KEY}))
    reads = _count_reads(secrets_client)
    now = [1000.0]
    credentials = LlmCredentials(SecretsManagerReader(secrets_client, 300, monotonic=lambda: now[0]), SECRET_ID)

    credentials.api_key()
    now[0] += 299
    credentials.api_key()
    assert len(reads) == 1
    now[0] += 2
    credentials.api_key()
    assert len(reads) == 2


@pytest.mark.spec("SEC-16", "CH-3")
def test_one_reader_serves_every_secret(secrets_client: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    configured = ReviewStores(
        DataAccess(StoresBlock()), ReviewerSettings.model_validate({"P4REVIEW_LLM_SECRET_ID": SECRET_ID})
    )
    assert configured.llm_credentials._reader is configured.data_access.secrets

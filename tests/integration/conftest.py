"""Shared fixtures for integration and e2e tests: one moto server on loopback per session.

Fixtures:
  local_aws_server  (session) the running p4review.local.moto_server.LocalAwsServer
  moto_endpoint     (session) its endpoint URL, e.g. "http://127.0.0.1:41234"
  aws_env           (function) AWS_ENDPOINT_URL / AWS_DEFAULT_REGION=us-east-1 / fake
                    credentials set via monkeypatch (plain boto3.client(...) then hits moto)
  aws_reset         (function) clears all moto state before the test
  boto_session      (function) a boto3.Session with fake credentials, region us-east-1
  aws_client        (function) factory: aws_client("sqs") -> a client pointed at moto
  aws_clients       (function) {"dynamodb", "sqs", "s3", "secretsmanager"} clients
  manual_clock      (function) p4review's clock, frozen; `.advance(seconds)` moves it on
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest

from p4review.clock import set_time_source
from p4review.local.moto_server import LocalAwsServer
from tests.support.aws import moto_client

REGION = "us-east-1"
FAKE_CREDENTIALS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}


@pytest.fixture(scope="session")
def local_aws_server() -> Iterator[LocalAwsServer]:
    server = LocalAwsServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def moto_endpoint(local_aws_server: LocalAwsServer) -> str:
    return local_aws_server.endpoint_url


@pytest.fixture
def aws_env(moto_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    values = {
        "AWS_ENDPOINT_URL": moto_endpoint,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_REGION": REGION,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SECURITY_TOKEN": "testing",
        "AWS_SESSION_TOKEN": "testing",
    }
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    for name in ("AWS_PROFILE", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"):
        monkeypatch.delenv(name, raising=False)
    return values


@pytest.fixture
def aws_reset(local_aws_server: LocalAwsServer) -> None:
    local_aws_server.reset()


@pytest.fixture
def boto_session() -> boto3.Session:
    return boto3.Session(region_name=REGION, **FAKE_CREDENTIALS)


@pytest.fixture
def aws_client(moto_endpoint: str) -> Callable[[str], Any]:
    """Factory for clients pointed at moto, safe to call from any thread (one shared Session,
    clients made under a lock: tests/support/aws.py)."""

    def make(service: str) -> Any:
        return moto_client(service, moto_endpoint)

    return make


@pytest.fixture
def aws_clients(aws_client: Callable[[str], Any]) -> dict[str, Any]:
    return {name: aws_client(name) for name in ("dynamodb", "sqs", "s3", "secretsmanager")}


class ManualClock:
    """p4review's clock for a test: frozen until `advance`, so a lease stays live however slow
    the machine is, and lapses exactly when the test says."""

    def __init__(self) -> None:
        self.now = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def manual_clock() -> Iterator[ManualClock]:
    clock = ManualClock()
    set_time_source(clock)
    try:
        yield clock
    finally:
        set_time_source(None)

"""Shared fixtures for integration and e2e tests: one moto server on loopback per session.

Fixtures:
  local_aws_server  (session) the running p4review_dev.moto_server.LocalAwsServer
  moto_endpoint     (session) its endpoint URL, e.g. "http://127.0.0.1:41234"
  aws_env           (function) AWS_ENDPOINT_URL / AWS_DEFAULT_REGION=us-east-1 / fake
                    credentials set via monkeypatch (plain boto3.client(...) then hits moto)
  aws_reset         (function) clears all moto state before the test
  boto_session      (function) a boto3.Session with fake credentials, region us-east-1
  aws_client        (function) factory: aws_client("sqs") -> a client pointed at moto
  aws_clients       (function) {"dynamodb", "sqs", "s3", "secretsmanager"} clients
  manual_clock      (function) p4review's clock, frozen; `.advance(seconds)` moves it on

DynamoDB twice (issue 25): the DAL's integration tests run against moto and, once more, against
AWS's DynamoDB Local (devstack/p4review_dev/support/dynamodb_local.py):
  dynamodb_local    (session) the running DynamoDB Local; if it cannot run, every test that
                    needs it FAILS saying what is missing (never a skip)
  dynamo_backend    (function) "moto" or "dynamodb-local": a test reaching it runs once on each;
                    the DynamoDB Local runs share one xdist_group, so one JVM serves them
  dynamodb_endpoint (function) the endpoint of that backend's DynamoDB (moto reset first)
  dal_provisioned   (function) like p4review_dev.support.harness.provisioned_service(moto_endpoint, ...)
                    on reset moto, with DynamoDB served by `dynamo_backend`: the same tables
                    (provision's specs) on DynamoDB Local, AWS_ENDPOINT_URL_DYNAMODB pointing the
                    functions there, and `service.client("dynamodb")` a client of it
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest

from p4review import resources as spec
from p4review.clock import set_time_source
from p4review_dev.moto_server import LocalAwsServer
from p4review_dev.provision import _ensure_table
from p4review_dev.support.aws import moto_client
from p4review_dev.support.dynamodb_local import DynamoDbLocal, DynamoDbLocalUnavailable
from p4review_dev.support.harness import Provisioned, provisioned_service

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
    clients made under a lock: devstack/p4review_dev/support/aws.py)."""

    def make(service: str) -> Any:
        return moto_client(service, moto_endpoint)

    return make


@pytest.fixture
def aws_clients(aws_client: Callable[[str], Any]) -> dict[str, Any]:
    return {name: aws_client(name) for name in ("dynamodb", "sqs", "s3", "secretsmanager")}


MOTO = "moto"
DYNAMODB_LOCAL = "dynamodb-local"


@pytest.fixture(scope="session")
def dynamodb_local() -> Iterator[DynamoDbLocal]:
    server = DynamoDbLocal()
    unavailable: DynamoDbLocalUnavailable | None = None
    try:
        server.start()
    except DynamoDbLocalUnavailable as exc:
        unavailable = exc
    if unavailable is not None:
        pytest.fail(f"DynamoDB Local cannot run, so the DAL's tests against it fail (never skip): {unavailable}", False)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(params=[MOTO, pytest.param(DYNAMODB_LOCAL, marks=pytest.mark.xdist_group(DYNAMODB_LOCAL))])
def dynamo_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def dynamodb_endpoint(dynamo_backend: str, request: pytest.FixtureRequest) -> str:
    """The endpoint of `dynamo_backend`'s DynamoDB: moto's (reset), or DynamoDB Local's (started
    on first use; a test removes the tables it made there)."""
    if dynamo_backend == MOTO:
        request.getfixturevalue("aws_reset")
        return str(request.getfixturevalue("moto_endpoint"))
    local: DynamoDbLocal = request.getfixturevalue("dynamodb_local")
    return local.endpoint_url


@pytest.fixture
def dal_provisioned(
    moto_endpoint: str, aws_reset: None, dynamo_backend: str, dynamodb_endpoint: str
) -> Callable[..., AbstractContextManager[Provisioned]]:
    """`with dal_provisioned(**provisioned_service_kwargs) as service:` the service provisioned on
    moto, its DynamoDB on `dynamo_backend`."""
    if dynamo_backend == MOTO:
        return lambda **kwargs: provisioned_service(moto_endpoint, **kwargs)

    @contextmanager
    def on_dynamodb_local(*, extra_env: dict[str, str] | None = None, **kwargs: Any) -> Iterator[Provisioned]:
        extra_env = {**(extra_env or {}), "AWS_ENDPOINT_URL_DYNAMODB": dynamodb_endpoint}
        dynamodb = moto_client("dynamodb", dynamodb_endpoint)
        with provisioned_service(moto_endpoint, extra_env=extra_env, **kwargs) as service:
            names = service.resources.tables
            for table in spec.TABLES:  # as provision creates them; in memory, gone with the JVM
                _ensure_table(dynamodb, table, names[table.key])
            on_moto = service.client
            service.client = lambda name: dynamodb if name == "dynamodb" else on_moto(name)  # type: ignore[method-assign]
            try:
                yield service
            finally:
                for name in names.values():
                    dynamodb.delete_table(TableName=name)

    return on_dynamodb_local


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

"""SesSender against moto's in-process SES (v2 send, v1 identity verification), against a real
sesv2 client with botocore's Stubber (which validates requests and responses against the
service model) for each error mapping, and make_ses_client's configuration."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import (
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    ParamValidationError,
    ReadTimeoutError,
)
from botocore.stub import Stubber
from moto import mock_aws
from moto.core import DEFAULT_ACCOUNT_ID
from moto.ses.models import ses_backends

from p4review.models.outbox import LookupOutcome, SendOutcome, SendResult
from p4review.notify.delivery import delivery_token, message_id_for
from p4review.notify.email.ses import DELIVERY_TAG, SesSender, make_ses_client

REGION = "us-east-1"
SENDER = "p4review@example.com"
RECIPIENT = "dkowalski@example.com"
TOKEN = delivery_token(48213, RECIPIENT, 2)
MESSAGE_ID = message_id_for(TOKEN, SENDER)
MESSAGE = (
    f"From: {SENDER}\r\nTo: {RECIPIENT}\r\nSubject: [p4review] CL 48213 v2: no findings\r\n"
    f"Message-ID: {MESSAGE_ID}\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n"
    "\r\nBODY-MARKER-7f3a proprietary review text\r\n"
).encode()


def _expected_params(**extra: Any) -> dict[str, Any]:
    params: dict[str, Any] = {
        "FromEmailAddress": SENDER,
        "Destination": {"ToAddresses": [RECIPIENT]},
        "Content": {"Raw": {"Data": MESSAGE}},
        "EmailTags": [{"Name": DELIVERY_TAG, "Value": TOKEN[:32]}],
    }
    params.update(extra)
    return params


def _assert_safe(result: SendResult) -> None:
    rendered = f"{result.error_code} {result.error_message}"
    for secret in (RECIPIENT, "BODY-MARKER-7f3a", "proprietary"):
        assert secret not in rendered


def _send(client: Any, message: bytes = MESSAGE, **kwargs: Any) -> SendResult:
    return SesSender(client, **kwargs).send(sender=SENDER, recipient=RECIPIENT, message=message)


# ---------------------------------------------------------------------------------------
# moto


@pytest.fixture
def moto_ses(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)  # in-process mock, not the moto server
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")
    with mock_aws():
        yield boto3.client("sesv2", region_name=REGION)


def test_send_through_moto(moto_ses: Any) -> None:
    boto3.client("ses", region_name=REGION).verify_email_identity(EmailAddress=SENDER)

    result = _send(moto_ses)

    assert result.outcome == SendOutcome.SENT
    stored = ses_backends[DEFAULT_ACCOUNT_ID][REGION].sent_messages
    assert [m.id for m in stored] == [result.notification_id]
    # moto keeps the raw message as decoded text; our messages are 7-bit (quoted-printable).
    assert stored[0].raw_data.encode() == MESSAGE
    assert RECIPIENT in stored[0].destinations


def test_unverified_sender_is_failed(moto_ses: Any) -> None:
    result = _send(moto_ses)

    assert result.outcome == SendOutcome.FAILED
    assert result.error_code == "MessageRejected"
    _assert_safe(result)
    assert SENDER not in (result.error_message or "")


# ---------------------------------------------------------------------------------------
# Stubber


@pytest.fixture
def stubbed() -> Iterator[tuple[Any, Stubber]]:
    client = boto3.client("sesv2", region_name=REGION, aws_access_key_id="testing", aws_secret_access_key="testing")
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()


@pytest.mark.spec("SES-1")
def test_request_shape_and_message_id(stubbed: tuple[Any, Stubber]) -> None:
    client, stubber = stubbed
    stubber.add_response(
        "send_email", {"MessageId": "0100018f-ses-id"}, _expected_params(ConfigurationSetName="p4review-events")
    )

    result = _send(client, configuration_set="p4review-events")

    assert result == SendResult(outcome=SendOutcome.SENT, notification_id="0100018f-ses-id")


def test_no_tag_without_our_message_id(stubbed: tuple[Any, Stubber]) -> None:
    client, stubber = stubbed
    foreign = MESSAGE.replace(MESSAGE_ID.encode(), b"<someone.else@example.org>")
    params = _expected_params(Content={"Raw": {"Data": foreign}})
    del params["EmailTags"]
    stubber.add_response("send_email", {"MessageId": "m-2"}, params)

    assert _send(client, message=foreign).outcome == SendOutcome.SENT


@pytest.mark.parametrize(
    "code, status, outcome, error_code",
    [
        ("TooManyRequestsException", 429, SendOutcome.RETRYABLE, "TooManyRequestsException"),
        ("LimitExceededException", 400, SendOutcome.RETRYABLE, "LimitExceededException"),
        ("ThrottlingException", 400, SendOutcome.RETRYABLE, "ThrottlingException"),
        ("InternalFailure", 500, SendOutcome.RETRYABLE, "InternalFailure"),
        ("ServiceUnavailable", 503, SendOutcome.RETRYABLE, "ServiceUnavailable"),
        ("MessageRejected", 400, SendOutcome.FAILED, "MessageRejected"),
        ("MailFromDomainNotVerifiedException", 400, SendOutcome.FAILED, "MailFromDomainNotVerifiedException"),
        ("AccountSuspendedException", 400, SendOutcome.FAILED, "AccountSuspendedException"),
        ("SendingPausedException", 400, SendOutcome.FAILED, "SendingPausedException"),
        ("NotFoundException", 404, SendOutcome.FAILED, "NotFoundException"),
        ("BadRequestException", 400, SendOutcome.FAILED, "BadRequestException"),
        ("AccessDeniedException", 403, SendOutcome.FAILED, "auth_failed"),
        ("UnrecognizedClientException", 400, SendOutcome.FAILED, "auth_failed"),
        ("InvalidSignatureException", 403, SendOutcome.FAILED, "auth_failed"),
    ],
)
def test_client_errors_are_mapped(
    stubbed: tuple[Any, Stubber], code: str, status: int, outcome: SendOutcome, error_code: str
) -> None:
    client, stubber = stubbed
    # SES messages can name the addresses involved: none of it may reach the result.
    stubber.add_client_error(
        "send_email",
        service_error_code=code,
        http_status_code=status,
        service_message=f"Email address is not verified: {RECIPIENT} BODY-MARKER-7f3a",
        expected_params=_expected_params(),
    )

    result = _send(client)

    assert (result.outcome, result.error_code) == (outcome, error_code)
    assert result.error_message == f"SES {code} (HTTP {status})"
    assert result.retry_after is None
    _assert_safe(result)


def test_throttling_carries_retry_after(stubbed: tuple[Any, Stubber]) -> None:
    client, stubber = stubbed
    stubber.add_client_error(
        "send_email",
        service_error_code="TooManyRequestsException",
        http_status_code=429,
        expected_params=_expected_params(),
        response_meta={"HTTPHeaders": {"retry-after": "7"}},
    )

    result = _send(client)

    assert (result.outcome, result.retry_after) == (SendOutcome.RETRYABLE, 7.0)


class _FailingClient:
    def __init__(self, error: Exception):
        self.error = error

    def send_email(self, **_: Any) -> dict[str, Any]:
        raise self.error


@pytest.mark.parametrize(
    "error, outcome, error_code",
    [
        (ReadTimeoutError(endpoint_url="https://email.us-east-1.amazonaws.com"), SendOutcome.RETRYABLE, "timeout"),
        (ConnectTimeoutError(endpoint_url="https://email.us-east-1.amazonaws.com"), SendOutcome.RETRYABLE, "timeout"),
        (
            EndpointConnectionError(endpoint_url="https://email.us-east-1.amazonaws.com"),
            SendOutcome.RETRYABLE,
            "connect_failed",
        ),
        (NoCredentialsError(), SendOutcome.FAILED, "auth_failed"),
    ],
)
def test_transport_errors_are_mapped(error: Exception, outcome: SendOutcome, error_code: str) -> None:
    result = _send(_FailingClient(error))

    assert (result.outcome, result.error_code) == (outcome, error_code)


def test_parameter_validation_does_not_echo_the_request() -> None:
    # botocore's report quotes the offending parameter values.
    error = ParamValidationError(report=f"Invalid length for parameter Destination, value: {RECIPIENT}")

    result = _send(_FailingClient(error))

    assert (result.outcome, result.error_code) == (SendOutcome.FAILED, "invalid_request")
    _assert_safe(result)


def test_lookup_is_unsupported() -> None:
    result = SesSender(_FailingClient(AssertionError("no call expected"))).lookup(MESSAGE_ID)

    assert result.outcome == LookupOutcome.UNSUPPORTED


def test_make_ses_client_turns_sdk_retries_off() -> None:
    client = make_ses_client("eu-west-1")

    config = client.meta.config
    assert client.meta.service_model.service_name == "sesv2"
    assert client.meta.region_name == "eu-west-1"
    assert config.retries == {"total_max_attempts": 1, "mode": "standard"}

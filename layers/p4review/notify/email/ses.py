"""Amazon SES (v2 API) delivery with the SmtpSender interface: structured results, never an
exception for an expected failure.

The rendered message is handed over as-is (`Content.Raw`), the same bytes the SMTP path sends,
but SES does not deliver them unchanged: it replaces the Message-ID and Date headers with its own
(https://docs.aws.amazon.com/ses/latest/dg/header-fields.html). So on SES our deterministic
Message-ID neither reaches the recipient nor lets a mail system collapse a second copy; what
joins SES's events back to the outbox row is the `p4review-delivery` message tag, and what keeps
a second send from happening is the outbox (docs/notify.md, "SES: what reaches the recipient").
Error messages carry the SES error code and HTTP status only: SES's own message text can echo
the addresses involved."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from email.parser import BytesHeaderParser
from email.policy import default as default_policy
from http import HTTPStatus
from typing import Any

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectTimeoutError,
    NoCredentialsError,
    ParamValidationError,
    PartialCredentialsError,
    ReadTimeoutError,
)
from botocore.exceptions import (
    ConnectionError as BotoConnectionError,
)

from p4review.errors import ConfigError, clamp_retry_after
from p4review.models.outbox import LookupOutcome, LookupResult, SendOutcome, SendResult

CONNECT_TIMEOUT_SECONDS = 10
READ_TIMEOUT_SECONDS = 20
# Message tag with the delivery token, so SES event records (sends, bounces, complaints) can be
# joined back to the outbox row: SES replaces our Message-ID, the tag survives. Tag names and
# values allow only [A-Za-z0-9_-].
DELIVERY_TAG = "p4review-delivery"
# logic.delivery.message_id_for: "<p4r.{first 32 hex chars of the delivery token}@domain>".
_TOKEN_IN_MESSAGE_ID = re.compile(r"<p4r\.([0-9a-f]{32})@")

_THROTTLED = frozenset(
    {"TooManyRequestsException", "LimitExceededException", "ThrottlingException", "Throttling", "RequestLimitExceeded"}
)
_UNAVAILABLE = frozenset(
    {"InternalFailure", "InternalServerError", "ServiceUnavailable", "ServiceUnavailableException"}
)
_AUTH = frozenset(
    {
        "AccessDenied",
        "AccessDeniedException",
        "UnrecognizedClientException",
        "InvalidClientTokenId",
        "InvalidSignatureException",
        "SignatureDoesNotMatch",
        "ExpiredToken",
        "ExpiredTokenException",
        "MissingAuthenticationToken",
    }
)


def make_ses_client(region: str | None) -> Any:
    """An sesv2 client with SDK retries off: the notify stage owns retries (and backoff), and a
    hidden SDK retry of a send that did reach SES would be a duplicate email."""
    import boto3
    from botocore.config import Config
    from botocore.exceptions import NoRegionError

    config = Config(
        retries={"total_max_attempts": 1, "mode": "standard"},
        connect_timeout=CONNECT_TIMEOUT_SECONDS,
        read_timeout=READ_TIMEOUT_SECONDS,
    )
    try:
        return boto3.session.Session().client("sesv2", region_name=region, config=config)
    except NoRegionError:
        raise ConfigError("ses: no AWS region configured") from None


class SesSender:
    def __init__(self, client: Any, *, configuration_set: str | None = None):
        self._client = client
        self._configuration_set = configuration_set

    def send(self, *, sender: str, recipient: str, message: bytes, commit_by: datetime | None = None) -> SendResult:
        # One API call, bounded by the client's timeouts: start it only if it can end before
        # commit_by (see EmailSender).
        if commit_by is not None and (commit_by - datetime.now(UTC)).total_seconds() < (
            CONNECT_TIMEOUT_SECONDS + READ_TIMEOUT_SECONDS
        ):
            return _retryable("ownership_ending", "not enough lease left to hand the message over")
        arguments: dict[str, Any] = {
            "FromEmailAddress": sender,
            "Destination": {"ToAddresses": [recipient]},
            "Content": {"Raw": {"Data": message}},
        }
        token = _delivery_token(message)
        if token:
            arguments["EmailTags"] = [{"Name": DELIVERY_TAG, "Value": token}]
        if self._configuration_set:
            arguments["ConfigurationSetName"] = self._configuration_set
        try:
            response = self._client.send_email(**arguments)
        except ClientError as exc:
            return _from_client_error(exc)
        except (NoCredentialsError, PartialCredentialsError):
            return _failed("auth_failed", "SES: no AWS credentials")
        except ParamValidationError:
            # Refused by botocore before sending; its text quotes the parameters, so it is dropped.
            return _failed("invalid_request", "SES request failed parameter validation")
        except (ReadTimeoutError, ConnectTimeoutError):
            return _retryable("timeout", "SES request timed out")
        except BotoConnectionError as exc:
            return _retryable("connect_failed", type(exc).__name__)
        except BotoCoreError as exc:
            return _retryable("ses_error", type(exc).__name__)
        return SendResult(outcome=SendOutcome.SENT, notification_id=response.get("MessageId"))

    def lookup(self, message_id: str) -> LookupResult:
        """Always UNSUPPORTED: SES v2 has no API that finds a sent message, by its Message-ID or
        otherwise. What happened to a send is only published as events (send, delivery, bounce)
        to a configuration set's event destination (CloudWatch, Firehose, SNS, EventBridge),
        which this sender does not read. Nor could a lookup use `message_id`: SES replaced it on
        the delivered message. The notify stage then applies its documented policy for an
        unconfirmed earlier attempt: send again, which on SES is a separate email (its own
        Message-ID), not a copy a mail system would collapse."""
        return LookupResult(outcome=LookupOutcome.UNSUPPORTED)


def _delivery_token(message: bytes) -> str | None:
    """The delivery token carried in the message's Message-ID header, if it is ours."""
    headers = BytesHeaderParser(policy=default_policy).parsebytes(message)
    match = _TOKEN_IN_MESSAGE_ID.search(str(headers.get("Message-ID", "")))
    return match.group(1) if match else None


def _from_client_error(exc: ClientError) -> SendResult:
    error = exc.response.get("Error", {})
    metadata = exc.response.get("ResponseMetadata", {})
    code = str(error.get("Code") or "Unknown")
    status = int(metadata.get("HTTPStatusCode") or 0)
    text = f"SES {code} (HTTP {status})"
    if code in _AUTH or status == HTTPStatus.FORBIDDEN:
        return _failed("auth_failed", text)
    if code in _THROTTLED or status == HTTPStatus.TOO_MANY_REQUESTS:
        headers = metadata.get("HTTPHeaders") or {}
        return SendResult(
            outcome=SendOutcome.RETRYABLE,
            error_code=code,
            error_message=text,
            retry_after=clamp_retry_after(headers.get("retry-after")),
        )
    if code in _UNAVAILABLE or status >= HTTPStatus.INTERNAL_SERVER_ERROR:
        return _retryable(code, text)
    # MessageRejected, MailFromDomainNotVerifiedException, AccountSuspendedException,
    # SendingPausedException, NotFoundException (configuration set), BadRequestException and
    # any other 4xx: sending the same request again would be refused the same way.
    return _failed(code, text)


def _failed(code: str, message: str) -> SendResult:
    return SendResult(outcome=SendOutcome.FAILED, error_code=code, error_message=message)


def _retryable(code: str, message: str) -> SendResult:
    return SendResult(outcome=SendOutcome.RETRYABLE, error_code=code, error_message=message)

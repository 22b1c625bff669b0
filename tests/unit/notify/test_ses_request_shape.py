"""Every SES v2 SendEmail request SesSender builds passes botocore's own ParamValidator against the
sesv2 service model botocore ships (no client, no network: the request is captured)."""

from __future__ import annotations

from typing import Any

import botocore.session
import pytest
from botocore.validate import ParamValidator

from p4review.models.outbox import SendOutcome
from p4review.notify.delivery import delivery_token, message_id_for
from p4review.notify.email.ses import DELIVERY_TAG, SesSender

SENDER = "p4review@example.com"
RECIPIENT = "dkowalski@example.com"
TOKEN = delivery_token(48213, RECIPIENT, 2)


def _message(message_id: str) -> bytes:
    return (
        f"From: {SENDER}\r\nTo: {RECIPIENT}\r\nSubject: [p4review] CL 48213 v2: no findings\r\n"
        f"Message-ID: {message_id}\r\nDate: Tue, 25 Nov 2026 10:00:00 +0000\r\nMIME-Version: 1.0\r\n"
        "Content-Type: text/plain; charset=utf-8\r\n\r\nno findings\r\n"
    ).encode()


class _CapturingClient:
    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def send_email(self, **arguments: Any) -> dict[str, Any]:
        self.calls.append(arguments)
        return {"MessageId": "0100018f-ses-id"}


@pytest.mark.spec("SES-1")
@pytest.mark.parametrize("configuration_set", [None, "p4review-events"])
@pytest.mark.parametrize("ours", [True, False])
def test_every_send_email_request_passes_botocore_validation(configuration_set: str | None, ours: bool) -> None:
    client = _CapturingClient()
    message = _message(message_id_for(TOKEN, SENDER) if ours else "<someone.else@example.org>")

    result = SesSender(client, configuration_set=configuration_set).send(
        sender=SENDER, recipient=RECIPIENT, message=message
    )

    assert result.outcome == SendOutcome.SENT and result.notification_id == "0100018f-ses-id"
    [arguments] = client.calls
    shape = botocore.session.get_session().get_service_model("sesv2").operation_model("SendEmail").input_shape
    report = ParamValidator().validate(arguments, shape)
    assert not report.has_errors(), report.generate_report()
    assert arguments["Content"] == {"Raw": {"Data": message}}
    assert ("EmailTags" in arguments) is ours
    if ours:
        # The tag is what joins SES events back to the outbox row: SES replaces the Message-ID.
        assert arguments["EmailTags"] == [{"Name": DELIVERY_TAG, "Value": TOKEN[:32]}]
    assert arguments.get("ConfigurationSetName") == configuration_set

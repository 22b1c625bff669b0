"""SMTP delivery with structured results (never an exception for an expected failure).

smtplib's sendmail() discards the final DATA reply, which carries the server's queue id;
this sender speaks MAIL/RCPT/DATA itself to keep it as the provider message id.

SMTP has no standard way to ask "did you accept Message-ID X?". A server that advertises the
`XP4RLOOKUP` EHLO keyword (the embedded local stack's mailbox does; no public relay does)
answers `XP4RLOOKUP <message-id>` with `250 <queue-id>` or `550`; anywhere else `lookup()`
reports UNSUPPORTED and the notify stage applies its documented policy for an uncertain
earlier attempt."""

from __future__ import annotations

import re
import smtplib
import ssl
from datetime import UTC, datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from p4review import faults
from p4review.faults import FaultPoint
from p4review.models.outbox import LookupOutcome, LookupResult, SendOutcome, SendResult

# Below this many seconds before commit_by, a send is not started (a retry will own the row).
MIN_COMMIT_SECONDS = 1.0
_QUEUE_ID = re.compile(rb"queued as ([A-Za-z0-9._\-]+)", re.IGNORECASE)
# EHLO keyword and verb of the delivery lookup extension (see the module docstring).
LOOKUP_EXTENSION = "XP4RLOOKUP"


class TlsMode(StrEnum):
    NONE = "none"  # loopback only (the embedded local stack)
    STARTTLS = "starttls"
    TLS = "tls"


class SmtpSettings(BaseModel):
    """The SMTP secret's JSON document."""

    model_config = ConfigDict(extra="ignore")

    host: str
    port: int = Field(default=587, ge=1, le=65535)
    tls_mode: TlsMode = TlsMode.STARTTLS
    username: str | None = None
    password: SecretStr | None = None
    from_address: str
    timeout_seconds: float = 20.0


class SmtpSender:
    def __init__(self, settings: SmtpSettings):
        self._settings = settings

    def send(self, *, sender: str, recipient: str, message: bytes, commit_by: datetime | None = None) -> SendResult:
        settings = self._settings
        # Injected provider answers go through the same mapping as a real 451 / 550 reply.
        if faults.fires(FaultPoint.PROVIDER_TRANSIENT):
            return _from_reply("data_refused", 451, b"4.3.0 injected fault: try again later")
        if faults.fires(FaultPoint.PROVIDER_PERMANENT):
            return _from_reply("data_refused", 550, b"5.7.1 injected fault: message refused")
        try:
            client = self._connect()
        except (OSError, smtplib.SMTPException) as exc:
            return _transient("connect_failed", type(exc).__name__)
        try:
            if settings.username and settings.password:
                try:
                    client.login(settings.username, settings.password.get_secret_value())
                except smtplib.SMTPAuthenticationError as exc:
                    return SendResult(
                        outcome=SendOutcome.FAILED,
                        error_code="auth_failed",
                        error_message=f"SMTP {exc.smtp_code} authentication refused",
                    )
            code, reply = client.mail(sender)
            if code != 250:
                return _from_reply("mail_from_refused", code, reply)
            code, reply = client.rcpt(recipient)
            if code not in (250, 251):
                return _from_reply("recipient_refused", code, reply)
            # The server takes the message when it reads DATA's final ".": only start that when
            # it can finish before commit_by, and give each of DATA's blocking steps (command
            # reply, body, final reply) a third of what is left.
            seconds_left = _seconds_until(commit_by)
            if seconds_left is not None:
                if seconds_left < MIN_COMMIT_SECONDS:
                    return _transient("ownership_ending", "not enough lease left to hand the message over")
                if client.sock is not None:
                    client.sock.settimeout(min(settings.timeout_seconds, seconds_left / 3))
            code, reply = client.data(message)
            if code != 250:
                return _from_reply("data_refused", code, reply)
            match = _QUEUE_ID.search(reply)
            queue_id = match.group(1).decode() if match else None
            return SendResult(outcome=SendOutcome.SENT, notification_id=queue_id)
        except TimeoutError:
            return _transient("timeout", "SMTP conversation timed out")
        except smtplib.SMTPServerDisconnected:
            return _transient("disconnected", "server closed the connection")
        except (OSError, smtplib.SMTPException) as exc:
            return _transient("smtp_error", type(exc).__name__)
        finally:
            try:
                client.quit()
            except (OSError, smtplib.SMTPException):
                client.close()

    def lookup(self, message_id: str) -> LookupResult:
        """Ask the server whether it accepted `message_id`, if it can say."""
        try:
            client = self._connect()
        except (OSError, smtplib.SMTPException) as exc:
            return LookupResult(outcome=LookupOutcome.UNAVAILABLE, error_code=f"connect_failed:{type(exc).__name__}")
        try:
            client.ehlo_or_helo_if_needed()
            if not client.has_extn(LOOKUP_EXTENSION.lower()):
                return LookupResult(outcome=LookupOutcome.UNSUPPORTED)
            if self._settings.username and self._settings.password:
                try:
                    client.login(self._settings.username, self._settings.password.get_secret_value())
                except smtplib.SMTPAuthenticationError:
                    return LookupResult(outcome=LookupOutcome.UNAVAILABLE, error_code="auth_failed")
            code, reply = client.docmd(LOOKUP_EXTENSION, message_id)
            if code == 250:
                return LookupResult(
                    outcome=LookupOutcome.FOUND, notification_id=reply.decode("ascii", "replace").strip()
                )
            if code == 550:
                return LookupResult(outcome=LookupOutcome.NOT_FOUND)
            return LookupResult(outcome=LookupOutcome.UNAVAILABLE, error_code=f"lookup_{code}")
        except (OSError, smtplib.SMTPException) as exc:
            return LookupResult(outcome=LookupOutcome.UNAVAILABLE, error_code=type(exc).__name__)
        finally:
            try:
                client.quit()
            except (OSError, smtplib.SMTPException):
                client.close()

    def _connect(self) -> smtplib.SMTP:
        settings = self._settings
        if settings.tls_mode == TlsMode.TLS:
            return smtplib.SMTP_SSL(
                settings.host, settings.port, timeout=settings.timeout_seconds, context=ssl.create_default_context()
            )
        client = smtplib.SMTP(settings.host, settings.port, timeout=settings.timeout_seconds)
        client.ehlo()
        if settings.tls_mode == TlsMode.STARTTLS:
            client.starttls(context=ssl.create_default_context())
            client.ehlo()
        return client


def _seconds_until(moment: datetime | None) -> float | None:
    return None if moment is None else (moment - datetime.now(UTC)).total_seconds()


def _transient(code: str, message: str) -> SendResult:
    return SendResult(outcome=SendOutcome.RETRYABLE, error_code=code, error_message=message)


def _from_reply(stage_code: str, code: int, reply: bytes) -> SendResult:
    text = reply.decode("utf-8", "replace")[:200]
    # 4xx is temporary by definition (RFC 5321); 5xx is permanent for this message.
    outcome = SendOutcome.RETRYABLE if 400 <= code < 500 else SendOutcome.FAILED
    return SendResult(outcome=outcome, error_code=f"{stage_code}_{code}", error_message=text)

"""HMAC-SHA256 request signing between the Perforce trigger and the ingest API.

Canonical string: "<unix-seconds>\\n<METHOD>\\n<path>\\n<raw body>". Binding method and
path stops a captured signature from being replayed against another route; the
timestamp bounds replay to the freshness window."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable

TIMESTAMP_HEADER = "X-P4Review-Timestamp"
SIGNATURE_HEADER = "X-P4Review-Signature"
SIGNATURE_SCHEME = "v1"


class SignatureProblem(Exception):
    """Why a request's signature was refused; `code` is the API reason code, `details` what a
    caller may see (the server's clock, for a timestamp outside the window)."""

    def __init__(self, code: str, message: str, details: dict[str, int] | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details


def canonical_string(timestamp: str, method: str, path: str, body: bytes) -> bytes:
    return f"{timestamp}\n{method.upper()}\n{path}\n".encode() + body


def sign(secret: str, timestamp: str, method: str, path: str, body: bytes) -> str:
    digest = hmac.new(secret.encode(), canonical_string(timestamp, method, path, body), hashlib.sha256)
    return f"{SIGNATURE_SCHEME}={digest.hexdigest()}"


def signed_headers(secret: str, timestamp: int, method: str, path: str, body: bytes) -> dict[str, str]:
    return {TIMESTAMP_HEADER: str(timestamp), SIGNATURE_HEADER: sign(secret, str(timestamp), method, path, body)}


def verify(
    *,
    secrets: Iterable[str],
    timestamp: str | None,
    signature: str | None,
    method: str,
    path: str,
    body: bytes,
    now: float,
    max_age_seconds: int,
) -> int:
    """Which of `secrets` (current first, then previous) signed this recent request: its index.
    Raise SignatureProblem otherwise; a problem with the timestamp carries the server's time, so
    a caller can tell its clock is off."""
    if not timestamp or not signature:
        raise SignatureProblem("signature_missing", "request is not signed")
    # ASCII digits only: str.isdigit() also accepts superscripts (which int() refuses) and other
    # scripts' digits (which int() reads).
    if not (timestamp.isascii() and timestamp.isdigit()) or len(timestamp) > 12:
        raise SignatureProblem("signature_invalid", "timestamp header is not unix seconds")
    age = now - int(timestamp)
    if age > max_age_seconds:
        raise SignatureProblem(
            "signature_expired",
            f"signature is older than {max_age_seconds} seconds",
            clock_details(now, max_age_seconds),
        )
    if age < -max_age_seconds:
        raise SignatureProblem("signature_invalid", "timestamp is in the future", clock_details(now, max_age_seconds))
    for index, secret in enumerate(secrets):
        expected = sign(secret, timestamp, method, path, body)
        if hmac.compare_digest(expected.encode(), signature.strip().encode()):
            return index
    raise SignatureProblem("signature_invalid", "signature does not match")


def clock_details(now: float, max_age_seconds: int) -> dict[str, int]:
    return {"server_time": int(now), "max_signature_age_seconds": max_age_seconds}

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
    """Why a request's signature was refused; `code` is the API reason code."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


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
) -> None:
    """Raise SignatureProblem unless one of `secrets` (current, then previous) signed it recently."""
    if not timestamp or not signature:
        raise SignatureProblem("signature_missing", "request is not signed")
    if not timestamp.isdigit() or len(timestamp) > 12:
        raise SignatureProblem("signature_invalid", "timestamp header is not unix seconds")
    age = now - int(timestamp)
    if age > max_age_seconds:
        raise SignatureProblem("signature_expired", f"signature is older than {max_age_seconds} seconds")
    if age < -max_age_seconds:
        raise SignatureProblem("signature_invalid", "timestamp is in the future")
    for secret in secrets:
        expected = sign(secret, timestamp, method, path, body)
        if hmac.compare_digest(expected.encode(), signature.strip().encode()):
            return
    raise SignatureProblem("signature_invalid", "signature does not match")

"""A signed HTTP client for the ingest API (what the Perforce trigger does, in Python)."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from p4review.ingest.signing import signed_headers


@dataclass(frozen=True)
class ApiAnswer:
    status: int
    headers: dict[str, str]
    body: Any

    @property
    def ok(self) -> bool:
        return HTTPStatus.OK <= self.status < HTTPStatus.MULTIPLE_CHOICES


class ReviewApiClient:
    def __init__(self, base_url: str, secret: str, timeout: float = 30.0):
        self._base_url = base_url.rstrip("/")
        self._secret = secret
        self._timeout = timeout

    def _call(self, method: str, path: str, body: bytes = b"") -> ApiAnswer:
        url = self._base_url + path
        # The route path is signed, not the URL's: API Gateway strips the stage (or a custom
        # domain's base path) before the function sees the request.
        headers = {
            "Content-Type": "application/json",
            **signed_headers(self._secret, int(time.time()), method, path, body),
        }
        request = urllib.request.Request(url, data=body if method != "GET" else None, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as response:
                return _answer(response.status, dict(response.headers), response.read())
        except urllib.error.HTTPError as error:
            return _answer(error.code, dict(error.headers), error.read())

    def submit(
        self,
        *,
        changelist_id: int,
        review_version: int,
        kind: str,
        idempotency_key: str,
        rerun: bool = False,
        follows_shelf: dict[str, int] | None = None,
    ) -> ApiAnswer:
        payload: dict[str, Any] = {
            "idempotency_key": idempotency_key,
            "changelist_id": changelist_id,
            "review_version": review_version,
            "kind": kind,
        }
        if rerun:
            payload["rerun"] = True
        if follows_shelf:
            payload["follows_shelf"] = follows_shelf
        return self._call("POST", "/v1/reviews", json.dumps(payload).encode())

    def post_raw(self, body: bytes) -> ApiAnswer:
        return self._call("POST", "/v1/reviews", body)

    def ping(self) -> ApiAnswer:
        return self._call("GET", "/v1/ping")

    def get_job(self, job_id: str) -> ApiAnswer:
        return self._call("GET", f"/v1/reviews/{urllib.parse.quote(job_id, safe='')}")


def default_idempotency_key(kind: str, changelist_id: int, review_version: int) -> str:
    """What the shipped trigger sends: one key per (kind, change, version), so a re-fired
    trigger is a replay, not a second review."""
    return f"p4-{kind}-{changelist_id}-v{review_version}"


def _answer(status: int, headers: dict[str, str], raw: bytes) -> ApiAnswer:
    try:
        body: Any = json.loads(raw) if raw else None
    except (ValueError, RecursionError):  # not JSON, or nested too deeply to parse: shown as text
        body = raw.decode("utf-8", "replace")
    return ApiAnswer(status=status, headers={key.lower(): value for key, value in headers.items()}, body=body)

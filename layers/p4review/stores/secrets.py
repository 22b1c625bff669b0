"""Secrets Manager reads with a short in-memory cache: the one secret reader of the service
(the signing key, SMTP credentials and the LLM provider's key all come through it).

Not Powertools' parameter cache: that keys on the secret name only, so it cannot hold AWSCURRENT
and AWSPREVIOUS side by side, which verifying a signature across a rotation needs; this small
cache keys on (secret, version stage). Values are never logged; errors name the secret id and
AWS code only."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

from p4review.errors import ConfigError
from p4review.stores.aws_errors import translate

CURRENT = "AWSCURRENT"
PREVIOUS = "AWSPREVIOUS"


class SecretsManagerReader:
    def __init__(self, client: Any, cache_seconds: int = 300, *, monotonic: Callable[[], float] = time.monotonic):
        self._client = client
        self._cache_seconds = cache_seconds
        self._monotonic = monotonic
        self._cache: dict[tuple[str, str], tuple[float, str | None]] = {}
        self._lock = threading.Lock()

    def _get(self, secret_id: str, stage: str) -> str | None:
        key = (secret_id, stage)
        with self._lock:
            cached = self._cache.get(key)
            if cached and cached[0] > self._monotonic():
                return cached[1]
        try:
            # VersionStage is always explicit: without it moto (and caches) may serve a stale version.
            value: str | None = self._client.get_secret_value(SecretId=secret_id, VersionStage=stage)["SecretString"]
        except Exception as exc:
            code = getattr(exc, "response", {}).get("Error", {}).get("Code")
            if stage != CURRENT and code in {"ResourceNotFoundException", "InvalidRequestException"}:
                value = None  # no previous version yet: nothing to accept
            else:
                translate(exc, f"read secret {secret_id}")
        with self._lock:
            self._cache[key] = (self._monotonic() + self._cache_seconds, value)
        return value

    def invalidate(self, secret_id: str) -> None:
        with self._lock:
            for key in [key for key in self._cache if key[0] == secret_id]:
                del self._cache[key]

    def get_current(self, secret_id: str, *, force_refresh: bool = False) -> str | None:
        """The AWSCURRENT value; `force_refresh` re-reads it (after the key was refused: rotated?)."""
        if force_refresh:
            with self._lock:
                self._cache.pop((secret_id, CURRENT), None)
        return self._get(secret_id, CURRENT)

    def get_versions(self, secret_id: str) -> list[str]:
        values = [self._get(secret_id, CURRENT), self._get(secret_id, PREVIOUS)]
        return [value for value in values if value]

    def get_json(self, secret_id: str) -> dict[str, Any]:
        value = self._get(secret_id, CURRENT)
        try:
            document = json.loads(value or "")
        except json.JSONDecodeError:
            raise ConfigError(f"secret {secret_id} is not a JSON object") from None
        if not isinstance(document, dict):
            raise ConfigError(f"secret {secret_id} is not a JSON object")
        return document

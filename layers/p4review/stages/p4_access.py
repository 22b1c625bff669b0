"""Builds the ChangeFetcher from configuration and the p4 secret (shared by fetch and notify)."""

from __future__ import annotations

from p4review.adapters.p4 import ChangeFetcher, P4Runner
from p4review.config import Settings
from p4review.dal.ports import SecretReader

# Only these keys of the p4 secret reach the child's environment (never its argv).
_P4_ENV_KEYS = ("P4PORT", "P4USER", "P4TICKET", "P4PASSWD", "P4CLIENT", "P4CHARSET", "P4TRUST")


def build_change_fetcher(settings: Settings, secrets: SecretReader) -> ChangeFetcher:
    credentials = secrets.get_json(settings.require("p4_secret_id")) if settings.p4_secret_id else {}
    env = {key: str(credentials[key]) for key in _P4_ENV_KEYS if credentials.get(key)}
    runner = P4Runner(settings.require("p4_executable"), timeout_seconds=settings.p4_timeout_seconds, env=env)
    return ChangeFetcher(runner)

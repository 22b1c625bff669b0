"""The LLM provider's API key, read from Secrets Manager and cached by Powertools.

The secret holds `{"api_key": "..."}` (a plain string is accepted as the key itself).
`api_key(force_refresh)` is an `adapters.llm.base.KeySource`: providers call it with True after
a 401/403, when the key may have been rotated. Values are never logged; errors name the secret
id and the AWS code only."""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools.utilities.parameters import SecretsProvider
from aws_lambda_powertools.utilities.parameters.exceptions import GetParameterError

from p4review.dal.aws_errors import translate
from p4review.dal.secrets import CURRENT
from p4review.errors import ConfigError


class LlmCredentials:
    def __init__(self, secrets_client: Any, secret_id: str, cache_seconds: int):
        self._provider = SecretsProvider(boto3_client=secrets_client)
        self._secret_id = secret_id
        self._cache_seconds = cache_seconds

    def api_key(self, force_refresh: bool = False) -> str:
        try:
            # VersionStage explicit: without it moto (and caches) may serve a stale version.
            value = self._provider.get(self._secret_id, max_age=self._cache_seconds, force_fetch=force_refresh,
                                       VersionStage=CURRENT)
        except GetParameterError as exc:
            # Powertools wraps the botocore error (keeping only its text): translate the original.
            translate(exc.__context__ if isinstance(exc.__context__, Exception) else exc,
                      f"read secret {self._secret_id}")
        return self._key_from(value)

    def _key_from(self, value: str | bytes | dict | None) -> str:
        text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
        if not isinstance(text, str):
            raise ConfigError(f"secret {self._secret_id} holds no API key")
        try:
            document = json.loads(text)
        except json.JSONDecodeError:
            document = None  # not JSON: the string is the key itself
        if isinstance(document, dict):
            key = document.get("api_key")
            if not isinstance(key, str) or not key.strip():
                raise ConfigError(f"secret {self._secret_id} has no api_key")
            return key.strip()
        if isinstance(document, str):  # a JSON string literal
            text = document
        if not text.strip():
            raise ConfigError(f"secret {self._secret_id} holds no API key")
        return text.strip()

"""The LLM provider's API key, read through the service's one secret reader (stores/secrets.py).

The secret holds `{"api_key": "..."}` (a plain string is accepted as the key itself).
`api_key(force_refresh)` is an `adapters.llm.base.KeySource`: providers call it with True after
a 401/403, when the key may have been rotated. Values are never logged; errors name the secret
id and the AWS code only."""

from __future__ import annotations

import json

from p4review.errors import ConfigError
from p4review.stores.secrets import SecretsManagerReader


class LlmCredentials:
    def __init__(self, reader: SecretsManagerReader, secret_id: str):
        self._reader = reader
        self._secret_id = secret_id

    def api_key(self, force_refresh: bool = False) -> str:
        return self._key_from(self._reader.get_current(self._secret_id, force_refresh=force_refresh))

    def _key_from(self, text: str | None) -> str:
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

"""Secrets Manager version operations: what the rotation function and the credential-age check
need besides reading a value (stores/secrets.py is the service's one reader of current values).

Values cross this module only into and out of Secrets Manager; errors name the secret id and
the AWS code, never a value."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from p4review.errors import ConfigError
from p4review.stores.aws_errors import translate


class SecretVersions:
    def __init__(self, client: Any):
        self._client = client

    def labels(self, secret_id: str) -> dict[str, list[str]]:
        """Version id -> staging labels, for the versions that carry a label."""
        try:
            described = self._client.describe_secret(SecretId=secret_id)
        except Exception as exc:
            translate(exc, f"describe secret {secret_id}")
        return {version: list(labels) for version, labels in described.get("VersionIdsToStages", {}).items()}

    def value(self, secret_id: str, version_id: str, stage: str) -> str | None:
        """The version's value, or None while it has none (Secrets Manager registers the pending
        version's id before createSecret puts its value)."""
        try:
            answer = self._client.get_secret_value(SecretId=secret_id, VersionId=version_id, VersionStage=stage)
        except Exception as exc:
            if getattr(exc, "response", {}).get("Error", {}).get("Code") == "ResourceNotFoundException":
                return None
            translate(exc, f"read version {version_id} of secret {secret_id}")
        value: str | None = answer.get("SecretString")
        return value

    def put_pending(self, secret_id: str, version_id: str, value: str) -> None:
        """Store `value` as the version `version_id`, labelled AWSPENDING. Idempotent for the same
        token and value (Secrets Manager's own rule for ClientRequestToken)."""
        try:
            self._client.put_secret_value(
                SecretId=secret_id, ClientRequestToken=version_id, SecretString=value, VersionStages=["AWSPENDING"]
            )
        except Exception as exc:
            translate(exc, f"put the pending version of secret {secret_id}")

    def make_current(self, secret_id: str, version_id: str, *, from_version_id: str) -> None:
        """Move AWSCURRENT from `from_version_id` to `version_id`; Secrets Manager labels the old one
        AWSPREVIOUS in the same call."""
        try:
            self._client.update_secret_version_stage(
                SecretId=secret_id,
                VersionStage="AWSCURRENT",
                MoveToVersionId=version_id,
                RemoveFromVersionId=from_version_id,
            )
        except Exception as exc:
            translate(exc, f"make version {version_id} of secret {secret_id} current")

    def current_since(self, secret_id: str) -> datetime:
        """When the AWSCURRENT value was put: the creation date of the version that carries the
        label (not the secret's LastChangedDate, which moves with a description or tag change)."""
        # Without IncludeDeprecated only labelled versions are listed: one page in practice.
        request: dict[str, str] = {"SecretId": secret_id}
        while True:
            try:
                page = self._client.list_secret_version_ids(**request)
            except Exception as exc:
                translate(exc, f"list the versions of secret {secret_id}")
            for version in page.get("Versions", []):
                if "AWSCURRENT" in version.get("VersionStages", []):
                    created: datetime = version["CreatedDate"]
                    return created if created.tzinfo else created.replace(tzinfo=UTC)
            if not page.get("NextToken"):
                break
            request["NextToken"] = page["NextToken"]
        raise ConfigError(f"secret {secret_id} has no AWSCURRENT version")

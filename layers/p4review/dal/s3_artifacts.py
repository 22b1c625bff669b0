"""Review artifacts in S3, addressed by key; content never travels on a queue."""

from __future__ import annotations

import json
from typing import Any

from p4review.dal.aws_errors import translate


def change_key(job_id: str) -> str:
    return f"changes/{job_id}.json"


def result_key(job_id: str) -> str:
    return f"results/{job_id}.json"


class S3ArtifactStore:
    def __init__(self, client: Any, bucket: str):
        self._client = client
        self._bucket = bucket

    def put_json(self, key: str, document: dict[str, Any]) -> None:
        body = json.dumps(document, sort_keys=True, ensure_ascii=False).encode()
        try:
            self._client.put_object(Bucket=self._bucket, Key=key, Body=body, ContentType="application/json",
                                    ServerSideEncryption="AES256")
        except Exception as exc:  # noqa: BLE001
            translate(exc, "store artifact")

    def get_json(self, key: str) -> dict[str, Any]:
        try:
            answer = self._client.get_object(Bucket=self._bucket, Key=key)
            return json.loads(answer["Body"].read())
        except Exception as exc:  # noqa: BLE001
            translate(exc, "read artifact")

"""Review artifacts in S3, addressed by key; content never travels on a queue.

Keys carry the job's creation day (UTC): `changes/<yyyy>/<mm>/<dd>/<job_id>.json`. A retried
stage writes the same key again, and the oldest day under a prefix is found by listing a few
delimiter levels, which is how the sweeper verifies that lifecycle expiry really happens."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, BinaryIO

from p4review.clock import parse_iso
from p4review.resources import CHANGES_PREFIX, RESULTS_PREFIX
from p4review.stores.aws_errors import translate


def _dated(prefix: str, job_id: str, created_at: str) -> str:
    day = parse_iso(created_at).strftime("%Y/%m/%d")
    return f"{prefix}{day}/{job_id}.json"


def change_key(job_id: str, created_at: str) -> str:
    return _dated(CHANGES_PREFIX, job_id, created_at)


def result_key(job_id: str, created_at: str) -> str:
    return _dated(RESULTS_PREFIX, job_id, created_at)


def chunk_result_key(job_id: str, created_at: str, chunk_id: str) -> str:
    """One chunk's parsed answer, kept so a retried review resumes instead of paying again."""
    return result_key(job_id, created_at).removesuffix(".json") + f"/chunks/{chunk_id}.json"


# A streamed artifact is buffered in memory up to this size, then on local disk (/tmp), and
# uploaded in parts of this size: memory stays bounded for a change of any size.
SPOOL_BYTES = 8 * 1024 * 1024


class S3ArtifactStore:
    def __init__(self, client: Any, bucket: str):
        self._client = client
        self._bucket = bucket

    def put_json(self, key: str, document: dict[str, Any]) -> None:
        body = json.dumps(document, sort_keys=True, ensure_ascii=False).encode()
        try:
            # No encryption header: the bucket's default (the environment's KMS key) applies.
            self._client.put_object(Bucket=self._bucket, Key=key, Body=body, ContentType="application/json")
        except Exception as exc:
            translate(exc, "store artifact")

    @contextmanager
    def json_writer(self, key: str) -> Iterator[BinaryIO]:
        """Write a JSON document piece by piece; it is uploaded (multipart when large) when the
        block exits without an error, and nothing is uploaded otherwise."""
        from boto3.s3.transfer import TransferConfig

        with tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES) as spool:
            yield spool  # type: ignore[misc]
            spool.seek(0)
            config = TransferConfig(multipart_threshold=SPOOL_BYTES, multipart_chunksize=SPOOL_BYTES, max_concurrency=2)
            try:
                # No encryption header: the bucket's default (the environment's KMS key) applies.
                self._client.upload_fileobj(
                    spool, self._bucket, key, ExtraArgs={"ContentType": "application/json"}, Config=config
                )
            except Exception as exc:
                translate(exc, "store artifact")

    def get_json(self, key: str) -> dict[str, Any]:
        try:
            answer = self._client.get_object(Bucket=self._bucket, Key=key)
            document: dict[str, Any] = json.loads(answer["Body"].read())
            return document
        except Exception as exc:
            translate(exc, "read artifact")


class S3ArtifactRetention:
    """Finds the oldest artifact day in each bucket by listing day prefixes (ListBucket only:
    no object is read)."""

    def __init__(self, client: Any, buckets: dict[str, tuple[str, int]]):
        self._client = client
        self._buckets = buckets  # bucket key -> (bucket name, expiration days)

    def buckets(self) -> dict[str, int]:
        """Bucket key -> its expiration in days."""
        return {key: days for key, (_, days) in self._buckets.items()}

    def oldest_day(self, bucket_key: str, prefix: str) -> str | None:
        """The oldest `yyyy/mm/dd` under `prefix` that still holds objects, or None."""
        path = prefix
        for _level in range(3):  # yyyy/, mm/, dd/
            children = self._child_prefixes(bucket_key, path)
            if not children:
                return None
            path = min(children)
        return path[len(prefix) :].rstrip("/")

    def _child_prefixes(self, bucket_key: str, prefix: str) -> list[str]:
        bucket, _ = self._buckets[bucket_key]
        found: list[str] = []
        kwargs: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix, "Delimiter": "/"}
        while True:
            try:
                page = self._client.list_objects_v2(**kwargs)
            except Exception as exc:
                translate(exc, "list artifact prefixes")
            found.extend(entry["Prefix"] for entry in page.get("CommonPrefixes", []))
            if not page.get("IsTruncated"):
                return found
            kwargs["ContinuationToken"] = page["NextContinuationToken"]

"""S3 artifacts against the moto server: dated keys, and streamed documents larger than one
upload part (multipart) read back whole."""

from __future__ import annotations

import pytest

from p4review.stores.s3_artifacts import SPOOL_BYTES, S3ArtifactStore, change_key, result_key


@pytest.fixture
def store(aws_reset, aws_client):
    s3 = aws_client("s3")
    s3.create_bucket(Bucket="artifacts")
    return S3ArtifactStore(s3, "artifacts"), s3


def test_keys_carry_the_jobs_creation_day():
    assert change_key("job-1", "2026-11-22T23:59:59.999Z") == "changes/2026/11/22/job-1.json"
    assert result_key("job-1", "2026-01-02T00:00:00.000Z") == "results/2026/01/02/job-1.json"


def test_a_streamed_document_larger_than_a_part_is_uploaded_in_parts_and_reads_back(store):
    artifacts, s3 = store
    chunk = "x" * 1000
    count = (SPOOL_BYTES // 1000) + 2000  # beyond one part: a multipart upload
    with artifacts.json_writer("changes/big.json") as out:
        out.write(b'{"lines":[')
        for index in range(count):
            out.write((b"," if index else b"") + f'"{chunk}"'.encode())
        out.write(b"]}")
    stored = s3.get_object(Bucket="artifacts", Key="changes/big.json")
    assert len(stored["Body"].read()) > SPOOL_BYTES
    assert stored["ETag"].strip('"').endswith("-2")  # a multipart ETag: "<md5>-<parts>"
    assert len(artifacts.get_json("changes/big.json")["lines"]) == count


def test_nothing_is_uploaded_when_the_writer_fails(store):
    artifacts, s3 = store
    with pytest.raises(RuntimeError):
        with artifacts.json_writer("changes/half.json") as out:
            out.write(b'{"lines":[')
            raise RuntimeError("the fetch failed half-way")
    assert "Contents" not in s3.list_objects_v2(Bucket="artifacts")

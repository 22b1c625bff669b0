"""The redaction boundary on the stage runtime against moto: fetch stores the raw snapshot and
the redacted one apart; review's pre-submit guard dead-letters a job whose redacted artifact
still holds a secret, and nothing about the secret reaches the DLQ or the job."""

from __future__ import annotations

import json

import pytest

from p4review.models.job import JobStatus, StageName
from p4review.models.messages import StageMessage
from p4review.pipeline.stage_runner import run_stage
from p4review.review.settings import ReviewSettings
from p4review.review.setup import build_review_work
from p4review.stores.factory import get_data_access
from p4review_dev.support.harness import drain, fetched_job, provisioned_service

LEAKED = "AKIAZZZZZZZZZZZZZZZZ"


def _fetched_job(changelist_id: int):
    return fetched_job(f"boundary-{changelist_id}", changelist_id)


@pytest.mark.spec("SEC-29")
def test_fetch_keeps_the_raw_snapshot_apart_and_records_what_it_redacted(moto_endpoint, aws_reset):
    with provisioned_service(moto_endpoint):
        job = _fetched_job(48234)  # the credential fixture
        dal = get_data_access()
        raw = json.dumps(dal.raw_artifacts.get_json(job.artifacts.change_key))
        redacted = json.dumps(dal.redacted_artifacts.get_json(job.artifacts.change_key))
        assert "AKIA" in raw and "BEGIN" in raw  # the raw bucket holds what p4 returned
        assert "AKIA" not in redacted and "[REDACTED:" in redacted
        assert job.redactions and job.redactions.get("aws_access_key", 0) >= 1


@pytest.mark.spec("SEC-44")
def test_review_dead_letters_a_job_whose_redacted_artifact_still_holds_a_secret(moto_endpoint, aws_reset):
    with provisioned_service(moto_endpoint) as service:
        job = _fetched_job(48213)
        dal = get_data_access()
        artifact = dal.redacted_artifacts.get_json(job.artifacts.change_key)
        fetched = next(diff for diff in artifact["snapshot"]["diffs"] if diff["status"] == "fetched")
        fetched["unified_diff"] += f'+KEY = "{LEAKED}"\n'  # redaction bypassed upstream
        dal.redacted_artifacts.put_json(job.artifacts.change_key, artifact)
        review = build_review_work(ReviewSettings.from_env(), dal)
        disposition = run_stage(
            StageMessage(job_id=job.job_id, stage=StageName.REVIEW),
            review,
            jobs=dal.jobs,
            queues=dal.queues,
            worker_id="reviewer",
            lease_seconds=60,
        )
        assert disposition.ack  # not retried: a non-retryable class
        stored = dal.jobs.get_job(job.job_id)
        assert stored.status == JobStatus.DEAD_LETTERED
        assert stored.stages[StageName.REVIEW].last_error_class == "POLICY_DENIED"
        assert stored.artifacts.result_key is None  # nothing was reviewed
        (envelope,) = [
            json.loads(m["Body"])
            for m in drain(service.client("sqs"), service.resources.queue_for_stage(StageName.REVIEW).dlq_url)
        ]
        assert envelope["error_class"] == "POLICY_DENIED" and "RedactionError" in envelope["last_stack"]
        assert LEAKED not in json.dumps(envelope) and LEAKED not in stored.model_dump_json()

"""fetch: read the changelist through p4 and store it as an S3 artifact."""

from __future__ import annotations

from p4review.config import Settings
from p4review.dal.ports import ArtifactStore, SecretReader
from p4review.dal.s3_artifacts import change_key
from p4review.models.change import SkipReason
from p4review.models.job import ReviewJob, StageName
from p4review.observability import logger
from p4review.runtime.heartbeat import Lease
from p4review.runtime.stage_runner import StageOutput
from p4review.stages.p4_access import build_change_fetcher


class FetchWork:
    stage = StageName.FETCH

    def __init__(self, settings: Settings, artifacts: ArtifactStore, secrets: SecretReader):
        self._settings = settings
        self._artifacts = artifacts
        self._secrets = secrets

    def run(self, job: ReviewJob, lease: Lease) -> StageOutput:
        fetcher = build_change_fetcher(self._settings, self._secrets)
        snapshot = fetcher.fetch(job.changelist_id, job.kind, job_id=job.job_id)
        key = change_key(job.job_id)
        # Same job -> same key: a retried fetch overwrites its own artifact, nothing else.
        lease.check()
        self._artifacts.put_json(key, snapshot.model_dump(mode="json"))
        denied = sum(1 for diff in snapshot.diffs if diff.skip_reason == SkipReason.OUTSIDE_ALLOW_LIST)
        logger.info("change fetched", extra={"job_id": job.job_id, "files": len(snapshot.description.files),
                                             "files_denied": denied})
        return StageOutput(updates={"artifacts": {"change_key": key, "result_key": None}})

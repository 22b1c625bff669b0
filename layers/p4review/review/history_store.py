"""The previous review version's stored result, for a versioned rerun (docs/review.md).

The changelist-version claim (CLV#cl#v) names the job that reviewed each version; its result
document is in the redacted bucket. The nearest earlier version with a stored result within a
few versions is used (a version whose job failed leaves a gap); nothing is found when the
previous result has expired, is still being reviewed, or cannot be read, and the version is
then reviewed from scratch: a missing history costs tokens, never a review."""

from __future__ import annotations

from pydantic import ValidationError as ModelValidationError

from p4review.errors import NotFoundError
from p4review.models.job import ReviewJob
from p4review.models.review_result import StoredReview
from p4review.observability import logger
from p4review.ports import ArtifactStore, JobRepository
from p4review.review.stage import PreviousReview

LOOK_BACK_VERSIONS = 3


class StoredReviewHistory:
    def __init__(self, jobs: JobRepository, artifacts: ArtifactStore, look_back: int = LOOK_BACK_VERSIONS):
        self._jobs = jobs
        self._artifacts = artifacts
        self._look_back = look_back

    def previous(self, job: ReviewJob) -> PreviousReview | None:
        lowest = max(1, job.review_version - self._look_back)
        for version in range(job.review_version - 1, lowest - 1, -1):
            job_id = self._jobs.job_id_for_version(job.changelist_id, version)
            earlier = self._jobs.get_job(job_id) if job_id else None
            if earlier is None or earlier.job_id == job.job_id or not earlier.artifacts.result_key:
                continue
            try:
                stored = StoredReview.model_validate(self._artifacts.get_json(earlier.artifacts.result_key))
            except NotFoundError:  # expired with the bucket's lifecycle
                continue
            except ModelValidationError:
                logger.warning(
                    "previous version's result is unreadable; reviewing from scratch",
                    extra={"job_id": job.job_id, "previous_job_id": earlier.job_id},
                )
                return None
            return PreviousReview(review_version=version, job_id=earlier.job_id, stored=stored)
        return None

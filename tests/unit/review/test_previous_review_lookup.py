"""The previous version's stored result (stages.review_history): nearest earlier version with a
result, nothing when it expired or is unreadable (the version is then reviewed from scratch)."""

from __future__ import annotations

from typing import Any

import pytest

from p4review.errors import NotFoundError
from p4review.models.job import ArtifactRefs, ChangeKind, ReviewJob
from p4review.models.review_result import ReviewResult, StoredReview
from p4review.review.history_store import StoredReviewHistory

CL = 500


def job(version: int, result_key: str | None = None) -> ReviewJob:
    return ReviewJob(
        job_id=f"job-{version}",
        idempotency_key=f"k{version}",
        request_fingerprint="f",
        changelist_id=CL,
        review_version=version,
        kind=ChangeKind.SHELVED,
        created_at="2026-11-25T00:00:00.000000Z",
        updated_at="2026-11-25T00:00:00.000000Z",
        artifacts=ArtifactRefs(change_key="c", result_key=result_key),
    )


class Jobs:
    def __init__(self, *jobs: ReviewJob):
        self.by_version = {j.review_version: j for j in jobs}

    def job_id_for_version(self, changelist_id: int, review_version: int) -> str | None:
        found = self.by_version.get(review_version)
        return found.job_id if found and changelist_id == CL else None

    def get_job(self, job_id: str) -> ReviewJob | None:
        return next((j for j in self.by_version.values() if j.job_id == job_id), None)


class Artifacts:
    def __init__(self, documents: dict[str, dict[str, Any]]):
        self.documents = documents

    def get_json(self, key: str) -> dict[str, Any]:
        if key not in self.documents:
            raise NotFoundError(key)
        return self.documents[key]


STORED = StoredReview(result=ReviewResult(schema_version="1.0", prompt_version="1.2.0")).model_dump(mode="json")


def lookup(jobs: Jobs, documents: dict[str, dict[str, Any]]) -> StoredReviewHistory:
    return StoredReviewHistory(jobs, Artifacts(documents))  # type: ignore[arg-type]


@pytest.mark.spec("RV-11")
def test_the_previous_version_with_a_result_is_found() -> None:
    history = lookup(Jobs(job(1, "r1"), job(2)), {"r1": STORED})
    found = history.previous(job(3))
    assert found is not None and (found.review_version, found.job_id) == (1, "job-1")  # v2 has no result yet


@pytest.mark.spec("RV-11")
def test_nothing_when_the_result_expired_or_is_unreadable_or_too_far_back() -> None:
    assert lookup(Jobs(job(1, "r1")), {}).previous(job(2)) is None  # expired with the lifecycle
    assert lookup(Jobs(job(1, "r1")), {"r1": {"unexpected": True}}).previous(job(2)) is None
    assert lookup(Jobs(job(1, "r1")), {"r1": STORED}).previous(job(5)) is None  # looks back 3 versions
    assert lookup(Jobs(), {}).previous(job(2)) is None

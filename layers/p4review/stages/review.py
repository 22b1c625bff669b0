"""review: produce a ReviewResult for the redacted change and store it with its diagnostics.
Reads only the redacted bucket; the reviewer gets a ReviewInput, which only the pre-submit
guard (`prepare_review_input`) can build."""

from __future__ import annotations

from collections import Counter

from p4review.dal.ports import ArtifactStore
from p4review.dal.s3_artifacts import result_key
from p4review.logic.change_redaction import prepare_review_input
from p4review.errors import ErrorClass, NonRetryableError, ValidationError
from p4review.logic.offline_reviewer import OFFLINE_PROMPT_VERSION, review_change
from p4review.logic.result_parser import parse_review_result
from p4review.logic.redaction import RedactionPolicy
from p4review.models.change import DiffStatus
from p4review.models.job import ReviewJob, ReviewSummary, StageName
from p4review.observability import logger, metrics
from p4review.runtime.heartbeat import Lease
from p4review.runtime.stage_runner import StageOutput


class ReviewWork:
    stage = StageName.REVIEW

    def __init__(self, redacted: ArtifactStore, policy: RedactionPolicy):
        self._artifacts = redacted
        self._policy = policy

    def run(self, job: ReviewJob, lease: Lease) -> StageOutput:
        if not job.artifacts.change_key:
            raise NonRetryableError("fetch completed without a change artifact", error_class=ErrorClass.INTERNAL_BUG)
        # The pre-submit guard: RedactionError (non-retryable) if anything is left to redact.
        review_input = prepare_review_input(self._artifacts.get_json(job.artifacts.change_key), self._policy)
        snapshot = review_input.snapshot
        # The offline reviewer answers as a model would; its text goes through the same parser.
        answer = review_change(review_input)
        outcome = parse_review_result(answer, snapshot.changed_files, expected_prompt_version=OFFLINE_PROMPT_VERSION)
        for diagnostic in outcome.diagnostics:
            metrics.add_metric(name=f"Parser_{diagnostic.kind}", unit="Count", value=1)
        if outcome.rejected or outcome.result is None:
            reasons = [diagnostic.reason for diagnostic in outcome.diagnostics if diagnostic.reason]
            raise ValidationError(f"review answer rejected: {', '.join(reasons) or 'unknown'}")
        result = outcome.result
        key = result_key(job.job_id, job.created_at)
        lease.check()
        self._artifacts.put_json(key, {
            "result": result.model_dump(mode="json", exclude_none=True),
            "diagnostics": [diagnostic.model_dump(mode="json", exclude_none=True) for diagnostic in outcome.diagnostics],
        })
        severities = Counter(finding.severity.value for finding in result.findings)
        reviewed = sum(1 for diff in snapshot.diffs if diff.status == DiffStatus.FETCHED)
        summary = ReviewSummary(
            findings=len(result.findings),
            by_severity=dict(sorted(severities.items())),
            files_reviewed=reviewed,
            files_skipped=len(snapshot.diffs) - reviewed,
            diagnostics=len(outcome.diagnostics),
        )
        logger.info("review stored", extra={"job_id": job.job_id, "findings": summary.findings})
        return StageOutput(updates={
            "artifacts": {"change_key": job.artifacts.change_key, "result_key": key},
            "summary": summary.model_dump(mode="json"),
        })

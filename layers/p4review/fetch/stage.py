"""fetch: read the changelist through p4, keep the raw snapshot in the raw bucket and its
redacted copy in the redacted bucket. Nothing downstream ever reads the raw bucket."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from p4review.change.depot_policy import MAX_POLICY_NOTES_ON_JOB, job_diagnostic
from p4review.change.snapshot_redaction import ChangeRedactor, stream_change_artifacts
from p4review.fetch.opt_out import opted_out
from p4review.fetch.settings import FetchSettings
from p4review.metric_names import Dimension, MetricName
from p4review.models.change import FileDiff, SkipReason
from p4review.models.job import ReviewJob, StageName
from p4review.observability import logger, publish_metric
from p4review.perforce.access import build_change_fetcher
from p4review.pipeline.heartbeat import Lease
from p4review.pipeline.stage_runner import StageOutput
from p4review.ports import ArtifactStore, SecretReader
from p4review.stores.s3_artifacts import change_key


class FetchWork:
    stage = StageName.FETCH

    def __init__(self, settings: FetchSettings, raw: ArtifactStore, redacted: ArtifactStore, secrets: SecretReader):
        self._settings = settings
        self._raw = raw
        self._redacted = redacted
        self._secrets = secrets

    def run(self, job: ReviewJob, lease: Lease) -> StageOutput:
        fetcher = build_change_fetcher(self._settings, self._secrets, self._settings)
        policy = self._settings.redaction_policy()
        description = fetcher.describe(job.changelist_id, job.kind)
        keyword = opted_out(description.description)
        if keyword:
            # The owner opted out: nothing of the change's content is fetched, stored or reviewed.
            logger.info("change opted out of review", extra={"job_id": job.job_id, "keyword": keyword})
            return StageOutput(updates={"opted_out": keyword})
        # Same job -> same keys: a retried fetch overwrites its own artifacts, nothing else.
        key = change_key(job.job_id, job.created_at)
        skipped: Counter[str] = Counter()
        depot_policy = fetcher.read_policy(description)

        def diffs() -> Iterator[FileDiff]:
            for diff in fetcher.iter_file_diffs(description, job_id=job.job_id, policy=depot_policy):
                if diff.skip_reason:
                    skipped[diff.skip_reason] += 1
                yield diff

        # Both documents stream, one file at a time, and are uploaded when the block ends; an
        # error before that (RedactionError is non-retryable: dead-letter) uploads nothing.
        redactor = ChangeRedactor(policy)
        with self._raw.json_writer(key) as raw, self._redacted.json_writer(key) as redacted:
            summary = stream_change_artifacts(
                description,
                diffs(),
                raw=raw,
                redacted=redacted,
                policy=policy,
                depot_policy=depot_policy,
                redactor=redactor,
            )
            lease.check()
        # The job record shows policy paths as the redacted snapshot does (a secret in a path is masked).
        shown_policy = redactor.final_policy() or depot_policy
        counts = summary["counts"]
        for name, count in counts.items():
            publish_metric(MetricName.REDACTIONS, count, {Dimension.KIND: name})
        logger.info(
            "change fetched",
            extra={
                "job_id": job.job_id,
                "files": len(description.files),
                "files_denied": skipped[SkipReason.OUTSIDE_ALLOW_LIST],
                "files_ignored_by_policy": skipped[SkipReason.IGNORED_BY_POLICY],
                "files_generated": skipped[SkipReason.GENERATED],
                "policies": len(depot_policy.policies),
                "policy_diagnostics": len(depot_policy.diagnostics),
                "policy_files_modified": len(depot_policy.modified),
                "redacted": counts,
            },
        )
        return StageOutput(
            updates={
                "artifacts": {"change_key": key, "result_key": None},
                "redactions": counts,
                # On the job too (the API shows them): a change to the review policy, and any policy
                # file that was not used. Paths and reasons only, never a file's content; bounded,
                # as a change may touch any number of directories (the artifact keeps them all).
                "policy_changes": shown_policy.modified[:MAX_POLICY_NOTES_ON_JOB],
                "policy_diagnostics": [job_diagnostic(d) for d in shown_policy.diagnostics[:MAX_POLICY_NOTES_ON_JOB]],
            }
        )

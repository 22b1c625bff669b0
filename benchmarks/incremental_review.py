"""Prompt tokens of a re-shelved change's review: shelf v2 (files unchanged since v1 keep v1's
answers; only the changed files are sent) against shelf v1 (everything sent).

The change is the fixture's re-shelved Python change (48284: seven added files, v2 changes only
`transfer.py`). Both versions are fetched through the fake p4 serving that shelf version, redacted,
and reviewed by the review stage itself (ReviewWork, offline reviewer, no analyzers: they cost
no tokens), v2 with v1's stored result as its history. Tokens are the offline reviewer's estimate
of each request (system prompt + user message, characters / 3.5), the same estimator for both.

Run alone: `python -m benchmarks.incremental_review`."""

from __future__ import annotations

import contextlib
import io
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

RESHELVED_CHANGE = 48284
GOAL_RATIO = 0.3


@dataclass(frozen=True)
class VersionReview:
    version: int
    input_tokens: int
    requests: int
    files: int
    files_reused: int
    findings: int
    new: int | None
    still_open: int | None
    resolved: int | None


class _History:
    """The previous version's stored result, from this run (the service reads it from S3)."""

    def __init__(self) -> None:
        self.by_version: dict[int, object] = {}

    def previous(self, job):
        return self.by_version.get(job.review_version - 1)


def review_shelf_versions(
    change: int = RESHELVED_CHANGE, versions: tuple[int, ...] = (1, 2), *, with_analyzers: bool = False
) -> list[VersionReview]:
    """`with_analyzers`: run them beside the offline reviewer, as the service does (the rules they
    carry are not the offline reviewer's: docs/review.md "Rules the analyzers carry"); off, the
    figures are the reviewer's alone (the benchmark measures what reaches the model)."""
    from p4review.change.analyzer_files import reads_content
    from p4review.change.depot_paths import DEFAULT_ALLOW_LIST, DepotAllowList
    from p4review.change.snapshot_redaction import redact_change
    from p4review.cli.review_diff import MemoryArtifacts, NoLease
    from p4review.models.job import ChangeKind, ReviewJob, job_id_for
    from p4review.models.review_result import StoredReview
    from p4review.perforce import ChangeFetcher, P4Runner
    from p4review.review.reviewers import OfflineReviewer
    from p4review.review.settings import ReviewerSettings
    from p4review.review.setup import build_analyzers, review_config
    from p4review.review.stage import PreviousReview, ReviewWork
    from p4review_dev.stack import write_fake_p4_wrapper

    settings = ReviewerSettings()
    artifacts = MemoryArtifacts()
    history = _History()
    analyzers = build_analyzers(settings) if with_analyzers else None
    work = ReviewWork(
        artifacts, settings.redaction_policy(), OfflineReviewer(), review_config(settings), analyzers, history
    )
    measured = []
    with tempfile.TemporaryDirectory() as scratch:
        for version in versions:
            p4 = write_fake_p4_wrapper(Path(scratch) / f"v{version}" / "p4", {"P4FAKE_SHELF_VERSION": str(version)})
            fetcher = ChangeFetcher(
                P4Runner(str(p4), timeout_seconds=30),
                allow_list=DepotAllowList(DEFAULT_ALLOW_LIST),
                keep_content=lambda path: with_analyzers and reads_content(path, settings.enabled_analyzers()),
            )
            snapshot = fetcher.fetch(change, ChangeKind.SHELVED, parallelism=4)
            change_key = f"changes/{change}/v{version}.json"
            artifacts.put_json(change_key, redact_change(snapshot, settings.redaction_policy()).artifact())
            job = ReviewJob(
                job_id=job_id_for(f"bench-{change}-v{version}"),
                idempotency_key=f"bench-{change}-v{version}",
                request_fingerprint="bench",
                changelist_id=change,
                review_version=version,
                kind=ChangeKind.SHELVED,
                created_at=f"2024-05-2{version}T10:00:00.000000Z",
                updated_at=f"2024-05-2{version}T10:00:00.000000Z",
                artifacts={"change_key": change_key},
            )
            output = work.run(job, NoLease())  # type: ignore[arg-type]
            stored = StoredReview.model_validate(artifacts.get_json(output.updates["artifacts"]["result_key"]))
            history.by_version[version] = PreviousReview(review_version=version, job_id=job.job_id, stored=stored)
            usage, past = stored.usage, stored.history
            assert usage is not None and stored.coverage is not None
            measured.append(
                VersionReview(
                    version=version,
                    input_tokens=usage.input_tokens,
                    requests=usage.chunks,
                    files=len(stored.coverage.files_reviewed),
                    files_reused=len(past.files_reused) if past else 0,
                    findings=len(stored.result.findings),
                    new=len(past.new) if past else None,
                    still_open=len(past.still_open) if past else None,
                    resolved=len(past.resolved) if past else None,
                )
            )
    return measured


def bench_incremental_review() -> None:
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"]
    with contextlib.redirect_stdout(io.StringIO()):  # the stage's metrics are JSON on stdout
        first, second = review_shelf_versions()
    for review in (first, second):
        history = (
            f", {review.new} new / {review.still_open} still open / {review.resolved} resolved"
            if review.new is not None
            else ""
        )
        print(
            f"  CL {RESHELVED_CHANGE} shelf v{review.version}: {review.input_tokens:>6} prompt tokens in "
            f"{review.requests} request(s), {review.files} files reviewed, {review.files_reused} carried over, "
            f"{review.findings} findings{history}"
        )
    ratio = second.input_tokens / first.input_tokens
    verdict = "meets" if ratio <= GOAL_RATIO else "misses"
    print(
        f"incremental re-review: shelf v2 / v1 prompt tokens x{ratio:.3f} (goal <= x{GOAL_RATIO}: {verdict} it; "
        "offline reviewer's estimate, no analyzers)"
    )


if __name__ == "__main__":
    bench_incremental_review()

"""Prompt tokens of a re-shelved change's review: shelf v2 (files unchanged since v1 keep v1's
answers; only the changed files are sent) against shelf v1 (everything sent). Then the analyzers'
time on the same two versions, run beside the offline reviewer as the service runs them: v2 runs
each analyzer only on the files whose content changed (the others' answers are v1's), v1 on every
file; the time is the analyzers' own (`AnalyzerRunner.run`), measured in the same run.

The change is the fixture's re-shelved Python change (48284: seven added files, v2 changes only
`transfer.py`). Both versions are fetched through the fake p4 serving that shelf version, redacted,
and reviewed by the review stage itself (ReviewWork, offline reviewer, no analyzers: they cost
no tokens), v2 with v1's stored result as its history. Tokens are the offline reviewer's estimate
of each request (system prompt + user message, characters / 3.5), the same estimator for both.

Run alone: `python -m benchmarks.incremental_review`."""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from statistics import median

RESHELVED_CHANGE = 48284
GOAL_RATIO = 0.3
ANALYZER_ROUNDS = 3  # both versions with analyzers, this many times: the median time of each


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
    findings_json: str = "[]"  # the findings shown, to compare two runs of one version
    analyzer_seconds: float = 0.0
    analyzer_files: int = 0  # files given to at least one analyzer this version
    analyzer_answers_run: int = 0  # (analyzer, file) answers this version ran
    analyzer_answers_reused: int = 0  # (analyzer, file) answers reused from the previous version


class _TimedAnalyzers:
    """The service's analyzers, timed, with the files each run gave to them."""

    def __init__(self, analyzers):
        self._analyzers = analyzers
        self.seconds = 0.0
        self.files: set[str] = set()
        self.run_answers = self.reused_answers = 0

    def run(self, contents: Mapping[str, str], known: Iterable = ()):
        known = list(known)
        started = time.perf_counter()
        analysis = self._analyzers.run(contents, known)
        self.seconds = time.perf_counter() - started
        reused = {(a.analyzer, a.file, a.key) for a in known}
        self.files = {a.file for a in analysis.answers if (a.analyzer, a.file, a.key) not in reused}
        self.run_answers, self.reused_answers = analysis.analyzed, analysis.reused
        return analysis


class _History:
    """The previous version's stored result, from this run (the service reads it from S3)."""

    def __init__(self) -> None:
        self.by_version: dict[int, object] = {}

    def previous(self, job):
        return self.by_version.get(job.review_version - 1)


def review_shelf_versions(
    change: int = RESHELVED_CHANGE,
    versions: tuple[int, ...] = (1, 2),
    *,
    with_analyzers: bool = False,
    reuse_analyzer_answers: bool = True,
) -> list[VersionReview]:
    """`with_analyzers`: run them beside the offline reviewer, as the service does (the rules they
    carry are not the offline reviewer's: docs/review.md "Rules the analyzers carry"); off, the
    figures are the reviewer's alone (the benchmark measures what reaches the model).
    `reuse_analyzer_answers` off: each version's history holds no analyzer answers, so the
    analyzers run on every file (the model's answers are still reused)."""
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
    built = build_analyzers(settings) if with_analyzers else None
    if built is not None:  # v1 should not pay alone for what a warm function has done before
        built.run({"//warm/up.py": "x = 1\n"})
    analyzers = _TimedAnalyzers(built) if built is not None else None
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
            snapshot = fetcher.fetch(change, ChangeKind.SHELVED)
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
            kept = stored if reuse_analyzer_answers else stored.model_copy(update={"analyzer_answers": []})
            history.by_version[version] = PreviousReview(review_version=version, job_id=job.job_id, stored=kept)
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
                    findings_json=json.dumps([f.model_dump(mode="json") for f in stored.result.findings]),
                    analyzer_seconds=analyzers.seconds if analyzers else 0.0,
                    analyzer_files=len(analyzers.files) if analyzers else 0,
                    analyzer_answers_run=analyzers.run_answers if analyzers else 0,
                    analyzer_answers_reused=analyzers.reused_answers if analyzers else 0,
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
    seconds: dict[int, list[float]] = {1: [], 2: []}
    for _ in range(ANALYZER_ROUNDS):
        with contextlib.redirect_stdout(io.StringIO()):
            first, second = review_shelf_versions(with_analyzers=True)
        for review in (first, second):
            seconds[review.version].append(review.analyzer_seconds)
    for review in (first, second):
        print(
            f"  CL {RESHELVED_CHANGE} shelf v{review.version}: analyzers {median(seconds[review.version]):.2f}s "
            f"(median of {ANALYZER_ROUNDS}) on {review.analyzer_files} file(s): {review.analyzer_answers_run} "
            f"(analyzer, file) answers run, {review.analyzer_answers_reused} reused"
        )
    print(
        f"incremental re-review: analyzers v2/v1 = x{median(seconds[2]) / median(seconds[1]):.2f} wall time, "
        f"x{second.analyzer_answers_run / first.analyzer_answers_run:.2f} (analyzer, file) runs "
        f"(files analyzed v1 {first.analyzer_files}, v2 {second.analyzer_files}; ruff and bandit: on seven small "
        "files their start-up is most of the time)"
    )


if __name__ == "__main__":
    bench_incremental_review()

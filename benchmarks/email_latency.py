"""How long a developer waits for the email (issue 29): the fixture changes through the real
Perforce trigger on the local stack, from the trigger's exit to the email file in the mailbox.

The trigger (`trigger/p4review-trigger.py`, run as p4d runs it, `SEND_MODE=background`) spools
the event, starts a detached sender and exits; the sender takes a review version from p4 and
POSTs the signed request; ingest writes the job and enqueues fetch; each stage claims the job,
does its work, completes it and enqueues the next; notify sends the email. A job's time is cut
at points the system records anyway: the trigger log's `version_assigned`, the job's
`created_at`, each stage's `started_at` and `completed_at` (its claim and its completion), each
stage message's `SentTimestamp`, the local poller's receive (`SqsPoller.deliveries()`) and the
email file's mtime. The pieces, in order (they add up to the job's time exactly):

* sender: trigger exit -> version assigned (the detached sender's start, its turn at the spool,
  the p4 version key);
* ingest: -> job written (the shelf's digest key, the signed POST, ingest's checks);
* before each stage:
  - hand-off: the previous stage completed (fetch: the job's timestamp) -> its message is in the
    queue (fetch: ingest's conditional transaction too);
  - worker wait: in the queue -> a worker free to receive it (all W busy: the same in AWS);
  - poll wake-up: that worker's receive in flight -> it returns the message: what the local
    poller adds (AWS's long poll returns as soon as a message arrives);
  - start: received -> claimed (the invocation and the claim; with batches, also the earlier
    messages of the batch, which are worked first);
* each stage's work: claimed -> completed (notify: -> its first email).

Runs, each on a fresh local stack (offline reviewer, fake SMTP, fake Swarm): the fixture's trigger
runs one at a time, each after the previous job finished (latency, nothing queued, the default
W = 2); then the same runs fired back to back (throughput) at W = 2 with the batch sizes before
issue 29 (fetch and notify 5: the baseline), and at W = 2 and W = 8 with today's (1). W is every
stage poller's concurrent invocations (`LocalStack(worker_concurrency=W)`; in AWS the event
source's maximum concurrency). Run alone: `python -m benchmarks email-latency`."""

from __future__ import annotations

import email.parser
import email.policy
import json
import re
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from statistics import median, quantiles
from typing import TYPE_CHECKING, Any

from benchmarks.sizes import sized

if TYPE_CHECKING:
    from p4review_dev.demo import TriggerRun

STAGES = ("fetch", "review", "notify")
# The burst runs: (label, W, batch sizes by stage; empty: the queues' own).
BASELINE_BATCH_SIZES = {"fetch": 5, "notify": 5}  # QueueSpec's default before issue 29
BURSTS: tuple[tuple[str, int, dict[str, int]], ...] = (
    ("baseline: batches of 5", 2, BASELINE_BATCH_SIZES),
    ("one job per invocation", 2, {}),
    ("one job per invocation", 8, {}),
)
JOB_TIMEOUT_SECONDS = 120.0
FILE_POLL_SECONDS = 0.01

SENDER, INGEST = "sender", "ingest"
HAND_OFF, WORKER_WAIT, POLL_WAKE_UP, START, WORK = "hand-off", "worker wait", "poll wake-up", "start", "work"
# Between stages: what the local event source adds, and the pipeline's own hand-offs and claims.
EVENT_SOURCE_PARTS = (WORKER_WAIT, POLL_WAKE_UP)
PIPELINE_PARTS = (HAND_OFF, START)

_VERSION_ASSIGNED = re.compile(r"^(\S+) \w+ +\[\d+\] version_assigned change=(\d+) .*?version=(\d+)")


@dataclass(frozen=True)
class StageTimes:
    """One stage of one job, epoch seconds. `receive_started` / `received`: the poller's
    ReceiveMessage that delivered the message that claimed the stage."""

    sent: float
    receive_started: float
    received: float
    started: float
    completed: float


@dataclass(frozen=True)
class JobTimeline:
    label: str
    trigger_exit: float
    version_assigned: float
    created: float
    stages: dict[str, StageTimes]
    email: float

    @property
    def total(self) -> float:
        return self.email - self.trigger_exit


def segments(job: JobTimeline) -> dict[str, float]:
    """The job's time cut into named pieces (seconds) that add up to `job.total`."""
    pieces = {SENDER: job.version_assigned - job.trigger_exit, INGEST: job.created - job.version_assigned}
    previous_done = job.created
    for stage in STAGES:
        times = job.stages[stage]
        picked_up = max(times.receive_started, times.sent)
        pieces[f"{stage} {HAND_OFF}"] = times.sent - previous_done
        pieces[f"{stage} {WORKER_WAIT}"] = picked_up - times.sent
        pieces[f"{stage} {POLL_WAKE_UP}"] = times.received - picked_up
        pieces[f"{stage} {START}"] = times.started - times.received
        pieces[f"{stage} {WORK}"] = (job.email if stage == "notify" else times.completed) - times.started
        previous_done = times.completed
    return pieces


def percentile(values: Sequence[float], q: int) -> float:
    """The q-th percentile, interpolated between the closest ranks (one value: itself)."""
    if len(values) == 1:
        return values[0]
    return quantiles(values, n=100, method="inclusive")[q - 1]


@dataclass(frozen=True)
class Summary:
    jobs: int
    p50: float
    p95: float
    # Per piece: (median, p95) over the jobs, seconds.
    pieces: dict[str, tuple[float, float]]
    # Per job, summed over the three hops: (median, p95) seconds.
    event_source: tuple[float, float]
    pipeline: tuple[float, float]


def summarize(jobs: Sequence[JobTimeline]) -> Summary:
    cut = [segments(job) for job in jobs]

    def spread(values: list[float]) -> tuple[float, float]:
        return median(values), percentile(values, 95)

    def hops(parts: tuple[str, ...]) -> tuple[float, float]:
        return spread([sum(piece for name, piece in job.items() if name.endswith(parts)) for job in cut])

    totals = spread([job.total for job in jobs])
    return Summary(
        jobs=len(jobs),
        p50=totals[0],
        p95=totals[1],
        pieces={name: spread([job[name] for job in cut]) for name in cut[0]},
        event_source=hops(EVENT_SOURCE_PARTS),
        pipeline=hops(PIPELINE_PARTS),
    )


@dataclass(frozen=True)
class BurstResult:
    label: str
    workers: int
    jobs: list[JobTimeline] = field(default_factory=list)

    @property
    def makespan(self) -> float:
        """First trigger exit -> last job's first email."""
        return max(job.email for job in self.jobs) - min(job.trigger_exit for job in self.jobs)

    @property
    def per_minute(self) -> float:
        return len(self.jobs) / self.makespan * 60


def _s(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if abs(seconds) < 1 else f"{seconds:.2f} s"


def _spread(pair: tuple[float, float]) -> str:
    return f"{_s(pair[0])} ({_s(pair[1])})"


def format_report(alone: Sequence[JobTimeline], bursts: Sequence[BurstResult]) -> list[str]:
    """The lines the benchmark prints: latency and its pieces, then each burst's throughput."""
    summary = summarize(alone)
    own_work = [SENDER, INGEST, *(f"{stage} {WORK}" for stage in STAGES)]
    lines = [
        f"trigger exit -> email file, the fixture's {summary.jobs} trigger runs one at a time (W=2): "
        f"p50 {_s(summary.p50)}, p95 {_s(summary.p95)}",
        "  own work per job, median (p95): "
        + "; ".join(f"{name} {_spread(summary.pieces[name])}" for name in own_work),
        "  between stages, median (p95): "
        + "; ".join(f"{name} {_spread(pair)}" for name, pair in summary.pieces.items() if name not in own_work),
        f"  per job, 3 hops: local event source (worker wait + poll wake-up) {_spread(summary.event_source)}, "
        f"x{summary.event_source[0] / summary.p50:.3f} the median job; "
        f"the pipeline's hand-offs and claims {_spread(summary.pipeline)}",
    ]
    for burst in bursts:
        loaded = summarize(burst.jobs)
        lines.append(
            f"burst of the {len(burst.jobs)} runs, W={burst.workers}, {burst.label}: {burst.per_minute:.1f} changes/min "
            f"(last email {burst.makespan:.1f} s after the first exit); latency p50 {_s(loaded.p50)}, p95 "
            f"{_s(loaded.p95)}; per job: sender {_spread(loaded.pieces[SENDER])}, local event source "
            f"{_spread(loaded.event_source)}, hand-offs and claims (incl. waiting behind a batch) "
            f"{_spread(loaded.pipeline)}"
        )
    by_label = {(burst.label, burst.workers): burst for burst in bursts}
    baseline, today, wide = (
        by_label.get((BURSTS[0][0], 2)),
        by_label.get((BURSTS[1][0], 2)),
        by_label.get((BURSTS[2][0], 8)),
    )
    if baseline and today:
        before, after = summarize(baseline.jobs), summarize(today.jobs)
        lines.append(
            f"  W=2 burst, one job per invocation / batches of 5: latency p50 x{after.p50 / before.p50:.2f}, "
            f"p95 x{after.p95 / before.p95:.2f}; throughput x{today.per_minute / baseline.per_minute:.2f}"
        )
    if today and wide:
        lines.append(f"  throughput W=8 / W=2: x{wide.per_minute / today.per_minute:.2f}")
    return lines


# ---- measuring ----------------------------------------------------------------------------


def _wait(what: str, ready: Callable[[], Any], timeout: float = JOB_TIMEOUT_SECONDS) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = ready()
        if value:
            return value
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(FILE_POLL_SECONDS)


def email_times(mailbox: Path) -> dict[str, float]:
    """Each job's first email: the mtime of the first .eml naming it (X-P4Review-Job)."""
    parser = email.parser.BytesHeaderParser(policy=email.policy.compat32)
    first: dict[str, float] = {}
    for path in mailbox.glob("*.eml"):
        job_id = str(parser.parsebytes(path.read_bytes()).get("X-P4Review-Job", ""))
        written = path.stat().st_mtime
        first[job_id] = min(written, first.get(job_id, written))
    return first


def versions_assigned(trigger_log: Path) -> dict[tuple[int, int], float]:
    """(change, review version) -> when the trigger's sender assigned it (epoch seconds)."""
    from p4review.clock import parse_iso

    assigned: dict[tuple[int, int], float] = {}
    for line in trigger_log.read_text(encoding="utf-8").splitlines():
        match = _VERSION_ASSIGNED.match(line)
        if match:
            key = (int(match[2]), int(match[3]))
            assigned.setdefault(key, parse_iso(match[1]).timestamp())
    return assigned


def stage_times(deliveries: Sequence[Any], job_id: str, started: float, completed: float) -> StageTimes:
    """The stage's times, with the delivery of the message that claimed it: the last one received
    before the claim (a retry or a duplicate hand-off may have delivered others)."""
    best: tuple[Any, Any] | None = None
    for delivery in deliveries:
        if delivery.received > started or (best is not None and delivery.received <= best[0].received):
            continue
        for message in delivery.messages:
            if json.loads(message.body).get("job_id") == job_id:
                best = (delivery, message)
    if best is None:
        raise RuntimeError(f"no delivery of job {job_id}'s message before its claim")
    delivery, message = best
    return StageTimes(message.sent_at, delivery.receive_started, delivery.received, started, completed)


class Run:
    """A fresh local stack and a Perforce trigger host in front of it."""

    def __init__(self, root: Path, workers: int | None = None, batch_sizes: dict[str, int] | None = None):
        from benchmarks.cost import clear_moto_state
        from p4review_dev.stack import LocalStack
        from p4review_dev.trigger_host import TriggerHost

        # moto's state is the process's: an earlier run's jobs would make these replays.
        clear_moto_state()
        # The sweeper stays out of the way (it would only meet jobs in progress).
        self.stack = LocalStack(
            root / "stack", sweep_interval_seconds=3600, worker_concurrency=workers, batch_sizes=batch_sizes
        )
        self.stack.start()
        assert self.stack.info is not None
        self.mailbox = Path(self.stack.info.mailbox_dir)
        self.host = TriggerHost(
            root / "trigger", api_url=self.stack.info.api_url, signing_secret=self.stack.signing_secret
        )
        self.fired = 0

    def stop(self) -> None:
        self.stack.stop()

    def fire(self, run: TriggerRun) -> float:
        """Run the trigger as p4d would; the epoch second it exited. A shelve waits for its sender
        to read the shelf (as `make demo` does): the next run may re-shelve it."""
        trigger_type, number, old, shelf_version, _ = run
        self.host.set_shelf_version(shelf_version, number, self.stack.shelves_file)
        status, _ = self.host.fire(trigger_type, number, old)
        exited = time.time()
        self.fired += 1
        if status != 0:
            raise RuntimeError(f"the trigger exited {status} for {run}")
        if shelf_version is not None:
            # The sender sends oldest first: this shelve's event is answered once every event
            # fired so far is (an earlier event's answer alone would let the next run re-shelve
            # before this sender read the shelf: its digest would then be the next version's).
            fired = self.fired
            _wait("the shelve's sender", lambda: len(self.host.events("done")) >= fired)
        return exited

    def job_ids(self, count: int) -> list[str]:
        """The jobs of the first `count` spooled events (the spool names them in firing order)."""

        def answered() -> list[dict[str, Any]] | None:
            done = self.host.events("done")
            return done[:count] if len(done) >= count else None

        events = _wait(f"{count} answered events", answered)
        unanswered = [event["outcome"] for event in events if "job_id" not in event["outcome"]]
        if unanswered:  # skipped, or a p4 error: say which instead of a KeyError
            raise RuntimeError(f"trigger events without a job: {unanswered}")
        return [event["outcome"]["job_id"] for event in events]

    def finished(self, job_ids: Sequence[str]) -> list[Any]:
        """The jobs once none is active (read every 50 ms: the stack's DynamoDB is shared)."""
        from p4review.models.job import ACTIVE_STATUSES
        from p4review.stores.factory import get_data_access

        jobs = get_data_access().jobs

        def all_done() -> list[Any] | None:
            loaded = [jobs.get_job(job_id) for job_id in job_ids]
            if all(job is not None and job.status not in ACTIVE_STATUSES for job in loaded):
                return loaded
            time.sleep(0.05)
            return None

        return _wait("the jobs to finish", all_done)

    def timelines(
        self, runs: Sequence[TriggerRun], exits: Sequence[float], job_ids: Sequence[str]
    ) -> list[JobTimeline]:
        from p4review.clock import parse_iso
        from p4review.models.job import JobStatus, StageName

        jobs = self.finished(job_ids)
        emails = email_times(self.mailbox)  # notify sends before it completes
        assigned = versions_assigned(self.host.spool / "p4review-trigger.log")
        deliveries = {stage: self.stack.pollers[StageName(stage)].deliveries() for stage in STAGES}
        timelines = []
        for run, exited, job in zip(runs, exits, jobs, strict=True):
            label = f"CL {run[1]} {run[4]}"
            if job.status != JobStatus.SUCCEEDED or job.job_id not in emails:
                raise RuntimeError(
                    f"{label}: job {job.job_id} ended {job.status.value}, emailed: {job.job_id in emails}"
                )
            stages = {}
            for stage in STAGES:
                state = job.stages[StageName(stage)]
                if not (state.started_at and state.completed_at):
                    raise RuntimeError(f"{label}: {stage} has no start or completion")
                started, completed = parse_iso(state.started_at).timestamp(), parse_iso(state.completed_at).timestamp()
                stages[stage] = stage_times(deliveries[stage], job.job_id, started, completed)
            timelines.append(
                JobTimeline(
                    label,
                    exited,
                    assigned[(job.changelist_id, job.review_version)],
                    parse_iso(job.created_at).timestamp(),
                    stages,
                    emails[job.job_id],
                )
            )
        return timelines


def fixture_runs() -> tuple[list[TriggerRun], list[TriggerRun]]:
    """What p4d fires for the fixture depot, as `make demo` fires it: the runs, and the re-shelves
    made after the first version's review."""
    from p4review_dev.demo import fixture_changes, trigger_runs

    runs, reshelves = trigger_runs(fixture_changes())
    # Quick: the first 2 runs, no re-shelve (benchmarks/sizes.py).
    return runs[: sized(len(runs), 2)], sized(reshelves, [])


def measure_alone(root: Path) -> list[JobTimeline]:
    """Every fixture run one at a time, each after the previous job finished."""
    runs, reshelves = fixture_runs()
    run = Run(root)
    try:
        timelines: list[JobTimeline] = []
        for index, trigger_run in enumerate([*runs, *reshelves]):
            exited = run.fire(trigger_run)
            timelines += run.timelines([trigger_run], [exited], run.job_ids(index + 1)[index:])
        return timelines
    finally:
        run.stop()


def measure_burst(root: Path, label: str, workers: int, batch_sizes: dict[str, int]) -> BurstResult:
    """The fixture's runs fired back to back (a shelve waits for its sender, as in `make demo`)."""
    runs, _ = fixture_runs()
    run = Run(root, workers, batch_sizes)
    try:
        exits = [run.fire(trigger_run) for trigger_run in runs]
        return BurstResult(label, workers, run.timelines(runs, exits, run.job_ids(len(runs))))
    finally:
        run.stop()


def bench_email_latency() -> None:
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="email-latency-") as state:
        root = Path(state)
        alone = measure_alone(root / "alone")
        bursts = [
            measure_burst(root / f"burst-{index}", label, workers, batch_sizes)
            for index, (label, workers, batch_sizes) in enumerate(BURSTS)
        ]
    for line in format_report(alone, bursts):
        print(line)
    runs = len(alone) + sum(len(burst.jobs) for burst in bursts)
    print(f"  ({runs} trigger runs on {1 + len(bursts)} local stacks in {time.monotonic() - began:.0f} s)")


if __name__ == "__main__":
    from benchmarks.output import figures_only

    with figures_only():
        bench_email_latency()

"""`make chaos`: the pipeline under crashes and faults, on the local stack, with real processes.

The local stack (moto, SMTP mailbox, signed API, sweeper) runs in this process with no stage
pollers; every stage runs in `workers_per_stage` separate `p4review local worker` processes
(W per stage = that count). Meanwhile:

* a killer SIGKILLs a random worker every `kill_every` seconds (a crash at an arbitrary point:
  mid-claim, mid-p4, between an SMTP send and its outbox mark, mid-hand-off ...) and starts a
  replacement, as Lambda starts a new execution environment;
* every worker runs with `P4REVIEW_FAULTS` switched on (crash points exit the process; provider,
  p4 and database faults return their errors), each with its own seed;
* leases and visibility timeouts are short so crashed work comes back quickly; the sweeper
  runs every few seconds;
* the stack's fake Helix Swarm, on which notify comments every finding, fails requests
  (`swarm_error`: HTTP 500, nothing done; `swarm_lost`: carried out, the answer lost;
  `swarm_hang`: no answer) from its own seeded RNG; these `swarm_*` entries of `--faults` go to
  the fake, the rest to the workers' P4REVIEW_FAULTS. `db_write_after_provider` also fails the
  outbox mark after a posted comment.

`jobs` changelists (copies of fixture changes under new numbers) are submitted through the
signed API. At the end every job must be `succeeded` or `dead_lettered` (with an envelope in
its stage's DLQ and a reason), every succeeded job's deliveries must be in the mailbox exactly
once, and nothing may be missing. With `recipients` > 1 every change also goes to that many
minus one reviewers (P4REVIEW_REVIEWERS on `//depot/...`), so each job has that many required
deliveries. Every succeeded job's Swarm comment rows must each be on the fake Swarm exactly once
(found by the marker, the body's last line). `make chaos` runs 500 jobs x 3 recipients with 30%
transient provider failures, 30% transient Swarm failures and 5% "sent (or posted) but the outbox
write failed"; the suite's e2e test runs a smaller one. The last line is

    jobs=N succeeded=N dead_lettered=N deliveries=N awaiting_operator=N duplicate_emails=N lost=N
    swarm_comments=N swarm_duplicates=N swarm_lost=N

(one line) and the exit status is 0 only when duplicate_emails=0, lost=0, swarm_duplicates=0,
swarm_lost=0 and succeeded+dead_lettered=jobs.

Above 500 lines on purpose: one harness (workers, faults, kills, the final audit) that is run as a
script; it is not shipped.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from http import HTTPStatus
from pathlib import Path
from typing import Any

from p4review import faults
from p4review.models.job import STAGE_ORDER, JobStatus, StageName, StageStatus
from p4review.models.outbox import DeliveryStatus, OutboxRow
from p4review.notify.swarm.channel import NOTIFY_KEY, SWARM_ROW_PREFIX, VERDICT_KEY, is_swarm_row
from p4review.ops.stores import ops_stores
from p4review_dev.stack_process import die_with_parent, exit_on_sigterm

# Small, deliverable fixture changes (owner with a real address) used as templates.
TEMPLATE_CHANGES = (48213, 48220, 48270)
FIRST_CHAOS_CHANGE = 700_001
# Every fault point. The crash points are rare because each one costs a process restart; the
# killer adds crashes at arbitrary points on top.
DEFAULT_FAULTS = (
    "after_claim=0.01,after_side_effect=0.01,before_handoff=0.01,heartbeat_loss=0.02,"
    "provider_transient=0.15,provider_permanent=0.01,p4_timeout=0.05,db_write_after_provider=0.05,"
    "swarm_error=0.10,swarm_lost=0.05"
)
# `--faults` entries for the fake Swarm (its FakeSwarmServer.set_faults argument), not P4REVIEW_FAULTS.
SWARM_FAULTS = {"swarm_error": "error_rate", "swarm_lost": "lost_response_rate", "swarm_hang": "hang_rate"}
END_STATES = {JobStatus.SUCCEEDED, JobStatus.DEAD_LETTERED}


@dataclass
class ChaosConfig:
    jobs: int = 200
    workers_per_stage: int = 2
    seed: int = 20261122
    faults: str = DEFAULT_FAULTS
    # A restarted worker needs ~1-2 s of CPU to import boto3 and Powertools: on a 2-core machine a
    # kill every 3-8 s keeps the fleet mostly working while crashing each worker every ~30 s.
    kill_every: tuple[float, float] = (3.0, 8.0)
    timeout_seconds: float = 900.0
    lease_seconds: int = 10
    visibility_seconds: int = 12
    sweep_interval_seconds: float = 3.0
    stranded_seconds: int = 60
    recipients: int = 1  # the owner plus recipients - 1 reviewers on every change


@dataclass
class ChaosReport:
    jobs: int = 0
    succeeded: int = 0
    dead_lettered: int = 0
    duplicate_emails: int = 0
    lost: int = 0
    kills: int = 0
    crash_exits: int = 0
    elapsed_seconds: float = 0.0
    dead_letter_classes: Counter[str] = field(default_factory=Counter)
    deliveries: int = 0
    # Email deliveries still owed by dead-lettered jobs: what an operator's replay would send.
    awaiting_operator: int = 0
    # Comments on the fake Swarm's reviews of the chaos changes; the same marker twice; a required
    # comment row of a succeeded job whose marker is not on its review.
    swarm_comments: int = 0
    swarm_duplicates: int = 0
    swarm_lost: int = 0
    swarm_faults: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return (
            self.duplicate_emails == 0
            and self.lost == 0
            and self.swarm_duplicates == 0
            and self.swarm_lost == 0
            and self.succeeded + self.dead_lettered == self.jobs
        )

    def summary_line(self) -> str:
        return (
            f"jobs={self.jobs} succeeded={self.succeeded} dead_lettered={self.dead_lettered} "
            f"deliveries={self.deliveries} awaiting_operator={self.awaiting_operator} "
            f"duplicate_emails={self.duplicate_emails} lost={self.lost} "
            f"swarm_comments={self.swarm_comments} swarm_duplicates={self.swarm_duplicates} "
            f"swarm_lost={self.swarm_lost}"
        )


def split_faults(spec: str) -> tuple[str, dict[str, float]]:
    """`--faults` into the workers' P4REVIEW_FAULTS (the rest, `;seed=` option included) and the
    fake Swarm's rates (`swarm_*` entries, as FakeSwarmServer.set_faults arguments)."""
    points, sep, options = spec.partition(";")
    kept: list[str] = []
    swarm: dict[str, float] = {}
    for token in (part.strip() for part in points.split(",")):
        name, _, value = token.partition("=")
        if name.strip() in SWARM_FAULTS:
            rate = float(value)
            if not 0.0 <= rate <= 1.0:
                raise SystemExit(f"--faults: {name.strip()} must be within [0, 1]")
            swarm[SWARM_FAULTS[name.strip()]] = rate
        elif token:
            kept.append(token)
    if sum(swarm.values()) > 1.0:
        raise SystemExit("--faults: the swarm_* rates add up to more than 1")
    workers = ",".join(kept) + (sep + options if sep else "")
    return (workers if kept else ""), swarm


def _owed(rows: list[OutboxRow], recipients: int) -> int:
    """A dead-lettered job's email deliveries not yet made: every row neither notified nor closed (an
    operator's skip, a rejected address: a failed row that never had an attempt); a job that
    never reached notify owes one per recipient."""
    rows = [row for row in rows if not is_swarm_row(row.recipient)]
    if not rows:
        return recipients
    return sum(
        1
        for row in rows
        if row.notified_at is None
        and row.status != DeliveryStatus.SKIPPED
        and not (row.status == DeliveryStatus.FAILED and row.attempts == 0)
    )


def _say(text: str) -> None:
    print(text, flush=True)


def build_chaos_depot(target: Path, count: int) -> list[int]:
    """A fake-p4 depot: the fixture depot plus `count` copies of the template changes under new
    numbers (same files and revisions, so their content and diffs resolve)."""
    from p4review_dev.stack import repo_root

    source = repo_root() / "events" / "depot"
    shutil.rmtree(target, ignore_errors=True)
    (target / "changes").mkdir(parents=True)
    for entry in source.iterdir():
        if entry.name != "changes":
            (target / entry.name).symlink_to(entry.resolve())
    for fixture in (source / "changes").iterdir():
        (target / "changes" / fixture.name).symlink_to(fixture.resolve())
    templates = [json.loads((source / "changes" / f"{number}.json").read_text()) for number in TEMPLATE_CHANGES]
    numbers = []
    for index in range(count):
        number = FIRST_CHAOS_CHANGE + index
        change = dict(templates[index % len(templates)], change=number)
        (target / "changes" / f"{number}.json").write_text(json.dumps(change))
        numbers.append(number)
    return numbers


def _p4_wrapper(state_dir: Path, depot: Path) -> Path:
    """The fake p4 pointed at the chaos depot. The p4 runner gives its child a minimal
    environment (no P4FAKE_DEPOT from ours), so the depot is fixed in a wrapper script."""
    from p4review_dev.stack import write_fake_p4_wrapper

    (state_dir / "bin").mkdir(parents=True, exist_ok=True)
    return write_fake_p4_wrapper(state_dir / "bin" / "p4", {"P4FAKE_DEPOT": str(depot)})


class WorkerFleet:
    """`workers_per_stage` worker processes per stage; replaces any that die or are killed."""

    def __init__(self, state_dir: Path, config: ChaosConfig, extra_env: dict[str, str]):
        self._state_dir = state_dir
        self._config = config
        self._env = {**os.environ, **extra_env}
        self._log_dir = state_dir / "workers"
        self._log_dir.mkdir(exist_ok=True)
        self._lock = threading.Lock()
        self._slots: dict[tuple[StageName, int], subprocess.Popen] = {}
        self._spawned = 0
        self._preexec = die_with_parent()  # resolved once, here, not in the forked child
        self.kills = 0
        self.crash_exits = 0
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._rng = random.Random(config.seed)

    def _spawn(self, stage: StageName, slot: int) -> subprocess.Popen:
        self._spawned += 1
        worker_faults, _ = split_faults(self._config.faults)
        faults = f"{worker_faults};seed={self._config.seed + self._spawned}" if worker_faults else ""
        # The child keeps its own copy of the log descriptor; ours is closed (a run restarts ~150 workers).
        with open(self._log_dir / f"{stage.value}-{slot}.log", "ab") as log:
            return subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "p4review.cli.main",
                    "--state-dir",
                    str(self._state_dir),
                    "local",
                    "worker",
                    "--stage",
                    stage.value,
                ],
                env={**self._env, "P4REVIEW_FAULTS": faults},
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                preexec_fn=self._preexec,
            )

    def start(self) -> None:
        with self._lock:
            for stage in STAGE_ORDER:
                for slot in range(self._config.workers_per_stage):
                    self._slots[(stage, slot)] = self._spawn(stage, slot)
        for target in (self._supervise, self._kill_at_random):
            thread = threading.Thread(target=target, daemon=True, name=f"chaos-{target.__name__}")
            thread.start()
            self._threads.append(thread)

    def _supervise(self) -> None:
        """Restart workers that exited on their own (an injected crash fault)."""
        while not self._stopping.wait(0.2):
            with self._lock:
                for key, process in list(self._slots.items()):
                    if process.poll() is not None and not self._stopping.is_set():
                        if process.returncode > 0:
                            self.crash_exits += 1
                        self._slots[key] = self._spawn(*key)

    def _kill_at_random(self) -> None:
        low, high = self._config.kill_every
        while not self._stopping.wait(self._rng.uniform(low, high)):
            with self._lock:
                key = self._rng.choice(sorted(self._slots, key=lambda k: (k[0].value, k[1])))
                process = self._slots[key]
                if process.poll() is None:
                    process.send_signal(signal.SIGKILL)
                    process.wait()
                    self.kills += 1
                self._slots[key] = self._spawn(*key)

    def stop_killing(self) -> None:
        self._stopping.set()
        for thread in self._threads:
            thread.join(timeout=10)

    def stop(self) -> None:
        self.stop_killing()
        with self._lock:
            processes = list(self._slots.values())
        for process in processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()


def _submit_all(client: Any, numbers: list[int], run_id: str) -> tuple[dict[int, str], list[str]]:
    def submit(number: int) -> tuple[int, Any]:
        # What a trigger does: retry with the same idempotency key (a replay answers 200).
        outcome: Any = None
        for _ in range(5):
            try:
                outcome = client.submit(
                    changelist_id=number,
                    review_version=1,
                    kind="submitted",
                    idempotency_key=f"chaos-{run_id}-{number}",
                    rerun=False,
                )
            except OSError as exc:  # timeout, refused: the request may or may not have landed
                outcome = exc
                continue
            if outcome.status in (HTTPStatus.OK, HTTPStatus.CREATED):
                return number, outcome
            time.sleep(0.5)
        return number, outcome

    job_ids: dict[int, str] = {}
    problems: list[str] = []
    with ThreadPoolExecutor(max_workers=4) as pool:
        for number, answer in pool.map(submit, numbers):
            if isinstance(answer, OSError):
                problems.append(f"CL {number}: submit failed ({type(answer).__name__})")
            elif answer.status in (HTTPStatus.OK, HTTPStatus.CREATED):
                job_ids[number] = answer.body["job_id"]
            else:
                problems.append(f"CL {number}: submit answered {answer.status}")
    return job_ids, problems


def _wait_for_end_states(dal: Any, job_ids: list[str], timeout: float, fleet: WorkerFleet) -> dict[str, Any]:
    """Poll with the sweeper's Scan of active jobs (one request per page, not one per job: the
    emulator serializes DynamoDB), then read every job once."""
    started = time.monotonic()
    last_report = 0.0
    while True:
        active = {job.job_id for job in ops_stores(dal).sweep_store.active_jobs()}
        waiting = sum(1 for job_id in job_ids if job_id in active)
        elapsed = time.monotonic() - started
        if not waiting or elapsed > timeout:
            break
        if elapsed - last_report >= 15:
            _say(
                f"  [{elapsed:6.1f}s] ended {len(job_ids) - waiting}/{len(job_ids)}; "
                f"kills={fleet.kills} crash_exits={fleet.crash_exits}"
            )
            last_report = elapsed
        time.sleep(3.0)
    return {job_id: dal.jobs.get_job(job_id) for job_id in job_ids}


def _dead_letter_job_ids(dal: Any) -> set[str]:
    """Jobs with a dead-letter envelope (or a bare stage message moved by redrive) in any DLQ."""
    from p4review.pipeline.replay import parse_dead_letter

    found: set[str] = set()
    for stage in STAGE_ORDER:
        for letter in dal.dead_letters.peek(stage, max_messages=10_000):
            target = parse_dead_letter(letter.body)
            if target is not None:
                found.add(target.job_id)
    return found


def _stack_arguments(config: ChaosConfig, p4_executable: Path) -> list[str]:
    """`p4review local up` options: no in-process pollers, short leases, a busy sweeper."""
    return [
        "--no-workers",
        "--lease-seconds",
        str(config.lease_seconds),
        "--visibility-seconds",
        str(config.visibility_seconds),
        "--sweep-interval",
        str(config.sweep_interval_seconds),
        "--set",
        f"P4REVIEW_P4_EXECUTABLE={p4_executable}",
        "--set",
        f"P4REVIEW_SWEEP_STRANDED_SECONDS={config.stranded_seconds}",
        "--set",
        f"P4REVIEW_REVIEWERS={json.dumps(chaos_reviewers(config.recipients))}",
    ]


def chaos_reviewers(recipients: int) -> list[dict[str, Any]]:
    """Reviewers on every path, so each job has `recipients` required deliveries. Always a list
    (maybe empty): it replaces the local stack's own reviewer list, which would add recipients."""
    if recipients <= 1:
        return []
    return [{"prefix": "//depot/...", "reviewers": [f"reviewer-{n}@chaos.example" for n in range(1, recipients)]}]


def _check_swarm(swarm: Any, numbers: set[int], required: dict[int, list[OutboxRow]], report: ChaosReport) -> None:
    """Every comment on the chaos changes' reviews counted; a marker twice is a duplicate; a
    succeeded job's comment row (neither failed nor skipped) whose marker is not on its review is
    lost, and so is a succeeded job with no comment rows at all (its Swarm channel never ran)."""
    from p4review.notify.swarm.comments import comment_marker, find_marker

    swarm.set_faults(error_rate=0.0, hang_rate=0.0, lost_response_rate=0.0)
    state = swarm.state()
    report.swarm_faults = dict(state.get("faults_injected") or {})
    markers_by_change: dict[int, Counter[str | None]] = {}
    for review in state["reviews"]:
        change = int(review["change"])
        if change not in numbers:
            continue
        markers = Counter(find_marker(comment["body"]) for comment in review["comments"])
        markers_by_change[change] = markers
        report.swarm_comments += sum(markers.values())
        for marker, count in markers.items():
            if count > 1:
                report.swarm_duplicates += count - 1
                report.problems.append(f"CL {change}: Swarm comment {marker} posted {count} times")
    for change, rows in sorted(required.items()):
        if not rows:
            report.swarm_lost += 1
            report.problems.append(f"CL {change}: succeeded without any Swarm comment row")
            continue
        found = markers_by_change.get(change, Counter())
        for row in rows:
            if row.status in (DeliveryStatus.FAILED, DeliveryStatus.SKIPPED):
                continue
            marker = comment_marker(row.changelist_id, row.review_version, row.recipient[len(SWARM_ROW_PREFIX) :])
            if not found.get(marker):
                report.swarm_lost += 1
                report.problems.append(f"CL {change}: Swarm comment {row.recipient} not on the review")


def run_chaos(state_root: Path, config: ChaosConfig) -> ChaosReport:
    from p4review.cli.api_client import ReviewApiClient
    from p4review.cli.common import load_env_file
    from p4review.notify.delivery import delivery_token, message_id_for
    from p4review.stores.factory import get_data_access, reset_data_access
    from p4review_dev.smtp_server import LocalMailServer
    from p4review_dev.stack import LOCAL_FROM_ADDRESS
    from p4review_dev.stack_process import start_stack_process, stop_stack_process
    from p4review_dev.swarm_server import FakeSwarmControl

    state_dir = (state_root / "chaos").resolve()
    shutil.rmtree(state_dir, ignore_errors=True)
    state_dir.mkdir(parents=True)
    numbers = build_chaos_depot(state_dir / "depot", config.jobs)
    p4_executable = _p4_wrapper(state_dir, state_dir / "depot")
    report = ChaosReport(jobs=len(numbers))
    started = time.monotonic()
    _, swarm_faults = split_faults(config.faults)
    stack, info = start_stack_process(state_dir, _stack_arguments(config, p4_executable))
    fleet = WorkerFleet(state_dir, config, extra_env={"PYTHONUNBUFFERED": "1"})
    try:
        _say(
            f"chaos: {config.jobs} jobs, {config.workers_per_stage} worker processes per stage, "
            f"a SIGKILL every {config.kill_every[0]}-{config.kill_every[1]} s, faults: {config.faults or 'off'}"
        )
        _say(f"  state and logs: {state_dir}")
        # The fake Swarm lives in the stack's process: the workers reach it through stack.env
        # (P4REVIEW_SWARM_URL), this process through its control routes.
        swarm = FakeSwarmControl(info["swarm_url"]) if info.get("swarm_url") else None
        if swarm is not None:
            swarm.set_faults(**swarm_faults, seed=config.seed)
            _say(f"  fake Swarm: {info['swarm_url']}")
        fleet.start()
        client = ReviewApiClient(info["api_url"], Path(info["signing_secret_file"]).read_text().strip())
        job_by_change, problems = _submit_all(client, numbers, run_id=str(config.seed))
        report.problems.extend(problems)
        _say(f"  submitted {len(job_by_change)} jobs through the signed API")
        load_env_file(state_dir / "stack.env")  # this process reads the jobs table and DLQs directly
        reset_data_access()
        faults.reset()  # the fault plan is re-read from the environment too
        dal = get_data_access()
        final = _wait_for_end_states(dal, list(job_by_change.values()), config.timeout_seconds, fleet)
        fleet.stop()
        report.kills, report.crash_exits = fleet.kills, fleet.crash_exits
        report.elapsed_seconds = time.monotonic() - started

        parked = _dead_letter_job_ids(dal)
        required_comments: dict[int, list[OutboxRow]] = {}
        non_comment_rows = {SWARM_ROW_PREFIX + NOTIFY_KEY, SWARM_ROW_PREFIX + VERDICT_KEY}
        # Message-IDs are derived from the (changelist, recipient, review_version) tuple: two stored
        # messages with one Message-ID are one delivery sent twice.
        mailbox = LocalMailServer(info["mailbox_dir"]).messages()
        copies = Counter((message.message_id or "").strip("<>").lower() for message in mailbox)
        report.duplicate_emails = sum(count - 1 for count in copies.values() if count > 1)
        for number, job_id in sorted(job_by_change.items()):
            job = final.get(job_id)
            if job is None or job.status not in END_STATES:
                report.problems.append(
                    f"CL {number} job {job_id}: not ended ({job.status.value if job else 'missing'})"
                )
                report.lost += 1
                continue
            if job.status == JobStatus.DEAD_LETTERED:
                report.dead_lettered += 1
                reason = next(
                    (
                        state.last_dead_letter_class or state.last_error_class
                        for state in job.stages.values()
                        if state.status == StageStatus.FAILED
                    ),
                    None,
                )
                report.dead_letter_classes[reason or "?"] += 1
                if job_id not in parked or not reason:
                    report.lost += 1
                    report.problems.append(
                        f"CL {number} job {job_id}: dead-lettered without "
                        f"{'an envelope' if job_id not in parked else 'a reason'}"
                    )
                report.awaiting_operator += _owed(
                    dal.outbox.rows_for_version(job.changelist_id, job.review_version), config.recipients
                )
                continue
            report.succeeded += 1
            rows = dal.outbox.rows_for_version(job.changelist_id, job.review_version)
            required_comments[job.changelist_id] = [
                row for row in rows if is_swarm_row(row.recipient) and row.recipient not in non_comment_rows
            ]
            for row in rows:
                if row.status in (DeliveryStatus.FAILED, DeliveryStatus.SKIPPED):
                    continue  # a rejected address or an operator's skip: not a required delivery
                if is_swarm_row(row.recipient):
                    continue  # checked against the fake Swarm below
                report.deliveries += 1
                token = delivery_token(row.changelist_id, row.recipient, row.review_version)
                if copies.get(message_id_for(token, LOCAL_FROM_ADDRESS).strip("<>").lower(), 0) == 0:
                    report.lost += 1
                    report.problems.append(f"CL {number}: delivery marked sent but not in the mailbox")
        report.lost += len(numbers) - len(job_by_change)
        if swarm is not None:
            _check_swarm(swarm, set(numbers), required_comments, report)
        return report
    finally:
        fleet.stop()
        stop_stack_process(stack)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="p4review-chaos", description=__doc__.split("\n\n")[0])
    parser.add_argument("--state-dir", default=".local")
    parser.add_argument("--jobs", type=int, default=ChaosConfig.jobs)
    parser.add_argument("--workers-per-stage", type=int, default=ChaosConfig.workers_per_stage)
    parser.add_argument("--seed", type=int, default=ChaosConfig.seed)
    parser.add_argument("--faults", default=DEFAULT_FAULTS, help="P4REVIEW_FAULTS for the workers ('' = none)")
    parser.add_argument("--timeout", type=float, default=ChaosConfig.timeout_seconds)
    parser.add_argument(
        "--recipients",
        type=int,
        default=ChaosConfig.recipients,
        help="required deliveries per job: the owner plus N-1 reviewers",
    )
    args = parser.parse_args(argv)
    exit_on_sigterm()
    config = ChaosConfig(
        jobs=args.jobs,
        workers_per_stage=args.workers_per_stage,
        seed=args.seed,
        faults=args.faults,
        timeout_seconds=args.timeout,
        recipients=args.recipients,
    )
    report = run_chaos(Path(args.state_dir), config)
    for problem in report.problems[:50]:
        _say(f"  PROBLEM: {problem}")
    _say(
        f"kills={report.kills} crash_exits={report.crash_exits} "
        f"dead_letter_classes={dict(report.dead_letter_classes)} swarm_faults={report.swarm_faults} "
        f"elapsed={report.elapsed_seconds:.0f}s"
    )
    _say(report.summary_line())
    return 0 if report.passed else 1


if __name__ == "__main__":
    sys.exit(main())

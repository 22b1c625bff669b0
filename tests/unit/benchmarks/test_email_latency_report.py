"""The trigger-to-email benchmark's arithmetic (benchmarks/email_latency.py), on fixed timestamps:
each job's pieces add up to its time, the queue time the local event source adds is told apart
from the stages' work and the pipeline's hand-offs, p50/p95 and throughput come out right."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from benchmarks.email_latency import (
    BURSTS,
    BurstResult,
    JobTimeline,
    StageTimes,
    format_report,
    percentile,
    segments,
    stage_times,
    summarize,
    versions_assigned,
)


def _job(label: str, exit_at: float, *, fetch_work: float = 1.0, worker_wait: float = 0.0) -> JobTimeline:
    """Trigger exit at `exit_at`; every other piece fixed: sender 0.2, ingest 0.1; per stage
    hand-off 0.01, poll wake-up 0.005, start 0.002; fetch waits `worker_wait` for a worker;
    work: fetch `fetch_work`, review 0.5, notify 0.3 to the email (completed 0.1 later)."""
    version = exit_at + 0.2
    created = version + 0.1
    stages = {}
    previous = created
    for stage, work in (("fetch", fetch_work), ("review", 0.5), ("notify", 0.3)):
        sent = previous + 0.01
        wait = worker_wait if stage == "fetch" else 0.0
        # A worker whose receive went out before the message arrived (no wait), or after it.
        receive_started = sent + wait if wait else sent - 0.5
        received = sent + wait + 0.005
        started = received + 0.002
        stages[stage] = StageTimes(
            sent, receive_started, received, started, started + work + (0.1 if stage == "notify" else 0)
        )
        previous = stages[stage].completed
    return JobTimeline(label, exit_at, version, created, stages, stages["notify"].started + 0.3)


def test_a_jobs_pieces_add_up_to_its_time_and_each_is_where_it_belongs() -> None:
    job = _job("a", 1_000.0, fetch_work=2.0, worker_wait=0.4)
    pieces = segments(job)
    assert sum(pieces.values()) == pytest.approx(job.total)
    assert job.total == pytest.approx(0.2 + 0.1 + 3 * (0.01 + 0.005 + 0.002) + 0.4 + 2.0 + 0.5 + 0.3)
    assert pieces["sender"] == pytest.approx(0.2)
    assert pieces["ingest"] == pytest.approx(0.1)
    assert pieces["fetch worker wait"] == pytest.approx(0.4)
    assert pieces["review worker wait"] == pytest.approx(0.0)  # its receive was already waiting
    assert pieces["fetch poll wake-up"] == pytest.approx(0.005)
    assert pieces["notify hand-off"] == pytest.approx(0.01)
    assert pieces["fetch start"] == pytest.approx(0.002)
    assert pieces["fetch work"] == pytest.approx(2.0)
    # Notify's work ends at the email, not at its completion (0.1 s later).
    assert pieces["notify work"] == pytest.approx(0.3)


def test_summary_takes_p50_and_p95_over_jobs_and_sums_the_hops() -> None:
    jobs = [_job(str(n), 100.0 * n, fetch_work=float(n)) for n in range(1, 21)]
    summary = summarize(jobs)
    totals = sorted(job.total for job in jobs)
    fixed = 0.2 + 0.1 + 3 * 0.017 + 0.5 + 0.3
    assert summary.jobs == 20
    assert summary.p50 == pytest.approx(fixed + 10.5)  # fetch work 1..20 s: median 10.5
    # Inclusive interpolation: rank 0.95 * 19 = 18.05 between the 19th and 20th jobs.
    assert summary.p95 == pytest.approx(totals[18] + 0.05 * (totals[19] - totals[18]))
    assert summary.pieces["fetch work"][0] == pytest.approx(10.5)
    # Three hops of 5 ms wake-up, no worker wait; hand-offs and starts 3 x 12 ms.
    assert summary.event_source == pytest.approx((0.015, 0.015))
    assert summary.pipeline == pytest.approx((0.036, 0.036))


def test_percentile_of_one_value_is_that_value() -> None:
    assert percentile([3.0], 95) == 3.0
    assert percentile([1.0, 2.0, 3.0, 4.0, 5.0], 50) == 3.0


def test_throughput_is_jobs_over_first_exit_to_last_email() -> None:
    jobs = [_job("a", 0.0), _job("b", 1.0), _job("c", 2.0, fetch_work=10.0)]
    burst = BurstResult("x", 2, jobs)
    assert burst.makespan == pytest.approx(jobs[2].email - 0.0)
    assert burst.per_minute == pytest.approx(3 / burst.makespan * 60)


def test_the_report_prints_latency_pieces_and_ratios_against_the_baseline_run() -> None:
    alone = [_job(str(n), 10.0 * n) for n in range(5)]
    slow = [_job(str(n), 0.0, fetch_work=4.0, worker_wait=2.0) for n in range(4)]
    fast = [_job(str(n), 0.0, fetch_work=2.0) for n in range(4)]
    bursts = [
        BurstResult(BURSTS[0][0], 2, slow),
        BurstResult(BURSTS[1][0], 2, fast),
        BurstResult(BURSTS[2][0], 8, fast),
    ]
    lines = format_report(alone, bursts)
    text = "\n".join(lines)
    assert "5 trigger runs one at a time" in lines[0]
    assert "fetch work 1.00 s (1.00 s)" in text
    assert "fetch poll wake-up 5 ms (5 ms)" in text
    before, after = summarize(slow), summarize(fast)
    assert f"latency p50 x{after.p50 / before.p50:.2f}" in text
    assert f"throughput x{bursts[1].per_minute / bursts[0].per_minute:.2f}" in text
    assert "throughput W=8 / W=2: x1.00" in text


@dataclass(frozen=True)
class _Message:
    body: str
    sent_at: float


@dataclass(frozen=True)
class _Delivery:
    receive_started: float
    received: float
    messages: tuple[_Message, ...]


def test_stage_times_take_the_last_delivery_of_the_job_before_its_claim() -> None:
    mine, other = '{"job_id": "j1", "stage": "fetch"}', '{"job_id": "j2", "stage": "fetch"}'
    deliveries = [
        _Delivery(1.0, 2.0, (_Message(mine, 1.5),)),  # an earlier delivery (a retry came after it)
        _Delivery(4.0, 5.0, (_Message(other, 4.5), _Message(mine, 4.6))),  # the one that claimed
        _Delivery(8.0, 9.0, (_Message(mine, 8.5),)),  # a duplicate hand-off after the claim
    ]
    times = stage_times(deliveries, "j1", started=6.0, completed=7.0)
    assert times == StageTimes(sent=4.6, receive_started=4.0, received=5.0, started=6.0, completed=7.0)
    with pytest.raises(RuntimeError):
        stage_times(deliveries, "j3", started=6.0, completed=7.0)


def test_versions_are_read_from_the_trigger_log(tmp_path: Path) -> None:
    log = tmp_path / "p4review-trigger.log"
    log.write_text(
        "2026-11-27T23:35:44.970751Z INFO  [19674] event_spooled trigger=change-commit change=48213\n"
        "2026-11-27T23:35:45.140634Z INFO  [19675] version_assigned change=48213 kind=submitted version=1\n"
        "2026-11-27T23:35:51.713652Z INFO  [20082] version_assigned change=48240 kind=shelved version=2 "
        "follows_shelf=None\n"
    )
    assigned = versions_assigned(log)
    assert set(assigned) == {(48213, 1), (48240, 2)}
    assert assigned[(48240, 2)] - assigned[(48213, 1)] == pytest.approx(6.573018)

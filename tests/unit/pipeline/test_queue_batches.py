"""Every stage's event source hands one job to an invocation (`QueueSpec.batch_size`)."""

from __future__ import annotations

from p4review import resources as spec


def test_every_stage_takes_one_job_per_invocation() -> None:
    """A batch's jobs are worked one after another within one function timeout: with batches, a
    job waits behind another's work while a worker is free (issue 29; `make bench
    BENCH=email-latency` runs a burst with fetch's and notify's former batches of 5 beside it)."""
    assert {queue.key: queue.batch_size for queue in spec.QUEUES} == {"fetch": 1, "review": 1, "notify": 1}

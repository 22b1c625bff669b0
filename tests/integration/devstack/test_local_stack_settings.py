"""LocalStack's event source settings: W (each stage poller's concurrency) and batch sizes, from
the queue specs unless the caller (the latency benchmark) sets them."""

from __future__ import annotations

from pathlib import Path

from p4review import resources as spec
from p4review.models.job import StageName
from p4review_dev.stack import LocalStack


def test_workers_and_batch_sizes_come_from_the_specs_unless_set(tmp_path: Path) -> None:
    with LocalStack(tmp_path / "set", worker_concurrency=3, batch_sizes={"fetch": 4}, swarm=False) as stack:
        fetch, review = stack.pollers[StageName.FETCH], stack.pollers[StageName.REVIEW]
        assert (fetch.concurrency, fetch.batch_size) == (3, 4)
        assert (review.concurrency, review.batch_size) == (3, spec.REVIEW_QUEUE.batch_size)
    with LocalStack(tmp_path / "default", swarm=False) as stack:
        for stage, poller in stack.pollers.items():
            queue = spec.QUEUE_FOR_STAGE[stage]
            assert (poller.concurrency, poller.batch_size) == (queue.max_concurrency, queue.batch_size)

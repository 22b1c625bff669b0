"""The per-job cost benchmark measures: one job (after the cold one) through a fresh local stack,
with what an earlier stack in this process left in moto (a queue of unprocessed messages, as
`make bench`'s ingest benchmark leaves), must count every call the job path makes. The benchmark
once printed zeros for everything but the event source's deletes, and nothing failed."""

from __future__ import annotations

import pytest

from benchmarks.cost import DYNAMO_READS, DYNAMO_WRITES, OTHER_MINIMUM, SQS_DELETES, measure_cost_per_job
from p4review.cli.api_client import ReviewApiClient
from p4review_dev.stack import LocalStack


@pytest.fixture
def leftovers(tmp_path):
    """A stack that stops with jobs still queued for fetch, as the ingest benchmark leaves it."""
    with LocalStack(tmp_path / "earlier") as stack:
        for poller in stack.pollers.values():
            poller.stop()
        api = ReviewApiClient(stack.info.api_url, stack.signing_secret)
        # Moto's state is the process's: another test on this worker may have reviewed these
        # changes already, so the leftovers are versions no test asks for (new jobs, 201).
        for change in (48213, 48240):
            answer = api.submit(
                changelist_id=change,
                review_version=97,
                kind="submitted",
                idempotency_key=f"left-{change}",
                rerun=True,
            )
            assert answer.status == 201, answer.body


@pytest.mark.spec("OPS-8")
def test_the_cost_benchmark_counts_the_job_path_and_it_costs_the_minimum(leftovers):
    run = measure_cost_per_job(steady_jobs=1)
    svc, src = run.service, run.source

    # Nothing may read zero: the DAL's clients and the event source's are both counted.
    assert svc.total("dynamodb", DYNAMO_WRITES) > 0
    assert svc.get("sqs", "SendMessage") > 0
    assert svc.total("s3", ("PutObject", "GetObject")) > 0
    assert src.total("sqs", SQS_DELETES) > 0

    # And the job path is the minimum the invariants need (docs/benchmarks.md's cost row).
    assert svc.total("dynamodb", DYNAMO_READS) == 0
    assert run.dynamodb_calls() == run.minimum_dynamodb_calls() == 7 + 2 * run.delivery_rows
    assert run.requests() == run.minimum_requests()
    assert svc.get("sqs", "SendMessage") == 3 and src.total("sqs", SQS_DELETES) == 3
    assert [calls for _, calls, _ in OTHER_MINIMUM] == [3, 3, 4, 4]

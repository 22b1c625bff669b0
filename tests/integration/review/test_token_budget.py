"""The shared LLM token budget in the jobs table, against the moto server (DynamoDB served one
request at a time, so conditions are atomic as in DynamoDB), raced from real threads; and the
review stage waiting for it without spending its attempt budget (docs/capacity.md)."""

from __future__ import annotations

from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest

from p4review.models.job import JobStatus, StageName, StageStatus
from p4review.ops.sweep_store import DynamoSweepRepository
from p4review.resources import ACTIVE_JOBS_INDEX, RETENTION_TTL_ATTRIBUTE
from p4review.review.capacity import TokenGate
from p4review.review.reviewers import OfflineReviewer
from p4review.review.settings import ReviewSettings
from p4review.review.setup import review_config
from p4review.review.token_budget import BURST_MS, InMemoryTokenBudget, cost_ms
from p4review.review.token_budget_store import EXPIRY_MARGIN_SECONDS, DynamoTokenBudget, budget_pk
from p4review.stores.dynamo_codec import from_item
from p4review.stores.factory import get_data_access
from p4review_dev.support.harness import fetched_job, run_once

TPM = 400_000


@pytest.fixture
def service(dal_provisioned):
    with dal_provisioned() as provisioned:
        yield provisioned


def _budget(service, tokens_per_minute: int = TPM, model: str = "gpt-4.1") -> DynamoTokenBudget:
    return DynamoTokenBudget(
        service.client("dynamodb"),
        service.resources.tables["jobs"],
        provider="openai",
        model=model,
        tokens_per_minute=tokens_per_minute,
    )


def _item(service, model: str = "gpt-4.1") -> dict:
    answer = service.client("dynamodb").get_item(
        TableName=service.resources.tables["jobs"], Key={"pk": {"S": budget_pk("openai", model)}}, ConsistentRead=True
    )
    return from_item(answer["Item"])


@pytest.mark.spec("CAP-1")
def test_concurrent_reservations_are_each_counted_once(service, manual_clock):
    """16 threads reserve 4 times each at one frozen instant: every reservation lands (no lost
    update), and they queue one behind another exactly as the reference model says."""
    budget = _budget(service)
    tokens = 20_000
    cost = cost_ms(tokens, TPM)  # 3 s of budget each

    def reserve_four(_: int) -> list[float]:
        return [budget.reserve(tokens, max_wait_seconds=3_600).wait_seconds for _ in range(4)]

    with ThreadPoolExecutor(max_workers=16) as pool:
        waits = [wait for batch in pool.map(reserve_four, range(16)) for wait in batch]
    expected = [max(0, k * cost - BURST_MS) / 1000 for k in range(1, 65)]
    assert sorted(waits) == expected  # 20 start at once (a minute's tokens), then one every 3 s
    start = int(manual_clock.now.timestamp() * 1000)
    assert _item(service)["tat_ms"] == start + 64 * cost


@pytest.mark.spec("CAP-1")
def test_the_dynamodb_budget_decides_as_the_reference_model(service, manual_clock):
    budget = _budget(service)
    reference = InMemoryTokenBudget(TPM, lambda: int(manual_clock.now.timestamp() * 1000))
    script = [
        ("reserve", 150_000, 0),
        ("reserve", 300_000, 30),  # past the minute: waits
        ("reserve", 100_000, 5),  # refused: would wait longer than 5 s
        ("settle", 300_000, 120_000),  # gives back what the answer did not use
        ("advance", 7.5, None),
        ("reserve", 100_000, 5),
        ("hold_off", 20, None),
        ("reserve", 50_000, 60),
        ("settle", 50_000, 90_000),  # charged more than it reserved
        ("advance", 200, None),  # the bucket refills
        ("reserve", 400_000, 0),
        ("settle", 400_000, 500_000),
        ("reserve", 10_000, 0),
    ]
    for step, first, second in script:
        if step == "advance":
            manual_clock.advance(first)
            continue
        if step == "reserve":
            assert budget.reserve(first, second) == reference.reserve(first, second), (step, first, second)
        elif step == "settle":
            budget.settle(first, second)
            reference.settle(first, second)
        else:
            budget.hold_off(first)
            reference.hold_off(first)
        assert _item(service)["tat_ms"] == reference.tat_ms, (step, first, second)


@pytest.mark.spec("CAP-2")
def test_the_budget_item_expires_and_is_no_job(service, manual_clock):
    """Its own key, a TTL past the moment it matters, and no `active_job`: the sweeper's sparse
    index never lists it."""
    budget = _budget(service)
    budget.reserve(100_000, max_wait_seconds=0)
    budget.hold_off(30)
    item = _item(service)
    assert item["pk"] == "TPM#openai#gpt-4.1" and item["record_type"] == "token_budget"
    assert ACTIVE_JOBS_INDEX.partition_key not in item
    assert item[RETENTION_TTL_ATTRIBUTE] >= item["tat_ms"] // 1000 + EXPIRY_MARGIN_SECONDS
    sweep = DynamoSweepRepository(service.client("dynamodb"), service.resources.tables["jobs"])
    assert list(sweep.active_jobs()) == []
    _budget(service, model="claude-sonnet-4").reserve(1_000, max_wait_seconds=0)  # one budget per model
    assert _item(service)["tat_ms"] == item["tat_ms"]


class CountingReviewer(OfflineReviewer):
    def __init__(self) -> None:
        self.calls = 0

    def complete(self, request, review_input):
        self.calls += 1
        return super().complete(request, review_input)


def _review_run(job, reviewer, gate):
    dal = get_data_access()
    from p4review.review.stage import ReviewWork

    work = ReviewWork(
        dal.redacted_artifacts,
        ReviewSettings.from_env().redaction_policy(),
        reviewer,
        review_config(ReviewSettings.from_env()),
        capacity=gate,
    )
    return run_once(job, work, worker_id="reviewer")


@pytest.mark.spec("CAP-2")
def test_a_review_waiting_for_the_budget_spends_no_attempt(service, manual_clock):
    """The budget is held off for an hour (another workload, a provider's Retry-After): the
    review calls nothing, gives the stage back with its attempt uncounted and comes back later;
    once the budget is free it completes, having counted one attempt."""
    job = fetched_job("budget-held", 48213)
    budget = _budget(service)
    gate = TokenGate(budget, sleep=manual_clock.advance)
    reviewer = CountingReviewer()
    budget.hold_off(3_600)

    review_queue = service.resources.queue_for_stage(StageName.REVIEW).url
    sqs = service.client("sqs")
    for wait in range(3):  # each return finds the budget still held: no attempt is ever spent
        disposition, stored = _review_run(job, reviewer, gate)
        # This message is done with; a fresh one, held back by SQS, carries the job on: waiting
        # uses up none of the queue's receives (8, then the DLQ).
        assert (disposition.ack, disposition.reason) == (True, "awaiting capacity: re-sent with a delay")
        delayed = sqs.get_queue_attributes(QueueUrl=review_queue, AttributeNames=["ApproximateNumberOfMessagesDelayed"])
        assert int(delayed["Attributes"]["ApproximateNumberOfMessagesDelayed"]) == wait + 1
        review = stored.stages[StageName.REVIEW]
        assert (review.status, review.attempts, review.claimed_by, review.last_error_class) == (
            StageStatus.PENDING,
            0,
            None,
            None,
        )
        assert stored.status == JobStatus.RETRYABLE_FAILED and stored.audit[-1].event == "stage_deferred"
        manual_clock.advance(300)
    assert reviewer.calls == 0

    manual_clock.advance(3_600)
    disposition, stored = _review_run(job, reviewer, gate)
    assert disposition.ack and reviewer.calls >= 1
    review = stored.stages[StageName.REVIEW]
    assert (review.status, review.attempts) == (StageStatus.COMPLETED, 1)
    assert Counter(event.event for event in stored.audit)["stage_deferred"] == 3


@pytest.mark.spec("CAP-2")
def test_a_short_wait_is_spent_in_place_within_the_one_attempt(service, manual_clock):
    job = fetched_job("budget-queued", 48213)
    budget = _budget(service)
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        manual_clock.advance(seconds)

    for tokens in (TPM, TPM // 5):  # a minute's tokens and 12 s more, queued ahead by other workers
        budget.reserve(tokens, max_wait_seconds=600)
    disposition, stored = _review_run(job, CountingReviewer(), TokenGate(budget, sleep=sleep))
    assert disposition.ack and stored.stages[StageName.REVIEW].attempts == 1
    assert sum(slept) >= 12

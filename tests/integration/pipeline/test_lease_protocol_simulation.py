"""A deterministic simulation of the claim / finalize / requeue protocol (spec "WorkQueue").

Hypothesis interleaves several workers, crashes, sweeps and clock jumps against the real
DynamoDB repository (on the moto server, conditions evaluated atomically, and on DynamoDB Local)
with a controlled clock, and checks the invariants after every step:
  * never two live owners of a stage;
  * attempts are counted exactly once per successful claim;
  * the audit trail only ever records allowed transitions;
  * no lost job: whatever happened, a fresh worker can always finish it eventually.
"""

from __future__ import annotations

import itertools
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from p4review import clock
from p4review.errors import StaleWriteError
from p4review.ingest.intake import new_job
from p4review.models.api import CreateReviewRequest
from p4review.models.job import JobStatus, StageName, StageStatus
from p4review.ops import sweeper as sweeper_module
from p4review.ops.sweep_store import DynamoSweepRepository
from p4review.ports import ClaimState
from p4review.stores.dynamo_jobs import DynamoJobRepository
from p4review.stores.transitions import can_transition

WORKERS = ("w1", "w2", "w3")
_CHANGELISTS = itertools.count(1)  # one fresh changelist per simulated run
LEASE = 10
STAGE = StageName.FETCH


class FakeClock:
    def __init__(self):
        self.now = datetime(2026, 11, 21, 12, 0, 0, tzinfo=UTC)

    def utc_now(self):
        return self.now

    def now_iso(self):
        return clock.to_iso(self.now)


class _NullQueues:
    def __init__(self):
        self.sent = []

    def send(self, message):
        self.sent.append(message)


class LeaseProtocol(RuleBasedStateMachine):
    repo: DynamoJobRepository
    sweep_store: DynamoSweepRepository
    fake_clock: FakeClock

    def __init__(self):
        super().__init__()
        key = f"sim-{uuid.uuid4()}"
        job = new_job(
            CreateReviewRequest(
                idempotency_key=key, changelist_id=next(_CHANGELISTS), review_version=1, kind="submitted"
            ),
            self.fake_clock.now_iso(),
            "sim",
        )
        assert self.repo.create_job(job).created
        self.job_id = job.job_id
        self.believed_owner: dict[str, datetime] = {}  # worker -> lease end it believes it holds
        self.successful_claims = 0
        self.completed_by: str | None = None

    # -- steps ---------------------------------------------------------------------------------
    @rule(worker=st.sampled_from(WORKERS))
    def claim(self, worker):
        outcome = self.repo.claim_stage(self.job_id, STAGE, worker, LEASE)
        if outcome.state == ClaimState.CLAIMED:
            self.successful_claims += 1
            # Other workers keep believing in their leases until a write tells them otherwise.
            self.believed_owner[worker] = self.fake_clock.now + timedelta(seconds=LEASE)

    @rule(worker=st.sampled_from(WORKERS))
    def complete(self, worker):
        try:
            self.repo.complete_stage(self.job_id, STAGE, worker, updates={})
        except StaleWriteError:
            self.believed_owner.pop(worker, None)  # lease lost: the worker stops
            return
        assert self.completed_by is None, "a stage completed twice"
        self.completed_by = worker
        self.believed_owner.pop(worker, None)

    @rule(worker=st.sampled_from(WORKERS))
    def fail_retryable(self, worker):
        try:
            self.repo.release_stage(
                self.job_id,
                STAGE,
                worker,
                error_class="NETWORK_TIMEOUT",
                error="sim",
                stage_status=StageStatus.PENDING,
                job_status=JobStatus.RETRYABLE_FAILED,
            )
        except StaleWriteError:
            pass
        self.believed_owner.pop(worker, None)

    @rule(worker=st.sampled_from(WORKERS))
    def crash(self, worker):
        self.believed_owner.pop(worker, None)

    @rule(seconds=st.sampled_from([1, 3, LEASE - 1, LEASE, LEASE + 1, 30]))
    def clock_jumps(self, seconds):
        self.fake_clock.now += timedelta(seconds=seconds)

    @rule()
    def sweep(self):
        sweeper_module.sweep(self.sweep_store, _NullQueues(), stranded_after=timedelta(days=1))

    # -- invariants ----------------------------------------------------------------------------
    def _job(self):
        return self.repo.get_job(self.job_id)

    @invariant()
    def never_two_live_owners(self):
        job = self._job()
        state = job.stages[STAGE]
        live = [worker for worker, until in self.believed_owner.items() if until > self.fake_clock.now]
        assert len(live) <= 1
        if live and state.status == StageStatus.RUNNING:
            assert state.claimed_by == live[0], "a worker believes it owns a lease the table gave away"

    @invariant()
    def attempts_counted_once_per_claim(self):
        assert self._job().stages[STAGE].attempts == self.successful_claims

    @invariant()
    def audit_records_only_allowed_transitions(self):
        job = self._job()
        status = JobStatus.QUEUED
        for event in job.audit[1:]:
            if event.to_status is not None and event.to_status != status:
                assert can_transition(status, event.to_status), (status, event.to_status, event.event)
                status = event.to_status
        assert status == job.status

    def teardown(self):
        # No lost job: long after everyone is gone, a fresh worker can finish the stage.
        self.fake_clock.now += timedelta(seconds=LEASE * 10)
        job = self._job()
        if job.stages[STAGE].status != StageStatus.COMPLETED:
            assert self.repo.claim_stage(self.job_id, STAGE, "rescuer", LEASE).state == ClaimState.CLAIMED
            self.repo.complete_stage(self.job_id, STAGE, "rescuer", updates={})
        assert self._job().stages[STAGE].status == StageStatus.COMPLETED


@pytest.mark.spec("WQ-10", "WQ-11", "WQP-7")
def test_lease_protocol_keeps_its_invariants_under_any_interleaving(dal_provisioned, monkeypatch):
    fake = FakeClock()
    for module in ("p4review.stores.dynamo_jobs", "p4review.ops.sweep_store", "p4review.ops.sweeper"):
        for name in ("utc_now", "now_iso"):
            try:
                monkeypatch.setattr(f"{module}.{name}", getattr(fake, name))
            except AttributeError:
                pass
    with dal_provisioned() as service:
        LeaseProtocol.repo = DynamoJobRepository(service.client("dynamodb"), service.resources.tables["jobs"])
        LeaseProtocol.sweep_store = DynamoSweepRepository(service.client("dynamodb"), service.resources.tables["jobs"])
        LeaseProtocol.fake_clock = fake
        run_state_machine_as_test(
            LeaseProtocol,
            settings=settings(
                max_examples=30,
                stateful_step_count=20,
                deadline=None,
                derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
            ),
        )

"""What one review costs in AWS API calls, counted at the client, against the minimum the
service's invariants need.

Every boto3 client the service's DAL creates (`p4review.stores.factory.aws_client`) gets a
`before-call` handler that counts (service, operation) once per API call (SDK retries of one
call are not counted again), and DynamoDB calls per table. Clients the local stack builds itself
(the SQS pollers that emulate Lambda's event source mapping) are counted apart, as
"event-source"; the benchmark's own client (used to wait for completion) is attached under an
excluded origin and never counted. A client is counted once, under the origin that attached it
last: the DAL's clients are made while the stack's own are being counted too (a poller can run a
handler while the stack starts), and the DAL's attachment is the outer one.

moto keeps its state in the process, across servers: the benchmark clears it before its stack
starts, so nothing an earlier benchmark left (a queue of unprocessed messages) runs, or is
counted, in this one.

The change: no fixture changelist has exactly one file (the smallest, 48240 shelf v1, has 2;
48213 has 6). So the benchmark serves the fixture depot from a temporary copy with synthetic
changelists that each hold ONE file of 48213 (`packet.h` edit, #3 -> #4), same owner
(dkowalski, one recipient). One distinct changelist per job, so every job is a first review
(no rerun branch). The local stack comments on Swarm too, so each job has three delivery rows:
the owner's email, the summary comment, and the Swarm notification.

Run alone: `python -m benchmarks cost` (or `make bench BENCH=cost`)."""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
import time
import weakref
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from statistics import quantiles
from typing import Any

from benchmarks.sizes import sized

STEADY_JOBS = sized(20, 3)
BASE_CHANGE = 48213
ONE_FILE = "//depot/engine/main/src/net/packet.h"
FIRST_SYNTHETIC_CHANGE = 90_001
# The stages a job runs through, each claimed once and completed once (models.job.STAGE_ORDER).
STAGES = 3

DYNAMO_READS = ("GetItem", "Query", "Scan", "BatchGetItem", "TransactGetItems")
DYNAMO_WRITES = ("PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem")
SQS_DELETES = ("DeleteMessage", "DeleteMessageBatch")
SERVICE = "service"
EVENT_SOURCE = "event-source"
BENCHMARK = "benchmark"
# The table label of a call that names several tables (a transaction) or none.
MANY_TABLES = "(transaction)"


# ---- the counting helper --------------------------------------------------------------------
class CallCounter:
    """Thread-safe count of API calls per (origin, service, operation), plus DynamoDB item
    writes/reads inside transactions and batches (one call, several items) and DynamoDB calls per
    (table, operation).

    `attach(client, origin)` registers one `before-call` handler on that client only; attaching
    the same client again changes its origin, so a call is never counted twice. Calls from an
    origin in `exclude_origins` are ignored; nothing is counted while `enabled` is False."""

    def __init__(self, exclude_origins: tuple[str, ...] = (BENCHMARK,), enabled: bool = True):
        self.exclude_origins = set(exclude_origins)
        self.enabled = enabled
        self._lock = threading.Lock()
        self._calls: Counter[tuple[str, str, str]] = Counter()
        self._items: Counter[tuple[str, str, str]] = Counter()
        self._tables: Counter[tuple[str, str, str]] = Counter()
        self._origins: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
        self.excluded_calls = 0

    def attach(self, client: Any, origin: str = SERVICE) -> Any:
        events = client.meta.events
        with self._lock:
            attached = events in self._origins
            self._origins[events] = origin
        if attached:
            return client

        def on_call(model: Any = None, params: Any = None, **_: Any) -> None:
            if not self.enabled or model is None:
                return
            caller = self._origins.get(events, origin)
            if caller in self.exclude_origins:
                with self._lock:
                    self.excluded_calls += 1
                return
            service, operation = model.service_model.service_name, model.name
            document = _body(params) if service == "dynamodb" else {}
            items = _item_count(operation, document)
            with self._lock:
                self._calls[(caller, service, operation)] += 1
                self._items[(caller, service, operation)] += items
                if service == "dynamodb":
                    self._tables[(caller, _table_of(document), operation)] += 1

        # Same specificity as Stubber's handler ('before-call.*.*'), registered first: runs first
        # even when a stub answers the call (a response returned by a handler stops the chain).
        events.register("before-call.*.*", on_call, unique_id=f"p4review-cost-counter-{id(self)}")
        return client

    def reset(self) -> None:
        with self._lock:
            self._calls.clear()
            self._items.clear()
            self._tables.clear()
            self.excluded_calls = 0

    def snapshot(self, origin: str | None = None) -> Counts:
        with self._lock:
            calls = Counter({(s, o): n for (org, s, o), n in self._calls.items() if origin in (None, org)})
            items = Counter({(s, o): n for (org, s, o), n in self._items.items() if origin in (None, org)})
            tables = Counter({(t, o): n for (org, t, o), n in self._tables.items() if origin in (None, org)})
        return Counts(calls, items, tables)


class Counts:
    def __init__(
        self,
        calls: Counter[tuple[str, str]],
        items: Counter[tuple[str, str]],
        tables: Counter[tuple[str, str]] | None = None,
    ):
        self.calls = calls
        self.items = items
        self.tables = tables if tables is not None else Counter()

    def get(self, service: str, operation: str) -> int:
        return self.calls.get((service, operation), 0)

    def total(self, service: str, operations: tuple[str, ...]) -> int:
        return sum(self.get(service, operation) for operation in operations)

    def item_total(self, service: str, operations: tuple[str, ...]) -> int:
        return sum(self.items.get((service, operation), 0) for operation in operations)

    def table_total(self, table: str, operations: tuple[str, ...]) -> int:
        """DynamoDB calls of `operations` on `table` (its name as the calls give it)."""
        return sum(self.tables.get((table, operation), 0) for operation in operations)


def _body(params: Any) -> dict[str, Any]:
    """The request document of a DynamoDB call (JSON protocol), {} when there is none."""
    try:
        body = params.get("body") if isinstance(params, dict) else None
        document = json.loads(body) if body else {}
        return document if isinstance(document, dict) else {}
    except (TypeError, ValueError):
        return {}


def _table_of(document: dict[str, Any]) -> str:
    table = document.get("TableName")
    return table if isinstance(table, str) else MANY_TABLES


def _item_count(operation: str, document: dict[str, Any]) -> int:
    """Items touched by one call: len(TransactItems) / BatchWrite requests, else 1."""
    if operation not in ("TransactWriteItems", "TransactGetItems", "BatchWriteItem", "BatchGetItem"):
        return 1
    try:
        if operation.startswith("Transact"):
            return len(document.get("TransactItems", []))
        requests = document.get("RequestItems", {})
        if operation == "BatchGetItem":
            return sum(len(table.get("Keys", [])) for table in requests.values())
        return sum(len(table) for table in requests.values())
    except (TypeError, AttributeError):
        return 1


@contextmanager
def counting_dal_clients(counter: CallCounter) -> Iterator[None]:
    """Patch the DAL's client factory so every client it builds is attached (origin 'service')."""
    from p4review.stores import factory

    original: Callable[[str], Any] = factory.aws_client

    def counted_client(service: str) -> Any:
        return counter.attach(original(service), SERVICE)

    factory.aws_client = counted_client
    try:
        yield
    finally:
        factory.aws_client = original


@contextmanager
def counting_all_boto3_clients(counter: CallCounter, origin: str) -> Iterator[None]:
    """Attach every boto3 client created in this window (the stack's own pollers) under `origin`."""
    import boto3.session

    original = boto3.session.Session.client

    def client(self: Any, *args: Any, **kwargs: Any) -> Any:
        return counter.attach(original(self, *args, **kwargs), origin)

    boto3.session.Session.client = client  # type: ignore[method-assign]
    try:
        yield
    finally:
        boto3.session.Session.client = original  # type: ignore[method-assign]


def clear_moto_state() -> None:
    """Forget every table, queue, bucket and secret earlier local stacks of this process left
    (moto's state is per process, shared by every server; LocalAwsServer.reset needs one running)."""
    from moto.moto_api._internal.models import moto_api_backend

    moto_api_backend.reset()


# ---- the one-file depot ---------------------------------------------------------------------
def _one_file_depot(root: Path, state: Path, changes: int) -> Path:
    """A copy of the fixture depot plus `changes` synthetic one-file changelists, and a `p4`
    wrapper that serves it (the P4 runner passes a minimal environment, so the depot override
    must live in the executable)."""
    depot = state / "depot"
    shutil.copytree(root / "events" / "depot", depot)
    base = json.loads((depot / "changes" / f"{BASE_CHANGE}.json").read_text())
    one = [entry for entry in base["files"] if entry["depotFile"] == ONE_FILE]
    assert len(one) == 1, f"{ONE_FILE} not in change {BASE_CHANGE}"
    for offset in range(changes):
        number = FIRST_SYNTHETIC_CHANGE + offset
        (depot / "changes" / f"{number}.json").write_text(
            json.dumps(
                {
                    **base,
                    "change": number,
                    "desc": f"net: bound header length (cost benchmark {offset})\n",
                    "files": one,
                }
            )
        )
    wrapper = state / "p4-one-file"
    wrapper.write_text(f'#!/bin/sh\nP4FAKE_DEPOT="{depot}" exec "{root / "events" / "bin" / "p4"}" "$@"\n')
    wrapper.chmod(0o755)
    return wrapper


# ---- the minimum the invariants need ----------------------------------------------------------
@dataclass(frozen=True)
class Need:
    """One line of the minimum: what, its DynamoDB operation, how many calls (and items) per job,
    and which invariant needs it."""

    what: str
    operation: str | None
    calls: float
    items: float
    why: str


def dynamodb_minimum(delivery_rows: float) -> list[Need]:
    """The DynamoDB calls one job cannot do without, item by item (docs/spec-conformance.md)."""
    return [
        Need(
            "create the job",
            "TransactWriteItems",
            1,
            3,
            "job + idempotency key, changelist-version claim, changelist head: one atomic transaction "
            "is the dedup (a version is accepted once, a replayed key answers the same job)",
        ),
        Need(
            "claim each stage",
            "UpdateItem",
            STAGES,
            STAGES,
            "the stage lease (one owner at a time) is a conditional write; its answer is the job "
            "(ALL_NEW), a refusal's the verdict (ALL_OLD): nothing is read first",
        ),
        Need(
            "complete each stage",
            "UpdateItem",
            STAGES,
            STAGES,
            "the owner-only write that records the stage's artifacts before the hand-off (notify's "
            "also ends the job and leaves the active-jobs index)",
        ),
        Need(
            "start each delivery",
            "UpdateItem",
            delivery_rows,
            delivery_rows,
            "intent + attempt count + send lock in one conditional write BEFORE the provider call: "
            "evidence of a possible send, and one sender per (changelist, recipient, version)",
        ),
        Need(
            "mark each delivery sent",
            "UpdateItem",
            delivery_rows,
            delivery_rows,
            "after the provider's success, the evidence (notification_id): never notified twice",
        ),
        Need("read anything", None, 0, 0, "every write's answer carries the state the next step needs"),
    ]


# Per job, whatever the recipients: (service label, calls, why).
OTHER_MINIMUM: list[tuple[str, int, str]] = [
    ("sqs SendMessage", STAGES, "ingest->fetch, fetch->review, review->notify: each hand-off durable"),
    ("sqs DeleteMessage [event source]", STAGES, "Lambda's event source deletes each stage's message"),
    (
        "s3 PutObject",
        4,
        "raw and redacted change (the redaction boundary), the chunk answer (a retried review "
        "does not pay the LLM again), the result (too big for SQS and DynamoDB items)",
    ),
    (
        "s3 GetObject",
        4,
        "review reads the redacted change and probes for a stored chunk answer (404 here); notify "
        "reads the change (description, coverage) and the result",
    ),
]


# ---- the benchmark --------------------------------------------------------------------------
@dataclass
class CostRun:
    """What the counter saw: one job with cold caches, then `jobs` jobs in steady state."""

    first_service: Counts
    first_source: Counts
    service: Counts
    source: Counts
    jobs: int
    elapsed: float
    views: list[dict[str, Any]]
    benchmark_calls: int
    tables: dict[str, str]  # "jobs" -> the table's name

    def per_job(self, value: float) -> float:
        return value / self.jobs

    @property
    def delivery_rows(self) -> float:
        """Outbox rows per job, from the jobs' views (each delivery, email or Swarm, is a row)."""
        return sum(len(view.get("deliveries") or []) for view in self.views) / max(len(self.views), 1)

    def dynamodb_calls(self) -> float:
        return self.per_job(self.service.total("dynamodb", DYNAMO_READS + DYNAMO_WRITES))

    def minimum_dynamodb_calls(self) -> float:
        return sum(need.calls for need in dynamodb_minimum(self.delivery_rows))

    def requests(self) -> float:
        """Every AWS request on the job path: DynamoDB, SQS sends and deletes, S3, secrets."""
        svc, src = self.service, self.source
        return self.per_job(
            svc.total("dynamodb", DYNAMO_READS + DYNAMO_WRITES)
            + svc.get("sqs", "SendMessage")
            + svc.get("sqs", "ChangeMessageVisibility")
            + svc.total("sqs", SQS_DELETES)
            + src.total("sqs", SQS_DELETES)
            + svc.total("s3", ("PutObject", "GetObject"))
            + svc.get("secretsmanager", "GetSecretValue")
        )

    def minimum_requests(self) -> float:
        return self.minimum_dynamodb_calls() + sum(calls for _, calls, _ in OTHER_MINIMUM)


def measure_cost_per_job(steady_jobs: int = STEADY_JOBS) -> CostRun:
    """Run one job with cold caches, then `steady_jobs` jobs, through a fresh local stack."""
    import boto3

    from p4review.cli.api_client import ReviewApiClient
    from p4review.models.job import STAGE_ORDER, JobStatus
    from p4review.settings.blocks import StoresBlock
    from p4review.stores.dynamo_jobs import DynamoJobRepository
    from p4review_dev.stack import REGION, LocalStack, repo_root

    assert len(STAGE_ORDER) == STAGES
    counter = CallCounter(exclude_origins=(BENCHMARK,), enabled=False)
    clear_moto_state()
    with tempfile.TemporaryDirectory() as state_dir, counting_dal_clients(counter):
        state = Path(state_dir)
        p4 = _one_file_depot(repo_root(), state, 1 + steady_jobs)
        stack = LocalStack(state / "stack", sweep_interval_seconds=3600, extra_env={"P4REVIEW_P4_EXECUTABLE": str(p4)})
        with counting_all_boto3_clients(counter, EVENT_SOURCE):
            stack.start()
        try:
            assert stack.info is not None
            api = ReviewApiClient(stack.info.api_url, stack.signing_secret)
            watcher = counter.attach(
                boto3.Session(region_name=REGION, aws_access_key_id="local", aws_secret_access_key="local").client(
                    "dynamodb", endpoint_url=stack.info.aws_endpoint
                ),
                BENCHMARK,
            )
            jobs = DynamoJobRepository(watcher, StoresBlock.from_env().needed("jobs_table"))

            def run_job(change: int) -> str:
                answer = api.submit(
                    changelist_id=change, review_version=1, kind="submitted", idempotency_key=f"cost-{change}"
                )
                assert answer.status == 201, (answer.status, answer.body)
                job_id: str = answer.body["job_id"]
                deadline = time.monotonic() + 120
                while time.monotonic() < deadline:
                    job = jobs.get_job(job_id)
                    if job is not None and job.status == JobStatus.SUCCEEDED:
                        return job_id
                    if job is not None and job.status.value in ("failed", "dead_lettered", "cancelled"):
                        raise RuntimeError(f"job {job_id} ended {job.status.value}")
                    time.sleep(0.02)
                raise RuntimeError(f"job {job_id} did not succeed within 120 s")

            def measured(changes: list[int]) -> tuple[Counts, Counts, float, list[str]]:
                counter.reset()
                counter.enabled = True
                started = time.monotonic()
                ids = [run_job(change) for change in changes]
                # Let the notify poller delete its message (the event source deletes after the
                # handler returns, which can be just after the job reads `succeeded`).
                stack.pollers[STAGE_ORDER[-1]].wait_idle(timeout=10)
                elapsed = time.monotonic() - started
                counter.enabled = False
                return counter.snapshot(SERVICE), counter.snapshot(EVENT_SOURCE), elapsed, ids

            first_svc, first_src, _, _ = measured([FIRST_SYNTHETIC_CHANGE])
            steady_changes = [FIRST_SYNTHETIC_CHANGE + 1 + n for n in range(steady_jobs)]
            svc, src, elapsed, ids = measured(steady_changes)
            benchmark_calls = counter.excluded_calls
            views = [api.get_job(job_id).body for job_id in ids]  # counting is off again
            tables = dict(stack.resources.tables)
        finally:
            stack.stop()
    return CostRun(first_svc, first_src, svc, src, steady_jobs, elapsed, views, benchmark_calls, tables)


def bench_cost_per_job(steady_jobs: int = STEADY_JOBS) -> None:
    _report(measure_cost_per_job(steady_jobs))


def _report(run: CostRun) -> None:
    svc, src, first_svc, first_src = run.service, run.source, run.first_service, run.first_source
    rows_per_job = run.delivery_rows
    minimum = dynamodb_minimum(rows_per_job)
    min_writes: Counter[str] = Counter()
    for need in minimum:
        if need.operation is not None:
            min_writes[need.operation] += need.calls
    # (label, first job, steady-state per job, minimum, reason)
    rows: list[tuple[str, float, float, str, str]] = []

    def row(label: str, first: float, steady: float, least: float | None, reason: str) -> None:
        flag = "MORE THAN MIN: " if least is not None and steady > least + 1e-9 else ""
        rows.append((label, first, steady, "n/a" if least is None else f"{least:g}", flag + reason))

    for operation in DYNAMO_READS:
        if svc.get("dynamodb", operation) or first_svc.get("dynamodb", operation) or operation in ("GetItem", "Query"):
            row(
                f"dynamodb {operation}",
                first_svc.get("dynamodb", operation),
                run.per_job(svc.get("dynamodb", operation)),
                0,
                "no read on the job path: each write answers the state (the sweeper reads; 1 h schedule here)",
            )
    row(
        "dynamodb TransactWriteItems",
        first_svc.get("dynamodb", "TransactWriteItems"),
        run.per_job(svc.get("dynamodb", "TransactWriteItems")),
        min_writes["TransactWriteItems"],
        "job creation (3 conditional puts, atomic dedup)",
    )
    row(
        "  transaction items",
        first_svc.item_total("dynamodb", ("TransactWriteItems",)),
        run.per_job(svc.item_total("dynamodb", ("TransactWriteItems",))),
        3,
        "write units billed per item (x2 in a transaction)",
    )
    row(
        "dynamodb UpdateItem",
        first_svc.get("dynamodb", "UpdateItem"),
        run.per_job(svc.get("dynamodb", "UpdateItem")),
        min_writes["UpdateItem"],
        f"{STAGES} claims + {STAGES} completions + 2 per delivery row ({rows_per_job:g} rows: start, mark sent); "
        "a long stage's heartbeat adds 1 per lease/3",
    )
    for operation in ("PutItem", "DeleteItem", "BatchWriteItem"):
        if svc.get("dynamodb", operation) or first_svc.get("dynamodb", operation) or operation == "PutItem":
            row(
                f"dynamodb {operation}",
                first_svc.get("dynamodb", operation),
                run.per_job(svc.get("dynamodb", operation)),
                0,
                "each delivery row is created by its first attempt's write (no separate intent put)",
            )
    row(
        "sqs SendMessage",
        first_svc.get("sqs", "SendMessage"),
        run.per_job(svc.get("sqs", "SendMessage")),
        STAGES,
        "ingest->fetch, fetch->review, review->notify; each hand-off must be durable",
    )
    row(
        "sqs ChangeMessageVisibility",
        first_svc.get("sqs", "ChangeMessageVisibility"),
        run.per_job(svc.get("sqs", "ChangeMessageVisibility")),
        0,
        "only the heartbeat of a long stage extends visibility",
    )
    row(
        "sqs DeleteMessage(Batch) [event src]",
        first_src.total("sqs", SQS_DELETES),
        run.per_job(src.total("sqs", SQS_DELETES)),
        STAGES,
        "Lambda's event source deletes each stage message after success (batch of 1 here)",
    )
    for label, operation, least in (("s3 PutObject", "PutObject", 4), ("s3 GetObject", "GetObject", 4)):
        reason = next(why for name, _, why in OTHER_MINIMUM if name == label)
        row(label, first_svc.get("s3", operation), run.per_job(svc.get("s3", operation)), least, reason)
    row(
        "secretsmanager GetSecretValue",
        first_svc.get("secretsmanager", "GetSecretValue"),
        run.per_job(svc.get("secretsmanager", "GetSecretValue")),
        0,
        "warm: cached 300 s per (secret, stage); cold: ingest 2 (signing CURRENT+PREVIOUS), fetch 1 (p4), "
        "notify 2 (p4, smtp). Locally ONE process shares the cache; in AWS each environment pays its own",
    )
    row(
        "sqs ReceiveMessage [event src]",
        first_src.get("sqs", "ReceiveMessage"),
        run.per_job(src.get("sqs", "ReceiveMessage")),
        None,
        f"NOT per job: the pollers long-poll continuously ({src.get('sqs', 'ReceiveMessage') / run.elapsed:.1f}/s "
        f"over {run.elapsed:.1f} s, 3 queues); Lambda's event source does this for you",
    )
    known = {("dynamodb", op) for op in DYNAMO_READS + DYNAMO_WRITES} | {
        ("sqs", "SendMessage"),
        ("sqs", "ChangeMessageVisibility"),
        ("s3", "PutObject"),
        ("s3", "GetObject"),
        ("secretsmanager", "GetSecretValue"),
    }
    for key in sorted(set(svc.calls) | set(first_svc.calls)):
        if key not in known:
            row(
                f"{key[0]} {key[1]} (other)",
                first_svc.calls.get(key, 0),
                run.per_job(svc.calls.get(key, 0)),
                0,
                "not expected on the job path",
            )

    print(
        f"cost per review job, counted at the boto3 client: 1 job with cold caches, then {run.jobs} jobs "
        f"(steady state); change = ONE file ({ONE_FILE} edit, synthetic copies of {BASE_CHANGE}: no fixture "
        f"has exactly one file), one recipient (the owner), Swarm comments on ({rows_per_job:g} delivery rows "
        f"a job); {run.benchmark_calls} benchmark polling calls (steady run) excluded"
    )
    width = max(len(r[0]) for r in rows)
    print(f"{'call':<{width}}  {'1st job':>7}  {'per job':>7}  {'minimum':>7}  reason")
    for label, first, steady, least, reason in rows:
        print(f"{label:<{width}}  {first:>7.0f}  {steady:>7.2f}  {least:>7}  {reason}")

    by_table = {label: name for label, name in run.tables.items()}
    table_line = ", ".join(
        f"{label} {run.per_job(svc.table_total(name, DYNAMO_READS)):g} reads + "
        f"{run.per_job(svc.table_total(name, DYNAMO_WRITES)):g} writes"
        for label, name in sorted(by_table.items())
    )
    other_tables = sorted({table for table, _ in svc.tables} - set(by_table.values()) - {MANY_TABLES})
    print(
        f"dynamodb per table and job: {table_line}"
        + (f"; UNEXPECTED tables {other_tables}" if other_tables else "")
        + f"; transactions {run.per_job(svc.table_total(MANY_TABLES, DYNAMO_WRITES)):g}"
    )
    print(f"the minimum the invariants need, per job ({rows_per_job:g} delivery rows), DynamoDB item by item:")
    for need in minimum:
        operation = need.operation or "-"
        print(f"  {need.calls:>4g} call(s) {need.items:>4g} item(s)  {need.what} ({operation}): {need.why}")
    for label, calls, why in OTHER_MINIMUM:
        print(f"  {calls:>4g} call(s)               {label}: {why}")
    print(
        "per extra recipient: +2 DynamoDB writes (start delivery, mark sent) + 1 provider send; "
        "per extra Swarm comment: the same"
    )

    # ---- stage overhead from the job views ----
    durations: dict[str, list[float]] = {}
    waits: dict[str, list[float]] = {}
    for view in run.views:
        stages = view.get("stages", {})
        previous_done = _parse(view.get("created_at"))
        for stage in ("fetch", "review", "notify"):
            stage_state = stages.get(stage, {})
            started, completed = _parse(stage_state.get("started_at")), _parse(stage_state.get("completed_at"))
            if started and completed:
                durations.setdefault(stage, []).append((completed - started).total_seconds() * 1000)
            if started and previous_done:
                waits.setdefault(stage, []).append((started - previous_done).total_seconds() * 1000)
            previous_done = completed
    print(
        f"local stack per-stage overhead over {len(run.views)} jobs (EMULATOR figures: moto + in-process pollers "
        "with 1 s long polls, not AWS latency)"
    )
    print(f"{'stage':<7}  {'queue wait p50':>14}  {'p95':>8}  {'run p50':>8}  {'p95':>8}   (ms)")
    for stage in ("fetch", "review", "notify"):
        w50, w95 = _pcts(waits.get(stage, []))
        r50, r95 = _pcts(durations.get(stage, []))
        print(f"{stage:<7}  {w50:>14.1f}  {w95:>8.1f}  {r50:>8.1f}  {r95:>8.1f}")
    print("(queue wait: fetch from job created_at, later stages from the previous stage's completed_at)")

    reads = run.per_job(svc.total("dynamodb", DYNAMO_READS))
    writes = run.per_job(svc.total("dynamodb", DYNAMO_WRITES))
    write_items = run.per_job(svc.item_total("dynamodb", DYNAMO_WRITES))
    least_calls = run.minimum_dynamodb_calls()
    least_items = sum(need.items for need in minimum)
    print(
        f"cost per job (steady state): dynamodb reads={reads:g} writes={writes:g} "
        f"(items={write_items:g}) sqs sends={run.per_job(svc.get('sqs', 'SendMessage')):g} "
        f"deletes={run.per_job(src.total('sqs', SQS_DELETES) + svc.total('sqs', SQS_DELETES)):g} "
        f"visibility={run.per_job(svc.get('sqs', 'ChangeMessageVisibility')):g} "
        f"s3 puts={run.per_job(svc.get('s3', 'PutObject')):g} gets={run.per_job(svc.get('s3', 'GetObject')):g} "
        f"secrets={run.per_job(svc.get('secretsmanager', 'GetSecretValue')):g}"
    )
    print(
        f"minimum per job: dynamodb reads=0 writes={least_calls:g} (items={least_items:g}); "
        f"dynamodb x{run.dynamodb_calls() / least_calls:.2f} the minimum, all AWS requests "
        f"{run.requests():g} vs {run.minimum_requests():g} = x{run.requests() / run.minimum_requests():.2f} (goal <= x1.2)"
    )


def _parse(stamp: str | None) -> datetime | None:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")) if stamp else None


def _pcts(values: list[float]) -> tuple[float, float]:
    if len(values) < 2:
        return (values[0], values[0]) if values else (float("nan"), float("nan"))
    cuts = quantiles(values, n=100, method="inclusive")
    return cuts[49], cuts[94]


if __name__ == "__main__":
    from benchmarks.output import figures_only

    with figures_only() as log_path:
        print(f"local stack logs and metrics: {log_path}")
        bench_cost_per_job()

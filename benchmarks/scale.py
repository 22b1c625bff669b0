"""Capacity and cost model (issue 17, docs/capacity.md).

1. A release-day burst (1,000 changes in 10 minutes) through the review stage, simulated in
   simulated time (a discrete-event simulation: deterministic for a seed, no wall clock, runs in
   seconds), for W = 2, 8 and 32 workers against a fake LLM with a TPM limit, with and without the
   shared token budget. What is real: the chunk planner (`logic.chunking.plan_chunks`) and the
   user message's framing (`logic.prompts.render_user_message`, the shipped stable prompt), the
   backoff (`runtime.backoff.backoff_delay`), the attempt budget and its rules
   (`runtime.stage_runner.MAX_ATTEMPTS_PER_STAGE`, counted at claim, refunded by a deferral), the
   token budget's decisions (`logic.token_budget`, the reference model of the DynamoDB item) and
   the gate's rules (`stages.review_capacity`: wait in place, one re-ask after a 429 with
   Retry-After, defer past the last-call time from `stages.review_setup.last_call_seconds`).
   What is modelled: change sizes, the provider's latency and token count, its rate limiter.
2. The price of a review (LLM tokens for two named models, Lambda, DynamoDB, SQS, S3,
   CloudWatch, API Gateway, SES) at 1k, 10k and 100k changes a day, and the first limit that
   breaks at each size.

Every assumption is a named field below, stated again in docs/capacity.md.
Run alone: `python -m benchmarks.scale`."""

from __future__ import annotations

import ast
import heapq
import itertools
import math
import random
import statistics
from collections import deque
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from pathlib import Path

# ---- assumptions: the workload --------------------------------------------------------------


@dataclass(frozen=True)
class ChangeSizes:
    """Change sizes (an assumption, not measured here: the fixture depot has 9 changelists, too few
    for a distribution). Heavy-tailed as commit-size studies report: most changes touch a few files
    and tens of lines, a few touch hundreds. Medians 3 files and 25 changed lines a file; the
    fixtures' eight hand-written changes average ~2.4k prompt tokens (README), this ~2.1k median."""

    files_median: float = 2.0  # files = 1 + lognormal: median 3
    files_sigma: float = 1.1
    max_files: int = 300
    lines_median: float = 25.0  # changed lines per file, lognormal
    lines_sigma: float = 1.3
    max_lines: int = 5_000
    context_per_changed_line: float = 0.6  # unchanged lines shown around the changes
    tokens_per_diff_line: int = 11  # a numbered diff line, ~38 characters at 3.5 characters/token
    file_header_tokens: int = 20
    description_tokens_median: float = 80.0
    description_sigma: float = 0.8


@dataclass(frozen=True)
class ProviderModel:
    """The fake LLM. Latency = (first token + input / prefill rate + output / decode rate) x
    lognormal noise: ~20 s median for a 24k-token chunk (an assumption in line with published
    throughput figures for GPT-4.1- and Sonnet-class models, 50-100 output tokens/s). Its limiter
    is a token bucket of one minute's tokens, refilled continuously (Anthropic documents this);
    a request is admitted against its input and its max_tokens, and unused output is given back
    at the end (Anthropic documents this for output tokens). A refusal is a 429 with Retry-After
    = the seconds until the bucket holds the request (Anthropic sends one; OpenAI on some 429s)."""

    first_token_seconds: float = 0.8
    prefill_tokens_per_second: float = 8_000.0
    decode_tokens_per_second: float = 75.0
    latency_sigma: float = 0.25
    refusal_seconds: float = 0.3
    timeout_seconds: float = 90.0  # P4REVIEW_LLM_TIMEOUT_SECONDS
    output_base_tokens: float = 300.0  # output median = base + share x input
    output_share_of_input: float = 0.04
    output_sigma: float = 0.5
    # The provider's tokenizer against the service's estimate (characters / 3.5).
    tokenizer_sigma: float = 0.08


@dataclass(frozen=True)
class StageModel:
    """The review stage around the model calls, and the burst."""

    changes: int = 1_000
    burst_seconds: float = 600.0
    start_seconds: float = 0.4  # claim, read the change, plan
    finish_seconds: float = 2.0  # analyzers, store the result, complete, hand off
    max_output_tokens: int = 4_096  # P4REVIEW_LLM_MAX_OUTPUT_TOKENS
    chunk_tokens: int = 24_000  # P4REVIEW_REVIEW_CHUNK_TOKENS
    job_tokens: int = 200_000  # P4REVIEW_REVIEW_JOB_TOKENS
    budget_share: float = 0.9  # the budget is set to this share of the tier (docs/capacity.md)


# Provider tiers: OpenAI's published GPT-4.1 limits and Anthropic's Claude Sonnet 4 input-token
# limits, Tier 2 and Tier 4, as known in mid-2025 (they change: read the console's Limits page).
TIERS = {"450k TPM (tier 2)": 450_000, "2M TPM (tier 4)": 2_000_000}
WORKERS = (2, 8, 32)


# ---- the workload through the real planner --------------------------------------------------


@dataclass(frozen=True)
class Request:
    estimated_input: int  # what the service estimates and reserves (plus max output)
    provider_input: int  # what the provider counts
    output: int


@dataclass
class Job:
    index: int
    arrived: float
    requests: tuple[Request, ...]
    files: int
    attempts: int = 0
    answered: int = 0  # chunk answers stored: a retry resumes after them
    finished: float | None = None
    dead_lettered: bool = False
    busy_seconds: float = 0.0


def _system_tokens() -> int:
    from p4review.review.prompts import estimate_tokens, load_registry

    registry = load_registry()
    return estimate_tokens(registry.template(registry.stable).text)


def make_workload(seed: int, stage: StageModel, sizes: ChangeSizes, provider: ProviderModel) -> list[Job]:
    """The burst's changes: arrival times and, through the real planner, their requests."""
    from p4review.review.chunking import ChunkFile, plan_chunks
    from p4review.review.prompts import estimate_tokens, render_user_message

    rng = random.Random(seed)
    system = _system_tokens()
    jobs = []
    arrivals = sorted(rng.uniform(0, stage.burst_seconds) for _ in range(stage.changes))
    for index, arrived in enumerate(arrivals):
        count = min(sizes.max_files, 1 + int(rng.lognormvariate(math.log(sizes.files_median), sizes.files_sigma)))
        files = []
        for number in range(count):
            lines = min(
                sizes.max_lines, max(1, int(rng.lognormvariate(math.log(sizes.lines_median), sizes.lines_sigma)))
            )
            shown = lines * (1 + sizes.context_per_changed_line)
            tokens = sizes.file_header_tokens + math.ceil(shown * sizes.tokens_per_diff_line)
            files.append(
                ChunkFile(
                    depot_path=f"//depot/product/module{index % 17}/src/file_{number:03d}.cpp",
                    section="",
                    tokens=tokens,
                )
            )
        description = "d" * int(
            3.5 * min(1_143, rng.lognormvariate(math.log(sizes.description_tokens_median), sizes.description_sigma))
        )
        plan = plan_chunks(files, chunk_tokens=stage.chunk_tokens, job_tokens=stage.job_tokens)
        requests = []
        for chunk in plan.chunks:
            framing = render_user_message(
                changelist_id=100_000 + index,
                owner="dev",
                description=description,
                changed_files=chunk.paths,
                file_sections=[],
            )
            estimated = system + estimate_tokens(framing) + chunk.tokens
            counted = max(1, round(estimated * rng.lognormvariate(0, provider.tokenizer_sigma)))
            median_output = provider.output_base_tokens + provider.output_share_of_input * estimated
            output = min(
                stage.max_output_tokens,
                max(50, int(rng.lognormvariate(math.log(median_output), provider.output_sigma))),
            )
            requests.append(Request(estimated, counted, output))
        jobs.append(Job(index, arrived, tuple(requests), count))
    return jobs


# ---- a discrete-event simulation ------------------------------------------------------------

Process = Generator[float, None, None]


class Simulation:
    """Processes are generators that yield how long they wait (simulated seconds)."""

    def __init__(self) -> None:
        self.now = 0.0
        self._events: list[tuple[float, int, Callable[[], None]]] = []
        self._order = itertools.count()

    def at(self, delay: float, action: Callable[[], None]) -> None:
        heapq.heappush(self._events, (self.now + max(delay, 0.0), next(self._order), action))

    def start(self, process: Process) -> None:
        try:
            delay = next(process)
        except StopIteration:
            return
        self.at(delay, lambda: self.start(process))

    def run(self) -> None:
        while self._events:
            self.now, _, action = heapq.heappop(self._events)
            action()


class ProviderLimiter:
    """The provider's token bucket: one minute of tokens, refilled continuously."""

    def __init__(self, sim: Simulation, tokens_per_minute: int):
        self._sim = sim
        self._rate = tokens_per_minute / 60.0
        self._capacity = float(tokens_per_minute)
        self._level = float(tokens_per_minute)
        self._at = 0.0

    def _refill(self) -> None:
        self._level = min(self._capacity, self._level + (self._sim.now - self._at) * self._rate)
        self._at = self._sim.now

    def admit(self, tokens: int) -> float | None:
        """None when admitted (tokens taken), else the Retry-After in whole seconds."""
        self._refill()
        if self._level >= tokens:
            self._level -= tokens
            return None
        return float(max(1, math.ceil((tokens - self._level) / self._rate)))

    def give_back(self, tokens: int) -> None:
        self._refill()
        self._level = min(self._capacity, self._level + tokens)


@dataclass
class RunStats:
    calls: int = 0
    rate_limited: int = 0  # 429s
    deferrals: int = 0
    timeouts: int = 0  # invocations Lambda killed at the function timeout
    provider_tokens: int = 0


@dataclass(frozen=True)
class RunResult:
    workers: int
    tier: str
    budget: bool
    drain_minutes: float
    rate_limited: int
    dead_letters: int
    oldest_minutes: float
    median_minutes: float
    deferrals: int
    calls: int
    timeouts: int
    review_seconds_per_job: float  # Lambda time, waits included
    tokens_per_minute: float  # what the provider served over the drain


def simulate(
    jobs_template: list[Job],
    *,
    workers: int,
    tokens_per_minute: int,
    with_budget: bool,
    seed: int,
    stage: StageModel,
    provider: ProviderModel,
    tier: str = "",
) -> RunResult:
    """One run of the burst through the review stage with `workers` concurrent invocations."""
    from p4review.models.job import StageName
    from p4review.pipeline.backoff import RETRY_AFTER_CEILING, backoff_delay
    from p4review.pipeline.stage_runner import MAX_ATTEMPTS_PER_STAGE, lease_for
    from p4review.resources import REVIEW_QUEUE
    from p4review.review.capacity import RATE_LIMITED_REASKS
    from p4review.review.settings import ReviewerSettings
    from p4review.review.setup import last_call_seconds
    from p4review.review.token_budget import InMemoryTokenBudget

    rng = random.Random(seed + 1)
    sim = Simulation()
    limiter = ProviderLimiter(sim, tokens_per_minute)
    budget = (
        InMemoryTokenBudget(int(tokens_per_minute * stage.budget_share), lambda: math.floor(sim.now * 1000))
        if with_budget
        else None
    )
    last_call = last_call_seconds(
        ReviewerSettings.model_validate({"P4REVIEW_LLM_TIMEOUT_SECONDS": provider.timeout_seconds})
    )
    function_timeout = REVIEW_QUEUE.function_timeout_seconds
    lease = lease_for(StageName.REVIEW)
    stats = RunStats()
    jobs = [Job(j.index, j.arrived, j.requests, j.files) for j in jobs_template]
    ready: deque[Job] = deque()
    idle = [workers]

    def deliver(job: Job, delay: float) -> None:
        sim.at(delay, lambda: (ready.append(job), dispatch()))

    def dispatch() -> None:
        while idle[0] and ready:
            idle[0] -= 1
            sim.start(invocation(ready.popleft()))

    def fail(job: Job, retry_after: float | None) -> None:
        """stage_runner._fail for a retryable failure (429, timeout)."""
        if job.attempts < MAX_ATTEMPTS_PER_STAGE:
            deliver(job, backoff_delay(job.attempts, retry_after, rng))
        else:
            job.dead_lettered, job.finished = True, sim.now

    def latency(request: Request) -> float:
        seconds = (
            provider.first_token_seconds
            + request.provider_input / provider.prefill_tokens_per_second
            + request.output / provider.decode_tokens_per_second
        )
        return seconds * rng.lognormvariate(0, provider.latency_sigma)

    def reserve(need: int, started: float) -> Iterator[float]:
        """The gate's wait; raises _Deferred when the tokens come after the last call's time."""
        assert budget is not None
        grant = budget.reserve(need, max(0.0, started + last_call - sim.now))
        if not grant.granted:
            raise _Deferred(grant.wait_seconds)
        if grant.wait_seconds:
            yield grant.wait_seconds

    def invocation(job: Job) -> Process:
        started = sim.now
        job.attempts += 1  # counted at claim
        try:
            if job.attempts > MAX_ATTEMPTS_PER_STAGE:
                job.dead_lettered, job.finished = True, sim.now  # ATTEMPTS_EXHAUSTED
                return
            yield stage.start_seconds
            for request in job.requests[job.answered :]:
                need = request.estimated_input + stage.max_output_tokens
                if budget is not None:
                    yield from reserve(need, started)
                reasks = RATE_LIMITED_REASKS
                while True:
                    stats.calls += 1
                    admission = request.provider_input + stage.max_output_tokens
                    retry_after = limiter.admit(admission)
                    if retry_after is not None:
                        stats.rate_limited += 1
                        yield provider.refusal_seconds
                        if budget is not None and reasks:
                            reasks -= 1
                            budget.hold_off(retry_after)
                            try:
                                yield from reserve(need, started)
                            except _Deferred:
                                fail(job, retry_after)  # no time to wait: the 429 counts
                                return
                            continue
                        fail(job, retry_after)
                        return
                    took = latency(request)
                    if took > provider.timeout_seconds:  # the client gives up; the tokens are spent
                        yield provider.timeout_seconds
                        limiter.give_back(stage.max_output_tokens - request.output)
                        fail(job, None)
                        return
                    if sim.now + took > started + function_timeout:  # Lambda kills the invocation
                        yield started + function_timeout - sim.now
                        stats.timeouts += 1
                        deliver(job, lease)  # back when the lease (and the message's visibility) lapses
                        return
                    yield took
                    limiter.give_back(stage.max_output_tokens - request.output)
                    stats.provider_tokens += request.provider_input + request.output
                    if budget is not None:
                        budget.settle(need, request.provider_input + request.output)
                    job.answered += 1
                    break
            yield stage.finish_seconds
            job.finished = sim.now
        except _Deferred as deferred:
            job.attempts -= 1  # stage_runner._defer: the attempt is not counted
            stats.deferrals += 1
            deliver(job, min(max(deferred.wait_seconds, 1.0), RETRY_AFTER_CEILING))
        finally:
            job.busy_seconds += sim.now - started
            idle[0] += 1
            sim.at(0, dispatch)

    for job in jobs:
        deliver(job, job.arrived)
    sim.run()
    ages = [(job.finished or sim.now) - job.arrived for job in jobs]
    drain = max((job.finished or sim.now) for job in jobs)
    return RunResult(
        workers=workers,
        tier=tier,
        budget=with_budget,
        drain_minutes=drain / 60,
        rate_limited=stats.rate_limited,
        dead_letters=sum(job.dead_lettered for job in jobs),
        oldest_minutes=max(ages) / 60,
        median_minutes=statistics.median(ages) / 60,
        deferrals=stats.deferrals,
        calls=stats.calls,
        timeouts=stats.timeouts,
        review_seconds_per_job=sum(job.busy_seconds for job in jobs) / len(jobs),
        tokens_per_minute=stats.provider_tokens / (drain / 60),
    )


class _Deferred(Exception):
    def __init__(self, wait_seconds: float):
        super().__init__("deferred")
        self.wait_seconds = wait_seconds


def burst_table(
    seed: int = 17,
    *,
    stage: StageModel = StageModel(),
    sizes: ChangeSizes = ChangeSizes(),
    provider: ProviderModel = ProviderModel(),
    tiers: dict[str, int] = TIERS,
    workers: tuple[int, ...] = WORKERS,
) -> tuple[list[Job], list[RunResult]]:
    jobs = make_workload(seed, stage, sizes, provider)
    results = [
        simulate(
            jobs,
            workers=count,
            tokens_per_minute=limit,
            with_budget=with_budget,
            seed=seed,
            stage=stage,
            provider=provider,
            tier=tier,
        )
        for tier, limit in tiers.items()
        for count in workers
        for with_budget in (False, True)
    ]
    return jobs, results


# ---- the price of a review ------------------------------------------------------------------


@dataclass(frozen=True)
class LlmPrice:
    """List prices in USD per million tokens, as known on the date given (they may be stale)."""

    name: str
    input_per_million: float
    output_per_million: float
    as_of: str


LLM_PRICES = (
    LlmPrice("GPT-4.1 (OpenAI)", 2.00, 8.00, "2025-04 list price, last known"),
    LlmPrice("Claude Sonnet 4 (Anthropic)", 3.00, 15.00, "2025-05 list price, last known"),
)


@dataclass(frozen=True)
class AwsPrices:
    """us-east-1 list prices (USD), as known in 2025; today is 2026-11-25: check the pricing pages."""

    # x86_64 (docs/infra.md "Architecture"); arm64 would be 0.0000133334.
    lambda_gb_second_x86: float = 0.0000166667
    lambda_request: float = 0.20 / 1e6
    dynamodb_write_unit: float = 0.625 / 1e6  # on-demand, after the November 2024 price cut
    dynamodb_read_unit: float = 0.125 / 1e6
    sqs_request: float = 0.40 / 1e6  # standard queue, past the free tier
    s3_put: float = 0.005 / 1000
    s3_get: float = 0.0004 / 1000
    s3_gb_month: float = 0.023
    logs_ingested_gb: float = 0.50
    custom_metric_month: float = 0.30
    alarm_month: float = 0.10
    dashboard_month: float = 3.00
    api_request: float = 3.50 / 1e6  # REST API
    email: float = 0.10 / 1000  # SES
    secret_month: float = 0.40
    kms_key_month: float = 1.00


@dataclass(frozen=True)
class PerJob:
    """What one change costs in requests and seconds besides the review's model calls. DynamoDB
    requests are benchmarks/cost.py's measured counts (0 reads; with email alone, 11 writes: the
    create transaction, 3 claims, 3 completions, 2 per delivery row); the units follow from item
    sizes (job item 1-3 KB as its audit grows; a transaction bills twice): create 8 WRU, six stage
    updates ~12 WRU, two outbox writes a recipient 2 WRU each; the token budget's reservation and
    settlement, 2 WRU a chunk, come from the simulation."""

    dynamodb_write_units: float = 24.0
    dynamodb_read_units: float = 0.0
    budget_writes_per_chunk: float = 2.0
    sqs_requests: float = 9.0  # 3 sends, 3 receives, 3 deletes (event sources), heartbeats aside
    s3_puts_fixed: float = 3.0  # raw and redacted snapshots, the result; + one per chunk answer
    s3_gets: float = 3.0
    stored_kb: float = 60.0  # snapshots and result, kept 7 (raw) and 30 days (redacted)
    log_kb: float = 25.0  # four invocations' JSON logs, EMF metrics and REPORT lines
    emails: float = 2.0  # owner and one reviewer (SES; an SMTP relay prices differently)
    api_requests: float = 1.0
    ingest_seconds: float = 0.15
    fetch_seconds: float = 2.5
    notify_seconds: float = 1.5


@dataclass(frozen=True)
class Fixed:
    """Monthly costs that do not grow with changes (counts are this stack's, approximately)."""

    alarms: int = 25
    dashboards: int = 1
    custom_metrics: int = 40  # metric x dimension combinations the functions publish
    secrets: int = 6
    kms_keys: int = 3
    sweeper_runs_per_day: int = 288
    sweeper_seconds: float = 2.0
    idle_sqs_requests_per_month: float = 1.94e6  # event sources' long polls, 3 queues, while idle


def memory_gb() -> dict[str, float]:
    """Each function's memory (GB) as the CDK stack sets it: `MEMORY_MB` read from
    infra/p4review_infra/stack.py's source (importing the stack would start jsii's Node.js)."""
    tree = ast.parse((Path(__file__).resolve().parents[1] / "infra" / "p4review_infra" / "stack.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "MEMORY_MB" for t in node.targets):
            return {name: mb / 1024 for name, mb in ast.literal_eval(node.value).items()}
    raise LookupError("MEMORY_MB not found in infra/p4review_infra/stack.py")


@dataclass(frozen=True)
class ReviewProfile:
    """Per change, from the simulated workload and a run without contention."""

    input_tokens: float
    output_tokens: float
    chunks: float
    review_seconds: float


def review_profile(jobs: list[Job], uncontended: RunResult) -> ReviewProfile:
    count = len(jobs)
    return ReviewProfile(
        input_tokens=sum(r.provider_input for j in jobs for r in j.requests) / count,
        output_tokens=sum(r.output for j in jobs for r in j.requests) / count,
        chunks=sum(len(j.requests) for j in jobs) / count,
        review_seconds=uncontended.review_seconds_per_job,
    )


def daily_costs(
    changes_per_day: int,
    profile: ReviewProfile,
    *,
    per_job: PerJob = PerJob(),
    fixed: Fixed = Fixed(),
    prices: AwsPrices = AwsPrices(),
    memory: dict[str, float] | None = None,
) -> dict[str, float]:
    """USD a day, by line; fixed monthly costs are spread over 30 days."""
    gb = memory or memory_gb()
    n = changes_per_day
    lambda_seconds = (
        per_job.ingest_seconds * gb["ingest"]
        + per_job.fetch_seconds * gb["fetch"]
        + profile.review_seconds * gb["review"]
        + per_job.notify_seconds * gb["notify"]
    )
    sweeper = fixed.sweeper_runs_per_day * (
        fixed.sweeper_seconds * gb["sweeper"] * prices.lambda_gb_second_x86 + prices.lambda_request
    )
    costs = {
        "lambda": n * (lambda_seconds * prices.lambda_gb_second_x86 + 4 * prices.lambda_request) + sweeper,
        "dynamodb": n
        * (
            (per_job.dynamodb_write_units + per_job.budget_writes_per_chunk * profile.chunks)
            * prices.dynamodb_write_unit
            + per_job.dynamodb_read_units * prices.dynamodb_read_unit
        ),
        "sqs": n * per_job.sqs_requests * prices.sqs_request
        + fixed.idle_sqs_requests_per_month / 30 * prices.sqs_request,
        "s3": n
        * (
            (per_job.s3_puts_fixed + profile.chunks) * prices.s3_put
            + per_job.s3_gets * prices.s3_get
            # Held about a month: in the steady state a day's changes cost one GB-month's 30th, 30 times.
            + per_job.stored_kb / 1024 / 1024 * prices.s3_gb_month
        ),
        "cloudwatch": n * per_job.log_kb / 1024 / 1024 * prices.logs_ingested_gb
        + (
            fixed.alarms * prices.alarm_month
            + fixed.dashboards * prices.dashboard_month
            + fixed.custom_metrics * prices.custom_metric_month
        )
        / 30,
        "api_gateway_ses_secrets_kms": n * (per_job.api_requests * prices.api_request + per_job.emails * prices.email)
        + (fixed.secrets * prices.secret_month + fixed.kms_keys * prices.kms_key_month) / 30,
    }
    for price in LLM_PRICES:
        costs[f"llm: {price.name}"] = (
            n
            * (profile.input_tokens * price.input_per_million + profile.output_tokens * price.output_per_million)
            / 1e6
        )
    return costs


# ---- the first limit that breaks ------------------------------------------------------------


@dataclass(frozen=True)
class Limit:
    name: str
    limit: float
    demand: float
    note: str

    @property
    def use(self) -> float:
        return self.demand / self.limit

    def breaks_at(self, changes_per_day: int) -> float:
        """Changes a day at which this limit is reached (every demand grows with the volume)."""
        return changes_per_day / self.use


def peak_per_minute(changes_per_day: int) -> float:
    """Peak-hour arrivals a minute: 80% of a day's changes in 8 working hours, the peak hour at
    twice that hour's average (an assumption; a release-day burst is simulated separately)."""
    return changes_per_day * 0.8 / (8 * 60) * 2


BURST_PER_MINUTE = 100.0  # the release-day burst: 1,000 changes in 10 minutes


def limits_at(
    changes_per_day: int,
    profile: ReviewProfile,
    *,
    workers: int = 32,
    per_job: PerJob = PerJob(),
    per_minute: float | None = None,
) -> list[Limit]:
    """Each limit's demand at the size's peak hour (or at `per_minute` arrivals); `use` >= 1
    breaks: work queues (with the token budget) or fails (without it, or a quota)."""
    per_minute = peak_per_minute(changes_per_day) if per_minute is None else per_minute
    per_second = per_minute / 60
    tokens_per_minute = per_minute * (profile.input_tokens + profile.output_tokens)
    lambda_concurrency = per_second * (
        per_job.ingest_seconds + per_job.fetch_seconds + profile.review_seconds + per_job.notify_seconds
    )
    return [
        Limit(
            "review concurrency W",
            workers,
            per_second * profile.review_seconds,
            f"W={workers} (Little's law: arrivals x review time)",
        ),
        Limit("LLM TPM, tier 2", 450_000, tokens_per_minute, "450k TPM (GPT-4.1 / Sonnet 4 input, mid-2025)"),
        Limit("LLM TPM, tier 4", 2_000_000, tokens_per_minute, "2M TPM"),
        Limit(
            "Anthropic output TPM, tier 2", 90_000, per_minute * profile.output_tokens, "90k OTPM (Sonnet 4, mid-2025)"
        ),
        Limit("Anthropic output TPM, tier 4", 400_000, per_minute * profile.output_tokens, "400k OTPM"),
        Limit("LLM requests/min, Anthropic tier 2", 1_000, per_minute * profile.chunks, "1,000 RPM"),
        Limit("Lambda account concurrency", 1_000, lambda_concurrency, "default regional quota, all functions"),
        Limit(
            "SES daily quota",
            50_000,
            changes_per_day * per_job.emails,
            "50k/day default production quota (sandbox: 200)",
        ),
        Limit("SES send rate", 14, per_second * per_job.emails, "14 emails/s default production rate"),
        Limit(
            "budget item partition",
            1_000,
            per_second * profile.chunks * per_job.budget_writes_per_chunk,
            "1,000 WCU/s per partition",
        ),
    ]


def p4_commands_per_second(changes_per_day: int, files_per_change: float) -> float:
    """Fetch runs `p4 describe`, then `p4 diff2` and `p4 print` per file (perforce/fetcher.py):
    no fixed limit, it depends on the server."""
    return peak_per_minute(changes_per_day) / 60 * (1 + 2 * files_per_change)


# ---- report ---------------------------------------------------------------------------------


def _money(value: float) -> str:
    return f"${value:,.2f}" if value >= 1 else f"${value:.4f}"


def bench_scale() -> None:
    jobs, results = burst_table()
    requests = sum(len(j.requests) for j in jobs)
    tokens = [sum(r.estimated_input for r in j.requests) for j in jobs]
    print(
        f"capacity: a burst of {len(jobs):,} changes in 10 min (simulated, seed 17) through the real chunk planner: "
        f"{requests:,} requests; estimated input tokens per change median {statistics.median(tokens):,.0f}, "
        f"mean {statistics.mean(tokens):,.0f}, max {max(tokens):,}"
    )
    print(
        "  tier               W budget  drain min  429s  dead  oldest min  median min  deferrals  Lambda s/job  served TPM"
    )
    for r in results:
        print(
            f"  {r.tier:<18}{r.workers:>3} {'on ' if r.budget else 'off'}  {r.drain_minutes:>9.1f}  {r.rate_limited:>4}  "
            f"{r.dead_letters:>4}  {r.oldest_minutes:>10.1f}  {r.median_minutes:>10.1f}  {r.deferrals:>9}  "
            f"{r.review_seconds_per_job:>12.1f}  {r.tokens_per_minute:>10,.0f}"
        )
    uncontended = next(r for r in results if r.tier == "2M TPM (tier 4)" and r.workers == 32 and r.budget)
    profile = review_profile(jobs, uncontended)
    files = statistics.mean(j.files for j in jobs)
    print(
        f"cost model: per change {profile.input_tokens:,.0f} input + {profile.output_tokens:,.0f} output tokens, "
        f"{profile.chunks:.2f} requests, {files:.1f} files, review {profile.review_seconds:.1f} Lambda s "
        "(2M TPM, W=32, budget on); list prices, USD a day (fixed monthly costs spread over 30 days)"
    )
    for size in (1_000, 10_000, 100_000):
        costs = daily_costs(size, profile)
        aws = sum(v for k, v in costs.items() if not k.startswith("llm"))
        llm = {k[5:]: v for k, v in costs.items() if k.startswith("llm")}
        print(
            f"  {size:>7,}/day: AWS {_money(aws)} ({_money(aws / size)}/change: "
            + ", ".join(f"{k} {_money(v)}" for k, v in costs.items() if not k.startswith("llm"))
            + "); LLM "
            + ", ".join(f"{k} {_money(v)} ({_money(v / size)}/change)" for k, v in llm.items())
        )
    limits = sorted(limits_at(10_000, profile), key=lambda limit: limit.use, reverse=True)
    print("limits at the peak hour (changes/day at which each is reached; W=32):")
    print("  " + "; ".join(f"{limit.name} ({limit.note}): {limit.breaks_at(10_000):,.0f}/day" for limit in limits))
    workers_needed = peak_per_minute(10_000) / 60 * profile.review_seconds / 10_000
    print(
        f"  review workers needed at the peak hour: {workers_needed * 1_000:.1f} per 1,000 changes/day "
        f"(W=2 is reached at {2 / workers_needed:,.0f}/day, W=8 at {8 / workers_needed:,.0f}/day)"
    )
    burst = sorted(limits_at(0, profile, per_minute=BURST_PER_MINUTE), key=lambda limit: limit.use, reverse=True)
    print(
        "  during a release-day burst (100 changes/min): "
        + ", ".join(f"{limit.name} {limit.use:.0%}" for limit in burst if limit.use >= 0.5)
    )
    for size in (1_000, 10_000, 100_000):
        ranked = sorted(limits_at(size, profile), key=lambda limit: limit.use, reverse=True)
        broken = [limit for limit in ranked if limit.use >= 1]
        first = broken[0] if broken else ranked[0]
        print(
            f"  {size:>7,}/day: first limit {'broken' if broken else 'nearest'}: {first.name} at {first.use:.0%}"
            + (f" (then {', '.join(f'{b.name} {b.use:.0%}' for b in broken[1:])})" if len(broken) > 1 else "")
            + f"; p4 fetch load {p4_commands_per_second(size, files):.1f} commands/s at peak"
        )


if __name__ == "__main__":
    bench_scale()

"""Run every benchmark. Figures are wall-clock on this machine; compare ratios, not seconds."""

from __future__ import annotations

import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from statistics import median

from benchmarks.sizes import sized

REQUESTS = (200, 40)  # full, quick: read when the benchmark runs (after --quick is seen)


def bench_ingest() -> None:
    """Signed POSTs through the local API front: the real ingest (signature, conditional
    transaction, enqueue) vs a baseline handler that answers 200 at once (transport cost)."""
    requests = sized(*REQUESTS)
    import json

    from p4review.cli.api_client import ReviewApiClient
    from p4review_dev.http_front import LocalApiGateway
    from p4review_dev.stack import LocalStack

    def measure(client: ReviewApiClient, label: str) -> tuple[float, float]:
        """Median latency of a new request, and of its immediate replay (same key and body)."""
        latencies: dict[str, list[float]] = {"new": [], "replay": []}
        for index in range(requests):
            for kind in ("new", "replay"):
                started = time.perf_counter()
                answer = client.submit(
                    changelist_id=100_000 + index,
                    review_version=1,
                    kind="submitted",
                    idempotency_key=f"bench-{label}-{index}",
                )
                latencies[kind].append(time.perf_counter() - started)
                assert answer.status in (200, 201), answer.body
        return median(latencies["new"]), median(latencies["replay"])

    baseline_gateway = LocalApiGateway(lambda event, context: {"statusCode": 200, "body": json.dumps({})})
    baseline_gateway.start()
    try:
        baseline, _ = measure(ReviewApiClient(baseline_gateway.url, "x"), "baseline")
    finally:
        baseline_gateway.stop()
    with tempfile.TemporaryDirectory() as state, LocalStack(state) as stack:
        for poller in stack.pollers.values():
            poller.stop()  # measure ingest alone
        real, replay = measure(ReviewApiClient(stack.info.api_url, stack.signing_secret), "ingest")
    print(
        f"ingest POST median latency over {requests}: new job {real * 1000:.1f} ms, replay {replay * 1000:.1f} ms, "
        f"baseline (no-op handler) {baseline * 1000:.1f} ms; new job = x{real / baseline:.1f} baseline"
    )


def benchmarks() -> dict[str, Callable[[], None]]:
    """Every benchmark by the name `python -m benchmarks NAME...` (and `make bench BENCH=...`)
    selects, in the order a whole run takes them."""
    from benchmarks.cold_start import bench_cold_start
    from benchmarks.cost import bench_cost_per_job
    from benchmarks.email_latency import bench_email_latency
    from benchmarks.fetch import bench_fetch_large_change
    from benchmarks.incremental_review import bench_incremental_review
    from benchmarks.prompt_cache import bench_prompt_cache
    from benchmarks.redaction import bench_redaction
    from benchmarks.redaction_external import bench_redaction_external
    from benchmarks.review_quality import bench_review_quality
    from benchmarks.review_tokens import bench_review_tokens
    from benchmarks.scale import bench_scale
    from benchmarks.smtp_duplicates import bench_smtp_duplicate_risk
    from benchmarks.sweep_reads import bench_sweep_reads
    from benchmarks.trigger_latency import bench_trigger_latency

    return {
        "ingest": bench_ingest,
        "fetch": bench_fetch_large_change,
        "cost": bench_cost_per_job,
        "sweep": bench_sweep_reads,
        "scale": bench_scale,
        "redaction": bench_redaction,
        "redaction-external": bench_redaction_external,
        "review-tokens": bench_review_tokens,
        "incremental-review": bench_incremental_review,
        "prompt-cache": bench_prompt_cache,
        "review-quality": bench_review_quality,
        "smtp-duplicates": bench_smtp_duplicate_risk,
        "trigger-latency": bench_trigger_latency,
        "email-latency": bench_email_latency,
        "cold-start": bench_cold_start,
    }


def main(argv: list[str] | None = None) -> int:
    """Run the named benchmarks (all when none is named). Only figures and ratios reach the
    terminal; the local stack's JSON logs and metrics go to .local/bench.log (benchmarks/output.py)."""
    from benchmarks.output import figures_only
    from benchmarks.sizes import QUICK_ENV

    names = list(argv if argv is not None else sys.argv[1:])
    if "--quick" in names:  # before any benchmark module is imported: they size their inputs at import
        names.remove("--quick")
        os.environ[QUICK_ENV] = "1"
    available = benchmarks()
    names = names or list(available)
    if names[0] in ("-h", "--help"):
        print(f"python -m benchmarks [--quick] [NAME...], all when none is named; names: {' '.join(available)}")
        return 0
    unknown = [name for name in names if name not in available]
    if unknown:
        print(f"unknown benchmark(s) {', '.join(unknown)}; choose from: {' '.join(available)}", file=sys.stderr)
        return 2
    with figures_only() as log_path:
        print(f"local stack logs and metrics: {log_path}")
        started = time.perf_counter()
        beside = _start_beside(names, available)
        for name in names:
            began = time.perf_counter()
            available[name]()
            print(f"  [{name}: {time.perf_counter() - began:.0f} s]")
        for name, thread in beside.items():
            thread.join()
            print(f"  [{name}: ran beside the others]")
        print(f"{len(names) + len(beside)} benchmarks in {time.perf_counter() - started:.0f} s")
    return 0


# Quick mode only: benchmarks that mostly wait (trigger-latency's baseline waits out a 30 s client
# timeout) run in a thread beside the others, which their little CPU work perturbs a little.
_BESIDE_WHEN_QUICK = ("trigger-latency",)


def _start_beside(names: list[str], available: dict[str, Callable[[], None]]) -> dict[str, threading.Thread]:
    from benchmarks.sizes import quick

    if not quick():
        return {}
    beside = {}
    for name in _BESIDE_WHEN_QUICK:
        if name in names:
            names.remove(name)
            beside[name] = threading.Thread(target=available[name], name=name, daemon=True)
            beside[name].start()
    return beside


if __name__ == "__main__":
    sys.exit(main())

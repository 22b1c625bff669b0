"""Lambda cold start, as far as it is ours: the time to import each function's handler module
in a fresh interpreter, against `import boto3` (which every function pays, and which the issue's
goal is measured by: each handler <= 2x `import boto3`) measured side by side in the same run.

Each sample is a fresh interpreter with compiled bytecode (a deployed function has it; this
machine sets PYTHONDONTWRITEBYTECODE, so a warm-up writes it to a private prefix). The variants
alternate, so a noisy moment lands on both; the ratio is the median of per-round ratios."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HANDLERS = ("ingest", "fetch", "review", "notify", "sweeper")
_IMPORT = """
import json, sys, time
started = time.perf_counter()
__import__(sys.argv[1])
print(json.dumps(time.perf_counter() - started))
"""


def _environment(pycache: str, handler: str | None) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = pycache
    # What a function sees: its own folder and the core layer; the settings it needs to import.
    paths = [str(ROOT / "layers")] + ([str(ROOT / "functions" / handler)] if handler else [])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    env.setdefault("P4REVIEW_ENV", "bench")
    # Each handler parses its settings at import: every variable some function requires.
    for name, value in BENCH_SETTINGS.items():
        env.setdefault(name, value)
    return env


BENCH_SETTINGS = {
    **{
        f"P4REVIEW_{name}": f"bench-{name.lower()}"
        for name in (
            "JOBS_TABLE",
            "OUTBOX_TABLE",
            "FETCH_QUEUE_URL",
            "REVIEW_QUEUE_URL",
            "NOTIFY_QUEUE_URL",
            "FETCH_DLQ_URL",
            "REVIEW_DLQ_URL",
            "NOTIFY_DLQ_URL",
            "RAW_BUCKET",
            "REDACTED_BUCKET",
            "SIGNING_SECRET_ID",
            "SMTP_SECRET_ID",
            "P4_EXECUTABLE",
        )
    },
    "P4REVIEW_DEPOT_ALLOW_LIST": "//depot/...",
    "P4REVIEW_CREDENTIAL_AGE_SECRETS": "{}",
}


def _once(module: str, env: dict[str, str]) -> float:
    answer = subprocess.run(
        [sys.executable, "-c", _IMPORT, module],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        cwd=tempfile.gettempdir(),
    )
    return float(json.loads(answer.stdout)) * 1000


def handler_import_ms(rounds: int = 7) -> dict[str, tuple[float, float, float]]:
    """{handler: (median handler ms, median boto3 ms, median ratio)}."""
    with tempfile.TemporaryDirectory() as pycache:
        baseline_env = _environment(pycache, None)
        envs = {handler: _environment(pycache, handler) for handler in HANDLERS}
        _once("boto3", baseline_env)
        for handler in HANDLERS:
            _once("handler", envs[handler])
        samples: dict[str, list[tuple[float, float]]] = {handler: [] for handler in HANDLERS}
        for _ in range(rounds):
            for handler in HANDLERS:
                boto3_ms = _once("boto3", baseline_env)
                samples[handler].append((_once("handler", envs[handler]), boto3_ms))
    return {
        handler: (
            statistics.median(h for h, _ in pairs),
            statistics.median(b for _, b in pairs),
            statistics.median(h / b for h, b in pairs),
        )
        for handler, pairs in samples.items()
    }


def bench_cold_start() -> None:
    for handler, (handler_ms, boto3_ms, ratio) in handler_import_ms().items():
        verdict = "within" if ratio <= 2 else "OVER"
        print(
            f"cold start {handler}: import handler {handler_ms:.0f} ms vs import boto3 {boto3_ms:.0f} ms "
            f"= x{ratio:.2f} ({verdict} the 2x goal)"
        )


if __name__ == "__main__":
    bench_cold_start()

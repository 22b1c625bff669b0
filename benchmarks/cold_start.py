"""Lambda cold start, as far as it is ours: the time to import each function's handler module
in a fresh interpreter, against `import boto3` (which every function pays, and which the issue's
goal is measured by: each handler <= 2x `import boto3`) measured side by side in the same run.

Each sample is a fresh interpreter with compiled bytecode (a deployed function has it; this
machine sets PYTHONDONTWRITEBYTECODE, so a warm-up writes it to a private prefix). The variants
alternate, so a noisy moment lands on both; the ratio is the median of per-round ratios.

What a handler loads lazily is not hidden: in the same interpreter, after the import, the
benchmark times the first use of what the import left out (`FIRST_USE`), which the first
invocation that needs it pays, and reports import + first use against boto3 too."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from benchmarks.sizes import sized

ROOT = Path(__file__).resolve().parents[1]
# Every function infra deploys: one folder with a handler.py each.
HANDLERS = tuple(sorted(path.parent.name for path in (ROOT / "functions").glob("*/handler.py")))
# What a function builds or imports on first use instead of at import: the shared stores' settings
# block (stores/factory.py: every invocation's first get_data_access), and in review the model
# answer's validator (jsonschema) and the offline reviewer's rules (the fallback).
_STORES = "from p4review.settings.blocks import StoresBlock; StoresBlock.from_env()"
_REVIEW_ANSWERS = (
    "from p4review.review.result_parser import top_level_validator; top_level_validator()"
    "; import p4review.review.offline.reviewer"
)
FIRST_USE = {handler: _STORES for handler in HANDLERS} | {"review": f"{_STORES}; {_REVIEW_ANSWERS}"}
_IMPORT = """
import json, sys, time
started = time.perf_counter()
__import__(sys.argv[1])
imported = time.perf_counter()
exec(sys.argv[2])
print(json.dumps([imported - started, time.perf_counter() - imported]))
"""


def handler_environment(pycache: str, handler: str | None) -> dict[str, str]:
    """The environment of a fresh interpreter that imports `handler` (its folder on the path,
    the settings every function requires), or boto3 alone (None)."""
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


def _once(module: str, env: dict[str, str], first_use: str = "pass") -> tuple[float, float]:
    """(import ms, first use ms) in one fresh interpreter."""
    answer = subprocess.run(
        [sys.executable, "-c", _IMPORT, module, first_use],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        cwd=tempfile.gettempdir(),
    )
    imported, first_use = json.loads(answer.stdout)
    return imported * 1000, first_use * 1000


@dataclass(frozen=True)
class ColdStart:
    """One handler's medians over the rounds."""

    import_ms: float
    first_use_ms: float
    boto3_ms: float
    ratio: float  # import / boto3, per round
    with_first_use_ratio: float  # (import + first use) / boto3, per round


def handler_import_ms(rounds: int = sized(7, 2)) -> dict[str, ColdStart]:
    with tempfile.TemporaryDirectory() as pycache:
        baseline_env = handler_environment(pycache, None)
        envs = {handler: handler_environment(pycache, handler) for handler in HANDLERS}
        _once("boto3", baseline_env)
        for handler in HANDLERS:
            _once("handler", envs[handler], FIRST_USE[handler])
        samples: dict[str, list[tuple[float, float, float]]] = {handler: [] for handler in HANDLERS}
        for _ in range(rounds):
            for handler in HANDLERS:
                boto3_ms, _ = _once("boto3", baseline_env)
                samples[handler].append((*_once("handler", envs[handler], FIRST_USE[handler]), boto3_ms))
    return {
        handler: ColdStart(
            import_ms=statistics.median(i for i, _, _ in triples),
            first_use_ms=statistics.median(f for _, f, _ in triples),
            boto3_ms=statistics.median(b for _, _, b in triples),
            ratio=statistics.median(i / b for i, _, b in triples),
            with_first_use_ratio=statistics.median((i + f) / b for i, f, b in triples),
        )
        for handler, triples in samples.items()
    }


def bench_cold_start() -> None:
    results = handler_import_ms()
    for handler, result in results.items():
        verdict = "within" if result.ratio <= 2 else "OVER"
        print(
            f"cold start {handler}: import handler {result.import_ms:.0f} ms vs import boto3 {result.boto3_ms:.0f} ms "
            f"= x{result.ratio:.2f} ({verdict} the 2x goal); its first use of what it loads lazily "
            f"+{result.first_use_ms:.1f} ms (import + first use x{result.with_first_use_ratio:.2f})"
        )
    worst = max(results, key=lambda handler: results[handler].ratio)
    print(f"cold start, worst handler: {worst} x{results[worst].ratio:.2f} import boto3 (goal <= x2)")


if __name__ == "__main__":
    bench_cold_start()

"""How big each benchmark's inputs are: the full run (`make bench`) or the quick one
(`make bench-quick`, `python -m benchmarks --quick`), which runs every benchmark on smaller
inputs in under two minutes and prints every ratio, each still against its baseline measured in
the same run. Quick figures are noisier: the README and docs/benchmarks.md quote full runs."""

from __future__ import annotations

import os
from typing import TypeVar

QUICK_ENV = "P4REVIEW_BENCH_QUICK"
T = TypeVar("T")


def quick() -> bool:
    return os.environ.get(QUICK_ENV) == "1"


def sized(full: T, quick_value: T) -> T:
    """`full` in a full run, `quick_value` in a quick one."""
    return quick_value if quick() else full

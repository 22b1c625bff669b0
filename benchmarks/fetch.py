"""`make bench fetch`: the 300-file fixture change (48255) fetched the way the service fetches it
(describe, the depot policy lookup, one batched print of every file's sides, diffs made here)
against the path before issue 29, one p4 command per file, 8 at once (benchmarks/fetch_per_file.py),
in the same run. Each at 0 ms and at 50 ms a server command (the fake p4's P4FAKE_DELAY_MS: a
remote server's round trip and command time). Reported: p4 processes started, server commands
(an argument file's batch of 128 operands is one each, on the same connection), wall time, and
the ratio. Run alone: `python -m benchmarks fetch`."""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.sizes import sized
from p4review_dev.stack import repo_root

CHANGE = 48255
FILES = sized(300, 60)  # quick: the change's first 60 files
DELAYS_MS = sized((0, 50), (50,))
ARGFILE_BATCH = 128  # p4's default -b


def _commands(log: Path) -> tuple[int, int]:
    """(p4 processes, server commands) the fake logged."""
    processes = servers = 0
    for line in log.read_text().splitlines():
        entry = json.loads(line)
        processes += 1
        servers += -(-len(entry["argfile"]) // ARGFILE_BATCH) if "argfile" in entry else 1
    return processes, servers


def _fetch(delay_ms: int, batched: bool) -> tuple[float, int, int, int]:
    """(wall seconds, processes, server commands, files fetched) of one fetch of the change."""
    from benchmarks.fetch_per_file import PerFileRunner, per_file_diffs
    from p4review.change.analyzer_files import reads_content
    from p4review.change.depot_paths import DEFAULT_ALLOW_LIST, DepotAllowList
    from p4review.models.job import ChangeKind
    from p4review.perforce import ChangeFetcher, P4Runner
    from p4review.settings.blocks import AnalyzerSelectionBlock

    analyzers = AnalyzerSelectionBlock().enabled_analyzers()

    def keep(path: str) -> bool:
        return reads_content(path, analyzers)

    with tempfile.TemporaryDirectory() as scratch:
        log = Path(scratch) / "p4.jsonl"
        env = {"P4FAKE_LOG": str(log), "P4FAKE_DELAY_MS": str(delay_ms)}
        runner_type = P4Runner if batched else PerFileRunner
        runner = runner_type(str(repo_root() / "events" / "bin" / "p4"), timeout_seconds=120, env=env)
        fetcher = ChangeFetcher(runner, allow_list=DepotAllowList(DEFAULT_ALLOW_LIST), keep_content=keep)
        started = time.perf_counter()
        description = fetcher.describe(CHANGE, ChangeKind.SUBMITTED)
        description = description.model_copy(update={"files": description.files[:FILES]})
        policy = fetcher.read_policy(description)
        if batched:
            diffs = list(fetcher.iter_file_diffs(description, policy=policy))
        else:
            diffs = list(per_file_diffs(fetcher, runner, description, keep_content=keep))
        elapsed = time.perf_counter() - started
        processes, servers = _commands(log)
    return elapsed, processes, servers, sum(1 for d in diffs if d.unified_diff)


def bench_fetch_large_change() -> None:
    """Per delay: the per-file path, then the batched one; the ratio of their wall times."""
    os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"]
    for delay_ms in DELAYS_MS:
        before, before_processes, before_servers, before_files = _fetch(delay_ms, batched=False)
        after, after_processes, after_servers, after_files = _fetch(delay_ms, batched=True)
        assert before_files == after_files, (before_files, after_files)
        print(
            f"fetch {CHANGE} ({FILES} files, {after_files} diffs) at {delay_ms} ms a server command: "
            f"one command per file, 8 at once: {before_processes} p4 commands, {before:.2f}s; "
            f"batched: {after_processes} p4 commands ({after_servers} server commands), {after:.2f}s; "
            f"x{before / after:.1f} faster"
        )


if __name__ == "__main__":
    bench_fetch_large_change()

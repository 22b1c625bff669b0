"""The local stack in a child process (`p4review local up`), for drivers such as `make demo` and
`make chaos` that keep the stack's logs out of their own output."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

START_TIMEOUT_SECONDS = 90
# prctl(2) option: the signal a child receives when its parent dies (Linux only).
_PR_SET_PDEATHSIG = 1


def die_with_parent() -> Callable[[], None] | None:
    """A `preexec_fn` for a driver's children: on Linux, the child is SIGKILLed when the driver
    dies, however it dies (even SIGKILL), so no stage worker or stack outlives `make chaos` or
    `make demo`. None elsewhere (the drivers' SIGTERM handling still stops their children).

    Everything is resolved here, in the parent: between fork and exec the child makes one
    foreign call and nothing else (no import, no lock another thread might have held at fork).
    prctl(2) ties the signal to the *thread* that started the child: the chaos fleet's
    respawning threads live until the fleet stops, and its children are stopped then anyway."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    prctl = ctypes.CDLL(None, use_errno=True).prctl
    option, kill = _PR_SET_PDEATHSIG, int(signal.SIGKILL)

    def set_parent_death_signal() -> None:
        prctl(option, kill)

    return set_parent_death_signal


def exit_on_sigterm() -> None:
    """Turn SIGTERM into SystemExit in a driver, so its `finally` blocks stop its children."""

    def handler(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, handler)


def start_stack_process(
    state_dir: Path, extra_args: list[str] | None = None
) -> tuple[subprocess.Popen, dict[str, Any]]:
    """Start `p4review local up --port 0 [extra_args]` with its output in `<state_dir>/stack.log`
    and wait for its `stack.json`; returns the child and that state."""
    log = open(state_dir / "stack.log", "wb")
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "p4review.cli.main",
            "--state-dir",
            str(state_dir),
            "local",
            "up",
            "--port",
            "0",
            *(extra_args or []),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        preexec_fn=die_with_parent(),
    )
    state_file = state_dir / "stack.json"
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while not state_file.exists():
        if child.poll() is not None or time.monotonic() > deadline:
            child.kill()
            raise SystemExit(f"local stack did not start; see {state_dir / 'stack.log'}")
        time.sleep(0.2)
    return child, json.loads(state_file.read_text())


def stop_stack_process(child: subprocess.Popen) -> None:
    if child.poll() is None:
        child.send_signal(signal.SIGTERM)
    try:
        child.wait(timeout=30)
    except subprocess.TimeoutExpired:
        child.kill()

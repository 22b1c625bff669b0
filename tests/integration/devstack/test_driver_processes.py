"""The local drivers (`make chaos`, `make demo`) leave no process behind when they are stopped:
SIGTERM runs their cleanup, and their children die with them even when they are SIGKILLed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (exited, not yet reaped by init) counts as gone.
    status = Path(f"/proc/{pid}/status")
    return not (status.exists() and "State:\tZ" in status.read_text())


def _wait_for(path: Path, seconds: float = 20.0) -> str:
    deadline = time.monotonic() + seconds
    while not (path.exists() and path.read_text().strip()):
        assert time.monotonic() < deadline, f"{path} never written"
        time.sleep(0.05)
    return path.read_text().strip()


def _driver(tmp_path: Path, body: str) -> subprocess.Popen:
    script = tmp_path / "driver.py"
    script.write_text(textwrap.dedent(body))
    return subprocess.Popen([sys.executable, str(script), str(tmp_path)], env={**os.environ})


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl(PR_SET_PDEATHSIG) is Linux-only")
def test_a_driver_killed_with_sigkill_takes_its_children_with_it(tmp_path):
    driver = _driver(
        tmp_path,
        """
        import subprocess, sys, time
        from pathlib import Path
        from p4review_dev.stack_process import die_with_parent
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], preexec_fn=die_with_parent())
        Path(sys.argv[1], "child.pid").write_text(str(child.pid))
        time.sleep(120)
    """,
    )
    child_pid = int(_wait_for(tmp_path / "child.pid"))
    assert _alive(child_pid)
    driver.send_signal(signal.SIGKILL)
    driver.wait(10)
    deadline = time.monotonic() + 10
    while _alive(child_pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child_pid)


def test_sigterm_runs_a_drivers_cleanup(tmp_path):
    driver = _driver(
        tmp_path,
        """
        import sys, time
        from pathlib import Path
        from p4review_dev.stack_process import exit_on_sigterm
        exit_on_sigterm()
        try:
            Path(sys.argv[1], "ready").write_text("yes")
            time.sleep(120)
        finally:
            Path(sys.argv[1], "cleaned-up").write_text("yes")
    """,
    )
    _wait_for(tmp_path / "ready")
    driver.send_signal(signal.SIGTERM)
    assert driver.wait(10) == 128 + signal.SIGTERM
    assert (tmp_path / "cleaned-up").read_text() == "yes"

"""`make chaos` as part of the suite: 200 jobs through the local stack while worker processes
are SIGKILLed at random and every fault point fires; nothing lost, no email sent twice."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

SUMMARY = re.compile(r"^jobs=(\d+) succeeded=(\d+) dead_lettered=(\d+) deliveries=(\d+) duplicate_emails=(\d+) "
                     r"lost=(\d+)$")


@pytest.mark.timeout(1800)
def test_two_hundred_jobs_survive_killed_workers_and_faults(tmp_path):
    run = subprocess.run([sys.executable, "-m", "p4review.local.chaos", "--state-dir", str(tmp_path),
                          "--timeout", "1200"],
                         capture_output=True, text=True, timeout=1700)
    lines = run.stdout.strip().splitlines()
    assert lines, run.stderr[-3000:]
    match = SUMMARY.match(lines[-1])
    assert match, run.stdout[-3000:] + run.stderr[-3000:]
    jobs, succeeded, dead_lettered, deliveries, duplicate_emails, lost = map(int, match.groups())
    detail = "\n".join(lines[-30:])
    assert jobs == 200, detail
    assert duplicate_emails == 0, detail
    assert lost == 0, detail
    assert succeeded + dead_lettered == jobs, detail
    assert succeeded > 0, detail
    assert deliveries >= succeeded, detail  # one required delivery per job, each in the mailbox once
    assert "kills=0 " not in run.stdout, detail  # the workers really were killed
    assert run.returncode == 0, detail

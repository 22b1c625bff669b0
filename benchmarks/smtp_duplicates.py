"""SMTP's duplicate risk for an uncertain earlier attempt (issue 6: "measure its duplicate risk").

A plain SMTP relay cannot say whether it took a message. An attempt that was counted on the
outbox row but never marked sent is "uncertain"; notify's policy is to resend it with the same
deterministic Message-ID (`notify/stage.py`, `_reconcile_earlier_attempt`). That makes a
duplicate exactly when the uncertain attempt had in fact reached the relay. Measured on the
local stack's parts (real SMTP on loopback, the serialized moto DynamoDB), two ways:

1. The window. For each delivery: from the moment the relay stored the message to the moment
   the outbox row says sent. A worker that dies inside it leaves an uncertain attempt that did
   arrive. The windows' share of the notify stage's wall time is the probability that a worker
   dying at a random moment of a notify run causes a duplicate.

2. The outcomes. One job with RECIPIENTS reviewers, notified while 5% of outbox marks after an
   accepted send fail (`db_write_after_provider`, as in `make chaos`); failed runs are retried
   until the job succeeds. Once to a plain relay (the policy) and once to the local mailbox,
   which answers lookups by Message-ID (the baseline, in the same run).

Uses the test suite's provisioning helpers (tests/support) rather than a second copy of them.
Run alone: `python -m benchmarks.smtp_duplicates`."""

from __future__ import annotations

import os
import tempfile
import time
from collections import Counter
from pathlib import Path
from statistics import median, quantiles

from benchmarks.sizes import sized

RECIPIENTS = sized(100, 20)
MARK_WRITE_FAILURE = 0.05
MAX_RUNS = sized(60, 6)


class _TimedOutbox:
    """The real outbox; remembers when each recipient's row was marked sent (wall clock, like
    the mailbox's received_at)."""

    def __init__(self, outbox):
        self._outbox = outbox
        self.marked_at: dict[str, float] = {}

    def __getattr__(self, name):
        return getattr(self._outbox, name)

    def mark_sent(self, row, notification_id):
        answer = self._outbox.mark_sent(row, notification_id)
        self.marked_at[row.recipient] = time.time()
        return answer


def _deliver_all(mail, job, faults_spec: str) -> dict:
    from p4review import faults
    from p4review.stores.factory import get_data_access
    from p4review_dev.support.notify import notify_work, run_notify

    faults.load({"P4REVIEW_ENV": "test", "P4REVIEW_FAULTS": faults_spec} if faults_spec else {})
    outbox = _TimedOutbox(get_data_access().outbox)
    work = notify_work(outbox)
    runs, busy_seconds = 0, 0.0
    try:
        while runs < MAX_RUNS:
            runs += 1
            started = time.perf_counter()
            disposition = run_notify(job, f"bench-{runs}", work=work)
            busy_seconds += time.perf_counter() - started
            if disposition.ack:
                break
        fired = faults.fired().get("db_write_after_provider", 0)
    finally:
        faults.reset()
    messages = mail.messages()
    copies = Counter(message.message_id for message in messages)
    first_stored = {}
    for message in sorted(messages, key=lambda m: m.received_at):
        first_stored.setdefault(message.recipients[0], message.received_at)
    windows = [outbox.marked_at[r] - first_stored[r] for r in outbox.marked_at if r in first_stored]
    return {
        "runs": runs,
        "busy_seconds": busy_seconds,
        "deliveries": len(copies),
        "duplicates": sum(n - 1 for n in copies.values()),
        "uncertain": fired,
        "windows": windows,
        "job_status": get_data_access().jobs.get_job(job.job_id).status.value,
    }


def bench_smtp_duplicate_risk() -> None:
    from p4review_dev.moto_server import LocalAwsServer
    from p4review_dev.smtp_server import LocalMailServer
    from p4review_dev.support.notify import notify_service, reviewed_job, reviewers_env

    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "ERROR")
    reviewers = [f"reviewer{i:03d}@northwind-games.example" for i in range(RECIPIENTS - 1)]
    env = reviewers_env(("//depot/engine/...", reviewers))
    results = {}
    aws = LocalAwsServer()
    aws.start()
    try:
        with tempfile.TemporaryDirectory() as scratch:
            for label, lookup in (("plain relay (policy: resend)", False), ("mailbox with lookup (baseline)", True)):
                aws.reset()
                mail = LocalMailServer(
                    Path(scratch) / label.split()[0], username="relay", password="relay-password", lookup_enabled=lookup
                )
                mail.start()
                try:
                    with notify_service(aws.endpoint_url, mail, extra_env=env) as service:
                        job = reviewed_job(service)
                        # The window, without faults; then the outcomes, with them.
                        clean = _deliver_all(mail, job, "")
                        results.setdefault("window", clean)
                        mail.clear()
                        aws.reset()
                    with notify_service(aws.endpoint_url, mail, extra_env=env) as service:
                        job = reviewed_job(service)
                        results[label] = _deliver_all(
                            mail, job, f"db_write_after_provider={MARK_WRITE_FAILURE};seed=11"
                        )
                finally:
                    mail.stop()
    finally:
        aws.stop()

    clean = results["window"]
    windows_ms = sorted(w * 1000 for w in clean["windows"])
    share = sum(clean["windows"]) / clean["busy_seconds"]
    p50, p99 = median(windows_ms), quantiles(windows_ms, n=100)[98]
    print(
        f"SMTP stored -> outbox marked window over {len(windows_ms)} deliveries: p50 {p50:.1f} ms, "
        f"p99 {p99:.1f} ms; {share:.1%} of notify's wall time ({clean['busy_seconds'] / RECIPIENTS * 1000:.0f} ms "
        f"per delivery): a worker dying at a random moment of a notify run duplicates with p={share:.3f}"
    )
    for label in ("plain relay (policy: resend)", "mailbox with lookup (baseline)"):
        outcome = results[label]
        per_thousand = outcome["duplicates"] / max(1, outcome["deliveries"]) * 1000
        print(
            f"{label}: {outcome['deliveries']} deliveries in {outcome['runs']} runs, job {outcome['job_status']}, "
            f"{outcome['uncertain']} uncertain attempts that had arrived, {outcome['duplicates']} duplicates "
            f"({per_thousand:.1f} per 1,000 deliveries)"
        )
    plain, baseline = results["plain relay (policy: resend)"], results["mailbox with lookup (baseline)"]
    print(
        f"duplicates per uncertain attempt: plain relay {plain['duplicates'] / max(1, plain['uncertain']):.2f}, "
        f"lookup {baseline['duplicates'] / max(1, baseline['uncertain']):.2f}"
    )


if __name__ == "__main__":
    bench_smtp_duplicate_risk()

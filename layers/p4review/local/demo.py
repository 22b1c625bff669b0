"""`make demo`: start the local stack in a child process, replay every fixture changelist
through the signed HTTP API, show per-stage progress, print a table, stop, exit 0 on success."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

from p4review.cli.api_client import ApiAnswer, ReviewApiClient, default_idempotency_key
from p4review.local.stack import repo_root
from p4review.local.stack_process import start_stack_process, stop_stack_process

ACTIVE = {"queued", "in_progress", "retryable_failed"}


def fixture_changes() -> list[dict[str, Any]]:
    index = json.loads((repo_root() / "events" / "depot" / "index.json").read_text())
    return index["changelists"]


def _say(text: str) -> None:
    print(text, flush=True)


def _submit(client: ReviewApiClient, change: dict[str, Any], version: int, key: str | None = None) -> ApiAnswer:
    kind = change["kind"]
    return client.submit(changelist_id=change["change"], review_version=version, kind=kind,
                         idempotency_key=key or default_idempotency_key(kind, change["change"], version),
                         rerun=version > 1)


def _progress(jobs: dict[str, dict[str, Any]]) -> str:
    total = len(jobs)
    done = {stage: sum(1 for job in jobs.values() if job["stages"][stage]["status"] == "completed")
            for stage in ("fetch", "review", "notify")}
    succeeded = sum(1 for job in jobs.values() if job["status"] == "succeeded")
    return (f"fetch {done['fetch']}/{total} | review {done['review']}/{total} | "
            f"notify {done['notify']}/{total} | succeeded {succeeded}/{total}")


def _wait_for_jobs(client: ReviewApiClient, job_ids: list[str], timeout_seconds: float) -> dict[str, dict[str, Any]]:
    started = time.monotonic()
    jobs: dict[str, dict[str, Any]] = {}
    last_line = ""
    while True:
        for job_id in job_ids:
            if job_id not in jobs or jobs[job_id]["status"] in ACTIVE:
                answer = client.get_job(job_id)
                if answer.ok:
                    jobs[job_id] = answer.body
        line = _progress(jobs)
        if line != last_line:
            _say(f"  [{time.monotonic() - started:5.1f}s] {line}")
            last_line = line
        if len(jobs) == len(job_ids) and all(job["status"] not in ACTIVE for job in jobs.values()):
            return jobs
        if time.monotonic() - started > timeout_seconds:
            _say("  timed out waiting for jobs")
            return jobs
        time.sleep(0.5)


def _table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(str(row[index])) for row in [header, *rows]) for index in range(len(header))]
    line = lambda row: "  ".join(str(cell).ljust(width) for cell, width in zip(row, widths))  # noqa: E731
    return "\n".join([line(header), line(["-" * width for width in widths]), *map(line, rows)])


def run_demo(state_root: Path, timeout_seconds: float = 300) -> int:
    state_dir = (state_root / "demo").resolve()
    shutil.rmtree(state_dir, ignore_errors=True)  # no state from earlier runs
    state_dir.mkdir(parents=True)
    _say("Starting the embedded local stack (moto, SMTP, API front, stage pollers)...")
    child, state = start_stack_process(state_dir)
    try:
        client = ReviewApiClient(state["api_url"], Path(state["signing_secret_file"]).read_text().strip())
        _say(f"  API {state['api_url']}  (logs: {state_dir / 'stack.log'})")
        changes = fixture_changes()
        _say(f"Submitting {len(changes)} fixture changelists through the signed API...")
        submitted: list[tuple[dict[str, Any], int, str]] = []
        for change in changes:
            for version in range(1, int(change.get("review_versions", 1)) + 1):
                answer = _submit(client, change, version)
                if answer.status != 201:
                    _say(f"  CL {change['change']} v{version}: unexpected {answer.status} {answer.body}")
                    return 1
                submitted.append((change, version, answer.body["job_id"]))
                _say(f"  CL {change['change']:>6} v{version} {change['kind']:<9} -> 201 job {answer.body['job_id']}")
        first_change, _, first_job = submitted[0]
        replay = _submit(client, first_change, 1)
        _say(f"  replayed CL {first_change['change']} v1 with the same idempotency key -> {replay.status} "
             f"({replay.headers.get('x-p4review-replay')}), same job: {replay.body.get('job_id') == first_job}")
        _say("Processing (fetch -> review -> notify):")
        jobs = _wait_for_jobs(client, [job_id for *_, job_id in submitted], timeout_seconds)
        again = _submit(client, first_change, 1, key="demo-new-key-same-version")
        _say(f"After success, CL {first_change['change']} v1 under a new key -> {again.status} "
             f"({again.headers.get('x-p4review-replay')}): prior result, no new email")
        rows = []
        for change, version, job_id in submitted:
            job = jobs.get(job_id, {})
            summary = job.get("summary") or {}
            sent = sum(1 for delivery in job.get("deliveries") or [] if delivery["status"] == "sent")
            rows.append([job_id[:8], change["change"], f"v{version}", change["kind"], job.get("status", "?"),
                         summary.get("findings", "-"), sent])
        _say("")
        _say(_table(rows, ["job", "changelist", "version", "kind", "status", "findings", "emails"]))
        mailbox = Path(state["mailbox_dir"])
        emails = sorted(mailbox.glob("*.eml"))
        _say(f"\n{len(emails)} emails in {mailbox}")
        ok = all(row[4] == "succeeded" for row in rows) and len(emails) == sum(row[6] for row in rows)
        _say("demo: all changelists reviewed and emailed exactly once" if ok else "demo: FAILED")
        return 0 if ok else 1
    finally:
        stop_stack_process(child)
        _say("local stack stopped")

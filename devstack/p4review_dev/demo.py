"""`make demo`: start the local stack in a child process, install the Perforce trigger beside it,
and feed every fixture changelist through the trigger as p4d would (spool, detached sender),
with an API outage in the middle that the timer's drain recovers from. Shows per-stage progress,
prints a table, then each change's comments on the stack's fake Helix Swarm, stops, exits 0 only
if every job succeeded with exactly one email each and every Swarm comment was posted exactly once."""

from __future__ import annotations

import json
import shutil
import time
from email import message_from_bytes
from email.message import EmailMessage
from email.policy import default as default_policy
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from p4review.cli.api_client import ReviewApiClient
from p4review.models.job import ACTIVE_STATUSES
from p4review.notify.swarm.channel import NOTIFY_KEY, VERDICT_KEY, is_swarm_row, swarm_row_key
from p4review.notify.swarm.comments import find_marker
from p4review_dev.stack import repo_root
from p4review_dev.stack_process import start_stack_process, stop_stack_process
from p4review_dev.swarm_server import FakeSwarmControl
from p4review_dev.trigger_host import FrontDoor, TriggerHost, host_python

# The last changelists of the fixture are fired while the API is unreachable.
OUTAGE_CHANGES = 3


def fixture_changes() -> list[dict[str, Any]]:
    index = json.loads((repo_root() / "events" / "depot" / "index.json").read_text())
    return index["changelists"]


def _say(text: str) -> None:
    print(text, flush=True)


def _progress(jobs: dict[str, dict[str, Any]]) -> str:
    total = len(jobs)
    done = {
        stage: sum(1 for job in jobs.values() if job["stages"][stage]["status"] == "completed")
        for stage in ("fetch", "review", "notify")
    }
    succeeded = sum(1 for job in jobs.values() if job["status"] == "succeeded")
    return (
        f"fetch {done['fetch']}/{total} | review {done['review']}/{total} | "
        f"notify {done['notify']}/{total} | succeeded {succeeded}/{total}"
    )


def _wait_for_jobs(client: ReviewApiClient, job_ids: list[str], timeout_seconds: float) -> dict[str, dict[str, Any]]:
    started = time.monotonic()
    jobs: dict[str, dict[str, Any]] = {}
    last_line = ""
    while True:
        for job_id in job_ids:
            if job_id not in jobs or jobs[job_id]["status"] in ACTIVE_STATUSES:
                answer = client.get_job(job_id)
                if answer.ok:
                    jobs[job_id] = answer.body
        line = _progress(jobs)
        if line != last_line:
            _say(f"  [{time.monotonic() - started:5.1f}s] {line}")
            last_line = line
        if len(jobs) == len(job_ids) and all(job["status"] not in ACTIVE_STATUSES for job in jobs.values()):
            return jobs
        if time.monotonic() - started > timeout_seconds:
            _say("  timed out waiting for jobs")
            return jobs
        time.sleep(0.5)


def _table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(str(row[index])) for row in [header, *rows]) for index in range(len(header))]

    def line(row: list[str]) -> str:
        return "  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=False))

    return "\n".join([line(header), line(["-" * width for width in widths]), *map(line, rows)])


TriggerRun = tuple[str, int, int | None, int | None, str]


def trigger_runs(changes: list[dict[str, Any]]) -> tuple[list[TriggerRun], list[TriggerRun]]:
    """What p4d would fire for the fixture: (trigger type, change, %oldchangelist%, shelf version,
    label); the second list is the re-shelves that wait for the previous version's review (the
    owner read it and re-shelved: `reshelved_after_review` in the index)."""
    runs: list[TriggerRun] = []
    later: list[TriggerRun] = []
    for change in changes:
        number = change["change"]
        if change["kind"] == "shelved":
            for version in range(1, int(change.get("review_versions", 1)) + 1):
                after_review = version > 1 and change.get("reshelved_after_review")
                (later if after_review else runs).append(
                    ("shelve-commit", number, None, version, f"shelve (shelf v{version})")
                )
        elif change.get("shelved_as"):
            runs.append(
                (
                    "change-commit",
                    number,
                    int(change["shelved_as"]),
                    None,
                    f"submit (renumbered from {change['shelved_as']})",
                )
            )
        else:
            runs.append(("change-commit", number, number, None, "submit"))
    return runs, later


def _fire(host: TriggerHost, run: TriggerRun, fired_before: int, shelves: Path | None = None) -> int:
    """`shelves`: the service's fake p4 keeps the shelf this run shelves (until the next re-shelve)."""
    trigger_type, number, old, shelf_version, label = run
    host.set_shelf_version(shelf_version, number, shelves)
    status, seconds = host.fire(trigger_type, number, old)
    _say(f"  CL {number:>6} {label:<31} {trigger_type:<13} -> exit {status} in {seconds * 1000:4.0f} ms")
    if shelf_version is not None:
        # The sender asks p4 for the shelf's digests: let it see this shelf before the user re-shelves.
        host.wait_until_answered(fired_before + 1)
    return status


def _job_ids(host: TriggerHost) -> list[tuple[dict[str, Any], str]]:
    """(review request, job id) of every accepted event, oldest first; replays collapse into their job."""
    seen: dict[str, tuple[dict[str, Any], str]] = {}
    for event in host.events("done"):
        job_id = (event.get("outcome") or {}).get("job_id")
        if job_id and job_id not in seen:
            seen[job_id] = (event["request"], job_id)
    return list(seen.values())


def _read_email(path: Path) -> tuple[EmailMessage, str]:
    """A stored .eml and its plain-text part."""
    message = message_from_bytes(path.read_bytes(), policy=default_policy)
    assert isinstance(message, EmailMessage)
    body = message.get_body(preferencelist=("plain",))
    return message, body.get_content() if isinstance(body, EmailMessage) else ""


def _show_policy_notes(emails: list[Path]) -> None:
    """What the emails' footers say about the depot's .p4review.toml files (used, or why not)."""
    notes: dict[str, set[str]] = {}
    for path in emails:
        message, text = _read_email(path)
        change = str(message["Subject"]).split(" v", 1)[0].replace("[p4review] ", "")
        for line in text.splitlines():
            if line.startswith("Review policy"):
                notes.setdefault(change, set()).add(line)
    if notes:
        _say("Depot review policies (.p4review.toml), as the emails' footers report them:")
        for change, lines in sorted(notes.items()):
            for line in sorted(lines):
                _say(f"  {change}: {line}")


def _show_rerun_email(mailbox: Path, job_id: str) -> None:
    """The headings and findings of a versioned rerun's email: what changed leads."""
    for path in sorted(mailbox.glob("*.eml")):
        message, text = _read_email(path)
        if message["X-P4Review-Job"] != job_id:
            continue
        _say(f"  Subject: {message['Subject']}  (to {message['To']})")
        shown = text.split("-- Coverage --")[0].splitlines()
        for index, line in enumerate(shown):
            if line.startswith(("Since v", "#### ", "* ")):
                title = shown[index + 1].strip() if line.startswith("* ") and index + 1 < len(shown) else ""
                _say(f"    {line}  {title}".rstrip())
        return


def _sent(job: dict[str, Any], which: str) -> int:
    """A job's delivered rows: `email`, Swarm `comment` (a finding or the summary) or Swarm `notify`."""
    count = 0
    for delivery in job.get("deliveries") or []:
        recipient = delivery["recipient"]
        if delivery["status"] != "sent":
            continue
        if not is_swarm_row(recipient):
            kind = "email"
        elif recipient == swarm_row_key(NOTIFY_KEY):
            kind = "notify"
        elif recipient == swarm_row_key(VERDICT_KEY):
            kind = "verdict"
        else:
            kind = "comment"
        count += kind == which
    return count


def _show_comment(comment: dict[str, Any]) -> None:
    """A comment's first three lines and its marker (the last line)."""
    lines = [line for line in comment["body"].splitlines() if line.strip()]
    anchor = comment.get("context") or {}
    where = f" at {anchor['file']}:{anchor.get('rightLine')}" if anchor.get("file") else " (no anchor: the summary)"
    task = ", a task" if comment.get("taskState") == "open" else ""
    _say(f"  comment {comment['id']}{where}{task}:")
    for line in lines[:3]:
        _say(f"    | {line[:110]}")
    if len(lines) > 4:
        _say("    | ...")
    if len(lines) > 3:
        _say(f"    | {lines[-1]}")


def _show_swarm(swarm_url: str, accepted: list[tuple[dict[str, Any], str]], jobs: dict[str, dict[str, Any]]) -> bool:
    """Each changelist's review on the fake Swarm: comments, notifications, where to read them,
    and a few comment bodies. True when every comment is there exactly once (no marker twice, one
    comment per delivered comment row) and notified: none left delayed, at least one and at most
    one notification per delivered notify row. Fewer is right when two versions of a change are
    notified at once: Swarm's notify sends the caller's delayed comments on the review, so the
    first call may carry the other version's comments too, and the second finds none."""
    reviews = FakeSwarmControl(swarm_url).reviews_by_change()
    by_change: dict[int, list[dict[str, Any]]] = {}
    for request, job_id in accepted:
        by_change.setdefault(int(request["changelist_id"]), []).append(jobs.get(job_id, {}))
    rows = []
    problems = []
    for change, change_jobs in by_change.items():
        review = reviews.get(change)
        comments = review["comments"] if review else []
        markers = [find_marker(comment["body"]) for comment in comments]
        duplicates = len(markers) - len(set(markers))
        posted = sum(_sent(job, "comment") for job in change_jobs)
        notified = sum(_sent(job, "notify") for job in change_jobs)
        notifications = review["notifications"] if review else 0
        delayed = sum(1 for comment in comments if comment.get("delayed"))
        if duplicates or None in markers:
            problems.append(f"CL {change}: {duplicates} duplicate markers, {markers.count(None)} without one")
        if len(comments) != posted or delayed or not min(notified, 1) <= notifications <= notified:
            problems.append(
                f"CL {change}: {len(comments)} comments for {posted} posted rows ({delayed} never notified), "
                f"{notifications} notifications for {notified} notify rows"
            )
        versions = ", ".join(sorted(f"v{job.get('review_version', '?')}" for job in change_jobs))
        rows.append(
            [
                str(change),
                versions,
                str(review["id"]) if review else "-",
                str(len(comments)),
                str(notifications),
                f"GET {swarm_url}/api/v9/comments?topic=reviews/{review['id']}" if review else "",
            ]
        )
    _say(f"\nSwarm comments on the fake Helix Swarm at {swarm_url} (every change gets a review):")
    _say(_table(rows, ["changelist", "versions", "review", "comments", "notifications", "see them (basic auth)"]))
    _say(f"  (or, without credentials: GET {swarm_url}/_fake/state; gone when the stack stops)")
    sample = max(reviews.values(), key=lambda review: (len(review["comments"]) >= 3, -review["id"]), default=None)
    if sample and sample["comments"]:
        comments = sample["comments"]
        shown = comments if len(comments) <= 3 else [*comments[:2], comments[-1]]
        _say(
            f"What a comment looks like: {len(shown)} of CL {sample['change']}'s {len(comments)} "
            f"(review {sample['id']}; the last line is the marker that keeps it exactly once):"
        )
        for comment in shown:
            _show_comment(comment)
    for problem in problems:
        _say(f"  PROBLEM: {problem}")
    return bool(reviews) and not problems


def run_demo(state_root: Path, timeout_seconds: float = 300) -> int:
    state_dir = (state_root / "demo").resolve()
    shutil.rmtree(state_dir, ignore_errors=True)  # no state from earlier runs
    state_dir.mkdir(parents=True)
    _say("Starting the embedded local stack (moto, SMTP, fake Swarm, API front, stage pollers)...")
    child, state = start_stack_process(state_dir)
    door = None
    try:
        secret = Path(state["signing_secret_file"]).read_text().strip()
        client = ReviewApiClient(state["api_url"], secret)
        _say(f"  API {state['api_url']}  (logs: {state_dir / 'stack.log'})")
        _say(f"  fake Helix Swarm {state['swarm_url']}  (notify comments on each change's review)")
        api = urlsplit(state["api_url"])
        door = FrontDoor(api.port or 80)
        door.open()
        host = TriggerHost(state_dir / "trigger", api_url=door.url(api.path.strip("/")), signing_secret=secret)
        _say(f"Installed the Perforce trigger in {host.home} ({host_python()}, standard library only):")
        for line in host.run("-o").stdout.splitlines():
            _say("  " + line.strip().split(" ")[0] + " " + " ".join(line.split()[1:3]))
        for line in host.run("--ping").stdout.splitlines():
            _say("  ping: " + line)

        runs, reshelves = trigger_runs(fixture_changes())
        online, offline = runs[:-OUTAGE_CHANGES], runs[-OUTAGE_CHANGES:]
        _say("Submitting and shelving through the trigger (it spools, starts a detached sender, exits 0):")
        statuses = []
        shelves = Path(state["p4_shelves_file"])
        for run in online:
            statuses.append(_fire(host, run, len(statuses), shelves))
        host.wait_until_answered(len(online))
        _say(f"API outage: closing the API's front door ({door.url(api.path.strip('/'))} refuses connections)")
        door.close()
        for run in offline:
            statuses.append(_fire(host, run, len(statuses), shelves))
        time.sleep(1.0)  # let the detached senders try (and fail) to reach the API
        pending = host.events("pending")
        errors = sorted({event["last_error"] for event in pending if event.get("last_error")})
        _say(
            f"  spool: {len(pending)} events pending, nothing lost (the first sender stopped at: "
            f"{', '.join(errors) or 'not yet tried'})"
        )
        _say("API back: the front door opens; the timer's drain runs (p4review-trigger.py --drain):")
        door.open()
        drained = host.drain()
        for line in drained.stderr.splitlines():
            if "review_requested" in line or "drain_" in line:
                _say("  " + line.split("] ", 1)[-1][:120])
        _say("The change-commit trigger fires again for the first change (say, an admin re-ran it):")
        statuses.append(_fire(host, runs[0], len(statuses)))
        host.wait_until_answered(len(runs) + 1)
        replay = host.events("done")[-1]["outcome"]
        _say(f"  -> the API answers {replay.get('status')} ({replay.get('replay')}): the same job, no second review")

        accepted = _job_ids(host)
        _say("Processing (fetch -> review -> notify):")
        jobs = _wait_for_jobs(client, [job_id for _, job_id in accepted], timeout_seconds)
        first_request, _ = accepted[0]
        again = client.submit(
            changelist_id=first_request["changelist_id"],
            review_version=1,
            kind="submitted",
            idempotency_key="demo-new-key-same-version",
        )
        _say(
            f"After success, CL {first_request['changelist_id']} v1 under a new key -> {again.status} "
            f"({again.headers.get('x-p4review-replay')}): prior result, no new email"
        )
        if reshelves:
            _say("The owner of a shelved change reads its review, fixes one file and re-shelves:")
            for run in reshelves:
                statuses.append(_fire(host, run, len(statuses), shelves))
            known = {job_id for _, job_id in accepted}
            accepted = _job_ids(host)
            rerun_ids = [job_id for _, job_id in accepted if job_id not in known]
            jobs.update(_wait_for_jobs(client, rerun_ids, timeout_seconds))
            for job_id in rerun_ids:
                _show_rerun_email(Path(state["mailbox_dir"]), job_id)
        rows = []
        for request, job_id in accepted:
            job = jobs.get(job_id, {})
            summary = job.get("summary") or {}
            follows = request.get("follows_shelf")
            rows.append(
                [
                    job_id[:8],
                    request["changelist_id"],
                    f"v{request['review_version']}",
                    request["kind"],
                    f"shelf v{follows['review_version']} of {follows['changelist_id']}" if follows else "",
                    job.get("status", "?"),
                    summary.get("findings", "-"),
                    _sent(job, "email"),
                    _sent(job, "comment"),
                ]
            )
        _say("")
        header = ["job", "changelist", "version", "kind", "follows", "status", "findings", "emails", "comments"]
        _say(_table(rows, header))
        mailbox = Path(state["mailbox_dir"])
        emails = sorted(mailbox.glob("*.eml"))
        _show_policy_notes(emails)
        _say(f"\n{len(emails)} emails in {mailbox}; trigger log: {host.spool / 'p4review-trigger.log'}")
        swarm_ok = _show_swarm(state["swarm_url"], accepted, jobs)
        ok = (
            all(status == 0 for status in statuses)
            and len(accepted) == len(runs) + len(reshelves)
            and not host.events("pending")
            and not host.events("rejected")
            and all(row[5] == "succeeded" for row in rows)
            and len(emails) == sum(row[7] for row in rows)
            and swarm_ok
        )
        _say(
            "demo: every changelist went through the trigger, was reviewed, emailed and commented on in Swarm "
            "exactly once"
            if ok
            else "demo: FAILED"
        )
        return 0 if ok else 1
    finally:
        if door is not None:
            door.close()
        stop_stack_process(child)
        _say("local stack stopped")

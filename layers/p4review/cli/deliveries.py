"""`p4review deliveries list|retry|skip`: operator decisions on outbox rows.

A permanent delivery failure (invalid recipient, policy rejection) leaves the row `failed` and
waits for an operator, who either fixes the cause and retries, or decides not to deliver
(`skipped`). Each decision is one conditional write on the row that appends to its audit trail
(actor, ticket, note, from/to status).

Like `p4review dlq`, these commands talk to AWS directly with the operator's credentials and
the service's environment (`--env-file`, or `<state-dir>/stack.env` from `p4review local up`).

retry, in this order (each step is safe to repeat; see `retry_delivery`):
  1. refuse a job whose notify stage will never run again (succeeded or failed): the row would
     wait as pending forever, and a new send for the same version needs a versioned rerun;
  2. the row: failed -> pending (refused for a delivered row);
  3. the job: dead_lettered -> the DLQ replay of its notify stage (ticket and note in the job's
     audit), then a notify StageMessage; any other active job just gets the StageMessage and the
     stage's claim decides (a running stage keeps its lease; notify re-reads every row).
If step 3 fails, the row is pending and its last audit action is `retry`: running the same retry
again skips step 2 and completes step 3.
"""

from __future__ import annotations

import argparse
from typing import Any

from p4review.cli.common import data_access, default_actor
from p4review.cli.display import fail, print_json, print_table, say
from p4review.errors import IllegalTransitionError, NotFoundError, P4ReviewError
from p4review.models.job import JobStatus, StageName
from p4review.models.messages import StageMessage
from p4review.models.outbox import DeliveryAction, DeliveryStatus, OutboxRow

STATUSES = [status.value for status in DeliveryStatus]
# Jobs whose notify stage will not run again: a retried row of theirs would never be sent.
_CLOSED_JOBS = frozenset({JobStatus.SUCCEEDED, JobStatus.FAILED})
_ERROR_WIDTH = 60

_HEADERS = ["CHANGE", "VERSION", "RECIPIENT", "STATUS", "ATTEMPTS", "LAST ERROR", "UPDATED AT"]
_WIDTHS = [None, None, None, None, None, _ERROR_WIDTH, None]


def _cells(row: OutboxRow) -> list[Any]:
    return [
        row.changelist_id,
        row.review_version,
        row.recipient,
        row.status,
        row.attempts,
        row.last_error,
        row.updated_at,
    ]


def _find_row(outbox, args: argparse.Namespace) -> OutboxRow:
    recipient = args.recipient.strip()
    # Deliverable addresses are stored lower-cased; accept the address as the operator typed it.
    for candidate in dict.fromkeys([recipient, recipient.lower()]):
        row = outbox.get_row(args.change, candidate, args.version)
        if row is not None:
            return row
    raise NotFoundError(
        f"no delivery row for change {args.change} version {args.version} recipient {recipient} "
        "(see `p4review deliveries list`)"
    )


def _is_resumable(row: OutboxRow) -> bool:
    """A retry whose row write landed but whose job hand-off may not have."""
    return (
        row.status == DeliveryStatus.PENDING
        and not row.notified_at
        and bool(row.audit)
        and row.audit[-1].action == DeliveryAction.RETRY
    )


def retry_delivery(dal, row: OutboxRow, *, actor: str, ticket: str, note: str, dry_run: bool) -> dict[str, Any]:
    """Steps 1-3 of the module docstring. Returns the summary printed as JSON."""
    job = dal.jobs.get_job(row.job_id)
    if job is None:
        raise NotFoundError(f"job {row.job_id} of this delivery row not found")
    if job.status in _CLOSED_JOBS:
        raise IllegalTransitionError(
            f"job {job.job_id} is {job.status.value}: its notify stage will not run "
            "again, so the row would never be sent (a new delivery needs a versioned rerun)"
        )
    resumed = _is_resumable(row)
    if not resumed and (row.status != DeliveryStatus.FAILED or row.notified_at):
        # The conditional write refuses this too; saying so first keeps a dry run truthful.
        state = row.status.value + (" (delivered)" if row.notified_at else "")
        raise IllegalTransitionError(
            f"retry delivery: refused, the row is {state}: only a failed row that was never delivered can be retried"
        )
    plan, done = ("replay", "replayed") if job.status == JobStatus.DEAD_LETTERED else ("enqueue", "enqueued")
    summary: dict[str, Any] = {
        "action": "retry",
        "dry_run": dry_run,
        "resumed": resumed,
        **_ids(row),
        "job_id": job.job_id,
        "job_status": job.status.value,
    }
    if dry_run:
        return {**summary, "row_status": row.status.value, "notify": f"would_{plan}"}
    if not resumed:
        row = dal.outbox.retry_row(row, actor, ticket, note)
    try:
        if plan == "replay":
            # The DLQ replay path (dead_lettered -> in_progress, notify pending with a fresh budget,
            # audit `replayed` with ticket and note), then the message, then `replay_enqueued`.
            job = dal.job_replay.replay_stage(
                job.job_id, StageName.NOTIFY, actor=actor, ticket=ticket, note=note, from_start=False
            )
        dal.queues.send(StageMessage(job_id=job.job_id, stage=StageName.NOTIFY))
    except P4ReviewError as exc:
        raise P4ReviewError(
            f"the row is pending again, but the hand-off to notify did not complete "
            f"({exc.message}); run the same retry again"
        ) from None
    if plan == "replay":
        try:
            dal.job_replay.confirm_enqueued(job, actor=actor, stage=StageName.NOTIFY)
        except P4ReviewError:
            pass  # at worst a leftover DLQ message of this job is accepted once more (claims dedupe)
    return {**summary, "row_status": row.status.value, "job_status": job.status.value, "notify": done}


def _ids(row: OutboxRow) -> dict[str, Any]:
    return {"changelist_id": row.changelist_id, "review_version": row.review_version, "recipient": row.recipient}


def _evidence(args: argparse.Namespace) -> tuple[str, str] | None:
    ticket, note = args.ticket.strip(), args.note.strip()
    return (ticket, note) if ticket and note else None


# ---- commands -------------------------------------------------------------------------------


def cmd_list(args: argparse.Namespace) -> int:
    if args.limit < 1:
        return fail("--limit must be at least 1")
    try:
        listing = data_access(args).outbox.list_rows(DeliveryStatus(args.status) if args.status else None, args.limit)
    except P4ReviewError as exc:
        return fail(exc.message)
    rows = listing.rows
    if args.json:
        print_json([row.model_dump(mode="json") for row in rows])
    elif rows:
        print_table(_HEADERS, [_cells(row) for row in rows], widths=_WIDTHS)
    elif not listing.unreadable:
        say("no delivery rows" + (f" with status {args.status}" if args.status else ""))
    for bad in listing.unreadable:
        # Named, so it can be found and fixed; the good rows above are still shown.
        say(f"unreadable outbox item pk={bad.pk} sk={bad.sk}: invalid {', '.join(bad.fields)}")
    return 1 if listing.unreadable else 0


def cmd_retry(args: argparse.Namespace) -> int:
    evidence = _evidence(args)
    if evidence is None:
        return fail("a retry records the operator's evidence: --ticket and --note must not be blank")
    try:
        dal = data_access(args)
        row = _find_row(dal.outbox, args)
        summary = retry_delivery(
            dal, row, actor=args.actor or default_actor(), ticket=evidence[0], note=evidence[1], dry_run=args.dry_run
        )
    except P4ReviewError as exc:
        return fail(exc.message)
    print_json(summary)
    return 0


def cmd_skip(args: argparse.Namespace) -> int:
    evidence = _evidence(args)
    if evidence is None:
        return fail("a skip records the operator's decision: --ticket and --note must not be blank")
    try:
        dal = data_access(args)
        row = _find_row(dal.outbox, args)
        skipped = dal.outbox.skip_row(row, args.actor or default_actor(), *evidence)
    except P4ReviewError as exc:
        return fail(exc.message)
    print_json(
        {
            "action": "skip",
            **_ids(skipped),
            "job_id": skipped.job_id,
            "from_status": row.status.value,
            "row_status": skipped.status.value,
        }
    )
    return 0


# ---- parser ---------------------------------------------------------------------------------


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add `deliveries list|retry|skip` to a `p4review` sub-command parser set."""
    deliveries = subparsers.add_parser("deliveries", help="delivery (outbox) rows: list, retry, skip")
    commands = deliveries.add_subparsers(dest="deliveries_command", required=True)

    def env(parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--env-file", help="load KEY=VALUE environment lines first (default: <state-dir>/stack.env when present)"
        )

    def decision(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--change", type=int, required=True, help="changelist number")
        parser.add_argument("--version", type=int, required=True, help="review version")
        parser.add_argument("--recipient", required=True, help="the row's recipient address")
        parser.add_argument("--ticket", required=True, help="ticket/incident holding the evidence")
        parser.add_argument("--note", required=True, help="why (first 200 characters are audited)")
        parser.add_argument("--actor", help="who decides (audit trail; default operator:$USER)")
        env(parser)

    listing = commands.add_parser("list", help="list delivery rows, newest first")
    listing.add_argument("--status", choices=STATUSES, help="only rows with this status")
    listing.add_argument("--limit", type=int, default=100, help="at most N rows (default 100)")
    listing.add_argument("--json", action="store_true", help="JSON (with the audit trail) instead of a table")
    env(listing)
    listing.set_defaults(func=cmd_list)

    retry = commands.add_parser("retry", help="send a failed delivery again (after fixing its cause)")
    decision(retry)
    retry.add_argument("--dry-run", action="store_true", help="report what would happen; change nothing")
    retry.set_defaults(func=cmd_retry)

    skip = commands.add_parser("skip", help="decide not to deliver a failed or pending row")
    decision(skip)
    skip.set_defaults(func=cmd_skip)
    return deliveries

"""`p4review dlq list|show|redrive`: triage and replay of dead-lettered work.

These commands talk to AWS directly through the data-access layer, with the operator's AWS
credentials and the service's environment (`P4REVIEW_JOBS_TABLE`, `P4REVIEW_<STAGE>_QUEUE_URL`,
`P4REVIEW_<STAGE>_DLQ_URL`, `AWS_*`). `--env-file PATH` loads KEY=VALUE lines into the
environment first; without it, `<state-dir>/stack.env` (written by `p4review local up`) is
loaded when present and `P4REVIEW_JOBS_TABLE` is not already set.

They print only envelope fields (already sanitized by the runtime), the ids of a bare stage
message, and for anything else a body hash: never a message body. Anyone who can send to a
DLQ can forge an envelope, so every field shown goes through the CLI's display path
(cli/display.py: redacted again, control, invisible and look-alike characters escaped), and
what a body claims is never taken for a fact: a message's stage is the DLQ it was read from
(STAGE; a body claiming another stage is marked `fetch (body says review)`).
"""

from __future__ import annotations

import argparse
from typing import Any

from p4review.cli.common import data_access, default_actor
from p4review.cli.display import fail, print_json, print_table, say
from p4review.errors import ConfigError, P4ReviewError
from p4review.models.job import StageName
from p4review.pipeline.replay import BARE_FIELDS, ENVELOPE_FIELDS, parse_dead_letter, redrive

STAGES = [stage.value for stage in StageName]


def _stages(args: argparse.Namespace, dal) -> list[StageName]:
    if getattr(args, "stage", None):
        return [StageName(args.stage)]
    stages = [stage for stage in StageName if getattr(dal.settings, f"{stage.value}_dlq_url")]
    if not stages:
        raise ConfigError(
            "no dead-letter queue URL is configured (P4REVIEW_<STAGE>_DLQ_URL): "
            "pass --env-file or export the service's environment"
        )
    return stages


# ---- rendering (envelope fields only) -------------------------------------------------------


def describe(letter) -> dict[str, Any]:
    """A dead letter as operators see it: SQS metadata plus the envelope's fields only (as they
    arrived: the display path redacts and escapes them)."""
    target = parse_dead_letter(letter.body)
    row: dict[str, Any] = {
        "message_id": letter.message_id,
        "dlq_stage": letter.stage.value,
        "received_count": letter.received_count,
        "sent_at": letter.sent_at,
        "body_sha256": letter.body_sha256,
        "kind": target.kind if target else "unrecognised",
    }
    if target is None:
        return row
    if target.kind == "envelope":
        row["envelope"] = {name: letter.body[name] for name in ENVELOPE_FIELDS if name in letter.body}
    else:
        row["message"] = {name: letter.body[name] for name in BARE_FIELDS if name in letter.body}
    row.update(
        job_id=target.job_id,
        stage=target.stage.value,  # what the body claims; the DLQ's own stage is dlq_stage
        stage_mismatch=target.stage != letter.stage,
        error_class=target.error_class,
        escalated=target.escalated,
    )
    return row


def _stage_cell(info: dict[str, Any]) -> str:
    """The DLQ the message was read from; a body claiming another stage is marked, not believed."""
    if info.get("stage_mismatch"):
        return f"{info['dlq_stage']} (body says {info['stage']})"
    return str(info["dlq_stage"])


def _table_row(letter) -> list[Any]:
    info = describe(letter)
    envelope = info.get("envelope", {})
    context = envelope.get("sanitized_context")
    context = context if isinstance(context, dict) else {}
    attempts = context.get("attempts")
    attempts_text = attempts.get(info["dlq_stage"], "-") if isinstance(attempts, dict) else "-"
    if info["kind"] == "bare":
        error_class = "(sqs redrive)"
    elif info["kind"] == "unrecognised":
        error_class = "(unrecognised)"
    else:
        error_class = info.get("error_class") or "-"
    return [
        info["message_id"],
        _stage_cell(info),
        error_class,
        info.get("job_id") or "-",
        context.get("changelist_id", "-"),
        attempts_text,
        envelope.get("last_failure_at") or info.get("sent_at") or "-",
        "yes" if info.get("escalated") else "no",
    ]


_HEADERS = ["MESSAGE ID", "STAGE", "ERROR CLASS", "JOB ID", "CHANGE", "ATTEMPTS", "LAST FAILURE", "ESCALATED"]


# ---- commands -------------------------------------------------------------------------------


def cmd_dlq_list(args: argparse.Namespace) -> int:
    try:
        dal = data_access(args)
        letters = []
        for stage in _stages(args, dal):
            letters.extend(dal.dead_letters.peek(stage, max(0, args.limit - len(letters))))
            if len(letters) >= args.limit:
                break
    except P4ReviewError as exc:
        return fail(exc.message)
    if args.json:
        print_json([describe(letter) for letter in letters])
    elif letters:
        print_table(_HEADERS, [_table_row(letter) for letter in letters])
    else:
        say("no dead-lettered messages")
    return 0


def cmd_dlq_show(args: argparse.Namespace) -> int:
    try:
        dal = data_access(args)
        letter = dal.dead_letters.find(args.message_id, _stages(args, dal))
        if letter is not None:
            dal.dead_letters.release(letter.stage, letter.receipt_handle)
    except P4ReviewError as exc:
        return fail(exc.message)
    if letter is None:
        return fail(
            f"message {args.message_id} is not in the dead-letter queue "
            "(or another operator holds it: retry in 5 minutes)"
        )
    print_json(describe(letter))
    return 0


def cmd_dlq_redrive(args: argparse.Namespace) -> int:
    if bool(args.message_id) == bool(args.all):
        return fail("give one MESSAGE_ID or --all")
    if not args.dry_run and not ((args.ticket or "").strip() and (args.note or "").strip()):
        return fail("a redrive records remediation evidence: --ticket and --note are required (or use --dry-run)")
    try:
        dal = data_access(args)
        if args.message_id:
            letter = dal.dead_letters.find(args.message_id, _stages(args, dal))
            if letter is None:
                return fail(
                    f"message {args.message_id} is not in the dead-letter queue "
                    "(or another operator holds it: retry in 5 minutes)"
                )
            letters = [letter]
        else:
            letters = []
            for stage in _stages(args, dal):
                letters.extend(dal.dead_letters.take_all(stage, max(0, args.limit - len(letters))))
                if len(letters) >= args.limit:
                    break
        summary = redrive(
            letters,
            jobs_replay=dal.job_replay,
            queues=dal.queues,
            dead_letters=dal.dead_letters,
            ticket=args.ticket,
            note=args.note,
            from_start=args.from_start,
            dry_run=args.dry_run,
            actor=args.actor or default_actor(),
            progress=say,
        )
    except P4ReviewError as exc:
        return fail(exc.message)
    print_json({"dry_run": args.dry_run, **summary.as_dict()})
    return 0 if summary.ok else 1


# ---- parser ---------------------------------------------------------------------------------


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add `dlq list|show|redrive` to a `p4review` sub-command parser set."""
    dlq = subparsers.add_parser("dlq", help="dead-letter queues: triage and operator replay")
    commands = dlq.add_subparsers(dest="dlq_command", required=True)

    def common(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--stage", choices=STAGES, help="only this stage's DLQ (default: all)")
        parser.add_argument(
            "--env-file", help="load KEY=VALUE environment lines first (default: <state-dir>/stack.env when present)"
        )

    listing = commands.add_parser("list", help="list dead-lettered messages (non-destructive)")
    common(listing)
    listing.add_argument("--limit", type=int, default=100, help="at most N messages (default 100)")
    listing.add_argument("--json", action="store_true", help="JSON instead of a table")
    listing.set_defaults(func=cmd_dlq_list)

    show = commands.add_parser("show", help="show one dead-lettered message (sanitized envelope)")
    show.add_argument("message_id")
    common(show)
    show.set_defaults(func=cmd_dlq_show)

    again = commands.add_parser("redrive", help="replay dead-lettered jobs (after remediation)")
    again.add_argument("message_id", nargs="?", help="the DLQ message to replay")
    again.add_argument("--all", action="store_true", help="replay every message (up to --limit)")
    common(again)
    again.add_argument("--limit", type=int, default=100, help="with --all: at most N messages (default 100)")
    again.add_argument("--ticket", help="ticket/incident holding the remediation evidence (required)")
    again.add_argument("--note", help="what was remediated (required; first 200 characters are audited)")
    again.add_argument("--from-start", action="store_true", help="restart at fetch instead of the failed stage")
    again.add_argument("--dry-run", action="store_true", help="report what would happen; change nothing")
    again.add_argument("--actor", help="who replays (audit trail; default operator:$USER)")
    again.set_defaults(func=cmd_dlq_redrive)
    return dlq

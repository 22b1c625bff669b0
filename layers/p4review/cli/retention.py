"""`p4review retention backfill`: upgrade items written before the active-jobs index and record
retention existed (docs/runbook.md, "Upgrading to the active-jobs index and retention").

Talks to AWS directly with the operator's credentials and the service's environment (`--env-file`,
or `<state-dir>/stack.env` from `p4review local up`), like `p4review dlq`. Safe to run again and
beside the live service: every write only adds a missing attribute, conditionally.

Exit status: 0 every item done; 1 done, but malformed items were skipped (each named on stderr
by its key and the fields at fault, and counted as `skipped`); 2 stopped (AWS refused or failed:
running it again resumes, nothing is done twice)."""

from __future__ import annotations

import argparse

from p4review.cli.common import data_access
from p4review.cli.display import fail, print_json, say
from p4review.errors import P4ReviewError
from p4review.ops.stores import ops_stores


def cmd_retention_backfill(args: argparse.Namespace) -> int:
    dal = data_access(args)
    try:
        report = ops_stores(dal).retention_backfill.run()
    except P4ReviewError as exc:
        return fail(f"retention backfill stopped: {exc.message} (running it again resumes; nothing is done twice)")
    print_json(report.counts())
    for item in report.skipped:
        keys = " ".join(f"{name}={_key_text(value)}" for name, value in item.key.items())
        say(f"skipped {item.table} item {keys}: invalid {', '.join(item.fields)}")
    if report.skipped:
        say(
            f"{len(report.skipped)} malformed item(s) skipped and left as they are: repair or delete them "
            "(docs/runbook.md, 'Upgrading to the active-jobs index and retention'), then run it again"
        )
        return 1
    return 0


def _key_text(value: dict[str, object]) -> str:
    """A key attribute as stored ({"S": "JOB#..."}): its value, whatever its type."""
    return str(next(iter(value.values()), "")) if isinstance(value, dict) and len(value) == 1 else str(value)


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    retention = subparsers.add_parser("retention", help="record retention and the active-jobs index")
    commands = retention.add_subparsers(dest="retention_command", required=True)
    backfill = commands.add_parser(
        "backfill",
        help="give items written before the index and retention existed their index key and expires_at",
    )
    backfill.add_argument(
        "--env-file", help="load KEY=VALUE environment lines first (default: <state-dir>/stack.env when present)"
    )
    backfill.set_defaults(func=cmd_retention_backfill)
    return retention

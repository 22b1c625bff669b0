"""`p4review`: the operator and developer command line."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from importlib.metadata import entry_points
from pathlib import Path

from p4review.cli import check_result, deliveries, dlq, redact, retention, review_diff
from p4review.cli.api_client import ReviewApiClient, default_idempotency_key
from p4review.cli.display import print_json, say, terminal_guard

DEFAULT_STATE_DIR = Path(".local")
COMMANDS_ENTRY_POINT = "p4review.commands"


def _stack_state(state_dir: Path) -> dict:
    state_file = state_dir / "stack.json"
    if not state_file.exists():
        return {}
    return json.loads(state_file.read_text())


def _client(args: argparse.Namespace) -> ReviewApiClient:
    state = _stack_state(Path(args.state_dir))
    api = args.api or state.get("api_url")
    if not api:
        raise SystemExit("no API URL: pass --api or start `p4review local up` first")
    secret = os.environ.get("P4REVIEW_SIGNING_SECRET")
    if not secret:
        secret_file = Path(
            args.secret_file or state.get("signing_secret_file") or Path(args.state_dir) / "signing-secret"
        )
        if not secret_file.exists():
            # Not "secret: ...": the display path would take what follows for the secret.
            raise SystemExit(
                f"no signing secret (set P4REVIEW_SIGNING_SECRET or pass --secret-file; {secret_file} missing)"
            )
        secret = secret_file.read_text().strip()
    return ReviewApiClient(api, secret)


def _print_answer(answer) -> int:
    print_json(answer.body)
    return 0 if answer.ok else 1


def cmd_submit(args: argparse.Namespace) -> int:
    key = args.key or default_idempotency_key(args.kind, args.change, args.version)
    answer = _client(args).submit(
        changelist_id=args.change, review_version=args.version, kind=args.kind, idempotency_key=key, rerun=args.rerun
    )
    return _print_answer(answer)


def cmd_jobs_show(args: argparse.Namespace) -> int:
    from p4review.models.job import ACTIVE_STATUSES

    client = _client(args)
    answer = client.get_job(args.job_id)
    if args.wait and answer.ok:
        deadline = time.monotonic() + args.wait
        while answer.ok and answer.body["status"] in ACTIVE_STATUSES:
            if time.monotonic() > deadline:
                break
            stages = " ".join(f"{name}={state['status']}" for name, state in answer.body["stages"].items())
            say(f"waiting: {answer.body['status']} ({stages})")
            time.sleep(1)
            answer = client.get_job(args.job_id)
    return _print_answer(answer)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="p4review", description="Automated code review for Perforce changelists.")
    parser.add_argument(
        "--state-dir", default=str(DEFAULT_STATE_DIR), help="where the local stack keeps its state (default: .local)"
    )
    commands = parser.add_subparsers(dest="command", required=True)

    submit = commands.add_parser("submit", help="sign and post a review request (what the trigger does)")
    submit.add_argument("--api", help="API base URL (default: the running local stack)")
    submit.add_argument("--secret-file", help="file holding the signing secret")
    submit.add_argument("--change", type=int, required=True)
    submit.add_argument("--version", type=int, default=1)
    submit.add_argument("--kind", choices=["submitted", "shelved"], default="submitted")
    submit.add_argument("--rerun", action="store_true", help="request a versioned rerun")
    submit.add_argument("--key", help="idempotency key (default: p4-KIND-CHANGE-vVERSION)")
    submit.set_defaults(func=cmd_submit)

    jobs = commands.add_parser("jobs", help="review jobs").add_subparsers(dest="jobs_command", required=True)
    show = jobs.add_parser("show", help="show one job with stages, attempts, deliveries and audit trail")
    show.add_argument("job_id")
    show.add_argument("--api")
    show.add_argument("--secret-file")
    show.add_argument("--wait", type=float, default=0, help="wait up to N seconds for the job to finish")
    show.set_defaults(func=cmd_jobs_show)

    dlq.register(commands)
    deliveries.register(commands)
    retention.register(commands)
    redact.register(commands)
    check_result.register(commands)
    review_diff.register(commands)
    # Commands of installed extensions: the dev stack's `local up`, `local worker` and `demo`
    # (devstack/p4review_dev/cli.py) when it is installed beside the CLI; never imported here.
    for extension in entry_points(group=COMMANDS_ENTRY_POINT):
        extension.load()(commands)

    return parser


def main(argv: list[str] | None = None) -> int:
    # Every command's output, its help and argparse's errors too, reaches the terminal through
    # the display path's guard (cli/display.py), whatever the command prints and however.
    with terminal_guard():
        args = build_parser().parse_args(argv)
        try:
            return args.func(args)
        except SystemExit as stop:
            if not isinstance(stop.code, str):
                raise
            say(stop.code)  # a command's own refusal (`raise SystemExit("...")`), shown like any line
            return 1
        except Exception as exc:  # noqa: BLE001 - a traceback would bypass the guard (printed after it)
            # An answer or item of a shape no command expects (a forged job view, an API that is
            # down): one line through the display path, never a stack trace at the terminal.
            say(f"error: {type(exc).__name__}: {exc}")
            return 2


if __name__ == "__main__":
    sys.exit(main())

"""`p4review`: the operator and developer command line."""

from __future__ import annotations

import argparse
import faulthandler
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

from p4review.cli import check_result, deliveries, dlq, redact, retention, review_diff
from p4review.cli.api_client import ReviewApiClient, default_idempotency_key

DEFAULT_STATE_DIR = Path(".local")


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
            raise SystemExit(
                f"no signing secret: set P4REVIEW_SIGNING_SECRET or pass --secret-file ({secret_file} missing)"
            )
        secret = secret_file.read_text().strip()
    return ReviewApiClient(api, secret)


def _print_answer(answer) -> int:
    print(json.dumps(answer.body, indent=2, sort_keys=True))
    return 0 if answer.ok else 1


def _key_value(item: str) -> tuple[str, str]:
    key, sep, value = item.partition("=")
    if not sep or not key.startswith("P4REVIEW_"):
        raise SystemExit(f"--set expects P4REVIEW_NAME=VALUE, got {item!r}")
    return key, value


def cmd_local_up(args: argparse.Namespace) -> int:
    from p4review.local.stack import LocalStack

    settings = dict(_key_value(item) for item in args.set or [])
    visibility = (
        {stage: args.visibility_seconds for stage in ("fetch", "review", "notify")} if args.visibility_seconds else None
    )
    stack = LocalStack(
        args.state_dir,
        api_port=args.port,
        workers=not args.no_workers,
        lease_seconds=args.lease_seconds,
        visibility_timeouts=visibility,
        sweep_interval_seconds=args.sweep_interval,
        extra_env=settings,
    )
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    # `kill -USR1 <pid>` prints every thread's stack to stderr: for diagnosing a stuck stack.
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    info = stack.start()
    swarm = f"  fake Swarm:      {info.swarm_url} (GET /_fake/state: its reviews and comments)\n"
    print(
        f"p4review local stack is up\n"
        f"  API URL:         {info.api_url}\n"
        f"  mailbox folder:  {info.mailbox_dir}\n"
        f"  signing secret:  {info.signing_secret_file}\n"
        f"  AWS (moto):      {info.aws_endpoint}\n" + (swarm if info.swarm_url else "") + "Press Ctrl-C to stop.",
        flush=True,
    )
    try:
        while not stopping.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        stack.stop()
        print("p4review local stack stopped", flush=True)
    return 0


def cmd_local_worker(args: argparse.Namespace) -> int:
    from p4review.local.worker import run_worker
    from p4review.models.job import StageName

    return run_worker(Path(args.state_dir), StageName(args.stage), concurrency=args.concurrency)


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
            print(f"waiting: {answer.body['status']} ({stages})", file=sys.stderr, flush=True)
            time.sleep(1)
            answer = client.get_job(args.job_id)
    return _print_answer(answer)


def cmd_demo(args: argparse.Namespace) -> int:
    from p4review.local.demo import run_demo

    return run_demo(Path(args.state_dir), timeout_seconds=args.timeout)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="p4review", description="Automated code review for Perforce changelists.")
    parser.add_argument(
        "--state-dir", default=str(DEFAULT_STATE_DIR), help="where the local stack keeps its state (default: .local)"
    )
    commands = parser.add_subparsers(dest="command", required=True)

    local = commands.add_parser("local", help="the embedded local stack").add_subparsers(
        dest="local_command", required=True
    )
    up = local.add_parser("up", help="run the stack in the foreground")
    up.add_argument("--port", type=int, default=8787, help="API port on 127.0.0.1 (0 = any free port)")
    up.add_argument(
        "--no-workers",
        action="store_true",
        help="start no stage pollers; run `p4review local worker` processes instead",
    )
    up.add_argument("--lease-seconds", type=int, help="stage lease (default: function timeout + 30 s)")
    up.add_argument("--visibility-seconds", type=int, help="every stage queue's visibility timeout")
    up.add_argument("--sweep-interval", type=float, default=30.0, help="seconds between sweeper runs")
    up.add_argument(
        "--set", action="append", metavar="P4REVIEW_NAME=VALUE", help="a function setting for this stack (repeatable)"
    )
    up.set_defaults(func=cmd_local_up)
    worker = local.add_parser("worker", help="poll one stage's queue in this process (stack started first)")
    worker.add_argument("--stage", required=True, choices=["fetch", "review", "notify"])
    worker.add_argument("--concurrency", type=int, default=1, help="poller threads in this process")
    worker.set_defaults(func=cmd_local_worker)

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

    demo = commands.add_parser("demo", help="replay every fixture changelist through the local stack")
    demo.add_argument("--timeout", type=float, default=300)
    demo.set_defaults(func=cmd_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())

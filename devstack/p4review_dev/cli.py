"""The dev stack's commands in the `p4review` CLI (registered through the `p4review.commands`
entry point, so the operator CLI never imports the dev stack): `p4review local up`, `p4review
local worker` and `p4review demo`."""

from __future__ import annotations

import argparse
import faulthandler
import signal
import threading
from pathlib import Path


def _key_value(item: str) -> tuple[str, str]:
    key, sep, value = item.partition("=")
    if not sep or not key.startswith("P4REVIEW_"):
        raise SystemExit(f"--set expects P4REVIEW_NAME=VALUE, got {item!r}")
    return key, value


def cmd_local_up(args: argparse.Namespace) -> int:
    from p4review_dev.stack import LocalStack

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
    swarm = f"  fake Swarm:           {info.swarm_url} (GET /_fake/state: its reviews and comments)\n"
    # Printed through the CLI's terminal guard, which redacts what reads as a secret: a path after
    # "signing secret:" would be shown as [REDACTED:password].
    print(
        f"p4review local stack is up\n"
        f"  API URL:              {info.api_url}\n"
        f"  mailbox folder:       {info.mailbox_dir}\n"
        f"  signing secret file:  {info.signing_secret_file}\n"
        f"  AWS (moto):           {info.aws_endpoint}\n" + (swarm if info.swarm_url else "") + "Press Ctrl-C to stop.",
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
    from p4review.models.job import StageName
    from p4review_dev.worker import run_worker

    return run_worker(Path(args.state_dir), StageName(args.stage), concurrency=args.concurrency)


def cmd_demo(args: argparse.Namespace) -> int:
    from p4review_dev.demo import run_demo

    return run_demo(Path(args.state_dir), timeout_seconds=args.timeout)


def register(commands: argparse._SubParsersAction) -> None:
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

    demo = commands.add_parser("demo", help="replay every fixture changelist through the local stack")
    demo.add_argument("--timeout", type=float, default=300)
    demo.set_defaults(func=cmd_demo)

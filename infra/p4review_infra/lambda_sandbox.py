"""Invokes one handler the way Lambda's python3.12 runtime does, from the built artifact only.

Run by the runtime's Python version, isolated and without site-packages (`python3.12 -I -S`), so
nothing of the developer's venv or the editable install can be imported; standard library only.
The search path is Lambda's, with the directories the smoke test assembled in place of Lambda's:

    /var/task                              -> --task     (the function's code asset)
    /opt/python/lib/python3.12/site-packages, /opt/python -> --opt (the layers, extracted in order)
    /var/lang/lib/python3.12/site-packages -> --runtime  (boto3 and botocore, runtime-provided)

The event is read from --event; what the handler returned (or the exception it raised) and every
imported module that came from anywhere else are written to --result as JSON.
"""

import argparse
import importlib
import json
import sys
import time
import traceback
import uuid
from pathlib import Path


class LambdaContext:
    """The attributes of Lambda's context object that handlers and Powertools read."""

    def __init__(self, function_name: str, timeout_seconds: int) -> None:
        self.function_name = function_name
        self.function_version = "$LATEST"
        self.invoked_function_arn = f"arn:aws:lambda:us-east-1:123456789012:function:{function_name}"
        self.memory_limit_in_mb = 1024
        self.aws_request_id = str(uuid.uuid4())
        self.log_group_name = f"/aws/lambda/{function_name}"
        self.log_stream_name = "smoke"
        self._deadline = time.monotonic() + timeout_seconds

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


def _foreign_modules(allowed_roots: list[Path]) -> list[str]:
    """Modules loaded from a file outside the artifact, the runtime stand-in and the stdlib."""
    foreign = []
    for name, module in list(sys.modules.items()):
        origin = getattr(module, "__file__", None)
        if not origin:
            continue
        path = Path(origin).resolve()
        if not any(path.is_relative_to(root) for root in allowed_roots):
            foreign.append(f"{name}: {path}")
    return sorted(foreign)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--task", required=True, type=Path)
    parser.add_argument("--opt", required=True, type=Path)
    parser.add_argument("--runtime", required=True, type=Path)
    parser.add_argument("--handler", required=True)
    parser.add_argument("--function-name", required=True)
    parser.add_argument("--timeout", type=int, default=900)
    parser.add_argument("--event", required=True, type=Path)
    parser.add_argument("--result", required=True, type=Path)
    args = parser.parse_args()

    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    sys.path[:0] = [
        str(args.task),
        str(args.opt / "python" / "lib" / f"python{version}" / "site-packages"),
        str(args.opt / "python"),
        str(args.runtime),
    ]
    stdlib = Path(sys.base_prefix).resolve()
    # This file itself (the runtime's bootstrap in Lambda) is the one module allowed outside them.
    allowed = [args.task.resolve(), args.opt.resolve(), args.runtime.resolve(), stdlib, Path(__file__).resolve()]
    module_name, function_name = args.handler.rsplit(".", 1)
    event = json.loads(args.event.read_text())
    outcome: dict[str, object] = {"python": version}
    try:
        handler = getattr(importlib.import_module(module_name), function_name)
        outcome["result"] = handler(event, LambdaContext(args.function_name, args.timeout))
    except BaseException as exc:  # noqa: BLE001 - reported to the smoke test, which fails on it
        outcome["error"] = f"{type(exc).__name__}: {exc}"
        outcome["traceback"] = traceback.format_exc()
    outcome["foreign_modules"] = _foreign_modules(allowed)
    args.result.write_text(json.dumps(outcome, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())

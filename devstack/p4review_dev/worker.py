"""One stage's event source mapping as its own OS process: `p4review local worker --stage S`.

Runs against a local stack started with `workers=False` (the chaos test does this): it loads
`<state-dir>/stack.env`, imports the real handler from functions/<stage>/handler.py and polls the
stage queue with `concurrency` threads until SIGTERM/SIGINT. Several such processes for one
stage are several Lambda execution environments; killing one with SIGKILL is a crashed
invocation: its messages come back after their visibility timeout, its leases expire.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path

from p4review.models.job import StageName

# Exit status of a worker that died of an injected crash fault (EX_SOFTWARE).
CRASH_EXIT_CODE = 70


def run_worker(state_dir: Path, stage: StageName, *, concurrency: int = 1) -> int:
    from p4review.cli.common import load_env_file

    env_file = Path(state_dir) / "stack.env"
    if not env_file.exists():
        print(f"{env_file} not found: start the local stack first", file=sys.stderr)
        return 2
    load_env_file(env_file)
    # The fake p4 starts with `#!/usr/bin/env python3`: resolve it to this interpreter.
    interpreter_dir = str(Path(sys.executable).parent)
    if not os.environ.get("PATH", "").startswith(interpreter_dir + os.pathsep):
        os.environ["PATH"] = interpreter_dir + os.pathsep + os.environ.get("PATH", "")

    from p4review import resources as spec
    from p4review.settings.blocks import StoresBlock
    from p4review.stores.factory import new_session
    from p4review_dev.sqs_poller import SqsPoller
    from p4review_dev.stack import REGION, load_function

    settings = StoresBlock.from_env()
    queue_url = settings.needed(f"{stage.value}_queue_url")
    endpoint = os.environ["AWS_ENDPOINT_URL"]

    def sqs_client():
        return new_session(region_name=REGION, aws_access_key_id="local", aws_secret_access_key="local").client(
            "sqs", endpoint_url=endpoint
        )

    queue_arn = sqs_client().get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    handler = load_function(stage.value).lambda_handler
    queue_spec = spec.QUEUE_FOR_STAGE[stage]
    poller = SqsPoller(
        sqs_client,
        queue_url,
        queue_arn,
        handler,
        batch_size=queue_spec.batch_size,
        concurrency=concurrency,
        function_name=f"p4review-{settings.environment}-{stage.value}",
        function_timeout_seconds=queue_spec.function_timeout_seconds,
        on_injected_crash=lambda: os._exit(CRASH_EXIT_CODE),
    )
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    signal.signal(signal.SIGINT, lambda *_: stopping.set())
    poller.start()
    print(f"worker pid={os.getpid()} stage={stage.value} concurrency={concurrency}", flush=True)
    stopping.wait()
    poller.stop()
    return 0

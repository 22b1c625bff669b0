"""The Lambda context object the local stack hands each invocation (the API front, the SQS
poller, tests): the parts handlers and Powertools read."""

from __future__ import annotations

import time
import uuid

DEFAULT_ACCOUNT_ID = "123456789012"
DEFAULT_REGION = "us-east-1"


class FakeLambdaContext:
    """The parts of the Lambda context object handlers and Powertools read.

    ``get_remaining_time_in_millis()`` counts down from ``timeout_seconds`` from construction
    (one context per invocation). Nothing enforces the timeout."""

    def __init__(
        self,
        function_name: str = "p4review-local",
        *,
        timeout_seconds: float = 60.0,
        memory_limit_in_mb: int = 512,
        region: str = DEFAULT_REGION,
        account_id: str = DEFAULT_ACCOUNT_ID,
        aws_request_id: str | None = None,
    ) -> None:
        self.function_name = function_name
        self.function_version = "$LATEST"
        self.memory_limit_in_mb = memory_limit_in_mb
        self.invoked_function_arn = f"arn:aws:lambda:{region}:{account_id}:function:{function_name}"
        self.aws_request_id = aws_request_id or str(uuid.uuid4())
        self.log_group_name = f"/aws/lambda/{function_name}"
        self.log_stream_name = time.strftime("%Y/%m/%d/[$LATEST]", time.gmtime()) + uuid.uuid4().hex
        self.identity = None
        self.client_context = None
        self.tenant_id = None
        self._deadline = time.monotonic() + timeout_seconds

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))

    def __repr__(self) -> str:
        return f"FakeLambdaContext({self.function_name!r}, aws_request_id={self.aws_request_id!r})"

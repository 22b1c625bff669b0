"""The JavaScript analyzers' Lambda function (layers/analyzers-js/handler.mjs), invoked by the
review function, which has no Node.js: one synchronous invocation per analyzer and review, with
the redacted files under the names the analyzer runner made up. Errors come back as
AnalyzerUnavailable with the AWS code or the function's error type only (never the payload)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from p4review.errors import AnalyzerUnavailable

# Lambda's synchronous request limit is 6 MB; the JSON around the files needs a little room.
MAX_PAYLOAD_BYTES = 6_000_000


class JsAnalyzerFunction:
    def __init__(self, client: Any, function_name: str):
        self._client = client
        self._function_name = function_name

    def __call__(self, analyzer: str, files: Mapping[str, str]) -> str:
        payload = json.dumps({"analyzer": analyzer, "files": dict(files)}).encode()
        if len(payload) > MAX_PAYLOAD_BYTES:
            raise AnalyzerUnavailable(f"{len(payload)} bytes of files is over the function's request limit")
        try:
            response = self._client.invoke(
                FunctionName=self._function_name, InvocationType="RequestResponse", Payload=payload
            )
            body = json.loads(response["Payload"].read() or b"{}")
        except ClientError as exc:
            raise AnalyzerUnavailable(
                f"invoke failed: {exc.response.get('Error', {}).get('Code', 'unknown')}"
            ) from None
        except (BotoCoreError, ValueError) as exc:
            raise AnalyzerUnavailable(f"invoke failed: {type(exc).__name__}") from None
        if response.get("FunctionError"):
            error = body.get("errorType", "error") if isinstance(body, dict) else "error"
            raise AnalyzerUnavailable(f"the function failed: {error}")
        output = body.get("output") if isinstance(body, dict) else None
        if not isinstance(output, str):
            raise AnalyzerUnavailable("the function's answer holds no report")
        return output

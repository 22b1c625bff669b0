"""The review function's call to the JavaScript analyzers' function: one synchronous invocation,
the report back, and every failure as AnalyzerUnavailable naming a code, never the payload."""

from __future__ import annotations

import io
import json

import pytest
from botocore.exceptions import ClientError, ReadTimeoutError

from p4review.errors import AnalyzerUnavailable
from p4review.review.analyzers.js_function import MAX_PAYLOAD_BYTES, JsAnalyzerFunction
from p4review.review.settings import ReviewerSettings
from p4review.review.setup import build_analyzers

FILES = {"f0001/app.js": "el.innerHTML = secretless;\n"}


class StubLambda:
    def __init__(self, answer=None, function_error=None, raises=None):
        self.answer, self.function_error, self.raises, self.calls = answer, function_error, raises, []

    def invoke(self, **kwargs):
        self.calls.append(kwargs)
        if self.raises:
            raise self.raises
        response = {"StatusCode": 200, "Payload": io.BytesIO(json.dumps(self.answer).encode())}
        if self.function_error:
            response["FunctionError"] = self.function_error
        return response


def test_the_report_comes_back_from_one_synchronous_invocation():
    client = StubLambda(answer={"output": "[]"})
    assert JsAnalyzerFunction(client, "p4review-dev-js-analyzers")("eslint", FILES) == "[]"
    [call] = client.calls
    assert (call["FunctionName"], call["InvocationType"]) == ("p4review-dev-js-analyzers", "RequestResponse")
    assert json.loads(call["Payload"]) == {"analyzer": "eslint", "files": FILES}


@pytest.mark.parametrize(
    ("client", "expected"),
    [
        (StubLambda(answer={"errorType": "Error", "errorMessage": "el.innerHTML"}, function_error="Unhandled"),
         "the function failed: Error"),
        (StubLambda(raises=ClientError({"Error": {"Code": "TooManyRequestsException"}}, "Invoke")),
         "invoke failed: TooManyRequestsException"),
        (StubLambda(raises=ReadTimeoutError(endpoint_url="https://lambda")), "invoke failed: ReadTimeoutError"),
        (StubLambda(answer={"unexpected": 1}), "the function's answer holds no report"),
    ],
)  # fmt: skip
def test_each_failure_is_analyzer_unavailable_without_the_payload(client, expected):
    with pytest.raises(AnalyzerUnavailable) as caught:
        JsAnalyzerFunction(client, "fn")("eslint", FILES)
    assert caught.value.message == expected
    assert "innerHTML" not in caught.value.message


def test_files_over_the_request_limit_are_not_sent():
    client = StubLambda(answer={"output": "[]"})
    with pytest.raises(AnalyzerUnavailable, match="request limit"):
        JsAnalyzerFunction(client, "fn")("eslint", {"f0001/big.js": "x" * MAX_PAYLOAD_BYTES})
    assert client.calls == []


@pytest.mark.spec("RV-7")
def test_the_review_stage_uses_the_function_only_when_it_is_configured():
    class ReviewStores:
        js_analyzer_function = object()

    configured = ReviewerSettings.model_validate({"P4REVIEW_JS_ANALYZER_FUNCTION": "p4review-dev-js-analyzers"})
    assert build_analyzers(configured, ReviewStores())._node_runner is ReviewStores.js_analyzer_function
    assert build_analyzers(ReviewerSettings.model_validate({}), ReviewStores())._node_runner is None
    assert build_analyzers(ReviewerSettings.model_validate({"P4REVIEW_ANALYZERS": ""}), ReviewStores()) is None

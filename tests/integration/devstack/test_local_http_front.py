"""LocalApiGateway: real HTTP on loopback -> API Gateway REST proxy events -> handler."""

from __future__ import annotations

import base64
import http.client
import json
import threading
import time
import urllib.error
import urllib.request
from typing import Any

import pytest

from p4review_dev.http_front import LocalApiGateway
from p4review_dev.lambda_context import FakeLambdaContext


def echo(event: dict[str, Any], context: Any) -> dict[str, Any]:
    payload = {
        "event": event,
        "context": {
            "function_name": context.function_name,
            "aws_request_id": context.aws_request_id,
            "memory_limit_in_mb": context.memory_limit_in_mb,
            "invoked_function_arn": context.invoked_function_arn,
            "remaining": context.get_remaining_time_in_millis(),
        },
    }
    return {
        "statusCode": 202,
        "headers": {"Content-Type": "application/json", "X-Single": "one"},
        "multiValueHeaders": {"Set-Cookie": ["a=1", "b=2"]},
        "body": json.dumps(payload),
        "isBase64Encoded": False,
    }


def request(
    url: str, method: str = "GET", body: bytes | None = None, headers: dict[str, str] | None = None
) -> tuple[int, http.client.HTTPMessage, bytes]:
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=15) as resp:
            return resp.status, resp.headers, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.headers, err.read()


@pytest.fixture
def api():
    with LocalApiGateway(echo) as gateway:
        yield gateway


def test_builds_a_rest_proxy_event(api: LocalApiGateway) -> None:
    assert api.url == f"http://127.0.0.1:{api.port}/local" and api.port != 0
    body = json.dumps({"changelist": 1234}).encode()
    status, headers, raw = request(
        f"{api.url}/v1/reviews?dry_run=1&tag=a&tag=b",
        "POST",
        body,
        {"Content-Type": "application/json", "X-P4Review-Signature": "sig", "X-Multi": "x"},
    )
    assert status == 202
    assert headers["X-Single"] == "one"
    assert headers.get_all("Set-Cookie") == ["a=1", "b=2"]
    assert headers["x-amzn-RequestId"]
    got = json.loads(raw)
    event, ctx = got["event"], got["context"]
    assert event["resource"] == "/v1/reviews"
    assert event["path"] == "/v1/reviews"
    assert event["httpMethod"] == "POST"
    assert event["body"] == body.decode() and event["isBase64Encoded"] is False
    assert event["headers"]["X-P4Review-Signature"] == "sig"
    assert event["multiValueHeaders"]["X-Multi"] == ["x"]
    assert event["queryStringParameters"] == {"dry_run": "1", "tag": "b"}
    assert event["multiValueQueryStringParameters"]["tag"] == ["a", "b"]
    assert event["pathParameters"] is None
    rc = event["requestContext"]
    assert rc["stage"] == "local" and rc["httpMethod"] == "POST" and rc["path"] == "/local/v1/reviews"
    assert rc["identity"]["sourceIp"] == "127.0.0.1"
    assert rc["requestId"] == headers["x-amzn-RequestId"]
    assert abs(rc["requestTimeEpoch"] - time.time() * 1000) < 10_000
    assert ctx["function_name"] and ctx["aws_request_id"] and ctx["memory_limit_in_mb"] > 0
    assert ctx["invoked_function_arn"].startswith("arn:aws:lambda:us-east-1:")
    assert 0 < ctx["remaining"] <= 29_000


def test_job_resource_and_proxy_fallback(api: LocalApiGateway) -> None:
    _, _, raw = request(f"{api.url}/v1/reviews/job-42")
    event = json.loads(raw)["event"]
    assert event["resource"] == "/v1/reviews/{job_id}"
    assert event["pathParameters"] == {"job_id": "job-42"}
    assert event["body"] is None and event["queryStringParameters"] is None
    # Without the stage prefix too.
    _, _, raw = request(f"{api.base_url}/v1/reviews/job-43")
    assert json.loads(raw)["event"]["pathParameters"] == {"job_id": "job-43"}
    _, _, raw = request(f"{api.url}/health/deep")
    event = json.loads(raw)["event"]
    assert event["resource"] == "/{proxy+}" and event["pathParameters"] == {"proxy": "health/deep"}
    assert event["path"] == "/health/deep"


def test_binary_body_is_base64_both_ways() -> None:
    seen: list[dict[str, Any]] = []

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        seen.append(event)
        return {
            "statusCode": 200,
            "headers": {"Content-Type": "application/octet-stream"},
            "body": base64.b64encode(b"\x00\xff\xfe").decode(),
            "isBase64Encoded": True,
        }

    blob = bytes(range(256))
    with LocalApiGateway(handler) as api:
        status, _, raw = request(f"{api.url}/v1/reviews", "POST", blob, {"Content-Type": "application/octet-stream"})
    assert status == 200 and raw == b"\x00\xff\xfe"
    assert seen[0]["isBase64Encoded"] is True
    assert base64.b64decode(seen[0]["body"]) == blob


def test_body_over_limit_is_413_without_invoking() -> None:
    calls: list[int] = []

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        calls.append(1)
        return {"statusCode": 200, "body": "ok"}

    with LocalApiGateway(handler, max_body_bytes=1024) as api:
        status, _, raw = request(f"{api.url}/v1/reviews", "POST", b"x" * 4096)
        assert status == 413 and json.loads(raw) == {"message": "Request Too Large"}
        status, _, raw = request(f"{api.url}/v1/reviews", "POST", b"x" * 1024)
        assert status == 200 and raw == b"ok"
        assert api.counters()["rejected_too_large"] == 1
    assert calls == [1]


def test_default_limit_is_10_mib(api: LocalApiGateway) -> None:
    assert api.max_body_bytes == 10 * 1024 * 1024
    status, _, raw = request(f"{api.url}/v1/reviews", "POST", b"x" * (10 * 1024 * 1024 + 1))
    assert status == 413 and json.loads(raw)["message"] == "Request Too Large"


@pytest.mark.parametrize("behaviour", ["raise", "not-a-dict", "bad-status", "non-string-body"])
def test_handler_failure_is_502_without_trace(behaviour: str) -> None:
    def handler(event: dict[str, Any], context: Any) -> Any:
        if behaviour == "raise":
            raise RuntimeError("secret-internal-detail in /srv/app.py line 3")
        if behaviour == "not-a-dict":
            return "oops"
        if behaviour == "bad-status":
            return {"statusCode": "abc", "body": "x"}
        return {"statusCode": 200, "body": {"not": "a string"}}

    with LocalApiGateway(handler) as api:
        status, headers, raw = request(f"{api.url}/v1/reviews", "POST", b"{}")
        assert api.counters()["errors"] == 1
    assert status == 502
    assert json.loads(raw) == {"message": "Internal server error"}
    assert b"secret-internal-detail" not in raw and b"Traceback" not in raw
    assert headers["Content-Type"] == "application/json"


def test_fifty_concurrent_requests() -> None:
    active = 0
    peak = 0
    lock = threading.Lock()
    fifty_at_once = threading.Event()

    def slow(event: dict[str, Any], context: Any) -> dict[str, Any]:
        nonlocal active, peak
        with lock:
            active += 1
            peak = max(peak, active)
            if active >= 50:
                fifty_at_once.set()
        fifty_at_once.wait(20)  # an event, not a sleep: the handlers overlap however busy the machine
        with lock:
            active -= 1
        return {"statusCode": 200, "body": event["pathParameters"]["job_id"]}

    results: dict[int, tuple[int, bytes]] = {}
    errors: list[BaseException] = []
    with LocalApiGateway(slow) as api:
        barrier = threading.Barrier(60)

        def call(i: int) -> None:
            try:
                barrier.wait(timeout=10)
                status, _, raw = request(f"{api.url}/v1/reviews/j{i}")
                results[i] = (status, raw)
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=call, args=(i,)) for i in range(60)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
    assert not errors, errors[:3]
    assert results == {i: (200, f"j{i}".encode()) for i in range(60)}
    assert peak >= 50, f"only {peak} handlers ran at once"


def test_keep_alive_connection_serves_several_requests(api: LocalApiGateway) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", api.port, timeout=10)
    try:
        for i in range(3):
            conn.request("POST", f"/local/v1/reviews/k{i}", body=b"{}", headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            assert resp.status == 202
            assert json.loads(resp.read())["event"]["pathParameters"] == {"job_id": f"k{i}"}
    finally:
        conn.close()


def test_fake_lambda_context_counts_down() -> None:
    ctx = FakeLambdaContext("fn", timeout_seconds=1)
    first = ctx.get_remaining_time_in_millis()
    assert 900 < first <= 1000
    time.sleep(0.05)
    assert ctx.get_remaining_time_in_millis() < first
    assert ctx.invoked_function_arn == "arn:aws:lambda:us-east-1:123456789012:function:fn"
    assert FakeLambdaContext("fn").aws_request_id != ctx.aws_request_id


def _raw_exchange(api: LocalApiGateway, raw: bytes, timeout: float = 30) -> bytes:
    """Send raw bytes on a fresh connection; everything the front answers before it closes."""
    import socket

    with socket.create_connection((api.host, api.port), timeout=timeout) as connection:
        connection.sendall(raw)
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    return answer


def _status_and_json(answer: bytes) -> tuple[int, Any]:
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), json.loads(body)


def test_a_negative_chunk_size_is_400_not_an_uncapped_read() -> None:
    calls: list[int] = []
    with LocalApiGateway(lambda event, context: calls.append(1) or {"statusCode": 200, "body": "ok"}) as api:
        answer = _raw_exchange(
            api, b"POST /local/v1/reviews HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\n" + b"x" * 4096
        )
    assert _status_and_json(answer) == (400, {"message": "Bad Request"})
    assert calls == []


def test_a_body_shorter_than_its_content_length_is_408_after_the_read_timeout() -> None:
    """Without a read timeout the front waited for the missing bytes for ever."""
    calls: list[int] = []
    with LocalApiGateway(
        lambda event, context: calls.append(1) or {"statusCode": 200, "body": "ok"}, read_timeout_seconds=0.5
    ) as api:
        answer = _raw_exchange(api, b"POST /local/v1/reviews HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{}")
    assert _status_and_json(answer) == (408, {"message": "Request Timeout"})
    assert calls == []


@pytest.mark.parametrize(
    "raw, status",
    [
        (b"TRACE /local/v1/reviews HTTP/1.1\r\nHost: x\r\n\r\n", 501),
        (b"CONNECT example.com:443 HTTP/1.1\r\nHost: x\r\n\r\n", 501),
        (b"GET /local/" + b"a" * 70000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414),
    ],
)
def test_the_fronts_own_refusals_are_json_not_html(api: LocalApiGateway, raw: bytes, status: int) -> None:
    answer = _raw_exchange(api, raw)
    got_status, payload = _status_and_json(answer)
    assert got_status == status
    assert set(payload) == {"message"} and b"<html" not in answer.lower()
    assert b"Content-Type: application/json" in answer

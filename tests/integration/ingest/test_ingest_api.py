"""Every answer of the ingest API, through the local API Gateway front and the real
ingest handler, against the moto server."""

from __future__ import annotations

import json
import time

import pytest

from p4review.cli.api_client import ReviewApiClient
from p4review.ingest.signing import signed_headers
from p4review.models.job import AuditEvent, JobStatus
from p4review.stores.factory import get_data_access
from p4review_dev.support.harness import drain, ingest_api, provisioned_service


@pytest.fixture
def api(moto_endpoint, aws_reset):
    with provisioned_service(moto_endpoint) as service, ingest_api(service):
        yield service


def _request(**overrides):
    body = {"idempotency_key": "p4-submitted-4242-v1", "changelist_id": 4242, "review_version": 1, "kind": "submitted"}
    body.update(overrides)
    return body


def _post(api, body, **kwargs):
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return api.api.post_raw(raw, **kwargs)


def _assert_error(answer, status, code):
    assert answer.status == status, answer.body
    assert set(answer.body) == {"error"}
    assert answer.body["error"]["code"] == code
    assert "Traceback" not in json.dumps(answer.body)
    return answer.body["error"]


def _finish(job_id):
    jobs = get_data_access().jobs
    event = lambda target: AuditEvent(
        at="2026-11-21T10:00:00.000000Z",
        actor="test",
        event="forced",
        to_status=target,
    )
    jobs.transition(job_id, JobStatus.IN_PROGRESS, event(JobStatus.IN_PROGRESS))
    jobs.transition(job_id, JobStatus.SUCCEEDED, event(JobStatus.SUCCEEDED))


@pytest.mark.spec("NOT-1")
def test_new_job_is_201_and_enqueues_ids_only(api):
    answer = _post(api, _request())
    assert answer.status == 201
    assert answer.body["status"] == "queued"
    assert answer.headers["location"] == f"/v1/reviews/{answer.body['job_id']}"
    messages = drain(api.sqs, api.resources.queue_for_stage("fetch").url)
    assert [json.loads(message["Body"]) for message in messages] == [
        {
            "schema_version": "1",
            "job_id": answer.body["job_id"],
            "stage": "fetch",
            "request_id": messages and json.loads(messages[0]["Body"])["request_id"],
        }
    ]


@pytest.mark.spec("NOT-3", "IDEM-2")
def test_repeated_key_returns_the_original_job_marked_as_replay(api):
    first = _post(api, _request())
    second = _post(api, _request())
    assert (first.status, second.status) == (201, 200)
    assert second.body["job_id"] == first.body["job_id"]
    assert second.headers["x-p4review-replay"] == "idempotency-key"
    assert len(drain(api.sqs, api.resources.queue_for_stage("fetch").url)) == 1


def test_known_key_with_a_different_body_is_422(api):
    _post(api, _request())
    error = _assert_error(_post(api, _request(review_version=2)), 422, "idempotency_key_reused")
    assert error["details"]["differing_fields"] == ["review_version"]


@pytest.mark.spec("NOT-4", "IDEM-8")
def test_same_version_after_success_returns_prior_result_without_new_work(api):
    first = _post(api, _request())
    _finish(first.body["job_id"])
    drain(api.sqs, api.resources.queue_for_stage("fetch").url)
    again = _post(api, _request(idempotency_key="another-trigger-run"))
    assert again.status == 200
    assert again.body["job_id"] == first.body["job_id"]
    assert again.body["status"] == "succeeded"
    assert again.headers["x-p4review-replay"] == "same-version"
    assert drain(api.sqs, api.resources.queue_for_stage("fetch").url) == []


@pytest.mark.spec("NOT-5", "NOT-6")
def test_versioned_rerun_is_accepted_only_when_requested_and_newer(api):
    first = _post(api, _request())
    _finish(first.body["job_id"])
    rerun = _post(api, _request(idempotency_key="k-v3", review_version=3, rerun=True))
    assert rerun.status == 201
    assert rerun.body["job_id"] != first.body["job_id"]
    assert rerun.body["rerun"] is True
    error = _assert_error(_post(api, _request(idempotency_key="k-v4", review_version=4)), 409, "rerun_not_requested")
    assert error["details"]["latest_version"] == 3
    error = _assert_error(
        _post(api, _request(idempotency_key="k-v2", review_version=2, rerun=True)), 409, "stale_review_version"
    )
    assert error["details"] == {"changelist_id": 4242, "requested_version": 2, "latest_version": 3}


@pytest.mark.spec("G-4", "NOT-1")
@pytest.mark.parametrize(
    ("body", "field"),
    [
        (_request(changelist_id="4242"), "changelist_id"),
        (_request(changelist_id=-1), "changelist_id"),
        (_request(changelist_id=0), "changelist_id"),
        (_request(changelist_id=2**40), "changelist_id"),
        (_request(review_version=0), "review_version"),
        (_request(review_version=10**12), "review_version"),
        (_request(review_version=1.5), "review_version"),
        (_request(changelist_id=True), "changelist_id"),
        (_request(idempotency_key="k" * 129), "idempotency_key"),
        (_request(idempotency_key="bad\nkey"), "idempotency_key"),
        (_request(idempotency_key="tab\tkey"), "idempotency_key"),
        (_request(idempotency_key=""), "idempotency_key"),
        (_request(kind="branch"), "kind"),
        (_request(rerun="yes"), "rerun"),
        (_request(extra="field"), "extra"),
        ({k: v for k, v in _request().items() if k != "kind"}, "kind"),
    ],
)
def test_invalid_fields_are_400_with_field_errors(api, body, field):
    error = _assert_error(_post(api, body), 400, "invalid_request")
    assert field in [problem["field"] for problem in error["details"]]
    assert all(set(problem) == {"field", "problem"} for problem in error["details"])


@pytest.mark.parametrize("raw", [b"not json", b"[1, 2]", b"", b"\xff\xfe", b'{"a": 1, "a": 2}', b"1" * 5000])
def test_non_json_bodies_are_400(api, raw):
    _assert_error(_post(api, raw), 400, "invalid_json")


@pytest.mark.spec("NOT-1")
def test_key_of_128_printable_characters_is_accepted(api):
    assert _post(api, _request(idempotency_key="k" * 128)).status == 201


def test_missing_signature_is_401(api):
    answer = ReviewApiClient(api.gateway.url, api.signing_secret)
    import urllib.request

    request = urllib.request.Request(
        api.gateway.url + "/v1/reviews",
        data=json.dumps(_request()).encode(),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    try:
        urllib.request.urlopen(request)
        raise AssertionError("expected 401")
    except urllib.error.HTTPError as error:
        assert error.code == 401
        assert json.loads(error.read())["error"]["code"] == "signature_missing"
    assert answer  # the client itself signs; see the other tests


@pytest.mark.spec("CH-4")
@pytest.mark.parametrize("timestamp", ["17\u00b2", "\u00b9\u00b2\u00b3"])
def test_a_unicode_digit_timestamp_is_401_not_500(api, timestamp):
    """Found by a hostile-input probe: `isdigit()` accepted superscripts, `int()` refused them."""
    import urllib.request

    request = urllib.request.Request(
        api.gateway.url + "/v1/reviews",
        data=json.dumps(_request()).encode(),
        method="POST",
        headers={
            "Content-Type": "application/json",
            "X-P4Review-Timestamp": timestamp,  # sent as latin-1
            "X-P4Review-Signature": "v1=00",
        },
    )
    try:
        urllib.request.urlopen(request)
        raise AssertionError("expected 401")
    except urllib.error.HTTPError as error:
        assert error.code == 401
        assert json.loads(error.read())["error"]["code"] == "signature_invalid"


def test_wrong_secret_is_401(api):
    answer = ReviewApiClient(api.gateway.url, "not-the-secret").submit(
        changelist_id=1, review_version=1, kind="submitted", idempotency_key="x"
    )
    _assert_error(answer, 401, "signature_invalid")


def test_stale_timestamp_is_401(api):
    import urllib.request

    body = json.dumps(_request()).encode()
    headers = signed_headers(api.signing_secret, int(time.time()) - 301, "POST", "/v1/reviews", body)
    request = urllib.request.Request(api.gateway.url + "/v1/reviews", data=body, method="POST", headers=headers)
    with pytest.raises(urllib.error.HTTPError) as error:
        urllib.request.urlopen(request)
    assert error.value.code == 401
    assert json.loads(error.value.read())["error"]["code"] == "signature_expired"


@pytest.mark.spec("SEC-21", "SEC-22")
def test_previous_secret_is_accepted_after_rotation(api):
    secrets_client = api.client("secretsmanager")
    secret_id = api.resources.secrets["trigger-signing"]
    secrets_client.put_secret_value(SecretId=secret_id, SecretString="the-new-secret")
    old = _post(api, _request())
    new = ReviewApiClient(api.gateway.url, "the-new-secret").submit(
        changelist_id=77, review_version=1, kind="submitted", idempotency_key="after-rotation"
    )
    assert (old.status, new.status) == (201, 201)


def test_oversize_body_is_413(api):
    _assert_error(_post(api, _request(idempotency_key="k", padding="x" * 20_000)), 413, "body_too_large")


@pytest.mark.spec("G-1")
def test_get_returns_the_job_with_stages_and_audit(api):
    created = _post(api, _request())
    shown = api.api.get_job(created.body["job_id"])
    assert shown.status == 200
    assert set(shown.body["stages"]) == {"fetch", "review", "notify"}
    assert shown.body["stages"]["fetch"] == {"status": "pending", "attempts": 0}
    assert shown.body["deliveries"] == []
    assert [event["event"] for event in shown.body["audit"]] == ["job_created"]


def test_get_unknown_job_is_404_and_malformed_id_is_400(api):
    _assert_error(api.api.get_job("00000000-0000-0000-0000-000000000000"), 404, "job_not_found")
    _assert_error(api.api.get_job("not-a-job"), 400, "invalid_job_id")


def test_get_requires_a_signature(api):
    created = _post(api, _request())
    answer = ReviewApiClient(api.gateway.url, "wrong").get_job(created.body["job_id"])
    _assert_error(answer, 401, "signature_invalid")


def test_unknown_route_is_404_json(api):
    import urllib.request

    with pytest.raises(urllib.error.HTTPError) as error:
        urllib.request.urlopen(api.gateway.url + "/v2/anything")
    assert error.value.code == 404
    assert json.loads(error.value.read())["error"]["code"] == "route_not_found"


@pytest.mark.spec("CH-4")
@pytest.mark.parametrize(
    "method, path, allowed",
    [
        *[(method, "/v1/reviews", "POST") for method in ("PUT", "DELETE", "PATCH", "OPTIONS", "GET", "HEAD")],
        ("POST", "/v1/reviews/00000000-0000-0000-0000-000000000000", "GET"),
        ("DELETE", "/v1/reviews/00000000-0000-0000-0000-000000000000", "GET"),
        ("POST", "/v1/ping", "GET"),
        ("HEAD", "/v1/ping", "GET"),
    ],
)
def test_a_wrong_method_is_405_with_allow(api, method, path, allowed):
    import http.client
    import urllib.parse

    url = urllib.parse.urlsplit(api.gateway.url)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    try:
        connection.request(method, url.path.rstrip("/") + path, body=b"{}" if method != "HEAD" else None)
        answer = connection.getresponse()
        body = answer.read()
    finally:
        connection.close()
    assert answer.status == 405
    assert answer.getheader("Allow") == allowed
    if method != "HEAD":  # HEAD's answer has no body, by HTTP
        assert json.loads(body)["error"]["code"] == "method_not_allowed"


def test_storage_failure_is_a_clean_500_without_internals(api):
    api.client("dynamodb").delete_table(TableName=api.resources.tables["jobs"])
    answer = _post(api, _request())
    error = _assert_error(answer, 500, "internal_error")
    assert "dynamo" not in json.dumps(error).lower()


def test_transient_storage_failure_is_503_with_a_retry_after_that_lets_a_replay_repair_the_job(api, monkeypatch):
    from p4review.errors import StorageError

    def unavailable(self, message):
        raise StorageError("enqueue fetch: throttled")

    monkeypatch.setattr("p4review.stores.sqs_queues.SqsStageQueues.send", unavailable)
    error = _assert_error(_post(api, _request()), 503, "service_unavailable")
    assert "retry" in error["message"]
    answer = _post(api, _request())
    assert answer.headers["x-p4review-replay"] == "idempotency-key"  # the job was committed first
    assert int(_post(api, _request(idempotency_key="other", changelist_id=1)).headers["retry-after"]) >= 10


# --- the trigger's signed self-test ------------------------------------------------------------------
@pytest.mark.spec("TRG-10")
def test_ping_answers_a_signed_request_and_touches_nothing(api):
    answer = api.api.ping()
    assert answer.status == 200
    assert answer.body["service"] == "p4review" and answer.body["signed_with"] == "current"
    assert answer.body["max_signature_age_seconds"] == 300
    assert abs(answer.body["server_time"] - time.time()) < 120
    assert api.client("dynamodb").scan(TableName=api.resources.tables["jobs"])["Items"] == []
    assert drain(api.sqs, api.resources.queue_for_stage("fetch").url) == []


def test_ping_says_when_the_caller_holds_the_previous_secret(api):
    api.client("secretsmanager").put_secret_value(
        SecretId=api.resources.secrets["trigger-signing"], SecretString="the-new-secret"
    )
    assert api.api.ping().body["signed_with"] == "previous"
    assert ReviewApiClient(api.gateway.url, "the-new-secret").ping().body["signed_with"] == "current"


def test_ping_refuses_a_wrong_secret(api):
    error = _assert_error(ReviewApiClient(api.gateway.url, "not-the-secret").ping(), 401, "signature_invalid")
    assert error["details"] is None  # a wrong secret learns nothing


@pytest.mark.spec("TRG-10")
@pytest.mark.parametrize("offset, code", [(-400, "signature_expired"), (400, "signature_invalid")])
def test_a_timestamp_outside_the_window_carries_the_server_time(api, offset, code):
    import urllib.request

    headers = signed_headers(api.signing_secret, int(time.time()) + offset, "GET", "/v1/ping", b"")
    with pytest.raises(urllib.error.HTTPError) as error:
        urllib.request.urlopen(urllib.request.Request(api.gateway.url + "/v1/ping", headers=headers))
    body = json.loads(error.value.read())["error"]
    assert error.value.code == 401 and body["code"] == code
    assert abs(body["details"]["server_time"] - time.time()) < 120
    assert body["details"]["max_signature_age_seconds"] == 300


# --- a submit that follows a shelved change's versions ---------------------------------------------------
def _follows(changelist_id=4240, review_version=2):
    return {"follows_shelf": {"changelist_id": changelist_id, "review_version": review_version}}


def test_a_submit_following_a_shelf_is_stored_shown_and_audited(api):
    created = _post(
        api,
        _request(
            idempotency_key="p4-submitted-4277-v3", changelist_id=4277, review_version=3, rerun=True, **_follows()
        ),
    )
    assert created.status == 201, created.body
    assert created.body["follows_shelf"] == {"changelist_id": 4240, "review_version": 2}
    shown = api.api.get_job(created.body["job_id"]).body
    assert shown["follows_shelf"] == {"changelist_id": 4240, "review_version": 2}
    assert shown["audit"][0]["detail"] == "versioned rerun; follows shelf v2 of CL 4240"
    assert "follows_shelf" not in _post(api, _request()).body  # absent when not set


@pytest.mark.parametrize(
    "overrides, problem",
    [
        ({"kind": "shelved", "review_version": 3, **_follows()}, "only a submitted change follows a shelf"),
        ({"review_version": 2, **_follows(review_version=2)}, "must be higher than the shelf version"),
        ({"review_version": 3, "follows_shelf": {"changelist_id": 4240}}, "Field required"),
        ({"review_version": 3, "follows_shelf": {"changelist_id": 4240, "review_version": 1, "x": 1}}, "Extra inputs"),
        ({"review_version": 3, "follows_shelf": {"changelist_id": "4240", "review_version": 1}}, "valid integer"),
    ],
)
def test_a_follows_shelf_that_cannot_be_right_is_400(api, overrides, problem):
    error = _assert_error(_post(api, _request(**overrides)), 400, "invalid_request")
    assert any(item["field"].startswith("follows_shelf") and problem in item["problem"] for item in error["details"])


def test_the_same_key_with_another_follows_shelf_is_422(api):
    body = _request(idempotency_key="k", review_version=3, rerun=True, **_follows())
    assert _post(api, body).status == 201
    error = _assert_error(_post(api, {**body, **_follows(review_version=1)}), 422, "idempotency_key_reused")
    assert error["details"]["differing_fields"] == ["follows_shelf"]


def _raw(api, method, path, *, signed=True):
    """`method path` sent as is (the path's %-escapes are not re-encoded), signed over the path
    the function sees (API Gateway decodes it) unless `signed` is false."""
    import http.client
    import urllib.parse

    url = urllib.parse.urlsplit(api.gateway.url)
    headers = signed_headers(api.signing_secret, int(time.time()), method, urllib.parse.unquote(path), b"")
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    try:
        connection.request(method, url.path.rstrip("/") + path, headers=headers if signed else {})
        answer = connection.getresponse()
        return answer.status, json.loads(answer.read() or b"null")
    finally:
        connection.close()


JOB = "0a1b2c3d-0000-4000-8000-000000000000"


@pytest.mark.spec("CH-4")
@pytest.mark.parametrize("signed", [True, False], ids=["signed", "unsigned"])
@pytest.mark.parametrize(
    "path",
    [
        f"/v1/reviews/{JOB}%00",  # found by a hostile-input probe: 405 "answers GET only" to a GET
        f"/v1/reviews/{JOB}%0a",  # `$` matches before a trailing newline: the router took it for JOB
        f"/v1/reviews/{JOB}%0a/",
        f"/v1/reviews/{JOB}%09",
        f"/v1/reviews/{JOB}%25",
        f"/v1/reviews/{JOB}%22",
        f"/v1/reviews/{JOB}%5C",
        f"/v1/reviews/{JOB}%3F",
        f"/v1/reviews/{JOB}%23",
        "/v1/reviews/%E2%80%AE" + JOB,  # a bidi override
        "/v1/reviews/%C3%A9t%C3%A9",
        "/v1/reviews/" + JOB.upper(),
        "/v1/reviews/%1B%5B2J",
        pytest.param("/v1/reviews/" + "a" * 4000, id="4000-characters"),
        "/v1/reviews/not-a-job",
    ],
)
def test_a_get_of_a_malformed_job_id_is_400_invalid_job_id_never_405(api, path, signed):
    status, body = _raw(api, "GET", path, signed=signed)
    assert (status, body["error"]["code"]) == (400, "invalid_job_id"), body


@pytest.mark.spec("CH-4")
@pytest.mark.parametrize(
    "method, path",
    [
        ("GET", f"/v1/reviews/{JOB}%2Fx"),  # %2F decodes to a second segment: no such route
        ("GET", "/v1/reviews//"),
        ("GET", "/v1/ping%00"),
        ("GET", "/v1/ping%0a"),
        ("POST", "/v1/reviews%0a"),
        ("POST", "/v1/swarm/tests%00"),
        ("GET", "/v1/%E2%80%AEping"),
    ],
)
def test_a_path_that_is_no_route_is_404_whatever_its_encoding(api, method, path):
    status, body = _raw(api, method, path)
    assert (status, body["error"]["code"]) == (404, "route_not_found"), body


def test_a_well_formed_job_id_with_or_without_a_trailing_slash_is_served(api):
    created = _post(api, _request())
    for suffix in ("", "/"):
        status, body = _raw(api, "GET", f"/v1/reviews/{created.body['job_id']}{suffix}")
        assert (status, body["job_id"]) == (200, created.body["job_id"])
    assert _raw(api, "GET", f"/v1/reviews/{JOB}")[0] == 404

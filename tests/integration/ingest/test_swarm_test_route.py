"""POST /v1/swarm/tests: a Helix Swarm workflow test asks for a review of a review version,
through the local API Gateway front and the real ingest handler, against the moto server."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request

import pytest

from p4review.stores.factory import get_data_access
from p4review_dev.support.harness import drain, ingest_api, provisioned_service

SWARM = "https://swarm.example.test"
TOKEN_SECRET = "p4review/test/swarm-test-token"
TOKEN = "swarm-token-0123456789abcdef"
PASS = f"{SWARM}/api/v10/reviews/48300/testruns/7/pass/FAE4501C-TOKEN.v2"
FAIL = f"{SWARM}/api/v10/reviews/48300/testruns/7/fail/FAE4501C-TOKEN.v2"
UPDATE = f"{SWARM}/api/v10/reviews/48300/testruns/7/FAE4501C-TOKEN"


@pytest.fixture
def api(moto_endpoint, aws_reset):
    extra_env = {"P4REVIEW_SWARM_URL": SWARM, "P4REVIEW_SWARM_TEST_SECRET_ID": TOKEN_SECRET}
    with provisioned_service(moto_endpoint, extra_env=extra_env) as service:
        service.client("secretsmanager").create_secret(Name=TOKEN_SECRET, SecretString=TOKEN)
        with ingest_api(service):
            yield service


def _call(**overrides):
    """What a test definition's JSON body template becomes once Swarm filled it in (text values)."""
    body = {
        "review": "48300",
        "version": "2",
        "change": "48299",
        "status": "shelved",
        "pass": PASS,
        "fail": FAIL,
        "update": UPDATE,
    }
    body.update(overrides)
    return {key: value for key, value in body.items() if value is not None}


class Answer:
    def __init__(self, status, headers, body):
        self.status, self.headers, self.body = status, headers, body


def _post(api, body, *, token=TOKEN, form=False, raw=None, method="POST"):
    headers = {}
    if token is not None:
        headers["X-P4Review-Swarm-Token"] = token
    if form:
        headers["Content-Type"] = "application/x-www-form-urlencoded"
        data = urllib.parse.urlencode(body).encode()
    else:
        headers["Content-Type"] = "application/json"
        data = raw if raw is not None else json.dumps(body).encode()
    request = urllib.request.Request(api.gateway.url + "/v1/swarm/tests", data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return Answer(answer.status, {k.lower(): v for k, v in answer.headers.items()}, json.loads(answer.read()))
    except urllib.error.HTTPError as error:
        return Answer(error.code, {k.lower(): v for k, v in error.headers.items()}, json.loads(error.read()))


def _assert_error(answer, status, code):
    assert answer.status == status, answer.body
    assert set(answer.body) == {"error"}
    assert answer.body["error"]["code"] == code
    text = json.dumps(answer.body)
    assert "Traceback" not in text and "TOKEN" not in text and TOKEN not in text  # no URL token, no secret
    return answer.body["error"]


def _nothing_created(api):
    assert api.client("dynamodb").scan(TableName=api.resources.tables["jobs"])["Items"] == []
    assert drain(api.sqs, api.resources.queue_for_stage("fetch").url) == []


def _fetch_messages(api):
    return [json.loads(m["Body"]) for m in drain(api.sqs, api.resources.queue_for_stage("fetch").url)]


# --- a good call -------------------------------------------------------------------------------------
@pytest.mark.spec("SW-7")
def test_a_shelved_version_becomes_that_review_version_of_the_review_change_with_its_callbacks(api):
    answer = _post(api, _call())
    assert answer.status == 201, answer.body
    assert answer.headers["location"] == f"/v1/reviews/{answer.body['job_id']}"
    assert answer.body["changelist_id"] == 48300  # the review's own change holds the version's shelf
    assert answer.body["review_version"] == 2
    assert answer.body["kind"] == "shelved"
    assert answer.body["rerun"] is True
    assert answer.body["idempotency_key"] == "swarm-test-48300-v2"
    assert answer.body["swarm_test"] == {"review_id": 48300, "version": 2, "change": 48299, "status": "shelved"}
    assert "TOKEN" not in json.dumps(answer.body)  # the callback URLs are never shown

    job = get_data_access().jobs.get_job(answer.body["job_id"])
    assert job.swarm_test is not None
    assert (job.swarm_test.pass_url, job.swarm_test.fail_url, job.swarm_test.update_url) == (PASS, FAIL, UPDATE)
    assert (job.swarm_test.review_id, job.swarm_test.version, job.swarm_test.change) == (48300, 2, 48299)
    assert job.audit[0].detail == "versioned rerun; Swarm workflow test of review 48300 v2"
    # The queue message stays IDs only.
    (message,) = _fetch_messages(api)
    assert set(message) == {"schema_version", "job_id", "stage", "request_id"}
    assert message["job_id"] == answer.body["job_id"]


@pytest.mark.spec("SW-7")
@pytest.mark.parametrize("status", ["submitted", "committed"])
def test_a_submitted_version_is_a_submitted_review_of_the_committed_change_following_the_last_shelf(api, status):
    """Swarm's {status} for a committed review is `submitted` (TestExecutor::getFieldsFromReview);
    `committed`, which earlier p4review releases documented, is still read the same way."""
    answer = _post(api, _call(version="3", change="48310", status=status))
    assert answer.status == 201, answer.body
    assert (answer.body["changelist_id"], answer.body["review_version"], answer.body["kind"]) == (48310, 3, "submitted")
    assert answer.body["follows_shelf"] == {"changelist_id": 48300, "review_version": 2}
    assert answer.body["idempotency_key"] == "swarm-test-48300-v3"


def test_a_first_version_is_not_a_rerun_and_json_integers_are_accepted(api):
    answer = _post(api, _call(review=48300, version=1, change=48299, update=None))
    assert answer.status == 201, answer.body
    assert (answer.body["review_version"], answer.body["rerun"]) == (1, False)
    assert get_data_access().jobs.get_job(answer.body["job_id"]).swarm_test.update_url is None


@pytest.mark.spec("SW-7")
def test_a_long_non_ascii_test_name_and_an_unquoted_test_run_id_are_kept_with_the_job(api):
    """Swarm test names are any text, up to 1000 characters for a test run's `test`
    (module/TestIntegration/src/Filter/TestRun.php addTestFilter); `"testRunId": {testRunId}`
    unquoted is a JSON number. Refusing either would fail the test in Swarm on our 400."""
    name = "Prüfung 検査 " + "ü" * 989
    answer = _post(api, _call(test=name, testRunId=4711, reviewStatus="needsReview"))
    assert answer.status == 201, answer.body
    stored = get_data_access().jobs.get_job(answer.body["job_id"]).swarm_test
    assert (stored.test, stored.test_run_id) == (name, "4711")
    form_answer = _post(api, _call(version="3", test=name, testRunId="4712"), form=True)
    assert form_answer.status == 201, form_answer.body
    error = _assert_error(_post(api, _call(version="4", test="two\nlines")), 400, "invalid_request")
    assert [problem["field"] for problem in error["details"]] == ["test"]


def test_swarms_default_url_encoding_with_the_token_in_the_body(api):
    answer = _post(api, {**_call(update=""), "token": TOKEN}, token=None, form=True)
    assert answer.status == 201, answer.body
    assert answer.body["review_version"] == 2


def test_the_previous_token_is_accepted_after_a_rotation(api):
    api.client("secretsmanager").put_secret_value(SecretId=TOKEN_SECRET, SecretString="the-new-token")
    assert _post(api, _call()).status == 201
    assert _post(api, _call(version="3"), token="the-new-token").status == 201


# --- authentication ----------------------------------------------------------------------------------
@pytest.mark.spec("SW-7")
@pytest.mark.parametrize(
    ("token", "code"),
    [
        (None, "swarm_token_missing"),
        ("", "swarm_token_missing"),
        ("not-the-token", "swarm_token_invalid"),
        (TOKEN[:-1], "swarm_token_invalid"),
        (TOKEN + "x" * 300, "swarm_token_invalid"),
    ],
)
def test_a_missing_or_wrong_token_is_401_and_creates_nothing(api, token, code):
    _assert_error(_post(api, _call(), token=token), 401, code)
    _nothing_created(api)


def test_a_wrong_token_in_the_body_is_401(api):
    _assert_error(_post(api, {**_call(), "token": "nope"}, token=None, form=True), 401, "swarm_token_invalid")
    _nothing_created(api)


def test_a_bad_header_token_is_refused_even_with_a_good_body_token(api):
    _assert_error(_post(api, {**_call(), "token": TOKEN}, token="nope"), 401, "swarm_token_invalid")
    _nothing_created(api)


def test_the_route_is_off_until_its_token_secret_is_configured(api, monkeypatch):
    monkeypatch.delenv("P4REVIEW_SWARM_TEST_SECRET_ID")
    # The settings are the cold start's: a function started without the secret's variable.
    with ingest_api(api):  # a second ingest function, started without it
        _assert_error(_post(api, _call()), 404, "swarm_tests_not_enabled")
        _nothing_created(api)


# --- callback URLs -----------------------------------------------------------------------------------
@pytest.mark.spec("SW-7")
@pytest.mark.parametrize(
    ("field", "url"),
    [
        ("pass", "https://evil.example.test/pass"),
        ("fail", "https://swarm.example.test.evil.test/fail"),
        ("pass", "http://swarm.example.test/pass"),
        ("pass", "https://swarm.example.test:8443/pass"),
        ("pass", "https://user@swarm.example.test/pass"),
        ("pass", "https://swarm.example.test@evil.example.test/pass"),
        ("pass", "https://swarm.example.test\\@evil.example.test/pass"),
        ("pass", "https://169.254.169.254/latest/meta-data"),
        ("pass", "file:///etc/passwd"),
        ("pass", "//swarm.example.test/pass"),
        ("pass", "/api/v10/reviews/1/pass"),
        ("update", "https://evil.example.test/update"),
        ("update", "{update}"),  # a Swarm that does not know the argument leaves it as it is
    ],
)
def test_a_callback_url_off_the_swarm_host_is_400_and_creates_nothing(api, field, url):
    error = _assert_error(_post(api, _call(**{field: url})), 400, "callback_url_not_allowed")
    assert [problem["field"] for problem in error["details"]] == [field]
    assert url not in json.dumps(error)
    _nothing_created(api)


# --- idempotency and versions ------------------------------------------------------------------------
@pytest.mark.spec("SW-7")
def test_a_repeated_call_for_the_same_version_returns_the_same_job(api):
    first = _post(api, _call())
    second = _post(api, _call())
    assert (first.status, second.status) == (201, 200)
    assert second.body["job_id"] == first.body["job_id"]
    assert second.headers["x-p4review-replay"] == "idempotency-key"
    assert len(_fetch_messages(api)) == 1


@pytest.mark.spec("SW-7")
def test_a_lower_version_after_a_higher_one_is_refused_as_the_trigger_route_refuses_it(api):
    assert _post(api, _call(version="3")).status == 201
    swarm = _assert_error(_post(api, _call(version="2")), 409, "stale_review_version")
    assert swarm["details"] == {"changelist_id": 48300, "requested_version": 2, "latest_version": 3}
    swarm_v1 = _assert_error(_post(api, _call(version="1")), 409, "stale_review_version")
    trigger = _assert_error(
        api.api.post_raw(
            json.dumps(
                {"idempotency_key": "p4-shelved-48300-v2", "changelist_id": 48300, "review_version": 2}
                | {"kind": "shelved", "rerun": True}
            ).encode()
        ),
        409,
        "stale_review_version",
    )
    assert trigger == swarm
    assert swarm_v1["details"]["latest_version"] == 3


def test_a_version_already_accepted_from_the_trigger_is_409_not_a_silent_replay(api):
    created = api.api.post_raw(
        json.dumps(
            {"idempotency_key": "p4-shelved-48300-v2", "changelist_id": 48300, "review_version": 2}
            | {"kind": "shelved", "rerun": True}
        ).encode()
    )
    assert created.status == 201
    error = _assert_error(_post(api, _call()), 409, "review_version_taken")
    assert error["details"] == {"changelist_id": 48300, "review_version": 2, "job_id": created.body["job_id"]}


# --- malformed calls ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("body", "fields"),
    [
        (_call(version="abc"), ["version"]),
        (_call(version="0"), ["version"]),
        (_call(version=True), ["version"]),
        (_call(version="1.5"), ["version"]),
        (_call(review="-1"), ["review"]),
        (_call(change="99999999999"), ["change"]),
        (_call(status="pending"), ["status"]),
        (_call(**{"pass": None}), ["pass"]),
        (_call(**{"fail": None, "review": None}), ["review", "fail"]),
        (_call(description="the change description"), ["description"]),
    ],
)
def test_a_malformed_call_is_400_with_field_errors(api, body, fields):
    error = _assert_error(_post(api, body), 400, "invalid_request")
    assert sorted(problem["field"] for problem in error["details"]) == sorted(fields)
    assert all(set(problem) == {"field", "problem"} for problem in error["details"])
    _nothing_created(api)


@pytest.mark.parametrize("raw", [b"not json", b"[1, 2]", b"", b'{"review": 1, "review": 2}'])
def test_a_body_that_is_not_a_json_object_is_400(api, raw):
    _assert_error(_post(api, None, raw=raw), 400, "invalid_json")


def test_a_form_with_a_repeated_field_is_400(api):
    answer = _post(api, [*_call().items(), ("version", "3")], form=True)
    _assert_error(answer, 400, "invalid_body")


def test_an_oversize_body_is_413(api):
    _assert_error(_post(api, _call(test="x" * 20_000)), 413, "body_too_large")


def test_another_method_is_405_with_allow(api):
    answer = _post(api, _call(), method="PUT")
    assert answer.status == 405
    assert answer.headers["allow"] == "POST"

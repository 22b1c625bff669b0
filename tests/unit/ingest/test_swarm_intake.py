"""A Swarm workflow test call as a review request (ingest/swarm_intake.py) and the verdict's
delivery (notify/swarm/callback.py, with a fake opener: no network)."""

from __future__ import annotations

import io
import urllib.error

import pytest
from pydantic import ValidationError as PydanticValidationError

from p4review import swarm_urls
from p4review.errors import ErrorClass, NonRetryableError, RetryableError
from p4review.ingest import swarm_intake
from p4review.ingest.intake import IntakeAnswer, IntakeOutcome, Replay
from p4review.models.job import ChangeKind, ReviewJob, ShelfRef
from p4review.models.swarm_test import SwarmTestCall
from p4review.notify.swarm.callback import post_verdict
from p4review.notify.swarm.verdict import CallbackRequest

SWARM = "https://swarm.example.test"
PASS = f"{SWARM}/reviews/48300/tests/pass/TOKEN.v2/"


def _call(**overrides) -> SwarmTestCall:
    body = {"review": "48300", "version": "2", "change": "48299", "status": "shelved", "pass": PASS, "fail": PASS}
    body.update(overrides)
    return SwarmTestCall.model_validate(body)


# --- mapping -------------------------------------------------------------------------------------------
def test_a_shelved_version_maps_to_the_review_change():
    request = swarm_intake.review_request_for(_call())
    assert (request.changelist_id, request.review_version, request.kind, request.rerun) == (
        48300,
        2,
        ChangeKind.SHELVED,
        True,
    )
    assert request.idempotency_key == "swarm-test-48300-v2" and request.follows_shelf is None


@pytest.mark.spec("SW-7")
@pytest.mark.parametrize("status", ["submitted", "committed"])
def test_a_submitted_version_maps_to_the_committed_change_after_the_previous_shelf(status):
    """Swarm sends `submitted` (TestExecutor::getFieldsFromReview); `committed` is kept for old definitions."""
    request = swarm_intake.review_request_for(_call(status=status, change="48310", version="4"))
    assert (request.changelist_id, request.review_version, request.kind) == (48310, 4, ChangeKind.SUBMITTED)
    assert request.shelf_ref() == ShelfRef(changelist_id=48300, review_version=3)


def test_a_first_version_committed_follows_nothing_and_is_no_rerun():
    request = swarm_intake.review_request_for(_call(status="submitted", change="48310", version="1"))
    assert (request.rerun, request.follows_shelf) == (False, None)


# --- optional names ------------------------------------------------------------------------------------
@pytest.mark.spec("SW-7")
def test_long_non_ascii_names_and_a_numeric_test_run_id_are_read():
    """Swarm's names are any text (module/TestIntegration/src/Filter/TestDefinition.php addNameFilter;
    a test run's `test` 1 to 1000 characters: Filter/TestRun.php addTestFilter), and an unquoted
    {testRunId} arrives as a JSON number."""
    name = "Prüfung 検査 " + "ü" * 989
    call = _call(test=name, testRunId=17, reviewStatus="needsReview")
    assert (call.test, call.test_run_id, call.review_status) == (name, "17", "needsReview")
    assert len(name) == 1000 and _call(testRunId="0042").test_run_id == "0042"
    ref = swarm_intake.swarm_ref_for(call)
    assert (ref.test, ref.test_run_id) == (name, "17")
    assert swarm_intake.review_request_for(call).idempotency_key == "swarm-test-48300-v2"  # names play no part


@pytest.mark.spec("SW-7")
@pytest.mark.parametrize(
    "overrides",
    [
        {"test": "a" * 1001},
        {"test": "line\nbreak"},
        {"test": "bell\x07"},
        {"test": "c1\x85"},
        {"test": "sep\u2028"},
        {"test": "flip\u202e"},
        {"reviewStatus": "tab\there"},
        {"testRunId": True},
        {"testRunId": -1},
        {"testRunId": 1.5},
        {"testRunId": "1e3"},
        {"testRunId": "١٢"},
        {"testRunId": "1" * 21},
    ],
)
def test_control_characters_and_ids_that_are_not_numbers_are_refused(overrides):
    with pytest.raises(PydanticValidationError):
        _call(**overrides)


# --- callback URLs -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "url",
    [
        PASS,
        "https://SWARM.example.test/x",
        "https://swarm.example.test:443/x",
        f"{SWARM}/api/v10/reviews/1/testruns/2/u",
    ],
)
def test_urls_on_the_swarm_are_allowed(url):
    assert swarm_urls.callback_url_problem(url, SWARM) is None


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("https://evil.test/pass", "must be on the Swarm host"),
        ("http://swarm.example.test/pass", "must use https"),
        ("https://swarm.example.test:444/pass", "must use the Swarm port"),
        ("https://swarm.example.test:99999/pass", "is not an absolute URL"),
        ("https://a:b@swarm.example.test/pass", "must not carry user information"),
        ("https://swarm.example.test/pass#frag", "must not have a fragment"),
        ("https://swarm.example.test/a/../admin", "must not have dot segments"),
        ("https://swarm.example.test/a/%2e%2e/admin", "must not have dot segments"),
        ("gopher://swarm.example.test/pass", "must use https"),
        ("swarm.example.test/pass", "is not an absolute URL"),
    ],
)
def test_urls_elsewhere_are_refused(url, problem):
    assert swarm_urls.callback_url_problem(url, SWARM) == problem


def test_a_swarm_under_a_path_keeps_callbacks_under_it():
    base = "http://localhost:8080/swarm/"
    assert swarm_urls.callback_url_problem("http://localhost:8080/swarm/reviews/1/tests/pass/T/", base) is None
    assert swarm_urls.callback_url_problem("http://localhost:8080/swarmy/x", base) == (
        "must be under the Swarm URL's path"
    )
    assert swarm_urls.callback_url_problem("http://localhost/swarm/x", base) == "must use the Swarm port"


def test_a_misconfigured_swarm_url_refuses_everything():
    assert swarm_urls.callback_url_problem(PASS, "swarm.example.test") == "P4REVIEW_SWARM_URL is not an http(s) URL"


# --- token ---------------------------------------------------------------------------------------------
def test_the_token_matches_the_current_or_the_previous_secret_only():
    assert swarm_intake.token_matches("new", ["new", "old"])
    assert swarm_intake.token_matches("old", ["new", "old\n"])
    assert not swarm_intake.token_matches("ne", ["new", "old"])
    assert not swarm_intake.token_matches("", ["new"])
    assert not swarm_intake.token_matches("\udcff", ["new"])


# --- a same-version replay -----------------------------------------------------------------------------
def _job(swarm_test=None) -> ReviewJob:
    return ReviewJob(
        job_id="j",
        idempotency_key="k",
        request_fingerprint="f",
        changelist_id=48300,
        review_version=2,
        kind=ChangeKind.SHELVED,
        swarm_test=swarm_test,
        created_at="2026-11-21T10:00:00.000000Z",
        updated_at="2026-11-21T10:00:00.000000Z",
    )


def test_a_same_version_replay_answers_only_when_the_job_is_this_tests():
    ref = swarm_intake.swarm_ref_for(_call())
    mine = IntakeAnswer(IntakeOutcome.REPLAYED, job=_job(ref), replay=Replay.SAME_VERSION)
    assert swarm_intake.answer_for_swarm(mine, ref) is mine
    theirs = IntakeAnswer(IntakeOutcome.REPLAYED, job=_job(), replay=Replay.SAME_VERSION)
    refused = swarm_intake.answer_for_swarm(theirs, ref)
    assert (refused.outcome, refused.job, refused.error_code) == (
        IntakeOutcome.VERSION_TAKEN,
        None,
        "review_version_taken",
    )
    created = IntakeAnswer(IntakeOutcome.CREATED, job=_job(ref))
    assert swarm_intake.answer_for_swarm(created, ref) is created


# --- the callback adapter ------------------------------------------------------------------------------
class _Opener:
    def __init__(self, answer):
        self.answer = answer
        self.requests = []

    def open(self, request, timeout):
        self.requests.append((request, timeout))
        if isinstance(self.answer, BaseException):
            raise self.answer
        return self.answer


class _Response(io.BytesIO):
    status = 200


def _request(url=PASS) -> CallbackRequest:
    return CallbackRequest(url=url, body=b'{"messages": ["p4review: no findings"]}')


def _http_error(code, headers=None):
    import email.message

    message = email.message.Message()
    for name, value in (headers or {}).items():
        message[name] = value
    return urllib.error.HTTPError(PASS, code, "error", message, io.BytesIO(b"secret body"))


def test_the_verdict_is_posted_as_json_with_a_timeout():
    opener = _Opener(_Response(b"{}"))
    assert post_verdict(_request(), swarm_url=SWARM, timeout=7, opener=opener) == 200
    ((request, timeout),) = opener.requests
    assert (request.full_url, request.get_method(), timeout) == (PASS, "POST", 7)
    assert request.data == _request().body
    assert request.get_header("Content-type") == "application/json"


def test_a_url_off_the_swarm_is_never_called():
    opener = _Opener(_Response(b""))
    with pytest.raises(NonRetryableError) as error:
        post_verdict(_request("https://evil.test/x"), swarm_url=SWARM, opener=opener)
    assert error.value.error_class is ErrorClass.POLICY_DENIED and opener.requests == []


@pytest.mark.parametrize(
    ("answer", "retryable", "error_class"),
    [
        (_http_error(503, {"Retry-After": "30"}), True, ErrorClass.UPSTREAM_ERROR),
        (_http_error(429), True, ErrorClass.RATE_LIMITED),
        (_http_error(408), True, ErrorClass.UPSTREAM_ERROR),
        (_http_error(401), False, ErrorClass.AUTH_DENIED),
        (_http_error(404), False, ErrorClass.NOT_FOUND),
        (_http_error(400), False, ErrorClass.SCHEMA_INVALID),
        (_http_error(302), False, ErrorClass.POLICY_DENIED),
        (urllib.error.URLError(TimeoutError("timed out")), True, ErrorClass.NETWORK_TIMEOUT),
        (urllib.error.URLError(ConnectionRefusedError()), True, ErrorClass.NETWORK_ERROR),
        (TimeoutError(), True, ErrorClass.NETWORK_TIMEOUT),
        (ConnectionResetError(), True, ErrorClass.NETWORK_ERROR),
    ],
)
def test_failures_map_to_retryable_or_not(answer, retryable, error_class):
    with pytest.raises((RetryableError, NonRetryableError)) as error:
        post_verdict(_request(), swarm_url=SWARM, opener=_Opener(answer))
    assert (error.value.retryable, error.value.error_class) == (retryable, error_class)
    assert "TOKEN" not in error.value.message and "secret body" not in error.value.message


def test_a_retry_after_is_passed_on():
    with pytest.raises(RetryableError) as error:
        post_verdict(_request(), swarm_url=SWARM, opener=_Opener(_http_error(503, {"Retry-After": "30"})))
    assert error.value.retry_after == 30.0

"""SwarmClient against the fake Swarm (p4review_dev.swarm_server), both API versions: reviews,
comments with anchors and tasks, delayed notification sent once, marker lookup across pages,
refused credentials (Swarm's 401, and an HTTP 200 with `{"error": "Unauthorized"}` too), 5xx,
timeouts and lost responses. No timing assertions: the client's timeout is short and a hanging
server hangs far longer."""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from p4review.errors import (
    AuthError,
    ConfigError,
    ErrorClass,
    NonRetryableError,
    NotFoundError,
    RetryableError,
    ValidationError,
)
from p4review.models.review_result import Finding, ReviewResult, StoredReview
from p4review.models.swarm import SwarmCommentContext
from p4review.notify.swarm.client import HttpRequest, HttpResponse, SwarmClient
from p4review.notify.swarm.comments import comment_marker, find_marker, plan_comments
from p4review_dev.swarm_server import FakeSwarmServer

USER = "p4review-svc"
TICKET = "0123456789ABCDEF0123456789ABCDEF"
CLIENT_TIMEOUT = 2.0  # the fake hangs for HANG_SECONDS, far past it
HANG_SECONDS = 30.0

pytestmark = pytest.mark.parametrize("api", ["v9", "v11"])


@pytest.fixture
def swarm() -> Iterator[FakeSwarmServer]:
    with FakeSwarmServer(user=USER, ticket=TICKET, hang_seconds=HANG_SECONDS) as server:
        yield server


def _client(server: FakeSwarmServer, api: str, **kwargs: Any) -> SwarmClient:
    return SwarmClient(server.url, USER, TICKET, api=api, timeout_seconds=CLIENT_TIMEOUT, **kwargs)  # type: ignore[arg-type]


def _stored(count: int) -> StoredReview:
    findings = [
        Finding(
            id=f"F{i}",
            severity="critical" if i == 0 else "low",
            category="correctness",
            title=f"Problem {i}",
            file="//depot/main/app.py",
            line=i + 1,
            message=f"Message {i}",
        )
        for i in range(count)
    ]
    return StoredReview(
        result=ReviewResult(schema_version="1.0", prompt_version="1.0", findings=findings),
        fingerprints={f.id: f"fp{i}" for i, f in enumerate(findings)},
    )


# --- reviews -----------------------------------------------------------------------------------------
@pytest.mark.spec("SW-6")
def test_find_create_and_find_again(swarm, api):
    client = _client(swarm, api)
    assert client.find_review(48213) is None
    review_id = client.create_review(48213)
    assert client.find_review(48213) == review_id == swarm.review_for_change(48213)
    assert client.find_review(48214) is None


def test_a_review_someone_started_is_found_and_a_second_one_refused(swarm, api):
    review_id = swarm.add_review(48240)
    client = _client(swarm, api)
    assert client.find_review(48240) == review_id
    with pytest.raises(ValidationError) as caught:
        client.create_review(48240)
    assert caught.value.error_class == ErrorClass.SCHEMA_INVALID and not caught.value.retryable


# --- comments ----------------------------------------------------------------------------------------
def test_post_with_anchor_and_task_delays_the_notification(swarm, api):
    client = _client(swarm, api)
    review_id = client.create_review(48213)
    context = SwarmCommentContext(file="//depot/main/app.py", right_line=12, content=("a = 1", "b = 2"), version=1)
    task_id = client.post_comment(review_id, "a task", context, task_open=True)
    plain_id = client.post_comment(review_id, "a comment", None, task_open=False)
    stored = {c["id"]: c for c in swarm.comments_for_change(48213)}
    assert stored[task_id]["taskState"] == "open"
    expected = {
        "file": "//depot/main/app.py",
        "leftLine": None,  # an added line: no left side (sent as null in v11, left out of the v9 form)
        "rightLine": 12,
        "content": ["a = 1", "b = 2"],
        "version": 1,
    }
    if api == "v9":
        expected["review"] = review_id  # Swarm's v9 fills in the review (CommentsController::filterCommentContext)
    assert stored[task_id]["context"] == expected
    assert stored[task_id]["user"] == USER
    assert stored[plain_id]["taskState"] == "comment" and stored[plain_id]["context"] in ({}, [])
    assert swarm.notifications_for_review(review_id) == 0  # nothing sent until the notify


@pytest.mark.spec("SW-3")
def test_twenty_comments_make_one_notification(swarm, api):
    client = _client(swarm, api)
    review_id = client.create_review(7)
    for plan in plan_comments(changelist_id=7, review_version=1, stored=_stored(19)):
        client.post_comment(review_id, plan.body, plan.context, plan.task_open)
    assert swarm.notifications_for_review(review_id) == 0
    client.send_notifications(review_id)
    assert swarm.notifications_for_review(review_id) == 1
    client.send_notifications(review_id)  # a retried notify sends nothing new
    assert swarm.notifications_for_review(review_id) == 1
    assert swarm.notify_calls(review_id) == 2


@pytest.mark.spec("SW-3")
def test_notify_uses_the_versions_own_route_without_a_fallback(swarm, api):
    client = _client(swarm, api)
    review_id = client.create_review(9)
    client.post_comment(review_id, "x")
    client.send_notifications(review_id)
    assert swarm.notifications_for_review(review_id) == 1
    route = "/api/v9/comments/notify" if api == "v9" else f"/api/v11/reviews/{review_id}/notify"
    assert [path for method, path in swarm.requests() if path.endswith("notify")] == [route]


def test_listing_and_marker_lookup_walk_every_page(swarm, api):
    client = _client(swarm, api, page_size=3)
    review_id = client.create_review(11)
    swarm.add_comment(review_id, "a human's comment")
    plans = plan_comments(changelist_id=11, review_version=1, stored=_stored(8))
    posted = {}
    for plan in plans:
        posted[plan.marker] = client.post_comment(review_id, plan.body, plan.context, plan.task_open)
        swarm.add_comment(review_id, f"reply to {plan.key}")
    listed = list(client.list_comments(review_id))
    assert [comment_id for comment_id, _ in listed] == sorted(c["id"] for c in swarm.comments_for_review(review_id))
    assert len(listed) == 1 + 2 * len(plans)
    assert {plan.marker: client.find_comment_by_marker(review_id, plan.marker) for plan in plans} == posted
    assert client.find_comment_by_marker(review_id, comment_marker(11, 2, "fp0")) is None
    assert sum(1 for method, _ in swarm.requests() if method == "GET") >= len(listed) // 3


def test_a_review_without_comments_lists_nothing(swarm, api):
    client = _client(swarm, api)
    review_id = client.create_review(12)
    assert list(client.list_comments(review_id)) == []


# --- failures ----------------------------------------------------------------------------------------
@pytest.mark.spec("SW-5")
@pytest.mark.parametrize("status", [200, 401])
def test_refused_credentials_are_auth_denied_never_success(api, status):
    """Swarm 2022.1 answers 401 (the fake's default); an HTTP 200 carrying `{"error": "Unauthorized"}`
    (a proxy, another release) is refused credentials too, never success."""
    with FakeSwarmServer(user=USER, ticket=TICKET, unauthorized_status=status) as server:
        server.add_review(5)
        client = SwarmClient(server.url, USER, "WRONG-TICKET-0000", api=api, timeout_seconds=CLIENT_TIMEOUT)  # type: ignore[arg-type]
        for call in (
            lambda: client.find_review(5),
            lambda: client.post_comment(90001, "x"),
            lambda: client.create_review(6),
        ):
            with pytest.raises(AuthError) as caught:
                call()
            assert caught.value.error_class == ErrorClass.AUTH_DENIED and not caught.value.retryable
            assert "WRONG-TICKET" not in caught.value.message and TICKET not in caught.value.message
        assert server.comments_for_review(90001) == []


@pytest.mark.spec("SW-5")
def test_a_server_error_is_retryable_and_honours_retry_after(swarm, api):
    client = _client(swarm, api)
    review_id = client.create_review(20)
    swarm.fail_next(1, "error", status=503, retry_after=7)
    with pytest.raises(RetryableError) as caught:
        client.post_comment(review_id, "x")
    assert caught.value.error_class == ErrorClass.UPSTREAM_ERROR and caught.value.retry_after == 7
    assert swarm.comments_for_review(review_id) == []
    swarm.fail_next(1, "error", status=500)
    with pytest.raises(RetryableError):
        client.find_review(20)
    assert client.find_review(20) == review_id  # the next call goes through


@pytest.mark.spec("SW-5")
def test_a_hanging_server_is_a_retryable_timeout(swarm, api):
    client = _client(swarm, api)
    review_id = client.create_review(21)
    swarm.fail_next(1, "hang")
    with pytest.raises(RetryableError) as caught:
        client.post_comment(review_id, "x")
    assert caught.value.error_class == ErrorClass.NETWORK_TIMEOUT
    assert swarm.comments_for_review(review_id) == []  # a hang does nothing


def test_a_lost_response_leaves_the_comment_which_the_marker_finds(swarm, api):
    client = _client(swarm, api)
    review_id = client.create_review(22)
    plan = plan_comments(changelist_id=22, review_version=1, stored=_stored(1))[0]
    swarm.fail_next(1, "lost")
    with pytest.raises(RetryableError) as caught:
        client.post_comment(review_id, plan.body, plan.context, plan.task_open)
    assert caught.value.error_class == ErrorClass.NETWORK_ERROR
    [stored] = swarm.comments_for_review(review_id)
    assert find_marker(stored["body"]) == plan.marker
    assert client.find_comment_by_marker(review_id, plan.marker) == stored["id"]


def _until_done(step, tries=40):
    """A step tried again after each retryable error, as a later attempt would (bounded)."""
    for _ in range(tries):
        try:
            return step()
        except RetryableError:
            continue
    raise AssertionError("still failing after every try")


@pytest.mark.spec("SW-2")
def test_random_faults_still_post_every_comment_exactly_once_and_notify_once(api):
    """The comment channel's protocol in miniature (notify/swarm/channel.py): find or create the
    review, then per comment look its marker up and post only when it is missing, then notify;
    each step again after a retryable error. Seeded, so the same faults every run."""
    with FakeSwarmServer(user=USER, ticket=TICKET, error_rate=0.15, lost_response_rate=0.2, seed=16) as server:
        client = _client(server, api)
        plans = plan_comments(changelist_id=30, review_version=1, stored=_stored(12), task_threshold="critical")
        review_id = _until_done(lambda: client.find_review(30) or client.create_review(30))
        for plan in plans:

            def post_unless_there(plan=plan):
                if client.find_comment_by_marker(review_id, plan.marker) is None:
                    client.post_comment(review_id, plan.body, plan.context, plan.task_open)

            _until_done(post_unless_there)
        _until_done(lambda: client.send_notifications(review_id))
        assert server.faults_injected().get("lost", 0) > 0 and server.faults_injected().get("error", 0) > 0
        markers = Counter(find_marker(c["body"]) for c in server.comments_for_change(30))
        assert markers == Counter({plan.marker: 1 for plan in plans})
        review_id = server.review_for_change(30)
        assert review_id is not None and server.notifications_for_review(review_id) == 1


# --- the client's own rules (no server needed; a scripted transport) ------------------------------------
class _Scripted:
    def __init__(self, status: int, body: Any, headers: dict[str, str] | None = None):
        self.status, self.body, self.headers = status, body, headers or {}
        self.requests: list[HttpRequest] = []

    def __call__(self, request: HttpRequest) -> HttpResponse:
        self.requests.append(request)
        raw = self.body if isinstance(self.body, bytes) else json.dumps(self.body).encode()
        return HttpResponse(self.status, self.headers, raw)


@pytest.mark.parametrize(
    ("status", "body", "headers", "error", "error_class"),
    [
        (429, {"error": "slow down"}, {"retry-after": "12"}, RetryableError, ErrorClass.RATE_LIMITED),
        (502, b"<html>bad gateway</html>", {}, RetryableError, ErrorClass.UPSTREAM_ERROR),
        (408, {}, {}, RetryableError, ErrorClass.NETWORK_TIMEOUT),
        (403, {"error": "Forbidden"}, {}, AuthError, ErrorClass.AUTH_DENIED),
        (404, {"error": "Not Found"}, {}, NotFoundError, ErrorClass.NOT_FOUND),
        (400, {"error": "Invalid topic"}, {}, ValidationError, ErrorClass.SCHEMA_INVALID),
        (409, {"error": "conflict"}, {}, NonRetryableError, None),
        (302, b"", {"location": "https://elsewhere.test/"}, ConfigError, ErrorClass.CONFIG_ERROR),
        (200, b"<html>Log in</html>", {}, ValidationError, ErrorClass.SCHEMA_INVALID),
        (200, {"error": "Not logged in"}, {}, AuthError, ErrorClass.AUTH_DENIED),
    ],
)
def test_answers_map_to_error_classes(api, status, body, headers, error, error_class):
    transport = _Scripted(status, body, headers)
    client = SwarmClient("https://swarm.example.test", USER, TICKET, api=api, transport=transport)  # type: ignore[arg-type]
    with pytest.raises(error) as caught:
        client.find_review(1)
    if error_class is not None:
        assert caught.value.error_class == error_class
    if status == 429:
        assert caught.value.retry_after == 12


@pytest.mark.spec("SW-5")
def test_error_messages_hold_neither_the_ticket_nor_the_body(api):
    echo = f"bad request for {TICKET}: " + "x" * 5000
    client = SwarmClient("https://swarm.example.test", USER, TICKET, api=api, transport=_Scripted(400, {"error": echo}))  # type: ignore[arg-type]
    with pytest.raises(ValidationError) as caught:
        client.find_review(1)
    assert TICKET not in caught.value.message and TICKET not in repr(client)
    assert len(caught.value.message) < 300


def test_requests_carry_basic_auth_and_the_version_shapes(api):
    answer = {"review": {"id": 5}} if api == "v9" else {"error": None, "messages": [], "data": {"review": {"id": 5}}}
    transport = _Scripted(200, answer)
    client = SwarmClient("https://swarm.example.test/swarm/", USER, TICKET, api=api, transport=transport)  # type: ignore[arg-type]
    assert client.create_review(42) == 5
    [request] = transport.requests
    assert request.url == f"https://swarm.example.test/swarm/api/{api}/reviews"
    assert request.headers["Authorization"].startswith("Basic ")
    if api == "v9":
        assert request.body == b"change=42" and "form-urlencoded" in request.headers["Content-Type"]
    else:
        assert json.loads(request.body or b"") == {"change": 42}


@pytest.mark.parametrize(
    "url",
    [
        "ftp://swarm.example.test",
        "file:///etc/passwd",
        "https://u:p@swarm.example.test",
        "swarm.example.test",
        "https://",
    ],
)
def test_only_plain_http_urls_are_accepted(api, url):
    with pytest.raises(ConfigError):
        SwarmClient(url, USER, TICKET, api=api)


@pytest.mark.spec("SW-5")
def test_a_redirect_to_another_host_is_not_followed(swarm, api):
    class Redirect(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(302)
            self.send_header("Location", f"{swarm.url}{self.path}")  # another port: another origin
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Redirect)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        client = SwarmClient(f"http://127.0.0.1:{server.server_address[1]}", USER, TICKET, api=api, timeout_seconds=5)  # type: ignore[arg-type]
        with pytest.raises(ConfigError):
            client.find_review(1)
        assert swarm.requests() == []  # the credentials never reached the other host
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)

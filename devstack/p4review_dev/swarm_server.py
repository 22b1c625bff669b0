"""A fake Helix Swarm on loopback: reviews and comments in memory, the v9 (form) and v11 (JSON)
request and answer shapes p4review.notify.swarm.client uses (docs/swarm.md), and injected faults.

Strict, as Swarm 2022.1 behaves (its PHP source, a public copy in `dfrees/swarm`; each rule below
names the file it comes from). `release="2025.2"` adds what Perforce's p4mcp-server shows that
release serving (`POST /api/v11/reviews`). What Swarm refuses, the fake refuses with Swarm's
status and answer shape; what Swarm ignores (an unknown query parameter, `notify` in a v11 body),
the fake ignores.

Endpoints:

* v9 `GET reviews?change[]=N`: the reviews naming change N (`module/Api/src/Controller/ReviewsController.php`
  getList forwards `change`). v11 `GET reviews`: no `change` filter (`module/Reviews/src/Filter/GetReviews.php`),
  so `change[]` is ignored and every review is listed; `keywords=N&keywordsFields[]=changes` is a
  prefix match on the indexed fields (`library/Record/Key/AbstractKey.php` fetchAll), a
  `keywordsFields` value that is not an indexed field is 400. Newest first, `max`, `after`, `lastSeen`.
  A review seeded `restricted=True` (one the service user may not see) is left out of the page
  after `lastSeen` was set, so a page can be empty with a `lastSeen` (`module/Reviews/src/Model/ReviewDAO.php`
  fetchAll; `module/Reviews/src/Controller/IndexController.php` indexAction for v9).
* v9 `POST reviews` (form `change=N`): a new review; a change already in a review is 400 "A Review for
  change N already exists." (`module/Reviews/src/Controller/IndexController.php` addAction, turned into
  400 by `module/Api/src/Controller/ReviewsController.php` create). v11 `POST reviews`: 404 in 2022.1
  (no route: `module/Reviews/config/module.config.php`), a new review in 2025.2.
* v9 `GET comments?topic=...`; v11 `GET comments/reviews/ID` (`after`, `max`, `fields`): ascending
  ids, `lastSeen` the page's last id; `comments` is a list in both (v9 `CommentsController::prepareSuccessModel`
  applies `array_values` and drops `topic`). v9 lists by exact topic: a topic that is not a review's
  (or an unknown review) is 200 with no comments (`CommentsController::getList` answers 200 and an
  empty list when the lookup throws).
* v9 `POST comments` (form): `delayNotification` delays only when it is the string `true`; `taskState`
  `comment` or `open` only (`module/Comments/src/Controller/IndexController.php` addAction); a context
  without `file`, on an unknown review, with a `version` the review does not have, or, when it carries
  no `content`, naming a file the review's change does not hold (known only for a review seeded with
  `files=`), is 400 "Provided context could not be filtered." (`module/Api/src/Controller/CommentsController.php`
  create, filterCommentContext).
* v11 `POST reviews/ID/comments` and `POST comments/reviews/ID` (JSON): `notify` is read from the query
  string only (`delayed` when absent; `delayed|immediate|silent`, else 400), never from the body
  (`module/Comments/src/Controller/CommentApi.php` create, `Validator/Notify.php`); `body` is required,
  `taskState` one of Swarm's (`Filter/Comment.php`, `Validator/TaskState.php`); a file context with any
  of `content`, `leftLine`, `rightLine` must carry all three, lines positive integers or null, `version`
  an integer (`Validator/Context.php`); other context keys are dropped (`Filter/ContextAttributes.php`);
  a `version` the review does not have is 409 (`Model/CommentDAO.php` validateReviewVersion).
* v9 `POST comments/notify` (form topic; no topic is 404; any other topic, an unknown review's too, is
  200 "No comment notifications to send" when nothing is delayed: `module/Comments/Module.php`
  sendDelayedComments); v11 `POST reviews/ID/notify` (`module/Comments/config/module.config.php`
  topic-notify). `POST /api/v11/comments/reviews/ID/notify` is not a Swarm route: 404.
  `notifications_for_review` counts notifications sent.
* Workflow test runs (`add_test_run` gives the `{pass}`, `{fail}`, `{update}` URLs, `/api/v10/testruns/...`,
  no basic auth, the UUID in the path, the review's token, is checked: 401): `{pass}`/`{fail}` (GET or
  POST) read only `url`, from a form body or the query, and ignore a JSON body; `{update}` takes a JSON
  body of `status`, `messages`, `url` only (anything else 400), `status` one of pass|fail|running|notstarted,
  `messages` a flat array cut to ten items, string items to 80 bytes
  (`module/TestIntegration/src/Controller/TestRunApi.php`, `Filter/TestRun.php`, `Filter/StatusValidator.php`).
  `test_run(id)` shows the stored run.

v11 answers are `{"error": null, "messages": [], "data": {...}}`; a v11 failure is
`{"error": <status>, "messages": [...], "data": null}` with, for a validation failure, Laminas'
`{field: {rule: text}}` as `messages` (`module/Api/src/Controller/AbstractRestfulController.php`).

Authentication is HTTP basic `user:ticket`. A wrong or missing one is answered, on v9 and v11 alike,
with HTTP 401 and `{"error": "Unauthorized"}`, not the v11 envelope: Swarm's basic-auth check throws
(`module/Users/src/Authentication/BasicAuthListener.php` enforceBasicAuth,
`module/Application/src/Listener/RouteListener.php` handleRequireLogin), its exception strategy sets
401 (`module/Application/src/View/Http/ExceptionStrategy.php`) and the strict JSON strategy writes the
reason phrase as `error` (`module/Application/src/View/Http/StrictJsonStrategy.php`).
`unauthorized_status=200` answers HTTP 200 with the same body instead: not something Swarm 2022.1
does, kept to prove the client still reads such an answer as refused credentials.

Faults, drawn per request from a seeded RNG (`error_rate`, `hang_rate`, `lost_response_rate`,
`seed`; `set_faults()` changes them) or queued one-shot with `fail_next(n, kind)`:

* `error`: HTTP 500 (optionally with Retry-After), nothing done;
* `hang`: no answer for `hang_seconds` (longer than any client timeout), then the connection is
  closed; nothing done;
* `lost`: the request is carried out (a comment is stored), then the connection is closed
  without an answer: "posted, but the response was lost".

Control routes for a fake served by another process (the local stack's, `p4review local up`),
under `/_fake/` (no authentication, no faults, not recorded in `requests()`; loopback only):

* `GET /_fake/state`: every review (`{"reviews": [{"id", "change", "comments": [...],
  "notifications"}]}`, comments as `comments_for_review` returns them) and `faults_injected`;
* `POST /_fake/faults` (JSON `error_rate`, `hang_rate`, `lost_response_rate`, `seed`): `set_faults`.

`FakeSwarmControl(url)` wraps both.

Usage::

    with FakeSwarmServer(user="p4review", ticket="T") as swarm:
        client = SwarmClient(swarm.url, "p4review", "T", api="v11")
        swarm.fail_next(1, "lost")
        ...
        swarm.comments_for_change(48213), swarm.notifications_for_change(48213)

Above 500 lines on purpose: the fake Swarm is one real system's API surface, each route citing the
Swarm source it follows; it is not shipped.
"""

from __future__ import annotations

import base64
import binascii
import copy
import json
import random
import secrets
import threading
import time
import urllib.parse
import urllib.request
import uuid
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

from p4review_dev.background import BackgroundServer

__all__ = ["FakeSwarmControl", "FakeSwarmServer", "FaultKind", "Release"]

FaultKind = Literal["error", "hang", "lost"]
Release = Literal["2022.1", "2025.2"]
RELEASES: tuple[Release, ...] = ("2022.1", "2025.2")
TEST_RUN_API = "v10"  # the version in Swarm's callback URLs (TestExecutor::API_VERSION)
# TaskState::VALID_TASK_STATES (module/Comments/src/Validator/TaskState.php)
TASK_STATES = ("comment", "open", "addressed", "verified", "verified:archive")
# A v9 comment is created `comment` or `open` only (module/Comments/src/Controller/IndexController.php
# addAction: getCommentFilter($user, 'add', [Comment::TASK_COMMENT, Comment::TASK_OPEN])).
V9_TASK_STATES = ("comment", "open")
NOTIFY_MODES = ("delayed", "immediate", "silent")  # module/Comments/src/Validator/Notify.php
TEST_RUN_STATUSES = ("pass", "fail", "running", "notstarted")  # TestIntegration/src/Filter/StatusValidator.php
# The review fields Swarm indexes (module/Reviews/src/Model/Review.php) plus `id`: what
# `keywordsFields` may name (module/Application/src/Filter/KeywordsFields.php).
KEYWORDS_FIELDS = (
    "changes",
    "author",
    "participants",
    "hasReviewer",
    "description",
    "projects",
    "state",
    "testStatus",
    "pending",
    "groups",
    "updated",
    "id",
)
FIRST_REVIEW_ID = 90001
_MAX_BODY_BYTES = 4 * 1024 * 1024
CONTROL_PREFIX = "/_fake"


@dataclass
class _Fault:
    kind: FaultKind
    status: int = HTTPStatus.INTERNAL_SERVER_ERROR
    retry_after: float | None = None


class _Answer(Exception):
    """Raised inside a route: answer with this status and JSON body."""

    def __init__(self, status: int, payload: Any):
        super().__init__(status)
        self.status = status
        self.payload = payload


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64


class FakeSwarmServer(BackgroundServer):
    def __init__(
        self,
        *,
        user: str = "p4review",
        ticket: str = "swarm-ticket",
        host: str = "127.0.0.1",
        port: int = 0,
        error_rate: float = 0.0,
        hang_rate: float = 0.0,
        lost_response_rate: float = 0.0,
        seed: int = 0,
        hang_seconds: float = 10.0,
        retry_after: float | None = None,
        unauthorized_status: int = HTTPStatus.UNAUTHORIZED,
        release: Release = "2022.1",
    ) -> None:
        super().__init__()
        self.user = user
        self.ticket = ticket
        self.host = host
        self.port = port
        self.hang_seconds = hang_seconds
        self.retry_after = retry_after
        self.unauthorized_status = unauthorized_status
        if release not in RELEASES:
            raise ValueError(f"release must be one of {', '.join(RELEASES)}")
        self.release: Release = release
        self._test_runs: dict[int, dict[str, Any]] = {}
        self._next_test_run = 1
        self._lock = threading.Lock()
        self._release = threading.Event()  # wakes hanging handlers on stop()
        self._rng = random.Random(seed)  # fault injection, not security
        self._rates = {"error": error_rate, "hang": hang_rate, "lost": lost_response_rate}
        self._queued: list[_Fault] = []
        self._reviews: dict[int, dict[str, Any]] = {}
        self._review_of_change: dict[int, int] = {}
        self._comments: dict[int, dict[str, Any]] = {}
        self._next_review = FIRST_REVIEW_ID
        self._next_comment = 1
        self._notifications: Counter[int] = Counter()
        self._notify_calls: Counter[int] = Counter()
        self._requests: list[tuple[str, str]] = []
        self._faults_injected: Counter[str] = Counter()

    # --- lifecycle -------------------------------------------------------------------------------
    def start(self) -> str:
        if self._server is not None:
            return self.url
        self._release.clear()
        handler = type("BoundSwarmHandler", (_Handler,), {"swarm": self})
        server = _Server((self.host, self.port), handler)
        self.port = int(server.server_address[1])
        self._serve(server, f"fake-swarm-{self.port}")
        return self.url

    def stop(self) -> None:
        self._release.set()
        super().stop()

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("FakeSwarmServer is not started")
        return f"http://{self.host}:{self.port}"

    # --- faults ----------------------------------------------------------------------------------
    def set_faults(
        self,
        *,
        error_rate: float | None = None,
        hang_rate: float | None = None,
        lost_response_rate: float | None = None,
        seed: int | None = None,
    ) -> None:
        with self._lock:
            for name, rate in (("error", error_rate), ("hang", hang_rate), ("lost", lost_response_rate)):
                if rate is not None:
                    self._rates[name] = rate
            if seed is not None:
                self._rng.seed(seed)

    def fail_next(
        self,
        count: int = 1,
        kind: FaultKind = "error",
        *,
        status: int = HTTPStatus.INTERNAL_SERVER_ERROR,
        retry_after: float | None = None,
    ) -> None:
        """The next `count` requests (any endpoint) meet `kind`."""
        with self._lock:
            self._queued += [_Fault(kind, status, retry_after) for _ in range(count)]

    def _draw_fault(self) -> _Fault | None:
        with self._lock:
            if self._queued:
                fault = self._queued.pop(0)
            else:
                fault = None
                draw = self._rng.random()
                kinds: tuple[FaultKind, ...] = ("error", "hang", "lost")
                for kind in kinds:
                    rate = self._rates[kind]
                    if draw < rate:
                        fault = _Fault(kind, HTTPStatus.INTERNAL_SERVER_ERROR, self.retry_after)
                        break
                    draw -= rate
            if fault is not None:
                self._faults_injected[fault.kind] += 1
            return fault

    # --- seeding and inspection --------------------------------------------------------------------
    def add_review(
        self,
        change: int,
        *,
        author: str = "dev",
        versions: int = 1,
        files: Iterable[str] | None = None,
        restricted: bool = False,
    ) -> int:
        """A review of `change` with `versions` versions, as if someone had started it in Swarm; its id.
        `files`: the depot paths its change holds (unknown when None: a v9 context without `content`
        is then accepted whatever file it names). `restricted`: the service user may not see it
        (a restricted change or a private project), so review lists leave it out."""
        with self._lock:
            review_id = self._create_review(change, author)
            for _ in range(versions - 1):
                self._add_version(review_id, change)
            review = self._reviews[review_id]
            review["files"] = None if files is None else list(files)
            review["restricted"] = restricted
            return review_id

    def add_comment(self, review_id: int, body: str, *, user: str = "reviewer") -> int:
        """Someone else's comment on the review; its id."""
        with self._lock:
            return self._store_comment(review_id, user, body, "comment", {}, delayed=False)

    def add_test_run(self, review_id: int, version: int = 1, *, test: str = "p4review") -> dict[str, str]:
        """A workflow test run of the review's version, as Swarm starts one: its `{pass}`, `{fail}`
        and `{update}` URLs (TestExecutor::generateCallbackUrls) and its `id`. The UUID in them is
        the review's token at its head version, the same for every run of the review
        (`module/TestIntegration/src/Service/TestExecutor.php` createTestRun, startTest;
        `module/Reviews/src/Model/Review.php` getToken: `<token>.v<head version>`)."""
        with self._lock:
            if review_id not in self._reviews:
                raise KeyError(review_id)
            run_id = self._next_test_run
            self._next_test_run += 1
            review = self._reviews[review_id]
            run_token = f"{review['token']}.v{len(review['versions'])}"
            self._test_runs[run_id] = {
                "id": run_id,
                "change": review_id,
                "version": version,
                "test": test,
                "status": "running",
                "messages": [],
                "url": None,
                "uuid": run_token,
            }
        base = f"{self.url}/api/{TEST_RUN_API}/testruns/{run_id}"
        return {
            "id": str(run_id),
            "pass": f"{base}/pass/{run_token}",
            "fail": f"{base}/fail/{run_token}",
            "update": f"{base}/{run_token}",
        }

    def test_run(self, run_id: int) -> dict[str, Any]:
        with self._lock:
            return copy.deepcopy(self._test_runs[run_id])

    def review_for_change(self, change: int) -> int | None:
        with self._lock:
            return self._review_of_change.get(change)

    def comments_for_review(self, review_id: int) -> list[dict[str, Any]]:
        topic = f"reviews/{review_id}"
        with self._lock:
            return [copy.deepcopy(c) for _, c in sorted(self._comments.items()) if c["topic"] == topic]

    def comments_for_change(self, change: int) -> list[dict[str, Any]]:
        review_id = self.review_for_change(change)
        return [] if review_id is None else self.comments_for_review(review_id)

    def notifications_for_review(self, review_id: int) -> int:
        """Notification emails Swarm would have sent for the review (immediate and rolled-up)."""
        with self._lock:
            return self._notifications[review_id]

    def notifications_for_change(self, change: int) -> int:
        review_id = self.review_for_change(change)
        return 0 if review_id is None else self.notifications_for_review(review_id)

    def delayed_for_change(self, change: int) -> int:
        """Comments posted delayed whose notification was never sent (should be 0 after notify)."""
        review_id = self.review_for_change(change)
        with self._lock:
            topic = f"reviews/{review_id}"
            return sum(1 for c in self._comments.values() if c["topic"] == topic and c["delayed"])

    def notify_calls(self, review_id: int) -> int:
        with self._lock:
            return self._notify_calls[review_id]

    def requests(self) -> list[tuple[str, str]]:
        """(method, path without query) of every request received, in order."""
        with self._lock:
            return list(self._requests)

    def faults_injected(self) -> dict[str, int]:
        with self._lock:
            return dict(self._faults_injected)

    def state(self) -> dict[str, Any]:
        """Every review with its change, comments (ascending ids) and notification count, and the
        faults injected so far: what `GET /_fake/state` answers."""
        with self._lock:
            by_topic: dict[str, list[dict[str, Any]]] = {}
            for _, comment in sorted(self._comments.items()):
                by_topic.setdefault(comment["topic"], []).append(copy.deepcopy(comment))
            reviews = [
                {
                    "id": review_id,
                    "change": review["changes"][0],
                    "comments": by_topic.get(f"reviews/{review_id}", []),
                    "notifications": self._notifications[review_id],
                }
                for review_id, review in sorted(self._reviews.items())
            ]
            return {"reviews": reviews, "faults_injected": dict(self._faults_injected)}

    # --- state (the lock held) -----------------------------------------------------------------------
    def _create_review(self, change: int, author: str) -> int:
        if change in self._review_of_change:
            # module/Reviews/src/Controller/IndexController.php addAction; ReviewsController::create
            # turns `isValid: false` into 400 through prepareErrorModel (`error`, `isValid`).
            raise _Answer(
                HTTPStatus.BAD_REQUEST, {"error": f"A Review for change {change} already exists.", "isValid": False}
            )
        review_id = self._next_review
        self._next_review += 1
        now = int(time.time())
        self._reviews[review_id] = {
            "id": review_id,
            "type": "default",
            "author": author,
            "changes": [change],
            "commits": [],
            "description": f"Review of change {change}",
            "participants": {author: []},
            "state": "needsReview",
            "pending": True,
            "created": now,
            "updated": now,
            # Hidden from the API (Review.php: 'versions' => ['hidden' => true]); kept for checks.
            "versions": [{"change": review_id, "pending": True, "time": now, "user": author}],
            # Hidden too (Review.php: 'token' => ['hidden' => true]; save: strtoupper(new Uuid)).
            "token": str(uuid.UUID(bytes=secrets.token_bytes(16))).upper(),
            # Not Swarm fields: the change's depot files when known, and whether lists hide it.
            "files": None,
            "restricted": False,
        }
        self._review_of_change[change] = review_id
        return review_id

    def _add_version(self, review_id: int, change: int) -> None:
        review = self._reviews[review_id]
        review["versions"].append({"change": review_id, "pending": True, "time": int(time.time()), "user": "dev"})

    def _store_comment(
        self, review_id: int, user: str, body: str, task_state: str, context: dict[str, Any], *, delayed: bool
    ) -> int:
        if review_id not in self._reviews:
            raise _Answer(HTTPStatus.NOT_FOUND, {"error": "Cannot fetch entry. Id does not exist."})
        comment_id = self._next_comment
        self._next_comment += 1
        now = int(time.time())
        self._comments[comment_id] = {
            "id": comment_id,
            "topic": f"reviews/{review_id}",
            "body": body,
            "context": context,
            "taskState": task_state,
            "user": user,
            "attachments": [],
            "flags": [],
            "likes": [],
            "edited": None,
            "time": now,
            "updated": now,
            "delayed": delayed,  # not a Swarm field: what the notify endpoint still has to send
        }
        if not delayed:
            self._notifications[review_id] += 1
        return comment_id

    def _notify(self, review_id: int, user: str) -> int:
        if review_id not in self._reviews:
            raise _Answer(HTTPStatus.NOT_FOUND, {"error": "Cannot fetch entry. Id does not exist."})
        self._notify_calls[review_id] += 1
        pending = [
            c
            for c in self._comments.values()
            if c["topic"] == f"reviews/{review_id}" and c["delayed"] and c["user"] == user
        ]
        for comment in pending:
            comment["delayed"] = False
        if pending:
            self._notifications[review_id] += 1
        return len(pending)


def _public(comment: dict[str, Any], fields: list[str]) -> dict[str, Any]:
    shown = {key: value for key, value in comment.items() if key != "delayed"}
    return {key: shown[key] for key in fields if key in shown} if fields else shown


_HIDDEN_REVIEW_FIELDS = ("versions", "token", "files", "restricted")


def _public_review(review: dict[str, Any]) -> dict[str, Any]:
    return {key: copy.deepcopy(value) for key, value in review.items() if key not in _HIDDEN_REVIEW_FIELDS}


def _int(value: Any, name: str) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise _Answer(
            HTTPStatus.BAD_REQUEST, {"error": f"Invalid {name}", "details": {name: "must be an integer"}}
        ) from None
    return number


def _invalid(field: str, rule: str, text: str) -> _Answer:
    """A v10/v11 input filter failure: HTTP 400, Laminas' messages `{field: {rule: text}}`."""
    return _Answer(HTTPStatus.BAD_REQUEST, {"error": f"{field}: {text}", "filter_messages": {field: {rule: text}}})


def _v11_error(answer: _Answer) -> dict[str, Any]:
    """AbstractRestfulController::error: `{"error": <status>, "messages": [...], "data": null}`; an input
    filter's failure puts Laminas' `{field: {rule: text}}` in `messages`."""
    payload = answer.payload if isinstance(answer.payload, dict) else {}
    messages: Any = payload.get("filter_messages") or [{"code": answer.status, "text": str(payload.get("error", ""))}]
    return {"error": answer.status, "messages": messages, "data": None}


def _line_problem(line: Any) -> str | None:
    """Context::isLineValid (module/Comments/src/Validator/Context.php)."""
    if isinstance(line, list):
        if len(line) != 2:
            return "A line range must have a start and finish line number"
        if not all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in line):
            return "Line numbers must be integer values greater than 0"
        if line[0] > line[1]:
            return "The first element of the line range must not be greater than the second"
        return None
    if line is not None and (not isinstance(line, int) or isinstance(line, bool) or line <= 0):
        return "Line numbers must be integer values greater than 0"
    return None


class _Handler(BaseHTTPRequestHandler):
    swarm: FakeSwarmServer  # set on the subclass the server builds
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    # --- plumbing --------------------------------------------------------------------------------
    def _send(self, status: int, payload: Any, *, retry_after: float | None = None) -> None:
        body = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if retry_after is not None:
            self.send_header("Retry-After", f"{retry_after:g}")
        self.end_headers()
        self.wfile.write(body)

    def _drop(self) -> None:
        """Close the connection without an answer."""
        self.close_connection = True

    def _authorized(self) -> bool:
        header = self.headers.get("Authorization", "")
        if not header.startswith("Basic "):
            return False
        try:
            user, _, ticket = base64.b64decode(header[6:], validate=True).decode("utf-8").partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return False
        return user == self.swarm.user and ticket == self.swarm.ticket

    def _user(self) -> str:
        return self.swarm.user

    def _handle(self, method: str) -> None:
        split = urllib.parse.urlsplit(self.path)
        path = split.path.rstrip("/")
        query = urllib.parse.parse_qs(split.query, keep_blank_values=True)
        length = int(self.headers.get("Content-Length") or 0)
        if length > _MAX_BODY_BYTES:
            self._send(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, {"error": "Request too large"})
            self.close_connection = True
            return
        raw = self.rfile.read(length) if length else b""
        if path == CONTROL_PREFIX or path.startswith(CONTROL_PREFIX + "/"):
            self._control(method, path, raw)
            return
        with self.swarm._lock:
            self.swarm._requests.append((method, path))
        fault = self.swarm._draw_fault()
        if fault is not None and fault.kind == "hang":
            self.swarm._release.wait(self.swarm.hang_seconds)
            self._drop()
            return
        if fault is not None and fault.kind == "error":
            self._send(fault.status, {"error": "Internal Server Error"}, retry_after=fault.retry_after)
            return
        parts = path.split("/")  # "", "api", "v9", ...
        api = parts[2] if len(parts) > 2 and parts[1] == "api" else ""
        rest = parts[3:]
        if api in ("v10", "v11") and rest[:1] == ["testruns"]:
            # Test run callbacks carry their own token (the UUID) and need no login.
            try:
                status, payload = self._test_run_route(method, rest[1:], query, raw, self.headers)
            except _Answer as answer:
                status, payload = answer.status, _v11_error(answer)
            self._send(status, payload)
            return
        if not self._authorized():
            self._send(self.swarm.unauthorized_status, {"error": "Unauthorized"})
            return
        try:
            if api not in ("v9", "v10", "v11"):
                raise _Answer(HTTPStatus.NOT_FOUND, {"error": "Not Found"})
            status, payload = self._route(method, api, rest, query, raw)
        except _Answer as answer:
            status, payload = answer.status, answer.payload
            if api != "v9":
                payload = _v11_error(answer)
            elif isinstance(payload, dict):
                payload = {k: v for k, v in payload.items() if k != "filter_messages"}
        if fault is not None and fault.kind == "lost":
            self._drop()  # carried out; the answer never leaves
            return
        self._send(status, payload)

    def _control(self, method: str, path: str, raw: bytes) -> None:
        """The `/_fake/` routes: inspection and fault settings for a fake in another process."""
        if method == "GET" and path == f"{CONTROL_PREFIX}/state":
            self._send(HTTPStatus.OK, self.swarm.state())
            return
        if method == "POST" and path == f"{CONTROL_PREFIX}/faults":
            try:
                settings = self._json(raw)
                rates = {
                    name: float(settings[name])
                    for name in ("error_rate", "hang_rate", "lost_response_rate")
                    if settings.get(name) is not None
                }
                seed = int(settings["seed"]) if settings.get("seed") is not None else None
            except _Answer as answer:
                self._send(answer.status, answer.payload)
                return
            except (TypeError, ValueError):
                self._send(HTTPStatus.BAD_REQUEST, {"error": "rates must be numbers and the seed an integer"})
                return
            if any(not 0.0 <= rate <= 1.0 for rate in rates.values()):
                self._send(HTTPStatus.BAD_REQUEST, {"error": "rates must be within [0, 1]"})
                return
            self.swarm.set_faults(**rates, seed=seed)
            with self.swarm._lock:
                rates_now = dict(self.swarm._rates)
            self._send(HTTPStatus.OK, {"faults": rates_now})
            return
        self._send(HTTPStatus.NOT_FOUND, {"error": "Not Found"})

    def _form(self, raw: bytes) -> list[tuple[str, str]]:
        try:
            return urllib.parse.parse_qsl(raw.decode("utf-8"), keep_blank_values=True)
        except UnicodeDecodeError:
            raise _Answer(HTTPStatus.BAD_REQUEST, {"error": "Body is not UTF-8"}) from None

    def _json(self, raw: bytes) -> dict[str, Any]:
        try:
            decoded = json.loads(raw.decode("utf-8")) if raw else {}
        except (UnicodeDecodeError, ValueError):
            raise _Answer(HTTPStatus.BAD_REQUEST, {"error": "Body is not JSON"}) from None
        if not isinstance(decoded, dict):
            raise _Answer(HTTPStatus.BAD_REQUEST, {"error": "Body is not a JSON object"})
        return decoded

    # --- routes ----------------------------------------------------------------------------------
    def _route(
        self, method: str, api: str, rest: list[str], query: dict[str, list[str]], raw: bytes
    ) -> tuple[int, Any]:
        swarm = self.swarm
        v9 = api == "v9"

        def wrap(data: Any) -> Any:  # AbstractRestfulController::success
            return data if v9 else {"error": None, "messages": [], "data": data}

        if rest == ["reviews"] and method == "GET":
            return HTTPStatus.OK, wrap(self._list_reviews(query, v9=v9))
        if rest == ["reviews"] and method == "POST":
            if v9:  # module/Api/src/Controller/ReviewsController.php create: the form's `change`
                change = dict(self._form(raw)).get("change")
            elif swarm.release == "2025.2":  # p4mcp-server: POST /api/v11/reviews {"change": N}
                change = self._json(raw).get("change")
            else:  # 2022.1: the v10/v11 `reviews` route answers GET only (module/Reviews/config/module.config.php)
                raise _Answer(HTTPStatus.NOT_FOUND, {"error": "Not Found"})
            with swarm._lock:
                review_id = swarm._create_review(_int(change, "change"), self._user())
                review = _public_review(swarm._reviews[review_id])
            return HTTPStatus.OK, wrap({"review": review})
        if v9 and rest == ["comments"] and method == "GET":
            topic = (query.get("topic") or [""])[0]
            return HTTPStatus.OK, self._list_comments(topic, query, v9=True)
        if not v9 and len(rest) == 3 and rest[:2] == ["comments", "reviews"] and method == "GET":
            return HTTPStatus.OK, wrap(self._list_comments(f"reviews/{rest[2]}", query, v9=False))
        if v9 and rest == ["comments"] and method == "POST":
            return HTTPStatus.OK, {"comment": self._add_v9_comment(self._form(raw))}
        topic_create = len(rest) == 3 and rest[:2] == ["comments", "reviews"]  # CommentApi comment-topic-create
        review_comments = len(rest) == 3 and rest[0] == "reviews" and rest[2] == "comments"  # `topic` route
        if not v9 and (topic_create or review_comments) and method == "POST":
            target = rest[2] if topic_create else rest[1]
            return HTTPStatus.OK, wrap(
                {"comments": [self._add_v11_comment(f"reviews/{target}", query, self._json(raw))]}
            )
        if v9 and rest == ["comments", "notify"] and method == "POST":
            # CommentsController::sendAllMyDelayedCommentsAction: no topic is 404
            notify_topic = dict(self._form(raw)).get("topic")
            if notify_topic is None:
                raise _Answer(
                    HTTPStatus.NOT_FOUND,
                    {
                        "isValid": False,
                        "error": "A topic is required to send a notification",
                        "code": HTTPStatus.NOT_FOUND,
                    },
                )
            # module/Comments/Module.php sendDelayedComments: the user's delayed comments on that topic,
            # whatever the topic is; none (an unknown review, a topic that is no review's) is still 200.
            subject, _, ident = notify_topic.partition("/")
            with swarm._lock:
                known = subject == "reviews" and ident.isdigit() and int(ident) in swarm._reviews
                sent = swarm._notify(int(ident), self._user()) if known else 0
            if not sent:
                message = "No comment notifications to send"
            else:
                message = f"Sending a notification for {sent} comment" + ("s" if sent != 1 else "")
            return HTTPStatus.OK, {"isValid": True, "message": message, "code": HTTPStatus.OK}
        if not v9 and len(rest) == 3 and rest[0] == "reviews" and rest[2] == "notify" and method == "POST":
            # module/Comments/config/module.config.php topic-notify: CommentApi::sendNotificationAction
            return HTTPStatus.OK, wrap({"count": self._notify(f"reviews/{rest[1]}")})
        raise _Answer(HTTPStatus.NOT_FOUND, {"error": "Not Found"})

    def _list_reviews(self, query: dict[str, list[str]], *, v9: bool) -> dict[str, Any]:
        """v9 filters by `change` (ReviewsController::getList); v11 has no such filter and reads
        `keywords`/`keywordsFields` (GetReviews.php), a prefix match (AbstractKey::fetchAll).
        `lastSeen` is the last review fetched; the reviews the user may not see are removed after
        it was set, and `totalCount` is lowered by as many (ReviewDAO::fetchAll; for v9
        Reviews IndexController::indexAction)."""
        limit = _int(query["max"][0], "max") if query.get("max") else (1000 if v9 else 50)
        after = _int(query["after"][0], "after") if query.get("after") else None
        if v9:
            changes = {_int(c, "change") for c in query.get("change[]", []) + query.get("change", [])}
            keywords, fields = "", []
        else:
            changes = set()
            keywords = (query.get("keywords") or [""])[0].strip()
            fields = query.get("keywordsFields[]", []) + query.get("keywordsFields", [])
            for field in fields:
                if field not in KEYWORDS_FIELDS:
                    raise _invalid("keywordsFields", "invalidKeywordsFields", f"'{field}' is not a valid field")
            fields = fields or ["participants", "description", "projects", "id"]  # ReviewDAO default
        with self.swarm._lock:
            reviews = [r for _, r in sorted(self.swarm._reviews.items(), reverse=True)]  # newest first
            if changes:
                reviews = [r for r in reviews if changes & set(r["changes"])]
            if keywords:
                reviews = [r for r in reviews if _keywords_match(r, keywords, fields)]
            if after is not None:
                reviews = [r for r in reviews if r["id"] < after]
            fetched = reviews[: max(0, limit)]
            hidden = sum(1 for r in fetched if r["restricted"])
            page = [_public_review(r) for r in fetched if not r["restricted"]]
        last_seen = fetched[-1]["id"] if fetched else None
        return {"lastSeen": last_seen, "reviews": page, "totalCount": len(reviews) - hidden}

    def _review_id(self, topic: str) -> int:
        subject, _, ident = topic.partition("/")
        if subject != "reviews" or not ident.isdigit():
            raise _Answer(
                HTTPStatus.BAD_REQUEST, {"error": "Invalid topic", "details": {"topic": "expected reviews/<id>"}}
            )
        return int(ident)

    def _list_comments(self, topic: str, query: dict[str, list[str]], *, v9: bool) -> dict[str, Any]:
        """v11: the review's comments. v9 (CommentsController::getList, Comments IndexController::indexAction):
        the comments of exactly that topic, every comment for an empty one (getFetchAllOptions drops a
        blank topic); a topic that is no review's, or an unknown review (its lookup throws, and getList
        answers 200 with no comments), lists nothing."""
        if not v9:
            topic = f"reviews/{self._review_id(topic)}"
        after = _int(query["after"][0], "after") if query.get("after") else 0
        limit = _int(query["max"][0], "max") if query.get("max") else 100
        fields = [f for f in (query.get("fields") or [""])[0].split(",") if f]
        with self.swarm._lock:
            subject, _, ident = topic.partition("/")
            review = self.swarm._reviews.get(int(ident)) if subject == "reviews" and ident.isdigit() else None
            if v9 and review is not None and review["restricted"]:  # IndexController::restrictAccess throws
                topic = "reviews/none"
            matching = [
                c for i, c in sorted(self.swarm._comments.items()) if (not topic or c["topic"] == topic) and i > after
            ]
            page = [_public(c, fields) for c in matching[: max(0, limit)]]
        last_seen = page[-1]["id"] if page and "id" in page[-1] else None
        if not v9:
            return {"comments": page, "totalCount": len(matching), "lastSeen": last_seen}
        # A list, never an object keyed by id, and no `topic`: CommentsController::prepareSuccessModel
        # applies array_values and unsets `topic`.
        return {"comments": page, "lastSeen": last_seen}

    def _add_v9_comment(self, form: list[tuple[str, str]]) -> dict[str, Any]:
        """CommentsController::create and filterCommentContext (module/Api/src/Controller/CommentsController.php)."""
        fields = dict(form)
        topic = fields.get("topic", "")
        review_id = self._review_id(topic)
        given = {
            key[len("context[") : -1]: value for key, value in form if key.startswith("context[") and "][" not in key
        }
        content = [value for key, value in form if key == "context[content][]"]
        context: dict[str, Any] = {}
        if given or content:

            def refused(detail: str) -> _Answer:
                return _Answer(
                    HTTPStatus.BAD_REQUEST,
                    {"error": "Provided context could not be filtered.", "details": {"context": detail}},
                )

            if "file" not in given:
                raise refused("File path is required when specifying inline comment context.")
            with self.swarm._lock:
                review = self.swarm._reviews.get(review_id)
                versions = len(review["versions"]) if review is not None else 0
                files = review["files"] if review is not None else None
            if review is None:  # Review::fetch throws; create() turns any exception into this 400
                raise refused("Cannot fetch entry. Id does not exist.")
            version = _int(given["version"], "context[version]") if given.get("version") else versions
            if not 1 <= version <= versions:  # Review::hasVersion
                raise refused("Specified version was not found in this review.")
            # Without content Swarm looks the file up in that version's change (getFileData) and reads
            # the snippet from its diff; the fake knows a review's files only when seeded with them.
            if not content and files is not None and given["file"] not in files:
                raise refused("File path not found in specified review/change.")
            context = {"file": given["file"]}
            context["leftLine"] = _int(given["leftLine"], "context[leftLine]") if given.get("leftLine") else None
            context["rightLine"] = _int(given["rightLine"], "context[rightLine]") if given.get("rightLine") else None
            # Without content Swarm reads the diff itself; the fake stores what it was given.
            context["content"] = content
            context["review"] = review_id
            context["version"] = version
        task_state = fields.get("taskState", "comment")
        if task_state not in V9_TASK_STATES:  # a new comment is a comment or an open task
            transitions = ", ".join(V9_TASK_STATES)
            raise _Answer(
                HTTPStatus.BAD_REQUEST,
                {
                    "error": "Bad Request",  # prepareErrorModel: no `error` in the model, the reason phrase
                    "isValid": False,
                    "details": {
                        "taskState": f"Invalid task state transition specified. Valid transitions are: {transitions}"
                    },
                },
            )
        return self._add_comment(
            topic,
            fields.get("body", ""),
            task_state,
            context,
            # CommentsController::setNotificationValues: only the string 'true' delays.
            delayed=fields.get("delayNotification") == "true" or fields.get("silenceNotification") == "true",
        )

    def _add_v11_comment(self, topic: str, query: dict[str, list[str]], payload: dict[str, Any]) -> dict[str, Any]:
        """CommentApi::create (module/Comments/src/Controller/CommentApi.php): `notify` from the query
        only, default delayed; the body through CreateComment (Filter/CreateComment.php, Comment.php)."""
        notify = (query.get("notify") or ["delayed"])[0]
        if notify not in NOTIFY_MODES:
            raise _invalid("notify", "invalidNotify", f"notify must be one of {', '.join(NOTIFY_MODES)}")
        body = payload.get("body")
        if not isinstance(body, str) or not body.strip():
            raise _invalid("body", "isEmpty", "Value is required and can't be empty")
        task_state = payload.get("taskState", "comment")
        if task_state not in TASK_STATES:
            raise _invalid("taskState", "invalidTaskState", f"taskState must be one of {', '.join(TASK_STATES)}")
        context = _v11_context(payload.get("context"))
        # CommentDAO::save -> validatedTopic: the review is fetched (unknown: 404), then
        # validateReviewVersion: a context version the review does not have makes Review::getVersion
        # throw InvalidArgumentException, which CommentApi::create answers with 409.
        with self.swarm._lock:
            review = self.swarm._reviews.get(self._review_id(topic))
            versions = len(review["versions"]) if review is not None else 0
        if review is None:
            raise _Answer(HTTPStatus.NOT_FOUND, {"error": "Cannot fetch entry. Id does not exist."})
        version = context.get("version")
        if version and not 1 <= version <= versions:  # Review::getVersion: 0 (falsy) is the head version
            raise _Answer(HTTPStatus.CONFLICT, {"error": f"Version [{version}] is not a valid version for this review"})
        return self._add_comment(topic, body.strip(), task_state, context, delayed=notify != "immediate")

    def _add_comment(
        self, topic: str, body: str, task_state: str, context: dict[str, Any], *, delayed: bool
    ) -> dict[str, Any]:
        review_id = self._review_id(topic)
        if not body:
            raise _Answer(
                HTTPStatus.BAD_REQUEST,
                {"isValid": False, "error": "Body is required", "details": {"body": "Value is required"}},
            )
        if task_state not in TASK_STATES:
            raise _Answer(
                HTTPStatus.BAD_REQUEST,
                {"isValid": False, "error": "Invalid task state", "details": {"taskState": task_state}},
            )
        with self.swarm._lock:
            comment_id = self.swarm._store_comment(review_id, self._user(), body, task_state, context, delayed=delayed)
            return _public(self.swarm._comments[comment_id], [])

    def _notify(self, topic: str) -> int:
        review_id = self._review_id(topic)
        with self.swarm._lock:
            return self.swarm._notify(review_id, self._user())

    # --- workflow test runs ------------------------------------------------------------------------
    def _test_run_route(
        self, method: str, rest: list[str], query: dict[str, list[str]], raw: bytes, headers: Any
    ) -> tuple[int, Any]:
        """TestRunApi (module/TestIntegration/src/Controller/TestRunApi.php): `ID/pass/UUID` and
        `ID/fail/UUID` (GET, POST; passOrFail), `ID/UUID` (POST; updateWithUuid)."""
        if len(rest) == 3 and rest[1] in ("pass", "fail") and method in ("GET", "POST"):
            run = self._test_run_with_uuid(rest[0], rest[2])
            # `getPost()` holds only a form body; a JSON body is not read at all.
            form_body = "application/x-www-form-urlencoded" in (headers.get("Content-Type") or "")
            data = {**{k: v[0] for k, v in query.items()}, **(dict(self._form(raw)) if form_body else {})}
            with self.swarm._lock:
                if "url" in data:
                    run["url"] = data["url"]
                run["status"] = rest[1]
                return HTTPStatus.OK, {"error": None, "messages": [], "data": {"testruns": [copy.deepcopy(run)]}}
        if len(rest) == 2 and method == "POST":
            run = self._test_run_with_uuid(rest[0], rest[1])
            try:
                decoded = json.loads(raw.decode("utf-8")) if raw else None
            except (UnicodeDecodeError, ValueError):
                decoded = None
            if not isinstance(decoded, dict):
                # PHP: array_diff_key(null)
                raise _Answer(HTTPStatus.INTERNAL_SERVER_ERROR, {"error": "The body is not a JSON object"})
            data = decoded
            if set(data) - {"messages", "status", "url"}:
                raise _Answer(
                    HTTPStatus.BAD_REQUEST, {"error": "Only the following fields are permitted [messages, status, url]"}
                )
            status = data.get("status", run["status"])
            if not isinstance(status, str) or status.strip() not in TEST_RUN_STATUSES:
                raise _invalid("status", "invalidStatus", f"status must be one of {', '.join(TEST_RUN_STATUSES)}")
            messages = _test_run_messages(data["messages"]) if "messages" in data else run["messages"]
            url = data.get("url", run["url"])
            if url is not None and (not isinstance(url, str) or not 1 <= len(url.strip()) <= 1024):
                raise _invalid("url", "stringLength", "url must be 1 to 1024 characters")
            with self.swarm._lock:
                run.update(status=status.strip(), messages=messages, url=url)
                return HTTPStatus.OK, {"error": None, "messages": [], "data": {"testruns": [copy.deepcopy(run)]}}
        raise _Answer(HTTPStatus.NOT_FOUND, {"error": "Not Found"})

    def _test_run_with_uuid(self, run_id: str, run_token: str) -> dict[str, Any]:
        """TestRunApi::getTestRunWithUuid: an unknown run 404, a wrong UUID 401."""
        with self.swarm._lock:
            run = self.swarm._test_runs.get(int(run_id)) if run_id.isdigit() else None
        if run is None:
            raise _Answer(HTTPStatus.NOT_FOUND, {"error": "Cannot fetch entry. Id does not exist."})
        if run["uuid"] != run_token:
            raise _Answer(HTTPStatus.UNAUTHORIZED, {"error": "Unauthorized"})
        return run


def _test_run_messages(messages: Any) -> list[Any]:
    """Filter/TestRun.php addMessagesFilter: ArrayValues (null or "" is [], an object its values),
    ArraySliceFilter (the first ten), ArrayOfStringFilter (a string cut to 80 bytes, PHP `substr`; a
    character cut in two is dropped here; other items kept as they are), then FlatArray (an array,
    none of whose items is an array or an object)."""
    if messages is None or messages == "":
        messages = []
    if isinstance(messages, dict):
        messages = list(messages.values())
    if not isinstance(messages, list):
        raise _invalid("messages", "notArray", "Invalid type given. Array required.")
    kept = [m.encode("utf-8")[:80].decode("utf-8", errors="ignore") if isinstance(m, str) else m for m in messages[:10]]
    if any(isinstance(m, (list, dict)) for m in kept):
        raise _invalid("messages", "notFlat", "Array values must not be arrays or objects.")
    return kept


def _keywords_match(review: dict[str, Any], keywords: str, fields: list[str]) -> bool:
    """AbstractKey::fetchAll: every word is a prefix (`code=word*`) of a value of one of the fields
    (word-indexed fields such as the description match case-insensitively)."""
    values: list[str] = []
    for field in fields:
        value = review.get(field)
        if isinstance(value, dict):
            values += [str(key).lower() for key in value]
        elif isinstance(value, list):
            values += [str(item).lower() for item in value]
        elif value is not None:
            values += str(value).lower().split() if field == "description" else [str(value).lower()]
    return all(any(value.startswith(word.lower()) for value in values) for word in keywords.split())


def _v11_context(context: Any) -> dict[str, Any]:
    """ContextAttributes (drops other keys) then Context (module/Comments/src/Validator/Context.php)
    for a review topic."""
    if context is None:
        return {}
    if not isinstance(context, dict):
        raise _invalid("context", "badContext", "A comment context must reference either a review or a change")
    if "attribute" in context:
        if context["attribute"] != "description":
            raise _invalid("context", "badAttribute", "The only supported value is 'description'")
        return {"attribute": "description"}
    kept = {k: v for k, v in context.items() if k in ("comment", "version", "file", "leftLine", "rightLine", "content")}
    if kept.get("version") is not None and (not isinstance(kept["version"], int) or isinstance(kept["version"], bool)):
        raise _invalid("context", "badVersionNumber", "A review comment must refer to a numeric review version")
    if kept.get("file") is not None:
        present = [k for k in ("content", "leftLine", "rightLine") if k in kept]
        if present and len(present) != 3:
            raise _invalid(
                "context",
                "inlineCommentMissingContext",
                "An inline comment must have a file name, type, content, right and left line numbers",
            )
        for key in ("leftLine", "rightLine") if present else ():
            problem = _line_problem(kept[key])
            if problem is not None:
                raise _invalid("context", "lessThanZero", problem)
    return kept


class FakeSwarmControl:
    """A FakeSwarmServer served by another process (the local stack's), through its `/_fake/`
    routes: set its faults, read its reviews and comments."""

    def __init__(self, url: str, *, timeout_seconds: float = 30.0):
        self.url = url.rstrip("/")
        self._timeout = timeout_seconds

    def _call(self, method: str, path: str, payload: Any = None) -> Any:
        data = None if payload is None else json.dumps(payload).encode("utf-8")
        request = urllib.request.Request(
            f"{self.url}{CONTROL_PREFIX}/{path}", data=data, method=method, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=self._timeout) as answer:
            return json.loads(answer.read().decode("utf-8"))

    def set_faults(
        self,
        *,
        error_rate: float | None = None,
        hang_rate: float | None = None,
        lost_response_rate: float | None = None,
        seed: int | None = None,
    ) -> None:
        self._call(
            "POST",
            "faults",
            {"error_rate": error_rate, "hang_rate": hang_rate, "lost_response_rate": lost_response_rate, "seed": seed},
        )

    def state(self) -> dict[str, Any]:
        answer: dict[str, Any] = self._call("GET", "state")
        return answer

    def reviews_by_change(self) -> dict[int, dict[str, Any]]:
        """{change: {"id", "change", "comments", "notifications"}} of every review."""
        return {int(review["change"]): review for review in self.state()["reviews"]}

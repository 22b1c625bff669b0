"""A fake Helix Swarm on loopback: reviews and comments in memory, the v9 (form) and v11 (JSON)
request and answer shapes p4review.adapters.swarm uses (docs/swarm.md), and injected faults.

Endpoints (`/api/v9/...` and `/api/v11/...`):

* `GET reviews?change[]=N`: the review holding change N (v9 bare, v11 in `{"error", "messages", "data"}`).
* `POST reviews` (v9 form / v11 JSON `change=N`): a new review of N; 400 when N is already in one.
* v9 `GET comments?topic=reviews/ID&after=&max=&fields=`; v11 `GET comments/reviews/ID?after=&max=&fields=`:
  ascending ids, `after` excludes up to and including that id, `lastSeen` is the page's last id.
  v9 answers `comments` as an object keyed by id (an empty list when there are none), as Swarm does.
* v9 `POST comments` (form: topic, body, taskState, delayNotification, context[file], context[rightLine],
  context[content][], context[version]); v11 `POST comments/reviews/ID` (JSON body, taskState, context,
  `notify: "delayed"`, or `?notify=delayed`). A comment that is not delayed notifies at once.
* v9 `POST comments/notify` (form topic); v11 `POST comments/reviews/ID/notify` (off with
  `v11_notify_route=False`): one notification for the caller's delayed comments on the review, or
  none when nothing is waiting. `notifications_for_review` counts notifications sent.

Authentication is HTTP basic `user:ticket`. A wrong or missing one is answered, as Swarm does,
with HTTP 200 and `{"error": "Unauthorized"}` (`unauthorized_status=401` for a plain 401).

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
"""

from __future__ import annotations

import base64
import binascii
import copy
import json
import random
import threading
import time
import urllib.parse
import urllib.request
from collections import Counter
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

from p4review.local.background import BackgroundServer

__all__ = ["FakeSwarmControl", "FakeSwarmServer", "FaultKind"]

FaultKind = Literal["error", "hang", "lost"]
FIRST_REVIEW_ID = 90001
_MAX_BODY_BYTES = 4 * 1024 * 1024
CONTROL_PREFIX = "/_fake"


@dataclass
class _Fault:
    kind: FaultKind
    status: int = 500
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
        unauthorized_status: int = 200,
        v11_notify_route: bool = True,
    ) -> None:
        super().__init__()
        self.user = user
        self.ticket = ticket
        self.host = host
        self.port = port
        self.hang_seconds = hang_seconds
        self.retry_after = retry_after
        self.unauthorized_status = unauthorized_status
        self.v11_notify_route = v11_notify_route
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
        self, count: int = 1, kind: FaultKind = "error", *, status: int = 500, retry_after: float | None = None
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
                        fault = _Fault(kind, 500, self.retry_after)
                        break
                    draw -= rate
            if fault is not None:
                self._faults_injected[fault.kind] += 1
            return fault

    # --- seeding and inspection --------------------------------------------------------------------
    def add_review(self, change: int, *, author: str = "dev") -> int:
        """A review of `change`, as if someone had started it in Swarm; its id."""
        with self._lock:
            return self._create_review(change, author)

    def add_comment(self, review_id: int, body: str, *, user: str = "reviewer") -> int:
        """Someone else's comment on the review; its id."""
        with self._lock:
            return self._store_comment(review_id, user, body, "comment", {}, delayed=False)

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
            raise _Answer(400, {"error": f"Change {change} is already in review {self._review_of_change[change]}"})
        review_id = self._next_review
        self._next_review += 1
        now = int(time.time())
        self._reviews[review_id] = {
            "id": review_id,
            "author": author,
            "changes": [change],
            "commits": [],
            "description": f"Review of change {change}",
            "state": "needsReview",
            "versions": [{"change": change, "pending": True, "time": now, "user": author}],
            "created": now,
            "updated": now,
        }
        self._review_of_change[change] = review_id
        return review_id

    def _store_comment(
        self, review_id: int, user: str, body: str, task_state: str, context: dict[str, Any], *, delayed: bool
    ) -> int:
        if review_id not in self._reviews:
            raise _Answer(404, {"error": "Cannot add comment: the topic does not exist"})
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
            raise _Answer(404, {"error": "Topic not found"})
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


def _int(value: Any, name: str) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise _Answer(400, {"error": f"Invalid {name}", "details": {name: "must be an integer"}}) from None
    return number


def _truthy(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.lower() in ("true", "1", "yes"))


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
            self._send(413, {"error": "Request too large"})
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
        if not self._authorized():
            self._send(self.swarm.unauthorized_status, {"error": "Unauthorized"})
            return
        parts = path.split("/")  # "", "api", "v9", ...
        api = parts[2] if len(parts) > 2 and parts[1] == "api" else ""
        try:
            if api not in ("v9", "v11"):
                raise _Answer(404, {"error": "Not Found"})
            status, payload = self._route(method, api, parts[3:], query, raw)
        except _Answer as answer:
            status, payload = answer.status, answer.payload
            if api == "v11":
                text = payload.get("error", "") if isinstance(payload, dict) else ""
                payload = {"error": status, "messages": [{"code": status, "text": text}], "data": None}
        if fault is not None and fault.kind == "lost":
            self._drop()  # carried out; the answer never leaves
            return
        self._send(status, payload)

    def _control(self, method: str, path: str, raw: bytes) -> None:
        """The `/_fake/` routes: inspection and fault settings for a fake in another process."""
        if method == "GET" and path == f"{CONTROL_PREFIX}/state":
            self._send(200, self.swarm.state())
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
                self._send(400, {"error": "rates must be numbers and the seed an integer"})
                return
            if any(not 0.0 <= rate <= 1.0 for rate in rates.values()):
                self._send(400, {"error": "rates must be within [0, 1]"})
                return
            self.swarm.set_faults(**rates, seed=seed)
            with self.swarm._lock:
                rates_now = dict(self.swarm._rates)
            self._send(200, {"faults": rates_now})
            return
        self._send(404, {"error": "Not Found"})

    def _form(self, raw: bytes) -> list[tuple[str, str]]:
        try:
            return urllib.parse.parse_qsl(raw.decode("utf-8"), keep_blank_values=True)
        except UnicodeDecodeError:
            raise _Answer(400, {"error": "Body is not UTF-8"}) from None

    def _json(self, raw: bytes) -> dict[str, Any]:
        try:
            decoded = json.loads(raw.decode("utf-8")) if raw else {}
        except (UnicodeDecodeError, ValueError):
            raise _Answer(400, {"error": "Body is not JSON"}) from None
        if not isinstance(decoded, dict):
            raise _Answer(400, {"error": "Body is not a JSON object"})
        return decoded

    # --- routes ----------------------------------------------------------------------------------
    def _route(
        self, method: str, api: str, rest: list[str], query: dict[str, list[str]], raw: bytes
    ) -> tuple[int, Any]:
        swarm = self.swarm
        v11 = api == "v11"

        def wrap(data: Any) -> Any:
            return {"error": None, "messages": [], "data": data} if v11 else data

        if rest == ["reviews"] and method == "GET":
            changes = [_int(c, "change") for c in query.get("change[]", []) + query.get("change", [])]
            with swarm._lock:
                ids = sorted({swarm._review_of_change[c] for c in changes if c in swarm._review_of_change})
                reviews = [copy.deepcopy(swarm._reviews[i]) for i in ids]
            return 200, wrap({"lastSeen": ids[-1] if ids else None, "reviews": reviews, "totalCount": len(reviews)})
        if rest == ["reviews"] and method == "POST":
            change = self._json(raw).get("change") if v11 else dict(self._form(raw)).get("change")
            with swarm._lock:
                review_id = swarm._create_review(_int(change, "change"), self._user())
                review = copy.deepcopy(swarm._reviews[review_id])
            return 200, wrap({"review": review})
        if not v11 and rest == ["comments"] and method == "GET":
            topic = (query.get("topic") or [""])[0]
            return 200, self._list_comments(topic, query, v11=False)
        if v11 and len(rest) == 3 and rest[:2] == ["comments", "reviews"] and method == "GET":
            return 200, wrap(self._list_comments(f"reviews/{rest[2]}", query, v11=True))
        if not v11 and rest == ["comments"] and method == "POST":
            form = self._form(raw)
            fields = dict(form)
            context: dict[str, Any] = {}
            if "context[file]" in fields:
                context["file"] = fields["context[file]"]
            if "context[rightLine]" in fields:
                context["rightLine"] = _int(fields["context[rightLine]"], "context[rightLine]")
            content = [value for key, value in form if key == "context[content][]"]
            if content:
                context["content"] = content
            if "context[version]" in fields:
                context["version"] = _int(fields["context[version]"], "context[version]")
            comment = self._add_comment(
                fields.get("topic", ""),
                fields.get("body", ""),
                fields.get("taskState", "comment"),
                context,
                delayed=_truthy(fields.get("delayNotification")),
            )
            return 200, {"comment": comment}
        if v11 and len(rest) == 3 and rest[:2] == ["comments", "reviews"] and method == "POST":
            payload = self._json(raw)
            context = payload.get("context") or {}
            if not isinstance(context, dict):
                raise _Answer(400, {"error": "Invalid context"})
            delayed = (
                payload.get("notify") == "delayed"
                or (query.get("notify") or [""])[0] == "delayed"
                or _truthy(payload.get("delayNotification"))
            )
            body = payload.get("body")
            task_state = payload.get("taskState", "comment")
            comment = self._add_comment(
                f"reviews/{rest[2]}",
                body if isinstance(body, str) else "",
                task_state if isinstance(task_state, str) else "",
                context,
                delayed=delayed,
            )
            return 200, wrap({"comments": [comment]})
        if not v11 and rest == ["comments", "notify"] and method == "POST":
            sent = self._notify(dict(self._form(raw)).get("topic", ""))
            message = f"{sent} notification(s) sent" if sent else "No notifications to send"
            return 200, {"isValid": True, "message": message, "code": 200}
        if (
            v11
            and swarm.v11_notify_route
            and len(rest) == 4
            and rest[:2] == ["comments", "reviews"]
            and rest[3] == "notify"
            and method == "POST"
        ):
            sent = self._notify(f"reviews/{rest[2]}")
            return 200, wrap({"topic": f"reviews/{rest[2]}", "notified": sent})
        raise _Answer(404, {"error": "Not Found"})

    def _review_id(self, topic: str) -> int:
        subject, _, ident = topic.partition("/")
        if subject != "reviews" or not ident.isdigit():
            raise _Answer(400, {"error": "Invalid topic", "details": {"topic": "expected reviews/<id>"}})
        return int(ident)

    def _list_comments(self, topic: str, query: dict[str, list[str]], *, v11: bool) -> dict[str, Any]:
        review_id = self._review_id(topic)
        after = _int(query["after"][0], "after") if query.get("after") else 0
        limit = _int(query["max"][0], "max") if query.get("max") else 100
        fields = [f for f in (query.get("fields") or [""])[0].split(",") if f]
        with self.swarm._lock:
            matching = [
                c for i, c in sorted(self.swarm._comments.items()) if c["topic"] == f"reviews/{review_id}" and i > after
            ]
            page = [_public(c, fields) for c in matching[: max(0, limit)]]
        last_seen = page[-1]["id"] if page and "id" in page[-1] else None
        if v11:
            return {"comments": page, "totalCount": len(page), "lastSeen": last_seen}
        # Swarm (PHP) answers an empty set as a list and a non-empty one as an object keyed by id.
        comments: Any = {str(c.get("id")): c for c in page} if page else []
        return {"topic": topic, "comments": comments, "lastSeen": last_seen}

    def _add_comment(
        self, topic: str, body: str, task_state: str, context: dict[str, Any], *, delayed: bool
    ) -> dict[str, Any]:
        review_id = self._review_id(topic)
        if not body:
            raise _Answer(400, {"error": "Body is required", "details": {"body": "Value is required"}})
        if task_state not in ("comment", "open"):
            raise _Answer(400, {"error": "Invalid task state", "details": {"taskState": task_state}})
        with self.swarm._lock:
            comment_id = self.swarm._store_comment(review_id, self._user(), body, task_state, context, delayed=delayed)
            return _public(self.swarm._comments[comment_id], [])

    def _notify(self, topic: str) -> int:
        review_id = self._review_id(topic)
        with self.swarm._lock:
            return self.swarm._notify(review_id, self._user())


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

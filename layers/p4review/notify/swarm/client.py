"""A Helix Swarm REST client (standard library only): find or create the review of a change,
list its comments, post comments with delayed notification and send the one notification.

Two API shapes (docs/swarm.md): `v9`, form-encoded requests and bare JSON answers, and `v11`,
JSON requests and answers wrapped in `{"error", "messages", "data"}`. Authentication is HTTP
basic with the service user and its long-lived ticket.

Errors (p4review.errors): 401/403 and Swarm's "HTTP 200 with `{"error": "Unauthorized"}`" are
AuthError (AUTH_DENIED), never success; 429, 5xx, 408, connection failures and timeouts are
RetryableError (RATE_LIMITED / UPSTREAM_ERROR / NETWORK_ERROR / NETWORK_TIMEOUT, Retry-After
honoured); 400/422 ValidationError, 404 NotFoundError, other 4xx NonRetryableError. Messages hold
the HTTP status and at most a short scrubbed excerpt of Swarm's error text: never the ticket, never
a body. Only http(s) base URLs; a redirect is never followed to another origin.

Posting is exactly-once only together with the markers of p4review.notify.swarm.comments and the
outbox rows of p4review.notify.swarm.channel, which looks a comment's marker up
(`find_comment_by_marker`) before posting it again after an attempt whose outcome is unknown.

Above 500 lines on purpose: every Swarm call p4review makes, each beside the v9 and v11 shapes it
sends and reads, so a change to one call's shape is made where its other version is."""

from __future__ import annotations

import base64
import json
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from http.client import HTTPException
from typing import Any, Literal

from p4review.error_text import safe_excerpt
from p4review.errors import (
    AuthError,
    ConfigError,
    ErrorClass,
    NonRetryableError,
    NotFoundError,
    P4ReviewError,
    RetryableError,
    ValidationError,
    clamp_retry_after,
)
from p4review.models.swarm import SwarmCommentContext
from p4review.notify.swarm.comments import find_marker

ApiVersion = Literal["v9", "v11"]
API_VERSIONS: tuple[ApiVersion, ...] = ("v9", "v11")
DEFAULT_TIMEOUT_SECONDS = 10.0
DEFAULT_PAGE_SIZE = 100
MAX_PAGES = 1000  # 100,000 comments at the default page size: a bound, never reached in practice
# v11 finds a review by a prefix match of the change number (N, N0..N9, ...): a bound on the pages walked.
MAX_REVIEW_PAGES = 50
MAX_RESPONSE_BYTES = 8 * 1024 * 1024
_AUTH_WORDS = re.compile(r"unauthori[sz]ed|not logged in|login required|authenticat|forbidden|permission denied", re.I)


@dataclass(frozen=True)
class HttpRequest:
    method: str
    url: str
    headers: Mapping[str, str]
    body: bytes | None
    timeout: float


@dataclass(frozen=True)
class HttpResponse:
    status: int
    headers: Mapping[str, str]  # lower-case names
    body: bytes


# A transport sends one request and returns the answer whatever its status; it raises OSError
# (TimeoutError for a timeout), urllib.error.URLError or http.client.HTTPException when no
# answer arrived. Tests and the local stack can pass their own.
Transport = Callable[[HttpRequest], HttpResponse]


class _SameOriginRedirects(urllib.request.HTTPRedirectHandler):
    """Follow a redirect only for a GET and only to the same scheme, host and port: basic auth
    must never travel to another host, and a redirected POST would silently become a GET."""

    def redirect_request(
        self, req: urllib.request.Request, fp: Any, code: int, msg: str, headers: Any, newurl: str
    ) -> urllib.request.Request | None:
        old, new = urllib.parse.urlsplit(req.full_url), urllib.parse.urlsplit(newurl)
        same_origin = (old.scheme, old.hostname, old.port) == (new.scheme, new.hostname, new.port)
        if req.get_method() != "GET" or not same_origin:
            return None  # urllib then raises HTTPError(3xx): the client maps it to CONFIG_ERROR
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def _read_capped(stream: Any) -> bytes:
    data: bytes = stream.read(MAX_RESPONSE_BYTES + 1) if stream is not None else b""
    if len(data) > MAX_RESPONSE_BYTES:
        raise ValidationError(f"Swarm answered with more than {MAX_RESPONSE_BYTES} bytes")
    return data


@dataclass
class UrllibTransport:
    """The default transport: urllib, system proxies honoured, same-origin GET redirects only."""

    _opener: urllib.request.OpenerDirector = field(
        default_factory=lambda: urllib.request.build_opener(_SameOriginRedirects())
    )

    def __call__(self, request: HttpRequest) -> HttpResponse:
        req = urllib.request.Request(  # noqa: S310 - the base URL's scheme is checked to be http(s)
            request.url, data=request.body, method=request.method, headers=dict(request.headers)
        )
        try:
            with self._opener.open(req, timeout=request.timeout) as response:
                headers = {key.lower(): value for key, value in response.headers.items()}
                return HttpResponse(response.status, headers, _read_capped(response))
        except urllib.error.HTTPError as error:
            with error:
                headers = {key.lower(): value for key, value in (error.headers or {}).items()}
                return HttpResponse(error.code, headers, _read_capped(error))


def _base_url(url: str) -> str:
    parts = urllib.parse.urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError("the Swarm URL must be an http(s) URL with a host")
    if parts.username is not None or parts.password is not None:
        raise ConfigError("the Swarm URL must not carry credentials; give the user and ticket separately")
    if parts.query or parts.fragment:
        raise ConfigError("the Swarm URL must not have a query or a fragment")
    try:
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError:
        raise ConfigError("the Swarm URL has an invalid port") from None
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/"), "", ""))


def _named_id(data: Mapping[str, Any], kind: str, what: str) -> int:
    """The id of the one `kind` ("review", "comment") Swarm's answer names: `{kind: {...}}` (v9)
    or `{kind + "s": [{...}]}` (v11)."""
    item = data.get(kind, data.get(f"{kind}s"))
    if isinstance(item, list) and len(item) == 1:
        item = item[0]
    item_id = _as_int(item.get("id")) if isinstance(item, dict) else None
    if item_id is None:
        raise ValidationError(f"Swarm {what}: the answer names no {kind} id")
    return item_id


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


class SwarmClient:
    """One Swarm server as one service user. `api` picks the request and answer shapes; `timeout_seconds`
    bounds each HTTP request; `transport` (tests) replaces urllib."""

    def __init__(
        self,
        base_url: str,
        user: str,
        ticket: str,
        api: ApiVersion = "v9",
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        transport: Transport | None = None,
        *,
        page_size: int = DEFAULT_PAGE_SIZE,
    ):
        if api not in API_VERSIONS:
            raise ConfigError(f"unknown Swarm API version {api!r} (expected one of {', '.join(API_VERSIONS)})")
        if not user or not ticket:
            raise ConfigError("the Swarm user and ticket must both be set")
        if ":" in user or any(ch in user + ticket for ch in "\r\n\x00"):
            raise ConfigError("the Swarm user or ticket holds a character basic auth cannot carry")
        if not timeout_seconds > 0:
            raise ConfigError("the Swarm timeout must be positive")
        if not 1 <= page_size <= 1000:
            raise ConfigError("the Swarm page size must be between 1 and 1000")
        self.base_url = _base_url(base_url)
        self.api: ApiVersion = api
        self.timeout_seconds = float(timeout_seconds)
        self.page_size = page_size
        # Scrubbed from Swarm's error words (a real ticket is 32 characters; replacing a very short
        # one would garble every message that happens to contain it).
        self._scrubbed = (ticket,) if len(ticket) >= 6 else ()
        token = base64.b64encode(f"{user}:{ticket}".encode()).decode("ascii")
        self._authorization = f"Basic {token}"
        self._transport: Transport = transport or UrllibTransport()

    def __repr__(self) -> str:  # never the ticket
        return f"SwarmClient({self.base_url!r}, api={self.api!r})"

    # --- reviews --------------------------------------------------------------------------------
    def find_review(self, change: int) -> int | None:
        """The id of the review that names `change` among its `changes` or `commits`, or None. Only
        such a review is ever returned: a listed review that does not name the change is skipped.

        v9: `GET /api/v9/reviews?change[]=N` (Swarm filters by change: `module/Api/src/Controller/
        ReviewsController.php` getList). v11: Swarm's v11 list has no `change` filter (2022.1
        `module/Reviews/src/Filter/GetReviews.php`) and would list every review, so the client
        asks `keywords=N&keywordsFields[]=changes` (a prefix match on the indexed `changes`, as
        Perforce's p4mcp-server does for 2025.2) and walks the pages for the exact change. A page
        can be empty and still have more after it: Swarm sets `lastSeen` before it removes the
        reviews the user may not see (`module/Reviews/src/Model/ReviewDAO.php` fetchAll), so the
        walk goes on while `lastSeen` moves and stops when it is null, 0 or one already walked."""
        change = _change_number(change)
        if self.api == "v9":
            answer = self._call("GET", "reviews", query=[("change[]", str(change))], what="find review")
            return _review_naming(self._reviews_of(answer), change)
        after: int | None = None
        walked: set[int] = set()
        for _ in range(MAX_REVIEW_PAGES):
            query = [("keywords", str(change)), ("keywordsFields[]", "changes"), ("max", str(self.page_size))]
            if after is not None:
                query.append(("after", str(after)))
            answer = self._call("GET", "reviews", query=query, what="find review")
            reviews = self._reviews_of(answer)
            found = _review_naming(reviews, change)
            if found is not None:
                return found
            last_seen = _as_int(self._data(answer).get("lastSeen"))
            if not last_seen or last_seen in walked:
                return None
            walked.add(last_seen)
            after = last_seen
        raise ValidationError(f"Swarm find review: more than {MAX_REVIEW_PAGES} pages of reviews match the change")

    def _reviews_of(self, answer: Any) -> list[Any]:
        reviews = self._data(answer).get("reviews")
        if not isinstance(reviews, list):
            raise ValidationError("Swarm find review: the answer has no reviews list")
        return reviews

    def create_review(self, change: int) -> int:
        """Start a review of `change`; its id. v9: `POST /api/v9/reviews`, form `change=N` (Swarm
        2022.1 `module/Api/src/Controller/ReviewsController.php` create). v11: `POST /api/v11/reviews`
        `{"change": N}` (Swarm 2025.2, as p4mcp-server calls it); Swarm 2022.1 has no such route
        (`module/Reviews/config/module.config.php`: v10/v11 `reviews` answers GET only) and answers
        404, nothing created, and then the v9 call is made."""
        change = _change_number(change)
        if self.api == "v11":
            try:
                answer = self._call("POST", "reviews", json_body={"change": change}, what="create review")
                return _named_id(self._data(answer), "review", "create review")
            except NotFoundError:
                pass  # Swarm 2022.1: no v11 review creation
        answer = self._call("POST", "reviews", fields=[("change", change)], what="create review", api="v9")
        return _named_id(self._data(answer, "v9"), "review", "create review")

    # --- comments -------------------------------------------------------------------------------
    def list_comments(self, review_id: int) -> Iterator[tuple[int, str]]:
        """(id, body) of every comment on the review, all pages (`after` = the previous `lastSeen`)."""
        after: int | None = None
        for _ in range(MAX_PAGES):
            query = [("max", str(self.page_size)), ("fields", "id,body")]
            if after is not None:
                query.append(("after", str(after)))
            if self.api == "v9":
                query.insert(0, ("topic", f"reviews/{int(review_id)}"))
                path = "comments"
            else:
                path = f"comments/reviews/{int(review_id)}"
            answer = self._call("GET", path, query=query, what="list comments")
            data = self._data(answer)
            comments = data.get("comments")
            if isinstance(comments, dict):
                comments = list(comments.values())
            if not isinstance(comments, list):
                raise ValidationError("Swarm list comments: the answer has no comments list")
            ids = []
            for comment in comments:
                comment_id = _as_int(comment.get("id")) if isinstance(comment, dict) else None
                if comment_id is None:
                    continue
                ids.append(comment_id)
                body = comment.get("body")
                yield comment_id, body if isinstance(body, str) else ""
            last_seen = _as_int(data.get("lastSeen", answer.get("lastSeen") if isinstance(answer, dict) else None))
            if last_seen is None and ids:
                last_seen = max(ids)
            if not comments or last_seen is None or (after is not None and last_seen <= after):
                return
            after = last_seen
        raise ValidationError(f"Swarm list comments: more than {MAX_PAGES} pages")

    def post_comment(
        self, review_id: int, body: str, context: SwarmCommentContext | None = None, task_open: bool = False
    ) -> int:
        """Post one comment, its notification delayed (sent by `send_notifications`); its id.
        `task_open` opens a task (`taskState=open`).

        v9: `POST /api/v9/comments`, a form with `delayNotification=true` and `context[...]`
        (2022.1 `module/Api/src/Controller/CommentsController.php` create). v11: `POST
        /api/v11/reviews/ID/comments?notify=delayed`, a JSON body (2022.1 `module/Comments/config/
        module.config.php` and `src/Controller/CommentApi.php` create, which reads `notify` from the
        query string only; the path p4mcp-server uses for 2025.2). A line's context carries
        `content`, `leftLine` and `rightLine` together, as v11 requires
        (`module/Comments/src/Validator/Context.php`): `leftLine` is null for an added line."""
        if not body:
            raise ValidationError("a Swarm comment needs a body")
        task_state = "open" if task_open else "comment"
        if self.api == "v9":
            fields: list[tuple[str, Any]] = [
                ("topic", f"reviews/{int(review_id)}"),
                ("body", body),
                ("taskState", task_state),
                ("delayNotification", "true"),
            ]
            if context is not None:
                fields.append(("context[file]", context.file))
                if context.left_line is not None:
                    fields.append(("context[leftLine]", context.left_line))
                if context.right_line is not None:
                    fields.append(("context[rightLine]", context.right_line))
                fields += [("context[content][]", line) for line in context.content]
                if context.version is not None:
                    fields.append(("context[version]", context.version))
            answer = self._call("POST", "comments", fields=fields, what="post comment")
        else:
            payload: dict[str, Any] = {"body": body, "taskState": task_state}
            if context is not None:
                anchor: dict[str, Any] = {"file": context.file}
                if context.right_line is not None:
                    anchor["leftLine"] = context.left_line
                    anchor["rightLine"] = context.right_line
                    anchor["content"] = list(context.content)
                if context.version is not None:
                    anchor["version"] = context.version
                payload["context"] = anchor
            answer = self._call(
                "POST",
                f"reviews/{int(review_id)}/comments",
                query=[("notify", "delayed")],
                json_body=payload,
                what="post comment",
            )
        return _named_id(self._data(answer), "comment", "post comment")

    def send_notifications(self, review_id: int) -> None:
        """Send the one notification for this user's delayed comments on the review. Sending again
        sends nothing new (nothing is left delayed), so a retry after a lost answer is harmless.
        v9: `POST /api/v9/comments/notify`, form `topic=reviews/ID` (2022.1 `module/Api/src/
        Controller/CommentsController.php` sendAllMyDelayedComments). v11: `POST
        /api/v11/reviews/ID/notify` (2022.1 `module/Comments/config/module.config.php` topic-notify,
        `CommentApi::sendNotificationAction`); no fallback: a 404 is an error."""
        if self.api == "v11":
            self._call("POST", f"reviews/{int(review_id)}/notify", json_body={}, what="send notifications")
            return
        self._call(
            "POST", "comments/notify", fields=[("topic", f"reviews/{int(review_id)}")], what="send notifications"
        )

    def find_comment_by_marker(self, review_id: int, marker: str) -> int | None:
        """The id of the review's comment whose body ends with `marker`, or None."""
        for comment_id, body in self.list_comments(review_id):
            if find_marker(body) == marker:
                return comment_id
        return None

    # --- HTTP -----------------------------------------------------------------------------------
    def _url(self, path: str, query: Sequence[tuple[str, str]] = (), api: ApiVersion | None = None) -> str:
        url = f"{self.base_url}/api/{api or self.api}/{path}"
        return f"{url}?{urllib.parse.urlencode(list(query))}" if query else url

    def _call(
        self,
        method: str,
        path: str,
        *,
        what: str,
        query: Sequence[tuple[str, str]] = (),
        fields: Sequence[tuple[str, Any]] | None = None,
        json_body: Mapping[str, Any] | None = None,
        api: ApiVersion | None = None,
    ) -> Any:
        """`fields` are a v9 form; `json_body` a v11 JSON object."""
        api = api or self.api
        headers = {"Accept": "application/json", "User-Agent": "p4review", "Authorization": self._authorization}
        body: bytes | None = None
        if fields is not None:
            body = urllib.parse.urlencode([(key, str(value)) for key, value in fields]).encode("utf-8")
            headers["Content-Type"] = "application/x-www-form-urlencoded; charset=utf-8"
        elif json_body is not None:
            body = json.dumps(dict(json_body), ensure_ascii=False).encode("utf-8")
            headers["Content-Type"] = "application/json"
        request = HttpRequest(method, self._url(path, query, api), headers, body, self.timeout_seconds)
        try:
            response = self._transport(request)
        except P4ReviewError:
            raise
        except (TimeoutError, urllib.error.URLError, OSError, HTTPException) as error:
            reason = error.reason if isinstance(error, urllib.error.URLError) else error
            if isinstance(reason, TimeoutError):
                raise RetryableError(
                    f"Swarm {what}: no answer within {self.timeout_seconds:g}s",
                    error_class=ErrorClass.NETWORK_TIMEOUT,
                ) from None
            raise RetryableError(
                f"Swarm {what}: connection failed ({type(reason).__name__})", error_class=ErrorClass.NETWORK_ERROR
            ) from None
        return self._answer(response, what, api)

    def _answer(self, response: HttpResponse, what: str, api: ApiVersion) -> Any:
        status = response.status
        decoded = _json(response.body)
        label = f"Swarm {what}: HTTP {status}"
        if status in (HTTPStatus.UNAUTHORIZED, HTTPStatus.FORBIDDEN):
            raise AuthError(f"{label}: the Swarm user or ticket was refused")
        if status >= HTTPStatus.MULTIPLE_CHOICES:
            excerpt = safe_excerpt(_error_text(decoded), secrets=self._scrubbed)
            text = label + (f": {excerpt}" if excerpt else "")
            retry_after = clamp_retry_after(response.headers.get("retry-after"))
            if status == HTTPStatus.TOO_MANY_REQUESTS:
                raise RetryableError(text, error_class=ErrorClass.RATE_LIMITED, retry_after=retry_after)
            if status >= HTTPStatus.INTERNAL_SERVER_ERROR:
                raise RetryableError(text, error_class=ErrorClass.UPSTREAM_ERROR, retry_after=retry_after)
            if status == HTTPStatus.REQUEST_TIMEOUT:
                raise RetryableError(text, error_class=ErrorClass.NETWORK_TIMEOUT)
            if status < HTTPStatus.BAD_REQUEST:
                raise ConfigError(f"{label}: Swarm redirected; set the Swarm URL to where it redirects")
            if status == HTTPStatus.NOT_FOUND:
                raise NotFoundError(text)
            if status in (HTTPStatus.BAD_REQUEST, HTTPStatus.UNPROCESSABLE_ENTITY):
                raise ValidationError(text)
            raise NonRetryableError(text)
        if not isinstance(decoded, dict):
            # An HTML page with 200 is typically a login or SSO page in front of Swarm.
            raise ValidationError(f"{label}: the answer is not a JSON object")
        error = decoded.get("error")
        if error:  # Swarm answers some failures, unauthenticated calls among them, with 200
            text = _error_text(decoded)
            if _AUTH_WORDS.search(text) or error in (HTTPStatus.UNAUTHORIZED, HTTPStatus.FORBIDDEN, "401", "403"):
                raise AuthError(f"{label} with an authorization error: the Swarm user or ticket was refused")
            excerpt = safe_excerpt(text, secrets=self._scrubbed)
            raise ValidationError(f"{label} with an error" + (f": {excerpt}" if excerpt else ""))
        if api == "v11" and "data" not in decoded:
            raise ValidationError(f"{label}: the answer has no data")
        return decoded

    def _data(self, answer: Any, api: ApiVersion | None = None) -> dict[str, Any]:
        """The v11 answer's `data` (v9 answers are bare)."""
        data = answer.get("data") if (api or self.api) == "v11" else answer
        return data if isinstance(data, dict) else {}


def _names(values: Any, change: int) -> bool:
    return isinstance(values, list) and change in {_as_int(value) for value in values}


def _review_naming(reviews: Sequence[Any], change: int) -> int | None:
    """The id of the first review whose `changes` or `commits` hold `change` (Swarm's review JSON:
    `module/Reviews/src/Model/Review.php`; `versions` is hidden from the API), else None."""
    for review in reviews:
        if isinstance(review, dict) and (
            _names(review.get("changes"), change) or _names(review.get("commits"), change)
        ):
            review_id = _as_int(review.get("id"))
            if review_id is not None:
                return review_id
    return None


def _change_number(change: int) -> int:
    if isinstance(change, bool) or not isinstance(change, int) or change <= 0:
        raise ValidationError("a changelist number must be a positive integer")
    return change


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw.decode("utf-8")) if raw else None
    except (UnicodeDecodeError, ValueError):
        return None


def _error_text(decoded: Any) -> str:
    """Swarm's own error words: v9 `{"error": "..."}`, v11 `{"error": ..., "messages": [{"text": ...}]}`."""
    if not isinstance(decoded, dict):
        return ""
    parts = []
    error = decoded.get("error")
    if isinstance(error, (str, int)) and not isinstance(error, bool):
        parts.append(str(error))
    parts += _message_texts(decoded.get("messages"))[:3]
    return " ".join(parts)


def _message_texts(messages: Any) -> list[str]:
    """v11 `messages`: a list of `{"code", "text"}`, or a validation failure's `{field: {rule: text}}`
    (Laminas input filter messages, e.g. `{"context": {"inlineCommentMissingContext": "..."}}`)."""
    if isinstance(messages, str):
        return [messages]
    if isinstance(messages, list):
        return [
            text
            for message in messages
            for text in _message_texts(message.get("text") if isinstance(message, dict) else message)
        ]
    if isinstance(messages, dict):
        return [text for value in messages.values() for text in _message_texts(value)]
    return []

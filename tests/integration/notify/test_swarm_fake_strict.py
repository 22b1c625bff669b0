"""The fake Swarm is strict, as Swarm 2022.1's PHP source behaves (a public copy: `dfrees/swarm`),
and the client succeeds against it on v9 and v11, for 2022.1 and for 2025.2 (what Perforce's
p4mcp-server calls). Each test names the Swarm source file the rule comes from."""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from p4review.errors import NotFoundError, ValidationError
from p4review.models.finding_labels import Severity
from p4review.models.job import SwarmTestRef
from p4review.models.review_result import Finding
from p4review.notify.swarm.callback import post_verdict
from p4review.notify.swarm.client import HttpRequest, HttpResponse, SwarmClient
from p4review.notify.swarm.comments import anchor_context
from p4review.notify.swarm.verdict import callback_request, verdict
from p4review_dev.swarm_server import FakeSwarmServer

USER = "p4review-svc"
TICKET = "0123456789ABCDEF0123456789ABCDEF"
DIFF = "--- a\n+++ b\n@@ -1,3 +1,4 @@\n import os\n-import sys\n+import subprocess\n+run = 1\n keep = 2\n"


@pytest.fixture
def swarm() -> Iterator[FakeSwarmServer]:
    with FakeSwarmServer(user=USER, ticket=TICKET) as server:
        yield server


def _call(
    swarm: FakeSwarmServer,
    method: str,
    path: str,
    *,
    query: list[tuple[str, str]] | None = None,
    form: list[tuple[str, str]] | None = None,
    body: Any = None,
    auth: bool = True,
) -> tuple[int, Any]:
    """One raw request: (status, decoded JSON answer)."""
    url = f"{swarm.url}{path}" + (f"?{urllib.parse.urlencode(query)}" if query else "")
    headers = {"Accept": "application/json"}
    if auth:
        headers["Authorization"] = "Basic " + base64.b64encode(f"{USER}:{TICKET}".encode()).decode()
    data = None
    if form is not None:
        data = urllib.parse.urlencode(form).encode()
        headers["Content-Type"] = "application/x-www-form-urlencoded"
    elif body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as error:
        with error:
            return error.code, json.loads(error.read() or b"null")


def _client(swarm: FakeSwarmServer, api: str, **kwargs: Any) -> SwarmClient:
    return SwarmClient(swarm.url, USER, TICKET, api=api, timeout_seconds=5, **kwargs)  # type: ignore[arg-type]


def _finding(line: int) -> Finding:
    return Finding(
        id="F1",
        severity="high",
        category="security",
        title="t",
        file="//depot/main/x.py",
        line=line,
        message="m",
    )


# --- 1. finding the review of a change ------------------------------------------------------------------
@pytest.mark.spec("SW-6")
def test_v11_has_no_change_filter_and_lists_every_review(swarm):
    """module/Reviews/src/Filter/GetReviews.php has no `change` input: Swarm lists all reviews."""
    first, second = swarm.add_review(100), swarm.add_review(200)
    status, answer = _call(swarm, "GET", "/api/v11/reviews", query=[("change[]", "200")])
    assert status == 200 and answer["error"] is None
    assert [review["id"] for review in answer["data"]["reviews"]] == [second, first]  # newest first
    status, answer = _call(swarm, "GET", "/api/v9/reviews", query=[("change[]", "200")])
    assert [review["id"] for review in answer["reviews"]] == [second]  # v9 does filter (ReviewsController::getList)


@pytest.mark.spec("SW-6")
def test_v11_keywords_are_a_prefix_match_and_the_client_takes_only_the_exact_change(swarm):
    """library/Record/Key/AbstractKey.php fetchAll searches `code=word*`: 12 also matches 123."""
    longer = swarm.add_review(123)
    status, answer = _call(
        swarm, "GET", "/api/v11/reviews", query=[("keywords", "12"), ("keywordsFields[]", "changes")]
    )
    assert status == 200 and [review["id"] for review in answer["data"]["reviews"]] == [longer]
    client = _client(swarm, "v11")
    assert client.find_review(12) is None  # never a review that does not name the change
    exact = swarm.add_review(12)
    assert client.find_review(12) == exact
    assert client.find_review(123) == longer


@pytest.mark.spec("SW-6")
def test_the_v11_lookup_walks_pages_to_the_exact_change(swarm):
    wanted = swarm.add_review(7)
    for change in range(70, 79):  # newer reviews whose changes also start with 7
        swarm.add_review(change)
    client = _client(swarm, "v11", page_size=2)
    assert client.find_review(7) == wanted
    finds = [path for method, path in swarm.requests() if (method, path) == ("GET", "/api/v11/reviews")]
    assert len(finds) == 5


@pytest.mark.spec("SW-6", "SW-11")
def test_the_v11_lookup_walks_past_a_page_swarm_emptied_of_reviews_the_user_may_not_see(swarm):
    """module/Reviews/src/Model/ReviewDAO.php fetchAll sets `lastSeen` from the reviews fetched, then
    removes those the user may not see: a page can be empty with more pages after it."""
    wanted = swarm.add_review(7)
    swarm.add_review(70, restricted=True)
    swarm.add_review(71, restricted=True)
    status, answer = _call(
        swarm, "GET", "/api/v11/reviews", query=[("keywords", "7"), ("keywordsFields[]", "changes"), ("max", "2")]
    )
    assert status == 200 and answer["data"]["reviews"] == [] and answer["data"]["lastSeen"] == wanted + 1
    assert answer["data"]["totalCount"] == 1
    assert _client(swarm, "v11", page_size=2).find_review(7) == wanted


@pytest.mark.spec("SW-6")
@pytest.mark.parametrize("last_seens", [[90, 90], [90, None], [90, 0], [90, 80, 90]])
def test_the_v11_lookup_stops_when_last_seen_does_not_move(last_seens):
    sent: list[HttpRequest] = []

    def transport(request: HttpRequest) -> HttpResponse:
        sent.append(request)
        page = {"reviews": [], "lastSeen": last_seens[min(len(sent), len(last_seens)) - 1]}
        return HttpResponse(200, {}, json.dumps({"error": None, "messages": [], "data": page}).encode())

    client = SwarmClient("https://swarm.example.test", USER, TICKET, api="v11", transport=transport)
    assert client.find_review(7) is None
    assert len(sent) == len(last_seens)


@pytest.mark.spec("SW-11")
def test_an_unknown_keywords_field_is_refused(swarm):
    """GetReviews.php: keywordsFields must name indexed review fields (Application/src/Filter/KeywordsFields.php)."""
    status, answer = _call(swarm, "GET", "/api/v11/reviews", query=[("keywords", "1"), ("keywordsFields[]", "nope")])
    assert status == 400 and answer["data"] is None
    assert "invalidKeywordsFields" in answer["messages"]["keywordsFields"]


@pytest.mark.spec("SW-6")
@pytest.mark.parametrize("api", ["v9", "v11"])
def test_the_client_never_returns_a_listed_review_that_does_not_name_the_change(api):
    unrelated = {"id": 5, "changes": [999], "commits": []}
    answer = {"reviews": [unrelated], "lastSeen": 5, "totalCount": 1}
    if api == "v11":
        answer = {"error": None, "messages": [], "data": answer}
    sent: list[HttpRequest] = []

    def transport(request: HttpRequest) -> HttpResponse:
        sent.append(request)
        page = answer if len(sent) == 1 else ({"error": None, "messages": [], "data": {"reviews": []}})
        return HttpResponse(200, {}, json.dumps(page).encode())

    client = SwarmClient("https://swarm.example.test", USER, TICKET, api=api, transport=transport)  # type: ignore[arg-type]
    assert client.find_review(48213) is None
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(sent[0].url).query)
    if api == "v9":
        assert query == {"change[]": ["48213"]}
    else:
        assert query["keywords"] == ["48213"] and query["keywordsFields[]"] == ["changes"]
        assert "change[]" not in query


@pytest.mark.spec("SW-6")
def test_a_committed_change_is_found_through_the_reviews_commits():
    review = {"id": 8, "changes": [100], "commits": [104]}
    answer = json.dumps({"reviews": [review], "lastSeen": 8}).encode()
    client = SwarmClient(
        "https://swarm.example.test", USER, TICKET, transport=lambda request: HttpResponse(200, {}, answer)
    )
    assert client.find_review(104) == 8


# --- 2. a line comment's context ----------------------------------------------------------------------
@pytest.mark.spec("SW-11")
@pytest.mark.parametrize(
    ("context", "rule"),
    [
        ({"file": "//depot/x.py", "rightLine": 3, "content": [" a"]}, "inlineCommentMissingContext"),
        ({"file": "//depot/x.py", "rightLine": 3}, "inlineCommentMissingContext"),
        ({"file": "//depot/x.py", "leftLine": None, "rightLine": 0, "content": []}, "lessThanZero"),
        ({"file": "//depot/x.py", "leftLine": None, "rightLine": [4, 2], "content": []}, "lessThanZero"),
        ({"file": "//depot/x.py", "version": "2"}, "badVersionNumber"),
    ],
)
def test_a_v11_context_swarm_refuses_is_refused(swarm, context, rule):
    """module/Comments/src/Validator/Context.php: content, leftLine and rightLine together, lines
    positive integers (or null, or a [start, end] range), version an integer."""
    review_id = swarm.add_review(1)
    status, answer = _call(
        swarm, "POST", f"/api/v11/reviews/{review_id}/comments", body={"body": "x", "context": context}
    )
    assert status == 400 and answer["error"] == 400 and answer["data"] is None
    assert rule in answer["messages"]["context"]
    assert swarm.comments_for_review(review_id) == []


@pytest.mark.spec("SW-1")
def test_the_client_sends_a_v11_line_context_swarm_accepts(swarm):
    review_id = swarm.add_review(1, versions=2)
    client = _client(swarm, "v11")
    client.post_comment(review_id, "on an added line", anchor_context(_finding(3), DIFF, swarm_version=1))
    client.post_comment(review_id, "on an unchanged line", anchor_context(_finding(4), DIFF))
    client.post_comment(review_id, "a line the diff does not show", anchor_context(_finding(40), DIFF))
    added, unchanged, unseen = (comment["context"] for comment in swarm.comments_for_review(review_id))
    assert added == {
        "file": "//depot/main/x.py",
        "leftLine": None,
        "rightLine": 3,
        "content": [" import os", "-import sys", "+import subprocess", "+run = 1"],
        "version": 1,
    }
    assert (unchanged["leftLine"], unchanged["rightLine"], unchanged["content"][-1]) == (3, 4, " keep = 2")
    assert (unseen["leftLine"], unseen["rightLine"], unseen["content"]) == (None, 40, [])


@pytest.mark.spec("SW-5")
def test_swarms_refusal_is_a_validation_error_with_swarms_words(swarm):
    """A v11 validation failure's `messages` is Laminas' `{field: {rule: text}}`
    (module/Api/src/Controller/AbstractRestfulController.php error)."""
    review_id = swarm.add_review(1)
    context = {"file": "//depot/x.py", "rightLine": 1, "content": []}  # no leftLine: what the client used to send
    status, answer = _call(
        swarm, "POST", f"/api/v11/reviews/{review_id}/comments", body={"body": "x", "context": context}
    )
    assert status == 400
    scripted = SwarmClient(
        "https://swarm.example.test",
        USER,
        TICKET,
        api="v11",
        transport=lambda request: HttpResponse(400, {}, json.dumps(answer).encode()),
    )
    with pytest.raises(ValidationError) as refused:
        scripted.post_comment(review_id, "x")
    assert "inline comment must have" in refused.value.message and not refused.value.retryable


@pytest.mark.spec("SW-11")
@pytest.mark.parametrize(
    ("form", "detail"),
    [
        ([("context[rightLine]", "3")], "File path is required"),
        ([("context[file]", "//depot/x.py"), ("context[version]", "5")], "Specified version was not found"),
    ],
)
def test_a_v9_context_swarm_refuses_is_refused(swarm, form, detail):
    """module/Api/src/Controller/CommentsController.php filterCommentContext."""
    review_id = swarm.add_review(1, versions=2)
    status, answer = _call(
        swarm, "POST", "/api/v9/comments", form=[("topic", f"reviews/{review_id}"), ("body", "x"), *form]
    )
    assert status == 400 and answer["error"] == "Provided context could not be filtered."
    assert detail in answer["details"]["context"]


@pytest.mark.spec("SW-11")
def test_a_v9_context_without_content_must_name_a_file_of_the_change(swarm):
    """CommentsController::filterCommentContext: without `content` Swarm looks the file up in that
    version's change: "File path not found in specified review/change." (given content, it does not)."""
    review_id = swarm.add_review(1, files=["//depot/main/x.py"])
    base = [("topic", f"reviews/{review_id}"), ("body", "x"), ("context[rightLine]", "3")]
    status, answer = _call(swarm, "POST", "/api/v9/comments", form=[*base, ("context[file]", "//depot/main/y.py")])
    assert status == 400 and answer["error"] == "Provided context could not be filtered."
    assert answer["details"]["context"] == "File path not found in specified review/change."
    assert swarm.comments_for_review(review_id) == []
    status, _ = _call(
        swarm,
        "POST",
        "/api/v9/comments",
        form=[*base, ("context[file]", "//depot/main/y.py"), ("context[content][]", "+y")],
    )
    assert status == 200
    assert _call(swarm, "POST", "/api/v9/comments", form=[*base, ("context[file]", "//depot/main/x.py")])[0] == 200
    assert len(swarm.comments_for_review(review_id)) == 2


@pytest.mark.spec("SW-11")
def test_a_v9_context_on_an_unknown_review_is_refused_as_unfiltered(swarm):
    """filterCommentContext: Review::fetch throws, and create() answers any exception with this 400."""
    form = [("topic", "reviews/424242"), ("body", "x"), ("context[file]", "//depot/x.py")]
    status, answer = _call(swarm, "POST", "/api/v9/comments", form=form)
    assert status == 400 and answer["error"] == "Provided context could not be filtered."


@pytest.mark.spec("SW-11")
def test_a_v9_comment_is_created_as_a_comment_or_an_open_task_only(swarm):
    """module/Comments/src/Controller/IndexController.php addAction:
    getCommentFilter($user, 'add', [Comment::TASK_COMMENT, Comment::TASK_OPEN])."""
    review_id = swarm.add_review(1)
    for state in ("comment", "open"):
        form = [("topic", f"reviews/{review_id}"), ("body", "x"), ("taskState", state)]
        assert _call(swarm, "POST", "/api/v9/comments", form=form)[0] == 200
    form = [("topic", f"reviews/{review_id}"), ("body", "x"), ("taskState", "addressed")]
    status, answer = _call(swarm, "POST", "/api/v9/comments", form=form)
    assert status == 400 and answer["isValid"] is False
    assert "Valid transitions are: comment, open" in answer["details"]["taskState"]
    assert [c["taskState"] for c in swarm.comments_for_review(review_id)] == ["comment", "open"]


@pytest.mark.spec("SW-11")
@pytest.mark.parametrize("path", ["/api/v11/reviews/{id}/comments", "/api/v11/comments/reviews/{id}"])
def test_a_v11_comment_on_a_version_the_review_lacks_is_409(swarm, path):
    """module/Comments/src/Model/CommentDAO.php validateReviewVersion: Review::getVersion throws
    InvalidArgumentException, which CommentApi::create answers with 409 in the v11 envelope."""
    review_id = swarm.add_review(1, versions=2)
    body = {"body": "x", "context": {"file": "//depot/x.py", "version": 3}}
    status, answer = _call(swarm, "POST", path.format(id=review_id), body=body)
    assert status == 409 and answer["error"] == 409 and answer["data"] is None
    assert answer["messages"] == [{"code": 409, "text": "Version [3] is not a valid version for this review"}]
    assert swarm.comments_for_review(review_id) == []
    body["context"]["version"] = 2
    assert _call(swarm, "POST", path.format(id=review_id), body=body)[0] == 200


@pytest.mark.spec("SW-1")
def test_the_v9_context_carries_the_left_line_and_the_prefixed_content(swarm):
    review_id = swarm.add_review(1, versions=2)
    _client(swarm, "v9").post_comment(review_id, "x", anchor_context(_finding(4), DIFF, swarm_version=2))
    (comment,) = swarm.comments_for_review(review_id)
    assert comment["context"] == {
        "file": "//depot/main/x.py",
        "leftLine": 3,
        "rightLine": 4,
        "content": [" import os", "-import sys", "+import subprocess", "+run = 1", " keep = 2"],
        "review": review_id,
        "version": 2,
    }


# --- 3. creating a review ------------------------------------------------------------------------------
@pytest.mark.spec("SW-11")
def test_swarm_2022_1_has_no_v11_review_creation(swarm):
    """module/Reviews/config/module.config.php: the v10/v11 `reviews` route answers GET only."""
    status, answer = _call(swarm, "POST", "/api/v11/reviews", body={"change": 5})
    assert status == 404 and answer["error"] == 404
    assert swarm.review_for_change(5) is None


@pytest.mark.spec("SW-11")
def test_a_second_review_of_a_change_is_refused_with_swarms_words(swarm):
    """module/Reviews/src/Controller/IndexController.php addAction ("A Review for change %d already
    exists."), turned into 400 by module/Api/src/Controller/ReviewsController.php create."""
    swarm.add_review(5)
    status, answer = _call(swarm, "POST", "/api/v9/reviews", form=[("change", "5")])
    assert (status, answer) == (400, {"error": "A Review for change 5 already exists.", "isValid": False})


@pytest.mark.spec("SW-6")
@pytest.mark.parametrize("release", ["2022.1", "2025.2"])
def test_the_v11_client_creates_a_review_on_both_releases(release):
    with FakeSwarmServer(user=USER, ticket=TICKET, release=release) as server:
        review_id = _client(server, "v11").create_review(5)
        assert server.review_for_change(5) == review_id
        posts = [path for method, path in server.requests() if method == "POST"]
        if release == "2022.1":  # the v11 route is missing (404, nothing made): the v9 one makes it
            assert posts == ["/api/v11/reviews", "/api/v9/reviews"]
        else:  # p4mcp-server: POST /api/v11/reviews {"change": N}
            assert posts == ["/api/v11/reviews"]


def test_a_404_other_than_a_missing_route_still_fails_after_the_v9_try():
    def transport(request: HttpRequest) -> HttpResponse:
        return HttpResponse(404, {}, b'{"error": "Not Found"}')

    client = SwarmClient("https://swarm.example.test", USER, TICKET, api="v11", transport=transport)
    with pytest.raises(NotFoundError):
        client.create_review(5)


# --- 4. notify: where Swarm reads it, where its route is -------------------------------------------------
@pytest.mark.spec("SW-3")
def test_v11_reads_notify_from_the_query_string_only(swarm):
    """module/Comments/src/Controller/CommentApi.php create: `notify` from the query, default delayed."""
    review_id = swarm.add_review(1)
    path = f"/api/v11/reviews/{review_id}/comments"
    status, _ = _call(swarm, "POST", path, body={"body": "in the body", "notify": "immediate"})
    assert status == 200 and swarm.notifications_for_review(review_id) == 0  # the body's notify is ignored
    status, _ = _call(swarm, "POST", path, query=[("notify", "immediate")], body={"body": "in the query"})
    assert status == 200 and swarm.notifications_for_review(review_id) == 1
    status, answer = _call(swarm, "POST", path, query=[("notify", "later")], body={"body": "x"})
    assert status == 400 and "invalidNotify" in answer["messages"]["notify"]  # Validator/Notify.php


@pytest.mark.spec("SW-3")
def test_the_v11_notify_route_is_under_reviews(swarm):
    """module/Comments/config/module.config.php: `/api/v11/reviews/ID/notify` (topic-notify); there is
    no `/api/v11/comments/reviews/ID/notify`."""
    review_id = swarm.add_review(1)
    _call(swarm, "POST", f"/api/v11/reviews/{review_id}/comments", body={"body": "x"})
    status, _ = _call(swarm, "POST", f"/api/v11/comments/reviews/{review_id}/notify", body={})
    assert status == 404 and swarm.notifications_for_review(review_id) == 0
    status, answer = _call(swarm, "POST", f"/api/v11/reviews/{review_id}/notify", body={})
    assert status == 200 and answer["data"] == {"count": 1}
    assert swarm.notifications_for_review(review_id) == 1


@pytest.mark.spec("SW-11")
def test_v9_delays_only_for_the_string_true_and_needs_a_topic_to_notify(swarm):
    """CommentsController::setNotificationValues and sendAllMyDelayedCommentsAction."""
    review_id = swarm.add_review(1)
    form = [("topic", f"reviews/{review_id}"), ("body", "x"), ("delayNotification", "1")]
    assert _call(swarm, "POST", "/api/v9/comments", form=form)[0] == 200
    assert swarm.notifications_for_review(review_id) == 1  # "1" is not "true": sent at once
    status, answer = _call(swarm, "POST", "/api/v9/comments/notify", form=[])
    assert status == 404 and answer["isValid"] is False


@pytest.mark.spec("SW-11")
@pytest.mark.parametrize("topic", ["reviews/424242", "changes/5", "nonsense"])
def test_v9_notify_on_a_topic_with_nothing_delayed_is_200(swarm, topic):
    """module/Comments/Module.php sendDelayedComments reads the user's delayed comments on any topic:
    none is 200 "No comment notifications to send", not 404."""
    status, answer = _call(swarm, "POST", "/api/v9/comments/notify", form=[("topic", topic)])
    assert (status, answer) == (200, {"isValid": True, "message": "No comment notifications to send", "code": 200})


# --- 5. answers as Swarm gives them ----------------------------------------------------------------------
@pytest.mark.spec("SW-5", "SW-11")
@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("GET", "/api/v9/reviews", None),
        ("GET", "/api/v11/reviews", None),
        ("POST", "/api/v11/reviews/90001/comments", {"body": "x"}),
    ],
)
def test_refused_credentials_are_a_plain_401_on_v9_and_v11(swarm, method, path, body):
    """Basic auth is checked before any controller (module/Users/src/Authentication/BasicAuthListener.php
    enforceBasicAuth, module/Application/src/Listener/RouteListener.php handleRequireLogin); the exception
    is 401 (module/Application/src/View/Http/ExceptionStrategy.php) and its body the reason phrase
    (module/Application/src/View/Http/StrictJsonStrategy.php): not the v11 envelope, never HTTP 200."""
    swarm.add_review(1)
    url = f"{swarm.url}{path}"
    headers = {"Authorization": "Basic " + base64.b64encode(f"{USER}:WRONG".encode()).decode()}
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    with refused.value as error:
        assert (error.code, json.loads(error.read())) == (401, {"error": "Unauthorized"})
    assert swarm.comments_for_review(90001) == []


@pytest.mark.spec("SW-11")
def test_the_v9_comment_list_is_a_list(swarm):
    """CommentsController::prepareSuccessModel applies array_values: never an object keyed by id."""
    review_id = swarm.add_review(1)
    swarm.add_comment(review_id, "one")
    swarm.add_comment(review_id, "two")
    status, answer = _call(swarm, "GET", "/api/v9/comments", query=[("topic", f"reviews/{review_id}")])
    assert status == 200 and isinstance(answer["comments"], list) and len(answer["comments"]) == 2


@pytest.mark.spec("SW-11")
@pytest.mark.parametrize("topic", ["reviews/424242", "changes/5", "nonsense"])
def test_the_v9_comment_list_has_no_topic_and_is_empty_for_a_topic_no_review_has(swarm, topic):
    """CommentsController::prepareSuccessModel unsets `topic`; getList answers 200 and no comments
    when the lookup throws (an unknown review), and Comments IndexController lists by exact topic."""
    swarm.add_comment(swarm.add_review(1), "one")
    status, answer = _call(swarm, "GET", "/api/v9/comments", query=[("topic", topic)])
    assert (status, answer) == (200, {"comments": [], "lastSeen": None})


@pytest.mark.spec("SW-11")
def test_review_json_names_changes_and_commits_and_hides_versions(swarm):
    """module/Reviews/src/Model/Review.php: `versions` is a hidden field."""
    swarm.add_review(1, versions=2)
    _, answer = _call(swarm, "GET", "/api/v11/reviews", query=[("keywords", "1"), ("keywordsFields[]", "changes")])
    (review,) = answer["data"]["reviews"]
    assert review["changes"] == [1] and review["commits"] == [] and "versions" not in review


@pytest.mark.spec("SW-11")
@pytest.mark.parametrize("release", ["2022.1", "2025.2"])
@pytest.mark.parametrize("api", ["v9", "v11"])
def test_the_whole_comment_flow_succeeds_as_swarm_answers(release, api):
    with FakeSwarmServer(user=USER, ticket=TICKET, release=release) as server:
        client = _client(server, api)
        review_id = client.find_review(48213) or client.create_review(48213)
        assert client.find_review(48213) == review_id
        comment_id = client.post_comment(
            review_id, "x\n\np4review:" + "a" * 24, anchor_context(_finding(3), DIFF), True
        )
        assert client.find_comment_by_marker(review_id, "p4review:" + "a" * 24) == comment_id
        assert server.notifications_for_review(review_id) == 0
        client.send_notifications(review_id)
        assert server.notifications_for_review(review_id) == 1 and server.delayed_for_change(48213) == 0


# --- 6. the workflow test's callbacks ---------------------------------------------------------------------
def _ref(run: dict[str, str], *, update: bool) -> SwarmTestRef:
    return SwarmTestRef(
        review_id=1,
        version=1,
        change=1,
        status="shelved",
        pass_url=run["pass"],
        fail_url=run["fail"],
        update_url=run["update"] if update else None,
    )


@pytest.mark.spec("SW-11")
def test_pass_and_fail_urls_ignore_a_json_body_and_read_a_form(swarm):
    """module/TestIntegration/src/Controller/TestRunApi.php passOrFail: getPost() + getQuery(), `url` only."""
    review_id = swarm.add_review(1)
    run = swarm.add_test_run(review_id)
    pass_path = urllib.parse.urlsplit(run["pass"]).path
    status, _ = _call(swarm, "POST", pass_path, body={"url": "https://ci.test/1", "messages": ["lost"]}, auth=False)
    assert status == 200
    stored = swarm.test_run(int(run["id"]))
    assert (stored["status"], stored["url"], stored["messages"]) == ("pass", None, [])
    _call(swarm, "POST", pass_path, form=[("url", "https://ci.test/2")], auth=False)
    assert swarm.test_run(int(run["id"]))["url"] == "https://ci.test/2"


@pytest.mark.spec("SW-11")
@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"status": "pass", "summary": "x"}, 400),  # only messages, status, url
        ({"status": "passed"}, 400),  # Filter/StatusValidator.php
        ({"status": "pass", "url": "x" * 1025}, 400),  # Filter/TestRun.php: url at most 1024
    ],
)
def test_the_update_url_refuses_what_swarm_refuses(swarm, body, status):
    """TestRunApi::updateWithUuid and Filter/TestRun.php."""
    run = swarm.add_test_run(swarm.add_review(1))
    answer_status, answer = _call(swarm, "POST", urllib.parse.urlsplit(run["update"]).path, body=body, auth=False)
    assert answer_status == status and answer["error"] == status
    assert swarm.test_run(int(run["id"]))["status"] == "running"


def test_a_wrong_test_run_token_is_refused(swarm):
    run = swarm.add_test_run(swarm.add_review(1))
    path = urllib.parse.urlsplit(run["update"]).path.rsplit("/", 1)[0] + "/" + "0" * 32
    assert _call(swarm, "POST", path, body={"status": "pass"}, auth=False)[0] == 401


@pytest.mark.spec("SW-8")
@pytest.mark.parametrize("update", [True, False])
def test_the_verdict_reaches_swarm_with_its_summary_when_there_is_an_update_url(swarm, update):
    run = swarm.add_test_run(swarm.add_review(1))
    result = verdict([_finding(1)], Severity.HIGH)
    assert post_verdict(callback_request(_ref(run, update=update), result, swarm.url), swarm_url=swarm.url) == 200
    stored = swarm.test_run(int(run["id"]))
    assert stored["status"] == "fail" and stored["url"] == swarm.url
    # Without {update} the summary cannot reach Swarm: pass/fail URLs take no messages.
    assert stored["messages"] == (["p4review: 1 of 1 finding is high or above (1 high)"] if update else [])


@pytest.mark.spec("SW-11")
@pytest.mark.parametrize(
    ("messages", "kept"),
    [
        ([1, True, None, "m" * 100], [1, True, None, "m" * 80]),  # ArrayOfStringFilter cuts strings only
        ({"a": "one", "b": "two"}, ["one", "two"]),  # ArrayValues
        (["ok"] * 10 + [["nested"]], ["ok"] * 10),  # sliced to ten before FlatArray looks
        (None, []),
        (["é" * 50], ["é" * 40]),  # substr: 80 bytes
    ],
)
def test_update_messages_are_filtered_not_refused_as_swarm_filters_them(swarm, messages, kept):
    """module/TestIntegration/src/Filter/TestRun.php addMessagesFilter: ArrayValues, ArraySliceFilter(10),
    ArrayOfStringFilter(80), then FlatArray: anything flat is kept."""
    run = swarm.add_test_run(swarm.add_review(1))
    body = {"status": "fail", "messages": messages}
    assert _call(swarm, "POST", urllib.parse.urlsplit(run["update"]).path, body=body, auth=False)[0] == 200
    assert swarm.test_run(int(run["id"]))["messages"] == kept


@pytest.mark.spec("SW-11")
@pytest.mark.parametrize(("messages", "rule"), [("one", "notArray"), ([["nested"]], "notFlat"), ([{}], "notFlat")])
def test_update_messages_that_are_not_a_flat_array_are_refused(swarm, messages, rule):
    """Application/src/Validator/FlatArray.php."""
    run = swarm.add_test_run(swarm.add_review(1))
    body = {"status": "fail", "messages": messages}
    status, answer = _call(swarm, "POST", urllib.parse.urlsplit(run["update"]).path, body=body, auth=False)
    assert status == 400 and rule in answer["messages"]["messages"]


@pytest.mark.spec("SW-11")
def test_a_test_runs_token_is_the_reviews_token_at_its_head_version(swarm):
    """TestExecutor::createTestRun stores Review::getToken (`<token>.v<head version>`) as the run's
    UUID, and generateCallbackUrls puts it in the URLs: every run of a review carries the same one."""
    review_id = swarm.add_review(1, versions=2)
    first, second = swarm.add_test_run(review_id), swarm.add_test_run(review_id, 2)
    token = first["update"].rsplit("/", 1)[1]
    assert token.endswith(".v2") and second["update"].rsplit("/", 1)[1] == token
    assert first["pass"].endswith(f"/pass/{token}") and second["fail"].endswith(f"/fail/{token}")
    assert token not in json.dumps(_call(swarm, "GET", "/api/v11/reviews")[1])  # hidden, as Review.php hides it


def test_update_messages_are_kept_as_swarm_keeps_them(swarm):
    run = swarm.add_test_run(swarm.add_review(1))
    body = {"status": "fail", "messages": ["m" * 100] * 12}
    assert _call(swarm, "POST", urllib.parse.urlsplit(run["update"]).path, body=body, auth=False)[0] == 200
    stored = swarm.test_run(int(run["id"]))
    assert stored["messages"] == ["m" * 80] * 10  # Filter/TestRun.php: ten messages of 80 characters

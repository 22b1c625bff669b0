"""What the model wrote reaches Swarm and the email inert (no mention, no clickable link), a
rejected answer is stated, and the caps are said (issue 27). Swarm's own patterns are ported
from its source (dfrees/swarm 2022.1, module/Application/src/Filter/Linkify.php)."""

from __future__ import annotations

import html as html_module
import re

import pytest

from p4review.models.review_result import (
    Coverage,
    Finding,
    FindingsCut,
    ModelAnswer,
    ReviewResult,
    StoredReview,
)
from p4review.notify.model_text import WORD_JOINER, inert_for_swarm, without_links
from p4review.notify.swarm.comments import plan_comments, render_finding_comment, render_summary_comment
from p4review.review.bounds import bounded_findings
from tests.unit.notify.test_email_render import bodies, job, make_finding, parsed, render

HOSTILE = (
    "Ping @alice and @*bob, @@*release-leads and @@!owners; see @1234, mail sec@evil.io, "
    "open https://evil.example/login?x=1 or www.evil.example or ftp://evil.example/f and //depot/secret/..."
)

# Linkify::getCallouts: words split on WORD_PATTERN, trimmed, then $calloutPattern on each.
_WORD = re.compile(r"[\s<>{}]+")
_TRIM = re.compile(r"^[”’\"'(<]*(.+?)[.”’\"',!?:;)>]*$", re.S)
_CALLOUT = re.compile(r"^@{1,2}(\*|!?)(\w+[\\\w.\-]{0,253})$", re.I)
# Linkify::filter's $trimPattern and the patterns that make a link of a word.
_LINK_TRIM = re.compile(r"^([_*”’\"'(<{\[]*)(.+?)([._*”’\"',!?:;)>}\]]*)$", re.S)
_URL = re.compile(r"^(([^\]]*\])*\(*(?:http|https|ftp)://(?:[\w-]+@)?(?:[\w.-]+))", re.I)  # its start
_EMAIL = re.compile(r"^(([\w\-.+'])+@(?:[\w.-]+\.[a-z]{2,4}))$", re.I)
_GOTO = re.compile(r"^(@{1,2}\*?([\w/]+(?:[\\\w/.\-,!()'%:#]*[\w/]|[\w/])?))$", re.I)


def swarm_callouts(body: str) -> list[str]:
    found = []
    for word in _WORD.split(body):
        trimmed = _TRIM.match(word)
        if word and trimmed and (callout := _CALLOUT.match(trimmed.group(1))):
            found.append(callout.group(2))
    return found


def swarm_links(body: str) -> list[str]:
    found = []
    for word in _WORD.split(body):
        parts = _LINK_TRIM.match(word)
        if not word or not parts:
            continue
        trimmed = parts.group(2)
        if _URL.match(trimmed) or _EMAIL.match(trimmed) or (trimmed.startswith("@") and _GOTO.match(trimmed)):
            found.append(trimmed)
    return found


def _gfm_autolinks(text: str) -> list[str]:
    """GitHub-flavoured Markdown's extended autolinks (and a mail client's), as cmark-gfm finds
    them (extensions/autolink.c): `url_match` rewinds from `://` over letters only, whatever comes
    before them (`1https://x` and `_https://x` are links); `www_match` takes `www.` at a line's
    start or after a blank or one of `*_~(`."""
    return re.findall(r"(?i)(?:(?<![a-z])(?:https?|ftp)://|(?:^|(?<=[\s*_~(]))www\.)\S+", text)


def test_the_ported_patterns_find_what_swarm_finds_in_the_raw_text():
    assert set(swarm_callouts(HOSTILE)) >= {"alice", "bob", "release-leads", "owners", "1234"}
    assert {"https://evil.example/login?x=1", "sec@evil.io", "@alice"} <= set(swarm_links(HOSTILE))


def test_a_findings_comment_carries_no_mention_and_no_link_from_the_model():
    finding = Finding.model_validate(
        {
            "id": "F1",
            "severity": "high",
            "category": "security",
            "title": "Tell @*bob: https://evil.example",
            "file": "//depot/main/x.py",
            "line": 5,
            "message": HOSTILE,
            "suggestion": "Ask @@*release-leads at www.evil.example",
            "rule_id": "@alice",
            "suggested_code": "# @*bob https://evil.example\nrun()",
        }
    )
    body = render_finding_comment(finding, "p4review:" + "0" * 24)
    assert swarm_callouts(body) == [] and swarm_links(body) == [] and _gfm_autolinks(body) == []
    # Still readable: the text is there, a word joiner after each @, the URL defanged.
    assert f"@{WORD_JOINER}alice" in body and "https\\[:\\]//evil.example/login" in body
    # The service's own location line is untouched.
    assert "\n//depot/main/x.py:5\n" in body


def test_the_summary_comment_carries_no_mention_says_what_was_cut_and_that_the_answer_was_rejected():
    stored = StoredReview(
        result=ReviewResult(schema_version="1.0", prompt_version="1.2.0", summary=HOSTILE, findings=[]),
        coverage=Coverage(files_reviewed=["//depot/main/x.py"]),
        model_answer=ModelAnswer(
            status="rejected", parts=1, parts_rejected=1, reasons=["invalid_json"], fallback="heuristic"
        ),
        cut=FindingsCut(limit=50, findings_not_shown=62, by_severity={"medium": 12, "low": 50}),
    )
    body = render_summary_comment(changelist_id=7, review_version=1, stored=stored)
    assert swarm_callouts(body) == [] and swarm_links(body) == [] and _gfm_autolinks(body) == []
    assert "The model's answer was rejected (invalid\\_json)" in body
    assert "62 more findings not shown (12 medium, 50 low)" in body


def test_the_email_shows_the_models_urls_defanged_and_keeps_the_services_links():
    finding = make_finding(title="Go to https://evil.example", message=HOSTILE, suggestion="See www.evil.example/fix")
    text, html = bodies(render(result=ReviewResult(schema_version="1.0", prompt_version="1.0.0", findings=[finding])))
    for part in (text, html):
        assert "evil.example" in part
        assert not re.search(r"(?i)(https?|ftp)://evil|www\.evil", part)
        assert "https[:]//evil.example/login" in part and "www[.]evil.example" in part
    # The service's own: the Swarm link and the finding's location.
    assert "https://swarm.example.com/changes/12345" in text
    assert "//depot/main/src/net/buffer.c:12" in text
    assert 'href="https://swarm.example.com/changes/12345#' in html


@pytest.mark.spec("OC-9")
def test_the_email_states_a_rejected_answer_in_subject_and_body():
    answer = ModelAnswer(status="rejected", parts=2, parts_rejected=2, reasons=["invalid_json"], fallback="heuristic")
    raw = render(model_answer=answer)
    text, html = bodies(raw)
    assert parsed(raw)["Subject"].endswith("; model answer rejected")
    said = "The model's answer was rejected (invalid_json): these findings are from the analyzers and the heuristic rules only."
    assert f"Note: {said}" in text and said in html_module.unescape(html)
    partly = ModelAnswer(status="partly_rejected", parts=3, parts_rejected=1, reasons=["schema_mismatch"])
    text, _ = bodies(render(model_answer=partly))
    assert "for 1 of 3 parts of the change was rejected (schema_mismatch)" in text
    assert "model answer" not in parsed(render(model_answer=partly))["Subject"]


def _many(count: int) -> list[Finding]:
    severities = ["low", "info", "medium", "high", "critical"]
    return [
        make_finding(
            id=f"F{i}", severity=severities[i % 5], title=f"Problem {i} @*bob", line=10 + i, message="m " * 300
        )
        for i in range(count)
    ]


def test_four_hundred_findings_make_fifty_comments_and_a_bounded_email_that_says_what_was_cut():
    shown, cut = bounded_findings(_many(400), 50)
    stored = StoredReview(
        result=ReviewResult(schema_version="1.0", prompt_version="1.2.0", findings=shown),
        cut=cut.as_model(50),
    )
    planned = plan_comments(changelist_id=12345, review_version=2, stored=stored, task_threshold="high")
    assert len(planned) == 51 and sum(p.task_open for p in planned) == 50
    assert "350 more findings not shown (30 critical, 80 high, 80 medium, 80 low, 80 info)" in planned[-1].body
    raw = render(result=stored.result, cut=stored.cut)
    assert len(raw) < 300_000, len(raw)
    text, _ = bodies(raw)
    assert (
        "Note: 350 more findings not shown (30 critical, 80 high, 80 medium, 80 low, 80 info): a review keeps its "
        "50 most severe; see job 6f1f7c3e-0000-4e55-9a8e-000000000001." in text
    )
    assert job().job_id in text


def test_neutralizing_is_idempotent_enough_and_leaves_plain_text_alone():
    plain = "Use os.path.join; a < b; x@ y; ratio 3:1; C:\\temp"
    assert without_links(plain) == plain
    assert inert_for_swarm("see https://a.example @bob") == "see https[:]//a.example @\u2060bob"
    assert inert_for_swarm("in //depot/main/a.c") == "in /\u2060/depot/main/a.c"


@pytest.mark.parametrize(
    "text", ["1https://evil.example/x", "_https://evil.example/x", "(_www.evil.example", "x_www.evil.example"]
)
def test_a_url_glued_to_a_digit_or_an_underscore_is_defanged_too(text):
    # cmark-gfm links these (see _gfm_autolinks); a word boundary before the scheme missed them.
    assert _gfm_autolinks(text) != []
    assert _gfm_autolinks(without_links(text)) == [] and "evil" in without_links(text)
    finding = make_finding(title=text, message=text, suggestion=text)
    assert _gfm_autolinks(render_finding_comment(finding, "p4review:" + "0" * 24)) == []
    for part in bodies(render(result=ReviewResult(schema_version="1.0", prompt_version="1.0.0", findings=[finding]))):
        found = _gfm_autolinks(html_module.unescape(part))
        assert [link for link in found if not link.startswith("https://swarm.example.com/")] == []  # the service's

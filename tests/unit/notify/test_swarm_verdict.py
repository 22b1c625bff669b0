"""The Swarm workflow test's verdict (notify/swarm/verdict.py): when a review fails the test, the
one-line summary Swarm shows, and the callback request that tells Swarm."""

from __future__ import annotations

import json
from urllib.parse import parse_qs

import pytest

from p4review.models.finding_labels import Severity
from p4review.models.job import SwarmTestRef
from p4review.models.review_result import Finding
from p4review.notify.swarm.verdict import (
    MAX_MESSAGE_CHARS,
    Outcome,
    Verdict,
    callback_request,
    fail_threshold,
    verdict,
)
from p4review.settings.blocks import SwarmBlock

# Swarm's own callback URLs (TestExecutor::generateCallbackUrls, TestRunApi routes).
PASS_URL = "https://swarm.example.test/api/v10/testruns/7/pass/0123456789ABCDEF0123456789ABCDEF"
FAIL_URL = "https://swarm.example.test/api/v10/testruns/7/fail/0123456789ABCDEF0123456789ABCDEF"
UPDATE_URL = "https://swarm.example.test/api/v10/testruns/7/0123456789ABCDEF0123456789ABCDEF"


def _finding(severity: str, number: int = 0) -> Finding:
    return Finding(
        id=f"f{number}-{severity}",
        severity=Severity(severity),
        category="correctness",
        title="a title",
        file="//depot/main/a.py",
        line=1,
        message="a message",
    )


def _findings(*severities: str) -> list[Finding]:
    return [_finding(severity, number) for number, severity in enumerate(severities)]


def _ref(update_url: str | None = UPDATE_URL) -> SwarmTestRef:
    return SwarmTestRef(
        review_id=48300,
        version=2,
        change=48299,
        status="shelved",
        pass_url=PASS_URL,
        fail_url=FAIL_URL,
        update_url=update_url,
    )


# --- the threshold -------------------------------------------------------------------------------------
@pytest.mark.spec("SW-8")
def test_the_default_fails_on_critical_or_high_only():
    fail_at = fail_threshold(SwarmBlock().swarm_test_fail_at)
    assert fail_at is Severity.HIGH
    assert verdict(_findings("critical"), fail_at).outcome is Outcome.FAIL
    assert verdict(_findings("high", "low"), fail_at).outcome is Outcome.FAIL
    assert verdict(_findings("medium", "low", "info"), fail_at).outcome is Outcome.PASS
    assert verdict([], fail_at).outcome is Outcome.PASS


@pytest.mark.parametrize(
    ("fail_at", "failing_severities"),
    [
        ("critical", {"critical"}),
        ("high", {"critical", "high"}),
        ("medium", {"critical", "high", "medium"}),
        ("low", {"critical", "high", "medium", "low"}),
        ("never", set()),
    ],
)
def test_each_threshold_fails_at_and_above_it(fail_at, failing_severities):
    threshold = fail_threshold(fail_at)
    for severity in ("critical", "high", "medium", "low", "info"):
        expected = Outcome.FAIL if severity in failing_severities else Outcome.PASS
        assert verdict(_findings(severity), threshold).outcome is expected, (fail_at, severity)


@pytest.mark.parametrize("value", ["", "info", "HIGHEST", "none", "always"])
def test_an_unknown_threshold_is_refused(value):
    with pytest.raises(ValueError, match="fail-at must be one of"):
        fail_threshold(value)


def test_the_threshold_is_read_case_insensitively():
    assert fail_threshold(" Critical ") is Severity.CRITICAL


@pytest.mark.parametrize("value", ["critical", "high", "medium", "low", "never"])
def test_the_setting_accepts_each_choice(value):
    assert SwarmBlock.model_validate({"P4REVIEW_SWARM_TEST_FAIL_AT": value}).swarm_test_fail_at == value


@pytest.mark.parametrize("value", ["info", "High", ""])
def test_the_setting_refuses_anything_else(value):
    with pytest.raises(ValueError):
        SwarmBlock.model_validate({"P4REVIEW_SWARM_TEST_FAIL_AT": value})


# --- the summary ---------------------------------------------------------------------------------------
def test_a_failing_summary_counts_what_failed_and_everything_found():
    result = verdict(_findings("low", "critical", "high", "low"), Severity.HIGH)
    assert result == Verdict(Outcome.FAIL, "p4review: 2 of 4 findings are high or above (1 critical, 1 high, 2 low)", 2)


def test_a_single_failing_finding_reads_as_one():
    result = verdict(_findings("critical"), Severity.CRITICAL)
    assert result.summary == "p4review: 1 of 1 finding is critical (1 critical)"


def test_a_passing_summary_says_none_reached_the_threshold():
    assert verdict(_findings("medium", "info"), Severity.HIGH).summary == (
        "p4review: 2 findings, none high or above (1 medium, 1 info)"
    )


def test_no_findings_and_never_failing():
    assert verdict([], Severity.LOW) == Verdict(Outcome.PASS, "p4review: no findings", 0)
    assert verdict(_findings("critical"), None) == Verdict(
        Outcome.PASS, "p4review: 1 finding, never failing (1 critical)", 0
    )


def test_the_summary_is_one_line():
    result = verdict(_findings(*(["critical"] * 3 + ["high"] * 11 + ["medium"] * 9 + ["low"] * 7)), Severity.HIGH)
    assert "\n" not in result.summary
    assert result.failing == 14


# --- the callback request ------------------------------------------------------------------------------
@pytest.mark.spec("SW-8")
def test_with_an_update_url_one_json_post_carries_status_summary_and_link():
    """Swarm's {update} URL takes `status`, `messages` and `url` (TestRunApi::updateWithUuid)."""
    request = callback_request(_ref(), verdict([], Severity.HIGH), link="https://swarm.example.test/changes/48300")
    assert request.url == UPDATE_URL
    assert request.method == "POST"
    assert request.headers == {"Content-Type": "application/json"}
    assert json.loads(request.body) == {
        "status": "pass",
        "messages": ["p4review: no findings"],
        "url": "https://swarm.example.test/changes/48300",
    }
    failed = callback_request(_ref(), verdict(_findings("high"), Severity.HIGH))
    assert failed.url == UPDATE_URL
    assert json.loads(failed.body) == {
        "status": "fail",
        "messages": ["p4review: 1 of 1 finding is high or above (1 high)"],
    }


@pytest.mark.spec("SW-8")
def test_without_an_update_url_the_pass_or_fail_url_gets_the_link_as_a_form():
    """{pass}/{fail} read only `url`, from a form or the query; a JSON body is ignored (TestRunApi::passOrFail)."""
    request = callback_request(_ref(None), verdict([], Severity.HIGH), link="https://swarm.example.test/changes/48300")
    assert request.url == PASS_URL
    assert request.headers == {"Content-Type": "application/x-www-form-urlencoded"}
    assert parse_qs(request.body.decode()) == {"url": ["https://swarm.example.test/changes/48300"]}
    failed = callback_request(_ref(None), verdict(_findings("high"), Severity.HIGH))
    assert failed.url == FAIL_URL and failed.body == b""


def test_a_long_summary_is_clipped_to_what_swarm_shows():
    long = Verdict(Outcome.FAIL, "p4review: " + "x" * 200, 1)
    (message,) = json.loads(callback_request(_ref(), long).body)["messages"]
    assert len(message) == MAX_MESSAGE_CHARS and message.endswith("...")


def test_a_link_swarm_would_refuse_is_left_out():
    too_long = "https://swarm.example.test/" + "x" * 1100  # Filter/TestRun.php: url at most 1024 characters
    assert "url" not in json.loads(callback_request(_ref(), verdict([], Severity.HIGH), link=too_long).body)


def test_building_the_request_performs_no_io(monkeypatch):
    import urllib.request

    def refuse(*_args, **_kwargs):
        raise AssertionError("no I/O")

    monkeypatch.setattr(urllib.request, "urlopen", refuse)
    callback_request(_ref(), verdict(_findings("low"), Severity.HIGH))


def test_a_rejected_model_answer_fails_the_test_unless_it_never_fails():
    """A change that talks the model out of its answer does not pass a required test (issue 27)."""
    rejected = verdict([], Severity.HIGH, answer_rejected=True)
    assert rejected == Verdict(Outcome.FAIL, "p4review: model answer rejected; 0 findings", 0)
    assert verdict([_finding("low")], None, answer_rejected=True).outcome is Outcome.PASS
    assert verdict([], Severity.HIGH).outcome is Outcome.PASS

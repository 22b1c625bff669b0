"""The Swarm workflow test's verdict (logic/swarm_verdict.py): when a review fails the test, the
one-line summary Swarm shows, and the callback request that tells Swarm."""

from __future__ import annotations

import json

import pytest

from p4review.config import Settings
from p4review.logic.swarm_verdict import (
    MAX_MESSAGE_CHARS,
    Outcome,
    Verdict,
    callback_request,
    fail_threshold,
    verdict,
)
from p4review.models.job import SwarmTestRef
from p4review.models.review_result import Finding, Severity

PASS_URL = "https://swarm.example.test/reviews/48300/tests/pass/TOKEN.v2/"
FAIL_URL = "https://swarm.example.test/reviews/48300/tests/fail/TOKEN.v2/"


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


def _ref() -> SwarmTestRef:
    return SwarmTestRef(
        review_id=48300, version=2, change=48299, status="shelved", pass_url=PASS_URL, fail_url=FAIL_URL
    )


# --- the threshold -------------------------------------------------------------------------------------
def test_the_default_fails_on_critical_or_high_only():
    fail_at = fail_threshold(Settings().swarm_test_fail_at)
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
    assert Settings.model_validate({"P4REVIEW_SWARM_TEST_FAIL_AT": value}).swarm_test_fail_at == value


@pytest.mark.parametrize("value", ["info", "High", ""])
def test_the_setting_refuses_anything_else(value):
    with pytest.raises(ValueError):
        Settings.model_validate({"P4REVIEW_SWARM_TEST_FAIL_AT": value})


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
def test_a_pass_goes_to_the_pass_url_with_the_summary_and_link():
    result = verdict([], Severity.HIGH)
    request = callback_request(_ref(), result, link="https://swarm.example.test/changes/48300")
    assert request.url == PASS_URL
    assert request.method == "POST"
    assert request.headers == {"Content-Type": "application/json"}
    assert json.loads(request.body) == {
        "messages": ["p4review: no findings"],
        "url": "https://swarm.example.test/changes/48300",
    }


def test_a_fail_goes_to_the_fail_url_without_a_url_when_there_is_no_link():
    request = callback_request(_ref(), verdict(_findings("high"), Severity.HIGH))
    assert request.url == FAIL_URL
    assert json.loads(request.body) == {"messages": ["p4review: 1 of 1 finding is high or above (1 high)"]}


def test_a_long_summary_is_clipped_to_what_swarm_shows():
    long = Verdict(Outcome.FAIL, "p4review: " + "x" * 200, 1)
    (message,) = json.loads(callback_request(_ref(), long).body)["messages"]
    assert len(message) == MAX_MESSAGE_CHARS and message.endswith("...")


def test_building_the_request_performs_no_io(monkeypatch):
    import urllib.request

    def refuse(*_args, **_kwargs):
        raise AssertionError("no I/O")

    monkeypatch.setattr(urllib.request, "urlopen", refuse)
    callback_request(_ref(), verdict(_findings("low"), Severity.HIGH))

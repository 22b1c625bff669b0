"""The local stack's fake Swarm seen from another process (its `/_fake/` control routes), and how
`make chaos` splits its fault list and counts Swarm comments (duplicates, lost)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from p4review.models.outbox import DeliveryStatus, OutboxRow
from p4review.notify.delivery import delivery_token
from p4review.notify.swarm.comments import comment_marker
from p4review_dev.chaos import ChaosReport, _check_swarm, split_faults
from p4review_dev.swarm_server import FakeSwarmControl, FakeSwarmServer

USER, TICKET = "p4review-swarm", "T" * 16
CHANGE = 700_001


@pytest.fixture
def swarm():
    with FakeSwarmServer(user=USER, ticket=TICKET, seed=3) as server:
        yield server


def _comment(swarm, review_id, key, version=1):
    return swarm.add_comment(review_id, f"**finding**\n\n{comment_marker(CHANGE, version, key)}", user=USER)


def _row(key, status=DeliveryStatus.SENT):
    recipient = f"swarm:{key}"
    return OutboxRow(
        changelist_id=CHANGE,
        recipient=recipient,
        review_version=1,
        job_id="job-1",
        status=status,
        provider_token=delivery_token(CHANGE, recipient, 1),
        created_at="2026-01-01T00:00:00Z",
        updated_at="2026-01-01T00:00:00Z",
    )


def test_the_control_routes_set_faults_and_show_reviews_without_credentials_or_faults(swarm):
    review_id = swarm.add_review(CHANGE)
    _comment(swarm, review_id, "fp1")
    control = FakeSwarmControl(swarm.url)
    control.set_faults(error_rate=1.0, seed=1)
    with pytest.raises(urllib.error.HTTPError) as failed:  # every API request now fails
        urllib.request.urlopen(f"{swarm.url}/api/v9/reviews?change[]={CHANGE}", timeout=10)
    assert failed.value.code == 500
    # The control routes answer anyway, and are not counted as Swarm requests.
    [review] = control.state()["reviews"]
    assert (review["id"], review["change"], len(review["comments"]), review["notifications"]) == (
        review_id,
        CHANGE,
        1,
        1,
    )
    assert control.reviews_by_change()[CHANGE]["id"] == review_id
    assert control.state()["faults_injected"] == {"error": 1}
    assert swarm.requests() == [("GET", "/api/v9/reviews")]
    control.set_faults(error_rate=0.0)
    assert swarm.review_for_change(CHANGE) == review_id


def test_the_control_route_refuses_rates_outside_zero_to_one(swarm):
    request = urllib.request.Request(
        f"{swarm.url}/_fake/faults", data=json.dumps({"error_rate": 2}).encode(), method="POST"
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 400


def test_chaos_hands_swarm_entries_to_the_fake_and_the_rest_to_the_workers():
    workers, fake = split_faults("after_claim=0.01,swarm_error=0.2,provider_transient=0.3,swarm_lost=0.1;seed=4")
    assert workers == "after_claim=0.01,provider_transient=0.3;seed=4"
    assert fake == {"error_rate": 0.2, "lost_response_rate": 0.1}
    assert split_faults("swarm_error=0.3") == ("", {"error_rate": 0.3})
    assert split_faults("") == ("", {})
    with pytest.raises(SystemExit):
        split_faults("swarm_error=0.7,swarm_lost=0.5")


def test_chaos_counts_a_marker_twice_as_a_duplicate_and_a_missing_one_as_lost(swarm):
    review_id = swarm.add_review(CHANGE)
    _comment(swarm, review_id, "fp1")
    _comment(swarm, review_id, "fp1")  # posted twice
    _comment(swarm, review_id, "summary")
    swarm.set_faults(error_rate=0.5, lost_response_rate=0.5)  # switched off before counting
    report = ChaosReport()
    rows = [
        _row("fp1"),
        _row("fp2"),  # never posted
        _row("fp3", DeliveryStatus.SKIPPED),  # an operator's skip: not required
        _row("summary"),
    ]
    _check_swarm(FakeSwarmControl(swarm.url), {CHANGE}, {CHANGE: rows, CHANGE + 1: []}, report)
    assert (report.swarm_comments, report.swarm_duplicates, report.swarm_lost) == (3, 1, 2)
    assert any("swarm:fp2" in problem for problem in report.problems)
    assert any(f"CL {CHANGE + 1}" in problem for problem in report.problems)  # no comment rows at all
    assert not report.passed

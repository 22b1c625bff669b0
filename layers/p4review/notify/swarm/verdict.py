"""The pass/fail a Swarm workflow test gets for a review (docs/swarm.md "Workflow test"), and the
callback request that tells Swarm (its {update} URL when the test sent one, else {pass} or
{fail}). Pure: no I/O (notify/swarm/callback.py sends it).

A test fails when an open finding (one in the version's result) is at or above the threshold,
P4REVIEW_SWARM_TEST_FAIL_AT: critical | high (the default: critical or high) | medium | low |
never (the test always passes; Swarm still shows the counts)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol
from urllib.parse import urlencode

from p4review.models.finding_labels import SEVERITY_ORDER, Severity
from p4review.models.job import SwarmTestRef

FAIL_AT_CHOICES = ("critical", "high", "medium", "low", "never")
DEFAULT_FAIL_AT = "high"
# Swarm keeps a test run's messages to 80 characters each (TestIntegration/src/Filter/TestRun.php).
MAX_MESSAGE_CHARS = 80
MAX_LINK_CHARS = 1024  # the same filter refuses a longer `url`
CALLBACK_CONTENT_TYPE = "application/json"
FORM_CONTENT_TYPE = "application/x-www-form-urlencoded"


class Outcome(StrEnum):
    PASS = "pass"  # noqa: S105 - an outcome
    FAIL = "fail"


class HasSeverity(Protocol):
    @property
    def severity(self) -> Severity: ...


@dataclass(frozen=True)
class Verdict:
    outcome: Outcome
    summary: str  # one line, for Swarm's test run messages
    failing: int  # open findings at or above the threshold


@dataclass(frozen=True)
class CallbackRequest:
    """One POST to Swarm's {update}, {pass} or {fail} URL. `url` carries Swarm's token: never log it."""

    url: str
    body: bytes
    headers: dict[str, str] = field(default_factory=lambda: {"Content-Type": CALLBACK_CONTENT_TYPE})
    method: str = "POST"


def fail_threshold(setting: str) -> Severity | None:
    """P4REVIEW_SWARM_TEST_FAIL_AT -> the lowest failing severity; None for `never`."""
    value = setting.strip().lower()
    if value not in FAIL_AT_CHOICES:
        raise ValueError(f"fail-at must be one of {', '.join(FAIL_AT_CHOICES)}")
    return None if value == "never" else Severity(value)


def verdict(findings: Iterable[HasSeverity], fail_at: Severity | None, *, answer_rejected: bool = False) -> Verdict:
    """Fail when any finding is at or above `fail_at` (None: never fail). `answer_rejected`: the
    model's answer (for some part of the change) was not used, so the review is incomplete: it
    fails unless the test never fails, as an opted-out change does, so that a change cannot pass a
    required test by talking the model out of its answer."""
    counts = Counter(finding.severity for finding in findings)
    total = sum(counts.values())
    breakdown = ", ".join(f"{counts[severity]} {severity.value}" for severity in SEVERITY_ORDER if counts[severity])
    failing_severities = SEVERITY_ORDER[: SEVERITY_ORDER.index(fail_at) + 1] if fail_at is not None else []
    failing = sum(counts[severity] for severity in failing_severities)
    if answer_rejected and fail_at is not None:
        return Verdict(Outcome.FAIL, f"p4review: model answer rejected; {_plural(total, 'finding')}", failing)
    if total == 0:
        return Verdict(Outcome.PASS, "p4review: no findings", 0)
    if fail_at is None:
        return Verdict(Outcome.PASS, f"p4review: {_plural(total, 'finding')}, never failing ({breakdown})", 0)
    threshold = fail_at.value if fail_at is Severity.CRITICAL else f"{fail_at.value} or above"
    if failing:
        verb = "is" if failing == 1 else "are"
        return Verdict(
            Outcome.FAIL,
            f"p4review: {failing} of {_plural(total, 'finding')} {verb} {threshold} ({breakdown})",
            failing,
        )
    return Verdict(Outcome.PASS, f"p4review: {_plural(total, 'finding')}, none {threshold} ({breakdown})", 0)


def callback_request(ref: SwarmTestRef, result: Verdict, link: str | None = None) -> CallbackRequest:
    """The one request that tells Swarm the verdict (Swarm 2022.1
    `module/TestIntegration/src/Controller/TestRunApi.php`).

    With Swarm's {update} URL (`updateWithUuid`): a JSON body `{"status": "pass"|"fail",
    "messages": [summary], "url": link}`, the only fields that URL accepts; it sets the status,
    the messages and the link at once. Without it, the {pass} or {fail} URL (`passOrFail`), which
    reads only `url`, from a form body or the query, and ignores a JSON body: the link goes as a
    form field and the summary cannot reach Swarm (the test definition should send {update})."""
    usable_link = link if link and len(link) <= MAX_LINK_CHARS else None
    if ref.update_url:
        payload: dict[str, object] = {"status": result.outcome.value, "messages": [_clip(result.summary)]}
        if usable_link:
            payload["url"] = usable_link
        return CallbackRequest(url=ref.update_url, body=json.dumps(payload, sort_keys=True).encode())
    url = ref.pass_url if result.outcome is Outcome.PASS else ref.fail_url
    body = urlencode({"url": usable_link}).encode() if usable_link else b""
    return CallbackRequest(url=url, body=body, headers={"Content-Type": FORM_CONTENT_TYPE})


def _clip(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= MAX_MESSAGE_CHARS else line[: MAX_MESSAGE_CHARS - 3] + "..."


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"

"""A Helix Swarm workflow test call becomes a review request (docs/swarm.md "Workflow test",
docs/trigger.md "Where review_version comes from"). Pure rules, no I/O: the token check, the
callback URL check, the mapping to review_version and what a same-version replay means here.

Mapping (Swarm review R, version N, {change} C, {status}):
  shelved    -> changelist R (the review's own change, which holds the version's shelf),
                kind shelved, review_version N
  submitted  -> changelist C (the committed change), kind submitted, review_version N,
                following shelf version N-1 of R when N > 1 (Swarm sends `submitted`,
                module/TestIntegration/src/Service/TestExecutor.php; `committed`, which
                earlier p4review releases documented, means the same)
  rerun = N > 1 (a version after the first is a versioned rerun, as the trigger's shelves are);
  idempotency key `swarm-test-R-vN`."""

from __future__ import annotations

import hmac
from collections.abc import Iterable
from dataclasses import replace

from p4review.ingest.intake import IntakeAnswer, IntakeOutcome, Replay
from p4review.models.api import CreateReviewRequest, FollowsShelf
from p4review.models.job import ChangeKind, SwarmTestRef
from p4review.models.swarm_test import SwarmChangeStatus, SwarmTestCall

TOKEN_HEADER = "X-P4Review-Swarm-Token"  # noqa: S105 - a header name
# The body field, for a Swarm whose test definitions cannot send headers.
TOKEN_FIELD = "token"  # noqa: S105 - a field name
MAX_TOKEN_CHARS = 256


def idempotency_key(review_id: int, version: int) -> str:
    return f"swarm-test-{review_id}-v{version}"


def token_matches(token: str, secrets: Iterable[str]) -> bool:
    """Whether `token` is one of `secrets` (current, then previous), compared in constant time
    for a given length. Every secret is compared, so the time does not say which one matched."""
    given = token.encode("utf-8", "surrogateescape")
    matched = False
    for secret in secrets:
        matched |= hmac.compare_digest(given, secret.strip().encode())
    return matched


def review_request_for(call: SwarmTestCall) -> CreateReviewRequest:
    """The review request a workflow test call stands for (the mapping above)."""
    shelved = call.status is SwarmChangeStatus.SHELVED
    follows = None
    if not shelved and call.version > 1:
        follows = FollowsShelf(changelist_id=call.review, review_version=call.version - 1)
    return CreateReviewRequest(
        idempotency_key=idempotency_key(call.review, call.version),
        changelist_id=call.review if shelved else call.change,
        review_version=call.version,
        kind=ChangeKind.SHELVED if shelved else ChangeKind.SUBMITTED,
        rerun=call.version > 1,
        follows_shelf=follows,
    )


def swarm_ref_for(call: SwarmTestCall) -> SwarmTestRef:
    return SwarmTestRef(
        review_id=call.review,
        version=call.version,
        change=call.change,
        status=call.status.value,
        pass_url=call.pass_url,
        fail_url=call.fail_url,
        update_url=call.update_url,
        test=call.test,
        test_run_id=call.test_run_id,
    )


def answer_for_swarm(answer: IntakeAnswer, ref: SwarmTestRef) -> IntakeAnswer:
    """A replay answers a Swarm call only when the job it names carries this review version's
    callbacks. The same (changelist, review_version) accepted first from elsewhere (the trigger,
    the CLI, another review) would never tell Swarm a verdict: refuse it, so the test shows it."""
    job = answer.job
    if answer.outcome is not IntakeOutcome.REPLAYED or job is None or answer.replay is not Replay.SAME_VERSION:
        return answer
    theirs = job.swarm_test
    if theirs is not None and (theirs.review_id, theirs.version) == (ref.review_id, ref.version):
        return answer
    return replace(
        answer,
        outcome=IntakeOutcome.VERSION_TAKEN,
        job=None,
        replay=None,
        message="this changelist version was already accepted from another source; its verdict cannot go to Swarm",
        details={"changelist_id": job.changelist_id, "review_version": job.review_version, "job_id": job.job_id},
    )

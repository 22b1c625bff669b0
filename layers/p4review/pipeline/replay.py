"""Operator replay of dead-lettered work (spec "Operator remediation and replay workflow").

Order for each dead-letter message, chosen so that no step can lose the work:

  1. parse the message (the runtime's envelope, or a bare StageMessage moved by SQS redrive);
  2. replay the job: ONE conditional write, dead_lettered -> in_progress, stage(s) pending with a
     fresh budget, audit event `replayed` carrying the operator's ticket and note;
  3. enqueue the StageMessage for the stage to restart at;
  4. record `replay_enqueued` on the job (so the same job is not replayed twice);
  5. only then delete the DLQ message.

The enqueue cannot come first: the runtime acks a message for a dead_lettered job as JOB_CLOSED.
If step 3 fails, the job is in_progress with a pending, untouched stage and no message: the DLQ
message is kept, and running the same redrive again is accepted (a "stranded" replay: last
audit event `replayed`, restart stage pending with 0 attempts) and enqueues the message.
Anything else that is not dead_lettered is refused, and its DLQ message is kept.

No boto3 here: `jobs_replay`, `queues` and `dead_letters` are the DAL objects
(`DataAccess.job_replay`, `.queues`, `.dead_letters`) or test doubles.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from p4review.errors import IllegalTransitionError, NotFoundError, P4ReviewError
from p4review.models.job import ReviewJob, StageName
from p4review.models.messages import StageMessage, decode_queue_body
from p4review.stores.replay_rules import replay_refusal, restart_stage

if TYPE_CHECKING:
    from p4review.models.messages import DeadLetter


# The only envelope fields an operator tool ever prints (they are sanitized by the runtime).
ENVELOPE_FIELDS = (
    "envelope_version",
    "error_class",
    "stage",
    "last_stack",
    "sanitized_context",
    "first_failure_at",
    "last_failure_at",
    "escalated",
)
BARE_FIELDS = ("schema_version", "job_id", "stage", "request_id")


@dataclass(frozen=True)
class ReplayTarget:
    """What a dead-letter message asks to replay. `error_class` is None for a bare message."""

    job_id: str
    stage: StageName
    error_class: str | None
    escalated: bool
    kind: str  # "envelope" | "bare"
    request_id: str | None = None
    changelist_id: int | None = None


def parse_dead_letter(body: dict[str, Any] | str | None) -> ReplayTarget | None:
    """Recognise the runtime's envelope (`envelope_version`, `stage`, `sanitized_context.job_id`)
    or a bare StageMessage (`schema_version`, `job_id`, `stage`). Anything else: None."""
    if isinstance(body, str):
        body = decode_queue_body(body)
    if not isinstance(body, dict):
        return None
    if "envelope_version" in body:
        context = body.get("sanitized_context")
        if not isinstance(context, dict):
            return None
        try:
            message = StageMessage(
                job_id=context.get("job_id"), stage=body.get("stage"), request_id=_short(context.get("request_id"))
            )
        except (ValueError, TypeError):
            return None
        changelist = context.get("changelist_id")
        return ReplayTarget(
            job_id=message.job_id,
            stage=message.stage,
            error_class=_short(body.get("error_class")),
            escalated=bool(body.get("escalated") or context.get("escalated")),
            kind="envelope",
            request_id=message.request_id,
            changelist_id=changelist if isinstance(changelist, int) else None,
        )
    if "job_id" in body and "stage" in body:
        try:
            message = StageMessage.model_validate(body)
        except ValueError:
            return None
        return ReplayTarget(
            job_id=message.job_id,
            stage=message.stage,
            error_class=None,
            escalated=False,
            kind="bare",
            request_id=message.request_id,
        )
    return None


def _short(value: Any) -> str | None:
    return value[:128] if isinstance(value, str) else None


# ---- redrive ------------------------------------------------------------------------------


class JobReplayPort(Protocol):
    def get_job(self, job_id: str) -> ReviewJob | None: ...

    def replay_stage(
        self, job_id: str, stage: StageName, *, actor: str, ticket: str | None, note: str | None, from_start: bool
    ) -> ReviewJob: ...

    def confirm_enqueued(self, job: ReviewJob, *, actor: str, stage: StageName) -> None: ...


class QueuesPort(Protocol):
    def send(self, message: StageMessage) -> None: ...


class DeadLettersPort(Protocol):
    def delete(self, stage: StageName, receipt_handle: str) -> None: ...

    def release(self, stage: StageName, receipt_handle: str) -> None: ...


@dataclass(frozen=True)
class RedriveOutcome:
    message_id: str
    dlq_stage: StageName
    result: str  # "replayed" | "would_replay" | "skipped" | "failed"
    reason: str = ""
    job_id: str | None = None
    stage: StageName | None = None
    restart_stage: StageName | None = None


@dataclass
class RedriveSummary:
    outcomes: list[RedriveOutcome] = field(default_factory=list)

    def _with(self, *results: str) -> list[RedriveOutcome]:
        return [outcome for outcome in self.outcomes if outcome.result in results]

    @property
    def replayed(self) -> list[RedriveOutcome]:
        return self._with("replayed", "would_replay")

    @property
    def skipped(self) -> list[RedriveOutcome]:
        return self._with("skipped")

    @property
    def failed(self) -> list[RedriveOutcome]:
        return self._with("failed")

    @property
    def ok(self) -> bool:
        return not self.skipped and not self.failed

    def as_dict(self) -> dict[str, Any]:
        def row(outcome: RedriveOutcome) -> dict[str, Any]:
            return {
                "message_id": outcome.message_id,
                "dlq_stage": outcome.dlq_stage.value,
                "job_id": outcome.job_id,
                "stage": outcome.stage.value if outcome.stage else None,
                "restart_stage": outcome.restart_stage.value if outcome.restart_stage else None,
                "result": outcome.result,
                "reason": outcome.reason,
            }

        return {
            "replayed": [row(o) for o in self.replayed],
            "skipped": [row(o) for o in self.skipped],
            "failed": [row(o) for o in self.failed],
        }


def redrive(
    targets: Iterable[DeadLetter],
    *,
    jobs_replay: JobReplayPort,
    queues: QueuesPort,
    dead_letters: DeadLettersPort,
    ticket: str | None,
    note: str | None,
    from_start: bool = False,
    dry_run: bool = False,
    actor: str,
    progress: Callable[[str], None] | None = None,
) -> RedriveSummary:
    """Replay each dead-letter message (see the module docstring for the order). A message that
    is skipped or fails is released (visible again at once) and never deleted."""
    if not dry_run and not (ticket and ticket.strip() and note and note.strip()):
        raise ValueError("a redrive records remediation evidence: ticket and note are required")
    items = list(targets)
    summary = RedriveSummary()
    for index, letter in enumerate(items, start=1):
        outcome = _redrive_one(
            letter,
            jobs_replay=jobs_replay,
            queues=queues,
            dead_letters=dead_letters,
            ticket=ticket,
            note=note,
            from_start=from_start,
            dry_run=dry_run,
            actor=actor,
        )
        summary.outcomes.append(outcome)
        if outcome.result != "replayed":
            _release(dead_letters, letter)
        if progress is not None:
            what = f"job {outcome.job_id}" if outcome.job_id else f"message {outcome.message_id}"
            stage = (outcome.stage or outcome.dlq_stage).value
            if outcome.restart_stage and outcome.restart_stage != outcome.stage:
                stage += f" (restart at {outcome.restart_stage.value})"
            line = f"[{index}/{len(items)}] {what} {stage} -> {outcome.result.replace('_', ' ')}"
            progress(line + (f": {outcome.reason}" if outcome.reason else ""))
    return summary


def _redrive_one(
    letter: DeadLetter,
    *,
    jobs_replay: JobReplayPort,
    queues: QueuesPort,
    dead_letters: DeadLettersPort,
    ticket: str | None,
    note: str | None,
    from_start: bool,
    dry_run: bool,
    actor: str,
) -> RedriveOutcome:
    base: dict[str, Any] = {"message_id": letter.message_id, "dlq_stage": letter.stage}
    target = parse_dead_letter(letter.body)
    if target is None:
        return RedriveOutcome(
            **base, result="skipped", reason="not a p4review envelope or stage message (kept in the DLQ)"
        )
    if target.stage != letter.stage:
        # The body is data, the queue a fact: a message in fetch's DLQ that claims to be review's
        # replays nothing (issue 27). It stays in the DLQ for an operator to look at.
        claimed = target.stage.value
        return RedriveOutcome(
            **base,
            job_id=target.job_id,
            stage=target.stage,
            result="skipped",
            reason=f"refused: the body says stage {claimed}, but it sits in the {letter.stage.value} DLQ",
        )
    restart = restart_stage(target.stage, from_start)
    base.update(job_id=target.job_id, stage=target.stage, restart_stage=restart)
    if dry_run:
        try:
            job = jobs_replay.get_job(target.job_id)
        except P4ReviewError as exc:
            return RedriveOutcome(**base, result="failed", reason=f"{exc.error_class.value}: {exc.message}")
        if job is None:
            return RedriveOutcome(**base, result="skipped", reason="refused: job not found")
        refusal = replay_refusal(job, target.stage, from_start)
        if refusal:
            return RedriveOutcome(**base, result="skipped", reason=f"refused: {refusal}")
        return RedriveOutcome(**base, result="would_replay", reason=f"would enqueue {restart.value}")
    try:
        job = jobs_replay.replay_stage(
            target.job_id, target.stage, actor=actor, ticket=ticket, note=note, from_start=from_start
        )
    except (IllegalTransitionError, NotFoundError) as exc:
        return RedriveOutcome(**base, result="skipped", reason=f"refused: {exc.message}")
    except P4ReviewError as exc:
        return RedriveOutcome(**base, result="failed", reason=f"replay: {exc.error_class.value}: {exc.message}")
    try:
        queues.send(StageMessage(job_id=target.job_id, stage=restart, request_id=target.request_id))
    except P4ReviewError as exc:
        return RedriveOutcome(
            **base,
            result="failed",
            reason=(
                f"job replayed but enqueue of {restart.value} failed ({exc.error_class.value}: {exc.message}); "
                "the DLQ message is kept: run the same redrive again to enqueue it"
            ),
        )
    try:
        jobs_replay.confirm_enqueued(job, actor=actor, stage=restart)
    except P4ReviewError:
        pass  # at worst a later redrive of a duplicate message enqueues once more (claims dedupe)
    try:
        dead_letters.delete(letter.stage, letter.receipt_handle)
    except P4ReviewError as exc:
        return RedriveOutcome(
            **base,
            result="failed",
            reason=(
                f"job replayed and {restart.value} enqueued, but deleting the DLQ message failed "
                f"({exc.error_class.value}: {exc.message}); a later redrive of it will be refused"
            ),
        )
    return RedriveOutcome(**base, result="replayed", reason="")


def _release(dead_letters: DeadLettersPort, letter: DeadLetter) -> None:
    try:
        dead_letters.release(letter.stage, letter.receipt_handle)
    except P4ReviewError:
        pass  # it becomes visible again when its visibility timeout runs out

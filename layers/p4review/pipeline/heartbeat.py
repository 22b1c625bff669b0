"""Keep a stage lease alive while the stage works, and let the work notice when it is gone
(spec "WorkQueue" lease model, WQ-5..WQ-7).

`Lease` is what the stage's work sees: it calls `lease.check()` immediately before each side
effect, so a worker that lost its lease stops before its next one. `Heartbeat` is the context
manager that renews the lease from a daemon thread every `lease_seconds / 3` and keeps the SQS
message invisible for as long as the lease lives.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from types import TracebackType

from p4review.clock import parse_iso, utc_now
from p4review.errors import LeaseLostError
from p4review.faults import FaultPoint, fault
from p4review.models.job import StageName
from p4review.observability import logger
from p4review.ports import JobRepository, StageQueues

# The skew budget (spec T-3). DynamoDB has no server clock: every lease timestamp is written and
# compared with the host's clock. All hosts are NTP-synced and we budget 2 s of skew between any
# two of them; a worker stops acting `CLOCK_SKEW_BUDGET_SECONDS` before its lease ends by its own
# clock, so a worker whose clock runs up to 2 s slow still stops before another worker whose clock
# is right can take the lease over.
CLOCK_SKEW_BUDGET_SECONDS = 2

# A heartbeat renews at this fraction of the lease (the spec recommends 1/3 to 1/2).
HEARTBEAT_FRACTION = 1 / 3
# After a transient renewal failure, retry this often (capped by the regular interval).
_RETRY_SECONDS = 1.0
# How long leaving the context waits for an in-flight renewal before giving up on the thread.
_JOIN_TIMEOUT_SECONDS = 5.0


def heartbeat_interval(lease_seconds: float) -> float:
    """lease / 3 (the spec's 1/3..1/2). Below 6 s a lease would spend most of its life inside the
    skew budget, so renew often enough that at least half of the usable part always remains."""
    return max(0.05, min(lease_seconds * HEARTBEAT_FRACTION, (lease_seconds - CLOCK_SKEW_BUDGET_SECONDS) / 2))


class Lease:
    """One worker's view of its lease on a job stage. Thread-safe: the heartbeat thread renews
    or loses it while the stage's work checks it."""

    def __init__(
        self,
        lease_expires_at: str | datetime,
        *,
        skew_budget_seconds: float = CLOCK_SKEW_BUDGET_SECONDS,
        clock: Callable[[], datetime] = utc_now,
    ):
        self._lock = threading.Lock()
        self._expires_at = parse_iso(lease_expires_at) if isinstance(lease_expires_at, str) else lease_expires_at
        self._margin = timedelta(seconds=skew_budget_seconds)
        self._clock = clock
        self._lost_reason: str | None = None

    @property
    def expires_at(self) -> datetime:
        with self._lock:
            return self._expires_at

    @property
    def lost(self) -> bool:
        """True once a heartbeat has established that the lease is gone (not merely running out)."""
        with self._lock:
            return self._lost_reason is not None

    def seconds_left(self) -> float:
        """Seconds this worker may still act (lease end minus the skew budget, by the local clock)."""
        with self._lock:
            return (self._expires_at - self._margin - self._clock()).total_seconds()

    def acts_until(self) -> datetime:
        """The moment (UTC) after which this worker may not act: lease end minus the skew budget."""
        with self._lock:
            return self._expires_at - self._margin

    def check(self) -> None:
        """Raise LeaseLostError unless this worker may still perform a side effect."""
        with self._lock:
            reason = self._lost_reason
            expires_at = self._expires_at
        if reason is not None:
            raise LeaseLostError(f"lease lost: {reason}")
        if expires_at - self._margin <= self._clock():
            raise LeaseLostError("lease expired (within the clock-skew budget of its end)")

    def renewed(self, lease_expires_at: str) -> None:
        with self._lock:
            if self._lost_reason is None:
                self._expires_at = max(self._expires_at, parse_iso(lease_expires_at))

    def mark_lost(self, reason: str) -> None:
        with self._lock:
            if self._lost_reason is None:
                self._lost_reason = reason


class Heartbeat:
    """`with Heartbeat(...) as lease:` renews the lease every `lease_seconds / 3` until the block
    ends. Each renewal is an owner-guarded write (`JobRepository.renew_lease`); when a receipt
    handle is known it also pushes the SQS message's visibility to the new lease + skew budget,
    so SQS does not hand the message to another worker while this one is healthy, and does hand
    it over soon after this one dies.

    A refused renewal (LeaseLostError) marks the lease lost at once and stops the thread.
    Transient failures are logged and retried until the lease would run out, then the lease is
    marked lost. The block's own code is not interrupted: it learns of the loss at its next
    `lease.check()`."""

    def __init__(
        self,
        lease: Lease,
        *,
        jobs: JobRepository,
        queues: StageQueues,
        job_id: str,
        stage: StageName,
        worker_id: str,
        lease_seconds: int,
        receipt_handle: str | None = None,
        interval_seconds: float | None = None,
    ):
        self.lease = lease
        self._jobs = jobs
        self._queues = queues
        self._job_id = job_id
        self._stage = stage
        self._worker_id = worker_id
        self._lease_seconds = lease_seconds
        self._receipt_handle = receipt_handle
        self._interval = interval_seconds if interval_seconds is not None else heartbeat_interval(lease_seconds)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.renewals = 0
        self._log = {"job_id": job_id, "stage": stage.value, "worker_id": worker_id}

    def __enter__(self) -> Lease:
        self._thread = threading.Thread(
            target=self._loop, name=f"heartbeat-{self._stage.value}-{self._job_id}", daemon=True
        )
        self._thread.start()
        return self.lease

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop()

    def stop(self) -> None:
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=_JOIN_TIMEOUT_SECONDS)
            if thread.is_alive():
                logger.warning("heartbeat thread did not stop in time; abandoning it", extra=self._log)

    def _loop(self) -> None:
        wait = self._interval
        while not self._stop.wait(wait):
            try:
                fault(FaultPoint.HEARTBEAT_LOSS)  # raises LeaseLostError when injected
                expires = self._jobs.renew_lease(self._job_id, self._stage, self._worker_id, self._lease_seconds)
            except LeaseLostError as exc:
                logger.warning("heartbeat refused: lease lost", extra=self._log)
                self.lease.mark_lost(str(exc))
                return
            except Exception as exc:  # noqa: BLE001 - transient until the lease runs out
                left = self.lease.seconds_left()
                logger.warning(
                    "heartbeat failed; retrying",
                    extra={**self._log, "error": type(exc).__name__, "seconds_left": round(left, 1)},
                )
                if left <= 0:
                    self.lease.mark_lost(f"heartbeat failed until the lease ran out ({type(exc).__name__})")
                    return
                wait = max(0.05, min(_RETRY_SECONDS, self._interval, left))
                continue
            self.lease.renewed(expires)
            self.renewals += 1
            wait = self._interval
            if self._receipt_handle is not None and not self._stop.is_set():
                self._extend_visibility()

    def _extend_visibility(self) -> None:
        assert self._receipt_handle is not None
        try:
            self._queues.delay(self._stage, self._receipt_handle, self._lease_seconds + CLOCK_SKEW_BUDGET_SECONDS)
        except Exception as exc:  # noqa: BLE001 - the lease, not the visibility, guards ownership
            # A redelivery to another worker meets a live lease (LEASE_HELD) and backs off.
            logger.warning("could not extend the message visibility", extra={**self._log, "error": type(exc).__name__})

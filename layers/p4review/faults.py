"""Named fault points for tests and the local stack only (never production).

Configured by ONE environment variable, e.g.

    P4REVIEW_FAULTS="after_claim=0.1,before_handoff=0.05,provider_transient=0.2;seed=42"

a probability in [0, 1] per point, then (optionally) `;seed=N` (default 0): each process draws
from one `random.Random(seed)`, so a run is reproducible. Faults are honoured only when
`P4REVIEW_ENV` is explicitly one of `FAULT_ENVIRONMENTS`; anywhere else a set `P4REVIEW_FAULTS`
makes loading raise `ConfigError`. Each handler calls `refuse_outside_test_environments()` at
import (cold start), before parsing its settings; loading settings never touches faults.

When no plan is configured, `fault()` / `fires()` return at their first line (no lookup, no lock).
"""

from __future__ import annotations

import os
import random
import threading
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from p4review.errors import ConfigError, LeaseLostError, StorageError

ENV_VAR = "P4REVIEW_FAULTS"
# The only environments in which fault injection is honoured (P4REVIEW_ENV must be set explicitly).
FAULT_ENVIRONMENTS = frozenset({"local", "test"})
_MAX_TOKEN_SHOWN = 60


class FaultPoint(StrEnum):
    AFTER_CLAIM = "after_claim"  # the stage was claimed; nothing done yet
    AFTER_SIDE_EFFECT = "after_side_effect"  # the work ran; the stage is not completed
    BEFORE_HANDOFF = "before_handoff"  # the stage is completed; the next stage is not enqueued
    HEARTBEAT_LOSS = "heartbeat_loss"  # the heartbeat's next renewal is treated as refused
    PROVIDER_TRANSIENT = "provider_transient"  # SMTP answers 451 (checked by SmtpSender.send)
    PROVIDER_PERMANENT = "provider_permanent"  # SMTP answers 550 (checked by SmtpSender.send)
    P4_TIMEOUT = "p4_timeout"  # the p4 call times out (checked by the p4 runner)
    DB_WRITE_AFTER_PROVIDER = "db_write_after_provider"  # the outbox mark after a sent email fails


CRASH_POINTS = frozenset({FaultPoint.AFTER_CLAIM, FaultPoint.AFTER_SIDE_EFFECT, FaultPoint.BEFORE_HANDOFF})
# Points the adapter answers itself (checked with fires()): an SMTP reply, or the p4 runner's
# own timeout error. So this module stays a leaf: it never imports the adapters it disturbs.
RESULT_POINTS = frozenset({FaultPoint.PROVIDER_TRANSIENT, FaultPoint.PROVIDER_PERMANENT, FaultPoint.P4_TIMEOUT})


class InjectedCrash(BaseException):
    """A killed process. Deliberately not an Exception: no `except Exception` in the runtime can
    catch it, so nothing is released or dead-lettered; the message comes back after its
    visibility timeout and the stage after its lease expires."""

    def __init__(self, point: FaultPoint):
        super().__init__(f"injected crash at {point.value}")
        self.point = point


@dataclass
class FaultPlan:
    probabilities: dict[FaultPoint, float]
    seed: int = 0
    _rng: random.Random = field(init=False, repr=False)
    _lock: threading.Lock = field(init=False, repr=False, default_factory=threading.Lock)
    _fired: Counter[str] = field(init=False, repr=False, default_factory=Counter)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    def roll(self, point: FaultPoint) -> bool:
        probability = self.probabilities.get(point)
        if not probability:
            return False
        with self._lock:
            hit = self._rng.random() < probability
            if hit:
                self._fired[point.value] += 1
        return hit

    def fired(self) -> dict[str, int]:
        with self._lock:
            return dict(self._fired)


_UNLOADED = object()
_plan: FaultPlan | None | object = _UNLOADED


def _shown(token: str) -> str:
    return repr(token if len(token) <= _MAX_TOKEN_SHOWN else token[:_MAX_TOKEN_SHOWN] + "...")


def parse(spec: str) -> FaultPlan | None:
    """Parse the variable's value strictly; a blank value means no faults."""
    if not spec.strip():
        return None
    points_part, *options = spec.split(";")
    probabilities: dict[FaultPoint, float] = {}
    for token in (part.strip() for part in points_part.split(",")):
        if not token:
            continue
        name, sep, value = token.partition("=")
        try:
            point = FaultPoint(name.strip())
        except ValueError:
            raise ConfigError(f"{ENV_VAR}: unknown fault point in {_shown(token)}") from None
        if not sep:
            raise ConfigError(f"{ENV_VAR}: missing probability in {_shown(token)}")
        try:
            probability = float(value.strip())
        except ValueError:
            raise ConfigError(f"{ENV_VAR}: invalid probability in {_shown(token)}") from None
        if not 0.0 <= probability <= 1.0:  # also rejects nan
            raise ConfigError(f"{ENV_VAR}: probability outside [0, 1] in {_shown(token)}")
        if point in probabilities:
            raise ConfigError(f"{ENV_VAR}: fault point given twice in {_shown(token)}")
        probabilities[point] = probability
    seed = 0
    for token in (part.strip() for part in options):
        if not token:
            continue
        name, sep, value = token.partition("=")
        if name.strip() != "seed" or not sep:
            raise ConfigError(f"{ENV_VAR}: unknown option {_shown(token)}")
        try:
            seed = int(value.strip())
        except ValueError:
            raise ConfigError(f"{ENV_VAR}: invalid seed in {_shown(token)}") from None
    return FaultPlan(probabilities, seed)


def load(environ: Mapping[str, str] | None = None) -> FaultPlan | None:
    """Read `P4REVIEW_FAULTS` (guarded by `P4REVIEW_ENV`) and install the process's plan."""
    global _plan
    environ = os.environ if environ is None else environ
    spec = environ.get(ENV_VAR)
    if spec is None or not spec.strip():
        _plan = None
        return None
    environment = environ.get("P4REVIEW_ENV")
    if environment not in FAULT_ENVIRONMENTS:
        # Name only the variable, never its content or anything else of the environment.
        _plan = None
        raise ConfigError(
            f"{ENV_VAR} is set but fault injection is only allowed when P4REVIEW_ENV is one of "
            f"{sorted(FAULT_ENVIRONMENTS)}"
        )
    plan = parse(spec)
    _plan = plan
    return plan


def refuse_outside_test_environments(environ: Mapping[str, str] | None = None) -> FaultPlan | None:
    """The cold-start check of every function (its handler module calls it at import): install the
    plan from the environment, so a `P4REVIEW_FAULTS` outside `FAULT_ENVIRONMENTS` fails the cold
    start with ConfigError naming the variable (not at the first fault check, mid-job)."""
    return load(environ)


def reset() -> None:
    """Forget the plan (and its counters); the next check reloads it from the environment."""
    global _plan
    _plan = _UNLOADED


def _current() -> FaultPlan | None:
    plan = _plan
    if plan is _UNLOADED:
        plan = load()
    return plan  # type: ignore[return-value]


def fires(point: FaultPoint) -> bool:
    """Roll the dice for `point` (counting a hit). For points whose effect is not an exception."""
    if _plan is None:
        return False
    plan = _current()
    return plan is not None and plan.roll(point)


def fault(point: FaultPoint) -> None:
    """Raise `point`'s effect when it fires; return at once when fault injection is off."""
    if _plan is None:
        return
    if point in RESULT_POINTS:
        raise ValueError(f"fault point {point.value} has no exception effect; use fires()")
    if fires(point):
        raise effect(point)


def effect(point: FaultPoint) -> BaseException:
    if point in CRASH_POINTS:
        return InjectedCrash(point)
    if point == FaultPoint.DB_WRITE_AFTER_PROVIDER:
        return StorageError("outbox write failed (injected fault)")
    if point == FaultPoint.HEARTBEAT_LOSS:
        return LeaseLostError("heartbeat refused (injected fault)")
    # RESULT_POINTS: the adapter answers (SmtpSender.send, the p4 runner; see fires()).
    return ValueError(f"fault point {point.value} has no exception effect; use fires()")


def fired() -> dict[str, int]:
    """How often each point fired in this process since the plan was loaded."""
    plan = _plan
    return plan.fired() if isinstance(plan, FaultPlan) else {}

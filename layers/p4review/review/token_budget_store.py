"""The LLM token budget shared by every review worker: one item in the jobs table per provider
and model (docs/capacity.md "The token budget").

  TPM#<provider>#<model>   tat_ms: the GCRA's theoretical arrival time (p4review.review.token_budget)

The item never carries `active_job`, so the sweeper's sparse index never sees it, and its
`expires_at` stays `EXPIRY_MARGIN_SECONDS` past the latest moment its `tat_ms` matters: an idle
budget is deleted by DynamoDB's TTL (a missing item is a full bucket, which is what it means).

Every change is one conditional UpdateItem with arithmetic on `tat_ms`, so concurrent workers
never lose each other's reservations and nothing is read first. The condition picks one of two
forms: the bucket has refilled (`tat_ms <= now`: start from now) or requests are queued (`tat_ms >
now`: add to it); a refused condition returns the item, which says which form applies, or that
the tokens would come too late."""

from __future__ import annotations

import math
from typing import Any

from p4review.clock import utc_now
from p4review.errors import StorageError
from p4review.ports import TokenGrant
from p4review.resources import RETENTION_TTL_ATTRIBUTE
from p4review.review.token_budget import (
    cost_ms,
    held_off_tat_ms,
    latest_tat_ms,
    wait_ms_after,
)
from p4review.stores.dynamo_codec import to_value
from p4review.stores.dynamo_writes import ConditionFailed, conditional_update

BUDGET_PK_PREFIX = "TPM#"
RECORD_TYPE = "token_budget"
# The item outlives its last meaningful moment by this much (TTL deletes late anyway).
EXPIRY_MARGIN_SECONDS = 600
# Each refused condition says which form applies next; only a race can flip it again.
_FORM_RETRIES = 8

_REFILLED = "attribute_not_exists(#tat) OR #tat <= :now"


def budget_pk(provider: str, model: str) -> str:
    return f"{BUDGET_PK_PREFIX}{provider}#{model}"


def _now_ms() -> int:
    return math.floor(utc_now().timestamp() * 1000)


def _tat_of(item: dict[str, Any]) -> int | None:
    value = item.get("tat_ms", {}).get("N")
    return int(value) if value is not None else None


class DynamoTokenBudget:
    def __init__(self, client: Any, table_name: str, *, provider: str, model: str, tokens_per_minute: int):
        if tokens_per_minute <= 0:
            raise ValueError("tokens_per_minute must be positive")
        self._client = client
        self._table = table_name
        self._key = {"pk": to_value(budget_pk(provider, model))}
        self.tokens_per_minute = tokens_per_minute
        self._queued_last = False  # the form that applied last time: the likelier one now

    def reserve(self, tokens: int, max_wait_seconds: float) -> TokenGrant:
        now = _now_ms()
        cost = cost_ms(tokens, self.tokens_per_minute)
        latest = latest_tat_ms(now, cost, math.floor(max_wait_seconds * 1000))
        # The item lives until its furthest possible tat is well past.
        expires = (latest + cost) // 1000 + EXPIRY_MARGIN_SECONDS
        queued = self._queued_last
        for _ in range(_FORM_RETRIES):
            try:
                if queued:
                    tat = self._update(
                        "SET #tat = #tat + :cost",
                        "#tat > :now AND #tat <= :latest",
                        {":cost": cost, ":now": now, ":latest": latest},
                        expires,
                    )
                else:
                    tat = self._update("SET #tat = :tat", _REFILLED, {":tat": now + cost, ":now": now}, expires)
            except ConditionFailed as refused:
                observed = _tat_of(refused.old_item)
                if observed is not None and observed > latest:
                    return TokenGrant(granted=False, wait_seconds=(observed - latest) / 1000)
                queued = observed is not None and observed > now
                continue
            self._queued_last = queued
            return TokenGrant(granted=True, wait_seconds=wait_ms_after(tat, now) / 1000)
        raise StorageError("token budget: the reservation kept racing other workers")

    def settle(self, reserved: int, used: int) -> None:
        delta = cost_ms(used, self.tokens_per_minute) - cost_ms(reserved, self.tokens_per_minute)
        if delta == 0:
            return
        now = _now_ms()
        if delta > 0:
            # Charge: add to a queue (its item already outlives it by the margin), or start one from now.
            expires = (now + delta) // 1000 + EXPIRY_MARGIN_SECONDS
            for _ in range(_FORM_RETRIES):
                try:
                    self._update("SET #tat = #tat + :cost", "#tat > :now", {":cost": delta, ":now": now}, None)
                    return
                except ConditionFailed:
                    pass
                try:
                    self._update("SET #tat = :tat", _REFILLED, {":tat": now + delta, ":now": now}, expires)
                    return
                except ConditionFailed:
                    continue
            raise StorageError("token budget: the settlement kept racing other workers")
        # Give back, never filling the bucket past full (tat not below now).
        refund = -delta
        try:
            self._update(
                "SET #tat = #tat - :refund", "#tat >= :floor", {":refund": refund, ":floor": now + refund}, None
            )
            return
        except ConditionFailed:
            pass
        try:
            self._update(
                "SET #tat = :now", "#tat > :now AND #tat < :floor", {":now": now, ":floor": now + refund}, None
            )
        except ConditionFailed:
            return  # the bucket has refilled by itself meanwhile: nothing to give back

    def hold_off(self, seconds: float) -> None:
        held = held_off_tat_ms(_now_ms(), seconds)
        try:
            self._update(
                "SET #tat = :held",
                "attribute_not_exists(#tat) OR #tat < :held",
                {":held": held},
                held // 1000 + EXPIRY_MARGIN_SECONDS,
            )
        except ConditionFailed:
            return  # held off until later already

    def _update(self, assignment: str, condition: str, values: dict[str, int], expires: int | None) -> int:
        """Apply one form; returns the new tat_ms. `expires`: also (re)set the TTL and record type."""
        update = assignment
        encoded = {name: to_value(value) for name, value in values.items()}
        names = {"#tat": "tat_ms"}
        if expires is not None:
            update += ", #expires = :expires, #type = :type"
            encoded.update({":expires": to_value(expires), ":type": to_value(RECORD_TYPE)})
            names.update({"#expires": RETENTION_TTL_ATTRIBUTE, "#type": "record_type"})
        attributes = conditional_update(
            self._client,
            table=self._table,
            key=self._key,
            update=update,
            condition=condition,
            names=names,
            values=encoded,
            operation="token budget",
        )
        tat = _tat_of(attributes)
        assert tat is not None  # every form sets it
        return tat

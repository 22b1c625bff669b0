"""Which prompt version reviews a changelist (spec "Rollout strategy", docs/rollout.md).

A canary version serves `canary_percent` of changelists, chosen by a stable hash of the
changelist id and the canary version: every review version of a changelist, every retry and
every worker picks the same track, and a new canary version draws a fresh slice."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from p4review.review.metric_tracks import TRACK_CANARY, TRACK_STABLE
from p4review.review.prompts import PromptRegistry, PromptTemplate

_BUCKETS = 10_000  # 0.01% granularity


def rollout_bucket(changelist_id: int, canary_version: str) -> int:
    digest = hashlib.sha256(f"{canary_version}\x00{changelist_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % _BUCKETS


@dataclass(frozen=True)
class PromptChoice:
    template: PromptTemplate
    track: str  # TRACK_STABLE | TRACK_CANARY

    @property
    def version(self) -> str:
        return self.template.version


def choose_prompt(registry: PromptRegistry, changelist_id: int) -> PromptChoice:
    canary = registry.canary
    if canary and canary != registry.stable and registry.canary_percent > 0:
        if rollout_bucket(changelist_id, canary) < registry.canary_percent * _BUCKETS / 100:
            return PromptChoice(registry.template(canary), TRACK_CANARY)
    return PromptChoice(registry.template(registry.stable), TRACK_STABLE)

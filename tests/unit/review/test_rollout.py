"""Prompt rollout: a canary serves its configured share of changelists, chosen by a stable hash."""

from __future__ import annotations

import pytest

from p4review.review.metric_tracks import TRACK_CANARY, TRACK_STABLE
from p4review.review.prompts import load_registry
from p4review.review.rollout import choose_prompt, rollout_bucket

REGISTRY = load_registry()


def with_canary(percent: float):
    return REGISTRY.with_overrides(stable="1.2.0", canary="1.3.0", canary_percent=percent)


def test_shipped_registry_serves_everything_from_the_stable_version():
    assert {choose_prompt(REGISTRY, cl).track for cl in range(1, 2000)} == {TRACK_STABLE}
    assert choose_prompt(REGISTRY, 1).version == REGISTRY.stable


@pytest.mark.spec("PR-16")
def test_canary_share_is_close_to_the_configured_percentage():
    registry = with_canary(10)
    canary = sum(choose_prompt(registry, cl).track == TRACK_CANARY for cl in range(1, 20_001))
    assert 1_800 <= canary <= 2_200  # 10% of 20,000 +- 10%


@pytest.mark.spec("PR-16")
def test_choice_is_stable_for_a_changelist_and_grows_monotonically():
    small, large = with_canary(5), with_canary(50)
    for cl in range(1, 3000):
        assert choose_prompt(small, cl) == choose_prompt(small, cl)
        if choose_prompt(small, cl).track == TRACK_CANARY:
            # Raising the percentage never moves a canary changelist back to stable.
            assert choose_prompt(large, cl).track == TRACK_CANARY


def test_zero_and_hundred_percent():
    assert {choose_prompt(with_canary(0), cl).version for cl in range(1, 500)} == {"1.2.0"}
    assert {choose_prompt(with_canary(100), cl).version for cl in range(1, 500)} == {"1.3.0"}


def test_a_new_canary_version_draws_a_different_slice():
    first = {cl for cl in range(1, 5000) if rollout_bucket(cl, "1.3.0") < 1000}
    second = {cl for cl in range(1, 5000) if rollout_bucket(cl, "1.4.0") < 1000}
    assert first != second

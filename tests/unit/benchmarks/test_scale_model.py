"""The capacity and cost model (benchmarks/scale.py, docs/capacity.md): the burst simulation runs
in simulated time, is deterministic for a seed, and the token budget turns the 429s of a burst
into waiting; the cost model and the limits scale as they should."""

from __future__ import annotations

import pytest

from benchmarks.scale import (
    LLM_PRICES,
    ReviewProfile,
    StageModel,
    burst_table,
    daily_costs,
    limits_at,
    memory_gb,
)

# A small burst against a small limit: W=32 asks for far more than 120k TPM.
SMALL = StageModel(changes=150, burst_seconds=60.0)
TIERS = {"120k": 120_000}


@pytest.mark.spec("CAP-4")
def test_the_burst_simulation_is_deterministic_for_a_seed():
    first = burst_table(5, stage=SMALL, tiers=TIERS, workers=(2, 32))
    again = burst_table(5, stage=SMALL, tiers=TIERS, workers=(2, 32))
    assert first[1] == again[1]
    assert [job.requests for job in first[0]] == [job.requests for job in again[0]]
    assert burst_table(6, stage=SMALL, tiers=TIERS, workers=(2,))[1] != first[1][:2]


@pytest.mark.spec("CAP-4")
def test_with_the_token_budget_a_burst_waits_instead_of_burning_attempts_on_429s():
    _, results = burst_table(5, stage=SMALL, tiers=TIERS, workers=(32,))
    without, with_budget = (r for r in results if r.workers == 32)
    assert not without.budget and with_budget.budget
    assert without.rate_limited > 0 and without.dead_letters > 0  # the storm the issue describes
    assert with_budget.rate_limited < without.rate_limited
    assert with_budget.dead_letters == 0
    # Waiting in place costs Lambda seconds, not reviews.
    assert with_budget.review_seconds_per_job > without.review_seconds_per_job


def test_more_workers_drain_a_burst_sooner_while_the_limit_is_not_reached():
    _, results = burst_table(5, stage=SMALL, tiers={"plenty": 50_000_000}, workers=(2, 8))
    by_workers = {r.workers: r for r in results if r.budget}
    assert by_workers[8].drain_minutes < by_workers[2].drain_minutes
    assert by_workers[8].oldest_minutes < by_workers[2].oldest_minutes
    assert all(r.rate_limited == 0 for r in results)


PROFILE = ReviewProfile(input_tokens=5_000, output_tokens=500, chunks=1.0, review_seconds=12.0)


@pytest.mark.spec("CAP-4")
def test_llm_costs_are_the_list_prices_times_the_tokens():
    costs = daily_costs(
        1_000, PROFILE, memory={name: 0.5 for name in ("ingest", "fetch", "review", "notify", "sweeper")}
    )
    gpt, sonnet = (costs[f"llm: {price.name}"] for price in LLM_PRICES)
    assert gpt == pytest.approx(1_000 * (5_000 * 2.00 + 500 * 8.00) / 1e6)
    assert sonnet == pytest.approx(1_000 * (5_000 * 3.00 + 500 * 15.00) / 1e6)
    tenfold = daily_costs(
        10_000, PROFILE, memory={name: 0.5 for name in ("ingest", "fetch", "review", "notify", "sweeper")}
    )
    assert tenfold["lambda"] > 9 * costs["lambda"]  # grows with changes; the sweeper is fixed


def test_the_function_memory_is_read_from_the_stack():
    memory = memory_gb()
    assert set(memory) >= {"ingest", "fetch", "review", "notify", "sweeper"}
    assert all(0.125 <= gb <= 10 for gb in memory.values())


def test_a_limit_is_reached_at_a_volume_that_does_not_depend_on_the_size_asked_about():
    at_small = {limit.name: limit.breaks_at(1_000) for limit in limits_at(1_000, PROFILE)}
    at_large = {limit.name: limit.breaks_at(100_000) for limit in limits_at(100_000, PROFILE)}
    assert at_small == pytest.approx(at_large)
    tier_2 = next(limit for limit in limits_at(100_000, PROFILE) if limit.name == "LLM TPM, tier 2")
    assert tier_2.use > 1  # 100k changes a day of 5.5k tokens outgrow 450k TPM

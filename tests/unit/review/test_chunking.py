"""Chunking a change into whole-file chunks within a token budget; merging chunk findings;
noise controls per depot-path prefix."""

from __future__ import annotations

import pytest

from p4review.errors import ConfigError
from p4review.models.review_result import Finding
from p4review.review.chunking import (
    SKIP_BUDGET_EXHAUSTED,
    SKIP_TOO_LARGE,
    Chunk,
    ChunkFile,
    plan_chunks,
)
from p4review.review.findings_merge import merge_findings
from p4review.review.noise import apply_noise_policy, parse_noise_policy


def files(*sizes: int) -> list[ChunkFile]:
    return [ChunkFile(depot_path=f"//depot/f{i}.c", section=f"s{i}", tokens=size) for i, size in enumerate(sizes)]


def test_files_are_packed_in_order_without_splitting_a_file():
    plan = plan_chunks(files(40, 40, 40, 90, 10), chunk_tokens=100, job_tokens=1000)
    assert [c.paths for c in plan.chunks] == [
        ["//depot/f0.c", "//depot/f1.c"],
        ["//depot/f2.c"],
        ["//depot/f3.c", "//depot/f4.c"],
    ]
    assert all(c.tokens <= 100 for c in plan.chunks)
    assert plan.skipped == []


def test_a_file_over_the_chunk_budget_is_skipped_as_too_large_and_the_job_budget_is_enforced():
    plan = plan_chunks(files(30, 500, 30, 30, 30), chunk_tokens=100, job_tokens=70)
    assert plan.skipped == [
        ("//depot/f1.c", SKIP_TOO_LARGE),
        ("//depot/f3.c", SKIP_BUDGET_EXHAUSTED),
        ("//depot/f4.c", SKIP_BUDGET_EXHAUSTED),
    ]
    assert [c.paths for c in plan.chunks] == [["//depot/f0.c", "//depot/f2.c"]]


def test_every_file_is_either_in_exactly_one_chunk_or_skipped():
    sizes = [7, 300, 55, 55, 1, 99, 100, 101, 42] * 5
    plan = plan_chunks(files(*sizes), chunk_tokens=100, job_tokens=1200)
    chunked = [p for c in plan.chunks for p in c.paths]
    skipped = [p for p, _ in plan.skipped]
    assert sorted(chunked + skipped) == sorted(f.depot_path for f in files(*sizes))
    assert len(set(chunked)) == len(chunked)
    assert sum(c.tokens for c in plan.chunks) <= 1200


def test_chunk_id_depends_on_content_and_reviewer_fingerprint():
    chunk = Chunk(tuple(files(10, 20)))
    assert chunk.chunk_id("a") == Chunk(tuple(files(10, 20))).chunk_id("a")
    assert chunk.chunk_id("a") != chunk.chunk_id("b")
    changed = Chunk((chunk.files[0], ChunkFile(depot_path="//depot/f1.c", section="other", tokens=20)))
    assert changed.chunk_id("a") != chunk.chunk_id("a")
    left, right = chunk.halves()
    assert left.paths + right.paths == chunk.paths


def finding(fid: str, file: str, line: int, severity: str = "medium", title: str = "T", **extra) -> Finding:
    return Finding(
        id=fid, severity=severity, category="correctness", title=title, file=file, line=line, message="m", **extra
    )


def test_merge_removes_duplicates_keeps_the_more_severe_and_makes_ids_unique():
    a = [finding("F1", "//d/b.c", 3, "low", "Null  deref"), finding("F2", "//d/a.c", 9)]
    b = [finding("F1", "//d/b.c", 3, "high", "null deref"), finding("F1", "//d/b.c", 7)]
    merged, duplicates = merge_findings([a, b], file_order=["//d/a.c", "//d/b.c"])
    assert duplicates == 1
    assert [(f.file, f.line, f.severity.value) for f in merged] == [
        ("//d/a.c", 9, "medium"),
        ("//d/b.c", 3, "high"),
        ("//d/b.c", 7, "medium"),
    ]
    assert len({f.id for f in merged}) == 3


def test_noise_policy_longest_prefix_wins_and_counts_what_it_suppresses():
    rules = parse_noise_policy(
        '[{"prefix": "//d/...", "min_severity": "medium", "max_findings": 2},'
        ' {"prefix": "//d/tests/...", "min_confidence": "high"}]'
    )
    found = [
        finding("a", "//d/x.c", 1, "low"),
        finding("b", "//d/x.c", 2, "high"),
        finding("c", "//d/x.c", 3, "medium"),
        finding("d", "//d/x.c", 4, "critical"),
        finding("e", "//d/tests/t.c", 1, "low", confidence="high"),
        finding("f", "//d/tests/t.c", 2, "high"),
        finding("g", "//other/y.c", 1, "info"),
    ]
    outcome = apply_noise_policy(found, rules)
    assert [f.id for f in outcome.kept] == ["b", "d", "e", "g"]
    assert outcome.suppressed == {"below_min_severity": 1, "over_max_findings": 1, "below_min_confidence": 1}


@pytest.mark.parametrize(
    "value",
    [
        "{}",
        '[{"prefix": ""}]',
        '[{"prefix": "//d/...", "min_severity": "huge"}]',
        "not json",
        '[{"prefix": "//d/...", "colour": 1}]',
    ],
)
def test_invalid_noise_policy_is_a_config_error(value):
    with pytest.raises(ConfigError):
        parse_noise_policy(value)

"""benchmarks/review_quality.py: the reversed-fix data set and how findings are scored."""

from __future__ import annotations

import re

import pytest

from benchmarks.review_quality import Located, language, load_cases, score_case


@pytest.mark.spec("RV-10")
def test_every_case_is_a_cited_public_commit_with_its_defects_on_its_files():
    cases = load_cases()
    assert len(cases) >= 30
    for case in cases:
        assert re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+/commit/[0-9a-f]{40}", case["source"])
        assert case["defects"] and case["diff"].startswith("diff --git ")
        assert all(d["file"] in case["files"] for d in case["defects"])
    assert {language(c) for c in cases} == {"C", "Python", "shell", "JavaScript", "config"}


def test_each_split_covers_every_language_and_fresh_comes_from_repositories_not_used_before():
    cases = load_cases()
    splits = {c.get("split", "dev") for c in cases}
    assert splits == {"dev", "test", "fresh"}
    for split in splits:
        in_split = [c for c in cases if c.get("split", "dev") == split]
        assert {language(c) for c in in_split} == {"C", "Python", "shell", "JavaScript", "config"}
    repositories = {split: {c["id"].split("@")[0] for c in cases if c.get("split", "dev") == split} for split in splits}
    assert len(repositories["fresh"]) == 10
    assert not repositories["fresh"] & (repositories["dev"] | repositories["test"])


CASE = {
    "files": {"a.c": ""},
    "defects": [{"file": "a.c", "lines": [10, 11]}, {"file": "a.c", "lines": [], "removal_at": 40}],
}


@pytest.mark.spec("RV-10")
def test_a_finding_hits_a_defect_within_three_lines_on_its_file():
    score = score_case(CASE, [Located("a.c", 14), Located("a.c", 43), Located("a.c", 20), Located("b.c", 10)])
    assert (score.defects, score.hit, score.findings, score.true_findings) == (2, 2, 4, 2)
    assert (score.recall, score.precision) == (1.0, 0.5)
    nothing = score_case(CASE, [])
    assert (nothing.recall, nothing.precision) == (0.0, None)
    ranged = score_case(CASE, [Located("a.c", 1, end_line=7)])  # a range reaching within 3 lines
    assert ranged.hit == 1

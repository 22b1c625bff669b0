"""Merge the findings of a change's chunks into one list (pure).

Chunks hold disjoint files, but a model may repeat itself within an answer (two ids for the
same problem) and a split-and-retry can review a file twice; findings with the same file,
line, category and title (case and spacing folded) are one finding, the more severe kept.
Ids are made unique across chunks, and the order is the change's file order, then line."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from p4review.models.finding_labels import SEVERITY_ORDER
from p4review.models.review_result import Finding

_SPACES = re.compile(r"\s+")


def _key(finding: Finding) -> tuple[str, int, str, str]:
    title = _SPACES.sub(" ", finding.title).strip().casefold()
    return finding.file, finding.line, finding.category.value, title


def severity_rank(finding: Finding) -> int:
    return SEVERITY_ORDER.index(finding.severity)


def merge_findings(per_chunk: Iterable[Sequence[Finding]], file_order: Sequence[str]) -> tuple[list[Finding], int]:
    """-> (merged findings, number of duplicates removed)."""
    best: dict[tuple[str, int, str, str], Finding] = {}
    duplicates = 0
    for findings in per_chunk:
        for finding in findings:
            key = _key(finding)
            kept = best.get(key)
            if kept is None:
                best[key] = finding
                continue
            duplicates += 1
            if severity_rank(finding) < severity_rank(kept):
                best[key] = finding
    position = {path: index for index, path in enumerate(file_order)}
    merged = sorted(
        best.values(), key=lambda f: (position.get(f.file, len(position)), f.file, f.line, severity_rank(f), f.id)
    )
    seen: set[str] = set()
    unique: list[Finding] = []
    for finding in merged:
        finding_id, n = finding.id, 2
        while finding_id in seen:
            finding_id, n = f"{finding.id}-{n}", n + 1
        seen.add(finding_id)
        unique.append(finding if finding_id == finding.id else finding.model_copy(update={"id": finding_id}))
    return unique, duplicates


def _overlaps(a: Finding, b: Finding) -> bool:
    return a.file == b.file and a.line <= (b.end_line or b.line) and b.line <= (a.end_line or a.line)


def merge_analyzer_findings(
    reviewer_findings: Sequence[Finding], analyzer_findings: Sequence[Finding]
) -> tuple[list[Finding], int]:
    """The reviewer's findings plus the analyzers', one finding per problem: a reviewer finding
    on the same file, overlapping lines and in the same category as an analyzer finding is the
    same problem, so only the analyzer's is kept (it names its rule) at the more severe of the
    two severities. -> (findings, number of reviewer findings merged away)."""
    kept: list[Finding] = []
    merged = 0
    analyzers = list(analyzer_findings)
    for finding in reviewer_findings:
        twin = next((a for a in analyzers if a.category == finding.category and _overlaps(a, finding)), None)
        if twin is None:
            kept.append(finding)
            continue
        merged += 1
        if severity_rank(finding) < severity_rank(twin):
            analyzers[analyzers.index(twin)] = twin.model_copy(update={"severity": finding.severity})
    return kept + analyzers, merged

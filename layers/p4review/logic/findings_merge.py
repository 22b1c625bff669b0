"""Merge the findings of a change's chunks into one list (pure).

Chunks hold disjoint files, but a model may repeat itself within an answer (two ids for the
same problem) and a split-and-retry can review a file twice; findings with the same file,
line, category and title (case and spacing folded) are one finding, the more severe kept.
Ids are made unique across chunks, and the order is the change's file order, then line."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from p4review.models.review_result import SEVERITY_ORDER, Finding

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

"""Caps on what one answer and one review version may hold (docs/review.md "Caps").

A model can answer with hundreds of findings or with megabytes in a field; every comment, task,
email and stored document grows with it. So each finding's text fields are cut at a length with a
visible marker, and a version keeps its `limit` most severe findings (ties in their order: the
change's file order, then line). What was left out is counted, never silently dropped: the
email, the Swarm summary and the job say so. Pure."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from p4review.models.review_result import Diagnostic, Finding, FindingsCut, ParseOutcome
from p4review.review.findings_merge import severity_rank

TRUNCATION_MARK = " [... truncated]"
# Characters per field, the marker included; the prompt asks for far less (a title of at most 80).
FIELD_CHARS: dict[str, int] = {"id": 64, "title": 200, "message": 1500, "suggestion": 600, "rule_id": 100}
SUMMARY_CHARS = 1000
MAX_DIAGNOSTICS = 100  # per answer; the rest are counted in one warning
DIAGNOSTICS_CAPPED = "diagnostics_capped"


@dataclass
class CutCount:
    """What was left out so far: findings over a cap (by severity) and fields cut."""

    by_severity: Counter[str] = field(default_factory=Counter)
    fields_truncated: int = 0

    def add(self, other: CutCount) -> None:
        self.by_severity.update(other.by_severity)
        self.fields_truncated += other.fields_truncated

    def as_model(self, limit: int) -> FindingsCut | None:
        if not self.by_severity and not self.fields_truncated:
            return None
        return FindingsCut(
            limit=limit,
            findings_not_shown=sum(self.by_severity.values()),
            by_severity=dict(sorted(self.by_severity.items())),
            fields_truncated=self.fields_truncated,
        )

    def to_json(self) -> dict[str, object]:
        return {"by_severity": dict(self.by_severity), "fields_truncated": self.fields_truncated}

    @classmethod
    def from_json(cls, document: object) -> CutCount:
        if not isinstance(document, dict):
            return cls()
        return cls(Counter(document.get("by_severity") or {}), int(document.get("fields_truncated") or 0))


def cut_text(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - len(TRUNCATION_MARK)].rstrip() + TRUNCATION_MARK


def bounded_finding(finding: Finding) -> tuple[Finding, int]:
    """The finding with each text field at most its cap, and how many fields were cut."""
    changes: dict[str, str] = {}
    for name, limit in FIELD_CHARS.items():
        value = getattr(finding, name)
        if isinstance(value, str) and len(value) > limit:
            changes[name] = cut_text(value, limit)
    return (finding.model_copy(update=changes), len(changes)) if changes else (finding, 0)


def most_severe(findings: Sequence[Finding], limit: int) -> tuple[list[Finding], list[Finding]]:
    """(the `limit` most severe findings in their original order, the rest). Deterministic:
    a stable sort on severity, so equal severities keep the order they came in."""
    if len(findings) <= limit:
        return list(findings), []
    ranked = sorted(range(len(findings)), key=lambda i: severity_rank(findings[i]))
    keep = set(ranked[:limit])
    return [f for i, f in enumerate(findings) if i in keep], [f for i, f in enumerate(findings) if i not in keep]


def bounded_findings(findings: Sequence[Finding], limit: int) -> tuple[list[Finding], CutCount]:
    """Fields cut, then the `limit` most severe kept."""
    count = CutCount()
    shortened = []
    for finding in findings:
        bounded, cut = bounded_finding(finding)
        shortened.append(bounded)
        count.fields_truncated += cut
    kept, left_out = most_severe(shortened, limit)
    count.by_severity.update(f.severity.value for f in left_out)
    return kept, count


def bounded_outcome(outcome: ParseOutcome, limit: int) -> tuple[ParseOutcome, CutCount]:
    """One parsed answer within the caps: its findings (above), its summary, only the parser's
    own `flagged` of its free-form meta, and at most MAX_DIAGNOSTICS diagnostics."""
    diagnostics = _bounded_diagnostics(outcome.diagnostics)
    result = outcome.result
    if result is None:
        return outcome.model_copy(update={"diagnostics": diagnostics}), CutCount()
    findings, count = bounded_findings(result.findings, limit)
    flagged = (result.meta or {}).get("flagged")
    kept_ids = {f.id for f in findings}
    meta = (
        {"flagged": {k: [i for i in v if i in kept_ids] for k, v in flagged.items() if isinstance(v, list)}}
        if isinstance(flagged, dict)
        else None
    )
    summary = cut_text(result.summary, SUMMARY_CHARS) if result.summary else result.summary
    bounded = result.model_copy(update={"findings": findings, "meta": meta, "summary": summary})
    return outcome.model_copy(update={"result": bounded, "diagnostics": diagnostics}), count


def _bounded_diagnostics(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    if len(diagnostics) <= MAX_DIAGNOSTICS:
        return diagnostics
    # Keep the first; a rejection is the only diagnostic of its answer, so it is never cut.
    more = len(diagnostics) - MAX_DIAGNOSTICS
    return [
        *diagnostics[:MAX_DIAGNOSTICS],
        Diagnostic(kind="warning", reason=DIAGNOSTICS_CAPPED, detail=f"{more} more diagnostics not stored"),
    ]

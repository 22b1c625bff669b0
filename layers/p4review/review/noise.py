"""Noise controls per depot-path prefix (pure): minimum severity, minimum confidence and a
maximum number of findings, configured as P4REVIEW_NOISE_POLICY, a JSON array such as

    [{"prefix": "//depot/main/...", "min_severity": "medium", "max_findings": 20},
     {"prefix": "//depot/main/tests/...", "min_severity": "high", "min_confidence": "high"}]

A finding is governed by the rule with the longest prefix matching its file (`...` or a
trailing `/` marks a directory prefix); files under no rule are not filtered. A finding
without a confidence counts as "medium". Suppressed findings are counted, never silently
lost: the counts go into the stored result and the job summary."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from p4review.change.json_rules import parse_rules
from p4review.models.finding_labels import SEVERITY_ORDER, Confidence
from p4review.models.policy import NoiseRule
from p4review.models.review_result import Finding
from p4review.review.findings_merge import severity_rank

_CONFIDENCE_ORDER = [Confidence.HIGH, Confidence.MEDIUM, Confidence.LOW]

SUPPRESSED_SEVERITY = "below_min_severity"
SUPPRESSED_CONFIDENCE = "below_min_confidence"
SUPPRESSED_MAX = "over_max_findings"


@dataclass(frozen=True)
class NoiseOutcome:
    kept: list[Finding]
    suppressed: dict[str, int]  # reason -> count


def parse_noise_policy(value: str) -> tuple[NoiseRule, ...]:
    return parse_rules(value, NoiseRule, "P4REVIEW_NOISE_POLICY")


def _rule_for(rules: Sequence[NoiseRule], depot_path: str) -> NoiseRule | None:
    matching = [rule for rule in rules if rule.matches(depot_path)]
    return max(matching, key=lambda rule: len(rule.base)) if matching else None


def apply_noise_policy(findings: Sequence[Finding], rules: Sequence[NoiseRule]) -> NoiseOutcome:
    suppressed: Counter[str] = Counter()
    by_rule: dict[NoiseRule | None, list[Finding]] = {}
    for finding in findings:
        rule = _rule_for(rules, finding.file)
        if rule is not None:
            if rule.min_severity and severity_rank(finding) > SEVERITY_ORDER.index(rule.min_severity):
                suppressed[SUPPRESSED_SEVERITY] += 1
                continue
            confidence = finding.confidence or Confidence.MEDIUM
            if rule.min_confidence and _CONFIDENCE_ORDER.index(confidence) > _CONFIDENCE_ORDER.index(
                rule.min_confidence
            ):
                suppressed[SUPPRESSED_CONFIDENCE] += 1
                continue
        by_rule.setdefault(rule, []).append(finding)
    kept_ids: set[int] = set()
    for rule, group in by_rule.items():
        if rule is not None and rule.max_findings is not None and len(group) > rule.max_findings:
            # Keep the most severe (then the earliest); the rest count as suppressed.
            ranked = sorted(range(len(group)), key=lambda i: (severity_rank(group[i]), i))
            suppressed[SUPPRESSED_MAX] += len(group) - rule.max_findings
            group = [group[i] for i in sorted(ranked[: rule.max_findings])]
        kept_ids.update(id(f) for f in group)
    return NoiseOutcome(kept=[f for f in findings if id(f) in kept_ids], suppressed=dict(suppressed))


def apply_layered_noise(
    findings: Sequence[Finding], depot_rules: Sequence[NoiseRule], service_rules: Sequence[NoiseRule]
) -> NoiseOutcome:
    """The depot's policy rules (`.p4review.toml`) govern the files under them; the service's
    P4REVIEW_NOISE_POLICY is the default for every other file."""
    by_depot = [f for f in findings if _rule_for(depot_rules, f.file) is not None]
    depot = apply_noise_policy(by_depot, depot_rules)
    service = apply_noise_policy([f for f in findings if _rule_for(depot_rules, f.file) is None], service_rules)
    kept_ids = {id(f) for f in depot.kept} | {id(f) for f in service.kept}
    suppressed = Counter(depot.suppressed) + Counter(service.suppressed)
    return NoiseOutcome(kept=[f for f in findings if id(f) in kept_ids], suppressed=dict(suppressed))

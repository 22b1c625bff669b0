"""A finding's fingerprint (pure): its file, its rule (or its title, normalized) and a hash of the
flagged line's content, never its line number: a finding whose line moved because lines were
added above it is the same finding. Whitespace inside the line is folded, so re-indenting does
not make a finding new either. Review compares versions by it; notify marks Swarm comments with it."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence

from p4review.change.unified_diff import iter_new_side_lines
from p4review.models.review_result import Finding

FINGERPRINT_VERSION = "1"
_NOT_WORD = re.compile(r"[^0-9a-z]+")
_DIGITS = re.compile(r"[0-9]+")
_SPACES = re.compile(r"\s+")


def normalized_title(title: str) -> str:
    """Case, punctuation and numbers folded: "Line 42: unused `x`" ~ "line # unused x"."""
    folded = _DIGITS.sub("#", title.casefold())
    return _NOT_WORD.sub(" ", folded).strip()


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def new_side_text(diff_text: str) -> dict[int, str]:
    """{new-side line number: its text} for every line the diff shows."""
    return {line.line: line.text for line in iter_new_side_lines(diff_text)}


def finding_fingerprint(finding: Finding, line_text: str | None) -> str:
    """Stable across line shifts; `line_text` is None when the diff does not show the line."""
    rule = finding.rule_id or normalized_title(finding.title)
    content = _SPACES.sub(" ", line_text).strip() if line_text is not None else ""
    material = "\x00".join((FINGERPRINT_VERSION, finding.file, rule, sha256_text(content)))
    return sha256_text(material)[:20]


def fingerprints_for(findings: Sequence[Finding], diffs: Mapping[str, str]) -> dict[str, str]:
    """{finding id: fingerprint}, the flagged lines read from the files' (redacted) diffs."""
    lines_by_file = {path: new_side_text(diff) for path, diff in diffs.items()}
    return {
        finding.id: finding_fingerprint(finding, lines_by_file.get(finding.file, {}).get(finding.line))
        for finding in findings
    }

"""Versioned reruns (pure): which findings are new, still open or resolved since the previous
review version of a changelist, and which files' stored answers a re-review can reuse.

A finding's fingerprint is its file, its rule (or its title, normalized) and a hash of the
flagged line's content, never its line number: a finding whose line moved because lines were
added above it is the same finding. Whitespace inside the line is folded, so re-indenting does
not make a finding new either."""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from p4review.logic.unified_diff import iter_new_side_lines
from p4review.models.review_result import FileAnswer, Finding, ResolvedFinding, VersionHistory

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


def compare_versions(
    *,
    previous_version: int,
    previous_job_id: str,
    previous_findings: Sequence[Finding],
    previous_fingerprints: Mapping[str, str],
    current_findings: Sequence[Finding],
    current_fingerprints: Mapping[str, str],
    reviewed_now: Iterable[str],
    skipped_now: Iterable[str],
    files_reused: Sequence[str] = (),
) -> VersionHistory:
    """New, still open and resolved findings. Equal fingerprints are matched one to one (two
    identical problems on two identical lines are two findings). A previous finding on a file
    this version skipped is not called resolved: nobody looked (`not_rechecked`)."""
    unmatched = Counter(previous_fingerprints.get(f.id) for f in previous_findings)
    new, still_open = [], []
    for finding in current_findings:
        fingerprint = current_fingerprints.get(finding.id)
        if fingerprint is not None and unmatched[fingerprint] > 0:
            unmatched[fingerprint] -= 1
            still_open.append(finding.id)
        else:
            new.append(finding.id)
    reviewed, skipped = set(reviewed_now), set(skipped_now)
    resolved: list[ResolvedFinding] = []
    not_rechecked = 0
    for finding in previous_findings:
        fingerprint = previous_fingerprints.get(finding.id)
        if unmatched[fingerprint] <= 0:
            continue
        unmatched[fingerprint] -= 1
        if finding.file in skipped and finding.file not in reviewed:
            not_rechecked += 1
            continue
        # Reviewed again without it, or the file left the change: resolved either way.
        resolved.append(
            ResolvedFinding(
                severity=finding.severity,
                category=finding.category,
                title=finding.title,
                file=finding.file,
                line=finding.line,
                rule_id=finding.rule_id,
            )
        )
    return VersionHistory(
        previous_version=previous_version,
        previous_job_id=previous_job_id,
        new=new,
        still_open=still_open,
        resolved=resolved,
        not_rechecked=not_rechecked,
        files_reused=list(files_reused),
    )


def reusable_answers(
    sections: Mapping[str, str], previous: Sequence[FileAnswer], answered_by: str
) -> dict[str, FileAnswer]:
    """{path: the previous version's answer} for each file whose reviewed section is unchanged
    and whose answer came from the same reviewer (provider, model, prompt, line policy): asking
    again would cost tokens for the same answer."""
    by_file = {answer.file: answer for answer in previous if answer.answered_by == answered_by}
    reused = {}
    for path, section in sections.items():
        answer = by_file.get(path)
        if answer is not None and answer.section_sha256 == sha256_text(section):
            reused[path] = answer
    return reused


def file_answers_for(
    paths: Sequence[str], sections: Mapping[str, str], findings: Sequence[Finding], answered_by: str
) -> list[FileAnswer]:
    """One chunk's answer split per file, each keyed by the hash of the section the reviewer saw."""
    return [
        FileAnswer(
            file=path,
            section_sha256=sha256_text(sections[path]),
            answered_by=answered_by,
            findings=[f for f in findings if f.file == path],
        )
        for path in paths
    ]

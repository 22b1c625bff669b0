"""Versioned reruns (pure): which findings are new, still open or resolved since the previous
review version of a changelist, and which files' stored answers a re-review can reuse. Findings
are matched by fingerprint (`p4review.change.fingerprints`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from p4review.change.fingerprints import sha256_text
from p4review.models.review_result import FileAnswer, Finding, ResolvedFinding, VersionHistory


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

"""Analyzer answers reused by content (pure): one analyzer's reports on one file, under the key
of everything those reports depend on, so a re-shelved change runs each analyzer only on the files
whose key changed (docs/review.md "Analyzers beside the model"). They are kept in the review's
stored result (`StoredReview.analyzer_answers`, beside the model's per-file answers), found for
the next version as those are (`history_store.py`), and expire with it.

The key is the SHA-256 of: this module's format, the analyzer, its identity (`identity.py`: the
tool's version, its options and our adapter's source), the depot path (it picks the analyzer, the
shell dialect and the extension of the copy the tool reads), the SHA-256 of the exact text the
analyzer read, and, for an analyzer that reads the files of a run together (cppcheck's
whole-program checks), the same hash of every file of that run. A wrong hit would be a wrong
review, so anything unknown (a tool whose version cannot be read, the JavaScript analyzers' remote
function) has no key and is always run.

The reports kept are the whole file's, as read from the tool (before the placeholder and
added-line filters, which the review stage applies to reused and fresh reports alike), in new-file
line numbers: the same text gives the same lines. The text is the redacted artifact's, re-scanned
by the pre-submit guard; a text that redacts differently hashes differently, so a reused report is
one a fresh run on this very text would give."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from p4review.change.analyzer_files import CPPCHECK
from p4review.change.fingerprints import sha256_text
from p4review.review.analyzers.analysis import AnalyzerReport

# Bump when what a key covers, or what an answer means, changes: every earlier answer is then a miss.
ANSWERS_FORMAT = "1"
_SHA256_HEX = r"^[0-9a-f]{64}$"
# Reports kept in one review's result for the next version: a few MB of JSON at most.
MAX_STORED_REPORTS = 5000


def run_digest(texts: Mapping[str, str]) -> str:
    """The files an analyzer reads together, by path and content: its answer on one of them may
    depend on the others."""
    return sha256_text(json.dumps(sorted((path, sha256_text(text)) for path, text in texts.items())))


def answer_key(analyzer: str, identity: str, depot_path: str, text: str, together: str = "") -> str:
    fields = [ANSWERS_FORMAT, analyzer, identity, depot_path, sha256_text(text), together]
    return sha256_text(json.dumps(fields))


# cppcheck's whole-program (CTU) checks read every file of a run: its answer on one file is keyed
# by all of them. The others read each file alone (no includes, no `source`, no config).
READS_FILES_TOGETHER = frozenset({CPPCHECK})


def answer_keys(
    by_analyzer: Mapping[str, Iterable[str]], contents: Mapping[str, str], identities: Mapping[str, str | None]
) -> dict[tuple[str, str], str | None]:
    """{(analyzer, path): its answer's key}, None where the analyzer's identity is unknown."""
    keys: dict[tuple[str, str], str | None] = {}
    for analyzer, paths in by_analyzer.items():
        paths = list(paths)
        identity = identities.get(analyzer)
        together = run_digest({p: contents[p] for p in paths}) if analyzer in READS_FILES_TOGETHER else ""
        for path in paths:
            keys[analyzer, path] = (
                answer_key(analyzer, identity, path, contents[path], together) if identity is not None else None
            )
    return keys


class AnalyzerAnswer(BaseModel):
    """One analyzer's reports on one file (none is an answer too), under their key."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    analyzer: str = Field(min_length=1)
    file: str = Field(min_length=1)
    key: str = Field(pattern=_SHA256_HEX)
    reports: tuple[AnalyzerReport, ...] = ()

    @model_validator(mode="after")
    def _reports_are_its_own(self) -> AnalyzerAnswer:
        if any(r.analyzer != self.analyzer or r.file != self.file for r in self.reports):
            raise ValueError("a report of another analyzer or file")
        return self


def stored_answers(answers: Iterable[AnalyzerAnswer], max_reports: int = MAX_STORED_REPORTS) -> list[dict[str, Any]]:
    """The answers as the result document keeps them (`StoredReview.analyzer_answers`), in one
    order whatever order they were found in: a retried review writes the same document. Those
    past `max_reports` reports in all are left out (that file is analyzed again next time): the
    result is read by notify and by the next version, and must not grow with a noisy file."""
    kept, reports = [], 0
    for answer in sorted(answers, key=lambda a: (a.analyzer, a.file, a.key)):
        if reports + len(answer.reports) > max_reports:
            continue
        reports += len(answer.reports)
        kept.append(answer.model_dump(mode="json", exclude_none=True))
    return kept


def read_answers(entries: Iterable[Any]) -> list[AnalyzerAnswer]:
    """The readable answers of a stored result; any other entry (another format, a corrupt
    answer) is left out: that file is analyzed again, never a failure."""
    answers = []
    for entry in entries:
        try:
            answers.append(AnalyzerAnswer.model_validate(entry))
        except ValidationError:
            continue
    return answers

"""The redaction boundary for a whole change (spec SEC-30, SEC-32, SEC-44).

`stream_change_artifacts` (fetch) writes the raw snapshot and its redacted copy one file at a
time: the description and every diff pass through the redaction pipeline (`ChangeRedactor`),
line counts and diff prefixes intact. `redact_change` does the same for a change in memory.

`ReviewInput` (review) is what a reviewer, offline or LLM, accepts. Only `prepare_review_input`
builds one, from a stored redacted snapshot: each text goes through the pipeline again, and if
that finds anything the stored artifact was not clean (redaction bypassed or broken upstream):
the request is blocked with `RedactionError` (non-retryable, the job is dead-lettered). Every
text in a ReviewInput is a `RedactedDocument`, re-scanned clean by the canonical rules."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, BinaryIO

from p4review.change.redaction import DEFAULT_POLICY, RedactedDocument, RedactionError, RedactionPolicy, redact
from p4review.models.change import ChangeDescription, ChangeSnapshot, DiffStatus, FileDiff
from p4review.models.policy import ChangePolicy

REDACTED_ARTIFACT_VERSION = "1"


@dataclass(frozen=True)
class RedactedChange:
    snapshot: ChangeSnapshot  # every text redacted
    counts: dict[str, int]  # secrets replaced per class, never values
    ruleset_version: str

    def artifact(self) -> dict[str, Any]:
        """The redacted bucket's change document."""
        return {
            "artifact_version": REDACTED_ARTIFACT_VERSION,
            "redaction": {"ruleset_version": self.ruleset_version, "counts": self.counts},
            "snapshot": self.snapshot.model_dump(mode="json"),
        }


class ChangeRedactor:
    """Redacts a change one text at a time, adding up the counts per class."""

    def __init__(self, policy: RedactionPolicy = DEFAULT_POLICY):
        self._policy = policy
        self.counts: Counter[str] = Counter()
        self.ruleset_version = ""

    def description(self, description: ChangeDescription) -> ChangeDescription:
        document = redact(description.description, self._policy)
        self._add(document)
        return description.model_copy(update={"description": document.text})

    def diff(self, diff: FileDiff) -> FileDiff:
        update: dict[str, str] = {}
        if diff.unified_diff:
            document = redact(diff.unified_diff, self._policy)
            self._add(document)
            update["unified_diff"] = document.text
        if diff.new_content:
            # Counted too: these are replacements made, and the content holds lines the diff does not.
            content = redact(diff.new_content, self._policy)
            self._add(content)
            update["new_content"] = content.text
        return diff.model_copy(update=update) if update else diff

    def policy(self, depot_policy: ChangePolicy) -> ChangePolicy:
        """The depot policies with their extra review instructions redacted (they reach the model)."""
        policies = []
        for found in depot_policy.policies:
            policy = found.policy
            update: dict[str, Any] = {}
            if policy.instructions:
                update["instructions"] = self._text(policy.instructions)
            if any(sub.instructions for sub in policy.paths):
                update["paths"] = [
                    sub.model_copy(update={"instructions": self._text(sub.instructions)}) if sub.instructions else sub
                    for sub in policy.paths
                ]
            policies.append(found.model_copy(update={"policy": policy.model_copy(update=update)}) if update else found)
        return depot_policy.model_copy(update={"policies": policies})

    def _text(self, text: str) -> str:
        document = redact(text, self._policy)
        self._add(document)
        return document.text

    def _add(self, document: RedactedDocument) -> None:
        self.counts.update(document.counts)
        self.ruleset_version = document.ruleset_version

    def summary(self) -> dict[str, Any]:
        return {"ruleset_version": self.ruleset_version, "counts": dict(sorted(self.counts.items()))}


def redact_change(snapshot: ChangeSnapshot, policy: RedactionPolicy = DEFAULT_POLICY) -> RedactedChange:
    """A change held in memory -> its redacted copy (tests and tools; fetch streams instead)."""
    redactor = ChangeRedactor(policy)
    redacted = snapshot.model_copy(
        update={
            "description": redactor.description(snapshot.description),
            "diffs": [redactor.diff(diff) for diff in snapshot.diffs],
            "policy": redactor.policy(snapshot.policy) if snapshot.policy is not None else None,
        }
    )
    summary = redactor.summary()
    return RedactedChange(snapshot=redacted, counts=summary["counts"], ruleset_version=summary["ruleset_version"])


def _policy_instructions(depot_policy: ChangePolicy | None) -> list[str]:
    if depot_policy is None:
        return []
    texts = []
    for found in depot_policy.policies:
        texts += [found.policy.instructions or ""] + [sub.instructions or "" for sub in found.policy.paths]
    return [text for text in texts if text]


def _json(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, ensure_ascii=False).encode()


def stream_change_artifacts(
    description: ChangeDescription,
    diffs: Iterable[FileDiff],
    *,
    raw: BinaryIO,
    redacted: BinaryIO,
    policy: RedactionPolicy = DEFAULT_POLICY,
    depot_policy: ChangePolicy | None = None,
) -> dict[str, Any]:
    """Write the raw snapshot to `raw` and the redacted change document to `redacted`, one file
    at a time, so a change of any size needs memory for one file's diff, not the whole change.
    The documents read back exactly as `ChangeSnapshot` and `RedactedChange.artifact()` write
    them. Returns the redaction summary {ruleset_version, counts}."""
    redactor = ChangeRedactor(policy)
    raw.write(b'{"description":' + _json(description.model_dump(mode="json")) + b',"diffs":[')
    redacted.write(
        b'{"artifact_version":'
        + _json(REDACTED_ARTIFACT_VERSION)
        + b',"snapshot":{"description":'
        + _json(redactor.description(description).model_dump(mode="json"))
        + b',"diffs":['
    )
    for index, diff in enumerate(diffs):
        separator = b"," if index else b""
        raw.write(separator + _json(diff.model_dump(mode="json")))
        redacted.write(separator + _json(redactor.diff(diff).model_dump(mode="json")))
    raw.write(b"]")
    redacted.write(b"]")
    # After the diffs: the redacted copy's instructions go to the model, so they are redacted too.
    raw.write(b',"policy":' + _json(depot_policy.model_dump(mode="json") if depot_policy else None))
    redacted_policy = redactor.policy(depot_policy).model_dump(mode="json") if depot_policy else None
    redacted.write(b',"policy":' + _json(redacted_policy))
    summary = redactor.summary()
    raw.write(b"}")
    redacted.write(b'},"redaction":' + _json(summary) + b"}")
    return summary


@dataclass(frozen=True)
class ReviewFile:
    diff: FileDiff  # metadata; its `unified_diff` equals `document.text`
    document: RedactedDocument
    content: RedactedDocument | None = None  # the new-side text, when fetch kept it for analyzers


@dataclass(frozen=True)
class ReviewInput:
    """The only thing a reviewer accepts: change metadata plus RedactedDocuments."""

    snapshot: ChangeSnapshot  # the redacted snapshot (metadata and coverage)
    description: RedactedDocument
    files: tuple[ReviewFile, ...]  # the fetched files, in change order
    ruleset_version: str


def prepare_review_input(artifact: dict[str, Any], policy: RedactionPolicy = DEFAULT_POLICY) -> ReviewInput:
    """The pre-submit guard: a stored redacted change document -> ReviewInput, or RedactionError."""
    if (
        not isinstance(artifact, dict)
        or artifact.get("artifact_version") != REDACTED_ARTIFACT_VERSION
        or "snapshot" not in artifact
    ):
        raise RedactionError("the change artifact is not a redacted change document")
    snapshot = ChangeSnapshot.model_validate(artifact["snapshot"])
    leaked: Counter[str] = Counter()
    description = redact(snapshot.description.description, policy)
    leaked.update(description.counts)
    files = []
    for diff in snapshot.diffs:
        # Every text is checked, not only the files a reviewer reads: the snapshot travels too.
        document = redact(diff.unified_diff, policy)
        leaked.update(document.counts)
        content = None
        if diff.new_content is not None:
            content = redact(diff.new_content, policy)
            leaked.update(content.counts)
        if diff.status == DiffStatus.FETCHED:
            files.append(ReviewFile(diff=diff, document=document, content=content))
    for text in _policy_instructions(snapshot.policy):
        leaked.update(redact(text, policy).counts)
    if leaked:
        # Class names and counts only: the values stay out of the error, the DLQ and the logs.
        classes = ", ".join(f"{name}={count}" for name, count in sorted(leaked.items()))
        raise RedactionError(f"the redacted change still held secrets ({classes}); nothing was sent")
    return ReviewInput(
        snapshot=snapshot, description=description, files=tuple(files), ruleset_version=description.ruleset_version
    )

"""The redaction boundary for a whole change (spec SEC-30, SEC-32, SEC-44).

`stream_change_artifacts` (fetch) writes the raw snapshot and its redacted copy one file at a
time: the description, every diff and content, the depot policy and every depot path pass
through the redaction pipeline (`ChangeRedactor`), line counts and diff prefixes intact, and a
value found in any of them is masked in all of them (docs/redaction.md, "Every copy of a value,
and secrets in paths"). `redact_change` does the same for a change in memory.

`ReviewInput` (review) is what a reviewer, offline or LLM, accepts. Only `prepare_review_input`
builds one, from a stored redacted snapshot: each text goes through the pipeline again, and if
that finds anything (in a text or a path) the stored artifact was not clean (redaction bypassed or broken upstream):
the request is blocked with `RedactionError` (non-retryable, the job is dead-lettered). Every
text in a ReviewInput is a `RedactedDocument`, re-scanned clean by the canonical rules."""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, BinaryIO

from p4review.change.redacted_paths import RedactedPaths
from p4review.change.redaction import DEFAULT_POLICY, RedactedDocument, RedactionError, RedactionPolicy, redact
from p4review.change.redaction.copies import MaskedValues
from p4review.change.redaction.pipeline import redactor_for
from p4review.models.change import ChangeDescription, ChangedFile, ChangeSnapshot, DiffStatus, FileDiff
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
    """Redacts the texts and paths of one change with one set of masked values (copies.py), so
    that a value found in any text (the description, a file's diff or content, the policy, a
    path) is masked in every other, and adds up the counts per class.

    Two passes: `begin` (the description, every changed file's path, the policy), `diff` for
    each file as it comes, then `settle`, after which `final_description`, `final_policy` and
    `final_diff` mask in the earlier texts the values found later, and give each file its final
    path (distinct from every other file's: redacted_paths.py). The values and the real paths
    live in this object's memory only."""

    def __init__(self, policy: RedactionPolicy = DEFAULT_POLICY):
        self._redactor = redactor_for(policy)
        self._values = MaskedValues()
        self._paths = RedactedPaths()
        self._description: ChangeDescription | None = None
        self._raw_files: list[ChangedFile] = []
        self._policy: ChangePolicy | None = None
        self.counts: Counter[str] = Counter()
        self.ruleset_version = self._redactor.ruleset_version

    def __repr__(self) -> str:  # never a value or a path
        return f"ChangeRedactor({self._values!r}, {self._paths!r})"

    # ---- first pass -------------------------------------------------------------------------

    def begin(self, description: ChangeDescription, depot_policy: ChangePolicy | None = None) -> None:
        """The texts known before any file: the description, every changed file's path (one
        scan for all of them), the depot policy."""
        self._description = description.model_copy(update={"description": self._text(description.description)})
        self._raw_files = list(description.files)
        paths = [changed.depot_path for changed in description.files]
        for path, redacted in zip(paths, self._path_texts(paths), strict=True):
            self._paths.add(path, redacted)
        self._policy = _map_policy(depot_policy, self._text, self._path_text) if depot_policy is not None else None

    def diff(self, diff: FileDiff) -> tuple[int, FileDiff]:
        """One file's diff and content redacted (first pass), with its path's ordinal; its
        `depot_path` is the path as first redacted (final_diff settles it)."""
        ordinal = self._ordinal(diff.depot_path)
        update: dict[str, str] = {"depot_path": self._paths.first(ordinal)}
        if diff.unified_diff:
            update["unified_diff"] = self._text(diff.unified_diff)
        if diff.new_content:
            # Counted too: these are replacements made, and the content holds lines the diff does not.
            update["new_content"] = self._text(diff.new_content)
        return ordinal, diff.model_copy(update=update)

    # ---- second pass ------------------------------------------------------------------------

    def settle(self) -> None:
        """Every value is known: fix the paths (redacted_paths.py)."""
        self._paths.settle(self._late_path)

    def final_description(self) -> ChangeDescription:
        if self._description is None:
            raise RuntimeError("ChangeRedactor.begin() must run first")
        files = [
            changed.model_copy(update={"depot_path": self._paths.final(self._ordinal(changed.depot_path))})
            for changed in self._raw_files
        ]
        return self._description.model_copy(
            update={"description": self._late(self._description.description), "files": files}
        )

    def final_policy(self) -> ChangePolicy | None:
        return _map_policy(self._policy, self._late, self._late_path) if self._policy is not None else None

    def final_diff(self, ordinal: int, diff: FileDiff) -> FileDiff:
        """A first-pass diff with the values found after it masked, and its final path."""
        update: dict[str, str] = {"depot_path": self._paths.final(ordinal)}
        if diff.unified_diff:
            update["unified_diff"] = self._late(diff.unified_diff)
        if diff.new_content:
            update["new_content"] = self._late(diff.new_content)
        return diff.model_copy(update=update)

    def summary(self) -> dict[str, Any]:
        return {"ruleset_version": self.ruleset_version, "counts": dict(sorted(self.counts.items()))}

    # ---- helpers ----------------------------------------------------------------------------

    def _text(self, text: str) -> str:
        document = self._redactor.redact(text, self._values)
        self.counts.update(document.counts)
        return document.text

    def _late(self, text: str) -> str:
        """An already redacted text, with the values found since masked (most texts hold none:
        one memory search per value)."""
        return self._text(text) if text and self._values.present_in(text) else text

    def _path_texts(self, paths: list[str]) -> list[str]:
        """Paths through the detector, all in one scan: each is one file header line
        (`+++ //depot/...`), read as a diff's file headers are (path_parts.py)."""
        if not paths:
            return []
        if any("\n" in path or "\r" in path for path in paths):
            return [self._path_text(path) for path in paths]  # not a depot path: one at a time
        lines = self._text(_path_lines(paths)).split("\n")
        return [line[len(_PATH_HEADER) :] for line in lines]

    def _path_text(self, path: str) -> str:
        return self._text(_PATH_HEADER + path)[len(_PATH_HEADER) :] if path else path

    def _late_path(self, path: str) -> str:
        return self._path_text(path) if path and self._values.present_in(path) else path

    def _ordinal(self, path: str) -> int:
        ordinal = self._paths.get(path)
        return ordinal if ordinal is not None else self._paths.add(path, self._path_text(path))


def _map_policy(depot_policy: ChangePolicy, text: Callable[[str], str], path: Callable[[str], str]) -> ChangePolicy:
    """The depot policies with every text (`text`: their review instructions, which reach the
    model; the diagnostics' details) and every path (`path`: where a policy file is, what it
    governs, its sub-paths and ignore globs, the policy files the change modifies) redacted.
    Reviewers are left: they are addresses notify mails the review to."""
    policies = []
    for found in depot_policy.policies:
        policy = found.policy
        sub_paths = [
            sub.model_copy(
                update={
                    "path": _directory(path(sub.path)),
                    "instructions": text(sub.instructions) if sub.instructions else sub.instructions,
                }
            )
            for sub in policy.paths
        ]
        policy = policy.model_copy(
            update={
                "instructions": text(policy.instructions) if policy.instructions else policy.instructions,
                "ignore": [path(glob) for glob in policy.ignore],
                "paths": sub_paths,
            }
        )
        policies.append(
            found.model_copy(
                update={"source": path(found.source), "directory": _directory(path(found.directory)), "policy": policy}
            )
        )
    diagnostics = [
        diagnostic.model_copy(update={"source": path(diagnostic.source), "detail": text(diagnostic.detail)})
        for diagnostic in depot_policy.diagnostics
    ]
    modified = [path(changed) for changed in depot_policy.modified]
    return depot_policy.model_copy(update={"policies": policies, "diagnostics": diagnostics, "modified": modified})


def _directory(path: str) -> str:
    """A directory still ends with `/` (its schema says so) when its last segment was a secret."""
    return path if not path or path.endswith("/") else path + "/"


def redact_change(snapshot: ChangeSnapshot, policy: RedactionPolicy = DEFAULT_POLICY) -> RedactedChange:
    """A change held in memory -> its redacted copy (tests and tools; fetch streams instead).
    The same passes as `stream_change_artifacts`, so both give the same document."""
    redactor = ChangeRedactor(policy)
    redactor.begin(snapshot.description, snapshot.policy)
    first = [redactor.diff(diff) for diff in snapshot.diffs]
    redactor.settle()
    redacted = snapshot.model_copy(
        update={
            "description": redactor.final_description(),
            "diffs": [redactor.final_diff(ordinal, diff) for ordinal, diff in first],
            "policy": redactor.final_policy(),
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
    texts += [diagnostic.detail for diagnostic in depot_policy.diagnostics]
    return [text for text in texts if text]


# Each path goes through the detector as a diff's file header line: the marker is set aside,
# and the header rules (path_parts.py) read it as a path.
_PATH_HEADER = "+++ "


def _path_lines(paths: list[str]) -> str:
    return "\n".join(_PATH_HEADER + path for path in paths)


def _snapshot_paths(snapshot: ChangeSnapshot) -> list[str]:
    """Every path the redacted snapshot carries (the guard re-checks them all)."""
    paths = [changed.depot_path for changed in snapshot.description.files]
    paths += [diff.depot_path for diff in snapshot.diffs]
    if snapshot.policy is not None:
        for found in snapshot.policy.policies:
            paths += [found.source, found.directory, *found.policy.ignore, *(sub.path for sub in found.policy.paths)]
        paths += [diagnostic.source for diagnostic in snapshot.policy.diagnostics]
        paths += snapshot.policy.modified
    return [path for path in paths if path]


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
    redactor: ChangeRedactor | None = None,
) -> dict[str, Any]:
    """Write the raw snapshot to `raw` and the redacted change document to `redacted`, one file
    at a time, so a change of any size needs memory for one file's diff, not the whole change.
    The raw document is written as the files come; each file's first-pass redaction goes to an
    anonymous temporary file, and the redacted document is written once every value of the
    change is known (ChangeRedactor's second pass), description first. The documents read back
    exactly as `ChangeSnapshot` and `RedactedChange.artifact()` write them. Returns the
    redaction summary {ruleset_version, counts}. `redactor`: a fresh ChangeRedactor for
    `policy` that the caller reads afterwards (fetch: the redacted policy for the job record)."""
    redactor = redactor or ChangeRedactor(policy)
    redactor.begin(description, depot_policy)
    raw.write(b'{"description":' + _json(description.model_dump(mode="json")) + b',"diffs":[')
    with tempfile.TemporaryFile() as spool:
        for index, diff in enumerate(diffs):
            raw.write((b"," if index else b"") + _json(diff.model_dump(mode="json")))
            ordinal, first = redactor.diff(diff)
            # ASCII JSON, one line per file: any text (lone surrogates too) reads back exactly.
            spool.write(json.dumps([ordinal, first.model_dump(mode="json")]).encode() + b"\n")
        raw.write(b"]")
        raw.write(b',"policy":' + _json(depot_policy.model_dump(mode="json") if depot_policy else None))
        raw.write(b"}")
        redactor.settle()
        redacted.write(
            b'{"artifact_version":'
            + _json(REDACTED_ARTIFACT_VERSION)
            + b',"snapshot":{"description":'
            + _json(redactor.final_description().model_dump(mode="json"))
            + b',"diffs":['
        )
        spool.seek(0)
        for index, line in enumerate(spool):
            ordinal, dumped = json.loads(line)
            final = redactor.final_diff(ordinal, FileDiff.model_validate(dumped))
            redacted.write((b"," if index else b"") + _json(final.model_dump(mode="json")))
    redacted.write(b"]")
    # After the diffs: the redacted copy's instructions go to the model, so they are redacted too.
    redacted_policy = redactor.final_policy()
    redacted.write(b',"policy":' + _json(redacted_policy.model_dump(mode="json") if redacted_policy else None))
    summary = redactor.summary()
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
    paths = _snapshot_paths(snapshot)
    if paths:
        # The paths reach the model (file sections, the changed-files list), the email and Swarm:
        # all of them in one scan, each a file header line, as fetch redacted them.
        leaked.update(redact(_path_lines(paths), policy).counts)
    if leaked:
        # Class names and counts only: the values stay out of the error, the DLQ and the logs.
        classes = ", ".join(f"{name}={count}" for name, count in sorted(leaked.items()))
        raise RedactionError(f"the redacted change still held secrets ({classes}); nothing was sent")
    return ReviewInput(
        snapshot=snapshot, description=description, files=tuple(files), ruleset_version=description.ruleset_version
    )

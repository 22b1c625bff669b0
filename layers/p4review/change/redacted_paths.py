"""Depot paths in the redacted snapshot (issue 28 item 7): a secret in a file or directory name
(`//depot/keys/ghp_.../AKIA....py`) goes through the same detector as content, and the path
the model, the redacted bucket, the email and Swarm see is the redacted one.

A redacted path stays reviewable: only the secret is replaced
(`//depot/keys/[REDACTED:github_token]/[REDACTED:aws_access_key].py`), so the directories, the
file name's shape and its extension are kept for language detection,
the analyzers and the chunk planner. Two files whose redacted paths would be the same stay
distinct: the second gets `~2` before its extension (`[REDACTED:aws_access_key]~2.py`), the
third `~3`. The mapping lives in memory for one change and is never stored: nothing downstream
can turn a redacted path back into the real one."""

from __future__ import annotations

import posixpath
from collections.abc import Callable

from p4review.change.depot_paths import sanitize_for_log

# `values.REDACTED_MARK`, the start of every placeholder, spelt here so that notify can tell a
# redacted path without importing the redaction rules (their import is most of a cold start);
# tests/unit/change/test_change_copies_and_paths.py pins that the two agree.
REDACTED_MARK = "[REDACTED:"


def path_is_redacted(path: str) -> bool:
    """Did redaction change this path? (a real depot path never holds a placeholder)"""
    return REDACTED_MARK in path


def with_index(path: str, index: int) -> str:
    """`//a/[REDACTED:x].py`, 2 -> `//a/[REDACTED:x]~2.py`: the extension stays last."""
    directory, name = posixpath.split(path)
    stem, dot, extension = name.rpartition(".")
    if not dot or not stem:
        stem, extension, dot = name, "", ""
    return (
        posixpath.join(directory, f"{stem}~{index}{dot}{extension}") if directory else f"{stem}~{index}{dot}{extension}"
    )


class RedactedPaths:
    """The file paths of one change: each real path gets an ordinal when first seen; `settle`
    gives every ordinal its redacted path once all the change's values are known (a value
    found in a later file's content is masked in an earlier file's name too), distinct from
    every other file's."""

    def __init__(self) -> None:
        self._ordinals: dict[str, int] = {}
        self._first: list[str] = []  # by ordinal: the path as redacted when first seen
        self._final: list[str] | None = None

    def __repr__(self) -> str:  # never the paths
        return f"RedactedPaths({len(self._first)} paths)"

    def get(self, path: str) -> int | None:
        return self._ordinals.get(path)

    def add(self, path: str, redacted: str) -> int:
        """The ordinal of `path`, redacted as `redacted` (the first time it is seen)."""
        found = self._ordinals.get(path)
        if found is None:
            found = self._ordinals[path] = len(self._first)
            self._first.append(redacted)
            self._final = None
        return found

    def first(self, ordinal: int) -> str:
        return self._first[ordinal]

    def settle(self, mask_late: Callable[[str], str]) -> None:
        """Fix every path: `mask_late` masks the values found after it was first redacted;
        colliding redacted paths get an index (a path redaction did not change needs none)."""
        final = [mask_late(path) for path in self._first]
        taken = {path for path in final if not path_is_redacted(path)}
        for ordinal, path in enumerate(final):
            if not path_is_redacted(path):
                continue
            candidate, index = path, 1
            while candidate in taken:
                index += 1
                candidate = with_index(path, index)
            taken.add(candidate)
            final[ordinal] = candidate
        self._final = final

    def final(self, ordinal: int) -> str:
        if self._final is None:
            raise RuntimeError("RedactedPaths.settle() must run before final()")
        return self._final[ordinal]


def path_for_log(path: str, *, limit: int = 512) -> str:
    """A depot path for a log line or a job record, before the change is redacted (a path the
    allow-list refused, a policy file that was not used): a secret in it masked by the
    detector's default rules, then control and look-alike characters escaped."""
    from p4review.change.redaction import RedactionError, redact  # fetch has the rules loaded already

    header = "+++ "  # read as a file header line, as the snapshot's paths are (path_parts.py)
    try:
        shown = redact(header + path).text[len(header) :] if path else path
    except RedactionError:
        return "<withheld>"
    return sanitize_for_log(shown, limit=limit)

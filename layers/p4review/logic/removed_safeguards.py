"""Safeguards a change removes (pure): a NULL or None check, a bounds check, an error check, a
release of a resource, a lock, an escaping call, a Dockerfile's non-root USER.

Analyzers only see the new code, and a line that is gone cannot be flagged where it was: yet
deleting a check is how many defects are written (a fix adds the check; undoing it is the bug).
So the offline reviewer reads each hunk's removed lines too. A removed line is reported when it
matches a safeguard pattern for its file's language and the change does not put the same kind
of safeguard back in that hunk, nor the same line anywhere in the file (code that moved).

The finding sits on the removal point (the nearest added line of the hunk, else the new-side
line where the lines were removed) so the line policy keeps it, and it quotes nothing: the kind
of safeguard is named, not its text."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from p4review.logic.unified_diff import parse_hunk_header, split_diff_lines

_C = frozenset({".c", ".h", ".cc", ".cpp", ".cxx", ".c++", ".hpp", ".hh", ".hxx", ".h++", ".inl", ".ipp"})
_PYTHON = frozenset({".py", ".pyw", ".pyi"})
_JS = frozenset({".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts"})
_SHELL = frozenset({".sh", ".bash", ".ksh", ".bats"})

C, PYTHON, JS, SHELL, DOCKERFILE = "c", "python", "js", "shell", "dockerfile"


@dataclass(frozen=True)
class Safeguard:
    kind: str  # the rule id's tail: removed-<kind>
    name: str  # how the finding names it
    category: str
    patterns: dict[str, re.Pattern[str]]


_SIZE_WORD = r"\w*(?:len|length|size|count|max|min|limit|cap|capacity|bound|end|num|total)\w*"
_COMPARE = r"(?:<=?|>=?)"

SAFEGUARDS: tuple[Safeguard, ...] = (
    Safeguard(
        "null-check",
        "a NULL/None check",
        "correctness",
        {
            C: re.compile(
                r"\bif\s*\(.*(?:[!=]=\s*(?:NULL|nullptr)\b|(?:NULL|nullptr)\s*[!=]=)"
                r"|\bif\s*\((?:.*(?:&&|\|\|))?\s*!\s*[\w.>\[\]-]+\s*\)"
            ),
            PYTHON: re.compile(r"\b(?:if|elif|while|assert|and|or)\b.*\bis\s+(?:not\s+)?None\b|\bif\s+not\s+\w+\s*:"),
            JS: re.compile(r"[!=]==?\s*(?:null|undefined)\b|\btypeof\s+[\w.]+\s*[!=]==?|\bif\s*\(\s*!\s*[\w.]+\s*\)"),
            SHELL: re.compile(r"\[\[?\s+!?\s*-[zn]\s"),
        },
    ),
    Safeguard(
        "bounds-check",
        "a bounds or size check",
        "correctness",
        {
            language: re.compile(
                rf"\b(?:if|while|assert|elif)\b.*(?:\b{_SIZE_WORD}\b\s*{_COMPARE}|{_COMPARE}=?\s*(?:\w+\s*[-+]\s*)?\b{_SIZE_WORD}\b)",
                re.IGNORECASE,
            )
            for language in (C, PYTHON, JS)
        },
    ),
    Safeguard(
        "error-check",
        "an error check or handler",
        "reliability",
        {
            C: re.compile(r"\bif\s*\(.*(?:<\s*0\b|==\s*-1\b|\berr(?:no|or)?\b|\bret\w*\s*[!=<]|\bfailed\b|== EOF)"),
            PYTHON: re.compile(r"^\s*(?:try\s*:|except\b|finally\s*:|raise\b)"),
            JS: re.compile(r"\bcatch\s*[({]|\.catch\s*\(|\bthrow\b|\bif\s*\(\s*!?\s*err\w*\s*\)|\breject\s*\("),
            SHELL: re.compile(
                r"\|\|\s*(?:exit|return|die|fail|false)\b|\bset\s+-[a-z]*[eu]|\$\?\s*-(?:ne|eq)|\bif\s+!\s"
            ),
        },
    ),
    Safeguard(
        "release",
        "a release of a resource (free, close, unlock)",
        "reliability",
        {
            C: re.compile(
                r"\b(?:free|fclose|close|closedir|munmap|pclose|freeaddrinfo|\w+_(?:free|destroy|release|unref|close))\s*\("
            ),
            PYTHON: re.compile(r"\.(?:close|release|shutdown|terminate|unlink|cleanup)\s*\(\s*\)|^\s*with\s+.+\bas\b"),
            JS: re.compile(r"\.(?:close|end|destroy|release|removeListener|off|unref|abort)\s*\("),
        },
    ),
    Safeguard(
        "lock",
        "a lock",
        "reliability",
        {
            C: re.compile(r"\b\w*(?:mutex_(?:un)?lock|spin_(?:un)?lock|_lock|_unlock)\s*\("),
            PYTHON: re.compile(r"\.(?:acquire|release)\s*\(|^\s*with\s+[\w.]*(?:lock|Lock|mutex|semaphore)\b"),
            JS: re.compile(r"\b(?:lock|unlock|acquire|release)\s*\(|\bAtomics\.\w+\("),
        },
    ),
    Safeguard(
        "escaping",
        "an escaping or validation call",
        "security",
        {
            language: re.compile(
                r"\b(?:\w*escape\w*|\w*sanitiz\w*|quote|shlex\.quote|encodeURI(?:Component)?|realpath|normpath|"
                r"abspath|secure_filename|validate\w*|safe_load|safe_join)\s*\(",
                re.IGNORECASE,
            )
            for language in (C, PYTHON, JS)
        },
    ),
    Safeguard(
        "docker-hardening",
        "a Dockerfile hardening step (non-root USER, checksum or signature check, --no-install-recommends)",
        "security",
        {
            DOCKERFILE: re.compile(
                r"^\s*USER\s+(?!root\b|0\b)\S|sha256sum|sha512sum|gpg\s+--verify|--checksum|--no-install-recommends",
                re.IGNORECASE,
            )
        },
    ),
)
# A condition that loses a clause: `if a and b:` becomes `if a:`. Fixes add clauses; the
# change that takes one away lets through what the clause kept out.
CONDITION_CLAUSE = Safeguard("condition-clause", "a clause of a condition", "correctness", {})
_CONDITION = re.compile(r"^\s*(?:}\s*)?(?:if|elif|else\s+if|while)\b\s*\(?(.*?)\)?\s*(?::|\{|then|do|;)?\s*$")
_CLAUSE_SPLIT = re.compile(r"\s*(?:&&|\|\||\band\b|\bor\b|-a\b|-o\b)\s*")

RULE_IDS = tuple(f"removed-{s.kind}" for s in (*SAFEGUARDS, CONDITION_CLAUSE))


def language_of(depot_path: str) -> str | None:
    name = posixpath.basename(depot_path).lower()
    extension = posixpath.splitext(name)[1]
    if extension in _C:
        return C
    if extension in _PYTHON:
        return PYTHON
    if extension in _JS:
        return JS
    if extension in _SHELL:
        return SHELL
    if name in ("dockerfile", "containerfile") or name.startswith("dockerfile.") or name.endswith(".dockerfile"):
        return DOCKERFILE
    return None


_COMMENT = {
    C: re.compile(r"^\s*(?://|/\*|\*(?:\s|/|$))"),
    JS: re.compile(r"^\s*(?://|/\*|\*(?:\s|/|$))"),
    PYTHON: re.compile(r"^\s*#"),
    SHELL: re.compile(r"^\s*#"),
    DOCKERFILE: re.compile(r"^\s*#"),
}


@dataclass
class _Hunk:
    removed: list[tuple[int, str]] = field(default_factory=list)  # (new-side position, text)
    added: list[tuple[int, str]] = field(default_factory=list)


def _hunks(diff: str) -> Iterator[_Hunk]:
    hunk: _Hunk | None = None
    old_left = new_left = new_line = 0
    for raw in split_diff_lines(diff):
        header = parse_hunk_header(raw) if old_left <= 0 and new_left <= 0 or raw.startswith("@@") else None
        if header is not None:
            if hunk is not None:
                yield hunk
            hunk = _Hunk()
            old_left, new_left, new_line = header.old_count, header.new_count, header.new_start
            continue
        if hunk is None or (old_left <= 0 and new_left <= 0) or raw.startswith("\\"):
            continue
        marker = raw[:1]
        if marker == "-":
            hunk.removed.append((new_line, raw[1:]))
            old_left -= 1
        elif marker == "+":
            hunk.added.append((new_line, raw[1:]))
            new_line += 1
            new_left -= 1
        else:
            old_left -= 1
            new_left -= 1
            new_line += 1
    if hunk is not None:
        yield hunk


def _normal(text: str) -> str:
    return " ".join(text.split())


@dataclass(frozen=True)
class RemovedSafeguard:
    line: int
    safeguard: Safeguard


def removed_safeguards(depot_path: str, diff: str) -> list[RemovedSafeguard]:
    """One report per hunk and kind of safeguard the hunk removes and does not put back."""
    language = language_of(depot_path)
    if language is None:
        return []
    comment = _COMMENT[language]
    hunks = list(_hunks(diff))
    added_anywhere = {_normal(text) for hunk in hunks for _, text in hunk.added}
    found: list[RemovedSafeguard] = []
    for hunk in hunks:
        for safeguard in SAFEGUARDS:
            pattern = safeguard.patterns.get(language)
            if pattern is None:
                continue
            if any(pattern.search(text) and not comment.match(text) for _, text in hunk.added):
                continue  # the same kind of safeguard is (re)written in this hunk
            for position, text in hunk.removed:
                if comment.match(text) or not pattern.search(text) or _normal(text) in added_anywhere:
                    continue
                found.append(RemovedSafeguard(_anchor(position, hunk), safeguard))
                break
        dropped = _dropped_clause(hunk, comment)
        if dropped is not None:
            found.append(RemovedSafeguard(dropped, CONDITION_CLAUSE))
    return found


def _clauses(text: str) -> tuple[str, frozenset[str]] | None:
    match = _CONDITION.match(text)
    if match is None or not match[1].strip():
        return None
    parts = frozenset(_normal(p).strip("() ") for p in _CLAUSE_SPLIT.split(match[1]) if p.strip("() "))
    return (match[0].split()[0], parts) if parts else None


def _dropped_clause(hunk: _Hunk, comment: re.Pattern[str]) -> int | None:
    """The added line of a condition that keeps some of a removed condition's clauses and
    drops others (and adds none), or None."""
    removed = [c for _, text in hunk.removed if not comment.match(text) and (c := _clauses(text))]
    for line, text in hunk.added:
        added = None if comment.match(text) else _clauses(text)
        if added is None:
            continue
        for _keyword, before in removed:
            if added[1] < before:
                return line
    return None


def _anchor(position: int, hunk: _Hunk) -> int:
    """The hunk's added line nearest the removal point, else the point itself."""
    if hunk.added:
        return min((line for line, _ in hunk.added), key=lambda line: (abs(line - position), line))
    return max(position, 1)

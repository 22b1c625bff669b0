"""The depot's review policy (`.p4review.toml`, docs/policy.md), pure: which policy files a
change could be governed by, parsing and validating one, and what the policies in force say
about a file (ignored? noise rules, reviewers, extra instructions).

Everything here reads text a developer with depot write access controls, so each step is bounded
before it runs: a file's size and nesting depth before the TOML parser (which recurses), and
`ignore` globs are matched by RE2 in linear time (a backtracking engine such as `re` would not)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from pydantic import ValidationError

from p4review.models.policy import (
    POLICY_FILE_NAME,
    POLICY_SCHEMA_VERSION,
    DepotPolicy,
    NoiseRule,
    PolicyDiagnostic,
    PolicyFile,
    ReviewerRule,
)

MAX_POLICY_BYTES = 64 * 1024
# Deeper than any valid file (`[[paths]]` holds a table in an array: 2) by a margin; tomllib
# recurses once per level, and 600 levels end in RecursionError.
MAX_POLICY_NESTING = 8
# Policy notes a job record carries (its item has a size limit; the change artifact has them all).
MAX_POLICY_NOTES_ON_JOB = 20
_MAX_DETAIL_CHARS = 300


def candidate_policy_paths(changed_paths: Iterable[str]) -> list[str]:
    """`//depot/a/b/.p4review.toml` for every directory above a changed file (not the depot
    root `//`), each once, deepest first. All of them: a policy that governs a file must never
    be missed for the number of directories a change touches (fetch asks p4 in batches)."""
    directories: set[str] = set()
    for path in changed_paths:
        if not path.startswith("//"):
            continue
        parts = path[2:].split("/")[:-1]
        for depth in range(1, len(parts) + 1):
            directories.add("//" + "/".join(parts[:depth]) + "/")
    ordered = sorted(directories, key=lambda d: (-d.count("/"), d))
    return [directory + POLICY_FILE_NAME for directory in ordered]


def is_policy_file(depot_path: str) -> bool:
    """A `.p4review.toml` (a change to one is always reviewed and called out)."""
    return depot_path.rsplit("/", 1)[-1] == POLICY_FILE_NAME


def parse_policy_file(source: str, revision: str, data: bytes) -> DepotPolicy | PolicyDiagnostic:
    """A policy file's bytes -> the policy, or why it cannot be used (never its content). Never
    raises for what the file holds: a bad file never fails a review."""
    try:
        return _parse(source, revision, data)
    except Exception:  # noqa: BLE001 - whatever a parser does with hostile input, the file is just not used
        return PolicyDiagnostic(source=source, reason="invalid_policy", detail="the file could not be read")


def _parse(source: str, revision: str, data: bytes) -> DepotPolicy | PolicyDiagnostic:
    if len(data) > MAX_POLICY_BYTES:
        return PolicyDiagnostic(source=source, reason="invalid_policy", detail=f"larger than {MAX_POLICY_BYTES} bytes")
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")  # Notepad's byte-order mark: tomllib refuses it
    except UnicodeDecodeError:
        return PolicyDiagnostic(source=source, reason="invalid_toml", detail="not UTF-8 text")
    if nesting_depth(text) > MAX_POLICY_NESTING:
        detail = f"arrays or tables nested deeper than {MAX_POLICY_NESTING} levels"
        return PolicyDiagnostic(source=source, reason="invalid_toml", detail=detail)
    import tomllib  # only a change under a policy file reads one: not at every function's cold start

    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        # The message names the line and column ("Expected '=' ... (at line 3, column 7)").
        return PolicyDiagnostic(source=source, reason="invalid_toml", detail=_position(str(exc)))
    except (RecursionError, ValueError, TypeError, MemoryError):
        return PolicyDiagnostic(source=source, reason="invalid_toml", detail="TOML the parser cannot read")
    if document.get("version") != POLICY_SCHEMA_VERSION:
        shown = document.get("version")
        detail = f"version must be {POLICY_SCHEMA_VERSION}" + (
            f", not {shown}" if isinstance(shown, int) and not isinstance(shown, bool) else ""
        )
        return PolicyDiagnostic(source=source, reason="unsupported_version", detail=detail)
    try:
        policy = PolicyFile.model_validate(document)
    except ValidationError as exc:
        problems = sorted({f"{_field_path(e['loc'])}: {e['type']}" for e in exc.errors()})
        return PolicyDiagnostic(source=source, reason="invalid_policy", detail="; ".join(problems[:5]))
    bad_paths = [p.path for p in policy.paths if ".." in p.path.split("/")]
    if bad_paths:
        return PolicyDiagnostic(source=source, reason="invalid_policy", detail="paths: '..' is not allowed")
    directory = source[: -len(POLICY_FILE_NAME)]
    return DepotPolicy(source=source, revision=revision, directory=directory, policy=policy)


def nesting_depth(text: str) -> int:
    """How deep tables and arrays nest in TOML text, outside strings and comments: `[` and `{`,
    and the dots of a key (a dotted key nests as brackets do: `a.b.c = 1` is `a = {b = {c = 1}}`,
    and tomllib checks every prefix of it, so a key of 30,000 parts took it 10 s). One pass, no
    recursion. Generous where the text is not valid TOML (the parser then refuses it anyway)."""
    depth = deepest = dots = 0
    index, end = 0, len(text)
    while index < end:
        char = text[index]
        if char == "#":
            newline = text.find("\n", index)
            index = end if newline < 0 else newline
            continue
        if char in "\"'":
            index = _string_end(text, index)
            continue
        if char in "[{":
            depth += 1
        elif char in "]}" and depth:
            depth -= 1
        elif char == ".":
            dots += 1
        elif char in "=,\n":  # a key ends: what follows is a value (`1.5`), the next key or line
            dots = 0
        deepest = max(deepest, depth + dots)
        index += 1
    return deepest


def _string_end(text: str, start: int) -> int:
    """The index after the TOML string opening at `start` ('...', "...", and their triple-quoted
    multi-line forms; basic strings have backslash escapes). A one-line string ends at the line's
    end at the latest, so a stray quote cannot hide the rest of the file from the depth count."""
    quote = text[start]
    escapes = quote == '"'
    if text.startswith(quote * 3, start):
        index = start + 3
        while index < len(text) and not text.startswith(quote * 3, index):
            index += 2 if escapes and text[index] == "\\" else 1
        index += 3
        extra = 0  # up to two more quotes belong to the content: `""""` ends with one in it
        while extra < 2 and index < len(text) and text[index] == quote:
            index += 1
            extra += 1
        return min(index, len(text))
    index = start + 1
    while index < len(text) and text[index] != quote and text[index] != "\n":
        index += 2 if escapes and text[index] == "\\" else 1
    return index + 1


# A key the file made up is its text, and the footer of every email under the directory shows the
# diagnostic: it is named only when it reads as a key (a typo such as `reviewer`), never when it
# could carry a sentence, a link or a mention.
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_-]{1,40}")
_UNKNOWN_KEY = "(a key not in the schema)"


def _field_path(loc: Sequence[int | str]) -> str:
    """`paths.0.max_findings`, `reviewer`; `(a key not in the schema)` for any other key."""
    return ".".join(str(part) if isinstance(part, int) or _PLAIN_KEY.fullmatch(part) else _UNKNOWN_KEY for part in loc)


def job_diagnostic(diagnostic: PolicyDiagnostic) -> dict[str, str]:
    """A diagnostic as a job record keeps it: its detail cut to a bounded length (it may name a
    key the file holds)."""
    return diagnostic.model_copy(update={"detail": diagnostic.detail[:_MAX_DETAIL_CHARS]}).model_dump(mode="json")


def _position(message: str) -> str:
    match = re.search(r"\(at line (\d+), column (\d+)\)", message)
    return f"TOML syntax error at line {match[1]}, column {match[2]}" if match else "TOML syntax error"


def governing_policy(policies: Sequence[DepotPolicy], depot_path: str) -> DepotPolicy | None:
    """The nearest policy above `depot_path` (the longest directory), or None."""
    above = [p for p in policies if depot_path.startswith(p.directory)]
    return max(above, key=lambda p: len(p.directory)) if above else None


def is_ignored(policies: Sequence[DepotPolicy], depot_path: str) -> str | None:
    """The policy file whose `ignore` globs match `depot_path` (its source), or None. A policy
    file is never ignored: a change to the review policy is always reviewed."""
    if is_policy_file(depot_path):
        return None
    policy = governing_policy(policies, depot_path)
    if policy is None:
        return None
    relative = depot_path[len(policy.directory) :]
    for pattern in policy.policy.ignore:
        if pattern.strip() and compile_glob(pattern.strip().lstrip("/")).fullmatch(relative):
            return policy.source
    return None


def glob_regex(pattern: str) -> str:
    """An `ignore` glob as a regular expression: `**/` any directories (none too), `**` any
    characters (slashes too), `*` any but a slash, `?` one but a slash; a pattern without a slash
    matches a file name at any depth (as in .gitignore)."""
    out = []
    index = 0
    while index < len(pattern):
        if pattern.startswith("**/", index):
            out.append("(?:.*/)?")
            index += 3
        elif pattern.startswith("**", index):
            out.append(".*")
            index += 2
        else:
            char = pattern[index]
            out.append("[^/]*" if char == "*" else "[^/]" if char == "?" else _literal(char))
            index += 1
    body = "".join(out)
    return f"(?s){body}" if "/" in pattern.rstrip("/") else f"(?s)(?:.*/)?{body}"


def _literal(char: str) -> str:
    """A character as RE2 reads it literally: letters and digits as they are, anything else by its
    code point (`\\x{...}`), so no character of a policy file can be RE2 syntax."""
    return char if char.isascii() and char.isalnum() else f"\\x{{{ord(char):x}}}"


@lru_cache(maxsize=1024)
def compile_glob(pattern: str) -> Any:
    """The glob compiled by RE2 (google-re2), whose automaton runs in time linear in the path
    whatever the pattern: `*a*a*a...b` cannot make it backtrack, as it makes Python's `re` do
    (exponential in the path's length; issue 27 measured 44 s for a 37-character name)."""
    import re2  # google-re2: imported here, so a cold start without policy files does not load it

    return re2.compile(glob_regex(pattern))


def noise_rules_from(policies: Sequence[DepotPolicy]) -> tuple[NoiseRule, ...]:
    """Each policy's min_severity/max_findings as noise rules for its directory and its `paths`."""
    rules = []
    for found in policies:
        policy = found.policy
        if policy.min_severity is not None or policy.max_findings is not None:
            rules.append(
                NoiseRule(
                    prefix=found.directory + "...", min_severity=policy.min_severity, max_findings=policy.max_findings
                )
            )
        for sub in policy.paths:
            if sub.min_severity is not None or sub.max_findings is not None:
                rules.append(
                    NoiseRule(
                        prefix=found.directory + sub.path + "...",
                        min_severity=sub.min_severity,
                        max_findings=sub.max_findings,
                    )
                )
    return tuple(rules)


def reviewer_rules_from(policies: Sequence[DepotPolicy]) -> tuple[ReviewerRule, ...]:
    """Reviewers per depot prefix, added to P4REVIEW_REVIEWERS' (an invalid address becomes a
    failed delivery row, as there), each rule naming its policy file: notify emails only the
    addresses in an allowed domain (notify/recipients.py)."""
    rules: list[ReviewerRule] = []
    for found in policies:
        if found.policy.reviewers:
            reviewers = tuple(found.policy.reviewers)
            rules.append(ReviewerRule(prefix=found.directory + "...", reviewers=reviewers, source=found.source))
        for sub in found.policy.paths:
            if sub.reviewers:
                prefix = found.directory + sub.path + "..."
                rules.append(ReviewerRule(prefix=prefix, reviewers=tuple(sub.reviewers), source=found.source))
    return tuple(rules)


@dataclass(frozen=True)
class Guidance:
    """Extra review instructions from a policy, for the files under `applies_to`."""

    source: str
    applies_to: str
    text: str


def guidance_for(policies: Sequence[DepotPolicy], depot_paths: Sequence[str]) -> list[Guidance]:
    """The instructions that govern any of `depot_paths`: each file's nearest policy's, plus those
    of its `paths` entries the file is under; each once, in source order."""
    found: dict[tuple[str, str], Guidance] = {}
    for path in depot_paths:
        policy = governing_policy(policies, path)
        if policy is None:
            continue
        if policy.policy.instructions and policy.policy.instructions.strip():
            key = (policy.source, policy.directory)
            found.setdefault(key, Guidance(policy.source, policy.directory + "...", policy.policy.instructions.strip()))
        for sub in policy.policy.paths:
            prefix = policy.directory + sub.path
            if sub.instructions and sub.instructions.strip() and path.startswith(prefix):
                guidance = Guidance(policy.source, prefix + "...", sub.instructions.strip())
                found.setdefault((policy.source, prefix), guidance)
    return [found[key] for key in sorted(found)]

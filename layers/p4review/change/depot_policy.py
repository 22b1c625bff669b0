"""The depot's review policy (`.p4review.toml`, docs/policy.md), pure: which policy files a
change could be governed by, parsing and validating one, and what the policies in force say
about a file (ignored? noise rules, reviewers, extra instructions)."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

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

# Directories looked in per change: each changed file's ancestors, deepest first, up to this
# many (one `p4 print` each; a missing file is an immediate "no such file").
MAX_POLICY_CANDIDATES = 16
MAX_POLICY_BYTES = 64 * 1024


def candidate_policy_paths(changed_paths: Iterable[str], limit: int = MAX_POLICY_CANDIDATES) -> list[str]:
    """`//depot/a/b/.p4review.toml` for every directory above a changed file (not the depot
    root `//`), deepest first, at most `limit`."""
    directories: set[str] = set()
    for path in changed_paths:
        if not path.startswith("//"):
            continue
        parts = path[2:].split("/")[:-1]
        for depth in range(1, len(parts) + 1):
            directories.add("//" + "/".join(parts[:depth]) + "/")
    ordered = sorted(directories, key=lambda d: (-d.count("/"), d))
    return [directory + POLICY_FILE_NAME for directory in ordered[:limit]]


def parse_policy_file(source: str, revision: str, data: bytes) -> DepotPolicy | PolicyDiagnostic:
    """A policy file's bytes -> the policy, or why it cannot be used (never its content)."""
    if len(data) > MAX_POLICY_BYTES:
        return PolicyDiagnostic(source=source, reason="invalid_policy", detail=f"larger than {MAX_POLICY_BYTES} bytes")
    try:
        document = tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        return PolicyDiagnostic(source=source, reason="invalid_toml", detail="not UTF-8 text")
    except tomllib.TOMLDecodeError as exc:
        # The message names the line and column ("Expected '=' ... (at line 3, column 7)").
        return PolicyDiagnostic(source=source, reason="invalid_toml", detail=_position(str(exc)))
    if document.get("version") != POLICY_SCHEMA_VERSION:
        shown = document.get("version")
        detail = f"version must be {POLICY_SCHEMA_VERSION}" + (
            f", not {shown}" if isinstance(shown, int) and not isinstance(shown, bool) else ""
        )
        return PolicyDiagnostic(source=source, reason="unsupported_version", detail=detail)
    try:
        policy = PolicyFile.model_validate(document)
    except ValidationError as exc:
        problems = sorted({f"{'.'.join(str(p) for p in e['loc'])}: {e['type']}" for e in exc.errors()})
        return PolicyDiagnostic(source=source, reason="invalid_policy", detail="; ".join(problems[:5]))
    bad_paths = [p.path for p in policy.paths if ".." in p.path.split("/")]
    if bad_paths:
        return PolicyDiagnostic(source=source, reason="invalid_policy", detail="paths: '..' is not allowed")
    directory = source[: -len(POLICY_FILE_NAME)]
    return DepotPolicy(source=source, revision=revision, directory=directory, policy=policy)


def _position(message: str) -> str:
    match = re.search(r"\(at line (\d+), column (\d+)\)", message)
    return f"TOML syntax error at line {match[1]}, column {match[2]}" if match else "TOML syntax error"


def governing_policy(policies: Sequence[DepotPolicy], depot_path: str) -> DepotPolicy | None:
    """The nearest policy above `depot_path` (the longest directory), or None."""
    above = [p for p in policies if depot_path.startswith(p.directory)]
    return max(above, key=lambda p: len(p.directory)) if above else None


def _glob_regex(pattern: str) -> re.Pattern[str]:
    """`**` any characters (slashes too), `*` any but a slash, `?` one; a pattern without a slash
    matches a file name at any depth (as in .gitignore)."""
    out = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if pattern.startswith("**/", index):
            out.append("(?:.*/)?")
            index += 3
            continue
        if pattern.startswith("**", index):
            out.append(".*")
            index += 2
            continue
        out.append("[^/]*" if char == "*" else "[^/]" if char == "?" else re.escape(char))
        index += 1
    body = "".join(out)
    return re.compile(body if "/" in pattern.rstrip("/") else f"(?:.*/)?{body}")


def is_ignored(policies: Sequence[DepotPolicy], depot_path: str) -> str | None:
    """The policy file whose `ignore` globs match `depot_path` (its source), or None."""
    policy = governing_policy(policies, depot_path)
    if policy is None:
        return None
    relative = depot_path[len(policy.directory) :]
    for pattern in policy.policy.ignore:
        if pattern.strip() and _glob_regex(pattern.strip().lstrip("/")).fullmatch(relative):
            return policy.source
    return None


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
    failed delivery row, as there)."""
    rules: list[ReviewerRule] = []
    for found in policies:
        if found.policy.reviewers:
            rules.append(ReviewerRule(prefix=found.directory + "...", reviewers=tuple(found.policy.reviewers)))
        for sub in found.policy.paths:
            if sub.reviewers:
                rules.append(ReviewerRule(prefix=found.directory + sub.path + "...", reviewers=tuple(sub.reviewers)))
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

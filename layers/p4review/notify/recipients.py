"""Who gets a review's email (pure): the changelist owner plus reviewers configured per
depot-path prefix as P4REVIEW_REVIEWERS, a JSON array such as

    [{"prefix": "//depot/engine/...", "reviewers": ["lead@example.com"]},
     {"prefix": "//depot/game/main/ui/", "reviewers": ["ui-team@example.com", "qa@example.com"]}]

A rule applies when any changed file is under its prefix (`...` or a trailing `/` marks the
directory). Addresses are trimmed, lower-cased and de-duplicated; the owner comes first, then
reviewers in rule order. An address that cannot be used is rejected with a reason, never
silently dropped: the notify stage records each rejection as a failed delivery row.

Perforce fills a user's Email with `user@client` when nobody set one; that address is
flagged as unverified, as is any address whose domain has no dot (not routable as is).

Reviewers a depot policy file names (`.p4review.toml`, docs/policy.md) are text anyone with write
access to the depot controls, and the email carries code: they are emailed only in an allowed
domain, P4REVIEW_POLICY_REVIEWER_DOMAINS (comma-separated), or by default the owner's own
address's domain. Any other is refused (`domain_not_allowed`) and never sent to."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from p4review.change.depot_paths import sanitize_for_log
from p4review.change.json_rules import parse_rules
from p4review.errors import ConfigError
from p4review.models.policy import REVIEWER_NOT_ALLOWED, PolicyDiagnostic, ReviewerRule
from p4review.notify.delivery import normalize_recipient

SETTING = "P4REVIEW_REVIEWERS"

INVALID_ADDRESS = "invalid_address"
UNVERIFIED_ADDRESS = "unverified_address"
MISSING_ADDRESS = "missing_address"
DOMAIN_NOT_ALLOWED = "domain_not_allowed"
DOMAINS_SETTING = "P4REVIEW_POLICY_REVIEWER_DOMAINS"
_DOMAIN_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")

_MAX_KEY_CHARS = 254  # the longest valid address; rejected text is cut to it


class Rejection(NamedTuple):
    address: str  # as given, or `<missing:USER>` when the owner has no address
    reason: str  # INVALID_ADDRESS | UNVERIFIED_ADDRESS | MISSING_ADDRESS | DOMAIN_NOT_ALLOWED
    source: str | None = None  # the depot policy file that named the address, if one did

    @property
    def row_key(self) -> str:
        """The outbox `recipient` of the failed row: printable and bounded, since the text is
        whatever p4 or the configuration held; addresses lower-cased like deliverable ones.
        Control and invisible characters are escaped visibly (`\\x0d\\x0a`), never dropped: an
        operator must see that the address held a line break."""
        text = self.address if self.reason == MISSING_ADDRESS else self.address.strip().lower()
        return sanitize_for_log(text, limit=_MAX_KEY_CHARS)[:_MAX_KEY_CHARS] or "<empty>"


@dataclass(frozen=True)
class RecipientPlan:
    deliverable: list[str] = field(default_factory=list)
    rejected: list[Rejection] = field(default_factory=list)


def parse_reviewer_policy(value: str) -> tuple[ReviewerRule, ...]:
    return parse_rules(value, ReviewerRule, SETTING)


def parse_reviewer_domains(value: str) -> frozenset[str]:
    """P4REVIEW_POLICY_REVIEWER_DOMAINS: `example.com, studio.example` -> the domains, lower-case
    (empty: the owner's domain applies). A domain matches exactly, not its subdomains."""
    domains = frozenset(part.strip().lower() for part in value.split(",") if part.strip())
    if any(not _is_domain(domain) for domain in domains):
        raise ConfigError(f"{DOMAINS_SETTING} must be a comma-separated list of domain names (example.com)")
    return domains


def _is_domain(text: str) -> bool:
    labels = text.split(".")
    return len(labels) >= 2 and all(_DOMAIN_LABEL.fullmatch(label) for label in labels)


def policy_refusals(rejected: Iterable[Rejection]) -> list[PolicyDiagnostic]:
    """Per policy file, the reviewers refused for their domain, as the diagnostic the email's
    footer and the job show: the domains, never the addresses."""
    domains: dict[str, set[str]] = {}
    for rejection in rejected:
        if rejection.reason == DOMAIN_NOT_ALLOWED and rejection.source is not None:
            domain = rejection.address.strip().lower().rsplit("@", 1)[-1]
            domains.setdefault(rejection.source, set()).add(sanitize_for_log(domain, limit=80))
    return [
        PolicyDiagnostic(
            source=source,
            reason=REVIEWER_NOT_ALLOWED,
            detail=f"reviewers at {', '.join(sorted(found))} not emailed: not an allowed recipient domain",
        )
        for source, found in sorted(domains.items())
    ]


def _applies(rule: ReviewerRule, changed_files: Sequence[str], case_insensitive: bool) -> bool:
    if case_insensitive:
        base = rule.base.lower()
        return any(path.lower().startswith(base) for path in changed_files)
    return any(path.startswith(rule.base) for path in changed_files)


def _check(address: str, *, default_address: str | None = None) -> tuple[str | None, str | None]:
    """(normalized address, None) or (None, rejection reason)."""
    normalized = normalize_recipient(address)
    if normalized is None:
        return None, INVALID_ADDRESS
    if normalized == default_address or "." not in normalized.rsplit("@", 1)[1]:
        return None, UNVERIFIED_ADDRESS
    return normalized, None


def plan_recipients(
    owner_user: str,
    owner_email: str | None,
    client: str,
    changed_files: Iterable[str],
    rules: Sequence[ReviewerRule],
    *,
    case_insensitive: bool = False,
    policy_domains: frozenset[str] = frozenset(),
) -> RecipientPlan:
    """`policy_domains`: where a depot policy's reviewers may be (empty: the owner's domain; an
    owner without a usable address leaves none)."""
    files = list(changed_files)
    deliverable: dict[str, None] = {}
    rejected: list[Rejection] = []
    allowed = set(policy_domains)
    if owner_email is None or not owner_email.strip():
        rejected.append(Rejection(f"<missing:{owner_user}>", MISSING_ADDRESS))
    else:
        normalized, reason = _check(owner_email, default_address=f"{owner_user}@{client}".lower())
        if normalized:
            deliverable[normalized] = None
            if not policy_domains:
                allowed.add(normalized.rsplit("@", 1)[1])
        else:
            rejected.append(Rejection(owner_email, reason or INVALID_ADDRESS))
    for rule in rules:
        if not _applies(rule, files, case_insensitive):
            continue
        for address in rule.reviewers:
            normalized, reason = _check(address)
            if normalized and rule.source is not None and normalized.rsplit("@", 1)[1] not in allowed:
                rejected.append(Rejection(address, DOMAIN_NOT_ALLOWED, rule.source))
            elif normalized:
                deliverable.setdefault(normalized, None)
            else:
                rejected.append(Rejection(address, reason or INVALID_ADDRESS, rule.source))
    # One row per key: a rejection whose key is also deliverable (an operator listed the owner's
    # default address as a reviewer) or repeats another rejection would fight over one outbox row.
    unique: dict[str, Rejection] = {}
    for rejection in rejected:
        if rejection.row_key not in deliverable:
            unique.setdefault(rejection.row_key, rejection)
    return RecipientPlan(deliverable=list(deliverable), rejected=list(unique.values()))

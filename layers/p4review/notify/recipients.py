"""Who gets a review's email (pure): the changelist owner plus reviewers configured per
depot-path prefix as P4REVIEW_REVIEWERS, a JSON array such as

    [{"prefix": "//depot/engine/...", "reviewers": ["lead@example.com"]},
     {"prefix": "//depot/game/main/ui/", "reviewers": ["ui-team@example.com", "qa@example.com"]}]

A rule applies when any changed file is under its prefix (`...` or a trailing `/` marks the
directory). Addresses are trimmed, lower-cased and de-duplicated; the owner comes first, then
reviewers in rule order. An address that cannot be used is rejected with a reason, never
silently dropped: the notify stage records each rejection as a failed delivery row.

Perforce fills a user's Email with `user@client` when nobody set one; that address is
flagged as unverified, as is any address whose domain has no dot (not routable as is)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from p4review.change.depot_paths import sanitize_for_log
from p4review.change.json_rules import parse_rules
from p4review.models.policy import ReviewerRule
from p4review.notify.delivery import normalize_recipient

SETTING = "P4REVIEW_REVIEWERS"

INVALID_ADDRESS = "invalid_address"
UNVERIFIED_ADDRESS = "unverified_address"
MISSING_ADDRESS = "missing_address"

_MAX_KEY_CHARS = 254  # the longest valid address; rejected text is cut to it


class Rejection(NamedTuple):
    address: str  # as given, or `<missing:USER>` when the owner has no address
    reason: str  # INVALID_ADDRESS | UNVERIFIED_ADDRESS | MISSING_ADDRESS

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
) -> RecipientPlan:
    files = list(changed_files)
    deliverable: dict[str, None] = {}
    rejected: list[Rejection] = []
    if owner_email is None or not owner_email.strip():
        rejected.append(Rejection(f"<missing:{owner_user}>", MISSING_ADDRESS))
    else:
        normalized, reason = _check(owner_email, default_address=f"{owner_user}@{client}".lower())
        if normalized:
            deliverable[normalized] = None
        else:
            rejected.append(Rejection(owner_email, reason or INVALID_ADDRESS))
    for rule in rules:
        if not _applies(rule, files, case_insensitive):
            continue
        for address in rule.reviewers:
            normalized, reason = _check(address)
            if normalized:
                deliverable.setdefault(normalized, None)
            else:
                rejected.append(Rejection(address, reason or INVALID_ADDRESS))
    # One row per key: a rejection whose key is also deliverable (an operator listed the owner's
    # default address as a reviewer) or repeats another rejection would fight over one outbox row.
    unique: dict[str, Rejection] = {}
    for rejection in rejected:
        if rejection.row_key not in deliverable:
            unique.setdefault(rejection.row_key, rejection)
    return RecipientPlan(deliverable=list(deliverable), rejected=list(unique.values()))

"""`RedactedDocument`: the only form in which diff text may reach an LLM provider.

How "only the pipeline can make one" is enforced:

1. The constructor takes a module-private token (`_MINT`). Without it (any direct call,
   `dataclasses.replace`, a subclass calling `super().__init__`) it raises `RedactionError`.
   The pipeline gets the token by calling `_mint()`, which is private to this package.
2. Whoever calls it, construction re-scans the text with the canonical rules for the policy
   (not with the rules the caller used) and raises `RedactionError` if anything would still
   be redacted: a broken or missing rule, or text that never went through the pipeline.
   Every line is checked. The pipeline hands over the record of the canonical scan that
   produced the text (ScanRecord): for a line byte-identical to a line of that scan's input
   (verified here by comparing the text, region by region) the prefilter's result is reused,
   and a flagged line whose exact content and rule set the canonical rules passed unchanged
   is not run through the rules again: same pure functions, same input, same result. Every
   line the pipeline changed is prefiltered and run through the rules afresh. This makes the
   guard cost a fraction of a scan instead of a second scan.

Python cannot make (1) airtight (a determined caller can import `_MINT`), which is why (2)
runs on every construction: a document always holds text the canonical rules find clean.
Provider interfaces accept `RedactedDocument`, never `str`, so passing raw text is a type
error, and forging a document still cannot carry a secret the rules know."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import InitVar, dataclass, field
from functools import lru_cache
from types import MappingProxyType
from typing import Any

from p4review.change.redaction.policy import DEFAULT_POLICY, RedactionPolicy
from p4review.change.redaction.rules import default_rules
from p4review.change.redaction.scanner import Scanner, ScanRecord
from p4review.errors import ErrorClass, NonRetryableError

_MINT = object()


class RedactionError(NonRetryableError):
    """Redaction failed, was bypassed, or left something behind. Never retried: the same
    input fails the same way; an operator adds a regression case and fixes the rule.
    POLICY_DENIED: the content is refused by policy (the spec's content-policy rejection).
    The message names classes and counts only, never the matched text."""

    error_class = ErrorClass.POLICY_DENIED


@lru_cache(maxsize=16)
def canonical_scanner(policy: RedactionPolicy) -> Scanner:
    """The default rules for `policy`: what every document is checked against."""
    return Scanner(default_rules(policy))


def leftovers(text: str, policy: RedactionPolicy, previous: ScanRecord | None = None) -> Mapping[str, int]:
    """What the canonical rules would still redact in `text` (empty when it is clean).
    `previous`: the record of the canonical scan that produced `text` (see ScanRecord)."""
    _, counts = canonical_scanner(policy).scan(text, previous=previous)
    return counts


@dataclass(frozen=True)
class RedactedDocument:
    """Redacted diff text plus what a job's diagnostics record about it.

    `counts`: secrets replaced per class (`{"aws_access_key": 1, "password": 2}`), never values.
    `ruleset_version`: rules and policy it was redacted under. `sha256`: of `text` (UTF-8)."""

    text: str
    counts: Mapping[str, int]
    ruleset_version: str
    sha256: str = field(init=False)
    policy: InitVar[RedactionPolicy | None] = None
    mint: InitVar[object] = None
    record: InitVar[ScanRecord | None] = None

    def __post_init__(self, policy: RedactionPolicy | None, mint: object, record: ScanRecord | None) -> None:
        if mint is not _MINT:
            raise RedactionError("a RedactedDocument can only be produced by the redaction pipeline")
        if not isinstance(self.text, str):
            raise RedactionError("redacted text must be str")
        remaining = leftovers(self.text, policy or DEFAULT_POLICY, record)
        if remaining:
            found = ", ".join(f"{name}={count}" for name, count in sorted(remaining.items()))
            raise RedactionError(f"redacted output still matches redaction rules ({found})")
        object.__setattr__(self, "counts", MappingProxyType(dict(sorted(self.counts.items()))))
        # surrogatepass: text decoded from p4 with surrogateescape still hashes, never raises.
        object.__setattr__(self, "sha256", hashlib.sha256(self.text.encode("utf-8", "surrogatepass")).hexdigest())

    def __hash__(self) -> int:
        return hash((self.text, self.ruleset_version))

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def diagnostics(self) -> dict[str, Any]:
        """Safe to log and to store with the job: classes, counts, version, hash. No content."""
        return {
            "redactions": dict(self.counts),
            "redaction_total": self.total,
            "ruleset_version": self.ruleset_version,
            "sha256": self.sha256,
        }


def _mint(
    text: str,
    counts: Mapping[str, int],
    ruleset_version: str,
    policy: RedactionPolicy,
    record: ScanRecord | None = None,
) -> RedactedDocument:
    """For the pipeline only. `record`: of the canonical scan that produced `text` in this call;
    only a pipeline that ran the canonical scanner passes one."""
    return RedactedDocument(text, counts, ruleset_version, policy=policy, mint=_MINT, record=record)

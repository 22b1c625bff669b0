"""The redaction pipeline: text in, `RedactedDocument` out (or `RedactionError`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

from p4review.change.redaction.copies import MaskedValues
from p4review.change.redaction.document import RedactedDocument, RedactionError, _mint, canonical_scanner
from p4review.change.redaction.policy import DEFAULT_POLICY, RedactionPolicy
from p4review.change.redaction.rules import RULESET_VERSION, Rule
from p4review.change.redaction.scanner import Scanner, ScanRecord

# Redaction repeats until the canonical rules find nothing. Real text needs one round; crafted
# concatenations of secrets can need a second; a broken rule never converges and fails closed.
MAX_ROUNDS = 3


class Redactor:
    """Build once per policy (compiles the prefilter), call `redact` per document. Stateless
    between calls, safe to share. `rules` replaces the default rule list: for tests and
    experiments only; the guard always re-checks with the default rules."""

    def __init__(self, policy: RedactionPolicy = DEFAULT_POLICY, *, rules: Sequence[Rule] | None = None):
        self.policy = policy
        self.ruleset_version = f"{RULESET_VERSION}+policy.{policy.fingerprint}"
        self._canonical = rules is None
        self._scanner = canonical_scanner(policy) if rules is None else Scanner(rules)

    def redact(self, text: str, values: MaskedValues | None = None) -> RedactedDocument:
        """`text` redacted, every copy of a value the rules masked in it masked too. `values`:
        the values masked in other texts of the same change (snapshot_redaction.py), masked
        here as well; this text's are added to it. Without it, the values live for this call."""
        if not isinstance(text, str):
            raise RedactionError(f"redaction needs str, got {type(text).__name__}")
        if values is None:
            values = MaskedValues()
        counts: Counter[str] = Counter()
        for round_ in range(1, MAX_ROUNDS + 1):
            # What the canonical scan learns spares the guard recomputing it.
            record = ScanRecord() if self._canonical else None
            try:
                text, found = self._scanner.scan(text, record=record, values=values)
            except Exception as exc:  # noqa: BLE001 - a rule crashed: nothing may go out unredacted
                # `from None`: the original message could quote the input.
                raise RedactionError(f"redaction pipeline failed ({type(exc).__name__})") from None
            counts += found
            try:
                return _mint(text, counts, self.ruleset_version, self.policy, record)
            except RedactionError:
                # One rule's placeholder can complete the context another rule needs
                # (`Basic dXNl...=` is only a credential once what follows is gone): go again.
                if round_ == MAX_ROUNDS:
                    raise
        raise AssertionError("unreachable")


@lru_cache(maxsize=16)
def redactor_for(policy: RedactionPolicy = DEFAULT_POLICY) -> Redactor:
    """A shared `Redactor` per policy (policies are frozen and hashable)."""
    return Redactor(policy)


def redact(text: str, policy: RedactionPolicy | None = None) -> RedactedDocument:
    """Redact `text` (a unified diff, or any text) under `policy` (default: secrets only)."""
    return redactor_for(policy or DEFAULT_POLICY).redact(text)

"""Deterministic secret redaction for text bound to an LLM (spec "Security considerations",
SEC-32..SEC-44). See docs/redaction.md.

    from p4review.change.redaction import Redactor, RedactionPolicy
    document = Redactor(RedactionPolicy(deidentify_emails=True)).redact(diff_text)
    document.text, document.counts, document.diagnostics()
"""

from p4review.change.redaction.document import RedactedDocument, RedactionError
from p4review.change.redaction.pipeline import Redactor, redact
from p4review.change.redaction.policy import DEFAULT_POLICY, RedactionPolicy
from p4review.change.redaction.rules import RULESET_VERSION

__all__ = [
    "DEFAULT_POLICY",
    "RULESET_VERSION",
    "RedactedDocument",
    "RedactionError",
    "RedactionPolicy",
    "Redactor",
    "redact",
]

"""The catalogue: which rules run, in which order, for a policy; and the version string every
redacted document records. Bump `RULESET_VERSION` whenever a rule changes what it redacts."""

from __future__ import annotations

from p4review.change.redaction.assignments import ASSIGNMENT_RULE, COMMAND_RULE, MARKUP_RULE, SPACED_RULE
from p4review.change.redaction.base import PatternRule, Rule
from p4review.change.redaction.connection_strings import CONNECTION_STRING_RULES
from p4review.change.redaction.credential_files import CREDENTIAL_FILE_RULES
from p4review.change.redaction.keyless import KEYLESS_RULES
from p4review.change.redaction.named_values import NAMED_VALUE_RULES
from p4review.change.redaction.path_parts import PATH_PART_RULE
from p4review.change.redaction.policy import RedactionPolicy
from p4review.change.redaction.policy_rules import EMAIL_RULE, address_rule, host_rule
from p4review.change.redaction.positional import POSITIONAL_RULES
from p4review.change.redaction.ruleset import adopted_rules, ruleset_tag
from p4review.change.redaction.secret_words import SECRET_WORD_RULE
from p4review.change.redaction.tokens import CONNECTION_URI_RULE, TOKEN_RULES

__all__ = ["RULESET_VERSION", "PatternRule", "Rule", "default_rules"]

# The pipeline's own rules, then the adopted ruleset's pinned version.
RULESET_VERSION = f"redaction-rules/5+{ruleset_tag()}"


def default_rules(policy: RedactionPolicy) -> tuple[Rule, ...]:
    """Every single-line rule, in the order they run (PEM blocks are handled by the scanner
    before these). Connection URIs first, then known token formats (ours, then the adopted
    ruleset's), then connection strings and credential files, then name-based rules, then the
    policy's rules, which must see the text after secrets are gone."""
    rules: list[Rule] = [
        CONNECTION_URI_RULE,
        *TOKEN_RULES,
        *adopted_rules(),
        *CONNECTION_STRING_RULES,
        *CREDENTIAL_FILE_RULES,
        MARKUP_RULE,
        ASSIGNMENT_RULE,
        SPACED_RULE,
        COMMAND_RULE,
        *POSITIONAL_RULES,
        NAMED_VALUE_RULES,
        *KEYLESS_RULES,
        SECRET_WORD_RULE,
        PATH_PART_RULE,
    ]
    if policy.deidentify_emails:
        rules.append(EMAIL_RULE)
    if policy.confidential_host_suffixes:
        rules.append(host_rule(policy.confidential_host_suffixes))
    if policy.networks:
        rules.append(address_rule(policy.networks))
    return tuple(rules)

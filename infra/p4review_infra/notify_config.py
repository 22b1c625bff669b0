"""The notify function's configuration from CDK context (docs/infra.md, "Notify configuration").

Checked at synth with what the function checks at cold start (the `EmailBlock` of `NotifySettings`, the
reviewer-policy parser and the policy reviewers' domain list), so a deploy cannot ship a setting the
function would refuse."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from p4review.errors import ConfigError
from p4review.notify.delivery import normalize_recipient
from p4review.notify.recipients import parse_reviewer_domains, parse_reviewer_policy
from p4review.settings.blocks import EmailBlock
from p4review_infra.review_config import ContextError, _text, settings_from_context

CONTEXT_FIELDS = {
    "emailProvider": "email_provider",
    "emailFrom": "email_from",
    "sesConfigurationSet": "ses_configuration_set",
    "reviewers": "reviewers",
    "noFindingsPolicy": "no_findings_policy",
    "policyReviewerDomains": "policy_reviewer_domains",
}
ENV_VARS = {key: EmailBlock.env_var(name) for key, name in CONTEXT_FIELDS.items()}


@dataclass(frozen=True)
class NotifyConfig:
    email_provider: str = "smtp"
    email_from: str | None = None
    ses_configuration_set: str | None = None
    env: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def uses_ses(self) -> bool:
        return self.email_provider == "ses"

    @classmethod
    def from_context(cls, get: Callable[[str], Any]) -> NotifyConfig:
        given = {key: text for key in CONTEXT_FIELDS if (text := _text(get(key)))}
        env = {ENV_VARS[key]: text for key, text in given.items()}
        settings = settings_from_context(env, ENV_VARS, EmailBlock)
        try:
            parse_reviewer_policy(settings.reviewers)
        except ConfigError as exc:
            raise ContextError(f"context reviewers: {exc}") from None
        try:
            parse_reviewer_domains(settings.policy_reviewer_domains)
        except ConfigError as exc:
            raise ContextError(f"context policyReviewerDomains: {exc}") from None
        if settings.email_provider == "ses":
            if not settings.email_from or normalize_recipient(settings.email_from) is None:
                raise ContextError(
                    "context emailFrom is required with emailProvider=ses: a verified SES identity "
                    "(-c emailFrom=p4review@example.com)"
                )
        elif "emailFrom" in given or "sesConfigurationSet" in given:
            raise ContextError(
                "context emailFrom/sesConfigurationSet apply to emailProvider=ses only "
                "(SMTP takes its from-address from the SMTP secret)"
            )
        return cls(
            email_provider=settings.email_provider,
            email_from=settings.email_from,
            ses_configuration_set=settings.ses_configuration_set,
            env=MappingProxyType(env),
        )

    def ses_resources(self, *, partition: str, region: str, account: str) -> list[str]:
        """The identities SendEmail is checked against: the address and its domain (either may be
        the verified one), and the configuration set when one is used."""
        address = (self.email_from or "").strip().lower()
        domain = address.rsplit("@", 1)[-1]
        base = f"arn:{partition}:ses:{region}:{account}"
        resources = [f"{base}:identity/{address}", f"{base}:identity/{domain}"]
        if self.ses_configuration_set:
            resources.append(f"{base}:configuration-set/{self.ses_configuration_set}")
        return resources

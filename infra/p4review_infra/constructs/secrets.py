"""Secrets Manager secrets, one per SecretSpec, named `p4review/<env>/<key>`.

Each secret is created with a generated value so the stack deploys on its own; an operator then
puts the real value (`aws secretsmanager put-secret-value`). The JSON templates below carry
non-secret placeholder fields only; the secret part is generated."""

from __future__ import annotations

import json
from dataclasses import dataclass

from aws_cdk import RemovalPolicy
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from p4review.resources import LLM_SECRET, P4_SECRET, SIGNING_SECRET, SMTP_SECRET, SecretSpec
from p4review_infra.nag import acknowledge
from p4review_infra.swarm_config import SWARM_SECRET

# spec key -> (JSON template of non-secret placeholder fields, key of the generated value).
# The signing secret and the Swarm workflow-test token have no template: their whole value is a
# generated random string (both ends are ours: the trigger or Swarm's test definition, and ingest).
_TEMPLATES: dict[str, tuple[dict[str, str | int], str]] = {
    SMTP_SECRET.key: (
        {
            "host": "smtp.example.invalid",
            "port": 587,
            "tls_mode": "starttls",
            "username": "p4review",
            "from_address": "p4review@example.invalid",
        },
        "password",
    ),
    LLM_SECRET.key: ({"provider": "offline"}, "api_key"),
    P4_SECRET.key: ({"P4PORT": "ssl:perforce.example.invalid:1666", "P4USER": "p4review"}, "P4TICKET"),
    # Only with -c swarmComments=true: the Swarm service user and its ticket (`p4 login -a -p`).
    SWARM_SECRET.key: ({"user": "p4review"}, "ticket"),
}

SIGNING_KEY_LENGTH = 64
GENERATED_PASSWORD_LENGTH = 32


def secret_name(environment: str, spec: SecretSpec) -> str:
    return f"p4review/{environment}/{spec.key}"


@dataclass(frozen=True)
class ProvisionedSecret:
    spec: SecretSpec
    secret: secretsmanager.Secret


class Secrets(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        environment: str,
        specs: tuple[SecretSpec, ...],
        removal_policy: RemovalPolicy,
    ) -> None:
        super().__init__(scope, construct_id)
        self.by_key: dict[str, ProvisionedSecret] = {}
        for spec in specs:
            secret = secretsmanager.Secret(
                self,
                "".join(part.capitalize() for part in spec.key.split("-")),
                secret_name=secret_name(environment, spec),
                description=spec.description,
                generate_secret_string=self._generator(spec),
                removal_policy=removal_policy,
            )
            self.by_key[spec.key] = ProvisionedSecret(spec, secret)

        acknowledge(
            self,
            "AwsSolutions-SMG4",
            "Rotation is a later issue: these values are issued by external systems (Perforce "
            "ticket, SMTP relay, LLM provider, Swarm ticket) and the trigger signing key and the Swarm "
            "workflow-test token are rotated by an operator; the ingest function accepts AWSCURRENT and "
            "AWSPREVIOUS for both, so a manual rotation is seamless.",
        )

    @staticmethod
    def _generator(spec: SecretSpec) -> secretsmanager.SecretStringGenerator:
        if spec.key == SIGNING_SECRET.key or spec.key not in _TEMPLATES:
            # A plain generated random string (the signing key; also any spec without a template).
            return secretsmanager.SecretStringGenerator(
                password_length=SIGNING_KEY_LENGTH, exclude_punctuation=True, include_space=False
            )
        template, generated_key = _TEMPLATES[spec.key]
        return secretsmanager.SecretStringGenerator(
            secret_string_template=json.dumps(template, sort_keys=True),
            generate_string_key=generated_key,
            password_length=GENERATED_PASSWORD_LENGTH,
            exclude_punctuation=True,
            include_space=False,
        )

    def __getitem__(self, key: str) -> ProvisionedSecret:
        return self.by_key[key]

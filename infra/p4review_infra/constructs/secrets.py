"""Secrets Manager secrets, one per SecretSpec, named `p4review/<env>/<key>`.

Each secret is created with a generated value so the stack deploys on its own; an operator then
puts the real value (`aws secretsmanager put-secret-value`). The JSON templates below carry
non-secret placeholder fields only; the secret part is generated.

Rotation (spec SEC-20, docs/runbook.md "Credentials"): the trigger-signing key, whose both ends
are ours, rotates on a schedule (`rotate_automatically`); every other secret is issued by, or
held by, a system the service cannot change, so an operator rotates it when its age alarm fires."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from aws_cdk import RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from p4review.ops.secret_rotation import SIGNING_KEY_LENGTH
from p4review.resources import LLM_SECRET, P4_SECRET, SIGNING_SECRET, SMTP_SECRET, SecretSpec
from p4review_infra.nag import acknowledge
from p4review_infra.swarm_config import SWARM_SECRET, SWARM_TEST_TOKEN_SECRET

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

GENERATED_PASSWORD_LENGTH = 32
# What a rotation function needs on its secret (DescribeSecret for the version labels). No
# GetRandomPassword: the function draws the key from Python's CSPRNG.
ROTATION_ACTIONS = (
    "secretsmanager:DescribeSecret",
    "secretsmanager:GetSecretValue",
    "secretsmanager:PutSecretValue",
    "secretsmanager:UpdateSecretVersionStage",
)

# Why a secret has no rotation schedule (cdk-nag AwsSolutions-SMG4): its value is issued, or held,
# by a system the service cannot change. Each is alarmed when older than credentialMaxAgeDays
# (CredentialAgeDays, constructs/credential_lifecycle.py) and docs/runbook.md "Credentials" gives
# the procedure. A secret without a reason here and without a schedule fails synth.
_AGE_ALARM = (
    "; its age is alarmed (CredentialAgeDays > credentialMaxAgeDays, at most 90 days) and the runbook gives "
    "the procedure"
)
_ISSUED_ELSEWHERE = (
    (SMTP_SECRET, "The SMTP relay issues this password; the relay must accept a new one before the secret holds it"),
    (LLM_SECRET, "The LLM provider issues this API key in its own console; the service cannot create one"),
    (P4_SECRET, "The Perforce server issues this ticket to the service user, whose login the service does not hold"),
    (SWARM_SECRET, "The Perforce server issues the Swarm service user's ticket; the service does not hold its login"),
    (
        SWARM_TEST_TOKEN_SECRET,
        "Generated here, but held by Swarm's workflow-test definition, which only a Swarm admin can change: a "
        "scheduled rotation would leave Swarm holding a refused token one period later",
    ),
)
NOT_ROTATED_BECAUSE = {spec.key: reason + _AGE_ALARM for spec, reason in _ISSUED_ELSEWHERE}


def secret_name(environment: str, spec: SecretSpec) -> str:
    return f"p4review/{environment}/{spec.key}"


@dataclass(frozen=True)
class ProvisionedSecret:
    spec: SecretSpec
    secret: secretsmanager.Secret
    # The functions granted read access (P4ReviewFunction.reads_secret): a secret in use.
    readers: list[str] = field(default_factory=list)


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
        self.rotated: dict[str, int] = {}  # spec key -> days between rotations
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
            if spec.key in NOT_ROTATED_BECAUSE:
                acknowledge(secret, "AwsSolutions-SMG4", NOT_ROTATED_BECAUSE[spec.key])

    def rotate_automatically(self, key: str, rotation_function: lambda_.Function, *, every_days: int) -> None:
        """Secrets Manager rotates `key` every `every_days` with `rotation_function` (the four
        steps). Not `Secret.add_rotation_schedule`: that also grants GetRandomPassword on `*` and
        lets Secrets Manager invoke the function on behalf of any account."""
        provisioned = self.by_key[key]
        secret = provisioned.secret
        permission = lambda_.CfnPermission(
            self,
            f"{secret.node.id}RotationInvoke",
            action="lambda:InvokeFunction",
            function_name=rotation_function.function_arn,
            principal="secretsmanager.amazonaws.com",
            source_account=Stack.of(self).account,  # confused-deputy guard: this account's secrets only
        )
        rotation_function.add_to_role_policy(
            iam.PolicyStatement(actions=list(ROTATION_ACTIONS), resources=[secret.secret_arn])
        )
        schedule = secretsmanager.CfnRotationSchedule(
            self,
            f"{secret.node.id}Rotation",
            secret_id=secret.secret_arn,
            rotation_lambda_arn=rotation_function.function_arn,
            rotation_rules=secretsmanager.CfnRotationSchedule.RotationRulesProperty(
                schedule_expression=f"rate({every_days} days)"
            ),
            # A deploy never moves the key: the first rotation comes on schedule. (Secrets Manager
            # still runs testSecret once, on a pending copy of the current value, to check the setup.)
            rotate_immediately_on_update=False,
        )
        # Secrets Manager invokes the function as the schedule is created: the permission first. (The
        # function itself, and through it its role's policy, come first by the ARN reference.)
        schedule.node.add_dependency(permission)
        self.rotated[key] = every_days

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

"""Credential rotation and age (spec SEC-20; docs/runbook.md, "Credentials").

* The trigger-signing secret rotates on schedule with the rotation function (both ends are ours).
* Every secret some function reads is measured every few hours by the credential-age function
  (`CredentialAgeDays` {Secret}), and alarmed when its current value is older than
  `credentialMaxAgeDays`: an operator rotates a provider-issued credential, and for the signing
  secret the alarm means its rotation is failing.
* Either function failing alarms too: a check that cannot run would otherwise never fire."""

from __future__ import annotations

from aws_cdk import Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from constructs import Construct

from p4review.metric_names import Dimension, MetricName
from p4review.resources import SIGNING_SECRET
from p4review.settings.blocks import CredentialAgeBlock
from p4review_infra.constructs.alarms import Alarms, own_metric
from p4review_infra.constructs.function import P4ReviewFunction
from p4review_infra.constructs.secrets import Secrets
from p4review_infra.rotation_config import RotationConfig

AGE_CHECK_EVERY_HOURS = 6
AGE_SECRETS_ENV = CredentialAgeBlock.env_var("credential_age_secrets")


class CredentialLifecycle(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        environment: str,
        secrets: Secrets,
        rotation: P4ReviewFunction,
        age_check: P4ReviewFunction,
        alarms: Alarms,
        config: RotationConfig,
    ) -> None:
        """Build after every function's `reads_secret`: the secrets in use are those with a reader."""
        super().__init__(scope, construct_id)
        secrets.rotate_automatically(SIGNING_SECRET.key, rotation.function, every_days=config.signing_rotation_days)

        watched = {key: provisioned for key, provisioned in secrets.by_key.items() if provisioned.readers}
        age_check.set_env(
            AGE_SECRETS_ENV,
            Stack.of(self).to_json_string({key: provisioned.secret.secret_arn for key, provisioned in watched.items()}),
        )
        # The version list (its labels and creation dates) only: the check never reads a value.
        age_check.function.add_to_role_policy(
            iam.PolicyStatement(
                actions=["secretsmanager:ListSecretVersionIds"],
                resources=[provisioned.secret.secret_arn for provisioned in watched.values()],
            )
        )
        events.Rule(
            self,
            "AgeCheckSchedule",
            rule_name=f"p4review-{environment}-credential-age",
            description="Publish the age of each p4review secret's current value",
            schedule=events.Schedule.rate(Duration.hours(AGE_CHECK_EVERY_HOURS)),
            targets=[targets.LambdaFunction(age_check.function, retry_attempts=0)],
        )

        self.age_alarms: dict[str, cloudwatch.Alarm] = {}
        for key in watched:
            rotated = key in secrets.rotated
            alarm = cloudwatch.Alarm(
                self,
                f"{watched[key].secret.node.id}Age",
                alarm_name=f"p4review-{environment}-credential-age-{key}",
                alarm_description=(
                    f"The current value of p4review/{environment}/{key} is older than "
                    f"{config.credential_max_age_days} days. "
                    + (
                        "It rotates automatically: a rotation is failing (see the rotate-signing function's log)."
                        if rotated
                        else "Rotate it: docs/runbook.md, Credentials."
                    )
                ),
                metric=own_metric(
                    MetricName.CREDENTIAL_AGE_DAYS,
                    period=Duration.days(1),
                    statistic=cloudwatch.Stats.MAXIMUM,
                    dimensions={Dimension.SECRET: key},
                ),
                threshold=config.credential_max_age_days,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
                evaluation_periods=1,
                # No data is not an old credential; a check that fails alarms on its own (below).
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            )
            alarms.notify(alarm)
            self.age_alarms[key] = alarm

        self.rotation_failed = self._errors_alarm(
            rotation,
            environment,
            "credential-rotation-failed",
            "A step of the trigger-signing secret's rotation failed: AWSCURRENT did not move. See the function's "
            "log; docs/runbook.md, Credentials.",
        )
        self.age_check_failed = self._errors_alarm(
            age_check,
            environment,
            "credential-age-check-failed",
            "The credential-age check failed: credential ages are not being measured. See the function's log.",
        )
        for alarm in (self.rotation_failed, self.age_check_failed):
            alarms.notify(alarm)

    def _errors_alarm(
        self, function: P4ReviewFunction, environment: str, suffix: str, description: str
    ) -> cloudwatch.Alarm:
        return cloudwatch.Alarm(
            self,
            f"{function.node.id}Errors",
            alarm_name=f"p4review-{environment}-{suffix}",
            alarm_description=description,
            metric=function.function.metric_errors(period=Duration.hours(1), statistic=cloudwatch.Stats.SUM),
            threshold=0,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            evaluation_periods=1,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )

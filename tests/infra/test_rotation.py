"""SEC-20 in the template: the trigger-signing secret rotates on a schedule of at most 90 days
with a least-privilege rotation function; every secret in use has an age alarm; the others'
cdk-nag SMG4 acknowledgments are per secret, with reasons."""

from __future__ import annotations

import json

import pytest

from p4review import resources as r
from p4review.metric_names import MetricName
from p4review_infra.constructs.secrets import NOT_ROTATED_BECAUSE, ROTATION_ACTIONS
from p4review_infra.rotation_config import MAX_CREDENTIAL_AGE_DAYS
from tests.infra.test_stack import ENV, functions, logical_id_of, of_type, props, role_statements

DAY = 86_400
# What the default (dev) stack's functions read: ingest the signing key, notify the SMTP
# password and, with fetch, the p4 ticket. The offline reviewer reads no LLM key.
SECRETS_IN_USE = {r.SIGNING_SECRET.key, r.SMTP_SECRET.key, r.P4_SECRET.key}


def _secret_id(synth, key: str) -> str:
    return logical_id_of(synth, "AWS::SecretsManager::Secret", Name=f"p4review/{ENV}/{key}")


@pytest.mark.spec("SEC-20")
def test_the_signing_secret_rotates_within_90_days_with_the_rotation_function(dev):
    (schedule,) = of_type(dev, "AWS::SecretsManager::RotationSchedule").values()  # no other secret rotates
    rotation_fn, _ = functions(dev)["rotate-signing"]
    schedule_props = props(schedule)
    assert schedule_props["SecretId"] == {"Ref": _secret_id(dev, r.SIGNING_SECRET.key)}
    assert schedule_props["RotationLambdaARN"] == {"Fn::GetAtt": [rotation_fn, "Arn"]}
    expression = schedule_props["RotationRules"]["ScheduleExpression"]
    days = int(expression.removeprefix("rate(").removesuffix(" days)"))
    assert expression == f"rate({days} days)" and days == 30 <= MAX_CREDENTIAL_AGE_DAYS
    assert schedule_props["RotateImmediatelyOnUpdate"] is False  # a deploy never moves the key
    # Secrets Manager invokes the function when the schedule is created: its permission comes first.
    ((permission_id, permission),) = [
        (lid, res)
        for lid, res in of_type(dev, "AWS::Lambda::Permission").items()
        if props(res)["Principal"] == "secretsmanager.amazonaws.com"
    ]
    assert props(permission)["FunctionName"] == {"Fn::GetAtt": [rotation_fn, "Arn"]}
    assert props(permission)["SourceAccount"] == {"Ref": "AWS::AccountId"}
    assert schedule["DependsOn"] == [permission_id]  # the function comes first by its ARN (cfn-lint W3005)


def test_the_rotation_function_may_rotate_the_signing_secret_and_nothing_else(dev):
    signing = _secret_id(dev, r.SIGNING_SECRET.key)
    statements = [s for s in role_statements(dev, "rotate-signing") if not s["Action"][0].startswith("logs:")]
    assert statements == [
        {"Action": list(ROTATION_ACTIONS), "Effect": "Allow", "Resource": {"Ref": signing}}
    ]  # no GetRandomPassword on "*": the key comes from Python's CSPRNG
    fn = functions(dev)["rotate-signing"][1]
    assert fn["ReservedConcurrentExecutions"] == 1


def test_the_age_check_lists_the_versions_of_exactly_the_secrets_in_use(dev):
    _, fn = functions(dev)["credential-age"]
    joined = fn["Environment"]["Variables"]["P4REVIEW_CREDENTIAL_AGE_SECRETS"]["Fn::Join"][1]
    text = "".join(part if isinstance(part, str) else f'"{part["Ref"]}"' for part in joined).replace('""', '"')
    watched = json.loads(text)
    assert set(watched) == SECRETS_IN_USE
    assert all(watched[key] == _secret_id(dev, key) for key in SECRETS_IN_USE)
    (statement,) = [s for s in role_statements(dev, "credential-age") if not s["Action"][0].startswith("logs:")]
    assert statement["Action"] == "secretsmanager:ListSecretVersionIds"  # never a value
    assert sorted(ref["Ref"] for ref in statement["Resource"]) == sorted(_secret_id(dev, k) for k in SECRETS_IN_USE)
    (rule,) = [
        props(res)
        for res in of_type(dev, "AWS::Events::Rule").values()
        if props(res)["Name"] == f"p4review-{ENV}-credential-age"
    ]
    assert rule["ScheduleExpression"] == "rate(6 hours)"


@pytest.mark.spec("SEC-20")
def test_each_secret_in_use_alarms_when_older_than_90_days(dev):
    (topic_id,) = of_type(dev, "AWS::SNS::Topic")
    alarms = {
        props(res)["Dimensions"][0]["Value"]: props(res)
        for res in of_type(dev, "AWS::CloudWatch::Alarm").values()
        if props(res).get("MetricName") == MetricName.CREDENTIAL_AGE_DAYS
    }
    assert set(alarms) == SECRETS_IN_USE
    for key, alarm in alarms.items():
        assert alarm["AlarmName"] == f"p4review-{ENV}-credential-age-{key}"
        assert alarm["Namespace"] == "P4Review"
        assert alarm["Dimensions"] == [{"Name": "Secret", "Value": key}, {"Name": "service", "Value": "p4review"}]
        assert (alarm["Statistic"], alarm["Period"], alarm["Threshold"]) == ("Maximum", DAY, MAX_CREDENTIAL_AGE_DAYS)
        assert alarm["ComparisonOperator"] == "GreaterThanThreshold"
        assert alarm["AlarmActions"] == [{"Ref": topic_id}]
    assert "rotation is failing" in alarms[r.SIGNING_SECRET.key]["AlarmDescription"]
    assert "runbook" in alarms[r.P4_SECRET.key]["AlarmDescription"]


def test_a_failing_rotation_or_age_check_alarms(dev):
    names = {props(res)["AlarmName"]: props(res) for res in of_type(dev, "AWS::CloudWatch::Alarm").values()}
    for suffix, function in (
        ("credential-rotation-failed", "rotate-signing"),
        ("credential-age-check-failed", "credential-age"),
    ):
        alarm = names[f"p4review-{ENV}-{suffix}"]
        assert alarm["MetricName"] == "Errors" and alarm["Namespace"] == "AWS/Lambda"
        assert alarm["Dimensions"] == [{"Name": "FunctionName", "Value": {"Ref": functions(dev)[function][0]}}]


@pytest.mark.spec("SEC-20")
def test_smg4_is_acknowledged_per_secret_with_a_reason_and_never_for_the_rotated_one(dev):
    metadata = json.loads((dev.outdir / f"p4review-{ENV}.metadata.json").read_text())
    acknowledged = {
        path: entry["data"]["Annotation::AwsSolutions-SMG4"]
        for path, entries in metadata.items()
        for entry in entries
        if entry["type"] == "aws:cdk:acknowledged-rules" and "Annotation::AwsSolutions-SMG4" in entry["data"]
    }
    assert set(acknowledged) == {f"/p4review-{ENV}/Secrets/{name}" for name in ("Smtp", "Llm", "P4")}
    assert all("age is alarmed" in reason for reason in acknowledged.values())
    assert r.SIGNING_SECRET.key not in NOT_ROTATED_BECAUSE
    assert "swarm-test-token" in NOT_ROTATED_BECAUSE and "Swarm" in NOT_ROTATED_BECAUSE["swarm-test-token"]

"""The logs key (constructs/logs_key.py): every log group of the stack is encrypted with it, its
policy lets CloudWatch Logs use it for this environment's log groups only, and the optional audit
trail's log files are encrypted with it by CloudTrail for that trail only."""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Any

from p4review_infra.constructs.audit import audit_trail_name
from p4review_infra.constructs.logs_key import LOGS_SERVICE_ACTIONS, log_group_name_patterns, logs_key_alias
from tests.infra.test_stack import logical_id_of, of_type, props


def logs_key_id(synth) -> str:
    alias_id = logical_id_of(synth, "AWS::KMS::Alias", AliasName=logs_key_alias(synth.stack.environment_name))
    return props(of_type(synth, "AWS::KMS::Alias")[alias_id])["TargetKeyId"]["Fn::GetAtt"][0]


def key_statements(synth) -> dict[str, dict[str, Any]]:
    key = props(of_type(synth, "AWS::KMS::Key")[logs_key_id(synth)])
    return {s.get("Sid", ""): s for s in key["KeyPolicy"]["Statement"]}


def test_every_log_group_is_encrypted_with_the_logs_key_and_covered_by_its_policy(dev, prod):
    for synth in (dev, prod):
        groups = [props(res) for res in of_type(synth, "AWS::Logs::LogGroup").values()]
        assert len(groups) >= 7  # five stage functions, js-analyzers, API access logs (and more)
        patterns = log_group_name_patterns(synth.stack.environment_name)
        for group in groups:
            assert group["KmsKeyId"] == {"Fn::GetAtt": [logs_key_id(synth), "Arn"]}, group["LogGroupName"]
            # A group outside the key policy's patterns would fail to deploy (CloudWatch Logs may not use the key).
            assert any(fnmatchcase(group["LogGroupName"], pattern) for pattern in patterns), group["LogGroupName"]


def test_logs_key_rotates_and_serves_cloudwatch_logs_for_this_environment_only(dev):
    key = props(of_type(dev, "AWS::KMS::Key")[logs_key_id(dev)])
    assert key["EnableKeyRotation"] is True
    statement = key_statements(dev)["CloudWatchLogsForThisEnvironmentsLogGroups"]
    assert statement["Principal"] == {
        "Service": {"Fn::Join": ["", ["logs.", {"Ref": "AWS::Region"}, ".amazonaws.com"]]}
    }
    assert sorted(statement["Action"]) == sorted(LOGS_SERVICE_ACTIONS)
    arns = statement["Condition"]["ArnLike"]["kms:EncryptionContext:aws:logs:arn"]
    rendered = [part for arn in arns for part in arn["Fn::Join"][1] if isinstance(part, str)]
    assert [part for part in rendered if "log-group:" in part] == [
        f":log-group:{pattern}" for pattern in log_group_name_patterns("dev")
    ]
    assert not any("cloudtrail" in str(s["Principal"]) for s in key_statements(dev).values())


def test_audit_trail_files_are_encrypted_with_the_logs_key_for_that_trail_only(dev_audit):
    (trail,) = [props(res) for res in of_type(dev_audit, "AWS::CloudTrail::Trail").values()]
    assert trail["KMSKeyId"] == {"Fn::GetAtt": [logs_key_id(dev_audit), "Arn"]}
    statements = key_statements(dev_audit)
    for sid, actions in (
        ("CloudTrailEncryptsTheAuditTrail", "kms:GenerateDataKey*"),
        ("CloudTrailDescribesTheKey", "kms:DescribeKey"),
    ):
        statement = statements[sid]
        assert statement["Principal"] == {"Service": "cloudtrail.amazonaws.com"}
        assert statement["Action"] == actions
        source_arn = statement["Condition"]["StringEquals"]["aws:SourceArn"]
        assert source_arn["Fn::Join"][1][-1] == f":trail/{audit_trail_name('dev')}"

"""The synthesized stack matches `p4review.resources` (no drift), grants least privilege per
function, and passes cdk-nag's AwsSolutions pack."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk.assertions import Annotations, Match

from p4review import resources as r
from p4review_infra.function_settings import FUNCTION_SETTINGS, TOKEN_PLACEHOLDERS

ENV = "dev"
DAY = 86_400

COMMON_ENV = {"P4REVIEW_ENV", "POWERTOOLS_SERVICE_NAME", "POWERTOOLS_METRICS_NAMESPACE", "LOG_LEVEL"}
EXPECTED_ENV = {
    "ingest": {r.JOBS_TABLE.env_var, r.OUTBOX_TABLE.env_var, r.FETCH_QUEUE.env_var, r.SIGNING_SECRET.env_var},
    # Stage functions also know their own queue (to delay a retry) and its DLQ (dead-letter envelopes).
    "fetch": {
        r.JOBS_TABLE.env_var,
        r.RAW_BUCKET.env_var,
        r.REDACTED_BUCKET.env_var,
        r.REVIEW_QUEUE.env_var,
        r.P4_SECRET.env_var,
        "P4REVIEW_P4_EXECUTABLE",
        "P4REVIEW_DEPOT_ALLOW_LIST",
        r.FETCH_QUEUE.env_var,
        r.FETCH_QUEUE.dlq_env_var,
    },
    # review and notify never learn the raw bucket's name. The default (offline) reviewer needs no
    # LLM secret; the LLM settings per provider are in test_review_config.py.
    "review": {
        r.JOBS_TABLE.env_var,
        r.REDACTED_BUCKET.env_var,
        r.NOTIFY_QUEUE.env_var,
        r.REVIEW_QUEUE.env_var,
        r.REVIEW_QUEUE.dlq_env_var,
        "P4REVIEW_JS_ANALYZER_FUNCTION",
    },
    "notify": {
        r.JOBS_TABLE.env_var,
        r.OUTBOX_TABLE.env_var,
        r.REDACTED_BUCKET.env_var,
        r.SMTP_SECRET.env_var,
        r.P4_SECRET.env_var,
        "P4REVIEW_P4_EXECUTABLE",
        "P4REVIEW_DEPOT_ALLOW_LIST",
        r.NOTIFY_QUEUE.env_var,
        r.NOTIFY_QUEUE.dlq_env_var,
    },
    # The sweeper re-sends hand-offs to every stage queue and lists every bucket's day prefixes (TTL
    # verification); it reads no secret and no artifact.
    "sweeper": {
        r.JOBS_TABLE.env_var,
        r.FETCH_QUEUE.env_var,
        r.REVIEW_QUEUE.env_var,
        r.NOTIFY_QUEUE.env_var,
        r.RAW_BUCKET.env_var,
        r.REDACTED_BUCKET.env_var,
    },
    # The signing secret's rotation learns its secret from Secrets Manager's event; the age check
    # gets the ids of the secrets in use (tests/infra/test_rotation.py).
    "rotate-signing": set(),
    "credential-age": {"P4REVIEW_CREDENTIAL_AGE_SECRETS"},
}


# -- helpers ----------------------------------------------------------------------------------------


def of_type(synth, cfn_type: str) -> dict[str, dict[str, Any]]:
    return synth.template.find_resources(cfn_type)


def props(resource: dict[str, Any]) -> dict[str, Any]:
    return resource.get("Properties", {})


def functions(synth) -> dict[str, tuple[str, dict[str, Any]]]:
    """p4review function name (ingest, ...) -> (logical id, properties)."""
    found = {}
    for logical_id, res in of_type(synth, "AWS::Lambda::Function").items():
        name = props(res).get("FunctionName", "")
        if isinstance(name, str) and name.startswith(f"p4review-{ENV}-"):
            found[name.removeprefix(f"p4review-{ENV}-")] = (logical_id, props(res))
    return found


def role_statements(synth, function: str) -> list[dict[str, Any]]:
    _, fn = functions(synth)[function]
    role_id = fn["Role"]["Fn::GetAtt"][0]
    statements = []
    for res in of_type(synth, "AWS::IAM::Policy").values():
        if {"Ref": role_id} in props(res)["Roles"]:
            statements.extend(props(res)["PolicyDocument"]["Statement"])
    return statements


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def logical_id_of(synth, cfn_type: str, **match: Any) -> str:
    hits = [
        lid for lid, res in of_type(synth, cfn_type).items() if all(props(res).get(k) == v for k, v in match.items())
    ]
    assert len(hits) == 1, (cfn_type, match, hits)
    return hits[0]


def mentions(statement: dict[str, Any], text: str) -> bool:
    return text in json.dumps(statement.get("Resource"))


# -- functions --------------------------------------------------------------------------------------


PYTHON_FUNCTIONS = ("ingest", "fetch", "review", "notify", "sweeper", "rotate-signing", "credential-age")


def test_five_functions_with_handler_runtime_and_no_active_tracing(dev):
    fns = functions(dev)
    assert set(fns) == {*PYTHON_FUNCTIONS, "js-analyzers"}
    for name, (_, fn) in ((n, fns[n]) for n in PYTHON_FUNCTIONS):
        assert fn["Handler"] == "handler.lambda_handler"
        assert fn["Runtime"] == "python3.12"
        assert fn["Architectures"] == ["x86_64"]
        assert "TracingConfig" not in fn  # no code calls a tracer: no X-Ray, no wildcard grant for it
        assert 256 <= fn["MemorySize"] <= 512
        assert len(fn["Layers"]) == 2, name


@pytest.mark.spec("RV-7")
def test_the_javascript_analyzers_run_on_node_invoked_by_review_only(dev):
    fns = functions(dev)
    js_id, js = fns["js-analyzers"]
    assert (js["Runtime"], js["Handler"], js["Architectures"]) == ("nodejs22.x", "handler.handler", ["x86_64"])
    assert "Layers" not in js
    # Its own role may write its own log group and nothing else.
    assert [s["Action"] for s in role_statements(dev, "js-analyzers")] == [
        ["logs:CreateLogStream", "logs:PutLogEvents"]
    ]
    review_env = fns["review"][1]["Environment"]["Variables"]
    assert review_env["P4REVIEW_JS_ANALYZER_FUNCTION"] == {"Ref": js_id}
    invokers = [
        name
        for name in PYTHON_FUNCTIONS
        if any(
            "lambda:InvokeFunction" in as_list(s["Action"]) and mentions(s, js_id) for s in role_statements(dev, name)
        )
    ]
    assert invokers == ["review"]


def test_function_timeouts_come_from_queue_specs(dev):
    fns = functions(dev)
    assert fns["ingest"][1]["Timeout"] == 10
    for spec in r.QUEUES:
        assert fns[spec.key][1]["Timeout"] == spec.function_timeout_seconds


def test_each_function_gets_exactly_the_env_vars_it_needs(dev):
    for name, (_, fn) in functions(dev).items():
        if name == "js-analyzers":
            assert "Environment" not in fn  # it reads the event and nothing else
            continue
        variables = fn["Environment"]["Variables"]
        assert set(variables) == COMMON_ENV | EXPECTED_ENV[name], name
        assert variables["P4REVIEW_ENV"] == ENV
        assert variables["POWERTOOLS_SERVICE_NAME"] == "p4review"
        assert variables["POWERTOOLS_METRICS_NAMESPACE"] == "P4Review"
    assert functions(dev)["fetch"][1]["Environment"]["Variables"]["P4REVIEW_P4_EXECUTABLE"] == "/opt/bin/p4"


@pytest.mark.spec("SEC-8")
def test_functions_running_p4_get_the_allow_list_from_its_ssm_parameter(dev):
    parameters = dev.template.to_json()["Parameters"]
    (name,) = [key for key, value in parameters.items() if value.get("Default") == f"/p4review/{ENV}/depot-allow-list"]
    assert parameters[name]["Type"] == "AWS::SSM::Parameter::Value<String>"
    for stage in ("fetch", "notify"):
        assert functions(dev)[stage][1]["Environment"]["Variables"]["P4REVIEW_DEPOT_ALLOW_LIST"] == {"Ref": name}


def test_every_p4review_env_var_is_a_field_of_the_functions_settings():
    for name, names in EXPECTED_ENV.items():
        assert {n for n in names if n.startswith("P4REVIEW_")} <= FUNCTION_SETTINGS[name].env_vars(), name


@pytest.mark.parametrize("synth_name", ["dev", "openai", "bedrock"])
def test_each_synthesized_environment_validates_against_its_functions_settings(synth_name, request):
    """Every function's environment, as synthesized, parses with the model its handler parses at
    cold start, and sets no P4REVIEW_ variable that model does not read."""
    synth = request.getfixturevalue(synth_name)
    found = functions(synth)
    assert set(FUNCTION_SETTINGS) <= set(found)
    for name, model in FUNCTION_SETTINGS.items():
        variables = found[name][1]["Environment"]["Variables"]
        env = {
            key: value if isinstance(value, str) else TOKEN_PLACEHOLDERS.get(key, "deploy-time")
            for key, value in variables.items()
            if key.startswith("P4REVIEW_")
        }
        assert set(env) <= model.env_vars(), (name, set(env) - model.env_vars())
        assert model.required_env_vars() <= set(env), (name, model.required_env_vars() - set(env))
        model.from_env(env)  # raises ConfigError naming the variable


def test_synth_fails_naming_a_missing_or_unread_variable():
    from p4review.errors import ConfigError
    from p4review_infra.function_settings import check_environment

    fetch_env = {name: "x" for name in FUNCTION_SETTINGS["fetch"].required_env_vars()} | {"P4REVIEW_ENV": "test"}
    check_environment("fetch", fetch_env)
    missing = {k: v for k, v in fetch_env.items() if k != "P4REVIEW_RAW_BUCKET"}
    with pytest.raises(ConfigError, match="fetch.*P4REVIEW_RAW_BUCKET"):
        check_environment("fetch", missing)
    with pytest.raises(ConfigError, match="fetch.*P4REVIEW_LLM_MODEL.*does not read"):
        check_environment("fetch", {**fetch_env, "P4REVIEW_LLM_MODEL": "gpt"})


def test_env_vars_point_at_the_resources(dev):
    variables = functions(dev)["review"][1]["Environment"]["Variables"]
    assert variables[r.JOBS_TABLE.env_var] == {
        "Ref": logical_id_of(dev, "AWS::DynamoDB::Table", TableName=f"p4review-{ENV}-jobs")
    }
    notify_q = logical_id_of(dev, "AWS::SQS::Queue", QueueName=r.physical_name(ENV, r.NOTIFY_QUEUE.key))
    assert variables[r.NOTIFY_QUEUE.env_var] == {"Ref": notify_q}


def test_log_groups_are_explicit_with_retention(dev):
    groups = {props(res)["LogGroupName"]: props(res) for res in of_type(dev, "AWS::Logs::LogGroup").values()}
    for name, (_, fn) in functions(dev).items():
        group = f"/aws/lambda/p4review-{ENV}-{name}"
        assert groups[group]["RetentionInDays"] == 30
        assert "LogGroup" in fn["LoggingConfig"]


# -- queues -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("spec", r.QUEUES, ids=lambda s: s.key)
def test_stage_queue_and_dlq_match_queue_spec(dev, spec):
    dlq_id = logical_id_of(dev, "AWS::SQS::Queue", QueueName=r.physical_name(ENV, r.dlq_key(spec)))
    queue_id = logical_id_of(dev, "AWS::SQS::Queue", QueueName=r.physical_name(ENV, spec.key))
    queue = props(of_type(dev, "AWS::SQS::Queue")[queue_id])
    dlq = props(of_type(dev, "AWS::SQS::Queue")[dlq_id])

    assert queue["VisibilityTimeout"] == spec.visibility_timeout_seconds
    assert queue["RedrivePolicy"] == {
        "deadLetterTargetArn": {"Fn::GetAtt": [dlq_id, "Arn"]},
        "maxReceiveCount": spec.max_receive_count,
    }
    assert dlq["MessageRetentionPeriod"] == spec.dlq_retention_days * DAY
    for q in (queue, dlq):
        assert q["SqsManagedSseEnabled"] is True


def test_three_queues_and_three_dlqs(dev):
    names = {props(res)["QueueName"] for res in of_type(dev, "AWS::SQS::Queue").values()}
    assert names == {r.physical_name(ENV, q.key) for q in r.QUEUES} | {
        r.physical_name(ENV, r.dlq_key(q)) for q in r.QUEUES
    }


def test_queues_enforce_ssl(dev):
    policies = of_type(dev, "AWS::SQS::QueuePolicy").values()
    assert len(policies) == 6
    for res in policies:
        (statement,) = props(res)["PolicyDocument"]["Statement"]
        assert statement["Effect"] == "Deny"
        assert statement["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


@pytest.mark.spec("WQ-13", "WQP-9")
@pytest.mark.parametrize("spec", r.QUEUES, ids=lambda s: s.key)
def test_event_source_mapping_matches_queue_spec(dev, spec):
    queue_id = logical_id_of(dev, "AWS::SQS::Queue", QueueName=r.physical_name(ENV, spec.key))
    function_id, _ = functions(dev)[spec.key]
    (mapping,) = [
        props(res)
        for res in of_type(dev, "AWS::Lambda::EventSourceMapping").values()
        if props(res)["EventSourceArn"] == {"Fn::GetAtt": [queue_id, "Arn"]}
    ]
    assert mapping["FunctionName"] == {"Ref": function_id}
    assert mapping["BatchSize"] == spec.batch_size
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert mapping["ScalingConfig"] == {"MaximumConcurrency": max(2, spec.max_concurrency)}


def test_three_event_source_mappings(dev):
    dev.template.resource_count_is("AWS::Lambda::EventSourceMapping", 3)


@pytest.mark.spec("ERR-10")
@pytest.mark.parametrize("spec", r.QUEUES, ids=lambda s: s.key)
def test_each_dlq_has_an_alarm(dev, spec):
    dlq_id = logical_id_of(dev, "AWS::SQS::Queue", QueueName=r.physical_name(ENV, r.dlq_key(spec)))
    dev.template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "MetricName": "ApproximateNumberOfMessagesVisible",
            "Namespace": "AWS/SQS",
            "Dimensions": [{"Name": "QueueName", "Value": {"Fn::GetAtt": [dlq_id, "QueueName"]}}],
            "Threshold": 0,
            "ComparisonOperator": "GreaterThanThreshold",
        },
    )


@pytest.mark.spec("ERR-10", "NE-6")
def test_alarms_go_to_an_encrypted_ssl_only_topic(dev):
    ((topic_id, topic),) = of_type(dev, "AWS::SNS::Topic").items()
    assert topic["Properties"]["TopicName"] == f"p4review-{ENV}-alarms"
    assert "alias/aws/sns" in json.dumps(topic["Properties"]["KmsMasterKeyId"])
    policies = json.dumps(of_type(dev, "AWS::SNS::TopicPolicy"))
    assert '"aws:SecureTransport": "false"' in policies and topic_id in policies
    alarms = of_type(dev, "AWS::CloudWatch::Alarm")
    # One per DLQ, escalation, sent without evidence, possible duplicates, artifact TTL, TTL check
    # failed (the offline reviewer has no rollout alarms); the credential ages of the three secrets
    # in use (trigger-signing, smtp, p4), a failed rotation and a failed age check (test_rotation.py).
    assert len(alarms) == len(r.QUEUES) + 5 + 3 + 2
    names = {a["Properties"]["AlarmName"] for a in alarms.values()}
    assert {f"p4review-{ENV}-sent-without-evidence", f"p4review-{ENV}-possible-duplicate-emails"} <= names
    for alarm in alarms.values():
        assert alarm["Properties"]["AlarmActions"] == [{"Ref": topic_id}], alarm["Properties"]["AlarmName"]
        assert alarm["Properties"]["OKActions"] == [{"Ref": topic_id}]


def test_possible_duplicate_emails_alarm_on_the_share_of_unconfirmed_resends(dev):
    (alarm,) = [
        a["Properties"]
        for a in of_type(dev, "AWS::CloudWatch::Alarm").values()
        if a["Properties"]["AlarmName"] == f"p4review-{ENV}-possible-duplicate-emails"
    ]
    (expression,) = [q for q in alarm["Metrics"] if "Expression" in q]
    assert expression["Expression"] == "IF(sent > 0, 100 * FILL(resent, 0) / sent, 0)"
    names = {q["Id"]: q["MetricStat"]["Metric"]["MetricName"] for q in alarm["Metrics"] if "MetricStat" in q}
    assert names == {"resent": "UnconfirmedDeliveryRetried", "sent": "EmailSent"}
    assert alarm["Threshold"] == 1.0 and alarm["ComparisonOperator"] == "GreaterThanThreshold"


@pytest.mark.spec("SEC-31")
def test_artifact_ttl_violations_raise_an_alarm_that_notifies_the_topic(dev):
    (topic_id,) = of_type(dev, "AWS::SNS::Topic")
    (alarm,) = [
        props(res)
        for res in of_type(dev, "AWS::CloudWatch::Alarm").values()
        if props(res)["AlarmName"] == f"p4review-{ENV}-artifact-ttl-violation"
    ]
    assert alarm["MetricName"] == "ArtifactTtlViolations"  # published by the sweeper (ops/retention.py)
    assert alarm["Namespace"] == "P4Review"
    assert alarm["Dimensions"] == [{"Name": "service", "Value": "p4review"}]
    assert alarm["Statistic"] == "Sum"
    assert alarm["Period"] == 3600
    assert alarm["EvaluationPeriods"] == 1
    assert alarm["Threshold"] == 0
    assert alarm["ComparisonOperator"] == "GreaterThanThreshold"
    assert alarm["TreatMissingData"] == "notBreaching"
    assert alarm["AlarmActions"] == [{"Ref": topic_id}]
    assert alarm["OKActions"] == [{"Ref": topic_id}]


def test_a_ttl_check_that_cannot_run_raises_its_own_alarm(dev):
    dev.template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "AlarmName": f"p4review-{ENV}-artifact-ttl-check-failed",
            "MetricName": "ArtifactTtlCheckFailed",
            "Namespace": "P4Review",
            "Threshold": 0,
        },
    )


@pytest.mark.spec("ERR-27")
def test_escalated_replays_raise_an_alarm_on_the_runtime_metric(dev):
    dev.template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "AlarmName": f"p4review-{ENV}-dead-letter-escalated",
            "MetricName": "DeadLetterEscalated",
            "Namespace": "P4Review",
            "Dimensions": [{"Name": "service", "Value": "p4review"}],
            "Statistic": "Sum",
            "Threshold": 0,
        },
    )


# -- tables, buckets, key, secrets ---------------------------------------------------------------


@pytest.mark.spec("OPS-4")
@pytest.mark.parametrize("spec", r.TABLES, ids=lambda s: s.key)
def test_table_matches_table_spec(dev, spec):
    table_id = logical_id_of(dev, "AWS::DynamoDB::Table", TableName=r.physical_name(ENV, spec.key))
    table = props(of_type(dev, "AWS::DynamoDB::Table")[table_id])
    expected_keys = [{"AttributeName": spec.partition_key, "KeyType": "HASH"}]
    if spec.sort_key:
        expected_keys.append({"AttributeName": spec.sort_key, "KeyType": "RANGE"})
    assert table["KeySchema"] == expected_keys
    assert table["BillingMode"] == "PAY_PER_REQUEST"
    assert table["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True
    assert table["SSESpecification"] == {"SSEEnabled": True}
    if spec.ttl_attribute:
        assert table["TimeToLiveSpecification"] == {"AttributeName": spec.ttl_attribute, "Enabled": True}
    else:
        assert "TimeToLiveSpecification" not in table
    indexes = {index["IndexName"]: index for index in table.get("GlobalSecondaryIndexes", [])}
    assert set(indexes) == {index.name for index in spec.indexes}
    for index in spec.indexes:
        assert indexes[index.name]["KeySchema"] == [{"AttributeName": index.partition_key, "KeyType": "HASH"}]
        assert indexes[index.name]["Projection"] == {
            "ProjectionType": "INCLUDE",
            "NonKeyAttributes": list(index.projected),
        }


@pytest.mark.spec("SEC-23", "OPS-4")
def test_retention_ttl_on_both_tables_and_the_sweepers_sparse_index(dev):
    """SEC-23: jobs and outbox rows expire by TTL; the sweeper scans the active-jobs index."""
    assert r.JOBS_TABLE.ttl_attribute == r.OUTBOX_TABLE.ttl_attribute == r.RETENTION_TTL_ATTRIBUTE
    assert r.JOBS_TABLE.indexes == (r.ACTIVE_JOBS_INDEX,)
    index_grants = {
        name: [
            json.dumps(statement["Resource"])
            for statement in role_statements(dev, name)
            if "/index/" in json.dumps(statement["Resource"])
        ]
        for name in PYTHON_FUNCTIONS
    }
    # Only the sweeper reads an index, and only that one (no `index/*`).
    assert {name for name, grants in index_grants.items() if grants} == {"sweeper"}
    (grant,) = index_grants["sweeper"]
    assert f"/index/{r.ACTIVE_JOBS_INDEX.name}" in grant and "/index/*" not in grant


def test_two_tables(dev):
    dev.template.resource_count_is("AWS::DynamoDB::Table", 2)


def bucket_id(synth, spec: r.BucketSpec) -> str:
    (hit,) = [
        lid
        for lid, res in of_type(synth, "AWS::S3::Bucket").items()
        if f'"{r.physical_name(ENV, spec.key)}-"' in json.dumps(props(res).get("BucketName"))
    ]
    return hit


def artifact_key_id(synth) -> str:
    """The key behind `alias/p4review-<env>-artifacts`."""
    alias_id = logical_id_of(synth, "AWS::KMS::Alias", AliasName=f"alias/p4review-{ENV}-artifacts")
    return props(of_type(synth, "AWS::KMS::Alias")[alias_id])["TargetKeyId"]["Fn::GetAtt"][0]


def access_log_bucket_id(synth) -> str:
    """The one bucket every artifact bucket logs to."""
    buckets = of_type(synth, "AWS::S3::Bucket")
    (target,) = {
        json.dumps(props(buckets[bucket_id(synth, spec)])["LoggingConfiguration"]["DestinationBucketName"])
        for spec in r.BUCKETS
    }
    return json.loads(target)["Ref"]


@pytest.mark.spec("SEC-23", "SEC-24", "SEC-29")
def test_two_artifact_buckets_raw_7_days_redacted_30_days():
    assert [(spec.key, spec.expiration_days) for spec in r.BUCKETS] == [("raw", 7), ("redacted", 30)]


@pytest.mark.spec("SEC-23", "SEC-24")
@pytest.mark.parametrize("spec", r.BUCKETS, ids=lambda s: s.key)
def test_artifact_bucket_expiry_and_public_access(dev, spec):
    bucket = props(of_type(dev, "AWS::S3::Bucket")[bucket_id(dev, spec)])
    (rule,) = bucket["LifecycleConfiguration"]["Rules"]
    assert rule["ExpirationInDays"] == spec.expiration_days
    assert rule["AbortIncompleteMultipartUpload"] == {"DaysAfterInitiation": 1}
    assert rule["Status"] == "Enabled"
    assert bucket["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    assert bucket["OwnershipControls"] == {"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]}
    assert "VersioningConfiguration" not in bucket  # expiry deletes for real: no noncurrent versions linger


@pytest.mark.spec("SEC-25")
@pytest.mark.parametrize("spec", r.BUCKETS, ids=lambda s: s.key)
def test_artifact_bucket_is_encrypted_with_the_cmk_and_a_bucket_key(dev, spec):
    bucket = props(of_type(dev, "AWS::S3::Bucket")[bucket_id(dev, spec)])
    (encryption,) = bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert encryption["ServerSideEncryptionByDefault"] == {
        "SSEAlgorithm": "aws:kms",
        "KMSMasterKeyID": {"Fn::GetAtt": [artifact_key_id(dev), "Arn"]},
    }
    assert encryption["BucketKeyEnabled"] is True


@pytest.mark.spec("SEC-28")
@pytest.mark.parametrize("spec", r.BUCKETS, ids=lambda s: s.key)
def test_artifact_bucket_logs_access_to_the_shared_log_bucket(dev, spec):
    bucket = props(of_type(dev, "AWS::S3::Bucket")[bucket_id(dev, spec)])
    assert bucket["LoggingConfiguration"] == {
        "DestinationBucketName": {"Ref": access_log_bucket_id(dev)},
        "LogFilePrefix": f"{spec.key}/",
    }


def test_access_log_bucket_is_sse_s3_private_and_expires(dev):
    logs = props(of_type(dev, "AWS::S3::Bucket")[access_log_bucket_id(dev)])
    (encryption,) = logs["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    # Server access log delivery writes SSE-S3 only.
    assert encryption["ServerSideEncryptionByDefault"] == {"SSEAlgorithm": "AES256"}
    assert [rule["ExpirationInDays"] for rule in logs["LifecycleConfiguration"]["Rules"]] == [90]
    assert all(logs["PublicAccessBlockConfiguration"].values())
    # One log bucket, one bucket per spec (the optional audit trail adds its own); two keys: the
    # artifact key and the logs key (test_logs_key.py).
    dev.template.resource_count_is("AWS::S3::Bucket", len(r.BUCKETS) + 1)
    dev.template.resource_count_is("AWS::KMS::Key", 2)


@pytest.mark.parametrize("which", [*(spec.key for spec in r.BUCKETS), "access-logs"])
def test_bucket_policy_is_ssl_only(dev, which):
    specs = {spec.key: spec for spec in r.BUCKETS}
    target = access_log_bucket_id(dev) if which == "access-logs" else bucket_id(dev, specs[which])
    (policy,) = [
        props(res) for res in of_type(dev, "AWS::S3::BucketPolicy").values() if props(res)["Bucket"] == {"Ref": target}
    ]
    assert any(
        s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}} and s["Action"] == "s3:*"
        for s in policy["PolicyDocument"]["Statement"]
    )


@pytest.mark.spec("SEC-25")
def test_artifact_key_rotates_and_has_the_env_alias(dev):
    key = props(of_type(dev, "AWS::KMS::Key")[artifact_key_id(dev)])
    assert key["EnableKeyRotation"] is True
    assert key.get("KeySpec", "SYMMETRIC_DEFAULT") == "SYMMETRIC_DEFAULT"


@pytest.mark.spec("SEC-16", "SEC-17")
def test_four_secrets_named_by_env_and_key(dev):
    secrets = {props(res)["Name"]: props(res) for res in of_type(dev, "AWS::SecretsManager::Secret").values()}
    assert set(secrets) == {f"p4review/{ENV}/{spec.key}" for spec in r.SECRETS}
    signing = secrets[f"p4review/{ENV}/{r.SIGNING_SECRET.key}"]["GenerateSecretString"]
    assert "SecretStringTemplate" not in signing and signing["PasswordLength"] >= 32
    smtp = secrets[f"p4review/{ENV}/{r.SMTP_SECRET.key}"]["GenerateSecretString"]
    assert smtp["GenerateStringKey"] == "password"
    assert {"host", "port", "tls_mode", "username", "from_address"} <= set(json.loads(smtp["SecretStringTemplate"]))


# -- API --------------------------------------------------------------------------------------------


def test_api_has_post_get_and_ping_proxied_to_ingest(dev):
    ingest_id, _ = functions(dev)["ingest"]
    resources = of_type(dev, "AWS::ApiGateway::Resource")
    paths = {props(res)["PathPart"] for res in resources.values()}
    assert paths == {"v1", "reviews", "{job_id}", "ping"}
    part_of = {logical_id: props(res)["PathPart"] for logical_id, res in resources.items()}
    methods = {
        (props(res)["HttpMethod"], part_of.get(props(res)["ResourceId"]["Ref"])): props(res)
        for res in of_type(dev, "AWS::ApiGateway::Method").values()
    }
    assert set(methods) == {("POST", "reviews"), ("GET", "{job_id}"), ("GET", "ping")}
    for method in methods.values():
        assert method["AuthorizationType"] == "NONE"  # HMAC-verified in the function
        assert method["Integration"]["Type"] == "AWS_PROXY"
        assert ingest_id in json.dumps(method["Integration"]["Uri"])
    assert methods[("GET", "{job_id}")]["RequestParameters"] == {"method.request.path.job_id": True}


def test_api_stage_throttling_tracing_and_access_logs(dev):
    (stage,) = [props(res) for res in of_type(dev, "AWS::ApiGateway::Stage").values()]
    assert stage["TracingEnabled"] is True
    assert "DestinationArn" in stage["AccessLogSetting"]
    (method_settings,) = stage["MethodSettings"]
    assert method_settings["ThrottlingRateLimit"] == 50
    assert method_settings["ThrottlingBurstLimit"] == 100
    assert method_settings["DataTraceEnabled"] is False


def test_outputs(dev):
    outputs = dev.template.find_outputs("*")
    assert "ApiUrl" in outputs
    for spec in r.QUEUES:
        assert f"{spec.key.capitalize()}QueueUrl" in outputs
    for spec in r.TABLES:
        assert f"{spec.key.capitalize()}TableName" in outputs
    assert outputs["RawBucketName"]["Value"] == {"Ref": bucket_id(dev, r.RAW_BUCKET)}
    assert outputs["RedactedBucketName"]["Value"] == {"Ref": bucket_id(dev, r.REDACTED_BUCKET)}
    assert outputs["ArtifactKeyArn"]["Value"] == {"Fn::GetAtt": [artifact_key_id(dev), "Arn"]}
    assert "ArtifactBucketName" not in outputs
    assert "ArtifactAuditTrailArn" not in outputs  # the trail is off by default


# -- least privilege --------------------------------------------------------------------------------


def test_review_cannot_write_changes_or_touch_outbox(dev):
    outbox_id = logical_id_of(dev, "AWS::DynamoDB::Table", TableName=r.physical_name(ENV, r.OUTBOX_TABLE.key))
    statements = role_statements(dev, "review")
    assert statements
    for statement in statements:
        actions = as_list(statement["Action"])
        if any(a.startswith("s3:Put") or a in ("s3:*", "s3:PutObject*") for a in actions):
            assert not mentions(statement, "/changes/"), statement
            assert mentions(statement, "/results/*"), statement
        assert not mentions(statement, outbox_id), statement


def test_ingest_has_no_s3_access(dev):
    for statement in role_statements(dev, "ingest"):
        assert not any(a.startswith("s3:") for a in as_list(statement["Action"])), statement


@pytest.mark.spec("SEC-26")
def test_s3_grants_are_object_level_and_prefix_scoped(dev):
    for name in ("fetch", "review", "notify", "sweeper"):
        for statement in role_statements(dev, name):
            actions = as_list(statement["Action"])
            if any(a.startswith("s3:") for a in actions):
                assert set(actions) <= {"s3:GetObject", "s3:PutObject", "s3:ListBucket"}, statement
                if "s3:ListBucket" in actions:
                    assert "s3:prefix" in json.dumps(statement["Condition"])
                else:
                    assert mentions(statement, "/changes/*") or mentions(statement, "/results/*")


def _arn_suffix(resource: Any, bucket: str) -> str | None:
    """`/changes/*` for `<bucket Arn>/changes/*`, "" for the bucket ARN itself, None otherwise."""
    if resource == {"Fn::GetAtt": [bucket, "Arn"]}:
        return ""
    if isinstance(resource, dict) and "Fn::Join" in resource:
        head, *rest = resource["Fn::Join"][1]
        if head == {"Fn::GetAtt": [bucket, "Arn"]} and len(rest) == 1 and isinstance(rest[0], str):
            return rest[0]
    return None


def artifact_access(synth, function: str) -> dict[str, set[str]]:
    """Bucket key -> every S3 and KMS permission `function` has on that bucket, as strings:
    "s3:GetObject /changes/*", "s3:ListBucket changes/*" (its s3:prefix condition), "kms:Decrypt"
    (granted on the artifact key with this bucket as encryption context). Fails on an S3 or KMS
    statement that cannot be attributed to one bucket."""
    buckets = {spec.key: bucket_id(synth, spec) for spec in r.BUCKETS}
    key_arn = {"Fn::GetAtt": [artifact_key_id(synth), "Arn"]}
    access: dict[str, set[str]] = {spec.key: set() for spec in r.BUCKETS}
    for statement in role_statements(synth, function):
        actions = as_list(statement["Action"])
        if not any(a.startswith(("s3:", "kms:")) for a in actions):
            continue
        assert statement["Effect"] == "Allow"
        if all(a.startswith("kms:") for a in actions):
            assert statement["Resource"] == key_arn, statement
            context = statement["Condition"]["StringLike"]["kms:EncryptionContext:aws:s3:arn"]
            (owner,) = {key for key, lid in buckets.items() if lid in json.dumps(context)}
            for value in context:
                assert _arn_suffix(value, buckets[owner]) is not None, statement
            access[owner].update(actions)
            continue
        assert all(a.startswith("s3:") for a in actions), statement
        attributed = False
        for resource in as_list(statement["Resource"]):
            for key, lid in buckets.items():
                suffix = _arn_suffix(resource, lid)
                if suffix is None:
                    continue
                attributed = True
                for action in actions:
                    if action == "s3:ListBucket":
                        assert suffix == "", statement
                        access[key].update(f"{action} {p}" for p in statement["Condition"]["StringLike"]["s3:prefix"])
                    else:
                        access[key].add(f"{action} {suffix}")
        assert attributed, statement
    return access


EXPECTED_ARTIFACT_ACCESS = {
    "ingest": {"raw": set(), "redacted": set()},
    # Writes the raw snapshot and its redacted copy, reads neither back.
    "fetch": {
        "raw": {"s3:PutObject /changes/*", "kms:GenerateDataKey", "kms:Decrypt"},
        "redacted": {"s3:PutObject /changes/*", "kms:GenerateDataKey", "kms:Decrypt"},
    },
    "review": {
        "raw": set(),
        # results/ is read back too: stored chunk answers let a retried review resume.
        "redacted": {
            "s3:GetObject /changes/*",
            "s3:ListBucket changes/*",
            "kms:Decrypt",
            "s3:GetObject /results/*",
            "s3:ListBucket results/*",
            "s3:PutObject /results/*",
            "kms:GenerateDataKey",
        },
    },
    "notify": {
        "raw": set(),
        "redacted": {
            "s3:GetObject /changes/*",
            "s3:GetObject /results/*",
            "s3:ListBucket changes/*",
            "s3:ListBucket results/*",
            "kms:Decrypt",
        },
    },
    # TTL verification: key names under the artifact prefixes, no object, no key.
    "sweeper": {
        "raw": {"s3:ListBucket changes/*", "s3:ListBucket results/*"},
        "redacted": {"s3:ListBucket changes/*", "s3:ListBucket results/*"},
    },
}


@pytest.mark.spec("SEC-26")
@pytest.mark.parametrize("function", sorted(EXPECTED_ARTIFACT_ACCESS))
def test_artifact_grant_matrix(dev, function):
    assert artifact_access(dev, function) == EXPECTED_ARTIFACT_ACCESS[function]


@pytest.mark.spec("SEC-27", "SEC-30")
@pytest.mark.parametrize("function", ["review", "notify"])
def test_review_and_notify_never_reference_the_raw_bucket(dev, function):
    raw = bucket_id(dev, r.RAW_BUCKET)
    for statement in role_statements(dev, function):
        assert raw not in json.dumps(statement), statement
    variables = functions(dev)[function][1]["Environment"]["Variables"]
    assert raw not in json.dumps(variables)


@pytest.mark.spec("SEC-27")
def test_fetch_cannot_read_either_bucket(dev):
    for statement in role_statements(dev, "fetch"):
        actions = as_list(statement["Action"])
        # kms:Decrypt through S3 completes its multipart uploads; without s3:GetObject it reads nothing.
        reads = [a for a in actions if a.startswith(("s3:Get", "s3:List")) or a in ("s3:*", "kms:*")]
        assert not reads, statement


def test_sweeper_may_only_list_the_artifact_buckets(dev):
    buckets = [{"Fn::GetAtt": [bucket_id(dev, spec), "Arn"]} for spec in r.BUCKETS]
    s3_statements = [
        s for s in role_statements(dev, "sweeper") if any(a.startswith("s3:") for a in as_list(s["Action"]))
    ]
    assert s3_statements
    listed = []
    for statement in s3_statements:
        assert as_list(statement["Action"]) == ["s3:ListBucket"], statement
        assert set(statement["Condition"]["StringLike"]["s3:prefix"]) == {"changes/*", "results/*"}
        listed.extend(as_list(statement["Resource"]))
    assert sorted(map(json.dumps, listed)) == sorted(map(json.dumps, buckets))


@pytest.mark.spec("SEC-26")
def test_kms_grants_only_through_s3_for_one_bucket(dev):
    """One key serves both buckets, so every KMS grant is pinned to S3 (kms:ViaService) and to
    one bucket (the S3 encryption context): the grants on the redacted bucket cannot decrypt raw
    objects even through S3."""
    seen = set()
    for name in functions(dev):
        for statement in role_statements(dev, name):
            actions = as_list(statement["Action"])
            if not any(a.startswith("kms:") for a in actions):
                continue
            assert set(actions) <= {"kms:Decrypt", "kms:GenerateDataKey"}, statement
            assert statement["Resource"] == {"Fn::GetAtt": [artifact_key_id(dev), "Arn"]}
            via = statement["Condition"]["StringEquals"]["kms:ViaService"]
            assert via == {"Fn::Join": ["", ["s3.", {"Ref": "AWS::Region"}, ".amazonaws.com"]]}
            assert "kms:EncryptionContext:aws:s3:arn" in statement["Condition"]["StringLike"]
            seen.add(name)
    assert seen == {"fetch", "review", "notify"}


@pytest.mark.spec("SEC-16")
def test_only_notify_reads_the_smtp_secret(dev):
    smtp_id = logical_id_of(dev, "AWS::SecretsManager::Secret", Name=f"p4review/{ENV}/{r.SMTP_SECRET.key}")
    readers = {
        name
        for name in functions(dev)
        if any(
            mentions(s, smtp_id) and "secretsmanager:GetSecretValue" in as_list(s["Action"])
            for s in role_statements(dev, name)
        )
    }
    assert readers == {"notify"}  # the credential-age check lists its versions, never reads a value


def test_function_roles_use_no_managed_policies(dev):
    for name, (_, fn) in functions(dev).items():
        role = props(of_type(dev, "AWS::IAM::Role")[fn["Role"]["Fn::GetAtt"][0]])
        assert "ManagedPolicyArns" not in role, name


# -- cdk-nag and assets -----------------------------------------------------------------------------


def test_no_unacknowledged_cdk_nag_findings(dev):
    # Synthesis would have raised ValidationFailed; also check the report and the annotations.
    errors = Annotations.from_stack(dev.stack).find_error("*", Match.string_like_regexp("AwsSolutions-.*"))
    assert errors == []
    report = json.loads((dev.outdir / "validation-report.json").read_text())
    assert [p for p in report["pluginReports"] if p.get("conclusion") != "success"] == []


def test_core_layer_asset_contains_the_package(dev):
    core = [
        props(res)
        for res in of_type(dev, "AWS::Lambda::LayerVersion").values()
        if props(res)["LayerName"] == f"p4review-{ENV}-core"
    ]
    (layer,) = core
    asset = dev.outdir / f"asset.{layer['Content']['S3Key'].removesuffix('.zip')}"
    assert (asset / "python" / "p4review" / "__init__.py").is_file()
    assert (asset / "python" / "p4review" / "resources.py").is_file()
    assert not (asset / "python" / "p4review" / "cli").exists()
    assert not (asset / "python" / "p4review_dev").exists()  # the dev stack is not in the package at all
    assert not list(asset.rglob("__pycache__"))


def test_dev_cleans_up_after_itself(dev):
    for res in of_type(dev, "AWS::DynamoDB::Table").values():
        assert res["DeletionPolicy"] == "Delete"
        assert not props(res).get("DeletionProtectionEnabled")
    # Both artifact buckets and the access-log bucket.
    dev.template.resource_count_is("Custom::S3AutoDeleteObjects", len(r.BUCKETS) + 1)
    key = of_type(dev, "AWS::KMS::Key")[artifact_key_id(dev)]
    assert key["DeletionPolicy"] == "Delete"
    assert props(key)["PendingWindowInDays"] == 7


def test_prod_retains_data(prod):
    tables = of_type(prod, "AWS::DynamoDB::Table").values()
    assert len(tables) == 2
    for res in tables:
        assert res["DeletionPolicy"] == "Retain"
        assert props(res)["DeletionProtectionEnabled"] is True
    for res in of_type(prod, "AWS::S3::Bucket").values():
        assert res["DeletionPolicy"] == "Retain"
    for key in of_type(prod, "AWS::KMS::Key").values():  # the artifact key and the logs key
        assert key["DeletionPolicy"] == "Retain"
        assert "PendingWindowInDays" not in props(key)
    prod.template.resource_count_is("Custom::S3AutoDeleteObjects", 0)
    names = {props(res)["QueueName"] for res in of_type(prod, "AWS::SQS::Queue").values()}
    assert r.physical_name("prod", r.FETCH_QUEUE.key) in names


def test_p4_cli_layer_attached_only_where_p4_runs(prod, p4_layer_arn):
    for res in of_type(prod, "AWS::Lambda::Function").values():
        name = props(res).get("FunctionName", "")
        if not isinstance(name, str) or not name.startswith("p4review-prod-"):
            continue
        has_p4 = p4_layer_arn in props(res).get("Layers", [])
        assert has_p4 == name.endswith(("-fetch", "-notify")), name


@pytest.mark.parametrize("spec", r.QUEUES, ids=lambda s: s.key)
def test_each_stage_may_send_only_to_its_own_dlq(dev, spec):
    dlqs = {
        queue.key: logical_id_of(dev, "AWS::SQS::Queue", QueueName=r.physical_name(ENV, r.dlq_key(queue)))
        for queue in r.QUEUES
    }
    sends = [
        statement for statement in role_statements(dev, spec.key) if "sqs:SendMessage" in as_list(statement["Action"])
    ]
    targets = {json.dumps(statement["Resource"]) for statement in sends}
    assert any(dlqs[spec.key] in target for target in targets)
    assert not any(dlqs[other] in target for target in targets for other in dlqs if other != spec.key)


def test_sweeper_runs_on_a_schedule(dev):
    rules = of_type(dev, "AWS::Events::Rule")
    (rule,) = [props(res) for res in rules.values() if props(res).get("Name") == f"p4review-{ENV}-sweep"]
    assert rule["ScheduleExpression"] == "rate(5 minutes)"
    assert functions(dev)["sweeper"][0] in json.dumps(rule["Targets"])


def test_sweeper_cannot_read_artifacts_or_secrets(dev):
    statements = role_statements(dev, "sweeper")
    actions = {action for statement in statements for action in as_list(statement["Action"])}
    assert not any(action.startswith(("kms:", "secretsmanager:")) for action in actions)
    assert {action for action in actions if action.startswith("s3:")} == {"s3:ListBucket"}


@pytest.mark.parametrize("synth_name", ["dev", "openai", "bedrock"])
def test_no_synthesized_template_enables_fault_injection(synth_name, request):
    """Fault injection (faults.py) is for tests and the local stack only."""
    synth = request.getfixturevalue(synth_name)
    assert "P4REVIEW_FAULTS" not in json.dumps(synth.template.to_json())


# -- optional CloudTrail data events ----------------------------------------------------------------


def test_no_audit_trail_by_default(dev, prod):
    dev.template.resource_count_is("AWS::CloudTrail::Trail", 0)
    prod.template.resource_count_is("AWS::CloudTrail::Trail", 0)


@pytest.mark.spec("SEC-28")
def test_audit_trail_records_s3_data_events_for_both_buckets(dev_audit):
    (trail,) = [props(res) for res in of_type(dev_audit, "AWS::CloudTrail::Trail").values()]
    assert trail["TrailName"] == f"p4review-{ENV}-artifact-audit"
    assert trail["EnableLogFileValidation"] is True
    assert trail["IsMultiRegionTrail"] is False
    assert trail["IncludeGlobalServiceEvents"] is False
    (selector,) = trail["EventSelectors"]  # data events only: no management events
    assert selector["ReadWriteType"] == "All"
    assert selector["IncludeManagementEvents"] is False
    (resources,) = selector["DataResources"]
    assert resources["Type"] == "AWS::S3::Object"
    assert sorted(map(json.dumps, resources["Values"])) == sorted(
        json.dumps({"Fn::Join": ["", [{"Fn::GetAtt": [bucket_id(dev_audit, spec), "Arn"]}, "/"]]}) for spec in r.BUCKETS
    )
    assert "ArtifactAuditTrailArn" in dev_audit.template.find_outputs("*")


def test_audit_trail_logs_to_its_own_encrypted_ssl_only_bucket(dev_audit):
    (trail,) = [props(res) for res in of_type(dev_audit, "AWS::CloudTrail::Trail").values()]
    target = trail["S3BucketName"]["Ref"]
    assert target not in {bucket_id(dev_audit, spec) for spec in r.BUCKETS} | {access_log_bucket_id(dev_audit)}
    bucket = props(of_type(dev_audit, "AWS::S3::Bucket")[target])
    (encryption,) = bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert encryption["ServerSideEncryptionByDefault"] == {"SSEAlgorithm": "AES256"}
    assert all(bucket["PublicAccessBlockConfiguration"].values())
    assert bucket["LoggingConfiguration"]["DestinationBucketName"] == {"Ref": access_log_bucket_id(dev_audit)}
    (policy,) = [
        props(res)
        for res in of_type(dev_audit, "AWS::S3::BucketPolicy").values()
        if props(res)["Bucket"] == {"Ref": target}
    ]
    assert any(
        s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
        for s in policy["PolicyDocument"]["Statement"]
    )


def test_audit_trail_synth_has_no_unacknowledged_cdk_nag_findings(dev_audit):
    errors = Annotations.from_stack(dev_audit.stack).find_error("*", Match.string_like_regexp("AwsSolutions-.*"))
    assert errors == []
    report = json.loads((dev_audit.outdir / "validation-report.json").read_text())
    assert [p for p in report["pluginReports"] if p.get("conclusion") != "success"] == []


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, False), (True, True), (False, False), ("true", True), ("True", True), ("false", False), ("", False)],
)
def test_boolean_context_values(value, expected):
    from p4review_infra.app import context_flag

    assert context_flag(value) is expected


def test_boolean_context_rejects_garbage():
    from p4review_infra.app import context_flag

    with pytest.raises(ValueError):
        context_flag("enabled-ish")

"""Per-environment CDK context: W and reserved concurrency per stage, ingest's bound, retention,
the redaction policy and the rotation settings; defaults, an environment's own block, `-c`
overriding it, and every invalid value refused at synth naming its key."""

from __future__ import annotations

import json

import pytest

from p4review import resources as r
from p4review_infra.app import create_app
from p4review_infra.concurrency_config import (
    DEFAULT_INGEST_RESERVED,
    SINGLE_RUN_RESERVED,
    ConcurrencyConfig,
    StageConcurrency,
)
from p4review_infra.environment_context import EnvironmentContext
from p4review_infra.retention_config import retention_env
from p4review_infra.review_config import ContextError
from p4review_infra.rotation_config import RotationConfig
from tests.infra.conftest import SKIP_BUNDLING, _synth
from tests.infra.test_stack import functions, logical_id_of, of_type, props

TABLE_USERS = ("ingest", "fetch", "review", "notify", "sweeper")

# prod's standing configuration, as cdk.json would hold it; staging's block must not leak into prod.
ENVIRONMENTS = {
    "prod": {
        "fetchMaxConcurrency": 4,
        "reviewMaxConcurrency": 8,
        "reviewReservedConcurrency": 10,
        "notifyMaxConcurrency": "3",
        "ingestReservedConcurrency": 30,
        "retentionDays": 730,
        "redactPrivateByDefault": False,
        "redactHostSuffixes": ".corp.example",
        "signingSecretRotationDays": 14,
        "credentialMaxAgeDays": 60,
    },
    "staging": {"reviewMaxConcurrency": 32, "retentionDays": 30},
}


# -- concurrency ------------------------------------------------------------------------------------


def test_concurrency_defaults_are_the_queue_specs_w_reserved_as_much_and_ingest_bounded():
    config = ConcurrencyConfig.default()
    assert config.stages == {
        spec.key: StageConcurrency(spec.max_concurrency, spec.max_concurrency) for spec in r.QUEUES
    }
    assert all(stage.max_concurrency >= 2 for stage in config.stages.values())
    assert config.ingest_reserved == DEFAULT_INGEST_RESERVED


def test_reserved_concurrency_defaults_to_the_stages_w():
    config = ConcurrencyConfig.from_context({"reviewMaxConcurrency": "16", "fetchReservedConcurrency": 5}.get)
    assert config.stages["review"] == StageConcurrency(16, 16)
    assert config.stages["fetch"] == StageConcurrency(2, 5)


@pytest.mark.spec("WQ-13", "OPS-6")
@pytest.mark.parametrize(
    "context, named",
    [
        ({"reviewMaxConcurrency": 1}, "reviewMaxConcurrency"),  # Lambda's floor is 2
        ({"fetchMaxConcurrency": "1001"}, "fetchMaxConcurrency"),  # and its ceiling 1,000
        ({"notifyMaxConcurrency": "two"}, "notifyMaxConcurrency"),
        ({"notifyMaxConcurrency": True}, "notifyMaxConcurrency"),
        ({"reviewMaxConcurrency": 8, "reviewReservedConcurrency": 4}, "reviewReservedConcurrency"),
        ({"ingestReservedConcurrency": 0}, "ingestReservedConcurrency"),
        ({"accountConcurrencyLimit": 100}, "accountConcurrencyLimit"),
    ],
)
def test_an_invalid_concurrency_value_names_its_key(context, named):
    with pytest.raises(ContextError, match=f"context {named}="):
        ConcurrencyConfig.from_context(context.get)


@pytest.mark.spec("OPS-6")
def test_reservations_must_leave_lambdas_unreserved_hundred():
    # 3 stages x 300 + ingest 20 + 3 single runs = 923: over 1,000 - 100.
    context = {f"{stage}MaxConcurrency": 300 for stage in ("fetch", "review", "notify")}
    with pytest.raises(ContextError, match="accountConcurrencyLimit"):
        ConcurrencyConfig.from_context(context.get)
    raised = ConcurrencyConfig.from_context({**context, "accountConcurrencyLimit": 3000}.get)
    assert raised.reserved_total == 3 * 300 + DEFAULT_INGEST_RESERVED + 3 * SINGLE_RUN_RESERVED
    # 292 per stage: 876 + 20 + 3 = 899 fits.
    ConcurrencyConfig.from_context({f"{stage}MaxConcurrency": 292 for stage in ("fetch", "review", "notify")}.get)


# -- retention and rotation -------------------------------------------------------------------------


def test_retention_sets_its_variable_only_when_given():
    assert retention_env({}.get) == {}
    assert retention_env({"retentionDays": 730}.get) == {"P4REVIEW_RETENTION_DAYS": "730"}
    for bad in ("10", "4000", "a year"):
        with pytest.raises(ContextError, match="context retentionDays="):
            retention_env({"retentionDays": bad}.get)


def test_rotation_defaults_rotate_the_signing_key_monthly_and_alarm_at_90_days():
    assert RotationConfig.from_context({}.get) == RotationConfig(signing_rotation_days=30, credential_max_age_days=90)


@pytest.mark.spec("SEC-20")
@pytest.mark.parametrize(
    "context, named",
    [
        ({"signingSecretRotationDays": 91}, "signingSecretRotationDays"),
        ({"signingSecretRotationDays": 90}, "signingSecretRotationDays"),  # leaves no room under the age alarm
        ({"signingSecretRotationDays": 6}, "signingSecretRotationDays"),
        ({"credentialMaxAgeDays": 91}, "credentialMaxAgeDays"),  # SEC-20: at most 90
        ({"credentialMaxAgeDays": 30}, "signingSecretRotationDays"),  # the default 30-day schedule no longer fits
    ],
)
def test_an_invalid_rotation_value_names_its_key(context, named):
    with pytest.raises(ContextError, match=f"context {named}="):
        RotationConfig.from_context(context.get)


# -- the environment's block ------------------------------------------------------------------------


def test_a_flat_key_wins_over_the_environments_block_which_wins_over_the_default():
    context = {"environments": ENVIRONMENTS, "retentionDays": 400}
    get = EnvironmentContext(context.get, "prod")
    assert get("retentionDays") == 400  # -c for one deploy
    assert get("reviewMaxConcurrency") == 8  # prod's block
    assert get("logLevel") is None  # nobody's: the default applies
    assert EnvironmentContext(context.get, "dev")("reviewMaxConcurrency") is None


def test_the_block_may_arrive_as_json_text_from_the_command_line():
    get = EnvironmentContext({"environments": json.dumps(ENVIRONMENTS)}.get, "staging")
    assert get("reviewMaxConcurrency") == 32


@pytest.mark.parametrize("value", ["not json", [1, 2], {"prod": "fast"}])
def test_a_malformed_block_is_refused(value):
    with pytest.raises(ContextError, match="context environments"):
        EnvironmentContext({"environments": value}.get, "prod")


@pytest.mark.spec("OPS-6")
def test_a_misspelt_key_in_the_environments_block_fails_synth_naming_it():
    context = {**SKIP_BUNDLING, "environment": "prod", "environments": {"prod": {"reviewMaxConcurency": 8}}}
    with pytest.raises(ContextError, match=r"environments\.prod: unknown key reviewMaxConcurency"):
        create_app(context)


def test_an_invalid_value_in_the_block_fails_synth_naming_its_key():
    context = {**SKIP_BUNDLING, "environment": "prod", "environments": {"prod": {"reviewReservedConcurrency": 1}}}
    with pytest.raises(ContextError, match="context reviewReservedConcurrency=1"):
        create_app(context)


# -- the synthesized template -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def per_environment(tmp_path_factory):
    # prod's block, plus `-c notifyMaxConcurrency=5` for this one deploy.
    return _synth("prod", tmp_path_factory.mktemp("cdk-context"), environments=ENVIRONMENTS, notifyMaxConcurrency="5")


def _max_concurrency(synth, stage: str) -> int:
    queue_id = logical_id_of(synth, "AWS::SQS::Queue", QueueName=r.physical_name("prod", stage))
    (mapping,) = [
        props(res)
        for res in of_type(synth, "AWS::Lambda::EventSourceMapping").values()
        if props(res)["EventSourceArn"] == {"Fn::GetAtt": [queue_id, "Arn"]}
    ]
    return mapping["ScalingConfig"]["MaximumConcurrency"]


def _prod_functions(synth) -> dict[str, dict]:
    found = {}
    for res in of_type(synth, "AWS::Lambda::Function").values():
        name = props(res).get("FunctionName", "")
        if isinstance(name, str) and name.startswith("p4review-prod-"):
            found[name.removeprefix("p4review-prod-")] = props(res)
    return found


@pytest.mark.spec("WQ-13", "WQP-9", "OPS-6")
def test_event_sources_and_reserved_concurrency_follow_the_environment(per_environment, dev):
    assert {stage: _max_concurrency(per_environment, stage) for stage in ("fetch", "review", "notify")} == {
        "fetch": 4,
        "review": 8,
        "notify": 5,  # -c over the block
    }
    reserved = {name: fn.get("ReservedConcurrentExecutions") for name, fn in _prod_functions(per_environment).items()}
    assert {name: reserved[name] for name in ("ingest", "fetch", "review", "notify", "sweeper")} == {
        "ingest": 30,
        "fetch": 4,
        "review": 10,
        "notify": 5,
        "sweeper": 1,
    }
    # dev has no block: the defaults, W = 2 everywhere and reserved as much.
    dev_reserved = {name: fn.get("ReservedConcurrentExecutions") for name, (_, fn) in functions(dev).items()}
    assert {name: dev_reserved[name] for name in TABLE_USERS} == {
        "ingest": DEFAULT_INGEST_RESERVED,
        "fetch": 2,
        "review": 2,
        "notify": 2,
        "sweeper": 1,
    }


@pytest.mark.spec("OPS-6")
def test_every_python_function_has_a_concurrency_bound_at_least_its_w(dev):
    for name, (_, fn) in functions(dev).items():
        if name == "js-analyzers":
            continue  # constructs/js_analyzers.py
        assert fn["ReservedConcurrentExecutions"] >= 1, name
    for spec in r.QUEUES:
        assert functions(dev)[spec.key][1]["ReservedConcurrentExecutions"] >= spec.max_concurrency


@pytest.mark.spec("OPS-6")
def test_retention_reaches_every_function_that_uses_the_tables(per_environment, dev):
    fns = _prod_functions(per_environment)
    for name in TABLE_USERS:
        assert fns[name]["Environment"]["Variables"]["P4REVIEW_RETENTION_DAYS"] == "730", name
    for name in ("rotate-signing", "credential-age"):
        assert "P4REVIEW_RETENTION_DAYS" not in fns[name]["Environment"]["Variables"]
    # Not given: the Settings default (400 days) applies, no variable.
    assert all(
        "P4REVIEW_RETENTION_DAYS" not in fn["Environment"]["Variables"]
        for _, fn in functions(dev).values()
        if "Environment" in fn
    )


@pytest.mark.spec("OPS-6")
def test_the_redaction_policy_comes_from_the_environments_block(per_environment):
    fns = _prod_functions(per_environment)
    for name in ("fetch", "review"):
        variables = fns[name]["Environment"]["Variables"]
        assert variables["P4REVIEW_REDACT_PRIVATE_BY_DEFAULT"] == "false"
        assert variables["P4REVIEW_REDACT_HOST_SUFFIXES"] == ".corp.example"


def test_rotation_schedule_and_age_threshold_come_from_the_environments_block(per_environment):
    (schedule,) = of_type(per_environment, "AWS::SecretsManager::RotationSchedule").values()
    assert props(schedule)["RotationRules"] == {"ScheduleExpression": "rate(14 days)"}
    thresholds = {
        props(alarm)["Threshold"]
        for alarm in of_type(per_environment, "AWS::CloudWatch::Alarm").values()
        if props(alarm).get("MetricName") == "CredentialAgeDays"
    }
    assert thresholds == {60}

"""The review function's LLM configuration from CDK context: env vars, least privilege per
provider, synth-time validation, and the prompt-rollout alarms (docs/infra.md, docs/rollout.md)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from aws_cdk.assertions import Annotations, Match

from p4review import resources as r
from p4review.review import metric_tracks as m
from tests.infra.conftest import BEDROCK_PROFILE, OPENAI_CONTEXT, SKIP_BUNDLING
from tests.infra.test_stack import ENV, as_list, functions, logical_id_of, mentions, of_type, props, role_statements

LLM_ENV = {
    "P4REVIEW_LLM_PROVIDER",
    "P4REVIEW_LLM_MODEL",
    "P4REVIEW_LLM_BASE_URL",
    "P4REVIEW_LLM_STRUCTURED_OUTPUT",
    "P4REVIEW_REVIEW_CHUNK_TOKENS",
    "P4REVIEW_REVIEW_JOB_TOKENS",
    "P4REVIEW_REVIEW_CONTEXT_TOKENS",
    "P4REVIEW_LINE_OUTSIDE_DIFF",
    "P4REVIEW_NOISE_POLICY",
    "P4REVIEW_PROMPT_CANARY",
    "P4REVIEW_PROMPT_CANARY_PERCENT",
}


def review_env(synth) -> dict[str, Any]:
    return functions(synth)["review"][1]["Environment"]["Variables"]


def llm_secret_id(synth) -> str:
    return logical_id_of(synth, "AWS::SecretsManager::Secret", Name=f"p4review/{ENV}/{r.LLM_SECRET.key}")


def reads_llm_secret(synth) -> bool:
    return any(mentions(s, llm_secret_id(synth)) for s in role_statements(synth, "review"))


def bedrock_statements(synth, function: str = "review") -> list[dict[str, Any]]:
    return [s for s in role_statements(synth, function) if any(a.startswith("bedrock:") for a in as_list(s["Action"]))]


def joined(value: Any) -> str:
    """An Fn::Join ARN as text, pseudo parameters as ${AWS::Region} etc."""
    if isinstance(value, str):
        return value
    return "".join(p if isinstance(p, str) else "${" + p["Ref"] + "}" for p in value["Fn::Join"][1])


def context_error(**context: Any) -> str:
    from p4review_infra.review_config import ContextError, ReviewConfig

    with pytest.raises(ContextError) as info:
        ReviewConfig.from_context(context.get)
    return str(info.value)


# -- environment per provider ---------------------------------------------------------------------


def test_offline_default_sets_no_llm_setting_and_reads_no_secret(dev):
    assert not LLM_ENV & set(review_env(dev))
    assert r.LLM_SECRET.env_var not in review_env(dev)
    assert not reads_llm_secret(dev)
    assert not bedrock_statements(dev)


def test_every_context_key_sets_its_env_var(openai):
    variables = review_env(openai)
    assert {name: variables[name] for name in LLM_ENV} == {
        "P4REVIEW_LLM_PROVIDER": "openai",
        "P4REVIEW_LLM_MODEL": "gpt-4o-mini",
        "P4REVIEW_LLM_BASE_URL": "https://llm.example.internal/v1",
        "P4REVIEW_LLM_STRUCTURED_OUTPUT": "json_object",
        "P4REVIEW_REVIEW_CHUNK_TOKENS": "16000",
        "P4REVIEW_REVIEW_JOB_TOKENS": "120000",
        "P4REVIEW_REVIEW_CONTEXT_TOKENS": "900",
        "P4REVIEW_LINE_OUTSIDE_DIFF": "flag",
        "P4REVIEW_NOISE_POLICY": json.dumps(OPENAI_CONTEXT["noisePolicy"], separators=(",", ":")),
        "P4REVIEW_PROMPT_CANARY": OPENAI_CONTEXT["promptCanary"],
        "P4REVIEW_PROMPT_CANARY_PERCENT": "12.5",
    }


def test_llm_env_vars_are_settings_fields():
    from p4review.review.settings import ReviewSettings

    assert LLM_ENV <= ReviewSettings.env_vars()


def test_the_env_a_synth_accepts_is_the_env_the_function_accepts(openai):
    from p4review.review.settings import ReviewerSettings

    settings = ReviewerSettings.model_validate({name: review_env(openai)[name] for name in LLM_ENV})
    assert (
        settings.llm_provider,
        settings.review_chunk_tokens,
        settings.review_context_tokens,
        settings.prompt_canary_percent,
    ) == ("openai", 16_000, 900, 12.5)


def test_openai_reads_the_llm_secret(openai):
    assert review_env(openai)[r.LLM_SECRET.env_var] == {"Ref": llm_secret_id(openai)}
    assert reads_llm_secret(openai)
    assert not bedrock_statements(openai)


def test_bedrock_gets_no_llm_secret(bedrock):
    variables = review_env(bedrock)
    assert variables["P4REVIEW_LLM_PROVIDER"] == "bedrock"
    assert variables["P4REVIEW_LLM_MODEL"] == BEDROCK_PROFILE
    assert r.LLM_SECRET.env_var not in variables
    assert not reads_llm_secret(bedrock)


def test_bedrock_inference_profile_grant_is_exact(bedrock):
    (statement,) = bedrock_statements(bedrock)
    assert statement["Effect"] == "Allow"
    assert as_list(statement["Action"]) == ["bedrock:InvokeModel"]
    assert [joined(arn) for arn in statement["Resource"]] == [
        f"arn:${{AWS::Partition}}:bedrock:${{AWS::Region}}:${{AWS::AccountId}}:inference-profile/{BEDROCK_PROFILE}",
        f"arn:${{AWS::Partition}}:bedrock:*::foundation-model/{BEDROCK_PROFILE.removeprefix('us.')}",
    ]
    assert "Condition" not in statement
    for other in ("ingest", "fetch", "notify", "sweeper"):
        assert not bedrock_statements(bedrock, other)


def test_bedrock_synth_has_no_unacknowledged_cdk_nag_findings(bedrock):
    errors = Annotations.from_stack(bedrock.stack).find_error("*", Match.string_like_regexp("AwsSolutions-.*"))
    assert errors == []
    report = json.loads((bedrock.outdir / "validation-report.json").read_text())
    assert [p for p in report["pluginReports"] if p.get("conclusion") != "success"] == []


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        # A plain model id: that model, in the function's region only, no account.
        (
            "anthropic.claude-3-5-haiku-20241022-v1:0",
            ["arn:aws:bedrock:eu-west-1::foundation-model/anthropic.claude-3-5-haiku-20241022-v1:0"],
        ),
        (
            "global.anthropic.claude-sonnet-4-5-20250929-v1:0",
            [
                "arn:aws:bedrock:eu-west-1:111122223333:inference-profile/global.anthropic.claude-sonnet-4-5-20250929-v1:0",
                "arn:aws:bedrock:*::foundation-model/anthropic.claude-sonnet-4-5-20250929-v1:0",
            ],
        ),
        (
            "arn:aws:bedrock:eu-central-1:444455556666:inference-profile/eu.amazon.nova-pro-v1:0",
            [
                "arn:aws:bedrock:eu-central-1:444455556666:inference-profile/eu.amazon.nova-pro-v1:0",
                "arn:aws:bedrock:*::foundation-model/amazon.nova-pro-v1:0",
            ],
        ),
        (
            "arn:aws:bedrock:eu-west-1::foundation-model/amazon.nova-pro-v1:0",
            ["arn:aws:bedrock:eu-west-1::foundation-model/amazon.nova-pro-v1:0"],
        ),
    ],
)
def test_bedrock_resources_per_model_form(model, expected):
    from p4review_infra.review_config import bedrock_invoke_resources

    assert (
        list(bedrock_invoke_resources(model, partition="aws", region="eu-west-1", account="111122223333")) == expected
    )


@pytest.mark.spec("SEC-16")
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_key_providers_read_the_secret_and_others_do_not(provider):
    from p4review_infra.review_config import ReviewConfig

    assert ReviewConfig.from_context({"llmProvider": provider, "llmModel": "m"}.get).reads_llm_secret
    assert not ReviewConfig.from_context(
        {"llmProvider": "bedrock", "llmModel": "amazon.nova-pro-v1:0"}.get
    ).reads_llm_secret
    assert not ReviewConfig.from_context({}.get).reads_llm_secret


# -- validation at synth --------------------------------------------------------------------------


def test_synth_fails_on_an_unknown_provider(tmp_path):
    from p4review_infra.app import create_app
    from p4review_infra.review_config import ContextError

    with pytest.raises(
        ContextError, match=r"llmProvider='gemini': expected one of offline, openai, anthropic, bedrock"
    ):
        create_app(context={**SKIP_BUNDLING, "llmProvider": "gemini", "llmModel": "x"}, outdir=str(tmp_path))


@pytest.mark.parametrize("provider", ["openai", "anthropic", "bedrock"])
def test_synth_fails_without_a_model(tmp_path, provider):
    from p4review_infra.app import create_app
    from p4review_infra.review_config import ContextError

    with pytest.raises(ContextError, match=f"llmModel is required with llmProvider={provider}"):
        create_app(context={**SKIP_BUNDLING, "llmProvider": provider}, outdir=str(tmp_path))


@pytest.mark.parametrize(
    ("context", "message"),
    [
        (
            {"llmProvider": "anthropic", "llmModel": "claude", "llmBaseUrl": "https://x"},
            "llmBaseUrl applies to llmProvider=openai only",
        ),
        ({"llmProvider": "openai", "llmModel": "m", "llmBaseUrl": "llm.internal:8000"}, "expected an http"),
        ({"llmStructuredOutput": "xml"}, r"llmStructuredOutput='xml': String should match pattern"),
        ({"reviewChunkTokens": "100"}, r"reviewChunkTokens='100': Input should be greater than or equal to 500"),
        ({"reviewJobTokens": "lots"}, r"reviewJobTokens='lots': Input should be a valid integer"),
        ({"lineOutsideDiff": "warn"}, r"lineOutsideDiff='warn': String should match pattern"),
        # The noise policy and the canary version are checked by the function's own parsers.
        ({"noisePolicy": "{not json"}, "context noisePolicy: P4REVIEW_NOISE_POLICY is invalid"),
        ({"noisePolicy": '{"prefix": "//depot/"}'}, "context noisePolicy: .*not a JSON array"),
        ({"noisePolicy": '[{"max_findings": 2}]'}, "context noisePolicy: .*Field required"),
        (
            {"noisePolicy": '[{"prefix": "//depot/", "min_severity": "urgent"}]'},
            "context noisePolicy: .*should be 'critical'",
        ),
        (
            {"promptCanary": "9.9.9"},
            r"promptCanary='9\.9\.9': not a prompt version in p4review/review/prompt_templates/registry\.json",
        ),
        ({"promptCanaryPercent": "150"}, r"promptCanaryPercent='150': Input should be less than or equal to 100"),
        ({"findingsPerJobSlo": "0"}, "findingsPerJobSlo='0': expected a number > 0"),
        ({"findingsPerJobSlo": "nan"}, "findingsPerJobSlo='nan'"),
        ({"llmProvider": "bedrock", "llmModel": "claude-3"}, "expected a Bedrock model id"),
        ({"llmProvider": "bedrock", "llmModel": "us."}, r"no model id after the us\. inference-profile prefix"),
        (
            {
                "llmProvider": "bedrock",
                "llmModel": "arn:aws:bedrock:us-east-1:111122223333:application-inference-profile/abc123",
            },
            "expected a Bedrock model id",
        ),
    ],
)
def test_invalid_context_values_fail_with_a_clear_message(context, message):
    error = context_error(**context)
    assert re.search(message, error), error


def test_empty_values_count_as_not_given():
    from p4review_infra.review_config import ReviewConfig

    config = ReviewConfig.from_context({"llmProvider": "", "llmBaseUrl": "", "findingsPerJobSlo": ""}.get)
    assert (config.provider, dict(config.env), config.findings_per_job_slo) == ("offline", {}, 0.5)


@pytest.mark.spec("CAP-1")
def test_the_token_budget_is_review_context_checked_at_synth():
    """`llmTokensPerMinute` (docs/capacity.md) reaches the review function as the setting it reads."""
    from p4review_infra.review_config import ReviewConfig

    context = {"llmProvider": "openai", "llmModel": "gpt-4.1", "llmTokensPerMinute": "400000"}
    assert ReviewConfig.from_context(context.get).env["P4REVIEW_LLM_TOKENS_PER_MINUTE"] == "400000"
    error = context_error(llmProvider="openai", llmModel="gpt-4.1", llmTokensPerMinute="lots")
    assert "llmTokensPerMinute='lots': Input should be a valid integer" in error


# -- prompt-rollout alarms ------------------------------------------------------------------------


def alarm(synth, name: str) -> dict[str, Any]:
    (found,) = [
        props(res)
        for res in of_type(synth, "AWS::CloudWatch::Alarm").values()
        if props(res)["AlarmName"] == f"p4review-{ENV}-{name}"
    ]
    return found


def queries(alarm_props: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {query["Id"]: query for query in alarm_props["Metrics"]}


def returned(alarm_props: dict[str, Any]) -> dict[str, Any]:
    (query,) = [q for q in alarm_props["Metrics"] if q.get("ReturnData", True)]
    return query


def assert_track_metric(query: dict[str, Any], metric_name: str, track: str, period: int) -> None:
    stat = query["MetricStat"]
    assert stat["Metric"]["Namespace"] == "P4Review"
    assert stat["Metric"]["MetricName"] == metric_name
    assert sorted(stat["Metric"]["Dimensions"], key=lambda d: d["Name"]) == [
        {"Name": m.TRACK_DIMENSION, "Value": track},
        {"Name": "service", "Value": "p4review"},
    ]
    assert (stat["Stat"], stat["Period"], query["ReturnData"]) == ("Sum", period, False)


def assert_notifies_topic(synth, alarm_props: dict[str, Any]) -> None:
    (topic_id,) = of_type(synth, "AWS::SNS::Topic")
    assert alarm_props["AlarmActions"] == [{"Ref": topic_id}]
    assert alarm_props["OKActions"] == [{"Ref": topic_id}]
    assert alarm_props["TreatMissingData"] == "notBreaching"
    assert "docs/rollout.md" in alarm_props["AlarmDescription"]


def test_offline_review_has_no_rollout_alarms(dev):
    names = [props(res)["AlarmName"] for res in of_type(dev, "AWS::CloudWatch::Alarm").values()]
    assert not [name for name in names if "-prompt-" in name]


@pytest.mark.spec("PR-20")
def test_canary_rejection_alarm(bedrock):
    canary = alarm(bedrock, "prompt-canary-rejections")
    assert_notifies_topic(bedrock, canary)
    assert (canary["EvaluationPeriods"], canary["DatapointsToAlarm"]) == (6, 6)  # 6 x 5 min = 30 min
    assert canary["ComparisonOperator"] == "GreaterThanThreshold"
    assert canary["Threshold"] == 2
    assert returned(canary)["Expression"] == (
        "canary_rate / IF(FILL(stable_rate, 0) > 0.01, FILL(stable_rate, 0), 0.01)"
    )
    q = queries(canary)
    for track in (m.TRACK_CANARY, m.TRACK_STABLE):
        rate = q[f"{track}_rate"]
        assert rate["Expression"] == f"IF(answers_{track} > 0, FILL(rejected_{track}, 0) / answers_{track}, 0)"
        assert rate["ReturnData"] is False
        assert_track_metric(q[f"rejected_{track}"], m.RESPONSES_REJECTED, track, 300)
        assert_track_metric(q[f"answers_{track}"], m.ANSWERS, track, 300)
    assert len(q) == 7


@pytest.mark.spec("PR-18", "PR-21")
@pytest.mark.parametrize(
    ("name", "track"), [("prompt-findings-slo", m.TRACK_CANARY), ("prompt-findings-slo-stable", m.TRACK_STABLE)]
)
def test_findings_slo_alarms(bedrock, openai, name, track):
    slo = alarm(bedrock, name)
    assert_notifies_topic(bedrock, slo)
    assert (slo["EvaluationPeriods"], slo["DatapointsToAlarm"]) == (1, 1)
    assert slo["ComparisonOperator"] == "LessThanThreshold"
    assert slo["Threshold"] == 0.5  # default findingsPerJobSlo
    # Not filled: a 30-minute window without reviewed jobs yields no data point (not breaching).
    assert returned(slo)["Expression"] == f"FILL(findings_{track}, 0) / jobs_{track}"
    q = queries(slo)
    assert_track_metric(q[f"findings_{track}"], m.VALID_FINDINGS, track, 1800)
    assert_track_metric(q[f"jobs_{track}"], m.JOBS_REVIEWED, track, 1800)
    assert len(q) == 3
    assert alarm(openai, name)["Threshold"] == 1.5  # -c findingsPerJobSlo=1.5

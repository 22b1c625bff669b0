"""Helix Swarm from CDK context (docs/infra.md, "Swarm configuration" and "Notify network"): the
secrets, variables, grants and the /v1/swarm/tests route exist only when switched on, each on the
function that needs it; notify can run in existing subnets; bad values fail synth naming the key."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from aws_cdk.assertions import Annotations, Match

from p4review import resources as r
from p4review.settings.blocks import SwarmBlock, SwarmTestRouteBlock
from tests.infra.conftest import SKIP_BUNDLING, _synth
from tests.infra.test_stack import (
    COMMON_ENV,
    ENV,
    EXPECTED_ENV,
    as_list,
    functions,
    logical_id_of,
    mentions,
    of_type,
    props,
    role_statements,
)

SWARM_URL = "https://swarm.example.com/swarm"
VPC_ID = "vpc-0123456789abcdef0"
SUBNETS = ("subnet-0123456789abcdef0", "subnet-0123456789abcdef1")
SECURITY_GROUP = "sg-0123456789abcdef0"
# Every key, given the ways they arrive: `-c key=value` strings, cdk.json booleans and lists.
ALL_CONTEXT = {
    "swarmUrl": SWARM_URL,
    "swarmApi": "v11",
    "swarmComments": "true",
    "swarmCreateReviews": "yes",
    "swarmTaskAt": "medium",
    "swarmTimeoutSeconds": "15",
    "swarmWorkflowTests": True,
    "swarmTestFailAt": "critical",
    "notifyVpcId": VPC_ID,
    "notifySubnetIds": ",".join(SUBNETS),
    "notifySecurityGroupIds": [SECURITY_GROUP],
}
SWARM_ENV = SwarmBlock.env_vars() | SwarmTestRouteBlock.env_vars()
TICKET_SECRET = f"p4review/{ENV}/swarm"
TOKEN_SECRET = f"p4review/{ENV}/swarm-test-token"


@pytest.fixture(scope="module")
def swarm(tmp_path_factory):
    return _synth("dev", tmp_path_factory.mktemp("cdk-swarm"), **ALL_CONTEXT)


@pytest.fixture(scope="module")
def swarm_tests_only(tmp_path_factory):
    context = {"swarmUrl": SWARM_URL, "swarmWorkflowTests": "true"}
    return _synth("dev", tmp_path_factory.mktemp("cdk-swarm-tests"), **context)


def env(synth, function: str) -> dict[str, Any]:
    return functions(synth)[function][1]["Environment"]["Variables"]


def secret_names(synth) -> set[str]:
    return {props(res)["Name"] for res in of_type(synth, "AWS::SecretsManager::Secret").values()}


def readers(synth, secret_name: str) -> dict[str, list[dict[str, Any]]]:
    """Function -> its statements that read the secret's value (the credential-age check lists
    every used secret's versions, never a value)."""
    secret = logical_id_of(synth, "AWS::SecretsManager::Secret", Name=secret_name)
    found = {
        name: [
            s
            for s in role_statements(synth, name)
            if mentions(s, secret) and "secretsmanager:GetSecretValue" in as_list(s["Action"])
        ]
        for name in functions(synth)
    }
    return {name: statements for name, statements in found.items() if statements}


def api_methods(synth) -> dict[tuple[str, str], dict[str, Any]]:
    """(HTTP method, path) -> method properties."""
    resources = {lid: props(res) for lid, res in of_type(synth, "AWS::ApiGateway::Resource").items()}

    def path(logical_id: str) -> str:
        resource = resources.get(logical_id)
        if resource is None:
            return ""
        parent = resource["ParentId"]
        return (path(parent["Ref"]) if "Ref" in parent else "") + "/" + resource["PathPart"]

    return {
        (props(res)["HttpMethod"], path(props(res)["ResourceId"]["Ref"])): props(res)
        for res in of_type(synth, "AWS::ApiGateway::Method").values()
    }


def assert_nag_clean(synth) -> None:
    errors = Annotations.from_stack(synth.stack).find_error("*", Match.string_like_regexp("AwsSolutions-.*"))
    assert errors == []
    report = json.loads((synth.outdir / "validation-report.json").read_text())
    assert [p for p in report["pluginReports"] if p.get("conclusion") != "success"] == []


# -- off by default ---------------------------------------------------------------------------------


@pytest.mark.spec("SW-9")
def test_swarm_and_vpc_are_off_by_default(dev):
    assert secret_names(dev) == {f"p4review/{ENV}/{spec.key}" for spec in r.SECRETS}
    for name in functions(dev):
        fn = functions(dev)[name][1]
        assert not SWARM_ENV & set(fn.get("Environment", {}).get("Variables", {})), name
        assert "VpcConfig" not in fn, name
    assert not any("/swarm" in path for _, path in api_methods(dev))
    assert "SwarmTestsEndpoint" not in dev.template.find_outputs("*")


# -- everything on ----------------------------------------------------------------------------------


@pytest.mark.spec("SW-9")
def test_each_function_gets_only_its_swarm_variables(swarm):
    ticket = logical_id_of(swarm, "AWS::SecretsManager::Secret", Name=TICKET_SECRET)
    token = logical_id_of(swarm, "AWS::SecretsManager::Secret", Name=TOKEN_SECRET)
    assert {k: v for k, v in env(swarm, "notify").items() if k in SWARM_ENV} == {
        "P4REVIEW_SWARM_URL": SWARM_URL,
        "P4REVIEW_SWARM_SECRET_ID": {"Ref": ticket},
        "P4REVIEW_SWARM_API": "v11",
        "P4REVIEW_SWARM_CREATE_REVIEWS": "true",
        "P4REVIEW_SWARM_TASK_AT": "medium",
        "P4REVIEW_SWARM_TIMEOUT_SECONDS": "15",
        "P4REVIEW_SWARM_TEST_FAIL_AT": "critical",
    }
    assert {k: v for k, v in env(swarm, "ingest").items() if k in SWARM_ENV} == {
        "P4REVIEW_SWARM_URL": SWARM_URL,
        "P4REVIEW_SWARM_TEST_SECRET_ID": {"Ref": token},
    }
    for name in ("fetch", "review", "sweeper"):
        assert set(env(swarm, name)) == COMMON_ENV | EXPECTED_ENV[name], name
    # What the synth accepted is what the functions accept at cold start.
    settings = SwarmBlock.model_validate(
        {k: v for k, v in env(swarm, "notify").items() if k in SWARM_ENV and isinstance(v, str)}
    )
    assert (settings.swarm_api, settings.swarm_create_reviews, settings.swarm_timeout_seconds) == ("v11", True, 15.0)


@pytest.mark.spec("SW-9")
def test_swarm_secrets_are_read_by_one_function_each(swarm):
    assert secret_names(swarm) == {f"p4review/{ENV}/{spec.key}" for spec in r.SECRETS} | {TICKET_SECRET, TOKEN_SECRET}
    for secret, function in ((TICKET_SECRET, "notify"), (TOKEN_SECRET, "ingest")):
        found = readers(swarm, secret)
        assert set(found) == {function}, secret
        (statement,) = found[function]  # (merged with the function's other secrets: same actions)
        assert sorted(as_list(statement["Action"])) == [
            "secretsmanager:DescribeSecret",
            "secretsmanager:GetSecretValue",
        ]
    secrets = {props(res)["Name"]: props(res) for res in of_type(swarm, "AWS::SecretsManager::Secret").values()}
    ticket = secrets[TICKET_SECRET]["GenerateSecretString"]  # the operator puts the real ticket
    assert ticket["GenerateStringKey"] == "ticket" and json.loads(ticket["SecretStringTemplate"]) == {
        "user": "p4review"
    }
    token = secrets[TOKEN_SECRET]["GenerateSecretString"]  # ours at both ends: generated
    assert "SecretStringTemplate" not in token and token["PasswordLength"] >= 32
    outputs = swarm.template.find_outputs("*")
    assert {"SwarmSecretArn", "SwarmTestTokenSecretArn", "SwarmTestsEndpoint"} <= set(outputs)


@pytest.mark.spec("SW-9")
def test_swarm_tests_route_is_configured_like_post_reviews(swarm):
    ingest_id, _ = functions(swarm)["ingest"]
    methods = api_methods(swarm)
    assert set(methods) == {
        ("POST", "/v1/reviews"),
        ("GET", "/v1/reviews/{job_id}"),
        ("GET", "/v1/ping"),
        ("POST", "/v1/swarm/tests"),
    }
    route, reviews = methods[("POST", "/v1/swarm/tests")], methods[("POST", "/v1/reviews")]
    assert route["AuthorizationType"] == "NONE"  # the shared token is checked by ingest
    assert route["Integration"]["Type"] == "AWS_PROXY" and ingest_id in json.dumps(route["Integration"]["Uri"])
    assert route["RequestValidatorId"] == reviews["RequestValidatorId"]
    # Only API Gateway may invoke ingest, for this route too.
    permissions = [props(res) for res in of_type(swarm, "AWS::Lambda::Permission").values()]
    assert any("/POST/v1/swarm/tests" in json.dumps(p.get("SourceArn")) for p in permissions)


@pytest.mark.spec("SW-9")
def test_notify_runs_in_the_given_subnets_with_eni_permissions_only(swarm):
    for name, (_, fn) in functions(swarm).items():
        if name != "notify":
            assert "VpcConfig" not in fn, name
    assert functions(swarm)["notify"][1]["VpcConfig"] == {
        "SubnetIds": list(SUBNETS),
        "SecurityGroupIds": [SECURITY_GROUP],
    }
    wildcard = [s for s in role_statements(swarm, "notify") if "*" in as_list(s["Resource"])]
    (statement,) = wildcard  # the only '*' on the role: the ENI actions Lambda needs
    assert sorted(as_list(statement["Action"])) == sorted(
        [
            "ec2:CreateNetworkInterface",
            "ec2:DescribeNetworkInterfaces",
            "ec2:DescribeSubnets",
            "ec2:DeleteNetworkInterface",
            "ec2:AssignPrivateIpAddresses",
            "ec2:UnassignPrivateIpAddresses",
        ]
    )
    role = props(of_type(swarm, "AWS::IAM::Role")[functions(swarm)["notify"][1]["Role"]["Fn::GetAtt"][0]])
    assert "ManagedPolicyArns" not in role
    swarm.template.resource_count_is("AWS::EC2::SecurityGroup", 0)  # imported, never created
    # No lookup and no CDK warning about the imported VPC or subnets.
    warnings = Annotations.from_stack(swarm.stack).find_warning("*", Match.any_value())
    assert not [w for w in warnings if "/Notify/" in w.id], warnings


@pytest.mark.spec("SW-9")
def test_swarm_synth_has_no_unacknowledged_cdk_nag_findings(swarm):
    assert_nag_clean(swarm)


# -- workflow tests without comments ----------------------------------------------------------------


def test_workflow_tests_alone_add_the_route_and_the_token_only(swarm_tests_only):
    synth = swarm_tests_only
    assert TICKET_SECRET not in secret_names(synth) and TOKEN_SECRET in secret_names(synth)
    assert set(readers(synth, TOKEN_SECRET)) == {"ingest"}
    # notify posts the verdict to Swarm's callback (on swarmUrl), with the default threshold.
    assert {k for k in env(synth, "notify") if k in SWARM_ENV} == {"P4REVIEW_SWARM_URL"}
    assert {k for k in env(synth, "ingest") if k in SWARM_ENV} == {
        "P4REVIEW_SWARM_URL",
        "P4REVIEW_SWARM_TEST_SECRET_ID",
    }
    assert ("POST", "/v1/swarm/tests") in api_methods(synth)
    assert not any("VpcConfig" in fn for _, fn in functions(synth).values())
    assert_nag_clean(synth)


# -- validation -------------------------------------------------------------------------------------


def context_error(**context: Any) -> str:
    from p4review_infra.network_config import notify_network
    from p4review_infra.review_config import ContextError
    from p4review_infra.swarm_config import SwarmConfig

    with pytest.raises(ContextError) as info:
        SwarmConfig.from_context(context.get)
        notify_network(context.get)
    return str(info.value)


ON = {"swarmUrl": SWARM_URL, "swarmComments": "true", "swarmWorkflowTests": "true"}
NETWORK = {"notifyVpcId": VPC_ID, "notifySubnetIds": SUBNETS[0], "notifySecurityGroupIds": SECURITY_GROUP}


@pytest.mark.spec("SW-9")
@pytest.mark.parametrize(
    ("context", "message"),
    [
        ({"swarmComments": "true"}, "swarmUrl is required with swarmComments=true"),
        ({"swarmWorkflowTests": "true"}, "swarmUrl is required with swarmWorkflowTests=true"),
        ({"swarmComments": "maybe"}, "swarmComments='maybe': expected true or false"),
        ({**ON, "swarmUrl": "http://swarm.example.com"}, "swarmUrl='http://swarm.example.com': expected an https"),
        ({**ON, "swarmUrl": "swarm.example.com"}, "swarmUrl='swarm.example.com': expected an https"),
        ({**ON, "swarmUrl": "https://u:p@swarm.example.com"}, "swarmUrl=.*user information"),
        ({**ON, "swarmApi": "v10"}, "swarmApi='v10': String should match pattern"),
        ({**ON, "swarmTaskAt": "urgent"}, "swarmTaskAt='urgent': String should match pattern"),
        ({**ON, "swarmTestFailAt": "info"}, "swarmTestFailAt='info': String should match pattern"),
        ({**ON, "swarmCreateReviews": "perhaps"}, "swarmCreateReviews='perhaps'"),
        ({**ON, "swarmTimeoutSeconds": "600"}, "swarmTimeoutSeconds='600': Input should be less than or equal to 60"),
        ({"swarmUrl": SWARM_URL, "swarmTaskAt": "low"}, "swarmTaskAt applies only with swarmComments=true"),
        (
            {"swarmUrl": SWARM_URL, "swarmTestFailAt": "low"},
            "swarmTestFailAt applies only with swarmWorkflowTests=true",
        ),
        ({"notifyVpcId": VPC_ID}, "notifySubnetIds, notifySecurityGroupIds required with notifyVpcId"),
        ({**NETWORK, "notifyVpcId": "vpc-xyz"}, "notifyVpcId: 'vpc-xyz' is not a vpc-"),
        (
            {**NETWORK, "notifySubnetIds": "subnet-01234567,sg-01234567"},
            "notifySubnetIds: 'sg-01234567' is not a subnet-",
        ),
        ({**NETWORK, "notifySecurityGroupIds": "[sg-1"}, "notifySecurityGroupIds=.*not a JSON array"),
        ({**NETWORK, "notifySecurityGroupIds": ",".join(f"sg-0000000{i}" for i in range(6))}, "expected 1 to 5 ids"),
    ],
)
def test_invalid_context_values_fail_naming_the_key(context, message):
    error = context_error(**context)
    assert re.search(message, error), error


def test_synth_fails_on_an_invalid_swarm_value(tmp_path):
    from p4review_infra.app import create_app
    from p4review_infra.review_config import ContextError

    with pytest.raises(ContextError, match="context swarmTestFailAt='sometimes'"):
        create_app(context={**SKIP_BUNDLING, **ON, "swarmTestFailAt": "sometimes"}, outdir=str(tmp_path))


def test_swarm_url_alone_only_links_notify_emails_and_id_lists_come_in_every_form():
    from p4review_infra.network_config import notify_network
    from p4review_infra.swarm_config import SwarmConfig

    config = SwarmConfig.from_context({"swarmUrl": SWARM_URL, "swarmComments": False, "swarmApi": ""}.get)
    assert (config.comments, config.workflow_tests, config.secret_specs) == (False, False, ())
    assert (dict(config.notify_env), dict(config.ingest_env)) == ({"P4REVIEW_SWARM_URL": SWARM_URL}, {})
    for subnets in (",".join(SUBNETS), json.dumps(list(SUBNETS)), list(SUBNETS), f" {SUBNETS[0]} , {SUBNETS[1]},"):
        network = notify_network({**NETWORK, "notifySubnetIds": subnets}.get)
        assert network is not None and network.subnet_ids == SUBNETS, subnets
    assert notify_network({"notifyVpcId": ""}.get) is None

"""The redaction policy from CDK context: secure by default, one opt-out key, the deployment's
own suffixes and ranges on top, the same variables for fetch and review, bad values fail synth."""

from __future__ import annotations

import pytest

from p4review.settings.blocks import RedactionBlock
from p4review_infra.redaction_config import redaction_env
from p4review_infra.review_config import ContextError
from tests.infra.conftest import _synth
from tests.infra.test_stack import functions

POLICY_VARS = ("P4REVIEW_REDACT_PRIVATE_BY_DEFAULT", "P4REVIEW_REDACT_HOST_SUFFIXES", "P4REVIEW_REDACT_CIDRS")


def policy_of(env: dict[str, str]):
    return RedactionBlock.model_validate(env).redaction_policy()


def test_no_context_means_the_secure_default():
    env = redaction_env({}.get)
    assert env == {}
    policy = policy_of(env)
    assert policy.deidentify_emails and "internal" in policy.confidential_host_suffixes
    assert "10.0.0.0/8" in policy.confidential_cidrs and "100.64.0.0/10" in policy.confidential_cidrs


def test_the_opt_out_keeps_only_what_is_configured():
    env = redaction_env(
        {"redactPrivateByDefault": "false", "redactHostSuffixes": ".corp.example", "redactCidrs": ["10.20.0.0/16"]}.get
    )
    policy = policy_of(env)
    assert not policy.deidentify_emails
    assert policy.confidential_host_suffixes == ("corp.example",)
    assert policy.confidential_cidrs == ("10.20.0.0/16",)


def test_configured_suffixes_come_on_top_of_the_defaults():
    policy = policy_of(redaction_env({"redactHostSuffixes": "build.example,.corp.example"}.get))
    assert {"build.example", "corp.example", "internal", "home.arpa"} <= set(policy.confidential_host_suffixes)


@pytest.mark.parametrize(
    "context, named",
    [
        ({"redactPrivateByDefault": "sometimes"}, "redactPrivateByDefault"),
        ({"redactCidrs": "10.0.0.0/33"}, "redactCidrs"),
        ({"redactHostSuffixes": "bad suffix!"}, "redactHostSuffixes"),
    ],
)
def test_a_bad_value_fails_synth_naming_the_key(context, named):
    with pytest.raises(ContextError, match=named):
        redaction_env(context.get)


@pytest.mark.spec("SEC-38")
def test_fetch_and_review_get_the_same_policy(tmp_path_factory):
    synth = _synth(
        "dev", tmp_path_factory.mktemp("cdk-redaction"), redactPrivateByDefault="false", redactCidrs="10.20.0.0/16"
    )
    envs = {name: functions(synth)[name][1]["Environment"]["Variables"] for name in ("fetch", "review")}
    for env in envs.values():
        assert env["P4REVIEW_REDACT_PRIVATE_BY_DEFAULT"] == "false" and env["P4REVIEW_REDACT_CIDRS"] == "10.20.0.0/16"
    assert all(name not in functions(synth)["notify"][1]["Environment"]["Variables"] for name in POLICY_VARS)

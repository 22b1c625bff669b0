"""The notify function's email transport and recipient policy from CDK context: SES gets
SendEmail on its identity only and no SMTP secret; SMTP keeps the secret; bad values fail synth."""

from __future__ import annotations

import pytest

from p4review import resources as r
from tests.infra.conftest import _synth
from tests.infra.test_stack import ENV, as_list, functions, logical_id_of, mentions, role_statements

SES_CONTEXT = {
    "emailProvider": "ses",
    "emailFrom": "p4review@example.com",
    "sesConfigurationSet": "p4review",
    "reviewers": [{"prefix": "//depot/main/...", "reviewers": ["leads@example.com"]}],
    "noFindingsPolicy": "skip",
    "policyReviewerDomains": "example.com, partner.example",
}


@pytest.fixture(scope="module")
def ses(tmp_path_factory):
    return _synth("dev", tmp_path_factory.mktemp("cdk-ses"), **SES_CONTEXT)


def notify_env(synth):
    return functions(synth)["notify"][1]["Environment"]["Variables"]


def reads_smtp_secret(synth) -> bool:
    secret = logical_id_of(synth, "AWS::SecretsManager::Secret", Name=f"p4review/{ENV}/{r.SMTP_SECRET.key}")
    return any(mentions(s, secret) for s in role_statements(synth, "notify"))


def ses_statements(synth):
    return [s for s in role_statements(synth, "notify") if any(a.startswith("ses:") for a in as_list(s["Action"]))]


def test_smtp_is_the_default_and_reads_its_secret(dev):
    assert reads_smtp_secret(dev) and not ses_statements(dev)
    assert "P4REVIEW_EMAIL_PROVIDER" not in notify_env(dev)


def test_ses_sends_from_its_identity_only_and_reads_no_smtp_secret(ses):
    env = notify_env(ses)
    assert env["P4REVIEW_EMAIL_PROVIDER"] == "ses" and env["P4REVIEW_EMAIL_FROM"] == "p4review@example.com"
    assert env["P4REVIEW_NO_FINDINGS_POLICY"] == "skip" and "leads@example.com" in env["P4REVIEW_REVIEWERS"]
    assert env["P4REVIEW_POLICY_REVIEWER_DOMAINS"] == "example.com, partner.example"
    assert not reads_smtp_secret(ses) and r.SMTP_SECRET.env_var not in env
    (statement,) = ses_statements(ses)
    assert sorted(as_list(statement["Action"])) == ["ses:SendEmail", "ses:SendRawEmail"]
    resources = [str(x) for x in as_list(statement["Resource"])]
    assert len(resources) == 3
    assert any("identity/p4review@example.com" in x for x in resources)
    assert any("identity/example.com" in x for x in resources)
    assert any("configuration-set/p4review" in x for x in resources)
    assert not any(x.endswith("*") or x.endswith("*'") for x in resources)


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ({"emailProvider": "ses"}, "emailFrom is required"),
        ({"emailProvider": "pigeon"}, "emailProvider"),
        ({"emailFrom": "p4review@example.com"}, "apply to emailProvider=ses only"),
        ({"noFindingsPolicy": "maybe"}, "noFindingsPolicy"),
        ({"reviewers": '[{"prefix": "depot/"}]'}, "context reviewers"),
        ({"policyReviewerDomains": "*.example.com"}, "context policyReviewerDomains"),
    ],
)
def test_invalid_notify_context_fails_synth_with_a_clear_message(context, message):
    from p4review_infra.notify_config import NotifyConfig
    from p4review_infra.review_config import ContextError

    with pytest.raises(ContextError) as info:
        NotifyConfig.from_context(context.get)
    assert message in str(info.value)

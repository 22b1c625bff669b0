import json

import pytest

from p4review.errors import ConfigError
from p4review.models.policy import ReviewerRule
from p4review.notify.recipients import (
    DOMAIN_NOT_ALLOWED,
    INVALID_ADDRESS,
    MISSING_ADDRESS,
    UNVERIFIED_ADDRESS,
    Rejection,
    parse_reviewer_domains,
    parse_reviewer_policy,
    plan_recipients,
    policy_refusals,
)

FILES = ["//depot/engine/main/src/net/packet.cpp", "//depot/game/main/ui/menus/cafe_menu.cpp"]


def _rules(*rules):
    return parse_reviewer_policy(json.dumps([{"prefix": p, "reviewers": list(r)} for p, r in rules]))


def _plan(email="Dev@Example.test", *, owner="dev", client="dev-ws", files=FILES, rules=(), **kwargs):
    return plan_recipients(owner, email, client, files, rules, **kwargs)


def test_owner_address_is_normalized():
    plan = _plan("  Dev.Person@Example.TEST ")
    assert (plan.deliverable, plan.rejected) == (["dev.person@example.test"], [])


def test_owner_first_then_reviewers_in_rule_order_deduplicated_case_insensitively():
    rules = _rules(
        ("//depot/game/...", ["UI-Lead@Example.test", "dev@example.test"]),
        ("//depot/engine/main/", ["net@example.test", "ui-lead@EXAMPLE.test"]),
    )
    plan = _plan(rules=rules)
    assert plan.deliverable == ["dev@example.test", "ui-lead@example.test", "net@example.test"]
    assert plan.rejected == []


def test_a_rule_applies_only_when_a_changed_file_is_under_its_prefix():
    rules = _rules(
        ("//depot/engine/...", ["engine@example.test"]),
        ("//depot/tools/...", ["tools@example.test"]),
        ("//depot/game/main/ui/menus/", ["menus@example.test"]),
        ("//depot/game/main/ui/menus2/", ["not-a-sibling@example.test"]),
    )
    assert _plan(rules=rules).deliverable == ["dev@example.test", "engine@example.test", "menus@example.test"]
    assert _plan(rules=rules, files=[]).deliverable == ["dev@example.test"]


def test_prefix_case_follows_the_server():
    rules = _rules(("//Depot/Engine/...", ["engine@example.test"]))
    assert _plan(rules=rules).deliverable == ["dev@example.test"]
    assert _plan(rules=rules, case_insensitive=True).deliverable == ["dev@example.test", "engine@example.test"]


def test_perforce_default_user_at_client_address_is_flagged_not_used():
    plan = _plan("JBeaulieu@JBeaulieu-MTL-WS.corp.example", owner="jbeaulieu", client="jbeaulieu-mtl-ws.corp.example")
    assert plan.deliverable == []
    assert plan.rejected == [Rejection("JBeaulieu@JBeaulieu-MTL-WS.corp.example", UNVERIFIED_ADDRESS)]
    assert plan.rejected[0].row_key == "jbeaulieu@jbeaulieu-mtl-ws.corp.example"


def test_domain_without_a_dot_is_unverified_for_owner_and_reviewers():
    rules = _rules(("//depot/...", ["qa@buildfarm"]))
    plan = _plan("dev@workstation", client="other-ws", rules=rules)
    assert plan.deliverable == []
    assert [r.reason for r in plan.rejected] == [UNVERIFIED_ADDRESS, UNVERIFIED_ADDRESS]


def test_missing_owner_address_gets_a_marker():
    for email in (None, "", "   "):
        plan = _plan(email, owner="ghost")
        assert plan.deliverable == []
        assert plan.rejected == [Rejection("<missing:ghost>", MISSING_ADDRESS)]
        assert plan.rejected[0].row_key == "<missing:ghost>"


@pytest.mark.spec("CH-4")
def test_invalid_addresses_are_rejected_with_a_printable_bounded_key():
    rules = _rules(("//depot/...", ["not an address", "ok@example.test", "bad\r\nBcc: x@evil.test"]))
    plan = _plan("<Dev> dev@example.test", rules=rules)
    assert plan.deliverable == ["ok@example.test"]
    assert [(r.address, r.reason) for r in plan.rejected] == [
        ("<Dev> dev@example.test", INVALID_ADDRESS),
        ("not an address", INVALID_ADDRESS),
        ("bad\r\nBcc: x@evil.test", INVALID_ADDRESS),
    ]
    assert plan.rejected[2].row_key == "bad\\x0d\\x0abcc: x@evil.test"  # the line break shown, not dropped
    assert len(Rejection("x" * 1000, INVALID_ADDRESS).row_key) == 254


def test_owner_who_is_also_a_reviewer_is_one_recipient():
    rules = _rules(("//depot/...", ["DEV@example.test"]), ("//depot/game/...", ["dev@example.test "]))
    assert _plan(rules=rules).deliverable == ["dev@example.test"]


def test_the_same_rejected_address_is_one_row():
    rules = _rules(("//depot/...", ["nope"]), ("//depot/game/...", ["NOPE"]))
    assert [r.row_key for r in _plan(rules=rules).rejected] == ["nope"]


def test_a_reviewer_listing_the_owners_default_address_outranks_the_rejection():
    rules = _rules(("//depot/...", ["dev@dev-ws.corp.example"]))
    plan = _plan("dev@dev-ws.corp.example", client="dev-ws.corp.example", rules=rules)
    assert (plan.deliverable, plan.rejected) == (["dev@dev-ws.corp.example"], [])


def test_empty_policy_is_no_rules():
    assert parse_reviewer_policy("") == () and parse_reviewer_policy("  ") == ()


@pytest.mark.parametrize(
    "value",
    [
        "{not json",
        '{"prefix": "//depot/...", "reviewers": ["a@example.test"]}',  # not an array
        '[{"prefix": "depot/...", "reviewers": ["a@example.test"]}]',  # not a depot path
        '[{"prefix": "//depot/main", "reviewers": ["a@example.test"]}]',  # not a directory prefix
        '[{"prefix": "//depot/...", "reviewers": []}]',
        '[{"prefix": "//depot/...", "reviewers": "a@example.test"}]',
        '[{"prefix": "//depot/...", "reviewers": ["a@example.test"], "cc": []}]',
    ],
)
def test_invalid_reviewer_policy_is_a_config_error(value):
    with pytest.raises(ConfigError, match="P4REVIEW_REVIEWERS"):
        parse_reviewer_policy(value)


# --- reviewers a depot policy file names (.p4review.toml) ----------------------------------------------
def _policy_rule(prefix="//depot/engine/...", *reviewers, source="//depot/engine/.p4review.toml"):
    return ReviewerRule(prefix=prefix, reviewers=reviewers, source=source)


@pytest.mark.spec("RV-15")
def test_a_policy_reviewer_outside_the_owners_domain_is_refused_never_planned():
    """Issue 27: `reviewers` accepted any domain, and the email carries code excerpts."""
    rule = _policy_rule("//depot/engine/...", "lead@example.test", "someone@outside.example", "x@sub.example.test")
    plan = _plan(rules=(rule,))
    assert plan.deliverable == ["dev@example.test", "lead@example.test"]
    refused = [(r.address, r.reason, r.source) for r in plan.rejected]
    assert refused == [
        ("someone@outside.example", DOMAIN_NOT_ALLOWED, "//depot/engine/.p4review.toml"),
        ("x@sub.example.test", DOMAIN_NOT_ALLOWED, "//depot/engine/.p4review.toml"),  # exact domains only
    ]
    [diagnostic] = policy_refusals(plan.rejected)
    assert (diagnostic.source, diagnostic.reason) == ("//depot/engine/.p4review.toml", "reviewer_not_allowed")
    assert "outside.example" in diagnostic.detail and "someone" not in diagnostic.detail


def test_configured_domains_replace_the_owners_and_the_services_own_reviewers_are_not_checked():
    domains = parse_reviewer_domains(" Outside.Example , partner.example")
    assert domains == {"outside.example", "partner.example"}
    service = _rules(("//depot/engine/...", ["net@elsewhere.example"]))
    rule = _policy_rule("//depot/engine/...", "someone@outside.example", "lead@example.test")
    plan = _plan(rules=(*service, rule), policy_domains=domains)
    assert plan.deliverable == ["dev@example.test", "net@elsewhere.example", "someone@outside.example"]
    assert [(r.address, r.reason) for r in plan.rejected] == [("lead@example.test", DOMAIN_NOT_ALLOWED)]


def test_without_a_usable_owner_address_no_policy_reviewer_is_emailed():
    plan = _plan(None, rules=(_policy_rule("//depot/engine/...", "lead@example.test"),))
    assert plan.deliverable == []
    assert {r.reason for r in plan.rejected} == {MISSING_ADDRESS, DOMAIN_NOT_ALLOWED}


@pytest.mark.parametrize("value", ["example", "exa mple.com", "*.example.com", "a@example.com", "-x.example"])
def test_a_bad_domain_setting_refuses_the_start(value):
    with pytest.raises(ConfigError, match="P4REVIEW_POLICY_REVIEWER_DOMAINS"):
        parse_reviewer_domains(value)

import json

import pytest

from p4review.errors import ConfigError
from p4review.notify.recipients import (
    INVALID_ADDRESS,
    MISSING_ADDRESS,
    UNVERIFIED_ADDRESS,
    Rejection,
    parse_reviewer_policy,
    plan_recipients,
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

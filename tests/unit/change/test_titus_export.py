"""tools/export_titus_rules.py, the prototype behind the second-ruleset measurement (docs/redaction.md,
"A second ruleset beside Betterleaks"): the needles it derives keep the needle invariant, and its
translation of Titus' regex syntax compiles in Python."""

from __future__ import annotations

import re

import pytest

from p4review_dev.support.tools import load_tool

exporter = load_tool("export_titus_rules")


@pytest.mark.parametrize(
    "pattern, needles",
    [
        (r"\b(?P<token>ghp_[a-zA-Z0-9]{36})\b", ["ghp_"]),
        (r"(?i)(?:mailgun|mg).{0,20}key-(?P<token>[a-z0-9]{32})\b", ["key-"]),  # the longer literal wins
        (r"(?i)\b(?:dp\.(?:ct|st)\.)[a-z0-9]{40}", ["dp.ct.", "dp.st."]),
        (r"\b(?:flb_(?:live|test)_)[A-Za-z0-9]{20}", ["flb_live_", "flb_test_"]),
        (r"(?x) \b tvly- [a-zA-Z0-9]{32} \b", ["tvly-"]),
        (r"(?:AKIA|ASIA)[A-Z0-9]{16}", ["akia", "asia"]),  # folded: the prefilter lowercases
    ],
)
def test_needles_are_literals_every_match_contains(pattern, needles):
    assert exporter.keywords_of(exporter.to_python(pattern)) == needles


@pytest.mark.parametrize(
    "pattern",
    [
        r"[a-z0-9]{32}",  # no literal at all
        r"(?:ab)?[0-9]{20}",  # the only literal is optional
        r"x-[0-9]{20}",  # too short a literal: on every other line
    ],
)
def test_a_rule_without_a_usable_needle_gets_none(pattern):
    assert exporter.keywords_of(exporter.to_python(pattern)) is None


def test_a_derived_needle_occurs_in_every_match():
    pattern = exporter.to_python(
        r"(?i)\b(?:contentful)(?:.|[\n\r]){0,32}?(?:secret|token)\W{1,5}(?P<key>[a-z0-9_-]{43})"
    )
    needles = exporter.keywords_of(pattern)
    line = "CONTENTFUL_DELIVERY_TOKEN = " + "a1b2c3d4e5" * 4 + "xyz"
    match = re.compile(pattern, re.ASCII).search(line)
    assert match is not None and any(needle in match.group(0).lower() for needle in needles)


def test_titus_filters_become_the_betterleaks_export_shape():
    filters = exporter.filters_of(
        {"min_entropy": 3.5, "pattern_requirements": {"min_digits": 2, "ignore_if_contains": ["test"]}}
    )
    assert filters["min_entropy"] == {"value": 3.5, "inclusive": True}  # Titus drops entropy <= the minimum
    assert re.search(filters["require"][0][0], "ab1c2") and not re.search(filters["require"][0][0], "ab1c")
    assert re.search(filters["exclude"][0], "a_TEST_value")


def test_the_secret_is_the_group_titus_reports():
    assert exporter.secret_group(re.compile(r"(?P<id>\d+):(?P<token>\w+)")) == 2
    assert exporter.secret_group(re.compile(r"(?P<user>\w+):(?P<password>\w+)")) == 2
    assert exporter.secret_group(re.compile(r"key=(\w+)")) == 1

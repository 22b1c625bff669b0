"""Every shipped prompt template satisfies the spec's seven prompt construction rules, and the
user message numbers new-side lines so the model can cite lines that exist."""

from __future__ import annotations

import re

import pytest

from p4review.errors import ConfigError
from p4review.models.finding_labels import Category, Confidence, Severity
from p4review.models.review_result import REVIEW_RESULT_SCHEMA, SCHEMA_VERSION
from p4review.review.prompts import (
    CONTEXT_ENCLOSING,
    estimate_tokens,
    load_registry,
    number_diff_lines,
    parse_registry,
    render_user_message,
)

REGISTRY = load_registry()
TEMPLATES = sorted(REGISTRY.templates.values(), key=lambda t: t.version)
FINDING = REVIEW_RESULT_SCHEMA["properties"]["findings"]["items"]


def rule_violations(text: str, version: str, schema_version: str) -> list[str]:
    """Which of the seven construction rules `text` breaks (empty: all satisfied)."""
    broken = []
    # 1. current prompt_version and required schema_version literals
    if (
        f"prompt_version: {version}" not in text
        or f'"{version}"' not in text
        or f"schema_version: {schema_version}" not in text
        or f'"{schema_version}"' not in text
    ):
        broken.append("1-version-literals")
    # 2. required vs optional fields and the enum sets restated
    required_top = REVIEW_RESULT_SCHEMA["required"]
    optional_top = [k for k in REVIEW_RESULT_SCHEMA["properties"] if k not in required_top]
    required = FINDING["required"]
    optional = [k for k in FINDING["properties"] if k not in required]
    enums = [*(s.value for s in Severity), *(c.value for c in Category), *(c.value for c in Confidence)]
    if (
        "Required fields" not in text
        or "Optional fields" not in text
        or any(f'"{name}"' not in text for name in [*required_top, *optional_top, *required, *optional])
        or any(f'"{value}"' not in text for value in enums)
    ):
        broken.append("2-fields-and-enums")
    # 3. only files in changed_files
    if not re.search(r"[Oo]nly report findings whose \"file\" is one of the paths listed under changed_files", text):
        broken.append("3-changed-files-only")
    # 4. omit invalid or uncertain findings rather than fabricate
    if not re.search(r"Omit any finding you are not confident about", text) or "invented" not in text:
        broken.append("4-omit-uncertain")
    # 5. strict JSON only, no prose wrappers
    if "exactly one JSON object" not in text or "no prose" not in text or "no code fences" not in text:
        broken.append("5-strict-json")
    # 6. deterministic field names, no undocumented keys
    if (
        "No other top-level keys are allowed" not in text
        or "Do not add any other keys" not in text
        or "do not rename these fields" not in text
    ):
        broken.append("6-no-undocumented-keys")
    # 7. unknown enum values cause drops / rejection
    if not re.search(
        r"Values outside the listed enum sets .* not accepted: such a finding is dropped, "
        r"and a wrong top-level value rejects the whole answer",
        text,
    ):
        broken.append("7-unknown-enums")
    return broken


@pytest.mark.spec("PR-1", "PR-2", "PR-8", "PR-9", "PR-10", "PR-11", "PR-12", "PR-13", "PR-14", "RV-14")
@pytest.mark.parametrize("template", TEMPLATES, ids=lambda t: t.version)
def test_every_shipped_template_satisfies_the_seven_rules(template):
    # A schema version the parser accepts: SCHEMA_VERSION or a newer minor of its major (1.1 adds
    # suggested_code), and the prompt names every field that version adds.
    major, minor = (int(part) for part in template.schema_version.split("."))
    base_major, base_minor = (int(part) for part in SCHEMA_VERSION.split("."))
    assert major == base_major and minor >= base_minor
    if minor >= 1:
        assert '"suggested_code"' in template.text
    assert rule_violations(template.text, template.version, template.schema_version) == []


@pytest.mark.spec("PR-8", "PR-9", "PR-11", "PR-13", "PR-14")
@pytest.mark.parametrize(
    "needle, rule",
    [
        ("prompt_version: ", "1-version-literals"),
        ('"confidence"', "2-fields-and-enums"),
        ('"maintainability"', "2-fields-and-enums"),
        ("listed under changed_files", "3-changed-files-only"),
        ("Omit any finding", "4-omit-uncertain"),
        ("no code fences", "5-strict-json"),
        ("Do not add any other keys", "6-no-undocumented-keys"),
        ("such a finding is dropped", "7-unknown-enums"),
    ],
)
def test_the_rule_checks_catch_a_template_that_breaks_them(needle, rule):
    template = REGISTRY.template(REGISTRY.stable)
    assert needle in template.text
    broken = template.text.replace(needle, "XXX", 1)
    assert rule in rule_violations(broken, template.version, template.schema_version)


@pytest.mark.spec("PR-1")
def test_a_template_whose_literals_disagree_with_the_registry_is_caught():
    template = REGISTRY.template(REGISTRY.stable)
    assert "1-version-literals" in rule_violations(template.text, "9.9.9", template.schema_version)


def test_registry_refuses_unknown_versions_and_bad_percentages():
    with pytest.raises(ConfigError):
        REGISTRY.with_overrides(stable="7.7.7", canary=None, canary_percent=None)
    with pytest.raises(ConfigError):
        parse_registry(
            {
                "schema_version": "1.0",
                "prompts": [{"version": "1.2", "file": "x", "schema_version": "1.0"}],
                "rollout": {"stable": "1.2"},
            },
            read_text=lambda name: "",
        )
    with pytest.raises(ConfigError):
        parse_registry({"schema_version": "1.0", "prompts": [], "rollout": {"stable": "1.0.0"}})
    with pytest.raises(ConfigError):
        parse_registry(
            {
                "schema_version": "1.0",
                "prompts": [{"version": "1.0.0", "file": "f", "schema_version": "1.0"}],
                "rollout": {"stable": "1.0.0", "canary_percent": 101},
            },
            read_text=lambda name: "",
        )


DIFF = """==== //depot/main/a.c#3 (text) ====
--- //depot/main/a.c
+++ //depot/main/a.c
@@ -10,4 +10,5 @@ int main(void)
 context ten
-removed
+added eleven
+added twelve
 context thirteen
\\ No newline at end of file
@@ -40,0 +41,1 @@
+added forty-one
"""


def test_new_side_lines_are_numbered_and_removed_lines_are_not():
    numbered = number_diff_lines(DIFF).splitlines()
    assert numbered == [
        "@@ -10,4 +10,5 @@ int main(void)",
        "10  context ten",
        "-removed",
        "11 +added eleven",
        "12 +added twelve",
        "13  context thirteen",
        "@@ -40,0 +41,1 @@",
        "41 +added forty-one",
    ]


@pytest.mark.spec("PR-10")
def test_user_message_lists_only_the_chunks_files():
    message = render_user_message(
        changelist_id=7,
        owner="alice",
        description="Fix it\n",
        changed_files=["//depot/main/a.c"],
        file_sections=["=== FILE //depot/main/a.c ==="],
    )
    assert "- //depot/main/a.c" in message and re.search(r'<cl_desc_\w+ owner="alice">', message)


def test_token_estimate_is_conservative_for_code():
    assert estimate_tokens("") == 0
    assert estimate_tokens("x" * 35) == 10


def test_the_enclosing_layout_sends_one_diff_element_and_leaves_the_notes_to_the_template():
    sections = ["=== FILE //depot/main/a.c (edit) ===\n@@\n11 +x", "=== FILE //depot/main/b.c (add) ===\n@@\n1 +y"]
    message = render_user_message(
        changelist_id=7,
        owner="alice",
        description="Fix it\n",
        changed_files=["//depot/main/a.c", "//depot/main/b.c"],
        file_sections=sections,
        nonce="0badc0de",
        context=CONTEXT_ENCLOSING,
    )
    assert message.count("<cl_diff_0badc0de>") == 1 and "cl_files" not in message
    assert "- //depot/main/a.c" not in message  # changed_files are the `=== FILE` paths
    assert "Tags ending" not in message and "Diffs:" not in message
    template = next(t for t in TEMPLATES if t.context == CONTEXT_ENCLOSING)
    assert '"=== FILE <path> (<action>) ===" line starts a file; their paths are changed_files' in template.text
    assert "0badc0de" not in template.text


def test_a_registry_entry_with_an_unknown_context_is_refused():
    with pytest.raises(ConfigError, match="context must be one of"):
        parse_registry(
            {
                "schema_version": "1.0",
                "prompts": [{"version": "1.0.0", "file": "f", "schema_version": "1.0", "context": "everything"}],
                "rollout": {"stable": "1.0.0"},
            },
            read_text=lambda name: "",
        )

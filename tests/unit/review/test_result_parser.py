"""The ReviewResult parser: spec validation order, reason codes, logged coercions,
reconciliation with the change's files, and "never raises"."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from p4review.models.review_result import REVIEW_RESULT_SCHEMA, ParseOutcome
from p4review.review.result_parser import parse_review_result

PROMPT = "2.1.0"
CHANGED = [
    "//depot/main/src/net/buffer.c",
    "//depot/main/src/util/strings.c",
    "//depot/main/tools/deploy.py",
    "//depot/rel/tools/deploy.py",
]
FINDING_SCHEMA = REVIEW_RESULT_SCHEMA["properties"]["findings"]["items"]


def finding(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": "F1",
        "severity": "high",
        "category": "security",
        "title": "Unbounded copy",
        "file": "//depot/main/src/net/buffer.c",
        "line": 12,
        "message": "strcpy into a fixed buffer can overflow.",
    }
    base.update(overrides)
    return {k: v for k, v in base.items() if v is not _ABSENT}


_ABSENT = object()


def answer(findings: Any, **top: Any) -> str:
    document: dict[str, Any] = {
        "schema_version": "1.0",
        "prompt_version": PROMPT,
        "summary": "One issue.",
        "findings": findings,
        "meta": {"model": "test"},
    }
    document.update(top)
    return json.dumps({k: v for k, v in document.items() if v is not _ABSENT})


def parse(text: str, **kwargs: Any) -> ParseOutcome:
    kwargs.setdefault("expected_prompt_version", PROMPT)
    return parse_review_result(text, CHANGED, **kwargs)


def rejection(outcome: ParseOutcome) -> str | None:
    assert outcome.rejected
    assert outcome.result is None
    assert len(outcome.diagnostics) == 1
    assert outcome.diagnostics[0].kind == "response_rejected"
    return outcome.diagnostics[0].reason


def drops(outcome: ParseOutcome) -> list[str | None]:
    return [d.reason for d in outcome.diagnostics if d.kind == "finding_dropped"]


def coercions(outcome: ParseOutcome) -> list[tuple[str | None, str | None, str | None]]:
    return [(d.field, d.old_value, d.new_value) for d in outcome.diagnostics if d.kind == "coercion_applied"]


# --- happy path --------------------------------------------------------------------------


def test_valid_answer_is_kept_without_diagnostics() -> None:
    outcome = parse(answer([finding(suggestion="Use snprintf.", confidence="high", rule_id="R1", end_line=14)]))
    assert not outcome.rejected
    assert outcome.diagnostics == []
    assert outcome.result is not None
    assert outcome.result.summary == "One issue."
    assert outcome.result.meta == {"model": "test"}
    [kept] = outcome.result.findings
    assert (kept.file, kept.line, kept.end_line, kept.severity) == ("//depot/main/src/net/buffer.c", 12, 14, "high")


@pytest.mark.spec("OC-12")
def test_honest_empty_answer_has_no_warning() -> None:
    outcome = parse(answer([]))
    assert outcome.result is not None and outcome.result.findings == []
    assert outcome.diagnostics == []


# --- step 1: JSON ------------------------------------------------------------------------


@pytest.mark.spec("OC-2", "OC-9")
def test_prose_wrapped_and_fenced_json_is_invalid_json() -> None:
    body = answer([finding()])
    for text in (
        f"Here is my review:\n{body}",
        f"```json\n{body}\n```",
        f"{body}\nHope this helps!",
        "",
        "not json at all",
        '{"schema_version": "1.0", "prompt_version": NaN, "findings": []}',
    ):
        assert rejection(parse(text)) == "invalid_json", text


@pytest.mark.spec("OC-2")
def test_json_that_is_not_an_object_is_schema_mismatch() -> None:
    """Valid JSON of the wrong shape is a schema problem, not a JSON one (independent check)."""
    for text in ("[" + answer([finding()]) + "]", '"a string"', "null", "42", "true", "[]"):
        outcome = parse(text)
        assert rejection(outcome) == "schema_mismatch", text
        assert "not an object" in (outcome.diagnostics[0].detail or "")


# --- step 2: top-level schema ------------------------------------------------------------


@pytest.mark.spec("OC-1", "OC-3", "OC-9", "PR-3")
def test_missing_top_level_field_is_rejected() -> None:
    assert rejection(parse(answer(_ABSENT))) == "missing_required_field"
    assert rejection(parse(answer([], schema_version=_ABSENT))) == "missing_required_field"
    assert rejection(parse(answer([], prompt_version=_ABSENT))) == "missing_required_field"


@pytest.mark.spec("OC-1", "OC-3")
def test_bad_top_level_shapes_are_schema_mismatch() -> None:
    for top in (
        {"schema_version": 1.0},
        {"schema_version": "v1"},
        {"schema_version": "1.0\n"},
        {"prompt_version": "2.1.0-beta"},
        {"summary": 3},
        {"meta": []},
        {"verdict": "lgtm"},
    ):
        assert rejection(parse(answer([finding()], **top))) == "schema_mismatch", top
    for not_an_array in ({"id": "F1"}, "none", None):
        assert rejection(parse(answer(not_an_array))) == "schema_mismatch", not_an_array


@pytest.mark.spec("OC-3")
def test_rejection_detail_never_echoes_values() -> None:
    outcome = parse(answer([], schema_version="AKIAIOSFODNN7EXAMPLE"))
    assert rejection(outcome) == "schema_mismatch"
    assert "AKIA" not in outcome.model_dump_json()


# --- step 3: versions --------------------------------------------------------------------


@pytest.mark.spec("PR-4", "PR-7", "PR-15")
def test_schema_version_exact_or_newer_minor_same_major() -> None:
    assert not parse(answer([], schema_version="1.0")).rejected
    assert not parse(answer([], schema_version="1.3")).rejected
    assert rejection(parse(answer([], schema_version="2.0"))) == "incompatible_version"
    assert rejection(parse(answer([], schema_version="0.9"))) == "incompatible_version"
    assert rejection(parse(answer([], schema_version="1.0"), expected_schema_version="1.2")) == "incompatible_version"


@pytest.mark.spec("PR-5")
def test_prompt_version_exact_unless_patch_drift_allowed() -> None:
    assert rejection(parse(answer([], prompt_version="2.1.3"))) == "incompatible_version"
    assert not parse(answer([], prompt_version="2.1.3"), allowed_prompt_patch_drift=True).rejected
    assert rejection(parse(answer([], prompt_version="2.2.0"), allowed_prompt_patch_drift=True)) == (
        "incompatible_version"
    )
    assert rejection(parse(answer([], prompt_version="3.1.0"), allowed_prompt_patch_drift=True)) == (
        "incompatible_version"
    )
    assert not parse(answer([], prompt_version="2.1")).rejected  # 2.1 is 2.1.0


@pytest.mark.spec("OC-2", "PR-3", "PR-6")
def test_incompatible_version_is_decided_before_findings_are_read() -> None:
    garbage = [42, "x", {"id": ""}, finding(severity="urgent"), finding(file="//elsewhere/x.c")]
    outcome = parse(answer(garbage, prompt_version="9.0.0"))
    assert rejection(outcome) == "incompatible_version"
    assert [d.reason for d in outcome.diagnostics] == ["incompatible_version"]


# --- step 4: findings --------------------------------------------------------------------


@pytest.mark.spec("G-4", "OC-1", "OC-5")
def test_each_drop_reason() -> None:
    cases = {
        "not an object": ("schema_mismatch", ["just a string"]),
        "missing field": ("missing_required_field", [finding(message=_ABSENT)]),
        "null field": ("missing_required_field", [finding(title=None)]),
        "empty after trim": ("missing_required_field", [finding(title="   ")]),
        "unknown key": ("schema_mismatch", [finding(priority="P1")]),
        "wrong type": ("schema_mismatch", [finding(message=["a", "b"])]),
        "bad severity": ("invalid_enum_value", [finding(severity="urgent")]),
        "severity case": ("invalid_enum_value", [finding(severity="High")]),
        "bad category": ("invalid_enum_value", [finding(category="bug")]),
        "bad confidence": ("invalid_enum_value", [finding(confidence="certain")]),
        "zero line": ("invalid_line_range", [finding(line=0)]),
        "negative line": ("invalid_line_range", [finding(line="-3")]),
        "fractional line": ("invalid_line_range", [finding(line=12.5)]),
        "fractional string": ("invalid_line_range", [finding(line="12.5")]),
        "word line": ("invalid_line_range", [finding(line="abc")]),
        "bool line": ("invalid_line_range", [finding(line=True)]),
        "end before start": ("invalid_line_range", [finding(line=10, end_line=9)]),
        "bad end_line": ("invalid_line_range", [finding(end_line=0)]),
        "unknown file": ("file_not_in_changed_files", [finding(file="//depot/main/src/other.c")]),
    }
    for name, (reason, findings) in cases.items():
        outcome = parse(answer(findings))
        assert not outcome.rejected, name
        assert drops(outcome) == [reason], name


@pytest.mark.spec("OC-8")
def test_drop_diagnostic_carries_location() -> None:
    outcome = parse(answer([finding(id="F9", severity="urgent", file="src\\net\\buffer.c", line="7")]))
    [dropped] = [d for d in outcome.diagnostics if d.kind == "finding_dropped"]
    assert (dropped.reason, dropped.finding_id, dropped.file, dropped.line) == (
        "invalid_enum_value",
        "F9",
        "src/net/buffer.c",
        7,
    )


@pytest.mark.spec("OC-5", "OC-11")
def test_only_the_bad_findings_are_dropped() -> None:
    outcome = parse(answer([finding(id="A"), finding(id="B", category="bug"), finding(id="C", line=30)]))
    assert outcome.result is not None
    assert [f.id for f in outcome.result.findings] == ["A", "C"]
    assert drops(outcome) == ["invalid_enum_value"]
    assert not any(d.kind == "warning" for d in outcome.diagnostics)


@pytest.mark.spec("OC-12")
def test_all_findings_dropped_gives_empty_result_and_warning() -> None:
    outcome = parse(answer([finding(severity="urgent"), finding(id="F2", line=0)]))
    assert not outcome.rejected
    assert outcome.result is not None and outcome.result.findings == []
    warnings = [d for d in outcome.diagnostics if d.kind == "warning"]
    assert [w.reason for w in warnings] == ["all_findings_dropped"]
    assert drops(outcome) == ["invalid_enum_value", "invalid_line_range"]


def test_duplicate_ids_keep_the_first() -> None:
    outcome = parse(answer([finding(id="X", line=1), finding(id="X", line=2), finding(id=" X ", line=3)]))
    assert outcome.result is not None
    assert [(f.id, f.line) for f in outcome.result.findings] == [("X", 1)]
    assert drops(outcome) == ["duplicate_finding_id", "duplicate_finding_id"]


@pytest.mark.spec("G-4", "OC-4", "OC-6")
def test_safe_coercions_are_applied_and_logged() -> None:
    outcome = parse(
        answer([finding(id=" F1 ", title="  Unbounded copy\n", line=" 12", end_line="15", severity="high ")])
    )
    assert outcome.result is not None
    [kept] = outcome.result.findings
    assert (kept.id, kept.title, kept.line, kept.end_line, kept.severity) == ("F1", "Unbounded copy", 12, 15, "high")
    assert coercions(outcome) == [
        ("id", " F1 ", "F1"),
        ("severity", "high ", "high"),
        ("title", "  Unbounded copy\n", "Unbounded copy"),
        ("line", " 12", "12"),
        ("end_line", "15", "15"),
    ]
    assert all(d.finding_id == "F1" for d in outcome.diagnostics)


@pytest.mark.spec("OC-6")
def test_coercions_to_a_finding_that_is_then_dropped_are_still_logged() -> None:
    """The spec requires every coercion logged: a backslash path normalized and then not found
    among the changed files is logged as a coercion, then as the drop."""
    outcome = parse(answer([finding(id="F9", file="src\\net\\missing.c", line="7")]))
    assert outcome.result is not None and outcome.result.findings == []
    kinds = [(d.kind, d.finding_id) for d in outcome.diagnostics if d.kind != "warning"]
    assert kinds == [("coercion_applied", "F9"), ("coercion_applied", "F9"), ("finding_dropped", "F9")]
    assert coercions(outcome) == [("file", "src\\net\\missing.c", "src/net/missing.c"), ("line", "7", "7")]
    assert drops(outcome) == ["file_not_in_changed_files"]


@pytest.mark.spec("OC-7", "SEC-18")
def test_coercion_diagnostics_truncate_and_redact() -> None:
    long_title = "  " + "word " * 40
    secret_message = ' password = "hunter2-Secret" '
    outcome = parse(answer([finding(title=long_title, message=secret_message)]))
    assert outcome.result is not None
    diag = {d.field: d for d in outcome.diagnostics if d.kind == "coercion_applied"}
    assert diag["title"].old_value is not None
    assert diag["title"].old_value.endswith("[truncated 202 chars]")
    assert len(diag["title"].old_value) < 120
    assert diag["message"].old_value == "[REDACTED]"
    assert diag["message"].new_value == "[REDACTED]"
    assert "hunter2" not in json.dumps([d.model_dump() for d in outcome.diagnostics])


# --- step 5: reconciliation --------------------------------------------------------------


@pytest.mark.spec("OC-10")
def test_reconciliation_rewrites_to_the_canonical_changed_path() -> None:
    for given_path in (
        "./src/net/buffer.c",
        "src\\net\\buffer.c",
        "src/net/buffer.c",
        "main/src/net/buffer.c",
        "depot/main/src/net/buffer.c",
        "//depot/main/src//net/./buffer.c",
        "//depot/main/src/net/buffer.c#4",
        "net/buffer.c",
        "buffer.c",
    ):
        outcome = parse(answer([finding(file=given_path)]))
        assert outcome.result is not None
        assert [f.file for f in outcome.result.findings] == ["//depot/main/src/net/buffer.c"], given_path
        file_coercions = [c for c in coercions(outcome) if c[0] == "file"]
        assert file_coercions and file_coercions[-1][2] == "//depot/main/src/net/buffer.c", given_path


@pytest.mark.spec("OC-10")
def test_reconciliation_rejects_unknown_ambiguous_and_partial_segment_paths() -> None:
    for given_path in (
        "//depot/main/src/net/missing.c",  # not in the change
        "tools/deploy.py",  # suffix of two changed files
        "deploy.py",  # ditto
        "uffer.c",  # not a whole segment
        "//main/src/net/buffer.c",  # a full depot path must match exactly
        "../net/buffer.c",
    ):
        outcome = parse(answer([finding(file=given_path)]))
        assert drops(outcome) == ["file_not_in_changed_files"], given_path


# --- never raises ------------------------------------------------------------------------


def _check_invariants(outcome: ParseOutcome, changed: list[str]) -> None:
    assert isinstance(outcome, ParseOutcome)
    if outcome.rejected:
        assert outcome.result is None
        assert [d.kind for d in outcome.diagnostics] == ["response_rejected"]
        return
    assert outcome.result is not None
    ids = [f.id for f in outcome.result.findings]
    assert len(ids) == len(set(ids))
    for kept in outcome.result.findings:
        jsonschema.validate(kept.model_dump(mode="json", exclude_none=True), FINDING_SCHEMA)
        assert kept.file in changed


_json_leaf = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20)
_json = st.recursive(
    _json_leaf,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=20,
)
_paths = st.sampled_from(CHANGED + ["./src/net/buffer.c", "src\\util\\strings.c", "deploy.py", "x.c", "", " "])
_near_finding = st.fixed_dictionaries(
    {},
    optional={
        "id": st.sampled_from(["F1", "F2", " F1", ""]) | st.text(max_size=5) | _json_leaf,
        "severity": st.sampled_from(["critical", "high", "info", "High", "bogus"]) | _json_leaf,
        "category": st.sampled_from(["security", "style", "bug"]) | _json_leaf,
        "title": st.text(max_size=10) | _json_leaf,
        "file": _paths | _json_leaf,
        "line": st.integers(-3, 50) | st.sampled_from(["12", " 7 ", "1.5", "x", 3.0]) | _json_leaf,
        "end_line": st.integers(-3, 50) | st.sampled_from(["40", "0"]) | _json_leaf,
        "message": st.text(max_size=10) | _json_leaf,
        "suggestion": st.text(max_size=10) | _json_leaf,
        "confidence": st.sampled_from(["high", "low", "sure"]) | _json_leaf,
        "rule_id": st.text(max_size=5) | _json_leaf,
        "extra": _json_leaf,
    },
)
_near_document = st.fixed_dictionaries(
    {
        "schema_version": st.sampled_from(["1.0", "1.1", "2.0", "x"]),
        "prompt_version": st.sampled_from([PROMPT, "2.1.9", "2.1"]),
        "findings": st.lists(_near_finding | _json, max_size=6),
    },
    optional={"summary": st.text(max_size=10) | _json_leaf, "meta": _json, "bogus": _json_leaf},
)


@pytest.mark.spec("OC-13")
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text(max_size=200))
def test_arbitrary_text_never_raises(text: str) -> None:
    _check_invariants(parse(text), CHANGED)


@pytest.mark.spec("OC-13")
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=_json)
def test_arbitrary_json_never_raises(document: Any) -> None:
    _check_invariants(parse(json.dumps(document)), CHANGED)


@pytest.mark.spec("OC-2", "OC-11")
@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=_near_document, drift=st.booleans())
def test_near_valid_documents_keep_only_valid_reconciled_findings(document: dict[str, Any], drift: bool) -> None:
    outcome = parse(json.dumps(document), allowed_prompt_patch_drift=drift)
    _check_invariants(outcome, CHANGED)
    if not outcome.rejected:
        assert outcome.result is not None
        dropped = len(drops(outcome))
        assert dropped + len(outcome.result.findings) == len(document["findings"])


@pytest.mark.spec("OC-13")
def test_pathological_inputs_never_raise() -> None:
    for text in ("[" * 100_000, '{"a":' * 50_000, "9" * 10_000, "\ud800", '{"findings": [' + "1," * 10 + "]}"):
        _check_invariants(parse(text), CHANGED)
    _check_invariants(parse_review_result(None, CHANGED, expected_prompt_version=PROMPT), CHANGED)  # type: ignore[arg-type]


# ---- schema 1.1: suggested_code (additive) --------------------------------------------------

SUGGESTED = '    snprintf(dst, sizeof dst, "%s", src);\n\n'


@pytest.mark.spec("RV-14")
def test_a_1_1_answer_keeps_suggested_code_as_code() -> None:
    outcome = parse(answer([finding(suggested_code=SUGGESTED)], schema_version="1.1"))
    assert not outcome.rejected and outcome.result is not None
    (kept,) = outcome.result.findings
    assert kept.suggested_code == '    snprintf(dst, sizeof dst, "%s", src);'  # indentation kept
    assert outcome.result.schema_version == "1.1"


@pytest.mark.spec("RV-14")
def test_a_1_0_answer_is_still_accepted_and_cannot_carry_suggested_code() -> None:
    assert parse(answer([finding()])).result.findings  # type: ignore[union-attr]
    outcome = parse(answer([finding(suggested_code=SUGGESTED)], schema_version="1.0"))
    assert drops(outcome) == ["schema_mismatch"]


@pytest.mark.spec("RV-14")
def test_suggested_code_that_is_not_a_string_drops_and_too_long_is_removed_with_a_logged_coercion() -> None:
    outcome = parse(answer([finding(suggested_code=["x"])], schema_version="1.1"))
    assert drops(outcome) == ["schema_mismatch"]
    outcome = parse(answer([finding(suggested_code="x" * 4001)], schema_version="1.1"))
    (kept,) = outcome.result.findings  # type: ignore[union-attr]
    assert kept.suggested_code is None
    assert [(d.kind, d.field) for d in outcome.diagnostics] == [("coercion_applied", "suggested_code")]


@pytest.mark.spec("RV-14")
def test_the_1_1_schema_is_the_1_0_schema_plus_suggested_code() -> None:
    from p4review.models.review_result import REVIEW_RESULT_SCHEMA_1_1, result_schema_for

    assert result_schema_for("1.0") is REVIEW_RESULT_SCHEMA and result_schema_for("1.1") is REVIEW_RESULT_SCHEMA_1_1
    items = REVIEW_RESULT_SCHEMA_1_1["properties"]["findings"]["items"]["properties"]
    assert set(items) - set(FINDING_SCHEMA["properties"]) == {"suggested_code"}
    document = json.loads(answer([finding(suggested_code=SUGGESTED)], schema_version="1.1"))
    jsonschema.validate(document, REVIEW_RESULT_SCHEMA_1_1)

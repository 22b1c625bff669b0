"""Properties of `parse_review_result` for any input: arbitrary text and JSON, schema-shaped
documents (hypothesis-jsonschema) and mutated ones, with and without line checks.

1. It never raises: the outcome is a rejection carrying exactly one `response_rejected`
   diagnostic, or a result.
2. Every kept finding validates against the schema's finding schema, names exactly one of the
   changed files and, under `line_policy="drop"`, lies near a changed line (under "flag", the
   findings that do not are exactly the ones flagged in meta).
3. Nothing disappears silently: kept findings + `finding_dropped` diagnostics == input findings.
4. A valid document (schema-valid, non-blank required strings, files in changed_files, lines
   in order) keeps every finding, except later ones repeating an id."""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.internal.conjecture import utils as _cu
from hypothesis_jsonschema import from_schema

from p4review.change.diff_lines import ChangedLines, changed_lines_from_diff
from p4review.models.review_result import REVIEW_RESULT_SCHEMA, ParseOutcome
from p4review.review.result_parser import parse_review_result

if not hasattr(_cu.many, "more"):
    # hypothesis-jsonschema 0.23.1 drives objects with `many.more()`, which newer Hypothesis
    # (6.170 here) replaced by `with many(...) as e: for _ in e:`. Same protocol, old spelling.
    def _more(self: Any) -> bool:
        if self._depth is None:
            self.__enter__()
            self._legacy_iterator = iter(self)
        try:
            next(self._legacy_iterator)
        except StopIteration:
            self.__exit__(None, None, None)
            return False
        return True

    _cu.many.more = _more

PROMPT = "2.1.0"
BUFFER = "//depot/main/src/net/buffer.c"
STRINGS = "//depot/main/src/util/strings.c"
DEPLOY = "//depot/main/tools/deploy.py"
GONE = "//depot/main/src/old.c"
CHANGED = [BUFFER, STRINGS, DEPLOY, "//depot/rel/tools/deploy.py", GONE]
FINDING_SCHEMA = REVIEW_RESULT_SCHEMA["properties"]["findings"]["items"]
LINES = {
    BUFFER: changed_lines_from_diff("@@ -10,3 +10,4 @@\n a\n+b\n c\n d\n@@ -50 +51,2 @@\n x\n+y\n"),
    GONE: changed_lines_from_diff("@@ -20,3 +19,0 @@\n-p\n-q\n-r\n"),
    STRINGS: changed_lines_from_diff("==== //depot/main/src/util/strings.c#2 (binary) ====\n"),  # no hunks
}
PROPERTY_SETTINGS = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)


def _small(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with size caps, for speed: what it generates is still valid for the original."""
    schema = copy.deepcopy(schema)
    schema["properties"]["findings"]["maxItems"] = 3
    schema["properties"]["meta"]["maxProperties"] = 2
    return schema


_schema_documents = from_schema(_small(REVIEW_RESULT_SCHEMA))
_json_leaf = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12)
_json = st.recursive(
    _json_leaf,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=15,
)
# Weighted towards the files that LINES line-checks.
_changed_file_variants = st.sampled_from(
    CHANGED
    + [BUFFER, GONE, "./src/net/buffer.c", " buffer.c ", "src\\old.c", "src\\util\\strings.c", "deploy.py", "x.c"]
)
_junk_lines = st.sampled_from(["abc", "1e3", "0x10", "", "12.0", "+3", "\u0663", "1_000", " 4 ", "-0", True, None, [7]])
_odd_lines = st.one_of(
    _junk_lines,
    _junk_lines,  # twice: junk is what a crash-prone coercion would trip on
    st.integers(-5, 80).map(str),
    st.integers(1, 80).map(lambda n: f" {n} "),
    st.integers(-5, 0),
    st.integers(10**18, 10**30),
    st.floats(-5, 80),
    st.integers(1, 80).map(float),
)
_random_changed_lines = st.dictionaries(
    st.sampled_from(CHANGED),
    st.builds(
        ChangedLines,
        added=st.frozensets(st.integers(1, 80), max_size=6),
        deletions=st.lists(
            st.tuples(st.integers(0, 80), st.integers(0, 4)).map(lambda t: (t[0], t[0] + t[1])), max_size=2
        ).map(tuple),
    ),
    max_size=3,
)
_changed_lines = st.one_of(st.just(LINES), st.just(LINES), st.none(), _random_changed_lines)
_mostly = st.sampled_from([True, True, True, False])
_line_checks = st.fixed_dictionaries(
    {
        "changed_lines": _changed_lines,
        "line_policy": st.sampled_from(["drop", "flag"]),
        "line_tolerance": st.integers(0, 5),
    }
)


@st.composite
def _mutated_finding(draw: st.DrawFn, finding: Any) -> Any:
    if not isinstance(finding, dict):
        return finding
    finding = dict(finding)
    # Mostly a plausible file and line, so that findings reach reconciliation and line checks.
    if draw(_mostly):
        finding["file"] = draw(_changed_file_variants)
    if draw(_mostly):
        finding["line"] = draw(st.integers(1, 70))
        finding.pop("end_line", None)
        if draw(st.booleans()):
            finding["end_line"] = finding["line"] + draw(st.integers(-2, 30))
    # Mostly one mutation (so that it is the one the parser sees), sometimes a few.
    for _ in range(draw(st.sampled_from([1, 1, 1, 1, 2, 3]))):
        keys = sorted(finding) or ["id"]
        kind = draw(
            st.sampled_from(
                ["none", "delete", "wrong_type", "enum", "line", "line", "end_line", "backslash", "extra", "whitespace"]
            )
        )
        if kind == "delete":
            finding.pop(draw(st.sampled_from(keys)), None)
        elif kind == "wrong_type":
            finding[draw(st.sampled_from(keys))] = draw(_json_leaf | st.lists(_json_leaf, max_size=2))
        elif kind == "enum":
            field = draw(st.sampled_from(["severity", "category", "confidence"]))
            finding[field] = draw(st.sampled_from(["High", "urgent", "bug", "", " low ", "certain", 3]))
        elif kind in ("line", "end_line"):
            finding[kind] = draw(_odd_lines)
        elif kind == "backslash" and isinstance(finding.get("file"), str):
            finding["file"] = finding["file"].replace("/", "\\")
        elif kind == "extra":
            finding[draw(st.text(max_size=8))] = draw(_json_leaf)
        elif kind == "whitespace":
            field = draw(st.sampled_from(keys))
            if isinstance(finding[field], str):
                finding[field] = f"  {finding[field]}\n"
    return finding


@st.composite
def _mutated_document(draw: st.DrawFn) -> Any:
    document = draw(_schema_documents)
    # Mostly the expected versions: otherwise every document is rejected before findings.
    if draw(_mostly):
        document["schema_version"] = draw(st.sampled_from(["1.0", "1.0", "1.2"]))
        document["prompt_version"] = draw(st.sampled_from([PROMPT, PROMPT, "2.1", "2.1.7"]))
    document["findings"] = [draw(_mutated_finding(f)) for f in document["findings"]]
    for _ in range(0 if draw(_mostly) else draw(st.integers(1, 2))):
        kind = draw(st.sampled_from(["delete", "wrong_type", "extra", "findings", "findings_item"]))
        if kind == "delete":
            document.pop(draw(st.sampled_from(sorted(document))), None)
        elif kind == "wrong_type":
            document[draw(st.sampled_from(sorted(document) or ["findings"]))] = draw(_json)
        elif kind == "extra":
            document[draw(st.text(max_size=8))] = draw(_json_leaf)
        elif kind == "findings":
            document["findings"] = draw(_json)
        elif kind == "findings_item" and isinstance(document.get("findings"), list):
            document["findings"].append(draw(_json))
    return document


def _check(outcome: ParseOutcome, document: Any = None, line_checks: dict[str, Any] | None = None) -> None:
    """Properties 1-3 for one outcome; `document` is the parsed input when it was JSON."""
    # 1. a rejection with exactly one response_rejected diagnostic, or a result
    assert isinstance(outcome, ParseOutcome)
    if outcome.rejected:
        assert outcome.result is None
        assert [d.kind for d in outcome.diagnostics] == ["response_rejected"]
        return
    assert outcome.result is not None
    assert "response_rejected" not in [d.kind for d in outcome.diagnostics]
    jsonschema.validate(outcome.result.model_dump(mode="json", exclude_none=True), REVIEW_RESULT_SCHEMA)

    # 2. kept findings: schema-valid, one of the changed files, near a change unless flagged
    line_checks = line_checks or {}
    changed_lines = line_checks.get("changed_lines") or {}
    tolerance = line_checks.get("line_tolerance", 3)
    outside: list[str] = []
    for kept in outcome.result.findings:
        jsonschema.validate(kept.model_dump(mode="json", exclude_none=True), FINDING_SCHEMA)
        assert kept.file in CHANGED
        lines = changed_lines.get(kept.file)
        if lines is not None and lines.has_hunks and not lines.near(kept.line, kept.end_line, tolerance):
            outside.append(kept.id)
    if line_checks.get("line_policy", "drop") == "drop":
        assert outside == []
    else:
        flagged = ((outcome.result.meta or {}).get("flagged") or {}).get("line_outside_diff", [])
        assert sorted(outside) == flagged

    # 3. every input finding is either kept or reported dropped
    assert isinstance(document, dict) and isinstance(document.get("findings"), list)
    dropped = [d for d in outcome.diagnostics if d.kind == "finding_dropped"]
    assert len(outcome.result.findings) + len(dropped) == len(document["findings"])


def _parse(text: Any, **kwargs: Any) -> ParseOutcome:
    return parse_review_result(text, CHANGED, expected_prompt_version=PROMPT, **kwargs)


@pytest.mark.spec("OC-13")
@settings(PROPERTY_SETTINGS, max_examples=150)
@given(text=st.text(max_size=300) | st.binary(max_size=100))
def test_any_text_or_bytes(text: Any) -> None:
    outcome = _parse(text)
    assert outcome.rejected  # no bare JSON object with the required fields by chance
    _check(outcome)


@pytest.mark.spec("OC-13")
@settings(PROPERTY_SETTINGS, max_examples=150)
@given(document=_json, line_checks=_line_checks)
def test_any_json_value(document: Any, line_checks: dict[str, Any]) -> None:
    _check(_parse(json.dumps(document), **line_checks), document, line_checks)


@pytest.mark.spec("OC-4", "OC-10", "OC-13")
@settings(PROPERTY_SETTINGS, max_examples=200)
@given(document=_mutated_document(), line_checks=_line_checks, drift=st.booleans())
def test_schema_shaped_and_mutated_documents(document: Any, line_checks: dict[str, Any], drift: bool) -> None:
    outcome = _parse(json.dumps(document), allowed_prompt_patch_drift=drift, **line_checks)
    _check(outcome, document, line_checks)


@st.composite
def _valid_document(draw: st.DrawFn) -> dict[str, Any]:
    document = draw(_schema_documents)
    document["schema_version"], document["prompt_version"] = "1.0", PROMPT
    for finding in document["findings"]:
        finding["file"] = draw(st.sampled_from(CHANGED))
        if "end_line" in finding:
            finding["end_line"] = finding["line"] + draw(st.integers(0, 5))
        for field in ("id", "title", "message"):
            # A blank required string is empty once trimmed: dropped, by design.
            if not finding[field].strip():
                finding[field] = f"{finding[field]}x"
    return document


@pytest.mark.spec("OC-13")
@settings(PROPERTY_SETTINGS, max_examples=50)
@given(document=_valid_document())
def test_valid_documents_keep_every_finding(document: dict[str, Any]) -> None:
    outcome = _parse(json.dumps(document))
    _check(outcome, document)
    assert outcome.result is not None
    first_of_each_id: dict[str, dict[str, Any]] = {}
    for finding in document["findings"]:
        first_of_each_id.setdefault(finding["id"].strip(), finding)
    assert [(f.id, f.file, f.line) for f in outcome.result.findings] == [
        (key, finding["file"], finding["line"]) for key, finding in first_of_each_id.items()
    ]
    dropped = [d.reason for d in outcome.diagnostics if d.kind == "finding_dropped"]
    assert dropped == ["duplicate_finding_id"] * (len(document["findings"]) - len(first_of_each_id))

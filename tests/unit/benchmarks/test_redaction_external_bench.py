"""The external redaction corpus and its benchmark report what they claim: every labelled secret
sits in its record, issue 13's records are kept as they were, issue 28's shapes are reported
apart, gitleaks' records stay out of the headline. No redaction figure is asserted here (the
floors are in tests/unit/change/test_redaction_ruleset.py)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from benchmarks.redaction_external import (
    CLASSES,
    CORPUS,
    NEGATIVE_CLASSES,
    issue28_item,
    issue28_shape,
    load,
    origin,
    round_one,
    table,
)

TOOLS = Path(__file__).resolve().parents[3] / "tools"


def _sources():
    spec = importlib.util.spec_from_file_location("external_corpus_sources", TOOLS / "external_corpus_sources.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("external_corpus_sources", module)
    spec.loader.exec_module(module)
    return module


def _well_formed(records: list[dict]) -> None:
    for record in records:
        assert record["label"] in ("secret", "negative"), record["source"]
        assert origin(record), record
        if record["label"] == "secret":
            assert record["class"] in CLASSES, record["class"]
            assert record["secret"] and record["secret"] in record["text"], record["source"]
        else:
            assert record["class"] in NEGATIVE_CLASSES + ("rule_negative",), record["class"]


def test_the_committed_corpus_is_well_formed_and_keeps_issue_13s_records():
    records = load([CORPUS])
    _well_formed(records)
    first = round_one(records)
    assert sum(record["label"] == "secret" for record in first) == 1749  # docs/redaction.md's count
    assert sum(record["class"] in NEGATIVE_CLASSES for record in first) == 750
    assert CORPUS.stat().st_size < 3_000_000


def test_what_the_benchmark_reads_is_well_formed():
    # The committed corpus, plus the fetched part where it has been built (never in a fresh clone:
    # it is made from snapshots that are not committed).
    _well_formed(load())
    assert len(load()) >= len(load([CORPUS]))


def test_issue_28_shapes_are_read_from_the_record():
    def secret(text: str, value: str, label: str = "token") -> dict:
        return {"label": "secret", "class": label, "text": text, "secret": value, "source": "x@1:y"}

    assert issue28_item(secret("pw = 'a&b=c#d;e'", "a&b=c#d;e", "password")) == 2
    assert issue28_item(secret("GET /x?api_key=Zq81mXcV0pLw", "Zq81mXcV0pLw")) == 6
    assert issue28_item(secret("X-Api-Key: Zq81mXcV0pLw", "Zq81mXcV0pLw")) == 6
    assert issue28_item(secret("token = Zq81mXcV0pLw", "Zq81mXcV0pLw")) is None
    assert issue28_item({**secret("k = v", "v"), "issue28_item": 5}) == 5
    assert issue28_shape(secret("machine h login u password Zq81mX", "Zq81mX", "credential_file"))


def test_the_table_reports_classes_macro_and_sets_gitleaks_apart():
    records = [
        {"label": "secret", "class": "token", "text": "a Zq81mXcV0pLw", "secret": "Zq81mXcV0pLw", "source": "s@1:p"},
        {"label": "secret", "class": "copy", "text": "b Zq81mXcV0pLx", "secret": "Zq81mXcV0pLx", "source": "s@1:p"},
        {
            "label": "secret",
            "class": "token",
            "text": "c Zq81mXcV0pLy",
            "secret": "Zq81mXcV0pLy",
            "source": "gitleaks@1:p",
        },
        {"label": "negative", "class": "real_code_js", "text": "const token = next()", "source": "node_modules:x"},
    ]
    report = table(records, {"tool": ([True, False, False, False], 0.1)})
    assert "| **recall, all classes** (2) | 0.50 |" in report  # gitleaks' record left out
    assert "| **recall, macro (mean of the classes)** | 0.50 |" in report
    assert "| recall, copy (built after issue 28) (1) | 0.00 |" in report
    assert "| recall, shapes built after reading issue 28 (1) | 0.00 |" in report
    assert "recall, gitleaks (set apart" in report
    assert "| negatives altered, real_code_js from node_modules (1) | 0.00 |" in report


def test_derived_records_keep_their_span_and_their_base():
    sources = _sources()
    bases = [
        {
            "label": "secret",
            "class": "token",
            "text": f"api_token = 'Zq81mXcV0pLw{index:04d}'",
            "secret": f"Zq81mXcV0pLw{index:04d}",
            "source": "s@1:p",
            "labelled": "source",
        }
        for index in range(120)
    ]
    derived = sources.derived(bases)
    assert {record["transform"] for record in derived} >= {
        "json_escaped_keyword",
        "zero_width_keyword",
        "full_width",
        "carriage_return",
        "second_copy",
        "file_path",
    }
    for record in derived:
        assert record["secret"] in record["text"], record["transform"]
        assert record["derived_secret"] in record["derived_from"]
        assert record["issue28_item"] in (1, 7, 8)

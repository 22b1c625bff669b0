"""`make eval-review` (benchmarks/review_quality.py `main`): a public reversed-fix case through the
real review stage with an OpenAI-compatible model (a local server speaking the wire format, the key
in the LLM secret), scored beside the offline reviewer in the same run, with the provider's tokens,
the dollars its prices make, and prompt 1.6.0's request showing the enclosing function."""

from __future__ import annotations

import json

import pytest

import benchmarks.review_quality as review_quality
from p4review_dev.support.harness import provisioned_service
from p4review_dev.support.llm_server import chat_completion, scripted_server  # noqa: F401 (fixture)

CASE_ID = "pallets/werkzeug@7326de64ea"  # test split, one defect: src/werkzeug/serving.py line 478
MODEL = "qwen-coder"


def _answer(case: dict) -> str:
    defect = case["defects"][0]
    finding = {
        "id": "F1",
        "severity": "high",
        "category": "correctness",
        "title": "The check is gone",
        "file": defect["file"],
        "line": defect["lines"][0],
        "message": "Explained.",
        "confidence": "high",
    }
    return json.dumps({"schema_version": "1.1", "prompt_version": "1.6.0", "findings": [finding]})


@pytest.fixture
def one_case(monkeypatch):
    (case,) = [c for c in review_quality.load_cases() if c["id"] == CASE_ID]
    monkeypatch.setattr(review_quality, "load_cases", lambda path=review_quality.DATA: [case])
    monkeypatch.setattr(review_quality, "REVIEWERS", dict(review_quality.REVIEWERS))  # evaluate_provider edits it
    return case


def test_eval_review_scores_the_model_beside_the_offline_reviewer(
    moto_endpoint, aws_reset, server, one_case, capsys, monkeypatch
):
    # `main` exports the provider and model for the review stage (and its worker processes):
    # monkeypatch puts the variables back afterwards.
    monkeypatch.setenv("P4REVIEW_LLM_PROVIDER", "openai")
    monkeypatch.setenv("P4REVIEW_LLM_MODEL", MODEL)
    with provisioned_service(
        moto_endpoint,
        extra_env={"P4REVIEW_LLM_BASE_URL": server.base_url, "P4REVIEW_PROMPT_STABLE": "1.6.0"},
        llm_key="sk-test-eval-0123456789",
    ):
        server.script(chat_completion(_answer(one_case), model=MODEL, prompt_tokens=2000, completion_tokens=100))
        argv = ["--provider", "openai", "--model", MODEL, "--splits", "test", "--workers", "1"]
        assert review_quality.main([*argv, "--input-price", "3", "--output-price", "15"]) == 0
    out = capsys.readouterr().out
    rows = {line.split(":")[0].strip(): line for line in out.splitlines() if line.startswith("  ")}
    assert "all (1 changes, 1 defects) recall 1.00 precision 1.00 [1 findings]" in rows[f"openai {MODEL}"]
    assert f"openai {MODEL}, what it cost: 2,000 input and 100 output tokens a case" in out
    assert "$0.0075 a case" in out  # (2,000 x 3 + 100 x 15) / 1e6
    assert "offline default" in rows  # the offline reviewer, same run
    (request,) = server.requests
    assert "prompt_version: 1.6.0" in request.body["messages"][0]["content"]
    assert "=== FILE src/werkzeug/serving.py (edit) ===" in request.body["messages"][1]["content"]

"""The review stage on the stage runtime with each real provider, wired from settings exactly as
the function is (review_setup -> provider factory -> LLM secret in Secrets Manager): OpenAI and
Anthropic against local servers speaking their wire formats, Bedrock through botocore's Stubber.
Each answer goes through the parser and is stored with its provider-reported tokens; a rotated
key is picked up after a 401."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber

from p4review import resources as spec
from p4review.change.unified_diff import iter_added_lines
from p4review.models.job import StageName
from p4review.models.review_result import StoredReview
from p4review.review.llm import bedrock_provider
from p4review.review.llm.base import RESULT_TOOL_NAME
from p4review.review.offline import OFFLINE_PROMPT_VERSION
from p4review.review.settings import ReviewSettings
from p4review.review.setup import build_review_work
from p4review.review.stores import review_stores
from p4review.stores.factory import get_data_access
from p4review_dev.support.harness import fetched_job, provisioned_service, run_once
from p4review_dev.support.llm_server import Reply, scripted_server  # noqa: F401 (fixture)

CHANGE = 48220  # Python edit + add + move: three fetched files
KEY = "sk-test-review-0123456789"
ROTATED = "sk-test-rotated-9876543210"


BEDROCK_MODEL = "us.anthropic.claude-3-7-sonnet-20250219-v1:0"


def _fetch_then_answer(stable_version: str = "1.2.0") -> tuple[Any, dict[str, Any]]:
    """Fetch the change; return the job and a model answer with one finding on a real added line."""
    dal = get_data_access()
    job = fetched_job(f"providers-{CHANGE}", CHANGE)
    snapshot = dal.redacted_artifacts.get_json(job.artifacts.change_key)["snapshot"]
    diff = next(d for d in snapshot["diffs"] if d["status"] == "fetched")
    added = next(iter_added_lines(diff["unified_diff"]))
    answer = {
        "schema_version": "1.0",
        "prompt_version": stable_version,
        "summary": "One problem.",
        "findings": [
            {
                "id": "F1",
                "severity": "high",
                "category": "correctness",
                "title": "Real problem",
                "file": diff["depot_path"],
                "line": added.line,
                "message": "Explained.",
                "confidence": "high",
            },
            {
                "id": "F2",
                "severity": "low",
                "category": "style",
                "title": "Invented line",
                "file": diff["depot_path"],
                "line": added.line + 400,
                "message": "Off the diff.",
            },
        ],
    }
    return job, answer


def _review(job) -> tuple[Any, StoredReview]:
    dal = get_data_access()
    disposition, job = run_once(job, build_review_work(ReviewSettings.from_env(), dal), worker_id="reviewer")
    assert disposition.ack, disposition
    return job, StoredReview.model_validate(dal.redacted_artifacts.get_json(job.artifacts.result_key))


def _set_llm_key(service, value: str) -> None:
    secret_id = service.resources.secrets[spec.LLM_SECRET.key]
    service.client("secretsmanager").put_secret_value(SecretId=secret_id, SecretString=json.dumps({"api_key": value}))


def _assert_reviewed(job, stored: StoredReview, provider: str, input_tokens: int, output_tokens: int) -> None:
    # F2 is off the changed lines; the analyzers' findings (named by rule_id) come beside the model's.
    model_findings = [f.id for f in stored.result.findings if not (f.rule_id or "").startswith(("bandit/", "ruff/"))]
    assert model_findings == ["F1"]
    assert any(d.reason == "line_outside_diff" for d in stored.diagnostics)
    assert (stored.usage.provider, stored.usage.input_tokens, stored.usage.output_tokens) == (
        provider,
        input_tokens,
        output_tokens,
    )
    assert job.summary.provider == provider and job.summary.input_tokens == input_tokens
    assert job.stages[StageName.REVIEW].status.value == "completed"


@pytest.mark.spec("PR-12")
def test_openai_compatible_server(moto_endpoint, aws_reset, server):
    with provisioned_service(
        moto_endpoint,
        extra_env={
            "P4REVIEW_LLM_PROVIDER": "openai",
            "P4REVIEW_LLM_MODEL": "qwen-coder",
            "P4REVIEW_LLM_BASE_URL": server.base_url,
        },
    ) as service:
        _set_llm_key(service, KEY)
        job, answer = _fetch_then_answer()
        server.script(
            Reply(
                body={
                    "id": "c1",
                    "object": "chat.completion",
                    "created": 1,
                    "model": "qwen-coder",
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": "stop",
                            "message": {"role": "assistant", "content": json.dumps(answer)},
                        }
                    ],
                    "usage": {"prompt_tokens": 1234, "completion_tokens": 56, "total_tokens": 1290},
                }
            )
        )
        job, stored = _review(job)
        _assert_reviewed(job, stored, "openai", 1234, 56)
        (request,) = server.requests
        assert request.headers["authorization"] == f"Bearer {KEY}"
        assert request.body["response_format"]["json_schema"]["name"] == "ReviewResult"
        assert "prompt_version: 1.2.0" in request.body["messages"][0]["content"]
        assert "changed_files" in request.body["messages"][1]["content"]


@pytest.mark.spec("SEC-21")
def test_anthropic_after_a_key_rotation(moto_endpoint, aws_reset, server):
    with provisioned_service(
        moto_endpoint,
        extra_env={
            "P4REVIEW_LLM_PROVIDER": "anthropic",
            "P4REVIEW_LLM_MODEL": "claude-sonnet-4-6",
            "P4REVIEW_LLM_BASE_URL": server.root_url,
            "P4REVIEW_SECRET_CACHE_SECONDS": "300",
        },
    ) as service:
        _set_llm_key(service, KEY)
        job, answer = _fetch_then_answer()
        review_stores(
            get_data_access(), ReviewSettings.from_env()
        ).llm_credentials.api_key()  # warm the cache with the old key ...
        _set_llm_key(service, ROTATED)  # ... then rotate it: the first call gets a 401
        work_dal = get_data_access()
        server.script(
            Reply(status=401, body={"type": "error", "error": {"type": "authentication_error", "message": "bad key"}}),
            Reply(
                body={
                    "id": "m1",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-test",
                    "content": [{"type": "tool_use", "id": "t1", "name": RESULT_TOOL_NAME, "input": answer}],
                    "stop_reason": "tool_use",
                    "stop_sequence": None,
                    "usage": {"input_tokens": 2000, "output_tokens": 80},
                }
            ),
        )
        assert work_dal is get_data_access()
        job, stored = _review(job)
        _assert_reviewed(job, stored, "anthropic", 2000, 80)
        first, second = server.requests
        assert ROTATED not in json.dumps(first.headers) and ROTATED in json.dumps(second.headers)
        assert second.body["tool_choice"]["name"] == RESULT_TOOL_NAME


@pytest.mark.spec("RV-7")
def test_bedrock_converse(moto_endpoint, aws_reset, monkeypatch):
    client = boto3.client(
        "bedrock-runtime", region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing"
    )
    monkeypatch.setattr(bedrock_provider, "make_bedrock_client", lambda region, timeout: client)
    with provisioned_service(
        moto_endpoint,
        extra_env={"P4REVIEW_LLM_PROVIDER": "bedrock", "P4REVIEW_LLM_MODEL": BEDROCK_MODEL},
    ):
        job, answer = _fetch_then_answer()
        with Stubber(client) as stubber:
            stubber.add_response(
                "converse",
                {
                    "output": {
                        "message": {
                            "role": "assistant",
                            "content": [{"toolUse": {"toolUseId": "t1", "name": RESULT_TOOL_NAME, "input": answer}}],
                        }
                    },
                    "stopReason": "tool_use",
                    "usage": {"inputTokens": 3000, "outputTokens": 90, "totalTokens": 3090},
                    "metrics": {"latencyMs": 10},
                },
                {
                    "modelId": BEDROCK_MODEL,
                    "system": ANY,
                    "messages": ANY,
                    "inferenceConfig": ANY,
                    "toolConfig": ANY,
                    "requestMetadata": ANY,
                },
            )
            job, stored = _review(job)
            stubber.assert_no_pending_responses()
        _assert_reviewed(job, stored, "bedrock", 3000, 90)


def test_offline_is_the_default_and_reports_estimated_tokens(moto_endpoint, aws_reset):
    with provisioned_service(moto_endpoint):
        job, _ = _fetch_then_answer()
        job, stored = _review(job)
        assert stored.usage.provider == "offline" and stored.usage.estimated and stored.usage.input_tokens > 0
        assert stored.prompt_version == stored.result.prompt_version == OFFLINE_PROMPT_VERSION
        assert stored.coverage.files_reviewed

"""The review stage on the stage runtime against moto, with a scripted provider: chunking of a
large change, resume from stored chunk answers after a failure, split-and-retry on a context
overflow, rejected answers in the coverage, line checks, noise controls, the canary track and
the per-track metrics."""

from __future__ import annotations

import copy
import json
import re
from collections import Counter
from typing import Any

import pytest

import p4review.perforce.access as p4_access
from p4review.models.job import JobStatus, StageName
from p4review.models.review_result import StoredReview
from p4review.review.llm.base import ContextTooLong, LlmRequest, LlmResponse, ProviderUnavailable
from p4review.review.noise import parse_noise_policy
from p4review.review.prompts import load_registry
from p4review.review.reviewers import ProviderReviewer
from p4review.review.settings import ReviewSettings
from p4review.review.stage import ReviewConfig, ReviewWork
from p4review.stores.factory import get_data_access
from p4review_dev.support.harness import fetched_job, provisioned_service, run_once

_FILE_HEADER = re.compile(r"^=== FILE (\S+) \(")
_ADDED = re.compile(r"^(\d+) \+")


class ScriptedProvider:
    """Answers like a model: one finding on the first added line of each file in the request.
    `script` maps a call number (1-based) to an exception to raise or a text to answer instead."""

    name = "scripted"
    model = "scripted-1"

    def __init__(
        self,
        script: dict[int, object] | None = None,
        *,
        wrong_line: bool = False,
        too_long_over_files: int | None = None,
    ):
        self.script = script or {}
        self.requests: list[LlmRequest] = []
        self.wrong_line = wrong_line
        self.too_long_over_files = too_long_over_files

    def complete(self, request: LlmRequest) -> LlmResponse:
        self.requests.append(request)
        files = _first_added_lines(request.user)
        scripted = self.script.get(len(self.requests))
        if isinstance(scripted, Exception):
            raise scripted
        if self.too_long_over_files is not None and len(files) > self.too_long_over_files:
            raise ContextTooLong("scripted: prompt is too long")
        version = re.search(r"prompt_version: (\S+)", request.system)[1]
        schema = re.search(r"schema_version: (\S+)", request.system)[1]
        # A 1.1 prompt asks for suggested_code: the model gives it (schema 1.1 is additive).
        extra = {"suggested_code": "    fixed();"} if schema == "1.1" else {}
        findings = [
            {
                "id": f"F{i}",
                "severity": "high",
                "category": "correctness",
                "title": f"Check {path}",
                "file": path,
                "line": (line + 500 if self.wrong_line else line),
                "message": "m",
                "confidence": "high",
                **extra,
            }
            for i, (path, line) in enumerate(files.items())
            if line
        ]
        text = (
            scripted
            if isinstance(scripted, str)
            else json.dumps(
                {
                    "schema_version": schema,
                    "prompt_version": version,
                    "summary": f"{len(files)} files",
                    "findings": findings,
                }
            )
        )
        return LlmResponse(
            text=text,
            input_tokens=len(request.user) // 4,
            output_tokens=len(text) // 4,
            provider=self.name,
            model=self.model,
        )


def _first_added_lines(user_message: str) -> dict[str, int | None]:
    files: dict[str, int | None] = {}
    current = None
    for line in user_message.splitlines():
        if header := _FILE_HEADER.match(line):
            current = header[1]
            files[current] = None
        elif current and files[current] is None and (added := _ADDED.match(line)):
            files[current] = int(added[1])
    return files


# The fixture depot does not change, so p4's answers are kept for the module: the 300-file change
# is fetched through p4 once here, not once per test (each fetch starts p4 some 300 times).
_P4_ANSWERS: dict[tuple[str, tuple[str, ...]], Any] = {}


class RememberingRunner:
    """A P4Runner that answers a command it has already run from memory (errors are not kept)."""

    def __init__(self, runner: Any) -> None:
        self._runner = runner

    def _answer(self, kind: str, args: list[str], **options: Any) -> Any:
        key = (kind, tuple(args))
        if key not in _P4_ANSWERS:
            _P4_ANSWERS[key] = getattr(self._runner, kind)(args, **options)
        return copy.deepcopy(_P4_ANSWERS[key])

    def run_marshal(self, args: list[str], **options: Any) -> Any:
        return self._answer("run_marshal", args, **options)

    def run_text(self, args: list[str], **options: Any) -> Any:
        return self._answer("run_text", args, **options)

    def stream_marshal(self, args: list[str], operands: list[str], **options: Any) -> Any:
        key = ("stream_marshal", (*args, "--", *operands))
        if key not in _P4_ANSWERS:
            _P4_ANSWERS[key] = list(self._runner.stream_marshal(args, operands, **options))
        return iter(copy.deepcopy(_P4_ANSWERS[key]))


@pytest.fixture(autouse=True)
def _p4_answers_are_remembered(monkeypatch):
    real = p4_access.P4Runner
    monkeypatch.setattr(p4_access, "P4Runner", lambda *args, **kwargs: RememberingRunner(real(*args, **kwargs)))


def _guidance_tag(applies_to: str) -> str:
    """The opening tag of a guidance block: its name ends in the request's nonce."""
    return rf'<repository_review_guidance_[0-9a-f]{{8}} applies_to="{re.escape(applies_to)}">'


def _fetched_job(changelist_id: int, key: str, **settings):
    return fetched_job(key, changelist_id, **settings)


def _review(job, provider, **config):
    dal = get_data_access()
    work = ReviewWork(
        dal.redacted_artifacts,
        ReviewSettings.from_env().redaction_policy(),
        ProviderReviewer(provider),
        ReviewConfig(registry=config.pop("registry", load_registry()), **config),
    )
    return run_once(job, work, worker_id="reviewer")


def _stored(job) -> StoredReview:
    return StoredReview.model_validate(get_data_access().redacted_artifacts.get_json(job.artifacts.result_key))


def test_a_large_change_is_reviewed_in_chunks_and_every_file_is_accounted_for(moto_endpoint, aws_reset):
    with provisioned_service(moto_endpoint):
        # 300 generated files (290 fetched, 10 deletes), reviewed here as a large change.
        job = _fetched_job(48255, "chunks", review_generated=True)
        provider = ScriptedProvider()
        disposition, job = _review(job, provider, chunk_tokens=3000, job_tokens=1_000_000)
        assert disposition.ack and job.stages[StageName.REVIEW].status.value == "completed"
        stored = _stored(job)
        assert len(provider.requests) == stored.usage.chunks > 5
        for request in provider.requests:  # each request lists only its own files
            assert set(_first_added_lines(request.user)) == set(re.findall(r"^- (//\S+)$", request.user, re.M))
        coverage = stored.coverage
        assert len(coverage.files_reviewed) + len(coverage.files_skipped) == 300
        assert {s.reason for s in coverage.files_skipped} == {"deleted"}
        assert len({f.id for f in stored.result.findings}) == len(stored.result.findings)
        assert job.summary.chunks == stored.usage.chunks and job.summary.input_tokens == stored.usage.input_tokens > 0
        assert job.summary.provider == "scripted" and job.summary.prompt_track == "stable"


@pytest.mark.spec("RV-17")
def test_generated_files_are_skipped_by_default_and_cost_no_request(moto_endpoint, aws_reset):
    with provisioned_service(moto_endpoint):
        job = _fetched_job(48255, "generated")  # every file's header: "Generated by nwproto ... DO NOT EDIT."
        provider = ScriptedProvider()
        disposition, job = _review(job, provider, chunk_tokens=3000)
        assert disposition.ack and provider.requests == []
        stored = _stored(job)
        reasons = Counter(s.reason for s in stored.coverage.files_skipped)
        assert reasons == {"generated": 290, "deleted": 10} and stored.coverage.files_reviewed == []


def test_a_retry_resumes_from_the_stored_chunk_answers(moto_endpoint, aws_reset):
    with provisioned_service(moto_endpoint):
        job = _fetched_job(48255, "resume", review_generated=True)
        failing = ScriptedProvider({4: ProviderUnavailable("provider 503")})
        disposition, after = _review(job, failing, chunk_tokens=3000)
        assert not disposition.ack  # retryable: the message comes back
        assert after.stages[StageName.REVIEW].last_error_class == "UPSTREAM_ERROR"
        answered_before = [r.user for r in failing.requests[:3]]
        second = ScriptedProvider()
        disposition, after = _review(after, second, chunk_tokens=3000)
        assert disposition.ack
        # The three chunks answered before the failure were not paid for again.
        assert not set(answered_before) & {r.user for r in second.requests}
        stored = _stored(after)
        assert stored.usage.chunks_resumed == 3 and stored.usage.chunks == 3 + len(second.requests)


def test_context_overflow_splits_the_chunk_and_a_single_file_that_never_fits_is_skipped(moto_endpoint, aws_reset):
    with provisioned_service(moto_endpoint):
        job = _fetched_job(48213, "split")  # 4 fetched files
        provider = ScriptedProvider(too_long_over_files=1)
        disposition, job = _review(job, provider)
        assert disposition.ack
        stored = _stored(job)
        assert stored.usage.chunks == 4  # 4 files -> 2+2 -> 1+1+1+1
        provider = ScriptedProvider(too_long_over_files=0)
        job = _fetched_job(48220, "never-fits")
        disposition, job = _review(job, provider)
        assert disposition.ack
        stored = _stored(job)
        assert stored.coverage.files_reviewed == []
        assert {s.reason for s in stored.coverage.files_skipped} >= {"too_large"}


def test_a_rejected_answer_drops_only_its_chunk(moto_endpoint, aws_reset):
    with provisioned_service(moto_endpoint):
        job = _fetched_job(48255, "one-rejected", review_generated=True)
        disposition, job = _review(job, ScriptedProvider({2: "Sure! Here is the review: {}"}), chunk_tokens=3000)
        assert disposition.ack and job.status != JobStatus.DEAD_LETTERED
        stored = _stored(job)
        rejected = [s for s in stored.coverage.files_skipped if s.reason == "answer_rejected"]
        assert rejected and any(d.reason == "invalid_json" for d in stored.diagnostics)
        assert stored.model_answer.status == "partly_rejected" and stored.model_answer.parts_rejected == 1
        assert job.summary.model_answer == "partly_rejected"


YAML_ANSWER = "schema_version: '1.0'\nprompt_version: 1.2.0\nfindings: []\nsummary: As you asked, in YAML.\n"


@pytest.mark.spec("OC-9")
def test_a_rejected_answer_still_delivers_the_heuristic_findings_and_says_so(moto_endpoint, aws_reset):
    """A change that asks the model to answer in YAML: the answer is rejected, the job is not
    dead-lettered, and the heuristic reviewer's findings on the same code are kept (issue 27)."""
    with provisioned_service(moto_endpoint) as service:
        job = _fetched_job(48213, "all-rejected")
        disposition, job = _review(job, ScriptedProvider({1: YAML_ANSWER}))
        assert disposition.ack and job.status != JobStatus.DEAD_LETTERED
        assert job.stages[StageName.REVIEW].status.value == "completed"
        stored = _stored(job)
        assert stored.model_answer.model_dump(mode="json") == {
            "status": "rejected",
            "parts": 1,
            "parts_rejected": 1,
            "reasons": ["invalid_json"],
            "fallback": "heuristic",
        }
        assert job.summary.model_answer == "rejected" and job.summary.model_answer_reasons == ["invalid_json"]
        # The heuristic rules' findings (48213 has a high one) are in the result; none is the model's.
        assert any(f.severity == "high" for f in stored.result.findings)
        assert job.summary.findings == len(stored.result.findings) > 0
        # Nothing of the rejected answer is kept: neither its text nor a chunk document.
        document = json.dumps(stored.model_dump(mode="json"))
        assert "in YAML" not in document and "As you asked" not in document
        bucket = service.resources.buckets["redacted"]
        listed = service.client("s3").list_objects_v2(Bucket=bucket, Prefix="results/")
        keys = [o["Key"] for o in listed.get("Contents", []) if job.job_id in o["Key"]]
        assert keys == [job.artifacts.result_key]


def _many_findings(count: int, path: str, line: int, **fields: str) -> list[dict[str, Any]]:
    severities = ["low", "info", "medium", "high", "critical"]
    return [
        {
            "id": f"F{i}",
            "severity": severities[i % 5],
            "category": "correctness",
            "title": f"Problem {i}",
            "file": path,
            "line": line,
            "message": "m",
            **fields,
        }
        for i in range(count)
    ]


def _answer(findings: list[dict[str, Any]], **top: Any) -> str:
    return json.dumps({"schema_version": "1.0", "prompt_version": "1.2.0", "findings": findings, **top})


class AnswersWith(ScriptedProvider):
    """Answers every request with `answer(path, line)`, on the request's first added line."""

    def __init__(self, answer):
        super().__init__()
        self.answer = answer

    def complete(self, request: LlmRequest) -> LlmResponse:
        path, line = next((p, n) for p, n in _first_added_lines(request.user).items() if n)
        self.script[len(self.requests) + 1] = self.answer(path, line)
        return super().complete(request)


def test_four_hundred_findings_are_capped_most_severe_first_and_the_rest_counted(moto_endpoint, aws_reset):
    with provisioned_service(moto_endpoint):
        job = _fetched_job(48220, "four-hundred")
        disposition, job = _review(job, AnswersWith(lambda path, line: _answer(_many_findings(400, path, line))))
        assert disposition.ack
        stored = _stored(job)
        kept = stored.result.findings
        assert len(kept) == 50 and len(stored.fingerprints) == 50
        # The most severe first: the 80 critical ones are over the cap of 50, so only critical ones stay.
        assert {f.severity for f in kept} == {"critical"} and len({f.title for f in kept}) == 50
        assert stored.cut.model_dump(mode="json") == {
            "limit": 50,
            "findings_not_shown": 350,
            "by_severity": {"critical": 30, "high": 80, "info": 80, "low": 80, "medium": 80},
            "fields_truncated": 0,
        }
        assert job.summary.findings == 50 and job.summary.findings_not_shown == 350


def test_a_hostile_multi_megabyte_answer_is_stored_within_bounds(moto_endpoint, aws_reset):
    with provisioned_service(moto_endpoint):
        huge = "A" * 200_000
        dropped = [{"id": f"D{i}", "severity": "bogus"} for i in range(20_000)]  # 20 000 diagnostics

        def hostile(path: str, line: int) -> str:
            findings = _many_findings(20, path, line, title=huge, message=huge, suggestion=huge, rule_id=huge)
            answer = _answer(findings + dropped, summary=huge, meta={"blob": huge * 5})
            assert len(answer) > 4_000_000
            return answer

        job = _fetched_job(48220, "hostile")
        disposition, job = _review(job, AnswersWith(hostile))
        assert disposition.ack
        stored = _stored(job)
        size = len(json.dumps(get_data_access().redacted_artifacts.get_json(job.artifacts.result_key)))
        assert size < 200_000, size
        finding = stored.result.findings[0]
        assert finding.title.endswith("[... truncated]") and len(finding.title) == 200
        assert len(finding.message) == 1500 and len(finding.suggestion) == 600 and len(finding.rule_id) == 100
        assert stored.cut.fields_truncated == 20 * 4
        assert "blob" not in json.dumps(stored.model_dump(mode="json"))
        assert any(d.reason == "diagnostics_capped" for d in stored.diagnostics) and len(stored.diagnostics) <= 101


@pytest.mark.parametrize("policy", ["drop", "flag"])
def test_findings_off_the_changed_lines_are_dropped_or_flagged(moto_endpoint, aws_reset, policy):
    with provisioned_service(moto_endpoint):
        job = _fetched_job(48220, f"lines-{policy}")
        disposition, job = _review(job, ScriptedProvider(wrong_line=True), line_policy=policy)
        assert disposition.ack
        stored = _stored(job)
        outside = [d for d in stored.diagnostics if d.reason == "line_outside_diff"]
        assert outside
        if policy == "drop":
            assert stored.result.findings == []
        else:
            assert stored.result.findings
            assert stored.result.meta["flagged"]["line_outside_diff"] == sorted(f.id for f in stored.result.findings)


@pytest.mark.spec("PR-16", "PR-17")
def test_noise_controls_and_the_canary_track(moto_endpoint, aws_reset, capsys):
    with provisioned_service(moto_endpoint):
        job = _fetched_job(48213, "canary")
        registry = load_registry().with_overrides(stable="1.2.0", canary="1.3.0", canary_percent=100)
        provider = ScriptedProvider()
        capsys.readouterr()
        disposition, job = _review(
            job,
            provider,
            registry=registry,
            noise_rules=parse_noise_policy('[{"prefix": "//depot/", "max_findings": 1}]'),
        )
        assert disposition.ack
        assert "prompt_version: 1.3.0" in provider.requests[0].system
        stored = _stored(job)
        assert stored.prompt_version == "1.3.0" and stored.prompt_track == "canary"
        assert len(stored.result.findings) == 1 and stored.suppressed == {"over_max_findings": 3}
        assert job.summary.suppressed == 3 and job.summary.prompt_version == "1.3.0"
        emitted = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]
        by_track = [doc for doc in emitted if doc.get("PromptTrack") == "canary"]
        by_version = [doc for doc in emitted if doc.get("PromptVersion") == "1.3.0"]
        assert by_track and by_version
        values = {
            name: sum(v if isinstance(v, list) else [v]) for name, v in by_track[0].items() if name.startswith("Review")
        }
        assert values["ReviewJobsReviewed"] == 1 and values["ReviewValidFindings"] == 4
        assert values["ReviewInputTokens"] == job.summary.input_tokens > 0


@pytest.mark.spec("RV-14")
def test_the_1_4_0_canary_asks_for_schema_1_1_and_its_suggested_code_reaches_the_stored_result(
    moto_endpoint, aws_reset
):
    """The rollout of an additive schema version: the parser reads 1.0 and 1.1 (this release), the
    registry's canary (1.4.0) asks for 1.1 on its slice, the stable prompt keeps answering 1.0."""
    with provisioned_service(moto_endpoint):
        job = _fetched_job(48213, "schema-1-1")
        registry = load_registry().with_overrides(stable="1.2.0", canary="1.4.0", canary_percent=100)
        provider = ScriptedProvider()
        disposition, job = _review(job, provider, registry=registry)
        assert disposition.ack
        request = provider.requests[0]
        assert "schema_version: 1.1" in request.system
        assert "suggested_code" in request.json_schema["properties"]["findings"]["items"]["properties"]
        stored = _stored(job)
        assert stored.prompt_track == "canary" and stored.result.findings
        assert {f.suggested_code for f in stored.result.findings} == {"    fixed();"}

        stable_job = _fetched_job(48220, "schema-1-0")
        stable = ScriptedProvider()
        disposition, stable_job = _review(stable_job, stable)  # the shipped registry: canary at 0%
        assert disposition.ack and "schema_version: 1.0" in stable.requests[0].system
        assert "suggested_code" not in stable.requests[0].json_schema["properties"]["findings"]["items"]["properties"]
        assert all(f.suggested_code is None for f in _stored(stable_job).result.findings)


def test_the_context_canary_shows_the_enclosing_functions_and_its_answers_are_line_checked(moto_endpoint, aws_reset):
    """Prompt 1.6.0 (issue 30; 1.5.0 in fewer tokens): fetch kept packet.cpp's content, so readHeader() is sent whole
    around its hunk, with only the added lines numbered; the system prompt is the template,
    untouched (the cacheable prefix), and the finding on the first added line passes the line check."""
    with provisioned_service(moto_endpoint):
        job = _fetched_job(48213, "context-1-5-0")
        registry = load_registry().with_overrides(stable="1.2.0", canary="1.6.0", canary_percent=100)
        provider = ScriptedProvider()
        disposition, job = _review(job, provider, registry=registry)
        assert disposition.ack
        (request,) = provider.requests
        assert request.system == registry.template("1.6.0").text
        packet = request.user.split("=== FILE //depot/engine/main/src/net/packet.cpp (edit) ===")[1]
        packet = packet.split("=== FILE")[0]
        # readHeader()'s lines 34..38 are in neither hunk: the widening brings them
        assert "\n bool PacketReader::readHeader(PacketHeader& out) {\n" in packet
        assert "\n     const uint8_t* p = data_ + offset_;\n" in packet
        assert "\n42 +    if (out.length > kMaxPacketSize) {\n" in packet
        assert "\n41  " not in packet  # an unchanged line beside no removal carries no number
        stored = _stored(job)
        assert stored.prompt_version == "1.6.0" and stored.prompt_track == "canary"
        assert {(f.file, f.line) for f in stored.result.findings} >= {("//depot/engine/main/src/net/packet.cpp", 28)}


@pytest.mark.spec("RV-15")
def test_the_depot_policys_instructions_reach_the_request_as_delimited_data(moto_endpoint, aws_reset):
    """48220 is under //depot/tools/main/pipeline/, whose .p4review.toml (fixture) has
    instructions; the system prompt is the registry's template, untouched."""
    with provisioned_service(moto_endpoint):
        job = _fetched_job(48220, "policy-guidance")
        provider = ScriptedProvider()
        disposition, job = _review(job, provider)
        assert disposition.ack
        request = provider.requests[0]
        assert request.system == load_registry().template(load_registry().stable).text
        assert re.search(_guidance_tag("//depot/tools/main/pipeline/..."), request.user)
        assert "Look hardest at subprocess" in request.user
        # common/paths.py is under the [[paths]] entry "common/": its instructions come too.
        assert re.search(_guidance_tag("//depot/tools/main/pipeline/common/..."), request.user)
        assert "repository_review_guidance" not in request.system

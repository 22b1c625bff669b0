"""review: produce a ReviewResult for the redacted change and store it with its diagnostics,
coverage and token usage (docs/review.md).

Reads only the redacted bucket; a reviewer gets a ReviewInput, which only the pre-submit
guard (`prepare_review_input`) can build. The change is split into chunks of whole files
within a token budget; each chunk's parsed answer is stored before the next request, so a
retried job resumes instead of paying for the same answer twice.

Above 500 lines on purpose: the review's one run, step by step in the order the spec fixes (its
setup, capacity, history, metrics and reviewers are modules of their own beside it)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Protocol

from p4review.change.depot_policy import guidance_for, noise_rules_from
from p4review.change.diff_lines import ChangedLines, changed_lines_from_diff
from p4review.change.fingerprints import fingerprints_for, sha256_text
from p4review.change.redaction import RedactionPolicy
from p4review.change.snapshot_redaction import ReviewInput, prepare_review_input
from p4review.clock import utc_now
from p4review.errors import ErrorClass, NonRetryableError, NotFoundError
from p4review.models.change import DiffStatus
from p4review.models.job import ReviewJob, ReviewSummary, StageName
from p4review.models.policy import DepotPolicy
from p4review.models.review_result import (
    SCHEMA_VERSION,
    Coverage,
    Diagnostic,
    FileAnswer,
    Finding,
    ModelAnswer,
    ModelAnswerStatus,
    ParseOutcome,
    ReviewResult,
    ReviewUsage,
    SkippedFile,
    StoredReview,
    VersionHistory,
    result_schema_for,
)
from p4review.observability import logger
from p4review.pipeline.heartbeat import Lease
from p4review.pipeline.stage_runner import StageOutput
from p4review.ports import ArtifactStore
from p4review.review.analyzers.analysis import analyzable, as_findings, on_added_lines, without_placeholder_lines
from p4review.review.analyzers.answers import AnalyzerAnswer, read_answers, stored_answers
from p4review.review.analyzers.runner import AnalyzerRun
from p4review.review.bounds import CutCount, bounded_findings, bounded_outcome
from p4review.review.capacity import TokenGate
from p4review.review.chunking import (
    SKIP_ANSWER_REJECTED,
    SKIP_TOO_LARGE,
    Chunk,
    ChunkFile,
    plan_chunks,
)
from p4review.review.findings_merge import merge_analyzer_findings, merge_findings
from p4review.review.history import compare_versions, file_answers_for, reusable_answers
from p4review.review.llm.base import ContextTooLong, LlmRequest, LlmResponse
from p4review.review.metrics import publish_analyzer_metrics, publish_review_metrics
from p4review.review.noise import NoiseRule, apply_layered_noise
from p4review.review.prompts import (
    CHARS_PER_TOKEN,
    CONTEXT_ENCLOSING,
    CONTEXT_HUNKS,
    PromptRegistry,
    estimate_tokens,
    render_callees,
    render_file_section,
    render_user_message,
)
from p4review.review.result_parser import RESPONSE_REJECTED, parse_review_result
from p4review.review.reviewers import OfflineReviewer, chunk_input
from p4review.review.rollout import PromptChoice, choose_prompt
from p4review.settings.blocks import DEFAULT_CONTEXT_TOKENS, DEFAULT_MAX_FINDINGS
from p4review.stores.s3_artifacts import chunk_result_key, result_key

# The description is repeated in every chunk's request; past this it adds cost, not insight.
MAX_DESCRIPTION_CHARS = 4000
CHUNK_DOCUMENT_VERSION = "1"


class Analyzers(Protocol):
    """Runs the analyzers on {depot path: new content}, except where an answer in `known` has the
    same key (p4review.review.analyzers.runner)."""

    def run(self, contents: Mapping[str, str], known: Iterable[AnalyzerAnswer] = ()) -> AnalyzerRun: ...


@dataclass(frozen=True)
class PreviousReview:
    """The stored result of the changelist's previous review version."""

    review_version: int
    job_id: str
    stored: StoredReview


class ReviewHistory(Protocol):
    """Finds the previous review version's stored result (p4review.review.history_store)."""

    def previous(self, job: ReviewJob) -> PreviousReview | None: ...


class ChunkReviewer(Protocol):
    provider: str
    model: str
    estimated_usage: bool

    def answer_prompt_version(self, choice: PromptChoice) -> str: ...

    def complete(self, request: LlmRequest, review_input: ReviewInput) -> LlmResponse: ...


@dataclass(frozen=True)
class ReviewConfig:
    registry: PromptRegistry
    chunk_tokens: int = 24_000
    job_tokens: int = 200_000
    # What the enclosing functions may add to a file's section, for a template that asks for them.
    context_tokens: int = DEFAULT_CONTEXT_TOKENS
    max_output_tokens: int = 4096
    line_policy: str = "drop"
    line_tolerance: int = 3
    noise_rules: tuple[NoiseRule, ...] = ()
    allow_prompt_patch_drift: bool = False
    # A model call may start until this long after the run began: the function's timeout less one
    # call's, the analyzers' and a margin (review_setup). Only the token budget's waits use it.
    last_call_seconds: float = 720.0
    # Findings kept per review version, the most severe first (review/bounds.py).
    max_findings: int = DEFAULT_MAX_FINDINGS


@dataclass
class _ChunkAnswer:
    paths: list[str]
    outcome: ParseOutcome
    input_tokens: int
    output_tokens: int
    resumed: bool
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cut: CutCount = field(default_factory=CutCount)  # what the caps left out of this answer


@dataclass
class _Run:
    answers: list[_ChunkAnswer] = field(default_factory=list)
    # The heuristic reviewer's answers for the parts whose model answer was rejected.
    fallback: list[_ChunkAnswer] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    analysis: AnalyzerRun = field(default_factory=AnalyzerRun)
    reused: dict[str, FileAnswer] = field(default_factory=dict)  # unchanged files' previous answers
    previous: PreviousReview | None = None
    answered_by: str = ""  # the reviewer fingerprint the per-file answers are stored under


class ReviewWork:
    stage = StageName.REVIEW

    def __init__(
        self,
        redacted: ArtifactStore,
        policy: RedactionPolicy,
        reviewer: ChunkReviewer,
        config: ReviewConfig,
        analyzers: Analyzers | None = None,
        history: ReviewHistory | None = None,
        capacity: TokenGate | None = None,
    ):
        self._artifacts = redacted
        self._policy = policy
        self._reviewer = reviewer
        self._config = config
        self._analyzers = analyzers
        self._history = history
        self._capacity = capacity  # the LLM token budget (None: no limit configured)
        # A part whose model answer is rejected is still reviewed by the heuristic rules.
        self._fallback: ChunkReviewer | None = (
            OfflineReviewer() if reviewer.provider != OfflineReviewer.provider else None
        )

    def run(self, job: ReviewJob, lease: Lease) -> StageOutput:
        if job.opted_out:  # fetch found the opt-out keyword and fetched nothing: nothing to review
            logger.info("change opted out of review: not reviewed", extra={"job_id": job.job_id})
            return StageOutput()
        if not job.artifacts.change_key:
            raise NonRetryableError("fetch completed without a change artifact", error_class=ErrorClass.INTERNAL_BUG)
        last_call_at = utc_now() + timedelta(seconds=self._config.last_call_seconds)
        # The pre-submit guard: RedactionError (non-retryable) if anything is left to redact.
        review_input = prepare_review_input(self._artifacts.get_json(job.artifacts.change_key), self._policy)
        choice = choose_prompt(self._config.registry, job.changelist_id)
        answer_version = self._reviewer.answer_prompt_version(choice)

        files = chunk_files_for(
            review_input,
            context=choice.template.context,
            context_tokens=self._config.context_tokens,
            chunk_tokens=self._config.chunk_tokens,
        )
        # A re-shelved change: files whose reviewed section did not change since the previous
        # version keep that version's answer; only the others are sent to the reviewer.
        previous = self._history.previous(job) if self._history is not None and job.review_version > 1 else None
        policies = review_input.snapshot.policy.policies if review_input.snapshot.policy else []
        # Who answered, and under which depot guidance: an answer given under other instructions
        # is not reused.
        answered_by = self._fingerprint(answer_version) + "|" + _guidance_digest(policies)
        reused = (
            reusable_answers({f.depot_path: f.section for f in files}, previous.stored.file_answers, answered_by)
            if previous is not None
            else {}
        )
        to_review = [f for f in files if f.depot_path not in reused]
        plan = plan_chunks(to_review, chunk_tokens=self._config.chunk_tokens, job_tokens=self._config.job_tokens)
        # The review target is the files whose diff a model can see: a finding on any other file of
        # the change (binary, deleted, outside the allow-list) has nothing under it and is dropped
        # as file_not_in_changed_files; the rest are line-checked against their diff.
        reviewable = [f.depot_path for f in files]
        changed_lines: dict[str, ChangedLines] = {f.depot_path: changed_lines_from_diff(f.diff) for f in files}

        run = _Run(skipped=list(plan.skipped), reused=reused, previous=previous, answered_by=answered_by)
        pending = list(plan.chunks)
        while pending:
            chunk = pending.pop(0)
            try:
                answer = self._review_chunk(
                    job, lease, review_input, choice, answer_version, chunk, reviewable, changed_lines, last_call_at
                )
                run.answers.append(answer)
                if answer.outcome.rejected and self._fallback is not None:
                    run.fallback.append(self._heuristic_answer(review_input, choice, chunk, reviewable, changed_lines))
            except ContextTooLong:
                if len(chunk.files) > 1:
                    pending[:0] = chunk.halves()
                    logger.info(
                        "chunk too long for the model; split", extra={"job_id": job.job_id, "files": len(chunk.files)}
                    )
                else:
                    run.skipped.append((chunk.files[0].depot_path, SKIP_TOO_LARGE))

        run.analysis = self._analyze(review_input, changed_lines, previous)
        stored = self._assemble(policies, snapshot_skips(review_input), run, choice, answer_version, files)
        if previous is not None:
            logger.info(
                "re-review of a new version",
                extra={
                    "job_id": job.job_id,
                    "previous_version": previous.review_version,
                    "files_reused": len(reused),
                    "files_sent": len(to_review),
                    "analyzer_answers_reused": run.analysis.reused,
                    "analyzer_answers_run": run.analysis.analyzed,
                },
            )
        model_answer = stored.model_answer
        if model_answer is not None and model_answer.status is not ModelAnswerStatus.ACCEPTED:
            # Not a failure of the job: the analyzers' and the heuristic findings are delivered,
            # and the email and the job say that the model's answer was not used.
            logger.warning(
                "model answer rejected",
                extra={
                    "job_id": job.job_id,
                    "parts_rejected": model_answer.parts_rejected,
                    "parts": model_answer.parts,
                    "reasons": model_answer.reasons,
                },
            )

        key = result_key(job.job_id, job.created_at)
        lease.check()
        self._artifacts.put_json(key, stored.model_dump(mode="json", exclude_none=True))
        summary = self._summary(stored, choice)
        publish_review_metrics(stored, run_answers=[a.outcome for a in run.answers], track=choice.track)
        logger.info(
            "review stored",
            extra={
                "job_id": job.job_id,
                "findings": summary.findings,
                "prompt_version": stored.prompt_version,
                "track": choice.track,
                "input_tokens": summary.input_tokens,
                "chunks": summary.chunks,
            },
        )
        return StageOutput(
            updates={
                "artifacts": {"change_key": job.artifacts.change_key, "result_key": key},
                "summary": summary.model_dump(mode="json"),
            }
        )

    # ------------------------------------------------------------------------------------

    def _analyze(
        self,
        review_input: ReviewInput,
        changed_lines: Mapping[str, ChangedLines],
        previous: PreviousReview | None,
    ) -> AnalyzerRun:
        """The analyzers on the files fetch kept content for, their reports kept to added lines.
        Deterministic for the same input, so a retried job gets the same findings again. The
        previous version's answer on a file is reused when its key (the analyzer, its version and
        rules, the file's content) is the same: the whole file's reports, filtered below exactly as
        fresh ones are."""
        readable = {f.diff.depot_path: analyzable(f.content.text) for f in review_input.files if f.content is not None}
        if self._analyzers is None or not readable:
            return AnalyzerRun()
        known = read_answers(previous.stored.analyzer_answers) if previous is not None else []
        analysis = self._analyzers.run({path: text for path, (text, _) in readable.items()}, known)
        publish_analyzer_metrics(analyzed=analysis.analyzed, reused=analysis.reused)
        placeholder_lines = {path: lines for path, (_, lines) in readable.items()}
        analysis.reports = on_added_lines(without_placeholder_lines(analysis.reports, placeholder_lines), changed_lines)
        return analysis

    def _fingerprint(self, answer_version: str) -> str:
        return (
            f"{CHUNK_DOCUMENT_VERSION}|{self._reviewer.provider}|{self._reviewer.model}|{answer_version}|"
            f"{self._config.line_policy}|{self._config.line_tolerance}"
        )

    def _review_chunk(
        self,
        job: ReviewJob,
        lease: Lease,
        review_input: ReviewInput,
        choice: PromptChoice,
        answer_version: str,
        chunk: Chunk,
        reviewable: list[str],
        changed_lines: dict[str, ChangedLines],
        last_call_at: datetime,
    ) -> _ChunkAnswer:
        chunk_id = chunk.chunk_id(self._fingerprint(answer_version))
        key = chunk_result_key(job.job_id, job.created_at, chunk_id)
        try:
            document = self._artifacts.get_json(key)
            return _ChunkAnswer(
                paths=chunk.paths,
                outcome=ParseOutcome.model_validate(document["outcome"]),
                input_tokens=document["input_tokens"],
                output_tokens=document["output_tokens"],
                resumed=True,
                cache_read_tokens=document.get("cache_read_tokens", 0),
                cache_write_tokens=document.get("cache_write_tokens", 0),
                cut=CutCount.from_json(document.get("cut")),
            )
        except NotFoundError:
            pass
        request = request_for(
            review_input,
            choice,
            chunk,
            max_output_tokens=self._config.max_output_tokens,
            request_id=f"{job.job_id}:{chunk_id}",
        )
        response = self._ask(request, chunk_input(review_input, chunk.paths), lease, last_call_at)
        outcome = parse_review_result(
            response.text,
            reviewable,
            expected_prompt_version=answer_version,
            allowed_prompt_patch_drift=self._config.allow_prompt_patch_drift,
            changed_lines=changed_lines,
            line_policy=self._config.line_policy,
            line_tolerance=self._config.line_tolerance,
        )
        outcome, cut = bounded_outcome(outcome, self._config.max_findings)
        if not outcome.rejected:
            # A rejected answer is not kept: a retry or an operator's replay asks again instead
            # of failing on the same stored answer.
            self._artifacts.put_json(
                key,
                {
                    "chunk_id": chunk_id,
                    "files": chunk.paths,
                    "outcome": outcome.model_dump(mode="json", exclude_none=True),
                    "input_tokens": response.input_tokens,
                    "output_tokens": response.output_tokens,
                    "cache_read_tokens": response.cache_read_tokens,
                    "cache_write_tokens": response.cache_write_tokens,
                    "cut": cut.to_json(),
                },
            )
        return _ChunkAnswer(
            paths=chunk.paths,
            outcome=outcome,
            input_tokens=response.input_tokens,
            output_tokens=response.output_tokens,
            resumed=False,
            cache_read_tokens=response.cache_read_tokens,
            cache_write_tokens=response.cache_write_tokens,
            cut=cut,
        )

    def _heuristic_answer(
        self,
        review_input: ReviewInput,
        choice: PromptChoice,
        chunk: Chunk,
        reviewable: list[str],
        changed_lines: dict[str, ChangedLines],
    ) -> _ChunkAnswer:
        """The heuristic reviewer's answer for a part whose model answer was rejected: offline and
        deterministic, so a change that talks the model out of its contract does not also lose
        the review of its code. Not a model answer: not stored for reuse, not in the usage."""
        assert self._fallback is not None
        request = request_for(
            review_input, choice, chunk, max_output_tokens=self._config.max_output_tokens, request_id="heuristic"
        )
        response = self._fallback.complete(request, chunk_input(review_input, chunk.paths))
        outcome = parse_review_result(
            response.text,
            reviewable,
            expected_prompt_version=self._fallback.answer_prompt_version(choice),
            changed_lines=changed_lines,
            line_policy=self._config.line_policy,
            line_tolerance=self._config.line_tolerance,
        )
        outcome, cut = bounded_outcome(outcome, self._config.max_findings)
        return _ChunkAnswer(paths=chunk.paths, outcome=outcome, input_tokens=0, output_tokens=0, resumed=False, cut=cut)

    def _ask(self, request: LlmRequest, review_input: ReviewInput, lease: Lease, last_call_at: datetime) -> LlmResponse:
        """The reviewer's answer to one chunk, through the token budget when one is configured."""

        def complete() -> LlmResponse:
            return self._reviewer.complete(request, review_input)

        if self._capacity is None:
            lease.check()  # the provider call is the expensive side effect: only with a live lease
            return complete()
        return self._capacity.ask(request, complete, lease, last_call_at)  # checks the lease before each call

    def _assemble(
        self,
        policies: list[DepotPolicy],
        snapshot_skipped: list[tuple[str, str]],
        run: _Run,
        choice: PromptChoice,
        answer_version: str,
        files: list[ChunkFile],
    ) -> StoredReview:
        accepted = [a for a in run.answers if not a.outcome.rejected and a.outcome.result is not None]
        skipped = snapshot_skipped + run.skipped
        for answer in run.answers:
            if answer.outcome.rejected:
                skipped += [(path, SKIP_ANSWER_REJECTED) for path in answer.paths]
        skipped_paths = {path for path, _ in skipped}
        reviewed = [f.depot_path for f in files if f.depot_path not in skipped_paths]

        reused_findings = [answer.findings for answer in run.reused.values()]
        heuristic = [a.outcome.result.findings for a in run.fallback if a.outcome.result is not None]
        reviewer_findings, _duplicates = merge_findings(
            reused_findings + [a.outcome.result.findings for a in accepted] + heuristic,
            file_order=[f.depot_path for f in files],
        )
        with_analyzers, _merged = merge_analyzer_findings(reviewer_findings, as_findings(run.analysis.reports))
        merged, _ = merge_findings([with_analyzers], file_order=[f.depot_path for f in files])
        # The depot's .p4review.toml governs the files under it; the service's setting the rest.
        noise = apply_layered_noise(merged, noise_rules_from(policies), self._config.noise_rules)
        # The caps: the most severe findings of the version; what was left out is counted.
        shown, cut = bounded_findings(noise.kept, self._config.max_findings)
        for answer in [*run.answers, *run.fallback]:
            cut.add(answer.cut)
        diagnostics: list[Diagnostic] = [d for a in run.answers for d in a.outcome.diagnostics]
        diagnostics += run.analysis.diagnostics
        flagged = sorted(
            {
                fid
                for a in accepted
                for fid in ((a.outcome.result.meta or {}).get("flagged", {}).get("line_outside_diff", []))
                if any(f.id == fid for f in shown)
            }
        )
        meta: dict = {
            "provider": self._reviewer.provider,
            "model": self._reviewer.model,
            "chunks": len(run.answers),
            "findings_before_noise_controls": len(merged),
        }
        if run.analysis.ran:
            meta["analyzers"] = run.analysis.ran
            meta["analyzer_findings"] = len(run.analysis.reports)
            if run.analysis.reused:
                meta["analyzer_answers_reused"] = run.analysis.reused
        if flagged:
            meta["flagged"] = {"line_outside_diff": flagged}
        if run.previous is not None:
            meta["files_reused"] = len(run.reused)
        diffs = {f.depot_path: f.diff for f in files}
        # History compares every finding (a finding over the cap is not "resolved"); the stored
        # fingerprints key the findings shown (Swarm's comments).
        all_fingerprints = fingerprints_for(noise.kept, diffs)
        fingerprints = {f.id: all_fingerprints[f.id] for f in shown if f.id in all_fingerprints}
        answered_by = run.answered_by
        sections = {f.depot_path: f.section for f in files}
        file_answers = list(run.reused.values()) + [
            answer
            for a in accepted
            for answer in file_answers_for(a.paths, sections, a.outcome.result.findings, answered_by)
        ]
        history = _history(run, noise.kept, all_fingerprints, reviewed, [path for path, _ in skipped])
        result = ReviewResult(
            schema_version=SCHEMA_VERSION,
            prompt_version=answer_version,
            summary=_with_analyzers(_with_reuse(_summary_text(accepted, len(reviewed)), history), run.analysis),
            findings=shown,
            meta=meta,
        )
        usage = ReviewUsage(
            provider=self._reviewer.provider,
            model=self._reviewer.model,
            input_tokens=sum(a.input_tokens for a in run.answers),
            output_tokens=sum(a.output_tokens for a in run.answers),
            cache_read_tokens=sum(a.cache_read_tokens for a in run.answers),
            cache_write_tokens=sum(a.cache_write_tokens for a in run.answers),
            chunks=len(run.answers),
            chunks_resumed=sum(1 for a in run.answers if a.resumed),
            estimated=self._reviewer.estimated_usage,
        )
        return StoredReview(
            result=result,
            diagnostics=diagnostics,
            coverage=Coverage(
                files_reviewed=reviewed,
                files_skipped=[SkippedFile(file=path, reason=reason) for path, reason in skipped],
            ),
            usage=usage,
            prompt_version=answer_version,
            prompt_track=choice.track,
            suppressed=noise.suppressed,
            fingerprints=fingerprints,
            file_answers=file_answers,
            analyzer_answers=stored_answers(run.analysis.answers),
            history=history,
            model_answer=_model_answer(run),
            cut=cut.as_model(self._config.max_findings),
        )

    def _summary(self, stored: StoredReview, choice: PromptChoice) -> ReviewSummary:
        severities = Counter(finding.severity.value for finding in stored.result.findings)
        coverage = stored.coverage or Coverage()
        usage = stored.usage
        return ReviewSummary(
            findings=len(stored.result.findings),
            by_severity=dict(sorted(severities.items())),
            files_reviewed=len(coverage.files_reviewed),
            files_skipped=len(coverage.files_skipped),
            diagnostics=len(stored.diagnostics),
            provider=self._reviewer.provider,
            prompt_version=stored.prompt_version,
            prompt_track=choice.track,
            chunks=usage.chunks if usage else None,
            input_tokens=usage.input_tokens if usage else None,
            output_tokens=usage.output_tokens if usage else None,
            cache_read_tokens=usage.cache_read_tokens if usage else None,
            suppressed=sum(stored.suppressed.values()),
            previous_version=stored.history.previous_version if stored.history else None,
            findings_new=len(stored.history.new) if stored.history else None,
            findings_resolved=len(stored.history.resolved) if stored.history else None,
            files_reused=len(stored.history.files_reused) if stored.history else None,
            model_answer=stored.model_answer.status.value if stored.model_answer else None,
            model_answer_reasons=stored.model_answer.reasons if stored.model_answer else None,
            findings_not_shown=stored.cut.findings_not_shown if stored.cut else None,
        )


def chunk_files_for(
    review_input: ReviewInput, *, context: str = CONTEXT_HUNKS, context_tokens: int = 0, chunk_tokens: int = 24_000
) -> list[ChunkFile]:
    """Each fetched file's numbered diff section, with its estimated tokens. With the enclosing
    context (the prompt template asks for it), each section is widened to the functions around its
    hunks within `context_tokens` a file, and never past what keeps the file within a chunk."""
    if context == CONTEXT_ENCLOSING:
        return _chunk_files_with_context(review_input, context_tokens=context_tokens, chunk_tokens=chunk_tokens)
    files = []
    for review_file in review_input.files:
        diff = review_file.diff
        section = render_file_section(diff.depot_path, diff.action, review_file.document.text)
        files.append(
            ChunkFile(
                depot_path=diff.depot_path,
                section=section,
                tokens=estimate_tokens(section),
                diff=review_file.document.text,
            )
        )
    return files


def _chunk_files_with_context(review_input: ReviewInput, *, context_tokens: int, chunk_tokens: int) -> list[ChunkFile]:
    # Imported here: the stable prompt's reviews (and the offline reviewer's) never parse code.
    from p4review.review.context import ChangeContext, FileSource
    from p4review.review.context.widening import compact_diff

    sources = [FileSource.of(f) for f in review_input.files]
    change = ChangeContext(sources)
    files = []
    for review_file, source in zip(review_input.files, sources, strict=True):
        diff = review_file.diff
        callees = tuple(change.callees(source))
        section = render_file_section(diff.depot_path, diff.action, source.diff, body=compact_diff(source.diff))
        room = min(context_tokens, chunk_tokens - estimate_tokens(section))
        widened = change.widened(source, int(room * CHARS_PER_TOKEN)) if room > 0 else None
        if widened is not None:
            section = render_file_section(diff.depot_path, diff.action, source.diff, body=widened.body)
        files.append(
            ChunkFile(
                depot_path=diff.depot_path,
                section=section,
                tokens=estimate_tokens(section),
                diff=source.diff,
                callees=callees,
            )
        )
    return files


def request_for(
    review_input: ReviewInput, choice: PromptChoice, chunk: Chunk, *, max_output_tokens: int, request_id: str
) -> LlmRequest:
    """The request for one chunk: the prompt template as the system prompt, the chunk as the user message."""
    description = review_input.snapshot.description
    policies = review_input.snapshot.policy.policies if review_input.snapshot.policy else []
    return LlmRequest(
        system=choice.template.text,
        user=render_user_message(
            changelist_id=description.changelist_id,
            owner=description.owner,
            description=review_input.description.text[:MAX_DESCRIPTION_CHARS],
            changed_files=chunk.paths,
            # A callee defined in a file of this chunk is in its section already.
            file_sections=[
                f.section + render_callees([c for c in f.callees if c.depot_path not in chunk.paths])
                for f in chunk.files
            ],
            guidance=[(g.applies_to, g.text) for g in guidance_for(policies, chunk.paths)],
            context=choice.template.context,
        ),
        json_schema=result_schema_for(choice.template.schema_version),  # 1.1 lets a finding carry suggested_code
        max_output_tokens=max_output_tokens,
        request_id=request_id,
    )


def _model_answer(run: _Run) -> ModelAnswer:
    """Whether the model's answers were used; the parser's reason codes, never the answer's text."""
    rejected = [a for a in run.answers if a.outcome.rejected]
    if not rejected:
        status = ModelAnswerStatus.ACCEPTED
    else:
        status = ModelAnswerStatus.REJECTED if len(rejected) == len(run.answers) else ModelAnswerStatus.PARTLY_REJECTED
    reasons = sorted(
        {d.reason for a in rejected for d in a.outcome.diagnostics if d.kind == RESPONSE_REJECTED and d.reason}
    )
    return ModelAnswer(
        status=status,
        parts=len(run.answers),
        parts_rejected=len(rejected),
        reasons=reasons,
        fallback="heuristic" if run.fallback else None,
    )


def snapshot_skips(review_input: ReviewInput) -> list[tuple[str, str]]:
    """Files fetch did not fetch (binary, deleted, outside the allow-list...), with the reason."""
    return [
        (diff.depot_path, diff.skip_reason or "not_fetched")
        for diff in review_input.snapshot.diffs
        if diff.status != DiffStatus.FETCHED
    ]


def _guidance_digest(policies: list[DepotPolicy]) -> str:
    """Any change to the depot's policies (its instructions above all) means a fresh answer."""
    if not policies:
        return "-"
    return sha256_text(json.dumps([p.model_dump(mode="json") for p in policies], sort_keys=True))[:16]


def _history(
    run: _Run, findings: list[Finding], fingerprints: dict[str, str], reviewed: list[str], skipped: list[str]
) -> VersionHistory | None:
    """New, still open and resolved since the previous version; None for a first review, or when
    the previous result predates fingerprints (it has findings but no fingerprints for them)."""
    previous = run.previous
    if previous is None:
        return None
    before = previous.stored
    if before.result.findings and not before.fingerprints:
        return None
    return compare_versions(
        previous_version=previous.review_version,
        previous_job_id=previous.job_id,
        previous_findings=before.result.findings,
        previous_fingerprints=before.fingerprints,
        current_findings=findings,
        current_fingerprints=fingerprints,
        reviewed_now=reviewed,
        skipped_now=skipped,
        files_reused=sorted(run.reused),
    )


def _with_reuse(summary: str | None, history: VersionHistory | None) -> str | None:
    if history is None or not history.files_reused:
        return summary
    count = len(history.files_reused)
    said = (
        f"{count} file{'s' if count != 1 else ''} unchanged since v{history.previous_version}: "
        f"{'their' if count != 1 else 'its'} review was carried over, not repeated."
    )
    return f"{summary} {said}" if summary else said


def _with_analyzers(summary: str | None, analysis: AnalyzerRun) -> str | None:
    if not analysis.ran:
        return summary
    count = len(analysis.reports)
    plural = "s" if count != 1 else ""
    said = f"Analyzers ({', '.join(analysis.ran)}) reported {count} finding{plural} on the changed lines."
    return f"{summary} {said}" if summary else said


def _summary_text(accepted: list[_ChunkAnswer], files_reviewed: int) -> str | None:
    summaries = [
        a.outcome.result.summary.strip()
        for a in accepted
        if a.outcome.result is not None and a.outcome.result.summary and a.outcome.result.summary.strip()
    ]
    if len(accepted) <= 1:
        return summaries[0] if summaries else None
    word = "file" if files_reviewed == 1 else "files"
    return f"Reviewed {files_reviewed} {word} in {len(accepted)} parts. " + " ".join(summaries[:3])

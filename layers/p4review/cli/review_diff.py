"""`p4review review-diff`: review a unified diff without a depot, through the service's own
redaction and review stage, and print the stored review as JSON.

    p4review review-diff --diff change.diff [--files DIR] [--description desc.txt] [--provider offline]
    git diff | p4review review-diff --diff -

The diff may hold many files (`p4 describe -du`, `p4 diff2 -du`, `git diff` or `diff -u`
output). It is redacted exactly as the fetch stage redacts a change (the service's default
policy) before any reviewer sees it. `offline` (the default) needs nothing; `openai`,
`anthropic` and `bedrock` use the review function's settings (`P4REVIEW_LLM_*`) and, for the
first two, the key in the LLM secret (`P4REVIEW_LLM_SECRET_ID`), as the deployed stage does.
With `--files DIR` (the changed files' new-side content at their paths) the analyzers
(`P4REVIEW_ANALYZERS`) run on those files too, their reports kept to the diff's added lines.
Exit status: 0 reviewed, 1 the review failed (the reason on stderr), 2 bad arguments or input."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, BinaryIO

from p4review.change.diff_lines import split_describe_diff
from p4review.change.redaction import RedactionPolicy
from p4review.change.snapshot_redaction import stream_change_artifacts
from p4review.cli.display import print_json, say
from p4review.errors import P4ReviewError
from p4review.metric_names import SERVICE
from p4review.models.change import ChangeDescription, ChangedFile, ChangeKind, DiffStatus, FileDiff
from p4review.models.job import ReviewJob, job_id_for
from p4review.models.review_result import StoredReview
from p4review.review.settings import ReviewerSettings

PROVIDERS = ("offline", "openai", "anthropic", "bedrock")
# A change number for the review's bookkeeping (prompt track choice, keys); no depot is asked.
LOCAL_CHANGE = 1
_CREATED_AT = "2000-01-01T00:00:00.000000Z"


class MemoryArtifacts:
    """The review stage's artifact store, in memory: nothing leaves this process."""

    def __init__(self) -> None:
        self.documents: dict[str, dict[str, Any]] = {}

    def put_json(self, key: str, document: dict[str, Any]) -> None:
        self.documents[key] = json.loads(json.dumps(document))

    @contextlib.contextmanager
    def json_writer(self, key: str) -> Iterator[BinaryIO]:
        buffer = io.BytesIO()
        yield buffer
        self.documents[key] = json.loads(buffer.getvalue())

    def get_json(self, key: str) -> dict[str, Any]:
        from p4review.errors import NotFoundError

        if key not in self.documents:
            raise NotFoundError(f"no artifact {key}")
        return self.documents[key]


class NoLease:
    """A local run owns its work outright: there is no lease to lose."""

    def check(self) -> None:
        pass


def read_new_files(root: str, paths: list[str]) -> dict[str, str]:
    """Each diff path's new-side content under `root`: the path itself (without a leading
    `//` or `a/`/`b/`), else its longest tail that names a file there. Nothing outside `root`."""
    base = Path(root).resolve()
    if not base.is_dir():
        raise ValueError(f"--files {root} is not a directory")
    found = {}
    for path in paths:
        segments = [s for s in path.split("/") if s and s != "."]
        if ".." in segments:
            continue
        for start in range(len(segments)):
            candidate = base.joinpath(*segments[start:])
            if candidate.is_file() and candidate.resolve().is_relative_to(base):
                found[path] = candidate.read_bytes().decode("utf-8", "replace")
                break
    return found


def _read(path: str) -> str:
    data = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    return data.decode("utf-8", "replace")


def review_diff(
    diff_text: str,
    description: str,
    provider: str,
    artifacts: MemoryArtifacts | None = None,
    *,
    files: Mapping[str, str] | None = None,
    analyzers: str | None = None,
) -> StoredReview:
    """Redact `diff_text` as fetch would, review it with `provider`, return the stored review
    (`artifacts` keeps the redacted change the reviewer saw, under "change"). `files` maps a
    diff section's path to the file's new-side content, for the analyzers; `analyzers`
    overrides P4REVIEW_ANALYZERS ("" for none)."""
    from p4review.review.setup import build_review_work

    sections = split_describe_diff(diff_text)
    if not sections:
        raise ValueError("no file diff found (expected unified diff headers: ---/+++ or ==== ... ====)")
    update: dict[str, Any] = {"llm_provider": provider}
    if analyzers is not None:
        update["analyzers"] = analyzers
    settings = ReviewerSettings.from_env().model_copy(update=update)
    artifacts = artifacts if artifacts is not None else MemoryArtifacts()
    artifacts.put_json("change", redacted_change(sections, description, files or {}, settings.redaction_policy()))
    job = ReviewJob(
        job_id=job_id_for("review-diff"),
        idempotency_key="review-diff",
        request_fingerprint="review-diff",
        changelist_id=LOCAL_CHANGE,
        review_version=1,
        kind=ChangeKind.SUBMITTED,
        created_at=_CREATED_AT,
        updated_at=_CREATED_AT,
        artifacts={"change_key": "change"},
    )
    data_access = None
    if provider in ("openai", "anthropic"):
        from p4review.stores.factory import get_data_access

        data_access = get_data_access()
    from p4review.review.stores import review_stores

    work = build_review_work(
        settings,
        _ReviewDataAccess(artifacts),
        with_history=False,
        stores=review_stores(data_access, settings) if data_access is not None else None,
    )
    output = work.run(job, NoLease())  # type: ignore[arg-type]
    return StoredReview.model_validate(artifacts.get_json(output.updates["artifacts"]["result_key"]))


def redacted_change(
    sections: Mapping[str, str], description: str, contents: Mapping[str, str], policy: RedactionPolicy
) -> dict[str, Any]:
    """The redacted change document fetch would store for these file diffs (`sections`: path ->
    unified diff) and new-side contents, as one local submitted change."""
    change = ChangeDescription(
        changelist_id=LOCAL_CHANGE,
        kind=ChangeKind.SUBMITTED,
        owner="local",
        client="local",
        status="submitted",
        description=description,
        files=[ChangedFile(depot_path=path, action="edit", file_type="text", revision=1) for path in sections],
    )
    diffs = [
        FileDiff(
            depot_path=path, action="edit", status=DiffStatus.FETCHED, unified_diff=text, new_content=contents.get(path)
        )
        for path, text in sections.items()
    ]
    redacted = io.BytesIO()
    stream_change_artifacts(change, diffs, raw=io.BytesIO(), redacted=redacted, policy=policy)
    document: dict[str, Any] = json.loads(redacted.getvalue())
    return document


class _ReviewDataAccess:
    """What build_review_work reads from the DAL without history: the artifacts, here in memory
    (the LLM key comes from AWS, through the review's own stores)."""

    def __init__(self, artifacts: MemoryArtifacts) -> None:
        self.redacted_artifacts = artifacts


@contextlib.contextmanager
def _service_output_to_stderr() -> Iterator[None]:
    """In Lambda the stages' JSON logs and metrics go to stdout; here stdout is the review."""
    service_logger = logging.getLogger(SERVICE)
    saved = service_logger.handlers[:]
    to_stderr = logging.StreamHandler(sys.stderr)
    if saved:
        to_stderr.setFormatter(saved[0].formatter)
    service_logger.handlers = [to_stderr]
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        service_logger.handlers = saved


def cmd_review_diff(args: argparse.Namespace) -> int:
    try:
        diff_text = _read(args.diff)
        description = Path(args.description).read_text("utf-8", "replace") if args.description else ""
        files = read_new_files(args.files, list(split_describe_diff(diff_text))) if args.files else None
    except ValueError as exc:
        say(f"review-diff: {exc}")
        return 2
    except OSError as exc:
        say(f"review-diff: cannot read input: {exc.strerror or exc}")
        return 2
    try:
        with _service_output_to_stderr():
            stored = review_diff(diff_text, description, args.provider, files=files)
    except ValueError as exc:
        say(f"review-diff: {exc}")
        return 2
    except P4ReviewError as exc:
        say(f"review-diff: the review failed: {exc.error_class.value}: {exc.message}")
        return 1
    # The analyzers' whole-file answers are for a next version, which a lone diff never has: their
    # reports on lines the diff did not add would read as findings.
    print_json(stored.model_dump(mode="json", exclude_none=True, exclude={"analyzer_answers"}), documents=True)
    return 0


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add `review-diff` to a `p4review` sub-command parser set."""
    parser = subparsers.add_parser(
        "review-diff",
        help="review a unified diff without a depot (JSON on stdout)",
        description=__doc__.split("\n\n")[0],
    )
    parser.add_argument("--diff", required=True, metavar="FILE", help="the unified diff ('-' for stdin)")
    parser.add_argument(
        "--files",
        metavar="DIR",
        help="the changed files' new-side content at their paths, for the analyzers (optional)",
    )
    parser.add_argument("--description", metavar="FILE", help="the change description (optional)")
    parser.add_argument("--provider", choices=PROVIDERS, default="offline", help="the reviewer (default: offline)")
    parser.set_defaults(func=cmd_review_diff)
    return parser

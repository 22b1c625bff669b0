"""The model's context is built from the redacted, allow-listed change only: a secret in the
enclosing function (outside any hunk) reaches the request redacted, and a file fetch skipped
(outside the allow-list) lends neither its path nor its code, even when its record carries text.
Through the stage's own `chunk_files_for` and `request_for`, as a request is built."""

from __future__ import annotations

import difflib
import io
import json

from p4review.change.snapshot_redaction import prepare_review_input, stream_change_artifacts
from p4review.models.change import ChangeDescription, ChangedFile, ChangeKind, DiffStatus, FileDiff, SkipReason
from p4review.review.chunking import Chunk, plan_chunks
from p4review.review.metric_tracks import TRACK_STABLE
from p4review.review.prompts import CONTEXT_ENCLOSING, load_registry
from p4review.review.rollout import PromptChoice
from p4review.review.stage import chunk_files_for, request_for

PASSWORD_VALUE = "s3cr3t-Hunter2!"
ALLOWED = "//depot/main/svc/client.py"
OUTSIDE = "//secret/vault/keys.py"

OLD = f'''def connect(host):
    password = "{PASSWORD_VALUE}"
    session = open_session(host, password)
    session.retries = 3
    session.timeout = 10
    session.verbose = False
    session.name = "client"
    return session
'''
NEW = OLD.replace("session.retries = 3", "session.retries = 0\n    rotate_master_key(session)")
OUTSIDE_CONTENT = "def rotate_master_key(session):\n    return 'vault-internal-signature'\n"


def _change_with_a_file_outside_the_allow_list():
    diff = "".join(difflib.unified_diff(OLD.splitlines(True), NEW.splitlines(True), "a", "b", n=1))
    diffs = [
        FileDiff(depot_path=ALLOWED, action="edit", status=DiffStatus.FETCHED, unified_diff=diff, new_content=NEW),
        FileDiff(
            depot_path=OUTSIDE,
            action="edit",
            status=DiffStatus.SKIPPED,
            skip_reason=SkipReason.OUTSIDE_ALLOW_LIST,
            new_content=OUTSIDE_CONTENT,
        ),
    ]
    return _review_input(diffs)


def test_the_enclosing_function_reaches_the_model_redacted_and_nothing_outside_the_allow_list_does():
    review_input = _change_with_a_file_outside_the_allow_list()
    registry = load_registry()
    template = next(t for t in registry.templates.values() if t.context == CONTEXT_ENCLOSING)
    files = chunk_files_for(review_input, context=CONTEXT_ENCLOSING, context_tokens=2_000, chunk_tokens=24_000)
    (chunk,) = plan_chunks(files, chunk_tokens=24_000, job_tokens=100_000).chunks
    request = request_for(
        review_input, PromptChoice(template, TRACK_STABLE), chunk, max_output_tokens=1024, request_id="t"
    )
    # the widened function is there (its first line is outside the one-line-context hunk) ...
    assert " def connect(host):" in request.user and "open_session" in request.user
    # ... with the password line redacted, and nothing of the skipped file
    assert PASSWORD_VALUE not in request.user and "[REDACTED:" in request.user
    assert OUTSIDE not in request.user and "vault" not in request.user
    assert "Called here" not in request.user


def test_a_callee_is_listed_only_when_its_file_is_not_in_the_same_request():
    util_old = "def helper(a):\n    return a\n"
    util_new = "def helper(a, scale=2):\n    return a * scale\n"
    main_old = "def run(x):\n    return x\n"
    main_new = "def run(x):\n    return helper(x)\n"
    review_input = _review_input(
        [
            FileDiff(
                depot_path=path, action="edit", status=DiffStatus.FETCHED, unified_diff=_diff(old, new), new_content=new
            )
            for path, old, new in ((MAIN, main_old, main_new), (UTIL, util_old, util_new))
        ]
    )
    template = next(t for t in load_registry().templates.values() if t.context == CONTEXT_ENCLOSING)
    files = chunk_files_for(review_input, context=CONTEXT_ENCLOSING, context_tokens=2_000, chunk_tokens=24_000)
    choice = PromptChoice(template, TRACK_STABLE)
    together = request_for(review_input, choice, Chunk(tuple(files)), max_output_tokens=1024, request_id="t")
    alone = request_for(review_input, choice, Chunk((files[0],)), max_output_tokens=1024, request_id="t")
    assert "Called here" not in together.user  # util.py's section shows helper() itself
    assert f"Called here, defined in other changed files:\n{UTIL}:1: def helper(a, scale=2)\n" in alone.user


MAIN = "//depot/main/svc/main.py"
UTIL = "//depot/main/svc/util.py"


def _diff(old: str, new: str) -> str:
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), "a", "b", n=1))


def _review_input(diffs: list[FileDiff]):
    """The change of these file diffs as the review stage gets it: redacted, through the pre-submit guard."""
    change = ChangeDescription(
        changelist_id=7,
        kind=ChangeKind.SUBMITTED,
        owner="dev",
        client="ws",
        status="submitted",
        description="change",
        files=[ChangedFile(depot_path=d.depot_path, action=d.action, file_type="text", revision=2) for d in diffs],
    )
    redacted = io.BytesIO()
    stream_change_artifacts(change, diffs, raw=io.BytesIO(), redacted=redacted)
    return prepare_review_input(json.loads(redacted.getvalue()))

"""The change-level redaction boundary: fetch redacts every text of a change; the pre-submit
guard builds the reviewer's input only from a redacted document that re-scans clean."""

from __future__ import annotations

import json

import pytest

from p4review.change.redaction import RedactedDocument, RedactionError
from p4review.change.snapshot_redaction import REDACTED_ARTIFACT_VERSION, prepare_review_input, redact_change
from p4review.errors import ErrorClass
from p4review.models.change import ChangeDescription, ChangedFile, ChangeSnapshot, DiffStatus, FileDiff

AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA1234567890abcdefghijklmnop\n-----END RSA PRIVATE KEY-----"
DIFF = (
    "@@ -1,2 +1,6 @@\n"
    " import os\n"
    f'+AWS_KEY = "{AWS_KEY}"\n'
    '+password = "correct-horse-battery"\n' + "".join(f"+{line}\n" for line in PEM.split("\n")) + " print(os.name)\n"
)


def _snapshot(diff: str = DIFF, description: str = "deploy: rotate keys") -> ChangeSnapshot:
    files = [
        ChangedFile(depot_path="//depot/main/deploy.py", action="edit", file_type="text", revision=3),
        ChangedFile(depot_path="//depot/main/logo.png", action="add", file_type="binary", revision=1),
    ]
    return ChangeSnapshot(
        description=ChangeDescription(
            changelist_id=4711,
            kind="submitted",
            owner="ana",
            client="ana-ws",
            status="submitted",
            description=description,
            files=files,
        ),
        diffs=[
            FileDiff(depot_path=files[0].depot_path, action="edit", status=DiffStatus.FETCHED, unified_diff=diff),
            FileDiff(depot_path=files[1].depot_path, action="add", status=DiffStatus.SKIPPED, skip_reason="binary"),
        ],
    )


@pytest.mark.spec("SEC-32")
def test_every_text_of_the_change_is_redacted_and_counted_with_lines_intact():
    change = redact_change(_snapshot(description=f"oops, committed {AWS_KEY}"))
    document = json.dumps(change.artifact())
    for secret in (AWS_KEY, "correct-horse-battery", "MIIEowIBAAKCAQEA"):
        assert secret not in document
    assert change.counts == {"aws_access_key": 2, "password": 1, "private_key": 1}  # a PEM block counts once
    redacted = change.snapshot.diffs[0].unified_diff
    assert len(redacted.splitlines()) == len(DIFF.splitlines())
    assert [line[:1] for line in redacted.splitlines()] == [line[:1] for line in DIFF.splitlines()]
    assert change.snapshot.diffs[1] == _snapshot().diffs[1]  # skipped files carry no text
    assert change.artifact()["artifact_version"] == REDACTED_ARTIFACT_VERSION


def test_the_guard_builds_the_review_input_from_a_clean_redacted_artifact():
    change = redact_change(_snapshot())
    review_input = prepare_review_input(change.artifact())
    assert [f.diff.depot_path for f in review_input.files] == ["//depot/main/deploy.py"]  # fetched files only
    assert all(isinstance(f.document, RedactedDocument) for f in review_input.files)
    assert isinstance(review_input.description, RedactedDocument)
    assert review_input.files[0].document.text == change.snapshot.diffs[0].unified_diff


@pytest.mark.spec("SEC-44")
def test_the_guard_blocks_an_artifact_that_still_holds_a_secret_without_echoing_it():
    artifact = redact_change(_snapshot()).artifact()
    artifact["snapshot"]["diffs"][0]["unified_diff"] += f'+LEAK = "{AWS_KEY}"\n'  # a bypass upstream
    with pytest.raises(RedactionError) as caught:
        prepare_review_input(artifact)
    assert AWS_KEY not in str(caught.value)
    assert "aws_access_key=1" in str(caught.value)
    assert caught.value.error_class == ErrorClass.POLICY_DENIED and not caught.value.retryable


@pytest.mark.spec("SEC-30")
@pytest.mark.parametrize(
    "artifact",
    [
        _snapshot().model_dump(mode="json"),  # a raw snapshot: never went through redaction
        {"artifact_version": "0", "snapshot": {}},
        "not a document",
    ],
)
def test_the_guard_refuses_anything_but_a_redacted_change_document(artifact):
    with pytest.raises(RedactionError):
        prepare_review_input(artifact)


def test_a_review_input_cannot_carry_hand_made_documents():
    with pytest.raises(RedactionError):
        RedactedDocument(text="anything", counts={}, ruleset_version="x")


def test_the_streamed_documents_equal_the_in_memory_ones():
    import io

    from p4review.change.snapshot_redaction import stream_change_artifacts

    snap = _snapshot(description=f"oops, committed {AWS_KEY}")
    raw, redacted = io.BytesIO(), io.BytesIO()
    summary = stream_change_artifacts(snap.description, iter(snap.diffs), raw=raw, redacted=redacted)
    expected = redact_change(snap)
    assert json.loads(raw.getvalue()) == snap.model_dump(mode="json")
    assert json.loads(redacted.getvalue()) == json.loads(json.dumps(expected.artifact()))
    assert summary == {"ruleset_version": expected.ruleset_version, "counts": expected.counts}
    assert AWS_KEY not in redacted.getvalue().decode()
    prepare_review_input(json.loads(redacted.getvalue()))  # the guard accepts what fetch streams


def test_the_guard_checks_the_text_of_skipped_files_too():
    artifact = redact_change(_snapshot()).artifact()
    artifact["snapshot"]["diffs"][1]["unified_diff"] = f"+{AWS_KEY}\n"  # a skipped file with text
    with pytest.raises(RedactionError):
        prepare_review_input(artifact)

"""Generated-looking parts of file paths in a diff's file headers (issue 28 item 7): masked
alone, so the path stays reviewable; names, digests, UUIDs and versions are left alone."""

from __future__ import annotations

import pytest

from p4review.change.redaction import redact
from p4review.change.redaction.path_parts import NAME
from p4review.change.snapshot_redaction import redact_change
from p4review.models.change import ChangeDescription, ChangedFile, ChangeSnapshot, DiffStatus, FileDiff

# Fakes of the real shapes: base62, base36 and vendor-prefixed tokens used as directory names.
BASE62 = "q7Kf2Lm9Xw4Rt8Zp3Nc6"
BASE36 = "oxpf4a93fjovt0v1z6lltcbcizlrml98"
VENDOR = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"


@pytest.mark.spec("SEC-33")
@pytest.mark.parametrize(
    ("header", "secret", "kept"),
    [
        # The `---` line through the copy of the value the `+++` line gave (copies.py).
        (f"--- a/deploy/keys/{BASE62}/config.yml\n+++ b/deploy/keys/{BASE62}/config.yml", BASE62, "/config.yml"),
        (f"+++ b/deploy/keys/{BASE62}/config.yml", BASE62, "/config.yml"),
        (f"diff --git a/deploy/{BASE36}.env b/deploy/{BASE36}.env", BASE36, ".env"),
        (f"==== //depot/main/keys/{VENDOR}/app.py#3 (text) ====", VENDOR, "/app.py#3 (text) ===="),
        (f"Index: secrets/{BASE36}/settings.ini", BASE36, "/settings.ini"),
    ],
)
def test_a_generated_part_of_a_header_path_is_masked_and_the_path_keeps_its_shape(
    header: str, secret: str, kept: str
) -> None:
    text = redact(header + "\n@@ -1 +1 @@\n-a\n+b\n").text
    first = text.split("\n")[0]
    assert secret not in text
    assert "[REDACTED:" in first
    # Directories and the extension stay: the file is still reviewable.
    assert first.endswith(kept)


@pytest.mark.parametrize(
    "header",
    [
        "+++ b/.git/objects/3f/9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b",  # a digest
        "+++ b/cache/123e4567-e89b-12d3-a456-426614174000/data.json",  # a UUID
        "+++ b/checks/S3RestrictPublicBuckets/AccessControlGroupInboundRulePort3389.py",  # CamelCase names
        "+++ b/wheels/numpy-1.26.4-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
        "+++ b/lib/cpython-37m-x86_64-linux-gnu/test_generator_mt19937_regressions.py",
        "+++ b/fonts/open-sans-v17-all-charsets-300italic-2c7b95c0.woff2",
        "+++ b/docs/release_notes_for_version_20240131_final.md",
    ],
)
def test_names_digests_uuids_and_versions_in_paths_are_left_alone(header: str) -> None:
    assert redact(header + "\n").text == header + "\n"


def test_a_generated_part_outside_a_header_line_is_not_this_rules_business() -> None:
    # In content a bare random word with no keyword is not judged by this rule.
    line = f"+see {BASE62} for details\n"
    assert f"[REDACTED:{NAME}]" not in redact(line).text


def test_a_depot_path_holding_a_generated_part_is_redacted_in_the_snapshot() -> None:
    path = f"//depot/main/keys/{BASE62}/settings.py"
    diff = FileDiff(
        depot_path=path, action="edit", status=DiffStatus.FETCHED, unified_diff="@@ -1 +1 @@\n-a = 1\n+a = 2\n"
    )
    snapshot = ChangeSnapshot(
        description=ChangeDescription(
            changelist_id=7,
            kind="submitted",
            owner="o",
            client="c",
            status="submitted",
            description="rotate keys",
            files=[ChangedFile(depot_path=path, action="edit", file_type="text", revision=2)],
        ),
        diffs=[diff],
    )
    redacted = redact_change(snapshot)
    assert BASE62 not in repr(redacted.artifact())
    assert redacted.snapshot.diffs[0].depot_path == f"//depot/main/keys/[REDACTED:{NAME}]/settings.py"
    assert redacted.snapshot.description.files[0].depot_path == redacted.snapshot.diffs[0].depot_path

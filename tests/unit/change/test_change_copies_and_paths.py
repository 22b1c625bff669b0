"""Change-wide masking and secrets in depot paths (issue 28 items 1 and 7): a value found in any
text of a change (the description, a file's diff or content, the policy, a path) is masked in
every other; a path goes through the detector, stays reviewable and distinct; the pre-submit
guard re-checks every path; fetch's streamed document equals the in-memory one."""

from __future__ import annotations

import io
import json

import pytest

from p4review.change.redacted_paths import path_for_log, with_index
from p4review.change.redaction import RedactionError
from p4review.change.snapshot_redaction import (
    ChangeRedactor,
    prepare_review_input,
    redact_change,
    stream_change_artifacts,
)
from p4review.models.change import ChangeDescription, ChangedFile, ChangeSnapshot, DiffStatus, FileDiff
from p4review.models.policy import ChangePolicy, DepotPolicy, PathPolicy, PolicyDiagnostic, PolicyFile

PASSWORD = "Qv7tLm2xRk9p"
LATE = "Hj4wPz8sNc1q"  # found only in the last file
TOKEN = "ghp_" + "Zk4Qm7Rt2Vx9Lp3Nw8Bc5Hd1Jf6Gs0Ay2Ue7O"
KEY_ID = "AKIA" + "Q3EGRIT5MJ4XZK7P"
KEY_ID_2 = "AKIA" + "W7HJKL2MNB5VCX4ZQ9"[:16]


def _diff(path: str, body: str, content: str | None = None) -> FileDiff:
    text = f"--- a{path[1:]}\n+++ b{path[1:]}\n@@ -0,0 +1 @@\n{body}"
    return FileDiff(depot_path=path, action="add", status=DiffStatus.FETCHED, unified_diff=text, new_content=content)


def _change(diffs: list[FileDiff], description: str = "d", policy: ChangePolicy | None = None) -> ChangeSnapshot:
    files = [ChangedFile(depot_path=d.depot_path, action="add", file_type="text", revision=1) for d in diffs]
    return ChangeSnapshot(
        description=ChangeDescription(
            changelist_id=7,
            kind="submitted",
            owner="o",
            client="c",
            status="submitted",
            description=description,
            files=files,
        ),
        diffs=diffs,
        policy=policy,
    )


def _text(change: ChangeSnapshot) -> str:
    return json.dumps(change.model_dump(mode="json"))


def test_a_value_found_anywhere_is_masked_in_every_text_of_the_change():
    change = _change(
        [
            _diff("//depot/a/early.py", f"+print('{PASSWORD}', '{LATE}')\n", content=f"x = '{LATE}'\n"),
            _diff("//depot/a/config.ini", f"+password = {PASSWORD}\n"),
            _diff(f"//depot/a/{LATE}.txt", "+plain\n"),
            _diff("//depot/a/late.ini", f"+password = {LATE}\n"),
        ],
        description=f"rotates {PASSWORD} and {LATE}",
        policy=ChangePolicy(modified=[f"//depot/{LATE}/.p4review.toml"]),
    )
    redacted = redact_change(change)
    text = _text(redacted.snapshot)
    assert PASSWORD not in text and LATE not in text
    assert redacted.snapshot.description.description == "rotates [REDACTED:password] and [REDACTED:password]"
    assert redacted.snapshot.diffs[2].depot_path == "//depot/a/[REDACTED:password].txt"
    assert redacted.snapshot.description.files[2].depot_path == "//depot/a/[REDACTED:password].txt"
    assert redacted.counts["password"] >= 8
    prepare_review_input(redacted.artifact())  # and the guard takes it


def test_values_from_the_policy_and_the_description_reach_the_files():
    policy = ChangePolicy(
        policies=[
            DepotPolicy(
                source="//depot/a/.p4review.toml",
                revision="@6",
                directory="//depot/a/",
                policy=PolicyFile(version=1, instructions=f"the CI password is '{PASSWORD}'"),
            )
        ]
    )
    redacted = redact_change(_change([_diff("//depot/a/x.py", f"+call('{PASSWORD}')\n")], policy=policy))
    assert PASSWORD not in _text(redacted.snapshot)


def test_a_secret_in_a_path_is_masked_and_the_path_stays_reviewable():
    path = f"//depot/keys/{TOKEN}/{KEY_ID}.py"
    redacted = redact_change(_change([_diff(path, "+x = 1\n"), _diff("//depot/keys/loader.py", f"+open('{path}')\n")]))
    shown = "//depot/keys/[REDACTED:github_token]/[REDACTED:aws_access_key].py"
    assert [d.depot_path for d in redacted.snapshot.diffs] == [shown, "//depot/keys/loader.py"]
    assert redacted.snapshot.changed_files == [shown, "//depot/keys/loader.py"]
    assert TOKEN not in _text(redacted.snapshot) and KEY_ID not in _text(redacted.snapshot)
    assert redacted.snapshot.diffs[0].unified_diff.startswith("--- a/depot/keys/[REDACTED:github_token]/")
    review_input = prepare_review_input(redacted.artifact())
    assert review_input.files[0].diff.depot_path == shown  # what the model is shown, findings cite, mail names


def test_two_files_whose_redacted_paths_meet_stay_distinct_and_keep_their_extension():
    first, second = f"//depot/k/{KEY_ID}.py", f"//depot/k/{KEY_ID_2}.py"
    redacted = redact_change(_change([_diff(first, "+a = 1\n"), _diff(second, "+b = 2\n")]))
    paths = [d.depot_path for d in redacted.snapshot.diffs]
    assert paths == ["//depot/k/[REDACTED:aws_access_key].py", "//depot/k/[REDACTED:aws_access_key]~2.py"]
    assert redacted.snapshot.changed_files == paths
    assert with_index("//depot/k/Makefile", 3) == "//depot/k/Makefile~3"
    assert with_index("//depot/k/.env", 2) == "//depot/k/.env~2"


def test_the_policy_paths_are_redacted_as_the_files_are():
    directory = f"//depot/keys/{TOKEN}/"
    policy = ChangePolicy(
        policies=[
            DepotPolicy(
                source=directory + ".p4review.toml",
                revision="@6",
                directory=directory,
                policy=PolicyFile(
                    version=1, ignore=[f"{KEY_ID}/*"], paths=[PathPolicy(path=f"{TOKEN}/", instructions="careful")]
                ),
            )
        ],
        diagnostics=[PolicyDiagnostic(source=directory + "x/.p4review.toml", reason="invalid_toml", detail="line 1")],
        modified=[directory + ".p4review.toml"],
    )
    redacted = redact_change(_change([_diff(directory + "a.py", "+x = 1\n")], policy=policy))
    text = _text(redacted.snapshot)
    assert TOKEN not in text and KEY_ID not in text
    found = redacted.snapshot.policy.policies[0]  # type: ignore[union-attr]
    assert found.directory == "//depot/keys/[REDACTED:github_token]/"
    assert redacted.snapshot.diffs[0].depot_path.startswith(found.directory)  # still governs the file
    assert found.policy.paths[0].path == "[REDACTED:github_token]/"
    prepare_review_input(redacted.artifact())


@pytest.mark.parametrize(
    "where",
    [
        lambda a: a["snapshot"]["diffs"][0].update(depot_path=f"//depot/{TOKEN}/x.py"),
        lambda a: a["snapshot"]["description"]["files"][0].update(depot_path=f"//depot/{TOKEN}/x.py"),
        lambda a: a["snapshot"].update(policy={"modified": [f"//depot/{KEY_ID}/.p4review.toml"]}),
    ],
)
def test_the_guard_re_checks_every_path(where):
    artifact = redact_change(_change([_diff("//depot/a/x.py", "+x = 1\n")])).artifact()
    where(artifact)
    with pytest.raises(RedactionError) as caught:
        prepare_review_input(artifact)
    assert TOKEN not in str(caught.value) and KEY_ID not in str(caught.value)


def test_fetch_streams_what_the_in_memory_redaction_gives_and_keeps_the_raw_copy():
    change = _change(
        [
            _diff(f"//depot/k/{KEY_ID}.py", f"+print('{LATE}')\n"),
            _diff(f"//depot/k/{KEY_ID_2}.py", "+b = 2\n"),
            _diff("//depot/k/late.ini", f"+password = {LATE}\n"),
        ],
        description=f"see {LATE}",
        policy=ChangePolicy(modified=[f"//depot/k/{LATE}/.p4review.toml"]),
    )
    raw, redacted = io.BytesIO(), io.BytesIO()
    redactor = ChangeRedactor()
    summary = stream_change_artifacts(
        change.description,
        iter(change.diffs),
        raw=raw,
        redacted=redacted,
        depot_policy=change.policy,
        redactor=redactor,
    )
    expected = redact_change(change)
    assert json.loads(raw.getvalue()) == change.model_dump(mode="json")  # the raw artifact as it was
    assert json.loads(redacted.getvalue()) == json.loads(json.dumps(expected.artifact()))
    assert summary == {"ruleset_version": expected.ruleset_version, "counts": expected.counts}
    assert LATE not in redacted.getvalue().decode() and KEY_ID not in redacted.getvalue().decode()
    assert LATE not in repr(redactor) and "//depot" not in repr(redactor)
    assert redactor.final_policy() == expected.snapshot.policy  # what fetch puts on the job
    prepare_review_input(json.loads(redacted.getvalue()))


def test_a_path_in_a_log_line_is_redacted_and_escaped():
    assert path_for_log(f"//depot/{TOKEN}/\x1b.py") == "//depot/[REDACTED:github_token]/\\x1b.py"
    assert path_for_log("//depot/ok/a.py") == "//depot/ok/a.py"


def test_the_path_module_spells_the_placeholder_mark_as_the_rules_do():
    from p4review.change import redacted_paths
    from p4review.change.redaction.values import REDACTED_MARK

    assert redacted_paths.REDACTED_MARK == REDACTED_MARK

"""Fetch reads the depot's .p4review.toml through the fake p4: as it was before a submitted
change (`@N-1`), the head for a shelf, only under the allow-list, every candidate directory in a
bounded number of commands; `ignore` globs keep files from being fetched at all; a bad file is a
diagnostic; a change to a policy file is reviewed and listed, never in force for itself."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from p4review.change.depot_paths import DEFAULT_ALLOW_LIST, DepotAllowList
from p4review.models.change import DiffStatus, SkipReason
from p4review.models.job import ChangeKind
from p4review.perforce import ChangeFetcher, P4Runner
from p4review_dev.stack import repo_root, write_fake_p4_wrapper

PIPELINE_POLICY = "//depot/tools/main/pipeline/.p4review.toml"
TOOLS_POLICY = "//depot/tools/main/.p4review.toml"


@pytest.fixture(autouse=True)
def _python_on_path(monkeypatch):
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"])


def fetcher(tmp_path: Path, depot: Path | None = None, allow: tuple[str, ...] = DEFAULT_ALLOW_LIST) -> ChangeFetcher:
    settings = {"P4FAKE_DEPOT": str(depot)} if depot else {}
    p4 = write_fake_p4_wrapper(tmp_path / "bin" / "p4", settings)
    return ChangeFetcher(P4Runner(str(p4), timeout_seconds=30), allow_list=DepotAllowList(allow))


@pytest.mark.spec("RV-15")
def test_the_policy_in_force_is_read_at_the_submitted_change(tmp_path):
    fetch = fetcher(tmp_path)
    submitted = fetch.fetch(48220, ChangeKind.SUBMITTED).policy
    # 48220 also moves a file out of pipeline/util/: its directory is looked in too, finding none.
    assert [(p.source, p.revision) for p in submitted.policies] == [(PIPELINE_POLICY, "@48219")]
    assert submitted.policies[0].policy.paths[0].path == "common/"
    assert fetch.fetch(48213, ChangeKind.SUBMITTED).policy.policies == []
    assert fetch.fetch(48284, ChangeKind.SHELVED).policy.policies == []


@pytest.mark.spec("RV-15")
def test_a_bad_policy_file_is_a_diagnostic_and_the_change_is_fetched_as_usual(tmp_path):
    snapshot = fetcher(tmp_path).fetch(48240, ChangeKind.SHELVED)
    assert snapshot.policy.policies == []
    [problem] = snapshot.policy.diagnostics
    assert (problem.source, problem.reason) == ("//depot/services/matchmaking/main/.p4review.toml", "invalid_policy")
    assert "twenty" not in problem.detail  # where and what kind, never the file's text
    assert all(diff.status == DiffStatus.FETCHED for diff in snapshot.diffs)


@pytest.mark.spec("RV-15")
def test_a_policy_outside_the_allow_list_is_not_read(tmp_path):
    snapshot = fetcher(tmp_path, allow=("//depot/tools/main/pipeline/common/...",)).fetch(48220, ChangeKind.SUBMITTED)
    assert snapshot.policy.policies == [] and snapshot.policy.diagnostics == []


def _depot_copy(tmp_path: Path) -> Path:
    depot = tmp_path / "depot"
    shutil.copytree(repo_root() / "events" / "depot", depot)
    return depot


@pytest.mark.spec("RV-15")
def test_ignored_files_are_not_fetched_and_a_later_revision_of_the_policy_does_not_apply(tmp_path):
    depot = _depot_copy(tmp_path)
    pipeline = depot / "archive" / "depot" / "tools" / "main" / "pipeline" / ".p4review.toml,d"
    (pipeline / "1").write_text('version = 1\nignore = ["validate_*.py"]\n')
    # Revision 2, submitted after 48220 (as change 48290): not in force at 48220.
    (pipeline / "2").write_text('version = 1\nignore = ["**"]\n')
    # A policy above the shelved 48284, with two revisions: a shelf reads the head.
    tools = depot / "archive" / "depot" / "tools" / "main" / ".p4review.toml,d"
    tools.mkdir()
    (tools / "1").write_text("version = 1\n")
    (tools / "2").write_text('version = 1\nignore = ["*.tmp"]\n')
    later = {
        "change": 48290,
        "user": "pnair",
        "client": "pnair-tools-main",
        "time": 1716300000,
        "status": "submitted",
        "desc": "tools: ignore everything\n",
        "files": [{"depotFile": PIPELINE_POLICY, "action": "edit", "type": "text", "rev": 2}],
    }
    (depot / "changes" / "48290.json").write_text(json.dumps(later))

    snapshot = fetcher(tmp_path, depot).fetch(48220, ChangeKind.SUBMITTED)
    status = {diff.depot_path.rsplit("/", 1)[-1]: (diff.status, diff.skip_reason) for diff in snapshot.diffs}
    assert status["validate_manifest.py"] == (DiffStatus.SKIPPED, SkipReason.IGNORED_BY_POLICY)
    assert status["build_index.py"] == (DiffStatus.FETCHED, None)  # the tools policy at @48220 ignores nothing here
    sources = {p.source: p.revision for p in snapshot.policy.policies}
    assert sources == {PIPELINE_POLICY: "@48219", TOOLS_POLICY: "@48219"}
    [in_force] = [p.policy for p in snapshot.policy.policies if p.source == PIPELINE_POLICY]
    assert in_force.ignore == ["validate_*.py"]  # revision 1, not 48290's "**"
    fetch = fetcher(tmp_path, depot)
    head = fetch.read_policy(fetch.describe(48284, ChangeKind.SHELVED))
    assert [(p.source, p.revision, p.policy.ignore) for p in head.policies] == [(TOOLS_POLICY, "#head", ["*.tmp"])]


UPLOADER = "//depot/tools/main/uploader"
HOSTILE_POLICY = b'version = 1\nignore = ["**"]\nreviewers = ["someone@outside.example"]\n'


def _add_change(depot: Path, number: int, files: list[dict], *, status: str = "submitted") -> None:
    change = {
        "change": number,
        "user": "pnair",
        "client": "pnair-tools-main",
        "time": 1716400000,
        "status": status,
        "desc": "uploader: review policy\n",
        "files": files if status == "submitted" else [],
    }
    if status == "pending":
        change["shelf_versions"] = [{"version": 1, "time": 1716400000, "files": files}]
    (depot / "changes" / f"{number}.json").write_text(json.dumps(change))


def _archive(depot: Path, path: str, name: str, data: bytes) -> None:
    folder = depot / "archive" / (path[2:] + ",d")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data)


@pytest.mark.spec("RV-15")
def test_a_submitted_change_cannot_bring_its_own_policy(tmp_path):
    """Issue 27: a change adding `.p4review.toml` with ignore=["**"] was reviewed with 0 files in
    scope. The policy in force before it governs it; the new file is reviewed and called out."""
    depot = _depot_copy(tmp_path)
    policy_path = f"{UPLOADER}/.p4review.toml"
    _archive(depot, policy_path, "1", HOSTILE_POLICY)
    _archive(depot, f"{UPLOADER}/upload.py", "1", b"import subprocess\nsubprocess.call(cmd, shell=True)\n")
    _add_change(
        depot,
        48300,
        [
            {"depotFile": policy_path, "action": "add", "type": "text", "rev": 1},
            {"depotFile": f"{UPLOADER}/upload.py", "action": "add", "type": "text", "rev": 1},
        ],
    )
    snapshot = fetcher(tmp_path, depot).fetch(48300, ChangeKind.SUBMITTED)
    assert snapshot.policy.policies == []  # nothing was in force above the uploader before 48300
    assert {d.depot_path: (d.status, d.skip_reason) for d in snapshot.diffs} == {
        policy_path: (DiffStatus.FETCHED, None),  # the policy file itself is reviewed
        f"{UPLOADER}/upload.py": (DiffStatus.FETCHED, None),
    }
    assert snapshot.policy.modified == [policy_path]
    # The next change is governed by it.
    _archive(depot, f"{UPLOADER}/upload.py", "2", b"print(1)\n")
    _add_change(depot, 48301, [{"depotFile": f"{UPLOADER}/upload.py", "action": "edit", "type": "text", "rev": 2}])
    later = fetcher(tmp_path, depot).fetch(48301, ChangeKind.SUBMITTED)
    assert [(p.source, p.revision) for p in later.policy.policies] == [(policy_path, "@48300")]
    assert [d.skip_reason for d in later.diffs] == [SkipReason.IGNORED_BY_POLICY]


@pytest.mark.spec("RV-15")
def test_a_policy_file_that_says_it_is_generated_is_still_reviewed(tmp_path):
    """Generated files are skipped by default (P4REVIEW_REVIEW_GENERATED), and a policy file's
    author writes its header: `# @generated` kept the policy change away from the model."""
    depot = _depot_copy(tmp_path)
    policy_path = f"{UPLOADER}/.p4review.toml"
    _archive(depot, policy_path, "1", b"# @generated by policy-sync; do not edit\n" + HOSTILE_POLICY)
    _archive(depot, policy_path, "2", b"# @generated by policy-sync; do not edit\nversion = 1\nignore = []\n")
    _add_change(depot, 48300, [{"depotFile": policy_path, "action": "add", "type": "text", "rev": 1}])
    _add_change(depot, 48301, [{"depotFile": policy_path, "action": "edit", "type": "text", "rev": 2}])
    p4 = write_fake_p4_wrapper(tmp_path / "bin" / "p4", {"P4FAKE_DEPOT": str(depot)})
    runner = P4Runner(str(p4), timeout_seconds=30)
    fetch = ChangeFetcher(runner, allow_list=DepotAllowList(DEFAULT_ALLOW_LIST), skip_generated=True)
    for number in (48300, 48301):
        snapshot = fetch.fetch(number, ChangeKind.SUBMITTED)
        assert [(d.status, d.skip_reason) for d in snapshot.diffs] == [(DiffStatus.FETCHED, None)]
        assert snapshot.policy.modified == [policy_path]


@pytest.mark.spec("RV-15")
def test_a_policy_file_stored_as_binary_is_never_in_force(tmp_path):
    """A binary file is skipped, so a policy submitted as `binary` was never reviewed, yet it
    governed the next change. Not used, and said."""
    depot = _depot_copy(tmp_path)
    policy_path = f"{UPLOADER}/.p4review.toml"
    _archive(depot, policy_path, "1", HOSTILE_POLICY)
    _archive(depot, f"{UPLOADER}/upload.py", "1", b"print(1)\n")
    _add_change(depot, 48300, [{"depotFile": policy_path, "action": "add", "type": "binary+F", "rev": 1}])
    _add_change(depot, 48301, [{"depotFile": f"{UPLOADER}/upload.py", "action": "add", "type": "text", "rev": 1}])
    later = fetcher(tmp_path, depot).fetch(48301, ChangeKind.SUBMITTED)
    assert later.policy.policies == []
    [problem] = later.policy.diagnostics
    assert (problem.source, problem.reason) == (policy_path, "invalid_policy") and "binary" in problem.detail
    assert [(d.status, d.skip_reason) for d in later.diffs] == [(DiffStatus.FETCHED, None)]


@pytest.mark.spec("RV-15")
def test_a_shelf_that_edits_the_policy_is_reviewed_under_the_head_and_the_edit_is_in_scope(tmp_path):
    depot = _depot_copy(tmp_path)
    policy_path = f"{UPLOADER}/.p4review.toml"
    _archive(depot, policy_path, "1", b'version = 1\nignore = ["**"]\n')  # in force: ignores everything
    _archive(depot, policy_path, "shelf-48310-v1", b"version = 1\n")
    _archive(depot, f"{UPLOADER}/cli.py", "shelf-48310-v1", b"print(2)\n")
    _add_change(
        depot,
        48310,
        [
            {"depotFile": policy_path, "action": "edit", "type": "text", "rev": 1},
            {"depotFile": f"{UPLOADER}/cli.py", "action": "edit", "type": "text", "rev": 1},
        ],
        status="pending",
    )
    snapshot = fetcher(tmp_path, depot).fetch(48310, ChangeKind.SHELVED)
    assert [(p.source, p.revision) for p in snapshot.policy.policies] == [(policy_path, "#head")]
    reasons = {d.depot_path: d.skip_reason for d in snapshot.diffs}
    assert reasons == {policy_path: None, f"{UPLOADER}/cli.py": SkipReason.IGNORED_BY_POLICY}
    assert snapshot.policy.modified == [policy_path]


@pytest.mark.spec("RV-15")
def test_a_policy_file_too_deep_to_parse_is_a_diagnostic_and_the_change_is_fetched(tmp_path):
    depot = _depot_copy(tmp_path)
    _archive(depot, PIPELINE_POLICY, "1", b"version = 1\na = " + b"[" * 600 + b"]" * 600 + b"\n")
    snapshot = fetcher(tmp_path, depot).fetch(48220, ChangeKind.SUBMITTED)
    [problem] = snapshot.policy.diagnostics
    assert (problem.source, problem.reason) == (PIPELINE_POLICY, "invalid_toml")
    assert snapshot.policy.policies == [] and len(snapshot.diffs) == 4


def _wide_change(depot: Path, directories: int, *, own_policies: int = 0) -> None:
    """Change 48400 touches one file in each of `directories` directories under //depot/wide/;
    the root of the tree has a policy, and so do the first `own_policies` directories."""
    files = []
    for index in range(directories):
        path = f"//depot/wide/d{index:03}/f.c"
        _archive(depot, path, "1", b"int f(void) { return 0; }\n")
        files.append({"depotFile": path, "action": "add", "type": "text", "rev": 1})
    _archive(depot, "//depot/wide/.p4review.toml", "1", b'version = 1\nreviewers = ["wide-leads@example.com"]\n')
    for index in range(own_policies):
        _archive(depot, f"//depot/wide/d{index:03}/.p4review.toml", "1", b'version = 1\nmin_severity = "high"\n')
    _add_change(depot, 48400, files)


@pytest.mark.spec("RV-15")
@pytest.mark.parametrize(("directories", "own_policies"), [(17, 0), (300, 150)])
def test_every_policy_that_applies_is_read_in_two_commands(tmp_path, directories, own_policies):
    """Issue 27: only the 16 deepest directories were looked in, so 17 dropped the root policy."""
    depot = _depot_copy(tmp_path)
    _wide_change(depot, directories, own_policies=own_policies)
    log = tmp_path / "p4.log"
    p4 = write_fake_p4_wrapper(tmp_path / "bin" / "p4", {"P4FAKE_DEPOT": str(depot), "P4FAKE_LOG": str(log)})
    fetch = ChangeFetcher(P4Runner(str(p4), timeout_seconds=30), allow_list=DepotAllowList(DEFAULT_ALLOW_LIST))
    found = fetch.read_policy(fetch.describe(48400, ChangeKind.SUBMITTED))

    sources = [p.source for p in found.policies]
    assert "//depot/wide/.p4review.toml" in sources and len(sources) == own_policies + 1
    assert found.diagnostics == []
    commands = [json.loads(line) for line in log.read_text().splitlines()][1:]  # after describe
    candidates = directories + 2  # each directory, //depot/wide/ and //depot/
    # One `files` naming every candidate and one `print` of the policies found, whatever their
    # number: their operands in an argument file (p4 -x), none on the command line.
    assert [entry["argv"][0::3] for entry in commands] == [["-G", "files"], ["-G", "print"]]
    lookup, printed = (entry["argfile"] for entry in commands)
    assert len(lookup) == candidates and len(printed) == own_policies + 1

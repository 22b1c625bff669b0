"""Fetch reads the depot's .p4review.toml through the fake p4: at the change's revision for a
submitted change, the head for a shelf, only under the allow-list; `ignore` globs keep files
from being fetched at all; a bad file is a diagnostic."""

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
    assert [(p.source, p.revision) for p in submitted.policies] == [(PIPELINE_POLICY, "@48220")]
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
    assert sources == {PIPELINE_POLICY: "@48220", TOOLS_POLICY: "@48220"}
    [in_force] = [p.policy for p in snapshot.policy.policies if p.source == PIPELINE_POLICY]
    assert in_force.ignore == ["validate_*.py"]  # revision 1, not 48290's "**"
    fetch = fetcher(tmp_path, depot)
    head = fetch.read_policy(fetch.describe(48284, ChangeKind.SHELVED))
    assert [(p.source, p.revision, p.policy.ignore) for p in head.policies] == [(TOOLS_POLICY, "#head", ["*.tmp"])]

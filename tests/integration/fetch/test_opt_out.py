"""A change whose description carries `#review-skip`: fetch reads its description and nothing
else, review reviews nothing, notify emails no one, and the job says why."""

from __future__ import annotations

import json
import shutil

import pytest

from p4review.models.api import JobView
from p4review.models.job import JobStatus, StageStatus
from p4review.review.settings import ReviewSettings
from p4review.review.setup import build_review_work
from p4review.stores.factory import get_data_access
from p4review_dev.stack import repo_root, write_fake_p4_wrapper
from p4review_dev.support.harness import fetch_work, new_job, provisioned_service, run_through
from p4review_dev.support.notify import notify_work


@pytest.mark.spec("RV-4")
def test_an_opted_out_change_is_not_fetched_reviewed_or_emailed_and_the_job_says_why(
    moto_endpoint, aws_reset, tmp_path
):
    depot = tmp_path / "depot"
    shutil.copytree(repo_root() / "events" / "depot", depot)
    change_file = depot / "changes" / "48213.json"
    change = json.loads(change_file.read_text())
    change["desc"] += "\nVendored drop, reviewed upstream. #review-skip\n"
    change_file.write_text(json.dumps(change))
    p4_log = tmp_path / "p4-argv.jsonl"
    p4 = write_fake_p4_wrapper(tmp_path / "bin" / "p4", {"P4FAKE_DEPOT": str(depot), "P4FAKE_LOG": str(p4_log)})

    with provisioned_service(moto_endpoint, extra_env={"P4REVIEW_P4_EXECUTABLE": str(p4)}):
        dal = get_data_access()
        finished = run_through(
            new_job("opt-out", 48213), fetch_work(), build_review_work(ReviewSettings.from_env(), dal), notify_work()
        )
        assert finished.status == JobStatus.SUCCEEDED and finished.opted_out == "#review-skip"
        assert all(state.status == StageStatus.COMPLETED for state in finished.stages.values())
        assert finished.artifacts.change_key is None and finished.artifacts.result_key is None
        assert finished.summary is None and finished.recipients_required == 0
        assert dal.outbox.rows_for_version(48213, 1) == []  # no delivery was even planned
        # Only the description was read: no file content was fetched.
        argvs = [json.loads(line)["argv"] for line in p4_log.read_text().splitlines()]
        assert argvs == [["-G", "describe", "-s", "48213"]]
        assert JobView.from_job(finished).opted_out == "#review-skip"

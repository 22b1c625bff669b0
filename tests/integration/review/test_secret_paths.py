"""A secret in a file's depot path (issue 28 item 7) on the whole local pipeline: the fake p4
serves a change adding `//depot/keys/ghp_.../AKIA....py`; fetch, review (an OpenAI-compatible
server on loopback that records the request) and notify (a real SMTP server on loopback) run
through the stage runtime. Neither token reaches the model's request, the redacted artifact,
the stored result, the job, the logs or the email, while the file is still reviewed and its
finding is mailed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from p4review import resources as spec
from p4review.models.review_result import StoredReview
from p4review.review.settings import ReviewSettings
from p4review.review.setup import build_review_work
from p4review.stores.factory import get_data_access
from p4review_dev.smtp_server import LocalMailServer
from p4review_dev.stack import write_fake_p4_wrapper
from p4review_dev.support.harness import fetch_work, new_job, run_through
from p4review_dev.support.llm_server import Reply, scripted_server  # noqa: F401 (fixture)
from p4review_dev.support.notify import notify_service, run_notify

CHANGE = 900
TOKEN = "ghp_" + "Zk4Qm7Rt2Vx9Lp3Nw8Bc5Hd1Jf6Gs0Ay2Ue7O"  # a fake of the real shape: ghp_ + 36 base62
KEY_ID = "AKIA" + "Q3EGRIT5MJ4XZK7P"
SECRET_PATH = f"//depot/keys/{TOKEN}/{KEY_ID}.py"
OTHER_PATH = "//depot/keys/loader.py"
CONTENT = "import os\n\n\ndef load():\n    return eval(os.environ['X'])\n"


def _depot(root: Path) -> Path:
    (root / "changes").mkdir(parents=True)
    (root / "archive" / "packs").mkdir(parents=True)
    files = [
        {"depotFile": SECRET_PATH, "action": "add", "type": "text", "rev": 1},
        {"depotFile": OTHER_PATH, "action": "add", "type": "text", "rev": 1},
    ]
    change = {
        "change": CHANGE,
        "user": "tmorgan",
        "client": "tmorgan-ws",
        "time": 1715594551,
        "status": "submitted",
        "desc": "add the key loader\n",
        "files": files,
    }
    (root / "changes" / f"{CHANGE}.json").write_text(json.dumps(change))
    revisions = {f"{SECRET_PATH}#1": CONTENT, f"{OTHER_PATH}#1": f"# reads {SECRET_PATH}\nPATH = 1\n"}
    (root / "archive" / "packs" / f"{CHANGE}.json").write_text(json.dumps({"revisions": revisions}))
    (root / "index.json").write_text(json.dumps({"changelists": []}))
    users = {"tmorgan": {"Email": "tessa.morgan@northwind-games.example", "FullName": "Tessa Morgan"}}
    (root / "users.json").write_text(json.dumps(users))
    (root / "properties.json").write_text(json.dumps({}))
    return root


@pytest.fixture
def mail(tmp_path):
    server = LocalMailServer(tmp_path / "mailbox", username="relay", password="relay-password")
    server.start()
    yield server
    server.stop()


def _leaks(text: str) -> list[str]:
    return [secret for secret in (TOKEN, KEY_ID, TOKEN[4:], KEY_ID[4:]) if secret in text]


@pytest.mark.spec("SEC-32")
def test_a_secret_in_a_depot_path_reaches_neither_the_model_the_bucket_nor_the_email(
    moto_endpoint, aws_reset, tmp_path, mail, server, caplog, capsys
):
    p4 = write_fake_p4_wrapper(tmp_path / "bin" / "p4", {"P4FAKE_DEPOT": str(_depot(tmp_path / "depot"))})
    env = {
        "P4REVIEW_P4_EXECUTABLE": str(p4),
        "P4REVIEW_LLM_PROVIDER": "openai",
        "P4REVIEW_LLM_MODEL": "qwen-coder",
        "P4REVIEW_LLM_BASE_URL": server.base_url,
        "P4REVIEW_NO_FINDINGS_POLICY": "send",
    }
    with notify_service(moto_endpoint, mail, extra_env=env) as service:
        secret_id = service.resources.secrets[spec.LLM_SECRET.key]
        service.client("secretsmanager").put_secret_value(
            SecretId=secret_id, SecretString=json.dumps({"api_key": "sk-test-review-0123456789"})
        )
        dal = get_data_access()
        job = run_through(new_job("secret-path", CHANGE), fetch_work(), worker_id="fetcher")
        redacted = dal.redacted_artifacts.get_json(job.artifacts.change_key)
        assert not _leaks(json.dumps(redacted))
        assert TOKEN in json.dumps(dal.raw_artifacts.get_json(job.artifacts.change_key))  # the raw copy is kept
        paths = [diff["depot_path"] for diff in redacted["snapshot"]["diffs"]]
        shown = next(path for path in paths if path != OTHER_PATH)
        assert shown == "//depot/keys/[REDACTED:github_token]/[REDACTED:aws_access_key].py"
        assert [f["depot_path"] for f in redacted["snapshot"]["description"]["files"]] == paths
        answer = {
            "schema_version": "1.0",
            "prompt_version": "1.2.0",
            "summary": "One problem.",
            "findings": [
                {
                    "id": "F1",
                    "severity": "high",
                    "category": "security",
                    "title": "eval of the environment",
                    "file": shown,  # the path the model saw
                    "line": 5,
                    "message": "eval() runs whatever X holds.",
                    "confidence": "high",
                }
            ],
        }
        server.script(
            Reply(
                body={
                    "id": "c1",
                    "object": "chat.completion",
                    "created": 1,
                    "model": "qwen-coder",
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": "stop",
                            "message": {"role": "assistant", "content": json.dumps(answer)},
                        }
                    ],
                    "usage": {"prompt_tokens": 1000, "completion_tokens": 50, "total_tokens": 1050},
                }
            )
        )
        job = run_through(job, build_review_work(ReviewSettings.from_env(), dal), worker_id="reviewer")
        requests = json.dumps([request.body for request in server.requests])
        assert server.requests and not _leaks(requests)
        assert shown in requests and "eval(os.environ" in requests  # the file was reviewed
        stored = StoredReview.model_validate(dal.redacted_artifacts.get_json(job.artifacts.result_key))
        assert not _leaks(stored.model_dump_json())
        # Reconciled on the path the model saw (bandit, which read the file under that path too,
        # found the same line: the two are merged into one finding).
        assert [(f.file, f.line) for f in stored.result.findings] == [(shown, 5)]
        assert shown in (stored.coverage.files_reviewed if stored.coverage else [])
        assert run_notify(job).ack
        (message,) = mail.messages()
        email = message.raw().decode("utf-8", "replace")
        assert not _leaks(email)
        assert "eval" in email and "[REDACTED:github_token]" in email
        assert not _leaks(dal.jobs.get_job(job.job_id).model_dump_json())
    assert not _leaks(caplog.text) and not _leaks("".join(capsys.readouterr()))  # nor the logs

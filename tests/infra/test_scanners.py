"""The scanners a security team runs on the synthesized template: checkov and cfn-lint find nothing
(docs/infra.md, "Scanners"), and every suppression carries its reason.

Three templates: dev, prod (protected data, the p4 CLI layer) and prod with every optional resource
(audit trail, Swarm secrets and route, notify in a VPC). Both scanners run as subprocesses, offline:
checkov with --skip-download and no update check, and any HTTP(S) either would try is sent to a
closed loopback port, so it fails at once instead of hanging."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from tests.infra.conftest import P4_LAYER_ARN, REPO_ROOT, Synth, _synth
from tests.infra.test_swarm_config import ALL_CONTEXT as SWARM_AND_VPC_CONTEXT

# checkov pins boto3 and packaging below the project's, so it has a venv of its own (`make scanners`).
CHECKOV = REPO_ROOT / ".venv" / "checkov" / "bin" / "checkov"
CFN_LINT = Path(sys.executable).parent / "cfn-lint"
SCANNER_TIMEOUT_SECONDS = 240  # under pytest-timeout's 300 s, so the scanner's own output is reported
CLOSED_PORT = "http://127.0.0.1:9"
OFFLINE_ENV = {
    "CKV_SKIP_PACKAGE_UPDATE_CHECK": "true",  # no PyPI version check
    "BC_SKIP_MAPPING": "TRUE",  # no policy-id mapping download
    "HTTPS_PROXY": CLOSED_PORT,
    "HTTP_PROXY": CLOSED_PORT,
    "https_proxy": CLOSED_PORT,
    "http_proxy": CLOSED_PORT,
    "NO_PROXY": "",
    "no_proxy": "",
}
# The only cfn-lint rule suppressed, and where (p4review_infra/scanner_skips.py says why).
ALLOWED_CFN_LINT_IGNORES = {"W3005": {"AWS::Lambda::Function"}}
INFRA_DOC = REPO_ROOT / "docs" / "infra.md"
TEMPLATES = ("dev", "prod", "everything")


@pytest.fixture(scope="module")
def everything(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    return _synth(
        "prod",
        tmp_path_factory.mktemp("cdk-everything"),
        p4LayerArn=P4_LAYER_ARN,
        artifactAuditTrail="true",
        **SWARM_AND_VPC_CONTEXT,
    )


@pytest.fixture(params=TEMPLATES)
def template_path(request: pytest.FixtureRequest) -> Path:
    synth: Synth = request.getfixturevalue(request.param)
    path = synth.outdir / synth.stack.template_file  # type: ignore[attr-defined]
    assert path.is_file(), f"{path} was not synthesized"
    return path


def _name(path: Path) -> str:
    """The template's name in messages: dev, prod or everything (its synth directory's prefix)."""
    return next(name for name in TEMPLATES if path.parent.name.startswith(f"cdk-{name}"))


def _run(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command,
        cwd=cwd,  # the template's directory: no .checkov.yaml or .cfnlintrc of the checkout applies
        env={**os.environ, **OFFLINE_ENV},
        capture_output=True,
        text=True,
        timeout=SCANNER_TIMEOUT_SECONDS,
        check=False,
    )


@cache
def checkov_report(path: Path) -> dict[str, Any]:
    if not CHECKOV.is_file():
        pytest.fail(f"{CHECKOV} is missing: run `make scanners` (make test does)")
    options = ["--framework", "cloudformation", "--skip-download", "--output", "json"]
    result = _run([str(CHECKOV), "--file", str(path), *options], path.parent)
    # 0: nothing failed, 1: something failed; anything else is checkov itself failing.
    assert result.returncode in (0, 1), f"checkov exited {result.returncode}: {result.stderr[-2000:]}"
    report = json.loads(result.stdout)
    (report,) = report if isinstance(report, list) else [report]
    return report


def _summary(name: str, report: dict[str, Any]) -> str:
    summary = report["summary"]
    return (
        f"checkov on {name}: passed={summary['passed']} failed={summary['failed']} "
        f"skipped={summary['skipped']} resources={summary['resource_count']}"
    )


def _skips_in(path: Path) -> list[tuple[str, str, str]]:
    """(logical id, check id, comment) of every checkov skip in the template's metadata."""
    resources = json.loads(path.read_text())["Resources"]
    return [
        (logical_id, entry.get("id", ""), entry.get("comment", ""))
        for logical_id, resource in resources.items()
        for entry in resource.get("Metadata", {}).get("checkov", {}).get("skip", [])
    ]


@pytest.mark.spec("OPS-7")
def test_checkov_finds_nothing(template_path: Path) -> None:
    report = checkov_report(template_path)
    summary = report["summary"]
    failed = sorted(f"{c['check_id']} {c['resource']}" for c in report["results"]["failed_checks"])
    message = _summary(_name(template_path), report)
    print(message)
    assert summary["parsing_errors"] == 0, message
    assert summary["passed"] > 0 and summary["resource_count"] > 0, message  # it did scan the template
    assert not failed, message + "\n" + "\n".join(failed)


@pytest.mark.spec("OPS-7")
def test_every_checkov_skip_has_a_reason_and_matches_a_check_that_ran(template_path: Path) -> None:
    skips = _skips_in(template_path)
    assert skips, "no skips found: is the scanner-skips aspect still registered in app.py?"
    unexplained = [(logical_id, check) for logical_id, check, comment in skips if len(comment.strip()) < 20]
    assert not unexplained, f"checkov skips without a written reason: {unexplained}"
    # A skip checkov did not report (a mistyped id, a check that does not apply) is dead text.
    report = checkov_report(template_path)
    reported = {(c["resource"].split(".", 1)[1], c["check_id"]) for c in report["results"]["skipped_checks"]}
    stale = sorted({(logical_id, check) for logical_id, check, _ in skips} - reported)
    assert not stale, f"skips that match no check checkov ran: {stale}"
    assert report["summary"]["skipped"] == len(skips), _summary(_name(template_path), report)


@pytest.mark.spec("OPS-7")
def test_cfn_lint_finds_nothing(template_path: Path) -> None:
    result = _run([str(CFN_LINT), "--format", "json", "--", str(template_path)], template_path.parent)
    exit_code, findings = result.returncode, json.loads(result.stdout or "[]")
    listed = [f"{m['Rule']['Id']} {m['Location']['Path']}: {m['Message']}" for m in findings]
    message = f"cfn-lint on {_name(template_path)}: {len(findings)} errors and warnings"
    print(message)
    assert exit_code == 0 and not findings, message + "\n" + "\n".join(listed) + result.stderr[-2000:]


@pytest.mark.spec("OPS-7")
def test_cfn_lint_ignores_only_the_reasoned_rules(template_path: Path) -> None:
    resources = json.loads(template_path.read_text())["Resources"]
    for logical_id, resource in resources.items():
        ignored = resource.get("Metadata", {}).get("cfn-lint", {}).get("config", {}).get("ignore_checks", [])
        for rule in ignored:
            assert resource["Type"] in ALLOWED_CFN_LINT_IGNORES.get(rule, set()), (
                f"{logical_id} ({resource['Type']}) ignores cfn-lint {rule}: give the reason in "
                "scanner_skips.py and docs/infra.md, then allow it here"
            )


@pytest.mark.spec("OPS-7")
def test_docs_list_every_skipped_check(template_path: Path) -> None:
    scanners_section = INFRA_DOC.read_text().split("## Scanners", 1)[-1].split("\n## ", 1)[0]
    undocumented = sorted({check for _, check, _ in _skips_in(template_path)} - set(_ids_in(scanners_section)))
    assert not undocumented, f"docs/infra.md's Scanners table does not list {undocumented}"


def _ids_in(text: str) -> list[str]:
    return [word.strip("`|,.()") for word in text.split() if word.strip("`|,.()").startswith(("CKV_", "W3"))]

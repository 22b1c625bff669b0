"""The Lambda-like smoke test of the built artifact (`make package`).

Every Python function's handler runs from its code asset and layers as CDK built them, on the
runtime's Python version (`lambda_sandbox.py` under `python3.12 -I -S`), against the embedded local
stack: two fixture changes go through ingest, fetch, review and notify; the job is read back
through ingest; the sweeper, the credential-age check and a whole signing-key rotation run; and
every analyzer in the layer answers `--version`. Nothing here may be imported from the venv.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from p4review_infra.lambda_python import LAMBDA_PYTHON_ENV, LAMBDA_PYTHON_VERSION, lambda_python
from p4review_infra.packaging import FunctionBundle

SANDBOX = Path(__file__).with_name("lambda_sandbox.py")
# Changes of the fixture depot (events/depot) and the layer's analyzers their files must meet in
# the review: C++ and Python. A missing analyzer or a failed run is only a diagnostic in a review,
# so the smoke test reads the stored result to see that they ran.
SMOKE_CHANGES = {48213: ("cppcheck", "flawfinder"), 48220: ("ruff", "bandit")}
# How long the stages may take to drain both changes, the review's analyzers included.
DRAIN_SECONDS = 300.0
INVOKE_TIMEOUT_SECONDS = 600


class SmokeFailed(RuntimeError):
    pass


def find_lambda_python() -> str:
    found = lambda_python()
    if found is None:
        raise SmokeFailed(
            f"no Python {LAMBDA_PYTHON_VERSION} (Lambda's python3.12 runtime) found: install it "
            f"(`pyenv install {LAMBDA_PYTHON_VERSION}`) or set {LAMBDA_PYTHON_ENV} to its interpreter"
        )
    return found


def install_runtime_packages(target: Path) -> Path:
    """boto3 and botocore as the runtime provides them, for Python 3.12, beside nothing else.
    The same versions as the venv's: Lambda updates its own over time (docs/infra.md)."""
    import boto3
    import botocore

    from p4review_infra.layer import lambda_platform_args

    stamp = target / f".installed-{boto3.__version__}-{botocore.__version__}"
    if stamp.exists():
        return target
    shutil.rmtree(target, ignore_errors=True)
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--target"]
    command += [str(target), f"boto3=={boto3.__version__}", f"botocore=={botocore.__version__}"]
    subprocess.run([*command, *lambda_platform_args()], check=True)
    stamp.touch()
    return target


def assemble_opt(bundle: FunctionBundle, work: Path, cache: dict[tuple[Path, ...], Path]) -> Path:
    """/opt as Lambda lays it out: each layer extracted in order, a later file replacing an
    earlier one. Hard links, so seven functions' copies cost no space."""
    if bundle.layer_dirs in cache:
        return cache[bundle.layer_dirs]
    opt = work / f"opt-{len(cache)}"
    shutil.rmtree(opt, ignore_errors=True)
    opt.mkdir(parents=True)
    for layer in bundle.layer_dirs:
        shutil.copytree(layer, opt, dirs_exist_ok=True, copy_function=_link_or_copy, symlinks=True)
    cache[bundle.layer_dirs] = opt
    return opt


def _link_or_copy(source: str, destination: str) -> None:
    if os.path.lexists(destination):
        os.unlink(destination)
    try:
        os.link(source, destination)
    except OSError:
        shutil.copy2(source, destination)


@dataclass
class Sandbox:
    """Runs the handlers of one synthesized stack against one local stack."""

    python: str
    runtime_dir: Path
    work: Path
    stack_env: dict[str, str]
    bundles: dict[str, FunctionBundle]
    log: list[str] = field(default_factory=list)
    _opt_cache: dict[tuple[Path, ...], Path] = field(default_factory=dict)

    def opt_of(self, stage: str) -> Path:
        return assemble_opt(self.bundles[stage], self.work, self._opt_cache)

    def invoke(self, stage: str, event: dict[str, Any]) -> Any:
        bundle = self.bundles[stage]
        with tempfile.TemporaryDirectory(prefix=f"smoke-{stage}-", dir=self.work) as scratch:
            event_file, result_file = Path(scratch, "event.json"), Path(scratch, "result.json")
            event_file.write_text(json.dumps(event))
            command = [self.python, "-I", "-S", str(SANDBOX), "--task", str(bundle.code_dir)]
            command += ["--opt", str(self.opt_of(stage)), "--runtime", str(self.runtime_dir)]
            command += ["--handler", bundle.handler, "--function-name", bundle.name]
            command += ["--event", str(event_file), "--result", str(result_file)]
            completed = subprocess.run(
                command,
                env=self._function_env(bundle),
                capture_output=True,
                text=True,
                timeout=INVOKE_TIMEOUT_SECONDS,
                check=False,
            )
            self.log.append(f"--- {stage} exit {completed.returncode}\n{completed.stdout}{completed.stderr}")
            if not result_file.exists():
                raise SmokeFailed(f"{stage}: the sandbox wrote no result (exit {completed.returncode})")
            outcome = json.loads(result_file.read_text())
        if outcome.get("foreign_modules"):
            raise SmokeFailed(f"{stage} imported modules from outside the artifact: {outcome['foreign_modules'][:5]}")
        if "error" in outcome:
            self.log.append(outcome.get("traceback", ""))
            raise SmokeFailed(f"{stage} raised {outcome['error']}")
        return outcome.get("result")

    def _function_env(self, bundle: FunctionBundle) -> dict[str, str]:
        # What Lambda sets (docs: "Defined runtime environment variables"), the function's own
        # variables from the template, then the local stack's endpoints and resource names.
        path = os.pathsep.join([str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin", "/bin"])
        return {
            "PATH": path,
            "LANG": "en_US.UTF-8",
            "TZ": ":UTC",
            "LAMBDA_TASK_ROOT": str(bundle.code_dir),
            "AWS_EXECUTION_ENV": f"AWS_Lambda_python{LAMBDA_PYTHON_VERSION}",
            "AWS_LAMBDA_FUNCTION_NAME": bundle.name,
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1024",
            **bundle.environment,
            **self.stack_env,
        }

    def analyzer_versions(self, stage: str) -> dict[str, str]:
        """Every native analyzer in the layer's bin/, and the Python ones as the adapter runs them
        (`python -m NAME` with the layer on PYTHONPATH), asked for `--version` on this machine."""
        opt = self.opt_of(stage)
        commands = {path.name: [str(path)] for path in sorted((opt / "python" / "bin").iterdir())}
        for module in ("bandit", "flawfinder", "cppcheck"):
            commands[module] = [self.python, "-S", "-m", module]
        versions = {}
        for name, command in commands.items():
            completed = subprocess.run(
                [*command, "--version"],
                env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(opt / "python"), "LC_ALL": "C.UTF-8"},
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            lines = (completed.stdout or completed.stderr).strip().splitlines()
            if completed.returncode != 0 or not lines:
                raise SmokeFailed(f"analyzer {name} --version failed (exit {completed.returncode})")
            # shellcheck prints its name first and "version: 0.11.0" below.
            versions[name] = next((line for line in lines if any(c.isdigit() for c in line)), lines[0]).strip()
        return versions

    def saved_hcl2_parser_parses(self, stage: str) -> str:
        """The deps layer's saved Terraform parser loads on the runtime's Python version, as the review
        loads it, and parses a sample as python-hcl2's own parser does."""
        from p4review_infra.layer import SAVED_HCL2_PARSER

        site = self.opt_of(stage) / "python"
        if not (site / SAVED_HCL2_PARSER).is_file():
            raise SmokeFailed(f"{stage}: the deps layer has no {SAVED_HCL2_PARSER}")
        sample = 'resource "aws_s3_bucket" "b" {\n  acl = "public-read"\n}\n'
        subprocess.run([self.python, "-I", "-S", "-c", _CHECK_SAVED_PARSER, str(site), sample], check=True, timeout=120)
        return SAVED_HCL2_PARSER

    def context_grammars_parse(self, stage: str) -> str:
        """The deps layer's tree-sitter and every grammar the model's context uses load on the
        runtime's Python, and each finds the function around a line, as the review reads it."""
        return self._check_in_layer(stage, _CHECK_GRAMMARS, "the model's context grammars")

    def redaction_scans_in_one_pass(self, stage: str) -> str:
        """The deps layer's `hyperscan` loads on the runtime's Python, and the redaction prefilter's
        one-pass scan flags what its `re` passes flag, as the stage redacts."""
        return self._check_in_layer(stage, _CHECK_NEEDLE_SCAN, "the redaction's one-pass scan")

    def _check_in_layer(self, stage: str, script: str, what: str) -> str:
        """`script` run by the runtime's Python with the stage's layers only -> what it prints."""
        completed = subprocess.run(
            [self.python, "-I", "-S", "-c", script, str(self.opt_of(stage) / "python")],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if completed.returncode != 0:
            raise SmokeFailed(f"{stage}: {what} failed: {completed.stderr.strip()[-300:]}")
        return completed.stdout.strip()


# Run by the runtime's Python with the fetch function's layers only: the one-pass scan is there and
# agrees with the reference passes on a sample holding a token, a password and an ordinary line.
_CHECK_NEEDLE_SCAN = """
import sys
sys.path.insert(0, sys.argv[1])
from p4review.change.redaction import Redactor, needle_scan
from p4review.change.redaction.needles import Prefilter
assert needle_scan.available(), "hyperscan is not importable from the layer"
sample = ('token = "ghp_' + 'x' * 36 + '"\\npassword: hunter2hunter2\\nprint(total)\\n') * 6000  # over 256 KB
redactor = Redactor()
prefilters = [value for value in vars(redactor._scanner).values() if isinstance(value, Prefilter)]
assert prefilters, "no prefilter found on the scanner"
for prefilter in prefilters:
    assert prefilter._one_pass_scan() is not None, "the one-pass scan did not build"
    assert prefilter.flag(sample) == prefilter.flag(sample, one_pass=False)
    assert prefilter.flag(sample), "nothing flagged"
print("hyperscan " + needle_scan._hyperscan.__version__)
"""

# Run by the runtime's Python with the review's layers only: each language's grammar loads from the
# layer and finds the function `f` (or method) around line 3 of a small sample.
_CHECK_GRAMMARS = """
import sys
sys.path.insert(0, sys.argv[1])
from p4review.review.context.definitions import enclosing, parse_file
samples = {
    "a.py": "import os\\n\\ndef f(a):\\n    return a\\n",
    "a.c": "#include <x.h>\\n\\nint f(int a) {\\n  return a;\\n}\\n",
    "a.cpp": "namespace n {\\n\\nint C::f(int a) {\\n  return a;\\n}\\n}\\n",
    "a.js": "const x = 1;\\n\\nfunction f(a) {\\n  return a;\\n}\\n",
    "a.ts": "const x = 1;\\n\\nfunction f(a: number): number {\\n  return a;\\n}\\n",
    "a.tsx": "const x = 1;\\n\\nfunction f(a: number) {\\n  return <b>{a}</b>;\\n}\\n",
    "a.go": "package a\\n\\nfunc f(a int) int {\\n\\treturn a\\n}\\n",
    "A.java": "class A {\\n\\n  int f(int a) {\\n    return a;\\n  }\\n}\\n",
    "A.cs": "class A {\\n\\n  int f(int a) {\\n    return a;\\n  }\\n}\\n",
    "a.sh": "set -e\\n\\nf() {\\n  echo \\"$1\\"\\n}\\n",
}
for path, text in samples.items():
    found = [d.name for d in enclosing(parse_file(path, text).definitions, 4) if d.kind == "function"]
    assert found == ["f"], (path, found)
import tree_sitter
print(f"tree-sitter: {len(samples)} grammars")
"""

# Run by the runtime's Python with the review's layers only: the review's parser is the saved one,
# and it parses as python-hcl2's own (built from its grammar) does.
_CHECK_SAVED_PARSER = """
import sys
sys.path.insert(0, sys.argv[1])
import hcl2
from p4review.review.analyzers import iac_hcl
parser = iac_hcl._hcl2_parser()
assert parser is not hcl2.parser.parser(), "the review built its parser instead of loading the saved one"
assert parser.parse(sys.argv[2] + "\\n") == hcl2.parses_to_tree(sys.argv[2])
"""


def run_smoke(bundles: list[FunctionBundle], stack_name: str, work: Path) -> dict[str, Any]:
    """Runs the pipeline's handlers from the built assets against a fresh local stack."""
    from p4review_dev.stack import LocalStack

    python = find_lambda_python()
    runtime_dir = install_runtime_packages(work / "runtime")
    prefix = f"{stack_name}-"
    ours = {b.name.removeprefix(prefix): b for b in bundles if b.is_ours}
    state_dir = work / "stack"
    shutil.rmtree(state_dir, ignore_errors=True)
    # No in-process workers: every stage runs in the sandbox; the in-process sweeper waits a day.
    with LocalStack(state_dir, workers=False, sweep_interval_seconds=86_400.0) as stack:
        sandbox = Sandbox(python, runtime_dir, work, _stack_env(state_dir), ours)
        try:
            return _run_pipeline(sandbox, stack)
        finally:
            (work / "smoke.log").write_text("\n".join(sandbox.log))


def _stack_env(state_dir: Path) -> dict[str, str]:
    env = {}
    for line in (state_dir / "stack.env").read_text().splitlines():
        name, _, value = line.partition("=")
        if name:
            env[name] = value
    return env


def _run_pipeline(sandbox: Sandbox, stack: Any) -> dict[str, Any]:
    from p4review.cli.api_client import default_idempotency_key
    from p4review.models.job import STAGE_ORDER

    report: dict[str, Any] = {"python": sandbox.python, "invocations": {}}
    count = report["invocations"]

    def invoke(stage: str, event: dict[str, Any]) -> Any:
        count[stage] = count.get(stage, 0) + 1
        return sandbox.invoke(stage, event)

    jobs = []
    for change in SMOKE_CHANGES:
        body = {
            "idempotency_key": default_idempotency_key("submitted", change, 1),
            "changelist_id": change,
            "review_version": 1,
            "kind": "submitted",
        }
        answer = invoke("ingest", _api_event(stack.signing_secret, "POST", "/v1/reviews", json.dumps(body).encode()))
        if answer.get("statusCode") != 201:
            raise SmokeFailed(f"ingest answered {answer.get('statusCode')} to a new review of {change}")
        jobs.append(json.loads(answer["body"])["job_id"])

    _drain(stack, [stage.value for stage in STAGE_ORDER], invoke, lambda: _all_ended(jobs))

    for job_id, analyzers in zip(jobs, SMOKE_CHANGES.values(), strict=True):
        answer = invoke("ingest", _api_event(stack.signing_secret, "GET", f"/v1/reviews/{job_id}", b""))
        job = json.loads(answer["body"])
        if job.get("status") != "succeeded":
            raise SmokeFailed(f"job {job_id} ended {job.get('status')!r}, not succeeded")
        _check_analyzers_ran(job_id, analyzers)
    mails = sorted(Path(stack.info.mailbox_dir).glob("*.eml"))
    if len(mails) < len(SMOKE_CHANGES):
        raise SmokeFailed(f"{len(mails)} emails in the mailbox for {len(SMOKE_CHANGES)} changes")
    report["jobs"], report["emails"] = jobs, len(mails)

    scheduled = {"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}}
    report["sweep"] = invoke("sweeper", scheduled)
    report["credential_age"] = invoke("credential-age", scheduled)
    report["rotation"] = _rotate_signing_key(stack, invoke)
    # The key the trigger hosts still hold is now the previous one: ingest still accepts it.
    ping = invoke("ingest", _api_event(stack.signing_secret, "GET", "/v1/ping", b""))
    if ping.get("statusCode") != 200 or json.loads(ping["body"]).get("signed_with") != "previous":
        raise SmokeFailed(f"after the rotation, ping with the old key answered {ping.get('statusCode')}")
    report["analyzers"] = sandbox.analyzer_versions("review")
    report["saved_parsers"] = sandbox.saved_hcl2_parser_parses("review")
    report["context_grammars"] = sandbox.context_grammars_parse("review")
    report["redaction_scan"] = sandbox.redaction_scans_in_one_pass("fetch")
    return report


def _check_analyzers_ran(job_id: str, expected: tuple[str, ...]) -> None:
    from p4review.stores.factory import get_data_access

    dal = get_data_access()
    job = dal.jobs.get_job(job_id)
    if job is None or job.artifacts.result_key is None:
        raise SmokeFailed(f"job {job_id} has no stored result")
    stored = dal.redacted_artifacts.get_json(job.artifacts.result_key)  # a StoredReview
    ran = ((stored.get("result") or {}).get("meta") or {}).get("analyzers", [])
    failed = [d for d in stored.get("diagnostics", []) if str(d.get("reason", "")).startswith("analyzer_")]
    if failed or not set(expected) <= set(ran):
        raise SmokeFailed(f"job {job_id}: analyzers ran {ran}, expected {list(expected)}; diagnostics {failed}")


def _api_event(secret: str, method: str, path: str, body: bytes) -> dict[str, Any]:
    from p4review.ingest.signing import signed_headers
    from p4review_dev.http_front import build_proxy_event

    headers = {"Content-Type": "application/json", **signed_headers(secret, int(time.time()), method, path, body)}
    return build_proxy_event(
        method=method, raw_path=path, headers=list(headers.items()), body=body, source_ip="127.0.0.1", stage="prod"
    )


def _all_ended(job_ids: list[str]) -> bool:
    from p4review.models.job import ACTIVE_STATUSES
    from p4review.stores.factory import get_data_access

    jobs = get_data_access().jobs
    return all((job := jobs.get_job(job_id)) is not None and job.status not in ACTIVE_STATUSES for job_id in job_ids)


def _drain(
    stack: Any, stages: list[str], invoke: Callable[[str, dict[str, Any]], Any], done: Callable[[], bool]
) -> None:
    """Lambda's SQS event source mapping, one batch at a time: receive, invoke, delete what the
    handler did not report as failed; until every job has ended (a retry's delayed message is
    waited for, not taken for an empty queue)."""
    from p4review.models.job import StageName
    from p4review_dev.sqs_poller import build_sqs_event

    sqs = _sqs_client(stack)
    deadline = time.monotonic() + DRAIN_SECONDS
    while not done():
        if time.monotonic() > deadline:
            raise SmokeFailed(f"the jobs did not end within {DRAIN_SECONDS:.0f} s")
        for stage in stages:
            queue = stack.resources.queue_for_stage(StageName(stage))
            messages = sqs.receive_message(
                QueueUrl=queue.url, MaxNumberOfMessages=queue.batch_size, WaitTimeSeconds=1, AttributeNames=["All"]
            ).get("Messages", [])
            if not messages:
                continue
            result = invoke(stage, build_sqs_event(messages, queue.arn)) or {}
            failed = {item["itemIdentifier"] for item in result.get("batchItemFailures", [])}
            for message in messages:
                if message["MessageId"] not in failed:
                    sqs.delete_message(QueueUrl=queue.url, ReceiptHandle=message["ReceiptHandle"])


def _sqs_client(stack: Any) -> Any:
    import boto3

    from p4review_dev.stack import REGION

    # The local stack's moto server takes any credentials.
    session = boto3.Session(region_name=REGION, aws_access_key_id="local", aws_secret_access_key="local")  # noqa: S106
    return session.client("sqs", endpoint_url=stack.info.aws_endpoint)


def _rotate_signing_key(stack: Any, invoke: Callable[[str, dict[str, Any]], Any]) -> list[str]:
    """Secrets Manager's four rotation steps with one new token, as the service calls them."""
    import uuid

    from p4review import resources as spec

    secret_id = stack.resources.secrets[spec.SIGNING_SECRET.key]
    token = str(uuid.uuid4())
    steps = ("createSecret", "setSecret", "testSecret", "finishSecret")
    return [
        invoke("rotate-signing", {"SecretId": secret_id, "ClientRequestToken": token, "Step": step})["outcome"]
        for step in steps
    ]

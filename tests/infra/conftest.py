"""Synthesizes the CDK app once per session (bundling skipped: no pip, no Docker).

Marked `infra`: these tests need Node.js (jsii)."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

# jsii prints a banner for Node versions it has not tested; must be set before jsii starts.
for _name in ("DEPRECATED", "UNTESTED", "END_OF_LIFE"):
    os.environ.setdefault(f"JSII_SILENCE_WARNING_{_name}_NODE_VERSION", "1")

REPO_ROOT = Path(__file__).resolve().parents[2]
for _path in (REPO_ROOT / "infra", REPO_ROOT / "layers"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

# `cdk synth` with bundling skipped for every stack: the deps layer's pip install never runs.
SKIP_BUNDLING = {"aws:cdk:bundling-stacks": []}


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if Path(str(item.fspath)).is_relative_to(Path(__file__).parent):
            item.add_marker(pytest.mark.infra)
            # Synthesis stages the core layer into build/ (one directory per checkout): under
            # `make test`'s two workers, every synthesizing test runs on the same one.
            item.add_marker(pytest.mark.xdist_group("infra"))


@dataclass(frozen=True)
class Synth:
    app: object
    stack: object
    template: object  # aws_cdk.assertions.Template
    outdir: Path


P4_LAYER_ARN = "arn:aws:lambda:us-east-1:123456789012:layer:p4-cli:3"


def _synth(environment: str, outdir: Path, **context: object) -> Synth:
    from aws_cdk.assertions import Template

    from p4review_infra.app import create_app

    app, stack = create_app(context={**SKIP_BUNDLING, "environment": environment, **context}, outdir=str(outdir))
    # Synthesizes the app, which runs the cdk-nag validation plugin: unacknowledged findings raise.
    template = Template.from_stack(stack)
    return Synth(app=app, stack=stack, template=template, outdir=outdir)


@pytest.fixture(scope="session")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    return _synth("dev", tmp_path_factory.mktemp("cdk-dev"))


@pytest.fixture(scope="session")
def prod(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    # prod also exercises the optional p4 CLI layer.
    return _synth("prod", tmp_path_factory.mktemp("cdk-prod"), p4LayerArn=P4_LAYER_ARN)


@pytest.fixture(scope="session")
def dev_audit(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    # The optional CloudTrail data-event trail, enabled the way the CLI passes it (`-c artifactAuditTrail=true`).
    return _synth("dev", tmp_path_factory.mktemp("cdk-dev-audit"), artifactAuditTrail="true")


def _shipped_prompt_version() -> str:
    from p4review.review.prompts import load_registry

    return sorted(load_registry().templates)[-1]  # any version in the registry will do


# Every review context key, given the ways they arrive: `-c key=value` strings, cdk.json numbers and JSON.
OPENAI_CONTEXT = {
    "llmProvider": "openai",
    "llmModel": "gpt-4o-mini",
    "llmBaseUrl": "https://llm.example.internal/v1",
    "llmStructuredOutput": "json_object",
    "reviewChunkTokens": "16000",
    "reviewJobTokens": 120_000,
    "reviewContextTokens": "900",
    "lineOutsideDiff": "flag",
    "noisePolicy": [{"prefix": "//depot/legacy/", "max_findings": 3}],
    "promptCanary": _shipped_prompt_version(),
    "promptCanaryPercent": "12.5",
    "findingsPerJobSlo": "1.5",
}
BEDROCK_PROFILE = "us.anthropic.claude-3-7-sonnet-20250219-v1:0"


@pytest.fixture(scope="session")
def openai(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    return _synth("dev", tmp_path_factory.mktemp("cdk-openai"), **OPENAI_CONTEXT)


@pytest.fixture(scope="session")
def bedrock(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    # A cross-region inference profile: the widest Bedrock grant (and its cdk-nag acknowledgment).
    return _synth("dev", tmp_path_factory.mktemp("cdk-bedrock"), llmProvider="bedrock", llmModel=BEDROCK_PROFILE)


@pytest.fixture(scope="session")
def p4_layer_arn() -> str:
    return P4_LAYER_ARN

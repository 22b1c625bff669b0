"""Builds the CDK app: one P4ReviewStack per environment, checked by cdk-nag's AwsSolutions pack.

`infra/app.py` (the `cdk.json` entry) and the tests both call `create_app`, so what the tests
synthesize is what `cdk synth` / `cdk deploy` produce."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from aws_cdk import App, Aspects, Environment, Tags, Validations
from cdk_nag import AwsSolutionsChecks

from p4review_infra.concurrency_config import ConcurrencyConfig
from p4review_infra.environment_context import EnvironmentContext
from p4review_infra.network_config import notify_network
from p4review_infra.notify_config import NotifyConfig
from p4review_infra.paths import CDK_JSON
from p4review_infra.redaction_config import redaction_env
from p4review_infra.retention_config import retention_env
from p4review_infra.review_config import ReviewConfig
from p4review_infra.rotation_config import RotationConfig
from p4review_infra.scanner_skips import ScannerSkips
from p4review_infra.stack import P4ReviewStack
from p4review_infra.swarm_config import SwarmConfig

DEFAULT_ENVIRONMENT = "dev"
# Used in resource and bucket names: lowercase, starts with a letter, short.
_ENV_NAME = re.compile(r"^[a-z][a-z0-9-]{0,15}$")


def cdk_json_context(path: Path = CDK_JSON) -> dict[str, Any]:
    """cdk.json's context (feature flags, default environment). The CLI passes it itself; a plain
    `python infra/app.py` or a test does not, so it is the App's default context (CLI values win)."""
    try:
        return dict(json.loads(path.read_text()).get("context", {}))
    except FileNotFoundError:
        return {}


def context_flag(value: Any) -> bool:
    """A boolean context value: `-c key=true` arrives as the string "true", cdk.json or a test
    may pass a real bool."""
    if isinstance(value, bool):
        return value
    if value is None:
        return False
    text = str(value).strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no", ""):
        return False
    raise ValueError(f"boolean context value expected, got {value!r}")


def stack_name(environment: str) -> str:
    return f"p4review-{environment}"


def create_app(context: dict[str, Any] | None = None, outdir: str | None = None) -> tuple[App, P4ReviewStack]:
    app = App(context={**cdk_json_context(), **(context or {})}, outdir=outdir)
    environment = str(app.node.try_get_context("environment") or DEFAULT_ENVIRONMENT)
    if not _ENV_NAME.match(environment):
        raise ValueError(f"environment {environment!r} must match {_ENV_NAME.pattern}")

    account, region = os.environ.get("CDK_DEFAULT_ACCOUNT"), os.environ.get("CDK_DEFAULT_REGION")
    # Every key below may also come from the environment's block of `environments` (environment_context.py).
    get = EnvironmentContext(app.node.try_get_context, environment)
    stack = P4ReviewStack(
        app,
        stack_name(environment),
        environment=environment,
        p4_layer_arn=get("p4LayerArn"),
        log_level=str(get("logLevel") or "INFO"),
        alarm_email=get("alarmEmail"),
        artifact_audit_trail=context_flag(get("artifactAuditTrail")),
        review_config=ReviewConfig.from_context(get),
        notify_config=NotifyConfig.from_context(get),
        redaction_env=redaction_env(get),
        swarm_config=SwarmConfig.from_context(get),
        notify_network=notify_network(get),
        concurrency=ConcurrencyConfig.from_context(get),
        retention_env=retention_env(get),
        rotation_config=RotationConfig.from_context(get),
        env=Environment(account=account, region=region) if account and region else None,
        description=f"p4review ({environment}): automated code review for Perforce changelists",
    )
    get.check_every_key_was_read()
    Tags.of(app).add("project", "p4review")
    Tags.of(app).add("environment", environment)

    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    # checkov and cfn-lint suppressions that hold for every resource of a type (scanner_skips.py).
    Aspects.of(app).add(ScannerSkips())
    return app, stack

"""Helix Swarm integration from CDK context (docs/infra.md, "Swarm configuration").

Two features, each off unless switched on (docs/swarm.md, docs/swarm-workflow-test.md):

* `swarmComments`: notify posts findings as Swarm review comments with a service user's ticket
  (the `swarm` secret, read by notify only);
* `swarmWorkflowTests`: the `POST /v1/swarm/tests` route on ingest, authenticated by a shared token
  (the `swarm-test-token` secret, read by ingest only); notify posts the test's verdict to the
  callback URL Swarm gave.

Values are checked at synth with the `SwarmBlock` model the functions use at cold start, so a deploy
cannot ship a setting the functions would refuse."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any
from urllib.parse import urlsplit

from p4review.resources import SecretSpec
from p4review.settings.blocks import SwarmBlock, SwarmTestRouteBlock
from p4review_infra.review_config import ContextError, _text, settings_from_context

# The two secrets exist only with their feature on; named like the others, p4review/<env>/<key>.
SWARM_SECRET = SecretSpec(
    key="swarm",
    env_var=SwarmBlock.env_var("swarm_secret_id"),
    description="Helix Swarm service user for review comments: JSON {user, ticket} (a long-lived ticket).",
)
SWARM_TEST_TOKEN_SECRET = SecretSpec(
    key="swarm-test-token",
    env_var=SwarmTestRouteBlock.env_var("swarm_test_secret_id"),
    description="Shared token of Swarm's workflow test for POST /v1/swarm/tests (AWSCURRENT and AWSPREVIOUS accepted).",
)

# Switches (not settings): what the stack builds.
COMMENTS_KEY = "swarmComments"
WORKFLOW_TESTS_KEY = "swarmWorkflowTests"
URL_KEY = "swarmUrl"

# Context key -> SwarmBlock field; the env var is the field's alias, set only when the key is given.
COMMENT_FIELDS = {
    "swarmApi": "swarm_api",
    "swarmCreateReviews": "swarm_create_reviews",
    "swarmTaskAt": "swarm_task_at",
    "swarmTimeoutSeconds": "swarm_timeout_seconds",
}
WORKFLOW_TEST_FIELDS = {"swarmTestFailAt": "swarm_test_fail_at"}
CONTEXT_FIELDS = {URL_KEY: "swarm_url", **COMMENT_FIELDS, **WORKFLOW_TEST_FIELDS}
ENV_VARS = {key: SwarmBlock.env_var(name) for key, name in CONTEXT_FIELDS.items()}
URL_ENV = ENV_VARS[URL_KEY]


def context_switch(key: str, value: Any) -> bool:
    """A feature switch: `-c key=true` arrives as text, cdk.json or a test may give a bool."""
    text = _text(value).lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no", ""):
        return False
    raise ContextError(f"context {key}={value!r}: expected true or false")


@dataclass(frozen=True)
class SwarmConfig:
    comments: bool = False
    workflow_tests: bool = False
    # Each function's Swarm variables (secret ids excepted: `reads_secret` sets those with the grant).
    notify_env: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    ingest_env: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def secret_specs(self) -> tuple[SecretSpec, ...]:
        """The secrets the switched-on features need (none by default)."""
        specs = []
        if self.comments:
            specs.append(SWARM_SECRET)
        if self.workflow_tests:
            specs.append(SWARM_TEST_TOKEN_SECRET)
        return tuple(specs)

    @classmethod
    def from_context(cls, get: Callable[[str], Any]) -> SwarmConfig:
        """`get` is `app.node.try_get_context`. Raises ContextError naming the key and the rule."""
        comments = context_switch(COMMENTS_KEY, get(COMMENTS_KEY))
        workflow_tests = context_switch(WORKFLOW_TESTS_KEY, get(WORKFLOW_TESTS_KEY))
        given = {key: text for key in CONTEXT_FIELDS if (text := _text(get(key)))}
        for keys, switch, on in (
            (COMMENT_FIELDS, COMMENTS_KEY, comments),
            (WORKFLOW_TEST_FIELDS, WORKFLOW_TESTS_KEY, workflow_tests),
        ):
            stray = [key for key in keys if key in given]
            if stray and not on:
                raise ContextError(f"context {', '.join(stray)} applies only with {switch}=true")
        url = given.get(URL_KEY)
        if (comments or workflow_tests) and not url:
            switch = COMMENTS_KEY if comments else WORKFLOW_TESTS_KEY
            raise ContextError(
                f"context {URL_KEY} is required with {switch}=true: Swarm's base URL (-c {URL_KEY}=https://swarm.example.com)"
            )
        if url:
            _check_url(url)

        settings = _validate({ENV_VARS[key]: text for key, text in given.items()})
        # Every given setting is notify's (a setting of a feature that is off was refused above):
        # as given, but a boolean as the function's canonical text ("yes" -> "true"). swarmUrl alone
        # only adds the Swarm link to notify's emails; ingest checks callback URLs against it only
        # when the workflow-test route exists.
        notify_env = {
            ENV_VARS[key]: _env_text(value)
            if isinstance(value := getattr(settings, CONTEXT_FIELDS[key]), bool)
            else text
            for key, text in given.items()
        }
        ingest_env = {URL_ENV: notify_env[URL_ENV]} if workflow_tests else {}
        return cls(
            comments=comments,
            workflow_tests=workflow_tests,
            notify_env=MappingProxyType(notify_env),
            ingest_env=MappingProxyType(ingest_env),
        )


def _check_url(url: str) -> None:
    """An https base URL without credentials, query or fragment: the ticket travels in its basic
    auth header, and callback URLs must be on its scheme, host and port."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        parts, port = None, None
    problem = None
    if parts is None or parts.scheme != "https" or not parts.hostname:
        problem = "expected an https:// URL"
    elif parts.username is not None or parts.password is not None:
        problem = "must not carry user information"
    elif parts.query or parts.fragment:
        problem = "must not have a query or fragment"
    elif port == 0:
        problem = "invalid port"
    if problem:
        raise ContextError(f"context {URL_KEY}={url!r}: {problem} (Swarm's base URL)")


def _env_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _validate(env: dict[str, str]) -> SwarmBlock:
    return settings_from_context(env, ENV_VARS, SwarmBlock)

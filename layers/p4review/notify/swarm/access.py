"""Notify's Swarm side, built from settings and secrets: the comment channel (when
P4REVIEW_SWARM_SECRET_ID names the service user's ticket) and the workflow test's verdict (when
the job came from a Swarm test, POST /v1/swarm/tests). docs/swarm.md."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from p4review.errors import ConfigError
from p4review.models.job import ReviewJob
from p4review.notify.settings import NotifySettings
from p4review.notify.swarm.channel import SwarmChannel
from p4review.ports import OutboxRepository, SecretReader
from p4review.settings.blocks import SwarmBlock


class SwarmCredentials(BaseModel):
    """The Swarm secret: a service user and its long-lived ticket (basic auth user:ticket)."""

    model_config = ConfigDict(extra="ignore")

    user: str = Field(min_length=1)
    ticket: str = Field(min_length=1)


def swarm_comments_enabled(settings: SwarmBlock) -> bool:
    return bool(settings.swarm_secret_id)


SWARM_URL_PROPERTY = "P4.Swarm.URL"


def swarm_url(settings: NotifySettings, secrets: SecretReader) -> str:
    """P4REVIEW_SWARM_URL, else the URL Swarm publishes on the Perforce server (the
    P4.Swarm.URL property, `p4 property -l -n`), as Swarm's own trigger finds it."""
    if settings.swarm_url:
        return settings.swarm_url
    from p4review.perforce.access import build_change_fetcher

    found = build_change_fetcher(settings, secrets).server_property(SWARM_URL_PROPERTY)
    if not found:
        raise ConfigError(f"P4REVIEW_SWARM_URL is not set and the server has no {SWARM_URL_PROPERTY} property")
    return found


def build_swarm_channel(
    settings: SwarmBlock,
    secrets: SecretReader,
    outbox: OutboxRepository,
    lock_holder: Callable[[ReviewJob], tuple[str, int]],
    base_url: str,
) -> SwarmChannel:
    """The comment channel; ConfigError names what is missing (never the ticket)."""
    from p4review.notify.swarm.client import SwarmClient  # only where Swarm is configured (cold start)

    try:
        credentials = SwarmCredentials.model_validate(secrets.get_json(settings.needed("swarm_secret_id")))
    except ValidationError:
        raise ConfigError("the Swarm secret needs a user and a ticket") from None
    client = SwarmClient(
        base_url,
        credentials.user,
        credentials.ticket,
        api=settings.swarm_api,
        timeout_seconds=settings.swarm_timeout_seconds,
    )
    return SwarmChannel(client, outbox, create_reviews=settings.swarm_create_reviews, lock_holder=lock_holder)


def task_threshold(settings: SwarmBlock) -> str | None:
    return None if settings.swarm_task_at == "never" else settings.swarm_task_at


def post_test_verdict(request: Any, settings: SwarmBlock) -> None:
    from p4review.notify.swarm.callback import post_verdict

    post_verdict(request, swarm_url=settings.needed("swarm_url"))

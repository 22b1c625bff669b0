"""Each function's settings model (the one its handler parses at cold start), and the synth-time
check of the environment the stack builds for it: every variable the model requires is set, and
none is set that the model does not read. Values are validated through the model too; a value
that is a deploy-time token (a queue URL, the SSM allow-list) stands in as a valid placeholder."""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import Token

from p4review.errors import ConfigError
from p4review.fetch.settings import FetchSettings
from p4review.ingest.settings import IngestSettings
from p4review.notify.settings import NotifySettings
from p4review.ops.settings import CredentialAgeSettings, RotationSettings, SweeperSettings
from p4review.review.settings import ReviewSettings
from p4review.settings.blocks import SettingsBlock

FUNCTION_SETTINGS: Mapping[str, type[SettingsBlock]] = {
    "ingest": IngestSettings,
    "fetch": FetchSettings,
    "review": ReviewSettings,
    "notify": NotifySettings,
    "sweeper": SweeperSettings,
    "rotate-signing": RotationSettings,
    "credential-age": CredentialAgeSettings,
}
# The service's variables; the rest (POWERTOOLS_*, LOG_LEVEL, AWS_*) belong to the runtime.
PREFIX = "P4REVIEW_"
# A valid stand-in for a value known only at deploy (everything else: any non-empty text).
TOKEN_PLACEHOLDERS = {"P4REVIEW_DEPOT_ALLOW_LIST": "//depot/...", "P4REVIEW_CREDENTIAL_AGE_SECRETS": "{}"}


def service_env(environment: Mapping[str, object], placeholder=lambda name, value: value) -> dict[str, str]:
    return {name: placeholder(name, value) for name, value in environment.items() if name.startswith(PREFIX)}


def check_environment(function: str, environment: Mapping[str, object], *, is_token=Token.is_unresolved) -> None:
    """Raise ConfigError naming the variable a function's environment lacks, or carries unread."""
    model = FUNCTION_SETTINGS[function]
    env = service_env(
        environment,
        lambda name, value: TOKEN_PLACEHOLDERS.get(name, "deploy-time") if is_token(value) else str(value),
    )
    unread = sorted(set(env) - model.env_vars())
    if unread:
        raise ConfigError(f"the {function} function's environment sets {', '.join(unread)}, which it does not read")
    try:
        model.from_env(env)
    except ConfigError as exc:
        raise ConfigError(f"the {function} function's environment: {exc.message}") from None

"""The operations functions' settings: what each reads, parsed when its handler is imported."""

from p4review.settings.blocks import (
    CredentialAgeBlock,
    EnvironmentBlock,
    FetchQueueBlock,
    JobsTableBlock,
    NotifyQueueBlock,
    RawArtifactsBlock,
    RedactedArtifactsBlock,
    ReviewQueueBlock,
    SweepBlock,
)


class SweeperSettings(
    EnvironmentBlock,
    JobsTableBlock,
    FetchQueueBlock,
    ReviewQueueBlock,
    NotifyQueueBlock,
    RawArtifactsBlock,  # TTL verification lists every bucket's oldest prefixes
    RedactedArtifactsBlock,
    SweepBlock,
):
    """sweeper: the active jobs, every stage queue, every bucket's lifecycle."""


class CredentialAgeSettings(EnvironmentBlock, CredentialAgeBlock):
    """credential-age: the secrets whose versions it lists."""


class RotationSettings(EnvironmentBlock):
    """rotate-signing: the secret comes in the rotation event; only the environment is read."""

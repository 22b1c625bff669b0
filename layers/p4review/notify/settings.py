"""The notify function's settings: what it reads, parsed when its handler is imported."""

from p4review.settings.blocks import (
    EmailBlock,
    JobsTableBlock,
    LeaseBlock,
    NotifyDlqBlock,
    NotifyQueueBlock,
    OutboxTableBlock,
    P4Block,
    RedactedArtifactsBlock,
    SecretCacheBlock,
    SwarmBlock,
)


class NotifySettings(
    P4Block,  # `p4 user -o` for the owner's email
    LeaseBlock,
    SecretCacheBlock,
    JobsTableBlock,
    OutboxTableBlock,
    NotifyQueueBlock,
    NotifyDlqBlock,
    RedactedArtifactsBlock,
    EmailBlock,
    SwarmBlock,
):
    """notify: the stored result -> email and Swarm, through the outbox."""

"""The fetch function's settings: what it reads, parsed when its handler is imported."""

from p4review.settings.blocks import (
    AnalyzerSelectionBlock,
    FetchDlqBlock,
    FetchQueueBlock,
    JobsTableBlock,
    LeaseBlock,
    P4Block,
    RawArtifactsBlock,
    RedactedArtifactsBlock,
    RedactionBlock,
    ReviewQueueBlock,
    SecretCacheBlock,
)


class FetchSettings(
    P4Block,
    LeaseBlock,
    SecretCacheBlock,
    JobsTableBlock,
    FetchQueueBlock,
    FetchDlqBlock,
    ReviewQueueBlock,
    RawArtifactsBlock,
    RedactedArtifactsBlock,
    RedactionBlock,
    AnalyzerSelectionBlock,  # the analyzers' config files travel with the change
):
    """fetch: p4 -> raw and redacted snapshots -> the review queue."""

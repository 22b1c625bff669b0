"""The review function's settings: what it reads, parsed when its handler is imported."""

from p4review.settings.blocks import (
    AnalyzersBlock,
    EnvironmentBlock,
    JobsTableBlock,
    LeaseBlock,
    LlmBlock,
    NotifyQueueBlock,
    RedactedArtifactsBlock,
    RedactionBlock,
    ReviewDlqBlock,
    ReviewQueueBlock,
    ReviewTuningBlock,
    SecretCacheBlock,
)


class ReviewerSettings(EnvironmentBlock, RedactionBlock, LlmBlock, ReviewTuningBlock, AnalyzersBlock):
    """What building a review reads (review/setup.py): the review function's and `p4review
    review-diff`'s, which reviews a lone diff without the pipeline's tables and queues."""


class ReviewSettings(
    ReviewerSettings,
    LeaseBlock,
    SecretCacheBlock,
    JobsTableBlock,  # jobs, the history of a versioned rerun, the shared token budget
    ReviewQueueBlock,
    ReviewDlqBlock,
    NotifyQueueBlock,
    RedactedArtifactsBlock,
):
    """review: the redacted snapshot -> a ReviewResult -> the notify queue."""

"""The ingest function's settings: what it reads, parsed when its handler is imported."""

from p4review.settings.blocks import (
    EnvironmentBlock,
    FetchQueueBlock,
    JobsTableBlock,
    OutboxTableBlock,
    SecretCacheBlock,
    SwarmTestRouteBlock,
    TriggerRequestBlock,
)


class IngestSettings(
    EnvironmentBlock,
    SecretCacheBlock,
    JobsTableBlock,
    OutboxTableBlock,  # GET /v1/reviews/{job_id} reports deliveries
    FetchQueueBlock,
    TriggerRequestBlock,
    SwarmTestRouteBlock,  # POST /v1/swarm/tests, on when both are set
):
    """ingest: the signed trigger, the jobs it creates and the fetch queue."""

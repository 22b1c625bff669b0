"""The operations functions' own stores, built on first use from the shared data access: the
sweeper's scan of active jobs, the retention backfill and the secrets' version history."""

from __future__ import annotations

from functools import cached_property, lru_cache
from typing import TYPE_CHECKING

from p4review.settings.blocks import StoresBlock
from p4review.stores.factory import DataAccess

if TYPE_CHECKING:
    from p4review.ops.retention_backfill import DynamoRetentionBackfill
    from p4review.ops.secret_versions import SecretVersions
    from p4review.ops.sweeper import SweepStore


class OpsStores:
    def __init__(self, data_access: DataAccess):
        self.data_access = data_access

    @property
    def settings(self) -> StoresBlock:
        return self.data_access.settings

    @cached_property
    def sweep_store(self) -> SweepStore:
        from p4review.ops.sweep_store import DynamoSweepRepository

        return DynamoSweepRepository(self.data_access.dynamodb, self.settings.needed("jobs_table"))

    @cached_property
    def retention_backfill(self) -> DynamoRetentionBackfill:  # operator: `p4review retention backfill`
        from p4review.ops.retention_backfill import DynamoRetentionBackfill

        return DynamoRetentionBackfill(
            self.data_access.dynamodb,
            self.settings.needed("jobs_table"),
            self.settings.needed("outbox_table"),
            self.settings.retention_days,
        )

    @cached_property
    def secret_versions(self) -> SecretVersions:  # signing-key rotation and the credential-age check
        from p4review.ops.secret_versions import SecretVersions

        return SecretVersions(self.data_access.client("secretsmanager"))


@lru_cache(maxsize=1)
def ops_stores(data_access: DataAccess) -> OpsStores:
    """One per data access (a new one after `reset_data_access`)."""
    return OpsStores(data_access)

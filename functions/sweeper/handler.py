"""sweeper: scheduled -> requeue expired leases and lost hand-offs, publish backlog metrics,
verify that artifact TTLs are enforced."""

from dataclasses import asdict
from datetime import timedelta

from p4review.observability import logger, metrics
from p4review.ops.retention import check_artifact_ttls
from p4review.ops.settings import SweeperSettings
from p4review.ops.stores import ops_stores
from p4review.ops.sweeper import publish_sweep_metrics, sweep
from p4review.pipeline.bootstrap import cold_start
from p4review.stores.factory import get_data_access

# Cold start (pipeline/bootstrap.py): P4REVIEW_FAULTS outside test, or a missing or invalid
# setting, fails the import naming the variable.
SETTINGS = cold_start(SweeperSettings)


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
def lambda_handler(event, context):
    dal = get_data_access()
    stranded_after = timedelta(seconds=SETTINGS.sweep_stranded_seconds)
    report = sweep(ops_stores(dal).sweep_store, dal.queues, stranded_after=stranded_after)
    publish_sweep_metrics(report)
    logger.info("sweep finished", extra=asdict(report))
    return {**asdict(report), "ttl_violations": check_artifact_ttls(dal.artifact_retention)}

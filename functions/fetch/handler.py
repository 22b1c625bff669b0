"""fetch: SQS -> read the changelist through p4 -> change artifact -> review queue."""

from p4review.fetch.settings import FetchSettings
from p4review.fetch.stage import FetchWork
from p4review.observability import logger, metrics
from p4review.pipeline.bootstrap import cold_start
from p4review.pipeline.sqs_batch import handle_stage_batch
from p4review.stores.factory import get_data_access

# Cold start (pipeline/bootstrap.py): P4REVIEW_FAULTS outside test, or a missing or invalid
# setting, fails the import naming the variable.
SETTINGS = cold_start(FetchSettings)


def _work() -> FetchWork:
    dal = get_data_access()
    return FetchWork(SETTINGS, dal.raw_artifacts, dal.redacted_artifacts, dal.secrets)


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
def lambda_handler(event, context):
    return handle_stage_batch(event, context, _work, SETTINGS)

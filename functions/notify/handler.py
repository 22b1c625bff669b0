"""notify: SQS -> email the owner through the outbox -> job succeeded."""

from p4review.notify.settings import NotifySettings
from p4review.notify.stage import NotifyWork
from p4review.observability import logger, metrics
from p4review.pipeline.bootstrap import cold_start
from p4review.pipeline.sqs_batch import handle_stage_batch
from p4review.stores.factory import get_data_access

# Cold start (pipeline/bootstrap.py): P4REVIEW_FAULTS outside test, or a missing or invalid
# setting, fails the import naming the variable.
SETTINGS = cold_start(NotifySettings)


def _work() -> NotifyWork:
    dal = get_data_access()
    return NotifyWork(SETTINGS, dal.redacted_artifacts, dal.outbox, dal.secrets)


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
def lambda_handler(event, context):
    return handle_stage_batch(event, context, _work, SETTINGS)

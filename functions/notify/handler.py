"""notify: SQS -> email the owner through the outbox -> job succeeded."""

from p4review.notify.stage import NotifyWork
from p4review.observability import logger, metrics
from p4review.pipeline.sqs_batch import handle_stage_batch
from p4review.settings.service import get_settings
from p4review.stores.factory import get_data_access


def _work() -> NotifyWork:
    dal = get_data_access()
    return NotifyWork(get_settings(), dal.redacted_artifacts, dal.outbox, dal.secrets)


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
def lambda_handler(event, context):
    return handle_stage_batch(event, context, _work)

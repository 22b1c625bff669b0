"""fetch: SQS -> read the changelist through p4 -> change artifact -> review queue."""

from p4review.fetch.stage import FetchWork
from p4review.observability import logger, metrics
from p4review.pipeline.sqs_batch import handle_stage_batch
from p4review.settings.service import get_settings
from p4review.stores.factory import get_data_access


def _work() -> FetchWork:
    dal = get_data_access()
    return FetchWork(get_settings(), dal.raw_artifacts, dal.redacted_artifacts, dal.secrets)


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
def lambda_handler(event, context):
    return handle_stage_batch(event, context, _work)

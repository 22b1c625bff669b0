"""review: SQS -> ReviewResult from the redacted change artifact -> notify queue."""

from p4review.config import get_settings
from p4review.dal.factory import get_data_access
from p4review.observability import logger, metrics
from p4review.runtime.sqs_batch import handle_stage_batch
from p4review.stages.review import ReviewWork


def _work() -> ReviewWork:
    return ReviewWork(get_data_access().redacted_artifacts, get_settings().redaction_policy())


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
def lambda_handler(event, context):
    return handle_stage_batch(event, context, _work)

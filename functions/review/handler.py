"""review: SQS -> ReviewResult from the redacted change artifact -> notify queue."""

from p4review.observability import logger, metrics
from p4review.pipeline.sqs_batch import handle_stage_batch
from p4review.review.setup import build_review_work
from p4review.review.stage import ReviewWork
from p4review.settings.service import get_settings
from p4review.stores.factory import get_data_access

_built: tuple[object, object, ReviewWork] | None = None


def _work() -> ReviewWork:
    # Built once per (settings, data access), i.e. per cold start in Lambda: the provider
    # client and its cached key are reused across invocations.
    global _built
    settings, dal = get_settings(), get_data_access()
    if _built is None or _built[0] is not settings or _built[1] is not dal:
        _built = (settings, dal, build_review_work(settings, dal))
    return _built[2]


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
def lambda_handler(event, context):
    return handle_stage_batch(event, context, _work)

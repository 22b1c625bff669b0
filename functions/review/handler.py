"""review: SQS -> ReviewResult from the redacted change artifact -> notify queue."""

from p4review.observability import logger, metrics
from p4review.pipeline.bootstrap import cold_start
from p4review.pipeline.sqs_batch import handle_stage_batch
from p4review.review.settings import ReviewSettings
from p4review.review.setup import build_review_work
from p4review.review.stage import ReviewWork
from p4review.stores.factory import get_data_access

# Cold start (pipeline/bootstrap.py): P4REVIEW_FAULTS outside test, or a missing or invalid
# setting, fails the import naming the variable.
SETTINGS = cold_start(ReviewSettings)

_built: tuple[object, ReviewWork] | None = None


def _work() -> ReviewWork:
    # Built once per data access, i.e. per cold start in Lambda: the provider client and its
    # cached key are reused across invocations.
    global _built
    dal = get_data_access()
    if _built is None or _built[0] is not dal:
        _built = (dal, build_review_work(SETTINGS, dal))
    return _built[1]


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
def lambda_handler(event, context):
    return handle_stage_batch(event, context, _work, SETTINGS)

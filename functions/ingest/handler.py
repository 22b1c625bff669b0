"""ingest: API Gateway -> create or read a review job."""

from aws_lambda_powertools.logging import correlation_paths

from p4review.ingest.app import SETTINGS_CONTEXT_KEY, app
from p4review.ingest.settings import IngestSettings
from p4review.observability import logger, metrics
from p4review.pipeline.bootstrap import cold_start

# Cold start (pipeline/bootstrap.py): P4REVIEW_FAULTS outside test, or a missing or invalid
# setting, fails the import naming the variable.
SETTINGS = cold_start(IngestSettings)


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST, clear_state=True)
@metrics.log_metrics
def lambda_handler(event, context):
    app.append_context(**{SETTINGS_CONTEXT_KEY: SETTINGS})
    return app.resolve(event, context)

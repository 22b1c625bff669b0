"""ingest: API Gateway -> create or read a review job."""

from aws_lambda_powertools.logging import correlation_paths

from p4review.ingest.app import app
from p4review.observability import logger, metrics


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST, clear_state=True)
@metrics.log_metrics
def lambda_handler(event, context):
    return app.resolve(event, context)

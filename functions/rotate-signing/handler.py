"""rotate_signing: Secrets Manager -> one step of the trigger-signing secret's rotation
(createSecret, setSecret, testSecret, finishSecret; ops/credentials.py)."""

from p4review.observability import logger
from p4review.ops.credentials import rotate_signing_secret
from p4review.ops.stores import ops_stores
from p4review.stores.factory import get_data_access


@logger.inject_lambda_context(clear_state=True)
def lambda_handler(event, context):
    return {"outcome": rotate_signing_secret(event, ops_stores(get_data_access()).secret_versions)}

"""rotate_signing: Secrets Manager -> one step of the trigger-signing secret's rotation
(createSecret, setSecret, testSecret, finishSecret; runtime/credentials.py)."""

from p4review.dal.factory import get_data_access
from p4review.observability import logger
from p4review.runtime.credentials import rotate_signing_secret


@logger.inject_lambda_context(clear_state=True)
def lambda_handler(event, context):
    return {"outcome": rotate_signing_secret(event, get_data_access().secret_versions)}

"""rotate_signing: Secrets Manager -> one step of the trigger-signing secret's rotation
(createSecret, setSecret, testSecret, finishSecret; ops/credentials.py)."""

from p4review.observability import logger
from p4review.ops.credentials import rotate_signing_secret
from p4review.ops.settings import RotationSettings
from p4review.ops.stores import ops_stores
from p4review.pipeline.bootstrap import cold_start
from p4review.stores.factory import get_data_access

# Cold start (pipeline/bootstrap.py): P4REVIEW_FAULTS outside test, or a missing or invalid
# setting, fails the import naming the variable.
SETTINGS = cold_start(RotationSettings)


@logger.inject_lambda_context(clear_state=True)
def lambda_handler(event, context):
    return {"outcome": rotate_signing_secret(event, ops_stores(get_data_access()).secret_versions)}

"""credential_age: scheduled -> publish how old each secret's current value is (CredentialAgeDays
{Secret}, alarmed above the maximum age: spec SEC-20). Lists versions only, never reads a value."""

from p4review.observability import logger
from p4review.ops.credentials import publish_credential_ages
from p4review.ops.settings import CredentialAgeSettings
from p4review.ops.stores import ops_stores
from p4review.pipeline.bootstrap import cold_start
from p4review.stores.factory import get_data_access

# Cold start (pipeline/bootstrap.py): P4REVIEW_FAULTS outside test, or a missing or invalid
# setting, fails the import naming the variable.
SETTINGS = cold_start(CredentialAgeSettings)


@logger.inject_lambda_context(clear_state=True)
def lambda_handler(event, context):
    secret_ids = SETTINGS.credential_age_secrets
    return {"age_days": publish_credential_ages(secret_ids, ops_stores(get_data_access()).secret_versions)}

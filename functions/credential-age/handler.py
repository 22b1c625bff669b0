"""credential_age: scheduled -> publish how old each secret's current value is (CredentialAgeDays
{Secret}, alarmed above the maximum age: spec SEC-20). Lists versions only, never reads a value."""

from p4review.observability import logger
from p4review.ops.credentials import publish_credential_ages
from p4review.ops.stores import ops_stores
from p4review.settings.service import get_settings
from p4review.stores.factory import get_data_access


@logger.inject_lambda_context(clear_state=True)
def lambda_handler(event, context):
    secret_ids = get_settings().credential_age_secrets or {}
    return {"age_days": publish_credential_ages(secret_ids, ops_stores(get_data_access()).secret_versions)}

"""The email provider one notify run uses (SMTP or SES), built from settings and secrets.

SMTP credentials come from the SMTP secret (cached by the secrets reader). When the relay
refuses them, `refresh()` drops the cache, reads the secret's AWSCURRENT version again and says
whether it changed: a rotation has happened, and the caller tries once more with the new
password. An unchanged secret means the credentials are simply wrong (an operator's problem)."""

from __future__ import annotations

from p4review.metric_names import MetricName
from p4review.notify.email.sender import EmailSender, TimedSender
from p4review.notify.email.smtp import SmtpSender, SmtpSettings
from p4review.observability import logger, metrics
from p4review.ports import SecretReader
from p4review.settings.blocks import EmailBlock


class EmailTransport:
    def __init__(self, settings: EmailBlock, secrets: SecretReader):
        self._settings = settings
        self._secrets = secrets
        self.provider = settings.email_provider
        self._smtp: SmtpSettings | None = None
        self.sender, self.from_address = self._build()

    def _build(self) -> tuple[EmailSender, str]:
        if self.provider == "ses":
            # Imported only where it is used (cold start).
            from p4review.notify.email.ses import SesSender, make_ses_client

            # No ses_region: boto3's own resolution (the function's AWS_REGION).
            client = make_ses_client(self._settings.ses_region)
            return (
                TimedSender(SesSender(client, configuration_set=self._settings.ses_configuration_set), "ses"),
                self._settings.needed("email_from"),
            )
        self._smtp = SmtpSettings.model_validate(self._secrets.get_json(self._settings.needed("smtp_secret_id")))
        return TimedSender(SmtpSender(self._smtp), "smtp"), self._smtp.from_address

    def refresh(self) -> bool:
        """After an authentication failure: True when the SMTP secret changed since it was read
        (the sender now uses the new one); False when there is nothing new to try."""
        if self.provider != "smtp":
            return False
        secret_id = self._settings.needed("smtp_secret_id")
        self._secrets.invalidate(secret_id)
        fresh = SmtpSettings.model_validate(self._secrets.get_json(secret_id))
        if fresh == self._smtp:
            return False
        logger.info("SMTP credentials were refused and the secret has a new version: using it")
        metrics.add_metric(name=MetricName.SMTP_CREDENTIALS_REFRESHED, unit="Count", value=1)
        self._smtp = fresh
        self.sender, self.from_address = TimedSender(SmtpSender(fresh), "smtp"), fresh.from_address
        return True

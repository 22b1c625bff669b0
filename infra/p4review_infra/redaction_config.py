"""The redaction policy from CDK context (docs/infra.md, "Redaction policy").

Fetch redacts with it and review's pre-submit guard re-checks with it, so both functions get the
same variables. Secure by default: e-mail addresses, internal host names and private addresses
are redacted unless `-c redactPrivateByDefault=false`. `redactHostSuffixes` and `redactCidrs`
(comma-separated) add the deployment's own. Checked at synth by the code the functions run."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from p4review.errors import ConfigError
from p4review.settings.blocks import RedactionBlock
from p4review_infra.review_config import ContextError

CONTEXT_FIELDS = {
    "redactPrivateByDefault": "redact_private_by_default",
    "redactHostSuffixes": "redact_host_suffixes",
    "redactCidrs": "redact_cidrs",
}
ENV_VARS = {key: RedactionBlock.env_var(name) for key, name in CONTEXT_FIELDS.items()}


def _text(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ",".join(str(item) for item in value)
    return str(value).lower() if isinstance(value, bool) else str(value)


def redaction_env(get: Callable[[str], Any]) -> dict[str, str]:
    """The functions' environment for the context's policy (only the keys that were set)."""
    env = {ENV_VARS[key]: _text(value) for key in CONTEXT_FIELDS if (value := get(key)) is not None}
    try:
        RedactionBlock.model_validate(env).redaction_policy()
    except ValidationError as exc:
        error = exc.errors()[0]
        key = {alias: key for key, alias in ENV_VARS.items()}.get(str(error["loc"][0]), error["loc"][0])
        raise ContextError(f"context {key}={error['input']!r}: {error['msg']}") from None
    except ConfigError as exc:
        raise ContextError(f"context redactHostSuffixes/redactCidrs: {exc}") from None
    return env

"""The body a Helix Swarm workflow test posts to `POST /v1/swarm/tests` (docs/swarm.md "Workflow test").

Swarm fills a test definition's body template with its special arguments ({review}, {version},
{change}, {status}, {pass}, {fail}, {update}, ...), URL-encoded or as JSON. Substituted values
are text, so numbers arrive as digit strings (`"12345"`) as well as JSON integers; both are read
as integers, nothing else is coerced. {testRunId}, an id kept as text, is read the other way: a
JSON integer (an unquoted `{testRunId}`) becomes its digits. The field names are Swarm's argument
names."""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, StrictInt, StringConstraints


def _digits_to_int(value: Any) -> Any:
    """`"123"` -> 123 (ASCII digits only, at most 10 of them); anything else is left for the
    strict integer check to refuse (a bool, a float, "1e3", "١٢٣", " 12")."""
    if isinstance(value, str) and 0 < len(value) <= 10 and value.isascii() and value.isdigit():
        return int(value)
    return value


# A Perforce changelist number (a Swarm review id is one too): a positive 32-bit integer.
SwarmChange = Annotated[StrictInt, BeforeValidator(_digits_to_int), Field(ge=1, le=2_147_483_647)]
SwarmVersion = Annotated[StrictInt, BeforeValidator(_digits_to_int), Field(ge=1, le=1_000_000)]
# Swarm's callback URLs: printable ASCII, no spaces (the host is checked against P4REVIEW_SWARM_URL
# by ingest/swarm_intake.py, which needs the settings).
CallbackUrl = Annotated[str, StringConstraints(min_length=1, max_length=2048, pattern=r"^[\x21-\x7e]+$")]
# Swarm's names are any text, non-ASCII included: a test definition's name 1 to 32 characters
# (module/TestIntegration/src/Filter/TestDefinition.php addNameFilter), a test run's `test` 1 to 1000
# (Filter/TestRun.php addTestFilter). Read: up to 1000 characters, none of them a control character
# (C0, DEL, C1), a line or paragraph separator, a bidirectional override or isolate, or a lone
# surrogate, so that a name never breaks or disguises a log line or a stored record.
NAME_MAX_CHARS = 1000
_NOT_IN_NAMES = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _printable(value: str) -> str:
    if _NOT_IN_NAMES.search(value):
        raise ValueError("must be printable text (no control, line separator or bidirectional control characters)")
    return value


SwarmName = Annotated[str, StringConstraints(max_length=NAME_MAX_CHARS), AfterValidator(_printable)]


def _blank_to_none(value: Any) -> Any:
    """An optional argument the template sends empty (`update=`) is absent."""
    return None if value == "" else value


OptionalUrl = Annotated[CallbackUrl | None, BeforeValidator(_blank_to_none)]
OptionalName = Annotated[SwarmName | None, BeforeValidator(_blank_to_none)]


def _test_run_id(value: Any) -> Any:
    """Swarm's {testRunId}, a test run's record id: a template that does not quote it sends a JSON
    number. An integer becomes its digits; digit strings are kept as sent (1 to 20 ASCII digits)."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return str(value)
    return value


TestRunId = Annotated[
    str, BeforeValidator(_test_run_id), StringConstraints(min_length=1, max_length=20, pattern=r"^[0-9]+$")
]
OptionalTestRunId = Annotated[TestRunId | None, BeforeValidator(_blank_to_none)]


class SwarmChangeStatus(StrEnum):
    """Swarm's {status}: `shelved` while the review is pending, else `submitted` (Swarm 2022.1
    `module/TestIntegration/src/Service/TestExecutor.php`, getFieldsFromReview). `committed` is
    not a value Swarm sends; it is still read as `submitted` for test definitions written for
    earlier p4review releases."""

    SHELVED = "shelved"
    SUBMITTED = "submitted"
    COMMITTED = "committed"


class SwarmTestCall(BaseModel):
    """What p4review needs from a workflow test call. Unknown fields are refused (a template
    that also sends {description} would put a change description in a request body)."""

    model_config = ConfigDict(extra="forbid")

    review: SwarmChange
    version: SwarmVersion
    change: SwarmChange
    status: SwarmChangeStatus
    pass_url: CallbackUrl = Field(alias="pass")
    fail_url: CallbackUrl = Field(alias="fail")
    update_url: OptionalUrl = Field(default=None, alias="update")
    # Optional arguments a template may carry; kept for the verdict, never used for the review.
    test: OptionalName = None
    test_run_id: OptionalTestRunId = Field(default=None, alias="testRunId")
    review_status: OptionalName = Field(default=None, alias="reviewStatus")

"""The one place that maps failures to HTTP answers: {"error": {code, message, details}}."""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    def __init__(self, status_code: int, code: str, message: str, details: Any = None,
                 headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status_code = status_code
        self.code = code
        self.message = message
        self.details = details
        self.headers = headers or {}


def field_errors(exc: Any) -> list[dict[str, str]]:
    """Pydantic errors as {field, problem}; the offending input is never echoed back."""
    return [
        {"field": ".".join(str(part) for part in error["loc"]) or "body", "problem": error["msg"]}
        for error in exc.errors(include_url=False, include_input=False)
    ]

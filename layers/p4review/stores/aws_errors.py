"""Translate botocore failures into domain errors. Only data-access code imports this."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any, NoReturn

from p4review.errors import (
    AuthError,
    ConfigError,
    ErrorClass,
    NotFoundError,
    P4ReviewError,
    StorageError,
    clamp_retry_after,
)

_THROTTLING = {
    "ProvisionedThroughputExceededException",
    "ThrottlingException",
    "Throttling",
    "RequestLimitExceeded",
    "TooManyRequestsException",
    "SlowDown",
}
_AUTH = {
    "AccessDenied",
    "AccessDeniedException",
    "UnrecognizedClientException",
    "InvalidSignatureException",
    "ExpiredTokenException",
    "KMS.AccessDeniedException",
}
_MISSING_RESOURCE = {
    "ResourceNotFoundException",
    "NoSuchBucket",
    "AWS.SimpleQueueService.NonExistentQueue",
    "QueueDoesNotExist",
}
_NOT_FOUND = {"NoSuchKey", "404"}
_SERVER_FAULTS = {"InternalServerError", "ServiceUnavailable", "InternalFailure"}


def translate(exc: Exception, operation: str) -> NoReturn:
    """Raise the domain error for `exc`. Messages name the operation and AWS code only."""
    from botocore.exceptions import (
        ClientError,
        NoCredentialsError,
        NoRegionError,
        PartialCredentialsError,
        ReadTimeoutError,
    )
    from botocore.exceptions import ConnectionError as BotoConnectionError

    if isinstance(exc, P4ReviewError):
        raise exc
    if isinstance(exc, (NoCredentialsError, PartialCredentialsError)):
        raise AuthError(f"{operation}: no AWS credentials") from None
    if isinstance(exc, NoRegionError):
        raise ConfigError(f"{operation}: no AWS region configured") from None
    if isinstance(exc, ReadTimeoutError):
        raise StorageError(f"{operation}: timed out", error_class=ErrorClass.NETWORK_TIMEOUT) from None
    if isinstance(exc, BotoConnectionError):
        raise StorageError(f"{operation}: connection failed", error_class=ErrorClass.NETWORK_ERROR) from None
    if isinstance(exc, ClientError):
        code = exc.response.get("Error", {}).get("Code", "Unknown")
        metadata = exc.response.get("ResponseMetadata", {})
        status = metadata.get("HTTPStatusCode", 0)
        if code in _THROTTLING or status == HTTPStatus.TOO_MANY_REQUESTS:
            retry_after = clamp_retry_after(metadata.get("HTTPHeaders", {}).get("retry-after"))
            raise StorageError(
                f"{operation}: throttled ({code})", error_class=ErrorClass.RATE_LIMITED, retry_after=retry_after
            ) from None
        if code in _AUTH or status == HTTPStatus.FORBIDDEN:
            raise AuthError(f"{operation}: access denied ({code})") from None
        if code in _MISSING_RESOURCE:
            raise ConfigError(f"{operation}: resource missing ({code})") from None
        if code in _NOT_FOUND:
            raise NotFoundError(f"{operation}: not found ({code})") from None
        if status >= HTTPStatus.INTERNAL_SERVER_ERROR or code in _SERVER_FAULTS:
            raise StorageError(f"{operation}: upstream error ({code})") from None
        raise ConfigError(f"{operation}: request refused ({code})") from None
    raise StorageError(f"{operation}: {type(exc).__name__}") from None


def condition_failed_item(exc: Exception) -> dict[str, Any] | None:
    """The ALL_OLD item of a ConditionalCheckFailed ({} when the item is missing), else None."""
    response = getattr(exc, "response", None) or {}
    if response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
        return None
    return response.get("Item") or {}

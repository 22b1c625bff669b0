"""Plain-Python <-> DynamoDB attribute values, without Decimal leaking into models."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

_serializer = TypeSerializer()
_deserializer = TypeDeserializer()


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def _dynamo_safe(value: Any) -> Any:
    if isinstance(value, float):
        return Decimal(str(value))
    if isinstance(value, dict):
        return {key: _dynamo_safe(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_dynamo_safe(item) for item in value]
    return value


def to_item(data: dict[str, Any]) -> dict[str, Any]:
    return {key: _serializer.serialize(_dynamo_safe(value)) for key, value in data.items()}


def to_value(value: Any) -> dict[str, Any]:
    serialized: dict[str, Any] = _serializer.serialize(_dynamo_safe(value))
    return serialized


def from_item(item: dict[str, Any]) -> dict[str, Any]:
    return {key: _plain(_deserializer.deserialize(value)) for key, value in item.items()}

"""The `p4 -G` output format: concatenated marshal (version 0) dicts of bytes and ints."""

from __future__ import annotations

from typing import Any


def decode_marshal_stream(data: bytes) -> list[dict[bytes, Any]]:
    """Decode concatenated `p4 -G` records (marshal version 0 dicts of bytes/int).

    A strict hand-written reader instead of `marshal.loads`: the stdlib module is documented
    as unsafe for untrusted data, and these records carry user-controlled descriptions.
    """
    records: list[dict[bytes, Any]] = []
    pos = 0

    def take(count: int) -> bytes:
        nonlocal pos
        if pos + count > len(data):
            raise ValueError("truncated marshal data")
        chunk = data[pos : pos + count]
        pos += count
        return chunk

    def value() -> Any:
        tag = take(1)
        if tag == b"s":  # bytes (p4 strings)
            return take(int.from_bytes(take(4), "little"))
        if tag == b"u":  # str, as Python itself would write a text value
            return take(int.from_bytes(take(4), "little"))
        if tag == b"i":
            return int.from_bytes(take(4), "little", signed=True)
        if tag == b"N":
            return None
        raise ValueError(f"unsupported marshal type {tag!r}")

    while pos < len(data):
        if take(1) != b"{":
            raise ValueError("expected a dict record")
        record: dict[bytes, Any] = {}
        while data[pos : pos + 1] != b"0":
            key = value()
            if not isinstance(key, bytes):
                raise ValueError("non-bytes key")
            record[key] = value()
        pos += 1
        records.append(record)
    return records

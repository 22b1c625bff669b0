"""The `p4 -G` output format: concatenated marshal (version 0) dicts of bytes and ints."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

# Reads exactly `count` bytes; fewer only at the end of the stream.
ReadExactly = Callable[[int], bytes]


def decode_marshal_stream(data: bytes) -> list[dict[bytes, Any]]:
    """Decode concatenated `p4 -G` records (marshal version 0 dicts of bytes/int).

    A strict hand-written reader instead of `marshal.loads`: the stdlib module is documented
    as unsafe for untrusted data, and these records carry user-controlled descriptions.
    """
    pos = 0

    def read(count: int) -> bytes:
        nonlocal pos
        chunk = data[pos : pos + count]
        pos += len(chunk)
        return chunk

    return list(iter_marshal_records(read))


def iter_marshal_records(read: ReadExactly) -> Iterator[dict[bytes, Any]]:
    """The records of a `p4 -G` stream one at a time, as they arrive (a batched `print` of a
    whole change is never held whole). ValueError on anything but a well-formed stream."""

    def take(count: int) -> bytes:
        chunk = read(count)
        if len(chunk) != count:
            raise ValueError("truncated marshal data")
        return chunk

    def value(tag: bytes) -> Any:
        if tag in (b"s", b"u"):  # bytes (p4 strings); `u` is str, as Python itself writes text
            return take(int.from_bytes(take(4), "little"))
        if tag == b"i":
            return int.from_bytes(take(4), "little", signed=True)
        if tag == b"N":
            return None
        raise ValueError(f"unsupported marshal type {tag!r}")

    while True:
        start = read(1)
        if not start:
            return
        if start != b"{":
            raise ValueError("expected a dict record")
        record: dict[bytes, Any] = {}
        while (tag := take(1)) != b"0":
            key = value(tag)
            if not isinstance(key, bytes):
                raise ValueError("non-bytes key")
            record[key] = value(take(1))
        yield record

"""The record encode in plain Python: the twin of ``_core_pyx/encode.pxi``.

Kafka (clients, tag 3.8.0): ``utils/ByteUtils.java`` (``writeVarint``, ``writeVarlong``: zig-zag, seven
bits a byte, low bits first) and ``record/DefaultRecord.writeTo``, once per record: the records section of
a v2 batch, which the record layer frames with the batch header and its CRC-32C; and
``encode_legacy_messages``, Kafka's ``LegacyRecord.write`` once per v0/v1 message.  ``split_records`` holds
the checks a producer's record inputs go through first (Kafka's ``ProducerRecord`` and ``RecordHeader``
constructors, and ``MemoryRecordsBuilder.appendWithOffset``'s timestamp check), and
``encode_v2_record_inputs`` is the two in one call, from record inputs to a records section.
"""

from __future__ import annotations

import itertools
import struct
import zlib
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from .._common import (
    ATTRIBUTES_OFFSET,
    BASE_TIMESTAMP_OFFSET,
    CRC_OFFSET,
    INT64_MAX,
    INT64_MIN,
    LENGTH_OFFSET,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    MAX_TIMESTAMP_OFFSET,
    NO_TIMESTAMP,
    RECORD_BATCH_OVERHEAD,
    RECORDS_COUNT_OFFSET,
)
from ._ints import _MASK32, _MASK64, wrap64
from .crc import crc32c

_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I64 = struct.Struct(">q")


def _write_varint(out: bytearray, value: int) -> None:
    v = ((value << 1) ^ (value >> 31)) & _MASK32
    while v & ~0x7F:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def _write_varlong(out: bytearray, value: int) -> None:
    v = ((value << 1) ^ (value >> 63)) & _MASK64
    while v & ~0x7F:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def encode_v2_records(
    timestamps: Sequence[int],
    keys: Sequence[Any],
    values: Sequence[Any],
    headers: Sequence[Sequence[tuple[str, Any]] | None] | None,
    base_timestamp: int,
    offset_deltas: Sequence[int] | None = None,
) -> bytes:
    """The records section of a v2 batch (Kafka: ``DefaultRecord.writeTo``, once per record).

    Record ``i`` gets offset delta ``offset_deltas[i]`` (``i`` when ``None``) and timestamp delta
    ``timestamps[i] - base_timestamp``.  Keys, values and header values are bytes-like or ``None``;
    header keys are ``str`` (written as UTF-8) and may not be ``None``, as Kafka's ``RecordHeader``
    requires.
    """
    n = len(timestamps)
    if len(keys) != n or len(values) != n or (headers is not None and len(headers) != n) or (
        offset_deltas is not None and len(offset_deltas) != n
    ):
        raise ValueError("encode_v2_records: the columns differ in length")
    out = bytearray()
    body = bytearray()
    for i in range(n):
        body.clear()
        body.append(0)  # attributes
        _write_varlong(body, wrap64(timestamps[i] - base_timestamp))  # a Java long: it wraps, as Kafka's does
        _write_varint(body, offset_deltas[i] if offset_deltas is not None else i)
        for field in (keys[i], values[i]):
            if field is None:
                body.append(1)  # varint -1
            else:
                data = bytes(field)
                _write_varint(body, len(data))
                body += data
        record_headers = headers[i] if headers is not None else None
        if not record_headers:
            body.append(0)
        else:
            _write_varint(body, len(record_headers))
            for header_key, header_value in record_headers:
                if header_key is None:
                    raise ValueError("Invalid null header key found in headers")
                encoded_key = header_key.encode("utf-8")
                _write_varint(body, len(encoded_key))
                body += encoded_key
                if header_value is None:
                    body.append(1)
                else:
                    data = bytes(header_value)
                    _write_varint(body, len(data))
                    body += data
        _write_varint(out, len(body))
        out += body
    return bytes(out)


def _unpack_record(record: Any) -> tuple[Any, Any, int, Sequence[tuple[str, Any]] | None]:
    """Accepts ``(key, value[, timestamp[, headers]])`` or an object with those attributes."""
    if isinstance(record, tuple | list):
        n = len(record)
        if not 2 <= n <= 4:
            raise ValueError(
                f"A record is (key, value), (key, value, timestamp) or (key, value, timestamp, headers); "
                f"got a sequence of {n}"
            )
        key, value = record[0], record[1]
        timestamp = record[2] if n > 2 else None
        headers = record[3] if n > 3 else None
    elif hasattr(record, "key") and hasattr(record, "value"):
        key, value = record.key, record.value
        timestamp = getattr(record, "timestamp", None)
        headers = getattr(record, "headers", None)
    else:
        raise TypeError(
            "A record is a tuple (key, value[, timestamp[, headers]]) or an object with key and value "
            f"attributes, not {type(record).__name__}"
        )
    if timestamp is not None and not isinstance(timestamp, int):
        raise TypeError(f"A record timestamp is an int (milliseconds), not {type(timestamp).__name__}")
    return key, value, NO_TIMESTAMP if timestamp is None else timestamp, headers


def split_records(records: Iterable[Any]) -> tuple[list[Any], list[Any], list[int], list[Any]]:
    """Record inputs split into key, value, timestamp and header columns, every field's type checked.

    A record is ``(key, value)``, ``(key, value, timestamp)``, ``(key, value, timestamp, headers)`` or an
    object with ``key`` and ``value`` (and maybe ``timestamp`` and ``headers``) attributes.  Keys and
    values are bytes-like or ``None``; a timestamp is an int from -1 (none: it becomes -1) to a Java
    ``long``'s maximum; headers are ``(str, bytes-like or None)`` pairs, and an empty header list becomes
    ``None``.  The first bad record raises, before anything is returned.
    """
    keys: list[Any] = []
    values: list[Any] = []
    timestamps: list[int] = []
    headers: list[Any] = []
    for record in records:
        key, value, timestamp, record_headers = _unpack_record(record)
        for name, field in (("key", key), ("value", value)):
            if field is not None and not isinstance(field, bytes | bytearray | memoryview):
                raise TypeError(f"A record {name} must be bytes-like or None, not {type(field).__name__}")
        if timestamp < NO_TIMESTAMP:
            raise ValueError(f"Invalid negative timestamp {timestamp}")
        if timestamp > INT64_MAX:
            raise ValueError(f"Invalid timestamp {timestamp}: larger than a Java long holds")
        if record_headers:
            for header in record_headers:
                if not isinstance(header, tuple | list) or len(header) != 2:
                    raise TypeError(f"A record header is a (key, value) pair, not {header!r}")
                header_key, header_value = header
                if header_key is None:
                    raise ValueError("Invalid null header key found in headers")
                if not isinstance(header_key, str):
                    raise TypeError(f"A header key is a str, not {type(header_key).__name__}")
                if header_value is not None and not isinstance(header_value, bytes | bytearray | memoryview):
                    raise TypeError(
                        f"A header value is bytes-like or None, not {type(header_value).__name__}"
                    )
        keys.append(key)
        values.append(value)
        timestamps.append(timestamp)
        headers.append(list(record_headers) if record_headers else None)
    return keys, values, timestamps, headers


def encode_v2_record_inputs(records: Iterable[Any], base_timestamp: int | None = None) -> tuple[bytes, int, int, int]:
    """The records section of a v2 batch from record inputs: :func:`split_records` and then
    :func:`encode_v2_records`, offset deltas 0, 1, 2, ...

    Timestamp deltas are taken from ``base_timestamp``, or from the first record's timestamp when it is
    ``None``.  Returns the section, the record count, the first record's timestamp and the largest one
    (both -1 when there are no records): what the batch header needs besides.
    """
    keys, values, timestamps, headers = split_records(records)
    if not timestamps:
        return b"", 0, NO_TIMESTAMP, NO_TIMESTAMP
    base = timestamps[0] if base_timestamp is None else base_timestamp
    body = encode_v2_records(timestamps, keys, values, headers, base)
    return body, len(timestamps), timestamps[0], max(timestamps)


import itertools
import struct
import zlib
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from .._common import (
    ATTRIBUTES_OFFSET,
    BASE_TIMESTAMP_OFFSET,
    CRC_OFFSET,
    INT64_MAX,
    INT64_MIN,
    LENGTH_OFFSET,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    MAX_TIMESTAMP_OFFSET,
    NO_TIMESTAMP,
    RECORD_BATCH_OVERHEAD,
    RECORDS_COUNT_OFFSET,
)

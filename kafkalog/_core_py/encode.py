"""The record encode in plain Python: the twin of ``_core_pyx/encode.pxi``.

Kafka (clients, tag 3.8.0): ``utils/ByteUtils.java`` (``writeVarint``, ``writeVarlong``: zig-zag, seven
bits a byte, low bits first) and ``record/DefaultRecord.writeTo``, once per record: the records section of
a v2 batch, which the record layer frames with the batch header and its CRC-32C.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._ints import _MASK32, _MASK64


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
        _write_varlong(body, timestamps[i] - base_timestamp)
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

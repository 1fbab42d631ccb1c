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
    CONTROL_FLAG_MASK,
    CRC_OFFSET,
    DELETE_HORIZON_FLAG_MASK,
    FILTER_EMPTY_TXN_MARKER,
    FILTER_RETAIN_EMPTY,
    INT64_MAX,
    INT64_MIN,
    LENGTH_OFFSET,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    MAX_TIMESTAMP_OFFSET,
    NO_TIMESTAMP,
    RECORD_BATCH_OVERHEAD,
    RECORDS_COUNT_OFFSET,
    TRANSACTIONAL_FLAG_MASK,
)
from ._ints import _MASK32, _MASK64, wrap64
from .crc import crc32c

_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I16 = struct.Struct(">h")
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


def encode_legacy_messages(keys: Sequence[Any], values: Sequence[Any], timestamps: Sequence[int],
                           offsets: Sequence[int], magic: int, attributes: int) -> bytes:
    """v0 or v1 messages, each framed by its offset and size (Kafka: ``LegacyRecord.write`` behind the
    12-byte log overhead, once per record, as ``MemoryRecordsBuilder.appendLegacyRecord`` writes them).

    Message ``i`` has offset ``offsets[i]``, the ``magic`` and ``attributes`` given (the same for every
    message), timestamp ``timestamps[i]`` (written for v1 only), and key and value bytes-like or ``None``
    (length -1); its CRC-32 runs from the magic byte to the end, as
    :func:`kafkalog.record.legacy.legacy_entry` writes one message.
    """
    n = len(keys)
    if len(values) != n or len(timestamps) != n or len(offsets) != n:
        raise ValueError("encode_legacy_messages: the columns differ in length")
    if magic not in (0, 1):
        raise ValueError(f"Legacy messages have magic 0 or 1, not {magic}")
    out = bytearray()
    body = bytearray()
    for i in range(n):
        for number in (offsets[i], timestamps[i]):
            if not INT64_MIN <= number <= INT64_MAX:
                raise OverflowError(f"{number} does not fit a Java long")
        body.clear()
        body.append(magic)
        body.append(attributes & 0xFF)
        if magic == 1:
            body += struct.pack(">q", timestamps[i])
        for field in (keys[i], values[i]):
            if field is None:
                body += struct.pack(">i", -1)
            else:
                data = bytes(field)
                body += struct.pack(">i", len(data))
                body += data
        out += struct.pack(">qiI", offsets[i], 4 + len(body), zlib.crc32(body))
        out += body
    return bytes(out)


def filter_v2_batches(
    data: Any, records: npt.NDArray[Any], starts: npt.NDArray[np.int64], positions: npt.NDArray[np.int64],
    keep: npt.NDArray[np.uint8], fates: npt.NDArray[np.uint8], delete_horizon_ms: int, out: bytearray,
) -> tuple[int, npt.NDArray[np.int32], npt.NDArray[np.int64]]:
    """The log cleaner's rewrite of a run of uncompressed v2 batches without the records it drops (Kafka:
    ``MemoryRecords.filterTo``'s ``filterBatch``, ``buildRetainedRecordsInto`` and
    ``DefaultRecordBatch.writeEmptyHeader``), for batches whose attributes hold no bit but the transactional,
    control and delete-horizon ones (uncompressed, CreateTime).  Batch ``b`` is the batch at ``positions[b]``
    of ``data``, its records ``records[starts[b]:starts[b + 1]]``, ``keep`` a byte per record, ``fates[b]``
    the filter's word on the batch: ``FILTER_RETAIN_EMPTY`` (keep it as a bare header if no record is kept),
    ``FILTER_EMPTY_TXN_MARKER`` (the marker of a transaction none of whose batches is left).

    A batch keeping every record and needing no new delete horizon is appended to ``out`` as it is.  One
    keeping none is dropped, or written as an empty header (base timestamp -1, 0 records, no delete horizon,
    the rest of the header kept) when ``FILTER_RETAIN_EMPTY``.  The kept records of any other are written as
    a batch of the same header fields (base offset, last offset delta, producer fields, leader epoch), its
    records' deltas from the same base offset, its max timestamp the largest kept one, its CRC-32C computed.
    A batch without a delete horizon that keeps a tombstone, or is ``FILTER_EMPTY_TXN_MARKER``, gets one:
    attribute bit 6 and ``delete_horizon_ms`` as its base timestamp; a batch with one keeps it; any other
    takes the first kept record's timestamp as its base.  It stops before the first batch the record layer
    must rewrite itself: one with other attribute bits (compressed, LogAppendTime), a rebuilt one whose kept
    records have headers or offsets not increasing, or one needing a new horizon when ``delete_horizon_ms`` is
    negative (the caller's clock gave none a batch can hold).

    Returns ``(done, kept, max_timestamps)``: the batches handled, and for each its kept records (-1 when
    dropped, 0 for an empty header) and the max timestamp of what was written (-1 when dropped).
    """
    nb = len(positions)
    if len(starts) != nb + 1 or len(fates) != nb or len(keep) != len(records):
        raise ValueError("filter_v2_batches: the columns differ in length")
    with memoryview(data) as whole:
        view = whole.cast("B") if whole.format != "B" else whole
        total = len(view)
        rows = records.tolist()
        sizes = []
        for b in range(nb):
            lo, hi, position = int(starts[b]), int(starts[b + 1]), int(positions[b])
            if lo < 0 or hi < lo or hi > len(rows) or position < 0 or position + RECORD_BATCH_OVERHEAD > total:
                raise ValueError(f"filter_v2_batches: batch {b} is outside the data")
            size = _I32.unpack_from(view, position + LENGTH_OFFSET)[0] + LOG_OVERHEAD
            if size < RECORD_BATCH_OVERHEAD or position + size > total or view[position + MAGIC_OFFSET] != 2:
                raise ValueError(f"filter_v2_batches: batch {b} is not a v2 batch inside the data")
            sizes.append(size)
            for r in range(lo, hi):
                _, _, key_pos, value_pos, key_len, value_len = rows[r][:6]
                if (key_len >= 0 and (key_pos < 0 or key_pos + key_len > total)) or (
                        value_len >= 0 and (value_pos < 0 or value_pos + value_len > total)):
                    raise ValueError(f"filter_v2_batches: record {r}'s key or value is outside the data")
        kept_counts = np.full(nb, -1, dtype=np.int32)
        max_timestamps = np.full(nb, -1, dtype=np.int64)
        b = 0
        while b < nb:
            lo, hi, position = int(starts[b]), int(starts[b + 1]), int(positions[b])
            attributes = _I16.unpack_from(view, position + ATTRIBUTES_OFFSET)[0]
            if attributes & ~(TRANSACTIONAL_FLAG_MASK | CONTROL_FLAG_MASK | DELETE_HORIZON_FLAG_MASK):
                break  # compressed or LogAppendTime: the record layer rebuilds it in its codec
            kept = [rows[r] for r in range(lo, hi) if keep[r]]
            offsets = [row[0] for row in kept]
            # A new delete horizon: a kept tombstone or an empty transaction's marker in a batch without one.
            horizon = ((any(row[5] < 0 for row in kept) or bool(fates[b] & FILTER_EMPTY_TXN_MARKER))
                       and not attributes & DELETE_HORIZON_FLAG_MASK)
            # Headers, or offsets not increasing (the builder's error): the record layer rebuilds it.
            odd = any(row[7] != 0 for row in kept) or any(y <= x for x, y in itertools.pairwise(offsets))
            if not kept:
                if fates[b] & FILTER_RETAIN_EMPTY:
                    header = bytearray(view[position:position + RECORD_BATCH_OVERHEAD])
                    _I32.pack_into(header, LENGTH_OFFSET, RECORD_BATCH_OVERHEAD - LOG_OVERHEAD)
                    _I16.pack_into(header, ATTRIBUTES_OFFSET, attributes & ~DELETE_HORIZON_FLAG_MASK)
                    _I64.pack_into(header, BASE_TIMESTAMP_OFFSET, NO_TIMESTAMP)
                    _I32.pack_into(header, RECORDS_COUNT_OFFSET, 0)
                    _U32.pack_into(header, CRC_OFFSET, crc32c(header[ATTRIBUTES_OFFSET:]))
                    out += header
                    max_timestamps[b] = _I64.unpack_from(view, position + MAX_TIMESTAMP_OFFSET)[0]
                    kept_counts[b] = 0
            elif len(kept) == hi - lo and not horizon:
                out += view[position:position + sizes[b]]
                max_timestamps[b] = _I64.unpack_from(view, position + MAX_TIMESTAMP_OFFSET)[0]
                kept_counts[b] = len(kept)
            elif odd or (horizon and delete_horizon_ms < 0):
                break
            else:
                base_offset = _I64.unpack_from(view, position)[0]
                timestamps = [row[1] for row in kept]
                base_timestamp = timestamps[0]
                if horizon:
                    base_timestamp = delete_horizon_ms
                    attributes |= DELETE_HORIZON_FLAG_MASK
                elif attributes & DELETE_HORIZON_FLAG_MASK:
                    base_timestamp = _I64.unpack_from(view, position + BASE_TIMESTAMP_OFFSET)[0]  # its horizon
                body = encode_v2_records(
                    timestamps, [None if row[4] < 0 else view[row[2]:row[2] + row[4]] for row in kept],
                    [None if row[5] < 0 else view[row[3]:row[3] + row[5]] for row in kept], None, base_timestamp,
                    [offset - base_offset for offset in offsets])
                header = bytearray(view[position:position + RECORD_BATCH_OVERHEAD])
                _I32.pack_into(header, LENGTH_OFFSET, RECORD_BATCH_OVERHEAD + len(body) - LOG_OVERHEAD)
                _I16.pack_into(header, ATTRIBUTES_OFFSET, attributes)
                _I64.pack_into(header, BASE_TIMESTAMP_OFFSET, base_timestamp)
                _I64.pack_into(header, MAX_TIMESTAMP_OFFSET, max(timestamps))
                _I32.pack_into(header, RECORDS_COUNT_OFFSET, len(kept))
                # The CRC-32C runs from the attributes to the end.
                _U32.pack_into(header, CRC_OFFSET, crc32c(body, crc32c(header[ATTRIBUTES_OFFSET:])))
                out += header
                out += body
                max_timestamps[b] = max(timestamps)
                kept_counts[b] = len(kept)
            b += 1
    return b, kept_counts, max_timestamps

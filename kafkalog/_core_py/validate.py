"""The validator's per-record pass over one v2 batch: the plain-Python twin of ``_core_pyx/validate.pxi``.

Kafka 3.8's ``LogValidator`` walks every record of a batch it appends (``for (Record record : batch)`` in
``assignOffsetsNonCompressed`` and ``validateMessagesAndAssignOffsetsCompressed``): reading it is
``DefaultRecord.readFrom``, with all its framing checks; then ``validateRecord`` checks the key
(``validateKey``: a compacted topic needs one) and the timestamp (``validateTimestamp`` under CreateTime:
within ``[now - before.max.ms, now + after.max.ms]``, in Java ``long`` arithmetic), and the loop keeps the
largest timestamp, whether the inner offsets run 0, 1, 2, ... and the records' ``sizeInBytes``.  This kernel
does that walk once, over the batch's (decompressed) records, without making a Record per record.

v2 records always have their batch's magic and no CRC of their own, so those checks of ``validateRecord``
cannot fail here; a LogAppendTime batch from a client needs the record's description in its error, so the
validator keeps its object loop for those (the kernel is for CreateTime batches).
"""

from __future__ import annotations

from typing import Any

from ._ints import wrap64
from .decode import _walk_v2_records

NO_TIMESTAMP = -1
#: Codes of a rejected record: ``validateKey``'s and ``validateTimestamp``'s.
RECORD_NO_KEY = 1
RECORD_BAD_TIMESTAMP = 2


def _size_of_varlong(value: int) -> int:
    """Bytes of ``value`` as a zig-zag varint (Kafka: ``ByteUtils.sizeOfVarlong``), for any Python int, as
    :func:`kafkalog.record.convert.default_record_size_in_bytes` sizes the fields of a decoded record."""
    zigzag = (value << 1) ^ (value >> 63)
    return max(1, (zigzag.bit_length() + 6) // 7)


def _field_size(length: int) -> int:
    """A key, value or header value: its length varint and bytes; a null is the one byte of ``-1``."""
    return 1 if length < 0 else _size_of_varlong(length) + length


def validate_v2_records(buf: Any, start: int, end: int, count: int, base_offset: int, base_timestamp: int,
                        append_time: int | None = None, *, now: int, timestamp_before_max_ms: int,
                        timestamp_after_max_ms: int, compacted: bool, check_timestamps: bool
                        ) -> tuple[int, int, int, bool, list[tuple[int, int, int, int]]]:
    """Read the ``count`` v2 records of ``buf[start:end]`` and check each as ``LogValidator.validateRecord``
    does (see the module docstring).  The first seven arguments are ``decode_v2_records``' (the same framing
    errors, raised as it raises them); ``compacted`` asks for keys and ``check_timestamps`` (the log's type is
    CreateTime) for the timestamp bounds.

    Returns ``(count, max_timestamp, size_in_bytes, in_sequence, errors)``: the records read; the largest
    timestamp (-1 if none is larger); the sum of the records' ``DefaultRecord.sizeInBytes`` as
    :func:`~kafkalog.record.convert.default_record_size_in_bytes` computes it from the decoded fields (offset and
    timestamp deltas from the batch's base, header keys as their UTF-8 text re-encoded); whether every
    record's offset equals its index (``record.offset() == expectedInnerOffset``); and one ``(index, code,
    timestamp, offset)`` per rejected record, in order, ``code`` :data:`RECORD_NO_KEY` (checked first, as
    Kafka does) or :data:`RECORD_BAD_TIMESTAMP`.
    """
    errors: list[tuple[int, int, int, int]] = []
    read = 0  # records read so far
    max_timestamp = NO_TIMESTAMP
    size = 0
    in_sequence = True
    body = 0  # the body of the record being read, its headers added as they come

    def finish_previous() -> None:
        # A record's size is known once its headers are read: add the body and its length varint.
        nonlocal size
        if read:
            size += body + _size_of_varlong(body)

    def record(offset: int, timestamp: int, key_pos: int, key_len: int, value_pos: int, value_len: int,
               n_headers: int) -> None:
        nonlocal read, max_timestamp, in_sequence, body
        finish_previous()
        index = read
        read += 1
        if compacted and key_len < 0:
            errors.append((index, RECORD_NO_KEY, timestamp, offset))
        elif check_timestamps and timestamp != NO_TIMESTAMP:
            difference = wrap64(now - timestamp)
            if difference > timestamp_before_max_ms or wrap64(-difference) > timestamp_after_max_ms:
                errors.append((index, RECORD_BAD_TIMESTAMP, timestamp, offset))
        max_timestamp = max(max_timestamp, timestamp)
        if offset != index:
            in_sequence = False
        body = (1 + _size_of_varlong(timestamp - base_timestamp) + _size_of_varlong(offset - base_offset)
                + _field_size(key_len) + _field_size(value_len) + _size_of_varlong(n_headers))

    def header(key_pos: int, key_len: int, value_pos: int, value_len: int) -> None:
        # The object decode reads a header key as text (invalid UTF-8 replaced); its size is the text's.
        nonlocal body
        key = bytes(view[key_pos:key_pos + key_len]).decode("utf-8", "replace").encode()
        body += _size_of_varlong(len(key)) + len(key) + _field_size(value_len)

    with memoryview(buf) as whole:
        view = whole.cast("B") if whole.format != "B" else whole
        _walk_v2_records(view, start, end, count, base_offset, base_timestamp, append_time, record, header)
    finish_previous()
    return read, max_timestamp, size, in_sequence, errors

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

``assign_offsets_v2_batch`` is the whole of ``assignOffsetsNonCompressed`` for a request of one uncompressed
CreateTime batch (a linger-0 producer's append): the batch checks, this record walk and the header rewrite,
in one call that builds no object (see :mod:`kafkalog.log.validator_one_batch`).  ``leader_append_v2_batch``
puts the shallow pass's checks of that batch before it, for the log's fused leader append of a batch with no
producer id (:mod:`kafkalog.log.leader_append`).
"""

from __future__ import annotations

import contextlib
import struct
from collections.abc import Callable, Iterator
from typing import Any

from .._java_utf8 import JAVA_UTF8
from ..errors import CorruptRecordError
from ._ints import _I16, _I32, _I64, _U32, wrap64
from .crc import crc32c
from .decode import _walk_v2_records

NO_TIMESTAMP = -1
#: Codes of a rejected record: ``validateKey``'s and ``validateTimestamp``'s.
RECORD_NO_KEY = 1
RECORD_BAD_TIMESTAMP = 2

# The v2 batch header (DefaultRecordBatch): base offset, length, partition leader epoch, magic, CRC,
# attributes, last offset delta, base and max timestamps, producer id and epoch, base sequence, record count.
_BATCH_HEAD = struct.Struct(">qiibIhiqqqhii")
_RECORDS = _BATCH_HEAD.size  # 61: where the records start
_LEADER_EPOCH, _CRC, _ATTRIBUTES, _MAX_TIMESTAMP = 12, 17, 21, 35
_CODEC_MASK, _TIMESTAMP_TYPE_MASK, _CONTROL_MASK = 0x07, 0x08, 0x20
#: The attribute bits ``computeAttributes`` keeps when it sets the max timestamp of a CreateTime batch: the
#: codec, the transactional, control and delete-horizon flags.
_KEPT_ATTRIBUTES = _CODEC_MASK | 0x10 | _CONTROL_MASK | 0x40
_INT64_MAX = (1 << 63) - 1


def _size_of_varlong(value: int) -> int:
    """Bytes of ``value`` as a zig-zag varint (Kafka: ``ByteUtils.sizeOfVarlong``), for any Python int, as
    :func:`kafkalog.record.records_util.default_record_size_in_bytes` sizes the fields of a decoded record."""
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
    :func:`~kafkalog.record.records_util.default_record_size_in_bytes` computes it from the decoded fields (offset and
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
        # The object decode reads a header key as text (malformed UTF-8 replaced as Java does); its size is the
        # text's.
        nonlocal body
        key = bytes(view[key_pos:key_pos + key_len]).decode("utf-8", JAVA_UTF8).encode()
        body += _size_of_varlong(len(key)) + len(key) + _field_size(value_len)

    with memoryview(buf) as whole:
        view = whole.cast("B") if whole.format != "B" else whole
        _walk_v2_records(view, start, end, count, base_offset, base_timestamp, append_time, record, header)
    finish_previous()
    return read, max_timestamp, size, in_sequence, errors


@contextlib.contextmanager
def _writable_bytes(buf: Any, partition_leader_epoch: int) -> Iterator[memoryview]:
    """``buf`` as writable unsigned bytes, with the argument checks the compiled twin's typed arguments make:
    ``OverflowError`` for an epoch that is no ``int32``, ``ValueError`` for a read-only buffer."""
    if not -(1 << 31) <= partition_leader_epoch < (1 << 31):
        raise OverflowError(f"partition leader epoch {partition_leader_epoch} is not an int32")
    with memoryview(buf) as whole:
        view = whole.cast("B") if whole.format != "B" or whole.ndim != 1 else whole
        if view.readonly:
            raise ValueError("buffer source array is read-only")
        yield view


def assign_offsets_v2_batch(buf: Any, next_offset: int, partition_leader_epoch: int, *, now: int,
                            timestamp_before_max_ms: int, timestamp_after_max_ms: int, compacted: bool,
                            client: bool) -> tuple[int, int] | None:
    """The leader's validation of one uncompressed CreateTime v2 batch that fills ``buf``, as Kafka 3.8's
    ``LogValidator.assignOffsetsNonCompressed`` does it, in one call; ``None`` when the batch does not
    qualify or would fail a check, and then nothing was written (the caller takes the general path, which
    raises the error and counts the metric).

    It qualifies when ``buf`` holds exactly one v2 batch (its length field says so) with no codec, a
    CreateTime timestamp type and 1 to 2**31 - 1 records.  The checks are ``validateBatch``'s for a client's
    append (``client``): the count from the offset range positive and equal to the record count, no control
    batch, a producer id only with a sequence (a v2 log takes transactional and idempotent batches); then
    every record as ``validate_v2_records`` reads and checks it (framing, a key when ``compacted``, the
    timestamp within ``[now - before, now + after]``).  Then the header is rewritten in place:
    ``setLastOffset(next_offset + count - 1)``, ``setPartitionLeaderEpoch`` and ``setMaxTimestamp(CreateTime,
    max)`` (attributes recomputed and the CRC with them, only when they change).

    Returns ``(last_offset, max_timestamp)``: the batch's new last offset and its records' largest timestamp
    (-1 when none is larger).  ``buf`` must be writable (``ValueError`` otherwise) and
    ``partition_leader_epoch`` an ``int32`` (``OverflowError``), as the compiled twin's arguments are.
    """
    with _writable_bytes(buf, partition_leader_epoch) as view:
        if view.nbytes < _RECORDS:
            return None
        return _assign_in_place(view, _BATCH_HEAD.unpack_from(view, 0), next_offset, partition_leader_epoch, now,
                                timestamp_before_max_ms, timestamp_after_max_ms, compacted, client)


def leader_append_v2_batch(buf: Any, next_offset: int, partition_leader_epoch: int, clock: Callable[[], int], *,
                           timestamp_before_max_ms: int, timestamp_after_max_ms: int, compacted: bool,
                           max_size: int) -> tuple[int, int, int] | int | None:
    """A client's append of one uncompressed CreateTime v2 batch with no producer id, checked and assigned in
    one call: the shallow pass's checks of the batch (Kafka 3.8: ``UnifiedLog.analyzeAndValidateRecords``),
    then the time read (``clock()``, milliseconds), then ``assign_offsets_v2_batch`` with ``client``
    (``LogValidator.assignOffsetsNonCompressed``), in that order, as the log's general append does them (see
    :mod:`kafkalog.log.leader_append`).

    The shallow checks, in ``analyzeAndValidateRecords``' order: ``buf`` is exactly one whole v2 batch (its
    length field says so: the framing ``single_entry_magic`` accepts, so the shallow pass would read this one
    batch and nothing after it), its base offset is 0 (a client's), its size is at most ``max_size``
    (``max.message.bytes``, and the records' own limit on a batch's size) and its CRC-32C holds.  It also
    qualifies only with no producer id (``producerId`` -1 or below: no producer state to check).

    Returns ``(last_offset, max_timestamp, partition_leader_epoch)`` when the batch was taken: what
    ``assign_offsets_v2_batch`` returns, then the partition leader epoch the batch came with (the shallow
    pass's ``lastLeaderEpoch``, read before the rewrite).  When it was not, nothing was written and the return
    says whether the clock was read: ``None`` when the batch failed a shallow check or does not qualify before
    the clock (the general path reads it where it needs it), else the time read (the general path validates
    with it).  ``buf`` must be writable (``ValueError`` otherwise) and ``partition_leader_epoch`` an ``int32``
    (``OverflowError``), as the compiled twin's arguments are; what ``clock`` raises is raised.
    """
    with _writable_bytes(buf, partition_leader_epoch) as view:
        size = view.nbytes
        if size < _RECORDS or size > max_size:
            return None
        head = _BATCH_HEAD.unpack_from(view, 0)
        base_offset, length, sent_epoch, magic, crc = head[:5]
        producer_id = head[9]
        if 12 + length != size or magic != 2 or base_offset != 0 or producer_id > -1:
            return None
        with view[_ATTRIBUTES:] as covered:
            if crc32c(covered) != crc:
                return None
        now = clock()
        if not -_INT64_MAX - 1 <= now <= _INT64_MAX:
            raise OverflowError(f"time {now} is not an int64")
        assigned = _assign_in_place(view, head, next_offset, partition_leader_epoch, now, timestamp_before_max_ms,
                                    timestamp_after_max_ms, compacted, True)
    if assigned is None:
        return now
    return assigned[0], assigned[1], sent_epoch


def _assign_in_place(view: memoryview, head: tuple[Any, ...], next_offset: int, partition_leader_epoch: int, now: int,
                     timestamp_before_max_ms: int, timestamp_after_max_ms: int, compacted: bool,
                     client: bool) -> tuple[int, int] | None:
    """``assign_offsets_v2_batch`` over ``view``, a writable byte view at least a batch header long, whose
    header ``head`` is (``_BATCH_HEAD`` unpacked from its start)."""
    size = view.nbytes
    (base_offset, length, _epoch, magic, _crc, attributes, last_offset_delta, base_timestamp, max_timestamp,
     producer_id, _producer_epoch, base_sequence, count) = head
    if 12 + length != size or magic != 2 or attributes & (_CODEC_MASK | _TIMESTAMP_TYPE_MASK):
        return None
    if count <= 0 or next_offset > _INT64_MAX - count:
        return None
    if client and (last_offset_delta + 1 != count or attributes & _CONTROL_MASK
                   or (producer_id > -1 and base_sequence < 0)):
        return None
    try:
        _read, largest, _size, _in_sequence, errors = validate_v2_records(
            view, _RECORDS, size, count, base_offset, base_timestamp, None, now=now,
            timestamp_before_max_ms=timestamp_before_max_ms, timestamp_after_max_ms=timestamp_after_max_ms,
            compacted=compacted, check_timestamps=True)
    except CorruptRecordError:  # a framing error: the general path raises it where it belongs
        return None
    if errors:
        return None
    last_offset = next_offset + count - 1
    _I64.pack_into(view, 0, wrap64(last_offset - last_offset_delta))
    _I32.pack_into(view, _LEADER_EPOCH, partition_leader_epoch)
    if largest != max_timestamp:
        _I16.pack_into(view, _ATTRIBUTES, attributes & _KEPT_ATTRIBUTES)
        _I64.pack_into(view, _MAX_TIMESTAMP, largest)
        with view[_ATTRIBUTES:] as covered:
            _U32.pack_into(view, _CRC, crc32c(covered))
    return last_offset, largest

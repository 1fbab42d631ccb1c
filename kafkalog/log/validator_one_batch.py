"""The leader's validation of a request of one v2 batch kept as it is, without building a ``LogValidator``.

Two paths, both Kafka 3.8's ``LogValidator`` over a request of one batch:

* :func:`assign_offsets_one_batch`, a linger-0 producer's uncompressed batch in one kernel call:
  ``assignOffsetsNonCompressed`` (``validateBatch``, then ``validateRecord`` for every record, then
  ``setLastOffset``, ``setPartitionLeaderEpoch`` and ``setMaxTimestamp`` in place).
* :func:`assign_offsets_one_compressed_batch`, a compressed batch the log keeps in its codec:
  ``validateMessagesAndAssignOffsetsCompressed`` with in-place assignment (``validateBatch``; the records
  decompressed and each checked by the ``validate_v2_records`` kernel, as the general path does it; then the
  same three header rewrites).

:func:`kafkalog.log.validator.validate_messages_and_assign_offsets` asks them first; when the append does not
qualify, or a check would fail, it gets ``None`` with nothing written and goes on as before through
:class:`~kafkalog.log.validator.LogValidator`, which raises the error and counts the metric.  So every check
still runs, and every error is the general path's.

An append of one batch spends more on building the validator and its objects than on the checks themselves:
these paths make none (the kernels return ints).

Both rewrite the batch's header where it lies, as Kafka rewrites the request's buffer.  Records over a read-only
buffer (the ``bytes`` that ``MemoryRecords.with_records`` builds) are copied once
(``MemoryRecords.writable``) where the rewrite is sure to happen: before the kernel, when
:func:`takes_one_batch` says the append is one uncompressed v2 batch (the kernel, and the general path when
the kernel declines, both write it in place); after the checks, for a compressed batch (one whose records
must be rebuilt is never copied).  The batches the shallow pass read are carried over to the copy where a
path needs them (:func:`carried_over`, :func:`writable`), not found again.  So a read-only buffer costs one
``memcpy`` more than a ``bytearray``, and the caller's object never changes.
"""

from __future__ import annotations

from functools import partial

from .. import _impl
from .._common import MAGIC_V2, NO_TIMESTAMP, TIMESTAMP_TYPE_MASK
from ..config.log_config import LogConfig
from ..record.batch import DefaultRecordBatch, RecordBatch
from ..record.compression import CompressionType
from ..record.memory import MemoryRecords
from ..record.records_util import record_batch_header_size_in_bytes
from ..record.types import TimestampType

__all__ = [
    "assign_offsets_one_batch",
    "assign_offsets_one_compressed_batch",
    "carried_over",
    "takes_one_batch",
    "writable",
]

_INT32 = 1 << 31
_INT64 = 1 << 63


def writable(records: MemoryRecords,
             batches: list[RecordBatch] | None) -> tuple[MemoryRecords, list[RecordBatch] | None]:
    """``records`` over a buffer the header rewrites may write (:meth:`MemoryRecords.writable
    <kafkalog.record.memory.MemoryRecords.writable>`: themselves, or one copy of a read-only buffer), with
    ``batches``, the batches already read from them (``None``: not read), as read from that buffer
    (:meth:`RecordBatch.over <kafkalog.record.batch.RecordBatch.over>`: the same positions, no new walk)."""
    target = records.writable()
    return target, carried_over(batches, records, target)


def carried_over(batches: list[RecordBatch] | None, records: MemoryRecords,
                 target: MemoryRecords) -> list[RecordBatch] | None:
    """``batches``, read from ``records``, as read from ``target``: ``records.writable()``, which is
    ``records`` itself or a copy of its buffer."""
    if target is records or batches is None:
        return batches
    buf = target.buffer
    return [batch.over(buf) for batch in batches]


def takes_one_batch(next_offset: int, config: LogConfig, source_compression: object, partition_leader_epoch: int,
                    batches: list[RecordBatch] | None) -> bool:
    """Whether the append is one uncompressed v2 batch, already read by the shallow pass (``batches``), for a
    v2 CreateTime log that keeps it uncompressed, with an offset and epoch the kernel's arguments can carry:
    then :func:`assign_offsets_one_batch` may take it, and when it declines the general path assigns the
    offsets in place too (``assignOffsetsNonCompressed``).  What the path needs of ``config`` is worked out once
    per config (:attr:`~kafkalog.config.log_config.LogConfig.one_batch_append_terms`)."""
    if (batches is None or len(batches) != 1 or source_compression is not CompressionType.NONE
            or batches[0].magic != MAGIC_V2
            or not -_INT32 <= partition_leader_epoch < _INT32 or not -_INT64 <= next_offset < _INT64):
        return False
    v2_create_time, keeps_uncompressed, _compacted, _before, _after = config.one_batch_append_terms
    return bool(v2_create_time and keeps_uncompressed)


def assign_offsets_one_batch(records: MemoryRecords, next_offset: int, now_ms: int, config: LogConfig, client: bool,
                             partition_leader_epoch: int) -> tuple[int, int] | None:
    """Validate and assign offsets in place to ``records``, one uncompressed v2 batch in a writable buffer, by one
    kernel call, when :func:`takes_one_batch` says the append qualifies (the caller has made the buffer
    writable, :func:`writable`).  ``client`` says the append's origin is a client (``AppendOrigin.CLIENT``:
    ``validateBatch``'s checks of the offset range, count, control flag and sequence apply).  Returns
    ``(last_offset, max_timestamp)`` as the kernel does; ``None``, with nothing written, when the general path
    must run.
    """
    _v2_create_time, _keeps_uncompressed, compacted, before, after = config.one_batch_append_terms
    result: tuple[int, int] | None = _impl.core.assign_offsets_v2_batch(
        records.buffer, next_offset, partition_leader_epoch, now=now_ms, timestamp_before_max_ms=before,
        timestamp_after_max_ms=after, compacted=compacted, client=client)
    return result


def assign_offsets_one_compressed_batch(
        records: MemoryRecords, next_offset: int, now_ms: int, config: LogConfig, source_compression: object,
        partition_leader_epoch: int, batches: list[RecordBatch] | None) -> tuple[MemoryRecords, int, int, int] | None:
    """Validate and assign offsets in place to a client's one compressed CreateTime v2 batch, already read by
    the shallow pass (``batches``), appended to a v2 CreateTime log whose codec is the batch's (or
    ``producer``): what ``LogValidator`` does on that path, in the same order, without building it.  Returns
    ``(records, last_offset, max_timestamp, uncompressed_size)``: the records rewritten (``records`` itself
    when its buffer is writable, else its one copy, made once the checks pass, :func:`writable`) and the
    validation stats' ``uncompressedBytesWritten``; ``None``, with nothing written or copied, when the general
    path must run: the append does not qualify, a batch or record check fails, or the inner offsets are not
    0, 1, 2, ... (the general path rebuilds the batch then).

    A record that cannot be decoded, or a payload that does not decompress, raises here what the general
    path raises at the same step: the same decode of the same batch.
    """
    if (batches is None or len(batches) != 1 or not isinstance(source_compression, CompressionType)
            or source_compression is CompressionType.NONE
            or not -_INT32 <= partition_leader_epoch < _INT32 or not -_INT64 <= next_offset < _INT64):
        return None
    batch = batches[0]
    chosen = config.compression_type.record_compression
    if not isinstance(batch, DefaultRecordBatch) or batch.attributes & TIMESTAMP_TYPE_MASK or (
            chosen is not None and chosen is not source_compression):
        return None
    v2_create_time, _keeps_uncompressed, compacted, before, after = config.one_batch_append_terms
    if not v2_create_time:
        return None
    # validateBatch for a client's v2 batch (a v2 log takes transactional and idempotent ones)
    count = batch.count
    if (count <= 0 or batch.last_offset - batch.base_offset + 1 != count or batch.is_control
            or (batch.has_producer_id and batch.base_sequence < 0)):
        return None
    # validateRecord for each record, by the general path's kernel over the decompressed records
    kernel = partial(_impl.core.validate_v2_records, now=now_ms, timestamp_before_max_ms=before,
                     timestamp_after_max_ms=after, compacted=compacted, check_timestamps=True)
    (validated, largest, size, in_sequence, errors), _data = batch._decode(kernel)
    if errors or not in_sequence:
        return None
    # setLastOffset, setMaxTimestamp(CreateTime, ...), setPartitionLeaderEpoch: in place, so in a buffer that
    # can be written, copied only now that the batch is known to be kept.
    target = records.writable()
    if target is not records:
        records, batch = target, batch.over(target.buffer)
    last_offset = next_offset + validated - 1
    max_timestamp = max(NO_TIMESTAMP, largest)
    batch.set_last_offset(last_offset)
    batch.set_max_timestamp(TimestampType.CREATE_TIME, max_timestamp)
    batch.set_partition_leader_epoch(partition_leader_epoch)
    return (records, last_offset, max_timestamp,
            record_batch_header_size_in_bytes(MAGIC_V2, source_compression) + size)

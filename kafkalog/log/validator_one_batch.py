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

__all__ = ["assign_offsets_one_batch", "assign_offsets_one_compressed_batch"]

_INT32 = 1 << 31
_INT64 = 1 << 63


def assign_offsets_one_batch(records: MemoryRecords, next_offset: int, now_ms: int, config: LogConfig,
                             source_compression: object, client: bool, partition_leader_epoch: int,
                             batches: list[RecordBatch] | None) -> tuple[int, int] | None:
    """Validate and assign offsets to ``records`` in place when they are one uncompressed v2 batch, already
    read by the shallow pass (``batches``), in a ``bytearray`` (writable: the general path copies a
    read-only buffer first), appended to a v2 CreateTime log that keeps them uncompressed.
    ``client`` says the append's origin is a client (``AppendOrigin.CLIENT``: ``validateBatch``'s checks of
    the offset range, count, control flag and sequence apply).  Returns ``(last_offset, max_timestamp)`` as
    the kernel does; ``None`` when the general path must run.  What the path needs of ``config`` is worked
    out once per config (:attr:`~kafkalog.config.log_config.LogConfig.one_batch_append_terms`).
    """
    if (batches is None or len(batches) != 1 or source_compression is not CompressionType.NONE
            or type(records.buffer) is not bytearray
            or not -_INT32 <= partition_leader_epoch < _INT32 or not -_INT64 <= next_offset < _INT64):
        return None
    v2_create_time, keeps_uncompressed, compacted, before, after = config.one_batch_append_terms
    if not (v2_create_time and keeps_uncompressed):
        return None
    result: tuple[int, int] | None = _impl.core.assign_offsets_v2_batch(
        records.buffer, next_offset, partition_leader_epoch, now=now_ms, timestamp_before_max_ms=before,
        timestamp_after_max_ms=after, compacted=compacted, client=client)
    return result


def assign_offsets_one_compressed_batch(records: MemoryRecords, next_offset: int, now_ms: int, config: LogConfig,
                                        source_compression: object, partition_leader_epoch: int,
                                        batches: list[RecordBatch] | None) -> tuple[int, int, int] | None:
    """Validate and assign offsets in place to a client's one compressed CreateTime v2 batch, already read by
    the shallow pass (``batches``), in a ``bytearray``, appended to a v2 CreateTime log whose codec is the
    batch's (or ``producer``): what ``LogValidator`` does on that path, in the same order, without building
    it.  Returns ``(last_offset, max_timestamp, uncompressed_size)`` (the last is the validation stats'
    ``uncompressedBytesWritten``); ``None``, with nothing written, when the general path must run: the
    append does not qualify, a batch or record check fails, or the inner offsets are not 0, 1, 2, ...
    (the general path rebuilds the batch then).

    A record that cannot be decoded, or a payload that does not decompress, raises here what the general
    path raises at the same step: the same decode of the same batch.
    """
    if (batches is None or len(batches) != 1 or not isinstance(source_compression, CompressionType)
            or source_compression is CompressionType.NONE or type(records.buffer) is not bytearray
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
    # setLastOffset, setMaxTimestamp(CreateTime, ...), setPartitionLeaderEpoch
    last_offset = next_offset + validated - 1
    max_timestamp = max(NO_TIMESTAMP, largest)
    batch.set_last_offset(last_offset)
    batch.set_max_timestamp(TimestampType.CREATE_TIME, max_timestamp)
    batch.set_partition_leader_epoch(partition_leader_epoch)
    return last_offset, max_timestamp, record_batch_header_size_in_bytes(MAGIC_V2, source_compression) + size

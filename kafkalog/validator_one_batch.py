"""The leader's validation of a linger-0 producer's append - one uncompressed v2 batch - in one kernel call.

Kafka 3.8's ``LogValidator.assignOffsetsNonCompressed`` over a request of one batch: ``validateBatch``, then
``validateRecord`` for every record, then ``setLastOffset``, ``setPartitionLeaderEpoch`` and
``setMaxTimestamp`` in place.  :func:`kafkalog.validator.validate_messages_and_assign_offsets` asks
:func:`assign_offsets_one_batch` first; when the append does not qualify, or a check would fail, it gets
``None`` with nothing written and goes on as before through :class:`~kafkalog.validator.LogValidator`, which
raises the error and counts the metric.  So every check still runs, and every error is the general path's.

A one-record append spends more on building the validator and its objects than on the checks themselves:
this path makes none (the ``assign_offsets_v2_batch`` kernel returns two ints).
"""

from __future__ import annotations

from . import _impl
from .config import LogConfig
from .record.batch import RecordBatch
from .record.compression import CompressionType
from .record.memory import MemoryRecords

__all__ = ["assign_offsets_one_batch"]

_INT32 = 1 << 31
_INT64 = 1 << 63


def assign_offsets_one_batch(records: MemoryRecords, next_offset: int, now_ms: int, config: LogConfig,
                             source_compression: object, client: bool, partition_leader_epoch: int,
                             batches: list[RecordBatch] | None) -> tuple[int, int] | None:
    """Validate and assign offsets to ``records`` in place when they are one uncompressed v2 batch, already
    read by the shallow pass (``batches``), in a ``bytearray`` (writable: the general path copies a
    read-only buffer first), appended to a log that keeps them as they are.
    ``client`` says the append's origin is a client (``AppendOrigin.CLIENT``: ``validateBatch``'s checks of
    the offset range, count, control flag and sequence apply).  Returns ``(last_offset, max_timestamp)`` as
    the kernel does; ``None`` when the general path must run.  What the path needs of ``config`` is worked
    out once per config (:attr:`~kafkalog.config.LogConfig.one_batch_append_terms`).
    """
    if (batches is None or len(batches) != 1 or source_compression is not CompressionType.NONE
            or type(records.buffer) is not bytearray
            or not -_INT32 <= partition_leader_epoch < _INT32 or not -_INT64 <= next_offset < _INT64):
        return None
    qualifies, compacted, before, after = config.one_batch_append_terms
    if not qualifies:
        return None
    result: tuple[int, int] | None = _impl.core.assign_offsets_v2_batch(
        records.buffer, next_offset, partition_leader_epoch, now=now_ms, timestamp_before_max_ms=before,
        timestamp_after_max_ms=after, compacted=compacted, client=client)
    return result

"""The leader's append of one batch as a producer sends it, fused into one pass: what ``Log.append`` does for
its commonest request, with no object between the steps.

Port of the path through ``UnifiedLog.append`` (Apache Kafka, tag 3.8.0,
``core/src/main/scala/kafka/log/UnifiedLog.scala``) that a client's append takes when it is one uncompressed v2
batch with no producer id (a producer with ``linger.ms=0`` and ``enable.idempotence=false``, or a user's
``MemoryRecords.with_records``), appended to a v2 CreateTime log that keeps it uncompressed.  On that path
Kafka's steps reduce to ints:

1. ``analyzeAndValidateRecords``: one batch, base offset 0, at most ``max.message.bytes``, its CRC right;
2. under the lock, ``LogValidator.assignOffsetsNonCompressed``: the batch and record checks, then the last
   offset, the partition leader epoch and the max timestamp written into the header in place;
3. the leader epoch assigned from the first offset (``maybeAssignEpochStartOffset``), the ``segment.bytes``
   check, ``maybeRoll``;
4. no producer id, so ``analyzeAndValidateProducerState`` has nothing to check;
5. ``LocalLog.append`` (the segment write and its index entries, the log end offset),
   ``updateHighWatermarkWithLogEndOffset``, ``updateMapEndOffset``, ``maybeIncrementFirstUnstableOffset``;
6. ``flush`` once ``flush.messages`` offsets are unflushed.

Steps 1 and 2 are one kernel call (``leader_append_v2_batch``), which reads the clock between them, as the
general path does, and returns the new last offset, the max timestamp and the epoch the batch came with; the
rest are the same methods the general path calls, given ints.
Producer-state bookkeeping that cannot change anything (no transaction open or waiting for the high watermark,
no first unstable offset) is skipped; otherwise the general path's methods run.

**Declining.**  Anything that does not qualify, and anything that would fail a check, is declined before a byte
of the log or the batch is written: :func:`append_one_batch_as_leader` returns what the general path needs to
run as if it had run alone (see there), and the general path raises the error.  So every error is the
general path's, in its order, with its message; the fused path raises only what the general path would raise
at the same step after validation (``segment.bytes``, the roll, an I/O error), through the same methods.  The
clock is read as often, at the same steps, as on the general path (a mock clock that ticks on every read gives
the same times either way).

Returns the same :class:`~kafkalog.log.append_info.LogAppendInfo` as the general path, field for field, built
in one step instead of filled in field by field.
"""

from __future__ import annotations

import logging
import threading
from typing import Protocol

from .. import _impl
from .._common import NO_PARTITION_LEADER_EPOCH, NO_TIMESTAMP
from ..errors import RecordBatchTooLargeError
from ..fetch import NO_OP_OFFSETS_LISTENER, LogOffsetMetadata, LogOffsetsListener
from ..leader_epoch_cache import LeaderEpochFileCache
from ..producer_state import ProducerStateManager
from ..record.compression import CompressionType
from ..record.memory import MemoryRecords
from ..record.records_util import RecordValidationStats
from ..scheduler import Time
from ..segment import LogSegment
from ..topic import TopicPartition
from . import append_info
from .local_log import LocalLog

__all__ = ["append_one_batch_as_leader"]

logger = logging.getLogger("kafkalog.log")  # the general path's logger (Log's): the same lines either way

_INT32 = 1 << 31
#: Bytes of a v2 batch's header read to decline an append before its buffer is copied or its CRC computed: the
#: magic byte, the low byte of the attributes (codec bits 0-2, timestamp type bit 3) and the first byte of the
#: producer id (its sign bit set: no producer id).
_MAGIC_AT, _ATTRIBUTES_LOW_AT, _PRODUCER_ID_AT = 16, 22, 43
_CODEC_OR_LOG_APPEND_TIME = 0x0F
_HEADER_BYTES = 61
_NONE = CompressionType.NONE
_NO_STATS = RecordValidationStats.EMPTY
_new = object.__new__


class _LeaderLog(Protocol):
    """What the fused append uses of its log (:class:`~kafkalog.log.unified_log.Log`): described here rather than
    imported, so the log's family keeps importing one way (the log imports this module)."""

    _lock: threading.RLock
    _closed: bool
    _log_start_offset: int
    _high_watermark: int | None
    _first_unstable_offset_metadata: LogOffsetMetadata | None
    _log_offsets_listener: LogOffsetsListener
    read_only: bool
    time: Time
    topic_partition: TopicPartition
    local_log: LocalLog
    leader_epoch_cache: LeaderEpochFileCache | None
    producer_state_manager: ProducerStateManager

    def _append_failure_message(self) -> str: ...
    def _maybe_roll_at(self, messages_size: int, first_offset: int | None, last_offset: int,
                       max_timestamp: int) -> LogSegment: ...
    def _update_high_watermark_with_log_end_offset(self) -> None: ...
    def _update_high_watermark_metadata(self, new_high_watermark: int, offset_only: bool = False) -> None: ...
    def _maybe_increment_first_unstable_offset(self) -> None: ...
    def flush(self, offset: int | None = None, *, including_offset: bool = False) -> None: ...


def append_one_batch_as_leader(log: _LeaderLog, records: MemoryRecords,
                               leader_epoch: int) -> append_info.LogAppendInfo | int | None:
    """A client's leader append of ``records`` to ``log`` (``Log.append`` with offsets assigned, origin
    ``client``, sizes checked) by the fused path, when they are one uncompressed v2 batch with no producer id
    and the log qualifies (v2, CreateTime, ``compression.type`` ``producer`` or ``uncompressed``).

    Returns the :class:`~kafkalog.log.append_info.LogAppendInfo` of the append done; otherwise nothing was
    written and the general path must run: ``None`` when the clock was not read, else the time read (ms), which
    the general path takes as its validation time instead of reading the clock again.

    Raises:
        RecordBatchTooLargeError: the batch is larger than ``segment.bytes`` (after validation, as in Kafka).
        KafkaStorageError: an I/O error (the log dir goes offline), as the general path raises it.
    """
    buf = records.buffer
    if (len(buf) < _HEADER_BYTES or buf[_MAGIC_AT] != 2 or buf[_ATTRIBUTES_LOW_AT] & _CODEC_OR_LOG_APPEND_TIME
            or not buf[_PRODUCER_ID_AT] & 0x80):
        # Not one uncompressed CreateTime v2 batch without a producer id: the kernel would decline it before
        # the clock, after a copy and a CRC pass the general path makes again (a compressed batch's, or an
        # idempotent producer's).
        return None
    kind = type(buf)
    if kind is bytes:
        buf = bytearray(buf)  # the header is rewritten in place; the caller's bytes are never written
    elif kind is not bytearray:
        buf = records.writable().buffer
    log_start_offset = log._log_start_offset  # read before the lock, as the shallow pass reads it
    with log._lock:
        local_log = log.local_log
        config = local_log.config
        v2_create_time, keeps_uncompressed, compacted, before, after = config.one_batch_append_terms
        failure_channel = local_log.log_dir_failure_channel
        parent_dir = local_log.parent_dir
        if (not (v2_create_time and keeps_uncompressed) or not -_INT32 <= leader_epoch < _INT32 or log._closed
                or log.read_only or local_log.is_memory_mapped_buffer_closed
                or failure_channel.has_offline_log_dir(parent_dir)):
            return None
        max_size = config.max_message_size
        if records.max_batch_size < max_size:
            max_size = records.max_batch_size
        offset = local_log.next_offset_metadata.message_offset
        assigned: tuple[int, int, int] | int | None = _impl.core.leader_append_v2_batch(
            buf, offset, leader_epoch, log.time.milliseconds, timestamp_before_max_ms=before,
            timestamp_after_max_ms=after, compacted=compacted, max_size=max_size)
        if not isinstance(assigned, tuple):
            return assigned  # declined: None, or the time the kernel read
        last_offset, max_timestamp, sent_epoch = assigned
        # Log._maybe_handle_io_exception, without its two hops (the log is writable)
        with failure_channel.maybe_handle_io_exception(parent_dir, log._append_failure_message):
            # The epoch stamped by the leader (Kafka: before the write); the batch is v2.
            cache = log.leader_epoch_cache
            if leader_epoch != NO_PARTITION_LEADER_EPOCH and cache is not None:
                cache.assign(leader_epoch, offset)  # maybeAssignEpochStartOffset
            size = len(buf)
            if size > config.segment_size:
                raise RecordBatchTooLargeError(
                    f"Message batch size is {size} bytes in append to partition {log.topic_partition}, which "
                    f"exceeds the maximum configured segment size of {config.segment_size}.")
            log._maybe_roll_at(size, offset, last_offset, max_timestamp)
            # No producer id: nothing for the producer state to check before the write.
            local_log.append_batch(last_offset, max_timestamp, buf)
            end_offset = last_offset + 1
            producer_state = log.producer_state_manager
            if producer_state.has_transactions() or log._first_unstable_offset_metadata is not None:
                # what the general path runs, when it can change something
                log._update_high_watermark_with_log_end_offset()
                producer_state.update_map_end_offset(end_offset)
                if log._high_watermark is None:
                    producer_state.on_high_watermark_updated(end_offset)
                log._maybe_increment_first_unstable_offset()
            else:
                if log._high_watermark is None:
                    # A high watermark that follows the log end offset moves with it; nobody set it.
                    listener = log._log_offsets_listener
                    if listener is not NO_OP_OFFSETS_LISTENER:
                        listener.on_high_watermark_updated(end_offset)
                elif log._high_watermark >= end_offset:
                    log._update_high_watermark_metadata(end_offset)
                producer_state.update_map_end_offset(end_offset)
            if logger.isEnabledFor(logging.DEBUG):
                logger.debug("Appended message set with last offset: %d, first offset: %s, next offset: %d, "
                             "and messages: %s", last_offset, offset, end_offset, MemoryRecords(buf))
            if end_offset - local_log.recovery_point >= config.flush_interval:
                log.flush()
    info = _new(append_info.LogAppendInfo)
    info.__dict__ = {
        "first_offset": offset, "last_offset": last_offset, "max_timestamp": max_timestamp,
        "shallow_offset_of_max_timestamp": last_offset if max_timestamp > NO_TIMESTAMP else -1,
        "log_append_time": NO_TIMESTAMP, "log_start_offset": log_start_offset, "source_compression": _NONE,
        "target_compression": _NONE, "shallow_count": 1, "valid_bytes": size, "offsets_monotonic": True,
        "last_offset_of_first_batch": last_offset - offset, "record_errors": [],
        "last_leader_epoch": None if sent_epoch == NO_PARTITION_LEADER_EPOCH else sent_epoch,
        "record_validation_stats": _NO_STATS,
    }
    return info

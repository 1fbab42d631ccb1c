"""The append pass: what a batch of records about to be appended holds (:class:`LogAppendInfo`) and the
header-level checks that find it out, before the validator assigns offsets.

Named for :class:`LogAppendInfo`, the one thing the pass produces and every caller of ``Log.append`` gets
back; the two functions here only fill it in (:func:`analyze_and_validate_records`) or cut the records to
what it found valid (:func:`trim_invalid_bytes`).  Kafka 3.x keeps the class in its own file and the two
functions in ``UnifiedLog``; kafkalog's ``Log`` is already large, and these run before the log's lock is
taken and touch nothing of the log but its config, so they sit beside the class instead.

Ports of (Apache Kafka, tag 3.8.0):

* ``storage/src/main/java/org/apache/kafka/storage/internals/log/LogAppendInfo.java``
  (:class:`LogAppendInfo`);
* ``core/src/main/scala/kafka/log/UnifiedLog.scala``: ``analyzeAndValidateRecords`` and
  ``trimInvalidBytes`` (:func:`analyze_and_validate_records`, :func:`trim_invalid_bytes`);
* ``clients/src/main/java/org/apache/kafka/common/errors/OffsetsOutOfOrderException.java``
  (:class:`OffsetsOutOfOrderError`, raised only by this pass);

and of 0.10.1.1's ``core/src/main/scala/kafka/log/Log.scala`` (``analyzeAndValidateMessageSet``,
``trimInvalidBytes`` and the ``LogAppendInfo`` fields ``targetCodec``, ``shallowCount`` and
``offsetsMonotonic``, kept here beside 3.8's).

The leader's append runs the pass, then the validator (:mod:`kafkalog.log.validator`)::

    info = analyze_and_validate_records(records, config)        # shallow: sizes, CRCs, offsets
    if info.valid_bytes <= 0: return info                      # nothing valid
    records = trim_invalid_bytes(records, info)                # drop a partial trailing batch
    result = validate_messages_and_assign_offsets(...)         # deep: offsets, timestamps, keys

A follower's append (offsets kept) asks the pass for increasing offsets (``require_offsets_monotonic``), as
Kafka's ``append`` does with ``!validateAndAssignOffsets``; nothing else checks the order.

Invariants of what the pass reads: it never decompresses (a v0/v1 wrapper's first offset stays unknown,
``first_offset is None``); a partial batch at the end is not an error but is left out of ``valid_bytes``;
the CRC checked is each batch's own (v2: CRC-32C of attributes..end; v0/v1: CRC-32 of magic..end).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from .._common import COMPRESSION_CODEC_MASK, MAGIC_V2, NO_PARTITION_LEADER_EPOCH, NO_TIMESTAMP
from ..append_origin import AppendOrigin
from ..config.log_config import LogConfig
from ..errors import CorruptRecordError, InvalidOffsetError, InvalidRecordError, RecordTooLargeError
from ..record.batch import RecordBatch
from ..record.compression import CompressionType
from ..record.memory import MemoryRecords
from ..record.records_util import RecordValidationStats
from .validator import _NO_METRICS, MetricsRecorder, RecordError, _in, target_compression

__all__ = [
    "LogAppendInfo",
    "OffsetsOutOfOrderError",
    "analyze_and_validate_records",
    "trim_invalid_bytes",
]


class OffsetsOutOfOrderError(InvalidOffsetError):
    """An append that must keep its offsets has offsets that do not increase (Kafka:
    ``OffsetsOutOfOrderException``)."""


# ---------------------------------------------------------------------------------------------------------
# LogAppendInfo


@dataclass
class LogAppendInfo:
    """What an append found out about its records (Kafka 3.8: ``LogAppendInfo``; 0.10.1: ``LogAppendInfo``
    in ``Log.scala``, whose ``targetCodec``, ``shallowCount`` and ``offsetsMonotonic`` are kept too).

    The shallow pass (:func:`analyze_and_validate_records`) fills it from the batch headers; the leader's
    append then sets ``first_offset``, ``last_offset``, ``max_timestamp`` and ``shallow_offset_of_max_timestamp``
    from the offsets it assigned (:class:`ValidationResult`), and ``log_append_time`` on a LogAppendTime topic
    only (a CreateTime topic's stays -1, as Kafka's ``UnifiedLog.append`` leaves it); a duplicate's is its
    original batch's timestamp.

    ``first_offset`` is ``None`` (Kafka: -1) until known: the shallow pass knows it for v2 batches only,
    because a v0/v1 wrapper holds its last offset (``last_offset_of_first_batch`` stands in for it).
    ``shallow_offset_of_max_timestamp`` is the last offset of the first batch holding the max timestamp.
    ``record_validation_stats`` is what the leader's validation cost (Kafka: ``recordValidationStats``, set by
    ``UnifiedLog.append`` from the validator's result); it stays :attr:`RecordValidationStats.EMPTY
    <kafkalog.record.records_util.RecordValidationStats.EMPTY>` for an append that keeps its offsets.
    """

    first_offset: int | None = None
    last_offset: int = -1
    max_timestamp: int = NO_TIMESTAMP
    shallow_offset_of_max_timestamp: int = -1
    log_append_time: int = NO_TIMESTAMP
    log_start_offset: int = -1
    source_compression: CompressionType = CompressionType.NONE
    target_compression: CompressionType = CompressionType.NONE
    shallow_count: int = 0
    valid_bytes: int = -1
    offsets_monotonic: bool = False
    last_offset_of_first_batch: int = -1
    record_errors: list[RecordError] = field(default_factory=list)
    last_leader_epoch: int | None = None
    record_validation_stats: RecordValidationStats = RecordValidationStats.EMPTY

    @property
    def num_messages(self) -> int:
        """``last - first + 1`` when both are known, else 0 (Kafka: ``numMessages``, the most messages the
        append can hold: compaction may have left gaps)."""
        if self.first_offset is not None and self.first_offset >= 0 and self.last_offset >= 0:
            return self.last_offset - self.first_offset + 1
        return 0

    @property
    def first_or_last_offset_of_first_batch(self) -> int:
        """The first offset when known, else the last offset of the first batch (Kafka:
        ``firstOrLastOffsetOfFirstBatch``)."""
        if self.first_offset is not None and self.first_offset >= 0:
            return self.first_offset
        return self.last_offset_of_first_batch

    @classmethod
    def unknown(cls, log_start_offset: int = -1, record_errors: Iterable[RecordError] = ()) -> LogAppendInfo:
        """Kafka's ``UNKNOWN_LOG_APPEND_INFO`` / ``unknownLogAppendInfoWithLogStartOffset`` /
        ``unknownLogAppendInfoWithAdditionalInfo``: an append that did not happen."""
        return cls(log_start_offset=log_start_offset, record_errors=list(record_errors))


# ---------------------------------------------------------------------------------------------------------
# The shallow pass (UnifiedLog.analyzeAndValidateRecords, trimInvalidBytes)


def analyze_and_validate_records(
    records: MemoryRecords,
    config: LogConfig,
    *,
    origin: AppendOrigin | str = AppendOrigin.CLIENT,
    ignore_record_size: bool = False,
    require_offsets_monotonic: bool = False,
    leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    log_start_offset: int = -1,
    topic_partition: str | None = None,
    metrics: MetricsRecorder | None = None,
    scanned: list[RecordBatch] | None = None,
) -> LogAppendInfo:
    """Check every batch's header and CRC and sum up the append (Kafka 3.8:
    ``UnifiedLog.analyzeAndValidateRecords``; 0.10.1: ``Log.analyzeAndValidateMessageSet``).

    Per batch, in Kafka's order: a ``raft_leader`` batch must carry ``leader_epoch``; a v2 batch from a
    client must have base offset 0; the first batch gives ``first_offset`` (v2 only) and
    ``last_offset_of_first_batch``; offsets must increase (``offsets_monotonic``); the batch may not be
    larger than ``max.message.bytes`` (unless ``ignore_record_size``, the follower's case); its CRC must
    hold.  The largest max timestamp and the last offset of its batch, the valid bytes, the number of
    batches and the source codec (the codec of the last compressed batch, Kafka's rule: the leader path
    holds one batch whenever it is v2 or compressed) are collected.

    The buffer is read as Kafka's ``MemoryRecords.batches()`` reads it: a partial batch at the end is not an
    error, it is left out of ``valid_bytes`` (see :func:`trim_invalid_bytes`).  Each batch read is appended
    to ``scanned`` when given, so that the leader's validation need not scan the buffer again.

    Raises:
        InvalidRecordError: a client's v2 batch with a base offset other than 0, or a Raft leader's batch
            without the leader epoch.
        RecordTooLargeError: a batch larger than ``max.message.bytes``, naming both sizes.
        CorruptRecordError: a batch whose CRC does not match, or framing the batch reader refuses.
        OffsetsOutOfOrderError: offsets that do not increase, when ``require_offsets_monotonic`` (Kafka asks
            for it when the append keeps the offsets it is given).
    """
    origin = AppendOrigin.of(origin)
    recorder: MetricsRecorder = _NO_METRICS if metrics is None else metrics
    valid_bytes = 0
    first_offset: int | None = None
    last_offset = -1
    last_leader_epoch = NO_PARTITION_LEADER_EPOCH
    source = CompressionType.NONE
    monotonic = True
    max_timestamp = NO_TIMESTAMP
    shallow_offset_of_max_timestamp = -1
    read_first_message = False
    last_offset_of_first_batch = -1
    shallow_count = 0

    only = records.only_batch()  # a linger-0 producer's append: no scan array to build
    for batch in records.batches(strict=False) if only is None else (only,):
        if scanned is not None:
            scanned.append(batch)
        if origin is AppendOrigin.RAFT_LEADER and batch.partition_leader_epoch != leader_epoch:
            raise InvalidRecordError("Append from Raft leader did not set the batch epoch correctly",
                                     batch.position)
        # Only v2 is checked, to keep old clients working.
        if batch.magic >= MAGIC_V2 and origin is AppendOrigin.CLIENT and batch.base_offset != 0:
            raise InvalidRecordError(
                f"The baseOffset of the record batch in the append{_in(' to ', topic_partition)} "
                f"should be 0, but it is {batch.base_offset}",
                batch.position,
            )
        # A v0/v1 wrapper holds its last offset: its first needs decompression, so only v2 gives it here.
        if not read_first_message:
            if batch.magic >= MAGIC_V2:
                first_offset = batch.base_offset
            last_offset_of_first_batch = batch.last_offset
            read_first_message = True

        if last_offset >= batch.last_offset:
            monotonic = False
        last_offset = batch.last_offset
        last_leader_epoch = batch.partition_leader_epoch

        batch_size = batch.size_in_bytes
        if not ignore_record_size and batch_size > config.max_message_size:
            recorder.record_bytes_rejected(records.size_in_bytes())
            raise RecordTooLargeError(
                f"The record batch size in the append{_in(' to ', topic_partition)} is {batch_size} bytes "
                f"which exceeds the maximum configured value of {config.max_message_size}.",
                batch.position,
            )

        if not batch.is_valid():
            recorder.record_invalid_checksums()
            raise CorruptRecordError(
                f"Record is corrupt (stored crc = {batch.crc})"
                f"{_in(' in topic partition ', topic_partition)}.",
                batch.position,
            )

        if batch.max_timestamp > max_timestamp:
            max_timestamp = batch.max_timestamp
            shallow_offset_of_max_timestamp = last_offset

        valid_bytes += batch_size
        shallow_count += 1
        codec_id = batch.attributes & COMPRESSION_CODEC_MASK
        if codec_id:  # the enum lookup only for a compressed batch (0 is NONE)
            source = CompressionType.of(codec_id)

    if require_offsets_monotonic and not monotonic:
        offsets = [record.offset for record in records.records(check_crcs=False)]
        raise OffsetsOutOfOrderError(
            f"Out of order offsets found in append{_in(' to ', topic_partition)}: {offsets}"
        )

    return LogAppendInfo(
        first_offset=first_offset,
        last_offset=last_offset,
        max_timestamp=max_timestamp,
        shallow_offset_of_max_timestamp=shallow_offset_of_max_timestamp,
        log_append_time=NO_TIMESTAMP,
        log_start_offset=log_start_offset,
        source_compression=source,
        target_compression=target_compression(config, source),
        shallow_count=shallow_count,
        valid_bytes=valid_bytes,
        offsets_monotonic=monotonic,
        last_offset_of_first_batch=last_offset_of_first_batch,
        record_errors=[],
        last_leader_epoch=None if last_leader_epoch == NO_PARTITION_LEADER_EPOCH else last_leader_epoch,
    )


def trim_invalid_bytes(records: MemoryRecords, info: LogAppendInfo, *,
                       topic_partition: str | None = None) -> MemoryRecords:
    """The records without what follows their valid bytes (a partial trailing batch) (Kafka:
    ``UnifiedLog.trimInvalidBytes``; 0.10.1: ``Log.trimInvalidBytes``).

    Returns ``records`` itself when every byte is valid; otherwise new records over a writable copy of the
    valid prefix (Kafka shares the buffer; a copy keeps no view of the caller's buffer alive, and being
    writable lets the validator rewrite it in place).

    Raises:
        CorruptRecordError: ``info.valid_bytes`` is negative.
    """
    valid_bytes = info.valid_bytes
    if valid_bytes < 0:
        raise CorruptRecordError(
            f"Cannot append record batch with illegal length {valid_bytes} to log"
            f"{_in(' for ', topic_partition)}. A possible cause is a corrupted produce request."
        )
    if valid_bytes == records.size_in_bytes():
        return records
    with memoryview(records.buffer) as view, view[:valid_bytes] as prefix:
        trimmed = bytearray(prefix)
    return MemoryRecords(trimmed, max_batch_size=records.max_batch_size,
                         max_decompressed_size=records.max_decompressed_size)

"""Append-time validation: Kafka's ``LogValidator``, the deep pass of ``Log.append``.

Port of (Apache Kafka, tag 3.8.0) ``storage/src/main/java/org/apache/kafka/storage/internals/log/LogValidator.java``
- offset assignment, timestamp and key checks, magic conversion and recompression (:class:`LogValidator`,
:func:`validate_messages_and_assign_offsets`) - with the errors, append origins and metrics recorder it
shares with the shallow pass (:mod:`kafkalog.log.append_info`: ``LogAppendInfo``, ``analyzeAndValidateRecords``,
``trimInvalidBytes``).  0.10.1 has no ``LogValidator.scala``: the same checks are
``ByteBufferMessageSet.validateMessagesAndAssignOffsets`` (``core/.../message``), which 0.10.2 moved into
``LogValidator``; 3.8 is its descendant, and this port follows 3.8's order of checks and messages.

The leader's append, in Kafka's order::

    info = analyze_and_validate_records(records, config)        # shallow: sizes, CRCs, offsets
    if info.valid_bytes <= 0: return info                      # nothing valid
    records = trim_invalid_bytes(records, info)                # drop a partial trailing batch
    result = validate_messages_and_assign_offsets(             # deep: offsets from the log end,
        records, log_end_offset, now_ms, config,               # timestamps, keys, conversion
        source_compression=info.source_compression)
    # then: re-check batch sizes when result.message_size_maybe_changed, roll, append ...

Three paths, chosen as ``LogValidator.validateMessagesAndAssignOffsets`` chooses them:

* source and target codec ``none``, every batch already of the log's magic: **in place**
  (``assignOffsetsNonCompressed``).  Each batch's offsets are rewritten (v2: the base offset, so that
  ``base + lastOffsetDelta`` is the last assigned offset; v0/v1: the frame offset of each message), v2
  batches get the partition leader epoch, and v1/v2 batches the max timestamp (the append time, with the
  LogAppendTime attribute bit, under ``LogAppendTime``).  The CRC is recomputed only where it covers a
  changed field: a v2 CRC (CRC-32C from the attributes to the end) covers the attributes and the max
  timestamp but not the base offset or the leader epoch; a legacy CRC (CRC-32 from the magic to the end)
  covers the attributes and timestamp but not the frame offset.
* source and target codec ``none`` but a magic to convert (up or down): **rebuild** every record into
  uncompressed batches of the log's magic (``convertAndAssignOffsetsNonCompressed``).
* either codec compressed: ``validateMessagesAndAssignOffsetsCompressed``.  In place when the codec is
  kept, the magic matches and is not v0, and the records' offsets are 0, 1, 2, ... (old clients get v1 inner
  offsets wrong): only the wrapper's or batch's header changes.  Otherwise every record is rebuilt into one
  batch (one wrapper for v0/v1) of the target codec and magic (``buildRecordsAndAssignOffsets``).

A writable buffer (``bytearray``, a writable ``memoryview`` or ``mmap``) is rewritten in place, as Kafka
rewrites the request's ``ByteBuffer``.  A read-only one (the ``bytes`` that ``MemoryRecords.with_records``
builds, a read-only ``memoryview`` or ``mmap``) is never written: it is copied once, into a ``bytearray``
(``MemoryRecords.writable``), on the paths that rewrite in place and only there (before the one-batch kernel,
in ``assignOffsetsNonCompressed``, before the header rewrites of a compressed batch kept in its codec), and
the batches already read are carried over to the copy instead of being found again
(:mod:`kafkalog.log.validator_one_batch`).  So a read-only buffer costs one ``memcpy`` more than a writable
one, the same path otherwise; a rebuild copies nothing.  Kafka has no such step: a broker owns the request
buffer it rewrites.

The inter-broker protocol: kafkalog has no broker, so no broker-wide ``inter.broker.protocol.version``;
:class:`LogValidator` takes one (``inter_broker_protocol_version``, a ``MetadataVersion`` name such as
``"2.0-IV1"``; the newest by default) for the one check that depends on it, the refusal of ZStandard below
2.1 (``UnsupportedCompressionTypeException`` at the top of ``validateMessagesAndAssignOffsetsCompressed``).
The IBP that made 3.x ignore ``message.format.version`` is not modelled (``LogConfig.record_version``
always honours it).

:attr:`ValidationResult.record_validation_stats` is Kafka's ``RecordValidationStats``: the temporary bytes
(decompressed and rebuilt, counted as ``MemoryRecordsBuilder.uncompressedBytesWritten`` counts them), the
records rebuilt and the nanoseconds spent rebuilding (from ``nanoseconds``, ``time.monotonic_ns`` unless
given).

Left out, because it needs machinery this port does not have:

* producer state and the transaction coordinator: ``analyzeAndValidateProducerState``, duplicate
  detection, ``VerificationGuard`` and the follower's ``UnexpectedAppendOffsetException`` belong to
  ``append`` after this step and are not here;
* ``BufferSupplier`` (buffer reuse) and ``LogAppendInfo.leaderHwChange`` / ``recordValidationStats``;
* compression levels (``compression.gzip.level`` ...): the record layer's codecs write at Kafka's default
  levels, so a target ``Compression`` is its codec only.  As in Kafka, a batch whose codec already matches is
  not recompressed whatever level it was written at.

Where this port differs from Kafka, and why:

* the offset counter (Kafka's ``LongRef``) is an ``int`` in and :attr:`ValidationResult.next_offset` out
  (``last_offset`` is ``next_offset - 1``);
* ``topic_partition`` is optional; without it the messages leave out the partition;
* Kafka's ``MetricsRecorder`` is an optional object here (:class:`MetricsRecorder`,
  :class:`MetricsCounter`), also told of rejected bytes (UnifiedLog's ``bytesRejectedRate``);
* records rebuilt with no record at all (possible only for a non-client origin) give empty records with
  max timestamp -1 where Kafka's ``MemoryRecordsBuilder.info`` would fail on its null last offset;
* a v0 log under ``LogAppendTime`` rebuilds with the CreateTime bit, which is what Kafka writes too (v0 has
  no timestamp type bit), because the record layer's builder refuses the combination;
* the header rewrites (Kafka's ``setLastOffset``, ``setMaxTimestamp``, ``setPartitionLeaderEpoch``) are the
  record layer's (:meth:`~kafkalog.record.batch.DefaultRecordBatch.set_max_timestamp` and its siblings), on
  a writable copy when the caller's buffer is read-only;
* legacy messages are validated as :class:`~kafkalog.record.legacy.LegacyRecord` objects
  (:meth:`~kafkalog.record.legacy.LegacyRecordBatch.legacy_records`, Kafka's ``LegacyRecord`` and
  ``DeepRecordsIterator``), not with the record layer's columnar reader, which refuses what Kafka's
  validator takes or reports otherwise: negative v1 relative offsets and absolute offsets past
  ``Long.MaxValue`` (Kafka wraps them), a compressed inner message (refused before any record is read, with
  its own message, where Kafka refuses it when it is reached: ``Inner messages must not be compressed``), a
  zstd wrapper (``UnsupportedCompressionError`` where Kafka raises ``InvalidRecordException``); and it keeps
  no message's own size or computed CRC, which the validator's messages and ``ensureValid`` need.

Kept as Kafka has them, though they may surprise:

* ``validateRecord`` catches ``InvalidRecordException`` around the inner legacy CRC check to add the
  partition to the message, but ``LegacyRecord.ensureValid`` throws ``CorruptRecordException``, which that
  catch does not see: the error goes out with ``ensureValid``'s own message and no checksum metric.  This
  port does the same.
* Kafka keeps no check on tombstones (null values) here, on compacted topics or not; neither does this
  port.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any, NamedTuple, Protocol

from .. import _impl
from .._common import (
    LEGACY_COMPRESSION_MASK,
    LOG_OVERHEAD,
    MAGIC_V0,
    MAGIC_V1,
    MAGIC_V2,
    NO_PARTITION_LEADER_EPOCH,
    NO_TIMESTAMP,
    java_long,
)
from ..append_origin import AppendOrigin
from ..config.log_config import LogConfig, _metadata_version_ordinal, target_compression
from ..errors import (
    CorruptRecordError,
    IllegalArgumentError,
    InvalidRecordError,
    KafkaLogError,
    UnsupportedCompressionError,
)
from ..record.batch import DefaultRecordBatch, RecordBatch
from ..record.compression import CompressionType
from ..record.legacy import LegacyRecord, LegacyRecordBatch
from ..record.memory import MemoryRecords
from ..record.records_util import (
    RecordValidationStats,
    default_record_size_in_bytes,
    record_batch_header_size_in_bytes,
)
from ..record.types import TimestampType
from .validator_builder import build_records, check_builder_arguments
from .validator_one_batch import (
    assign_offsets_one_batch,
    assign_offsets_one_compressed_batch,
    carried_over,
    takes_one_batch,
    writable,
)

# The codes of a record the validate_v2_records kernel rejects (kafkalog._core_py.validate).
_RECORD_NO_KEY = 1

__all__ = [
    "InvalidTimestampError",
    "LogValidator",
    "MetricsCounter",
    "MetricsRecorder",
    "RecordError",
    "RecordValidationError",
    "RecordValidationStats",
    "UnsupportedForMessageFormatError",
    "ValidationResult",
    "target_compression",
    "validate_messages_and_assign_offsets",
]


def _in(prefix: str, topic_partition: str | None) -> str:
    """``prefix + topic_partition``, or nothing when the partition is not known."""
    return "" if topic_partition is None else f"{prefix}{topic_partition}"


# ---------------------------------------------------------------------------------------------------------
# Errors (Kafka: RecordValidationException, InvalidTimestampException, UnsupportedForMessageFormatException)


class RecordError(NamedTuple):
    """One rejected record: its index in its batch and why (Kafka: ``ProduceResponse.RecordError``)."""

    batch_index: int
    message: str | None = None

    def __str__(self) -> str:
        message = "null" if self.message is None else f"'{self.message}'"
        return f"RecordError(batchIndex={self.batch_index}, message={message})"


class RecordValidationError(InvalidRecordError):
    """One or more records of a batch were rejected (Kafka: ``RecordValidationException`` wrapping an
    ``InvalidRecordException``).

    ``record_errors`` lists every rejected record of the batch (Kafka fails the whole batch and reports them
    all, KIP-467).  Raised as this class for invalid records (a missing key on a compacted topic, an inner
    magic that does not match its wrapper) and as :class:`InvalidTimestampError` when any record of the batch
    had an invalid timestamp, which takes precedence as in Kafka.
    """

    def __init__(self, message: str, record_errors: Iterable[RecordError] = ()) -> None:
        super().__init__(message)
        self.record_errors: list[RecordError] = list(record_errors)


class InvalidTimestampError(RecordValidationError):
    """Records rejected for their timestamps (Kafka: ``RecordValidationException`` wrapping an
    ``InvalidTimestampException``): a CreateTime timestamp outside ``message.timestamp.before.max.ms`` /
    ``after.max.ms`` of now, or a producer that set LogAppendTime on a LogAppendTime topic."""


class UnsupportedForMessageFormatError(KafkaLogError, ValueError):
    """A batch that the log's message format cannot carry: transactional or idempotent records for a log
    below v2; or a search by timestamp in a v0 log (Kafka: ``UnsupportedForMessageFormatException``)."""


# ---------------------------------------------------------------------------------------------------------
# Origins and metrics


class MetricsRecorder(Protocol):
    """What the validator reports to the broker's meters (Kafka: ``LogValidator.MetricsRecorder``, which
    ``UnifiedLog.newValidatorMetricsRecorder`` maps onto ``BrokerTopicStats``), plus the rejected bytes
    that ``UnifiedLog`` marks on ``bytesRejectedRate``."""

    def record_invalid_magic(self) -> None: ...

    def record_invalid_offset(self) -> None: ...

    def record_invalid_sequence(self) -> None: ...

    def record_invalid_checksums(self) -> None: ...

    def record_no_key_compacted_topic(self) -> None: ...

    def record_bytes_rejected(self, size: int) -> None: ...


@dataclass
class MetricsCounter:
    """A :class:`MetricsRecorder` that counts, named after Kafka's meters
    (``InvalidMagicNumberRecordsPerSec``, ``InvalidOffsetOrSequenceRecordsPerSec`` (offsets and sequences),
    ``InvalidMessageCrcRecordsPerSec``, ``NoKeyCompactedTopicRecordsPerSec``, ``BytesRejectedPerSec``)."""

    invalid_magic: int = 0
    invalid_offset_or_sequence: int = 0
    invalid_checksums: int = 0
    no_key_compacted_topic: int = 0
    bytes_rejected: int = 0

    def record_invalid_magic(self) -> None:
        self.invalid_magic += 1

    def record_invalid_offset(self) -> None:
        self.invalid_offset_or_sequence += 1

    def record_invalid_sequence(self) -> None:
        self.invalid_offset_or_sequence += 1

    def record_invalid_checksums(self) -> None:
        self.invalid_checksums += 1

    def record_no_key_compacted_topic(self) -> None:
        self.no_key_compacted_topic += 1

    def record_bytes_rejected(self, size: int) -> None:
        self.bytes_rejected += size


class _NoMetrics:
    """The recorder used when the caller passes none."""

    def record_invalid_magic(self) -> None:
        pass

    def record_invalid_offset(self) -> None:
        pass

    def record_invalid_sequence(self) -> None:
        pass

    def record_invalid_checksums(self) -> None:
        pass

    def record_no_key_compacted_topic(self) -> None:
        pass

    def record_bytes_rejected(self, size: int) -> None:
        pass


_NO_METRICS = _NoMetrics()


# ---------------------------------------------------------------------------------------------------------
# Records as the validator sees them


def _describe(record: Any) -> str:
    """A record as Kafka's ``toString`` shows it in error messages."""
    if isinstance(record, LegacyRecord):
        return str(record)
    key_size = 0 if record.key is None else len(record.key)
    value_size = 0 if record.value is None else len(record.value)
    return (f"DefaultRecord(offset={record.offset}, timestamp={record.timestamp}, key={key_size} bytes, "
            f"value={value_size} bytes)")


def _has_magic(record: Any, magic: int) -> bool:
    """Kafka's ``Record.hasMagic``: a v2 record has any magic from 2 on; a legacy one exactly its own."""
    if isinstance(record, LegacyRecord):
        return bool(record.magic == magic)
    return magic >= MAGIC_V2


def _batch_records(batch: RecordBatch, buf: Any, max_decompressed_size: int) -> Iterator[Any]:
    """A batch's records as Kafka's ``batch.iterator()`` / ``streamingIterator()`` gives them: a v2 batch's
    decoded records; an uncompressed legacy message is its own one record; a wrapper's inner messages."""
    if isinstance(batch, DefaultRecordBatch):
        return iter(batch.records(check_crcs=False))
    assert isinstance(batch, LegacyRecordBatch)
    return batch.legacy_records()


def _record_size_in_bytes(batch: RecordBatch, record: Any) -> int:
    """A record's ``sizeInBytes`` as Kafka's validator sums it: a v2 record's encoded size, a v0/v1 inner
    message with its frame."""
    if isinstance(record, LegacyRecord):
        return LOG_OVERHEAD + record.size_in_bytes
    assert isinstance(batch, DefaultRecordBatch)
    return default_record_size_in_bytes(record.offset - batch.base_offset,
                                        record.timestamp - batch.base_timestamp, record.key, record.value,
                                        record.headers)


# ---------------------------------------------------------------------------------------------------------
# LogValidator


@dataclass(frozen=True)
class ValidationResult:
    """What validation made of the records (Kafka: ``LogValidator.ValidationResult``).

    ``valid_records`` are the records to append, with offsets from the ``next_offset`` given up to this
    ``next_offset`` (exclusive); ``max_timestamp`` and ``shallow_offset_of_max_timestamp`` (the last offset
    of the batch that holds it) feed the time index; ``message_size_maybe_changed`` says the records were
    rebuilt, so the caller must check the batch sizes against ``max.message.bytes`` again;
    ``log_append_time`` is the ``now_ms`` used; ``record_validation_stats`` what decompressing and rebuilding
    cost (none for uncompressed records kept in place).
    """

    valid_records: MemoryRecords
    max_timestamp: int
    shallow_offset_of_max_timestamp: int
    message_size_maybe_changed: bool
    log_append_time: int
    next_offset: int
    record_validation_stats: RecordValidationStats = RecordValidationStats.EMPTY

    @property
    def last_offset(self) -> int:
        """The last offset assigned: ``next_offset - 1`` (Kafka: ``setLastOffset(offset.value - 1)``)."""
        return self.next_offset - 1

    @classmethod
    def _in_place(cls, records: MemoryRecords, last_offset: int, max_timestamp: int, now: int) -> ValidationResult:
        """The result of one batch validated in place: the same fields, set at once (the frozen ``__init__``'s
        seven ``object.__setattr__`` calls cost a one-record append more than the kernel that validated it)."""
        result = object.__new__(cls)
        result.__dict__.update(valid_records=records, max_timestamp=max_timestamp, shallow_offset_of_max_timestamp=(
            last_offset if max_timestamp > NO_TIMESTAMP else -1), message_size_maybe_changed=False,
            log_append_time=now, next_offset=last_offset + 1, record_validation_stats=RecordValidationStats.EMPTY)
        return result


class _ApiRecordError(NamedTuple):
    """A rejected record and the API error it maps to (Kafka: ``LogValidator.ApiRecordError``)."""

    invalid_timestamp: bool  # Errors.INVALID_TIMESTAMP, else Errors.INVALID_RECORD
    record_error: RecordError


def _process_record_errors(record_errors: list[_ApiRecordError]) -> None:
    """Fail the batch when any of its records failed (Kafka: ``processRecordErrors``)."""
    if not record_errors:
        return
    errors = [e.record_error for e in record_errors]
    if any(e.invalid_timestamp for e in record_errors):
        raise InvalidTimestampError("One or more records have been rejected due to invalid timestamp", errors)
    shown = ", ".join(str(e) for e in errors[:3])
    raise RecordValidationError(
        f"One or more records have been rejected due to {len(errors)} record errors in total, and only "
        f"showing the first three errors at most: [{shown}]",
        errors,
    )


_IBP_2_1_IV0 = _metadata_version_ordinal("2.1-IV0")


class LogValidator:
    """Kafka's ``LogValidator``: one validation of one request's records.

    ``now_ms`` stands for Kafka's ``time.milliseconds()`` and ``nanoseconds`` for ``time.nanoseconds``
    (which times conversions); the rest are the constructor's arguments.  ``inter_broker_protocol_version``
    is a ``MetadataVersion`` name (``"2.0-IV1"``, ``"2.1"``), ``None`` for the newest.  Most callers want
    :func:`validate_messages_and_assign_offsets`, which takes these from a :class:`LogConfig`.

    Raises:
        IllegalArgumentError: a ``to_magic`` other than 0, 1 or 2.
        ValueError: an ``inter_broker_protocol_version`` that names no version.
    """

    def __init__(
        self,
        records: MemoryRecords,
        *,
        now_ms: int,
        source_compression: CompressionType | int | str,
        target_compression: CompressionType | int | str,
        compacted_topic: bool = False,
        to_magic: int = MAGIC_V2,
        timestamp_type: TimestampType | str | int = TimestampType.CREATE_TIME,
        timestamp_before_max_ms: int = 0x7FFFFFFFFFFFFFFF,
        timestamp_after_max_ms: int = 0x7FFFFFFFFFFFFFFF,
        partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
        origin: AppendOrigin | str = AppendOrigin.CLIENT,
        topic_partition: str | None = None,
        inter_broker_protocol_version: str | None = None,
        nanoseconds: Callable[[], int] = time.monotonic_ns,
    ) -> None:
        if to_magic not in (MAGIC_V0, MAGIC_V1, MAGIC_V2):
            raise IllegalArgumentError(f"Unknown magic {to_magic}: the log writes 0, 1 or 2")
        self.records = records
        self.now_ms = now_ms
        self.source_compression = CompressionType.of(source_compression)
        self.target_compression = CompressionType.of(target_compression)
        self.compacted_topic = compacted_topic
        self.to_magic = to_magic
        self.timestamp_type = TimestampType.of(timestamp_type)
        self.timestamp_before_max_ms = timestamp_before_max_ms
        self.timestamp_after_max_ms = timestamp_after_max_ms
        self.partition_leader_epoch = partition_leader_epoch
        self.origin = AppendOrigin.of(origin)
        self.topic_partition = topic_partition
        self.inter_broker_protocol_version = inter_broker_protocol_version
        # interBrokerProtocolVersion.isLessThan(IBP_2_1_IV0), worked out once
        self._ibp_before_2_1 = (inter_broker_protocol_version is not None and
                                _metadata_version_ordinal(inter_broker_protocol_version) < _IBP_2_1_IV0)
        self.nanoseconds = nanoseconds
        # The batches of the records (or of their writable copy), scanned once: (records, batches).
        self._scanned: tuple[MemoryRecords, list[RecordBatch]] | None = None

    # --- the entry point ------------------------------------------------------------------------------

    def validate_messages_and_assign_offsets(self, next_offset: int,
                                             metrics: MetricsRecorder | None = None) -> ValidationResult:
        """Assign offsets from ``next_offset`` and check every record (Kafka:
        ``validateMessagesAndAssignOffsets``): keys on compacted topics, timestamps, inner offsets and
        magics of compressed sets, batch counts; converting to ``to_magic`` and ``target_compression`` as
        needed, and in place when nothing has to be rebuilt.

        Raises:
            InvalidRecordError: a batch Kafka refuses (see :meth:`_validate_batch`), more than one batch where
                only one is allowed, or undecodable records.
            RecordValidationError: records rejected (missing keys on a compacted topic, inner magics that do
                not match), with every rejected record in ``record_errors``.
            InvalidTimestampError: records rejected for their timestamps.
            UnsupportedForMessageFormatError: transactional or idempotent batches for a log below v2.
            UnsupportedCompressionError: a zstd target below inter-broker protocol 2.1.
            CorruptRecordError: an inner v0/v1 message whose CRC does not match.
        """
        recorder: MetricsRecorder = _NO_METRICS if metrics is None else metrics
        if (self.source_compression is CompressionType.NONE
                and self.target_compression is CompressionType.NONE):
            if not self._has_matching_magic():
                return self._convert_and_assign_offsets_non_compressed(next_offset, recorder)
            return self._assign_offsets_non_compressed(next_offset, recorder)
        return self._validate_messages_and_assign_offsets_compressed(next_offset, recorder)

    # --- helpers --------------------------------------------------------------------------------------

    def _has_matching_magic(self) -> bool:
        """Kafka: ``AbstractRecords.hasMatchingMagic``."""
        return all(batch.magic == self.to_magic for batch in self._batches_of(self.records))

    def _batches_of(self, records: MemoryRecords) -> list[RecordBatch]:
        """``records.batches()`` as a list, scanned once for the uncompressed paths, which read every batch
        two or three times (the magic check, the batch count, the loop).  Listing them first raises a framing
        error no later than before: ``hasMatchingMagic`` or the conversion's sizing reads every batch
        first too."""
        known = self._known_batches(records)
        if known is None:
            known = list(records.batches(strict=False))
            self._scanned = (records, known)
        return known

    def _writable_batches(self) -> tuple[MemoryRecords, list[RecordBatch]]:
        """The records to rewrite in place and their batches: :attr:`records` over a buffer that can be written
        (one copy of a read-only one, :func:`~kafkalog.log.validator_one_batch.writable`), with the batches
        already listed carried over to it rather than found again; listed now if they were not.  The batch
        headers are rewritten through the record layer's setters (Kafka: ``MutableRecordBatch.setLastOffset``,
        ``setMaxTimestamp``, ``setPartitionLeaderEpoch``), which write the buffer."""
        records, batches = writable(self.records, self._known_batches(self.records))
        if batches is None:
            batches = list(records.batches(strict=False))
        self._scanned = (records, batches)
        return records, batches

    def _known_batches(self, records: MemoryRecords) -> list[RecordBatch] | None:
        """``records``' batches if they were listed already (by :meth:`_batches_of`, or by the shallow pass
        that read them all before the validation, :func:`validate_messages_and_assign_offsets`'s
        ``batches``)."""
        scanned = self._scanned
        return scanned[1] if scanned is not None and scanned[0] is records else None

    def _first_batch_and_maybe_validate_no_more_batches(self, records: MemoryRecords, source: CompressionType,
                                                        scanned: list[RecordBatch] | None = None) -> RecordBatch:
        """Kafka: ``getFirstBatchAndMaybeValidateNoMoreBatches``: v2 and compressed sets hold one batch.
        ``scanned`` is ``records``' batches when already listed."""
        batches = records.batches(strict=False) if scanned is None else iter(scanned)
        batch = next(batches, None)
        if batch is None:
            raise InvalidRecordError("Record batch has no batches at all")
        only_one = batch.magic >= MAGIC_V2 or source is not CompressionType.NONE
        if only_one and next(batches, None) is not None:
            raise InvalidRecordError("Compressed outer record has more than one batch")
        return batch

    def _records_of(self, batch: RecordBatch, records: MemoryRecords) -> Iterator[Any]:
        return _batch_records(batch, records.buffer, records.max_decompressed_size)

    # --- the three paths ------------------------------------------------------------------------------

    def _convert_and_assign_offsets_non_compressed(self, next_offset: int,
                                                   metrics: MetricsRecorder) -> ValidationResult:
        """Rebuild uncompressed records in the log's magic (Kafka:
        ``convertAndAssignOffsetsNonCompressed``)."""
        now = self.now_ms
        start_nanos = self.nanoseconds()
        records = self.records
        # Kafka sizes the new buffer first (estimateSizeInBytes over records.records()), which decodes every
        # record before any batch is checked; decoding up front keeps that order of errors.
        batches = list(records.batches(strict=False))
        decoded = [list(self._records_of(batch, records)) for batch in batches]
        first_batch = self._first_batch_and_maybe_validate_no_more_batches(records, CompressionType.NONE)
        # Kafka makes its builder here, before any batch is validated: its checks come first.
        check_builder_arguments(self.to_magic, CompressionType.NONE, first_batch.is_transactional)
        offset_counter = next_offset
        kept: list[Any] = []
        offsets: list[int] = []
        for batch, batch_records in zip(batches, decoded, strict=True):
            self._validate_batch(first_batch, batch, metrics)
            record_errors: list[_ApiRecordError] = []
            for record_index, record in enumerate(batch_records):
                error = self._validate_record(batch, record, record_index, now, metrics)
                if error is not None:
                    record_errors.append(error)
                # the batch fails if any record does, so nothing more is appended after a failure
                if not record_errors:
                    kept.append(record)
                    offsets.append(offset_counter)
                    offset_counter += 1
            _process_record_errors(record_errors)

        converted, max_timestamp, shallow_offset, written = build_records(
            kept, offsets, magic=self.to_magic, compression=CompressionType.NONE,
            timestamp_type=self.timestamp_type, log_append_time=now, producer_id=first_batch.producer_id,
            producer_epoch=first_batch.producer_epoch, base_sequence=first_batch.base_sequence,
            is_transactional=first_batch.is_transactional, partition_leader_epoch=self.partition_leader_epoch,
            template=records,
        )
        stats = RecordValidationStats(written, len(kept), self.nanoseconds() - start_nanos)
        return ValidationResult(converted, max_timestamp, shallow_offset, True, now, offset_counter, stats)

    def _assign_offsets_non_compressed(self, next_offset: int, metrics: MetricsRecorder) -> ValidationResult:
        """Assign offsets and timestamps to uncompressed batches of the log's magic in place (Kafka:
        ``assignOffsetsNonCompressed``)."""
        now = self.now_ms
        max_timestamp = NO_TIMESTAMP
        shallow_offset_of_max_timestamp = -1
        initial_offset = next_offset
        offset_counter = next_offset
        records, batches = self._writable_batches()
        first_batch = self._first_batch_and_maybe_validate_no_more_batches(records, CompressionType.NONE, batches)
        for batch in batches:
            self._validate_batch(first_batch, batch, metrics)
            max_batch_timestamp = NO_TIMESTAMP
            record_errors: list[_ApiRecordError] = []
            if batch.magic >= MAGIC_V2 and batch.timestamp_type is TimestampType.CREATE_TIME:
                # The common case: read and checked by the kernel, without a Record per record.
                count, max_batch_timestamp, _size, _in_sequence = self._validate_v2_records(
                    batch, now, metrics, record_errors)
                offset_counter += count
            else:
                for record_index, record in enumerate(self._records_of(batch, records)):
                    error = self._validate_record(batch, record, record_index, now, metrics)
                    if error is not None:
                        record_errors.append(error)
                    offset_counter += 1
                    if batch.magic > MAGIC_V0 and record.timestamp > max_batch_timestamp:
                        max_batch_timestamp = record.timestamp
            _process_record_errors(record_errors)

            if batch.magic > MAGIC_V0 and max_batch_timestamp > max_timestamp:
                max_timestamp = max_batch_timestamp
                shallow_offset_of_max_timestamp = offset_counter - 1

            batch.set_last_offset(offset_counter - 1)
            if batch.magic >= MAGIC_V2:
                batch.set_partition_leader_epoch(self.partition_leader_epoch)
            if batch.magic > MAGIC_V0:
                if self.timestamp_type is TimestampType.LOG_APPEND_TIME:
                    batch.set_max_timestamp(TimestampType.LOG_APPEND_TIME, now)
                else:
                    batch.set_max_timestamp(self.timestamp_type, max_batch_timestamp)

        if self.timestamp_type is TimestampType.LOG_APPEND_TIME:
            # the same answers as MemoryRecordsBuilder.info() would give
            max_timestamp = now
            if self.to_magic == MAGIC_V0:
                max_timestamp = NO_TIMESTAMP
                shallow_offset_of_max_timestamp = -1
            elif self.to_magic == MAGIC_V1:
                # single-message batches with one timestamp: the first is the earliest batch holding it
                shallow_offset_of_max_timestamp = initial_offset
            else:
                # one batch: its last offset
                shallow_offset_of_max_timestamp = offset_counter - 1

        return ValidationResult(records, max_timestamp, shallow_offset_of_max_timestamp, False, now,
                                offset_counter)

    def _validate_messages_and_assign_offsets_compressed(self, next_offset: int,
                                                         metrics: MetricsRecorder) -> ValidationResult:
        """Validate a compressed set (or records to compress) and assign offsets, in place when the codec and
        magic are kept and the inner offsets are already 0, 1, 2, ... (Kafka:
        ``validateMessagesAndAssignOffsetsCompressed``).

        In place is impossible when (1) source and target codec differ, (2) the magic must change, or
        (3) the log is v0, whose inner offsets are absolute.  An uncompressed control batch is never
        compressed.
        """
        if self.target_compression is CompressionType.ZSTD and self._ibp_before_2_1:
            raise UnsupportedCompressionError(
                "Produce requests to inter.broker.protocol.version < 2.1 broker are not allowed to use "
                "ZStandard compression"
            )
        in_place_assignment = self.source_compression is self.target_compression
        now = self.now_ms
        max_timestamp = NO_TIMESTAMP
        expected_inner_offset = 0
        validated_records: list[Any] = []
        uncompressed_size_in_bytes = 0

        records = self.records
        known = self._known_batches(records)
        first_batch = self._first_batch_and_maybe_validate_no_more_batches(records, self.source_compression, known)
        # Checking the first batch is enough: several batches happen only for uncompressed v0/v1, and all
        # batches must have the first one's magic.
        if first_batch.magic != self.to_magic or self.to_magic == MAGIC_V0:
            in_place_assignment = False
        # Do not compress control records unless they are written compressed.
        if self.source_compression is CompressionType.NONE and first_batch.is_control:
            in_place_assignment = True

        # A CreateTime v2 batch is read and checked by the kernel, once; its records are decoded only if they
        # need a rebuild (another codec or magic, or offsets not 0, 1, 2, ...).  The kernel's largest
        # timestamp is used only in place, where the target magic is v1 or newer, as the loop below keeps it.
        kernel_batch: RecordBatch | None = None
        kernel_count = 0
        for batch in (records.batches(strict=False) if known is None else known):
            self._validate_batch(first_batch, batch, metrics)
            uncompressed_size_in_bytes += record_batch_header_size_in_bytes(self.to_magic, batch.compression)
            record_errors: list[_ApiRecordError] = []
            if batch.magic >= MAGIC_V2 and batch.timestamp_type is TimestampType.CREATE_TIME:
                kernel_count, batch_max_timestamp, size, in_sequence = self._validate_v2_records(
                    batch, now, metrics, record_errors)
                _process_record_errors(record_errors)
                max_timestamp = max(max_timestamp, batch_max_timestamp)
                in_place_assignment = in_place_assignment and in_sequence
                uncompressed_size_in_bytes += size
                kernel_batch = batch
                continue
            for record_index, record in enumerate(self._records_of(batch, records)):
                expected_offset = expected_inner_offset
                expected_inner_offset += 1

                error = self._validate_record_compression(record_index, record)
                if error is None:
                    error = self._validate_record(batch, record, record_index, now, metrics)

                if error is None and batch.magic > MAGIC_V0 and self.to_magic > MAGIC_V0:
                    if record.timestamp > max_timestamp:
                        max_timestamp = record.timestamp
                    # Some old clients get v1 inner offsets wrong; the broker rewrites rather than rejects.
                    if record.offset != expected_offset:
                        in_place_assignment = False

                if error is not None:
                    record_errors.append(error)
                else:
                    uncompressed_size_in_bytes += _record_size_in_bytes(batch, record)
                    validated_records.append(record)
            _process_record_errors(record_errors)

        validated_count = len(validated_records)
        if kernel_batch is not None:  # the one batch of a v2 set
            validated_count = kernel_count
            if not in_place_assignment:
                validated_records = list(self._records_of(kernel_batch, records))
        if not in_place_assignment:
            return self._build_records_and_assign_offsets(next_offset, now, first_batch, validated_records,
                                                          uncompressed_size_in_bytes)

        # Only the header changes; the compressed payload is kept (one batch on this path), and the batch listed
        # before is the one rewritten, in the copy of a read-only buffer if need be.
        records, batches = self._writable_batches()
        batch = batches[0]
        offset_counter = next_offset + validated_count
        last_offset = offset_counter - 1
        batch.set_last_offset(last_offset)
        if self.timestamp_type is TimestampType.LOG_APPEND_TIME:
            max_timestamp = now
        if self.to_magic >= MAGIC_V1:
            batch.set_max_timestamp(self.timestamp_type, max_timestamp)
        if self.to_magic >= MAGIC_V2:
            batch.set_partition_leader_epoch(self.partition_leader_epoch)
        return ValidationResult(records, max_timestamp, last_offset, False, now, offset_counter,
                                RecordValidationStats(uncompressed_size_in_bytes, 0, 0))

    def _build_records_and_assign_offsets(self, next_offset: int, log_append_time: int,
                                          first_batch: RecordBatch, validated_records: list[Any],
                                          uncompressed_size_in_bytes: int) -> ValidationResult:
        """Write the records into one new batch of the target codec and magic (Kafka:
        ``buildRecordsAndAssignOffsets``).  Every record counts as converted, as in Kafka (which says the
        count over-counts when only the offsets or the codec forced the rebuild)."""
        start_nanos = self.nanoseconds()
        offsets = list(range(next_offset, next_offset + len(validated_records)))
        built, max_timestamp, shallow_offset, written = build_records(
            validated_records, offsets, magic=self.to_magic, compression=self.target_compression,
            timestamp_type=self.timestamp_type, log_append_time=log_append_time,
            producer_id=first_batch.producer_id, producer_epoch=first_batch.producer_epoch,
            base_sequence=first_batch.base_sequence, is_transactional=first_batch.is_transactional,
            partition_leader_epoch=self.partition_leader_epoch, template=self.records,
        )
        stats = RecordValidationStats(uncompressed_size_in_bytes + written, len(validated_records),
                                      self.nanoseconds() - start_nanos)
        return ValidationResult(built, max_timestamp, shallow_offset, True, log_append_time,
                                next_offset + len(validated_records), stats)

    # --- checks ---------------------------------------------------------------------------------------

    def _validate_batch(self, first_batch: RecordBatch, batch: RecordBatch, metrics: MetricsRecorder) -> None:
        """Kafka: ``validateBatch``.  Every batch must have the first one's magic; a client's v2 batch must
        have a positive count that matches its offset range; clients may not write control batches nor
        idempotent batches without a sequence; a log below v2 cannot take transactional or idempotent
        batches."""
        tp = self.topic_partition
        where = _in(" in topic partition ", tp)
        if first_batch.magic != batch.magic:
            metrics.record_invalid_magic()
            raise InvalidRecordError(
                f"Batch magic {batch.magic} is not the same as the first batch's magic byte "
                f"{first_batch.magic}{where}",
                batch.position,
            )
        if self.origin is AppendOrigin.CLIENT:
            if batch.magic >= MAGIC_V2:
                count_from_offsets = batch.last_offset - batch.base_offset + 1
                if count_from_offsets <= 0:
                    metrics.record_invalid_offset()
                    raise InvalidRecordError(
                        f"Batch has an invalid offset range: [{batch.base_offset}, "
                        f"{batch.last_offset}]{where}",
                        batch.position,
                    )
                count = batch.count
                if count <= 0:
                    metrics.record_invalid_offset()
                    raise InvalidRecordError(f"Invalid reported count for record batch: {count}{where}",
                                             batch.position)
                if count_from_offsets != count:
                    metrics.record_invalid_offset()
                    raise InvalidRecordError(
                        f"Inconsistent batch offset range [{batch.base_offset}, {batch.last_offset}] "
                        f"and count of records {count}{where}",
                        batch.position,
                    )
            if batch.is_control:
                metrics.record_invalid_offset()
                raise InvalidRecordError(f"Clients are not allowed to write control records{where}",
                                         batch.position)
            if batch.has_producer_id and batch.base_sequence < 0:
                metrics.record_invalid_sequence()
                raise InvalidRecordError(
                    f"Invalid sequence number {batch.base_sequence} in record batch with producerId "
                    f"{batch.producer_id}{where}",
                    batch.position,
                )
        if batch.is_transactional and self.to_magic < MAGIC_V2:
            raise UnsupportedForMessageFormatError(
                f"Transactional records cannot be used with magic version {self.to_magic}"
            )
        if batch.has_producer_id and self.to_magic < MAGIC_V2:
            raise UnsupportedForMessageFormatError(
                f"Idempotent records cannot be used with magic version {self.to_magic}"
            )

    def _validate_record(self, batch: RecordBatch, record: Any, record_index: int, now: int,
                         metrics: MetricsRecorder) -> _ApiRecordError | None:
        """Kafka: ``validateRecord``: the record's magic, the inner CRC of a v0/v1 wrapper, then the key
        (``validateKey``) and the timestamp (``validateTimestamp``)."""
        tp = self.topic_partition
        if not _has_magic(record, batch.magic):
            metrics.record_invalid_magic()
            return _ApiRecordError(False, RecordError(
                record_index,
                f"Record {_describe(record)}'s magic does not match outer magic {batch.magic}"
                f"{_in(' in topic partition ', tp)}",
            ))
        # Only the inner messages of a v0/v1 wrapper have a CRC to check here: a plain message was checked
        # with its batch in analyze_and_validate_records, and v2 records have none.  (Kafka's catch of
        # InvalidRecordException around this does not see ensureValid's CorruptRecordException.)
        if batch.magic <= MAGIC_V1 and batch.attributes & LEGACY_COMPRESSION_MASK:
            assert isinstance(record, LegacyRecord)
            try:
                record.ensure_valid()
            except CorruptRecordError as e:
                raise e.at(batch.position) from e
        key_error = self._validate_key(record, record_index, metrics)
        if key_error is not None:
            return key_error
        return self._validate_timestamp(batch, record, record_index, now)

    def _validate_v2_records(self, batch: RecordBatch, now: int, metrics: MetricsRecorder,
                             record_errors: list[_ApiRecordError]) -> tuple[int, int, int, bool]:
        """``validateRecord`` for every record of a CreateTime v2 batch at once, by the
        ``validate_v2_records`` kernel over its (decompressed) records: the same checks in the same order (a
        record's missing key is reported before its timestamp), the same messages.  Returns the record
        count, the largest timestamp, the records' summed ``sizeInBytes`` and whether their offsets run 0,
        1, 2, ...

        v2 records always have the batch's magic and no CRC of their own, so only the key and timestamp
        checks apply; reading them once in a kernel is what makes the path worth having (Kafka runs the
        loop JIT-compiled)."""
        assert isinstance(batch, DefaultRecordBatch)
        kernel = partial(_impl.core.validate_v2_records, now=now,
                         timestamp_before_max_ms=self.timestamp_before_max_ms,
                         timestamp_after_max_ms=self.timestamp_after_max_ms, compacted=self.compacted_topic,
                         check_timestamps=self.timestamp_type is TimestampType.CREATE_TIME)
        (count, max_timestamp, size, in_sequence, errors), _data = batch._decode(kernel)
        for record_index, code, timestamp, offset in errors:
            if code == _RECORD_NO_KEY:
                metrics.record_no_key_compacted_topic()
                record_errors.append(_ApiRecordError(False, RecordError(
                    record_index,
                    f"Compacted topic cannot accept message without key"
                    f"{_in(' in topic partition ', self.topic_partition)}",
                )))
            else:
                low = java_long(now - self.timestamp_before_max_ms)
                high = java_long(now + self.timestamp_after_max_ms)
                record_errors.append(_ApiRecordError(True, RecordError(
                    record_index,
                    f"Timestamp {timestamp} of message with offset {offset} is out of range. The timestamp "
                    f"should be within [{low}, {high}]",
                )))
        return count, max_timestamp, size, in_sequence

    def _validate_key(self, record: Any, record_index: int,
                      metrics: MetricsRecorder) -> _ApiRecordError | None:
        """Kafka: ``validateKey``: a compacted topic needs a key on every record."""
        if self.compacted_topic and record.key is None:
            metrics.record_no_key_compacted_topic()
            return _ApiRecordError(False, RecordError(
                record_index,
                f"Compacted topic cannot accept message without key"
                f"{_in(' in topic partition ', self.topic_partition)}",
            ))
        return None

    def _validate_timestamp(self, batch: RecordBatch, record: Any, record_index: int,
                            now: int) -> _ApiRecordError | None:
        """Kafka: ``validateTimestamp``: under CreateTime a timestamp (other than -1) must lie within
        ``[now - before.max.ms, now + after.max.ms]``; otherwise a LogAppendTime batch from a producer is
        refused.  Bounds are computed in Java ``long`` arithmetic, as Kafka prints them."""
        timestamp = record.timestamp
        if self.timestamp_type is TimestampType.CREATE_TIME and timestamp != NO_TIMESTAMP:
            if self._record_has_invalid_timestamp(timestamp, now):
                low = java_long(now - self.timestamp_before_max_ms)
                high = java_long(now + self.timestamp_after_max_ms)
                return _ApiRecordError(True, RecordError(
                    record_index,
                    f"Timestamp {timestamp} of message with offset {record.offset} is out of range. The "
                    f"timestamp should be within [{low}, {high}]",
                ))
        elif batch.timestamp_type is TimestampType.LOG_APPEND_TIME:
            return _ApiRecordError(True, RecordError(
                record_index,
                f"Invalid timestamp type in message {_describe(record)}. Producer should not set timestamp "
                "type to LogAppendTime.",
            ))
        return None

    def _record_has_invalid_timestamp(self, timestamp: int, now: int) -> bool:
        """Kafka: ``recordHasInvalidTimestamp``."""
        difference = java_long(now - timestamp)
        return (difference > self.timestamp_before_max_ms
                or java_long(-difference) > self.timestamp_after_max_ms)

    def _validate_record_compression(self, record_index: int, record: Any) -> _ApiRecordError | None:
        """Kafka: ``validateRecordCompression``: no compressed record inside a compressed set.  (The legacy
        deep iterator already refuses compressed inner messages, and v2 records are never compressed, so
        this can only pass; it is kept for Kafka's order of checks.)"""
        if (self.source_compression is not CompressionType.NONE and isinstance(record, LegacyRecord)
                and record.is_compressed):
            return _ApiRecordError(False, RecordError(
                record_index,
                "Compressed outer record should not have an inner record with a compression attribute set: "
                f"{_describe(record)}",
            ))
        return None


def validate_messages_and_assign_offsets(
    records: MemoryRecords,
    next_offset: int,
    now_ms: int,
    config: LogConfig,
    *,
    source_compression: CompressionType | int | str,
    origin: AppendOrigin | str = AppendOrigin.CLIENT,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    topic_partition: str | None = None,
    metrics: MetricsRecorder | None = None,
    inter_broker_protocol_version: str | None = None,
    batches: list[RecordBatch] | None = None,
) -> ValidationResult:
    """Validate ``records`` and assign them offsets from ``next_offset``, as the leader's append does
    (Kafka: ``UnifiedLog.append`` building a ``LogValidator`` from the log's config, then
    ``LogValidator.validateMessagesAndAssignOffsets``).

    From ``config``: the target codec (``compression.type``; ``producer`` keeps ``source_compression``),
    ``cleanup.policy`` compact (keys required), the magic (``record_version()``, from
    ``message.format.version``), ``message.timestamp.type`` and the before/after bounds; the inter-broker
    protocol, which a log's config does not hold, is ``inter_broker_protocol_version`` (``None``: the
    newest).  See :class:`LogValidator` for the checks and the module docstring for the three paths.

    ``batches`` are ``records.batches()``, all of them, when the caller has read them already (the shallow
    pass, :func:`~kafkalog.log.append_info.analyze_and_validate_records`): they are not scanned again.  One
    uncompressed v2 batch is validated by one kernel call, and a client's compressed one kept in its codec
    without a :class:`LogValidator`, when they qualify (:mod:`kafkalog.log.validator_one_batch`).
    """
    if isinstance(origin, AppendOrigin):
        if takes_one_batch(next_offset, config, source_compression, partition_leader_epoch, batches):
            # A linger-0 producer's batch: one kernel call, no objects.  It is rewritten in place whether the
            # kernel takes it or the general path does, so a read-only buffer is copied here, once; the batches
            # read before are carried over to the copy only for the general path, the kernel needs none.
            target = records.writable()
            one = assign_offsets_one_batch(target, next_offset, now_ms, config, origin is AppendOrigin.CLIENT,
                                           partition_leader_epoch)
            if one is not None:
                return ValidationResult._in_place(target, one[0], one[1], now_ms)
            records, batches = target, carried_over(batches, records, target)
        elif origin is AppendOrigin.CLIENT and inter_broker_protocol_version is None:
            # a producer's compressed batch kept in its codec: checked and rewritten without a LogValidator
            kept = assign_offsets_one_compressed_batch(records, next_offset, now_ms, config, source_compression,
                                                       partition_leader_epoch, batches)
            if kept is not None:
                rewritten, last_offset, max_timestamp, uncompressed_size = kept
                return ValidationResult(rewritten, max_timestamp, last_offset, False, now_ms, last_offset + 1,
                                        RecordValidationStats(uncompressed_size, 0, 0))
    source = CompressionType.of(source_compression)
    validator = LogValidator(
        records,
        now_ms=now_ms,
        source_compression=source,
        target_compression=target_compression(config, source),
        compacted_topic=config.compact,
        to_magic=config.record_version(),
        timestamp_type=config.message_timestamp_type,
        timestamp_before_max_ms=config.message_timestamp_before_max_ms,
        timestamp_after_max_ms=config.message_timestamp_after_max_ms,
        partition_leader_epoch=partition_leader_epoch,
        origin=origin,
        topic_partition=topic_partition,
        inter_broker_protocol_version=inter_broker_protocol_version,
    )
    if batches is not None:
        validator._scanned = (records, batches)
    return validator.validate_messages_and_assign_offsets(next_offset, metrics)

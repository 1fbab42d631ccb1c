"""Log compaction: the Cleaner, its statistics, the cleaner threads and the LogCleaner that runs them.

Port of ``kafka/log/LogCleaner.scala`` (Kafka 0.10.1.1; 3.8.0 for modern behaviour, spec §4): a cleaning
round of a compacted log

1. builds an offset map (:class:`~kafkalog.offset_map.SkimpyOffsetMap`) of the latest offset of every key
   in the dirty section ``[first dirty offset, first uncleanable offset)``, stopping when the map is full
   (the round then ends where the map does: ``end offset = map.latest_offset + 1``);
2. groups every segment below the end offset (the already-clean head too) into groups that fit one
   segment, and for each group writes the records worth keeping into a new ``.cleaned`` segment;
3. swaps each cleaned segment in for its group with the ``.cleaned`` -> ``.swap`` -> live protocol
   (:meth:`kafkalog.log.Log.replace_segments`), so a crash leaves the old or the new files, never both.

A record is kept when it is past the mapped range, or holds the latest offset of its key and either a
value or a tombstone still inside its delete horizon: for v2 batches the horizon is written into the
batch (attribute bit 6, Kafka 3.1+) the first time a cleaning keeps a tombstone, for v0/v1 it comes from
the segments' modification times.  A batch keeps its base offset, and for v2 its last offset too (so a
producer's sequence numbers survive); a batch emptied of records is dropped, or kept as a bare header
when it is the last a producer wrote.  Aborted transactional batches are removed whatever their keys;
transaction markers are kept until their transaction is gone from the log and their own horizon passed.

The passes over records are kernels: the map is filled from decoded record columns in one call per run of
batches, and every record's fate (latest for its key, superseded, keyless, past the map) in one more.
Where Kafka reads the transaction index, this port reads the log's own control batches, which say the same.
"""

from __future__ import annotations

import dataclasses
import decimal
import itertools
import logging
import math
import struct
import threading
import time as _time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._common import INT32_MAX
from .cleaner_config import CleanerConfig
from .cleaner_manager import LogCleanerManager, LogCleaningAbortedError, LogCleaningError, LogToClean, PreCleanStats
from .errors import CorruptRecordError, IllegalStateError, KafkaLogError, LogSegmentOffsetOverflowError
from .log import Log
from .offset_map import OffsetMap, SkimpyOffsetMap
from .record import ControlRecordType, MemoryRecords, RecordBatch, ScanStop
from .record.batch import RecordColumns, encode_default_batch
from .record.legacy import build_legacy_message_set
from .record.types import TimestampType
from .scheduler import SYSTEM_TIME, Time
from .segment import LogSegment
from .topic import TopicPartition
from .transaction_index import AbortedTxn
from .transactions import TransactionState, producer_batches

__all__ = ["CleanedTransactionMetadata", "Cleaner", "CleanerStats", "CleanerThread", "LogCleaner", "Throttler",
           "collect_aborted_transactions"]

logger = logging.getLogger("kafkalog.cleaner")

_DELETE, _DELETE_EMPTY, _RETAIN_EMPTY = "DELETE", "DELETE_EMPTY", "RETAIN_EMPTY"


# ---------------------------------------------------------------------------------------------------
# Statistics


def _java_float(x: float, digits: int = 1, grouping: bool = True) -> str:
    """A number as Java's ``String.format("%,.1f")`` prints it: rounded half-up on the double's exact value
    (Python's ``format`` rounds half-to-even), ``Infinity`` and ``NaN`` spelled out."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    rounded = decimal.Decimal(x).quantize(decimal.Decimal(1).scaleb(-digits), rounding=decimal.ROUND_HALF_UP)
    return f"{rounded:,.{digits}f}" if grouping else f"{rounded:.{digits}f}"


def _mb(n: float) -> float:
    return n / (1024.0 * 1024.0)


@dataclass
class CleanerStats:
    """What a cleaning round did (Kafka: ``CleanerStats``), and the summary line Kafka logs for it."""

    time: Time = field(default=SYSTEM_TIME)
    bytes_read: int = 0
    bytes_written: int = 0
    map_bytes_read: int = 0
    map_messages_read: int = 0
    messages_read: int = 0
    invalid_messages_read: int = 0
    messages_written: int = 0
    buffer_utilization: float = 0.0
    start_time: int = -1
    map_complete_time: int = -1
    end_time: int = -1

    def __post_init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        """Kafka: ``clear`` (0.10.1; modern makes a new object)."""
        self.start_time = self.time.milliseconds()
        self.map_complete_time = -1
        self.end_time = -1
        self.bytes_read = self.bytes_written = self.map_bytes_read = self.map_messages_read = 0
        self.messages_read = self.invalid_messages_read = self.messages_written = 0
        self.buffer_utilization = 0.0

    def read_messages(self, messages: int, size: int) -> None:
        """Kafka: ``readMessages`` (0.10.1: ``readMessage``)."""
        self.messages_read += messages
        self.bytes_read += size

    read_message = read_messages

    def invalid_message(self, count: int = 1) -> None:
        """Kafka: ``invalidMessage`` (``count`` of them at once: kafkalog's)."""
        self.invalid_messages_read += count

    def recopy_messages(self, messages: int, size: int) -> None:
        """Kafka: ``recopyMessages`` (0.10.1: ``recopyMessage``)."""
        self.messages_written += messages
        self.bytes_written += size

    recopy_message = recopy_messages

    def index_messages_read(self, count: int) -> None:
        """Kafka: ``indexMessagesRead`` (0.10.1: ``indexMessage``)."""
        self.map_messages_read += count

    index_message = index_messages_read

    def index_bytes_read(self, size: int) -> None:
        """Kafka: ``indexBytesRead``."""
        self.map_bytes_read += size

    def index_done(self) -> None:
        """Kafka: ``indexDone``."""
        self.map_complete_time = self.time.milliseconds()

    def all_done(self) -> None:
        """Kafka: ``allDone``."""
        self.end_time = self.time.milliseconds()

    def elapsed_secs(self) -> float:
        """Kafka: ``elapsedSecs``."""
        return (self.end_time - self.start_time) / 1000.0

    def elapsed_index_secs(self) -> float:
        """Kafka: ``elapsedIndexSecs``."""
        return (self.map_complete_time - self.start_time) / 1000.0

    def summary(self, thread_id: int, log_name: str, first_dirty: int, end_offset: int) -> str:
        """The message of Kafka's INFO line after a clean (``LogCleaner.recordStats``), with Java's number
        formats: ``%,.1f`` groups thousands, a zero elapsed time prints ``Infinity`` or ``NaN``."""
        def div(a: float, b: float) -> float:
            if b == 0:
                return math.nan if a == 0 else math.copysign(math.inf, a)
            return a / b

        elapsed = self.elapsed_secs()
        index = self.elapsed_index_secs()
        clean = elapsed - index
        lines = [
            "",
            f"\tLog cleaner thread {thread_id} cleaned log {log_name} (dirty section = [{first_dirty}, {end_offset}])",
            f"\t{_java_float(_mb(self.bytes_read))} MB of log processed in {_java_float(elapsed)} seconds "
            f"({_java_float(div(_mb(self.bytes_read), elapsed))} MB/sec).",
            f"\tIndexed {_java_float(_mb(self.map_bytes_read))} MB in {_java_float(index, grouping=False)} seconds "
            f"({_java_float(div(_mb(self.map_bytes_read), index))} Mb/sec, "
            f"{_java_float(div(100 * index, elapsed), grouping=False)}% of total time)",
            f"\tBuffer utilization: {_java_float(100 * self.buffer_utilization, grouping=False)}%",
            f"\tCleaned {_java_float(_mb(self.bytes_read))} MB in {_java_float(clean, grouping=False)} seconds "
            f"({_java_float(div(_mb(self.bytes_read), clean))} Mb/sec, "
            f"{_java_float(div(100 * clean, elapsed), grouping=False)}% of total time)",
            f"\tStart size: {_java_float(_mb(self.bytes_read))} MB ({self.messages_read:,} messages)",
            f"\tEnd size: {_java_float(_mb(self.bytes_written))} MB ({self.messages_written:,} messages)",
            f"\t{_java_float(100 * (1 - div(self.bytes_written, self.bytes_read)), grouping=False)}% size reduction "
            f"({_java_float(100 * (1 - div(self.messages_written, self.messages_read)), grouping=False)}% fewer "
            "messages)",
            "",
        ]
        return "\n".join(lines)


class Throttler:
    """Limits the cleaner's I/O to ``desired_rate_per_sec`` bytes a second (Kafka: ``kafka.utils.Throttler``):
    after each ``check_interval_ms`` it sleeps long enough to bring the observed rate down to the target."""

    def __init__(self, desired_rate_per_sec: float, check_interval_ms: int = 300, time: Time = SYSTEM_TIME) -> None:
        self.desired_rate_per_sec = desired_rate_per_sec
        self.check_interval_ms = check_interval_ms
        self.time = time
        self._lock = threading.Lock()
        self._period_start = time.milliseconds()
        self._observed = 0.0

    def update_desired_rate_per_sec(self, updated_desired_rate_per_sec: float) -> None:
        """Kafka: ``updateDesiredRatePerSec`` (a reconfigured ``log.cleaner.io.max.bytes.per.second``)."""
        with self._lock:
            self.desired_rate_per_sec = updated_desired_rate_per_sec

    def maybe_throttle(self, observed: float) -> None:
        """Kafka: ``maybeThrottle``."""
        if self.desired_rate_per_sec >= 1e300:
            return
        with self._lock:
            self._observed += observed
            now = self.time.milliseconds()
            elapsed_ms = now - self._period_start
            if elapsed_ms > self.check_interval_ms and self._observed > 0:
                rate = self._observed / (elapsed_ms / 1000.0)
                if rate > self.desired_rate_per_sec:
                    desired_ms = self._observed / self.desired_rate_per_sec * 1000.0
                    sleep_ms = round(desired_ms - elapsed_ms)
                    if sleep_ms > 0:
                        logger.debug("Natural rate is %f per second but desired rate is %f, sleeping for %d ms "
                                     "to compensate.", rate, self.desired_rate_per_sec, sleep_ms)
                        self.time.sleep(sleep_ms)
                self._period_start = self.time.milliseconds()
                self._observed = 0.0


# ---------------------------------------------------------------------------------------------------
# Transactions, read from the log's control batches


def _control_type(batch: RecordBatch) -> ControlRecordType | None:
    try:
        return batch.control_type()
    except KafkaLogError:
        return ControlRecordType.UNKNOWN


def collect_aborted_transactions(log: Log, start: int, end: int) -> list[AbortedTxn]:
    """The aborted transactions with a marker at or after ``start`` that began before ``end``, read from
    the log's batch headers (what Kafka reads from ``.txnindex``: ``collectAbortedTransactions``, which
    also reads the later segments' indexes, as a marker may lie past ``end``)."""
    return list(TransactionState.of(log).between(start, end).aborted)


class ProducerFacts:
    """What a cleaning round needs to know of producers and transactions, read once per round in one walk
    over the batch headers (Kafka reads them from the producer state and ``.txnindex``): each producer's
    last batch, and the aborted transactions."""

    def __init__(self, log: Log) -> None:
        #: producer id -> (offset of its last data batch or None, its latest epoch): Kafka's
        #: ``lastRecordsOfActiveProducers`` (lastDataOffset, producerEpoch).
        self.last_records: dict[int, tuple[int | None, int]] = {}
        batches = []
        # The whole log: a transaction's ABORT marker may lie past the round's end (Kafka scans the later
        # segments' transaction indexes too).
        for segment in log.log_segments():
            for batch in producer_batches(segment):
                last_data = self.last_records.get(batch.producer_id, (None, 0))[0]
                self.last_records[batch.producer_id] = (last_data if batch.is_control else batch.last_offset,
                                                        batch.producer_epoch)
                batches.append(batch)
        self.transactions = TransactionState.from_batches(batches, log.log_end_offset)

    def aborted_in(self, start: int, end: int) -> list[AbortedTxn]:
        """Aborted transactions whose marker is at or after ``start`` and that began before ``end``."""
        return list(self.transactions.between(start, end).aborted)


class _AbortedTxnMetadata:
    __slots__ = ("aborted_txn", "last_observed_batch_offset")

    def __init__(self, aborted_txn: AbortedTxn) -> None:
        self.aborted_txn = aborted_txn
        self.last_observed_batch_offset: int | None = None


class CleanedTransactionMetadata:
    """Which batches of a cleaning pass belong to aborted transactions and which markers may go (Kafka:
    ``CleanedTransactionMetadata``)."""

    def __init__(self) -> None:
        self._aborted_transactions: list[AbortedTxn] = []
        self._ongoing_committed_txns: set[int] = set()
        self._ongoing_aborted_txns: dict[int, _AbortedTxnMetadata] = {}

    def add_aborted_transactions(self, aborted: Iterable[AbortedTxn]) -> None:
        seen = set(self._aborted_transactions)
        self._aborted_transactions.extend(txn for txn in aborted if txn not in seen)
        self._aborted_transactions.sort(key=lambda txn: txn.first_offset)

    def _consume_aborted_txns_up_to(self, offset: int) -> None:
        while self._aborted_transactions and self._aborted_transactions[0].first_offset <= offset:
            txn = self._aborted_transactions.pop(0)
            self._ongoing_aborted_txns.setdefault(txn.producer_id, _AbortedTxnMetadata(txn))  # getOrElseUpdate

    def on_control_batch_read(self, batch: RecordBatch) -> bool:
        """Whether a marker may be removed (Kafka: ``onControlBatchRead``): an ABORT once every batch of its
        transaction is gone, a COMMIT when no batch of its transaction was seen in this pass."""
        self._consume_aborted_txns_up_to(batch.last_offset)
        control_type = _control_type(batch)
        pid = batch.producer_id
        if control_type is ControlRecordType.ABORT:
            metadata = self._ongoing_aborted_txns.pop(pid, None)
            return metadata is None or metadata.last_observed_batch_offset is None
        if control_type is ControlRecordType.COMMIT:
            if pid in self._ongoing_committed_txns:
                self._ongoing_committed_txns.discard(pid)
                return False
            return True
        return False

    def on_batch_read(self, batch: RecordBatch) -> bool:
        """Whether a data batch belongs to an aborted transaction (Kafka: ``onBatchRead``)."""
        self._consume_aborted_txns_up_to(batch.last_offset)
        if batch.is_transactional:
            metadata = self._ongoing_aborted_txns.get(batch.producer_id)
            if metadata is not None:
                metadata.last_observed_batch_offset = batch.last_offset
                return True
            self._ongoing_committed_txns.add(batch.producer_id)
        return False


# ---------------------------------------------------------------------------------------------------
# The Cleaner


class Cleaner:
    """Cleans one log at a time (Kafka: ``Cleaner``).

    ``check_done(tp)`` is called between steps and raises :class:`LogCleaningAbortedError` when the round
    must stop (the log was truncated or deleted, or the cleaner is shutting down).
    """

    def __init__(self, id: int, offset_map: OffsetMap, io_buffer_size: int, max_io_buffer_size: int,
                 dup_buffer_load_factor: float, throttler: Throttler, time: Time,
                 check_done: Callable[[TopicPartition], None]) -> None:
        self.id = id
        self.offset_map = offset_map
        self.io_buffer_size = io_buffer_size
        self.max_io_buffer_size = max_io_buffer_size
        self.dup_buffer_load_factor = dup_buffer_load_factor
        self.throttler = throttler
        self.time = time
        self.check_done = check_done
        if offset_map.slots * dup_buffer_load_factor <= 1:
            raise IllegalStateError(
                "offset map is too small to fit in even a single message, so log cleaning will never make "
                "progress. You can increase log.cleaner.dedupe.buffer.size or decrease log.cleaner.threads")
        self._buffer_size = io_buffer_size
        #: Told the size of every read of either pass, for a caller that draws a progress bar (kafkalog's
        #: addition; Kafka's cleaner only logs its statistics when a round ends).
        self.on_read: Callable[[int], None] | None = None

    # -- buffers ------------------------------------------------------------------------------------

    def grow_buffers(self, max_log_message_size: int) -> None:
        """Double the I/O buffer, up to the larger of the message size limit and the configured maximum
        (Kafka: ``growBuffers``)."""
        max_buffer_size = max(max_log_message_size, self.max_io_buffer_size)
        if self._buffer_size >= max_buffer_size:
            raise IllegalStateError(
                f"This log contains a message larger than maximum allowable size of {max_buffer_size}.")
        self._buffer_size = min(self._buffer_size * 2, max_buffer_size)

    def _grow_buffers_or_fail(self, segment: LogSegment, position: int, next_batch_size: int,
                              max_log_message_size: int) -> None:
        """Kafka: ``growBuffersOrFail``: up to the message size limit; past it, to the next batch's own size when
        the segment really holds a batch that big."""
        if self._buffer_size >= max_log_message_size:
            where = f"log segment {segment.log.file} at position {position}"
            if next_batch_size <= 0:
                raise IllegalStateError(f"Invalid batch size {next_batch_size} for {where}")
            if next_batch_size <= self._buffer_size:
                raise IllegalStateError(
                    f"Batch size {next_batch_size} < buffer size {self._buffer_size}, but not processed for {where}")
            bytes_left = segment.log.end - position
            if next_batch_size > bytes_left:
                raise CorruptRecordError(
                    f"Log segment may be corrupt, batch size {next_batch_size} > {bytes_left} bytes left in segment "
                    f"for {where}", position, str(segment.log.file))
            self.grow_buffers(next_batch_size)
        else:
            self.grow_buffers(max_log_message_size)

    def restore_buffers(self) -> None:
        """Kafka: ``restoreBuffers``."""
        self._buffer_size = self.io_buffer_size

    def _chunks(self, segment: LogSegment, start_position: int, max_log_message_size: int) -> Iterable[
            tuple[int, Iterator[_DecodedBatch]]]:
        """The batches of a segment from ``start_position``, in reads of about the I/O buffer's size: the role of
        Kafka's ``readInto(readBuffer, position)``.  A batch larger than the buffer grows it, as Kafka does.
        Each read's batches are decoded as they are asked for, a batch of many records in pieces."""
        scan = segment.log.scan(check_crc=False, stop_on_invalid=False, starting_position=start_position)
        rows = scan.batches
        positions = rows["position"].tolist()
        sizes = rows["size"].tolist()
        if scan.stop_reason not in (ScanStop.END, ScanStop.LIMIT):
            # Kafka's cleaner reads what follows as a batch it cannot complete and refuses the segment
            # (growBuffersOrFail) rather than drop the bytes.
            position = scan.stop_position
            left = segment.log.end - position
            raise CorruptRecordError(
                f"Log segment may be corrupt, batch at position {position} cannot be read "
                f"({scan.stop_reason.name.lower()}, {left} bytes left in segment) for log segment {segment.log.file}",
                position, str(segment.log.file))
        i, n = 0, len(positions)
        while i < n:
            self.check_done_hook()
            while sizes[i] > self._buffer_size:
                self._grow_buffers_or_fail(segment, positions[i], sizes[i], max_log_message_size)
                # Kafka's loops check at every read, those that only grew the buffer too: an I/O buffer of 0
                # bytes (log.cleaner.io.buffer.size below 2 per thread) never grows, and the thread goes on
                # reading nothing until it is stopped, as Kafka's does.
                self.check_done_hook()
            j, total = i, 0
            while j < n and total + sizes[j] <= self._buffer_size:
                total += sizes[j]
                j += 1
            chunk_start = positions[i]
            data = segment.log.channel.pread(chunk_start, total)
            self.throttler.maybe_throttle(total)
            if self.on_read is not None:
                self.on_read(total)
            yield chunk_start, _decoded_batches(MemoryRecords(data))
            i = j

    _current_tp: TopicPartition | None = None
    _facts: ProducerFacts | None = None

    def check_done_hook(self) -> None:
        if self._current_tp is not None:
            self.check_done(self._current_tp)

    # -- a round ------------------------------------------------------------------------------------

    def clean(self, cleanable: LogToClean) -> tuple[int, CleanerStats]:
        """Clean the log's dirty section; returns the first offset not cleaned and the statistics
        (Kafka: ``clean``)."""
        return self.do_clean(cleanable, self.time.milliseconds())

    def do_clean(self, cleanable: LogToClean, current_time: int) -> tuple[int, CleanerStats]:
        """Kafka: ``doClean``."""
        log = cleanable.log
        self._current_tp = cleanable.topic_partition
        logger.info("Beginning cleaning of log %s", log.name)
        segments_before = log.log_segments(0, cleanable.first_dirty_offset)
        legacy_delete_horizon_ms = (int(segments_before[-1].last_modified()) - log.config.delete_retention_ms
                                    if segments_before else 0)
        stats = CleanerStats(self.time)
        logger.info("Building offset map for %s...", log.name)
        upper_bound_offset = cleanable.first_uncleanable_offset
        self._facts = ProducerFacts(log)
        self.build_offset_map(log, cleanable.first_dirty_offset, upper_bound_offset, self.offset_map, stats)
        end_offset = self.offset_map.latest_offset + 1
        stats.index_done()
        cleanable_segments = log.log_segments(0, cleanable.first_uncleanable_offset)
        cleanable_horizon_ms = cleanable_segments[-1].last_modified() if cleanable_segments else 0
        logger.info("Cleaning log %s (cleaning prior to %s, discarding tombstones prior to upper bound deletion "
                    "horizon %s)...", log.name, _java_date(cleanable_horizon_ms), _java_date(legacy_delete_horizon_ms))
        transaction_metadata = CleanedTransactionMetadata()
        groups = self.group_segments_by_size(log.log_segments(0, end_offset), log.config.segment_size,
                                             log.config.max_index_size, cleanable.first_uncleanable_offset)
        for group in groups:
            self.clean_segments(log, group, self.offset_map, current_time, stats, transaction_metadata,
                                legacy_delete_horizon_ms, upper_bound_offset)
        stats.buffer_utilization = self.offset_map.utilization
        stats.all_done()
        return end_offset, stats

    # -- the offset map -----------------------------------------------------------------------------

    def build_offset_map(self, log: Log, start: int, end: int, offset_map: OffsetMap, stats: CleanerStats) -> None:
        """Map every key of ``[start, end)`` to its latest offset, segment by segment, until the map is full
        (Kafka: ``buildOffsetMap``)."""
        offset_map.clear()
        dirty = log.log_segments(start, end) if start < end else []
        next_starts = [segment.base_offset for segment in dirty[1:]] + ([end] if dirty else [])
        logger.info("Building offset map for log %s for %d segments in offset range [%d, %d).", log.name,
                    len(dirty), start, end)
        transaction_metadata = CleanedTransactionMetadata()
        facts = self._facts if self._facts is not None else ProducerFacts(log)
        transaction_metadata.add_aborted_transactions(facts.aborted_in(start, end))
        for i, (segment, next_start) in enumerate(zip(dirty, next_starts, strict=True)):
            self.check_done(log.topic_partition)
            full = self.build_offset_map_for_segment(log.topic_partition, segment, offset_map, start, next_start,
                                                     log.config.max_message_size, transaction_metadata, stats)
            if full:
                logger.debug("Offset map is full, %d segments fully mapped, segment with base offset %d is "
                             "partially mapped", i, segment.base_offset)
                break
        logger.info("Offset map for log %s complete.", log.name)

    def build_offset_map_for_segment(self, topic_partition: TopicPartition, segment: LogSegment,
                                     offset_map: OffsetMap, start_offset: int, next_segment_start_offset: int,
                                     max_log_message_size: int, transaction_metadata: CleanedTransactionMetadata,
                                     stats: CleanerStats) -> bool:
        """Add one segment's keys to the map; ``True`` when the map filled up before the segment's end
        (Kafka: ``buildOffsetMapForSegment``).  Fullness is checked before every put, as Kafka checks it."""
        position = segment.offset_index.lookup(start_offset).position
        max_desired_map_size = int(offset_map.slots * self.dup_buffer_load_factor)
        skimpy = isinstance(offset_map, SkimpyOffsetMap)
        for _chunk_start, decoded in self._chunks(segment, position, max_log_message_size):
            bytes_read = 0
            run: list[_DecodedBatch] = []
            aborted = False
            for item in itertools.chain(decoded, (None,)):
                if run and (item is None or item.columns is not run[0].columns or item.batch.is_control
                            or item.batch.is_transactional):
                    # A run of plain data batches sharing one set of columns goes to the kernel in one call.
                    if self._map_run(offset_map, run, start_offset, max_desired_map_size, skimpy, stats):
                        return True
                    bytes_read += sum(d.batch.size_in_bytes for d in run if d.last)
                    run = []
                if item is None:
                    break
                batch = item.batch
                if not (batch.is_control or batch.is_transactional):
                    run.append(item)
                    continue
                # A batch of many records comes in pieces: its transaction is looked at once, with its first.
                if batch.is_control:
                    if item.first:
                        transaction_metadata.on_control_batch_read(batch)
                        stats.index_messages_read(1)
                else:
                    if item.first:
                        aborted = transaction_metadata.on_batch_read(batch)
                    if aborted:
                        stats.index_messages_read(item.hi - item.lo)
                    elif self._map_run(offset_map, [item], start_offset, max_desired_map_size, skimpy, stats):
                        return True
                if item.last:
                    bytes_read += batch.size_in_bytes
                    if batch.last_offset >= start_offset:
                        offset_map.update_latest_offset(batch.last_offset)
            stats.index_bytes_read(bytes_read)
        # Skip the offset gaps at the segment's end, so the round does not stall on them.
        offset_map.update_latest_offset(next_segment_start_offset - 1)
        self.restore_buffers()
        return False

    @staticmethod
    def _map_run(offset_map: OffsetMap, run: list[_DecodedBatch], start_offset: int, max_desired_map_size: int,
                 skimpy: bool, stats: CleanerStats) -> bool:
        """Put the keys of consecutive batches (or pieces of one) into the map; ``True`` when it filled.  After
        each whole batch whose last offset reaches ``start_offset`` the map's latest offset moves to it, as in
        Kafka's loop."""
        columns = run[0].columns
        lo, hi = run[0].lo, run[-1].hi
        rows = columns.records[lo:hi]
        if skimpy:
            assert isinstance(offset_map, SkimpyOffsetMap)
            last_put_before = offset_map.latest_offset
            processed, full = offset_map.put_records(columns.data, rows, start_offset, max_desired_map_size)
            stats.index_messages_read(processed)
            completed = [d.batch.last_offset for d in run if d.hi - lo <= processed and d.last
                         and d.batch.last_offset >= start_offset]
            if full:
                # Batches wholly before the record that found the map full were completed.
                latest = max([offset_map.latest_offset, *completed]) if completed else offset_map.latest_offset
                offset_map.update_latest_offset(max(latest, last_put_before))
                return True
            if completed:
                offset_map.update_latest_offset(max(offset_map.latest_offset, completed[-1]))
            return False
        for d in run:
            for k in range(d.lo, d.hi):
                offset = int(columns.records["offset"][k])
                key = columns.key(k)
                if key is not None and offset >= start_offset:
                    if offset_map.size < max_desired_map_size:
                        offset_map.put(key, offset)
                    else:
                        return True
                stats.index_messages_read(1)
            if d.last and d.batch.last_offset >= start_offset:
                offset_map.update_latest_offset(d.batch.last_offset)
        return False

    # -- grouping -----------------------------------------------------------------------------------

    @staticmethod
    def group_segments_by_size(segments: list[LogSegment], max_size: int, max_index_size: int,
                               first_uncleanable_offset: int) -> list[list[LogSegment]]:
        """Group consecutive segments so that each group fits one segment: its log size, both index sizes
        and its offset range (Kafka: ``groupSegmentsBySize``)."""
        grouped: list[list[LogSegment]] = []
        remaining = list(segments)
        while remaining:
            group = [remaining.pop(0)]
            log_size = group[0].size()
            index_size = group[0].offset_index.size_in_bytes()
            time_index_size = group[0].time_index.size_in_bytes()
            while remaining:
                segment = remaining[0]
                if log_size + segment.size() > max_size:
                    break
                if index_size + segment.offset_index.size_in_bytes() > max_index_size:
                    break
                if time_index_size + segment.time_index.size_in_bytes() > max_index_size:
                    break
                last_offset = (remaining[1].base_offset - 1) if len(remaining) > 1 else first_uncleanable_offset - 1
                if segment.size() != 0 and last_offset - group[0].base_offset > INT32_MAX:
                    break
                group.append(remaining.pop(0))
                log_size += segment.size()
                index_size += segment.offset_index.size_in_bytes()
                time_index_size += segment.time_index.size_in_bytes()
            grouped.append(group)
        return grouped

    # -- cleaning a group ---------------------------------------------------------------------------

    def clean_segments(self, log: Log, segments: list[LogSegment], offset_map: OffsetMap, current_time: int,
                       stats: CleanerStats, transaction_metadata: CleanedTransactionMetadata,
                       legacy_delete_horizon_ms: int, upper_bound_offset_of_cleaning_round: int) -> None:
        """Write a group's kept records into one ``.cleaned`` segment and swap it in (Kafka: ``cleanSegments``)."""
        self._current_tp = log.topic_partition
        first = segments[0]
        cleaned = log._create_cleaned_segment(first.base_offset)
        try:
            facts = self._facts if self._facts is not None else ProducerFacts(log)
            last_records = facts.last_records
            for i, current in enumerate(segments):
                next_segment = segments[i + 1] if i + 1 < len(segments) else None
                start_offset = current.base_offset
                upper_bound = next_segment.base_offset if next_segment is not None else current.read_next_offset()
                transaction_metadata.add_aborted_transactions(facts.aborted_in(start_offset, upper_bound))
                retain_legacy_deletes = current.last_modified() > legacy_delete_horizon_ms
                logger.info("Cleaning %s in log %s into %d with an upper bound deletion horizon %d computed from the "
                            "segment last modified time of %d,%s deletes.", current, log.name, cleaned.base_offset,
                            legacy_delete_horizon_ms, current.last_modified(),
                            "retaining" if retain_legacy_deletes else "discarding")
                try:
                    self.clean_into(log.topic_partition, current, cleaned, offset_map, retain_legacy_deletes,
                                    log.config.delete_retention_ms, log.config.max_message_size,
                                    transaction_metadata, last_records, upper_bound_offset_of_cleaning_round,
                                    stats, current_time)
                except LogSegmentOffsetOverflowError as e:
                    logger.info("Caught segment overflow error during cleaning: %s", e)
                    log.split_overflowed_segment(current)
                    raise LogCleaningAbortedError(f"Split {current} on offset overflow; cleaning restarts") from e
            cleaned.on_become_inactive_segment()
            cleaned.flush()
            cleaned.set_last_modified(int(segments[-1].last_modified()))
            logger.info("Swapping in cleaned segment %s for segment(s) %s in log %s", cleaned, segments, log)
            log.replace_segments([cleaned], segments)
        except BaseException:
            try:
                cleaned.close_handlers()
                cleaned.delete()
            except Exception as delete_error:
                logger.warning("Failed to delete cleaned segment %s: %s", cleaned, delete_error)
            raise

    def clean_into(self, topic_partition: TopicPartition, source: LogSegment, dest: LogSegment, offset_map: OffsetMap,
                   retain_legacy_deletes_and_txn_markers: bool, delete_retention_ms: int, max_log_message_size: int,
                   transaction_metadata: CleanedTransactionMetadata,
                   last_records_of_active_producers: dict[int, tuple[int | None, int]],
                   upper_bound_offset_of_cleaning_round: int, stats: CleanerStats, current_time: int) -> None:
        """Copy what ``source`` keeps into ``dest`` (Kafka: ``cleanInto`` with ``MemoryRecords.filterTo``)."""
        skimpy = isinstance(offset_map, SkimpyOffsetMap)
        for _chunk_start, decoded in self._chunks(source, 0, max_log_message_size):
            out = bytearray()
            max_offset = -1
            max_timestamp = -1
            shallow_offset_of_max = -1
            messages_read = messages_retained = bytes_read = 0
            codes_of: tuple[Any, Any] = (None, None)  # (columns, the map's codes for them)
            retention, remove_marker = _DELETE, False
            kept = _KeptRecords()
            for item in decoded:
                batch = item.batch
                if item.first:
                    bytes_read += batch.size_in_bytes
                    # Once a batch, with its first piece: the transaction state moves on with it.
                    retention, remove_marker = self._check_batch_retention(
                        batch, transaction_metadata, last_records_of_active_producers,
                        upper_bound_offset_of_cleaning_round, current_time)
                    kept = _KeptRecords()
                if retention == _DELETE:
                    continue  # Kafka's filterTo counts the bytes of a deleted batch, not its messages
                columns = item.columns
                rows = columns.records[item.lo:item.hi]
                count = item.hi - item.lo
                messages_read += count
                if self._discard_batch_records:
                    keep = np.zeros(count, dtype=bool)
                elif batch.is_control:
                    keep = np.ones(count, dtype=bool)
                else:
                    if skimpy:
                        assert isinstance(offset_map, SkimpyOffsetMap)
                        if codes_of[0] is not columns:
                            codes_of = (columns, offset_map.latest_codes(columns.data, columns.records))
                        codes = codes_of[1][item.lo:item.hi]
                    else:
                        codes = np.array([self._code(offset_map, r) for r in _records_of(columns, item.lo, item.hi)],
                                         dtype=np.int8)
                    if batch.magic >= 2:
                        horizon = batch.delete_horizon_ms
                        retain_deletes = horizon is None or current_time < horizon
                    else:
                        retain_deletes = retain_legacy_deletes_and_txn_markers
                    keep = (codes == 2) | ((codes == 1) & ((rows["value_len"] >= 0) | retain_deletes))
                    invalid = int((codes == -1).sum())
                    if invalid:
                        stats.invalid_message(invalid)
                kept.add(item, keep)
                if not item.last:
                    continue
                kept_count = kept.count
                if kept_count:
                    contains_tombstones = kept.tombstones
                    need_horizon = (batch.magic >= 2 and (contains_tombstones or remove_marker)
                                    and batch.delete_horizon_ms is None)
                    magic_mismatch = batch.magic < 2 and kept.other_magic
                    if kept_count == kept.read and not need_horizon and not magic_mismatch:
                        out += batch.raw_bytes()
                        batch_max_ts, batch_shallow = batch.max_timestamp, batch.last_offset
                    else:
                        horizon = current_time + delete_retention_ms if need_horizon else batch.delete_horizon_ms
                        kept_columns, kept_index = kept.columns(batch)
                        data = _rebuild_batch(batch, kept_columns, kept_index, horizon)
                        out += data
                        if batch.magic >= 2:
                            batch_max_ts = (batch.max_timestamp
                                            if batch.timestamp_type is TimestampType.LOG_APPEND_TIME
                                            else kept.max_timestamp)
                            batch_shallow = batch.last_offset
                        else:
                            batch_max_ts, batch_shallow = _max_timestamp_of(data)
                    messages_retained += kept_count
                    last_kept = batch.last_offset if batch.magic >= 2 else kept.last_offset
                    max_offset = max(max_offset, last_kept)
                    if batch_max_ts > max_timestamp:
                        max_timestamp, shallow_offset_of_max = batch_max_ts, batch_shallow
                elif retention == _RETAIN_EMPTY:
                    if batch.magic < 2:
                        raise IllegalStateError("Empty batches are only supported for magic v2 and above")
                    out += _empty_batch(batch)
                    max_offset = max(max_offset, batch.last_offset)
                    if batch.max_timestamp > max_timestamp:
                        max_timestamp, shallow_offset_of_max = batch.max_timestamp, batch.last_offset
            stats.read_messages(messages_read, bytes_read)
            stats.recopy_messages(messages_retained, len(out))
            if out:
                dest.append(max_offset, max_timestamp, shallow_offset_of_max, MemoryRecords(bytes(out)))
                self.throttler.maybe_throttle(len(out))
        self.restore_buffers()

    _discard_batch_records = False

    def _check_batch_retention(self, batch: RecordBatch, transaction_metadata: CleanedTransactionMetadata,
                               last_records: dict[int, tuple[int | None, int]],
                               upper_bound_offset_of_cleaning_round: int,
                               current_time: int) -> tuple[str, bool]:
        """Kafka's cleaner ``RecordFilter.checkBatchRetention``: the batch's fate and whether it is a marker
        that may go once its horizon passes."""
        if batch.is_control:
            can_discard = transaction_metadata.on_control_batch_read(batch)
            horizon = batch.delete_horizon_ms
            self._discard_batch_records = can_discard and horizon is not None and horizon <= current_time
        else:
            can_discard = transaction_metadata.on_batch_read(batch)
            self._discard_batch_records = can_discard
        last_of_producer = False
        if batch.has_producer_id:
            last = last_records.get(batch.producer_id)
            if last is not None:
                last_data_offset, epoch = last
                last_of_producer = (batch.last_offset == last_data_offset if last_data_offset is not None
                                    else batch.is_control and batch.producer_epoch == epoch)
        if batch.has_producer_id and last_of_producer:
            retention = _RETAIN_EMPTY
        elif batch.magic >= 2 and batch.next_offset == upper_bound_offset_of_cleaning_round:
            # Kafka after 3.8 (KAFKA-17076): keep the round's last batch, emptied if need be, so the log end
            # the round reached stays visible and the next round starts where this one stopped.  Only a v2
            # batch can be kept empty; a legacy entry is dropped as before.
            retention = _RETAIN_EMPTY
        elif self._discard_batch_records:
            retention = _DELETE
        else:
            retention = _DELETE_EMPTY
        return retention, can_discard and batch.is_control

    @staticmethod
    def _code(offset_map: OffsetMap, record: Any) -> int:
        if record.offset > offset_map.latest_offset:
            return 2
        if record.key is None:
            return -1
        return 1 if record.offset >= offset_map.get(record.key) else 0

    def should_retain_record(self, offset_map: OffsetMap, retain_deletes_for_legacy_records: bool,
                             batch: RecordBatch, record: Any, stats: CleanerStats, current_time: int) -> bool:
        """Kafka: ``shouldRetainRecord``: keep a record past the mapped range, or the latest of its key when it
        has a value or its tombstone is still inside the delete horizon; drop keyless records."""
        if record.offset > offset_map.latest_offset:
            return True
        if record.key is None:
            stats.invalid_message()
            return False
        latest = record.offset >= offset_map.get(record.key)
        if batch.magic >= 2:
            horizon = batch.delete_horizon_ms
            retain_deletes = horizon is None or current_time < horizon
        else:
            retain_deletes = retain_deletes_for_legacy_records
        return latest and (record.value is not None or retain_deletes)


# ---------------------------------------------------------------------------------------------------
# Rebuilding batches


_HEADER = struct.Struct(">qiibIhiqqqhii")


@dataclass(frozen=True)
class _DecodedBatch:
    """A batch of a chunk, or a piece of one, and where its records are in the chunk's columns:
    ``columns.records[lo:hi]``.  A batch of more records than one decode call takes
    (:data:`~kafkalog.record.batch.CHUNK_RECORDS`) comes in pieces, ``first`` and ``last`` marking its ends."""

    batch: RecordBatch
    columns: Any
    lo: int
    hi: int
    first: bool = True
    last: bool = True


def _decoded_batches(records: MemoryRecords) -> Iterator[_DecodedBatch]:
    """The batches of ``records`` with their decoded columns, decoded as they are asked for: runs of
    uncompressed v2 batches share one set of columns (one kernel call), every other batch has its own, or
    several, one per piece, when it holds many records (so what a pass holds is bounded whatever the count)."""
    batches = records.batches(strict=False)
    previous: _DecodedBatch | None = None
    position = -1
    seen = 0
    for columns in records.record_columns(check_crcs=False):
        assert columns.starts is not None  # MemoryRecords.record_columns always gives batch boundaries
        assert columns.batches is not None
        starts = columns.starts.tolist()
        positions = columns.batches["position"].tolist()
        for b in range(len(starts) - 1):
            first = positions[b] != position
            if previous is not None:
                yield dataclasses.replace(previous, last=first)  # a batch's last piece comes before another's first
            if first:
                following = next(batches, None)
                if following is None or following.position != positions[b]:
                    raise IllegalStateError(f"the columns of the batch at {positions[b]} do not match the batches")
                batch, position = following, positions[b]
                seen += 1
            previous = _DecodedBatch(batch, columns, starts[b], starts[b + 1], first, False)
    if previous is not None:
        yield dataclasses.replace(previous, last=True)
    if next(batches, None) is not None:
        raise IllegalStateError(f"{seen} batches decoded, but there are more")


class _KeptRecords:
    """What the cleaning pass keeps of one batch, piece after piece: how many records it read and kept, the
    facts of the kept ones the rebuild needs, and which ones (a bit per record read).  A batch read in pieces
    is never held whole: when it must be rebuilt, its kept records are taken from it again."""

    def __init__(self) -> None:
        self.read = 0
        self.count = 0
        self.tombstones = False
        self.other_magic = False
        self.max_timestamp = -1
        self.last_offset = -1
        self._masks: list[Any] = []
        self._only: _DecodedBatch | None = None

    def add(self, item: _DecodedBatch, keep: Any) -> None:
        self.read += len(keep)
        # A bit per record for a batch in pieces (its masks are kept until its last piece).
        self._masks.append(keep if item.first and item.last else (np.packbits(keep), len(keep)))
        self._only = item if item.first and item.last else None
        if not keep.any():
            return
        rows = item.columns.records[item.lo:item.hi][keep]
        self.count += len(rows)
        self.tombstones = self.tombstones or bool((rows["value_len"] < 0).any())
        self.other_magic = self.other_magic or bool((rows["magic"] != item.batch.magic).any())
        self.max_timestamp = max(self.max_timestamp, int(rows["timestamp"].max()))
        self.last_offset = int(rows["offset"][-1])

    def columns(self, batch: RecordBatch) -> tuple[Any, Any]:
        """Columns holding the kept records, and their rows in them."""
        if self._only is not None:
            return self._only.columns, self._only.lo + np.flatnonzero(self._masks[0])
        keep = np.concatenate([np.unpackbits(bits, count=n).astype(bool) for bits, n in self._masks])
        records, headers = [], []
        at = lo = 0
        data = None
        for columns in batch.column_chunks(check_crcs=False):
            mask = keep[lo:lo + len(columns)]
            lo += len(columns)
            if not mask.any():
                continue
            rows = columns.records[mask]
            rows["header_index"] += at
            records.append(rows)
            headers.append(columns.headers)
            at += len(columns.headers)
            data = columns.data
        if lo != len(keep):
            raise IllegalStateError(f"the batch at {batch.position} decoded to {lo} records, then {len(keep)}")
        merged = RecordColumns(np.concatenate(records), np.concatenate(headers), data)
        return merged, np.arange(len(merged))


def _records_of(columns: Any, lo: int, hi: int) -> list[Any]:
    """Record tuples ``(offset, key, value, timestamp, headers)`` of ``columns.records[lo:hi]``."""
    from . import _impl

    out = []
    data = columns.data
    headers = columns.headers
    for row in columns.records[lo:hi]:
        record_headers = []
        for h in range(int(row["header_index"]), int(row["header_index"]) + int(row["header_count"])):
            hrow = headers[h]
            kp, kl, vp, vl = int(hrow["key_pos"]), int(hrow["key_len"]), int(hrow["value_pos"]), int(hrow["value_len"])
            record_headers.append((bytes(data[kp:kp + kl]).decode("utf-8", "replace"),
                                   None if vl < 0 else bytes(data[vp:vp + vl])))
        kp, kl, vp, vl = int(row["key_pos"]), int(row["key_len"]), int(row["value_pos"]), int(row["value_len"])
        out.append(_impl.core.Record(int(row["offset"]), int(row["timestamp"]),
                                     None if kl < 0 else bytes(data[kp:kp + kl]),
                                     None if vl < 0 else bytes(data[vp:vp + vl]), record_headers))
    return out


def _rebuild_batch(batch: RecordBatch, columns: Any, kept_index: Any, delete_horizon_ms: int | None) -> bytes:
    """The kept records (rows ``kept_index`` of the batch's columns) as a batch of the same magic, codec,
    timestamp type and producer fields (Kafka: ``MemoryRecords.buildRetainedRecordsInto``): v2 keeps the base
    offset and overrides the last offset with the original's; legacy starts at the first kept offset."""
    rows = columns.records[kept_index]
    data = columns.data
    keys = [None if kl < 0 else bytes(data[kp:kp + kl]) for kp, kl in zip(rows["key_pos"].tolist(),
                                                                         rows["key_len"].tolist(), strict=True)]
    values = [None if vl < 0 else bytes(data[vp:vp + vl]) for vp, vl in zip(rows["value_pos"].tolist(),
                                                                           rows["value_len"].tolist(), strict=True)]
    timestamps = rows["timestamp"].tolist()
    offsets = rows["offset"].tolist()
    log_append_time = batch.max_timestamp if batch.timestamp_type is TimestampType.LOG_APPEND_TIME else None
    if batch.magic >= 2:
        headers: list[Any] | None = None
        if bool((rows["header_count"] > 0).any()):
            headers = [r.headers or None for r in (_records_of(columns, int(i), int(i) + 1)[0] for i in kept_index)]
        return encode_default_batch(
            keys, values, timestamps, headers, base_offset=batch.base_offset, compression=batch.compression,
            timestamp_type=batch.timestamp_type, log_append_time=log_append_time, producer_id=batch.producer_id,
            producer_epoch=batch.producer_epoch, base_sequence=batch.base_sequence,
            is_transactional=batch.is_transactional, is_control=batch.is_control,
            partition_leader_epoch=batch.partition_leader_epoch,
            delete_horizon_ms=delete_horizon_ms if delete_horizon_ms is not None and delete_horizon_ms >= 0 else None,
            offset_deltas=[o - batch.base_offset for o in offsets],
            last_offset_delta=batch.last_offset - batch.base_offset)
    timestamp_type = batch.timestamp_type
    if timestamp_type is TimestampType.NO_TIMESTAMP_TYPE:
        timestamp_type = TimestampType.CREATE_TIME
    return build_legacy_message_set(
        list(zip(keys, values, [max(t, -1) for t in timestamps], strict=True)), magic=batch.magic,
        compression=batch.compression, timestamp_type=timestamp_type, log_append_time=log_append_time,
        offsets=offsets)


def _max_timestamp_of(data: bytes) -> tuple[int, int]:
    """The largest max timestamp among the entries in ``data`` and the last offset of the entry holding it."""
    best, offset = -1, -1
    for batch in MemoryRecords(data).batches():
        if batch.max_timestamp > best:
            best, offset = batch.max_timestamp, batch.last_offset
    return best, offset


def _empty_batch(batch: RecordBatch) -> bytes:
    """A header-only v2 batch keeping a producer's state (Kafka: ``DefaultRecordBatch.writeEmptyHeader``):
    no records, base timestamp -1, the original's offsets, max timestamp and producer fields."""
    attributes = int(batch.timestamp_type is TimestampType.LOG_APPEND_TIME) << 3
    attributes |= 0x10 if batch.is_transactional else 0
    attributes |= 0x20 if batch.is_control else 0
    out = bytearray(61)
    _HEADER.pack_into(out, 0, batch.base_offset, 61 - 12, batch.partition_leader_epoch, 2, 0, attributes,
                      batch.last_offset - batch.base_offset, -1, batch.max_timestamp, batch.producer_id,
                      batch.producer_epoch, batch.base_sequence, 0)
    from . import _impl

    struct.pack_into(">I", out, 17, _impl.core.crc32c(bytes(out[21:])))
    return bytes(out)


def _java_date(ms: float) -> str:
    """A timestamp as ``java.util.Date.toString`` prints it (in UTC)."""
    return _time.strftime("%a %b %d %H:%M:%S UTC %Y", _time.gmtime(ms / 1000.0))


# ---------------------------------------------------------------------------------------------------
# Threads and the LogCleaner


class CleanerThread(threading.Thread):
    """One cleaner thread (Kafka: ``CleanerThread``): cleans the filthiest log, then applies retention to
    compacted logs, and backs off when there is nothing to clean."""

    def __init__(self, thread_id: int, log_cleaner: LogCleaner) -> None:
        super().__init__(name=f"kafka-log-cleaner-thread-{thread_id}", daemon=True)
        self.thread_id = thread_id
        self.log_cleaner = log_cleaner
        config = log_cleaner.config
        self.cleaner = Cleaner(
            thread_id,
            SkimpyOffsetMap(min(config.dedupe_buffer_size // max(config.num_threads, 1), INT32_MAX),
                            config.hash_algorithm),
            config.io_buffer_size // max(config.num_threads, 1) // 2,
            config.max_message_size,
            config.dedupe_buffer_load_factor,
            log_cleaner.throttler,
            log_cleaner.time,
            self._check_done)
        #: The statistics of the thread's last cleaning round (Kafka: ``lastStats``; ``None`` before the first,
        #: where Kafka has an empty ``CleanerStats``).
        self.last_stats: CleanerStats | None = None
        #: What the last grab that found a log to clean saw of the logs (Kafka: ``lastPreCleanStats``).
        self.last_pre_clean_stats = PreCleanStats()
        self._shutdown = threading.Event()
        self._shutdown_complete = threading.Event()

    def _check_done(self, topic_partition: TopicPartition) -> None:
        if self._shutdown.is_set():
            raise LogCleaningAbortedError("The cleaner is shutting down")
        self.log_cleaner.cleaner_manager.check_cleaning_aborted(topic_partition)

    def initiate_shutdown(self) -> None:
        self._shutdown.set()

    @property
    def is_running(self) -> bool:
        """Kafka: ``ShutdownableThread.isRunning``: no shutdown was asked for."""
        return not self._shutdown.is_set()

    @property
    def is_thread_failed(self) -> bool:
        """The thread ended without being asked to: an unexpected error stopped it (Kafka:
        ``ShutdownableThread.isThreadFailed``, ``isShutdownComplete && !isShutdownInitiated``)."""
        return self._shutdown_complete.is_set() and not self._shutdown.is_set()

    def run(self) -> None:
        """Kafka's ``ShutdownableThread.run`` around ``CleanerThread.doWork``: until shut down, clean the filthiest
        log (a log that fails is marked uncleanable), back off when there was nothing to clean, and forget
        uncleanable partitions that are gone.  Any other error ends the thread, logged when no shutdown was
        asked for, and the thread counts as failed (:attr:`is_thread_failed`, :attr:`LogCleaner.dead_thread_count`)."""
        logger.info("[%s]: Starting", self.name)
        try:
            while self.is_running:
                self.do_work()
        except Exception:
            if self.is_running:
                logger.exception("[%s]: Error due to", self.name)
        finally:
            self._shutdown_complete.set()
        logger.info("[%s]: Stopped", self.name)

    def do_work(self) -> None:
        """One turn of the loop (Kafka 3.8: ``doWork``)."""
        cleaned = self.try_clean_filthiest_log()
        if not cleaned:
            self._shutdown.wait(self.log_cleaner.config.backoff_ms / 1000.0)
        self.log_cleaner.cleaner_manager.maintain_uncleanable_partitions()

    def try_clean_filthiest_log(self) -> bool:
        """Kafka: ``tryCleanFilthiestLog``."""
        try:
            return self.clean_filthiest_log()
        except LogCleaningError as e:
            logger.warning("[%s]: Unexpected exception thrown when cleaning log %s. Marking its partition (%s) as "
                           "uncleanable", self.name, e.log, e.log.topic_partition, exc_info=True)
            self.log_cleaner.cleaner_manager.mark_partition_uncleanable(e.log.dir.parent, e.log.topic_partition)
            return False

    def clean_filthiest_log(self) -> bool:
        """Clean the dirtiest compacted log, then run retention on compacted logs; ``True`` when something was
        cleaned (Kafka: ``cleanFilthiestLog``, 0.10.1 ``cleanOrSleep``).

        As Kafka 3.8: any failure of either step is a :class:`LogCleaningError` naming the log (whose partition
        :meth:`try_clean_filthiest_log` then marks uncleanable), and every log taken for retention is handed
        back, even when one of them fails.
        """
        manager = self.log_cleaner.cleaner_manager
        pre_clean_stats = PreCleanStats()
        cleanable = manager.grab_filthiest_compacted_log(self.log_cleaner.time, pre_clean_stats)
        cleaned = False
        if cleanable is not None:
            self.last_pre_clean_stats = pre_clean_stats
            try:
                self.clean_log(cleanable)
            except LogCleaningError:
                raise
            except Exception as e:
                raise LogCleaningError(cleanable.log, str(e), e) from e
            cleaned = True
        deletable = manager.deletable_logs()
        try:
            for _tp, log in deletable:
                try:
                    log.delete_old_segments()
                except Exception as e:
                    raise LogCleaningError(log, str(e), e) from e
        finally:
            manager.done_deleting([tp for tp, _log in deletable])
        return cleaned

    cleanOrSleep = clean_filthiest_log

    def clean_log(self, cleanable: LogToClean) -> None:
        """Kafka: ``cleanLog``."""
        manager = self.log_cleaner.cleaner_manager
        start_offset = cleanable.first_dirty_offset
        end_offset = start_offset
        try:
            end_offset, stats = self.cleaner.clean(cleanable)
            self.last_stats = stats
            logger.info("[%s]: %s", self.name, stats.summary(self.thread_id, cleanable.log.name, start_offset,
                                                          end_offset))
            if stats.invalid_messages_read > 0:
                logger.warning("\tFound %d invalid messages during compaction.", stats.invalid_messages_read)
        except LogCleaningAbortedError:
            pass  # the log was truncated, deleted or the cleaner stopped: nothing to record
        finally:
            # Any other failure goes up to clean_filthiest_log, which names the log in a LogCleaningError.
            # (Kafka takes an IOException out of the log dir instead; kafkalog has no offline log dirs.)
            manager.done_cleaning(cleanable.topic_partition, cleanable.log.dir.parent, end_offset)


class LogCleaner:
    """The cleaner of a LogManager's compacted logs (Kafka: ``LogCleaner``): ``log.cleaner.threads`` threads
    and the manager of their states and checkpoints."""

    def __init__(self, config: CleanerConfig, log_dirs: list[Any], logs: Any, time: Time = SYSTEM_TIME,
                 read_only: bool = False) -> None:
        #: The configuration, which :meth:`reconfigure` replaces (Kafka: ``config``, ``@volatile``).
        self.config = config
        self.time = time
        #: The logs: a ``{TopicPartition: Log}`` mapping, read afresh at every use (so removing a partition from
        #: it is what Kafka's ``cleaner.logs.remove(tp)`` is), or a callable returning one (Kafka: ``logs``).
        self.logs = logs
        self.cleaner_manager = LogCleanerManager(log_dirs, logs, time=time, read_only=read_only)
        self.throttler = Throttler(config.max_io_bytes_per_second, 300, time)
        self.cleaners: list[CleanerThread] = []

    # -- gauges (Kafka registers them as Yammer gauges; here they are read on demand) ----------------

    def _max_over_cleaner_threads(self, f: Callable[[CleanerThread], float]) -> int:
        """Kafka: ``maxOverCleanerThreads``: the largest ``f`` over the threads, as an int; 0 with no thread."""
        return int(max((f(thread) for thread in self.cleaners), default=0.0))

    @property
    def max_buffer_utilization_percent(self) -> int:
        """Gauge ``max-buffer-utilization-percent``: the fullest offset map of the threads' last rounds, computed
        as Kafka does, the largest utilization made an int before the ``* 100`` (so 0 unless a map was full)."""
        return self._max_over_cleaner_threads(
            lambda t: t.last_stats.buffer_utilization if t.last_stats is not None else 0.0) * 100

    @property
    def cleaner_recopy_percent(self) -> int:
        """Gauge ``cleaner-recopy-percent``: bytes written over bytes read in the threads' last rounds."""
        stats = [t.last_stats for t in self.cleaners if t.last_stats is not None]
        written = sum(s.bytes_written for s in stats)
        read = max(sum(s.bytes_read for s in stats), 1)
        return int(100 * (written / read))

    @property
    def max_clean_time_secs(self) -> int:
        """Gauge ``max-clean-time-secs``: the longest of the threads' last rounds."""
        return self._max_over_cleaner_threads(
            lambda t: t.last_stats.elapsed_secs() if t.last_stats is not None else 0.0)

    @property
    def max_compaction_delay_secs(self) -> int:
        """Gauge ``max-compaction-delay-secs``: the longest compaction delay the threads' last grabs saw."""
        return self._max_over_cleaner_threads(
            lambda t: float(t.last_pre_clean_stats.max_compaction_delay_ms)) // 1000

    @property
    def dead_thread_count(self) -> int:
        """Gauge ``DeadThreadCount``: threads an unexpected error stopped (Kafka: ``deadThreadCount``)."""
        return sum(1 for thread in self.cleaners if thread.is_thread_failed)

    @property
    def current_config(self) -> CleanerConfig:
        """Kafka: ``currentConfig`` (for tests)."""
        return self.config

    @property
    def cleaner_count(self) -> int:
        """Kafka: ``cleanerCount`` (for tests): the threads started and not shut down."""
        return len(self.cleaners)

    def startup(self) -> None:
        """Start the cleaner threads (Kafka: ``startup``)."""
        logger.info("Starting the log cleaner")
        for i in range(self.config.num_threads):
            thread = CleanerThread(i, self)
            self.cleaners.append(thread)
            thread.start()

    def shutdown(self) -> None:
        """Stop the threads and wait for them (Kafka: ``shutdown``; there are no gauges to remove)."""
        logger.info("Shutting down the log cleaner.")
        for thread in self.cleaners:
            thread.initiate_shutdown()
        for thread in self.cleaners:
            thread.join()
        self.cleaners.clear()

    def reconfigure(self, old_config: CleanerConfig | Mapping[str, Any],
                    new_config: CleanerConfig | Mapping[str, Any]) -> None:
        """Take a new configuration (Kafka: ``reconfigure``, of a broker's dynamic config): the throttler takes
        the new ``log.cleaner.io.max.bytes.per.second`` if it changed, then the threads are stopped and new ones
        started under the new configuration (so failed threads are replaced too).

        Each configuration is a :class:`CleanerConfig` or, as Kafka's ``KafkaConfig``, a broker's properties
        (read by :meth:`CleanerConfig.from_props`, Kafka's ``LogCleaner.cleanerConfig``).
        """
        old = old_config if isinstance(old_config, CleanerConfig) else CleanerConfig.from_props(old_config)
        self.config = new_config if isinstance(new_config, CleanerConfig) else CleanerConfig.from_props(new_config)
        max_io_bytes_per_second = self.config.max_io_bytes_per_second
        if max_io_bytes_per_second != old.max_io_bytes_per_second:
            logger.info("Updating logCleanerIoMaxBytesPerSecond: %s", max_io_bytes_per_second)
            self.throttler.update_desired_rate_per_sec(max_io_bytes_per_second)
        self.shutdown()
        self.startup()

    def abort_cleaning(self, topic_partition: TopicPartition) -> None:
        """Kafka: ``abortCleaning``."""
        self.cleaner_manager.abort_cleaning(topic_partition)

    def abort_and_pause_cleaning(self, topic_partition: TopicPartition) -> None:
        """Kafka: ``abortAndPauseCleaning``."""
        self.cleaner_manager.abort_and_pause_cleaning(topic_partition)

    def resume_cleaning(self, topic_partitions: Iterable[TopicPartition]) -> None:
        """Kafka: ``resumeCleaning``."""
        self.cleaner_manager.resume_cleaning(topic_partitions)

    def update_checkpoints(self, data_dir: Any, partition_to_remove: TopicPartition | None = None) -> None:
        """Rewrite ``data_dir``'s cleaner checkpoint, removing ``partition_to_remove`` if given (Kafka 3.8:
        ``updateCheckpoints(dataDir, partitionToRemove)``)."""
        self.cleaner_manager.update_checkpoints(data_dir, partition_to_remove=partition_to_remove)

    def maybe_truncate_checkpoint(self, data_dir: Any, topic_partition: TopicPartition, offset: int) -> None:
        """Kafka: ``maybeTruncateCheckpoint``."""
        self.cleaner_manager.maybe_truncate_checkpoint(data_dir, topic_partition, offset)

    def await_cleaned(self, topic_partition: TopicPartition, offset: int, timeout_ms: int = 60000) -> bool:
        """Wait until the log's cleaner checkpoint reaches ``offset`` (Kafka: ``awaitCleaned``, for tests)."""
        deadline = _time.monotonic() + timeout_ms / 1000.0
        while True:
            checkpoint = self.cleaner_manager.all_cleaner_checkpoints().get(topic_partition)
            if checkpoint is not None and checkpoint >= offset:
                return True
            if _time.monotonic() >= deadline:
                return False
            _time.sleep(0.05)

    def run_once(self, max_rounds: int | None = None, on_read: Callable[[int], None] | None = None
                 ) -> list[CleanerStats]:
        """Clean the filthiest qualifying compacted log, round after round, until none qualifies or
        ``max_rounds`` rounds have run, in the calling thread (no threads started): what a command-line
        ``clean`` or a Spark task does.  Returns the statistics of each round.  ``on_read`` is told the size
        of every read the two passes make (the offset map's pass over the dirty section, then the recopy)."""
        thread = CleanerThread(0, self)
        thread.cleaner.on_read = on_read
        stats: list[CleanerStats] = []
        rounds = 0
        while (max_rounds is None or rounds < max_rounds) and thread.try_clean_filthiest_log():
            rounds += 1
            if thread.last_stats is not None:
                stats.append(thread.last_stats)
                thread.last_stats = None
        return stats


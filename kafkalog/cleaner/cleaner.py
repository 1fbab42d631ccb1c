"""The Cleaner: one cleaning round of one compacted log.

Port of the ``Cleaner`` class of ``kafka/log/LogCleaner.scala`` (Kafka 0.10.1.1; 3.8.0 for modern behaviour,
spec §4; the file's ``LogCleaner`` and its threads are :mod:`kafkalog.cleaner.log_cleaner`): a cleaning
round of a compacted log

1. builds an offset map (:class:`~kafkalog.cleaner.offset_map.SkimpyOffsetMap`) of the latest offset of every key
   in the dirty section ``[first dirty offset, first uncleanable offset)``, stopping when the map is full
   (the round then ends where the map does: ``end offset = map.latest_offset + 1``);
2. groups every segment below the end offset (the already-clean head too) into groups that fit one
   segment, and for each group writes the records worth keeping into a new ``.cleaned`` segment;
3. swaps each cleaned segment in for its group with the ``.cleaned`` -> ``.swap`` -> live protocol
   (:meth:`kafkalog.log.unified_log.Log.replace_segments`), so a crash leaves the old or the new files, never both.

A record is kept when it is past the mapped range, or holds the latest offset of its key and either a
value or a tombstone still inside its delete horizon: for v2 batches the horizon is written into the
batch (attribute bit 6, Kafka 3.1+) the first time a cleaning keeps a tombstone, for v0/v1 it comes from
the segments' modification times.  A batch keeps its base offset, and for v2 its last offset too (so a
producer's sequence numbers survive); a batch emptied of records is dropped, or kept as a bare header
when it is the last a producer wrote.  Aborted transactional batches are removed whatever their keys;
transaction markers are kept until their transaction is gone from the log and their own horizon passed.
As in Kafka, the aborted transactions come from the log's transaction index (``collectAbortedTransactions``,
for the map's range and for each group's whole range) and the producers' last batches from its producer state
(``lastRecordsOfActiveProducers``, read again for each group); the cleaned segment's ``.txnindex`` gets the
aborted transactions whose markers it keeps.

A cleaning that fails before its swap leaves the log as it was.  An abort deletes the ``.cleaned`` segment;
any other error leaves its files where they are, for the next load of the log to delete or, if the swap had
begun, to finish, as Kafka does (:meth:`Cleaner.clean_segments`).

The passes over records are kernels: the map is filled from decoded record columns in one call per run of
batches, every record's fate (latest for its key, superseded, keyless, past the map) in one more, and the kept
batches of a run written by one more (``filter_v2_batches``).  A run is a read's whole v2 batches, data and
markers, transactional or not; only a transactional or control batch takes a Python step in either pass, for
the transactions' state (:func:`kafkalog.cleaner.filter.read_transactions`), in the batches' order.

Kafka's seams hold here too: the rewriting of a segment's batches without the dropped records is the record
layer's (:func:`kafkalog.record.filter.filter_to`, Kafka's ``MemoryRecords.filterTo``), told what to keep by
the cleaner's :class:`LogCleanerFilter`; a round's statistics are :class:`kafkalog.cleaner.stats.CleanerStats`,
the I/O limit :class:`kafkalog.cleaner.throttler.Throttler`, and what a round knows of transactions
:mod:`kafkalog.cleaner.transactions`.  The threads that pick the logs and run a Cleaner on them are
:mod:`kafkalog.cleaner.log_cleaner`.
"""

from __future__ import annotations

import itertools
import logging
import time as _time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from .. import _impl
from .._common import CONTROL_FLAG_MASK, INT32_MAX, MAGIC_V2, TRANSACTIONAL_FLAG_MASK, RecordFate
from ..errors import (
    CorruptRecordError,
    IllegalStateError,
    LogSegmentOffsetOverflowError,
)
from ..log import Log
from ..producer_state import LastRecord
from ..record import MemoryRecords, RecordBatch, RecordColumns, ScanStop
from ..record.filter import (
    KERNEL_ATTRIBUTES,
    ColumnRun,
    DecodedBatch,
    decoded_runs,
    filter_to,
)
from ..scheduler import Time
from ..segment import LogSegment
from ..topic import TopicPartition
from .cleaning_round import CleaningRound
from .filter import LogCleanerFilter, read_transactions
from .manager import (
    LogCleaningAbortedError,
    LogToClean,
)
from .offset_map import OffsetMap, SkimpyOffsetMap
from .stats import CleanerStats
from .throttler import Throttler
from .transactions import CleanedTransactionMetadata

__all__ = ["Cleaner"]

# The fates the map hands out, as plain ints: numpy compares an array with a plain int several times faster
# than with an IntEnum member, and the cleaning compares once per piece of every batch.
_PAST_MAP, _LATEST, _NO_KEY = int(RecordFate.PAST_MAP), int(RecordFate.LATEST), int(RecordFate.NO_KEY)

logger = logging.getLogger("kafkalog.cleaner")

# ---------------------------------------------------------------------------------------------------
# The Cleaner


#: The attribute bits of the batches the map pass reads as arrays: any (whole v2 batches decoded together).
_ANY_ATTRIBUTES = -1


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
            tuple[MemoryRecords, npt.NDArray[Any]]]:
        """The batches of a segment from ``start_position``, in reads of about the I/O buffer's size: the role of
        Kafka's ``readInto(readBuffer, position)``.  A batch larger than the buffer grows it, as Kafka does.
        Each read comes with its batches' scan rows (positions in the read), from the one scan of the segment;
        each pass decodes a read's batches as it asks for them (:func:`~kafkalog.record.filter.decoded_runs`)."""
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
            data = segment.log.read_bytes(chunk_start - segment.log.start, total)
            self.throttler.maybe_throttle(total)
            if self.on_read is not None:
                self.on_read(total)
            chunk_rows = rows[i:j].copy()
            chunk_rows["position"] -= chunk_start
            yield MemoryRecords(data), chunk_rows
            i = j

    _current_tp: TopicPartition | None = None

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
        stats = CleanerStats(self.time, cleanable.topic_partition)
        logger.info("Building offset map for %s...", log.name)
        upper_bound_offset = cleanable.first_uncleanable_offset
        self.build_offset_map(log, cleanable.first_dirty_offset, upper_bound_offset, self.offset_map, stats)
        end_offset = self.offset_map.latest_offset + 1
        stats.index_done()
        cleanable_segments = log.log_segments(0, cleanable.first_uncleanable_offset)
        cleanable_horizon_ms = cleanable_segments[-1].last_modified() if cleanable_segments else 0
        logger.info("Cleaning log %s (cleaning prior to %s, discarding tombstones prior to upper bound deletion "
                    "horizon %s)...", log.name, _java_date(cleanable_horizon_ms), _java_date(legacy_delete_horizon_ms))
        cleaning_round = CleaningRound(self.offset_map, current_time, stats, CleanedTransactionMetadata(),
                                       legacy_delete_horizon_ms, upper_bound_offset)
        groups = self.group_segments_by_size(log.log_segments(0, end_offset), log.config.segment_size,
                                             log.config.max_index_size, cleanable.first_uncleanable_offset)
        for group in groups:
            self.clean_segments(log, group, cleaning_round)
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
        transaction_metadata.add_aborted_transactions(log.collect_aborted_transactions(start, end))
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
        for records, rows in self._chunks(segment, position, max_log_message_size):
            bytes_read = 0
            run: list[DecodedBatch] = []
            aborted = False
            for item in itertools.chain(decoded_runs(records, _ANY_ATTRIBUTES, rows), (None,)):
                if run and (item is None or isinstance(item, ColumnRun) or item.columns is not run[0].columns
                            or item.batch.is_control or item.batch.is_transactional):
                    # A run of plain data batches sharing one set of columns goes to the kernel in one call.
                    ends = [(d.hi, d.batch.last_offset) for d in run if d.last]
                    if self._map_run(offset_map, run[0].columns, run[0].lo, run[-1].hi,
                                     np.array([end for end, _ in ends], dtype=np.int64),
                                     np.array([last for _, last in ends], dtype=np.int64), start_offset,
                                     max_desired_map_size, skimpy, stats) is not None:
                        return True
                    bytes_read += sum(d.batch.size_in_bytes for d in run if d.last)
                    run = []
                if item is None:
                    break
                if isinstance(item, ColumnRun):
                    # Whole v2 batches read together: their keys in one call, the batches as arrays.
                    columns = item.columns
                    assert columns.starts is not None and columns.batches is not None
                    if self._map_column_run(offset_map, item, transaction_metadata, start_offset,
                                            max_desired_map_size, skimpy, stats):
                        return True
                    bytes_read += int(np.add.reduce(columns.batches["size"], dtype=np.int64))
                    continue
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
                    elif self._map_run(offset_map, item.columns, item.lo, item.hi,
                                       np.array([item.hi] if item.last else [], dtype=np.int64),
                                       np.array([batch.last_offset] if item.last else [], dtype=np.int64),
                                       start_offset, max_desired_map_size, skimpy, stats) is not None:
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

    def _map_column_run(self, offset_map: OffsetMap, run: ColumnRun, transaction_metadata: CleanedTransactionMetadata,
                        start_offset: int, max_desired_map_size: int, skimpy: bool, stats: CleanerStats) -> bool:
        """The steps of :meth:`build_offset_map_for_segment` for whole v2 batches decoded together (data and
        control, transactional or not), as arrays; ``True`` when the map filled.  Only a transactional or control
        batch takes a Python step, for the transactions (Kafka's ``onBatchRead`` / ``onControlBatchRead``, in the
        batches' order; a plain batch's ``onBatchRead`` only moves the aborted transactions that began up to it,
        which the step of any later batch, or one move up to the last batch, does the same).  The keys of the
        other data batches go into the map in one call, an aborted batch's and a control batch's are not put but
        their records are counted as read (a control batch's as one, as Kafka counts it), if the map did not fill
        before them."""
        columns = run.columns
        rows, starts = columns.batches, columns.starts
        assert rows is not None and starts is not None  # a ColumnRun's columns have both
        attributes = rows["attributes"]
        last_offsets = rows["last_offset"]
        if not np.count_nonzero(attributes & (CONTROL_FLAG_MASK | TRANSACTIONAL_FLAG_MASK)):
            return self._map_run(offset_map, columns, 0, len(columns), starts[1:], last_offsets, start_offset,
                                 max_desired_map_size, skimpy, stats) is not None
        # The headers are in the read's buffer (a compressed batch's columns hold its decompressed records).
        producer_ids, _ = _impl.core.producer_fields(run.records.buffer, np.ascontiguousarray(rows["position"]))
        counts = np.diff(starts)
        special, said = read_transactions(columns, producer_ids, transaction_metadata)
        control = (attributes & CONTROL_FLAG_MASK) != 0
        aborted = np.zeros(len(rows), dtype=bool)
        aborted[special] = said
        aborted &= ~control
        skipped = control | aborted  # nothing put
        # The records they count as read: a control batch's as one, an aborted one's all.
        read_as = np.where(control, 1, np.where(aborted, counts, 0))
        put = RecordColumns(columns.records[np.repeat(~skipped, counts)], columns.headers, columns.data)
        # Each batch's end among the records put (a skipped batch's: where it lies between them).
        ends = np.cumsum(np.where(skipped, 0, counts))
        processed = self._map_run(offset_map, put, 0, len(put), ends, last_offsets, start_offset,
                                  max_desired_map_size, skimpy, stats)
        # A skipped batch was reached if the map was not found full before it.
        reached = skipped if processed is None else skipped & (ends <= processed)
        read = int(np.add.reduce(read_as[reached]))
        if read:
            stats.index_messages_read(read)
        return processed is not None

    @staticmethod
    def _map_run(offset_map: OffsetMap, columns: Any, lo: int, hi: int, ends: npt.NDArray[np.int64],
                 last_offsets: npt.NDArray[np.int64], start_offset: int, max_desired_map_size: int, skimpy: bool,
                 stats: CleanerStats) -> int | None:
        """Put the keys of ``columns.records[lo:hi]``, consecutive batches or pieces of one, into the map; when it
        filled, how many of the records were processed before the one that found it full (else ``None``).
        ``ends[i]`` is the record after the ``i``-th batch that ends among them and
        ``last_offsets[i]`` its last offset: after each whole batch whose last offset reaches ``start_offset``
        the map's latest offset moves to it, as in Kafka's loop."""
        if skimpy:
            assert isinstance(offset_map, SkimpyOffsetMap)
            last_put_before = offset_map.latest_offset
            processed, full = offset_map.put_records(columns.data, columns.records[lo:hi], start_offset,
                                                     max_desired_map_size)
            stats.index_messages_read(processed)
            completed = last_offsets[(ends - lo <= processed) & (last_offsets >= start_offset)]
            if full:
                # Batches wholly before the record that found the map full were completed.
                latest = offset_map.latest_offset
                if len(completed):
                    latest = max(latest, int(np.maximum.reduce(completed)))
                offset_map.update_latest_offset(max(latest, last_put_before))
                return int(processed)
            if len(completed):
                offset_map.update_latest_offset(max(offset_map.latest_offset, int(completed[-1])))
            return None
        batch_ends, batch_lasts = ends.tolist(), last_offsets.tolist()
        b = 0
        for k in range(lo, hi):
            while b < len(batch_ends) and batch_ends[b] <= k:
                if batch_lasts[b] >= start_offset:
                    offset_map.update_latest_offset(batch_lasts[b])
                b += 1
            offset = int(columns.records["offset"][k])
            key = columns.key(k)
            if key is not None and offset >= start_offset:
                if offset_map.size < max_desired_map_size:
                    offset_map.put(key, offset)
                else:
                    return k - lo
            stats.index_messages_read(1)
        for last in batch_lasts[b:]:
            if last >= start_offset:
                offset_map.update_latest_offset(last)
        return None

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

    def clean_segments(self, log: Log, segments: list[LogSegment], cleaning_round: CleaningRound) -> None:
        """Write a group's kept records into one ``.cleaned`` segment and swap it in (Kafka: ``cleanSegments``;
        its other arguments are the fields of ``cleaning_round``).

        The producers whose last batch is kept are read from the log's producer state here, once per group, as
        Kafka reads ``lastRecordsOfActiveProducers``: a producer that appended, or expired, while an earlier
        group was cleaned is seen as it now is.

        What becomes of the ``.cleaned`` segment when the cleaning fails is Kafka's: an abort
        (:class:`LogCleaningAbortedError`: the log was truncated or deleted, the cleaner is stopping, or a
        source segment was split) deletes it, and a failure of that deletion goes up with the abort, as a note
        (Kafka: a suppressed exception).  Any other error leaves its files where they are: it may come from
        the swap, after which they are the log's, and a ``.cleaned`` file left behind is deleted by the next
        load of the log, as after a crash.  Two additions of kafkalog's: a Ctrl-C (``KeyboardInterrupt``)
        before the swap counts as an abort, being the user's request to stop as a shutdown is the cleaner
        thread's; and a cleaned segment the log did not take has its files closed, where Kafka leaves them open.
        """
        self._current_tp = log.topic_partition
        first = segments[0]
        cleaned = log.create_cleaned_segment(first.base_offset)
        # The retained aborted transactions go to the cleaned segment's .txnindex, which the swap puts in
        # place of the old segments' (Kafka: transactionMetadata.cleanedIndex = Some(cleaned.txnIndex)).
        cleaning_round.transaction_metadata.cleaned_index = cleaned.txn_index
        swapping = False
        try:
            last_records_of_active_producers = log.last_records_of_active_producers()
            legacy_delete_horizon_ms = cleaning_round.legacy_delete_horizon_ms
            for i, current in enumerate(segments):
                next_segment = segments[i + 1] if i + 1 < len(segments) else None
                start_offset = current.base_offset
                upper_bound = next_segment.base_offset if next_segment is not None else current.read_next_offset()
                # The whole segment's, as the cleaned segment's index is rebuilt whole from them (Kafka's note).
                cleaning_round.transaction_metadata.add_aborted_transactions(
                    log.collect_aborted_transactions(start_offset, upper_bound))
                retain_legacy_deletes = current.last_modified() > legacy_delete_horizon_ms
                logger.info("Cleaning %s in log %s into %d with an upper bound deletion horizon %d computed from the "
                            "segment last modified time of %d,%s deletes.", current, log.name, cleaned.base_offset,
                            legacy_delete_horizon_ms, current.last_modified(),
                            "retaining" if retain_legacy_deletes else "discarding")
                try:
                    self.clean_into(log.topic_partition, current, cleaned, cleaning_round,
                                    retain_legacy_deletes_and_txn_markers=retain_legacy_deletes,
                                    delete_retention_ms=log.config.delete_retention_ms,
                                    max_log_message_size=log.config.max_message_size,
                                    last_records_of_active_producers=last_records_of_active_producers)
                except LogSegmentOffsetOverflowError as e:
                    logger.info("Caught segment overflow error during cleaning: %s", e)
                    log.split_overflowed_segment(current)
                    raise LogCleaningAbortedError(f"Split {current} on offset overflow; cleaning restarts") from e
            cleaned.on_become_inactive_segment()
            cleaned.flush()
            cleaned.set_last_modified(int(segments[-1].last_modified()))
            logger.info("Swapping in cleaned segment %s for segment(s) %s in log %s", cleaned, segments, log)
            swapping = True
            log.replace_segments([cleaned], segments)
        except (LogCleaningAbortedError, KeyboardInterrupt) as e:
            if swapping:
                self._release_unless_taken(log, cleaned)
                raise
            try:
                cleaned.close_handlers()
                cleaned.delete_if_exists()
            except Exception as delete_error:
                e.add_note(f"Deleting the cleaned segment {cleaned.log.file} failed: {delete_error!r}")
            raise
        except BaseException:
            self._release_unless_taken(log, cleaned)
            raise

    @staticmethod
    def _release_unless_taken(log: Log, cleaned: LogSegment) -> None:
        """Close the files of a cleaned segment whose cleaning failed, unless the swap got as far as putting it
        in the log, which then owns it; the files stay on disk either way."""
        if log.segments.get(cleaned.base_offset) is not cleaned:
            cleaned.close_handlers()

    def clean_into(self, topic_partition: TopicPartition, source: LogSegment, dest: LogSegment,
                   cleaning_round: CleaningRound, *, retain_legacy_deletes_and_txn_markers: bool,
                   delete_retention_ms: int, max_log_message_size: int,
                   last_records_of_active_producers: Mapping[int, LastRecord]) -> None:
        """Copy what ``source`` keeps into ``dest`` (Kafka: ``cleanInto``; the round-wide arguments are the fields
        of ``cleaning_round``): each read of the source goes through
        :func:`~kafkalog.record.filter.filter_to` with the cleaner's :class:`LogCleanerFilter`, and what it
        keeps is appended to ``dest``.  ``topic_partition`` is the log's, for ``check_done``;
        ``last_records_of_active_producers`` the group's (:meth:`clean_segments`)."""
        self._current_tp = topic_partition
        record_filter = LogCleanerFilter(self, cleaning_round, retain_legacy_deletes_and_txn_markers,
                                         delete_retention_ms, last_records_of_active_producers)
        stats = cleaning_round.stats
        for records, rows in self._chunks(source, 0, max_log_message_size):
            result = filter_to(decoded_runs(records, KERNEL_ATTRIBUTES, rows), record_filter)
            stats.read_messages(result.messages_read, result.bytes_read)
            stats.recopy_messages(result.messages_retained, result.bytes_retained)
            if result.output:
                # The read's own output buffer, not a copy: nothing writes to it after the filtering.
                dest.append(result.max_offset, result.max_timestamp, result.shallow_offset_of_max_timestamp,
                            MemoryRecords(result.output))
                self.throttler.maybe_throttle(result.bytes_retained)
        self.restore_buffers()

    @staticmethod
    def record_fate(offset_map: OffsetMap, offset: int, key: bytes | None) -> RecordFate:
        """What the map says of one record (the key test of Kafka's ``shouldRetainRecord``): the scalar twin of
        :meth:`SkimpyOffsetMap.latest_codes <kafkalog.cleaner.offset_map.SkimpyOffsetMap.latest_codes>`, for any
        :class:`~kafkalog.cleaner.offset_map.OffsetMap`."""
        if offset > offset_map.latest_offset:
            return RecordFate.PAST_MAP
        if key is None:
            return RecordFate.NO_KEY
        return RecordFate.LATEST if offset >= offset_map.get(key) else RecordFate.SUPERSEDED

    @staticmethod
    def retain_deletes(batch: RecordBatch, retain_deletes_for_legacy_records: bool, current_time: int) -> bool:
        """Whether the latest tombstones of ``batch``'s keys are kept: inside a v2 batch's own delete horizon
        (none set yet, or not passed), else ``retain_deletes_for_legacy_records`` (Kafka: the tombstone test of
        ``shouldRetainRecord``)."""
        if batch.magic >= MAGIC_V2:
            horizon = batch.delete_horizon_ms
            return horizon is None or current_time < horizon
        return retain_deletes_for_legacy_records

    @staticmethod
    def should_retain_records(retain_deletes_for_legacy_records: bool, piece: DecodedBatch,
                              fates: npt.NDArray[np.int8], stats: CleanerStats,
                              current_time: int) -> npt.NDArray[np.bool_]:
        """Which records of ``piece`` (``piece.columns.records[piece.lo:piece.hi]``) the cleaning keeps, given
        their :class:`~kafkalog._common.RecordFate` in the offset map (Kafka: ``shouldRetainRecord``, asked of
        the records of a piece of a batch at once): a record past the mapped range is kept; the latest of its
        key is kept when it has a value or its tombstone is inside the delete horizon (a v2 batch's own, else
        ``retain_deletes_for_legacy_records``); a keyless record is dropped and counted as invalid."""
        retain_deletes = Cleaner.retain_deletes(piece.batch, retain_deletes_for_legacy_records, current_time)
        has_value = piece.columns.records["value_len"][piece.lo:piece.hi] >= 0
        keep: npt.NDArray[np.bool_] = (fates == _PAST_MAP) | ((fates == _LATEST) & (has_value | retain_deletes))
        invalid = int((fates == _NO_KEY).sum())
        if invalid:
            stats.invalid_message(invalid)
        return keep


def _java_date(ms: float) -> str:
    """A timestamp as ``java.util.Date.toString`` prints it (in UTC)."""
    return _time.strftime("%a %b %d %H:%M:%S UTC %Y", _time.gmtime(ms / 1000.0))

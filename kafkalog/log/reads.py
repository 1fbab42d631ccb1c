"""LogReads: what a log gives its readers - a fetch by offset, the consumer's records, aborted transactions,
offsets by position and by timestamp.

Port of the read side of ``core/src/main/scala/kafka/log/UnifiedLog.scala`` (Apache Kafka, tag 3.8.0): ``read``,
``collectAbortedTransactions``, ``convertToOffsetMetadataOrThrow``, ``maybeConvertToOffsetMetadata``,
``fetchOffsetByTimestamp`` and ``searchOffsetInLocalLog``, over :class:`~kafkalog.log.local_log.LocalLog`'s segment
reads; plus kafkalog's consumer view of the log (:meth:`LogReads.records`, :mod:`kafkalog.log.consumer_view`).

A mixin of :class:`~kafkalog.log.unified_log.Log`, as :mod:`kafkalog.log.retention` is: the methods are ``Log``'s own.
Readers take no lock but where Kafka's do (a bound made a position under the log's lock); they read a
consistent snapshot of the segment list.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import IllegalArgumentError, OffsetOutOfRangeError
from ..fetch import FetchDataInfo, FetchIsolation, LogOffsetMetadata
from ..file_message_set import FileMessageSet, TimestampAndOffset
from .consumer_view import ConsumedLog, ConsumerView, IsolationLevel
from .validator import UnsupportedForMessageFormatError

if TYPE_CHECKING:
    from ..config.log_config import LogConfig
    from ..leader_epoch_cache import LeaderEpochFileCache
    from ..record import Record, RecordColumns
    from ..segment import LogSegment
    from ..topic import TopicPartition
    from ..transaction_index import AbortedTxn
    from .local_log import LocalLog
    from .segments import LogSegments

__all__ = [
    "EARLIEST_LOCAL_TIMESTAMP",
    "EARLIEST_TIMESTAMP",
    "LATEST_TIMESTAMP",
    "MAX_TIMESTAMP",
    "UNKNOWN_TIMESTAMP",
    "LogReads",
]

logger = logging.getLogger("kafkalog.log")  # the log's own logger, as these lines were the log's

# The special timestamps of a ListOffsets request that :meth:`Log.fetch_offset_by_timestamp` answers (Kafka:
# ``ListOffsetsRequest.LATEST_TIMESTAMP`` and the others).
#: The log end offset.
LATEST_TIMESTAMP = -1
#: The log start offset.
EARLIEST_TIMESTAMP = -2
#: The record with the largest timestamp.
MAX_TIMESTAMP = -3
#: The first offset on local storage: the log start offset, as kafkalog keeps no remote (tiered) storage.
EARLIEST_LOCAL_TIMESTAMP = -4
#: The timestamp of an answer that is an offset only (Kafka: ``ListOffsetsResponse.UNKNOWN_TIMESTAMP``).
UNKNOWN_TIMESTAMP = -1


class _ReadLog(ConsumedLog, Protocol):
    """What the read methods use of their log (:class:`~kafkalog.log.unified_log.Log`), the consumer view's needs
    (:class:`~kafkalog.log.consumer_view.ConsumedLog`) among them."""

    _lock: threading.RLock
    _log_start_offset: int
    local_log: LocalLog
    segments: LogSegments
    topic_partition: TopicPartition
    leader_epoch_cache: LeaderEpochFileCache | None

    @property
    def config(self) -> LogConfig: ...
    @property
    def latest_epoch(self) -> int | None: ...
    def log_segments(self, from_offset: int | None = None, to_offset: int | None = None) -> list[LogSegment]: ...
    def read(self, start_offset: int, max_length: int, max_offset: int | LogOffsetMetadata | None = None,
             min_one_message: bool = True) -> FetchDataInfo: ...
    def convert_to_offset_metadata(self, offset: int) -> LogOffsetMetadata: ...
    def fetch_high_watermark_metadata(self) -> LogOffsetMetadata: ...
    def fetch_last_stable_offset_metadata(self) -> LogOffsetMetadata: ...
    def _read_isolated(self, start_offset: int, max_length: int, isolation: FetchIsolation,
                       min_one_message: bool) -> FetchDataInfo: ...
    def maybe_convert_to_offset_metadata(self, offset: int) -> LogOffsetMetadata: ...
    def _bound_metadata(self, offset: int) -> LogOffsetMetadata: ...
    def _consumer_read(self, start_offset: int | None, end_offset: int | None, isolation: str | IsolationLevel,
                       check_crcs: bool) -> tuple[ConsumerView, Iterator[tuple[FileMessageSet, int]]]: ...
    def _segment_reads(self, start_offset: int, end_offset: int,
                       bound: LogOffsetMetadata) -> Iterator[tuple[FileMessageSet, int]]: ...
    def _search_offset_in_local_log(self, target_timestamp: int, start_offset: int) -> TimestampAndOffset | None: ...
    def _fetch_offset_by_timestamp(self, target_timestamp: int) -> TimestampAndOffset | None: ...


class LogReads:
    """The read methods of a log (Kafka: the read side of ``UnifiedLog``)."""

    def read(self: _ReadLog, start_offset: int, max_length: int, max_offset: int | LogOffsetMetadata | None = None,
             min_one_message: bool = True, *, isolation: str | FetchIsolation | None = None) -> FetchDataInfo:
        """Read up to ``max_length`` bytes of batches starting at the one holding ``start_offset``
        (Kafka: ``UnifiedLog.read`` over ``LocalLog.read``).

        ``max_offset`` (exclusive) bounds what may be returned, as a fetch bounded by the high watermark
        is; by default the log end offset.  It may be given as :class:`LogOffsetMetadata`, as Kafka's
        ``maxOffsetMetadata`` is: where it is on a segment, the read stops at its position there; when it knows
        only its offset, nothing past the segments before it is returned.  An offset below the log start
        offset or past the log end offset is an :class:`~kafkalog.errors.OffsetOutOfRangeError`; an offset
        at the bound returns no records, and one past it no records with the metadata of where it is.

        ``max_offset`` is made a position under the log's lock, as Kafka makes its high watermark one
        (``fetchHighWatermarkMetadata``): no append or truncation can move the log while the position is
        found, so the bound is where ``max_offset`` is, and a committed ``max_offset`` keeps the read off
        the uncommitted records past it.

        ``isolation`` bounds the read as Kafka's ``read(startOffset, maxLength, isolation, minOneMessage)`` does,
        instead of ``max_offset``: :attr:`~kafkalog.fetch.FetchIsolation.LOG_END`, ``HIGH_WATERMARK``, or
        ``TXN_COMMITTED`` (``"txn_committed"``), the last stable offset, whose result also carries the aborted
        transactions that overlap what was read (``FetchDataInfo.aborted_transactions``, from the ``.txnindex``
        files), which a ``read_committed`` consumer skips.

        Raises:
            IllegalArgumentError: both ``max_offset`` and ``isolation`` are given.
        """
        if isolation is not None:
            if max_offset is not None:
                raise IllegalArgumentError("A read is bounded by max_offset or by isolation, not both")
            return self._read_isolated(start_offset, max_length, FetchIsolation.of(isolation), min_one_message)
        if start_offset < self._log_start_offset:
            raise OffsetOutOfRangeError(
                f"Received request for offset {start_offset} for partition {self.topic_partition}, but we only "
                f"have log segments starting from offset: {self._log_start_offset}.")
        next_offset_metadata = self.local_log.next_offset_metadata
        if isinstance(max_offset, LogOffsetMetadata):
            max_offset_metadata = max_offset
        elif max_offset is None or max_offset >= next_offset_metadata.message_offset:
            max_offset_metadata = next_offset_metadata
        else:
            with self._lock:
                max_offset_metadata = self.convert_to_offset_metadata(max_offset)
        return self.local_log.read(start_offset, max_length, min_one_message, max_offset_metadata,
                                   next_offset_metadata)

    def _read_isolated(self: _ReadLog, start_offset: int, max_length: int, isolation: FetchIsolation,
                       min_one_message: bool) -> FetchDataInfo:
        """Kafka: ``UnifiedLog.read`` with its ``FetchIsolation``."""
        if start_offset < self._log_start_offset:
            raise OffsetOutOfRangeError(
                f"Received request for offset {start_offset} for partition {self.topic_partition}, but we only "
                f"have log segments starting from offset: {self._log_start_offset}.")
        next_offset_metadata = self.local_log.next_offset_metadata
        if isolation is FetchIsolation.LOG_END:
            max_offset_metadata = next_offset_metadata
        elif isolation is FetchIsolation.HIGH_WATERMARK:
            max_offset_metadata = self.fetch_high_watermark_metadata()
        else:
            max_offset_metadata = self.fetch_last_stable_offset_metadata()
        if isolation is FetchIsolation.TXN_COMMITTED and self.read_only:
            # A log read in place keeps no producer state, and one without snapshots no index entries for its
            # aborts: its aborted transactions are those its reader found, cut to the range a broker's fetch
            # searches (from the read's start to the first offset past what it read), which they make objects of.
            state = self.in_place_transactions()
            return self.local_log.read(start_offset, max_length, min_one_message, max_offset_metadata, None, True,
                                       aborted_source=lambda start, upper: list(state.between(start, upper).aborted))
        return self.local_log.read(start_offset, max_length, min_one_message, max_offset_metadata,
                                   None, isolation is FetchIsolation.TXN_COMMITTED)

    def collect_aborted_transactions(self: _ReadLog, start_offset: int, upper_bound_offset: int) -> list[AbortedTxn]:
        """The aborted transactions in the segments' ``.txnindex`` files that a fetch of ``[start_offset,
        upper_bound_offset)`` must skip (Kafka: ``UnifiedLog.collectAbortedTransactions`` over
        :meth:`~kafkalog.log.local_log.LocalLog.collect_aborted_transactions`, from the log start offset): what
        :meth:`read` adds for ``isolation="read_committed"``, what :meth:`records` skips, and what the cleaner
        removes.  A log written before kafkalog kept producer state has its missing entries added when it is
        first opened for writing (:func:`~kafkalog.log.producer_state_updates.rebuild_producer_state`).
        """
        return self.local_log.collect_aborted_transactions(self._log_start_offset, start_offset, upper_bound_offset)

    def convert_to_offset_metadata(self: _ReadLog, offset: int) -> LogOffsetMetadata:
        """Where ``offset`` is: its segment and position (Kafka: ``convertToOffsetMetadataOrThrow``, a one-byte
        :meth:`read` bounded by the log end as it was when the call began).

        The log end is taken once, first: an offset equal to it gets that very metadata, never that of a later
        log end (appends made meanwhile, maybe after a truncation to ``offset``, would otherwise put the bound
        past ``offset``, and a read bounded by it, as by the high watermark, would return records past it).
        An offset below the log start offset or past the log end offset is an
        :class:`~kafkalog.errors.OffsetOutOfRangeError`.
        """
        return self.read(offset, 1, min_one_message=False).fetch_offset_metadata

    def maybe_convert_to_offset_metadata(self: _ReadLog, offset: int) -> LogOffsetMetadata:
        """Where ``offset`` is, or the bare offset when it is outside the log (Kafka:
        ``maybeConvertToOffsetMetadata``): never an :class:`~kafkalog.errors.OffsetOutOfRangeError`."""
        try:
            return self.convert_to_offset_metadata(offset)
        except OffsetOutOfRangeError:
            return LogOffsetMetadata(offset)

    def records(self: _ReadLog, start_offset: int | None = None, end_offset: int | None = None, *,
                isolation: str | IsolationLevel = IsolationLevel.READ_UNCOMMITTED,
                check_crcs: bool = True) -> Iterator[Record]:
        """The records a consumer is given from ``start_offset`` (the log start offset by default) up to
        ``end_offset`` (exclusive; the end of what the consumer may read by default), in offset order.

        This is the consumer's view (:mod:`kafkalog.log.consumer_view`, shared with the Spark source): reading
        stops at the high watermark (``read_uncommitted``, the default) or at the last stable offset
        (``isolation="read_committed"``, which also skips the records of aborted transactions); control
        records are never returned; each batch's CRC is checked before its records are handed out, and a
        mismatch raises :class:`~kafkalog.errors.CorruptRecordError` naming the segment file and position
        (``check_crcs=False`` reads past it).  A start offset outside the log is an
        :class:`~kafkalog.errors.OffsetOutOfRangeError`, as a fetch of it would be.  Segments are read a
        chunk at a time, so a large log is never held in memory whole.

        The records are those below the bound when the call was made: the bound (the high watermark or the last
        stable offset) is made a position at once, under the log's lock, and no byte past it is read, as Kafka's
        fetch reads up to its bound's position (``LocalLog.read``'s ``maxPosition``).  So appends made while the
        records are read are not returned, and a truncation above the bound (a follower cutting its log back to
        its high watermark) does not reach what is read.  Like a fetch, the read ends before a batch that holds
        the bound (a high watermark set inside a batch): its records are returned once the bound is past it.
        """
        view, segments = self._consumer_read(start_offset, end_offset, isolation, check_crcs)
        return view.records(segments)

    def record_columns(self: _ReadLog, start_offset: int | None = None, end_offset: int | None = None, *,
                       isolation: str | IsolationLevel = IsolationLevel.READ_UNCOMMITTED,
                       check_crcs: bool = True) -> Iterator[RecordColumns]:
        """The records :meth:`records` gives, as columns: one :class:`~kafkalog.record.RecordColumns` per run of
        batches the record layer decodes at once (up to 4 MiB of uncompressed v2 batches, or one compressed or
        legacy batch, a large one in parts), with no Python object per record.

        The same read, by the same pass (:meth:`ConsumerView.record_columns
        <kafkalog.log.consumer_view.ConsumerView.record_columns>`): the range and its bound (the high watermark,
        or the last stable offset for ``isolation="read_committed"``, made a position under the log's lock), CRCs
        checked before a batch's columns are handed out (a mismatch is a :class:`~kafkalog.errors.CorruptRecordError`
        with the segment file and position, after the columns before it; ``check_crcs=False`` reads past it),
        control batches and, under ``read_committed``, aborted transactions left out, and an
        :class:`~kafkalog.errors.OffsetOutOfRangeError` for a start outside the log.

        Each set's ``records`` are the records the consumer is given, in offset order, and only those (a
        :data:`~kafkalog._common.RECORD_DTYPE` array: offset, timestamp, where the key and value are in ``data``
        and their lengths, -1 for null, and the record's headers in ``headers``).  ``batches`` are the scan rows of
        the batches the records come from (hidden batches are not among them; positions in their segment's
        ``.log``) and ``starts`` their spans in ``records``: a batch cut by the range keeps only its records in
        it, and may keep none (an empty span).  A chunk of a segment is never read into memory a set still points
        into, so a set stays valid for as long as it is held (:meth:`records`' objects copy their bytes, and its
        chunks share one buffer).

        Not in Kafka, whose consumer hands out record objects only; it is kafkalog's columnar form of the same
        read, for readers that sum or copy columns (the Spark source reads through the same view).
        """
        view, segments = self._consumer_read(start_offset, end_offset, isolation, check_crcs)
        return view.record_columns(segments)

    def _consumer_read(self: _ReadLog, start_offset: int | None, end_offset: int | None,
                       isolation: str | IsolationLevel, check_crcs: bool
                       ) -> tuple[ConsumerView, Iterator[tuple[FileMessageSet, int]]]:
        """The consumer view of :meth:`records` and :meth:`record_columns`, and the segment reads it goes over:
        the start checked against the log, the bound made a position under the log's lock."""
        # The view reads the log's public offsets and, for read_committed, its transactions; a log dir offline
        # refuses the read, as Kafka's read does (its records are then read lazily, outside the handler).
        with self.local_log.maybe_handle_io_exception(
                lambda: f"Exception while reading from {self.topic_partition} in dir {self.local_log.parent_dir}"):
            view = ConsumerView.of(self, start_offset, end_offset, isolation=isolation, check_crcs=check_crcs)
        start = view.start_offset
        if start < self._log_start_offset or start > self.log_end_offset:
            raise OffsetOutOfRangeError(
                f"Received request for offset {start} for partition {self.topic_partition}, but we only have "
                f"log segments from {self._log_start_offset} upto {self.log_end_offset}.")
        bound = self._bound_metadata(view.end_offset if view.bound_offset is None else view.bound_offset)
        return view, self._segment_reads(start, view.end_offset, bound)

    def _bound_metadata(self: _ReadLog, offset: int) -> LogOffsetMetadata:
        """Where a reader bounded by ``offset`` stops (Kafka: ``fetchHighWatermarkMetadata`` /
        ``fetchLastStableOffsetMetadata``, which make the bound a position under the log's lock): the segment and
        position of ``offset``; the log end's when ``offset`` is at or past it (a truncation below the bound since
        it was read leaves what is there); only the offset, which reads nothing, when it is below the log start."""
        with self._lock:
            if offset >= self.log_end_offset:
                return self.local_log.next_offset_metadata
            return self.maybe_convert_to_offset_metadata(offset)

    def _segment_reads(self: _ReadLog, start_offset: int, end_offset: int,
                       bound: LogOffsetMetadata) -> Iterator[tuple[FileMessageSet, int]]:
        """The segments holding ``[start_offset, end_offset)`` as slices that end at ``bound`` (Kafka:
        ``LocalLog.read``'s ``maxPosition``): a segment before the bound's whole, the bound's up to its position,
        none after it.  A slice is sized when it is made, from the segment's size where that cannot change (no
        append reaches a segment before the bound's, nor any truncation above the bound), so a write or a
        truncation past the bound meanwhile is never read."""
        if start_offset >= end_offset:
            return
        for segment in self.segments.values(start_offset, end_offset):
            if bound.message_offset_only or segment.base_offset > bound.segment_base_offset:
                return
            stop = bound.relative_position_in_segment if segment.base_offset == bound.segment_base_offset \
                else segment.size()
            position = 0
            if segment.base_offset <= start_offset:
                found = segment.translate_offset(start_offset)
                if found is None:
                    continue
                position = found.position
            if position >= stop:
                # An empty segment before the bound's (a cleaned group that kept nothing) holds nothing to read;
                # the bound's own ends the read.
                if segment.base_offset == bound.segment_base_offset:
                    return
                continue
            yield segment.log.read(position, stop - position), 0

    def fetch_offset_by_timestamp(self: _ReadLog, target_timestamp: int) -> TimestampAndOffset | None:
        """The offset of the first record whose timestamp is at least ``target_timestamp``, with that
        timestamp and its batch's leader epoch; ``None`` when there is none (Kafka:
        ``fetchOffsetByTimestamp``).

        The special timestamps answer as Kafka's ListOffsets does: :data:`EARLIEST_TIMESTAMP` and
        :data:`EARLIEST_LOCAL_TIMESTAMP` the log start offset, :data:`LATEST_TIMESTAMP` the log end offset
        (both with :data:`UNKNOWN_TIMESTAMP`), :data:`MAX_TIMESTAMP` the record with the largest timestamp.
        The first three come with the leader epoch of the cache: its earliest epoch when that starts at or before
        the log start offset, its latest; kafkalog keeps no remote storage, so the local log start offset is the
        log start offset (Kafka answers it with the epoch of that offset, the same epoch here).

        Raises:
            UnsupportedForMessageFormatError: a search by timestamp in a log whose message format (v0) has
                no timestamps.
            KafkaStorageError: the log dir is offline, or an I/O error took it offline (Kafka:
                ``maybeHandleIOException``).
        """
        with self.local_log.maybe_handle_io_exception(
                lambda: f"Error while fetching offset by timestamp for {self.topic_partition} in dir "
                        f"{self.local_log.parent_dir}"):
            return self._fetch_offset_by_timestamp(target_timestamp)

    def _fetch_offset_by_timestamp(self: _ReadLog, target_timestamp: int) -> TimestampAndOffset | None:
        """What :meth:`fetch_offset_by_timestamp` does, in the log dir's handler."""
        logger.debug("Searching offset for timestamp %d", target_timestamp)
        if self.config.record_version() < 1 and target_timestamp not in (
                EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP, LATEST_TIMESTAMP):
            raise UnsupportedForMessageFormatError(
                f"Cannot search offsets based on timestamp because message format version for partition "
                f"{self.topic_partition} is {self.config.message_format_version} which is earlier than the "
                f"minimum required version 0.10.0-IV0")
        cache = self.leader_epoch_cache
        if target_timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
            # The first cached epoch is the log start's unless the log predates v2 there (a format upgrade).
            earliest = cache.earliest_entry() if cache is not None else None
            epoch = earliest.epoch if earliest is not None and earliest.start_offset <= self._log_start_offset \
                else None
            return TimestampAndOffset(UNKNOWN_TIMESTAMP, self._log_start_offset, epoch)
        if target_timestamp == LATEST_TIMESTAMP:
            return TimestampAndOffset(UNKNOWN_TIMESTAMP, self.log_end_offset, self.latest_epoch)
        if target_timestamp == MAX_TIMESTAMP:
            segments = self.log_segments()
            # The first segment holding the largest timestamp, as Scala's maxBy picks.
            latest = max(segments, key=lambda segment: segment.max_timestamp_so_far)
            max_timestamp, offset = latest.max_timestamp_so_far, latest.offset_of_max_timestamp_so_far
            # Look the batch's position up, to read as little as possible.
            position = latest.offset_index.lookup(offset).position
            for batch in latest.log.batches_from(position):
                if batch.max_timestamp == max_timestamp:
                    offset_of_max = _offset_of_max_timestamp(batch)
                    if offset_of_max is None:
                        return None
                    epoch = batch.partition_leader_epoch
                    return TimestampAndOffset(batch.max_timestamp, offset_of_max, epoch if epoch >= 0 else None)
            return None
        return self._search_offset_in_local_log(target_timestamp, self._log_start_offset)

    def _search_offset_in_local_log(self: _ReadLog, target_timestamp: int,
                                    start_offset: int) -> TimestampAndOffset | None:
        """Kafka: ``searchOffsetInLocalLog``: in the first segment whose largest timestamp reaches the target."""
        for segment in self.log_segments():
            if segment.largest_timestamp() >= target_timestamp:
                return segment.find_offset_by_timestamp(target_timestamp, start_offset)
        return None

    def find_offset_by_timestamp(self: _ReadLog, target_timestamp: int) -> TimestampAndOffset | None:
        """The first record with timestamp >= ``target_timestamp`` (Kafka: ``fetchOffsetByTimestamp``,
        without the special timestamps), or ``None``."""
        for segment in self.segments.values():
            if segment.largest_timestamp() < target_timestamp:
                continue
            found = segment.find_offset_by_timestamp(target_timestamp, self._log_start_offset)
            if found is not None:
                return found
        return None


def _offset_of_max_timestamp(batch: Any) -> int | None:
    """The offset of the first record of ``batch`` holding its max timestamp; ``None`` for v0, which has no
    timestamps (Kafka: ``RecordBatch.offsetOfMaxTimestamp``)."""
    if batch.magic == 0:
        return None
    max_timestamp = batch.max_timestamp
    for record in batch.records():
        if record.timestamp == max_timestamp:
            return int(record.offset)
    return None

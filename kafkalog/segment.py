"""LogSegment: one ``.log`` file and its two indexes, the unit a log is made of.

Port of ``kafka/log/LogSegment.scala`` (Kafka 0.10.1.1) with the behaviour of
``storage/.../log/LogSegment.java`` (3.8.0) where the spec marks it (§3.4-3.9): index entries keyed by
the largest offset of an append (2.0), ``read`` without a max offset and with an optional max position,
``truncate_to`` resizing both indexes and recomputing the largest timestamp, the lazily loaded
largest timestamp and first-batch timestamp, the overflow checks (2.1, KAFKA-6264).

A segment with base offset B is ``<B>.log``, ``<B>.index`` and ``<B>.timeindex`` in the log's
directory (:mod:`kafkalog.filenames`).  Invariants it keeps while appending:

* every offset in it lies in [B, B + 2**31 - 1], so it fits a 4-byte relative offset;
* an offset-index entry is added when more than ``index.interval.bytes`` were appended since the last
  one; it is keyed by the append's largest offset and points at the append's first byte (so the
  first append of a segment is never indexed);
* the time index records the largest timestamp so far at those same points, only when it grew.

After a crash :meth:`recover` rebuilds both indexes from the log and cuts the log at the first batch
that fails its size or CRC check.

A segment also owns ``<B>.txnindex``, its :class:`~kafkalog.transaction_index.TransactionIndex` (Kafka 3.8:
``LogSegment.txnIndex``): the aborted transactions whose ABORT markers are in this segment.  The file exists
only once an abort was written; it is checked on load, truncated, flushed, renamed (the ``.cleaned`` ->
``.swap`` -> live swap, ``.deleted``), moved with its directory, closed and deleted with the segment's other
files, and emptied by :meth:`recover`.  Entries come from :meth:`update_txn_index`, which the log's producer
state calls with each transaction an ABORT marker completes, on append and on recovery.

Recovery also refills the partition's leader-epoch cache, when given one, from the v2 batches' partition
leader epochs, and replays the v2 batches with a producer id into the producer state it is given, writing the
aborts they complete to the rebuilt ``.txnindex`` (3.8's ``recover(producerStateManager, leaderEpochCache)``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import numpy.typing as npt

from . import _impl
from ._common import INT32_MAX, INT64_MAX
from .append_origin import AppendOrigin
from .config.log_config import LogConfig
from .errors import (
    IllegalArgumentError,
    KafkaLogError,
    LogSegmentOffsetOverflowError,
    ReadOnlyError,
)
from .fetch import EMPTY_RECORDS, FetchDataInfo, LogOffsetMetadata
from .file_message_set import FileMessageSet, LogOffsetPosition, TimestampAndOffset
from .filenames import (
    LOG_FILE_SUFFIX,
    TXN_INDEX_FILE_SUFFIX,
    index_filename,
    log_filename,
    replace_suffix,
    time_index_filename,
    txn_index_filename,
)
from .fsutil import interrupts_deferred, open_regular, storage_error
from .index import LazyIndex, OffsetIndex, OffsetPosition, TimeIndex, TimestampOffset
from .index.live_entries import offset_index_zero_first_entry, time_index_zero_first_entry
from .producer_state.entry import CompletedTxn
from .producer_state.manager import ProducerStateManager
from .producer_state.producer_batches import producer_batches
from .record import MemoryRecords, RecordBatch, ScanStop
from .scheduler import SYSTEM_TIME, Time
from .transaction_index import AbortedTxn, TransactionIndex, TxnIndexSearchResult

if TYPE_CHECKING:
    from .leader_epoch_cache import LeaderEpochFileCache

__all__ = ["NO_MAX_POSITION", "LogSegment", "RollParams"]

logger = logging.getLogger(__name__)


class _NoMaxPosition:
    """Kafka's ``Optional.empty()`` max position: the read only locates its offset."""

    def __repr__(self) -> str:
        return "NO_MAX_POSITION"


#: Pass as ``max_position`` to :meth:`LogSegment.read` for offset metadata with no records.
NO_MAX_POSITION: Any = _NoMaxPosition()


class RollParams(NamedTuple):
    """What :meth:`LogSegment.should_roll` weighs (Kafka: ``RollParams``)."""

    max_segment_ms: int
    max_segment_bytes: int
    max_timestamp_in_messages: int
    max_offset_in_messages: int
    messages_size: int
    now: int


class LogSegment:
    """A segment of a log (Kafka: ``LogSegment``).  Open one with :meth:`open`."""

    #: Whether the segment has no file behind it (:meth:`absent`; kafkalog's).
    is_absent = False

    def __init__(self, log: FileMessageSet, offset_index: OffsetIndex | LazyIndex,
                 time_index: TimeIndex | LazyIndex, base_offset: int, index_interval_bytes: int,
                 rolling_jitter_ms: int, time: Time, max_index_size: int, read_only: bool = False, *,
                 txn_index: TransactionIndex | None = None) -> None:
        self.log = log
        if txn_index is None:
            # Beside the log file, with its suffix (``.cleaned``, ``.swap``), as LogSegment.open names it.
            name = log.file.name
            txn_index = TransactionIndex(base_offset, log.file.with_name(
                name.replace(LOG_FILE_SUFFIX, TXN_INDEX_FILE_SUFFIX, 1)), writable=not read_only)
        #: The segment's transaction index (Kafka: ``txnIndex``); read-only when the segment is.
        self.txn_index = txn_index
        self._lazy_offset_index = offset_index if isinstance(offset_index, LazyIndex) else \
            _loaded(offset_index)
        self._lazy_time_index = time_index if isinstance(time_index, LazyIndex) else _loaded(time_index)
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.rolling_jitter_ms = rolling_jitter_ms
        self.time = time
        self.max_index_size = max_index_size
        self.read_only = read_only
        #: When the segment object was made: the roll clock for a segment whose batches have no timestamp.
        self.created = time.milliseconds()
        self._bytes_since_last_index_entry = 0
        # Loaded lazily: reading them means touching the time index or the log (Kafka: volatile fields).
        self._max_timestamp_and_offset: TimestampOffset | None = None
        self._rolling_based_timestamp: int | None = None
        self._rolling_based_timestamp_loaded = False

    @classmethod
    def open(cls, dir: str | os.PathLike[str], base_offset: int, config: LogConfig | None = None,
             time: Time | None = None, file_already_exists: bool = False, init_file_size: int | None = None,
             preallocate: bool | None = None, file_suffix: str = "", read_only: bool = False) -> LogSegment:
        """Open (or create) the segment at ``base_offset`` in ``dir`` (Kafka: ``LogSegment.open``).

        ``config`` supplies ``index.interval.bytes``, ``segment.index.bytes``, ``segment.jitter.ms`` and,
        with ``preallocate``, ``segment.bytes`` as the initial file size.  ``read_only`` opens the files
        as they are and never changes a byte.
        """
        config = config if config is not None else LogConfig()
        time = time if time is not None else SYSTEM_TIME
        preallocate = config.preallocate if preallocate is None else preallocate
        init_file_size = config.init_file_size() if init_file_size is None else init_file_size
        if read_only:
            file_already_exists = True
        log = FileMessageSet(log_filename(dir, base_offset, file_suffix),
                             file_already_exists=file_already_exists, init_file_size=init_file_size,
                             preallocate=preallocate, writable=not read_only)
        # The indexes are opened at first use (Kafka: LazyIndex), so opening a log of many segments maps
        # only the files that are used.
        offset_index = LazyIndex(OffsetIndex, index_filename(dir, base_offset, file_suffix), base_offset,
                                 config.max_index_size, writable=not read_only)
        time_index = LazyIndex(TimeIndex, time_index_filename(dir, base_offset, file_suffix), base_offset,
                               config.max_index_size, writable=not read_only)
        txn_index = TransactionIndex(base_offset, txn_index_filename(dir, base_offset, file_suffix),
                                     writable=not read_only)
        return cls(log, offset_index, time_index, base_offset, config.index_interval,
                   config.random_segment_jitter(), time, config.max_index_size, read_only, txn_index=txn_index)

    @classmethod
    def absent(cls, dir: str | os.PathLike[str], base_offset: int, config: LogConfig | None = None,
               time: Time | None = None) -> LogSegment:
        """A read-only, empty segment at ``base_offset`` with no file behind it: what a read-only open of a
        partition dir that holds no segment reads, where a broker's open creates the files (Kafka:
        ``LogLoader.load`` opens a new segment at the log start offset).  kafkalog's; nothing is written.
        Its log is :meth:`FileMessageSet.absent`, its indexes are missing files, which read as empty."""
        config = config if config is not None else LogConfig()
        time = time if time is not None else SYSTEM_TIME
        log = FileMessageSet.absent(log_filename(dir, base_offset))
        offset_index = LazyIndex(OffsetIndex, index_filename(dir, base_offset), base_offset, config.max_index_size,
                                 writable=False)
        time_index = LazyIndex(TimeIndex, time_index_filename(dir, base_offset), base_offset,
                               config.max_index_size, writable=False)
        segment = cls(log, offset_index, time_index, base_offset, config.index_interval,
                      config.random_segment_jitter(), time, config.max_index_size, read_only=True,
                      txn_index=TransactionIndex(base_offset, txn_index_filename(dir, base_offset), writable=False))
        segment.is_absent = True
        return segment

    @property
    def offset_index(self) -> OffsetIndex:
        """The offset index, opened at first use (Kafka: ``offsetIndex()``)."""
        index: OffsetIndex = self._lazy_offset_index.get()
        return index

    @property
    def time_index(self) -> TimeIndex:
        """The time index, opened at first use (Kafka: ``timeIndex()``)."""
        index: TimeIndex = self._lazy_time_index.get()
        return index

    def _check_writable(self, what: str) -> None:
        if self.read_only:
            raise ReadOnlyError(f"Cannot {what} segment {self.log.file}: it was opened read-only")

    # -- size and bookkeeping -----------------------------------------------------------------------

    def size(self) -> int:
        """Bytes in the log file (Kafka: ``size``)."""
        return self.log.size_in_bytes()

    def can_convert_to_relative_offset(self, offset: int) -> bool:
        """Whether ``offset`` fits the 4-byte relative range (Kafka: ``canConvertToRelativeOffset``, which asks
        the offset index's ``canAppendOffset``).  As in Kafka the question opens the offset index, so the first
        append to a new segment creates its ``.index`` file (an index is otherwise opened at first use)."""
        return self.offset_index.can_append_offset(offset)

    def _ensure_offset_in_range(self, offset: int) -> None:
        # can_convert_to_relative_offset, without its two hops: every append asks
        if not self._lazy_offset_index.get().can_append_offset(offset):
            raise LogSegmentOffsetOverflowError(
                f"Detected offset overflow at offset {offset} in segment {self}", self, offset)

    @property
    def max_timestamp_so_far(self) -> int:
        """The largest timestamp appended so far, read from the time index at first use (Kafka:
        ``maxTimestampSoFar``)."""
        return self._max_timestamp_and_offset_so_far().timestamp

    @property
    def offset_of_max_timestamp_so_far(self) -> int:
        return self._max_timestamp_and_offset_so_far().offset

    def _max_timestamp_and_offset_so_far(self) -> TimestampOffset:
        if self._max_timestamp_and_offset is None:
            if self._lazy_time_index.file_ignored and self.log.size_in_bytes() > 0:
                # A read-only segment whose time index could not be trusted: ask the log itself.
                found = self.log.largest_timestamp_after(0)
                self._max_timestamp_and_offset = TimestampOffset(found.timestamp, found.offset)
            else:
                self._max_timestamp_and_offset = self.time_index.last_entry
        return self._max_timestamp_and_offset

    def ignore_index_files(self) -> None:
        """For a read-only segment whose indexes failed their check (a broker's active segment after a
        crash, or while it runs, has a preallocated zero tail): read as if it had no index files."""
        if not self.read_only:
            raise IllegalArgumentError("Only a read-only segment ignores its index files; a writable one recovers")
        self._lazy_offset_index.ignore_file()
        self._lazy_time_index.ignore_file()
        self._max_timestamp_and_offset = None

    def _set_max_timestamp(self, timestamp: int, offset: int) -> None:
        self._max_timestamp_and_offset = TimestampOffset(timestamp, offset)

    def _load_first_batch_timestamp(self) -> None:
        """Read the first batch's max timestamp, the base of time-based rolling, once.

        Kafka: ``loadFirstBatchTimestamp``.
        """
        if not self._rolling_based_timestamp_loaded:
            self._rolling_based_timestamp_loaded = True
            if self.log.size_in_bytes() > 0:
                first = next(iter(self.log.batches()), None)
                self._rolling_based_timestamp = first.max_timestamp if first is not None else None

    def get_first_batch_timestamp(self) -> int:
        """The first batch's max timestamp, or ``Long.MAX`` for an empty segment or a first batch without a
        timestamp (Kafka: ``getFirstBatchTimestamp``)."""
        self._load_first_batch_timestamp()
        ts = self._rolling_based_timestamp
        return ts if ts is not None and ts >= 0 and self.log.size_in_bytes() > 0 else INT64_MAX

    def time_waited_for_roll(self, now: int, message_timestamp: int) -> int:
        """How long the segment has been filling, by record time when batches have timestamps and by the
        wall clock since creation when they do not (Kafka: ``timeWaitedForRoll``)."""
        if not self._rolling_based_timestamp_loaded:  # asked on every append: the load is a no-op once done
            self._load_first_batch_timestamp()
        ts = self._rolling_based_timestamp
        if ts is not None and ts >= 0:
            return message_timestamp - ts
        return now - self.created

    def should_roll(self, params: RollParams) -> bool:
        """Whether the next append should go to a new segment (Kafka: ``shouldRoll``)."""
        return self.should_roll_at(*params)

    def should_roll_at(self, max_segment_ms: int, max_segment_bytes: int, max_timestamp_in_messages: int,
                       max_offset_in_messages: int, messages_size: int, now: int) -> bool:
        """:meth:`should_roll` with :class:`RollParams`' fields as arguments, in their order: what the log asks
        on every append, without building the tuple.  Kafka's conditions in Kafka's order (the time waited
        is worked out first, as it loads the first batch's timestamp)."""
        reached_roll_ms = self.time_waited_for_roll(now, max_timestamp_in_messages) > \
            max_segment_ms - self.rolling_jitter_ms
        size = self.log.size_in_bytes()
        return (size > max_segment_bytes - messages_size
                or (size > 0 and reached_roll_ms)
                or self._lazy_offset_index.get().is_full()
                or self._lazy_time_index.get().is_full()
                or not 0 <= max_offset_in_messages - self.base_offset <= INT32_MAX)

    def largest_timestamp(self) -> float:
        """The largest record timestamp, or the file's modification time when there is none (Kafka:
        ``largestTimestamp``); what time-based retention compares."""
        ts = self.max_timestamp_so_far
        return ts if ts >= 0 else self.last_modified()

    def last_modified(self) -> float:
        return self.log.last_modified()

    def set_last_modified(self, ms: int) -> None:
        """Set the modification time of the log and index files (Kafka: ``lastModified_=``)."""
        self._check_writable("touch")
        for path in (self.log.file, self._lazy_offset_index.file, self._lazy_time_index.file):
            if path.exists():
                os.utime(path, (ms / 1000.0, ms / 1000.0))

    # -- appending ----------------------------------------------------------------------------------

    def append(self, largest_offset: int, largest_timestamp: int, shallow_offset_of_max_timestamp: int,
               records: MemoryRecords) -> None:
        """Append ``records``, whose offsets are assigned, and index them batch by batch (Kafka 3.9:
        ``append``).

        Each batch in turn updates the largest timestamp so far (with its last offset) when its max timestamp
        is larger, and, once more than ``index.interval.bytes`` were written since the last entry, gets an
        offset-index entry (its last offset, its first byte) and a time-index entry (the largest timestamp so
        far).  Kafka 3.8 indexed an append once, keyed by its largest offset at its first byte: the two differ
        for an append of several batches (a cleaner's, a follower's).  ``largest_timestamp`` and
        ``shallow_offset_of_max_timestamp`` are the 3.8 signature's and no longer read: the batches carry it.
        A new segment's rolling timestamp is its first batch's, loaded when first needed.
        """
        self._check_writable("append to")
        size = records.size_in_bytes()
        if size == 0:
            return
        physical_position = self.log.size_in_bytes()
        if physical_position == 0:
            # The rolling timestamp is the first batch's, read from the file when first needed.
            self._rolling_based_timestamp_loaded = False
        self._ensure_offset_in_range(largest_offset)
        # Which batches get index entries is decided before anything is written, so that the index pages can be
        # reserved first; the same walk then indexes them.
        plan: list[tuple[int, int, int, bool]] = []  # (max timestamp, last offset, size, indexed)
        pending = self._bytes_since_last_index_entry
        for max_timestamp, last_offset, batch_size in records.batch_facts():
            indexed = pending > self.index_interval_bytes
            pending = (0 if indexed else pending) + batch_size
            plan.append((max_timestamp, last_offset, batch_size, indexed))
        entries = sum(indexed for *_, indexed in plan)
        if entries:
            # The index pages are allocated before the log is written: a full disk stops the append here,
            # with nothing written, rather than between the log and its indexes.
            self.offset_index.reserve(entries)
            self.time_index.reserve(entries)
        self.log.append(records)
        for batch_max_timestamp, batch_last_offset, batch_size, indexed in plan:
            if batch_max_timestamp > self.max_timestamp_so_far:
                self._set_max_timestamp(batch_max_timestamp, batch_last_offset)
            if indexed:
                self.offset_index.append(batch_last_offset, physical_position)
                self.time_index.maybe_append(self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far)
            physical_position += batch_size
        self._bytes_since_last_index_entry = pending

    def append_batch(self, last_offset: int, max_timestamp: int, buffer: bytearray) -> None:
        """:meth:`append` of ``buffer``, one whole batch whose last offset and max timestamp the caller read (the
        log's fused leader append, :mod:`kafkalog.log.leader_append`): the same steps in the same order, without
        reading the batch again or making a plan of one."""
        self._check_writable("append to")
        size = len(buffer)
        if size == 0:
            return
        physical_position = self.log.size_in_bytes()
        if physical_position == 0:
            self._rolling_based_timestamp_loaded = False
        self._ensure_offset_in_range(last_offset)
        pending = self._bytes_since_last_index_entry
        indexed = pending > self.index_interval_bytes
        if indexed:
            self.offset_index.reserve(1)
            self.time_index.reserve(1)
        self.log.append(buffer)
        known = self._max_timestamp_and_offset  # max_timestamp_so_far, without its two calls once it is known
        if known is None:
            known = self._max_timestamp_and_offset_so_far()
        if max_timestamp > known.timestamp:
            self._set_max_timestamp(max_timestamp, last_offset)
        if indexed:
            self.offset_index.append(last_offset, physical_position)
            self.time_index.maybe_append(self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far)
            pending = 0
        self._bytes_since_last_index_entry = pending + size

    def append_from_file(self, records: FileMessageSet, start: int) -> int:
        """Copy batches from ``records`` (from position ``start``) until one has an offset this segment
        cannot hold; returns the bytes copied (Kafka: ``appendFromFile``, used to split a segment whose
        offsets overflowed)."""
        self._check_writable("append to")
        position = start
        chunk: list[Any] = []
        chunk_bytes = 0

        def flush_chunk() -> None:
            nonlocal chunk, chunk_bytes
            if not chunk:
                return
            data = b"".join(b.raw_bytes() for b in chunk)
            largest = max(chunk, key=lambda b: b.max_timestamp)
            self.append(chunk[-1].last_offset, largest.max_timestamp, largest.last_offset,
                        MemoryRecords(data))
            chunk, chunk_bytes = [], 0

        for batch in records.read(start - records.start, records.end - start).batches():
            if not self.can_convert_to_relative_offset(batch.last_offset):
                break
            chunk.append(batch)
            chunk_bytes += batch.size_in_bytes
            position += batch.size_in_bytes
            if chunk_bytes >= 1024 * 1024:
                flush_chunk()
        flush_chunk()
        return position - start

    # -- reading ------------------------------------------------------------------------------------

    def translate_offset(self, offset: int, starting_file_position: int = 0) -> LogOffsetPosition | None:
        """The first batch whose last offset is >= ``offset``: ``(last offset, position, size)``, or
        ``None`` when the segment has none (Kafka: ``translateOffset``).

        The offset index gives the last indexed batch at or before ``offset``, the scan kernel walks on
        from there.
        """
        mapping = self.offset_index.lookup(offset)
        return self.log.search_for(offset, max(mapping.position, starting_file_position))

    def read(self, start_offset: int, max_size: int, max_position: Any = None,
             min_one_message: bool = False) -> FetchDataInfo | None:
        """Read up to ``max_size`` bytes of batches from the one holding ``start_offset`` (Kafka: ``read``).

        ``max_position`` bounds the read in the file (``None``: the segment's size; ``NO_MAX_POSITION``:
        return only the offset metadata).  With ``min_one_message`` the first batch is returned whole
        even past ``max_size``.  Returns ``None`` when ``start_offset`` is past the segment's last batch.
        """
        if max_size < 0:
            raise IllegalArgumentError(f"Invalid max size {max_size} for log read from segment {self.log}")
        start = self.translate_offset(start_offset)
        if start is None:
            return None
        offset_metadata = LogOffsetMetadata(start_offset, self.base_offset, start.position)
        adjusted_max_size = max(max_size, start.size) if min_one_message else max_size
        if adjusted_max_size == 0 or max_position is NO_MAX_POSITION:
            return FetchDataInfo(offset_metadata, EMPTY_RECORDS)
        if max_position is None:
            max_position = self.size()
        fetch_size = min(max_position - start.position, adjusted_max_size)
        return FetchDataInfo(offset_metadata, self.log.read(start.position, fetch_size),
                             adjusted_max_size < start.size)

    def read_next_offset(self) -> int:
        """The offset after the last batch, found by reading from the last indexed offset (Kafka:
        ``readNextOffset``, 0.10.1 ``nextOffset``)."""
        fetch = self.read(self.offset_index.last_offset, self.log.size_in_bytes())
        if fetch is None:
            return self.base_offset
        rows = fetch.records.scan(check_crc=False, stop_on_invalid=False).batches
        return int(rows["last_offset"][-1]) + 1 if len(rows) else self.base_offset

    next_offset = read_next_offset

    def has_overflow(self) -> bool:
        """Whether the segment holds an offset its index cannot (Kafka: ``hasOverflow``)."""
        next_offset = self.read_next_offset()
        return next_offset > self.base_offset and not self.can_convert_to_relative_offset(next_offset - 1)

    def find_offset_by_timestamp(
        self, timestamp: int, starting_offset: int | None = None
    ) -> TimestampAndOffset | None:
        """The first record with timestamp >= ``timestamp`` and offset >= ``starting_offset`` (Kafka:
        ``findOffsetByTimestamp``): the time index narrows it to a batch, the offset index to a position,
        and the log is scanned from there."""
        start = self.base_offset if starting_offset is None else starting_offset
        timestamp_offset = self.time_index.lookup(timestamp)
        position = self.offset_index.lookup(max(timestamp_offset.offset, start)).position
        return self.log.search_for_timestamp(timestamp, position, start)

    def batches(self) -> Iterator[RecordBatch]:
        return self.log.batches()

    # -- recovery -----------------------------------------------------------------------------------

    def recover(self, producer_state_manager: ProducerStateManager | None = None,
                leader_epoch_cache: LeaderEpochFileCache | None = None) -> int:
        """Rebuild the indexes from the log, checking every batch, and cut the log at the first that fails
        its size or CRC check; returns the bytes cut (Kafka 3.8: ``recover(producerStateManager,
        leaderEpochCache)``).

        The offset, time and transaction indexes are emptied first.  The batch-scan kernel checks every
        batch in one pass over the mmap; the index entries are then chosen from its rows with numpy (the
        same rule as :meth:`append`: an entry once more than ``index.interval.bytes`` follow the last, keyed
        by the batch's last offset) and written in bulk.  With ``leader_epoch_cache``, each valid v2 batch
        whose partition leader epoch is set and above the cache's latest epoch assigns that epoch from the
        batch's base offset, in batch order, as Kafka's loop does.

        ``producer_state_manager`` (the loader's interim one, rebuilt up to this segment's base) takes every
        valid v2 batch with a producer id (Kafka's ``updateProducerState``), and each transaction a marker
        completes is written to this segment's ``.txnindex`` (:meth:`update_txn_index`) with the manager's last
        stable offset before it is marked complete; without a manager the emptied ``.txnindex`` stays empty.

        What it logs is Kafka's: a WARNING "Found invalid messages" where the scan stopped at a batch that is
        invalid (a size field too small for its magic, a bad CRC, an unknown magic byte, zeros where a size
        should be), none for a batch cut short at the end of the file (what a crash mid-write leaves), and a
        DEBUG "Truncated N invalid bytes" whenever bytes are cut.

        A Ctrl-C during the rebuild is held until it is done, so no half-built index is left behind.
        """
        with interrupts_deferred():
            return self._recover(producer_state_manager, leader_epoch_cache)

    def _recover(self, producer_state_manager: ProducerStateManager | None,
                 leader_epoch_cache: LeaderEpochFileCache | None) -> int:
        self._check_writable("recover")
        self.offset_index.reset()
        self.time_index.reset()
        self.txn_index.reset()
        scan = self.log.scan(check_crc=True, stop_on_invalid=True)
        rows = scan.batches
        valid_bytes = scan.stop_position - self.log.start if len(rows) else 0
        relative = rows["last_offset"] - self.base_offset
        bad = np.flatnonzero((relative < 0) | (relative > INT32_MAX))
        if len(bad):
            offset = int(rows["last_offset"][bad[0]])
            raise LogSegmentOffsetOverflowError(
                f"Detected offset overflow at offset {offset} in segment {self}", self, offset)
        max_timestamp, offset_of_max = self._rebuild_indexes(rows)
        v2 = rows[rows["magic"] >= 2]
        if leader_epoch_cache is not None and len(v2):
            self._assign_epochs(leader_epoch_cache, v2)
        if producer_state_manager is not None and len(v2):
            self._recover_producer_state(producer_state_manager, v2)
        if scan.stop_reason not in (ScanStop.END, ScanStop.PARTIAL):
            # Kafka warns only where its batch iterator throws (a size field too small, a CRC or a record that
            # fails ``ensureValid``); a batch cut short at the end ends its iteration quietly, as a crash
            # mid-write leaves one, and only the DEBUG line below tells of it.
            logger.warning("Found invalid messages in log segment %s at byte offset %d: %s.",
                           self.log.file, valid_bytes, _stop_description(scan.stop_reason))
        truncated = self.log.size_in_bytes() - valid_bytes
        if truncated > 0:
            logger.debug("Truncated %d invalid bytes at the end of segment %s during recovery", truncated,
                         self.log.file)
        self.log.truncate_to(valid_bytes)
        self.offset_index.trim_to_valid_size()
        self.time_index.maybe_append(max_timestamp, offset_of_max, skip_full_check=True)
        self.time_index.trim_to_valid_size()
        self._set_max_timestamp(max_timestamp, offset_of_max)
        return truncated

    def _assign_epochs(self, cache: LeaderEpochFileCache, v2: npt.NDArray[Any]) -> None:
        """Kafka's epoch step of the recover loop: a batch's epoch (when set, i.e. not negative) is assigned
        from its base offset when the cache has none or a lower latest one.  Only the batches that raise the
        running maximum can pass that test, so only they are visited."""
        epochs = self.log.partition_leader_epochs(v2["position"])
        latest = cache.latest_epoch()
        floor = -1 if latest is None else latest
        running = np.maximum.accumulate(np.maximum(epochs, floor))
        previous = np.concatenate(([floor], running[:-1]))
        for i in np.flatnonzero(epochs > previous).tolist():
            epoch = int(epochs[i])
            latest = cache.latest_epoch()
            if epoch >= 0 and (latest is None or epoch > latest):
                cache.assign(epoch, int(v2["base_offset"][i]))

    def _recover_producer_state(self, producer_state_manager: ProducerStateManager, v2: npt.NDArray[Any]) -> None:
        """Kafka: ``updateProducerState`` for each valid v2 batch of a recovered segment (``v2``, its scan rows):
        the batches with a producer id, read whole, then the map end offset past the last v2 batch (a batch
        without one only moves that)."""
        for batch in producer_batches(self.log, v2):
            self._update_producer_state(producer_state_manager, batch)
        producer_state_manager.update_map_end_offset(int(v2["last_offset"][-1]) + 1)

    def _update_producer_state(self, producer_state_manager: ProducerStateManager, batch: RecordBatch) -> None:
        """Take one batch of this segment being recovered (Kafka: ``LogSegment.updateProducerState``): a batch
        with a producer id updates its producer at once, and a transaction it completes is written to this
        segment's transaction index with the last stable offset it leaves before it is marked complete; the map
        end offset moves past the batch whatever it is."""
        if batch.has_producer_id:
            append_info = producer_state_manager.prepare_update(batch.producer_id, AppendOrigin.REPLICATION)
            completed = append_info.append(batch)
            producer_state_manager.update(append_info)
            if completed is not None:
                self.update_txn_index(completed, producer_state_manager.last_stable_offset(completed))
                producer_state_manager.complete_txn(completed)
        producer_state_manager.update_map_end_offset(batch.last_offset + 1)

    def _rebuild_indexes(self, rows: npt.NDArray[Any]) -> tuple[int, int]:
        """Append the index entries recovery finds in the scan rows; returns the largest timestamp and
        the last offset of its batch (Kafka: the body of the recover loop)."""
        n = len(rows)
        if n == 0:
            return -1, -1
        starts = rows["position"] - self.log.start  # validBytes before each batch
        timestamps = rows["max_timestamp"]
        # The running max timestamp and the batch that set it; Kafka only moves it on a strictly larger
        # timestamp, starting from "none" (-1).
        running_max = np.maximum.accumulate(np.maximum(timestamps, -1))
        previous_max = np.concatenate(([-1], running_max[:-1]))
        raised = timestamps > previous_max
        owner = np.maximum.accumulate(np.where(raised, np.arange(n), -1))
        # Offset-index points: each batch starting more than the interval past the last one indexed.
        at = _impl.core.index_points(np.ascontiguousarray(starts, dtype=np.int64), self.index_interval_bytes)
        if len(at):
            self.offset_index.append_entries(rows["last_offset"][at], starts[at])
            times = running_max[at]
            offsets = np.where(owner[at] >= 0, rows["last_offset"][np.maximum(owner[at], 0)], -1)
            self.time_index.append_entries(times, offsets)
        final = int(owner[-1])
        if final < 0:
            return -1, -1
        return int(running_max[-1]), int(rows["last_offset"][final])

    # -- truncation, roll, shutdown -----------------------------------------------------------------

    def truncate_to(self, offset: int) -> int:
        """Remove every batch holding an offset >= ``offset``, and their index entries; returns the bytes
        removed (Kafka: ``truncateTo``).  A batch straddling ``offset`` goes whole; the indexes are sized
        back up so the segment can take appends again.  Unlike Kafka (3.8 included), the largest
        timestamp is checked before the indexes are cut; see the comment below."""
        self._check_writable("truncate")
        mapping = self.translate_offset(offset)
        # Read before the time index is cut.  Kafka asks only afterwards, and on a segment whose
        # largest timestamp was never loaded (any segment reopened from disk) it then reads the cut
        # index: when no entry is left it sees -1, skips the rescan, and the kept batches' timestamps
        # are lost to retention and to the entry written at roll.  Asking first is the same check on
        # the value the segment held before the truncation.
        had_timestamps = self.max_timestamp_so_far >= 0
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        self.txn_index.truncate_to(offset)
        # Each index back to its own full size (Kafka: resize(maxIndexSize) per index), so the segment
        # takes appends again.
        self.offset_index.resize(self.offset_index.max_index_size)
        self.time_index.resize(self.time_index.max_index_size)
        bytes_truncated = 0 if mapping is None else self.log.truncate_to(mapping.position)
        if self.log.size_in_bytes() == 0:
            self.created = self.time.milliseconds()
            self._rolling_based_timestamp = None
            self._rolling_based_timestamp_loaded = True
        self._bytes_since_last_index_entry = 0
        if had_timestamps:
            self._load_largest_timestamp()
        return bytes_truncated

    def _load_largest_timestamp(self) -> None:
        """Recompute the largest timestamp after a truncation: the time index's last entry, then a scan of
        what follows it (Kafka: ``loadLargestTimestamp``)."""
        last = self.time_index.last_entry
        self._set_max_timestamp(last.timestamp, last.offset)
        position = self.offset_index.lookup(last.offset).position
        after = self.log.largest_timestamp_after(position)
        if after.timestamp > last.timestamp:
            self._set_max_timestamp(after.timestamp, after.offset)

    def on_become_inactive_segment(self) -> None:
        """When the log rolls past this segment: write the reserved time-index entry and trim all three
        files (Kafka: ``onBecomeInactiveSegment``)."""
        self._check_writable("roll")
        self.time_index.maybe_append(self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far,
                                     skip_full_check=True)
        self.offset_index.trim_to_valid_size()
        self.time_index.trim_to_valid_size()
        self.log.trim()

    def resize_indexes(self, size: int) -> None:
        """Kafka: ``resizeIndexes``."""
        self._check_writable("resize")
        self.offset_index.resize(size)
        self.time_index.resize(size)

    def sanity_check(self, time_index_file_newly_created: bool) -> None:
        """Check a segment being loaded (Kafka 3.8.0: ``LogSegment.sanityCheck``): its offset index file must
        exist, a time index created only now (an older segment had none) is emptied, for recovery to fill, and
        the transaction index is checked: no entry may end below the segment's base offset.

        As in 3.8.0 the offset and time indexes themselves are not checked here: Kafka leaves them to the
        recovery of every segment past the recovery point, and trusts the others, which a flush or a clean
        shutdown wrote whole.  kafkalog's loader checks those others too, with :meth:`check_index_files`, as
        0.10.1.1's loader checked every segment's.

        Raises:
            FileNotFoundError: the offset index file does not exist (Kafka: ``NoSuchFileException``), which makes
                the loader rebuild the segment's indexes.  A read-only segment cannot rebuild them and reads a
                missing index as empty, so it is not refused.
            CorruptIndexError: the transaction index fails its check (the loader rebuilds the segment's indexes;
                a read-only load, which cannot, stops trusting the transaction index instead).
        """
        if self._lazy_offset_index.file.exists() or self.read_only:
            if time_index_file_newly_created and not self.read_only:
                self.time_index.resize(0)
            self.txn_index.sanity_check()
        else:
            raise FileNotFoundError(f"Offset index file {self._lazy_offset_index.file} does not exist")

    def check_index_files(self, *, last: bool = False) -> None:
        """The offset and time index checks that 3.8.0's ``sanityCheck`` leaves out (kafkalog's; 0.10.1.1's
        ``Log.loadSegments`` ran ``index.sanityCheck()`` and ``timeIndex.sanityCheck()`` on every segment): the
        last offset not below the base offset, the length a whole number of entries, and for the time index
        the last timestamp not below the first.  An index not yet opened is checked on its file, by a stat and
        a pread or two, so the check maps nothing.

        ``last``: this read-only segment is the log's last, whose index files may be an active segment's,
        preallocated and not trimmed yet (a running broker's or writer's, or one a crash left, which the broker
        would rebuild on its next start).  Its indexes are opened and take only their live entries, the ones
        before the zero tail (:mod:`kafkalog.index.live_entries`, the rule ``kafkalog verify`` reads indexes by),
        and those are checked.  A broker trims an index when its segment rolls, so on any other segment a zero
        tail is not a state a broker leaves, and Kafka's count (every whole slot an entry) is checked.

        Raises:
            CorruptIndexError: an index fails its check, naming the file (on the last segment also: a
                zero-filled slot followed by data, a zeroed entry among live ones).
        """
        if last and self.read_only:
            try:
                self._load_first_batch_timestamp()
                first_max_timestamp = self._rolling_based_timestamp  # None: the segment holds no batch
            except KafkaLogError:
                # A writer truncated the file under this reader (a short read), or its first batch is not one:
                # with no first batch to vouch for it, a zero first slot is taken as the end of the entries, and
                # lookups start at the segment's start.
                first_max_timestamp = None
            self._lazy_offset_index.take_live_entries(offset_index_zero_first_entry(first_max_timestamp is not None))
            self._lazy_time_index.take_live_entries(time_index_zero_first_entry(first_max_timestamp))
        self._lazy_offset_index.check_file()
        self._lazy_time_index.check_file()

    def check_index_files_open(self) -> None:
        """Open each index file there is, for reading and writing, and close it again (kafkalog's): the check of a
        segment that recovery is about to rebuild, whose indexes' contents do not matter.  Recovery resets the
        offset index, then the time index, then the transaction index, after the log removed the producer
        snapshots past the segment; an index it cannot open would stop it part way, with those already changed
        (Kafka meets that ``IOException`` in recovery).  Refused here, nothing has changed yet.

        Raises:
            KafkaStorageError: an index file cannot be opened for reading and writing (its permissions, or not
                a regular file), naming it.
        """
        for path in (self._lazy_offset_index.file, self._lazy_time_index.file, self.txn_index.file):
            try:
                fd = open_regular(path, os.O_RDWR)
            except FileNotFoundError:
                continue
            except OSError as e:
                raise storage_error(e, f"Opening the index {path} of the segment recovery rebuilds") from e
            os.close(fd)

    def flush(self) -> None:
        """fsync the log and flush the three indexes (Kafka: ``flush``)."""
        if self.read_only:
            return
        self.log.flush()
        self.offset_index.flush()
        self.time_index.flush()
        self.txn_index.flush()

    def change_file_suffixes(self, old_suffix: str, new_suffix: str) -> None:
        """Rename the segment's files from ``old_suffix`` to ``new_suffix`` (Kafka: ``changeFileSuffixes``),
        as the ``.cleaned`` -> ``.swap`` -> live and live -> ``.deleted`` steps do."""
        self._check_writable("rename")
        self.log.rename_to(replace_suffix(self.log.file, old_suffix, new_suffix))
        for index in (self._lazy_offset_index, self._lazy_time_index):
            index.rename_to(replace_suffix(index.file, old_suffix, new_suffix))
        self.txn_index.rename_to(replace_suffix(self.txn_index.file, old_suffix, new_suffix))

    def update_parent_dir(self, parent: str | os.PathLike[str]) -> None:
        """Point the segment's files at a renamed directory (Kafka: ``updateParentDir``)."""
        self.log.update_parent_dir(parent)
        self._lazy_offset_index.update_parent_dir(parent)
        self._lazy_time_index.update_parent_dir(parent)
        self.txn_index.update_parent_dir(parent)

    def has_suffix(self, suffix: str) -> bool:
        return str(self.log.file).endswith(suffix)

    def deleted(self) -> bool:
        """Whether every file of the segment is gone: the log and its three indexes (Kafka: ``deleted``,
        visible for testing)."""
        return not any(path.exists() for path in (self.log.file, self._lazy_offset_index.file,
                                                  self._lazy_time_index.file, self.txn_index.file))

    def close(self) -> None:
        """Write the pending time-index entry, then close (and trim) the indexes and the log (Kafka:
        ``close``).  Read-only segments only release their files."""
        if self.read_only:
            self.close_handlers()
            return
        try:
            if self._max_timestamp_and_offset is not None:
                # Kafka swallows (and logs) a failure here: closing must still release the files.
                try:
                    self.time_index.maybe_append(self.max_timestamp_so_far,
                                                 self.offset_of_max_timestamp_so_far, skip_full_check=True)
                except KafkaLogError as e:
                    logger.warning("Could not write the last time index entry of %s on close: %s", self, e)
        finally:
            try:
                self._lazy_offset_index.close()
                self._lazy_time_index.close()
                self.log.close()
            finally:
                self.txn_index.close()

    def close_handlers(self) -> None:
        """Release the files without trimming (Kafka: ``closeHandlers``)."""
        try:
            self._lazy_offset_index.close_handler()
            self._lazy_time_index.close_handler()
            self.log.close_handlers()
        finally:
            self.txn_index.close()

    def delete(self) -> None:
        """Delete the segment's files, the transaction index too; files already gone are not an error
        (Kafka: ``deleteIfExists``, where a missing ``.txnindex`` is expected: most segments never had one)."""
        self._check_writable("delete")
        self.log.delete()
        self._lazy_offset_index.delete()
        self._lazy_time_index.delete()
        self.txn_index.delete_if_exists()

    delete_if_exists = delete

    # -- the transaction index ----------------------------------------------------------------------

    def update_txn_index(self, completed_txn: CompletedTxn, last_stable_offset: int) -> None:
        """Write an aborted transaction to this segment's ``.txnindex`` (Kafka: ``updateTxnIndex``): only an
        abort is written, as the entry ``(producer id, first offset, last offset, last_stable_offset)``; a
        commit writes nothing.  Not thread-safe: the log calls it under its lock, in the segment where the
        marker landed.

        Raises:
            IllegalArgumentError: the transaction's last offset is not above the last one written since the
                index was opened (:meth:`TransactionIndex.append <kafkalog.transaction_index.TransactionIndex.append>`).
        """
        self._check_writable("update the transaction index of")
        if completed_txn.is_aborted:
            logger.debug("Writing aborted transaction %s to transaction index, last stable offset is %s",
                         completed_txn, last_stable_offset)
            self.txn_index.append(AbortedTxn(completed_txn.producer_id, completed_txn.first_offset,
                                             completed_txn.last_offset, last_stable_offset))

    def collect_aborted_txns(self, fetch_offset: int, upper_bound_offset: int) -> TxnIndexSearchResult:
        """The aborted transactions of this segment's index that overlap ``[fetch_offset, upper_bound_offset)``
        (Kafka: ``collectAbortedTxns``)."""
        return self.txn_index.collect_aborted_txns(fetch_offset, upper_bound_offset)

    def fetch_upper_bound_offset(self, start_offset_position: OffsetPosition, fetch_size: int) -> int | None:
        """The offset of the first offset-index entry at or past ``fetch_size`` bytes after
        ``start_offset_position``, or ``None`` (Kafka: ``fetchUpperBoundOffset``): no batch a fetch of that size
        returned lies past it, so it bounds the aborted transactions the fetch needs."""
        found = self.offset_index.fetch_upper_bound_offset(start_offset_position, fetch_size)
        return None if found is None else found.offset

    def __enter__(self) -> LogSegment:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        known = self._max_timestamp_and_offset
        return (f"LogSegment(baseOffset={self.base_offset}, size={self.size()}, "
                f"lastModifiedTime={int(self.last_modified())}, "
                f"largestRecordTimestamp={known.timestamp if known else 'unknown'})")

    @property
    def dir(self) -> Path:
        return self.log.file.parent


def _loaded(index: OffsetIndex | TimeIndex) -> LazyIndex:
    """A LazyIndex around an index that is already open (for segments built from open indexes)."""
    lazy = LazyIndex(type(index), index.path, index.base_offset, index.max_index_size, index.writable)
    lazy._index = index
    return lazy


def _stop_description(reason: ScanStop) -> str:
    return {
        ScanStop.PARTIAL: "a batch cut short at the end of the file",
        ScanStop.SIZE_TOO_SMALL: "a size field too small for its magic",
        ScanStop.TOO_LARGE: "a size field past the limit",
        ScanStop.BAD_MAGIC: "an unknown magic byte",
        ScanStop.BAD_CRC: "a CRC that does not match",
        ScanStop.ZERO_TAIL: "zeros to the end of the file (a preallocated or never written tail)",
    }.get(reason, reason.name)

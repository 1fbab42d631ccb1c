"""LogLoader: what opening a log does before the log can be used - clean up after a crash, open every
segment, recover what was not flushed.

Port of ``core/src/main/scala/kafka/log/LogLoader.scala`` (Apache Kafka, tag 3.8.0), which 3.0 cut out of
0.10.1.1's ``Log.loadSegments`` / ``Log.recoverLog`` (``core/src/main/scala/kafka/log/Log.scala``).  With the
leader-epoch steps (the log's cache, made before loading, is refilled by segment recovery and then truncated to
the loaded log) and the producer-state steps (the interim ``ProducerStateManager`` each ``recoverSegment``
rebuilds, and ``rebuildProducerState`` at the end of :meth:`LogLoader.load`); with kafkalog's read-only open
(nothing on disk changes, and the producer state is not rebuilt, which would write snapshots) and
:class:`LoadReport`.

:class:`~kafkalog.log.unified_log.Log` builds one loader in its constructor, on itself: the segment map it fills is the
log's, and the segment operations the loader needs (a new segment, splitting a segment whose offsets
overflowed its index, deleting segments for a reason) are the log's own, as Kafka's loader calls
``LocalLog``'s.  :meth:`LogLoader.load` returns the offsets the log starts from (Kafka:
``LoadedLogOffsets``).

The steps, in Kafka's order (each a method below):

1. refuse a directory holding something named like a segment file that is not a regular file;
2. ``removeTempFilesAndCollectSwapFiles``: delete ``.deleted`` files and incomplete cleaner output
   (``.cleaned``, and every ``.swap`` at or past the lowest ``.cleaned`` offset: an unfinished split);
3. complete the swaps that remain: the ``.swap`` segments replace every file named for an offset in the range
   they cover (whatever its suffix, producer snapshots included, as in Kafka), then lose their suffix (the last
   step of the ``.cleaned`` -> ``.swap`` -> live protocol, so a crash at any point leaves either the old
   segments or the new ones);
4. ``loadSegmentFiles``: delete indexes without a ``.log``, open each segment, rebuild the indexes of one whose
   offset index is missing or whose transaction index is corrupt (3.8's ``sanityCheck``); then kafkalog's check
   of the offset and time indexes that step 5 will not rebuild, 0.10.1.1's check kept for them
   (:meth:`LogLoader._check_index_files`);
5. ``recoverLog``: after an unclean shutdown, check every segment past the recovery point batch by batch,
   cut at the first bad batch and drop the segments after it; a log left with no segment gets an empty one.
   Each segment is recovered with an interim producer state rebuilt up to its base (``recoverSegment``), which
   leaves a snapshot at the segment's end.
   A ``-delete`` directory (a partition waiting for its deletion) is not recovered: it keeps its segments but
   loads with recovery point and next offset 0, whatever its segments hold (Kafka's ``(0L, 0L)``), so step 6
   empties its leader-epoch cache and its log end offset is 0;
6. the leader-epoch cache is cut to the log: entries at or past the next offset go, and the first entry is
   moved up to the log start offset checkpoint (``truncateFromEndAsyncFlush``, ``truncateFromStartAsyncFlush``);
7. the producer state: snapshots at no segment's base are removed (``removeStraySnapshots``), and the state
   is rebuilt from the newest snapshot up to the log end offset (``UnifiedLog.rebuildProducerState``).

kafkalog's rule for a log with no producer snapshot at all, written by something that kept no producer state
(kafkalog before it ported Kafka's): before step 5 its transaction indexes gain the aborts they lack
(:func:`~kafkalog.log.producer_state_updates.complete_txn_indexes`; after an unclean shutdown only the flushed
segments', since recovery rebuilds the others' once it has cut their torn batches), no snapshot is written
until they have, and step 7 replays it from its first segment even after a clean shutdown
(:func:`~kafkalog.log.producer_state_updates.rebuild_producer_state`).

A step that finds a segment whose offsets do not fit its index (``LogSegmentOffsetOverflowError``) splits it
and runs again (``retryOnOffsetOverflow``).  A read-only load runs steps 1, 4 and 5's bookkeeping only: it
deletes, renames, rebuilds and truncates nothing, and reads around an index that fails its check (an offset or
time index is ignored; a transaction index is ignored and not trusted, so the log's aborted transactions are read
from its batch headers).  The last segment's offset and time indexes may be an active segment's, preallocated
with a zero tail that its writer trims only at roll or close (a running broker's or ``Log``'s, or one a crash
left): that is not a failure, and a read-only load takes their live entries, quietly
(:meth:`~kafkalog.segment.LogSegment.check_index_files`, :mod:`kafkalog.index.live_entries`).
"""

from __future__ import annotations

import bisect
import logging
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, Protocol

from ..config.log_config import LogConfig
from ..errors import (
    CorruptIndexError,
    IllegalArgumentError,
    IllegalStateError,
    InvalidOffsetError,
    KafkaLogError,
    KafkaStorageError,
    LogSegmentOffsetOverflowError,
)
from ..filenames import (
    CLEANED_FILE_SUFFIX,
    DELETED_FILE_SUFFIX,
    INDEX_FILE_SUFFIX,
    LOG_FILE_SUFFIX,
    SWAP_FILE_SUFFIX,
    TIME_INDEX_FILE_SUFFIX,
    TXN_INDEX_FILE_SUFFIX,
    offset_from_file_name,
    segment_file_offset,
    time_index_filename,
)
from ..fsutil import describe_file_kind, fsync_dir, raise_open_file_limit
from ..producer_state.manager import ProducerStateManager
from ..segment import LogSegment
from ..topic import DELETE_DIR_SUFFIX
from ..transaction_index import REWRITE_SUFFIX
from .local_log import _DescribedDeletion
from .producer_state_updates import complete_txn_indexes, rebuild_producer_state, take_snapshot_if_possible

if TYPE_CHECKING:
    from ..leader_epoch_cache import LeaderEpochFileCache
    from ..scheduler import Time
    from ..topic import TopicPartition
    from .local_log import LocalLog
    from .segments import LogSegments

__all__ = ["LoadReport", "LoadableLog", "LoadedLogOffsets", "LogLoader"]

logger = logging.getLogger(__name__)

# Any file a segment owns, live or in one of the three temporary states.
# A producer snapshot counts only once marked for deletion: Kafka's first pass deletes every ``.deleted`` file.
_SEGMENT_FILE = re.compile(
    r"^[0-9]+\.((log|index|timeindex|txnindex)(\.(swap|cleaned|deleted))?|txnindex\.tmp|snapshot\.deleted)$")


@dataclass
class LoadReport:
    """What opening a log changed on disk, in the order it happened (kafkalog's addition: Kafka only logs
    these steps).  ``kafkalog recover`` prints it; a read-only open leaves every list empty.

    - ``removed_files``: ``.deleted`` files, incomplete ``.cleaned`` output and invalid swaps, deleted;
    - ``completed_swaps``: ``.swap`` files renamed into place (and ``replaced_files`` they superseded);
    - ``rebuilt_indexes``: ``(base offset, reason)`` of each segment whose indexes were rebuilt at load;
    - ``recovered_segments``: ``(base offset, bytes truncated)`` of each segment recovery checked, once per
      segment in base offset order, with every byte any recovery of it cut at this open: a segment whose
      index was missing or corrupt is recovered while it is loaded, and again when it lies past the recovery
      point, and a torn tail the first cut is not there for the second to see.  :meth:`segment_recovered` is
      the one way in;
    - ``deleted_segments``: base offsets of segments deleted by recovery (after a truncated one, or all of
      them when the log end fell below the log start offset);
    - ``split_segments``: base offsets of segments split because their offsets overflowed the index;
    - ``skipped_files``: ``(name, why)`` of each file named like a segment's file but not for an offset the
      way Kafka names one (past ``Long.MaxValue``, not 20 digits), left alone.  Not a change: a read-only
      open lists them too.
    """

    removed_files: list[str] = field(default_factory=list)
    completed_swaps: list[str] = field(default_factory=list)
    replaced_files: list[str] = field(default_factory=list)
    rebuilt_indexes: list[tuple[int, str]] = field(default_factory=list)
    recovered_segments: list[tuple[int, int]] = field(default_factory=list)
    deleted_segments: list[int] = field(default_factory=list)
    split_segments: list[int] = field(default_factory=list)
    skipped_files: list[tuple[str, str]] = field(default_factory=list)

    def segment_recovered(self, base_offset: int, truncated: int) -> None:
        """Count a recovery of the segment at ``base_offset`` that cut ``truncated`` bytes off its log (the
        loader calls this wherever it recovers or empties a segment, so no path's bytes go uncounted)."""
        i = bisect.bisect_left(self.recovered_segments, base_offset, key=lambda entry: entry[0])
        if i < len(self.recovered_segments) and self.recovered_segments[i][0] == base_offset:
            self.recovered_segments[i] = (base_offset, self.recovered_segments[i][1] + truncated)
        else:
            self.recovered_segments.insert(i, (base_offset, truncated))

    @property
    def truncated_bytes(self) -> int:
        return sum(n for _base, n in self.recovered_segments)

    @property
    def changed(self) -> bool:
        return bool(self.removed_files or self.completed_swaps or self.rebuilt_indexes or self.truncated_bytes
                    or self.deleted_segments or self.split_segments)


class LoadedLogOffsets(NamedTuple):
    """Where a loaded log starts (Kafka: ``LoadedLogOffsets``; kafkalog keeps the next offset as an ``int``
    where Kafka keeps its ``LogOffsetMetadata``)."""

    log_start_offset: int
    recovery_point: int
    next_offset: int


class LoadableLog(Protocol):
    """The log a :class:`LogLoader` fills (a :class:`~kafkalog.log.unified_log.Log` is one): where it lies and how it
    was
    opened, the segment map and producer state the loader fills, and the log's own operations the loader calls
    (making the leader-epoch cache, splitting a segment whose offsets overflowed its index, deleting producer
    snapshots).  A protocol rather than the log class, so that the loader stays below the log that builds it."""

    @property
    def dir(self) -> Path: ...
    @property
    def config(self) -> LogConfig: ...
    @property
    def time(self) -> Time: ...
    @property
    def read_only(self) -> bool: ...
    @property
    def had_clean_shutdown(self) -> bool: ...
    @property
    def topic_partition(self) -> TopicPartition: ...
    @property
    def segments(self) -> LogSegments: ...
    @property
    def local_log(self) -> LocalLog: ...
    @property
    def load_report(self) -> LoadReport: ...
    @property
    def producer_state_manager(self) -> ProducerStateManager: ...
    @property
    def leader_epoch_cache(self) -> LeaderEpochFileCache | None: ...
    def _initialize_leader_epoch_cache(self) -> None: ...
    def split_overflowed_segment(self, segment: LogSegment) -> list[LogSegment]: ...
    def _delete_producer_snapshots(self, segments: Iterable[LogSegment], async_delete: bool) -> None: ...


class LogLoader:
    """Loads the segments of ``log`` from its directory (Kafka: ``LogLoader``).

    ``log_start_offset_checkpoint`` and ``recovery_point_checkpoint`` are what the checkpoint files said
    (0 for a log opened on its own); ``recovery_progress`` is told ``(bytes checked, bytes to check)`` as
    recovery goes.  What changes on disk is written to ``log.load_report``.
    """

    def __init__(self, log: LoadableLog, log_start_offset_checkpoint: int, recovery_point_checkpoint: int,
                 recovery_progress: Callable[[int, int], None] | None = None) -> None:
        self.log = log
        self.dir: Path = log.dir
        self.config: LogConfig = log.config
        self.time = log.time
        self.read_only = log.read_only
        self.had_clean_shutdown = log.had_clean_shutdown
        self.topic_partition = log.topic_partition
        self.segments = log.segments
        self.load_report: LoadReport = log.load_report
        self.log_start_offset_checkpoint = log_start_offset_checkpoint
        self.recovery_point_checkpoint = recovery_point_checkpoint
        self._recovery_progress = recovery_progress
        self.recovery_point = recovery_point_checkpoint
        # Taken before anything writes a snapshot: a log that had none was written by something that kept no
        # producer state, whose aborts may lack index entries (see _complete_txn_indexes).
        self.had_no_snapshot = not self.read_only and log.producer_state_manager.latest_snapshot_offset() is None
        # Until that log's indexes are complete no snapshot may be written: one would make the next open take the
        # log for complete if this one failed first.
        self._snapshots_deferred = self.had_no_snapshot

    def load(self) -> LoadedLogOffsets:
        """Run the steps of the module docstring and return where the log starts (Kafka: ``load``).

        Raises:
            KafkaStorageError: the directory is missing (read-only) or not a directory, or holds a file named
                like a segment's that is not a regular file.
            LogSegmentOffsetOverflowError: a read-only load met a segment that only a split could read.
        """
        raise_open_file_limit()
        if self.read_only:
            if not self.dir.is_dir():
                what = "does not exist" if not self.dir.exists() else f"is {describe_file_kind(self.dir)}"
                raise KafkaStorageError(f"Log directory {self.dir} {what}")
        else:
            if self.dir.exists() and not self.dir.is_dir():
                raise KafkaStorageError(f"Log directory {self.dir} is {describe_file_kind(self.dir)}")
            self.dir.mkdir(parents=True, exist_ok=True)
        # Kafka's UnifiedLog.apply makes the cache once the directory exists, before the loader runs.
        self.log._initialize_leader_epoch_cache()
        self._check_file_kinds()
        swap_files = [] if self.read_only else self._remove_temp_files_and_collect_swap_files()
        if swap_files:
            self._complete_swaps(swap_files)
        self._load_segment_files()
        if self.dir.name.endswith(DELETE_DIR_SUFFIX):
            # A directory waiting for deletion is not recovered and holds nothing a reader may fetch: it is loaded
            # only to be deleted, so it ends at 0 whatever its segments hold (and its epochs go with that end).
            if self.segments.is_empty():
                self._add_empty_segment(0)
            self.recovery_point = 0
            next_offset = 0
        else:
            if self.had_no_snapshot:
                self._complete_txn_indexes()
            next_offset = self._retry_on_offset_overflow(
                lambda: self._recover_log(self.log_start_offset_checkpoint, self.recovery_point_checkpoint))
            if not self.read_only:
                active = self._active()
                active.resize_indexes(self.config.max_index_size)
        cache = self.log.leader_epoch_cache
        if cache is not None:
            cache.truncate_from_end_async_flush(next_offset)
        first = self.segments.first_segment_base_offset()
        log_start_offset = max(self.log_start_offset_checkpoint, first if first is not None else 0)
        # The earliest leader epoch may not have been written before a hard failure: recover it here.
        if cache is not None:
            cache.truncate_from_start_async_flush(self.log_start_offset_checkpoint)
        if not self.read_only:
            self._load_producer_state(log_start_offset, next_offset)
        return LoadedLogOffsets(log_start_offset, self.recovery_point, next_offset)

    def _complete_txn_indexes(self) -> None:
        """Give a log that has no producer snapshot the transaction-index entries its aborts lack (kafkalog's step;
        :func:`~kafkalog.log.producer_state_updates.complete_txn_indexes`), before recovery or the producer
        state's rebuild writes any snapshot: a crash before then leaves a log without snapshots, which the next
        open completes again, and a snapshot never stands for a log whose indexes are not whole.  The replay uses
        a manager of its own, which takes no snapshot."""
        log_state = self.log.producer_state_manager
        producer_state_manager = ProducerStateManager(self.topic_partition, self.dir,
                                                      log_state.max_transaction_timeout_ms,
                                                      log_state.producer_state_manager_config, self.time)
        first = self.segments.first_segment_base_offset()
        log_start_offset = max(self.log_start_offset_checkpoint, first if first is not None else 0)
        segments = self.segments.values()
        if not self.had_clean_shutdown:
            # The segments recovery will check rebuild their indexes there, after it has cut any torn or corrupt
            # batch: only the flushed ones before the recovery point are replayed here.
            unflushed = {segment.base_offset for segment in self.segments.values(self.recovery_point_checkpoint, None)}
            segments = [segment for segment in segments if segment.base_offset not in unflushed]
        complete_txn_indexes(producer_state_manager, segments, log_start_offset)
        self._snapshots_deferred = False

    def _load_producer_state(self, log_start_offset: int, next_offset: int) -> None:
        """Build the log's producer state from scratch (Kafka: the end of ``LogLoader.load``): recovery used
        interim managers, whose snapshot deletions this one did not see, so the snapshots are listed again."""
        producer_state_manager = self.log.producer_state_manager
        if not producer_state_manager.is_empty():
            raise IllegalStateError("Producer state must be empty during log initialization")
        producer_state_manager.remove_stray_snapshots(self.segments.base_offsets())
        rebuild_producer_state(producer_state_manager, self.segments, log_start_offset, next_offset,
                               self.config.record_version(), self.time,
                               reload_from_clean_shutdown=self.had_clean_shutdown,
                               replay_without_snapshot=self.had_no_snapshot)

    def _active(self) -> LogSegment:
        segment = self.segments.last_segment()
        if segment is None:
            raise KafkaLogError(f"Log {self.dir} has no segment")
        return segment

    def _check_file_kinds(self) -> None:
        """Refuse a log dir holding something named like a segment file (any suffix) that is no regular file: a
        directory, a FIFO, a socket, a link to nothing (kafkalog's check).  Loading would open it (an index:
        ``IsADirectoryError``, or a FIFO's open that never returns), or skip it and remove its segment's
        indexes as orphans, and a later roll would run into it.  Kafka skips a ``.log`` that is no file
        and fails on the rest with an ``IOException``; here each is a :class:`KafkaStorageError` naming it,
        before anything is opened or removed.
        """
        with os.scandir(self.dir) as entries:
            for entry in entries:
                if _SEGMENT_FILE.match(entry.name) and not entry.is_file():
                    raise KafkaStorageError(
                        f"{entry.path} is named like a segment file but is not a regular file "
                        f"({describe_file_kind(entry.path)}): kafkalog neither reads nor removes it; move it out "
                        "of the log directory to open the log")

    def _remove_temp_files_and_collect_swap_files(self) -> list[Path]:
        """Delete ``.deleted`` files, drop incomplete cleaner and split output, and return the swap files
        that are complete (Kafka: ``LogLoader.removeTempFilesAndCollectSwapFiles``)."""
        swap_files: list[Path] = []
        cleaned_files: list[Path] = []
        min_cleaned_offset = None
        for name in self._segment_file_names():
            path = self.dir / name
            if name.endswith(DELETED_FILE_SUFFIX) or name.endswith(TXN_INDEX_FILE_SUFFIX + REWRITE_SUFFIX):
                # (A .txnindex.tmp is a rewrite a crash cut short: the index it was to replace is whole.)
                logger.debug("Deleting stray temporary file %s", path)
                path.unlink(missing_ok=True)
                self.load_report.removed_files.append(name)
            elif name.endswith(CLEANED_FILE_SUFFIX):
                offset = offset_from_file_name(name)
                min_cleaned_offset = offset if min_cleaned_offset is None else min(min_cleaned_offset, offset)
                cleaned_files.append(path)
            elif name.endswith(SWAP_FILE_SUFFIX):
                swap_files.append(path)
        valid_swaps = []
        for path in swap_files:
            if min_cleaned_offset is not None and offset_from_file_name(path.name) >= min_cleaned_offset:
                # A swap at or past cleaner output still in progress is an incomplete split.
                logger.info("Deleting invalid swap file %s (min cleaned offset %s)", path, min_cleaned_offset)
                path.unlink(missing_ok=True)
                self.load_report.removed_files.append(path.name)
            else:
                valid_swaps.append(path)
        for path in cleaned_files:
            logger.debug("Deleting stray .clean file %s", path)
            path.unlink(missing_ok=True)
            self.load_report.removed_files.append(path.name)
        return valid_swaps

    def _complete_swaps(self, swap_files: list[Path]) -> None:
        """Finish a segment replacement that a crash interrupted (Kafka: ``LogLoader.load``, its second to fourth
        passes): the swapped-in segments win, the ``.swap`` names are dropped, and every other file named for an
        offset in the range they cover, from the lowest swap base to the highest swap's next offset, is deleted
        whatever its suffix: the replaced segments' files and the producer snapshots taken inside the range, as
        Kafka deletes every file there whose name ``offsetFromFile`` reads
        (:meth:`_offset_named_file_names`)."""
        min_swap, max_swap = None, None
        for path in swap_files:
            if not path.name.endswith(LOG_FILE_SUFFIX + SWAP_FILE_SUFFIX):
                continue
            base = offset_from_file_name(path.name)
            segment = LogSegment.open(self.dir, base, self.config, self.time, file_already_exists=True,
                                      file_suffix=SWAP_FILE_SUFFIX)
            try:
                next_offset = segment.read_next_offset()
            finally:
                segment.close_handlers()
            min_swap = base if min_swap is None else min(min_swap, base)
            max_swap = next_offset if max_swap is None else max(max_swap, next_offset)
        if min_swap is not None and max_swap is not None:
            for name in self._offset_named_file_names():
                path = self.dir / name
                if not name.endswith(SWAP_FILE_SUFFIX) and min_swap <= offset_from_file_name(name) < max_swap:
                    logger.info("Deleting %s, in the range [%d, %d) of an interrupted swap: compacted or split "
                                "but not deleted yet", path, min_swap, max_swap)
                    path.unlink(missing_ok=True)
                    self.load_report.replaced_files.append(name)
        for path in swap_files:
            target = path.with_name(path.name[: -len(SWAP_FILE_SUFFIX)])
            os.replace(path, target)
            self.load_report.completed_swaps.append(path.name)
        fsync_dir(self.dir)

    def _segment_file_names(self) -> list[str]:
        """The sorted names of the regular files of the directory that belong to a segment:
        ``<offset>.<log|index|timeindex|txnindex>`` with an optional ``.swap``/``.cleaned``/``.deleted``.

        A file of that shape whose prefix is not an offset as Kafka writes one (20 digits, at most
        ``Long.MaxValue``: :func:`~kafkalog.filenames.segment_file_offset`) is skipped with a warning and
        listed in ``load_report.skipped_files``, and left alone, as every other file that is not a segment's
        is.  Kafka's loader stops at a prefix past ``Long.MaxValue`` (``NumberFormatException``) and reads a
        prefix of another length as an offset whose files have another name.
        """
        names = []
        for path in sorted(self.dir.iterdir()):
            name = path.name
            if not _SEGMENT_FILE.match(name) or not path.is_file():
                continue
            try:
                segment_file_offset(name)
            except IllegalArgumentError as e:
                if all(skipped != name for skipped, _why in self.load_report.skipped_files):
                    logger.warning("Skipping %s, which is not a segment's file: %s", path, e)
                    self.load_report.skipped_files.append((name, str(e)))
                continue
            names.append(name)
        return names

    def _offset_named_file_names(self) -> list[str]:
        """The sorted names of the regular files of the directory named for an offset as Kafka names a segment's
        files, whatever follows the first '.': ``<offset>.log``, ``.index``, ``.timeindex``, ``.txnindex``, a
        producer ``.snapshot``, any other suffix.  Kafka's swap completion takes every file whose name
        ``offsetFromFile`` reads and skips those it cannot (no '.', no number before it); kafkalog also skips
        a prefix that is not 20 digits up to ``Long.MaxValue`` (:func:`~kafkalog.filenames.segment_file_offset`),
        which Kafka reads as an offset, as its loader leaves every such file alone."""
        names = []
        for path in sorted(self.dir.iterdir()):
            name = path.name
            if "." not in name or not path.is_file():
                continue
            try:
                segment_file_offset(name)
            except IllegalArgumentError:
                continue
            names.append(name)
        return names

    def _load_segment_files(self) -> None:
        """Open every segment (Kafka: ``LogLoader.loadSegmentFiles``): orphan indexes are deleted, each
        ``.log`` is opened and passes :meth:`~kafkalog.segment.LogSegment.sanity_check`, or has its indexes
        rebuilt (a missing offset index, a corrupt transaction index); then kafkalog's check of the offset and
        time indexes that recovery will not rebuild (:meth:`_check_index_files`)."""
        names = self._segment_file_names()
        logs = {n for n in names if n.endswith(LOG_FILE_SUFFIX)}
        for name in names:
            if name.endswith((SWAP_FILE_SUFFIX, CLEANED_FILE_SUFFIX, DELETED_FILE_SUFFIX)):
                continue
            if name.endswith((INDEX_FILE_SUFFIX, TIME_INDEX_FILE_SUFFIX, TXN_INDEX_FILE_SUFFIX)):
                base = name.split(".", 1)[0]
                if f"{base}{LOG_FILE_SUFFIX}" not in logs and not self.read_only:
                    logger.warning("Found an orphaned index file %s, with no corresponding log file.",
                                   self.dir / name)
                    (self.dir / name).unlink(missing_ok=True)
        handled: set[int] = set()
        for name in sorted(logs):
            base_offset = offset_from_file_name(name)
            time_index_newly_created = not time_index_filename(self.dir, base_offset).exists()
            segment = LogSegment.open(self.dir, base_offset, self.config, self.time, file_already_exists=True,
                                      read_only=self.read_only)
            # In the map before its indexes are rebuilt, so a rebuild that finds an offset overflow can
            # split the segment in place.
            self.segments.add(segment)
            try:
                segment.sanity_check(time_index_newly_created)
            except FileNotFoundError:
                # Kafka logs it as an error only where recovery would not have rebuilt the index anyway.
                if self.had_clean_shutdown or base_offset < self.recovery_point_checkpoint:
                    logger.error("Could not find offset index file corresponding to log file %s, "
                                 "recovering segment and rebuilding index files...", segment.log.file)
                self.load_report.rebuilt_indexes.append((base_offset, "offset index missing"))
                handled.add(base_offset)
                self._recover_segment_retrying(segment)
            except CorruptIndexError as e:
                # Only the transaction index is checked here.  A writable open rebuilds the segment's indexes,
                # as a broker's does; a read-only one cannot, and must not trust it either: it reads the
                # segment's aborts from its batch headers instead, and still checks its other indexes.
                if self.read_only:
                    logger.warning("Transaction index %s fails its check (%s); a read-only open cannot rebuild it, "
                                   "so it is not trusted: the log's aborted transactions are read from its batch "
                                   "headers.", segment.txn_index.file, e)
                    segment.txn_index.ignore_file()
                else:
                    handled.add(base_offset)
                    self._index_check_failed(segment, e)
        self._check_index_files(handled)

    def _check_index_files(self, handled: set[int]) -> None:
        """Check the offset and time indexes of every segment that recovery will not rebuild, and rebuild those
        that fail (kafkalog's: :meth:`~kafkalog.segment.LogSegment.check_index_files`; ``handled`` are the bases
        whose indexes loading rebuilt or gave up on already).

        Kafka 3.8.0 checks neither at load: the segments past the recovery point are recovered after an unclean
        shutdown, which rebuilds their indexes whatever they hold, and the others' indexes are trusted, as a flush
        or a clean shutdown wrote them whole.  kafkalog checks the others, as 0.10.1.1 checked every segment's,
        because it also opens directories that no broker closed (read-only opens of a live or copied broker
        directory, and ``recover``), where an index may be torn or stale below the recovery point, and a lookup
        in it would read wrong positions; the check costs a stat and a pread or two per file, no mapping.  The
        segments recovery rebuilds are left to it, as in Kafka, so a crash's preallocated index tail is not
        rebuilt twice, once their index files are known to open
        (:meth:`~kafkalog.segment.LogSegment.check_index_files_open`); a ``-delete`` directory holds nothing to
        read and is not checked."""
        if self.dir.name.endswith(DELETE_DIR_SUFFIX):
            return
        to_check = self.segments.values()
        if not self.had_clean_shutdown and not self.read_only:
            recovered = self.segments.values(self.recovery_point_checkpoint, None)
            for segment in recovered:
                # Whatever they hold, these indexes are rebuilt; but one recovery could not open would stop it
                # part way, after it changed other files.
                segment.check_index_files_open()
            rebuilt = {segment.base_offset for segment in recovered}
            to_check = [segment for segment in to_check if segment.base_offset not in rebuilt]
        last = self.segments.last_segment()
        for segment in to_check:
            if segment.base_offset in handled:
                continue
            try:
                segment.check_index_files(last=segment is last)
            except CorruptIndexError as e:
                self._index_check_failed(segment, e)

    def _index_check_failed(self, segment: LogSegment, error: CorruptIndexError) -> None:
        """A segment whose index failed its check at load: rebuilt (Kafka: the loader's ``recoverSegment``), or,
        read-only, read without its offset and time indexes."""
        if self.read_only:
            logger.warning("Index files of %s fail their check (%s); reading the segment without them, as a "
                           "read-only open cannot rebuild them.", segment.log.file, error)
            segment.ignore_index_files()
            return
        logger.warning("Found a corrupted index file corresponding to log file %s due to %s, recovering segment "
                       "and rebuilding index files...", segment.log.file, error)
        self.load_report.rebuilt_indexes.append((segment.base_offset, str(error)))
        self._recover_segment_retrying(segment)

    def _retry_on_offset_overflow(self, step: Callable[[], int]) -> int:
        """Run ``step``; when a segment turns out to hold offsets its index cannot, split it and run the step
        again (Kafka: ``LogLoader.retryOnOffsetOverflow``)."""
        while True:
            try:
                return step()
            except LogSegmentOffsetOverflowError as e:
                segment = e.segment
                if not isinstance(segment, LogSegment) or self.read_only:
                    raise
                logger.info("Caught segment overflow error: %s. Split segment and retry.", e)
                self.load_report.split_segments.append(segment.base_offset)
                self.log.split_overflowed_segment(segment)

    def _recover_segment_retrying(self, segment: LogSegment) -> None:
        """Rebuild a segment's indexes, splitting it first if its offsets overflowed (then the split
        segments, written from valid batches, need no rebuild)."""
        try:
            self._recover_segment(segment)
        except LogSegmentOffsetOverflowError as e:
            if self.read_only:
                raise
            logger.info("Caught segment overflow error: %s. Split segment and retry.", e)
            self.load_report.split_segments.append(segment.base_offset)
            self.log.split_overflowed_segment(segment)

    def _recover_segment(self, segment: LogSegment) -> int:
        """Recover one segment with a producer state rebuilt up to its base, then snapshot that state at the
        segment's end, so recovering the next segment starts from there; the log's leader-epoch cache is refilled
        from its batches (Kafka: ``recoverSegment``).  The bytes cut are counted in the load report here, whichever
        path called (a missing or corrupt index at load, or the unflushed segments): Kafka's load path drops the
        count, and kafkalog's ``recover`` would call a cut segment intact."""
        if self.read_only:
            return segment.recover(leader_epoch_cache=self.log.leader_epoch_cache)
        log_state = self.log.producer_state_manager
        producer_state_manager = ProducerStateManager(self.topic_partition, self.dir,
                                                      log_state.max_transaction_timeout_ms,
                                                      log_state.producer_state_manager_config, self.time)
        rebuild_producer_state(producer_state_manager, self.segments, self.log_start_offset_checkpoint,
                               segment.base_offset, self.config.record_version(), self.time,
                               reload_from_clean_shutdown=False, take_snapshots=not self._snapshots_deferred)
        truncated = segment.recover(producer_state_manager, self.log.leader_epoch_cache)
        self.load_report.segment_recovered(segment.base_offset, truncated)
        if not self._snapshots_deferred:
            take_snapshot_if_possible(producer_state_manager)
        return truncated

    def _recover_log(self, log_start_offset_checkpoint: int, recovery_point_checkpoint: int) -> int:
        """Check every segment past the recovery point when the last shutdown was not clean, and cut the
        log at the first bad batch (Kafka: ``recoverLog``); returns the log end offset and sets the recovery
        point.

        The recovery point is Kafka's: the log end offset after a clean shutdown that left the segments as they
        were, otherwise ``min(recovery point checkpoint, log end offset)``, which is also the rule when the
        segments all went because the log ended below its start offset, or there were none (the log then
        raises it to its start offset, as ``UnifiedLog`` does; :class:`~kafkalog.log.unified_log.Log`).  A read-only
        load,
        which recovers and deletes nothing, takes the log end offset (kafkalog's)."""
        if not self.had_clean_shutdown and not self.read_only:
            unflushed = self.segments.values(recovery_point_checkpoint, None)
            to_check = sum(segment.size() for segment in unflushed)
            checked = 0
            if self._recovery_progress is not None:
                self._recovery_progress(0, to_check)
            for i, segment in enumerate(unflushed):
                logger.info("Recovering unflushed segment %d. %d/%d recovered for %s", segment.base_offset, i,
                            len(unflushed), self.topic_partition)
                checked += segment.size()
                try:
                    truncated = self._recover_segment(segment)
                except InvalidOffsetError:
                    logger.warning("Found invalid offset during recovery. Deleting the corrupt segment and "
                                   "creating an empty one with starting offset %d", segment.base_offset)
                    truncated = segment.truncate_to(segment.base_offset)
                    self.load_report.segment_recovered(segment.base_offset, truncated)
                if self._recovery_progress is not None:
                    self._recovery_progress(checked, to_check)
                if truncated > 0:
                    # Everything after a torn write is suspect: drop the later segments.
                    later = unflushed[i + 1:]
                    if later:
                        logger.warning("Deleting %d segments after %d, which follow a truncated segment",
                                       len(later), segment.base_offset)
                        self.load_report.deleted_segments.extend(s.base_offset for s in later)
                        self.log.local_log.remove_and_delete_segments(
                            later, async_delete=True,
                            reason=_DescribedDeletion(
                                self.log.local_log, f"recovery, after truncated segment {segment.base_offset}"))
                        self.log._delete_producer_snapshots(later, async_delete=True)
                    break
        # Kafka's deleteSegmentsIfLogStartGreaterThanLogEnd: the log end offset, unless no segment is left.
        log_end_offset_option: int | None = None
        if not self.segments.is_empty():
            log_end_offset = self._active().read_next_offset()
            log_end_offset_option = log_end_offset
            if log_end_offset < log_start_offset_checkpoint and not self.read_only:
                logger.warning("Deleting all segments because logEndOffset (%d) is smaller than logStartOffset "
                               "(%d). This could happen if segment files were deleted from the file system.",
                               log_end_offset, log_start_offset_checkpoint)
                self.load_report.deleted_segments.extend(s.base_offset for s in self.segments.values())
                all_segments = self.segments.values()
                self.log.local_log.remove_and_delete_segments(
                    all_segments, async_delete=True,
                    reason=_DescribedDeletion(self.log.local_log, f"log end offset {log_end_offset} below the log "
                                                                  f"start offset {log_start_offset_checkpoint}"))
                self.log._delete_producer_snapshots(all_segments, async_delete=True)
                if self.log.leader_epoch_cache is not None:
                    self.log.leader_epoch_cache.clear_and_flush()
                self.log.producer_state_manager.truncate_fully_and_start_at(log_start_offset_checkpoint)
                log_end_offset_option = None
        if self.segments.is_empty():
            self._add_empty_segment(log_start_offset_checkpoint)
        # The recovery point moves up only to what a clean shutdown left whole: advancing it here could skip
        # the recovery of a segment not flushed yet, should the broker crash after checkpointing it.
        if self.read_only:
            log_end_offset = self._active().read_next_offset()
            self.recovery_point = log_end_offset
        elif self.had_clean_shutdown and log_end_offset_option is not None:
            log_end_offset = log_end_offset_option
            self.recovery_point = log_end_offset
        else:
            log_end_offset = (log_end_offset_option if log_end_offset_option is not None
                              else self._active().read_next_offset())
            self.recovery_point = min(recovery_point_checkpoint, log_end_offset)
        return log_end_offset

    def _add_empty_segment(self, base_offset: int) -> None:
        """The segment a log with none gets at load (Kafka: ``LogLoader.load``): a new one, or, for a read-only
        open, which writes nothing, an empty one with no file behind it (:meth:`LogSegment.absent`)."""
        if not self.read_only:
            self.log.local_log.add_new_segment(base_offset)
            return
        logger.info("Log directory %s holds no segment: reading it as an empty log from offset %d, as a broker "
                    "would create it (nothing is written)", self.dir, base_offset)
        self.segments.add(LogSegment.absent(self.dir, base_offset, self.config, self.time))

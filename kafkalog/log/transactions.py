"""What a ``read_committed`` consumer sees of a partition's transactions: its aborted transactions and its last
stable offset.

A transactional producer's batches carry the transactional bit (attribute ``0x10``) and its producer
id; the transaction ends with a control batch (``0x20``) whose one record's key names ``COMMIT`` or
``ABORT``.  A consumer with ``isolation.level=read_committed``:

- never sees control batches (no consumer does, whatever its isolation level);
- skips the batches of aborted transactions: a transactional batch of producer ``p`` at offset ``o`` is
  aborted when ``p`` has an aborted transaction with ``first_offset <= o <= last_offset`` (Kafka:
  ``Fetcher``'s ``abortedProducerIds`` walk over the fetch response's ``abortedTransactions``);
- reads no further than the last stable offset: the first offset of the earliest transaction not yet
  ended (``UnifiedLog.lastStableOffset``), or the log end offset when none is open.

Where the facts come from (:meth:`TransactionState.of`) depends on who wrote the log:

- a log open for writing keeps Kafka's producer state: the last stable offset is the log's, read first, and the
  aborted transactions are its ``.txnindex`` entries (``collectAbortedTransactions``), read after it, so an abort
  written meanwhile cannot move the bound past a transaction the list leaves out;
- a log read in place whose writer kept producer state, known by its producer snapshots (a broker since 0.11,
  kafkalog since it ported them), has its aborts in its ``.txnindex`` files too; its open transactions are
  those of its latest snapshot, brought up to the log end by the batches after it
  (:meth:`TransactionState.from_indexes`);
- a log without snapshots (a broker before 0.11, whose formats have no transactions, or kafkalog before it kept
  producer state, whose aborts have no index entries) is read from its batch headers
  (:meth:`TransactionState.from_batches`).  Opening such a log for writing gives it both
  (:func:`~kafkalog.log.producer_state_updates.complete_txn_indexes`,
  :func:`~kafkalog.log.producer_state_updates.rebuild_producer_state`).

The scan kernel finds the transactional batches; only those are read further, so a log without transactions
costs one header scan.

A ``.txnindex`` is trusted only when it deserves it: one that fails Kafka's ``TransactionIndex.sanityCheck`` (which
a broker's open rebuilds it on, and a read-only open cannot) or holds more entries than its segment holds batches
sends the reader of a log in place to the batch headers, with a warning naming it.  The indexes are read a chunk
at a time into the state's compact columns (:class:`TransactionState`: 32 bytes an aborted transaction), never an
object per entry, so a read-only reader of a large index costs about what the index does.
"""

from __future__ import annotations

import logging
import struct
import threading
import weakref
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TypeVar

import numpy as np
import numpy.typing as npt

from .._common import CONTROL_FLAG_MASK, MAGIC_V2, PRODUCER_ID_OFFSET, TRANSACTIONAL_FLAG_MASK
from ..errors import CorruptIndexError, KafkaLogError
from ..producer_state import list_snapshot_files
from ..producer_state.snapshot import open_snapshot_file, read_snapshot_transactions
from ..record import ControlRecordType
from ..record.batch import DefaultRecordBatch
from ..transaction_index import AbortedTxn, checked_entry_chunks

if TYPE_CHECKING:
    from pathlib import Path

    from ..file_message_set import FileMessageSet
    from ..producer_state import SnapshotTransactions
    from ..producer_state.manager import ProducerStateManager
    from ..scheduler import Time
    from ..segment import LogSegment


class _HasLog(Protocol):
    """A segment as the producer scans read it: its ``.log`` only (a :class:`~kafkalog.segment.LogSegment`,
    or a segment read by range, :class:`~kafkalog.urls.partition.UrlSegment`)."""

    @property
    def log(self) -> FileMessageSet: ...


class _SeekableSegment(_HasLog, Protocol):
    """A segment whose batches can be read from an offset on (a :class:`~kafkalog.segment.LogSegment` or a
    :class:`~kafkalog.urls.partition.UrlSegment`)."""

    @property
    def base_offset(self) -> int: ...
    def translate_offset(self, offset: int, starting_file_position: int = 0) -> Any: ...


class SegmentedLog(Protocol):
    """A log as :func:`first_unstable_offset` reads it: its segments (a :class:`~kafkalog.log.unified_log.Log` is
    one)."""

    def log_segments(self, from_offset: int | None = None, to_offset: int | None = None) -> list[LogSegment]: ...


class TransactionalLog(SegmentedLog, Protocol):
    """A log as :class:`TransactionState` reads it (a :class:`~kafkalog.log.unified_log.Log` is one): its offsets, its
    producer state and aborted transactions when it is open for writing, its files when it is read in place.

    A protocol rather than the log class, so that this module stays below the log that reads through it."""

    @property
    def read_only(self) -> bool: ...
    @property
    def dir(self) -> Path: ...
    @property
    def time(self) -> Time: ...
    @property
    def producer_state_manager(self) -> ProducerStateManager: ...
    @property
    def log_start_offset(self) -> int: ...
    @property
    def log_end_offset(self) -> int: ...
    @property
    def last_stable_offset(self) -> int: ...
    def collect_aborted_transactions(self, start_offset: int, upper_bound_offset: int) -> list[AbortedTxn]: ...
    def in_place_transactions(self) -> TransactionState: ...

_S = TypeVar("_S", bound=_SeekableSegment)
_F = TypeVar("_F")

logger = logging.getLogger(__name__)

__all__ = ["ProducerBatch", "SegmentedLog", "TransactionState", "TransactionalLog", "first_unstable_offset",
           "newest_snapshot_transactions", "producer_batches", "read_snapshot_file_transactions",
           "scan_producer_batches", "transactional_rows"]

_PRODUCER_ID = struct.Struct(">q")


def _by_first_offset(txn: AbortedTxn) -> tuple[int, int, int]:
    return txn.first_offset, txn.producer_id, txn.last_offset


def transactional_rows(rows: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """The scan rows of v2 batches with the transactional bit set (data and control batches)."""
    mask = (rows["magic"] == MAGIC_V2) & ((rows["attributes"] & TRANSACTIONAL_FLAG_MASK) != 0)
    found: npt.NDArray[Any] = rows[mask]
    return found


class _Columns(NamedTuple):
    """Aborted transactions as four int64 columns, one row a transaction (32 bytes, where an
    :class:`AbortedTxn` object costs some 200)."""

    producer_id: npt.NDArray[np.int64]
    first_offset: npt.NDArray[np.int64]
    last_offset: npt.NDArray[np.int64]
    last_stable_offset: npt.NDArray[np.int64]


def _columns_of_txns(txns: Iterable[AbortedTxn]) -> _Columns:
    columns: tuple[array[int], ...] = (array("q"), array("q"), array("q"), array("q"))
    for txn in txns:
        for column, value in zip(columns, txn[:4], strict=True):
            column.append(value)
    return _Columns(*(np.array(column, dtype=np.int64) for column in columns))


def _columns_of_entries(entries: npt.NDArray[Any]) -> _Columns:
    """The columns of index entries (rows of :data:`~kafkalog.transaction_index.ABORTED_TXN_DTYPE`)."""
    return _Columns(*(entries[name].astype(np.int64) for name in _Columns._fields))


def _concatenated(parts: list[_Columns]) -> _Columns:
    """The rows of ``parts``, in order, in one set of columns; ``parts`` is emptied as they are copied, so the
    copy costs one column more than the parts, not twice them."""
    if len(parts) == 1:
        return parts.pop()
    by_column: list[list[npt.NDArray[np.int64]]] = [[part[i] for part in parts] for i in range(len(_Columns._fields))]
    parts.clear()
    columns = []
    for pieces in by_column:
        columns.append(np.concatenate(pieces) if pieces else np.empty(0, np.int64))
        pieces.clear()
    return _Columns(*columns)


def _canonical(columns: _Columns) -> _Columns:
    """``columns``, which the caller gives up (they are sorted in place), sorted by producer id, first offset and
    last offset, one row for each of those three (the first given of rows that share them)."""
    producer_ids, first_offsets, last_offsets, _last_stable = columns
    if len(producer_ids) > 1:
        # A stable sort: of rows that share the key, the first given comes first, and is the one kept.  Each column
        # is put in order where it is, so sorting costs the order and one column, not a second set of columns.
        order = np.lexsort((last_offsets, first_offsets, producer_ids))
        for column in columns:
            column[:] = column[order]
        del order
        repeated = ((producer_ids[1:] == producer_ids[:-1]) & (first_offsets[1:] == first_offsets[:-1])
                    & (last_offsets[1:] == last_offsets[:-1]))
        if repeated.any():
            keep = np.concatenate(([True], ~repeated))
            columns = _Columns(*(column[keep] for column in columns))
    return columns


def _restore(columns: tuple[npt.NDArray[np.int64], ...], last_stable_offset: int) -> TransactionState:
    return TransactionState._of(_Columns(*columns), last_stable_offset, canonical=True)


class TransactionState:
    """The aborted transactions of a partition and its last stable offset.

    The aborted transactions are kept compact, as four int64 columns (32 bytes a transaction, so a partition with
    millions of them costs tens of megabytes, not gigabytes), sorted by producer id and offsets for
    :meth:`aborted_mask`'s binary search, one per producer id, first offset and last offset.  :attr:`aborted` makes
    :class:`AbortedTxn` objects of them, sorted by first offset: ask it of a state cut to what a reader needs
    (:meth:`between`).  The state is immutable and pickles, so a planner reads it once and hands it to every reader
    of the partition.
    """

    __slots__ = ("_columns", "last_stable_offset")
    _columns: _Columns
    last_stable_offset: int

    def __init__(self, aborted: Iterable[AbortedTxn] = (), last_stable_offset: int = 0) -> None:
        self._set(_canonical(_columns_of_txns(aborted)), last_stable_offset)

    @classmethod
    def _of(cls, columns: _Columns, last_stable_offset: int, *, canonical: bool = False) -> TransactionState:
        state = cls.__new__(cls)
        state._set(columns if canonical else _canonical(columns), last_stable_offset)
        return state

    def _set(self, columns: _Columns, last_stable_offset: int) -> None:
        object.__setattr__(self, "_columns", columns)
        object.__setattr__(self, "last_stable_offset", int(last_stable_offset))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"A TransactionState does not change: cannot set {name}")

    def __reduce__(self) -> tuple[Any, ...]:
        return _restore, (tuple(self._columns), self.last_stable_offset)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TransactionState):
            return NotImplemented
        return self.last_stable_offset == other.last_stable_offset and all(
            np.array_equal(mine, theirs) for mine, theirs in zip(self._columns, other._columns, strict=True))

    def __hash__(self) -> int:
        return hash((self.last_stable_offset, *(column.tobytes() for column in self._columns)))

    def __repr__(self) -> str:
        count = self.aborted_count
        shown = repr(self.aborted) if count <= 8 else f"<{count} aborted transactions>"
        return f"TransactionState(aborted={shown}, last_stable_offset={self.last_stable_offset})"

    @property
    def aborted_count(self) -> int:
        """How many aborted transactions the state holds."""
        return len(self._columns.producer_id)

    @property
    def aborted(self) -> tuple[AbortedTxn, ...]:
        """The aborted transactions, sorted by first offset (then producer id and last offset), each made now."""
        columns = self._columns
        order = np.lexsort((columns.last_offset, columns.producer_id, columns.first_offset))
        return tuple(AbortedTxn(*row) for row in zip(*(column[order].tolist() for column in columns), strict=True))

    @classmethod
    def of(cls, log: TransactionalLog) -> TransactionState:
        """The state of ``log`` (see the module docstring): from its producer state when it is open for writing;
        when it is read-only, what a reader finds in place (:meth:`read_in_place`, read once per log:
        :meth:`Log.in_place_transactions <kafkalog.log.producer_state_wiring.LogProducerState.in_place_transactions>`).

        A log open for writing may be written meanwhile, so the last stable offset is read first and the aborted
        transactions after it, as Kafka's ``UnifiedLog.read`` fixes its bound (``fetchLastStableOffsetMetadata``)
        before ``LocalLog.read`` collects the aborts of what it read (``addAbortedTransactions``).  Every
        transaction that begins below that bound had ended when the bound was read (one still open holds the last
        stable offset at or below its first offset), and the log writes an abort's ``.txnindex`` entry before its
        last stable offset passes the transaction, so the list holds every abort a reader up to the bound must
        skip; one that ends later began at or past the bound.  (Read the other way round, an ABORT marker written
        in between moved the bound past a transaction the list did not name, and a ``read_committed`` reader
        returned its records.)  The aborts are collected up to the log end offset, as Kafka's are when the fetch
        has no nearer upper bound, so the state names those past the bound too.
        """
        if not log.read_only:
            last_stable = log.last_stable_offset
            aborted = log.collect_aborted_transactions(log.log_start_offset, log.log_end_offset)
            return cls(tuple(sorted(aborted, key=_by_first_offset)), last_stable)
        return log.in_place_transactions()

    @classmethod
    def read_in_place(cls, log: TransactionalLog) -> TransactionState:
        """The state of a local log read in place, which keeps no producer state (:meth:`in_place` over its
        segments, producer snapshots and trusted ``.txnindex`` entries: :func:`_trusted_entries`, so an index
        that failed Kafka's sanity check when the log was opened sends the reader to the batch headers)."""
        return cls.in_place(
            [(found.offset, found.file, None) for found in list_snapshot_files(log.dir)],
            read_snapshot_file_transactions, log.log_segments(),
            _trusted_entries, log.log_start_offset, log.log_end_offset, log.dir, log.time.milliseconds(),
            log.producer_state_manager.producer_state_manager_config.producer_id_expiration_ms)

    @classmethod
    def in_place(cls, snapshots: Iterable[tuple[int, _F, int | None]],
                 read_snapshot: Callable[[_F, int | None, int, int], SnapshotTransactions], segments: Sequence[_S],
                 index_entries: Callable[[_S], Iterable[npt.NDArray[Any]]], log_start_offset: int,
                 log_end_offset: int, where: object, current_time_ms: int, expiration_ms: int) -> TransactionState:
        """The state of a partition read in place, wherever its files lie (a local read-only log:
        :meth:`read_in_place`; a dir at a URL: :meth:`UrlPartition.transactions
        <kafkalog.urls.partition.UrlPartition.transactions>`): the one choice of where its transactions are read
        from.  With a usable producer snapshot (:func:`newest_snapshot_transactions` over ``snapshots``, read by
        ``read_snapshot``, its producers expired at ``expiration_ms`` by ``current_time_ms``), from the ``.txnindex``
        entries of ``segments`` (``index_entries(segment)``, a chunk at a time) and that snapshot with the batches
        after it (:meth:`from_indexes`); else from the batch headers (:meth:`from_batches`).  The last stable offset is
        never below ``log_start_offset`` (Kafka: ``maybeIncrementFirstUnstableOffset``), where a transaction
        left open in a deleted segment would put it.

        A transaction index that is not trusted (``index_entries`` raises :class:`CorruptIndexError`: it failed
        Kafka's sanity check, or holds more entries than its segment holds batches) sends the reader to the batch
        headers too, with a warning naming ``where``: the aborts it should list are in no other index."""
        snapshot = newest_snapshot_transactions(snapshots, read_snapshot,
                                                segments[0].base_offset if segments else None, log_end_offset,
                                                where, current_time_ms, expiration_ms)
        state = None
        if snapshot is not None:
            try:
                indexed = cls.from_index_entries(chunk for segment in segments for chunk in index_entries(segment))
            except CorruptIndexError as e:
                logger.warning("Reading the transactions of %s from its batch headers: %s", where, e)
            else:
                offset, open_txns = snapshot
                state = cls.from_indexes(indexed, offset, open_txns, segments, log_end_offset)
        if state is None:
            batches = (batch for segment in segments for batch in producer_batches(segment, transactional_only=True))
            state = cls.from_batches(batches, log_end_offset)
        return state.starting_at(log_start_offset)

    @classmethod
    def from_index_entries(cls, chunks: Iterable[npt.NDArray[Any]], last_stable_offset: int = 0) -> TransactionState:
        """The state whose aborted transactions are the entries of transaction indexes, given a chunk at a time
        (rows of :data:`~kafkalog.transaction_index.ABORTED_TXN_DTYPE`), each chunk made compact as it comes: the
        state costs 32 bytes an entry, and the reading a chunk more."""
        return cls._of(_concatenated([_columns_of_entries(chunk) for chunk in chunks]), last_stable_offset)

    def starting_at(self, log_start_offset: int) -> TransactionState:
        """The state with its last stable offset raised to ``log_start_offset`` if below it."""
        if self.last_stable_offset >= log_start_offset:
            return self
        return TransactionState._of(self._columns, log_start_offset, canonical=True)

    @classmethod
    def from_indexes(cls, indexed: Iterable[AbortedTxn] | TransactionState, snapshot_offset: int,
                     snapshot: SnapshotTransactions, segments: Sequence[_SeekableSegment],
                     log_end_offset: int) -> TransactionState:
        """The state of a partition whose writer kept Kafka's producer state: the aborted transactions of its
        ``.txnindex`` files (``indexed``: the entries, or the state :meth:`from_index_entries` made of them), and
        the transactions open in its producer snapshot taken at ``snapshot_offset`` (``snapshot``: as a load
        leaves them, :class:`~kafkalog.producer_state.snapshot.SnapshotTransactions`) carried to the log end
        through the transactional batches of ``segments`` from there (what a broker's load does with the snapshot:
        ``ProducerStateManager.truncateAndReload``, then the replay of ``rebuildProducerState``).  The aborts among
        those later batches are added to the indexed ones (one entry per producer and offsets, the indexed one
        kept): a writer that stopped without a clean shutdown may not have indexed them, and a broker's recovery
        would."""
        tail: list[ProducerBatch] = []
        for i, segment in enumerate(segments):
            following = segments[i + 1].base_offset if i + 1 < len(segments) else None
            if following is not None and following <= snapshot_offset:
                continue
            position = 0
            if segment.base_offset < snapshot_offset:
                found = segment.translate_offset(snapshot_offset)
                if found is None:
                    continue
                position = found.position
            tail.extend(scan_producer_batches(segment, True, position)[0])
        replayed = cls.from_batches(tail, log_end_offset, snapshot)
        indexed_state = indexed if isinstance(indexed, TransactionState) else cls(indexed)
        if not replayed.aborted_count:
            return cls._of(indexed_state._columns, replayed.last_stable_offset, canonical=True)
        # The indexed rows first: of two that share producer and offsets, the first is kept.
        return cls._of(_concatenated([indexed_state._columns, replayed._columns]), replayed.last_stable_offset)

    @classmethod
    def from_batches(cls, batches: Iterable[ProducerBatch], log_end_offset: int,
                     open_txns: SnapshotTransactions | None = None) -> TransactionState:
        """The state from a partition's producer batches in offset order (non-transactional ones are
        passed over): a transaction opens at its producer's first transactional data batch and ends at
        its marker; an ABORT marker makes it aborted, one still open bounds the last stable offset.  Each
        aborted transaction records the last stable offset at its marker as a broker's ``.txnindex`` entry
        does (Kafka: ``ProducerStateManager.lastStableOffset(CompletedTxn)``): the first offset of the
        earliest transaction of another producer still open, else the marker's offset + 1.

        ``open_txns`` gives the transactions open before the first batch, as a snapshot's load leaves them
        (:class:`~kafkalog.producer_state.snapshot.SnapshotTransactions`): a marker closes its producer's own
        (``current``), and a transaction no producer calls its own (an earlier entry of a producer id written
        twice) stays open, holding the last stable offset back, as in Kafka's ``ongoingTxns``."""
        ongoing = dict(open_txns.ongoing) if open_txns is not None else {}  # first offset -> producer id
        current = dict(open_txns.current) if open_txns is not None else {}  # producer id -> first offset
        columns: tuple[array[int], ...] = (array("q"), array("q"), array("q"), array("q"))
        producer_ids, first_offsets, last_offsets, last_stable_offsets = columns
        for batch in batches:
            if not batch.is_transactional:
                continue
            producer_id = batch.producer_id
            if not batch.is_control:
                if producer_id not in current:
                    current[producer_id] = batch.base_offset
                    ongoing[batch.base_offset] = producer_id
                continue
            first = current.pop(producer_id, None)
            if first is None:
                continue  # Kafka's appendEndTxnMarker: a marker of no open transaction completes none
            ongoing.pop(first, None)
            if batch.control is ControlRecordType.ABORT:
                producer_ids.append(producer_id)
                first_offsets.append(first)
                last_offsets.append(batch.last_offset)
                last_stable_offsets.append(min((offset for offset, owner in ongoing.items() if owner != producer_id),
                                               default=batch.last_offset + 1))
        last_stable = min(ongoing, default=log_end_offset)
        return cls._of(_Columns(*(np.array(column, dtype=np.int64) for column in columns)),
                       min(last_stable, log_end_offset))

    def between(self, start: int, end: int) -> TransactionState:
        """The state restricted to transactions that overlap ``[start, end)``: what a reader of that range
        needs (Kafka: ``collectAbortedTransactions(startOffset, upperBoundOffset)``)."""
        columns = self._columns
        keep = (columns.last_offset >= start) & (columns.first_offset < end)
        return TransactionState._of(_Columns(*(column[keep] for column in columns)), self.last_stable_offset,
                                    canonical=True)

    def is_aborted(self, producer_id: int, offset: int) -> bool:
        """Whether a transactional batch of ``producer_id`` at ``offset`` belongs to an aborted transaction."""
        return bool(self.aborted_mask(np.array([producer_id], np.int64), np.array([offset], np.int64))[0])

    def aborted_mask(self, producer_ids: npt.NDArray[np.int64], offsets: npt.NDArray[np.int64]
                     ) -> npt.NDArray[np.bool_]:
        """:meth:`is_aborted` of each ``(producer_ids[i], offsets[i])``, in one pass: the producer's rows by a
        binary search of the producer ids, then within them the last transaction that begins at or below the
        offset (a producer's transactions do not overlap), which must end at or past it."""
        columns = self._columns
        producer_ids = np.asarray(producer_ids, np.int64)
        offsets = np.asarray(offsets, np.int64)
        if not len(columns.producer_id):
            return np.zeros(len(offsets), np.bool_)
        low = np.searchsorted(columns.producer_id, producer_ids, "left")
        high = np.searchsorted(columns.producer_id, producer_ids, "right")
        # Within each query's rows [low, high), a binary search for the first row that begins past its offset.
        left, right = low.copy(), high.copy()
        last_row = len(columns.first_offset) - 1
        while True:
            searching = left < right
            if not searching.any():
                break
            middle = (left + right) // 2
            begins_at_or_below = searching & (columns.first_offset[np.minimum(middle, last_row)] <= offsets)
            left = np.where(begins_at_or_below, middle + 1, left)
            right = np.where(searching & ~begins_at_or_below, middle, right)
        found = left - 1
        result: npt.NDArray[np.bool_] = (found >= low) & (offsets <= columns.last_offset[np.clip(found, 0, last_row)])
        return result

    def hidden_batches(self, data: Any, rows: npt.NDArray[Any], origin: int = 0,
                       read_committed: bool = True) -> npt.NDArray[np.bool_]:
        """For scan ``rows`` whose bytes are in ``data`` (row positions minus ``origin`` index it): which
        batches a consumer does not return — control batches always, aborted ones when
        ``read_committed``."""
        hidden = (rows["magic"] == MAGIC_V2) & ((rows["attributes"] & CONTROL_FLAG_MASK) != 0)
        if read_committed and self.aborted_count:
            transactional = np.flatnonzero((rows["magic"] == MAGIC_V2)
                                           & ((rows["attributes"] & TRANSACTIONAL_FLAG_MASK) != 0))
            if len(transactional):
                producer_ids = np.array([_PRODUCER_ID.unpack_from(data, position - origin + PRODUCER_ID_OFFSET)[0]
                                         for position in rows["position"][transactional].tolist()], np.int64)
                hidden[transactional] |= self.aborted_mask(producer_ids, rows["base_offset"][transactional])
        result: npt.NDArray[np.bool_] = hidden
        return result


def _trusted_entries(segment: LogSegment) -> Iterator[npt.NDArray[Any]]:
    """The entries of a read-only segment's transaction index, checked as they come
    (:func:`~kafkalog.transaction_index.checked_entry_chunks`).

    Raises:
        CorruptIndexError: the index failed Kafka's sanity check when the log was opened, and is ignored.
    """
    index = segment.txn_index
    if index.file_ignored:
        raise CorruptIndexError(f"{index.file.absolute()} failed its sanity check when the log was opened")
    return checked_entry_chunks(index.entry_chunks(), index.entry_count(), segment.base_offset, segment.size(),
                                str(index.file.absolute()))


def read_snapshot_file_transactions(path: Path, size: int | None, current_time_ms: int,
                                    expiration_ms: int) -> SnapshotTransactions:
    """The transactions a local producer snapshot leaves open, as a load leaves them
    (:func:`~kafkalog.producer_state.snapshot.read_snapshot_transactions`); ``size`` is not needed for a file.

    Raises:
        CorruptSnapshotError: see :func:`~kafkalog.producer_state.snapshot.scan_snapshot`.
    """
    with open_snapshot_file(path) as (read, length):
        return read_snapshot_transactions(read, length, str(path), current_time_ms, expiration_ms)


def newest_snapshot_transactions(snapshots: Iterable[tuple[int, _F, int | None]],
                                 read: Callable[[_F, int | None, int, int], SnapshotTransactions],
                                 first_segment_offset: int | None, log_end_offset: int, where: object,
                                 current_time_ms: int, expiration_ms: int) -> tuple[int, SnapshotTransactions] | None:
    """The newest producer snapshot of a partition read in place that a replay can start from, and the
    transactions it leaves open (:class:`~kafkalog.producer_state.snapshot.SnapshotTransactions`, what a
    writable load of it leaves open: the one rule for both); ``None`` when there is none, or it does not read
    (a warning: the caller reads the batch headers instead, which need no snapshot).  The same for a local dir
    and one at a URL.

    ``snapshots`` are ``(offset, file, size)`` (``size`` as a listing gave it, or ``None``), and ``read`` reads
    the one chosen (:func:`read_snapshot_file_transactions` for a local file; the URL layer passes its own, so
    this layer never imports the one above it); a usable one is at
    or below the log end and not below the first segment's base offset (an older one speaks of batches gone;
    with no segment none is usable).  ``where`` names the partition in the warning.  Its expired producers are
    left out as a load leaves them out (``current_time_ms``, ``expiration_ms``), and of the others only the rows
    the transactions need are kept (:func:`~kafkalog.producer_state.snapshot.read_snapshot_transactions`).
    """
    if first_segment_offset is None:
        return None
    usable = [found for found in snapshots if first_segment_offset <= found[0] <= log_end_offset]
    if not usable:
        return None
    offset, file, size = max(usable, key=lambda found: found[0])
    try:
        return offset, read(file, size, current_time_ms, expiration_ms)
    except (KafkaLogError, OSError) as e:
        logger.warning("Reading the transactions of %s from its batch headers: its producer snapshot %s does not "
                       "read: %s", where, file, e)
        return None


@dataclass(frozen=True)
class ProducerBatch:
    """The producer fields of one v2 batch that has a producer id (idempotent or transactional), and
    for a control batch the type of its marker (``UNKNOWN`` when the marker does not parse)."""

    producer_id: int
    producer_epoch: int
    base_offset: int
    last_offset: int
    is_transactional: bool
    is_control: bool
    control: ControlRecordType | None = None


def producer_batches(segment: _HasLog, transactional_only: bool = False) -> list[ProducerBatch]:
    """The batches of ``segment`` that have a producer id, in order, from a header scan: only the
    producer fields of each v2 batch are read (a control batch is read whole, for its marker), so a
    segment of old formats, or with ``transactional_only`` one without transactions, costs the scan
    alone."""
    return scan_producer_batches(segment, transactional_only)[0]


def scan_producer_batches(segment: _HasLog, transactional_only: bool = False,
                          starting_position: int = 0) -> tuple[list[ProducerBatch], int, int | None]:
    """:func:`producer_batches` of the batches from ``starting_position`` (a batch boundary), the position
    just past the last whole batch scanned (where a later call resumes once the segment has grown), and
    the offset after that batch (None when there was none)."""
    all_rows = segment.log.scan(check_crc=False, stop_on_invalid=False, starting_position=starting_position).batches
    end, next_offset = starting_position, None
    if len(all_rows):
        end = int(all_rows[-1]["position"]) + int(all_rows[-1]["size"]) - segment.log.start
        next_offset = int(all_rows[-1]["last_offset"]) + 1
    rows = transactional_rows(all_rows) if transactional_only else all_rows[all_rows["magic"] == MAGIC_V2]
    found = []
    records, origin = segment.log, segment.log.start
    # The producer fields of every batch in one kernel call: a read a batch was most of a cleaning round's
    # producer walk over a log without producers.
    producer_ids, producer_epochs = records.producer_fields(rows["position"])
    for i in np.flatnonzero(producer_ids >= 0).tolist():
        row = rows[i]
        position, size, attributes = int(row["position"]), int(row["size"]), int(row["attributes"])
        producer_id, producer_epoch = int(producer_ids[i]), int(producer_epochs[i])
        control = None
        is_control = bool(attributes & CONTROL_FLAG_MASK)
        if is_control:
            try:
                control = DefaultRecordBatch(records.read_bytes(position - origin, size), 0, size).control_type
            except KafkaLogError:
                control = ControlRecordType.UNKNOWN
        found.append(ProducerBatch(producer_id, producer_epoch, int(row["base_offset"]), int(row["last_offset"]),
                                   bool(attributes & TRANSACTIONAL_FLAG_MASK), is_control, control))
    return found, end, next_offset


# ---------------------------------------------------------------------------------------------------
# The first unstable offset, kept up to date as the log grows


#: A run of transactional batches summed up as what it does to the open transactions: producer id ->
#: (whether a marker of that producer's closes the transaction open before the run, the first offset of
#: the transaction the run leaves open and that began in it, or None).  Applying it to the open
#: transactions ``{producer id: first offset}``: drop the producer when the flag is set, then open its
#: transaction at the offset unless one is open.  Runs compose, so a segment is summed up once and its
#: sum extended as it grows.
_Effect = dict[int, tuple[bool, int | None]]


def _effect_of(batches: Iterable[ProducerBatch], effect: _Effect | None = None) -> _Effect:
    """``effect`` (empty by default) followed by ``batches``, transactional ones in offset order."""
    out: _Effect = {} if effect is None else dict(effect)
    for batch in batches:
        if not batch.is_transactional:
            continue
        closes, first = out.get(batch.producer_id, (False, None))
        if batch.is_control:
            out[batch.producer_id] = (True, None)
        elif first is None:
            out[batch.producer_id] = (closes, batch.base_offset)
    return out


def _apply(effect: _Effect, open_txns: dict[int, int]) -> None:
    for producer_id, (closes, first) in effect.items():
        if closes:
            open_txns.pop(producer_id, None)
        if first is not None:
            open_txns.setdefault(producer_id, first)


class _SegmentScan:
    """What is known of one segment: how far it was scanned, the sum of its transactional batches there,
    and the offset after its last batch; valid while the segment object and its truncation count stay."""

    __slots__ = ("effect", "next_offset", "position", "segment", "truncations")

    def __init__(self, segment: LogSegment, truncations: int) -> None:
        self.segment = segment
        self.truncations = truncations
        self.position = 0
        self.effect: _Effect = {}
        self.next_offset = segment.base_offset

    def extend(self) -> None:
        found, self.position, next_offset = scan_producer_batches(self.segment, True, self.position)
        if next_offset is not None:
            self.next_offset = next_offset
        self.effect = _effect_of(found, self.effect)


class _LogScan:
    """The per-segment sums of one log's transactional batches."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.segments: dict[int, _SegmentScan] = {}

    def first_unstable_offset(self, log: SegmentedLog, upper_bound: int) -> int | None:
        with self.lock:
            fresh: dict[int, _SegmentScan] = {}
            open_txns: dict[int, int] = {}
            done = False
            for segment in log.log_segments():
                truncations = segment.log.truncations  # read before scanning: a truncation meanwhile rescans
                known = self.segments.get(segment.base_offset)
                if known is None or known.segment is not segment or known.truncations != truncations:
                    known = _SegmentScan(segment, truncations)
                if known.position < segment.log.size_in_bytes():
                    known.extend()
                fresh[segment.base_offset] = known
                if done:
                    continue
                if known.next_offset <= upper_bound:
                    _apply(known.effect, open_txns)
                else:
                    # The bound falls in this segment: its batches below the bound, one by one.
                    if segment.base_offset < upper_bound:
                        below = [b for b in scan_producer_batches(segment, True)[0] if b.base_offset < upper_bound]
                        _apply(_effect_of(below), open_txns)
                    done = True
            self.segments = fresh
            return min(open_txns.values(), default=None)


_scans: weakref.WeakKeyDictionary[SegmentedLog, _LogScan] = weakref.WeakKeyDictionary()
_scans_lock = threading.Lock()


def first_unstable_offset(log: SegmentedLog, upper_bound: int) -> int | None:
    """The first offset of the earliest transaction not ended below ``upper_bound``, or None (Kafka:
    ``ProducerStateManager.firstUnstableOffset``, the earlier of the first ongoing transaction and the
    first completed one whose marker is not yet below the high watermark: with the high watermark as
    ``upper_bound``, a marker at or past it does not end its transaction).

    Read from the log's transactional batch headers, as the rest of this module does.  Each segment is
    summed up once per log (a cache held as long as the log lives) and its sum extended as it grows; a
    segment replaced (cleaning) or truncated is read again, and the segment holding ``upper_bound`` is
    read batch by batch.  A transaction whose data batches are all gone from the log (retention deleted
    the segments that held them) is not seen, where Kafka's producer state still knows it open.
    """
    with _scans_lock:
        scan = _scans.get(log)
        if scan is None:
            scan = _scans[log] = _LogScan()
    return scan.first_unstable_offset(log, upper_bound)

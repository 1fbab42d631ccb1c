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

- a log open for writing keeps Kafka's producer state: the aborted transactions are its ``.txnindex`` entries
  (``collectAbortedTransactions``) and the last stable offset is the log's;
- a log read in place whose writer kept producer state, known by its producer snapshots (a broker since 0.11,
  kafkalog since it ported them), has its aborts in its ``.txnindex`` files too; its open transactions are
  those of its latest snapshot, brought up to the log end by the batches after it
  (:meth:`TransactionState.from_indexes`);
- a log without snapshots (a broker before 0.11, whose formats have no transactions, or kafkalog before it kept
  producer state, whose aborts have no index entries) is read from its batch headers
  (:meth:`TransactionState.from_batches`).  Opening such a log for writing gives it both
  (:func:`~kafkalog.producer_state.log_updates.complete_txn_indexes`,
  :func:`~kafkalog.producer_state.log_updates.rebuild_producer_state`).

The scan kernel finds the transactional batches; only those are read further, so a log without transactions
costs one header scan.
"""

from __future__ import annotations

import bisect
import logging
import struct
import threading
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import numpy.typing as npt

from ._common import CONTROL_FLAG_MASK, MAGIC_V2, PRODUCER_ID_OFFSET, TRANSACTIONAL_FLAG_MASK
from .errors import KafkaLogError
from .record import ControlRecordType
from .record.batch import DefaultRecordBatch
from .transaction_index import AbortedTxn

if TYPE_CHECKING:
    from pathlib import Path

    from .file_message_set import FileMessageSet
    from .log import Log
    from .producer_state import SnapshotTransactions
    from .segment import LogSegment
    from .storage.location import StorageLocation


class _HasLog(Protocol):
    """A segment as the producer scans read it: its ``.log`` only (a :class:`~kafkalog.segment.LogSegment`,
    or a segment read by range, :class:`~kafkalog.storage.partition.UrlSegment`)."""

    @property
    def log(self) -> FileMessageSet: ...


class _SeekableSegment(_HasLog, Protocol):
    """A segment whose batches can be read from an offset on (a :class:`~kafkalog.segment.LogSegment` or a
    :class:`~kafkalog.storage.partition.UrlSegment`)."""

    @property
    def base_offset(self) -> int: ...
    def translate_offset(self, offset: int, starting_file_position: int = 0) -> Any: ...


logger = logging.getLogger(__name__)

__all__ = ["ProducerBatch", "TransactionState", "first_unstable_offset", "newest_snapshot_transactions",
           "producer_batches", "scan_producer_batches", "transactional_rows"]

_PRODUCER_ID = struct.Struct(">q")


def _by_first_offset(txn: AbortedTxn) -> tuple[int, int, int]:
    return txn.first_offset, txn.producer_id, txn.last_offset


def transactional_rows(rows: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """The scan rows of v2 batches with the transactional bit set (data and control batches)."""
    mask = (rows["magic"] == MAGIC_V2) & ((rows["attributes"] & TRANSACTIONAL_FLAG_MASK) != 0)
    found: npt.NDArray[Any] = rows[mask]
    return found


@dataclass(frozen=True)
class TransactionState:
    """The aborted transactions of a partition and its last stable offset.

    ``aborted`` is sorted by first offset.  The state is small (one entry per aborted transaction) and
    pickles, so a planner reads it once and hands it to every reader of the partition.
    """

    aborted: tuple[AbortedTxn, ...] = ()
    last_stable_offset: int = 0
    _by_producer: dict[int, tuple[list[int], list[int]]] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        for txn in self.aborted:
            firsts, lasts = self._by_producer.setdefault(txn.producer_id, ([], []))
            firsts.append(txn.first_offset)
            lasts.append(txn.last_offset)

    @classmethod
    def of(cls, log: Log) -> TransactionState:
        """The state of ``log`` (see the module docstring): from its producer state when it is open for writing;
        when it is read-only, what a reader finds in place (:meth:`read_in_place`, read once per log:
        :meth:`Log.in_place_transactions <kafkalog.log_producer_state.LogProducerState.in_place_transactions>`).
        """
        if not log.read_only:
            aborted = log.collect_aborted_transactions(log.log_start_offset, log.log_end_offset)
            return cls(tuple(sorted(aborted, key=_by_first_offset)), log.last_stable_offset)
        return log.in_place_transactions()

    @classmethod
    def read_in_place(cls, log: Log) -> TransactionState:
        """The state of a log read in place, which keeps no producer state: from its indexes and newest snapshot
        when it has one (:meth:`from_indexes`), else from its batch headers (:meth:`from_batches`); the last
        stable offset is never below the log start offset (Kafka: ``maybeIncrementFirstUnstableOffset``), where a
        transaction left open in a deleted segment would put it."""
        from .producer_state import list_snapshot_files

        segments = log.log_segments()
        snapshot = newest_snapshot_transactions(
            [(found.offset, found.file, None) for found in list_snapshot_files(log.dir)],
            segments[0].base_offset if segments else None, log.log_end_offset, log.dir, log.time.milliseconds(),
            log.producer_state_manager.producer_state_manager_config.producer_id_expiration_ms)
        if snapshot is not None:
            offset, open_txns = snapshot
            indexed = [txn for segment in segments for txn in segment.txn_index.all_aborted_txns()]
            state = cls.from_indexes(indexed, offset, open_txns, segments, log.log_end_offset)
        else:
            batches = (batch for segment in segments for batch in producer_batches(segment, transactional_only=True))
            state = cls.from_batches(batches, log.log_end_offset)
        return state.starting_at(log.log_start_offset)

    def starting_at(self, log_start_offset: int) -> TransactionState:
        """The state with its last stable offset raised to ``log_start_offset`` if below it."""
        if self.last_stable_offset >= log_start_offset:
            return self
        return TransactionState(self.aborted, log_start_offset)

    @classmethod
    def from_indexes(cls, indexed: Iterable[AbortedTxn], snapshot_offset: int,
                     snapshot: SnapshotTransactions, segments: Sequence[_SeekableSegment],
                     log_end_offset: int) -> TransactionState:
        """The state of a partition whose writer kept Kafka's producer state: the aborted transactions of its
        ``.txnindex`` files (``indexed``), and the transactions open in its producer snapshot taken at
        ``snapshot_offset`` (``snapshot``: as a load leaves them,
        :class:`~kafkalog.producer_state.snapshot.SnapshotTransactions`) carried to the log end through the
        transactional batches of ``segments`` from there (what a broker's load does with the snapshot:
        ``ProducerStateManager.truncateAndReload``, then the replay of ``rebuildProducerState``).  The aborts
        among those later batches are added to the indexed ones (one entry per producer and offsets): a writer
        that stopped without a clean shutdown may not have indexed them, and a broker's recovery would."""
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
        by_key = {(txn.producer_id, txn.first_offset, txn.last_offset): txn for txn in replayed.aborted}
        by_key.update({(txn.producer_id, txn.first_offset, txn.last_offset): txn for txn in indexed})
        return cls(tuple(sorted(by_key.values(), key=_by_first_offset)), replayed.last_stable_offset)

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
        aborted: list[AbortedTxn] = []
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
                others = (offset for offset, owner in ongoing.items() if owner != producer_id)
                aborted.append(AbortedTxn(producer_id, first, batch.last_offset,
                                          min(others, default=batch.last_offset + 1)))
        last_stable = min(ongoing, default=log_end_offset)
        return cls(tuple(sorted(aborted, key=_by_first_offset)), min(last_stable, log_end_offset))

    def between(self, start: int, end: int) -> TransactionState:
        """The state restricted to transactions that overlap ``[start, end)``: what a reader of that range
        needs (Kafka: ``collectAbortedTransactions(startOffset, upperBoundOffset)``)."""
        return TransactionState(tuple(t for t in self.aborted if t.last_offset >= start and t.first_offset < end),
                                self.last_stable_offset)

    def is_aborted(self, producer_id: int, offset: int) -> bool:
        """Whether a transactional batch of ``producer_id`` at ``offset`` belongs to an aborted transaction."""
        found = self._by_producer.get(producer_id)
        if found is None:
            return False
        firsts, lasts = found
        i = bisect.bisect_right(firsts, offset) - 1
        return i >= 0 and offset <= lasts[i]

    def hidden_batches(self, data: Any, rows: npt.NDArray[Any], origin: int = 0,
                       read_committed: bool = True) -> npt.NDArray[np.bool_]:
        """For scan ``rows`` whose bytes are in ``data`` (row positions minus ``origin`` index it): which
        batches a consumer does not return — control batches always, aborted ones when
        ``read_committed``."""
        hidden = (rows["magic"] == MAGIC_V2) & ((rows["attributes"] & CONTROL_FLAG_MASK) != 0)
        if read_committed and self.aborted:
            for i in np.flatnonzero((rows["magic"] == MAGIC_V2)
                                    & ((rows["attributes"] & TRANSACTIONAL_FLAG_MASK) != 0)).tolist():
                at = int(rows["position"][i]) - origin + PRODUCER_ID_OFFSET
                (producer_id,) = _PRODUCER_ID.unpack_from(data, at)
                if self.is_aborted(producer_id, int(rows["base_offset"][i])):
                    hidden[i] = True
        result: npt.NDArray[np.bool_] = hidden
        return result


def newest_snapshot_transactions(snapshots: Iterable[tuple[int, Path | StorageLocation, int | None]],
                                 first_segment_offset: int | None, log_end_offset: int, where: object,
                                 current_time_ms: int, expiration_ms: int) -> tuple[int, SnapshotTransactions] | None:
    """The newest producer snapshot of a partition read in place that a replay can start from, and the
    transactions it leaves open (:class:`~kafkalog.producer_state.snapshot.SnapshotTransactions`, what a
    writable load of it leaves open: the one rule for both); ``None`` when there is none, or it does not read
    (a warning: the caller reads the batch headers instead, which need no snapshot).  The same for a local dir
    and one at a URL.

    ``snapshots`` are ``(offset, file, size)`` (``size`` as a listing gave it, or ``None``); a usable one is at
    or below the log end and not below the first segment's base offset (an older one speaks of batches gone;
    with no segment none is usable).  ``where`` names the partition in the warning.  Its expired producers are
    left out as a load leaves them out (``current_time_ms``, ``expiration_ms``), and of the others only the rows
    the transactions need are kept (:func:`~kafkalog.producer_state.snapshot.read_snapshot_transactions`).
    """
    from .storage.files import read_producer_snapshot_transactions

    if first_segment_offset is None:
        return None
    usable = [found for found in snapshots if first_segment_offset <= found[0] <= log_end_offset]
    if not usable:
        return None
    offset, file, size = max(usable, key=lambda found: found[0])
    try:
        return offset, read_producer_snapshot_transactions(file, size, current_time_ms, expiration_ms)
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

    def first_unstable_offset(self, log: Log, upper_bound: int) -> int | None:
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


_scans: weakref.WeakKeyDictionary[Log, _LogScan] = weakref.WeakKeyDictionary()
_scans_lock = threading.Lock()


def first_unstable_offset(log: Log, upper_bound: int) -> int | None:
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

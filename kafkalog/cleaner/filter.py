"""The cleaner's record filter: what a cleaning keeps of each batch and record.

Part of the port of ``kafka/log/LogCleaner.scala`` (3.8.0): the ``logCleanerFilter`` of ``Cleaner.cleanInto``,
the :class:`~kafkalog.record.filter.RecordFilter` that :func:`~kafkalog.record.filter.filter_to` (Kafka's
``MemoryRecords.filterTo``) asks.  :mod:`kafkalog.cleaner.cleaner` uses it; the package re-exports it.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import numpy.typing as npt

from .. import _impl
from .._common import (
    BASE_TIMESTAMP_OFFSET,
    CONTROL_FLAG_MASK,
    DELETE_HORIZON_FLAG_MASK,
    FILTER_EMPTY_TXN_MARKER,
    FILTER_RETAIN_EMPTY,
    MAGIC_V2,
    NO_PRODUCER_ID,
    TRANSACTIONAL_FLAG_MASK,
    ControlRecordType,
    RecordFate,
)
from ..producer_state import LastRecord
from ..record import RecordBatch, RecordColumns
from ..record.filter import (
    BatchRetention,
    BatchRetentionResult,
    ColumnRun,
    DecodedBatch,
    RecordFilter,
    RunFates,
    records_of,
)
from .offset_map import SkimpyOffsetMap
from .stats import CleanerStats

if TYPE_CHECKING:
    from .cleaning_round import CleaningRound
    from .offset_map import OffsetMap
    from .transactions import CleanedTransactionMetadata

__all__ = ["LogCleanerFilter", "RecordDecisions", "read_transactions"]

_PAST_MAP, _LATEST, _NO_KEY = int(RecordFate.PAST_MAP), int(RecordFate.LATEST), int(RecordFate.NO_KEY)


class _ChunkKeep:
    """:meth:`~kafkalog.cleaner.cleaner.Cleaner.should_retain_records` for every record of one set of columns at once (a
    run of batches decoded together), both ways a batch may go: its latest tombstones kept or not.  A piece then
    takes a slice of one of the two masks, where a few numpy operations a batch were most of the filtering's
    time."""

    __slots__ = ("_keep_values", "columns", "fates", "keep_deletes", "no_key_before")

    def __init__(self, columns: Any, fates: npt.NDArray[np.int8]) -> None:
        self.columns = columns
        self.fates = fates
        #: A tombstone kept (its delete horizon not passed): PAST_MAP and LATEST, the fates above SUPERSEDED
        #: and NO_KEY.
        self.keep_deletes: npt.NDArray[np.bool_] = fates >= _LATEST
        self._keep_values: npt.NDArray[np.bool_] | None = None
        no_key = fates == _NO_KEY
        #: Keyless records before each row (None when there are none, as in any log a producer wrote).
        self.no_key_before: list[int] | None = (np.concatenate(([0], np.cumsum(no_key))).tolist()
                                                if np.count_nonzero(no_key) else None)

    @property
    def keep_values(self) -> npt.NDArray[np.bool_]:
        """A tombstone dropped (its delete horizon passed): made when a batch first needs it."""
        if self._keep_values is None:
            fates = self.fates
            self._keep_values = (fates == _PAST_MAP) | ((fates == _LATEST) & (self.columns.records["value_len"] >= 0))
        return self._keep_values

    def of(self, piece: DecodedBatch, retain_deletes: bool, stats: CleanerStats) -> npt.NDArray[np.bool_]:
        if self.no_key_before is not None:
            invalid = self.no_key_before[piece.hi] - self.no_key_before[piece.lo]
            if invalid:
                stats.invalid_message(invalid)
        return (self.keep_deletes if retain_deletes else self.keep_values)[piece.lo:piece.hi]


class RecordDecisions(Protocol):
    """What the filter asks of its cleaner about records: the per-record steps of Kafka's
    ``Cleaner.shouldRetainRecord``, which Kafka's filter, an anonymous class inside ``Cleaner.cleanInto``, calls on
    the Cleaner that encloses it.  :class:`~kafkalog.cleaner.cleaner.Cleaner` provides them; the filter is handed
    its cleaner rather than importing it, so the cleaning imports the filter and not the other way round."""

    def record_fate(self, offset_map: OffsetMap, offset: int, key: bytes | None, /) -> RecordFate:
        """The fate of one record in the offset map."""
        ...

    def retain_deletes(self, batch: RecordBatch, retain_deletes_for_legacy_records: bool, current_time: int,
                       /) -> bool:
        """Whether the latest tombstones of ``batch``'s keys are kept."""
        ...

    def should_retain_records(self, retain_deletes_for_legacy_records: bool, piece: DecodedBatch,
                              fates: npt.NDArray[np.int8], stats: CleanerStats, current_time: int,
                              /) -> npt.NDArray[np.bool_]:
        """Which records of ``piece`` the cleaning keeps, given their fates."""
        ...


class LogCleanerFilter(RecordFilter):
    """The cleaner's :class:`~kafkalog.record.filter.RecordFilter` (Kafka: the ``logCleanerFilter`` of
    ``Cleaner.cleanInto``): a batch's fate from the transactions and the producers' last batches
    (``last_records_of_active_producers``, by producer id, as the log's producer state gave them to the group
    being cleaned), each record's from the offset map
    (:meth:`~kafkalog.cleaner.cleaner.Cleaner.should_retain_records`)."""

    def __init__(self, cleaner: RecordDecisions, cleaning_round: CleaningRound,
                 retain_legacy_deletes_and_txn_markers: bool, delete_retention_ms: int,
                 last_records_of_active_producers: Mapping[int, LastRecord]) -> None:
        super().__init__(cleaning_round.current_time, delete_retention_ms)
        self.cleaner = cleaner
        self.cleaning_round = cleaning_round
        self.retain_legacy_deletes_and_txn_markers = retain_legacy_deletes_and_txn_markers
        self.last_records_of_active_producers = last_records_of_active_producers
        #: Whether the current batch's records all go (an aborted transaction's, or a marker past its horizon):
        #: the batch may still be kept empty for its producer's state.
        self.discard_batch_records = False
        # The keep masks of the last columns asked about: a run of batches shares one set, one kernel call.
        self._chunk: _ChunkKeep | None = None

    def check_batch_retention(self, batch: RecordBatch) -> BatchRetentionResult:
        """Kafka: ``checkBatchRetention``: the batch's fate, and whether it is a marker that may go once its
        horizon passes."""
        cleaning_round = self.cleaning_round
        transaction_metadata = cleaning_round.transaction_metadata
        if batch.is_control:
            can_discard = transaction_metadata.on_control_batch_read(batch)
            horizon = batch.delete_horizon_ms
            self.discard_batch_records = can_discard and horizon is not None and horizon <= self.current_time
        else:
            can_discard = transaction_metadata.on_batch_read(batch)
            self.discard_batch_records = can_discard
        last_of_producer = False
        if batch.has_producer_id:
            last = self.last_records_of_active_producers.get(batch.producer_id)
            if last is not None:
                # Its last data batch holds its last sequence; with only a marker left, the marker holds its
                # epoch, which fencing needs.
                last_of_producer = (batch.last_offset == last.last_data_offset if last.last_data_offset is not None
                                    else batch.is_control and batch.producer_epoch == last.producer_epoch)
        if batch.has_producer_id and last_of_producer:
            retention = BatchRetention.RETAIN_EMPTY
        elif batch.magic >= MAGIC_V2 and batch.next_offset == cleaning_round.upper_bound_offset_of_cleaning_round:
            # Kafka after 3.8 (KAFKA-17076): keep the round's last batch, emptied if need be, so the log end
            # the round reached stays visible and the next round starts where this one stopped.  Only a v2
            # batch can be kept empty; a legacy entry is dropped as before.
            retention = BatchRetention.RETAIN_EMPTY
        elif self.discard_batch_records:
            retention = BatchRetention.DELETE
        else:
            retention = BatchRetention.DELETE_EMPTY
        return BatchRetentionResult(retention, can_discard and batch.is_control)

    def should_retain_records(self, piece: DecodedBatch) -> npt.NDArray[np.bool_]:
        """Kafka's ``logCleanerFilter.shouldRetainRecord``: nothing of a discarded batch, every record of a
        control batch, else what :meth:`~kafkalog.cleaner.cleaner.Cleaner.should_retain_records` says."""
        count = piece.hi - piece.lo
        if self.discard_batch_records:
            return np.zeros(count, dtype=bool)
        if piece.batch.is_control:
            return np.ones(count, dtype=bool)
        offset_map = self.cleaning_round.offset_map
        columns = piece.columns
        if isinstance(offset_map, SkimpyOffsetMap):
            chunk = self._chunk_keep(offset_map, columns)
            retain_deletes = self.cleaner.retain_deletes(piece.batch, self.retain_legacy_deletes_and_txn_markers,
                                                    self.current_time)
            return chunk.of(piece, retain_deletes, self.cleaning_round.stats)
        fates = np.array([self.cleaner.record_fate(offset_map, r.offset, r.key)
                          for r in records_of(columns, piece.lo, piece.hi)], dtype=np.int8)
        return self.cleaner.should_retain_records(self.retain_legacy_deletes_and_txn_markers, piece, fates,
                                             self.cleaning_round.stats, self.current_time)

    def _chunk_keep(self, offset_map: SkimpyOffsetMap, columns: Any) -> _ChunkKeep:
        """The keep masks of ``columns``, from one map kernel call for the set."""
        chunk = self._chunk
        if chunk is None or chunk.columns is not columns:
            chunk = self._chunk = _ChunkKeep(columns, offset_map.latest_codes(columns.data, columns.records))
        return chunk

    def batch_fates(self, run: ColumnRun) -> RunFates | None:
        """:meth:`check_batch_retention` then :meth:`should_retain_records` of every batch of a run of whole
        kernel batches (v2, uncompressed, CreateTime; data or control, transactional or not), as arrays, when the
        map is a :class:`SkimpyOffsetMap`; ``None`` otherwise.

        Only the transactional and control batches take a Python step each, for the transactions' state
        (Kafka's ``onBatchRead`` / ``onControlBatchRead``, in the batches' order); a plain data batch's
        ``onBatchRead`` only moves the aborted transactions that began up to it to the ongoing ones, and each
        step moves those up to its own batch first, so one move up to the run's last batch, after them, leaves
        the state as batch by batch does.  A batch is ``RETAIN_EMPTY`` when it is its producer's last (its last
        data batch, or with only a marker left the marker of its epoch) or ends the round (KAFKA-17076); else
        ``DELETE`` when its records are discarded (an aborted transaction's, or a marker that may go and whose
        delete horizon has passed); else ``DELETE_EMPTY``.  A discarded batch keeps no record, a control batch
        every record, a data batch the latest record of each key, its tombstones only inside its delete horizon
        (none yet, or not passed); keyless records of a data batch are dropped and counted as invalid."""
        columns = run.columns
        rows, starts = columns.batches, columns.starts
        offset_map = self.cleaning_round.offset_map
        if rows is None or starts is None or not isinstance(offset_map, SkimpyOffsetMap):
            return None
        cleaning_round = self.cleaning_round
        transaction_metadata = cleaning_round.transaction_metadata
        current_time = self.current_time
        attributes = rows["attributes"]
        last_offsets = rows["last_offset"]
        positions = np.ascontiguousarray(rows["position"])
        nb = len(rows)
        fates = np.zeros(nb, dtype=np.uint8)
        fates[last_offsets + 1 == cleaning_round.upper_bound_offset_of_cleaning_round] = FILTER_RETAIN_EMPTY
        control = (attributes & CONTROL_FLAG_MASK) != 0
        buffer = run.records.buffer  # the batches' headers (the columns' data of uncompressed batches)
        producer_ids, epochs = _impl.core.producer_fields(buffer, positions)
        with_horizon = ((attributes & DELETE_HORIZON_FLAG_MASK) != 0).nonzero()[0]
        horizons = {int(b): _BASE_TIMESTAMP.unpack_from(buffer, int(positions[b]) + BASE_TIMESTAMP_OFFSET)[0]
                    for b in with_horizon.tolist()}
        special, said = read_transactions(columns, producer_ids, transaction_metadata)
        if not special and not horizons and not np.count_nonzero(producer_ids > NO_PRODUCER_ID):
            # The commonest run (plain data batches: none transactional or control, none with a delete horizon,
            # none a producer's last): every batch keeps the map's answer, its tombstones included, and none is
            # discarded, so the masks below would all be the map's own.
            self.discard_batch_records = False
            chunk = self._chunk_keep(offset_map, columns)
            if chunk.no_key_before is not None:
                invalid = chunk.no_key_before[int(starts[-1])] - chunk.no_key_before[int(starts[0])]
                if invalid:
                    cleaning_round.stats.invalid_message(invalid)
            return RunFates(fates, np.zeros(nb, dtype=bool), chunk.keep_deletes.copy())
        can_discard = np.zeros(nb, dtype=bool)
        can_discard[special] = said
        discard = can_discard & ~control  # an aborted transaction's batches
        marker_for_empty_txn = can_discard & control
        fates[marker_for_empty_txn] |= FILTER_EMPTY_TXN_MARKER
        for b, horizon in horizons.items():
            # A marker that may go is discarded once its own delete horizon has passed.
            if marker_for_empty_txn[b] and horizon <= current_time:
                discard[b] = True
        self.discard_batch_records = bool(discard[-1])
        last_records = self.last_records_of_active_producers
        for b in (producer_ids > NO_PRODUCER_ID).nonzero()[0].tolist():
            last_record = last_records.get(int(producer_ids[b]))
            if last_record is None:
                continue
            # Its last data batch holds its last sequence; with only a marker left, the marker holds its epoch,
            # which fencing needs.
            if (int(last_offsets[b]) == last_record.last_data_offset if last_record.last_data_offset is not None
                    else bool(control[b]) and int(epochs[b]) == last_record.producer_epoch):
                fates[b] |= FILTER_RETAIN_EMPTY
        deleted = discard & ((fates & FILTER_RETAIN_EMPTY) == 0)
        # Each batch's records: none (discarded), all (a control batch), or the map's answer with the latest
        # tombstones kept (inside the batch's delete horizon) or not.
        chunk = self._chunk_keep(offset_map, columns)
        drop_deletes = np.zeros(nb, dtype=bool)
        for b, horizon in horizons.items():
            drop_deletes[b] = not current_time < horizon
        data_batches = ~(discard | control)
        counts = np.diff(starts)
        keep = np.repeat(data_batches & ~drop_deletes, counts) & chunk.keep_deletes
        if np.count_nonzero(drop_deletes & data_batches):
            keep |= np.repeat(data_batches & drop_deletes, counts) & chunk.keep_values
        keep |= np.repeat(control & ~discard, counts)
        if chunk.no_key_before is not None:
            no_key = np.asarray(chunk.no_key_before, dtype=np.int64)
            invalid = int(np.add.reduce((no_key[starts[1:]] - no_key[starts[:-1]])[data_batches]))
            if invalid:
                cleaning_round.stats.invalid_message(invalid)
        return RunFates(fates, deleted, keep)


_BASE_TIMESTAMP = struct.Struct(">q")


_CONTROL_KEY = struct.Struct(">hh")


def read_transactions(columns: RecordColumns, producer_ids: npt.NDArray[np.int64],
                      transaction_metadata: CleanedTransactionMetadata) -> tuple[list[int], list[bool]]:
    """Tell ``transaction_metadata`` of the batches of ``columns`` (whole v2 batches read together), in order, as
    a pass over them batch by batch does (Kafka: ``onBatchRead`` / ``onControlBatchRead``): a step for each
    transactional or control batch, then one move of the aborted transactions up to the last batch, which is
    all a plain data batch's step does (each step moves those up to its own batch first, so the state ends the
    same).  Returns the transactional and control batches (their indexes) and what each step said: for a
    control batch whether its marker may be removed, for a data batch whether it is an aborted transaction's.
    ``producer_ids``: the batches' (from their headers)."""
    rows, starts = columns.batches, columns.starts
    assert rows is not None and starts is not None
    attributes = rows["attributes"]
    last_offsets = rows["last_offset"]
    special = ((attributes & (CONTROL_FLAG_MASK | TRANSACTIONAL_FLAG_MASK)) != 0).nonzero()[0]
    said: list[bool] = []
    if len(special):
        controls = ((attributes[special] & CONTROL_FLAG_MASK) != 0).tolist()
        firsts = starts[special]
        has_record = (starts[special + 1] > firsts).tolist()
        first_rows = columns.records[np.minimum(firsts, max(len(columns.records) - 1, 0))] if len(columns.records) \
            else None
        key_pos = [] if first_rows is None else first_rows["key_pos"].tolist()
        key_len = [] if first_rows is None else first_rows["key_len"].tolist()
        data = columns.data
        for i, (last, producer_id, is_control) in enumerate(zip(
                last_offsets[special].tolist(), producer_ids[special].tolist(), controls, strict=True)):
            if is_control:
                # The type in the first record's key (UNKNOWN with no record or no control key there, as
                # ControlRecordType.parse's error is read by Kafka's onControlBatchRead).
                control_type = ControlRecordType.UNKNOWN
                if has_record[i] and key_len[i] >= _CONTROL_KEY.size:
                    version, type_id = _CONTROL_KEY.unpack_from(data, key_pos[i])
                    if version >= 0:
                        control_type = _CONTROL_TYPES.get(type_id, ControlRecordType.UNKNOWN)
                said.append(transaction_metadata.on_control_read(last, producer_id, control_type))
            else:
                said.append(transaction_metadata.on_data_read(last, True, producer_id))
    transaction_metadata.on_data_batches_read(int(np.maximum.reduce(last_offsets)))
    return special.tolist(), said


_CONTROL_TYPES = {int(t): t for t in ControlRecordType if t is not ControlRecordType.UNKNOWN}

"""How the log feeds its producer state: on append, on load and truncation.

Port of the producer-state code of ``core/src/main/scala/kafka/log/UnifiedLog.scala`` (Apache Kafka, tag
3.8.0): the class's ``analyzeAndValidateProducerState`` and ``batchMissingRequiredVerification``, the
companion object's ``loadProducersFromRecords``, ``updateProducers``, ``rebuildProducerState`` and
``deleteProducerSnapshots``.  The append path (:class:`~kafkalog.log.unified_log.Log`) and
the loader (:mod:`kafkalog.log.loader`) both call these, so the per-batch loop is written once.

Only v2 batches with a producer id reach the manager (``batch.hasProducerId``); they are read through
:func:`~kafkalog.producer_state.producer_batches.producer_batches`.  A segment being recovered feeds the
manager itself (:meth:`LogSegment.recover <kafkalog.segment.LogSegment.recover>`, Kafka's
``LogSegment.updateProducerState``): these functions sit above the segment, which never calls them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from .._common import MAGIC_V2
from ..append_origin import AppendOrigin
from ..errors import InvalidTxnStateError, KafkaLogError, KafkaStorageError
from ..fetch import LogOffsetMetadata
from ..file_message_set import FileMessageSet
from ..producer_state.append_info import ProducerAppendInfo
from ..producer_state.entry import BatchMetadata, CompletedTxn, VerificationGuard
from ..producer_state.manager import ProducerStateManager
from ..producer_state.producer_batches import producer_batches
from ..producer_state.snapshot import SnapshotFile
from ..record import ControlRecordType, MemoryRecords
from ..record.batch import RecordBatch
from ..scheduler import Scheduler, Time
from ..transaction_index import AbortedTxn

if TYPE_CHECKING:
    from ..log_dir_failure_channel import LogDirFailureChannel
    from ..segment import LogSegment
    from .pending_deletions import PendingDeletions
    from .segments import LogSegments

__all__ = [
    "ProducerStateUpdate",
    "analyze_and_validate_producer_state",
    "complete_txn",
    "complete_txn_index",
    "complete_txn_indexes",
    "delete_producer_snapshots",
    "load_producers_from_records",
    "rebuild_producer_state",
    "take_snapshot_if_possible",
    "update_producers",
]

logger = logging.getLogger(__name__)


def update_producers(producer_state_manager: ProducerStateManager, batch: RecordBatch,
                     producers: dict[int, ProducerAppendInfo], first_offset_metadata: LogOffsetMetadata | None,
                     origin: AppendOrigin) -> CompletedTxn | None:
    """Check ``batch`` against its producer's state so far in this append, and return the transaction it
    completes, if any (Kafka: ``UnifiedLog.updateProducers``).  ``producers`` collects one
    :class:`~kafkalog.producer_state.append_info.ProducerAppendInfo` per producer id; the verification entry of
    a transactional batch's producer is dropped (its transaction has a first offset now, or is over).

    Raises:
        OutOfOrderSequenceError, InvalidProducerEpochError, InvalidTxnStateError,
        TransactionCoordinatorFencedError: as :class:`~kafkalog.producer_state.append_info.ProducerAppendInfo`.
    """
    producer_id = batch.producer_id
    append_info = producers.get(producer_id)
    if append_info is None:
        append_info = producer_state_manager.prepare_update(producer_id, origin)
        producers[producer_id] = append_info
    completed_txn = append_info.append(batch, first_offset_metadata)
    if batch.is_transactional:
        producer_state_manager.clear_verification_state_entry(producer_id)
    return completed_txn


class ProducerStateUpdate:
    """What :func:`analyze_and_validate_producer_state` found: the producers to update, the transactions the
    append completes, and the retained batch the append duplicates (``None`` when it is new)."""

    __slots__ = ("completed_txns", "duplicate", "updated_producers")

    def __init__(self, updated_producers: dict[int, ProducerAppendInfo], completed_txns: list[CompletedTxn],
                 duplicate: BatchMetadata | None) -> None:
        self.updated_producers = updated_producers
        self.completed_txns = completed_txns
        self.duplicate = duplicate

    def apply(self, producer_state_manager: ProducerStateManager, segment: LogSegment) -> None:
        """Fold the append in once it is written (Kafka: the producer-state steps of ``UnifiedLog.append`` after
        ``localLog.append``): each producer updated, then each completed transaction indexed in ``segment`` (the
        one appended to) with the last stable offset it leaves, then marked complete."""
        for append_info in self.updated_producers.values():
            producer_state_manager.update(append_info)
        for completed_txn in self.completed_txns:
            complete_txn(producer_state_manager, completed_txn, segment)


def complete_txn(producer_state_manager: ProducerStateManager, completed_txn: CompletedTxn,
                 segment: LogSegment | None) -> None:
    """Index a transaction a marker completed, with the last stable offset it leaves, in ``segment``'s
    transaction index, then mark it complete (Kafka: ``lastStableOffset``, ``LogSegment.updateTxnIndex``,
    ``completeTxn``); with no segment (a load replaying batches, as Kafka's ``loadProducersFromRecords``) only
    the producer state changes."""
    last_stable_offset = producer_state_manager.last_stable_offset(completed_txn)
    if segment is not None:
        segment.update_txn_index(completed_txn, last_stable_offset)
    producer_state_manager.complete_txn(completed_txn)


def _batch_missing_required_verification(producer_state_manager: ProducerStateManager, batch: RecordBatch,
                                         request_verification_guard: VerificationGuard) -> bool:
    """Kafka: ``UnifiedLog.batchMissingRequiredVerification``."""
    if not producer_state_manager.producer_state_manager_config.transaction_verification_enabled \
            or batch.is_control:
        return False
    entry = producer_state_manager.verification_state_entry(batch.producer_id)
    guard = entry.verification_guard if entry is not None else VerificationGuard.SENTINEL
    return not guard.verify(request_verification_guard)


def has_ongoing_transaction(producer_state_manager: ProducerStateManager, producer_id: int) -> bool:
    """Whether the producer has a transaction open (Kafka: ``UnifiedLog.hasOngoingTransaction``)."""
    entry = producer_state_manager.active_producers().get(producer_id)
    return entry is not None and entry.current_txn_first_offset is not None


def analyze_and_validate_producer_state(producer_state_manager: ProducerStateManager,
                                        append_offset_metadata: LogOffsetMetadata, batches: Iterable[RecordBatch],
                                        origin: AppendOrigin,
                                        request_verification_guard: VerificationGuard = VerificationGuard.SENTINEL,
                                        ) -> ProducerStateUpdate:
    """Check the batches of an append (offsets assigned) against the producer state, before anything is written
    (Kafka: ``UnifiedLog.analyzeAndValidateProducerState``).

    ``append_offset_metadata`` is where the append will land (its first offset, segment and position): a
    transaction's first batch is remembered with its position, so the last stable offset needs no index
    lookup.  A ``client`` batch that repeats one of its producer's last five ends the walk: the append is a
    duplicate (:attr:`ProducerStateUpdate.duplicate`) and nothing is written.  A transactional batch of a
    ``client`` or ``coordinator`` append with no open transaction must carry the producer's verification guard
    when verification is enabled (KIP-890), else :class:`~kafkalog.errors.InvalidTxnStateError`.

    Raises:
        OutOfOrderSequenceError, InvalidProducerEpochError, InvalidTxnStateError,
        TransactionCoordinatorFencedError: the append breaks a producer's sequence, epoch or transaction.
    """
    updated_producers: dict[int, ProducerAppendInfo] = {}
    completed_txns: list[CompletedTxn] = []
    relative_position = append_offset_metadata.relative_position_in_segment
    for batch in batches:
        if batch.has_producer_id:
            if origin is AppendOrigin.CLIENT:
                last_entry = producer_state_manager.last_entry(batch.producer_id)
                duplicate = last_entry.find_duplicate_batch(batch) if last_entry is not None else None
                if duplicate is not None:
                    return ProducerStateUpdate(updated_producers, completed_txns, duplicate)
            if origin in (AppendOrigin.CLIENT, AppendOrigin.COORDINATOR) and batch.is_transactional \
                    and not has_ongoing_transaction(producer_state_manager, batch.producer_id) \
                    and _batch_missing_required_verification(producer_state_manager, batch,
                                                             request_verification_guard):
                raise InvalidTxnStateError("Record was not part of an ongoing transaction")
            first_offset_metadata = LogOffsetMetadata(batch.base_offset, append_offset_metadata.segment_base_offset,
                                                      relative_position) if batch.is_transactional else None
            completed = update_producers(producer_state_manager, batch, updated_producers, first_offset_metadata,
                                         origin)
            if completed is not None:
                completed_txns.append(completed)
        relative_position += batch.size_in_bytes
    return ProducerStateUpdate(updated_producers, completed_txns, None)


def load_producers_from_records(producer_state_manager: ProducerStateManager,
                                records: FileMessageSet | MemoryRecords | Iterable[RecordBatch]) -> None:
    """Replay ``records`` into the producer state, as a follower would take them (Kafka:
    ``UnifiedLog.loadProducersFromRecords``): no sequence check, the producers updated once at the end, then the
    transactions the markers completed."""
    loaded_producers: dict[int, ProducerAppendInfo] = {}
    completed_txns: list[CompletedTxn] = []
    for batch in producer_batches(records):
        completed = update_producers(producer_state_manager, batch, loaded_producers, None, AppendOrigin.REPLICATION)
        if completed is not None:
            completed_txns.append(completed)
    for append_info in loaded_producers.values():
        producer_state_manager.update(append_info)
    for completed in completed_txns:
        producer_state_manager.complete_txn(completed)


def complete_txn_index(producer_state_manager: ProducerStateManager, segment: LogSegment,
                       records: FileMessageSet | MemoryRecords, start_offset: int | None = None) -> None:
    """Replay ``records``, a read of ``segment`` from ``start_offset`` (by default its base offset), into the
    producer state batch by batch, as recovery does (Kafka's ``LogSegment.updateProducerState``), and make the segment's
    ``.txnindex`` say what the replay found: one entry per ABORT marker it read.

    The log's markers are the truth over the offsets the replay covered, from ``start_offset`` to the last offset
    of the last batch it read (a marker offset is one producer's, so of two entries at one last offset at most one
    is true):

    - an entry there of the producer and offset of an ABORT marker the replay read stays as it is (a broker
      computed its first offset and last stable offset from a state that a replay starting later may not see
      whole: its transaction may even have begun before the replay did, which then completes none there);
    - an abort the replay completed without one gets the entry the replay computed;
    - an entry there that no ABORT marker backs (another producer's at a marker's offset, or one at an offset that
      holds no ABORT marker) is dropped.

    Entries outside what the replay covered (below the log start, or past a torn or corrupt batch the replay
    stopped at) are kept as they are, but for those whose last offsets do not rise.  When the index only lacks
    entries past its last one, they are appended, as a writer would have appended them; otherwise (an entry to
    drop or to put before another, a part-entry at the end, which an append would land behind, misaligned) the
    index is rewritten whole (:meth:`~kafkalog.transaction_index.TransactionIndex.rewrite`, through a temporary
    file, so a crash leaves the old index or the new one).  Nothing the index holds can make the open fail.
    """
    first = segment.base_offset if start_offset is None else start_offset
    covered: tuple[int, int] | None = None
    if isinstance(records, FileMessageSet):
        rows = records.scan(check_crc=False, stop_on_invalid=True).batches
        batches: Iterable[RecordBatch] = producer_batches(records, rows)
        if len(rows):
            covered = (first, int(rows["last_offset"][-1]))
    else:
        read = list(records.batches())
        batches = [batch for batch in read if batch.has_producer_id]
        if read:
            covered = (first, read[-1].last_offset)
    found: list[AbortedTxn] = []
    markers: set[tuple[int, int]] = set()
    for batch in batches:
        if _is_abort_marker(batch):
            markers.add((batch.producer_id, batch.last_offset))
        append_info = producer_state_manager.prepare_update(batch.producer_id, AppendOrigin.REPLICATION)
        completed = append_info.append(batch)
        producer_state_manager.update(append_info)
        if completed is not None:
            if completed.is_aborted:
                found.append(AbortedTxn(completed.producer_id, completed.first_offset, completed.last_offset,
                                        producer_state_manager.last_stable_offset(completed)))
            producer_state_manager.complete_txn(completed)
    index = segment.txn_index
    if covered is None and index.entry_count() == 0 and not index.ends_in_part_entry():
        return
    existing = index.all_aborted_txns()
    completed_index = _completed_index(existing, found, markers, covered)
    part_entry = index.ends_in_part_entry()
    if completed_index == existing and not part_entry:
        return
    if not part_entry and completed_index[:len(existing)] == existing:
        logger.info("Adding %d aborted transactions missing from the transaction index of %s",
                    len(completed_index) - len(existing), segment)
        for txn in completed_index[len(existing):]:  # in marker order, as the replay found them
            index.append(txn)
        index.flush()
        return
    logger.warning("Rewriting the transaction index of %s from the ABORT markers of its log (%d entries, %d before%s)",
                   segment, len(completed_index), len(existing), ", which ended in a part-entry" if part_entry else "")
    index.rewrite(completed_index)


def _is_abort_marker(batch: RecordBatch) -> bool:
    """Whether ``batch`` is an ABORT marker; an empty control batch (the cleaner emptied it: Kafka's
    ``ProducerAppendInfo.append`` passes it over) or one that does not read marks nothing."""
    if not batch.is_control:
        return False
    try:
        return batch.control_type is ControlRecordType.ABORT
    except KafkaLogError:
        return False


def _completed_index(existing: list[AbortedTxn], replayed: list[AbortedTxn], markers: set[tuple[int, int]],
                     covered: tuple[int, int] | None) -> list[AbortedTxn]:
    """The entries a segment's index should hold (:func:`complete_txn_index`), in order of last offset: within
    ``covered`` (the first and last offsets the replay read; ``None``: it read nothing), the aborts the replay
    completed (``replayed``) and the entries of ``existing`` that an ABORT marker the replay read backs
    (``markers``: producer id and offset), each abort as ``existing`` has it when it has it; outside it, the entries
    of ``existing``, those whose last offset does not rise left out."""
    known: dict[tuple[int, int], AbortedTxn] = {}
    for txn in existing:
        known.setdefault((txn.producer_id, txn.last_offset), txn)
    inside = {(txn.producer_id, txn.last_offset): txn for txn in replayed}
    inside.update((key, txn) for key, txn in known.items() if key in markers)
    first, last = covered if covered is not None else (None, None)
    kept_below: list[AbortedTxn] = []
    kept_above: list[AbortedTxn] = []
    for txn in existing:
        if first is None or txn.last_offset < first:
            kept = kept_below
        elif last is not None and txn.last_offset > last:
            kept = kept_above
        else:
            continue
        if not kept or txn.last_offset > kept[-1].last_offset:
            kept.append(txn)
    return kept_below + sorted(inside.values(), key=lambda txn: txn.last_offset) + kept_above


def complete_txn_indexes(producer_state_manager: ProducerStateManager, segments: Iterable[LogSegment],
                         log_start_offset: int) -> None:
    """Give the ``.txnindex`` of each of ``segments`` (a log's, in offset order, from its first) the aborted
    transactions it lacks, replaying them from ``log_start_offset`` into ``producer_state_manager`` (empty, and
    used for this replay only: it takes no snapshot) with :func:`complete_txn_index`, which rebuilds an index it
    cannot trust (a part-entry at its end, an entry no ABORT marker backs) from the replay rather than fail.

    kafkalog's step, run by the loader for a log that has no producer snapshot at all: such a log was written by
    something that kept no producer state (kafkalog before it ported Kafka's), whose aborts have no index entries,
    while ``read_committed`` reads and the cleaner take them from the index as Kafka's do.  A broker's log
    without snapshots gains nothing (its entries are all there, or it has no transactions); the cost is one
    header scan (the producer-state replay that follows is a second), once, since the log has snapshots from then
    on.
    """
    for segment in segments:
        start_offset = max(segment.base_offset, log_start_offset)  # a segment wholly below it reads as None
        fetch = segment.read(start_offset, 2**31 - 1, segment.size())
        if fetch is not None:
            complete_txn_index(producer_state_manager, segment, fetch.records, start_offset)


def take_snapshot_if_possible(producer_state_manager: ProducerStateManager, sync: bool = True) -> Path | None:
    """:meth:`~kafkalog.producer_state.manager.ProducerStateManager.take_snapshot`, a failure to write it (a full
    disk) logged instead of raised: kafkalog's choice for the snapshots of load and close, which only spare the
    next load a scan (Kafka's ``IOException`` takes the log dir offline).  The state in memory is whole either way,
    and a later snapshot or load covers the offsets this one would have."""
    try:
        return producer_state_manager.take_snapshot(sync)
    except KafkaStorageError as e:
        logger.warning("Skipping the producer snapshot at offset %d of %s: %s", producer_state_manager.map_end_offset,
                       producer_state_manager.topic_partition, e)
        return None


def rebuild_producer_state(producer_state_manager: ProducerStateManager, segments: LogSegments,
                           log_start_offset: int, last_offset: int, record_version: int, time: Time,
                           reload_from_clean_shutdown: bool, replay_without_snapshot: bool = False,
                           take_snapshots: bool = True) -> None:
    """Bring the producer state to ``last_offset``: load the newest snapshot at or below it and replay the
    segments from there (Kafka: ``UnifiedLog.rebuildProducerState``, the companion object's).  Free of side
    effects on the log: recovery calls it on an interim manager.

    The upgrade shortcut is Kafka's: when the topic is on an old message format (below v2, no producer ids) or the
    last shutdown was clean and there is no snapshot at all, nothing is scanned; empty snapshots are written at
    the bases of the last two segments and at ``last_offset``, so the next load starts from them.  Otherwise the
    replay also snapshots at the bases of the last two segments as it passes them, and at ``last_offset``.  A
    manager that was empty and already at or past ``last_offset`` (a truncation of a log without producers)
    skips the scan.

    ``replay_without_snapshot`` is kafkalog's rule for a log that had no producer snapshot at all (the loader
    decides before any is written): it is replayed from its first segment even after a clean shutdown.  Kafka
    takes the shortcut there, as a broker that finds no snapshot was upgraded from a version without
    transactions; a log without snapshots that has transactions was written by kafkalog before it kept producer
    state, and the shortcut would forget its open transactions.  A log with no records past its start has nothing
    to replay and takes the shortcut.  ``take_snapshots=False`` writes none (the loader's, while a log without
    snapshots has its transaction indexes completed).
    """
    last_segment = segments.last_segment()
    if last_segment is not None:
        previous = segments.lower_segment(last_segment.base_offset)
        offsets_to_snapshot = [previous.base_offset if previous is not None else None, last_segment.base_offset,
                               last_offset]
    else:
        offsets_to_snapshot = [last_offset]
    logger.info("Loading producer state till offset %d with message format version %d", last_offset, record_version)
    if record_version < MAGIC_V2 or (producer_state_manager.latest_snapshot_offset() is None
                                     and reload_from_clean_shutdown
                                     and not (replay_without_snapshot and last_offset > log_start_offset)):
        for offset in offsets_to_snapshot:
            if offset is not None:
                producer_state_manager.update_map_end_offset(offset)
                if take_snapshots:
                    take_snapshot_if_possible(producer_state_manager)
        return
    logger.info("Reloading from producer snapshot and rebuilding producer state from offset %d", last_offset)
    is_empty_before_truncation = (producer_state_manager.is_empty()
                                  and producer_state_manager.map_end_offset >= last_offset)
    load_start = time.milliseconds()
    producer_state_manager.truncate_and_reload(log_start_offset, last_offset, time.milliseconds())
    recovery_start = time.milliseconds()
    if last_offset > producer_state_manager.map_end_offset and not is_empty_before_truncation:
        segment_of_last_offset = segments.floor_segment(last_offset)
        for segment in segments.values(producer_state_manager.map_end_offset, last_offset):
            start_offset = max(segment.base_offset, producer_state_manager.map_end_offset, log_start_offset)
            producer_state_manager.update_map_end_offset(start_offset)
            if take_snapshots and segment.base_offset in offsets_to_snapshot:
                take_snapshot_if_possible(producer_state_manager)
            max_position = segment.size()
            if segment is segment_of_last_offset:
                found = segment.translate_offset(last_offset)
                if found is not None:
                    max_position = found.position
            fetch = segment.read(start_offset, 2**31 - 1, max_position)
            if fetch is not None:
                load_producers_from_records(producer_state_manager, fetch.records)
    producer_state_manager.update_map_end_offset(last_offset)
    if take_snapshots:
        take_snapshot_if_possible(producer_state_manager)
    logger.info("Producer state recovery took %dms for snapshot load and %dms for segment recovery from offset %d",
                recovery_start - load_start, time.milliseconds() - recovery_start, last_offset)


def delete_producer_snapshots(segment_base_offsets: Iterable[int], producer_state_manager: ProducerStateManager,
                              async_delete: bool, scheduler: Scheduler, file_delete_delay_ms: int,
                              log_dir_failure_channel: LogDirFailureChannel | None = None,
                              parent_dir: str | None = None, pending: PendingDeletions | None = None) -> None:
    """Forget the snapshots at the bases of deleted segments, renamed ``.deleted`` at once and removed after
    ``file.delete.delay.ms`` (``async_delete``) or now (Kafka: ``UnifiedLog.deleteProducerSnapshots``).  The
    removal runs in ``log_dir_failure_channel``'s handler of the log dir ``parent_dir`` when they are given, as
    Kafka's does: an I/O error takes the log dir offline.  ``pending`` is the log's book of files waiting for
    their deletion, which closing the log deletes (kafkalog's, :mod:`kafkalog.log.pending_deletions`): the task
    deletes only the snapshots still in it."""
    snapshots: list[SnapshotFile] = []
    for base_offset in segment_base_offsets:
        snapshot = producer_state_manager.remove_and_mark_snapshot_for_deletion(base_offset)
        if snapshot is not None:
            snapshots.append(snapshot)
    if not snapshots:
        return
    if async_delete and pending is not None:
        pending.add_snapshots(snapshots)

    def delete() -> None:
        waiting = snapshots if not async_delete or pending is None else [s for s in snapshots if pending.take(s)]
        if log_dir_failure_channel is None or parent_dir is None:
            for snapshot in waiting:
                snapshot.delete_if_exists()
            return
        with log_dir_failure_channel.maybe_handle_io_exception(
                parent_dir, lambda: f"Error while deleting producer state snapshots for "
                                    f"{producer_state_manager.topic_partition} in dir {parent_dir}"):
            for snapshot in waiting:
                snapshot.delete_if_exists()

    if async_delete:
        scheduler.schedule_once("delete-producer-snapshot", delete, file_delete_delay_ms)
    else:
        delete()

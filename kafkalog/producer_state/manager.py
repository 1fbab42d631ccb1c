"""A partition's producer state: the last batches of each producer, its open transactions, its snapshots.

Port of ``storage/src/main/java/org/apache/kafka/storage/internals/log/ProducerStateManager.java`` and
``ProducerStateManagerConfig.java`` (Apache Kafka, tag 3.8.0): :class:`ProducerStateManager`,
:class:`ProducerStateManagerConfig`.

The manager maps producer ids to :class:`~kafkalog.producer_state.entry.ProducerStateEntry`: epoch, last sequences
and offsets (the last 5 batches, to answer retried requests), open transaction.  A producer id stays while it
can still write: until it has been idle ``producer.id.expiration.ms`` with no open transaction (the cleaner
keeps a producer's last batch in compacted topics until then), or until retention removes the segment of its
last write and the log is reloaded.

State and invariants:

- ``map_end_offset``: the state covers the records below it; the log moves it with each append
  (:meth:`~ProducerStateManager.update_map_end_offset`).
- ongoing transactions, by first offset: their first offsets are the undecided offsets; the first of them is
  ``first_undecided_offset``.
- unreplicated transactions: completed (marker written) but with the marker at or above the high watermark;
  they still hold the first unstable offset back until :meth:`~ProducerStateManager.on_high_watermark_updated`
  passes their marker.
- snapshots: ``<dir>/<offset>.snapshot`` files (:mod:`kafkalog.producer_state.snapshot`) at offsets where the
  state was written, kept in an offset-sorted map; ``last_snap_offset`` is the offset of the newest one taken
  or loaded, and a snapshot is taken only when the map end offset has moved past it.

The log serialises calls, as ``UnifiedLog``'s lock does in Kafka; only the snapshot map (which the log's
asynchronous deletion also edits) and the values Kafka keeps ``volatile``
(:meth:`~ProducerStateManager.has_late_transaction`, :attr:`~ProducerStateManager.producer_id_count`) are safe
to use from other threads.
"""

from __future__ import annotations

import bisect
import logging
import os
import threading
from collections.abc import Callable, Collection, Iterator, Mapping
from pathlib import Path
from typing import Generic, TypeVar

from .._common import NO_PRODUCER_ID
from ..append_origin import AppendOrigin
from ..errors import CorruptSnapshotError, IllegalArgumentError
from ..fetch import LogOffsetMetadata
from ..filenames import producer_snapshot_filename
from ..scheduler import SYSTEM_TIME, Time
from ..topic import TopicPartition
from .append_info import ProducerAppendInfo
from .entry import CompletedTxn, ProducerStateEntry, TxnMetadata, VerificationStateEntry
from .producer_map import ProducerMap, ProducersView
from .snapshot import (
    SnapshotFile,
    expired_rows,
    is_expired,
    list_snapshot_files,
    read_snapshot_rows,
    snapshot_transactions,
    write_snapshot_rows,
)

__all__ = [
    "DEFAULT_PRODUCER_ID_EXPIRATION_MS",
    "LATE_TRANSACTION_BUFFER_MS",
    "ProducerStateManager",
    "ProducerStateManagerConfig",
]

logger = logging.getLogger(__name__)

#: How long past the transaction timeout a transaction may stay open before it counts as late (Kafka:
#: ``LATE_TRANSACTION_BUFFER_MS``).
LATE_TRANSACTION_BUFFER_MS = 5 * 60 * 1000
#: ``producer.id.expiration.ms``'s default, one day (Kafka:
#: ``TransactionLogConfigs.PRODUCER_ID_EXPIRATION_MS_DEFAULT``).
DEFAULT_PRODUCER_ID_EXPIRATION_MS = 86_400_000

_V = TypeVar("_V")


class _SortedMap(Generic[_V]):
    """An int-keyed map iterated in key order: Kafka's ``TreeMap`` and ``ConcurrentSkipListMap`` as the
    manager uses them (a handful of keys; iteration works on a copy, so removing while iterating is safe)."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._keys: list[int] = []
        self._values: dict[int, _V] = {}

    def put(self, key: int, value: _V) -> None:
        with self._lock:
            if key not in self._values:
                bisect.insort(self._keys, key)
            self._values[key] = value

    def get(self, key: int) -> _V | None:
        return self._values.get(key)

    def remove(self, key: int) -> _V | None:
        with self._lock:
            value = self._values.pop(key, None)
            if value is not None:
                del self._keys[bisect.bisect_left(self._keys, key)]
            return value

    def first(self) -> _V | None:
        with self._lock:
            return self._values[self._keys[0]] if self._keys else None

    def last(self) -> _V | None:
        with self._lock:
            return self._values[self._keys[-1]] if self._keys else None

    def values(self, below: int | None = None) -> list[_V]:
        """The values in key order, of the keys below ``below`` when it is given."""
        with self._lock:
            keys = self._keys if below is None else self._keys[:bisect.bisect_left(self._keys, below)]
            return [self._values[k] for k in keys]

    def remove_if(self, predicate: Callable[[_V], bool]) -> None:
        with self._lock:
            for key in [k for k in self._keys if predicate(self._values[k])]:
                self.remove(key)

    def clear(self) -> None:
        with self._lock:
            self._keys.clear()
            self._values.clear()

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[_V]:
        return iter(self.values())


class ProducerStateManagerConfig:
    """The producer state's dynamic settings (Kafka: ``ProducerStateManagerConfig``):
    ``producer.id.expiration.ms`` and ``transaction.partition.verification.enable``."""

    def __init__(self, producer_id_expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS,
                 transaction_verification_enabled: bool = True) -> None:
        self.producer_id_expiration_ms = producer_id_expiration_ms
        self.transaction_verification_enabled = transaction_verification_enabled

    def set_producer_id_expiration_ms(self, producer_id_expiration_ms: int) -> None:
        """Kafka: ``setProducerIdExpirationMs``."""
        self.producer_id_expiration_ms = producer_id_expiration_ms

    def set_transaction_verification_enabled(self, enabled: bool) -> None:
        """Kafka: ``setTransactionVerificationEnabled``."""
        self.transaction_verification_enabled = enabled


class ProducerStateManager:
    """The producer ids of one partition and what they last wrote (Kafka: ``ProducerStateManager``).

    ``log_dir`` is the partition's directory, where the snapshots live; the snapshot files already there are
    listed at construction (and not read until :meth:`truncate_and_reload`).  ``time`` gives the clock of the
    verification entries and of the snapshot timings.
    """

    def __init__(self, topic_partition: TopicPartition | str, log_dir: str | os.PathLike[str],
                 max_transaction_timeout_ms: int,
                 producer_state_manager_config: ProducerStateManagerConfig | None = None,
                 time: Time = SYSTEM_TIME) -> None:
        self.topic_partition = topic_partition
        self._log_dir = Path(log_dir)
        self.max_transaction_timeout_ms = max_transaction_timeout_ms
        self.producer_state_manager_config = (producer_state_manager_config if producer_state_manager_config
                                              is not None else ProducerStateManagerConfig())
        self._time = time
        self._producers = ProducerMap()
        # The largest the producer map has been: Java's HashMap never shrinks, and its size orders a snapshot.
        self._producers_high_water = 0
        self._verification_states: dict[int, VerificationStateEntry] = {}
        self._ongoing_txns: _SortedMap[TxnMetadata] = _SortedMap()
        self._unreplicated_txns: _SortedMap[TxnMetadata] = _SortedMap()
        self._producer_id_count = 0
        self._oldest_txn_last_timestamp = -1
        self._snapshots = self._load_snapshots()
        self._last_map_offset = 0
        self._last_snap_offset = 0

    @property
    def producer_id_count(self) -> int:
        """How many producer ids are kept (Kafka: ``producerIdCount``)."""
        return self._producer_id_count

    def has_late_transaction(self, current_time_ms: int) -> bool:
        """Whether the oldest open transaction has been silent longer than the transaction timeout and
        :data:`LATE_TRANSACTION_BUFFER_MS` (Kafka: ``hasLateTransaction``)."""
        last_timestamp = self._oldest_txn_last_timestamp
        return last_timestamp > 0 and (current_time_ms - last_timestamp
                                       > self.max_transaction_timeout_ms + LATE_TRANSACTION_BUFFER_MS)

    def truncate_fully_and_reload_snapshots(self) -> None:
        """Forget everything, then list the snapshot files again (Kafka: ``truncateFullyAndReloadSnapshots``)."""
        logger.info("Reloading the producer state snapshots")
        self.truncate_fully_and_start_at(0)
        self._snapshots = self._load_snapshots()

    def _add_producer_id(self, producer_id: int, entry: ProducerStateEntry) -> None:
        self._producers.put(producer_id, entry)
        self._producer_id_count = len(self._producers)
        self._producers_high_water = max(self._producers_high_water, self._producer_id_count)

    def _clear_producer_ids(self) -> None:
        self._producers.clear()
        self._producer_id_count = 0

    # -- verification (KIP-890) --------------------------------------------------------------------------

    def maybe_create_verification_state_entry(self, producer_id: int, sequence: int,
                                              epoch: int) -> VerificationStateEntry:
        """The producer's verification entry, created if missing, with the sequence and epoch taken in (Kafka:
        ``maybeCreateVerificationStateEntry``)."""
        entry = self._verification_states.get(producer_id)
        if entry is None:
            entry = VerificationStateEntry(self._time.milliseconds(), sequence, epoch)
            self._verification_states[producer_id] = entry
        entry.maybe_update_lowest_sequence_and_epoch(sequence, epoch)
        return entry

    def verification_state_entry(self, producer_id: int) -> VerificationStateEntry | None:
        """Kafka: ``verificationStateEntry``."""
        return self._verification_states.get(producer_id)

    def clear_verification_state_entry(self, producer_id: int) -> None:
        """Kafka: ``clearVerificationStateEntry``."""
        self._verification_states.pop(producer_id, None)

    # -- snapshots on disk ---------------------------------------------------------------------------------

    def _load_snapshots(self) -> _SortedMap[SnapshotFile]:
        """Kafka: ``loadSnapshots``."""
        snapshots: _SortedMap[SnapshotFile] = _SortedMap()
        for snapshot in list_snapshot_files(self._log_dir):
            snapshots.put(snapshot.offset, snapshot)
        return snapshots

    def remove_stray_snapshots(self, segment_base_offsets: Collection[int]) -> None:
        """Delete the snapshots that are at no segment's base offset, but keep the newest of them when it is
        past every segment's base offset: the one a clean shutdown writes (Kafka: ``removeStraySnapshots``)."""
        max_segment_base_offset = max(segment_base_offsets) if segment_base_offsets else None
        base_offsets = set(segment_base_offsets)
        latest_stray: SnapshotFile | None = None
        snapshots = self._load_snapshots()
        for snapshot in snapshots.values():
            if snapshot.offset in base_offsets:
                continue
            if latest_stray is not None:
                latest_stray.delete_if_exists()
                snapshots.remove(latest_stray.offset)
            latest_stray = snapshot
        if (latest_stray is not None and max_segment_base_offset is not None
                and latest_stray.offset < max_segment_base_offset):
            removed = snapshots.remove(latest_stray.offset)
            if removed is not None:
                removed.delete_if_exists()
        self._snapshots = snapshots

    # -- offsets -------------------------------------------------------------------------------------------

    def first_unstable_offset(self) -> LogOffsetMetadata | None:
        """The first offset of the earliest transaction that is undecided, or decided with its marker not yet
        below the high watermark; ``None`` when there is none (Kafka: ``firstUnstableOffset``)."""
        unreplicated = self._unreplicated_txns.first()
        undecided = self._ongoing_txns.first()
        if unreplicated is None:
            return undecided.first_offset if undecided is not None else None
        if undecided is None:
            return unreplicated.first_offset
        if undecided.first_offset.message_offset < unreplicated.first_offset.message_offset:
            return undecided.first_offset
        return unreplicated.first_offset

    def has_transactions(self) -> bool:
        """Whether a transaction is open, or completed with its marker not yet below the high watermark: whether
        :meth:`first_unstable_offset` can be other than ``None`` and :meth:`on_high_watermark_updated` can change
        anything (kafkalog's; the log's fused leader append skips both when it is ``False``)."""
        return bool(self._ongoing_txns._keys or self._unreplicated_txns._keys)

    def on_high_watermark_updated(self, high_watermark: int) -> None:
        """Forget the completed transactions whose marker is below ``high_watermark``, so the last stable
        offset may pass them (Kafka: ``onHighWatermarkUpdated``)."""
        self._remove_unreplicated_transactions(high_watermark)

    def first_undecided_offset(self) -> int | None:
        """The first offset of the earliest open transaction, whatever the replication (Kafka:
        ``firstUndecidedOffset``)."""
        first = self._ongoing_txns.first()
        return first.first_offset.message_offset if first is not None else None

    @property
    def map_end_offset(self) -> int:
        """The offset below which the state is complete (Kafka: ``mapEndOffset``)."""
        return self._last_map_offset

    def active_producers(self) -> Mapping[int, ProducerStateEntry]:
        """The producers kept, by id, read-only (Kafka: ``activeProducers``); the entry of a producer loaded from
        a snapshot and not touched since is made for the caller
        (:class:`~kafkalog.producer_state.producer_map.ProducersView`)."""
        return ProducersView(self._producers)

    def is_empty(self) -> bool:
        """Kafka: ``isEmpty``: no producer and no unreplicated transaction."""
        return not len(self._producers) and not len(self._unreplicated_txns)

    def _load_from_snapshot(self, log_start_offset: int, current_time: int) -> None:
        """Kafka: ``loadFromSnapshot``: the newest snapshot that reads, deleting those that do not.

        Each entry not expired is loaded as ``loadProducerEntry`` loads it, the whole file at once: its producers
        into the map, as rows (:meth:`~kafkalog.producer_state.producer_map.ProducerMap.load`), and every
        transaction an entry has open into the ongoing ones
        (:func:`~kafkalog.producer_state.snapshot.snapshot_transactions`, the rule the read-only readers follow
        too).  Memory: the file's rows, at most
        :data:`~kafkalog.producer_state.snapshot.MAX_SNAPSHOT_BYTES`, and 25 bytes a producer for their index
        (about 40 more while it is built).
        """
        expiration_ms = self.producer_state_manager_config.producer_id_expiration_ms
        while True:
            snapshot = self._snapshots.last()
            if snapshot is None:
                self._last_snap_offset = log_start_offset
                self._last_map_offset = log_start_offset
                return
            try:
                logger.info("Loading producer state from snapshot file '%s'", snapshot)
                rows = read_snapshot_rows(snapshot.file)
                expired = expired_rows(rows, current_time, expiration_ms)
                kept = ~expired if expired.any() else None
                self._producers.load(rows, kept)
                self._producer_id_count = len(self._producers)
                self._producers_high_water = max(self._producers_high_water, self._producer_id_count)
                for first_offset, producer_id in snapshot_transactions(rows, kept).ongoing.items():
                    self._ongoing_txns.put(first_offset, TxnMetadata(producer_id, first_offset))
                self._last_snap_offset = snapshot.offset
                self._last_map_offset = self._last_snap_offset
                self._update_oldest_txn_timestamp()
                return
            except CorruptSnapshotError as e:
                logger.warning("Failed to load producer snapshot from '%s': %s", snapshot.file, e)
                self._remove_and_delete_snapshot(snapshot.offset)

    # Visible for testing
    def load_producer_entry(self, entry: ProducerStateEntry) -> None:
        """Keep ``entry`` and its open transaction (Kafka: ``loadProducerEntry``)."""
        producer_id = entry.producer_id
        self._add_producer_id(producer_id, entry)
        if entry.current_txn_first_offset is not None:
            self._ongoing_txns.put(entry.current_txn_first_offset,
                                   TxnMetadata(producer_id, entry.current_txn_first_offset))

    def _is_producer_expired(self, current_time_ms: int, producer_state: ProducerStateEntry) -> bool:
        """Kafka: ``isProducerExpired`` (:func:`~kafkalog.producer_state.snapshot.is_expired`)."""
        return is_expired(producer_state, current_time_ms,
                          self.producer_state_manager_config.producer_id_expiration_ms)

    def remove_expired_producers(self, current_time_ms: int) -> None:
        """Forget the producers idle ``producer.id.expiration.ms`` or longer with no open transaction, and the
        verification entries as old (Kafka: ``removeExpiredProducers``)."""
        self._producers.remove_expired(current_time_ms, self.producer_state_manager_config.producer_id_expiration_ms)
        self._producer_id_count = len(self._producers)
        expiration_ms = self.producer_state_manager_config.producer_id_expiration_ms
        for producer_id in [pid for pid, entry in self._verification_states.items()
                            if current_time_ms - entry.timestamp >= expiration_ms]:
            del self._verification_states[producer_id]

    def truncate_and_reload(self, log_start_offset: int, log_end_offset: int, current_time_ms: int) -> None:
        """Bring the state to the log's range ``[log_start_offset, log_end_offset)`` (Kafka:
        ``truncateAndReload``).

        Snapshots past the end or at or below the start are deleted.  If the end is not the map end offset the
        state is reloaded from the newest remaining snapshot (its expired producers left out); else only the
        start moves.  The log end offset is taken to be at most the high watermark, so the unreplicated
        transactions can be forgotten.  In-memory state not in a snapshot is lost on reload, as in Kafka.
        """
        for snapshot in self._snapshots.values():
            if snapshot.offset > log_end_offset or snapshot.offset <= log_start_offset:
                self._remove_and_delete_snapshot(snapshot.offset)
        if log_end_offset != self.map_end_offset:
            self._clear_producer_ids()
            self._ongoing_txns.clear()
            self._update_oldest_txn_timestamp()
            self._unreplicated_txns.clear()
            self._load_from_snapshot(log_start_offset, current_time_ms)
        else:
            self.on_log_start_offset_incremented(log_start_offset)

    def prepare_update(self, producer_id: int, origin: AppendOrigin | str) -> ProducerAppendInfo:
        """A :class:`~kafkalog.producer_state.append_info.ProducerAppendInfo` for the producer's next batches
        (Kafka: ``prepareUpdate``)."""
        current_entry = self._producers.get(producer_id)
        if current_entry is None:
            current_entry = ProducerStateEntry.empty(producer_id)
        return ProducerAppendInfo(self.topic_partition, producer_id, current_entry, origin,
                                  self.verification_state_entry(producer_id))

    def update(self, append_info: ProducerAppendInfo) -> None:
        """Take the state an append leaves (Kafka: ``update``).

        Raises:
            IllegalArgumentError: the append is of no producer (id -1).
        """
        if append_info.producer_id == NO_PRODUCER_ID:
            raise IllegalArgumentError(f"Invalid producer id {append_info.producer_id} passed to update for "
                                       f"partition {self.topic_partition}")
        logger.debug("Updated producer %s state to %s", append_info.producer_id, append_info)
        updated_entry = append_info.to_entry()
        current_entry = self._producers.get(append_info.producer_id)
        if current_entry is not None:
            current_entry.update(updated_entry)
        else:
            self._add_producer_id(append_info.producer_id, updated_entry)
        for txn in append_info.started_transactions:
            self._ongoing_txns.put(txn.first_offset.message_offset, txn)
        self._update_oldest_txn_timestamp()

    def _update_oldest_txn_timestamp(self) -> None:
        oldest = self._ongoing_txns.first()
        if oldest is None:
            self._oldest_txn_last_timestamp = -1
        else:
            entry = self._producers.get(oldest.producer_id)
            self._oldest_txn_last_timestamp = entry.last_timestamp if entry is not None else -1

    def update_map_end_offset(self, last_offset: int) -> None:
        """The state now covers the records below ``last_offset`` (Kafka: ``updateMapEndOffset``)."""
        self._last_map_offset = last_offset

    def last_entry(self, producer_id: int) -> ProducerStateEntry | None:
        """The producer's entry, if it is kept (Kafka: ``lastEntry``)."""
        return self._producers.get(producer_id)

    def take_snapshot(self, sync: bool = True) -> Path | None:
        """Write a snapshot at the map end offset unless one is there already; the file written (Kafka:
        ``takeSnapshot()`` and ``takeSnapshot(boolean)``).

        Raises:
            KafkaStorageError: the file could not be written.
        """
        if self._last_map_offset <= self._last_snap_offset:
            return None
        snapshot = SnapshotFile(producer_snapshot_filename(self._log_dir, self._last_map_offset))
        start = self._time.hi_res_clock_ms()
        write_snapshot_rows(snapshot.file, self._producers.snapshot_rows(self._producers_high_water), sync)
        logger.info("Wrote producer snapshot at offset %s with %s producer ids in %s ms.", self._last_map_offset,
                    len(self._producers), self._time.hi_res_clock_ms() - start)
        self._snapshots.put(snapshot.offset, snapshot)
        self._last_snap_offset = self._last_map_offset
        return snapshot.file

    def update_parent_dir(self, parent_dir: str | os.PathLike[str]) -> None:
        """The log dir was renamed to ``parent_dir`` (Kafka: ``updateParentDir``)."""
        self._log_dir = Path(parent_dir)
        for snapshot in self._snapshots.values():
            snapshot.update_parent_dir(parent_dir)

    def latest_snapshot_offset(self) -> int | None:
        """The offset of the newest snapshot (Kafka: ``latestSnapshotOffset``)."""
        latest = self._snapshots.last()
        return latest.offset if latest is not None else None

    def oldest_snapshot_offset(self) -> int | None:
        """The offset of the oldest snapshot (Kafka: ``oldestSnapshotOffset``)."""
        oldest = self._snapshots.first()
        return oldest.offset if oldest is not None else None

    # Visible for testing
    def snapshot_file_for_offset(self, offset: int) -> SnapshotFile | None:
        """Kafka: ``snapshotFileForOffset``."""
        return self._snapshots.get(offset)

    def on_log_start_offset_incremented(self, log_start_offset: int) -> None:
        """The log start moved to ``log_start_offset``: forget the unreplicated transactions below it and bring
        the map end offset up to it (Kafka: ``onLogStartOffsetIncremented``)."""
        self._remove_unreplicated_transactions(log_start_offset)
        if self._last_map_offset < log_start_offset:
            self._last_map_offset = log_start_offset
        latest = self.latest_snapshot_offset()
        self._last_snap_offset = latest if latest is not None else log_start_offset

    def _remove_unreplicated_transactions(self, offset: int) -> None:
        self._unreplicated_txns.remove_if(lambda txn: txn.last_offset is not None and txn.last_offset < offset)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Forget every producer and transaction, delete every snapshot, start again at ``offset`` (Kafka:
        ``truncateFullyAndStartAt``)."""
        self._clear_producer_ids()
        self._ongoing_txns.clear()
        self._unreplicated_txns.clear()
        for snapshot in self._snapshots.values():
            self._remove_and_delete_snapshot(snapshot.offset)
        self._last_snap_offset = 0
        self._last_map_offset = offset
        self._update_oldest_txn_timestamp()

    def last_stable_offset(self, completed_txn: CompletedTxn) -> int:
        """The last stable offset once ``completed_txn`` completes: the first offset of the earliest open
        transaction of another producer, else the offset after its marker.  Nothing is marked complete: the
        log writes the transaction index entry first, then calls :meth:`complete_txn` (Kafka:
        ``lastStableOffset``)."""
        for txn in self._ongoing_txns.values():
            if txn.producer_id != completed_txn.producer_id:
                return txn.first_offset.message_offset
        return completed_txn.last_offset + 1

    def complete_txn(self, completed_txn: CompletedTxn) -> None:
        """Mark the transaction complete; it holds the first unstable offset until the high watermark passes
        its marker (Kafka: ``completeTxn``).

        Raises:
            IllegalArgumentError: no transaction was started at its first offset.
        """
        txn = self._ongoing_txns.remove(completed_txn.first_offset)
        if txn is None:
            raise IllegalArgumentError(f"Attempted to complete transaction {completed_txn} on partition "
                                       f"{self.topic_partition} which was not started")
        txn.last_offset = completed_txn.last_offset
        self._unreplicated_txns.put(completed_txn.first_offset, txn)
        self._update_oldest_txn_timestamp()

    def delete_snapshots_before(self, offset: int) -> None:
        """Delete the snapshots below ``offset`` (Kafka: ``deleteSnapshotsBefore``)."""
        for snapshot in self._snapshots.values(below=offset):
            self._remove_and_delete_snapshot(snapshot.offset)

    def fetch_snapshot(self, offset: int) -> Path | None:
        """The file of the snapshot at ``offset``, if there is one (Kafka: ``fetchSnapshot``)."""
        snapshot = self._snapshots.get(offset)
        return snapshot.file if snapshot is not None else None

    def _remove_and_delete_snapshot(self, snapshot_offset: int) -> None:
        """Kafka: ``removeAndDeleteSnapshot``."""
        snapshot = self._snapshots.remove(snapshot_offset)
        if snapshot is not None:
            snapshot.delete_if_exists()

    def remove_and_mark_snapshot_for_deletion(self, snapshot_offset: int) -> SnapshotFile | None:
        """Forget the snapshot at ``snapshot_offset`` and rename its file with ``.deleted``, for the log's
        asynchronous deletion; ``None`` when there is none, or its file is already gone (Kafka:
        ``removeAndMarkSnapshotForDeletion``)."""
        snapshot = self._snapshots.remove(snapshot_offset)
        if snapshot is None:
            return None
        # A missing file was deleted already: by the interim manager that log recovery builds, whose deletions
        # this manager did not see.  The deletion asked for is done, so that is no error.
        try:
            snapshot.rename_to_delete()
        except FileNotFoundError:
            logger.info("Failed to rename producer state snapshot %s with deletion suffix because it was already "
                        "deleted", snapshot.file.absolute())
            return None
        return snapshot

    def __repr__(self) -> str:
        return (f"ProducerStateManager(partition={self.topic_partition}, producers={len(self._producers)}, "
                f"map_end_offset={self._last_map_offset})")

"""The classic groups' cache and their records in ``__consumer_offsets``: store, load, fetch, expire.

Port of ``core/src/main/scala/kafka/coordinator/group/GroupMetadataManager.scala`` (tag 3.8.0), the class: the
group cache (``getGroup``, ``getOrMaybeCreateGroup``, ``addGroup``), ``partitionFor`` and the owned / loading
partitions, ``storeGroup``, ``storeOffsets`` (with ``generateOffsetRecords`` and ``createPutCacheCallback``),
``getOffsets``, ``loadGroupsAndOffsets`` / ``doLoadGroupsAndOffsets``, ``cleanupGroupMetadata`` (offset expiry,
deleted groups and offsets, with their tombstones) and the transactional bookkeeping
(``handleTxnCompletion``, ``addProducerGroup``, ``removeProducerGroup``) that the transaction coordinator's part
drives.  The records themselves are :mod:`kafkalog.broker.group_records`'.

Storage is the broker's, behind :class:`~kafkalog.broker.coordinator_logs.CoordinatorLogs`: one log per
``__consumer_offsets`` partition, appended with the coordinator origin.  A single node leads every partition, so
every append is acknowledged at once (Kafka's ``acks=-1`` with one replica) and the callbacks Kafka runs when the
append completes run before ``store_*`` returns.  A failed append becomes Kafka's error codes
(``maybeConvertOffsetCommitError`` for offsets, ``storeGroup``'s mapping for a group).

Load order (``doLoadGroupsAndOffsets``): every batch from the log start to the log end; an offset record puts or
(as a tombstone) drops a committed offset, a transactional one goes to its producer's pending offsets until a
COMMIT marker moves them in (an ABORT drops them); a group record puts or drops a group.  Then the groups with
their offsets, then the offsets of groups without a group record (standalone consumers'), as ``Empty`` groups.

Where kafkalog differs:

- a record that does not decode is skipped with an error in the log, where Kafka's load of the whole partition
  fails on it (the partition's groups are then missing until a reload), because a coordinator that serves every
  other group of the partition loses less than one that serves none of them;
- a group or offset record that cannot be written (a name past the 32767 bytes of its schema's string, which
  flexible request versions can carry) is answered ``UNKNOWN_SERVER_ERROR`` before anything changes, where Kafka's
  serializer throws out of the handler with a callback left registered.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from .._common import NO_PRODUCER_EPOCH, NO_PRODUCER_ID
from ..errors import (
    IllegalStateError,
    KafkaLogError,
)
from ..messages import MessageReadError, MessageWriteError
from ..record.memory import MemoryRecords
from .coordinator_logs import CoordinatorLogs
from .error_codes import error_code_for
from .group_config import GroupCoordinatorConfig
from .group_metadata import CommitRecordMetadataAndOffset, GroupMetadata, GroupState, TopicPartition
from .group_records import (
    GROUP_METADATA_TOPIC_NAME,
    GroupMetadataKey,
    OffsetAndMetadata,
    OffsetKey,
    group_metadata_key,
    group_metadata_value,
    offset_commit_key,
    offset_commit_value,
    partition_for,
    read_group_message_value,
    read_message_key,
    read_offset_message_value,
)

if TYPE_CHECKING:
    pass

__all__ = ["GroupMetadataManager", "OffsetFetchPartition", "maybe_convert_offset_commit_error"]

logger = logging.getLogger(__name__)

#: Kafka: ``ControlRecordType.COMMIT``'s id (a control record's key is ``int16 version, int16 type``).
_CONTROL_COMMIT = 1


class OffsetFetchPartition:
    """Kafka: ``OffsetFetchResponse.PartitionData``."""

    __slots__ = ("error", "leader_epoch", "metadata", "offset")

    def __init__(self, offset: int, leader_epoch: int | None, metadata: str, error: ErrorCode) -> None:
        self.offset, self.leader_epoch, self.metadata, self.error = offset, leader_epoch, metadata, error

    def __repr__(self) -> str:
        return f"PartitionData(offset={self.offset}, leaderEpoch={self.leader_epoch}, metadata={self.metadata}, " \
               f"error={self.error.name})"


_INVALID_OFFSET = -1


def _append_error(e: Exception) -> ErrorCode:
    """The error code Kafka's ``ReplicaManager.appendRecords`` answers for an append that raised ``e``
    (``Errors.forException``: :func:`~kafkalog.broker.error_codes.error_code_for`)."""
    return error_code_for(e)


def maybe_convert_offset_commit_error(error: ErrorCode) -> ErrorCode:
    """Kafka: ``GroupMetadataManager.maybeConvertOffsetCommitError``."""
    if error is ErrorCode.network_exception:
        return ErrorCode.coordinator_load_in_progress
    if error in (ErrorCode.unknown_topic_or_partition, ErrorCode.not_enough_replicas,
                 ErrorCode.not_enough_replicas_after_append):
        return ErrorCode.coordinator_not_available
    if error in (ErrorCode.not_leader_or_follower, ErrorCode.kafka_storage_error):
        return ErrorCode.not_coordinator
    if error in (ErrorCode.message_too_large, ErrorCode.record_list_too_large, ErrorCode.invalid_fetch_size):
        return ErrorCode.invalid_commit_offset_size
    return error


def _convert_store_group_error(error: ErrorCode) -> ErrorCode:
    """``storeGroup``'s mapping of an append error."""
    if error in (ErrorCode.unknown_topic_or_partition, ErrorCode.not_enough_replicas,
                 ErrorCode.not_enough_replicas_after_append):
        return ErrorCode.coordinator_not_available
    if error in (ErrorCode.not_leader_or_follower, ErrorCode.kafka_storage_error):
        return ErrorCode.not_coordinator
    if error is ErrorCode.request_timed_out:
        return ErrorCode.rebalance_in_progress
    if error in (ErrorCode.message_too_large, ErrorCode.record_list_too_large, ErrorCode.invalid_fetch_size):
        return ErrorCode.unknown_server_error
    return error


class GroupMetadataManager:
    """Kafka: ``GroupMetadataManager``."""

    def __init__(self, broker_id: int, config: GroupCoordinatorConfig, logs: CoordinatorLogs,
                 time_ms: Callable[[], int]) -> None:
        self.broker_id = broker_id
        self.config = config
        self.logs = logs
        self.time_ms = time_ms
        self._groups: dict[str, GroupMetadata] = {}
        self._loading_partitions: set[int] = set()
        self._owned_partitions: set[int] = set()
        self._open_groups_for_producer: dict[int, set[str]] = {}
        self.partition_count = config.offsets_topic_num_partitions

    # -- the cache and the partitions --

    @property
    def current_groups(self) -> list[GroupMetadata]:
        return list(self._groups.values())

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.partition_count)

    def is_partition_owned(self, partition: int) -> bool:
        return partition in self._owned_partitions

    def is_partition_loading(self, partition: int) -> bool:
        return partition in self._loading_partitions

    def is_group_local(self, group_id: str) -> bool:
        return self.is_partition_owned(self.partition_for(group_id))

    def is_group_loading(self, group_id: str) -> bool:
        return self.is_partition_loading(self.partition_for(group_id))

    @property
    def is_loading(self) -> bool:
        return bool(self._loading_partitions)

    def group_not_exists(self, group_id: str) -> bool:
        """Kafka: ``groupNotExists``: the partition is ours and the group absent or dead."""
        group = self._groups.get(group_id)
        return self.is_group_local(group_id) and (group is None or group.is_(GroupState.DEAD))

    def get_group(self, group_id: str) -> GroupMetadata | None:
        return self._groups.get(group_id)

    def get_or_maybe_create_group(self, group_id: str, create_if_not_exist: bool) -> GroupMetadata | None:
        group = self._groups.get(group_id)
        if group is None and create_if_not_exist:
            group = self._groups[group_id] = GroupMetadata(group_id, GroupState.EMPTY, self.time_ms)
        return group

    def add_group(self, group: GroupMetadata) -> GroupMetadata:
        """Kafka: ``addGroup``: the cached group of that id, ``group`` when there was none."""
        return self._groups.setdefault(group.group_id, group)

    def is_group_open_for_producer(self, producer_id: int, group_id: str) -> bool:
        return group_id in self._open_groups_for_producer.get(producer_id, set())

    def add_producer_group(self, producer_id: int, group_id: str) -> None:
        self._open_groups_for_producer.setdefault(producer_id, set()).add(group_id)

    def remove_producer_group(self, producer_id: int, group_id: str) -> None:
        groups = self._open_groups_for_producer.get(producer_id)
        if groups is not None:
            groups.discard(group_id)
            if not groups:
                del self._open_groups_for_producer[producer_id]

    # -- appends --

    def _append(self, partition: int, records: MemoryRecords) -> tuple[ErrorCode, int | None]:
        """Append to ``__consumer_offsets-partition``: the error and the base offset."""
        try:
            info = self.logs.append_as_coordinator(GROUP_METADATA_TOPIC_NAME, partition, records)
        except KafkaLogError as e:
            logger.error("Append to %s-%d failed: %s", GROUP_METADATA_TOPIC_NAME, partition, e)
            return _append_error(e), None
        base = info.first_offset if info.first_offset is not None else info.last_offset_of_first_batch
        return ErrorCode.none, base

    def _records(self, records: list[tuple[bytes, bytes | None, int]], *, producer_id: int = NO_PRODUCER_ID,
                 producer_epoch: int = NO_PRODUCER_EPOCH, is_transactional: bool = False) -> MemoryRecords:
        return MemoryRecords.with_records(records, compression=self.config.offsets_topic_compression_type,
                                          producer_id=producer_id, producer_epoch=producer_epoch,
                                          is_transactional=is_transactional)

    def store_group(self, group: GroupMetadata, assignment: Mapping[str, bytes],
                    callback: Callable[[ErrorCode], None]) -> None:
        """Kafka: ``storeGroup``: append the group's record (``GroupMetadataValue`` with ``assignment``), then
        call back with the outcome."""
        partition = self.partition_for(group.group_id)
        if not self.is_partition_owned(partition):
            callback(ErrorCode.not_coordinator)  # Kafka: getMagic is None
            return
        timestamp = self.time_ms()
        try:
            key = group_metadata_key(group.group_id)
            value = group_metadata_value(group.to_record(assignment))
        except MessageWriteError as e:
            # Kafka's serializer throws out of the handler; here the group's members get the error instead.
            logger.error("Group %s's metadata cannot be written: %s", group.group_id, e)
            callback(ErrorCode.unknown_server_error)
            return
        error, _base = self._append(partition, self._records([(key, value, timestamp)]))
        if error is not ErrorCode.none:
            logger.debug("Metadata from group %s with generation %d failed when appending to log due to %s",
                         group.group_id, group.generation_id, error.name)
            error = _convert_store_group_error(error)
        callback(error)

    def validate_offset_metadata_length(self, metadata: str | None) -> bool:
        """Kafka: ``validateOffsetMetadataLength`` (the string's length, in UTF-16 units, as Java's)."""
        return metadata is None or len(metadata.encode("utf-16-le", "surrogatepass")) // 2 <= \
            self.config.offset_metadata_max_bytes

    def store_offsets(self, group: GroupMetadata, consumer_id: str, offsets: Mapping[TopicPartition,
                                                                                      OffsetAndMetadata],
                      callback: Callable[[dict[TopicPartition, ErrorCode]], None], *,
                      producer_id: int = NO_PRODUCER_ID, producer_epoch: int = NO_PRODUCER_EPOCH) -> None:
        """Kafka: ``storeOffsets``: the offsets whose metadata fits are appended in one batch (transactional for a
        producer's), then cached; the callback gets every partition's error."""
        if not group.has_received_consistent_offset_commits:
            logger.warning("group: %s with leader: %s has received offset commits from consumers as well as "
                           "transactional producers. Mixing both types of offset commits will generally result in "
                           "surprises and should be avoided.", group.group_id, group.leader_or_null)
        filtered = {tp: o for tp, o in offsets.items() if self.validate_offset_metadata_length(o.metadata)}
        if not filtered:
            callback({tp: ErrorCode.offset_metadata_too_large for tp in offsets})
            return
        partition = self.partition_for(group.group_id)
        if not self.is_partition_owned(partition):
            callback({tp: ErrorCode.not_coordinator for tp in offsets})
            return
        is_txn = producer_id != NO_PRODUCER_ID
        timestamp = self.time_ms()
        try:
            records = self._records([(offset_commit_key(group.group_id, tp[0], tp[1]), offset_commit_value(o),
                                      timestamp) for tp, o in filtered.items()], producer_id=producer_id,
                                    producer_epoch=producer_epoch, is_transactional=is_txn)
        except MessageWriteError as e:
            # A name too long for its record (Kafka's serializer throws): nothing is staged, every partition fails.
            logger.error("Offsets of group %s cannot be written: %s", group.group_id, e)
            callback({tp: ErrorCode.unknown_server_error for tp in offsets})
            return
        if is_txn:
            self.add_producer_group(producer_id, group.group_id)
            group.prepare_txn_offset_commit(producer_id, filtered)
        else:
            group.prepare_offset_commit(filtered)
        status, base = self._append(partition, records)
        # Kafka: createPutCacheCallback
        if status is ErrorCode.none:
            if not group.is_(GroupState.DEAD):
                for tp, o in filtered.items():
                    commit = CommitRecordMetadataAndOffset(base, o)
                    if is_txn:
                        group.on_txn_offset_commit_append(producer_id, tp, commit)
                    else:
                        group.on_offset_commit_append(tp, commit)
            error = ErrorCode.none
        else:
            if not group.is_(GroupState.DEAD):
                if not group.has_pending_offset_commits_from_producer(producer_id):
                    self.remove_producer_group(producer_id, group.group_id)
                for tp, o in filtered.items():
                    if is_txn:
                        group.fail_pending_txn_offset_commit(producer_id, tp)
                    else:
                        group.fail_pending_offset_write(tp, o)
            logger.debug("Offset commit %s from group %s, consumer %s with generation %d failed when appending to "
                         "log due to %s", filtered, group.group_id, consumer_id, group.generation_id, status.name)
            error = maybe_convert_offset_commit_error(status)
        callback({tp: ErrorCode.offset_metadata_too_large if not self.validate_offset_metadata_length(o.metadata)
                  else error for tp, o in offsets.items()})

    # -- fetches --

    def get_offsets(self, group_id: str, require_stable: bool,
                    partitions: list[TopicPartition] | None) -> dict[TopicPartition, OffsetFetchPartition]:
        """Kafka: ``getOffsets``: never a stale offset; with ``require_stable`` a partition with a commit still
        pending (a transaction's, until its marker) is ``UNSTABLE_OFFSET_COMMIT``."""
        group = self._groups.get(group_id)
        if group is None or group.is_(GroupState.DEAD):
            return {tp: OffsetFetchPartition(_INVALID_OFFSET, None, "", ErrorCode.none) for tp in partitions or []}
        out: dict[TopicPartition, OffsetFetchPartition] = {}
        for tp in partitions if partitions is not None else list(group.all_offsets()):
            if require_stable and group.has_pending_offset_commits_for_topic_partition(tp):
                out[tp] = OffsetFetchPartition(_INVALID_OFFSET, None, "", ErrorCode.unstable_offset_commit)
                continue
            o = group.offset(tp)
            out[tp] = (OffsetFetchPartition(_INVALID_OFFSET, None, "", ErrorCode.none) if o is None
                       else OffsetFetchPartition(o.offset, o.leader_epoch, o.metadata, ErrorCode.none))
        return out

    # -- loading --

    def add_loading_partition(self, partition: int) -> bool:
        if partition in self._owned_partitions:
            return False
        if partition in self._loading_partitions:
            return False
        self._loading_partitions.add(partition)
        return True

    def load_groups_and_offsets(self, partition: int, on_group_loaded: Callable[[GroupMetadata], None]) -> None:
        """Kafka: ``loadGroupsAndOffsets``: read the partition's log into the cache, then own the partition
        (also when the load failed, as Kafka does)."""
        self._loading_partitions.add(partition)
        try:
            self._do_load_groups_and_offsets(partition, on_group_loaded)
        except Exception:
            logger.exception("Error loading offsets from %s-%d", GROUP_METADATA_TOPIC_NAME, partition)
        finally:
            self._owned_partitions.add(partition)
            self._loading_partitions.discard(partition)

    def _do_load_groups_and_offsets(self, partition: int,
                                    on_group_loaded: Callable[[GroupMetadata], None]) -> None:
        topic_partition = f"{GROUP_METADATA_TOPIC_NAME}-{partition}"
        log = self.logs.log(GROUP_METADATA_TOPIC_NAME, partition)
        loaded_offsets: dict[tuple[str, TopicPartition], CommitRecordMetadataAndOffset] = {}
        pending_offsets: dict[int, dict[tuple[str, TopicPartition], CommitRecordMetadataAndOffset]] = {}
        loaded_groups: dict[str, GroupMetadata] = {}
        removed_groups: set[str] = set()
        current = log.log_start_offset
        end = log.log_end_offset
        read_one = True
        while current < end and read_one:
            fetched = log.read(current, self.config.offsets_load_buffer_size, min_one_message=True)
            read_one = fetched.records.size_in_bytes() > 0
            for batch in fetched.records.batches():
                if batch.is_control:
                    records = batch.records()
                    if records:
                        key = records[0].key
                        if key is not None and len(key) >= 4 and \
                                int.from_bytes(bytes(key[2:4]), "big", signed=True) == _CONTROL_COMMIT:
                            for gtp, commit in pending_offsets.get(batch.producer_id, {}).items():
                                known = loaded_offsets.get(gtp)
                                if known is None or known.older_than(commit):
                                    loaded_offsets[gtp] = commit
                        pending_offsets.pop(batch.producer_id, None)
                else:
                    batch_base: int | None = None
                    for record in batch.records():
                        if batch_base is None:
                            batch_base = record.offset
                        try:
                            self._load_record(topic_partition, batch, record, batch_base, loaded_offsets,
                                              pending_offsets, loaded_groups, removed_groups)
                        except (MessageReadError, IllegalStateError) as e:
                            logger.error("Skipping the record at offset %d of %s that does not read: %s",
                                         record.offset, topic_partition, e)
                current = batch.next_offset
        by_group: dict[str, dict[TopicPartition, CommitRecordMetadataAndOffset]] = {}
        for (group_id, tp), commit in loaded_offsets.items():
            by_group.setdefault(group_id, {})[tp] = commit
        pending_by_group: dict[str, dict[int, dict[TopicPartition, CommitRecordMetadataAndOffset]]] = {}
        for producer_id, producer_offsets in pending_offsets.items():
            for (group_id, tp), commit in producer_offsets.items():
                self.add_producer_group(producer_id, group_id)
                pending_by_group.setdefault(group_id, {}).setdefault(producer_id, {})[tp] = commit
        for group in loaded_groups.values():
            self._load_group(group, by_group.get(group.group_id, {}), pending_by_group.get(group.group_id, {}))
            on_group_loaded(group)
        for group_id in [g for g in {**by_group, **pending_by_group} if g not in loaded_groups]:
            group = GroupMetadata(group_id, GroupState.EMPTY, self.time_ms)
            self._load_group(group, by_group.get(group_id, {}), pending_by_group.get(group_id, {}))
            on_group_loaded(group)
        for group_id in removed_groups:
            if group_id in self._groups and group_id not in by_group:
                raise IllegalStateError(f"Unexpected unload of active group {group_id} while loading partition "
                                        f"{topic_partition}")

    def _load_record(self, topic_partition: str, batch: object, record: object, batch_base: int,
                     loaded_offsets: dict[tuple[str, TopicPartition], CommitRecordMetadataAndOffset],
                     pending_offsets: dict[int, dict[tuple[str, TopicPartition], CommitRecordMetadataAndOffset]],
                     loaded_groups: dict[str, GroupMetadata], removed_groups: set[str]) -> None:
        key_bytes = getattr(record, "key", None)
        value = getattr(record, "value", None)
        if key_bytes is None:
            raise IllegalStateError("Group metadata/offset entry key should not be null")
        is_txn = bool(getattr(batch, "is_transactional", False))
        producer_id = int(getattr(batch, "producer_id", NO_PRODUCER_ID))
        key = read_message_key(bytes(key_bytes))
        if isinstance(key, OffsetKey):
            if is_txn:
                pending_offsets.setdefault(producer_id, {})
            gtp = (key.group, (key.topic, key.partition))
            if value is None:
                if is_txn:
                    pending_offsets[producer_id].pop(gtp, None)
                else:
                    loaded_offsets.pop(gtp, None)
            else:
                offset = read_offset_message_value(bytes(value))
                assert offset is not None
                commit = CommitRecordMetadataAndOffset(batch_base, offset)
                if is_txn:
                    pending_offsets[producer_id][gtp] = commit
                else:
                    loaded_offsets[gtp] = commit
        elif isinstance(key, GroupMetadataKey):
            record_value = read_group_message_value(None if value is None else bytes(value))
            if record_value is not None:
                removed_groups.discard(key.group)
                loaded_groups[key.group] = GroupMetadata.load_group(key.group, record_value, self.time_ms)
            else:
                loaded_groups.pop(key.group, None)
                removed_groups.add(key.group)
        else:
            logger.warning("Unknown message key with version %d while loading offsets and group metadata from %s. "
                           "Ignoring it. It could be a left over from an aborted upgrade.", key.version,
                           topic_partition)

    def _load_group(self, group: GroupMetadata, offsets: Mapping[TopicPartition, CommitRecordMetadataAndOffset],
                    pending: Mapping[int, Mapping[TopicPartition, CommitRecordMetadataAndOffset]]) -> None:
        group.initialize_offsets(offsets, pending)
        current = self.add_group(group)
        if current is not group:
            logger.debug("Attempt to load group %s from log with generation %d failed because there is already a "
                         "cached group with generation %d", group.group_id, group.generation_id,
                         current.generation_id)

    def remove_groups_and_offsets(self, partition: int, on_group_unloaded: Callable[[GroupMetadata], None]) -> None:
        """Kafka: ``removeGroupsAndOffsets`` (the coordinator's resignation from a partition): stop owning it and
        drop its groups from the cache.  A single node resigns only when a partition's log goes away."""
        self._owned_partitions.discard(partition)
        self._loading_partitions.discard(partition)
        removed_groups = removed_offsets = 0
        for group in self.current_groups:
            if self.partition_for(group.group_id) == partition:
                on_group_unloaded(group)
                del self._groups[group.group_id]
                for groups in self._open_groups_for_producer.values():
                    groups.discard(group.group_id)
                removed_groups += 1
                removed_offsets += group.num_offsets
        logger.info("Finished unloading %s-%d. Removed %d cached offsets and %d cached groups.",
                    GROUP_METADATA_TOPIC_NAME, partition, removed_offsets, removed_groups)

    # -- expiry and deletion --

    def cleanup_expired(self) -> int:
        """Kafka: ``cleanupGroupMetadata()``: expire offsets past ``offsets.retention.minutes``."""
        now = self.time_ms()
        removed = self.cleanup_group_metadata(
            self.current_groups, lambda g: g.remove_expired_offsets(now, self.config.offsets_retention_ms))
        if removed > 0:
            logger.info("Removed %d expired offsets in %d milliseconds.", removed, self.time_ms() - now)
        return removed

    def cleanup_group_metadata(self, groups: Iterable[GroupMetadata],
                               selector: Callable[[GroupMetadata], Mapping[TopicPartition, OffsetAndMetadata]]) -> int:
        """Kafka: ``cleanupGroupMetadata(groups, selector)``: drop what ``selector`` removes, make an empty group
        without offsets ``Dead`` and uncache it, and write the tombstones (the group's too, unless it only ever
        stored offsets: generation 0).  How many offsets were removed."""
        offsets_removed = 0
        for group in list(groups):
            group_id = group.group_id
            removed = selector(group)
            if group.is_(GroupState.EMPTY) and not group.has_offsets:
                logger.info("Group %s transitioned to Dead in generation %d", group_id, group.generation_id)
                group.transition_to(GroupState.DEAD)
            group_is_dead = group.is_(GroupState.DEAD)
            generation = group.generation_id
            partition = self.partition_for(group_id)
            if not self.is_partition_owned(partition):
                logger.info("BrokerId %d is no longer a coordinator for the group %s. Proceeding cleanup for other "
                            "alive groups", self.broker_id, group_id)
                continue
            timestamp = self.time_ms()
            tombstones: list[tuple[bytes, bytes | None, int]] = [
                (offset_commit_key(group_id, tp[0], tp[1]), None, timestamp) for tp in removed]
            if group_is_dead and self._groups.get(group_id) is group:
                del self._groups[group_id]
                if generation > 0:
                    tombstones.append((group_metadata_key(group_id), None, timestamp))
            if tombstones:
                error, _ = self._append(partition, self._records(tombstones))
                if error is ErrorCode.none:
                    offsets_removed += len(removed)
                else:
                    logger.error("Failed to append %d tombstones to %s-%d for expired/deleted offsets and/or metadata "
                                 "for group %s.", len(tombstones), GROUP_METADATA_TOPIC_NAME, partition, group_id)
        return offsets_removed

    # -- transactions (the transaction coordinator's part calls these) --

    def handle_txn_completion(self, producer_id: int, completed_partitions: set[int], is_commit: bool) -> None:
        """Kafka: ``handleTxnCompletion``: after a marker is written to ``completed_partitions``, a commit moves the
        producer's pending offsets into its groups' offsets, an abort drops them."""
        groups = [g for g in self._open_groups_for_producer.get(producer_id, set())
                  if self.partition_for(g) in completed_partitions]
        for group_id in groups:
            group = self._groups.get(group_id)
            if group is None:
                logger.info("Group %s has moved away from %d after transaction marker was written but before the "
                            "cache was updated. The cache on the new group owner will be updated instead.",
                            group_id, self.broker_id)
                continue
            if not group.is_(GroupState.DEAD):
                group.complete_pending_txn_offset_commit(producer_id, is_commit)
                self.remove_producer_group(producer_id, group_id)

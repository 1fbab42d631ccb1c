"""Kafka 3.8.0's classic group coordinator, on one asyncio event loop: the handlers of the group APIs.

Port of ``core/src/main/scala/kafka/coordinator/group/GroupCoordinator.scala`` (tag 3.8.0): ``handleJoinGroup``,
``handleSyncGroup``, ``handleHeartbeat``, ``handleLeaveGroup``, ``handleCommitOffsets``, ``handleFetchOffsets``,
``handleListGroups``, ``handleDescribeGroup``, ``handleDeleteGroups``, ``handleDeleteOffsets``, with their
validations in Kafka's order of checks and with Kafka's error codes, and the rebalance machinery behind them
(``prepareRebalance``, ``onCompleteJoin``, the pending-sync and heartbeat expirations, static members' rejoins).  The
state machine is :mod:`kafkalog.broker.group_metadata`, the cache and the ``__consumer_offsets`` records
:mod:`kafkalog.broker.group_metadata_manager`, the timeouts :mod:`kafkalog.broker.delayed`; the requests and
responses of each API version are :mod:`kafkalog.broker.group_coordinator`'s.

One node coordinates every group: ``__consumer_offsets`` has ``offsets.topic.num.partitions`` partitions, a
group's is ``partition_for(group_id)``, and this broker leads them all.  :meth:`ClassicGroupCoordinator.startup`
creates the topic if absent and loads every partition (``loadGroupsAndOffsets``), yielding to the loop between
partitions: a request for a group whose partition is still loading gets ``COORDINATOR_LOAD_IN_PROGRESS``, as in
Kafka.  The offsets' expiry runs every ``offsets.retention.check.interval.ms`` (Kafka's
``delete-expired-group-metadata``).

Kafka runs the handlers on request threads under each group's lock, and delayed operations on a timer thread;
here everything runs on the broker's event loop, and no handler awaits before it has changed the group, so each
one is atomic as Kafka's locked section is.  The handlers answer through callbacks, as Kafka's do: JoinGroup and
SyncGroup's only when the rebalance gets there.

The transaction coordinator's part (TxnOffsetCommit, the markers' completion) plugs in here:
:meth:`GroupMetadataManager.store_offsets <kafkalog.broker.group_metadata_manager.GroupMetadataManager.store_offsets>`
with a ``producer_id`` appends a transactional batch and stages its offsets as pending
(``GroupMetadata.prepare_txn_offset_commit``), which OffsetFetch with ``require_stable`` answers
``UNSTABLE_OFFSET_COMMIT`` for, as Kafka does; :meth:`ClassicGroupCoordinator.schedule_handle_txn_completion`
(Kafka's ``scheduleHandleTxnCompletion``) is what a written COMMIT or ABORT marker calls to move them into the
group's offsets or drop them; and a restart loads pending and committed transactional offsets from the log's
batches and markers.

Where Kafka throws ``IllegalStateException`` on a state it believes impossible (a static member's rejoin into an
``Empty`` group, a ``Dead`` group reaching a handler), this raises :class:`~kafkalog.errors.IllegalStateError`; the
dispatch answers it as Kafka's request handler does, with ``UNKNOWN_SERVER_ERROR``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any

from kio.schema.errors import ErrorCode

from ..errors import IllegalStateError, UnknownTopicOrPartitionError
from .coordinator_logs import CoordinatorLogs
from .delayed import (
    DelayedHeartbeat,
    DelayedJoin,
    DelayedOperationPurgatory,
    DelayedSync,
    InitialDelayedJoin,
    LoopTimer,
    Timer,
    TimerHandle,
    group_join_key,
    group_sync_key,
    member_key,
)
from .group_config import GroupCoordinatorConfig
from .group_metadata import (
    GroupMetadata,
    GroupState,
    GroupSummary,
    JoinGroupResult,
    MemberMetadata,
    SyncGroupResult,
    TopicPartition,
)
from .group_metadata_manager import GroupMetadataManager, OffsetFetchPartition
from .group_records import GROUP_METADATA_TOPIC_NAME, OffsetAndMetadata

__all__ = ["NEW_MEMBER_JOIN_TIMEOUT_MS", "UNKNOWN_MEMBER_ID", "ClassicGroupCoordinator"]

logger = logging.getLogger(__name__)

#: Kafka: ``JoinGroupRequest.UNKNOWN_MEMBER_ID``.
UNKNOWN_MEMBER_ID = ""
#: Kafka: ``GroupCoordinator.NewMemberJoinTimeoutMs``.
NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000


class ClassicGroupCoordinator:
    """Kafka: ``GroupCoordinator`` (``kafka.coordinator.group``, the classic protocol's)."""

    def __init__(self, logs: CoordinatorLogs, config: GroupCoordinatorConfig | None = None, *, broker_id: int = 0,
                 timer: Timer | None = None) -> None:
        self.broker_id = broker_id
        self.config = config if config is not None else GroupCoordinatorConfig()
        self.timer: Timer = timer if timer is not None else LoopTimer()
        self.group_manager = GroupMetadataManager(broker_id, self.config, logs, self.timer.time_ms)
        self.heartbeat_purgatory = DelayedOperationPurgatory("Heartbeat", self.timer)
        self.rebalance_purgatory = DelayedOperationPurgatory("Rebalance", self.timer)
        self.logs = logs
        self._is_active = False
        self._topic_ready = False
        self._expiry: TimerHandle | None = None

    # -- lifecycle --

    async def startup(self, *, enable_metadata_expiration: bool = True, create_topic: bool = True) -> None:
        """Kafka: ``startup`` then ``onElection`` for every partition (one node leads them all): create
        ``__consumer_offsets`` if absent, load each partition's groups and offsets, start the expiry task.

        With ``create_topic`` False an absent ``__consumer_offsets`` is left absent until :meth:`ensure_topic` (the
        broker's FindCoordinator for a group, as a Kafka broker creates the topic on that request's behalf): until
        then no partition is this coordinator's, and a group request is answered ``NOT_COORDINATOR``."""
        logger.info("Starting up.")
        self._is_active = True
        if enable_metadata_expiration:
            self._schedule_expiry(0)
        if create_topic or self._topic_exists():
            await self.ensure_topic()
        logger.info("Startup complete.")

    def _topic_exists(self) -> bool:
        try:
            self.logs.log(GROUP_METADATA_TOPIC_NAME, 0)
        except UnknownTopicOrPartitionError:
            return False
        return True

    async def ensure_topic(self) -> None:
        """Create ``__consumer_offsets`` if absent and load every partition, once."""
        if self._topic_ready:
            return
        self._topic_ready = True
        count = self.config.offsets_topic_num_partitions
        self.logs.ensure_internal_topic(GROUP_METADATA_TOPIC_NAME, count, self.config.offsets_topic_configs())
        for partition in range(count):
            self.group_manager.add_loading_partition(partition)
        for partition in range(count):
            self.group_manager.load_groups_and_offsets(partition, self._on_group_loaded)
            await asyncio.sleep(0)  # let requests in: they see the partitions still loading

    def shutdown(self) -> None:
        """Kafka: ``shutdown``."""
        logger.info("Shutting down.")
        self._is_active = False
        if self._expiry is not None:
            self._expiry.cancel()
            self._expiry = None
        self.heartbeat_purgatory.shutdown()
        self.rebalance_purgatory.shutdown()
        logger.info("Shutdown complete.")

    def _schedule_expiry(self, delay_ms: int) -> None:
        def run() -> None:
            self._expiry = None
            if not self._is_active:
                return
            try:
                self.group_manager.cleanup_expired()
            finally:
                self._schedule_expiry(self.config.offsets_retention_check_interval_ms)

        self._expiry = self.timer.call_later(delay_ms, run)

    def partition_for(self, group_id: str) -> int:
        return self.group_manager.partition_for(group_id)

    # -- validation (Kafka: isValidGroupId, validateGroupStatus, validateCurrentMember) --

    @staticmethod
    def _is_valid_group_id(group_id: str | None, api: str) -> bool:
        if api in ("offset_commit", "offset_fetch", "describe_groups", "delete_groups"):
            return group_id is not None
        return group_id is not None and group_id != ""

    def _validate_group_status(self, group_id: str | None, api: str) -> ErrorCode | None:
        if not self._is_valid_group_id(group_id, api):
            return ErrorCode.invalid_group_id
        assert group_id is not None
        if not self._is_active:
            return ErrorCode.coordinator_not_available
        if self.group_manager.is_group_loading(group_id):
            return ErrorCode.coordinator_load_in_progress
        if not self.group_manager.is_group_local(group_id):
            return ErrorCode.not_coordinator
        return None

    @staticmethod
    def _validate_current_member(group: GroupMetadata, member_id: str, group_instance_id: str | None,
                                 operation: str) -> ErrorCode | None:
        if group_instance_id is not None:
            current = group.current_static_member_id(group_instance_id)
            if current is None:
                return ErrorCode.unknown_member_id
            if current != member_id:
                logger.info("Request memberId=%s for static member with groupInstanceId=%s is fenced by current "
                            "memberId=%s during operation %s", member_id, group_instance_id, current, operation)
                return ErrorCode.fenced_instance_id
            return None
        if not group.has(member_id):
            return ErrorCode.unknown_member_id
        return None

    def _accept_joining_member(self, group: GroupMetadata, member_id: str) -> bool:
        """Kafka: ``acceptJoiningMember``."""
        state = group.current_state
        if state in (GroupState.EMPTY, GroupState.DEAD):
            return True
        if state is GroupState.PREPARING_REBALANCE:
            return (group.has(member_id) and group.get(member_id).is_awaiting_join) or \
                group.num_awaiting < self.config.group_max_size
        return group.has(member_id) or group.size < self.config.group_max_size

    # -- JoinGroup --

    def handle_join_group(self, group_id: str, member_id: str, group_instance_id: str | None,
                          require_known_member_id: bool, support_skipping_assignment: bool, client_id: str,
                          client_host: str, rebalance_timeout_ms: int, session_timeout_ms: int, protocol_type: str,
                          protocols: list[tuple[str, bytes]], callback: Callable[[JoinGroupResult], None],
                          reason: str | None = None) -> None:
        """Kafka: ``handleJoinGroup``."""
        error = self._validate_group_status(group_id, "join_group")
        if error is not None:
            callback(JoinGroupResult(member_id, error))
            return
        if not (self.config.group_min_session_timeout_ms <= session_timeout_ms
                <= self.config.group_max_session_timeout_ms):
            callback(JoinGroupResult(member_id, ErrorCode.invalid_session_timeout))
            return
        is_unknown_member = member_id == UNKNOWN_MEMBER_ID
        group = self.group_manager.get_or_maybe_create_group(group_id, is_unknown_member)
        if group is None:
            callback(JoinGroupResult(member_id, ErrorCode.unknown_member_id))
            return
        join_reason = reason if reason is not None else "not provided"
        if not self._accept_joining_member(group, member_id):
            group.remove(member_id)
            callback(JoinGroupResult(UNKNOWN_MEMBER_ID, ErrorCode.group_max_size_reached))
        elif is_unknown_member:
            self._do_new_member_join_group(group, group_instance_id, require_known_member_id,
                                           support_skipping_assignment, client_id, client_host, rebalance_timeout_ms,
                                           session_timeout_ms, protocol_type, protocols, callback, join_reason)
        else:
            self._do_current_member_join_group(group, member_id, group_instance_id, client_id, client_host,
                                               rebalance_timeout_ms, session_timeout_ms, protocol_type, protocols,
                                               callback, join_reason)
        if group.is_(GroupState.PREPARING_REBALANCE):
            self.rebalance_purgatory.check_and_complete(group_join_key(group.group_id))

    def _do_new_member_join_group(self, group: GroupMetadata, group_instance_id: str | None,
                                  require_known_member_id: bool, support_skipping_assignment: bool, client_id: str,
                                  client_host: str, rebalance_timeout_ms: int, session_timeout_ms: int,
                                  protocol_type: str, protocols: list[tuple[str, bytes]],
                                  callback: Callable[[JoinGroupResult], None], reason: str) -> None:
        if group.is_(GroupState.DEAD):
            callback(JoinGroupResult(UNKNOWN_MEMBER_ID, ErrorCode.coordinator_not_available))
        elif not group.supports_protocols(protocol_type, {p for p, _ in protocols}):
            callback(JoinGroupResult(UNKNOWN_MEMBER_ID, ErrorCode.inconsistent_group_protocol))
        else:
            new_member_id = group.generate_member_id(client_id, group_instance_id)
            if group_instance_id is not None:
                old_member_id = group.current_static_member_id(group_instance_id)
                if old_member_id is not None:
                    logger.info("Static member with groupInstanceId=%s and unknown member id joins group %s in %s "
                                "state. Replacing previously mapped member %s with this groupInstanceId.",
                                group_instance_id, group.group_id, group.current_state, old_member_id)
                    self._update_static_member_and_rebalance(group, old_member_id, new_member_id, group_instance_id,
                                                             protocols, rebalance_timeout_ms, session_timeout_ms,
                                                             callback, reason, support_skipping_assignment)
                else:
                    logger.info("Static member with groupInstanceId=%s and unknown member id joins group %s in %s "
                                "state. Created a new member id %s for this member and add to the group.",
                                group_instance_id, group.group_id, group.current_state, new_member_id)
                    self._add_member_and_rebalance(rebalance_timeout_ms, session_timeout_ms, new_member_id,
                                                   group_instance_id, client_id, client_host, protocol_type,
                                                   protocols, group, callback, reason)
            elif require_known_member_id:
                logger.info("Dynamic member with unknown member id joins group %s in %s state. Created a new member "
                            "id %s and request the member to rejoin with this id.", group.group_id,
                            group.current_state, new_member_id)
                group.add_pending_member(new_member_id)
                self._add_pending_member_expiration(group, new_member_id, session_timeout_ms)
                callback(JoinGroupResult(new_member_id, ErrorCode.member_id_required))
            else:
                logger.info("Dynamic Member with unknown member id joins group %s in %s state. Created a new member "
                            "id %s for this member and add to the group.", group.group_id, group.current_state,
                            new_member_id)
                self._add_member_and_rebalance(rebalance_timeout_ms, session_timeout_ms, new_member_id, None,
                                               client_id, client_host, protocol_type, protocols, group, callback,
                                               reason)

    def _current_generation_result(self, group: GroupMetadata, member_id: str, members: bool) -> JoinGroupResult:
        return JoinGroupResult(
            member_id=member_id, error=ErrorCode.none, generation_id=group.generation_id,
            protocol_type=group.protocol_type, protocol_name=group.protocol_name,
            leader_id=group.leader_or_null or "", skip_assignment=False,
            members=group.current_member_metadata() if members else [])

    def _do_current_member_join_group(self, group: GroupMetadata, member_id: str, group_instance_id: str | None,
                                      client_id: str, client_host: str, rebalance_timeout_ms: int,
                                      session_timeout_ms: int, protocol_type: str, protocols: list[tuple[str, bytes]],
                                      callback: Callable[[JoinGroupResult], None], reason: str) -> None:
        if group.is_(GroupState.DEAD):
            callback(JoinGroupResult(member_id, ErrorCode.coordinator_not_available))
            return
        if not group.supports_protocols(protocol_type, {p for p, _ in protocols}):
            callback(JoinGroupResult(member_id, ErrorCode.inconsistent_group_protocol))
            return
        if group.is_pending_member(member_id):
            if group_instance_id is not None:
                raise IllegalStateError(f"Received unexpected JoinGroup with groupInstanceId={group_instance_id} for "
                                     f"pending member with memberId={member_id}")
            logger.debug("Pending dynamic member with id %s joins group %s in %s state. Adding to the group now.",
                         member_id, group.group_id, group.current_state)
            self._add_member_and_rebalance(rebalance_timeout_ms, session_timeout_ms, member_id, None, client_id,
                                           client_host, protocol_type, protocols, group, callback, reason)
            return
        error = self._validate_current_member(group, member_id, group_instance_id, "join-group")
        if error is not None:
            callback(JoinGroupResult(member_id, error))
            return
        state = group.current_state
        member = group.get(member_id)
        if state is GroupState.PREPARING_REBALANCE:
            self._update_member_and_rebalance(group, member, protocols, rebalance_timeout_ms, session_timeout_ms,
                                              f"Member {member_id} joining group during {state}; client reason: "
                                              f"{reason}", callback)
        elif state is GroupState.COMPLETING_REBALANCE:
            if member.matches(protocols):
                callback(self._current_generation_result(group, member_id, group.is_leader(member_id)))
            else:
                self._update_member_and_rebalance(group, member, protocols, rebalance_timeout_ms, session_timeout_ms,
                                                  f"Updating metadata for member {member_id} during {state}; client "
                                                  f"reason: {reason}", callback)
        elif state is GroupState.STABLE:
            if group.is_leader(member_id):
                self._update_member_and_rebalance(group, member, protocols, rebalance_timeout_ms, session_timeout_ms,
                                                  f"Leader {member_id} re-joining group during {state}; client "
                                                  f"reason: {reason}", callback)
            elif not member.matches(protocols):
                self._update_member_and_rebalance(group, member, protocols, rebalance_timeout_ms, session_timeout_ms,
                                                  f"Updating metadata for member {member_id} during {state}; client "
                                                  f"reason: {reason}", callback)
            else:
                callback(self._current_generation_result(group, member_id, False))
        else:
            logger.warning("Attempt to add rejoining member %s of group %s in unexpected group state %s",
                           member_id, group.group_id, state)
            callback(JoinGroupResult(member_id, ErrorCode.unknown_member_id))

    # -- SyncGroup --

    def handle_sync_group(self, group_id: str, generation: int, member_id: str, protocol_type: str | None,
                          protocol_name: str | None, group_instance_id: str | None,
                          group_assignment: Mapping[str, bytes], callback: Callable[[SyncGroupResult], None]) -> None:
        """Kafka: ``handleSyncGroup``."""
        error = self._validate_group_status(group_id, "sync_group")
        if error is ErrorCode.coordinator_load_in_progress:
            # The rebalance's state is lost with the load: have the member rejoin (older clients do not expect
            # the loading error here).
            callback(SyncGroupResult(ErrorCode.rebalance_in_progress))
            return
        if error is not None:
            callback(SyncGroupResult(error))
            return
        group = self.group_manager.get_group(group_id)
        if group is None:
            callback(SyncGroupResult(ErrorCode.unknown_member_id))
            return
        self._do_sync_group(group, generation, member_id, protocol_type, protocol_name, group_instance_id,
                            group_assignment, callback)

    def _validate_sync_group(self, group: GroupMetadata, generation_id: int, member_id: str,
                             protocol_type: str | None, protocol_name: str | None,
                             group_instance_id: str | None) -> ErrorCode | None:
        if group.is_(GroupState.DEAD):
            return ErrorCode.coordinator_not_available
        error = self._validate_current_member(group, member_id, group_instance_id, "sync-group")
        if error is not None:
            return error
        if generation_id != group.generation_id:
            return ErrorCode.illegal_generation
        if protocol_type is not None and group.protocol_type != protocol_type:
            return ErrorCode.inconsistent_group_protocol
        if protocol_name is not None and group.protocol_name != protocol_name:
            return ErrorCode.inconsistent_group_protocol
        return None

    def _do_sync_group(self, group: GroupMetadata, generation_id: int, member_id: str, protocol_type: str | None,
                       protocol_name: str | None, group_instance_id: str | None,
                       group_assignment: Mapping[str, bytes], callback: Callable[[SyncGroupResult], None]) -> None:
        error = self._validate_sync_group(group, generation_id, member_id, protocol_type, protocol_name,
                                          group_instance_id)
        if error is not None:
            callback(SyncGroupResult(error))
            return
        state = group.current_state
        if state is GroupState.EMPTY:
            callback(SyncGroupResult(ErrorCode.unknown_member_id))
        elif state is GroupState.PREPARING_REBALANCE:
            callback(SyncGroupResult(ErrorCode.rebalance_in_progress))
        elif state is GroupState.COMPLETING_REBALANCE:
            group.get(member_id).awaiting_sync_callback = callback
            self._remove_pending_sync_member(group, member_id)
            if group.is_leader(member_id):
                logger.info("Assignment received from leader %s for group %s for generation %d. The group has %d "
                            "members, %d of which are static.", member_id, group.group_id, group.generation_id,
                            group.size, len(group.all_static_members))
                missing = [m for m in group.all_members if m not in group_assignment]
                assignment = {**group_assignment, **{m: b"" for m in missing}}
                if missing:
                    logger.warning("Setting empty assignments for members %s of %s for generation %d", missing,
                                   group.group_id, group.generation_id)

                def stored(error: ErrorCode) -> None:
                    # Another member may have joined while the append ran: act only on the same generation.
                    if group.is_(GroupState.COMPLETING_REBALANCE) and generation_id == group.generation_id:
                        if error is not ErrorCode.none:
                            self._reset_and_propagate_assignment_error(group, error)
                            self._maybe_prepare_rebalance(group, f"Error {error.name} when storing group assignment "
                                                                 f"during SyncGroup (member: {member_id})")
                        else:
                            self._set_and_propagate_assignment(group, assignment)
                            group.transition_to(GroupState.STABLE)

                self.group_manager.store_group(group, assignment, stored)
        elif state is GroupState.STABLE:
            self._remove_pending_sync_member(group, member_id)
            member = group.get(member_id)
            callback(SyncGroupResult(ErrorCode.none, group.protocol_type, group.protocol_name, member.assignment))
            self._complete_and_schedule_next_heartbeat_expiration(group, group.get(member_id))
        else:
            raise IllegalStateError(f"Reached unexpected condition for Dead group {group.group_id}")

    # -- LeaveGroup --

    def handle_leave_group(self, group_id: str, leaving_members: list[tuple[str, str | None, str | None]]
                           ) -> tuple[ErrorCode, list[tuple[str, str | None, ErrorCode]]]:
        """Kafka: ``handleLeaveGroup``; each leaving member is ``(member id, group instance id, reason)``, the
        result the top-level error and each member's ``(member id, group instance id, error)``."""
        error = self._validate_group_status(group_id, "leave_group")
        if error is not None:
            return error, []
        group = self.group_manager.get_group(group_id)
        if group is None:
            return ErrorCode.none, [(m, i, ErrorCode.unknown_member_id) for m, i, _ in leaving_members]
        if group.is_(GroupState.DEAD):
            return ErrorCode.coordinator_not_available, []

        def remove_current_member(member_id: str, reason: str | None) -> None:
            member = group.get(member_id)
            leave_reason = reason if reason is not None else "not provided"
            self._remove_member_and_update_group(group, member, f"Removing member {member_id} on LeaveGroup; client "
                                                                f"reason: {leave_reason}")
            self._remove_heartbeat_for_leaving_member(group, member.member_id)
            logger.info("Member %s has left group %s through explicit `LeaveGroup`; client reason: %s", member,
                        group_id, leave_reason)

        results: list[tuple[str, str | None, ErrorCode]] = []
        for member_id, instance_id, reason in leaving_members:
            if member_id == UNKNOWN_MEMBER_ID:
                current = None if instance_id is None else group.current_static_member_id(instance_id)
                if current is not None:
                    remove_current_member(current, reason)
                    results.append((member_id, instance_id, ErrorCode.none))
                else:
                    results.append((member_id, instance_id, ErrorCode.unknown_member_id))
            elif group.is_pending_member(member_id):
                self._remove_pending_member_and_update_group(group, member_id)
                self.heartbeat_purgatory.check_and_complete(member_key(group.group_id, member_id))
                logger.info("Pending member with memberId=%s has left group %s through explicit `LeaveGroup` request",
                            member_id, group.group_id)
                results.append((member_id, instance_id, ErrorCode.none))
            else:
                member_error = self._validate_current_member(group, member_id, instance_id, "leave-group")
                if member_error is None:
                    remove_current_member(member_id, reason)
                    member_error = ErrorCode.none
                results.append((member_id, instance_id, member_error))
        return ErrorCode.none, results

    # -- DeleteGroups, OffsetDelete --

    def handle_delete_groups(self, group_ids: list[str]) -> dict[str, ErrorCode]:
        """Kafka: ``handleDeleteGroups``."""
        errors: dict[str, ErrorCode] = {}
        eligible: list[GroupMetadata] = []
        for group_id in group_ids:
            error = self._validate_group_status(group_id, "delete_groups")
            if error is not None:
                errors[group_id] = error
                continue
            group = self.group_manager.get_group(group_id)
            not_found = ErrorCode.group_id_not_found if self.group_manager.group_not_exists(group_id) \
                else ErrorCode.not_coordinator
            if group is None or group.is_(GroupState.DEAD):
                errors[group_id] = not_found
            elif group.is_(GroupState.EMPTY):
                group.transition_to(GroupState.DEAD)
                eligible.append(group)
            else:
                errors[group_id] = ErrorCode.non_empty_group
        if eligible:
            removed = self.group_manager.cleanup_group_metadata(eligible, lambda g: g.remove_all_offsets())
            errors.update({g.group_id: ErrorCode.none for g in eligible})
            logger.info("The following groups were deleted: %s. A total of %d offsets were removed.",
                        ", ".join(g.group_id for g in eligible), removed)
        return errors

    def handle_delete_offsets(self, group_id: str, partitions: list[TopicPartition]
                              ) -> tuple[ErrorCode, dict[TopicPartition, ErrorCode]]:
        """Kafka: ``handleDeleteOffsets``: an empty group's offsets go; a consumer group's only for topics no member
        subscribes to."""
        group_error = ErrorCode.none
        partition_errors: dict[TopicPartition, ErrorCode] = {}
        eligible: list[TopicPartition] = []
        error = self._validate_group_status(group_id, "offset_delete")
        if error is not None:
            return error, {}
        group = self.group_manager.get_group(group_id)
        not_found = ErrorCode.group_id_not_found if self.group_manager.group_not_exists(group_id) \
            else ErrorCode.not_coordinator
        if group is None or group.is_(GroupState.DEAD):
            return not_found, {}
        if group.is_(GroupState.EMPTY):
            eligible = list(partitions)
        elif group.is_consumer_group:
            eligible = [tp for tp in partitions if not group.is_subscribed_to_topic(tp[0])]
            partition_errors = {tp: ErrorCode.group_subscribed_to_topic for tp in partitions
                                if group.is_subscribed_to_topic(tp[0])}
        else:
            group_error = ErrorCode.non_empty_group
        if eligible:
            removed = self.group_manager.cleanup_group_metadata([group], lambda g: g.remove_offsets(eligible))
            partition_errors.update({tp: ErrorCode.none for tp in eligible})
            logger.info("The following offsets of the group %s were deleted: %s. A total of %d offsets were removed.",
                        group_id, eligible, removed)
        return group_error, ({} if group_error is not ErrorCode.none else partition_errors)

    # -- Heartbeat --

    def _validate_heartbeat(self, group: GroupMetadata, generation_id: int, member_id: str,
                            group_instance_id: str | None) -> ErrorCode | None:
        if group.is_(GroupState.DEAD):
            return ErrorCode.coordinator_not_available
        error = self._validate_current_member(group, member_id, group_instance_id, "heartbeat")
        if error is not None:
            return error
        if generation_id != group.generation_id:
            return ErrorCode.illegal_generation
        return None

    def handle_heartbeat(self, group_id: str, member_id: str, group_instance_id: str | None,
                         generation_id: int) -> ErrorCode:
        """Kafka: ``handleHeartbeat``."""
        error = self._validate_group_status(group_id, "heartbeat")
        if error is not None:
            # A loading coordinator answers blindly: the member rejoins once the group is loaded.
            return ErrorCode.none if error is ErrorCode.coordinator_load_in_progress else error
        group = self.group_manager.get_group(group_id)
        if group is None:
            return ErrorCode.unknown_member_id
        error = self._validate_heartbeat(group, generation_id, member_id, group_instance_id)
        if error is not None:
            return error
        state = group.current_state
        if state is GroupState.EMPTY:
            return ErrorCode.unknown_member_id
        self._complete_and_schedule_next_heartbeat_expiration(group, group.get(member_id))
        if state is GroupState.PREPARING_REBALANCE:
            return ErrorCode.rebalance_in_progress
        if state in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE):
            return ErrorCode.none
        raise IllegalStateError(f"Reached unexpected condition for Dead group {group_id}")

    # -- OffsetCommit, OffsetFetch --

    def _validate_offset_commit(self, group: GroupMetadata, generation_id: int, member_id: str,
                                group_instance_id: str | None, is_transactional: bool) -> ErrorCode | None:
        if group.is_(GroupState.DEAD):
            return ErrorCode.coordinator_not_available
        if generation_id < 0 and group.is_(GroupState.EMPTY):
            return None  # the admin client, or a consumer not using group management
        if generation_id >= 0 or member_id != UNKNOWN_MEMBER_ID or group_instance_id is not None:
            error = self._validate_current_member(group, member_id, group_instance_id,
                                                  "txn-offset-commit" if is_transactional else "offset-commit")
            if error is not None:
                return error
            return ErrorCode.illegal_generation if generation_id != group.generation_id else None
        if not is_transactional and not group.is_(GroupState.EMPTY):
            return ErrorCode.unknown_member_id  # only members commit to a group that has members
        return None

    def handle_commit_offsets(self, group_id: str, member_id: str, group_instance_id: str | None,
                              generation_id: int, offsets: Mapping[TopicPartition, OffsetAndMetadata]
                              ) -> dict[TopicPartition, ErrorCode]:
        """Kafka: ``handleCommitOffsets``."""
        error = self._validate_group_status(group_id, "offset_commit")
        if error is not None:
            return {tp: error for tp in offsets}
        group = self.group_manager.get_group(group_id)
        if group is None:
            if generation_id >= 0:
                return {tp: ErrorCode.illegal_generation for tp in offsets}  # an older generation's
            group = self.group_manager.add_group(GroupMetadata(group_id, GroupState.EMPTY, self.timer.time_ms))
        return self._do_commit_offsets(group, member_id, group_instance_id, generation_id, offsets)

    def handle_txn_commit_offsets(self, group_id: str, producer_id: int, producer_epoch: int, member_id: str,
                                  group_instance_id: str | None, generation_id: int,
                                  offsets: Mapping[TopicPartition, OffsetAndMetadata]
                                  ) -> dict[TopicPartition, ErrorCode]:
        """Kafka: ``handleTxnCommitOffsets`` and ``doTxnCommitOffsets``: a transactional producer's offsets, validated
        as a member's commit (a group that only stores offsets takes them from anyone), appended in a transactional
        batch and staged as pending until the transaction's marker (:meth:`schedule_handle_txn_completion`).  A
        group that does not exist is created empty, as Kafka does.  Transaction verification (KIP-890) is not
        asked for: the transaction coordinator is in this process and added the partition itself."""
        error = self._validate_group_status(group_id, "txn_offset_commit")
        if error is not None:
            return {tp: error for tp in offsets}
        group = self.group_manager.get_group(group_id)
        if group is None:
            group = self.group_manager.add_group(GroupMetadata(group_id, GroupState.EMPTY, self.timer.time_ms))
        error = self._validate_offset_commit(group, generation_id, member_id, group_instance_id, True)
        if error is not None:
            return {tp: error for tp in offsets}
        result: dict[TopicPartition, ErrorCode] = {}

        def done(status: dict[TopicPartition, ErrorCode]) -> None:
            result.update(status)

        self.group_manager.store_offsets(group, member_id, offsets, done, producer_id=producer_id,
                                         producer_epoch=producer_epoch)
        return result

    def _do_commit_offsets(self, group: GroupMetadata, member_id: str, group_instance_id: str | None,
                           generation_id: int, offsets: Mapping[TopicPartition, OffsetAndMetadata]
                           ) -> dict[TopicPartition, ErrorCode]:
        error = self._validate_offset_commit(group, generation_id, member_id, group_instance_id, False)
        if error is not None:
            return {tp: error for tp in offsets}
        result: dict[TopicPartition, ErrorCode] = {}

        def done(status: dict[TopicPartition, ErrorCode]) -> None:
            result.update(status)

        state = group.current_state
        if state is GroupState.EMPTY:
            self.group_manager.store_offsets(group, member_id, offsets, done)
        elif state in (GroupState.STABLE, GroupState.PREPARING_REBALANCE):
            # During a rebalance the previous generation may still commit: the heartbeat answer tells it to rejoin.
            self._complete_and_schedule_next_heartbeat_expiration(group, group.get(member_id))
            self.group_manager.store_offsets(group, member_id, offsets, done)
        elif state is GroupState.COMPLETING_REBALANCE:
            return {tp: ErrorCode.rebalance_in_progress for tp in offsets}
        else:
            raise IllegalStateError(f"Logic error: unexpected group state {state}")
        return result

    def handle_fetch_offsets(self, group_id: str, require_stable: bool, partitions: list[TopicPartition] | None
                             ) -> tuple[ErrorCode, dict[TopicPartition, OffsetFetchPartition]]:
        """Kafka: ``handleFetchOffsets``: the offsets whatever the group's state (a group may use Kafka only to
        store offsets).  ``require_stable`` is answered from the pending commits, which the transaction
        coordinator's part fills through ``GroupMetadata.prepare_txn_offset_commit`` and empties through
        :meth:`GroupMetadataManager.handle_txn_completion`."""
        error = self._validate_group_status(group_id, "offset_fetch")
        if error is not None:
            return error, {}
        return ErrorCode.none, self.group_manager.get_offsets(group_id, require_stable, partitions)

    def schedule_handle_txn_completion(self, producer_id: int, offsets_partitions: list[int], is_commit: bool) -> None:
        """Kafka: ``scheduleHandleTxnCompletion``: the hook the transaction coordinator's part calls when a marker
        for ``producer_id`` is written to these ``__consumer_offsets`` partitions."""
        asyncio.get_running_loop().call_soon(self.group_manager.handle_txn_completion, producer_id,
                                             set(offsets_partitions), is_commit)

    # -- ListGroups, DescribeGroups --

    def handle_list_groups(self, states: set[str], group_types: set[str]) -> tuple[ErrorCode, list[Any]]:
        """Kafka: ``handleListGroups``: every group is classic to this coordinator; the state filter is
        case-insensitive."""
        if not self._is_active:
            return ErrorCode.coordinator_not_available, []
        error = ErrorCode.coordinator_load_in_progress if self.group_manager.is_loading else ErrorCode.none
        lower_states = {s.lower() for s in states}
        lower_types = {t.lower() for t in group_types}
        groups = [g.overview() for g in self.group_manager.current_groups
                  if (not states or g.is_in_states(lower_states)) and (not group_types or "classic" in lower_types)]
        return error, groups

    def handle_describe_group(self, group_id: str) -> tuple[ErrorCode, GroupSummary]:
        """Kafka: ``handleDescribeGroup``."""
        error = self._validate_group_status(group_id, "describe_groups")
        if error is not None:
            return error, GroupSummary("", "", "", ())
        group = self.group_manager.get_group(group_id)
        if group is None:
            return ErrorCode.none, GroupSummary(str(GroupState.DEAD), "", "", ())
        return ErrorCode.none, group.summary()

    # -- loading and unloading --

    def on_resignation(self, partition: int) -> None:
        """Kafka: ``onResignation``: stop coordinating the groups of ``__consumer_offsets-partition``."""
        logger.info("Resigned as the group coordinator for partition %d", partition)
        self.group_manager.remove_groups_and_offsets(partition, self._on_group_unloaded)

    def _on_group_unloaded(self, group: GroupMetadata) -> None:
        """Kafka: ``onGroupUnloaded``: the group dies; parked requests are told NOT_COORDINATOR."""
        logger.info("Unloading group metadata for %s with generation %d", group.group_id, group.generation_id)
        previous = group.current_state
        group.transition_to(GroupState.DEAD)
        if previous is GroupState.PREPARING_REBALANCE:
            for member in group.all_member_metadata:
                group.maybe_invoke_join_callback(member, JoinGroupResult(member.member_id, ErrorCode.not_coordinator))
            self.rebalance_purgatory.check_and_complete(group_join_key(group.group_id))
        elif previous in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            for member in group.all_member_metadata:
                group.maybe_invoke_sync_callback(member, SyncGroupResult(ErrorCode.not_coordinator))
                self.heartbeat_purgatory.check_and_complete(member_key(group.group_id, member.member_id))
        self._remove_sync_expiration(group)

    def _on_group_loaded(self, group: GroupMetadata) -> None:
        """Kafka: ``onGroupLoaded``."""
        logger.info("Loading group metadata for %s with generation %d", group.group_id, group.generation_id)
        assert group.is_(GroupState.STABLE) or group.is_(GroupState.EMPTY)
        if group.size > self.config.group_max_size:
            self.prepare_rebalance(group, f"Freshly-loaded group is over capacity ({self.config.group_max_size}). "
                                          "Rebalancing in order to give a chance for consumers to commit offsets")
        for member in group.all_member_metadata:
            self._complete_and_schedule_next_heartbeat_expiration(group, member)

    # -- rebalances (Kafka: the private half of GroupCoordinator) --

    def _set_and_propagate_assignment(self, group: GroupMetadata, assignment: Mapping[str, bytes]) -> None:
        assert group.is_(GroupState.COMPLETING_REBALANCE)
        for member in group.all_member_metadata:
            member.assignment = bytes(assignment[member.member_id])
        self._propagate_assignment(group, ErrorCode.none)

    def _reset_and_propagate_assignment_error(self, group: GroupMetadata, error: ErrorCode) -> None:
        assert group.is_(GroupState.COMPLETING_REBALANCE)
        for member in group.all_member_metadata:
            member.assignment = b""
        self._propagate_assignment(group, error)

    def _propagate_assignment(self, group: GroupMetadata, error: ErrorCode) -> None:
        ok = error is ErrorCode.none
        protocol_type, protocol_name = (group.protocol_type, group.protocol_name) if ok else (None, None)
        for member in group.all_member_metadata:
            if not member.assignment and ok:
                logger.warning("Sending empty assignment to member %s of %s for generation %d with no errors",
                               member.member_id, group.group_id, group.generation_id)
            if group.maybe_invoke_sync_callback(member, SyncGroupResult(error, protocol_type, protocol_name,
                                                                        member.assignment)):
                # A session that expired while the assignment was awaited was ignored: expect the next heartbeat.
                self._complete_and_schedule_next_heartbeat_expiration(group, member)

    def _complete_and_schedule_next_heartbeat_expiration(self, group: GroupMetadata, member: MemberMetadata) -> None:
        self._complete_and_schedule_next_expiration(group, member, member.session_timeout_ms)

    def _complete_and_schedule_next_expiration(self, group: GroupMetadata, member: MemberMetadata,
                                               timeout_ms: int) -> None:
        key = member_key(group.group_id, member.member_id)
        member.heartbeat_satisfied = True
        self.heartbeat_purgatory.check_and_complete(key)
        member.heartbeat_satisfied = False
        self.heartbeat_purgatory.try_complete_else_watch(
            DelayedHeartbeat(self, group, member.member_id, False, timeout_ms), [key])

    def _add_pending_member_expiration(self, group: GroupMetadata, member_id: str, timeout_ms: int) -> None:
        self.heartbeat_purgatory.try_complete_else_watch(
            DelayedHeartbeat(self, group, member_id, True, timeout_ms), [member_key(group.group_id, member_id)])

    def _remove_heartbeat_for_leaving_member(self, group: GroupMetadata, member_id: str) -> None:
        self.heartbeat_purgatory.check_and_complete(member_key(group.group_id, member_id))

    def _add_member_and_rebalance(self, rebalance_timeout_ms: int, session_timeout_ms: int, member_id: str,
                                  group_instance_id: str | None, client_id: str, client_host: str,
                                  protocol_type: str, protocols: list[tuple[str, bytes]], group: GroupMetadata,
                                  callback: Callable[[JoinGroupResult], None], reason: str) -> None:
        member = MemberMetadata(member_id, group_instance_id, client_id, client_host, rebalance_timeout_ms,
                                session_timeout_ms, protocol_type, protocols)
        member.is_new = True
        if group.is_(GroupState.PREPARING_REBALANCE) and group.generation_id == 0:
            group.new_member_added = True  # the initial delay may be extended
        group.add(member, callback)
        # A new member cannot heartbeat yet: its JoinGroup expires on its own timeout, and it retries if alive.
        self._complete_and_schedule_next_expiration(group, member, NEW_MEMBER_JOIN_TIMEOUT_MS)
        self._maybe_prepare_rebalance(group, f"Adding new member {member_id} with group instance id "
                                             f"{group_instance_id}; client reason: {reason}")

    def _update_static_member_and_rebalance(self, group: GroupMetadata, old_member_id: str, new_member_id: str,
                                            group_instance_id: str, protocols: list[tuple[str, bytes]],
                                            rebalance_timeout_ms: int, session_timeout_ms: int,
                                            callback: Callable[[JoinGroupResult], None], reason: str,
                                            support_skipping_assignment: bool) -> None:
        current_leader = group.leader_or_null
        member = group.replace_static_member(group_instance_id, old_member_id, new_member_id)
        self._complete_and_schedule_next_heartbeat_expiration(group, member)
        known = group.get(new_member_id)
        old_rebalance_timeout, old_session_timeout = known.rebalance_timeout_ms, known.session_timeout_ms
        group.update_member(known, protocols, rebalance_timeout_ms, session_timeout_ms, callback)
        # Kafka reads the "old" protocols after the update, so a failed store below keeps the new ones: ported as is.
        old_protocols = known.supported_protocols
        state = group.current_state
        if state is GroupState.STABLE:
            # A static member back with the same protocols does not rebalance: store the new member id only.
            if group.protocol_name == group.select_protocol():
                logger.info("Static member which joins during Stable stage and doesn't affect selectProtocol will "
                            "not trigger rebalance.")
                assignment = {m.member_id: m.assignment for m in group.all_member_metadata}

                def stored(error: ErrorCode) -> None:
                    if error is not ErrorCode.none:
                        logger.warning("Failed to persist metadata for group %s: %s", group.group_id, error.name)
                        group.update_member(known, old_protocols, old_rebalance_timeout, old_session_timeout, None)
                        old_member = group.replace_static_member(group_instance_id, new_member_id, old_member_id)
                        self._complete_and_schedule_next_heartbeat_expiration(group, old_member)
                        callback(JoinGroupResult(
                            member_id=UNKNOWN_MEMBER_ID, error=error, generation_id=group.generation_id,
                            protocol_type=group.protocol_type, protocol_name=group.protocol_name,
                            leader_id=current_leader or ""))
                    elif support_skipping_assignment:
                        # JoinGroup v9: the leader learns it leads but skips the assignor (the group is stable).
                        is_leader = group.is_leader(new_member_id)
                        group.maybe_invoke_join_callback(member, JoinGroupResult(
                            member_id=new_member_id, error=ErrorCode.none, generation_id=group.generation_id,
                            protocol_type=group.protocol_type, protocol_name=group.protocol_name,
                            leader_id=group.leader_or_null or "", skip_assignment=is_leader,
                            members=group.current_member_metadata() if is_leader else []))
                    else:
                        # Before v9: the old leader id, so that no member believes it must assign.
                        group.maybe_invoke_join_callback(member, JoinGroupResult(
                            member_id=new_member_id, error=ErrorCode.none, generation_id=group.generation_id,
                            protocol_type=group.protocol_type, protocol_name=group.protocol_name,
                            leader_id=current_leader or ""))

                self.group_manager.store_group(group, assignment, stored)
            else:
                self._maybe_prepare_rebalance(group, f"Group's selectedProtocol will change because static member "
                                                     f"{member.member_id} with instance id {group_instance_id} joined "
                                                     f"with change of protocol; client reason: {reason}")
        elif state is GroupState.COMPLETING_REBALANCE:
            # The old member id may already be in the leader's assignment: start over.
            self.prepare_rebalance(group, f"Updating metadata for static member {member.member_id} with instance id "
                                          f"{group_instance_id}; client reason: {reason}")
        elif state in (GroupState.EMPTY, GroupState.DEAD):
            raise IllegalStateError(f"Group {group.group_id} was not supposed to be in the state {state} when the "
                                 f"unknown static member {group_instance_id} rejoins.")

    def _update_member_and_rebalance(self, group: GroupMetadata, member: MemberMetadata,
                                     protocols: list[tuple[str, bytes]], rebalance_timeout_ms: int,
                                     session_timeout_ms: int, reason: str,
                                     callback: Callable[[JoinGroupResult], None]) -> None:
        group.update_member(member, protocols, rebalance_timeout_ms, session_timeout_ms, callback)
        self._maybe_prepare_rebalance(group, reason)

    def _maybe_prepare_rebalance(self, group: GroupMetadata, reason: str) -> None:
        if group.can_rebalance:
            self.prepare_rebalance(group, reason)

    def prepare_rebalance(self, group: GroupMetadata, reason: str) -> None:
        """Kafka: ``prepareRebalance`` (package-private there, for tests)."""
        if group.is_(GroupState.COMPLETING_REBALANCE):
            self._reset_and_propagate_assignment_error(group, ErrorCode.rebalance_in_progress)
        self._remove_sync_expiration(group)
        delay = self.config.group_initial_rebalance_delay_ms
        operation = InitialDelayedJoin(self, self.rebalance_purgatory, group, delay, delay,
                                       max(group.rebalance_timeout_ms - delay, 0)) if group.is_(GroupState.EMPTY) \
            else DelayedJoin(self, group, group.rebalance_timeout_ms)
        group.transition_to(GroupState.PREPARING_REBALANCE)
        logger.info("Preparing to rebalance group %s in state %s with old generation %d (%s-%d) (reason: %s)",
                    group.group_id, group.current_state, group.generation_id, GROUP_METADATA_TOPIC_NAME,
                    self.partition_for(group.group_id), reason)
        self.rebalance_purgatory.try_complete_else_watch(operation, [group_join_key(group.group_id)])

    def _remove_member_and_update_group(self, group: GroupMetadata, member: MemberMetadata, reason: str) -> None:
        # A new member may time out with its JoinGroup parked: answer it before it goes, so that it rejoins.
        group.maybe_invoke_join_callback(member, JoinGroupResult(UNKNOWN_MEMBER_ID, ErrorCode.unknown_member_id))
        group.remove(member.member_id)
        state = group.current_state
        if state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance(group, reason)
        elif state is GroupState.PREPARING_REBALANCE:
            self.rebalance_purgatory.check_and_complete(group_join_key(group.group_id))

    def _remove_pending_member_and_update_group(self, group: GroupMetadata, member_id: str) -> None:
        group.remove(member_id)
        if group.is_(GroupState.PREPARING_REBALANCE):
            self.rebalance_purgatory.check_and_complete(group_join_key(group.group_id))

    def try_complete_join(self, group: GroupMetadata, force_complete: Callable[[], bool]) -> bool:
        """Kafka: ``tryCompleteJoin``."""
        return force_complete() if group.has_all_members_joined else False

    def on_complete_join(self, group: GroupMetadata) -> None:
        """Kafka: ``onCompleteJoin``: drop the dynamic members that did not rejoin, then start the next
        generation and answer every parked JoinGroup (the leader's with the members' metadata)."""
        gone = [m for m in group.not_yet_rejoined_members().values() if not m.is_static_member]
        if gone:
            logger.info("Group %s removed dynamic members who haven't joined: %s", group.group_id,
                        [m.member_id for m in gone])
            for member in gone:
                group.remove(member.member_id)
                self._remove_heartbeat_for_leaving_member(group, member.member_id)
        if group.is_(GroupState.DEAD):
            logger.info("Group %s is dead, skipping rebalance stage", group.group_id)
        elif not group.maybe_elect_new_joined_leader() and group.all_members:
            # Nobody rejoined: wait another rebalance timeout for the sessions to expire them.
            logger.error("Group %s could not complete rebalance because no members rejoined", group.group_id)
            self.rebalance_purgatory.try_complete_else_watch(DelayedJoin(self, group, group.rebalance_timeout_ms),
                                                             [group_join_key(group.group_id)])
        else:
            group.init_next_generation()
            if group.is_(GroupState.EMPTY):
                logger.info("Group %s with generation %d is now empty (%s-%d)", group.group_id, group.generation_id,
                            GROUP_METADATA_TOPIC_NAME, self.partition_for(group.group_id))

                def stored(error: ErrorCode) -> None:
                    if error is not ErrorCode.none:
                        # Safe to lose: an empty generation has no member to time out.
                        logger.warning("Failed to write empty metadata for group %s: %s", group.group_id, error.name)

                self.group_manager.store_group(group, {}, stored)
            else:
                logger.info("Stabilized group %s generation %d (%s-%d) with %d members", group.group_id,
                            group.generation_id, GROUP_METADATA_TOPIC_NAME, self.partition_for(group.group_id),
                            group.size)
                for member in group.all_member_metadata:
                    result = self._current_generation_result(group, member.member_id,
                                                             group.is_leader(member.member_id))
                    group.maybe_invoke_join_callback(member, result)
                    self._complete_and_schedule_next_heartbeat_expiration(group, member)
                    member.is_new = False
                    group.add_pending_sync_member(member.member_id)
                self._schedule_pending_sync(group)

    def _remove_pending_sync_member(self, group: GroupMetadata, member_id: str) -> None:
        group.remove_pending_sync_member(member_id)
        self.rebalance_purgatory.check_and_complete(group_sync_key(group.group_id))

    def _remove_sync_expiration(self, group: GroupMetadata) -> None:
        group.clear_pending_sync_members()
        self.rebalance_purgatory.check_and_complete(group_sync_key(group.group_id))

    def _schedule_pending_sync(self, group: GroupMetadata) -> None:
        self.rebalance_purgatory.try_complete_else_watch(
            DelayedSync(self, group, group.generation_id, group.rebalance_timeout_ms), [group_sync_key(group.group_id)])

    def try_complete_pending_sync(self, group: GroupMetadata, generation_id: int,
                                  force_complete: Callable[[], bool]) -> bool:
        """Kafka: ``tryCompletePendingSync``."""
        if generation_id != group.generation_id:
            return force_complete()
        if group.current_state in (GroupState.DEAD, GroupState.EMPTY, GroupState.PREPARING_REBALANCE):
            return force_complete()
        return force_complete() if group.has_received_sync_from_all_members else False

    def on_expire_pending_sync(self, group: GroupMetadata, generation_id: int) -> None:
        """Kafka: ``onExpirePendingSync``: the members that sent no SyncGroup in time are removed, and the group
        rebalances."""
        if generation_id != group.generation_id:
            logger.error("Received unexpected notification of sync expiration for %s with an old generation %d while "
                         "the group has %d.", group.group_id, generation_id, group.generation_id)
        elif group.current_state in (GroupState.DEAD, GroupState.EMPTY, GroupState.PREPARING_REBALANCE):
            logger.error("Received unexpected notification of sync expiration after group %s already transitioned "
                         "to the %s state.", group.group_id, group.current_state)
        elif not group.has_received_sync_from_all_members:
            pending = group.all_pending_sync_members
            for member_id in pending:
                group.remove(member_id)
                self._remove_heartbeat_for_leaving_member(group, member_id)
            logger.debug("Group %s removed members who haven't sent their sync request: %s", group.group_id, pending)
            self.prepare_rebalance(group, f"Removing {sorted(pending)} on pending sync request expiration")

    def try_complete_heartbeat(self, group: GroupMetadata, member_id: str, is_pending: bool,
                               force_complete: Callable[[], bool]) -> bool:
        """Kafka: ``tryCompleteHeartbeat``."""
        if group.is_(GroupState.DEAD):
            return force_complete()
        if is_pending:
            return force_complete() if group.has(member_id) else False
        if not group.has(member_id) or group.get(member_id).has_satisfied_heartbeat:
            return force_complete()
        return False

    def on_expire_heartbeat(self, group: GroupMetadata, member_id: str, is_pending: bool) -> None:
        """Kafka: ``onExpireHeartbeat``."""
        if group.is_(GroupState.DEAD):
            logger.info("Received notification of heartbeat expiration for member %s after group %s had already been "
                        "unloaded or deleted.", member_id, group.group_id)
        elif is_pending:
            logger.info("Pending member %s in group %s has been removed after session timeout expiration.",
                        member_id, group.group_id)
            self._remove_pending_member_and_update_group(group, member_id)
        elif not group.has(member_id):
            logger.debug("Member %s has already been removed from the group.", member_id)
        else:
            member = group.get(member_id)
            if not member.has_satisfied_heartbeat:
                logger.info("Member %s in group %s has failed, removing it from the group", member.member_id,
                            group.group_id)
                self._remove_member_and_update_group(group, member, f"removing member {member.member_id} on "
                                                                    "heartbeat expiration")

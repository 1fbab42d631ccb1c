"""Kafka 3.8.0's ``GroupCoordinatorTest`` (``core/src/test/scala/unit/kafka/coordinator/group/``), ported: the
classic group coordinator's join, sync, heartbeat, leave, commit, fetch, describe, list and delete paths and its
rebalances, each test named after Kafka's and asserting what it asserts.  The coordinator writes to real logs
(Kafka's test mocks the replica manager); the clock is moved by hand, as Kafka's ``MockTimer`` is.

Kafka tests not ported:
- ``testBasicFetchTxnOffsets``, ``testFetchTxnOffsetsWithAbort``, ``testFetchPendingTxnOffsetsWithAbort``,
  ``testFetchPendingTxnOffsetsWithCommit``, ``testFetchTxnOffsetsIgnoreSpuriousCommit``,
  ``testFetchTxnOffsetsOneProducerMultipleGroups``, ``testFetchTxnOffsetsMultipleProducersOneGroup``,
  ``testTxnCommitOffsetWithFencedInstanceId``, ``testTxnCommitOffsetWithInvalidMemberId``,
  ``testTxnCommitOffsetWithKnownMemberId``, ``testTxnCommitOffsetWithIllegalGeneration``,
  ``testTxnCommitOffsetWithLegalGeneration``, ``testVerificationErrorsForTxnOffsetCommits``,
  ``testTxnOffsetMetadataTooLarge``: TxnOffsetCommit is the transaction coordinator's part (issue 34's later part);
  the pending offsets it fills are answered by ``require_stable`` already (test_group_restart.py).
"""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from kafkalog.broker.classic_group_coordinator import NEW_MEMBER_JOIN_TIMEOUT_MS
from kafkalog.broker.group_metadata import GroupMetadata, GroupState, JoinGroupResult, MemberMetadata
from kafkalog.errors import IllegalStateError, RecordTooLargeError
from kafkalog.messages import write_version_prefixed
from tests.broker.conftest import (
    DEFAULT_REBALANCE_TIMEOUT,
    DEFAULT_SESSION_TIMEOUT,
    GROUP_ID,
    GROUP_INITIAL_REBALANCE_DELAY,
    GROUP_INSTANCE_ID,
    GROUP_MAX_SESSION_TIMEOUT,
    GROUP_MAX_SIZE,
    GROUP_MIN_SESSION_TIMEOUT,
    MEMBER_ID,
    METADATA,
    OTHER_GROUP_ID,
    PROTOCOL_NAME,
    PROTOCOL_TYPE,
    PROTOCOLS,
    UNKNOWN,
    Box,
    Harness,
    verify_leave_group_result,
)

E = ErrorCode
TP = ("topic", 0)


def _stable_group_of_one(h: Harness, **join: int) -> tuple[str, int]:
    result = h.dynamic_join_group(GROUP_ID, UNKNOWN, **join)
    assert result.error is E.none
    assert result.leader_id == result.member_id
    sync = h.sync_group_leader(GROUP_ID, result.generation_id, result.member_id, {result.member_id: b""})
    assert sync.error is E.none
    return result.member_id, result.generation_id


def _two_members(h: Harness) -> tuple[str, str, int]:
    """A stable group of one, then a second member joins and the first rejoins: both in the next generation."""
    first, _ = _stable_group_of_one(h)
    other = h.send_join_group(GROUP_ID, UNKNOWN)
    join = h.send_join_group(GROUP_ID, first)
    join_result, other_result = join.get(), other.get()
    assert join_result.error is E.none and other_result.error is E.none
    assert join_result.generation_id == other_result.generation_id
    assert join_result.leader_id == first and other_result.leader_id == first
    return first, other_result.member_id, join_result.generation_id


# -- JoinGroup --

def test_join_group_wrong_coordinator(harness: Harness) -> None:
    assert harness.dynamic_join_group(OTHER_GROUP_ID, UNKNOWN).error is E.not_coordinator
    assert harness.static_join_group(OTHER_GROUP_ID, UNKNOWN, GROUP_INSTANCE_ID).error is E.not_coordinator


def test_join_group_should_receive_error_if_group_over_max_size(harness: Harness) -> None:
    h = harness
    rebalance_timeout = GROUP_INITIAL_REBALANCE_DELAY * 2
    boxes = []
    for i in range(1, GROUP_MAX_SIZE + 1):
        boxes.append(h.send_join_group(GROUP_ID, UNKNOWN, rebalance_timeout=rebalance_timeout))
        if i != 1:
            h.advance(GROUP_INITIAL_REBALANCE_DELAY)
    h.advance(GROUP_INITIAL_REBALANCE_DELAY + 1)
    assert all(b.get().error is E.none for b in boxes)
    error = h.send_join_group(GROUP_ID, UNKNOWN, rebalance_timeout=rebalance_timeout).get()
    assert error.error is E.group_max_size_reached


def test_dynamic_members_join_group_with_max_size_and_required_known_member(harness: Harness) -> None:
    h = harness
    n = GROUP_MAX_SIZE + 1
    member_ids = [h.send_join_group(GROUP_ID, UNKNOWN, require_known_member_id=True).get().member_id
                  for _ in range(n)]
    boxes = [h.send_join_group(GROUP_ID, m, require_known_member_id=True) for m in member_ids]
    h.advance(GROUP_INITIAL_REBALANCE_DELAY + 1)
    h.advance(GROUP_INITIAL_REBALANCE_DELAY + 1)
    errors = [b.get().error for b in boxes]
    assert errors.count(E.none) == GROUP_MAX_SIZE
    assert errors.count(E.group_max_size_reached) == n - GROUP_MAX_SIZE
    rejoin = [h.send_join_group(GROUP_ID, m, require_known_member_id=True).get().error for m in member_ids]
    assert rejoin == errors


def test_dynamic_members_join_group_with_max_size(harness: Harness) -> None:
    h = harness
    n = GROUP_MAX_SIZE + 1
    boxes = [h.send_join_group(GROUP_ID, UNKNOWN) for _ in range(n)]
    h.advance(GROUP_INITIAL_REBALANCE_DELAY + 1)
    h.advance(GROUP_INITIAL_REBALANCE_DELAY + 1)
    results = [b.get() for b in boxes]
    errors = [r.error for r in results]
    assert errors.count(E.none) == GROUP_MAX_SIZE
    assert errors.count(E.group_max_size_reached) == n - GROUP_MAX_SIZE
    rejoin = [h.send_join_group(GROUP_ID, r.member_id).get().error for r in results]
    assert rejoin == errors


def test_static_members_join_group_with_max_size(harness: Harness) -> None:
    h = harness
    n = GROUP_MAX_SIZE + 1
    instance_ids = [f"instance-id-{i}" for i in range(1, n + 1)]
    boxes = [h.send_join_group(GROUP_ID, UNKNOWN, group_instance_id=i) for i in instance_ids]
    h.advance(GROUP_INITIAL_REBALANCE_DELAY + 1)
    h.advance(GROUP_INITIAL_REBALANCE_DELAY + 1)
    results = [b.get() for b in boxes]
    errors = [r.error for r in results]
    assert errors.count(E.none) == GROUP_MAX_SIZE
    assert errors.count(E.group_max_size_reached) == n - GROUP_MAX_SIZE
    rejoin = [h.send_join_group(GROUP_ID, r.member_id, group_instance_id=i).get().error
              for i, r in zip(instance_ids, results, strict=True)]
    assert rejoin == errors


def test_dynamic_members_can_re_join_group_with_max_size_while_rebalancing(harness: Harness) -> None:
    h = harness
    n = GROUP_MAX_SIZE + 1
    member_ids = [h.send_join_group(GROUP_ID, UNKNOWN, require_known_member_id=True).get().member_id
                  for _ in range(n)]
    for m in member_ids:
        h.send_join_group(GROUP_ID, m, require_known_member_id=True)
    boxes = [h.send_join_group(GROUP_ID, m, require_known_member_id=True) for m in member_ids]
    h.advance(GROUP_INITIAL_REBALANCE_DELAY + 1)
    h.advance(GROUP_INITIAL_REBALANCE_DELAY + 1)
    errors = [b.get().error for b in boxes]
    assert errors.count(E.none) == GROUP_MAX_SIZE
    assert errors.count(E.group_max_size_reached) == n - GROUP_MAX_SIZE


def test_last_joining_members_are_kicked_out_when_re_joining_group_with_max_size(harness: Harness) -> None:
    h = harness
    n = GROUP_MAX_SIZE + 2
    group = GroupMetadata(GROUP_ID, GroupState.STABLE, h.timer.time_ms)
    member_ids = [group.generate_member_id("consumer-test", None) for _ in range(n)]
    for m in member_ids:
        group.add(MemberMetadata(m, None, "consumer-test", "localhost", DEFAULT_REBALANCE_TIMEOUT,
                                 GROUP_MAX_SESSION_TIMEOUT, PROTOCOL_TYPE, PROTOCOLS))
    h.manager.add_group(group)
    h.coordinator.prepare_rebalance(group, "")
    boxes = [h.send_join_group(GROUP_ID, m, session_timeout=GROUP_MAX_SESSION_TIMEOUT) for m in member_ids]
    h.advance(DEFAULT_REBALANCE_TIMEOUT + 1)
    errors = [b.get().error for b in boxes]
    assert set(errors[:GROUP_MAX_SIZE]) == {E.none}
    assert set(errors[GROUP_MAX_SIZE:]) == {E.group_max_size_reached}
    for m in member_ids[GROUP_MAX_SIZE:]:
        assert not group.has(m)


def test_join_group_session_timeout_too_small(harness: Harness) -> None:
    result = harness.dynamic_join_group(GROUP_ID, UNKNOWN, session_timeout=GROUP_MIN_SESSION_TIMEOUT - 1)
    assert result.error is E.invalid_session_timeout


def test_join_group_session_timeout_too_large(harness: Harness) -> None:
    result = harness.dynamic_join_group(GROUP_ID, UNKNOWN, session_timeout=GROUP_MAX_SESSION_TIMEOUT + 1)
    assert result.error is E.invalid_session_timeout


def test_join_group_unknown_consumer_new_group(harness: Harness) -> None:
    assert harness.dynamic_join_group(GROUP_ID, MEMBER_ID).error is E.unknown_member_id
    assert harness.static_join_group(GROUP_ID, MEMBER_ID, GROUP_INSTANCE_ID).error is E.unknown_member_id


def test_invalid_group_id(harness: Harness) -> None:
    assert harness.dynamic_join_group("", UNKNOWN).error is E.invalid_group_id


def test_valid_join_group(harness: Harness) -> None:
    assert harness.dynamic_join_group(GROUP_ID, UNKNOWN).error is E.none


def test_join_group_inconsistent_protocol_type(harness: Harness) -> None:
    assert harness.dynamic_join_group(GROUP_ID, UNKNOWN).error is E.none
    other = harness.send_join_group(GROUP_ID, UNKNOWN, "connect").get()
    assert other.error is E.inconsistent_group_protocol


def test_join_group_with_empty_protocol_type(harness: Harness) -> None:
    assert harness.dynamic_join_group(GROUP_ID, UNKNOWN, "").error is E.inconsistent_group_protocol
    assert harness.static_join_group(GROUP_ID, UNKNOWN, GROUP_INSTANCE_ID, "").error is E.inconsistent_group_protocol


def test_join_group_with_empty_group_protocol(harness: Harness) -> None:
    assert harness.dynamic_join_group(GROUP_ID, UNKNOWN, protocols=[]).error is E.inconsistent_group_protocol


def test_new_member_timeout_completion(harness: Harness) -> None:
    h = harness
    session_timeout = NEW_MEMBER_JOIN_TIMEOUT_MS + 5000
    box = h.send_join_group(GROUP_ID, UNKNOWN, session_timeout=session_timeout)
    h.advance(GROUP_INITIAL_REBALANCE_DELAY + 1)
    result = box.get()
    group = h.group()
    assert result.error is E.none
    assert sum(1 for m in group.all_member_metadata if m.is_new) == 0
    sync = h.sync_group_leader(GROUP_ID, result.generation_id, result.member_id, {result.member_id: b""})
    assert sync.error is E.none
    assert group.size == 1
    h.advance(NEW_MEMBER_JOIN_TIMEOUT_MS + 100)
    assert group.size == 1  # the new-member timeout no longer applies
    h.advance(session_timeout + 100)
    assert group.size == 0


def test_new_member_join_expiration(harness: Harness) -> None:
    h = harness
    session_timeout = NEW_MEMBER_JOIN_TIMEOUT_MS + 5000
    rebalance_timeout = NEW_MEMBER_JOIN_TIMEOUT_MS * 2
    first = h.dynamic_join_group(GROUP_ID, UNKNOWN, session_timeout=session_timeout,
                                 rebalance_timeout=rebalance_timeout)
    assert first.leader_id == first.member_id
    assert first.error is E.none
    group = h.group()
    assert sum(1 for m in group.all_member_metadata if m.is_new) == 0
    box = h.send_join_group(GROUP_ID, UNKNOWN, session_timeout=session_timeout, rebalance_timeout=rebalance_timeout)
    assert not box.done
    assert len(group.all_members) == 2
    assert sum(1 for m in group.all_member_metadata if m.is_new) == 1
    new_member = next(m for m in group.all_member_metadata if m.is_new)
    assert new_member.member_id != first.member_id
    h.advance(NEW_MEMBER_JOIN_TIMEOUT_MS + 1)
    assert box.done
    assert box.get().error is E.unknown_member_id
    assert len(group.all_members) == 1
    assert sum(1 for m in group.all_member_metadata if m.is_new) == 0
    assert group.all_members[0] == first.member_id


def _verify_session_expiration(h: Harness) -> None:
    h.advance(DEFAULT_SESSION_TIMEOUT + 1)
    group = h.group()
    assert group.current_state is GroupState.EMPTY
    assert not group.all_members


def test_new_member_failure_after_join_group_completion(harness: Harness) -> None:
    _two_members(harness)
    _verify_session_expiration(harness)


def test_new_member_failure_after_sync_group_completion(harness: Harness) -> None:
    h = harness
    first, second, generation = _two_members(h)
    h.send_sync_group_follower(GROUP_ID, generation, second)
    sync = h.sync_group_leader(GROUP_ID, generation, first, {first: b"", second: b""})
    assert sync.error is E.none
    _verify_session_expiration(h)


def test_join_group_inconsistent_group_protocol(harness: Harness) -> None:
    h = harness
    box = h.send_join_group(GROUP_ID, UNKNOWN, protocols=[("range", METADATA)])
    other = h.dynamic_join_group(GROUP_ID, UNKNOWN, protocols=[("roundrobin", METADATA)])
    h.advance(GROUP_INITIAL_REBALANCE_DELAY + 1)
    assert box.get().error is E.none
    assert other.error is E.inconsistent_group_protocol


def test_join_group_unknown_consumer_existing_group(harness: Harness) -> None:
    assert harness.dynamic_join_group(GROUP_ID, UNKNOWN).error is E.none
    assert harness.send_join_group(GROUP_ID, "memberId").get().error is E.unknown_member_id


def test_join_group_unknown_consumer_new_dead_group(harness: Harness) -> None:
    harness.manager.add_group(GroupMetadata("deadGroupId", GroupState.DEAD, harness.timer.time_ms))
    assert harness.dynamic_join_group("deadGroupId", UNKNOWN).error is E.coordinator_not_available


def test_sync_dead_group(harness: Harness) -> None:
    harness.manager.add_group(GroupMetadata("deadGroupId", GroupState.DEAD, harness.timer.time_ms))
    assert harness.sync_group_follower("deadGroupId", 1, "memberId").error is E.coordinator_not_available


def test_join_group_from_unchanged_follower_does_not_rebalance(harness: Harness) -> None:
    h = harness
    _first, other, generation = _two_members(h)
    follower = h.send_join_group(GROUP_ID, other).get()
    assert follower.error is E.none
    assert follower.generation_id == generation


def test_join_group_from_unchanged_leader_should_rebalance(harness: Harness) -> None:
    h = harness
    first, generation = _stable_group_of_one(h)
    second = h.send_join_group(GROUP_ID, first).get()
    assert second.error is E.none
    assert second.generation_id != generation


# -- pending members (KIP-394) --

def _setup_group_with_pending_member(h: Harness) -> str:
    """Kafka: ``setupGroupWithPendingMember``."""
    join1 = h.dynamic_join_group(GROUP_ID, UNKNOWN)
    h.assert_group_state(GroupState.COMPLETING_REBALANCE)
    assert h.sync_group_leader(GROUP_ID, join1.generation_id, join1.member_id, {join1.member_id: b""}).error is E.none
    h.assert_group_state(GroupState.STABLE)
    second_box = h.send_join_group(GROUP_ID, UNKNOWN)
    first_box = h.send_join_group(GROUP_ID, join1.member_id)
    first, second = first_box.get(), second_box.get()
    h.assert_group_state(GroupState.COMPLETING_REBALANCE)
    assert h.sync_group_leader(GROUP_ID, first.generation_id, join1.member_id,
                               {join1.member_id: b""}).error is E.none
    h.assert_group_state(GroupState.STABLE)
    h.send_join_group(GROUP_ID, first.member_id)
    h.assert_group_state(GroupState.PREPARING_REBALANCE)
    pending = h.join_group_partial(GROUP_ID, UNKNOWN, session_timeout=100)
    assert h.group().num_pending == 1
    h.send_join_group(GROUP_ID, second.member_id)
    h.assert_group_state(GroupState.PREPARING_REBALANCE)
    assert h.group().num_pending == 1
    return pending.member_id


def test_join_group_completion_when_pending_member_joins(harness: Harness) -> None:
    pending = _setup_group_with_pending_member(harness)
    harness.send_join_group(GROUP_ID, pending).get()
    harness.assert_group_state(GroupState.COMPLETING_REBALANCE)
    assert len(harness.group().all_members) == 3
    assert harness.group().num_pending == 0


def test_join_group_completion_when_pending_member_times_out(harness: Harness) -> None:
    _setup_group_with_pending_member(harness)
    harness.advance(120)
    harness.assert_group_state(GroupState.COMPLETING_REBALANCE)
    assert len(harness.group().all_members) == 2
    assert harness.group().num_pending == 0


def test_pending_members_leaves_group(harness: Harness) -> None:
    pending = _setup_group_with_pending_member(harness)
    verify_leave_group_result(harness.single_leave_group(GROUP_ID, pending))
    harness.assert_group_state(GroupState.COMPLETING_REBALANCE)
    assert len(harness.group().all_members) == 2
    assert len(harness.group().all_dynamic_members()) == 2
    assert harness.group().num_pending == 0


def test_pending_member_batch_leave_group(harness: Harness) -> None:
    pending = _setup_group_with_pending_member(harness)
    result = harness.batch_leave_group(GROUP_ID, [("", GROUP_INSTANCE_ID), (pending, None)])
    verify_leave_group_result(result, E.none, [E.unknown_member_id, E.none])


# -- heartbeats and sessions --

def test_heartbeat_wrong_coordinator(harness: Harness) -> None:
    assert harness.heartbeat(OTHER_GROUP_ID, MEMBER_ID, -1) is E.not_coordinator


def test_heartbeat_unknown_group(harness: Harness) -> None:
    assert harness.heartbeat(GROUP_ID, MEMBER_ID, -1) is E.unknown_member_id


def test_heartbeat_dead_group(harness: Harness) -> None:
    harness.manager.add_group(GroupMetadata("deadGroupId", GroupState.DEAD, harness.timer.time_ms))
    assert harness.heartbeat("deadGroupId", "memberId", 1) is E.coordinator_not_available


def test_heartbeat_empty_group(harness: Harness) -> None:
    group = GroupMetadata(GROUP_ID, GroupState.EMPTY, harness.timer.time_ms)
    group.add(MemberMetadata("memberId", GROUP_INSTANCE_ID, "consumer-test", "localhost", DEFAULT_REBALANCE_TIMEOUT,
                             DEFAULT_SESSION_TIMEOUT, PROTOCOL_TYPE, [("range", b""), ("roundrobin", b"")]))
    harness.manager.add_group(group)
    assert harness.heartbeat(GROUP_ID, "memberId", 0) is E.unknown_member_id


def test_heartbeat_unknown_consumer_existing_group(harness: Harness) -> None:
    _stable_group_of_one(harness)
    assert harness.heartbeat(GROUP_ID, "memberId", 1) is E.unknown_member_id


def test_heartbeat_rebalance_in_progress(harness: Harness) -> None:
    result = harness.dynamic_join_group(GROUP_ID, UNKNOWN)
    assert result.error is E.none
    assert harness.heartbeat(GROUP_ID, result.member_id, 1) is E.none


def test_heartbeat_illegal_generation(harness: Harness) -> None:
    member, _ = _stable_group_of_one(harness)
    assert harness.heartbeat(GROUP_ID, member, 2) is E.illegal_generation


def test_valid_heartbeat(harness: Harness) -> None:
    member, _ = _stable_group_of_one(harness)
    assert harness.heartbeat(GROUP_ID, member, 1) is E.none


def test_session_timeout(harness: Harness) -> None:
    member, _ = _stable_group_of_one(harness)
    harness.advance(DEFAULT_SESSION_TIMEOUT + 100)
    assert harness.heartbeat(GROUP_ID, member, 1) is E.unknown_member_id


def test_heartbeat_maintains_session(harness: Harness) -> None:
    session_timeout = 1000
    member, _ = _stable_group_of_one(harness, rebalance_timeout=session_timeout, session_timeout=session_timeout)
    harness.advance(session_timeout // 2)
    assert harness.heartbeat(GROUP_ID, member, 1) is E.none
    harness.advance(session_timeout // 2 + 100)
    assert harness.heartbeat(GROUP_ID, member, 1) is E.none


def test_commit_maintains_session(harness: Harness) -> None:
    session_timeout = 1000
    member, generation = _stable_group_of_one(harness, rebalance_timeout=session_timeout,
                                              session_timeout=session_timeout)
    harness.advance(session_timeout // 2)
    assert harness.commit_offsets(GROUP_ID, member, generation, {TP: harness.offset(0)}) == {TP: E.none}
    harness.advance(session_timeout // 2 + 100)
    assert harness.heartbeat(GROUP_ID, member, 1) is E.none


def test_session_timeout_during_rebalance(harness: Harness) -> None:
    h = harness
    first, generation = _stable_group_of_one(h, rebalance_timeout=2000, session_timeout=1000)
    other = h.send_join_group(GROUP_ID, UNKNOWN)
    h.advance(500)
    assert h.heartbeat(GROUP_ID, first, generation) is E.rebalance_in_progress
    h.advance(1100)
    assert h.heartbeat(GROUP_ID, first, generation) is E.unknown_member_id
    assert other.get().error is E.none


def test_rebalance_completes_before_member_joins(harness: Harness) -> None:
    h = harness
    first_join = h.static_join_group(GROUP_ID, UNKNOWN, "leader", rebalance_timeout=1200, session_timeout=1000)
    first, first_generation = first_join.member_id, first_join.generation_id
    assert first_join.leader_id == first and first_join.error is E.none
    assert h.sync_group_leader(GROUP_ID, first_generation, first, {first: b""}).error is E.none
    other_box = h.send_join_group(GROUP_ID, UNKNOWN)
    for expected in (E.rebalance_in_progress, E.rebalance_in_progress):
        h.advance(DEFAULT_SESSION_TIMEOUT)
        assert h.heartbeat(GROUP_ID, first, first_generation) is expected
    h.advance(DEFAULT_SESSION_TIMEOUT)
    other_join = other_box.get()
    other, other_generation = other_join.member_id, other_join.generation_id
    assert h.sync_group_leader(GROUP_ID, other_generation, other, {other: b""}).error is E.none
    assert other_join.error is E.none
    assert h.heartbeat(GROUP_ID, first, first_generation) is E.illegal_generation
    for expected in (E.none, E.none, E.rebalance_in_progress):
        h.advance(DEFAULT_SESSION_TIMEOUT)
        assert h.heartbeat(GROUP_ID, other, other_generation) is expected
    rejoin = h.send_join_group(GROUP_ID, other).get()
    assert rejoin.error is E.none
    assert h.sync_group_leader(GROUP_ID, rejoin.generation_id, other, {other: b""}).error is E.none
    for _ in range(20):
        h.advance(500)
        assert h.heartbeat(GROUP_ID, other, rejoin.generation_id) is E.none


def test_heartbeat_during_rebalance_causes_rebalance_in_progress(harness: Harness) -> None:
    h = harness
    join = h.dynamic_join_group(GROUP_ID, UNKNOWN)
    assert join.error is E.none
    h.send_join_group(GROUP_ID, UNKNOWN)  # a new consumer: a rebalance starts
    assert h.heartbeat(GROUP_ID, join.member_id, join.generation_id) is E.rebalance_in_progress


def test_generation_id_increments_on_rebalance(harness: Harness) -> None:
    h = harness
    join = h.dynamic_join_group(GROUP_ID, UNKNOWN)
    assert join.generation_id == 1
    assert join.error is E.none
    assert h.sync_group_leader(GROUP_ID, join.generation_id, join.member_id, {join.member_id: b""}).error is E.none
    rejoin = h.send_join_group(GROUP_ID, join.member_id).get()
    assert rejoin.generation_id == 2
    assert rejoin.error is E.none


# -- SyncGroup --

def test_sync_group_empty_assignment(harness: Harness) -> None:
    join = harness.dynamic_join_group(GROUP_ID, UNKNOWN)
    assert join.error is E.none
    sync = harness.sync_group_leader(GROUP_ID, join.generation_id, join.member_id, {})
    assert sync.error is E.none
    assert sync.assignment == b""
    assert harness.heartbeat(GROUP_ID, join.member_id, 1) is E.none


def test_sync_group_not_coordinator(harness: Harness) -> None:
    assert harness.sync_group_follower(OTHER_GROUP_ID, 1, MEMBER_ID).error is E.not_coordinator


def test_sync_group_from_unknown_group(harness: Harness) -> None:
    assert harness.sync_group_follower(GROUP_ID, 1, MEMBER_ID).error is E.unknown_member_id


def test_sync_group_from_unknown_member(harness: Harness) -> None:
    _member, generation = _stable_group_of_one(harness)
    assert harness.sync_group_follower(GROUP_ID, generation, "blah").error is E.unknown_member_id


def test_sync_group_from_illegal_generation(harness: Harness) -> None:
    join = harness.dynamic_join_group(GROUP_ID, UNKNOWN)
    assert join.error is E.none
    sync = harness.sync_group_leader(GROUP_ID, join.generation_id + 1, join.member_id, {join.member_id: b""})
    assert sync.error is E.illegal_generation


def _sync_group_protocol_type_and_name_with(h: Harness, protocol_type: str | None, protocol_name: str | None,
                                            expected: ErrorCode) -> None:
    """Kafka: ``testSyncGroupProtocolTypeAndNameWith``: a leader and a follower, both static, sync with the given
    protocol type and name; on an error neither is returned."""
    leader, follower = _join_static_pair(h)
    leader_box = h.send_sync_group_leader(GROUP_ID, 1, leader, {leader: b""}, protocol_type, protocol_name, "leader")
    follower_box = h.send_sync_group_follower(GROUP_ID, 1, follower, protocol_type, protocol_name, "follower")
    for box in (leader_box, follower_box):
        result = box.get()
        assert result.error is expected
        if expected is E.none:
            assert (result.protocol_type, result.protocol_name) == (PROTOCOL_TYPE, PROTOCOL_NAME)
        else:
            assert (result.protocol_type, result.protocol_name) == (None, None)


def test_sync_group_returns_an_error_when_protocol_type_is_inconsistent(harness: Harness) -> None:
    _sync_group_protocol_type_and_name_with(harness, "whatever", None, E.inconsistent_group_protocol)


def test_sync_group_returns_an_error_when_protocol_name_is_inconsistent(harness: Harness) -> None:
    _sync_group_protocol_type_and_name_with(harness, None, "whatever", E.inconsistent_group_protocol)


def test_sync_group_succeed_when_protocol_type_and_name_are_not_provided(harness: Harness) -> None:
    _sync_group_protocol_type_and_name_with(harness, None, None, E.none)


def test_sync_group_succeed_when_protocol_type_and_name_are_consistent(harness: Harness) -> None:
    _sync_group_protocol_type_and_name_with(harness, PROTOCOL_TYPE, PROTOCOL_NAME, E.none)


def test_rebalance_times_out_when_sync_request_is_not_received(harness: Harness) -> None:
    h = harness
    results = _join_with_n_members(h, 3)
    assert {r.error for r in results} == {E.none}
    h.advance(DEFAULT_REBALANCE_TIMEOUT // 2)
    for r in results:
        assert h.heartbeat(GROUP_ID, r.member_id, r.generation_id) is E.none
    h.advance(DEFAULT_REBALANCE_TIMEOUT // 2 + 1)
    for r in results:
        assert h.heartbeat(GROUP_ID, r.member_id, r.generation_id) is E.unknown_member_id


def test_rebalance_times_out_when_sync_request_is_not_received_from_followers(harness: Harness) -> None:
    h = harness
    results = _join_with_n_members(h, 3)
    h.advance(DEFAULT_REBALANCE_TIMEOUT // 2)
    for r in results:
        assert h.heartbeat(GROUP_ID, r.member_id, r.generation_id) is E.none
    leader = h.send_sync_group_leader(GROUP_ID, results[0].generation_id, results[0].member_id,
                                      {r.member_id: b"" for r in results}, PROTOCOL_TYPE, PROTOCOL_NAME)
    assert leader.get().error is E.none
    assert h.heartbeat(GROUP_ID, results[0].member_id, results[0].generation_id) is E.none
    h.advance(DEFAULT_REBALANCE_TIMEOUT // 2 + 1)
    assert h.heartbeat(GROUP_ID, results[0].member_id, results[0].generation_id) is E.rebalance_in_progress
    for r in results[1:]:
        assert h.heartbeat(GROUP_ID, r.member_id, r.generation_id) is E.unknown_member_id


def test_rebalance_times_out_when_sync_request_is_not_received_from_leaders(harness: Harness) -> None:
    h = harness
    results = _join_with_n_members(h, 3)
    h.advance(DEFAULT_REBALANCE_TIMEOUT // 2)
    for r in results:
        assert h.heartbeat(GROUP_ID, r.member_id, r.generation_id) is E.none
    followers = [h.send_sync_group_follower(GROUP_ID, r.generation_id, r.member_id, PROTOCOL_TYPE, PROTOCOL_NAME)
                 for r in results[1:]]
    h.advance(DEFAULT_REBALANCE_TIMEOUT // 2 + 1)
    assert {f.get().error for f in followers} == {E.rebalance_in_progress}
    assert h.heartbeat(GROUP_ID, results[0].member_id, results[0].generation_id) is E.unknown_member_id
    for r in results[1:]:
        assert h.heartbeat(GROUP_ID, r.member_id, r.generation_id) is E.rebalance_in_progress


def _join_with_n_members(h: Harness, n: int) -> list:  # type: ignore[type-arg]
    """Kafka: ``joinWithNMembers``."""
    member_ids = [h.send_join_group(GROUP_ID, UNKNOWN, require_known_member_id=True).get().member_id
                  for _ in range(n)]
    boxes = [h.send_join_group(GROUP_ID, m, require_known_member_id=True) for m in member_ids]
    h.advance(GROUP_INITIAL_REBALANCE_DELAY + 1)
    h.advance(DEFAULT_REBALANCE_TIMEOUT + 1)
    return [b.get() for b in boxes]


def test_leader_failure_in_sync_group(harness: Harness) -> None:
    h = harness
    _first, other, generation = _two_members(h)
    follower = h.send_sync_group_follower(GROUP_ID, generation, other)
    h.advance(DEFAULT_SESSION_TIMEOUT + 100)
    assert follower.get().error is E.rebalance_in_progress


def test_sync_group_follower_after_leader(harness: Harness) -> None:
    h = harness
    first, other, generation = _two_members(h)
    leader = h.sync_group_leader(GROUP_ID, generation, first, {first: b"\x00", other: b"\x01"})
    assert leader.error is E.none
    assert leader.assignment == b"\x00"
    follower = h.sync_group_follower(GROUP_ID, generation, other)
    assert follower.error is E.none
    assert follower.assignment == b"\x01"


def test_sync_group_leader_after_follower(harness: Harness) -> None:
    h = harness
    first, other, generation = _two_members(h)
    follower = h.send_sync_group_follower(GROUP_ID, generation, other)
    assert not follower.done
    leader = h.sync_group_leader(GROUP_ID, generation, first, {first: b"\x00", other: b"\x01"})
    assert leader.error is E.none
    assert leader.assignment == b"\x00"
    assert follower.get().error is E.none
    assert follower.get().assignment == b"\x01"


# -- offsets --

def test_commit_offset_from_unknown_group(harness: Harness) -> None:
    assert harness.commit_offsets(GROUP_ID, MEMBER_ID, 1, {TP: harness.offset(0)}) == {TP: E.illegal_generation}


def test_commit_offset_with_default_generation(harness: Harness) -> None:
    assert harness.commit_offsets(GROUP_ID, UNKNOWN, -1, {TP: harness.offset(0)}) == {TP: E.none}


def test_commit_offsets_after_group_is_empty(harness: Harness) -> None:
    h = harness
    join = h.dynamic_join_group(GROUP_ID, UNKNOWN)
    assert join.error is E.none
    verify_leave_group_result(h.single_leave_group(GROUP_ID, join.member_id))
    assert h.commit_offsets(GROUP_ID, UNKNOWN, -1, {TP: h.offset(0)}) == {TP: E.none}
    error, data = h.coordinator.handle_fetch_offsets(GROUP_ID, True, [TP])
    assert error is E.none
    assert data[TP].offset == 0


def test_fetch_offsets(harness: Harness) -> None:
    h = harness
    from kafkalog.broker.group_records import OffsetAndMetadata
    committed = OffsetAndMetadata(97, 15, "some metadata", h.timer.time_ms())
    assert h.commit_offsets(GROUP_ID, UNKNOWN, -1, {TP: committed}) == {TP: E.none}
    error, data = h.coordinator.handle_fetch_offsets(GROUP_ID, True, [TP])
    assert error is E.none
    assert (data[TP].offset, data[TP].metadata, data[TP].leader_epoch) == (97, "some metadata", 15)


def test_commit_and_fetch_offsets_with_empty_group(harness: Harness) -> None:
    h = harness
    assert h.commit_offsets("", UNKNOWN, -1, {TP: h.offset(0)}) == {TP: E.none}
    error, data = h.coordinator.handle_fetch_offsets("", True, [TP])
    assert error is E.none and data[TP].offset == 0
    describe_error, summary = h.coordinator.handle_describe_group("")
    assert describe_error is E.none
    assert summary.state == "Empty"
    assert h.coordinator.handle_delete_groups([""]) == {"": E.none}
    error, data = h.coordinator.handle_fetch_offsets("", True, [TP])
    assert error is E.none and data[TP].offset == -1


def test_fetch_offset_for_unknown_partition(harness: Harness) -> None:
    error, data = harness.coordinator.handle_fetch_offsets(GROUP_ID, True, [TP])
    assert error is E.none
    assert data[TP].offset == -1


def test_fetch_offset_not_coordinator_for_group(harness: Harness) -> None:
    error, data = harness.coordinator.handle_fetch_offsets(OTHER_GROUP_ID, True, [TP])
    assert error is E.not_coordinator
    assert not data


def test_fetch_all_offsets(harness: Harness) -> None:
    h = harness
    tp1, tp2, tp3 = ("topic", 0), ("topic", 1), ("other-topic", 0)
    assert h.coordinator.handle_fetch_offsets(GROUP_ID, True, None) == (E.none, {})
    result = h.commit_offsets(GROUP_ID, UNKNOWN, -1, {tp1: h.offset(15), tp2: h.offset(16), tp3: h.offset(17)})
    assert result == {tp1: E.none, tp2: E.none, tp3: E.none}
    error, data = h.coordinator.handle_fetch_offsets(GROUP_ID, True, None)
    assert error is E.none
    assert len(data) == 3
    assert all(d.error is E.none for d in data.values())
    assert (data[tp1].offset, data[tp2].offset, data[tp3].offset) == (15, 16, 17)


def test_commit_offset_in_completing_rebalance(harness: Harness) -> None:
    join = harness.dynamic_join_group(GROUP_ID, UNKNOWN)
    assert join.error is E.none
    result = harness.commit_offsets(GROUP_ID, join.member_id, join.generation_id, {TP: harness.offset(0)})
    assert result == {TP: E.rebalance_in_progress}


def test_offset_metadata_too_large(harness: Harness) -> None:
    """The metadata bound (Kafka: ``GroupMetadataManagerTest.testCommitOffsetFailsWithMetadataTooLarge``... as
    the coordinator answers it: ``OFFSET_METADATA_TOO_LARGE`` and nothing stored)."""
    from kafkalog.broker.group_records import OffsetAndMetadata
    h = harness
    too_large = OffsetAndMetadata(1, None, "x" * (h.config.offset_metadata_max_bytes + 1), h.timer.time_ms())
    assert h.commit_offsets(GROUP_ID, UNKNOWN, -1, {TP: too_large}) == {TP: E.offset_metadata_too_large}
    assert h.coordinator.handle_fetch_offsets(GROUP_ID, False, [TP])[1][TP].offset == -1


# -- LeaveGroup --

def test_leave_group_wrong_coordinator(harness: Harness) -> None:
    verify_leave_group_result(harness.single_leave_group(OTHER_GROUP_ID, UNKNOWN), E.not_coordinator)


def test_leave_group_unknown_group(harness: Harness) -> None:
    verify_leave_group_result(harness.single_leave_group(GROUP_ID, MEMBER_ID), E.none, [E.unknown_member_id])


def test_leave_group_unknown_consumer_existing_group(harness: Harness) -> None:
    assert harness.dynamic_join_group(GROUP_ID, UNKNOWN).error is E.none
    verify_leave_group_result(harness.single_leave_group(GROUP_ID, "consumerId"), E.none, [E.unknown_member_id])


def test_single_leave_dead_group(harness: Harness) -> None:
    harness.manager.add_group(GroupMetadata("deadGroupId", GroupState.DEAD, harness.timer.time_ms))
    verify_leave_group_result(harness.single_leave_group("deadGroupId", MEMBER_ID), E.coordinator_not_available)


def test_batch_leave_dead_group(harness: Harness) -> None:
    harness.manager.add_group(GroupMetadata("deadGroupId", GroupState.DEAD, harness.timer.time_ms))
    result = harness.batch_leave_group("deadGroupId", [(MEMBER_ID, None), (MEMBER_ID, None)])
    verify_leave_group_result(result, E.coordinator_not_available)


def test_valid_leave_group(harness: Harness) -> None:
    join = harness.dynamic_join_group(GROUP_ID, UNKNOWN)
    assert join.error is E.none
    verify_leave_group_result(harness.single_leave_group(GROUP_ID, join.member_id))


def _join_static_pair(h: Harness, leader_instance: str = "leader", follower_instance: str = "follower"
                      ) -> tuple[str, str]:
    """Two static members join an empty group: generation 1, not yet synced."""
    superset = [(PROTOCOL_NAME, METADATA), ("roundrobin", METADATA)]
    leader = h.send_join_group(GROUP_ID, UNKNOWN, protocols=superset, group_instance_id=leader_instance)
    follower = h.send_join_group(GROUP_ID, UNKNOWN, protocols=superset, group_instance_id=follower_instance)
    # Two advances: the first ends the initial delay (a member was added during it), the second its extension.
    h.advance(GROUP_INITIAL_REBALANCE_DELAY + 1)
    h.advance(DEFAULT_REBALANCE_TIMEOUT + 1)
    leader_result, follower_result = leader.get(), follower.get()
    assert leader_result.error is E.none and leader_result.generation_id == 1
    assert follower_result.error is E.none and follower_result.generation_id == 1
    return leader_result.member_id, follower_result.member_id


def _static_members_join_and_rebalance(h: Harness, leader_instance: str = "leader",
                                       follower_instance: str = "follower") -> tuple[str, str]:
    """Kafka: ``staticMembersJoinAndRebalance`` (the first rebalance of a group of two static members)."""
    leader_id, follower_id = _join_static_pair(h, leader_instance, follower_instance)
    assert h.sync_group_leader(GROUP_ID, 1, leader_id, {leader_id: b""}).error is E.none
    assert h.group().is_(GroupState.STABLE)
    assert h.sync_group_follower(GROUP_ID, 1, follower_id).error is E.none
    assert h.group().is_(GroupState.STABLE)
    return leader_id, follower_id


def test_leave_group_with_fenced_instance_id(harness: Harness) -> None:
    _static_members_join_and_rebalance(harness)
    result = harness.single_leave_group(GROUP_ID, "some_member", "leader")
    verify_leave_group_result(result, E.none, [E.fenced_instance_id])


def test_leave_group_static_member_with_unknown_member_id(harness: Harness) -> None:
    _static_members_join_and_rebalance(harness)
    result = harness.single_leave_group(GROUP_ID, UNKNOWN, "leader")
    verify_leave_group_result(result, E.none, [E.none])


def test_static_members_valid_batch_leave_group(harness: Harness) -> None:
    _static_members_join_and_rebalance(harness)
    result = harness.batch_leave_group(GROUP_ID, [(UNKNOWN, "leader"), (UNKNOWN, "follower")])
    verify_leave_group_result(result, E.none, [E.none, E.none])


def test_static_members_wrong_coordinator_batch_leave_group(harness: Harness) -> None:
    _static_members_join_and_rebalance(harness)
    result = harness.batch_leave_group(OTHER_GROUP_ID, [(UNKNOWN, "leader"), (UNKNOWN, "follower")])
    verify_leave_group_result(result, E.not_coordinator)


def test_static_members_unknown_group_batch_leave_group(harness: Harness) -> None:
    result = harness.batch_leave_group(GROUP_ID, [(UNKNOWN, "leader"), (UNKNOWN, "follower")])
    verify_leave_group_result(result, E.none, [E.unknown_member_id, E.unknown_member_id])


def test_static_members_fenced_instance_batch_leave_group(harness: Harness) -> None:
    _static_members_join_and_rebalance(harness)
    result = harness.batch_leave_group(GROUP_ID, [(UNKNOWN, "leader"), ("invalid-member", "follower")])
    verify_leave_group_result(result, E.none, [E.none, E.fenced_instance_id])


def test_static_members_unknown_instance_batch_leave_group(harness: Harness) -> None:
    _static_members_join_and_rebalance(harness)
    result = harness.batch_leave_group(GROUP_ID, [(UNKNOWN, "unknown-instance"), (UNKNOWN, "follower")])
    verify_leave_group_result(result, E.none, [E.unknown_member_id, E.none])


# -- ListGroups, DescribeGroups, DeleteGroups, OffsetDelete --

def test_list_groups_includes_stable_groups(harness: Harness) -> None:
    _member, _generation = _stable_group_of_one(harness)
    error, groups = harness.coordinator.handle_list_groups(set(), set())
    assert error is E.none
    assert len(groups) == 1
    assert (groups[0].group_id, groups[0].protocol_type, groups[0].state) == (GROUP_ID, PROTOCOL_TYPE, "Stable")


def test_list_groups_includes_rebalancing_groups(harness: Harness) -> None:
    assert harness.dynamic_join_group(GROUP_ID, UNKNOWN).error is E.none
    error, groups = harness.coordinator.handle_list_groups(set(), set())
    assert error is E.none
    assert [(g.group_id, g.protocol_type, g.state) for g in groups] == [(GROUP_ID, PROTOCOL_TYPE,
                                                                         "CompletingRebalance")]


def test_list_groups_with_states(harness: Harness) -> None:
    h = harness
    join = h.dynamic_join_group(GROUP_ID, UNKNOWN)

    def listed(*states: str) -> list[str]:
        error, groups = h.coordinator.handle_list_groups(set(states), set())
        assert error is E.none
        return [g.group_id for g in groups]

    assert listed("CompletingRebalance") == [GROUP_ID]
    assert listed("Stable", "Empty") == []
    h.sync_group_leader(GROUP_ID, join.generation_id, join.member_id, {join.member_id: b""})
    assert listed("stable") == [GROUP_ID]  # case-insensitive
    assert listed("PreparingRebalance") == []
    verify_leave_group_result(h.single_leave_group(GROUP_ID, join.member_id))
    assert listed("Empty") == [GROUP_ID]


def test_describe_group_wrong_coordinator(harness: Harness) -> None:
    assert harness.coordinator.handle_describe_group(OTHER_GROUP_ID)[0] is E.not_coordinator


def test_describe_group_inactive_group(harness: Harness) -> None:
    error, summary = harness.coordinator.handle_describe_group(GROUP_ID)
    assert error is E.none
    assert (summary.state, summary.protocol_type, summary.protocol, summary.members) == ("Dead", "", "", ())


def test_describe_group_stable_for_dynamic_member(harness: Harness) -> None:
    member, _ = _stable_group_of_one(harness)
    error, summary = harness.coordinator.handle_describe_group(GROUP_ID)
    assert error is E.none
    assert (summary.protocol_type, summary.protocol) == (PROTOCOL_TYPE, PROTOCOL_NAME)
    assert [m.member_id for m in summary.members] == [member]
    assert summary.members[0].group_instance_id is None


def test_describe_group_rebalancing(harness: Harness) -> None:
    join = harness.dynamic_join_group(GROUP_ID, UNKNOWN)
    assert join.error is E.none
    error, summary = harness.coordinator.handle_describe_group(GROUP_ID)
    assert error is E.none
    assert (summary.protocol_type, summary.protocol, summary.state) == (PROTOCOL_TYPE, "", "CompletingRebalance")
    assert [m.member_id for m in summary.members] == [join.member_id]
    assert summary.members[0].metadata == b"" and summary.members[0].assignment == b""


def test_delete_non_empty_group(harness: Harness) -> None:
    harness.dynamic_join_group(GROUP_ID, UNKNOWN)
    assert harness.coordinator.handle_delete_groups([GROUP_ID]) == {GROUP_ID: E.non_empty_group}


def test_delete_group_with_invalid_group_id(harness: Harness) -> None:
    # DeleteGroups takes the empty group id (Kafka keeps it for the offsets of the empty group): only null is bad.
    assert harness.coordinator.handle_delete_groups([""]) == {"": E.group_id_not_found}


def test_delete_group_with_wrong_coordinator(harness: Harness) -> None:
    assert harness.coordinator.handle_delete_groups([OTHER_GROUP_ID]) == {OTHER_GROUP_ID: E.not_coordinator}


def test_delete_empty_group(harness: Harness) -> None:
    h = harness
    join = h.dynamic_join_group(GROUP_ID, UNKNOWN)
    verify_leave_group_result(h.single_leave_group(GROUP_ID, join.member_id))
    before = h.coordinator.group_manager.logs.log("__consumer_offsets", 0).log_end_offset
    assert h.coordinator.handle_delete_groups([GROUP_ID]) == {GROUP_ID: E.none}
    assert h.manager.get_group(GROUP_ID) is None
    # the group's tombstone was written (its generation is past 0)
    log = h.coordinator.group_manager.logs.log("__consumer_offsets", 0)
    last = list(log.records())[-1]
    assert log.log_end_offset == before + 1 and last.value is None


def test_delete_empty_group_with_stored_offsets(harness: Harness) -> None:
    h = harness
    join = h.dynamic_join_group(GROUP_ID, UNKNOWN)
    assert h.sync_group_leader(GROUP_ID, join.generation_id, join.member_id, {join.member_id: b""}).error is E.none
    assert h.commit_offsets(GROUP_ID, join.member_id, join.generation_id, {TP: h.offset(0)}) == {TP: E.none}
    assert h.coordinator.handle_describe_group(GROUP_ID)[1].state == "Stable"
    verify_leave_group_result(h.single_leave_group(GROUP_ID, join.member_id))
    assert h.coordinator.handle_delete_groups([GROUP_ID]) == {GROUP_ID: E.none}
    assert h.coordinator.handle_describe_group(GROUP_ID)[1].state == "Dead"
    # two tombstones: the offset's and the group's
    log = h.coordinator.group_manager.logs.log("__consumer_offsets", 0)
    assert [r.value for r in list(log.records())[-2:]] == [None, None]


def test_delete_offset_of_non_existing_group(harness: Harness) -> None:
    error, errors = harness.coordinator.handle_delete_offsets(GROUP_ID, [TP])
    assert error is E.group_id_not_found
    assert errors == {}


def test_delete_offset_of_non_empty_non_consumer_group(harness: Harness) -> None:
    harness.dynamic_join_group(GROUP_ID, UNKNOWN, "My Protocol", PROTOCOLS)
    error, errors = harness.coordinator.handle_delete_offsets(GROUP_ID, [TP])
    assert error is E.non_empty_group
    assert errors == {}


def test_delete_offset_of_empty_non_consumer_group(harness: Harness) -> None:
    h = harness
    join = h.dynamic_join_group(GROUP_ID, UNKNOWN, "My Protocol", PROTOCOLS)
    h.sync_group_leader(GROUP_ID, join.generation_id, join.member_id, {join.member_id: b""})
    tp2 = ("topic", 1)
    assert h.commit_offsets(GROUP_ID, join.member_id, join.generation_id, {TP: h.offset(0), tp2: h.offset(1)}) == {
        TP: E.none, tp2: E.none}
    verify_leave_group_result(h.single_leave_group(GROUP_ID, join.member_id))
    error, errors = h.coordinator.handle_delete_offsets(GROUP_ID, [TP])
    assert error is E.none
    assert errors == {TP: E.none}
    assert h.coordinator.handle_fetch_offsets(GROUP_ID, False, [TP, tp2])[1][TP].offset == -1
    assert h.coordinator.handle_fetch_offsets(GROUP_ID, False, [TP, tp2])[1][tp2].offset == 1


def test_delete_offset_of_dead_consumer_group(harness: Harness) -> None:
    harness.manager.add_group(GroupMetadata(GROUP_ID, GroupState.DEAD, harness.timer.time_ms))
    error, errors = harness.coordinator.handle_delete_offsets(GROUP_ID, [TP])
    assert error is E.group_id_not_found
    assert errors == {}


# -- the initial rebalance delay (group.initial.rebalance.delay.ms) --


def test_should_delay_initial_rebalance_by_group_initial_rebalance_delay_on_empty_group(harness: Harness) -> None:
    h = harness
    first = h.send_join_group(GROUP_ID, UNKNOWN)
    h.advance(GROUP_INITIAL_REBALANCE_DELAY // 2)
    assert not first.done, "should have timed out as rebalance delay not expired"
    h.advance(GROUP_INITIAL_REBALANCE_DELAY // 2 + 1)
    assert first.get().error is E.none


def test_should_reset_rebalance_delay_when_new_member_joins_group_in_initial_rebalance(harness: Harness) -> None:
    h = harness
    rebalance_timeout = GROUP_INITIAL_REBALANCE_DELAY * 3
    first = h.send_join_group(GROUP_ID, UNKNOWN, rebalance_timeout=rebalance_timeout)
    h.advance(GROUP_INITIAL_REBALANCE_DELAY - 1)
    second = h.send_join_group(GROUP_ID, UNKNOWN, rebalance_timeout=rebalance_timeout)
    h.advance(2)
    # past the initial delay: extended, since a member joined during it
    h.advance(GROUP_INITIAL_REBALANCE_DELAY // 2 + 1)
    assert not first.done and not second.done
    h.advance(GROUP_INITIAL_REBALANCE_DELAY // 2)
    assert first.get().error is E.none and second.get().error is E.none


def test_should_delay_rebalance_upto_rebalance_timeout(harness: Harness) -> None:
    h = harness
    rebalance_timeout = GROUP_INITIAL_REBALANCE_DELAY * 2
    first = h.send_join_group(GROUP_ID, UNKNOWN, rebalance_timeout=rebalance_timeout)
    second = h.send_join_group(GROUP_ID, UNKNOWN, rebalance_timeout=rebalance_timeout)
    h.advance(GROUP_INITIAL_REBALANCE_DELAY + 1)
    third = h.send_join_group(GROUP_ID, UNKNOWN, rebalance_timeout=rebalance_timeout)
    h.advance(GROUP_INITIAL_REBALANCE_DELAY)
    assert not (first.done or second.done or third.done)
    h.advance(1)  # past the rebalance timeout
    assert [b.get().error for b in (first, second, third)] == [E.none] * 3


def test_complete_heartbeat_with_group_dead(harness: Harness) -> None:
    h = harness
    leader, _ = _static_members_join_and_rebalance(h)
    h.heartbeat(GROUP_ID, leader, 1)
    group = h.group()
    group.transition_to(GroupState.DEAD)
    assert h.coordinator.try_complete_heartbeat(group, leader, False, lambda: True)
    h.coordinator.on_expire_heartbeat(group, leader, False)
    assert group.has(leader)


def test_complete_heartbeat_with_member_already_removed(harness: Harness) -> None:
    h = harness
    leader, _ = _static_members_join_and_rebalance(h)
    h.heartbeat(GROUP_ID, leader, 1)
    group = h.group()
    group.remove(leader)
    assert h.coordinator.try_complete_heartbeat(group, leader, False, lambda: True)


# -- static membership (KIP-345) --

LEADER, FOLLOWER = "leader", "follower"
SUPERSET = [(PROTOCOL_NAME, METADATA), ("roundrobin", METADATA)]


def _check_join_group_result(h: Harness, result: JoinGroupResult, error: ErrorCode, generation: int,
                             instance_ids: set[str], state: GroupState, protocol_type: str | None,
                             leader_id: str = UNKNOWN, member_id: str = UNKNOWN,
                             skip_assignment: bool = False) -> None:
    """Kafka: ``checkJoinGroupResult``."""
    assert result.error is error
    assert result.generation_id == generation
    assert len(result.members) == len(instance_ids)
    assert {i for _, i, _ in result.members} == instance_ids
    h.assert_group_state(state)
    assert result.protocol_type == protocol_type
    assert result.skip_assignment is skip_assignment
    if leader_id != UNKNOWN:
        assert result.leader_id == leader_id
    if member_id != UNKNOWN:
        assert result.member_id == member_id


def _rebalanced_static_pair(h: Harness, session_timeout: int = DEFAULT_SESSION_TIMEOUT) -> tuple[int, str, str]:
    """Kafka: ``staticMembersJoinAndRebalance``: (generation, leader id, follower id)."""
    leader = h.send_join_group(GROUP_ID, UNKNOWN, protocols=SUPERSET, group_instance_id=LEADER,
                               session_timeout=session_timeout)
    follower = h.send_join_group(GROUP_ID, UNKNOWN, protocols=SUPERSET, group_instance_id=FOLLOWER,
                                 session_timeout=session_timeout)
    h.advance(GROUP_INITIAL_REBALANCE_DELAY + 1)
    h.advance(DEFAULT_REBALANCE_TIMEOUT + 1)
    leader_result, follower_result = leader.get(), follower.get()
    assert (leader_result.error, leader_result.generation_id) == (E.none, 1)
    assert (follower_result.error, follower_result.generation_id) == (E.none, 1)
    leader_id, follower_id = leader_result.member_id, follower_result.member_id
    assert h.sync_group_leader(GROUP_ID, 1, leader_id, {leader_id: b""}).error is E.none
    assert h.group().is_(GroupState.STABLE)
    assert h.sync_group_follower(GROUP_ID, 1, follower_id).error is E.none
    assert h.group().is_(GroupState.STABLE)
    return 1, leader_id, follower_id


def test_static_member_join_as_first_member(harness: Harness) -> None:
    assert harness.static_join_group(GROUP_ID, UNKNOWN, GROUP_INSTANCE_ID).error is E.none


def test_static_member_re_join_with_explicit_unknown_member_id(harness: Harness) -> None:
    assert harness.static_join_group(GROUP_ID, UNKNOWN, GROUP_INSTANCE_ID).error is E.none
    assert harness.static_join_group(GROUP_ID, "unknown_member", GROUP_INSTANCE_ID).error is E.fenced_instance_id


def test_static_member_fence_duplicate_rejoined_follower(harness: Harness) -> None:
    h = harness
    _, _, follower = _rebalanced_static_pair(h)
    h.send_join_group(GROUP_ID, UNKNOWN)
    h.advance(1)
    assert h.group().is_(GroupState.PREPARING_REBALANCE)
    h.advance(1)
    old_follower = h.send_join_group(GROUP_ID, follower, group_instance_id=FOLLOWER)
    h.advance(1)
    duplicate = h.send_join_group(GROUP_ID, UNKNOWN, group_instance_id=FOLLOWER)
    h.advance(1)
    _check_join_group_result(h, old_follower.get(), E.fenced_instance_id, -1, set(), GroupState.PREPARING_REBALANCE,
                             None)
    assert not duplicate.done, "should have timed out as rebalance delay not expired"


def test_static_member_fence_duplicate_syncing_follower_after_member_id_changed(harness: Harness) -> None:
    h = harness
    generation, leader, follower = _rebalanced_static_pair(h)
    leader_box = h.send_join_group(GROUP_ID, leader, group_instance_id=LEADER)
    h.advance(1)
    assert h.group().is_(GroupState.PREPARING_REBALANCE)
    h.advance(1)
    old_follower_box = h.send_join_group(GROUP_ID, follower, group_instance_id=FOLLOWER)
    h.advance(1)
    leader_result = leader_box.get()
    _check_join_group_result(h, leader_result, E.none, generation + 1, {LEADER, FOLLOWER},
                             GroupState.COMPLETING_REBALANCE, PROTOCOL_TYPE)
    assert (leader_result.member_id, leader_result.leader_id) == (leader, leader)
    old_follower = old_follower_box.get()
    _check_join_group_result(h, old_follower, E.none, generation + 1, set(), GroupState.COMPLETING_REBALANCE,
                             PROTOCOL_TYPE, leader_id=leader_result.member_id)
    assert (old_follower.member_id, old_follower.leader_id) == (follower, leader)
    old_sync = h.send_sync_group_follower(GROUP_ID, old_follower.generation_id, old_follower.member_id,
                                          PROTOCOL_TYPE, PROTOCOL_NAME, FOLLOWER)
    duplicate = h.send_join_group(GROUP_ID, UNKNOWN, group_instance_id=FOLLOWER)
    h.advance(1)
    assert old_sync.get().error is E.fenced_instance_id
    assert h.group().is_(GroupState.PREPARING_REBALANCE)
    h.advance(GROUP_INITIAL_REBALANCE_DELAY + 1)
    h.advance(DEFAULT_REBALANCE_TIMEOUT + 1)
    result = duplicate.get()
    # this follower becomes the new leader, so it has the member list
    _check_join_group_result(h, result, E.none, generation + 2, {FOLLOWER}, GroupState.COMPLETING_REBALANCE,
                             PROTOCOL_TYPE, leader_id=result.member_id)


def test_static_member_fence_duplicate_rejoining_follower_after_member_id_changed(harness: Harness) -> None:
    h = harness
    generation, leader, follower = _rebalanced_static_pair(h)
    leader_box = h.send_join_group(GROUP_ID, leader, group_instance_id=LEADER)
    h.advance(1)
    assert h.group().is_(GroupState.PREPARING_REBALANCE)
    duplicate_box = h.send_join_group(GROUP_ID, UNKNOWN, group_instance_id=FOLLOWER)
    h.advance(1)
    old_follower_box = h.send_join_group(GROUP_ID, follower, group_instance_id=FOLLOWER)
    _check_join_group_result(h, leader_box.get(), E.none, generation + 1, {LEADER, FOLLOWER},
                             GroupState.COMPLETING_REBALANCE, PROTOCOL_TYPE)
    duplicate = duplicate_box.get()
    _check_join_group_result(h, duplicate, E.none, generation + 1, set(), GroupState.COMPLETING_REBALANCE,
                             PROTOCOL_TYPE)
    assert duplicate.member_id != follower
    _check_join_group_result(h, old_follower_box.get(), E.fenced_instance_id, -1, set(),
                             GroupState.COMPLETING_REBALANCE, None)


def test_static_member_rejoin_with_known_member_id(harness: Harness) -> None:
    h = harness
    result = h.static_join_group(GROUP_ID, UNKNOWN, GROUP_INSTANCE_ID)
    assert result.error is E.none
    member = result.member_id
    rejoin = h.send_join_group(GROUP_ID, member, group_instance_id=GROUP_INSTANCE_ID)
    h.advance(1)
    result = rejoin.get()
    assert result.error is E.none
    assert h.group().is_(GroupState.COMPLETING_REBALANCE)
    sync = h.send_sync_group_leader(GROUP_ID, result.generation_id, member, {member: b""}, PROTOCOL_TYPE,
                                    PROTOCOL_NAME, GROUP_INSTANCE_ID)
    h.advance(1)
    assert sync.get().error is E.none
    assert h.group().is_(GroupState.STABLE)


@pytest.mark.parametrize("support_skipping_assignment", [True, False])
def test_static_member_rejoin_with_leader_id_and_unknown_member_id(harness: Harness,
                                                                   support_skipping_assignment: bool) -> None:
    h = harness
    generation, leader, _ = _rebalanced_static_pair(h)
    result = h.static_join_group(GROUP_ID, UNKNOWN, LEADER, protocols=SUPERSET, clock_advance=1,
                                 support_skipping_assignment=support_skipping_assignment)
    _check_join_group_result(h, result, E.none, generation,  # the same generation
                             {LEADER, FOLLOWER} if support_skipping_assignment else set(), GroupState.STABLE,
                             PROTOCOL_TYPE, result.member_id if support_skipping_assignment else leader,
                             skip_assignment=support_skipping_assignment)
    old_leader = h.static_join_group(GROUP_ID, leader, LEADER, protocols=SUPERSET, clock_advance=1)
    assert old_leader.error is E.fenced_instance_id
    assert h.sync_group_leader(GROUP_ID, generation, leader, {}, group_instance_id=LEADER).error is \
        E.fenced_instance_id
    assert h.sync_group_leader(GROUP_ID, generation, leader, {}).error is E.unknown_member_id


def test_static_member_rejoin_with_leader_id_and_known_member_id(harness: Harness) -> None:
    h = harness
    generation, leader, _ = _rebalanced_static_pair(h, session_timeout=DEFAULT_REBALANCE_TIMEOUT // 2)
    result = h.static_join_group(GROUP_ID, leader, LEADER, protocols=SUPERSET,
                                 clock_advance=DEFAULT_REBALANCE_TIMEOUT + 1)
    assert not h.group().has_static_member(FOLLOWER)
    _check_join_group_result(h, result, E.none, generation + 1,  # promoted to the next generation
                             {LEADER}, GroupState.COMPLETING_REBALANCE, PROTOCOL_TYPE, leader, leader)


def test_static_member_rejoin_with_leader_id_and_unexpected_dead_group(harness: Harness) -> None:
    _, leader, _ = _rebalanced_static_pair(harness)
    harness.group().transition_to(GroupState.DEAD)
    result = harness.static_join_group(GROUP_ID, leader, LEADER, clock_advance=1)
    assert result.error is E.coordinator_not_available


def test_static_member_rejoin_with_leader_id_and_unexpected_empty_group(harness: Harness) -> None:
    _, leader, _ = _rebalanced_static_pair(harness)
    harness.group().transition_to(GroupState.PREPARING_REBALANCE)
    harness.group().transition_to(GroupState.EMPTY)
    result = harness.static_join_group(GROUP_ID, leader, LEADER, clock_advance=1)
    assert result.error is E.unknown_member_id


def test_static_member_rejoin_with_follower_id_and_change_of_protocol(harness: Harness) -> None:
    h = harness
    generation, _, follower = _rebalanced_static_pair(h, session_timeout=DEFAULT_SESSION_TIMEOUT * 2)
    result = h.static_join_group(GROUP_ID, follower, FOLLOWER, protocols=[("roundrobin", METADATA)],
                                 clock_advance=DEFAULT_SESSION_TIMEOUT + 1)
    assert result.member_id == follower
    assert h.group().has_static_member(LEADER)
    assert h.group().is_leader(follower)
    # a new generation, led by the follower: the old leader's join timed out
    _check_join_group_result(h, result, E.none, generation + 1, {LEADER, FOLLOWER}, GroupState.COMPLETING_REBALANCE,
                             PROTOCOL_TYPE, follower, follower)


def test_describe_group_stable_for_static_member(harness: Harness) -> None:
    h = harness
    _, leader, follower = _rebalanced_static_pair(h)
    error, summary = h.coordinator.handle_describe_group(GROUP_ID)
    assert error is E.none
    assert (summary.protocol_type, summary.protocol) == (PROTOCOL_TYPE, PROTOCOL_NAME)
    assert [(m.member_id, m.group_instance_id) for m in summary.members] == [(leader, LEADER), (follower, FOLLOWER)]


def test_static_member_rejoin_with_unknown_member_id_and_change_of_protocol_with_selected_protocol_changed(
        harness: Harness) -> None:
    h = harness
    generation, _, follower = _rebalanced_static_pair(h)
    assert h.group().select_protocol() == PROTOCOL_NAME
    # a protocol change that changes the group's selection: a rebalance, and the old leader, not rejoining, is
    # replaced as leader
    result = h.static_join_group(GROUP_ID, UNKNOWN, FOLLOWER, protocols=[("roundrobin", METADATA)],
                                 clock_advance=DEFAULT_SESSION_TIMEOUT + 1)
    _check_join_group_result(h, result, E.none, generation + 1, {LEADER, FOLLOWER}, GroupState.COMPLETING_REBALANCE,
                             PROTOCOL_TYPE)
    assert h.group().is_leader(result.member_id)
    assert result.member_id != follower
    assert result.protocol_name == "roundrobin"


def test_static_member_rejoin_with_unknown_member_id_and_change_of_protocol_while_select_protocol_unchanged_persistence_failure(  # noqa: E501
        harness: Harness) -> None:
    h = harness
    generation, _, follower = _rebalanced_static_pair(h)
    new_protocols = [(h.group().select_protocol(), METADATA)]
    h.logs.fail_with = RecordTooLargeError("the group record is too large")
    result = h.static_join_group(GROUP_ID, UNKNOWN, FOLLOWER, protocols=new_protocols, clock_advance=1)
    h.logs.fail_with = None
    _check_join_group_result(h, result, E.unknown_server_error, generation, set(), GroupState.STABLE, PROTOCOL_TYPE)
    assert result.member_id != follower
    # the old member id was restored
    assert h.static_join_group(GROUP_ID, follower, FOLLOWER, protocols=new_protocols, clock_advance=1).error is E.none
    assert h.sync_group_follower(GROUP_ID, generation, follower, group_instance_id=FOLLOWER).error is E.none


def test_static_member_rejoin_with_updated_session_and_rebalance_timeouts_but_cannot_persist_change(
        harness: Harness) -> None:
    h = harness
    generation, _, _ = _rebalanced_static_pair(h)
    h.logs.fail_with = RecordTooLargeError("the group record is too large")
    result = h.static_join_group(GROUP_ID, UNKNOWN, FOLLOWER, protocols=SUPERSET, clock_advance=1,
                                 session_timeout=2 * DEFAULT_SESSION_TIMEOUT,
                                 rebalance_timeout=2 * DEFAULT_REBALANCE_TIMEOUT)
    _check_join_group_result(h, result, E.unknown_server_error, generation, set(), GroupState.STABLE, PROTOCOL_TYPE)
    for member in h.group().all_member_metadata:
        assert (member.session_timeout_ms, member.rebalance_timeout_ms) == (DEFAULT_SESSION_TIMEOUT,
                                                                           DEFAULT_REBALANCE_TIMEOUT)


def test_static_member_rejoin_with_updated_session_and_rebalance_timeouts_and_persist_change(harness: Harness) -> None:
    h = harness
    generation, _, _ = _rebalanced_static_pair(h)
    follower = h.static_join_group(GROUP_ID, UNKNOWN, FOLLOWER, protocols=SUPERSET, clock_advance=1,
                                   session_timeout=2 * DEFAULT_SESSION_TIMEOUT,
                                   rebalance_timeout=2 * DEFAULT_REBALANCE_TIMEOUT)
    _check_join_group_result(h, follower, E.none, generation, set(), GroupState.STABLE, PROTOCOL_TYPE)
    leader = h.static_join_group(GROUP_ID, UNKNOWN, LEADER, protocols=SUPERSET, clock_advance=1,
                                 session_timeout=2 * DEFAULT_SESSION_TIMEOUT,
                                 rebalance_timeout=2 * DEFAULT_REBALANCE_TIMEOUT)
    _check_join_group_result(h, leader, E.none, generation, {LEADER, FOLLOWER}, GroupState.STABLE, PROTOCOL_TYPE,
                             leader.leader_id, leader.member_id, skip_assignment=True)
    for member in h.group().all_member_metadata:
        assert (member.session_timeout_ms, member.rebalance_timeout_ms) == (2 * DEFAULT_SESSION_TIMEOUT,
                                                                           2 * DEFAULT_REBALANCE_TIMEOUT)


def test_static_member_rejoin_with_unknown_member_id_and_change_of_protocol_while_select_protocol_unchanged(
        harness: Harness) -> None:
    h = harness
    generation, _, follower = _rebalanced_static_pair(h)
    new_protocols = [(h.group().select_protocol(), METADATA)]
    result = h.static_join_group(GROUP_ID, UNKNOWN, FOLLOWER, protocols=new_protocols, clock_advance=1)
    _check_join_group_result(h, result, E.none, generation, set(), GroupState.STABLE, PROTOCOL_TYPE)
    assert result.member_id != follower
    old = h.static_join_group(GROUP_ID, follower, FOLLOWER, protocols=new_protocols, clock_advance=1)
    assert old.error is E.fenced_instance_id
    assert h.sync_group_follower(GROUP_ID, generation, follower, group_instance_id=FOLLOWER).error is \
        E.fenced_instance_id
    sync = h.sync_group_follower(GROUP_ID, generation, result.member_id, group_instance_id=FOLLOWER)
    assert (sync.error, sync.assignment) == (E.none, b"")  # the follower's assignment: empty, as the leader gave it


def test_static_member_rejoin_with_known_leader_id_to_trigger_rebalance_and_follower_with_changeof_protocol(
        harness: Harness) -> None:
    h = harness
    generation, leader, follower = _rebalanced_static_pair(h)
    leader_box = h.send_join_group(GROUP_ID, leader, protocols=SUPERSET, group_instance_id=LEADER)
    follower_box = h.send_join_group(GROUP_ID, follower, protocols=SUPERSET, group_instance_id=FOLLOWER)
    h.advance(1)
    _check_join_group_result(h, leader_box.get(), E.none, generation + 1, {LEADER, FOLLOWER},
                             GroupState.COMPLETING_REBALANCE, PROTOCOL_TYPE, leader, leader)
    _check_join_group_result(h, follower_box.get(), E.none, generation + 1, set(), GroupState.COMPLETING_REBALANCE,
                             PROTOCOL_TYPE, leader, follower)
    change = h.send_join_group(GROUP_ID, follower, protocols=PROTOCOLS, group_instance_id=FOLLOWER)
    assert h.group().is_(GroupState.PREPARING_REBALANCE)
    h.advance(DEFAULT_REBALANCE_TIMEOUT + 1)
    _check_join_group_result(h, change.get(), E.none, generation + 2, {FOLLOWER}, GroupState.COMPLETING_REBALANCE,
                             PROTOCOL_TYPE, follower, follower)


def test_static_member_rejoin_as_follower_with_unknown_member_id(harness: Harness) -> None:
    h = harness
    generation, _, follower = _rebalanced_static_pair(h)
    result = h.static_join_group(GROUP_ID, UNKNOWN, FOLLOWER, protocols=SUPERSET, clock_advance=1)
    assert h.group().has_static_member(LEADER)
    _check_join_group_result(h, result, E.none, generation, set(), GroupState.STABLE, PROTOCOL_TYPE)
    assert result.member_id != follower
    sync = h.sync_group_follower(GROUP_ID, generation, result.member_id)
    assert (sync.error, sync.assignment) == (E.none, b"")


def test_static_member_rejoin_as_follower_with_known_member_id_and_no_protocol_change(harness: Harness) -> None:
    h = harness
    generation, leader, follower = _rebalanced_static_pair(h)
    result = h.static_join_group(GROUP_ID, follower, FOLLOWER, protocols=SUPERSET, clock_advance=1)
    assert h.group().has_static_member(LEADER)
    _check_join_group_result(h, result, E.none, generation, set(), GroupState.STABLE, PROTOCOL_TYPE, leader, follower)


def test_static_member_rejoin_as_follower_with_mismatched_member_id(harness: Harness) -> None:
    _, _, follower = _rebalanced_static_pair(harness)
    result = harness.static_join_group(GROUP_ID, follower, LEADER, protocols=SUPERSET, clock_advance=1)
    assert result.error is E.fenced_instance_id


def test_static_member_rejoin_as_leader_with_mismatched_member_id(harness: Harness) -> None:
    _, leader, _ = _rebalanced_static_pair(harness)
    result = harness.static_join_group(GROUP_ID, leader, FOLLOWER, protocols=SUPERSET, clock_advance=1)
    assert result.error is E.fenced_instance_id


def test_static_member_sync_as_leader_with_invalid_member_id(harness: Harness) -> None:
    generation, _, _ = _rebalanced_static_pair(harness)
    result = harness.sync_group_leader(GROUP_ID, generation, "invalid", {}, group_instance_id=LEADER)
    assert result.error is E.fenced_instance_id


def test_static_member_heartbeat_leader_with_invalid_member_id(harness: Harness) -> None:
    h = harness
    generation, leader, _ = _rebalanced_static_pair(h)
    assert h.sync_group_leader(GROUP_ID, generation, leader, {}).error is E.none
    assert h.heartbeat(GROUP_ID, leader, generation) is E.none
    assert h.heartbeat(GROUP_ID, "invalidMember", generation, LEADER) is E.fenced_instance_id


def test_should_get_different_static_member_id_after_each_rejoin(harness: Harness) -> None:
    h = harness
    _, last, _ = _rebalanced_static_pair(h)
    for _ in range(5):
        result = h.static_join_group(GROUP_ID, UNKNOWN, LEADER, clock_advance=1)
        assert result.member_id.startswith(LEADER)
        assert result.member_id != last
        last = result.member_id


def test_offset_commit_dead_group(harness: Harness) -> None:
    harness.manager.add_group(GroupMetadata("deadGroupId", GroupState.DEAD, harness.timer.time_ms))
    result = harness.commit_offsets("deadGroupId", "memberId", 1, {TP: harness.offset(0)})
    assert result == {TP: E.coordinator_not_available}


def test_static_member_commit_offset_with_invalid_member_id(harness: Harness) -> None:
    h = harness
    generation, leader, _ = _rebalanced_static_pair(h)
    assert h.sync_group_leader(GROUP_ID, generation, leader, {}).error is E.none
    assert h.commit_offsets(GROUP_ID, leader, generation, {TP: h.offset(0)}) == {TP: E.none}
    assert h.commit_offsets(GROUP_ID, "invalidMember", generation, {TP: h.offset(0)}, LEADER) == {
        TP: E.fenced_instance_id}


def test_static_member_join_with_unknown_instance_id_and_known_member_id(harness: Harness) -> None:
    _, leader, _ = _rebalanced_static_pair(harness)
    result = harness.static_join_group(GROUP_ID, leader, "unknown_instance", protocols=SUPERSET, clock_advance=1)
    assert result.error is E.unknown_member_id


def test_static_member_re_join_with_illegal_state_as_unknown_member(harness: Harness) -> None:
    h = harness
    _rebalanced_static_pair(h)
    group = h.group()
    group.transition_to(GroupState.PREPARING_REBALANCE)
    group.transition_to(GroupState.EMPTY)
    with pytest.raises(IllegalStateError) as info:
        h.static_join_group(GROUP_ID, UNKNOWN, FOLLOWER, protocols=SUPERSET, clock_advance=1)
    assert GROUP_ID in str(info.value) and FOLLOWER in str(info.value)


def test_names_too_long_for_their_records_are_answered_not_raised(harness: Harness) -> None:
    """A member id past the 32767 bytes of a record's string (a long client id): the leader's SyncGroup, whose
    store cannot write the group, answers UNKNOWN_SERVER_ERROR and the group rebalances; an offset of a topic named
    past that bound fails the same way, and nothing is staged (kafkalog's deviation, group_metadata_manager)."""
    h = harness
    box: Box[JoinGroupResult] = Box()
    h.coordinator.handle_join_group(GROUP_ID, UNKNOWN, None, False, True, "c" * 40000, "host",
                                    DEFAULT_REBALANCE_TIMEOUT, DEFAULT_SESSION_TIMEOUT, PROTOCOL_TYPE, PROTOCOLS, box)
    h.advance(GROUP_INITIAL_REBALANCE_DELAY + 1)
    join = box.get()
    assert join.error is E.none
    sync = h.sync_group_leader(GROUP_ID, join.generation_id, join.member_id, {join.member_id: b""})
    assert sync.error is E.unknown_server_error
    assert h.group().is_(GroupState.PREPARING_REBALANCE)
    long_topic = ("t" * 40000, 0)
    assert h.commit_offsets(GROUP_ID, UNKNOWN, -1, {long_topic: h.offset(1)}) == {long_topic: E.unknown_member_id}
    assert h.commit_offsets("simple", UNKNOWN, -1, {long_topic: h.offset(1)}) == {long_topic: E.unknown_server_error}
    assert not h.manager.get_group("simple").has_offsets


def test_join_group_second_join_inconsistent_protocol(harness: Harness) -> None:
    h = harness
    first = h.send_join_group(GROUP_ID, UNKNOWN, require_known_member_id=True).get()
    assert first.error is E.member_id_required
    # the second join, with the member id, names no protocol
    assert h.send_join_group(GROUP_ID, first.member_id, protocols=[],
                             require_known_member_id=True).get().error is E.inconsistent_group_protocol
    # and with the protocols it joins
    box = h.send_join_group(GROUP_ID, first.member_id, require_known_member_id=True)
    h.advance(GROUP_INITIAL_REBALANCE_DELAY + 1)
    assert box.get().error is E.none


def _group_stuck_in_rebalance_timeout_due_to_nonjoined_static_member(h: Harness) -> tuple[str, str]:
    """Kafka: ``groupStuckInRebalanceTimeoutDueToNonjoinedStaticMember``."""
    long_session_timeout = DEFAULT_SESSION_TIMEOUT * 2
    _, leader, follower = _rebalanced_static_pair(h, session_timeout=long_session_timeout)
    dynamic_box = h.send_join_group(GROUP_ID, UNKNOWN, protocols=SUPERSET, session_timeout=long_session_timeout)
    h.advance(DEFAULT_REBALANCE_TIMEOUT + 1)
    dynamic = dynamic_box.get()
    assert dynamic.leader_id == dynamic.member_id
    assert dynamic.error is E.none
    assert len(dynamic.members) == 3
    assert dynamic.generation_id == 2
    h.assert_group_state(GroupState.COMPLETING_REBALANCE)
    group = h.group()
    assert set(group.all_members) == {leader, follower, dynamic.member_id}
    assert group.all_static_members == {LEADER, FOLLOWER}
    assert group.all_dynamic_members() == {dynamic.member_id}
    verify_leave_group_result(h.single_leave_group(GROUP_ID, follower))
    h.assert_group_state(GroupState.PREPARING_REBALANCE)
    h.advance(DEFAULT_REBALANCE_TIMEOUT + 1)
    # the dynamic member, not rejoined, is gone; the static leader is kept, and the group waits for it
    assert not group.all_dynamic_members()
    assert set(group.all_members) == {leader}
    assert group.generation_id == 2
    h.assert_group_state(GroupState.PREPARING_REBALANCE)
    return leader, follower


def test_leader_fail_to_rejoin_before_final_rebalance_timeout_with_long_session_timeout(harness: Harness) -> None:
    h = harness
    _group_stuck_in_rebalance_timeout_due_to_nonjoined_static_member(h)
    h.advance(DEFAULT_REBALANCE_TIMEOUT + 1)
    group = h.group()
    assert group.all_members == []
    assert group.leader_or_null is None
    assert group.generation_id == 3
    h.assert_group_state(GroupState.EMPTY)


def test_leader_rejoin_before_final_rebalance_timeout_with_long_session_timeout(harness: Harness) -> None:
    h = harness
    _group_stuck_in_rebalance_timeout_due_to_nonjoined_static_member(h)
    rejoin = h.static_join_group(GROUP_ID, UNKNOWN, LEADER)
    _check_join_group_result(h, rejoin, E.none, 3, {LEADER}, GroupState.COMPLETING_REBALANCE, PROTOCOL_TYPE)
    group = h.group()
    assert group.all_members == [rejoin.member_id]
    assert group.leader_or_null is not None
    assert group.generation_id == 3


def test_static_member_follower_fail_to_rejoin_before_rebalance_timeout(harness: Harness) -> None:
    h = harness
    generation, leader, _ = _rebalanced_static_pair(h, session_timeout=DEFAULT_REBALANCE_TIMEOUT * 2)
    new_member_box = h.send_join_group(GROUP_ID, UNKNOWN, protocols=SUPERSET, group_instance_id="newMember")
    h.assert_group_state(GroupState.PREPARING_REBALANCE)
    rejoin = h.static_join_group(GROUP_ID, leader, LEADER, protocols=SUPERSET,
                                 clock_advance=DEFAULT_REBALANCE_TIMEOUT + 1)
    _check_join_group_result(h, rejoin, E.none, generation + 1, {LEADER, FOLLOWER, "newMember"},
                             GroupState.COMPLETING_REBALANCE, PROTOCOL_TYPE, leader, leader)
    new_member = new_member_box.get()
    assert new_member.error is E.none
    _check_join_group_result(h, new_member, E.none, generation + 1, set(), GroupState.COMPLETING_REBALANCE,
                             PROTOCOL_TYPE, leader)


def test_static_member_leader_fail_to_rejoin_before_rebalance_timeout(harness: Harness) -> None:
    h = harness
    generation, _, follower = _rebalanced_static_pair(h, session_timeout=DEFAULT_REBALANCE_TIMEOUT * 2)
    new_member_box = h.send_join_group(GROUP_ID, UNKNOWN, protocols=SUPERSET, group_instance_id="newMember")
    h.advance(1)
    h.assert_group_state(GroupState.PREPARING_REBALANCE)
    old_follower = h.static_join_group(GROUP_ID, follower, FOLLOWER, protocols=SUPERSET,
                                       clock_advance=DEFAULT_REBALANCE_TIMEOUT + 1)
    new_member = new_member_box.get()
    new_leader, new_follower = ((old_follower, new_member) if old_follower.leader_id == old_follower.member_id
                                else (new_member, old_follower))
    _check_join_group_result(h, new_leader, E.none, generation + 1, {LEADER, FOLLOWER, "newMember"},
                             GroupState.COMPLETING_REBALANCE, PROTOCOL_TYPE)
    _check_join_group_result(h, new_follower, E.none, generation + 1, set(), GroupState.COMPLETING_REBALANCE,
                             PROTOCOL_TYPE, new_leader.member_id)


def test_second_member_partially_join_and_timeout(harness: Harness) -> None:
    h = harness
    first, _ = _stable_group_of_one(h)
    h.advance(100)
    group = h.group()
    assert group.all_members == [first]
    assert set(group.all_members) == group.all_dynamic_members()
    assert group.num_pending == 0
    assert group.current_state is GroupState.STABLE
    second = h.join_group_partial(GROUP_ID, UNKNOWN)
    assert second.error is E.member_id_required
    assert group.num_pending == 1
    assert group.current_state is GroupState.STABLE
    assert group.all_members == [first]
    h.advance(300)
    assert h.heartbeat(GROUP_ID, first, 1) is E.none
    h.advance(300)  # the pending member's session (500 ms) is over: it is dropped, the group stays stable
    assert group.all_members == [first]
    assert group.num_pending == 0
    assert group.current_state is GroupState.STABLE
    assert group.has(first)


def test_rebalance_does_not_time_out_when_all_sync_are_received(harness: Harness) -> None:
    h = harness
    results = _join_with_n_members(h, 3)
    assert {r.error for r in results} == {E.none}
    h.advance(DEFAULT_REBALANCE_TIMEOUT // 2)
    for r in results:
        assert h.heartbeat(GROUP_ID, r.member_id, r.generation_id) is E.none
    leader = h.send_sync_group_leader(GROUP_ID, results[0].generation_id, results[0].member_id,
                                      {r.member_id: b"" for r in results}, PROTOCOL_TYPE, PROTOCOL_NAME)
    assert leader.get().error is E.none
    followers = [h.send_sync_group_follower(GROUP_ID, r.generation_id, r.member_id, PROTOCOL_TYPE, PROTOCOL_NAME)
                 for r in results[1:]]
    assert {f.get().error for f in followers} == {E.none}
    h.advance(DEFAULT_REBALANCE_TIMEOUT // 2 + 1)
    for r in results:
        assert h.heartbeat(GROUP_ID, r.member_id, r.generation_id) is E.none
    h.advance(DEFAULT_REBALANCE_TIMEOUT // 2)
    for r in results:
        assert h.heartbeat(GROUP_ID, r.member_id, r.generation_id) is E.none


def test_commit_offset_in_completing_rebalance_from_unknown_member_id(harness: Harness) -> None:
    join = harness.dynamic_join_group(GROUP_ID, UNKNOWN)
    assert join.error is E.none
    result = harness.commit_offsets(GROUP_ID, UNKNOWN, join.generation_id, {TP: harness.offset(0)})
    assert result == {TP: E.unknown_member_id}


def test_commit_offset_in_completing_rebalance_from_illegal_generation(harness: Harness) -> None:
    join = harness.dynamic_join_group(GROUP_ID, UNKNOWN)
    assert join.error is E.none
    result = harness.commit_offsets(GROUP_ID, join.member_id, join.generation_id + 1, {TP: harness.offset(0)})
    assert result == {TP: E.illegal_generation}


def test_manual_commit_offset_should_not_validate_member_id_and_instance_id(harness: Harness) -> None:
    h = harness
    assert h.commit_offsets(GROUP_ID, UNKNOWN, -1, {TP: h.offset(0)}, "instance-id") == {TP: E.none}
    assert h.commit_offsets(GROUP_ID, "unknown", -1, {TP: h.offset(0)}) == {TP: E.none}


def test_list_groups_with_types(harness: Harness) -> None:
    from kafkalog.broker.group_metadata import GroupOverview
    _stable_group_of_one(harness)
    expected = [GroupOverview(GROUP_ID, "consumer", "Stable", "classic")]
    for types, groups in [({"classic"}, expected), ({"consumer"}, []), ({"Invalid"}, []), (set(), expected),
                          ({"Classic"}, expected)]:
        assert harness.coordinator.handle_list_groups(set(), types) == (E.none, groups)


def test_delete_offset_of_consumer_group_with_unparsable_protocol(harness: Harness) -> None:
    h = harness
    join = h.dynamic_join_group(GROUP_ID, UNKNOWN)
    assert h.sync_group_leader(GROUP_ID, join.generation_id, join.leader_id, {}).error is E.none
    assert h.commit_offsets(GROUP_ID, join.member_id, join.generation_id, {TP: h.offset(37)}) == {TP: E.none}
    # the subscription does not read: every topic counts as subscribed
    assert h.coordinator.handle_delete_offsets(GROUP_ID, [TP]) == (E.none, {TP: E.group_subscribed_to_topic})


def test_delete_offset_of_empty_consumer_group(harness: Harness) -> None:
    h = harness
    join = h.dynamic_join_group(GROUP_ID, UNKNOWN)
    assert join.error is E.none
    assert h.sync_group_leader(GROUP_ID, join.generation_id, join.leader_id, {}).error is E.none
    foo, bar = ("foo", 0), ("bar", 0)
    assert h.commit_offsets(GROUP_ID, join.member_id, join.generation_id, {foo: h.offset(37), bar: h.offset(37)}) == {
        foo: E.none, bar: E.none}
    verify_leave_group_result(h.single_leave_group(GROUP_ID, join.member_id))
    assert h.group().is_(GroupState.EMPTY)
    assert h.coordinator.handle_delete_offsets(GROUP_ID, [foo]) == (E.none, {foo: E.none})
    cached = h.manager.get_offsets(GROUP_ID, True, [foo, bar])
    assert (cached[foo].offset, cached[bar].offset) == (-1, 37)


def test_delete_offset_of_stable_consumer_group(harness: Harness) -> None:
    h = harness
    subscription = write_version_prefixed("ConsumerProtocolSubscription", {"topics": ["bar"]}, 3)
    join = h.dynamic_join_group(GROUP_ID, UNKNOWN, protocols=[("protocol", subscription)])
    assert join.error is E.none
    assert h.sync_group_leader(GROUP_ID, join.generation_id, join.leader_id, {}).error is E.none
    foo, bar = ("foo", 0), ("bar", 0)
    assert h.commit_offsets(GROUP_ID, join.member_id, join.generation_id, {foo: h.offset(37), bar: h.offset(37)}) == {
        foo: E.none, bar: E.none}
    assert h.group().is_(GroupState.STABLE)
    assert h.coordinator.handle_delete_offsets(GROUP_ID, [foo, bar]) == (E.none, {
        foo: E.none, bar: E.group_subscribed_to_topic})
    cached = h.manager.get_offsets(GROUP_ID, True, [foo, bar])
    assert (cached[foo].offset, cached[bar].offset) == (-1, 37)

"""Kafka 3.8.0's ``GroupMetadataTest`` (``core/src/test/scala/unit/kafka/coordinator/group/``), ported: a classic
group's state transitions, protocol selection, subscriptions, generations, offset commits (plain and transactional,
in log order), callbacks, pending members and pending syncs (:mod:`kafkalog.broker.group_metadata`)."""

from __future__ import annotations

import time

import pytest
from kio.schema.errors import ErrorCode

from kafkalog.broker.group_metadata import (
    CommitRecordMetadataAndOffset,
    GroupMetadata,
    GroupState,
    JoinGroupResult,
    MemberMetadata,
    SyncGroupResult,
)
from kafkalog.broker.group_records import OffsetAndMetadata
from kafkalog.errors import IllegalArgumentError, IllegalStateError
from kafkalog.messages import write_version_prefixed

S = GroupState
PROTOCOL_TYPE = "consumer"
GROUP_INSTANCE_ID = "groupInstanceId"
MEMBER_ID = "memberId"
CLIENT_ID = "clientId"
CLIENT_HOST = "clientHost"
REBALANCE_TIMEOUT_MS = 60000
SESSION_TIMEOUT_MS = 10000
TP = ("foo", 0)
BOTH = [("range", b""), ("roundrobin", b"")]


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000_000

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def group() -> GroupMetadata:
    return GroupMetadata("groupId", S.EMPTY, lambda: time.time_ns() // 1_000_000)


def member(member_id: str = MEMBER_ID, instance: str | None = None, protocol_type: str = PROTOCOL_TYPE,
           protocols: list[tuple[str, bytes]] | None = None) -> MemberMetadata:
    return MemberMetadata(member_id, instance, CLIENT_ID, CLIENT_HOST, REBALANCE_TIMEOUT_MS, SESSION_TIMEOUT_MS,
                          protocol_type, BOTH if protocols is None else protocols)


def offset(value: int, timestamp: int = 0) -> OffsetAndMetadata:
    return OffsetAndMetadata(value, None, "", timestamp)


def assert_state(group: GroupMetadata, target: GroupState) -> None:
    """Kafka: ``assertState``."""
    for other in {S.STABLE, S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE, S.DEAD} - {target}:
        assert not group.is_(other)
    assert group.is_(target)


def subscription(*topics: str) -> bytes:
    """Kafka: ``ConsumerProtocol.serializeSubscription`` (its highest version, 3)."""
    return write_version_prefixed("ConsumerProtocolSubscription", {"topics": list(topics)}, 3)


# -- transitions --

def test_can_rebalance_when_stable(group: GroupMetadata) -> None:
    assert group.can_rebalance


def test_can_rebalance_when_completing_rebalance(group: GroupMetadata) -> None:
    group.transition_to(S.PREPARING_REBALANCE)
    group.transition_to(S.COMPLETING_REBALANCE)
    assert group.can_rebalance


def test_cannot_rebalance_when_preparing_rebalance(group: GroupMetadata) -> None:
    group.transition_to(S.PREPARING_REBALANCE)
    assert not group.can_rebalance


def test_cannot_rebalance_when_dead(group: GroupMetadata) -> None:
    group.transition_to(S.PREPARING_REBALANCE)
    group.transition_to(S.EMPTY)
    group.transition_to(S.DEAD)
    assert not group.can_rebalance


@pytest.mark.parametrize(("name", "path", "target"), [
    ("testStableToPreparingRebalanceTransition", [S.PREPARING_REBALANCE], S.PREPARING_REBALANCE),
    ("testStableToDeadTransition", [S.DEAD], S.DEAD),
    ("testAwaitingRebalanceToPreparingRebalanceTransition",
     [S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE, S.PREPARING_REBALANCE], S.PREPARING_REBALANCE),
    ("testPreparingRebalanceToDeadTransition", [S.PREPARING_REBALANCE, S.DEAD], S.DEAD),
    ("testPreparingRebalanceToEmptyTransition", [S.PREPARING_REBALANCE, S.EMPTY], S.EMPTY),
    ("testEmptyToDeadTransition", [S.PREPARING_REBALANCE, S.EMPTY, S.DEAD], S.DEAD),
    ("testAwaitingRebalanceToStableTransition", [S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE, S.STABLE], S.STABLE),
    ("testDeadToDeadIllegalTransition", [S.PREPARING_REBALANCE, S.DEAD, S.DEAD], S.DEAD),
])
def test_legal_transitions(group: GroupMetadata, name: str, path: list[GroupState], target: GroupState) -> None:
    """GroupMetadataTest.testStableToPreparingRebalanceTransition, GroupMetadataTest.testStableToDeadTransition,
    GroupMetadataTest.testAwaitingRebalanceToPreparingRebalanceTransition,
    GroupMetadataTest.testPreparingRebalanceToDeadTransition, GroupMetadataTest.testPreparingRebalanceToEmptyTransition,
    GroupMetadataTest.testEmptyToDeadTransition, GroupMetadataTest.testAwaitingRebalanceToStableTransition,
    GroupMetadataTest.testDeadToDeadIllegalTransition (legal, despite its name)."""
    for state in path:
        group.transition_to(state)
    assert_state(group, target)


@pytest.mark.parametrize(("name", "path", "illegal"), [
    ("testEmptyToStableIllegalTransition", [], S.STABLE),
    ("testStableToStableIllegalTransition", [S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE, S.STABLE], S.STABLE),
    ("testEmptyToAwaitingRebalanceIllegalTransition", [], S.COMPLETING_REBALANCE),
    ("testPreparingRebalanceToPreparingRebalanceIllegalTransition", [S.PREPARING_REBALANCE], S.PREPARING_REBALANCE),
    ("testPreparingRebalanceToStableIllegalTransition", [S.PREPARING_REBALANCE], S.STABLE),
    ("testAwaitingRebalanceToAwaitingRebalanceIllegalTransition", [S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE],
     S.COMPLETING_REBALANCE),
    ("testDeadToStableIllegalTransition", [S.PREPARING_REBALANCE, S.DEAD], S.STABLE),
    ("testDeadToPreparingRebalanceIllegalTransition", [S.PREPARING_REBALANCE, S.DEAD], S.PREPARING_REBALANCE),
    ("testDeadToAwaitingRebalanceIllegalTransition", [S.PREPARING_REBALANCE, S.DEAD], S.COMPLETING_REBALANCE),
])
def test_illegal_transitions(group: GroupMetadata, name: str, path: list[GroupState], illegal: GroupState) -> None:
    """GroupMetadataTest.testEmptyToStableIllegalTransition, GroupMetadataTest.testStableToStableIllegalTransition,
    GroupMetadataTest.testEmptyToAwaitingRebalanceIllegalTransition,
    GroupMetadataTest.testPreparingRebalanceToPreparingRebalanceIllegalTransition,
    GroupMetadataTest.testPreparingRebalanceToStableIllegalTransition,
    GroupMetadataTest.testAwaitingRebalanceToAwaitingRebalanceIllegalTransition,
    GroupMetadataTest.testDeadToStableIllegalTransition,
    GroupMetadataTest.testDeadToPreparingRebalanceIllegalTransition,
    GroupMetadataTest.testDeadToAwaitingRebalanceIllegalTransition."""
    for state in path:
        group.transition_to(state)
    with pytest.raises(IllegalStateError, match="should be in the"):
        group.transition_to(illegal)


# -- protocols --

def test_select_protocol(group: GroupMetadata) -> None:
    group.add(member("memberId", protocols=[("range", b""), ("roundrobin", b"")]))
    assert group.select_protocol() == "range"
    group.add(member("otherMemberId", protocols=[("roundrobin", b""), ("range", b"")]))
    assert group.select_protocol() in {"range", "roundrobin"}  # no majority preference
    group.add(member("lastMemberId", protocols=[("roundrobin", b""), ("range", b"")]))
    assert group.select_protocol() == "roundrobin"


def test_select_protocol_raises_if_no_members(group: GroupMetadata) -> None:
    with pytest.raises(IllegalStateError, match="Cannot select protocol for empty group"):
        group.select_protocol()


def test_select_protocol_chooses_compatible_protocol(group: GroupMetadata) -> None:
    group.add(member("memberId", protocols=[("range", b""), ("roundrobin", b"")]))
    group.add(member("otherMemberId", protocols=[("roundrobin", b""), ("blah", b"")]))
    assert group.select_protocol() == "roundrobin"


def test_supports_protocols(group: GroupMetadata) -> None:
    assert group.supports_protocols(PROTOCOL_TYPE, {"roundrobin", "range"})  # an empty group supports everything
    group.add(member())
    group.transition_to(S.PREPARING_REBALANCE)
    assert group.supports_protocols(PROTOCOL_TYPE, {"roundrobin", "foo"})
    assert group.supports_protocols(PROTOCOL_TYPE, {"range", "foo"})
    assert not group.supports_protocols(PROTOCOL_TYPE, {"foo", "bar"})
    group.add(member("otherMemberId", protocols=[("roundrobin", b""), ("blah", b"")]))
    assert group.supports_protocols(PROTOCOL_TYPE, {"roundrobin", "foo"})
    assert not group.supports_protocols("invalid_type", {"roundrobin", "foo"})
    assert not group.supports_protocols(PROTOCOL_TYPE, {"range", "foo"})


def test_offset_removal_during_transition_from_empty_to_non_empty() -> None:
    clock = Clock()
    group = GroupMetadata("groupId", S.EMPTY, clock)
    m = member(protocols=[("range", subscription("foo"))])
    group.transition_to(S.PREPARING_REBALANCE)
    group.add(m)
    group.init_next_generation()
    assert group.subscribed_topics == {"foo"}
    committed = offset(37, clock.now)
    group.prepare_offset_commit({TP: committed})
    assert group.has_offsets
    assert group.offset(TP) is None
    group.on_offset_commit_append(TP, CommitRecordMetadataAndOffset(3, committed))
    retention = 50000
    clock.now += retention + 1
    group.transition_to(S.PREPARING_REBALANCE)
    group.remove(MEMBER_ID)
    group.init_next_generation()
    # empty, but only just: the offset stays
    assert group.current_state is S.EMPTY
    assert group.remove_expired_offsets(clock.now, retention) == {}
    # a member comes back: no expiry while the rebalance runs
    group.transition_to(S.PREPARING_REBALANCE)
    group.add(m)
    assert group.remove_expired_offsets(clock.now, retention) == {}


def test_subscribed_topics(group: GroupMetadata) -> None:
    assert group.subscribed_topics is None  # a new group's are unknown
    group.transition_to(S.PREPARING_REBALANCE)
    group.add(member(protocols=[("range", subscription("foo"))]))
    group.init_next_generation()
    assert group.subscribed_topics == {"foo"}
    group.transition_to(S.PREPARING_REBALANCE)
    group.remove(MEMBER_ID)
    group.init_next_generation()
    assert group.subscribed_topics == set()
    group.transition_to(S.PREPARING_REBALANCE)
    group.add(member(protocols=[("range", b"")]))  # a subscription that does not read
    group.init_next_generation()
    assert group.subscribed_topics is None


def test_subscribed_topics_non_consumer_group(group: GroupMetadata) -> None:
    assert group.subscribed_topics is None
    group.transition_to(S.PREPARING_REBALANCE)
    group.add(member(protocol_type="My Protocol", protocols=[("range", b"")]))
    group.init_next_generation()
    assert group.subscribed_topics is None


def test_init_next_generation(group: GroupMetadata) -> None:
    m = member()
    m.supported_protocols = [("roundrobin", b"")]
    group.transition_to(S.PREPARING_REBALANCE)
    group.add(m, lambda _: None)
    assert group.generation_id == 0
    assert group.protocol_name is None
    group.init_next_generation()
    assert group.generation_id == 1
    assert group.protocol_name == "roundrobin"


def test_init_next_generation_empty_group(group: GroupMetadata) -> None:
    assert group.current_state is S.EMPTY
    assert (group.generation_id, group.protocol_name) == (0, None)
    group.transition_to(S.PREPARING_REBALANCE)
    group.init_next_generation()
    assert (group.generation_id, group.protocol_name) == (1, None)


# -- offsets --

def test_offset_commit(group: GroupMetadata) -> None:
    committed = offset(37)
    group.prepare_offset_commit({TP: committed})
    assert group.has_offsets
    assert group.offset(TP) is None
    group.on_offset_commit_append(TP, CommitRecordMetadataAndOffset(3, committed))
    assert group.has_offsets
    assert group.offset(TP) == committed


def test_offset_commit_failure(group: GroupMetadata) -> None:
    committed = offset(37)
    group.prepare_offset_commit({TP: committed})
    assert group.has_offsets
    assert group.pending_offset_commit(TP) == committed
    assert group.offset(TP) is None
    group.fail_pending_offset_write(TP, committed)
    assert not group.has_offsets
    assert group.pending_offset_commit(TP) is None
    assert group.offset(TP) is None


def test_offset_commit_failure_with_another_pending(group: GroupMetadata) -> None:
    first, second = offset(37), offset(57)
    group.prepare_offset_commit({TP: first})
    assert group.has_offsets and group.pending_offset_commit(TP) == first and group.offset(TP) is None
    group.prepare_offset_commit({TP: second})
    assert group.has_offsets and group.pending_offset_commit(TP) == second and group.offset(TP) is None
    group.fail_pending_offset_write(TP, first)
    assert group.has_offsets and group.pending_offset_commit(TP) == second and group.offset(TP) is None
    group.on_offset_commit_append(TP, CommitRecordMetadataAndOffset(3, second))
    assert group.has_offsets and group.pending_offset_commit(TP) is None and group.offset(TP) == second


def test_offset_commit_with_another_pending(group: GroupMetadata) -> None:
    first, second = offset(37), offset(57)
    group.prepare_offset_commit({TP: first})
    assert group.has_offsets and group.pending_offset_commit(TP) == first and group.offset(TP) is None
    group.prepare_offset_commit({TP: second})
    assert group.has_offsets and group.pending_offset_commit(TP) == second and group.offset(TP) is None
    group.on_offset_commit_append(TP, CommitRecordMetadataAndOffset(4, first))
    assert group.has_offsets and group.pending_offset_commit(TP) == second and group.offset(TP) == first
    group.on_offset_commit_append(TP, CommitRecordMetadataAndOffset(5, second))
    assert group.has_offsets and group.pending_offset_commit(TP) is None and group.offset(TP) == second


def test_consumer_beats_transactional_offset_commit(group: GroupMetadata) -> None:
    producer_id = 13232
    txn, consumer = offset(37), offset(57)
    group.prepare_txn_offset_commit(producer_id, {TP: txn})
    assert group.has_offsets
    assert group.pending_txn_offset_commit(producer_id, TP) == CommitRecordMetadataAndOffset(None, txn)
    assert group.offset(TP) is None
    group.prepare_offset_commit({TP: consumer})
    assert group.has_offsets and group.pending_offset_commit(TP) == consumer and group.offset(TP) is None
    group.on_txn_offset_commit_append(producer_id, TP, CommitRecordMetadataAndOffset(3, txn))
    group.on_offset_commit_append(TP, CommitRecordMetadataAndOffset(4, consumer))
    assert group.has_offsets
    assert group.pending_txn_offset_commit(producer_id, TP) == CommitRecordMetadataAndOffset(3, txn)
    assert group.pending_offset_commit(TP) is None
    assert group.offset(TP) == consumer
    group.complete_pending_txn_offset_commit(producer_id, True)
    assert group.has_offsets
    assert group.pending_txn_offset_commit(producer_id, TP) is None and group.pending_offset_commit(TP) is None
    # offsets are materialized in log order, not in the order transactions complete
    assert group.offset(TP) == consumer


def test_transaction_beats_consumer_offset_commit(group: GroupMetadata) -> None:
    producer_id = 13232
    txn, consumer = offset(37), offset(57)
    group.prepare_txn_offset_commit(producer_id, {TP: txn})
    assert group.has_offsets
    assert group.pending_txn_offset_commit(producer_id, TP) == CommitRecordMetadataAndOffset(None, txn)
    assert group.offset(TP) is None
    group.prepare_offset_commit({TP: consumer})
    assert group.has_offsets and group.pending_offset_commit(TP) == consumer
    group.on_offset_commit_append(TP, CommitRecordMetadataAndOffset(3, consumer))
    group.on_txn_offset_commit_append(producer_id, TP, CommitRecordMetadataAndOffset(4, txn))
    assert group.has_offsets
    assert group.pending_txn_offset_commit(producer_id, TP) == CommitRecordMetadataAndOffset(4, txn)
    assert group.pending_offset_commit(TP) is None
    assert group.offset(TP) == consumer  # the transaction is not committed yet
    group.complete_pending_txn_offset_commit(producer_id, True)
    assert group.has_offsets
    assert group.pending_txn_offset_commit(producer_id, TP) is None and group.pending_offset_commit(TP) is None
    assert group.offset(TP) == txn  # committed, and later in the log


def test_transactional_commit_is_aborted_and_consumer_commit_wins(group: GroupMetadata) -> None:
    producer_id = 13232
    txn, consumer = offset(37), offset(57)
    group.prepare_txn_offset_commit(producer_id, {TP: txn})
    assert group.has_offsets and group.offset(TP) is None
    assert group.pending_txn_offset_commit(producer_id, TP) == CommitRecordMetadataAndOffset(None, txn)
    group.prepare_offset_commit({TP: consumer})
    assert group.has_offsets and group.offset(TP) is None
    assert group.pending_txn_offset_commit(producer_id, TP) == CommitRecordMetadataAndOffset(None, txn)
    assert group.pending_offset_commit(TP) == consumer
    group.on_offset_commit_append(TP, CommitRecordMetadataAndOffset(3, consumer))
    group.on_txn_offset_commit_append(producer_id, TP, CommitRecordMetadataAndOffset(4, txn))
    assert group.has_offsets
    assert group.pending_txn_offset_commit(producer_id, TP) == CommitRecordMetadataAndOffset(4, txn)
    assert group.offset(TP) == consumer
    group.complete_pending_txn_offset_commit(producer_id, False)
    assert group.has_offsets
    assert not group.has_pending_offset_commits_from_producer(producer_id)
    assert group.pending_txn_offset_commit(producer_id, TP) is None
    assert group.offset(TP) == consumer


def test_failed_txn_offset_commit_leaves_no_pending_state(group: GroupMetadata) -> None:
    producer_id = 13232
    txn = offset(37)
    group.prepare_txn_offset_commit(producer_id, {TP: txn})
    assert group.has_pending_offset_commits_from_producer(producer_id)
    assert group.has_offsets
    assert group.pending_txn_offset_commit(producer_id, TP) == CommitRecordMetadataAndOffset(None, txn)
    assert group.offset(TP) is None
    group.fail_pending_txn_offset_commit(producer_id, TP)
    assert not group.has_offsets
    assert not group.has_pending_offset_commits_from_producer(producer_id)
    assert group.pending_txn_offset_commit(producer_id, TP) is None
    group.complete_pending_txn_offset_commit(producer_id, True)  # the marker now changes nothing
    assert not group.has_offsets
    assert not group.has_pending_offset_commits_from_producer(producer_id)


def test_has_pending_non_txn_offsets(group: GroupMetadata) -> None:
    group.prepare_offset_commit({TP: offset(37)})
    assert group.has_pending_offset_commits_for_topic_partition(TP)


def test_has_pending_txn_offsets(group: GroupMetadata) -> None:
    group.prepare_txn_offset_commit(5, {TP: offset(37)})
    assert group.has_pending_offset_commits_for_topic_partition(TP)
    assert not group.has_pending_offset_commits_for_topic_partition(("non-exist", 0))


# -- members --

def test_update_member(group: GroupMetadata) -> None:
    m = member()
    group.add(m)
    group.update_member(m, [("roundrobin", b"")], 120000, 20000, None)
    assert group.rebalance_timeout_ms == 120000
    assert m.session_timeout_ms == 20000


def test_replace_group_instance_with_non_existing_member(group: GroupMetadata) -> None:
    with pytest.raises(IllegalArgumentError, match="Cannot replace non-existing member id memberId"):
        group.replace_static_member(GROUP_INSTANCE_ID, MEMBER_ID, "newMemberId")


def test_replace_group_instance(group: GroupMetadata) -> None:
    m = member(instance=GROUP_INSTANCE_ID)
    fenced: dict[str, bool] = {}
    group.add(m, lambda r: fenced.__setitem__("join", r.error is ErrorCode.fenced_instance_id))
    m.awaiting_sync_callback = lambda r: fenced.__setitem__("sync", r.error is ErrorCode.fenced_instance_id)
    assert group.is_leader(MEMBER_ID)
    assert group.current_static_member_id(GROUP_INSTANCE_ID) == MEMBER_ID
    group.replace_static_member(GROUP_INSTANCE_ID, MEMBER_ID, "newMemberId")
    assert group.is_leader("newMemberId")
    assert group.current_static_member_id(GROUP_INSTANCE_ID) == "newMemberId"
    assert fenced == {"join": True, "sync": True}
    assert not m.is_awaiting_join and not m.is_awaiting_sync


def test_invoke_join_callback(group: GroupMetadata) -> None:
    m = member()
    invoked: list[JoinGroupResult] = []
    group.add(m, invoked.append)
    assert group.has_all_members_joined
    group.maybe_invoke_join_callback(m, JoinGroupResult(MEMBER_ID, ErrorCode.none))
    assert invoked and not m.is_awaiting_join


def test_invoke_join_callback_fails(group: GroupMetadata) -> None:
    m = member()
    results: list[JoinGroupResult] = []

    def callback(result: JoinGroupResult) -> None:
        if not results and not getattr(callback, "failed", False):
            callback.failed = True  # type: ignore[attr-defined]
            raise RuntimeError("Something went wrong!")
        results.append(result)

    group.add(m, callback)
    group.maybe_invoke_join_callback(m, JoinGroupResult(MEMBER_ID, ErrorCode.none))
    assert results[0].error is ErrorCode.unknown_server_error
    assert not m.is_awaiting_join


def test_not_invoke_join_callback(group: GroupMetadata) -> None:
    m = member()
    group.add(m)
    assert not m.is_awaiting_join
    group.maybe_invoke_join_callback(m, JoinGroupResult(MEMBER_ID, ErrorCode.none))
    assert not m.is_awaiting_join


def test_invoke_sync_callback_fails(group: GroupMetadata) -> None:
    m = member()
    results: list[SyncGroupResult] = []

    def callback(result: SyncGroupResult) -> None:
        if not getattr(callback, "failed", False):
            callback.failed = True  # type: ignore[attr-defined]
            raise RuntimeError("Something went wrong!")
        results.append(result)

    group.add(m)
    m.awaiting_sync_callback = callback
    assert group.maybe_invoke_sync_callback(m, SyncGroupResult(ErrorCode.none))
    assert results[0].error is ErrorCode.unknown_server_error
    assert not m.is_awaiting_sync


def test_invoke_sync_callback(group: GroupMetadata) -> None:
    m = member()
    group.add(m)
    m.awaiting_sync_callback = lambda _: None
    assert group.maybe_invoke_sync_callback(m, SyncGroupResult(ErrorCode.none))
    assert not m.is_awaiting_sync


def test_not_invoke_sync_callback(group: GroupMetadata) -> None:
    m = member()
    group.add(m)
    assert not group.maybe_invoke_sync_callback(m, SyncGroupResult(ErrorCode.none))
    assert not m.is_awaiting_sync


def test_cannot_add_pending_member_if_stable(group: GroupMetadata) -> None:
    group.add(member())
    with pytest.raises(IllegalStateError, match="already a stable member"):
        group.add_pending_member(MEMBER_ID)


def test_removal_from_pending_after_member_is_stable(group: GroupMetadata) -> None:
    group.add_pending_member(MEMBER_ID)
    assert not group.has(MEMBER_ID) and group.is_pending_member(MEMBER_ID)
    group.add(member())
    assert group.has(MEMBER_ID) and not group.is_pending_member(MEMBER_ID)


def test_removal_from_pending_when_member_is_removed(group: GroupMetadata) -> None:
    group.add_pending_member(MEMBER_ID)
    assert not group.has(MEMBER_ID) and group.is_pending_member(MEMBER_ID)
    group.remove(MEMBER_ID)
    assert not group.has(MEMBER_ID) and not group.is_pending_member(MEMBER_ID)


def test_cannot_add_static_member_if_already_present(group: GroupMetadata) -> None:
    m = member(instance=GROUP_INSTANCE_ID, protocols=[("range", b"")])
    group.add(m)
    assert group.has(MEMBER_ID) and group.has_static_member(GROUP_INSTANCE_ID)
    with pytest.raises(IllegalStateError, match="already a member"):
        group.add(m)


def test_cannot_add_pending_sync_of_unknown_member(group: GroupMetadata) -> None:
    with pytest.raises(IllegalStateError, match="not a member of the group"):
        group.add_pending_sync_member(MEMBER_ID)


def test_cannot_remove_pending_sync_of_unknown_member(group: GroupMetadata) -> None:
    with pytest.raises(IllegalStateError, match="not a member of the group"):
        group.remove_pending_sync_member(MEMBER_ID)


def test_can_add_and_remove_pending_sync_member(group: GroupMetadata) -> None:
    group.add(member(instance=GROUP_INSTANCE_ID, protocols=[("range", b"")]))
    group.add_pending_sync_member(MEMBER_ID)
    assert group.all_pending_sync_members == {MEMBER_ID}
    group.remove_pending_sync_member(MEMBER_ID)
    assert group.all_pending_sync_members == set()


def test_removal_from_pending_sync_when_member_is_removed(group: GroupMetadata) -> None:
    group.add(member(instance=GROUP_INSTANCE_ID, protocols=[("range", b"")]))
    group.add_pending_sync_member(MEMBER_ID)
    assert group.all_pending_sync_members == {MEMBER_ID}
    group.remove(MEMBER_ID)
    assert group.all_pending_sync_members == set()


def test_new_generation_clears_pending_sync_members(group: GroupMetadata) -> None:
    group.add(member(instance=GROUP_INSTANCE_ID, protocols=[("range", b"")]))
    group.transition_to(S.PREPARING_REBALANCE)
    group.add_pending_sync_member(MEMBER_ID)
    assert group.all_pending_sync_members == {MEMBER_ID}
    group.init_next_generation()
    assert group.all_pending_sync_members == set()

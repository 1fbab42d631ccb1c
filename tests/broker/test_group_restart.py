"""The group coordinator's state in ``__consumer_offsets``: what it writes, what a restart loads back, what expiry
deletes; ports of Kafka 3.8.0's ``GroupMetadataManagerTest`` (``core/src/test/scala/unit/kafka/coordinator/group/``)
over real logs, plus restarts of a whole coordinator (a new one over the reopened log directory), the loading
window, the records read by ``kafkalog dump --offsets-decoder``, and a real broker's ``__consumer_offsets`` loaded.

Kafka tests not ported:
- ``testLogInfoFromCleanupGroupMetadata``, ``testMetrics``, ``testPartitionLoadMetric``: logging and metrics, which
  kafkalog's coordinator does not keep.
- ``testGroupNotExists``, ``testLoadOffsetsAndGroupIgnored``, ``testUnloadOffsetsAndGroupIgnored``,
  ``testUnloadOffsetsAndGroupIgnoredAfterStopReplica``, ``testStoreNonEmptyGroupWhenCoordinatorHasMoved``,
  ``testCommitOffsetWhenCoordinatorHasMoved``: coordinator epochs and partitions moving to another broker; one node
  leads every partition.
- ``testTransactionalCommitOffsetCommitted``, ``testTransactionalCommitOffsetAppendFailure``,
  ``testTransactionalCommitOffsetAborted``,
  ``testTransactionalCommitOffsetWithOffsetMetadataTooLargePartialFailure``: TxnOffsetCommit's appends and markers
  are the transaction coordinator's part; the load of committed and pending transactional offsets is tested here.
- ``testCommitOffsetPartialFailure``: one commit is one append to one log here, which succeeds or fails whole (a
  replica manager's per-partition answers do not arise).
- ``testLoadGroupAndOffsetsWithCorruptedLog``, ``testLoadOffsetsWithEmptyControlBatch``: they hand the loader a
  mocked log read; kafkalog's loader reads a real log (``test_load_skips_a_record_that_does_not_read`` covers a
  record that does not decode).
- ``testGroupMetadataRemovalWithLogAppendTime``: ``__consumer_offsets`` is created with CreateTime, as Kafka's is;
  not ported yet.
"""

from __future__ import annotations

import asyncio
import io
import shutil
import struct
from pathlib import Path

import pytest
from kio.schema.errors import ErrorCode

from kafkalog.broker.group_config import GroupCoordinatorConfig
from kafkalog.broker.group_coordinator import GroupCoordinator
from kafkalog.broker.group_metadata import GroupMetadata, GroupState, MemberMetadata
from kafkalog.broker.group_records import (
    GROUP_METADATA_TOPIC_NAME,
    GroupMetadataKey,
    GroupMetadataRecord,
    MemberRecord,
    OffsetAndMetadata,
    OffsetKey,
    UnknownKey,
    group_metadata_key,
    group_metadata_value,
    offset_commit_key,
    offset_commit_value,
    partition_for,
    read_group_message_value,
    read_message_key,
    read_offset_message_value,
)
from kafkalog.cli import main
from kafkalog.errors import (
    IllegalStateError,
    KafkaStorageError,
    RecordBatchTooLargeError,
    RecordTooLargeError,
    UnknownTopicOrPartitionError,
)
from kafkalog.manager.log_manager import LogManager
from kafkalog.messages import write_version_prefixed
from kafkalog.record.memory import MemoryRecords
from kafkalog.record.types import ControlRecordType, EndTransactionMarker
from tests.support.coordinator_logs import ManagerCoordinatorLogs, ManualTimer

E = ErrorCode
GROUP_ID = "foo"
CONFIG = GroupCoordinatorConfig(group_min_session_timeout_ms=10, group_initial_rebalance_delay_ms=50,
                                offsets_topic_num_partitions=3)
PARTITION = partition_for(GROUP_ID, CONFIG.offsets_topic_num_partitions)
COMMITTED = {("foo", 0): 23, ("foo", 1): 455, ("bar", 0): 8992}


class Node:
    """A coordinator over a log directory, restartable: :meth:`restart` closes the logs and opens them again."""

    def __init__(self, directory: Path, config: GroupCoordinatorConfig = CONFIG) -> None:
        self.directory, self.config = directory, config
        self.timer = ManualTimer()
        self.manager = LogManager(directory)
        self.manager.startup()
        self.logs = ManagerCoordinatorLogs(self.manager)
        self.coordinator = self._start()

    def _start(self) -> GroupCoordinator:
        coordinator = GroupCoordinator(self.logs, self.config, timer=self.timer)
        asyncio.run(coordinator.startup(enable_metadata_expiration=False))
        return coordinator

    def append(self, records: MemoryRecords, partition: int = PARTITION) -> None:
        self.logs.append_as_coordinator(GROUP_METADATA_TOPIC_NAME, partition, records)

    def reload(self) -> GroupCoordinator:
        """A new coordinator over the same open logs (Kafka: ``loadGroupsAndOffsets`` on election)."""
        self.coordinator.shutdown()
        self.coordinator = self._start()
        return self.coordinator

    def restart(self) -> GroupCoordinator:
        """Close everything and open the directory again: a broker restart."""
        self.coordinator.shutdown()
        self.manager.shutdown()
        self.manager = LogManager(self.directory)
        self.manager.startup()
        self.logs = ManagerCoordinatorLogs(self.manager)
        self.coordinator = self._start()
        return self.coordinator

    def close(self) -> None:
        self.coordinator.shutdown()
        self.manager.shutdown()

    def group(self, group_id: str = GROUP_ID) -> GroupMetadata:
        group = self.coordinator.group_manager.get_group(group_id)
        assert group is not None, "Group was not loaded into the cache"
        return group


@pytest.fixture
def node(tmp_path: Path) -> object:
    n = Node(tmp_path / "logs")
    yield n
    n.close()


def offset_records(committed: dict[tuple[str, int], int], group_id: str = GROUP_ID) -> list[tuple[bytes, bytes]]:
    """Kafka: ``createCommittedOffsetRecords``."""
    return [(offset_commit_key(group_id, t, p), offset_commit_value(OffsetAndMetadata(o, None, "", 1000)))
            for (t, p), o in committed.items()]


def stable_group_record(generation: int, protocol_type: str, protocol: str, member_id: str,
                        group_instance_id: str | None = None, assignment: bytes = b"") -> tuple[bytes, bytes]:
    """Kafka: ``buildStableGroupRecordWithMember``."""
    return (group_metadata_key(GROUP_ID), group_metadata_value(GroupMetadataRecord(
        protocol_type, generation, protocol, member_id, 1000,
        (MemberRecord(member_id, group_instance_id, "clientId", "clientHost", 60000, 10000, b"", assignment),))))


def empty_group_record(generation: int, protocol_type: str) -> tuple[bytes, bytes]:
    """Kafka: ``buildEmptyGroupRecord``."""
    return (group_metadata_key(GROUP_ID), group_metadata_value(GroupMetadataRecord(
        protocol_type, generation, None, None, 1000, ())))


# -- GroupMetadataManagerTest: loading --

def test_load_offsets_without_group(node: Node) -> None:
    node.append(MemoryRecords.with_records(offset_records(COMMITTED)))
    node.reload()
    group = node.group()
    assert group.group_id == GROUP_ID
    assert group.current_state is GroupState.EMPTY
    assert len(group.all_offsets()) == len(COMMITTED)
    for tp, offset in COMMITTED.items():
        assert group.offset(tp).offset == offset  # type: ignore[union-attr]


def test_load_empty_group_with_offsets(node: Node) -> None:
    node.append(MemoryRecords.with_records([*offset_records(COMMITTED), empty_group_record(15, "consumer")]))
    node.reload()
    group = node.group()
    assert group.current_state is GroupState.EMPTY
    assert group.generation_id == 15
    assert group.protocol_type == "consumer"
    assert group.leader_or_null is None
    assert group.protocol_name is None
    for tp, offset in COMMITTED.items():
        assert group.offset(tp).offset == offset  # type: ignore[union-attr]


def _txn_offsets(node: Node, producer_id: int, epoch: int, committed: dict[tuple[str, int], int],
                 commit: bool | None) -> None:
    node.append(MemoryRecords.with_records(offset_records(committed), producer_id=producer_id,
                                           producer_epoch=epoch, is_transactional=True))
    if commit is not None:
        marker = EndTransactionMarker(ControlRecordType.COMMIT if commit else ControlRecordType.ABORT, 0)
        node.append(MemoryRecords.with_end_transaction_marker(producer_id, epoch, marker))


def test_load_transactional_offsets_without_group(node: Node) -> None:
    _txn_offsets(node, 1000, 2, COMMITTED, commit=True)
    node.reload()
    group = node.group()
    assert group.current_state is GroupState.EMPTY
    assert len(group.all_offsets()) == len(COMMITTED)
    for tp, offset in COMMITTED.items():
        assert group.offset(tp).offset == offset  # type: ignore[union-attr]


def test_do_not_load_aborted_transactional_offset_commits(node: Node) -> None:
    _txn_offsets(node, 1000, 2, COMMITTED, commit=False)
    node.reload()
    # no committed offset and no group record: no group
    assert node.coordinator.group_manager.get_group(GROUP_ID) is None


def test_load_pending_transactional_offsets_answer_unstable(node: Node) -> None:
    """GroupMetadataManagerTest.testGroupLoadedWithPendingCommits, through the fetch: a transaction still open at the
    log end is loaded as pending, and ``require_stable`` fetches see UNSTABLE_OFFSET_COMMIT."""
    _txn_offsets(node, 1000, 2, {("foo", 0): 5}, commit=None)
    node.reload()
    error, data = node.coordinator.handle_fetch_offsets(GROUP_ID, True, [("foo", 0)])
    assert error is E.none and data[("foo", 0)].error is E.unstable_offset_commit
    error, data = node.coordinator.handle_fetch_offsets(GROUP_ID, False, [("foo", 0)])
    assert data[("foo", 0)].offset == -1 and data[("foo", 0)].error is E.none
    assert node.coordinator.group_manager.is_group_open_for_producer(1000, GROUP_ID)
    # the transaction coordinator's hook completes it
    node.coordinator.group_manager.handle_txn_completion(1000, {PARTITION}, is_commit=True)
    error, data = node.coordinator.handle_fetch_offsets(GROUP_ID, True, [("foo", 0)])
    assert data[("foo", 0)].offset == 5 and data[("foo", 0)].error is E.none


def test_load_offsets_with_tombstones(node: Node) -> None:
    tombstone_partition = ("foo", 1)
    node.append(MemoryRecords.with_records([*offset_records(COMMITTED),
                                            (offset_commit_key(GROUP_ID, *tombstone_partition), None)]))
    node.reload()
    group = node.group()
    assert group.current_state is GroupState.EMPTY
    assert len(group.all_offsets()) == len(COMMITTED) - 1
    for tp, offset in COMMITTED.items():
        if tp == tombstone_partition:
            assert group.offset(tp) is None
        else:
            assert group.offset(tp).offset == offset  # type: ignore[union-attr]


def test_load_offsets_and_group(node: Node) -> None:
    member_id = "98098230493"
    node.append(MemoryRecords.with_records([*offset_records(COMMITTED),
                                            stable_group_record(935, "consumer", "range", member_id)]))
    node.reload()
    group = node.group()
    assert group.current_state is GroupState.STABLE
    assert group.leader_or_null == member_id
    assert group.generation_id == 935
    assert group.protocol_type == "consumer"
    assert group.protocol_name == "range"
    assert set(group.all_members) == {member_id}
    assert len(group.all_offsets()) == len(COMMITTED)
    for tp, offset in COMMITTED.items():
        committed = group.offset(tp)
        assert committed is not None and committed.offset == offset and committed.expire_timestamp is None


def test_unload_offsets_and_group(node: Node) -> None:
    node.append(MemoryRecords.with_records([*offset_records(COMMITTED),
                                            stable_group_record(935, "consumer", "range", "m")]))
    node.reload()
    node.coordinator.on_resignation(PARTITION)
    assert node.coordinator.group_manager.get_group(GROUP_ID) is None, "Removed group remained in cache"


def test_load_group_with_tombstone(node: Node) -> None:
    node.append(MemoryRecords.with_records([stable_group_record(935, "consumer", "range", "m"),
                                            (group_metadata_key(GROUP_ID), None)]))
    node.reload()
    assert node.coordinator.group_manager.get_group(GROUP_ID) is None


def test_load_group_with_static_member(node: Node) -> None:
    """GroupMetadataManagerTest.testloadGroupWithStaticMember, through a record."""
    node.append(MemoryRecords.with_records([stable_group_record(27, "consumer", "range", "member",
                                                                group_instance_id="group-instance-id")]))
    node.reload()
    group = node.group()
    assert group.all_static_members == {"group-instance-id"}
    assert group.current_static_member_id("group-instance-id") == "member"


def test_load_consumer_group(node: Node) -> None:
    subscription = struct.pack(">hi", 0, 2) + struct.pack(">h", 3) + b"foo" + struct.pack(">h", 3) + b"bar" + \
        struct.pack(">i", -1)  # ConsumerProtocolSubscription v0: topics [foo, bar], no user data
    node.append(MemoryRecords.with_records([(group_metadata_key(GROUP_ID), group_metadata_value(GroupMetadataRecord(
        "consumer", 27, "range", "member", 1000,
        (MemberRecord("member", None, "clientId", "clientHost", 60000, 10000, subscription, b""),))))]))
    node.reload()
    group = node.group()
    assert group.current_state is GroupState.STABLE
    assert group.subscribed_topics == {"foo", "bar"}
    assert group.is_subscribed_to_topic("foo") and not group.is_subscribed_to_topic("baz")


def test_load_empty_consumer_group(node: Node) -> None:
    node.append(MemoryRecords.with_records([empty_group_record(27, "consumer")]))
    node.reload()
    group = node.group()
    assert group.current_state is GroupState.EMPTY
    assert group.subscribed_topics == set()


def test_should_throw_exception_for_unsupported_group_metadata_version() -> None:
    value = struct.pack(">h", -1) + b"\x00" * 8
    with pytest.raises(IllegalStateError, match="Unknown group metadata message version: -1"):
        read_group_message_value(value)
    with pytest.raises(IllegalStateError, match="Unknown offset message version: 7"):
        read_offset_message_value(struct.pack(">h", 7) + b"\x00" * 8)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_current_state_timestamp_for_all_group_metadata_versions(version: int) -> None:
    """testCurrentStateTimestampForAllGroupMetadataVersions, and GroupMetadataManagerTest.testReadFromOldGroupMetadata
    (a v0 value's rebalance timeout)."""
    record = write_version_prefixed("GroupMetadataValue", {
        "protocolType": "consumer", "generation": 1, "protocol": "range", "leader": "m",
        **({"currentStateTimestamp": 1500} if version >= 2 else {}),
        "members": [{"memberId": "m", "clientId": "c", "clientHost": "h", "sessionTimeout": 10000,
                     **({"rebalanceTimeout": 60000} if version >= 1 else {}),
                     "subscription": b"", "assignment": b""}]}, version)
    value = read_group_message_value(record)
    assert value is not None
    assert value.current_state_timestamp == (1500 if version >= 2 else None)
    # v0 has no rebalance timeout: the session timeout stands for it (Kafka: testReadFromOldGroupMetadata)
    assert value.members[0].rebalance_timeout == (10000 if version == 0 else 60000)


def test_read_message_key_can_read_unknown_message() -> None:
    assert read_message_key(struct.pack(">h", 7) + b"whatever") == UnknownKey(7)
    assert read_message_key(offset_commit_key("g", "t", 3)) == OffsetKey(1, "g", "t", 3)
    assert read_message_key(group_metadata_key("g")) == GroupMetadataKey(2, "g")


def test_load_groups_and_offsets_will_ignore_unknown_message(node: Node) -> None:
    unknown = (struct.pack(">h", 7) + b"unknown key", b"unknown value")
    member_id = "98098230493"
    node.append(MemoryRecords.with_records([*offset_records(COMMITTED), unknown,
                                            stable_group_record(935, "consumer", "range", member_id)]))
    node.reload()
    group = node.group()
    assert group.current_state is GroupState.STABLE and group.generation_id == 935
    assert len(group.all_offsets()) == len(COMMITTED)


def test_load_skips_a_record_that_does_not_read(node: Node) -> None:
    """kafkalog's deviation (module docstring of group_metadata_manager): a corrupt record is skipped, the rest of
    the partition loads."""
    node.append(MemoryRecords.with_records([(offset_commit_key(GROUP_ID, "foo", 0), struct.pack(">h", 3) + b"\x00"),
                                            *offset_records({("bar", 0): 8992})]))
    node.reload()
    assert node.group().offset(("bar", 0)).offset == 8992  # type: ignore[union-attr]
    assert node.group().offset(("foo", 0)) is None


# -- GroupMetadataManagerTest: storing --

def _records_of(node: Node, partition: int = PARTITION) -> list[tuple[bytes | None, bytes | None]]:
    log = node.logs.log(GROUP_METADATA_TOPIC_NAME, partition)
    return [(None if r.key is None else bytes(r.key), None if r.value is None else bytes(r.value))
            for r in log.records()]


def test_store_empty_group(node: Node) -> None:
    group = GroupMetadata(GROUP_ID, GroupState.PREPARING_REBALANCE, node.timer.time_ms)
    node.coordinator.group_manager.add_group(group)
    group.generation_id = 0  # initNextGeneration below takes it to 1
    group.init_next_generation()
    errors: list[ErrorCode] = []
    node.coordinator.group_manager.store_group(group, {}, errors.append)
    assert errors == [E.none]
    [(key, value)] = _records_of(node)
    assert key == group_metadata_key(GROUP_ID)
    assert value is not None and struct.unpack_from(">h", value)[0] == 3
    record = read_group_message_value(value)
    assert record is not None
    assert (record.generation, record.protocol_type, record.protocol, record.leader) == (1, "", None, None)
    assert record.members == ()


def test_store_non_empty_group(node: Node) -> None:
    group = GroupMetadata(GROUP_ID, GroupState.EMPTY, node.timer.time_ms)
    node.coordinator.group_manager.add_group(group)
    member = MemberMetadata("memberId", None, "clientId", "clientHost", 30000, 10000, "consumer",
                            [("protocol", b"subscription")])
    group.add(member, lambda _: None)
    group.transition_to(GroupState.PREPARING_REBALANCE)
    group.init_next_generation()
    errors: list[ErrorCode] = []
    node.coordinator.group_manager.store_group(group, {"memberId": b"assignment"}, errors.append)
    assert errors == [E.none]
    [(_, value)] = _records_of(node)
    record = read_group_message_value(value)
    assert record is not None
    assert record.members[0].subscription == b"subscription" and record.members[0].assignment == b"assignment"
    assert (record.members[0].rebalance_timeout, record.members[0].session_timeout) == (30000, 10000)


def test_commit_offset(node: Node) -> None:
    group = GroupMetadata(GROUP_ID, GroupState.EMPTY, node.timer.time_ms)
    node.coordinator.group_manager.add_group(group)
    statuses: list[dict] = []  # type: ignore[type-arg]
    offset = OffsetAndMetadata(37, None, "", node.timer.time_ms())
    node.coordinator.group_manager.store_offsets(group, "", {("foo", 0): offset}, statuses.append)
    assert statuses == [{("foo", 0): E.none}]
    assert group.has_offsets
    data = node.coordinator.group_manager.get_offsets(GROUP_ID, False, [("foo", 0)])
    assert data[("foo", 0)].offset == 37
    [(key, value)] = _records_of(node)
    assert key == offset_commit_key(GROUP_ID, "foo", 0)
    assert read_offset_message_value(value) == offset
    assert struct.unpack_from(">h", value or b"")[0] == 3  # no expire timestamp: v3


def test_commit_offset_failure(node: Node) -> None:
    group = GroupMetadata(GROUP_ID, GroupState.EMPTY, node.timer.time_ms)
    node.coordinator.group_manager.add_group(group)
    node.logs.fail_with = KafkaStorageError("disk gone")
    statuses: list[dict] = []  # type: ignore[type-arg]
    node.coordinator.group_manager.store_offsets(group, "", {("foo", 0): OffsetAndMetadata(37, None, "", 1)},
                                                 statuses.append)
    assert statuses == [{("foo", 0): E.not_coordinator}]  # KAFKA_STORAGE_ERROR, as an offset commit answers it
    assert not group.has_offsets
    assert node.coordinator.group_manager.get_offsets(GROUP_ID, False, [("foo", 0)])[("foo", 0)].offset == -1


def test_offset_metadata_too_large(node: Node) -> None:
    group = GroupMetadata(GROUP_ID, GroupState.EMPTY, node.timer.time_ms)
    node.coordinator.group_manager.add_group(group)
    statuses: list[dict] = []  # type: ignore[type-arg]
    big = OffsetAndMetadata(37, None, "A" * (CONFIG.offset_metadata_max_bytes + 1), 1)
    node.coordinator.group_manager.store_offsets(group, "", {("foo", 0): big}, statuses.append)
    assert statuses == [{("foo", 0): E.offset_metadata_too_large}]
    assert not group.has_offsets
    assert _records_of(node) == []


@pytest.mark.parametrize(("expire", "version"), [(None, 3), (12345, 1)])
def test_serde_offset_commit_value(expire: int | None, version: int) -> None:
    """testSerdeOffsetCommitValue, with GroupMetadataManagerTest.testSerdeOffsetCommitValueWithExpireTimestamp,
    GroupMetadataManagerTest.testSerdeOffsetCommitValueWithNoneExpireTimestamp and
    GroupMetadataManagerTest.testSerializeOffsetCommitValueToHighestNonFlexibleVersion."""
    offset = OffsetAndMetadata(537, 15 if expire is None else None, "metadata", 1000, expire)
    value = offset_commit_value(offset)
    assert struct.unpack_from(">h", value)[0] == version
    assert read_offset_message_value(value) == offset


def test_serialize_group_metadata_value_to_highest_non_flexible_version() -> None:
    value = group_metadata_value(GroupMetadataRecord("consumer", 1, "range", None, 5, ()))
    assert struct.unpack_from(">h", value)[0] == 3


def test_deserialize_highest_supported_group_metadata_value_version() -> None:
    value = write_version_prefixed("GroupMetadataValue", {
        "protocolType": "consumer", "generation": 935, "protocol": "range", "leader": "leader",
        "members": [{"memberId": "member", "clientId": "client", "clientHost": "host"}]}, 4)
    record = read_group_message_value(value)
    assert record is not None
    group = GroupMetadata.load_group("groupId", record, lambda: 0)
    assert (group.generation_id, group.protocol_type, group.protocol_name, group.leader_or_null) == (
        935, "consumer", "range", "leader")
    [member] = group.all_member_metadata
    assert (member.member_id, member.client_id, member.client_host) == ("member", "client", "host")


def test_add_group(node: Node) -> None:
    gm = node.coordinator.group_manager
    group = GroupMetadata("foo", GroupState.EMPTY, node.timer.time_ms)
    assert gm.add_group(group) is group
    assert gm.add_group(GroupMetadata("foo", GroupState.EMPTY, node.timer.time_ms)) is group


def test_store_empty_simple_group(node: Node) -> None:
    group = GroupMetadata(GROUP_ID, GroupState.EMPTY, node.timer.time_ms)
    node.coordinator.group_manager.add_group(group)
    errors: list[ErrorCode] = []
    node.coordinator.group_manager.store_group(group, {}, errors.append)
    assert errors == [E.none]
    [(_, value)] = _records_of(node)
    record = read_group_message_value(value)
    assert record is not None
    loaded = GroupMetadata.load_group(GROUP_ID, record, lambda: 0)
    assert loaded.is_(GroupState.EMPTY)
    assert loaded.generation_id == 0
    assert loaded.protocol_type is None


def test_deserialize_highest_supported_offset_commit_value_version() -> None:
    value = write_version_prefixed("OffsetCommitValue", {"offset": 1000, "leaderEpoch": 100, "metadata": "metadata",
                                                         "commitTimestamp": 1234}, 4)
    assert read_offset_message_value(value) == OffsetAndMetadata(1000, 100, "metadata", 1234)


# -- GroupMetadataManagerTest: expiry --

def test_expire_offset(node: Node) -> None:
    gm = node.coordinator.group_manager
    group = GroupMetadata(GROUP_ID, GroupState.EMPTY, node.timer.time_ms)
    gm.add_group(group)
    start = node.timer.time_ms()
    offsets = {("foo", 0): OffsetAndMetadata(37, None, "", start, start + 1),
               ("foo", 1): OffsetAndMetadata(37, None, "", start, start + 3)}
    statuses: list[dict] = []  # type: ignore[type-arg]
    gm.store_offsets(group, "", offsets, statuses.append)
    assert group.has_offsets and statuses == [{("foo", 0): E.none, ("foo", 1): E.none}]
    node.timer.advance(2)
    gm.cleanup_expired()
    assert gm.get_group(GROUP_ID) is group
    assert group.offset(("foo", 0)) is None
    assert group.offset(("foo", 1)).offset == 37  # type: ignore[union-attr]
    cached = gm.get_offsets(GROUP_ID, True, [("foo", 0), ("foo", 1)])
    assert (cached[("foo", 0)].offset, cached[("foo", 1)].offset) == (-1, 37)
    # the expired offset's tombstone
    assert _records_of(node)[-1] == (offset_commit_key(GROUP_ID, "foo", 0), None)


def test_group_metadata_removal(node: Node) -> None:
    gm = node.coordinator.group_manager
    group = GroupMetadata(GROUP_ID, GroupState.EMPTY, node.timer.time_ms)
    gm.add_group(group)
    group.generation_id = 5
    gm.cleanup_expired()
    assert group.is_(GroupState.DEAD)
    assert gm.get_group(GROUP_ID) is None
    assert _records_of(node) == [(group_metadata_key(GROUP_ID), None)]


def test_expire_group_with_offsets_only(node: Node) -> None:
    """An offsets-only group (generation 0) is removed with its offsets; no group tombstone is written."""
    gm = node.coordinator.group_manager
    group = GroupMetadata(GROUP_ID, GroupState.EMPTY, node.timer.time_ms)
    gm.add_group(group)
    start = node.timer.time_ms()
    gm.store_offsets(group, "", {("foo", 0): OffsetAndMetadata(37, None, "", start, start + 1),
                                 ("foo", 1): OffsetAndMetadata(37, None, "", start, start + 3)}, lambda _: None)
    node.timer.advance(5)
    gm.cleanup_expired()
    assert gm.get_group(GROUP_ID) is None
    assert group.is_(GroupState.DEAD)
    tombstones = [k for k, v in _records_of(node) if v is None]
    assert sorted(tombstones) == sorted([offset_commit_key(GROUP_ID, "foo", 0), offset_commit_key(GROUP_ID, "foo", 1)])


def test_offset_expiration_semantics(node: Node) -> None:
    """KIP-211: an empty group's offsets expire ``offsets.retention.minutes`` after it became empty, whatever their
    commit time (Kafka: ``testOffsetExpirationSemantics``, its empty-group half)."""
    gm = node.coordinator.group_manager
    retention = CONFIG.offsets_retention_ms
    group = GroupMetadata(GROUP_ID, GroupState.EMPTY, node.timer.time_ms)
    gm.add_group(group)
    member = MemberMetadata("m", None, "c", "h", 30000, 10000, "consumer", [("range", b"")])
    group.add(member, lambda _: None)
    group.transition_to(GroupState.PREPARING_REBALANCE)
    group.init_next_generation()
    group.transition_to(GroupState.STABLE)
    start = node.timer.time_ms()
    gm.store_offsets(group, "m", {("foo", 0): OffsetAndMetadata(1, None, "", start)}, lambda _: None)
    node.timer.advance(retention // 2)
    group.remove("m")
    group.transition_to(GroupState.PREPARING_REBALANCE)
    group.init_next_generation()  # now Empty: the clock of expiry starts here
    assert group.is_(GroupState.EMPTY)
    node.timer.advance(retention // 2 + 1)
    assert gm.cleanup_expired() == 0  # committed more than retention ago, but empty for less
    node.timer.advance(retention // 2)
    assert gm.cleanup_expired() == 1
    assert group.offset(("foo", 0)) is None


def test_offset_expiration_of_simple_consumer(node: Node) -> None:
    gm = node.coordinator.group_manager
    group = GroupMetadata(GROUP_ID, GroupState.EMPTY, node.timer.time_ms)
    gm.add_group(group)
    start = node.timer.time_ms()
    gm.store_offsets(group, "", {("foo", 0): OffsetAndMetadata(1, None, "", start)}, lambda _: None)
    node.timer.advance(CONFIG.offsets_retention_ms - 1)
    assert gm.cleanup_expired() == 0
    node.timer.advance(1)
    assert gm.cleanup_expired() == 1
    assert gm.get_group(GROUP_ID) is None


def test_retention_check_runs_on_its_interval(tmp_path: Path) -> None:
    """The expiry task runs at startup and then every ``offsets.retention.check.interval.ms`` (Kafka's
    ``delete-expired-group-metadata``), writing the tombstones."""
    config = GroupCoordinatorConfig(offsets_topic_num_partitions=3, offsets_retention_minutes=1,
                                    offsets_retention_check_interval_ms=1000)
    timer = ManualTimer()
    with LogManager(tmp_path) as manager:
        logs = ManagerCoordinatorLogs(manager)
        coordinator = GroupCoordinator(logs, config, timer=timer)
        asyncio.run(coordinator.startup())
        assert coordinator.handle_commit_offsets(GROUP_ID, "", None, -1, {
            ("foo", 0): OffsetAndMetadata(1, None, "", timer.time_ms())}) == {("foo", 0): E.none}
        timer.advance(59_000)
        assert coordinator.group_manager.get_group(GROUP_ID) is not None
        timer.advance(2_000)  # past the minute, and a check falls due
        assert coordinator.group_manager.get_group(GROUP_ID) is None
        log = logs.log(GROUP_METADATA_TOPIC_NAME, PARTITION)
        assert [r.value for r in log.records()] == [offset_commit_value(OffsetAndMetadata(
            1, None, "", timer.time_ms() - 61_000)), None]
        coordinator.shutdown()
        assert timer.pending == 0


# -- a whole coordinator restarting --

def _form_group(coordinator: GroupCoordinator, timer: ManualTimer) -> tuple[str, int]:
    boxes: list = []  # type: ignore[type-arg]
    coordinator.handle_join_group(GROUP_ID, "", None, False, True, "client", "/10.0.0.1", 60000, 10000, "consumer",
                                  [("range", b"sub")], boxes.append)
    timer.advance(51)
    [join] = boxes
    assert join.error is E.none
    syncs: list = []  # type: ignore[type-arg]
    coordinator.handle_sync_group(GROUP_ID, join.generation_id, join.member_id, None, None, None,
                                  {join.member_id: b"assignment"}, syncs.append)
    assert syncs[0].error is E.none
    return join.member_id, join.generation_id


def test_restart_restores_groups_and_committed_offsets(node: Node) -> None:
    member, generation = _form_group(node.coordinator, node.timer)
    assert node.coordinator.handle_commit_offsets(GROUP_ID, member, None, generation, {
        ("topic", 0): OffsetAndMetadata(42, 7, "meta", node.timer.time_ms())}) == {("topic", 0): E.none}
    assert node.coordinator.handle_commit_offsets("standalone", "", None, -1, {
        ("topic", 1): OffsetAndMetadata(9, None, "", node.timer.time_ms())}) == {("topic", 1): E.none}
    node.restart()
    group = node.group()
    assert group.current_state is GroupState.STABLE
    assert (group.generation_id, group.protocol_type, group.protocol_name, group.leader_or_null) == (
        generation, "consumer", "range", member)
    restored = group.get(member)
    assert (restored.client_id, restored.client_host, restored.session_timeout_ms, restored.rebalance_timeout_ms,
            restored.assignment, restored.metadata("range")) == ("client", "/10.0.0.1", 10000, 60000,
                                                                 b"assignment", b"sub")
    error, data = node.coordinator.handle_fetch_offsets(GROUP_ID, True, None)
    assert error is E.none
    assert (data[("topic", 0)].offset, data[("topic", 0)].leader_epoch, data[("topic", 0)].metadata) == (42, 7, "meta")
    assert node.coordinator.handle_fetch_offsets("standalone", True, [("topic", 1)])[1][("topic", 1)].offset == 9
    # the loaded member's session runs again: it heartbeats, or it goes
    assert node.coordinator.handle_heartbeat(GROUP_ID, member, None, generation) is E.none
    node.timer.advance(10001)
    assert node.group().current_state is GroupState.EMPTY
    node.restart()
    group = node.group()
    assert group.current_state is GroupState.EMPTY and group.generation_id == generation + 1
    assert node.coordinator.handle_fetch_offsets(GROUP_ID, True, [("topic", 0)])[1][("topic", 0)].offset == 42


def test_restart_after_delete_forgets_the_group(node: Node) -> None:
    member, _ = _form_group(node.coordinator, node.timer)
    assert node.coordinator.handle_leave_group(GROUP_ID, [(member, None, None)])[1][0][2] is E.none
    assert node.coordinator.handle_delete_groups([GROUP_ID]) == {GROUP_ID: E.none}
    node.restart()
    assert node.coordinator.group_manager.get_group(GROUP_ID) is None
    assert node.coordinator.handle_describe_group(GROUP_ID)[1].state == "Dead"


def test_requests_while_loading(tmp_path: Path) -> None:
    """GroupCoordinatorTest.testRequestHandlingWhileLoadingInProgress: while a group's partition loads, JoinGroup,
    OffsetCommit, DescribeGroups, DeleteGroups and ListGroups say COORDINATOR_LOAD_IN_PROGRESS, SyncGroup says
    REBALANCE_IN_PROGRESS and Heartbeat NONE.  The window is the coordinator's yield between two partitions."""
    config = GroupCoordinatorConfig(offsets_topic_num_partitions=2)
    loading_group = "otherGroup"  # partition 1, loaded second
    assert partition_for(loading_group, 2) == 1
    timer = ManualTimer()

    async def scenario(coordinator: GroupCoordinator) -> None:
        startup = asyncio.ensure_future(coordinator.startup(enable_metadata_expiration=False))
        await asyncio.sleep(0)  # startup runs to its first yield: partition 0 loaded, partition 1 not yet
        assert coordinator.group_manager.is_partition_loading(1)
        joins: list = []  # type: ignore[type-arg]
        coordinator.handle_join_group(loading_group, "memberId", None, True, True, "c", "h", 60000, 10000,
                                      "consumer", [("range", b"")], joins.append)
        coordinator.handle_join_group(loading_group, "memberId", "groupInstanceId", False, True, "c", "h", 60000,
                                      10000, "consumer", [("range", b"")], joins.append)
        assert [j.error for j in joins] == [E.coordinator_load_in_progress] * 2
        syncs: list = []  # type: ignore[type-arg]
        coordinator.handle_sync_group(loading_group, 1, "memberId", "consumer", "range", None, {}, syncs.append)
        assert syncs[0].error is E.rebalance_in_progress
        assert coordinator.handle_commit_offsets(loading_group, "memberId", None, 1, {
            ("foo", 0): OffsetAndMetadata(15, None, "", 0)}) == {("foo", 0): E.coordinator_load_in_progress}
        assert coordinator.handle_heartbeat(loading_group, "memberId", None, 1) is E.none
        assert coordinator.handle_describe_group(loading_group)[0] is E.coordinator_load_in_progress
        assert coordinator.handle_list_groups(set(), set())[0] is E.coordinator_load_in_progress
        assert coordinator.handle_delete_groups([loading_group]) == {loading_group: E.coordinator_load_in_progress}
        assert coordinator.handle_describe_group("groupId")[0] is E.none  # partition 0 is loaded
        await startup
        assert coordinator.handle_describe_group(loading_group)[0] is E.none

    with LogManager(tmp_path) as manager:
        coordinator = GroupCoordinator(ManagerCoordinatorLogs(manager), config, timer=timer)
        asyncio.run(scenario(coordinator))
        coordinator.shutdown()


def test_dump_offsets_decoder_reads_what_the_coordinator_wrote(node: Node) -> None:
    member, generation = _form_group(node.coordinator, node.timer)
    node.coordinator.handle_commit_offsets(GROUP_ID, member, None, generation, {
        ("topic", 0): OffsetAndMetadata(42, 7, "meta", 1_700_000_000_000)})
    node.coordinator.handle_leave_group(GROUP_ID, [(member, None, None)])
    node.coordinator.handle_delete_groups([GROUP_ID])
    segment = next((node.directory / f"{GROUP_METADATA_TOPIC_NAME}-{PARTITION}").glob("*.log"))
    out, err = io.StringIO(), io.StringIO()
    status = main(["--no-progress", "dump", "--offsets-decoder", "--files", str(segment)], stdout=out, stderr=err)
    assert (status, err.getvalue()) == (0, "")
    lines = [line.split(" headerKeys: []", 1)[1].strip() for line in out.getvalue().splitlines()
             if line.startswith("| offset:")]
    # the group, the offset, the group again (empty after the leave), then DeleteGroups' two tombstones
    assert len(lines) == 5
    assert lines[0].startswith('key: {"type":"2","data":{"group":"foo"}} payload: {"version":"3","data":'
                               '{"protocolType":"consumer","generation":1,"protocol":"range","leader":"' + member)
    assert lines[1] == ('key: {"type":"1","data":{"group":"foo","topic":"topic","partition":0}} payload: '
                        '{"version":"3","data":{"offset":42,"leaderEpoch":7,"metadata":"meta",'
                        '"commitTimestamp":1700000000000}}')
    assert lines[2].startswith('key: {"type":"2","data":{"group":"foo"}} payload: {"version":"3","data":'
                               '{"protocolType":"consumer","generation":2,"protocol":null,"leader":null,')
    assert lines[3:] == ['key: {"type":"1","data":{"group":"foo","topic":"topic","partition":0}} payload: <DELETE>',
                         'key: {"type":"2","data":{"group":"foo"}} payload: <DELETE>']


GOLDEN = Path("/work/shared/golden/VolodymyrZee__kafka")


@pytest.mark.skipif(not GOLDEN.is_dir(), reason="the golden data is not on this machine")
def test_loads_a_real_brokers_consumer_offsets(tmp_path: Path) -> None:
    """A real (2.x) broker's ``__consumer_offsets-18``, copied, loads: its groups and their offsets, as Kafka's
    own loader reads them (a group tombstone drops the group, an offset tombstone the offset)."""
    from kafkalog.messages import schema
    source = GOLDEN / "__consumer_offsets-18"
    data = (source / "00000000000000000000.log").read_bytes()
    # What the log holds, read here record by record with the schemas alone: the last word on each key.
    expected_offsets: dict[tuple[str, str, int], int] = {}
    expected_groups: dict[str, int] = {}
    for record in MemoryRecords(data).records():
        key = read_message_key(bytes(record.key))
        if isinstance(key, OffsetKey):
            if record.value is None:
                expected_offsets.pop((key.group, key.topic, key.partition), None)
            else:
                value = bytes(record.value)
                expected_offsets[(key.group, key.topic, key.partition)] = schema("OffsetCommitValue").read(
                    value, struct.unpack_from(">h", value)[0], pos=2)[0]["offset"]
        elif isinstance(key, GroupMetadataKey):
            if record.value is None:
                expected_groups.pop(key.group, None)
            else:
                value = bytes(record.value)
                expected_groups[key.group] = schema("GroupMetadataValue").read(
                    value, struct.unpack_from(">h", value)[0], pos=2)[0]["generation"]
    assert expected_offsets and expected_groups
    target = tmp_path / "logs"
    (target / "__consumer_offsets-18").mkdir(parents=True)
    shutil.copy(source / "00000000000000000000.log", target / "__consumer_offsets-18")
    config = GroupCoordinatorConfig(offsets_topic_num_partitions=50)
    timer = ManualTimer()
    with LogManager(target) as manager:
        coordinator = GroupCoordinator(ManagerCoordinatorLogs(manager), config, timer=timer)
        asyncio.run(coordinator.startup(enable_metadata_expiration=False))
        gm = coordinator.group_manager
        for group_id, generation in expected_groups.items():
            group = gm.get_group(group_id)
            assert group is not None and group.generation_id == generation
            assert partition_for(group_id, 50) == 18  # Kafka's partitionFor put it there
        loaded = {(g.group_id, t, p): o.offset for g in gm.current_groups for (t, p), o in g.all_offsets().items()}
        assert loaded == expected_offsets
        coordinator.shutdown()


# -- more of GroupMetadataManagerTest --

@pytest.mark.parametrize("name", ["test_load_offset_from_old_commit", "test_load_offset_with_explicit_retention"])
def test_loads_offsets_with_an_expire_timestamp(node: Node, name: str) -> None:
    """GroupMetadataManagerTest.testLoadOffsetFromOldCommit and
    GroupMetadataManagerTest.testLoadOffsetWithExplicitRetention: offsets written with a retention time (value v1,
    the only one with an expire timestamp) load with it."""
    member_id = "98098230493"
    records = [(offset_commit_key(GROUP_ID, t, p), offset_commit_value(OffsetAndMetadata(o, None, "", 1000, 1100)))
               for (t, p), o in COMMITTED.items()]
    assert all(v[:2] == b"\x00\x01" for _, v in records)
    node.append(MemoryRecords.with_records([*records, stable_group_record(935, "consumer", "range", member_id)]))
    node.reload()
    group = node.group()
    assert (group.current_state, group.leader_or_null, group.generation_id) == (GroupState.STABLE, member_id, 935)
    assert (group.protocol_type, group.protocol_name, set(group.all_members)) == ("consumer", "range", {member_id})
    assert len(group.all_offsets()) == len(COMMITTED)
    for tp, offset in COMMITTED.items():
        committed = group.offset(tp)
        assert committed is not None and committed.offset == offset and committed.expire_timestamp == 1100


def test_deserialize_future_offset_commit_value() -> None:
    """A v4 (flexible) value carrying tagged fields this version does not know: read, the fields skipped."""
    value = (struct.pack(">hqi", 4, 1000, 100) + b"\x09metadata" + struct.pack(">q", 2000)
             + b"\x02" + b"\x00\x04\x00\x03foo" + b"\x01\x04" + struct.pack(">i", 4000))
    assert read_offset_message_value(value) == OffsetAndMetadata(1000, 100, "metadata", 2000)


def test_offset_metadata_too_large_partial_failure(node: Node) -> None:
    group = GroupMetadata(GROUP_ID, GroupState.EMPTY, node.timer.time_ms)
    node.coordinator.group_manager.add_group(group)
    statuses: list[dict] = []  # type: ignore[type-arg]
    good, bad = ("foo", 0), ("foo", 1)
    node.coordinator.group_manager.store_offsets(group, "", {
        good: OffsetAndMetadata(37, None, "", 1),
        bad: OffsetAndMetadata(38, None, "A" * (CONFIG.offset_metadata_max_bytes + 1), 1)}, statuses.append)
    assert statuses == [{good: E.none, bad: E.offset_metadata_too_large}]
    assert group.offset(good).offset == 37  # type: ignore[union-attr]
    assert group.offset(bad) is None
    assert [k for k, _ in _records_of(node)] == [offset_commit_key(GROUP_ID, "foo", 0)]


@pytest.mark.parametrize(("failure", "expected"), [
    (None, E.none),
    (UnknownTopicOrPartitionError("gone"), E.coordinator_not_available),
    (KafkaStorageError("disk"), E.not_coordinator),
    (RecordTooLargeError("large"), E.unknown_server_error),
    (RecordBatchTooLargeError("larger"), E.unknown_server_error),
    (IllegalStateError("odd"), E.unknown_server_error),
])
def test_store_group_error_mapping(node: Node, failure: Exception | None, expected: ErrorCode) -> None:
    """GroupMetadataManagerTest.testStoreGroupErrorMapping, from the errors kafkalog's log raises: an append's
    error as ``storeGroup`` maps it (the replica manager's code for each first, as ``appendRecords`` answers)."""
    group = GroupMetadata(GROUP_ID, GroupState.EMPTY, node.timer.time_ms)
    node.coordinator.group_manager.add_group(group)
    node.logs.fail_with = failure
    errors: list[ErrorCode] = []
    node.coordinator.group_manager.store_group(group, {}, errors.append)
    assert errors == [expected]


def test_load_group_and_offsets_from_different_segments(tmp_path: Path) -> None:
    """Groups and offsets spread over many small segments, some superseded: the last word on each key wins."""
    config = GroupCoordinatorConfig(offsets_topic_num_partitions=3, offsets_topic_segment_bytes=1024)
    node = Node(tmp_path / "logs", config)
    try:
        for generation in range(1, 9):
            node.append(MemoryRecords.with_records([*offset_records({("foo", 0): generation * 10,
                                                                     ("bar", generation): generation}),
                                                    stable_group_record(generation, "consumer", "range", "m")]))
        log = node.logs.log(GROUP_METADATA_TOPIC_NAME, PARTITION)
        assert log.number_of_segments > 1
        node.restart()
        group = node.group()
        assert group.generation_id == 8
        assert group.offset(("foo", 0)).offset == 80  # type: ignore[union-attr]
        assert {tp: o.offset for tp, o in group.all_offsets().items()} == {
            ("foo", 0): 80, **{("bar", g): g for g in range(1, 9)}}
    finally:
        node.close()


def test_load_consumer_group_with_faulty_consumer_protocol(node: Node) -> None:
    node.append(MemoryRecords.with_records([(group_metadata_key(GROUP_ID), group_metadata_value(GroupMetadataRecord(
        "consumer", 27, "protocol", None, 1000,
        (MemberRecord("member1", "groupInstanceId", "", "", 60000, 10000, b"", b""),))))]))
    node.reload()
    group = node.group()
    assert group.is_(GroupState.STABLE)
    assert (group.generation_id, group.protocol_type, group.protocol_name) == (27, "consumer", "protocol")
    assert group.subscribed_topics is None  # the subscription does not read: not known
    assert group.has("member1")


def test_offset_expiration_of_active_group_semantics(node: Node) -> None:
    """KIP-211 for a stable consumer group: offsets of topics its members subscribe to never expire; once no
    member subscribes to a topic, its offsets expire ``offsets.retention.minutes`` after their commit."""
    gm = node.coordinator.group_manager
    group = GroupMetadata(GROUP_ID, GroupState.EMPTY, node.timer.time_ms)
    gm.add_group(group)

    def subscription(*topics: str) -> bytes:
        return write_version_prefixed("ConsumerProtocolSubscription", {"topics": list(topics)}, 3)

    member = MemberMetadata("memberId", "groupInstanceId", "clientId", "localhost", 60000, 10000, "consumer",
                            [("protocol", subscription("foo", "bar"))])
    group.add(member, lambda _: None)
    group.transition_to(GroupState.PREPARING_REBALANCE)
    group.init_next_generation()
    group.transition_to(GroupState.STABLE)
    start = node.timer.time_ms()
    tps = [("foo", 0), ("foo", 1), ("bar", 0), ("bar", 1)]
    committed = {tp: OffsetAndMetadata(37, None, "", start) for tp in tps}
    statuses: list[dict] = []  # type: ignore[type-arg]
    gm.store_offsets(group, "memberId", committed, statuses.append)
    assert group.has_offsets and statuses[0][("foo", 0)] is E.none
    node.timer.advance(CONFIG.offsets_retention_ms + 2)
    gm.cleanup_expired()
    assert gm.get_group(GROUP_ID) is group and group.is_(GroupState.STABLE)
    assert all(group.offset(tp) == committed[tp] for tp in tps)
    assert [gm.get_offsets(GROUP_ID, True, tps)[tp].offset for tp in tps] == [37] * 4
    # the member now subscribes to foo only: bar's offsets expire
    group.transition_to(GroupState.PREPARING_REBALANCE)
    group.update_member(member, [("protocol", subscription("foo"))], member.rebalance_timeout_ms,
                        member.session_timeout_ms, None)
    group.init_next_generation()
    group.transition_to(GroupState.STABLE)
    gm.cleanup_expired()
    assert gm.get_group(GROUP_ID) is group and group.is_(GroupState.STABLE)
    assert group.offset(("foo", 0)) == committed[("foo", 0)] and group.offset(("foo", 1)) == committed[("foo", 1)]
    assert group.offset(("bar", 0)) is None and group.offset(("bar", 1)) is None
    assert [gm.get_offsets(GROUP_ID, True, tps)[tp].offset for tp in tps] == [37, 37, -1, -1]
    tombstones = sorted(k for k, v in _records_of(node) if v is None)
    assert tombstones == sorted([offset_commit_key(GROUP_ID, "bar", 0), offset_commit_key(GROUP_ID, "bar", 1)])


def _consumer_offsets(node: Node, committed: dict[tuple[str, int], int]) -> int:
    """Kafka: ``appendConsumerOffsetCommit``: the batch's base offset."""
    log = node.logs.log(GROUP_METADATA_TOPIC_NAME, PARTITION)
    base = log.log_end_offset
    node.append(MemoryRecords.with_records(offset_records(committed)))
    return base


def _txn(node: Node, producer_id: int, epoch: int, committed: dict[tuple[str, int], int], commit: bool | None) -> int:
    """Kafka: ``appendTransactionalOffsetCommits`` then, unless ``commit`` is None,
    ``completeTransactionalOffsetCommit``: the offsets' batch's base offset."""
    base = node.logs.log(GROUP_METADATA_TOPIC_NAME, PARTITION).log_end_offset
    _txn_offsets(node, producer_id, epoch, committed, commit)
    return base


def test_load_with_committed_and_aborted_transactional_offset_commits(node: Node) -> None:
    aborted = {("foo", 2): 231, ("foo", 3): 4551, ("bar", 1): 89921}
    _txn(node, 1000, 2, aborted, commit=False)
    _txn(node, 1000, 2, COMMITTED, commit=True)
    node.reload()
    group = node.group()
    assert group.current_state is GroupState.EMPTY
    assert len(group.all_offsets()) == len(COMMITTED)
    assert {tp: o.offset for tp, o in group.all_offsets().items()} == COMMITTED
    assert not group.has_pending_offset_commits_from_producer(1000)


def test_load_with_committed_and_aborted_and_pending_transactional_offset_commits(node: Node) -> None:
    foo3 = ("foo", 3)
    aborted = {("foo", 2): 231, foo3: 4551, ("bar", 1): 89921}
    pending = {foo3: 2312, ("foo", 4): 45512, ("bar", 2): 899212}
    commit_position = _txn(node, 1000, 2, COMMITTED, commit=True)
    _txn(node, 1000, 2, aborted, commit=False)
    _txn(node, 1000, 2, pending, commit=None)
    node.reload()
    group = node.group()
    assert group.current_state is GroupState.EMPTY
    assert {tp: o.offset for tp, o in group.all_offsets().items()} == COMMITTED
    for tp in COMMITTED:
        assert group.offset_with_record_metadata(tp).appended_batch_offset == commit_position  # type: ignore[union-attr]
    assert group.has_pending_offset_commits_from_producer(1000)
    assert group.has_pending_offset_commits_for_topic_partition(foo3)
    node.coordinator.group_manager.handle_txn_completion(1000, {PARTITION}, is_commit=True)
    assert not group.has_pending_offset_commits_from_producer(1000)
    for tp, offset in pending.items():
        assert group.offset(tp).offset == offset  # type: ignore[union-attr]


def test_load_transactional_offset_commits_from_multiple_producers(node: Node) -> None:
    first = {("foo", 0): 23, ("foo", 1): 455, ("bar", 0): 8992}
    second = {("foo", 2): 231, ("foo", 3): 4551, ("bar", 1): 89921}
    first_position = _txn(node, 1000, 2, first, commit=True)
    second_position = _txn(node, 1001, 3, second, commit=True)
    node.reload()
    group = node.group()
    assert group.current_state is GroupState.EMPTY
    assert len(group.all_offsets()) == len(first) + len(second)
    for committed, position in ((first, first_position), (second, second_position)):
        for tp, offset in committed.items():
            record = group.offset_with_record_metadata(tp)
            assert record is not None
            assert (record.offset_and_metadata.offset, record.appended_batch_offset) == (offset, position)


def test_group_load_with_consumer_and_transactional_offset_commits_consumer_wins(node: Node) -> None:
    _txn(node, 1000, 2, {("foo", 0): 23}, commit=None)
    consumer_position = _consumer_offsets(node, {("foo", 0): 24})
    node.append(MemoryRecords.with_end_transaction_marker(1000, 2, EndTransactionMarker(ControlRecordType.COMMIT, 0)))
    node.reload()
    group = node.group()
    assert group.current_state is GroupState.EMPTY
    assert len(group.all_offsets()) == 1 and group.has_offsets
    assert not group.has_pending_offset_commits_from_producer(1000)
    record = group.offset_with_record_metadata(("foo", 0))
    assert record is not None
    assert (record.offset_and_metadata.offset, record.appended_batch_offset) == (24, consumer_position)


def test_group_load_with_consumer_and_transactional_offset_commits_transaction_wins(node: Node) -> None:
    _consumer_offsets(node, {("foo", 0): 24})
    _txn(node, 1000, 2, {("foo", 0): 23}, commit=True)
    node.reload()
    group = node.group()
    assert group.current_state is GroupState.EMPTY
    assert len(group.all_offsets()) == 1 and group.has_offsets
    assert not group.has_pending_offset_commits_from_producer(1000)
    assert group.offset(("foo", 0)).offset == 23  # type: ignore[union-attr]


def test_offset_write_after_group_removed(node: Node) -> None:
    node.append(MemoryRecords.with_records([stable_group_record(293, "consumer", "range", "98098230493"),
                                            (group_metadata_key(GROUP_ID), None), *offset_records(COMMITTED)]))
    node.reload()
    group = node.group()
    assert group.current_state is GroupState.EMPTY
    assert {tp: o.offset for tp, o in group.all_offsets().items()} == COMMITTED


def test_load_group_with_large_group_metadata_record(tmp_path: Path) -> None:
    """A record larger than ``offsets.load.buffer.size``: the load reads it whole all the same."""
    config = GroupCoordinatorConfig(offsets_topic_num_partitions=3, offsets_load_buffer_size=1024)
    node = Node(tmp_path / "logs", config)
    try:
        node.append(MemoryRecords.with_records([*offset_records(COMMITTED), stable_group_record(
            15, "consumer", "range", "98098230493", assignment=bytes(1024 + 16))]))
        node.reload()
        group = node.group()
        assert {tp: o.offset for tp, o in group.all_offsets().items()} == COMMITTED
        assert group.get("98098230493").assignment == bytes(1040)
    finally:
        node.close()


def test_deserialize_future_group_metadata_value() -> None:
    """A v4 value whose group and member carry tagged fields this version does not know: read, the fields
    skipped."""

    def compact(text: str) -> bytes:
        return bytes([len(text) + 1]) + text.encode()

    unknown_tags = b"\x02" + b"\x00\x04\x00\x03foo" + b"\x01\x04" + struct.pack(">i", 4000)
    member = (compact("member_id") + compact("group_instance_id") + compact("client_id") + compact("client_host")
              + struct.pack(">ii", 1, 2) + b"\x01" + b"\x01" + unknown_tags)
    value = (struct.pack(">h", 4) + compact("consumer") + struct.pack(">i", 10) + compact("range") + compact("leader")
             + struct.pack(">q", 1000) + b"\x02" + member + unknown_tags)
    record = read_group_message_value(value)
    assert record is not None
    group = GroupMetadata.load_group("group", record, lambda: 0)
    assert group.protocol_type == "consumer"
    assert group.leader_or_null == "leader"
    assert "member_id" in group.all_members

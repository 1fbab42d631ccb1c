"""The group coordinator's API coroutines: kio requests of every version in, the same version's kio responses out,
as Kafka 3.8.0's ``KafkaApis`` and ``GroupCoordinatorAdapter`` shape them; every response also encodes with kio's
writer (what the broker will send).  Then a whole consumer-group life on real asyncio timers of tens of ms: members
join, sync, heartbeat, one dies and the group rebalances without it, the last leaves.
"""

from __future__ import annotations

import asyncio
import datetime
import importlib
import io
import uuid
from pathlib import Path
from typing import Any

import pytest
from kio.schema.errors import ErrorCode
from kio.serial import entity_writer
from kio.static.primitive import i8, i32, i32Timedelta, i64, i64Timedelta

from kafkalog.broker.group_config import GroupCoordinatorConfig
from kafkalog.broker.group_coordinator import GroupCoordinator, RequestContext
from kafkalog.broker.group_records import GROUP_METADATA_TOPIC_NAME, offset_commit_key, partition_for
from kafkalog.manager.log_manager import LogManager
from tests.support.coordinator_logs import ManagerCoordinatorLogs, ManualTimer

E = ErrorCode
CTX = RequestContext(node_id=7, host="broker.local", port=9092, client_id="client", client_host="/127.0.0.1",
                     api_version=0)


def td(ms: int) -> i32Timedelta:
    return i32Timedelta.parse(datetime.timedelta(milliseconds=ms))


def kio(api: str, version: int, kind: str = "request") -> Any:
    return importlib.import_module(f"kio.schema.{api}.v{version}.{kind}")


def encoded(response: Any) -> bytes:
    out = io.BytesIO()
    entity_writer(type(response))(out, response)
    return out.getvalue()


class Api:
    """A started coordinator and a way to run its coroutines while the manual clock moves."""

    def __init__(self, coordinator: GroupCoordinator, timer: ManualTimer) -> None:
        self.coordinator, self.timer = coordinator, timer

    def call(self, method: str, request: Any, *, advance: int = 0) -> Any:
        async def run() -> Any:
            task = asyncio.ensure_future(getattr(self.coordinator, method)(CTX, request))
            await asyncio.sleep(0)
            if advance:
                self.timer.advance(advance)
            return await task

        response = asyncio.run(run())
        assert type(response).__version__ == type(request).__version__
        assert type(response).__module__ == type(request).__module__.replace(".request", ".response")
        encoded(response)
        return response


@pytest.fixture
def api(tmp_path: Path) -> Any:
    timer = ManualTimer()
    config = GroupCoordinatorConfig(group_min_session_timeout_ms=10, group_initial_rebalance_delay_ms=50,
                                    offsets_topic_num_partitions=3)
    with LogManager(tmp_path) as manager:
        coordinator = GroupCoordinator(ManagerCoordinatorLogs(manager), config, timer=timer)
        asyncio.run(coordinator.startup(enable_metadata_expiration=False))
        yield Api(coordinator, timer)
        coordinator.shutdown()


def join_request(version: int, member_id: str = "", group: str = "g", instance: str | None = None,
                 protocols: tuple[tuple[str, bytes], ...] = (("range", b"\x00\x01"),)) -> Any:
    m = kio("join_group", version)
    fields: dict[str, Any] = {"group_id": group, "session_timeout": td(10000), "member_id": member_id,
                              "protocol_type": "consumer",
                              "protocols": tuple(m.JoinGroupRequestProtocol(name=n, metadata=md)
                                                 for n, md in protocols)}
    if version >= 1:
        fields["rebalance_timeout"] = td(30000)
    if version >= 5:
        fields["group_instance_id"] = instance
    return m.JoinGroupRequest(**fields)


def join(api: Api, version: int, **kwargs: Any) -> Any:
    """A JoinGroup that completes: v4+ without an instance id needs the KIP-394 second round."""
    response = api.call("join_group", join_request(version, **kwargs), advance=51)
    if response.error_code is E.member_id_required:
        response = api.call("join_group", join_request(version, member_id=response.member_id,
                                                       **{k: v for k, v in kwargs.items() if k != "member_id"}),
                            advance=51)
    return response


def sync_request(version: int, generation: int, member_id: str, assignments: dict[str, bytes], group: str = "g",
                 protocol: tuple[str | None, str | None] = ("consumer", "range")) -> Any:
    m = kio("sync_group", version)
    fields: dict[str, Any] = {"group_id": group, "generation_id": i32(generation), "member_id": member_id,
                              "assignments": tuple(m.SyncGroupRequestAssignment(member_id=k, assignment=v)
                                                   for k, v in assignments.items())}
    if version >= 5:
        fields["protocol_type"], fields["protocol_name"] = protocol
    return m.SyncGroupRequest(**fields)


# -- FindCoordinator --

@pytest.mark.parametrize("version", range(0, 4))
def test_find_coordinator_before_v4_names_this_node(api: Api, version: int) -> None:
    m = kio("find_coordinator", version)
    request = m.FindCoordinatorRequest(key="g", **({"key_type": i8(0)} if version >= 1 else {}))
    response = api.call("find_coordinator", request)
    assert (response.error_code, response.node_id, response.host, response.port) == (E.none, 7, "broker.local", 9092)
    if version >= 1:
        assert response.error_message == "NONE"  # Kafka: Errors.NONE.message()


@pytest.mark.parametrize("version", range(4, 7))
def test_find_coordinator_batched_keys_and_transactions(api: Api, version: int) -> None:
    m = kio("find_coordinator", version)
    for key_type in (0, 1):
        response = api.call("find_coordinator", m.FindCoordinatorRequest(key_type=i8(key_type),
                                                                         coordinator_keys=("a", "b")))
        assert [(c.key, c.node_id, c.host, c.port, c.error_code) for c in response.coordinators] == [
            ("a", 7, "broker.local", 9092, E.none), ("b", 7, "broker.local", 9092, E.none)]
    bad = api.call("find_coordinator", m.FindCoordinatorRequest(key_type=i8(5), coordinator_keys=("a",)))
    assert bad.coordinators[0].error_code is E.invalid_request


# -- JoinGroup, SyncGroup, Heartbeat, LeaveGroup --

@pytest.mark.parametrize("version", range(0, 10))
def test_join_sync_heartbeat_leave_at_every_version(api: Api, version: int) -> None:
    first = api.call("join_group", join_request(version), advance=51)
    if version >= 4:
        # KIP-394: a first join without a member id gets one and must come back with it
        assert first.error_code is E.member_id_required and first.member_id.startswith("client-")
        assert first.generation_id == -1 and first.members == ()
        first = api.call("join_group", join_request(version, member_id=first.member_id), advance=51)
    assert first.error_code is E.none
    assert first.generation_id == 1
    assert first.leader == first.member_id
    assert first.protocol_name == "range"
    if version >= 7:
        assert first.protocol_type == "consumer"
    assert [(m.member_id, m.metadata) for m in first.members] == [(first.member_id, b"\x00\x01")]
    sync_version = min(version, 5)
    synced = api.call("sync_group", sync_request(sync_version, 1, first.member_id, {first.member_id: b"A"}))
    assert (synced.error_code, synced.assignment) == (E.none, b"A")
    if sync_version >= 5:
        assert (synced.protocol_type, synced.protocol_name) == ("consumer", "range")
    hb = kio("heartbeat", min(version, 4))
    beat = api.call("heartbeat", hb.HeartbeatRequest(group_id="g", generation_id=i32(1), member_id=first.member_id))
    assert beat.error_code is E.none
    stale = api.call("heartbeat", hb.HeartbeatRequest(group_id="g", generation_id=i32(0),
                                                      member_id=first.member_id))
    assert stale.error_code is E.illegal_generation
    leave_version = min(version, 5)
    lg = kio("leave_group", leave_version)
    if leave_version < 3:
        left = api.call("leave_group", lg.LeaveGroupRequest(group_id="g", member_id=first.member_id))
        assert left.error_code is E.none
        again = api.call("leave_group", lg.LeaveGroupRequest(group_id="g", member_id=first.member_id))
        assert again.error_code is E.unknown_member_id  # the member's error, at the top before v3
    else:
        left = api.call("leave_group", lg.LeaveGroupRequest(group_id="g", members=(
            lg.MemberIdentity(member_id=first.member_id), lg.MemberIdentity(member_id="nobody"))))
        assert left.error_code is E.none
        assert [(r.member_id, r.error_code) for r in left.members] == [(first.member_id, E.none),
                                                                       ("nobody", E.unknown_member_id)]
    assert api.coordinator.group_manager.get_group("g").current_state.value == "Empty"


def test_join_group_protocol_type_and_name_on_errors(api: Api) -> None:
    """GroupCoordinatorTest.testJoinGroupProtocolTypeIsNotProvidedWhenAnErrorOccurs and
    GroupCoordinatorTest.testJoinGroupReturnsTheProtocolType, through the responses: an error has no
    protocol type, and no protocol name (null from v7, empty before)."""
    bad = api.call("join_group", join_request(9, member_id="unknown"))
    assert (bad.error_code, bad.protocol_type, bad.protocol_name) == (E.unknown_member_id, None, None)
    bad6 = api.call("join_group", join_request(6, member_id="unknown"))
    assert (bad6.error_code, bad6.protocol_name) == (E.unknown_member_id, "")
    good = join(api, 9)
    assert (good.protocol_type, good.protocol_name) == ("consumer", "range")


def test_join_group_rejects_bad_session_timeouts_and_group_ids(api: Api) -> None:
    m = kio("join_group", 9)
    request = m.JoinGroupRequest(group_id="g", session_timeout=td(5), rebalance_timeout=td(1000), member_id="",
                                 protocol_type="consumer",
                                 protocols=(m.JoinGroupRequestProtocol(name="range", metadata=b""),))
    assert api.call("join_group", request).error_code is E.invalid_session_timeout
    assert api.call("join_group", join_request(9, group="")).error_code is E.invalid_group_id


def test_static_member_rejoin_in_stable_group_skips_assignment_from_v9(api: Api) -> None:
    """A static member back with a new member id and the same protocols: the group stays Stable, the new id is
    stored, and from v9 the leader is told it leads but must skip the assignor."""
    first = join(api, 9, instance="instance-1")
    api.call("sync_group", sync_request(5, 1, first.member_id, {first.member_id: b"A"}))
    again = api.call("join_group", join_request(9, instance="instance-1"))
    assert again.error_code is E.none
    assert again.member_id != first.member_id
    assert again.generation_id == 1
    assert again.skip_assignment is True
    assert again.leader == again.member_id
    group = api.coordinator.group_manager.get_group("g")
    assert group.current_state.value == "Stable"
    # the old member id is fenced now
    hb = kio("heartbeat", 4)
    fenced = api.call("heartbeat", hb.HeartbeatRequest(group_id="g", generation_id=i32(1), member_id=first.member_id,
                                                       group_instance_id="instance-1"))
    assert fenced.error_code is E.fenced_instance_id
    before_v9 = api.call("join_group", join_request(8, instance="instance-1"))
    assert before_v9.error_code is E.none
    assert before_v9.leader == again.member_id  # the old leader id: nobody assigns (Kafka before v9)


def test_sync_group_v5_requires_protocol_type_and_name(api: Api) -> None:
    first = join(api, 9)
    response = api.call("sync_group", sync_request(5, 1, first.member_id, {}, protocol=(None, "range")))
    assert response.error_code is E.inconsistent_group_protocol


# -- OffsetCommit, OffsetFetch --

def commit_request(version: int, offsets: dict[tuple[str, int], int], group: str = "g", member: str = "",
                   generation: int = -1, retention_ms: int | None = None, metadata: str | None = "m") -> Any:
    m = kio("offset_commit", version)
    topics = {}
    for (topic, partition), offset in offsets.items():
        partition_fields: dict[str, Any] = {"partition_index": i32(partition), "committed_offset": i64(offset),
                                            "committed_metadata": metadata}
        if version >= 6:
            partition_fields["committed_leader_epoch"] = i32(3)
        topics.setdefault(topic, []).append(m.OffsetCommitRequestPartition(**partition_fields))
    fields: dict[str, Any] = {"group_id": group, "generation_id_or_member_epoch": i32(generation),
                              "member_id": member}
    if version >= 10:
        fields["topics"] = tuple(m.OffsetCommitRequestTopic(topic_id=TOPIC_IDS[t], partitions=tuple(p))
                                 for t, p in topics.items())
    else:
        fields["topics"] = tuple(m.OffsetCommitRequestTopic(name=t, partitions=tuple(p)) for t, p in topics.items())
    if 2 <= version <= 4 and retention_ms is not None:
        fields["retention_time"] = i64Timedelta.parse(datetime.timedelta(milliseconds=retention_ms))
    return m.OffsetCommitRequest(**fields)


TOPIC_IDS = {"t": uuid.UUID(int=1), "u": uuid.UUID(int=2)}


class Topics:
    """The broker's topics, as the context hands them to the coordinator."""

    def partition_exists(self, topic: str, partition: int) -> bool:
        return topic in TOPIC_IDS and partition < 2

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        return next((n for n, i in TOPIC_IDS.items() if i == topic_id), None)

    def topic_id(self, topic: str) -> uuid.UUID | None:
        return TOPIC_IDS.get(topic)


@pytest.mark.parametrize("version", range(2, 10))
def test_offset_commit_and_fetch_by_name(api: Api, version: int) -> None:
    response = api.call("offset_commit", commit_request(version, {("t", 0): 10, ("t", 1): 11, ("u", 0): 12}))
    assert [(t.name, [(p.partition_index, p.error_code) for p in t.partitions]) for t in response.topics] == [
        ("t", [(0, E.none), (1, E.none)]), ("u", [(0, E.none)])]
    fetch_version = 7 if version < 8 else version
    m = kio("offset_fetch", fetch_version)
    if fetch_version >= 8:
        request = m.OffsetFetchRequest(groups=(m.OffsetFetchRequestGroup(group_id="g", topics=(
            m.OffsetFetchRequestTopics(name="t", partition_indexes=(i32(1), i32(5))),)),), require_stable=True)
        [group] = api.call("offset_fetch", request).groups
        assert group.error_code is E.none
        topics = group.topics
    else:
        request = m.OffsetFetchRequest(group_id="g", topics=(m.OffsetFetchRequestTopic(
            name="t", partition_indexes=(i32(1), i32(5))),), require_stable=True)
        fetched = api.call("offset_fetch", request)
        assert fetched.error_code is E.none
        topics = fetched.topics
    epoch = 3 if version >= 6 else -1
    assert [(t.name, [(p.partition_index, p.committed_offset, p.committed_leader_epoch, p.metadata, p.error_code)
                      for p in t.partitions]) for t in topics] == [
        ("t", [(1, 11, epoch, "m", E.none), (5, -1, -1, "", E.none)])]


def test_offset_commit_v2_retention_writes_a_v1_value(api: Api) -> None:
    """OffsetCommit v2-v4's retention time becomes the record's expire timestamp, which only
    ``OffsetCommitValue`` v1 holds (Kafka: ``offsetCommitValue``)."""
    api.call("offset_commit", commit_request(2, {("t", 0): 10}, retention_ms=60_000))
    log = api.coordinator.logs.log(GROUP_METADATA_TOPIC_NAME, partition_for("g", 3))
    [record] = list(log.records())
    assert bytes(record.key) == offset_commit_key("g", "t", 0)
    assert bytes(record.value)[:2] == b"\x00\x01"
    offset = api.coordinator.group_manager.get_group("g").offset(("t", 0))
    assert offset.expire_timestamp == api.timer.time_ms() + 60_000


def test_offset_fetch_v1_all_and_errors(api: Api) -> None:
    api.call("offset_commit", commit_request(5, {("t", 0): 10}))
    m1 = kio("offset_fetch", 1)
    fetched = api.call("offset_fetch", m1.OffsetFetchRequest(group_id="g", topics=(
        m1.OffsetFetchRequestTopic(name="t", partition_indexes=(i32(0),)),)))
    assert [(p.partition_index, p.committed_offset) for p in fetched.topics[0].partitions] == [(0, 10)]
    m2 = kio("offset_fetch", 2)
    everything = api.call("offset_fetch", m2.OffsetFetchRequest(group_id="g", topics=None))
    assert [(t.name, [p.committed_offset for p in t.partitions]) for t in everything.topics] == [("t", [10])]
    m8 = kio("offset_fetch", 8)
    bad = api.call("offset_fetch", m8.OffsetFetchRequest(groups=(
        m8.OffsetFetchRequestGroup(group_id="g", topics=None), m8.OffsetFetchRequestGroup(group_id="", topics=None))))
    assert [(g.group_id, g.error_code) for g in bad.groups] == [("g", E.none), ("", E.none)]


def test_offset_commit_and_fetch_v10_by_topic_id(api: Api) -> None:
    ctx = RequestContext(7, "broker.local", 9092, "client", "/127.0.0.1", 10, topics=Topics())

    async def run(method: str, request: Any) -> Any:
        return await getattr(api.coordinator, method)(ctx, request)

    m = kio("offset_commit", 10)
    request = m.OffsetCommitRequest(group_id="g", generation_id_or_member_epoch=i32(-1), member_id="", topics=(
        m.OffsetCommitRequestTopic(topic_id=TOPIC_IDS["t"], partitions=(m.OffsetCommitRequestPartition(
            partition_index=i32(0), committed_offset=i64(5), committed_metadata=None),
            m.OffsetCommitRequestPartition(partition_index=i32(9), committed_offset=i64(5),
                                           committed_metadata=None))),
        m.OffsetCommitRequestTopic(topic_id=uuid.UUID(int=99), partitions=(m.OffsetCommitRequestPartition(
            partition_index=i32(0), committed_offset=i64(5), committed_metadata=None),))))
    response = asyncio.run(run("offset_commit", request))
    encoded(response)
    assert [(t.topic_id, [(p.partition_index, p.error_code) for p in t.partitions]) for t in response.topics] == [
        (TOPIC_IDS["t"], [(0, E.none), (9, E.unknown_topic_or_partition)]),
        (uuid.UUID(int=99), [(0, E.unknown_topic_id)])]
    f = kio("offset_fetch", 10)
    fetched = asyncio.run(run("offset_fetch", f.OffsetFetchRequest(groups=(
        f.OffsetFetchRequestGroup(group_id="g", topics=None),))))
    encoded(fetched)
    assert [(t.topic_id, [(p.partition_index, p.committed_offset, p.metadata) for p in t.partitions])
            for t in fetched.groups[0].topics] == [(TOPIC_IDS["t"], [(0, 5, "")])]


# -- DescribeGroups, ListGroups, DeleteGroups, OffsetDelete --

def test_describe_list_delete_and_offset_delete(api: Api) -> None:
    first = join(api, 9)
    api.call("sync_group", sync_request(5, 1, first.member_id, {first.member_id: b"A"}))
    d = kio("describe_groups", 5)
    described = api.call("describe_groups", d.DescribeGroupsRequest(groups=("g", "nope"),
                                                                    include_authorized_operations=True))
    g, nope = described.groups
    assert (g.error_code, g.group_state, g.protocol_type, g.protocol_data) == (E.none, "Stable", "consumer", "range")
    assert [(m.member_id, m.client_id, m.client_host, m.member_metadata, m.member_assignment) for m in g.members] == [
        (first.member_id, "client", "/127.0.0.1", b"\x00\x01", b"A")]
    assert g.authorized_operations == (1 << 3) | (1 << 6) | (1 << 8)
    assert (nope.error_code, nope.group_state, nope.members) == (E.none, "Dead", ())
    listing = kio("list_groups", 4)
    listed = api.call("list_groups", listing.ListGroupsRequest(states_filter=("stable",)))
    assert [(x.group_id, x.group_state, x.protocol_type) for x in listed.groups] == [("g", "Stable", "consumer")]
    assert api.call("list_groups", listing.ListGroupsRequest(states_filter=("Empty",))).groups == ()
    dg = kio("delete_groups", 2)
    deleted = api.call("delete_groups", dg.DeleteGroupsRequest(groups_names=("g", "nope", "g")))
    assert [(r.group_id, r.error_code) for r in deleted.results] == [("g", E.non_empty_group),
                                                                     ("nope", E.group_id_not_found)]
    api.call("offset_commit", commit_request(5, {("t", 0): 10, ("t", 1): 11}, group="simple"))
    od = kio("offset_delete", 0)
    request = od.OffsetDeleteRequest(group_id="simple", topics=(od.OffsetDeleteRequestTopic(name="t", partitions=(
        od.OffsetDeleteRequestPartition(partition_index=i32(0)),)),))
    response = api.call("offset_delete", request)
    assert response.error_code is E.none
    assert [(t.name, [(p.partition_index, p.error_code) for p in t.partitions]) for t in response.topics] == [
        ("t", [(0, E.none)])]
    assert api.coordinator.group_manager.get_group("simple").offset(("t", 0)) is None
    missing = api.call("offset_delete", od.OffsetDeleteRequest(group_id="absent", topics=()))
    assert (missing.error_code, missing.topics) == (E.group_id_not_found, ())


# -- a group's life on real timers --

def test_rebalances_when_members_come_and_go_on_real_timers(tmp_path: Path) -> None:
    """The coordinator on the event loop's own timers (``call_later``), with timeouts of tens of ms: two members
    form a group, one stops heartbeating and is expired by its session timeout, the survivor rejoins alone, then
    leaves and the group is Empty with its offsets kept."""
    config = GroupCoordinatorConfig(group_min_session_timeout_ms=10, group_initial_rebalance_delay_ms=20,
                                    offsets_topic_num_partitions=1)
    hb = kio("heartbeat", 4)

    async def life(coordinator: GroupCoordinator) -> None:
        await coordinator.startup(enable_metadata_expiration=False)

        def join_request_fast(member_id: str = "") -> Any:
            m = kio("join_group", 7)
            return m.JoinGroupRequest(group_id="g", session_timeout=td(60), rebalance_timeout=td(200),
                                      member_id=member_id, group_instance_id=None, protocol_type="consumer",
                                      protocols=(m.JoinGroupRequestProtocol(name="range", metadata=b""),))

        async def joined(member_id: str = "") -> Any:
            response = await coordinator.join_group(CTX, join_request_fast(member_id))
            if response.error_code is E.member_id_required:
                response = await coordinator.join_group(CTX, join_request_fast(response.member_id))
            return response

        a, b = await asyncio.gather(joined(), joined())
        assert a.error_code is E.none and b.error_code is E.none and a.generation_id == b.generation_id == 1
        leader, follower = (a, b) if a.leader == a.member_id else (b, a)
        sync = kio("sync_group", 5)

        def sync_request_fast(member: str, assignments: dict[str, bytes]) -> Any:
            return sync.SyncGroupRequest(group_id="g", generation_id=i32(1), member_id=member,
                                         protocol_type="consumer", protocol_name="range",
                                         assignments=tuple(sync.SyncGroupRequestAssignment(member_id=k, assignment=v)
                                                           for k, v in assignments.items()))

        follower_sync = asyncio.ensure_future(coordinator.sync_group(CTX, sync_request_fast(follower.member_id, {})))
        leader_sync = await coordinator.sync_group(CTX, sync_request_fast(
            leader.member_id, {leader.member_id: b"L", follower.member_id: b"F"}))
        assert (leader_sync.assignment, (await follower_sync).assignment) == (b"L", b"F")

        async def beat(member: str, generation: int) -> ErrorCode:
            response = await coordinator.heartbeat(CTX, hb.HeartbeatRequest(group_id="g", generation_id=i32(generation),
                                                                             member_id=member))
            return response.error_code  # type: ignore[no-any-return]

        # the follower dies; the leader heartbeats every 20 ms until told to rejoin
        errors = []
        for _ in range(20):
            await asyncio.sleep(0.02)
            error = await beat(leader.member_id, 1)
            errors.append(error)
            if error is E.rebalance_in_progress:
                break
        assert errors[-1] is E.rebalance_in_progress
        rejoined = await joined(leader.member_id)
        assert (rejoined.error_code, rejoined.generation_id) == (E.none, 2)
        assert [m.member_id for m in rejoined.members] == [leader.member_id]
        lg = kio("leave_group", 4)
        left = await coordinator.leave_group(CTX, lg.LeaveGroupRequest(group_id="g", members=(
            lg.MemberIdentity(member_id=leader.member_id),)))
        assert left.members[0].error_code is E.none
        assert coordinator.group_manager.get_group("g").current_state.value == "Empty"
        coordinator.shutdown()

    async def guarded(coordinator: GroupCoordinator) -> None:
        await asyncio.wait_for(life(coordinator), timeout=5)

    with LogManager(tmp_path) as manager:
        asyncio.run(guarded(GroupCoordinator(ManagerCoordinatorLogs(manager), config)))


"""The group coordinator's test harness: a coordinator over real logs in ``tmp_path``, on a clock the tests move
(Kafka's ``GroupCoordinatorTest`` setup: ``MockTimer``, two ``__consumer_offsets`` partitions of which only
``groupId``'s is owned, group sizes and timeouts of its constants), and the helpers of that test class
(``sendJoinGroup``, ``dynamicJoinGroup``, ``staticJoinGroup``, ``syncGroupLeader``, ``heartbeat``,
``commitOffsets``, ``singleLeaveGroup``...)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

import pytest
from kio.schema.errors import ErrorCode

from kafkalog.broker.group_config import GroupCoordinatorConfig
from kafkalog.broker.group_coordinator import GroupCoordinator
from kafkalog.broker.group_metadata import GroupMetadata, GroupState, JoinGroupResult, SyncGroupResult
from kafkalog.broker.group_metadata_manager import GroupMetadataManager
from kafkalog.broker.group_records import OffsetAndMetadata
from kafkalog.manager.log_manager import LogManager
from tests.support.coordinator_logs import ManagerCoordinatorLogs, ManualTimer

GROUP_MIN_SESSION_TIMEOUT = 10
GROUP_MAX_SESSION_TIMEOUT = 10 * 60 * 1000
GROUP_MAX_SIZE = 4
DEFAULT_REBALANCE_TIMEOUT = 500
DEFAULT_SESSION_TIMEOUT = 500
GROUP_INITIAL_REBALANCE_DELAY = 50
GROUP_ID = "groupId"
OTHER_GROUP_ID = "otherGroup"  # its partition is not this coordinator's
PROTOCOL_TYPE = "consumer"
PROTOCOL_NAME = "range"
MEMBER_ID = "memberId"
GROUP_INSTANCE_ID = "groupInstanceId"
UNKNOWN = ""
METADATA = b""
PROTOCOLS = [(PROTOCOL_NAME, METADATA)]

T = TypeVar("T")


class Box(Generic[T]):
    """A callback's result (Kafka's tests use a Future the callback completes)."""

    def __init__(self) -> None:
        self._value: T | None = None
        self.done = False

    def __call__(self, value: T) -> None:
        assert not self.done, "a callback called twice"
        self._value, self.done = value, True

    def get(self) -> T:
        assert self.done, "the request is still parked"
        assert self._value is not None
        return self._value


@dataclass
class Harness:
    coordinator: GroupCoordinator
    timer: ManualTimer
    logs: ManagerCoordinatorLogs
    config: GroupCoordinatorConfig

    @property
    def manager(self) -> GroupMetadataManager:
        return self.coordinator.group_manager

    def group(self, group_id: str = GROUP_ID) -> GroupMetadata:
        group = self.manager.get_group(group_id)
        assert group is not None
        return group

    def assert_group_state(self, state: GroupState, group_id: str = GROUP_ID) -> None:
        assert self.group(group_id).current_state is state

    def advance(self, ms: int) -> None:
        self.timer.advance(ms)

    def offset(self, offset: int) -> OffsetAndMetadata:
        """Kafka's test ``offsetAndMetadata``."""
        return OffsetAndMetadata(offset, None, "", self.timer.time_ms())

    # -- Kafka's helpers --

    def send_join_group(self, group_id: str, member_id: str, protocol_type: str = PROTOCOL_TYPE,
                        protocols: list[tuple[str, bytes]] | None = None, group_instance_id: str | None = None,
                        session_timeout: int = DEFAULT_SESSION_TIMEOUT,
                        rebalance_timeout: int = DEFAULT_REBALANCE_TIMEOUT, require_known_member_id: bool = False,
                        support_skipping_assignment: bool = True) -> Box[JoinGroupResult]:
        box: Box[JoinGroupResult] = Box()
        self.coordinator.handle_join_group(group_id, member_id, group_instance_id, require_known_member_id,
                                           support_skipping_assignment, "clientId", "clientHost", rebalance_timeout,
                                           session_timeout, protocol_type,
                                           PROTOCOLS if protocols is None else protocols, box)
        return box

    def dynamic_join_group(self, group_id: str, member_id: str, protocol_type: str = PROTOCOL_TYPE,
                           protocols: list[tuple[str, bytes]] | None = None,
                           session_timeout: int = DEFAULT_SESSION_TIMEOUT,
                           rebalance_timeout: int = DEFAULT_REBALANCE_TIMEOUT) -> JoinGroupResult:
        box = self.send_join_group(group_id, member_id, protocol_type, protocols, None, session_timeout,
                                   rebalance_timeout, True)
        if member_id == UNKNOWN:
            result = box.get()
            if result.error is not ErrorCode.member_id_required:
                return result
            box = self.send_join_group(group_id, result.member_id, protocol_type, protocols, None, session_timeout,
                                       rebalance_timeout, True)
        self.advance(GROUP_INITIAL_REBALANCE_DELAY + 1)
        return box.get()

    def static_join_group(self, group_id: str, member_id: str, group_instance_id: str,
                          protocol_type: str = PROTOCOL_TYPE, protocols: list[tuple[str, bytes]] | None = None,
                          clock_advance: int = GROUP_INITIAL_REBALANCE_DELAY + 1,
                          session_timeout: int = DEFAULT_SESSION_TIMEOUT,
                          rebalance_timeout: int = DEFAULT_REBALANCE_TIMEOUT,
                          support_skipping_assignment: bool = True) -> JoinGroupResult:
        box = self.send_join_group(group_id, member_id, protocol_type, protocols, group_instance_id,
                                   session_timeout, rebalance_timeout,
                                   support_skipping_assignment=support_skipping_assignment)
        self.advance(clock_advance)
        return box.get()

    def join_group_partial(self, group_id: str, member_id: str, session_timeout: int = DEFAULT_SESSION_TIMEOUT
                           ) -> JoinGroupResult:
        """Kafka: ``joinGroupPartial``: the first half of a KIP-394 join (MEMBER_ID_REQUIRED)."""
        return self.send_join_group(group_id, member_id, session_timeout=session_timeout,
                                    require_known_member_id=True).get()

    def send_sync_group_leader(self, group_id: str, generation: int, leader_id: str,
                               assignment: dict[str, bytes], protocol_type: str | None = None,
                               protocol_name: str | None = None,
                               group_instance_id: str | None = None) -> Box[SyncGroupResult]:
        box: Box[SyncGroupResult] = Box()
        self.coordinator.handle_sync_group(group_id, generation, leader_id, protocol_type, protocol_name,
                                           group_instance_id, assignment, box)
        return box

    def sync_group_leader(self, group_id: str, generation: int, leader_id: str, assignment: dict[str, bytes],
                          **kwargs: Any) -> SyncGroupResult:
        return self.send_sync_group_leader(group_id, generation, leader_id, assignment, **kwargs).get()

    def send_sync_group_follower(self, group_id: str, generation: int, member_id: str,
                                 protocol_type: str | None = None, protocol_name: str | None = None,
                                 group_instance_id: str | None = None) -> Box[SyncGroupResult]:
        box: Box[SyncGroupResult] = Box()
        self.coordinator.handle_sync_group(group_id, generation, member_id, protocol_type, protocol_name,
                                           group_instance_id, {}, box)
        return box

    def sync_group_follower(self, group_id: str, generation: int, member_id: str, **kwargs: Any) -> SyncGroupResult:
        return self.send_sync_group_follower(group_id, generation, member_id, **kwargs).get()

    def heartbeat(self, group_id: str, member_id: str, generation: int,
                  group_instance_id: str | None = None) -> ErrorCode:
        return self.coordinator.handle_heartbeat(group_id, member_id, group_instance_id, generation)

    def commit_offsets(self, group_id: str, member_id: str, generation: int,
                       offsets: dict[tuple[str, int], OffsetAndMetadata],
                       group_instance_id: str | None = None) -> dict[tuple[str, int], ErrorCode]:
        return self.coordinator.handle_commit_offsets(group_id, member_id, group_instance_id, generation, offsets)

    def single_leave_group(self, group_id: str, member_id: str, group_instance_id: str | None = None
                           ) -> tuple[ErrorCode, list[tuple[str, str | None, ErrorCode]]]:
        return self.coordinator.handle_leave_group(group_id, [(member_id, group_instance_id, None)])

    def batch_leave_group(self, group_id: str, members: list[tuple[str, str | None]]
                          ) -> tuple[ErrorCode, list[tuple[str, str | None, ErrorCode]]]:
        return self.coordinator.handle_leave_group(group_id, [(m, i, None) for m, i in members])


def verify_leave_group_result(result: tuple[ErrorCode, list[tuple[str, str | None, ErrorCode]]],
                              top_level: ErrorCode = ErrorCode.none,
                              member_errors: list[ErrorCode] | None = None) -> None:
    """Kafka: ``GroupCoordinatorTest.verifyLeaveGroupResult``."""
    assert result[0] is top_level
    if member_errors:
        assert [e for _, _, e in result[1]] == member_errors


KAFKA_TEST_CONFIG = GroupCoordinatorConfig(
    group_min_session_timeout_ms=GROUP_MIN_SESSION_TIMEOUT, group_max_session_timeout_ms=GROUP_MAX_SESSION_TIMEOUT,
    group_max_size=GROUP_MAX_SIZE, group_initial_rebalance_delay_ms=GROUP_INITIAL_REBALANCE_DELAY,
    offsets_topic_num_partitions=2)


@pytest.fixture
def harness(tmp_path: Path) -> Iterator[Harness]:
    """Kafka's ``GroupCoordinatorTest.setUp``: two partitions of ``__consumer_offsets``, only ``groupId``'s owned."""
    timer = ManualTimer()
    with LogManager(tmp_path) as manager:
        logs = ManagerCoordinatorLogs(manager)
        coordinator = GroupCoordinator(logs, KAFKA_TEST_CONFIG, timer=timer)
        asyncio.run(coordinator.startup(enable_metadata_expiration=False))
        other = coordinator.partition_for(OTHER_GROUP_ID)
        assert other != coordinator.partition_for(GROUP_ID)
        coordinator.on_resignation(other)
        try:
            yield Harness(coordinator, timer, logs, KAFKA_TEST_CONFIG)
        finally:
            coordinator.shutdown()

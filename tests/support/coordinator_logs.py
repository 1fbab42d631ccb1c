"""A real :class:`~kafkalog.broker.group_metadata_manager.CoordinatorLogs` over a
:class:`~kafkalog.manager.LogManager` (what the broker gives its coordinators), and a clock the group coordinator's
tests move by hand (Kafka's ``MockTime`` + ``MockTimer``)."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Mapping

from kafkalog.config.log_config import LogConfig
from kafkalog.errors import UnknownTopicOrPartitionError
from kafkalog.log import Log
from kafkalog.log.append_info import LogAppendInfo
from kafkalog.manager.log_manager import LogManager
from kafkalog.record.memory import MemoryRecords
from kafkalog.topic import TopicPartition


class ManagerCoordinatorLogs:
    """Internal topics as logs of ``manager``; appends with the coordinator origin, then the high watermark moves
    to the log end (one node: every replica is in sync)."""

    def __init__(self, manager: LogManager, default_config: LogConfig | None = None) -> None:
        self.manager = manager
        self.default_config = default_config if default_config is not None else LogConfig()
        self.appends: list[tuple[str, int, MemoryRecords]] = []
        #: Set to an exception to make the next appends fail with it (a full disk, a too-large batch).
        self.fail_with: Exception | None = None

    def ensure_internal_topic(self, name: str, partitions: int, configs: Mapping[str, str]) -> None:
        for partition in range(partitions):
            tp = TopicPartition(name, partition)
            if self.manager.get_log(tp) is None:
                self.manager.create_log(tp, LogConfig.from_props(self.default_config.to_props(), dict(configs)))

    def log(self, name: str, partition: int) -> Log:
        log = self.manager.get_log(TopicPartition(name, partition))
        if log is None:
            raise UnknownTopicOrPartitionError(f"No log for {name}-{partition}")
        return log

    def append_as_coordinator(self, name: str, partition: int, records: MemoryRecords) -> LogAppendInfo:
        if self.fail_with is not None:
            raise self.fail_with
        log = self.log(name, partition)
        info = log.append(records, origin="coordinator")
        log.update_high_watermark(log.log_end_offset)
        self.appends.append((name, partition, records))
        return info


class _Handle:
    __slots__ = ("callback", "cancelled", "due", "seq")

    def __init__(self, due: int, seq: int, callback: Callable[[], None]) -> None:
        self.due, self.seq, self.callback, self.cancelled = due, seq, callback, False

    def cancel(self) -> None:
        self.cancelled = True

    def __lt__(self, other: _Handle) -> bool:
        return (self.due, self.seq) < (other.due, other.seq)


class ManualTimer:
    """Kafka's ``MockTimer`` (server-common, 3.8.0): time stands still until :meth:`advance` moves it; then every
    task due strictly before the new time runs, at the new time, in order of due time (tasks they add included).
    A task of no delay runs at once."""

    def __init__(self, now_ms: int = 1_700_000_000_000) -> None:
        self.now = now_ms
        self._heap: list[_Handle] = []
        self._seq = itertools.count()

    def time_ms(self) -> int:
        return self.now

    def call_later(self, delay_ms: int, callback: Callable[[], None]) -> _Handle:
        handle = _Handle(self.now + delay_ms, next(self._seq), callback)
        if delay_ms <= 0:
            callback()
            return handle
        heapq.heappush(self._heap, handle)
        return handle

    def advance(self, ms: int) -> None:
        self.now += ms
        while self._heap and self.now > self._heap[0].due:
            handle = heapq.heappop(self._heap)
            if not handle.cancelled:
                handle.callback()

    @property
    def pending(self) -> int:
        return sum(1 for h in self._heap if not h.cancelled)

"""A real :class:`~kafkalog.broker.group_metadata_manager.CoordinatorLogs` over a
:class:`~kafkalog.manager.LogManager` (what the broker gives its coordinators), and a clock the group coordinator's
tests move by hand (Kafka's ``MockTime`` + ``MockTimer``)."""

from __future__ import annotations

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
    __slots__ = ("callback", "cancelled", "due")

    def __init__(self, due: int, callback: Callable[[], None]) -> None:
        self.due, self.callback, self.cancelled = due, callback, False

    def cancel(self) -> None:
        self.cancelled = True


class ManualTimer:
    """Kafka's ``MockTimer`` (server-common, 3.8.0): time stands still until :meth:`advance` moves it; then every
    task due strictly before the new time runs, at the new time (tasks they add included).  A task of no delay runs
    at once.

    The tasks wait in a ``java.util.PriorityQueue`` ordered by due time alone, as in Kafka, so tasks due at the same
    time come out in the order Java's heap gives them (not the order they were added): Kafka's tests rely on it, for
    instance when a rebalance and a session expire at the same millisecond.  The queue is Java's binary heap, its
    ``offer`` and ``poll`` (``siftUp`` / ``siftDown``) ported."""

    def __init__(self, now_ms: int = 1_700_000_000_000) -> None:
        self.now = now_ms
        self._queue: list[_Handle] = []

    def time_ms(self) -> int:
        return self.now

    def call_later(self, delay_ms: int, callback: Callable[[], None]) -> _Handle:
        handle = _Handle(self.now + delay_ms, callback)
        if delay_ms <= 0:
            callback()
            return handle
        self._offer(handle)
        return handle

    def _offer(self, x: _Handle) -> None:
        queue = self._queue
        queue.append(x)
        k = len(queue) - 1
        while k > 0:
            parent = (k - 1) >> 1
            e = queue[parent]
            if x.due >= e.due:
                break
            queue[k] = e
            k = parent
        queue[k] = x

    def _poll(self) -> _Handle:
        queue = self._queue
        result = queue[0]
        x = queue.pop()
        n = len(queue)
        if n > 0:
            k, half = 0, n >> 1
            while k < half:
                child = 2 * k + 1
                c = queue[child]
                right = child + 1
                if right < n and c.due > queue[right].due:
                    child = right
                    c = queue[child]
                if x.due <= c.due:
                    break
                queue[k] = c
                k = child
            queue[k] = x
        return result

    def advance(self, ms: int) -> None:
        self.now += ms
        while self._queue and self.now > self._queue[0].due:
            handle = self._poll()
            if not handle.cancelled:
                handle.callback()

    @property
    def pending(self) -> int:
        return sum(1 for h in self._queue if not h.cancelled)

"""The transaction coordinator's test harness: a coordinator over real logs in a directory, on a clock the tests
move (Kafka's ``MockTime`` / ``MockScheduler``), with the producer ids Kafka's tests hand out (a counter from 0),
and the data topic ``topic1`` whose partitions transactions write to."""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

from kafkalog.broker.group_coordinator import RequestContext
from kafkalog.broker.group_records import GROUP_METADATA_TOPIC_NAME
from kafkalog.broker.txn_config import TransactionCoordinatorConfig
from kafkalog.broker.txn_coordinator import TransactionCoordinator
from kafkalog.broker.txn_metadata import TransactionMetadata, TransactionState
from kafkalog.broker.txn_records import TRANSACTION_STATE_TOPIC_NAME, read_txn_record_key, read_txn_record_value
from kafkalog.broker.txn_state_manager import CoordinatorEpochAndTxnMetadata, TransactionStateManager
from kafkalog.config.log_config import LogConfig
from kafkalog.log import Log
from kafkalog.log.append_info import LogAppendInfo
from kafkalog.manager.log_manager import LogManager
from kafkalog.record.memory import MemoryRecords
from tests.support.coordinator_logs import ManagerCoordinatorLogs

T = TypeVar("T")

TOPIC = "topic1"
#: ``__transaction_state`` and ``__consumer_offsets`` partitions of the tests (Kafka's tests use one or two).
TXN_PARTITIONS = 2
OFFSETS_PARTITIONS = 2
CTX = RequestContext(node_id=0, host="localhost", port=9092, client_id="client", client_host="/127.0.0.1",
                     api_version=0)


class _Task:
    __slots__ = ("callback", "cancelled", "due", "seq")

    def __init__(self, due: int, seq: int, callback: Callable[[], None]) -> None:
        self.due, self.seq, self.callback, self.cancelled = due, seq, callback, False

    def cancel(self) -> None:
        self.cancelled = True

    def __lt__(self, other: _Task) -> bool:
        return (self.due, self.seq) < (other.due, other.seq)


class ManualScheduler:
    """Kafka's ``MockTime`` with the ``MockScheduler`` the transaction coordinator's tests drive
    (``time.sleep(ms); scheduler.tick()``): time stands still until :meth:`advance` moves it, then every task due at
    or before the new time runs, in due order (then the order added), seeing the new time; tasks they add run in
    the same advance when due by then."""

    def __init__(self, now_ms: int = 1_700_000_000_000) -> None:
        self.now = now_ms
        self._heap: list[_Task] = []
        self._seq = itertools.count()

    def time_ms(self) -> int:
        return self.now

    def call_later(self, delay_ms: int, callback: Callable[[], None]) -> _Task:
        task = _Task(self.now + max(delay_ms, 0), next(self._seq), callback)
        heapq.heappush(self._heap, task)
        return task

    def advance(self, ms: int) -> None:
        self.now += ms
        while self._heap and self._heap[0].due <= self.now:
            task = heapq.heappop(self._heap)
            if not task.cancelled:
                task.callback()


class TopicFaultLogs(ManagerCoordinatorLogs):
    """The broker's storage, whose appends to the topics in :attr:`fail_for` raise the given error (a disk full
    under one topic's logs) while every other append goes through."""

    def __init__(self, manager: LogManager, default_config: LogConfig | None = None) -> None:
        super().__init__(manager, default_config)
        self.fail_for: dict[str, Exception] = {}

    def append_as_coordinator(self, name: str, partition: int, records: MemoryRecords) -> LogAppendInfo:
        error = self.fail_for.get(name)
        if error is not None:
            raise error
        return super().append_as_coordinator(name, partition, records)


class CompletionRecorder:
    """A completion listener that keeps what it hears."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int, int, bool]] = []

    def on_transaction_completed(self, topic: str, partition: int, producer_id: int, committed: bool) -> None:
        self.calls.append((topic, partition, producer_id, committed))


class TxnHarness:
    """A started coordinator over a :class:`LogManager` in ``log_dir``; :meth:`restart` makes a new one over the
    same directory, as a broker restart does."""

    def __init__(self, log_dir: Path, config: TransactionCoordinatorConfig | None = None, *,
                 start: bool = True, first_producer_id: int = 0, log_config: LogConfig | None = None) -> None:
        self.log_dir = log_dir
        self.config = config if config is not None else TransactionCoordinatorConfig(
            transaction_state_log_num_partitions=TXN_PARTITIONS)
        self.timer = ManualScheduler()
        self._ids = itertools.count(first_producer_id)
        self.listener = CompletionRecorder()
        self.log_config = log_config
        self._open()
        if start:
            self.start()

    def _open(self) -> None:
        self.manager = LogManager(self.log_dir)
        self.logs = TopicFaultLogs(self.manager, self.log_config)
        self.coordinator = TransactionCoordinator(self.logs, self.next_producer_id, self.config, timer=self.timer,
                                                  offsets_topic_num_partitions=OFFSETS_PARTITIONS)
        self.coordinator.add_completion_listener(self.listener)
        self.logs.ensure_internal_topic(TOPIC, 3, {})
        self.logs.ensure_internal_topic(GROUP_METADATA_TOPIC_NAME, OFFSETS_PARTITIONS, {"cleanup.policy": "compact"})

    def next_producer_id(self) -> int:
        return next(self._ids)

    def start(self) -> None:
        asyncio.run(self.coordinator.startup())

    def restart(self) -> None:
        self.coordinator.shutdown()
        self.manager.shutdown()
        self._open()
        self.start()

    def close(self) -> None:
        self.coordinator.shutdown()
        self.manager.shutdown()

    @staticmethod
    def run(coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run(coro)

    # -- the cache --

    @property
    def txn_manager(self) -> TransactionStateManager:
        return self.coordinator.txn_manager

    def put(self, metadata: TransactionMetadata) -> TransactionMetadata:
        """Cache ``metadata`` as its id's (Kafka's tests: ``getTransactionState`` returning it)."""
        entry = self.txn_manager.put_transaction_state_if_not_exists(metadata)
        assert entry.transaction_metadata is metadata
        return metadata

    def metadata(self, transactional_id: str) -> TransactionMetadata:
        entry = self.txn_manager.get_transaction_state(transactional_id)
        assert isinstance(entry, CoordinatorEpochAndTxnMetadata), entry
        return entry.transaction_metadata

    # -- handlers with their callbacks captured --

    def init_pid(self, transactional_id: str | None, timeout_ms: int = 1000,
                 expected: tuple[int, int] | None = None) -> tuple[int, int, Any]:
        out: list[tuple[int, int, Any]] = []
        self.coordinator.handle_init_producer_id(transactional_id, timeout_ms, expected, out.append)
        assert len(out) == 1
        return out[0]

    def add_partitions(self, transactional_id: str, producer_id: int, epoch: int,
                       partitions: set[tuple[str, int]]) -> Any:
        return self._one(lambda cb: self.coordinator.handle_add_partitions_to_transaction(
            transactional_id, producer_id, epoch, partitions, cb))

    def end_txn(self, transactional_id: str, producer_id: int, epoch: int, committed: bool) -> Any:
        return self._one(lambda cb: self.coordinator.handle_end_transaction(transactional_id, producer_id, epoch,
                                                                            committed, cb))

    @staticmethod
    def _one(call: Callable[[Callable[[Any], None]], None]) -> Any:
        out: list[Any] = []
        call(out.append)
        assert len(out) == 1, out
        return out[0]

    # -- the logs --

    def log(self, topic: str, partition: int) -> Log:
        return self.logs.log(topic, partition)

    def txn_log(self, transactional_id: str) -> Log:
        return self.log(TRANSACTION_STATE_TOPIC_NAME, self.coordinator.partition_for(transactional_id))

    def produce(self, partition: int, producer_id: int, epoch: int, sequence: int, *values: bytes) -> None:
        """A transactional producer's batch on ``topic1-partition``."""
        log = self.log(TOPIC, partition)
        log.append(MemoryRecords.with_records([(None, v) for v in values], producer_id=producer_id,
                                              producer_epoch=epoch, base_sequence=sequence, is_transactional=True))
        log.update_high_watermark(log.log_end_offset)

    def written(self, transactional_id: str) -> list[TransactionMetadata | None]:
        """The id's records in ``__transaction_state``, read back, in log order (``None`` for a tombstone)."""
        out: list[TransactionMetadata | None] = []
        for record in self.txn_log(transactional_id).records():
            key = read_txn_record_key(bytes(record.key))
            if getattr(key, "transactional_id", None) == transactional_id:
                out.append(read_txn_record_value(transactional_id,
                                                 None if record.value is None else bytes(record.value)))
        return out

    def states_written(self, transactional_id: str) -> list[TransactionState | None]:
        """The states of the id's records, in log order (``None`` for a tombstone)."""
        return [None if m is None else m.state for m in self.written(transactional_id)]

    def batches(self, topic: str, partition: int) -> list[tuple[int, bool, int, int]]:
        """``(base offset, is control, producer id, producer epoch)`` of each batch of a partition."""
        log = self.log(topic, partition)
        return [(b.base_offset, b.is_control, b.producer_id, b.producer_epoch)
                for b in log.read(log.log_start_offset, 1 << 20, isolation="log_end").records.batches()]

    def markers(self, topic: str, partition: int) -> list[tuple[str, int, int, int]]:
        """``(COMMIT or ABORT, coordinator epoch, producer id, producer epoch)`` of each marker of a partition."""
        log = self.log(topic, partition)
        out = []
        for b in log.read(log.log_start_offset, 1 << 20, isolation="log_end").records.batches():
            marker = b.end_transaction_marker() if b.is_control else None
            if marker is not None:
                out.append((marker.control_type.name, marker.coordinator_epoch, b.producer_id, b.producer_epoch))
        return out

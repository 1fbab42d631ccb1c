"""A reader bounded by the high watermark, concurrent with a writer that appends, moves the high watermark and
truncates: Kafka's LogConcurrencyTest.

Ports ``core/src/test/scala/unit/kafka/log/LogConcurrencyTest.scala`` (Kafka 3.8.0).  A writer thread plays a
replica that keeps changing role: as leader it appends batches stamped with its leader epoch and then moves the
high watermark to where the log ended before the append (so the batch just written stays uncommitted until the
next append); as follower it appends batches that carry their offsets and epoch, and sets the high watermark
likewise; on each change of role the epoch goes up, and on becoming follower the log is truncated to the high
watermark, which throws away the uncommitted batches (another epoch writes those offsets again).  A reader
thread reads the log one batch at a time, never past the high watermark.  It must never see uncommitted data:
every batch it read is, in order, the batch the log holds at the end, with the same base offset and the same
epoch.

The log runs on the system clock with its own scheduler, as Kafka's test runs it.  Kafka writes until the high
watermark reaches 5000; here it is :data:`MAX_OFFSET` (an append costs about half a millisecond in Python, and the
reader spins on the high watermark meanwhile), and both threads are joined within :data:`TIMEOUT_S`.  The
writer's random choices come from a seed drawn for each run and named in every failure message.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import NamedTuple

import pytest

from kafkalog import MemoryRecords
from kafkalog.config.log_config import LogConfig
from kafkalog.fetch import LogOffsetMetadata
from kafkalog.log import Log

#: Where the writer stops: the high watermark it must reach (Kafka: 5000).
MAX_OFFSET = 1000
#: How long the two threads may take together.
TIMEOUT_S = 120.0


class FetchedBatch(NamedTuple):
    """Kafka: ``FetchedBatch(baseOffset, epoch)``: what the reader saw of a batch."""

    base_offset: int
    epoch: int


def create_log(directory: Path, config: LogConfig | None = None) -> Log:
    """Kafka: ``createLog``: log start offset 0, recovery point 0, the system clock and a real scheduler.  A new
    log's high watermark is its log start offset, as in Kafka (kafkalog's follows the log end until set)."""
    log = Log(directory, config if config is not None else LogConfig(), log_start_offset=0, recovery_point=0)
    log.high_watermark = 0
    return log


def maybe_increment_high_watermark(log: Log, new_high_watermark: LogOffsetMetadata) -> None:
    """Kafka: ``UnifiedLog.maybeIncrementHighWatermark``: the high watermark only moves forward (it never goes past
    the log end offset)."""
    if new_high_watermark.message_offset > log.log_end_offset:
        raise ValueError(f"High watermark {new_high_watermark} update exceeds current log end offset "
                         f"{log.log_end_offset}")
    if log.high_watermark < new_high_watermark.message_offset:
        log.high_watermark = new_high_watermark.message_offset


def records(count: int, base_offset: int = 0, partition_leader_epoch: int = -1) -> MemoryRecords:
    """Kafka's ``TestUtils.records`` of ``SimpleRecord(s"$i")`` for ``i`` in ``0 to count``: values without keys."""
    return MemoryRecords.with_records([(None, str(i).encode()) for i in range(count + 1)], base_offset=base_offset,
                                      partition_leader_epoch=partition_leader_epoch)


class ConsumerTask:
    """Kafka: ``ConsumerTask``: reads the log in ascending order, a batch at a time, bounded by the high watermark,
    until the high watermark reaches ``last_offset``; collects what it read."""

    def __init__(self, log: Log, last_offset: int, stop: threading.Event) -> None:
        self.log = log
        self.last_offset = last_offset
        self.stop = stop
        self.consumed_batches: list[FetchedBatch] = []

    def __call__(self) -> None:
        fetch_offset = 0
        while self.log.high_watermark < self.last_offset and not self.stop.is_set():
            # FetchIsolation.HIGH_WATERMARK: the read goes no further than the high watermark
            read_info = self.log.read(fetch_offset, 1, max_offset=self.log.high_watermark, min_one_message=True)
            for batch in read_info.records.batches():
                self.consumed_batches.append(FetchedBatch(batch.base_offset, batch.partition_leader_epoch))
                fetch_offset = batch.last_offset + 1


class LogAppendTask:
    """Kafka: ``LogAppendTask``: a replica changing role at random until the high watermark reaches
    ``last_offset``."""

    def __init__(self, log: Log, last_offset: int, rng: random.Random, stop: threading.Event) -> None:
        self.log = log
        self.last_offset = last_offset
        self.rng = rng
        self.stop = stop

    def __call__(self) -> None:
        log = self.log
        leader_epoch = 1
        is_leader = True
        while log.high_watermark < self.last_offset and not self.stop.is_set():
            if self.rng.randrange(2) == 0:
                log_end_offset_metadata = log.log_end_offset_metadata
                log_end_offset = log_end_offset_metadata.message_offset
                batch_size = self.rng.randrange(9) + 1
                if is_leader:
                    log.append_as_leader(records(batch_size), leader_epoch)
                    maybe_increment_high_watermark(log, log_end_offset_metadata)
                else:
                    log.append_as_follower(records(batch_size, base_offset=log_end_offset,
                                                   partition_leader_epoch=leader_epoch))
                    log.high_watermark = log_end_offset
            else:
                is_leader = not is_leader
                leader_epoch += 1
                if not is_leader:
                    log.truncate_to(log.high_watermark)


def run_threads(tasks: list[Callable[[], None]], stop: threading.Event, what: str) -> None:
    """Kafka's executor of two threads: run the tasks, wait for both (within :data:`TIMEOUT_S`), and raise what
    either raised."""
    errors: list[BaseException] = []

    def guarded(task: Callable[[], None]) -> None:
        try:
            task()
        except BaseException as e:
            errors.append(e)
            stop.set()

    threads = [threading.Thread(target=guarded, args=(task,)) for task in tasks]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(TIMEOUT_S)
    timed_out = any(thread.is_alive() for thread in threads)
    stop.set()
    for thread in threads:
        thread.join()
    if errors:
        raise AssertionError(f"{what}: a task failed") from errors[0]
    assert not timed_out, f"{what}: the tasks did not finish within {TIMEOUT_S} s"


def validate_consumed_data(log: Log, consumed_batches: list[FetchedBatch], what: str) -> None:
    """Kafka: ``validateConsumedData``: the batches read are, in order, the first batches of the log."""
    consumed = iter(consumed_batches)
    for segment in log.log_segments():
        for batch in segment.log.batches():
            consumed_batch = next(consumed, None)
            if consumed_batch is None:
                return
            expected = FetchedBatch(batch.base_offset, batch.partition_leader_epoch)
            assert consumed_batch.epoch == expected.epoch, \
                f"{what}: Consumed batch {consumed_batch} with unexpected leader epoch; the log holds {expected}"
            assert consumed_batch.base_offset == expected.base_offset, \
                f"{what}: Consumed batch {consumed_batch} with unexpected base offset; the log holds {expected}"


def check_uncommitted_data_not_consumed(log: Log) -> None:
    """Kafka: ``testUncommittedDataNotConsumed(log)``."""
    seed = random.randrange(2**32)
    what = f"writer seed {seed}"
    stop = threading.Event()
    consumer = ConsumerTask(log, MAX_OFFSET, stop)
    append_task = LogAppendTask(log, MAX_OFFSET, random.Random(seed), stop)
    run_threads([consumer, append_task], stop, what)
    assert log.high_watermark >= MAX_OFFSET, what
    assert consumer.consumed_batches, what
    validate_consumed_data(log, consumer.consumed_batches, what)


@pytest.fixture
def log_dir(scratch: Path, impl: ModuleType) -> Path:
    return scratch / "topic-0"


def test_uncommitted_data_not_consumed(log_dir: Path) -> None:
    log = create_log(log_dir)
    try:
        check_uncommitted_data_not_consumed(log)
    finally:
        log.close()


def test_uncommitted_data_not_consumed_frequent_segment_rolls(log_dir: Path) -> None:
    """The same with 237-byte segments: a roll every few batches, and truncations that remove whole segments."""
    log = create_log(log_dir, LogConfig({"segment.bytes": 237}))
    try:
        check_uncommitted_data_not_consumed(log)
        assert log.number_of_segments > 10
    finally:
        log.close()

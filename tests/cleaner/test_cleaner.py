"""The Cleaner against Kafka's LogCleanerTest (spec §4, §7.8).

Ports ``core/src/test/scala/unit/kafka/log/LogCleanerTest.scala`` of Kafka 3.8.0 (plus
testCleanSegmentsRetainingLastEmptyBatch from trunk, which keeps the last batch of a cleaning round as an
empty batch) and the older ``LogCleanerTest`` / ``CleanerTest`` of 0.10.1.1 and 0.8.2, with Kafka's values:
logs of 1024-byte segments and indexes, a Cleaner over Kafka's dict-backed ``FakeOffsetMap`` (or a real
SkimpyOffsetMap where the case checks the kernels), I/O buffers of 64 KiB, load factor 0.75, no throttling, a
MockTime. Kafka's ``record(key, value)`` is one v2 record whose key and value are the decimal digits of two
numbers; ``keys_in_log`` and the other helpers read the segment files as ``LogTestUtils`` does. Transaction
markers come from ``MemoryRecords.with_end_transaction_marker`` and are appended as a follower (kafkalog has
no coordinator origin).

Added to Kafka's cases: removal of a tombstone once its v2 delete horizon has passed, and of a legacy one by
the segments' modification times; the exact summary text with Java's number formatting; crash recovery at
each stage of the swap, done by hand on the files; cleaning logs of every magic (v0, v1, v2) and codec; the
SkimpyOffsetMap kernels against the fake map, the two kernel twins against each other, and a LogCleaner
round with its log line.

Left out (kafkalog keeps no producer state, transaction index, metrics or broker configuration):

* the duplicate appends of testDuplicateCheckAfterCleaning (its cleaning and reload checks are ported);
* the checks of ``collectAbortedTransactions`` made after a cleaning removed every batch of an aborted
  transaction but kept its marker (in testBasicTransactionAwareCleaning and
  testAbortMarkerRetentionWithEmptyBatch), and ``assertAllAbortedTxns`` / ``assertAllTransactionsComplete``
  in testMultiPassSegmentCleaningWithAbortedTransactions: Kafka reads them from the rewritten ``.txnindex``
  and producer state, kafkalog derives aborted transactions from the batches in the log, where only the
  marker of such a transaction is left (the checks before cleaning and the cleaning results are ported);
* testLogToClean and testLogToCleanWithUncleanableSection, which are in tests/cleaner/test_cleaner_manager.py.

The gauges of testMaxCleanTimeSecs are read from :class:`~kafkalog.cleaner.LogCleaner`'s properties (kafkalog
registers no metrics), and testReconfigureLogCleanerIoMaxBytesPerSecond reconfigures from broker properties as
Kafka does from a ``KafkaConfig``.

Every test takes ``impl`` (reading a log runs the record kernels) and runs once per twin.

Kafka tests not ported:

- ``testRemoveMetricsOnClose``: checks, with Mockito mocks of ``KafkaMetricsGroup``, that the cleaner and its
  manager register their Yammer gauges and remove each on shutdown; kafkalog's gauges are plain properties,
  with nothing to register or remove.
"""

from __future__ import annotations

import gzip
import logging
import os
import random
import struct
import sys
import threading
import zlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import cramjam
import pytest

from kafkalog import MemoryRecords, _impl
from kafkalog.cleaner import (
    CleanedTransactionMetadata,
    Cleaner,
    CleanerStats,
    LogCleaner,
    Throttler,
    collect_aborted_transactions,
)
from kafkalog.cleaner_config import CleanerConfig
from kafkalog.cleaner_manager import LogCleaningAbortedError, LogToClean
from kafkalog.config import LogConfig
from kafkalog.errors import CorruptRecordError, IllegalStateError
from kafkalog.log import Log
from kafkalog.offset_map import OffsetMap, SkimpyOffsetMap
from kafkalog.record import ControlRecordType, EndTransactionMarker
from kafkalog.record import batch as batch_module
from kafkalog.scheduler import MockTime
from kafkalog.segment import LogSegment
from kafkalog.topic import TopicPartition
from tests.support.log_test_utils import first_overflow_segment, initialize_log_dir_with_overflowed_segment

TP = TopicPartition("test", 0)
INT_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1
TOMBSTONE_RETENTION_MS = 86_400_000
LARGE_TIMESTAMP = LONG_MAX - TOMBSTONE_RETENTION_MS - 1
#: Kafka's LogCleanerTest ``logProps``: 1024-byte segments and indexes, compacted.
BASE_PROPS: dict[str, Any] = {"segment.bytes": 1024, "segment.index.bytes": 1024, "cleanup.policy": "compact"}
MB = 1024 * 1024


class FakeOffsetMap(OffsetMap):
    """Kafka's ``FakeOffsetMap``: a dict from the key (as a string) to its offset; ``slots`` is the
    capacity.  Like Kafka's, ``clear`` empties the dict but keeps the latest offset."""

    def __init__(self, slots: int) -> None:
        self._slots = slots
        self.map: dict[str, int] = {}
        self.last_offset = -1

    @property
    def slots(self) -> int:
        return self._slots

    def put(self, key: bytes, offset: int) -> None:
        self.last_offset = offset
        self.map[bytes(key).decode()] = offset

    def get(self, key: bytes) -> int:
        return self.map.get(bytes(key).decode(), -1)

    def clear(self) -> None:
        self.map.clear()

    @property
    def size(self) -> int:
        return len(self.map)

    @property
    def latest_offset(self) -> int:
        return self.last_offset

    def update_latest_offset(self, offset: int) -> None:
        self.last_offset = offset


def no_op_check_done(topic_partition: TopicPartition) -> None:
    """Kafka: ``checkDone = _ => ()``."""


def abort_check_done(topic_partition: TopicPartition) -> None:
    """Kafka: ``abortCheckDone``."""
    raise LogCleaningAbortedError("abort")


class Env:
    """Kafka's LogCleanerTest fixture: a partition directory ``test-0`` in a temporary dir, a MockTime and
    the logs made (closed at the end, after the deferred deletions ran)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.dir = root / "test-0"
        self.time = MockTime()
        self.logs: list[Log] = []
        self.segments_to_close: list[LogSegment] = []

    def config(self, **overrides: Any) -> LogConfig:
        """Kafka: ``LogConfig.fromProps(logConfig.originals, logProps)``; keys with dots as in Kafka."""
        return LogConfig({**BASE_PROPS, **{k.replace("_", "."): v for k, v in overrides.items()}})

    def make_log(
        self,
        config: LogConfig | None = None,
        directory: Path | None = None,
        recovery_point: int = 0,
        clean_shutdown: bool = True,
    ) -> Log:
        """Kafka: ``makeLog(dir, config, recoveryPoint)``."""
        log = Log(
            directory if directory is not None else self.dir,
            config if config is not None else self.config(),
            recovery_point=recovery_point,
            scheduler=self.time.scheduler,
            time=self.time,
            had_clean_shutdown=clean_shutdown,
        )
        self.logs.append(log)
        return log

    def make_cleaner(
        self,
        capacity: int,
        check_done: Callable[[TopicPartition], None] = no_op_check_done,
        max_message_size: int = 64 * 1024,
        offset_map: OffsetMap | None = None,
    ) -> Cleaner:
        """Kafka: ``makeCleaner(capacity, checkDone, maxMessageSize)``."""
        return Cleaner(
            0,
            offset_map if offset_map is not None else FakeOffsetMap(capacity),
            max_message_size,
            max_message_size,
            0.75,
            Throttler(sys.float_info.max, 300, self.time),
            self.time,
            check_done,
        )

    def close(self) -> None:
        self.time.scheduler.shutdown()
        for log in self.logs:
            log.close()
        for segment in self.segments_to_close:
            segment.close_handlers()


@pytest.fixture
def env(scratch: Path, impl: ModuleType) -> Iterator[Env]:
    environment = Env(scratch)
    try:
        yield environment
    finally:
        environment.close()


# -- records and what the log holds ---------------------------------------------------------------------


def key(n: int) -> bytes:
    return str(n).encode()


def record(
    k: int, v: int | None, producer_id: int = -1, producer_epoch: int = -1, sequence: int = -1
) -> MemoryRecords:
    """Kafka's ``record(key, value, producerId, producerEpoch, sequence)``: one v2 record, no timestamp."""
    return MemoryRecords.with_records(
        [(key(k), None if v is None else key(v))],
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=sequence,
    )


def large_record(k: int, value: bytes) -> MemoryRecords:
    return MemoryRecords.with_records([(key(k), value)])


def tombstone(k: int) -> MemoryRecords:
    return MemoryRecords.with_records([(key(k), None)])


def unkeyed(v: int) -> MemoryRecords:
    return MemoryRecords.with_records([(None, key(v))])


def singleton(value: bytes | None, k: bytes | None = None, timestamp: int = -1) -> MemoryRecords:
    """Kafka's ``TestUtils.singletonRecords``."""
    return MemoryRecords.with_records([(k, value, timestamp)])


def message_with_offset(k: bytes | int, v: bytes | int, offset: int) -> MemoryRecords:
    """Kafka's ``messageWithOffset``: one v2 record at ``offset``, for a follower append."""
    kb = key(k) if isinstance(k, int) else k
    vb = key(v) if isinstance(v, int) else v
    return MemoryRecords.with_records([(kb, vb)], base_offset=offset)


def same(numbers: Iterable[int]) -> list[tuple[int, int]]:
    """Kafka's ``(start until end) zip (start until end)``: each number as key and value."""
    return [(n, n) for n in numbers]


def write_to_log(
    log: Log, pairs: Iterable[tuple[int, int]], offsets: Iterable[int] | None = None
) -> list[int]:
    """Kafka's ``writeToLog``: as a leader, or as a follower at the given offsets."""
    if offsets is None:
        return [log.append_as_leader(record(k, v), 0).first_offset for k, v in pairs]
    return [
        log.append_as_follower(message_with_offset(k, v, o)).last_offset
        for (k, v), o in zip(pairs, offsets, strict=True)
    ]


def batches_in(log: Log) -> list[Any]:
    return [batch for segment in log.log_segments() for batch in segment.log.batches()]


def keys_in_log(log: Log) -> list[int]:
    """Kafka's ``LogTestUtils.keysInLog``: keys of records with a key and a value, control batches skipped."""
    return [
        int(r.key)
        for b in batches_in(log)
        if not b.is_control
        for r in b.records()
        if r.key is not None and r.value is not None
    ]


def offsets_in_log(log: Log) -> list[int]:
    """Kafka's ``offsetsInLog``: offsets of records with a key and a value (markers included)."""
    return [
        r.offset for b in batches_in(log) for r in b.records() if r.key is not None and r.value is not None
    ]


def last_offsets_per_batch_in_log(log: Log) -> list[int]:
    return [b.last_offset for b in batches_in(log)]


def batch_base_offsets_in_log(log: Log) -> list[int]:
    return [b.base_offset for b in batches_in(log)]


def last_sequences_in_log(log: Log) -> dict[int, int]:
    return {b.producer_id: b.last_sequence for b in batches_in(log) if not b.is_control and b.has_producer_id}


def unkeyed_message_count_in_log(log: Log) -> int:
    return sum(1 for b in batches_in(log) for r in b.records() if r.value is not None and r.key is None)


def files_with_suffix(directory: Path, suffix: str) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(suffix))


def fill_segments(log: Log, count: int, value_of: Callable[[int], int] = lambda offset: offset) -> None:
    """Append ``record(leo, value_of(leo))`` until the log has ``count`` segments."""
    while log.number_of_segments < count:
        leo = log.log_end_offset
        log.append_as_leader(record(leo, value_of(leo)), 0)


class TxnProducer:
    """Kafka's ``appendIdempotentAsLeader`` / ``appendTransactionalAsLeader``: each call appends one
    batch of the given keys (value = key, timestamp = now) and advances the sequence."""

    def __init__(
        self,
        env: Env,
        log: Log,
        producer_id: int,
        producer_epoch: int = 0,
        transactional: bool = True,
        leader_epoch: int = 0,
    ) -> None:
        self.env, self.log, self.producer_id, self.producer_epoch = env, log, producer_id, producer_epoch
        self.transactional, self.leader_epoch = transactional, leader_epoch
        self.sequence = 0

    def __call__(self, keys: list[int]) -> Any:
        now = self.env.time.milliseconds()
        records = MemoryRecords.with_records(
            [(key(k), key(k), now) for k in keys],
            producer_id=self.producer_id,
            producer_epoch=self.producer_epoch,
            base_sequence=self.sequence,
            is_transactional=self.transactional,
        )
        self.sequence += len(keys)
        return self.log.append_as_leader(records, self.leader_epoch)


def append_marker(
    env: Env,
    log: Log,
    producer_id: int,
    control_type: ControlRecordType,
    producer_epoch: int = 0,
    timestamp: int | None = None,
) -> int:
    """Kafka's ``commitMarker`` / ``abortMarker`` appended at the log end (coordinator epoch 0); returns
    its offset."""
    offset = log.log_end_offset
    marker = MemoryRecords.with_end_transaction_marker(
        producer_id,
        producer_epoch,
        EndTransactionMarker(control_type, 0),
        base_offset=offset,
        timestamp=env.time.milliseconds() if timestamp is None else timestamp,
    )
    log.append_as_follower(marker)
    return offset


def commit(env: Env, log: Log, producer_id: int, producer_epoch: int = 0) -> int:
    return append_marker(env, log, producer_id, ControlRecordType.COMMIT, producer_epoch)


def abort(env: Env, log: Log, producer_id: int, producer_epoch: int = 0) -> int:
    return append_marker(env, log, producer_id, ControlRecordType.ABORT, producer_epoch)


def to_clean(
    log: Log, first_dirty: int, uncleanable: int | None = None, need_compaction_now: bool = False
) -> LogToClean:
    return LogToClean(
        TP,
        log,
        first_dirty,
        log.active_segment.base_offset if uncleanable is None else uncleanable,
        need_compaction_now,
    )


def run_two_pass_clean(
    cleaner: Cleaner,
    log_to_clean: LogToClean,
    current_time: int,
    tombstone_retention_ms: int = TOMBSTONE_RETENTION_MS,
) -> int:
    """Kafka's ``runTwoPassClean``: the first pass sets delete horizons, the second (past them) removes."""
    cleaner.do_clean(log_to_clean, current_time)
    return cleaner.do_clean(log_to_clean, current_time + tombstone_retention_ms + 1)[0]


# -- cleaning segments ------------------------------------------------------------------------------------


def test_clean_segments(env: Env) -> None:
    cleaner = env.make_cleaner(INT_MAX)
    log = env.make_log(env.config(segment_bytes=1024))
    fill_segments(log, 4)
    keys_found = keys_in_log(log)
    assert keys_found == list(range(log.log_end_offset))

    # pretend we have the following keys
    keys = [1, 3, 5, 7, 9]
    offset_map = FakeOffsetMap(INT_MAX)
    for k in keys:
        offset_map.put(key(k), LONG_MAX)

    segments = log.log_segments()[:3]
    stats = CleanerStats(env.time)
    expected_bytes_read = sum(s.size() for s in segments)
    should_remain = [k for k in keys_in_log(log) if k not in keys]
    cleaner.clean_segments(
        log, segments, offset_map, 0, stats, CleanedTransactionMetadata(), -1, segments[-1].read_next_offset()
    )
    assert keys_in_log(log) == should_remain
    assert stats.bytes_read == expected_bytes_read
    assert log.number_of_segments == 2
    # the cleaned segment took the group's place and base offset; nothing temporary is left
    assert log.log_segments()[0].base_offset == 0
    assert files_with_suffix(env.dir, ".cleaned") == []
    assert files_with_suffix(env.dir, ".swap") == []


def test_clean_segments_with_concurrent_segment_deletion(env: Env) -> None:
    """Retention deletes the segments being cleaned while the cleaner is about to swap its cleaned segment in:
    the swap leaves the deleted segments alone (each file is renamed ``.deleted`` once, not twice), and the
    cleaned segment joins the active one."""
    delete_start = threading.Event()
    delete_complete = threading.Event()

    class BlockingLog(Log):
        """Kafka's anonymous ``UnifiedLog`` whose ``replaceSegments`` waits for the deleting thread."""

        def replace_segments(self, new_segments: list[LogSegment], old_segments: list[LogSegment],
                             is_recovered_swap_file: bool = False) -> None:
            delete_start.set()
            if not delete_complete.wait(5):
                raise IllegalStateError("Log segment deletion timed out")
            super().replace_segments(new_segments, old_segments, is_recovered_swap_file)

    log = BlockingLog(env.dir, env.config(segment_bytes=1024, cleanup_policy="compact,delete"),
                      scheduler=env.time.scheduler, time=env.time, had_clean_shutdown=True)
    env.logs.append(log)
    failures: list[BaseException] = []

    def delete_old_segments() -> None:
        """Kafka's thread: right before the swap, move the log start offset to the active segment and apply
        retention."""
        try:
            delete_start.wait(5)
            log.high_watermark = log.active_segment.base_offset
            log.maybe_increment_log_start_offset(log.active_segment.base_offset)
            log.high_watermark = log.active_segment.base_offset
            log.delete_old_segments()
        except BaseException as e:  # pragma: no cover - reported below
            failures.append(e)
        finally:
            delete_complete.set()

    thread = threading.Thread(target=delete_old_segments)
    thread.start()
    try:
        # append records so that the segment count reaches 3
        while log.number_of_segments < 3:
            log.append_as_leader(record(0, log.log_end_offset), 0)
            log.roll()
        assert log.number_of_segments == 3

        # the first segment's file, and the name its asynchronous deletion gives it
        first_log_file = log.log_segments()[0].log
        expected_file_name = str(first_log_file.file) + ".deleted"

        # clean the log: the swap waits for the deletion
        offset_map = FakeOffsetMap(INT_MAX)
        cleaner = env.make_cleaner(INT_MAX)
        segments = log.log_segments(0, log.active_segment.base_offset)
        stats = CleanerStats(env.time)
        cleaner.build_offset_map(log, 0, log.active_segment.base_offset, offset_map, stats)
        cleaner.clean_segments(log, segments, offset_map, 0, stats, CleanedTransactionMetadata(), -1,
                               log.active_segment.base_offset)
    finally:
        delete_start.set()
        thread.join()
    assert failures == []
    # the first segment's file was renamed for its asynchronous deletion exactly once
    assert str(first_log_file.file) == expected_file_name
    assert log.number_of_segments == 2


def test_clean_segments_retaining_last_empty_batch(env: Env) -> None:
    cleaner = env.make_cleaner(INT_MAX)
    log = env.make_log(env.config(segment_bytes=1024))
    fill_segments(log, 4)
    keys_found = keys_in_log(log)
    assert keys_found == list(range(log.log_end_offset))

    # pretend all keys are deleted
    offset_map = FakeOffsetMap(INT_MAX)
    for k in keys_found:
        offset_map.put(key(k), LONG_MAX)

    segments = log.log_segments()[:3]
    stats = CleanerStats(env.time)
    cleaner.clean_segments(
        log, segments, offset_map, 0, stats, CleanedTransactionMetadata(), -1, segments[-1].read_next_offset()
    )
    assert log.number_of_segments == 2
    head = list(log.log_segments()[0].log.batches())
    assert len(head) == 1, "one batch should be retained in the cleaned segment"
    retained = head[0]
    assert retained.last_offset == log.log_segments()[-1].base_offset - 1, (
        "the retained batch should be the last"
    )
    assert retained.records() == [], "the retained batch should be an empty batch"


def test_size_trimmed_for_preallocated_and_compacted_topic(env: Env) -> None:
    original_max_file_size = 1024
    cleaner = env.make_cleaner(2)
    log = env.make_log(env.config(segment_bytes=original_max_file_size, preallocate="true"))
    for k in (0, 1, 0, 1, 0):
        log.append_as_leader(record(k, k), 0)
    log.roll()
    cleaner.clean(to_clean(log, 2))
    head = log.log_segments()[0]
    assert head.log.channel.size() < original_max_file_size, (
        "Cleaned segment file should be trimmed to its real size."
    )
    assert head.log.channel.size() == head.size()


@pytest.mark.parametrize("magic", [0, 1, 2])
def test_cleaning_with_deletes(env: Env, magic: int) -> None:
    """Kafka 3.8.0 with v2 records; 0.8.2 and 0.10.1 wrote v0 and v1 messages (appended here as a
    follower)."""
    cleaner = env.make_cleaner(INT_MAX)
    log = env.make_log(env.config(segment_bytes=1024))

    def append(k: int, v: int | None) -> None:
        if magic == 2:
            log.append_as_leader(record(k, v), 0)
        else:
            value = None if v is None else key(v)
            log.append_as_follower(
                MemoryRecords.with_records([(key(k), value)], magic=magic, base_offset=log.log_end_offset)
            )

    # append messages with the keys 0 through N
    while log.number_of_segments < 2:
        append(log.log_end_offset, log.log_end_offset)
    # delete all even keys between 0 and N
    leo = log.log_end_offset
    for k in range(0, leo, 2):
        append(k, None)
    # append some new unique keys to pad out to a new active segment
    while log.number_of_segments < 4:
        append(log.log_end_offset, log.log_end_offset)

    cleaner.clean(to_clean(log, 0))
    keys = set(keys_in_log(log))
    assert all(k not in keys for k in range(0, leo, 2)), "None of the keys we deleted should still exist."
    assert all(k in keys for k in range(1, leo, 2))
    assert {b.magic for b in batches_in(log)} == {magic}
    # the first cleaning keeps the tombstones: v2 ones get a delete horizon, legacy ones are in segments
    # modified after the (empty) clean section's horizon
    tombstones = [r.key for b in batches_in(log) for r in b.records() if r.value is None]
    assert tombstones == [key(k) for k in range(0, leo, 2)]


def test_log_cleaner_stats(env: Env) -> None:
    # because loadFactor is 0.75, this means we can fit 3 messages in the map
    cleaner = env.make_cleaner(4)
    log = env.make_log(env.config(segment_bytes=1024))
    for k in (0, 1, 0, 1, 0):
        log.append_as_leader(record(k, k), 0)
    log.roll()
    initial_log_size = log.size()

    end_offset, stats = cleaner.clean(to_clean(log, 2))
    assert end_offset == 5
    assert stats.messages_read == 5
    assert stats.bytes_read == initial_log_size
    assert stats.messages_written == 2
    assert stats.bytes_written == log.size()
    assert stats.invalid_messages_read == 0
    assert stats.end_time >= stats.start_time
    assert offsets_in_log(log) == [3, 4]


def test_log_cleaner_stats_with_skimpy_map(env: Env) -> None:
    # the same with a real SkimpyOffsetMap of 4 slots: the kernels fill it and judge the records
    cleaner = env.make_cleaner(0, offset_map=SkimpyOffsetMap(4 * 24))
    log = env.make_log(env.config(segment_bytes=1024))
    for k in (0, 1, 0, 1, 0):
        log.append_as_leader(record(k, k), 0)
    log.roll()
    initial_log_size = log.size()

    end_offset, stats = cleaner.clean(to_clean(log, 2))
    assert end_offset == 5
    assert (stats.messages_read, stats.messages_written, stats.invalid_messages_read) == (5, 2, 0)
    assert stats.bytes_read == initial_log_size
    assert stats.bytes_written == log.size()
    assert stats.map_messages_read == 5
    assert stats.buffer_utilization == 0.5
    assert offsets_in_log(log) == [3, 4]
    assert keys_in_log(log) == [1, 0]


def test_log_cleaner_retains_producer_last_sequence(env: Env) -> None:
    cleaner = env.make_cleaner(10)
    log = env.make_log(env.config(segment_bytes=1024))
    log.append_as_leader(record(0, 0), 0)  # offset 0
    log.append_as_leader(record(0, 1, producer_id=1, producer_epoch=0, sequence=0), 0)  # offset 1
    log.append_as_leader(record(0, 2, producer_id=2, producer_epoch=0, sequence=0), 0)  # offset 2
    log.append_as_leader(record(0, 3, producer_id=3, producer_epoch=0, sequence=0), 0)  # offset 3
    log.append_as_leader(record(1, 1, producer_id=2, producer_epoch=0, sequence=1), 0)  # offset 4
    log.roll()

    cleaner.clean(to_clean(log, 0))
    assert last_offsets_per_batch_in_log(log) == [1, 3, 4]
    assert last_sequences_in_log(log) == {1: 0, 2: 1, 3: 0}
    assert keys_in_log(log) == [0, 1]
    assert offsets_in_log(log) == [3, 4]


def test_cleaning_after_idempotent_appends_and_reload(env: Env) -> None:
    """testDuplicateCheckAfterCleaning: the cleaning keeps each producer's last batch, offsets and sequence
    numbers, across a reload and a second round.  Left out: Kafka's duplicate appends after each reload (the
    same batch again returns the first append's offsets), which need producer state (sequence checks) that
    kafkalog does not keep, and so the second reload, which only precedes one of them."""
    cleaner = env.make_cleaner(INT_MAX)
    config = env.config(segment_bytes=2048)
    log = env.make_log(config)
    pid1, pid2, pid3, pid4 = (
        TxnProducer(env, log, 1, transactional=False),
        TxnProducer(env, log, 2, transactional=False),
        TxnProducer(env, log, 3, transactional=False),
        TxnProducer(env, log, 4, transactional=False),
    )
    pid1([1, 2, 3])
    pid2([3, 1, 4])
    pid3([1, 4])
    log.roll()
    cleaner.clean(to_clean(log, 0))
    assert last_offsets_per_batch_in_log(log) == [2, 5, 7]
    assert last_sequences_in_log(log) == {1: 2, 2: 2, 3: 1}
    assert keys_in_log(log) == [2, 3, 1, 4]
    assert offsets_in_log(log) == [1, 3, 6, 7]

    # reload the log: the cleaned batches kept their offsets and sequence numbers
    log.close()
    log = env.make_log(config, recovery_point=0)
    assert last_offsets_per_batch_in_log(log) == [2, 5, 7]
    assert last_sequences_in_log(log) == {1: 2, 2: 2, 3: 1}
    assert log.log_end_offset == 8

    # one more append and a round of cleaning empties producer 1's batch, which is kept for its sequence
    pid4.log = log
    pid4([2])
    log.roll()
    cleaner.clean(to_clean(log, 0))
    assert last_sequences_in_log(log) == {1: 2, 2: 2, 3: 1, 4: 0}
    assert last_offsets_per_batch_in_log(log) == [2, 5, 7, 8]
    assert keys_in_log(log) == [3, 1, 4, 2]
    assert offsets_in_log(log) == [3, 6, 7, 8]


def test_partial_segment_clean(env: Env) -> None:
    # because loadFactor is 0.75, this means we can fit 1 message in the map
    cleaner = env.make_cleaner(2)
    log = env.make_log(env.config(segment_bytes=1024))
    for k in (0, 1, 0, 1, 0):
        log.append_as_leader(record(k, k), 0)
    log.roll()

    # clean the log with only one message removed
    cleaner.clean(to_clean(log, 2))
    assert keys_in_log(log) == [1, 0, 1, 0]
    assert offsets_in_log(log) == [1, 2, 3, 4]

    # continue to make progress, even though we can only clean one message at a time
    cleaner.clean(to_clean(log, 3))
    assert keys_in_log(log) == [0, 1, 0]
    assert offsets_in_log(log) == [2, 3, 4]

    cleaner.clean(to_clean(log, 4))
    assert keys_in_log(log) == [1, 0]
    assert offsets_in_log(log) == [3, 4]


def test_cleaning_with_uncleanable_section(env: Env) -> None:
    cleaner = env.make_cleaner(INT_MAX)
    log = env.make_log(env.config(segment_bytes=1024))

    # number of distinct keys; small enough that each segment holds some duplicates
    n = 10
    num_cleanable_segments = 2
    num_total_segments = 7

    # append messages with the keys 0 through N-1, values equal offset
    while log.number_of_segments <= num_cleanable_segments:
        log.append_as_leader(record(log.log_end_offset % n, log.log_end_offset), 0)
    # one message past the cleanable segments has been added: the segment holding the first uncleanable
    # offset must not be cleaned at all
    first_uncleanable_offset = log.log_end_offset + 1
    while log.number_of_segments < num_total_segments - 1:
        log.append_as_leader(record(log.log_end_offset % n, log.log_end_offset), 0)

    def distinct_values_by_segment() -> list[int]:
        return [len({r.value for r in segment.log.records()}) for segment in log.log_segments()]

    before = distinct_values_by_segment()
    assert all(count > n for count in before[:-1]), "each segment should contain duplicates"

    cleaner.clean(to_clean(log, 0, first_uncleanable_offset))
    after = distinct_values_by_segment()
    assert all(
        a < b for b, a in zip(before[:num_cleanable_segments], after[:num_cleanable_segments], strict=True)
    ), "The cleanable segments should have fewer number of values after cleaning"
    assert (
        before[num_cleanable_segments:num_total_segments] == after[num_cleanable_segments:num_total_segments]
    ), "The uncleanable segments should have the same number of values after cleaning"


def test_cleaning_with_unkeyed_messages(env: Env) -> None:
    cleaner = env.make_cleaner(INT_MAX)
    # compaction turned off so that unkeyed messages can be appended
    log = env.make_log(env.config(segment_bytes=1024, cleanup_policy="delete"))

    while log.number_of_segments < 2:
        log.append_as_leader(unkeyed(log.log_end_offset), 0)
    num_invalid_messages = unkeyed_message_count_in_log(log)
    size_with_unkeyed_messages = log.size()

    while log.number_of_segments < 3:
        log.append_as_leader(record(log.log_end_offset, log.log_end_offset), 0)

    expected_size_after_cleaning = log.size() - size_with_unkeyed_messages
    _, stats = cleaner.clean(to_clean(log, 0))

    assert num_invalid_messages > 0
    assert unkeyed_message_count_in_log(log) == 0, "Log should only contain keyed messages after cleaning."
    assert log.size() == expected_size_after_cleaning, (
        "Log should only contain keyed messages after cleaning."
    )
    assert stats.invalid_messages_read == num_invalid_messages


def test_cleaning_with_unkeyed_messages_and_skimpy_map(env: Env) -> None:
    cleaner = env.make_cleaner(0, offset_map=SkimpyOffsetMap(1000 * 24))
    log = env.make_log(env.config(segment_bytes=1024, cleanup_policy="delete"))
    while log.number_of_segments < 2:
        log.append_as_leader(unkeyed(log.log_end_offset), 0)
    num_invalid_messages = unkeyed_message_count_in_log(log)
    size_with_unkeyed_messages = log.size()
    while log.number_of_segments < 3:
        log.append_as_leader(record(log.log_end_offset, log.log_end_offset), 0)
    expected_size_after_cleaning = log.size() - size_with_unkeyed_messages
    _, stats = cleaner.clean(to_clean(log, 0))
    assert unkeyed_message_count_in_log(log) == 0
    assert log.size() == expected_size_after_cleaning
    assert stats.invalid_messages_read == num_invalid_messages


def test_clean_segments_with_abort(env: Env) -> None:
    cleaner = env.make_cleaner(INT_MAX, abort_check_done)
    log = env.make_log(env.config(segment_bytes=1024))
    fill_segments(log, 4)
    keys = keys_in_log(log)
    offset_map = FakeOffsetMap(INT_MAX)
    for k in keys:
        offset_map.put(key(k), LONG_MAX)
    files_before = sorted(p.name for p in env.dir.iterdir())
    segments_before = [s.base_offset for s in log.log_segments()]

    with pytest.raises(LogCleaningAbortedError):
        cleaner.clean_segments(
            log,
            log.log_segments()[:3],
            offset_map,
            0,
            CleanerStats(env.time),
            CleanedTransactionMetadata(),
            -1,
            log.active_segment.base_offset,
        )
    # the round left nothing behind and changed nothing
    assert files_with_suffix(env.dir, ".cleaned") == []
    assert sorted(p.name for p in env.dir.iterdir()) == files_before
    assert [s.base_offset for s in log.log_segments()] == segments_before
    assert keys_in_log(log) == keys


def test_clean_with_abort_through_do_clean(env: Env) -> None:
    # the same abort reached through clean(), the path a cleaner thread takes
    cleaner = env.make_cleaner(INT_MAX, abort_check_done)
    log = env.make_log(env.config(segment_bytes=1024))
    fill_segments(log, 4)
    keys = keys_in_log(log)
    with pytest.raises(LogCleaningAbortedError):
        cleaner.clean(to_clean(log, 0))
    assert files_with_suffix(env.dir, ".cleaned") == []
    assert keys_in_log(log) == keys
    assert log.number_of_segments == 4


# -- grouping segments ------------------------------------------------------------------------------------


def check_segment_order(groups: list[list[LogSegment]]) -> None:
    offsets = [segment.base_offset for group in groups for segment in group]
    assert offsets == sorted(offsets), "Offsets should be in increasing order."


def test_segment_grouping(env: Env) -> None:
    log = env.make_log(env.config(segment_bytes=300, index_interval_bytes=1))
    while log.number_of_segments < 10:
        log.append_as_leader(singleton(b"hello", b"hello"), 0)
    segments = log.log_segments()
    group = Cleaner.group_segments_by_size

    # grouping by very large values should result in a single group with all the segments in it
    groups = group(segments, INT_MAX, INT_MAX, log.log_end_offset)
    assert len(groups) == 1
    assert len(groups[0]) == log.number_of_segments
    check_segment_order(groups)

    # grouping by very small values should result in all groups having one entry
    groups = group(segments, 1, INT_MAX, log.log_end_offset)
    assert len(groups) == log.number_of_segments
    assert all(len(g) == 1 for g in groups), "All groups should be singletons."
    check_segment_order(groups)
    groups = group(segments, INT_MAX, 1, log.log_end_offset)
    assert len(groups) == log.number_of_segments
    assert all(len(g) == 1 for g in groups), "All groups should be singletons."
    check_segment_order(groups)

    group_size = 3
    # check grouping by log size
    log_size = sum(s.size() for s in segments[:group_size]) + 1
    groups = group(segments, log_size, INT_MAX, log.log_end_offset)
    check_segment_order(groups)
    assert all(len(g) == group_size for g in groups[:-1]), "All but the last group should be the target size."
    assert [len(g) for g in groups] == [3, 3, 3, 1]

    # check grouping by index size
    index_size = sum(s.offset_index.size_in_bytes() for s in segments[:group_size]) + 1
    groups = group(segments, INT_MAX, index_size, log.log_end_offset)
    check_segment_order(groups)
    assert all(len(g) == group_size for g in groups[:-1]), "All but the last group should be the target size."
    # the active segment holds one batch, which is never indexed: its empty index joins the last group
    assert segments[-1].offset_index.size_in_bytes() == 0
    assert [len(g) for g in groups] == [3, 3, 4]


def test_segment_grouping_with_sparse_offsets_and_empty_segments(env: Env) -> None:
    cleaner = env.make_cleaner(INT_MAX)
    log = env.make_log(env.config())
    k, v = b"key", b"val"
    # create 3 segments
    for i in range(3):
        log.append_as_leader(singleton(v, k), 0)
        # 0 to Int.MaxValue is Int.MaxValue+1 messages: -1 is the last message of the i-th segment
        log.append_as_follower(message_with_offset(k, v, (i + 1) * (INT_MAX + 1) - 1))
        assert log.number_of_segments == i + 1
    # 4th active segment, not clean
    log.append_as_leader(singleton(v, k), 0)

    total_segments = 4
    first_uncleanable_offset = log.log_end_offset - 1
    not_cleanable_segments = 1
    assert log.number_of_segments == total_segments
    groups = Cleaner.group_segments_by_size(log.log_segments(), INT_MAX, INT_MAX, first_uncleanable_offset)
    # index files use 4-byte relative offsets: non-empty segments spanning that range do not group
    assert len(groups) == total_segments - not_cleanable_segments

    # cleaning empties the first 2 segments
    cleaner.clean(LogToClean(log.topic_partition, log, 0, first_uncleanable_offset))
    assert log.number_of_segments == total_segments
    assert log.log_segments()[0].size() == 0

    # 2 empty segments now group together
    groups = Cleaner.group_segments_by_size(log.log_segments(), INT_MAX, INT_MAX, first_uncleanable_offset)
    none_empty_segment = 1
    assert len(groups) == none_empty_segment + 1

    # and a clean merges them into one
    cleaner.clean(LogToClean(log.topic_partition, log, 0, first_uncleanable_offset))
    assert log.number_of_segments == total_segments - 1


def test_segment_grouping_with_sparse_offsets(env: Env) -> None:
    log = env.make_log(env.config(segment_bytes=400, index_interval_bytes=1))
    # fill up the first segment
    while log.number_of_segments == 1:
        log.append_as_leader(singleton(b"hello", b"hello"), 0)
    # forward the offset and append a message to the next segment at offset Int.MaxValue
    log.append_as_follower(message_with_offset(b"hello", b"hello", INT_MAX - 1))
    log.append_as_leader(singleton(b"hello", b"hello"), 0)
    assert log.active_segment.offset_index.last_offset == INT_MAX

    # a single group with a maximum relative offset of Int.MaxValue
    groups = Cleaner.group_segments_by_size(log.log_segments(), INT_MAX, INT_MAX, log.log_end_offset)
    assert len(groups) == 1

    # another message makes the last offset of the second segment > Int.MaxValue
    log.append_as_leader(singleton(b"hello", b"hello"), 0)
    groups = Cleaner.group_segments_by_size(log.log_segments(), INT_MAX, INT_MAX, log.log_end_offset)
    assert len(groups) == 2
    check_segment_order(groups)

    # more segments: grouping still happens
    while log.number_of_segments < 4:
        log.append_as_leader(singleton(b"hello", b"hello"), 0)
    groups = Cleaner.group_segments_by_size(log.log_segments(), INT_MAX, INT_MAX, log.log_end_offset)
    assert len(groups) == log.number_of_segments - 1
    for g in groups:
        assert g[-1].offset_index.last_offset - g[0].offset_index.base_offset <= INT_MAX, (
            "Relative offset greater than Int.MaxValue"
        )
    check_segment_order(groups)


def test_segment_grouping_following_load_of_zero_index(env: Env) -> None:
    # an index interval as large as the segment mimics loading an empty index file
    log = env.make_log(env.config(segment_bytes=400, index_interval_bytes=400))
    log.append_as_follower(message_with_offset(b"hello", b"hello", 0))
    log.append_as_follower(message_with_offset(b"hello", b"hello", 1))
    log.roll(INT_MAX // 2)  # a new segment at offset Int.MaxValue/2
    log.append_as_follower(message_with_offset(b"hello", b"hello", INT_MAX // 2))
    log.append_as_follower(message_with_offset(b"hello", b"hello", INT_MAX + 1))

    assert log.log_end_offset - 1 - log.log_start_offset > INT_MAX, (
        "Actual offset range should be > Int.MaxValue"
    )
    assert log.log_segments()[-1].offset_index.last_offset - log.log_start_offset <= INT_MAX, (
        "index.lastOffset is reporting the wrong last offset"
    )

    # two groups, because the second segment takes the offset range past Int.MaxValue
    groups = Cleaner.group_segments_by_size(log.log_segments(), INT_MAX, INT_MAX, log.log_end_offset)
    assert len(groups) == 2
    for g in groups:
        assert g[-1].read_next_offset() - 1 - g[0].base_offset <= INT_MAX, (
            "Relative offset greater than Int.MaxValue"
        )
    check_segment_order(groups)


# -- the offset map -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("map_kind", ["fake", "skimpy"])
def test_build_offset_map(env: Env, map_kind: str) -> None:
    offset_map: OffsetMap = FakeOffsetMap(1000) if map_kind == "fake" else SkimpyOffsetMap(1000 * 24)
    log = env.make_log(env.config())
    cleaner = env.make_cleaner(INT_MAX)
    start, end = 0, 500
    write_to_log(log, same(range(start, end)))

    def check_range(start: int, end: int) -> None:
        stats = CleanerStats(env.time)
        cleaner.build_offset_map(log, start, end, offset_map, stats)
        assert offset_map.latest_offset + 1 == end, "Last offset should be the end offset."
        assert offset_map.size == end - start, "Should have the expected number of messages in the map."
        for i in range(start, end):
            assert offset_map.get(key(i)) == i, "Should find all the keys"
        assert offset_map.get(key(start - 1)) == -1, "Should not find a value too small"
        assert offset_map.get(key(end)) == -1, "Should not find a value too large"
        assert stats.map_messages_read == end - start

    segments = log.log_segments()
    assert len(segments) >= 4
    check_range(0, segments[1].base_offset)
    check_range(segments[1].base_offset, segments[3].base_offset)
    check_range(segments[3].base_offset, log.log_end_offset)


def test_build_offset_map_fake_large(env: Env) -> None:
    offset_map = FakeOffsetMap(1000)
    log = env.make_log(
        LogConfig({"segment.bytes": 120, "segment.index.bytes": 120, "cleanup.policy": "compact"})
    )
    cleaner = env.make_cleaner(INT_MAX)
    key_start, key_end = 0, 2
    offset_end = 7_206_178
    write_to_log(log, same(range(key_start, key_end)), [0, offset_end])
    cleaner.build_offset_map(log, key_start, offset_end + 1, offset_map, CleanerStats(env.time))
    assert offset_map.latest_offset == offset_end, "Last offset should be the end offset."
    assert offset_map.size == key_end - key_start
    assert offset_map.get(key(0)) == 0, "Map should contain first value"
    assert offset_map.get(key(1)) == offset_end, "Map should contain second value"


@pytest.mark.parametrize("map_kind", ["fake", "skimpy"])
def test_build_partial_offset_map(env: Env, map_kind: str) -> None:
    # because loadFactor is 0.75, this means we can fit 2 messages in the map
    log = env.make_log(env.config())
    cleaner = env.make_cleaner(3, offset_map=None if map_kind == "fake" else SkimpyOffsetMap(3 * 24))
    offset_map = cleaner.offset_map
    for k in range(5):
        log.append_as_leader(record(k, k), 0)
    log.roll()

    stats = CleanerStats(env.time)
    cleaner.build_offset_map(log, 2, INT_MAX, offset_map, stats)
    assert offset_map.size == 2
    assert offset_map.get(key(0)) == -1
    assert offset_map.get(key(2)) == 2
    assert offset_map.get(key(3)) == 3
    assert offset_map.get(key(4)) == -1
    assert stats.map_messages_read == 4
    assert offset_map.latest_offset == 3


def test_cleaner_needs_room_for_one_message(env: Env) -> None:
    # Kafka's Cleaner requires slots * loadFactor > 1
    with pytest.raises(IllegalStateError):
        env.make_cleaner(1)
    with pytest.raises(IllegalStateError):
        env.make_cleaner(0, offset_map=SkimpyOffsetMap(24))
    assert env.make_cleaner(2).offset_map.slots == 2


# -- crash recovery -----------------------------------------------------------------------------------------


def segment_file_names(directory: Path, base_offset: int) -> list[Path]:
    prefix = f"{base_offset:020d}."
    return sorted(
        p
        for p in directory.iterdir()
        if p.name.startswith(prefix) and p.name.split(".", 1)[1] in ("log", "index", "timeindex", "txnindex")
    )


def add_suffix(directory: Path, base_offset: int, suffix: str, only: str | None = None) -> None:
    """Rename a live segment's files by hand (Kafka: ``changeFileSuffixes("", suffix)``)."""
    renamed = 0
    for path in segment_file_names(directory, base_offset):
        if only is None or path.name.endswith("." + only):
            path.rename(path.with_name(path.name + suffix))
            renamed += 1
    assert renamed >= 1


def restore_deleted(directory: Path) -> None:
    """Rename every ``.deleted`` file back to its live name."""
    for path in directory.iterdir():
        if path.name.endswith(".deleted"):
            path.rename(path.with_name(path.name[: -len(".deleted")]))


def test_recovery_after_crash(env: Env) -> None:
    """Kafka's testRecoveryAfterCrash: a crash at each stage of the swap, simulated on the files."""
    cleaner = env.make_cleaner(INT_MAX)
    config = env.config(segment_bytes=300, index_interval_bytes=1, file_delete_delay_ms=10)
    directory = env.dir

    def clean_nine(log: Log, offset_map: FakeOffsetMap) -> list[int]:
        """Clean the first 9 segments, and keep the old segments' files (renamed .deleted) as a crash would:
        the deferred deletion is dropped and their handles closed."""
        old = log.log_segments()[:9]
        cleaner.clean_segments(
            log,
            old,
            offset_map,
            0,
            CleanerStats(env.time),
            CleanedTransactionMetadata(),
            -1,
            old[-1].read_next_offset(),
        )
        env.time.scheduler.clear()
        for segment in old:
            segment.close_handlers()
        assert len(files_with_suffix(directory, ".deleted")) >= 9 * 2
        return keys_in_log(log)

    def recover_and_check(expected_keys: list[int]) -> Log:
        """Kafka's ``LogTestUtils.recoverAndCheck``: reopen after an unclean shutdown, run the deferred
        deletes, and find no temporary file left and the expected keys."""
        recovered = env.make_log(config, clean_shutdown=False)
        env.time.sleep(config.file_delete_delay_ms + 1)
        for suffix in (".deleted", ".cleaned", ".swap"):
            assert files_with_suffix(directory, suffix) == [], f"Unexpected {suffix} file after recovery"
        assert keys_in_log(recovered) == expected_keys
        for segment in recovered.log_segments():
            for batch in segment.log.batches():
                assert segment.base_offset <= batch.base_offset
                assert batch.last_offset <= segment.base_offset + INT_MAX
        return recovered

    def refill(log: Log, offset_map: FakeOffsetMap) -> None:
        nonlocal message_count
        while log.number_of_segments < 10:
            log.append_as_leader(record(log.log_end_offset, log.log_end_offset), 0)
            message_count += 1
        for k in range(1, message_count, 2):
            offset_map.put(key(k), LONG_MAX)

    log = env.make_log(config)
    message_count = 0
    while log.number_of_segments < 10:
        log.append_as_leader(record(log.log_end_offset, log.log_end_offset), 0)
        message_count += 1
    all_keys = keys_in_log(log)
    assert all_keys == list(range(message_count))

    # pretend we have odd-numbered keys
    offset_map = FakeOffsetMap(INT_MAX)
    for k in range(1, message_count, 2):
        offset_map.put(key(k), LONG_MAX)

    cleaned_keys = clean_nine(log, offset_map)
    assert cleaned_keys == [k for k in all_keys if k % 2 == 0 or k >= log.log_segments()[1].base_offset]
    log.close()

    # 1) a crash just after the .cleaned files were written, before the rename to .swap: the clean is
    #    abandoned at recovery, and every message is there
    add_suffix(directory, 0, ".cleaned")
    restore_deleted(directory)
    log = recover_and_check(all_keys)

    # 2) a crash after some .cleaned files were renamed to .swap: the clean is abandoned
    cleaned_keys = clean_nine(log, offset_map)
    log.close()
    add_suffix(directory, 0, ".cleaned")
    (directory / f"{0:020d}.log.cleaned").rename(directory / f"{0:020d}.log.swap")
    restore_deleted(directory)
    log = recover_and_check(all_keys)

    # 3) a crash after the swap files were made, before the old segments were renamed .deleted: the swap is
    #    completed at recovery
    cleaned_keys = clean_nine(log, offset_map)
    log.close()
    add_suffix(directory, 0, ".swap")
    restore_deleted(directory)
    log = recover_and_check(cleaned_keys)

    # 4) a crash after the old segments were renamed .deleted: the swap is completed
    refill(log, offset_map)
    cleaned_keys = clean_nine(log, offset_map)
    log.close()
    add_suffix(directory, 0, ".swap")
    log = recover_and_check(cleaned_keys)

    # 5) a crash after some of the swap files lost their suffix: the swap is completed
    refill(log, offset_map)
    cleaned_keys = clean_nine(log, offset_map)
    log.close()
    add_suffix(directory, 0, ".swap", only="timeindex")
    log = recover_and_check(cleaned_keys)

    # 6) a crash after the swap, before the deferred deletion: the .deleted files go at recovery
    refill(log, offset_map)
    cleaned_keys = clean_nine(log, offset_map)
    log.close()
    log = recover_and_check(cleaned_keys)


# -- legacy formats, corrupt and large messages -------------------------------------------------------------


def legacy_message(
    offset: int, magic: int, attributes: int, timestamp: int, k: bytes | None, v: bytes | None
) -> bytes:
    """One framed v0/v1 message, written from the format (spec §1.2), CRC-32 over magic..end."""
    body = struct.pack(">bb", magic, attributes)
    if magic == 1:
        body += struct.pack(">q", timestamp)
    for field in (k, v):
        body += struct.pack(">i", -1) if field is None else struct.pack(">i", len(field)) + field
    message = struct.pack(">I", zlib.crc32(body)) + body
    return struct.pack(">qi", offset, len(message)) + message


XERIAL_HEADER = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)


def compress_legacy(codec: str, data: bytes) -> bytes:
    """gzip, or snappy in the xerial framing Kafka's legacy snappy streams use (header, then length-prefixed
    raw snappy blocks)."""
    if codec == "gzip":
        return gzip.compress(data)
    block = bytes(cramjam.snappy.compress_raw(data))
    return XERIAL_HEADER + struct.pack(">i", len(block)) + block


def decompress_legacy(codec: str, data: bytes) -> bytes:
    if codec == "gzip":
        return gzip.decompress(data)
    assert data.startswith(XERIAL_HEADER)
    out, position = b"", len(XERIAL_HEADER)
    while position < len(data):
        size = struct.unpack_from(">i", data, position)[0]
        out += bytes(cramjam.snappy.decompress_raw(data[position + 4 : position + 4 + size]))
        position += 4 + size
    return out


def invalid_cleaned_message(initial_offset: int, pairs: list[tuple[int, int]], codec: str = "gzip") -> bytes:
    """Kafka's ``invalidCleanedMessage`` (KAFKA-4298): a v1 wrapper around v0 messages, as old cleaners wrote
    it; inner offsets relative to the first, the wrapper at the last offset."""
    inner = b"".join(legacy_message(i, 0, 0, -1, key(k), key(v)) for i, (k, v) in enumerate(pairs))
    codec_id = {"gzip": 1, "snappy": 2}[codec]
    return legacy_message(
        initial_offset + len(pairs) - 1, 1, codec_id, -1, None, compress_legacy(codec, inner)
    )


def inner_magics(codec: str, batch: Any) -> list[int]:
    """The magic byte of every inner message of a legacy wrapper, read from the bytes."""
    raw = batch.raw_bytes()
    key_size_at = 12 + 4 + 2 + (8 if batch.magic == 1 else 0)
    key_size = struct.unpack_from(">i", raw, key_size_at)[0]
    value_at = key_size_at + 4 + max(key_size, 0)
    value_size = struct.unpack_from(">i", raw, value_at)[0]
    inner = decompress_legacy(codec, raw[value_at + 4 : value_at + 4 + value_size])
    magics, position = [], 0
    while position < len(inner):
        size = struct.unpack_from(">i", inner, position + 8)[0]
        magics.append(inner[position + 12 + 4])
        position += 12 + size
    return magics


@pytest.mark.parametrize("codec", ["gzip", "snappy"])
def test_clean_corrupt_message_set(env: Env, codec: str) -> None:
    """KAFKA-4298: a wrapper whose inner messages have another magic is rewritten with matching magics."""
    log = env.make_log(LogConfig({"compression.type": codec}))
    cleaner = env.make_cleaner(10)
    # the payload of each message is its offset, to check the offsets after cleaning
    dup_set = list(zip([0, 1, 0, 1], range(25, 29), strict=True))  # one compressed entry with duplicates
    no_dup_set = list(zip([3, 4], range(50, 52), strict=True))  # and one without (which must be fixed too)
    log.append_as_follower(invalid_cleaned_message(25, dup_set, codec))
    log.append_as_follower(invalid_cleaned_message(50, no_dup_set, codec))
    log.roll()
    assert [inner_magics(codec, b) for b in batches_in(log)] == [[0, 0, 0, 0], [0, 0]]

    cleaner.clean(to_clean(log, 0))
    batches = batches_in(log)
    assert [r.offset for b in batches for r in b.records()] == [27, 28, 50, 51]
    for batch in batches:
        assert batch.magic == 1
        assert batch.compression.kafka_name == codec
        assert inner_magics(codec, batch) == [batch.magic] * batch.count
        for r in batch.records():
            assert int(r.value) == r.offset


def test_client_handling_of_corrupt_message_set(impl: ModuleType) -> None:
    keys = range(1, 10)
    offset = 50
    corrupted = MemoryRecords(
        invalid_cleaned_message(offset, list(zip(keys, range(offset, offset + len(keys)), strict=True)))
    )
    records = list(corrupted.records())
    assert len(records) == 9
    for r in records:
        assert int(r.value) == r.offset
    assert [r.key for r in records] == [key(k) for k in keys]


def test_large_message(env: Env) -> None:
    large_message_size = MB
    # a cleaner with a very small default max message size: its buffers grow for the large batches
    cleaner = env.make_cleaner(INT_MAX, max_message_size=1024)
    log = env.make_log(
        env.config(segment_bytes=large_message_size * 16, max_message_bytes=large_message_size * 2)
    )
    value = bytes(large_message_size)
    while log.number_of_segments < 2:
        log.append_as_leader(large_record(log.log_end_offset, value), 0)
    assert keys_in_log(log) == list(range(log.log_end_offset))

    keys = [1, 3, 5, 7, 9]
    offset_map = FakeOffsetMap(INT_MAX)
    for k in keys:
        offset_map.put(key(k), LONG_MAX)
    stats = CleanerStats(env.time)
    should_remain = [k for k in keys_in_log(log) if k not in keys]
    cleaner.clean_segments(
        log,
        [log.log_segments()[0]],
        offset_map,
        0,
        stats,
        CleanedTransactionMetadata(),
        -1,
        log.log_segments()[0].read_next_offset(),
    )
    assert keys_in_log(log) == should_remain
    assert stats.messages_written == len(should_remain) - 1  # the active segment's record was not cleaned


def create_log_with_messages_larger_than_max_size(
    env: Env, large_message_size: int
) -> tuple[Log, FakeOffsetMap]:
    """Kafka's ``createLogWithMessagesLargerThanMaxSize``: the log's max.message.bytes is lowered after the
    appends, so its batches are larger than the limit."""
    log = env.make_log(
        env.config(segment_bytes=large_message_size * 16, max_message_bytes=large_message_size * 2)
    )
    value = bytes(large_message_size)
    while log.number_of_segments < 2:
        log.append_as_leader(large_record(log.log_end_offset, value), 0)
    assert keys_in_log(log) == list(range(log.log_end_offset))
    log.config = env.config(segment_bytes=large_message_size * 16, max_message_bytes=large_message_size // 2)
    offset_map = FakeOffsetMap(INT_MAX)
    for k in (1, 3, 5, 7, 9):
        offset_map.put(key(k), LONG_MAX)
    return log, offset_map


def test_message_larger_than_max_message_size(env: Env) -> None:
    log, offset_map = create_log_with_messages_larger_than_max_size(env, MB)
    cleaner = env.make_cleaner(INT_MAX, max_message_size=1024)
    head = log.log_segments()[0]
    cleaner.clean_segments(
        log,
        [head],
        offset_map,
        0,
        CleanerStats(env.time),
        CleanedTransactionMetadata(),
        -1,
        head.read_next_offset(),
    )
    should_remain = [k for k in keys_in_log(log) if str(k) not in offset_map.map]
    assert keys_in_log(log) == should_remain
    assert 1 not in keys_in_log(log) and 2 in keys_in_log(log)


def test_message_larger_than_max_message_size_with_corrupt_header(env: Env) -> None:
    log, offset_map = create_log_with_messages_larger_than_max_size(env, MB)
    head = log.log_segments()[0]
    with open(head.log.file, "r+b") as f:
        f.seek(16)  # Records.MAGIC_OFFSET
        f.write(b"\xff")
    cleaner = env.make_cleaner(INT_MAX, max_message_size=1024)
    with pytest.raises(CorruptRecordError):
        cleaner.clean_segments(
            log,
            [head],
            offset_map,
            0,
            CleanerStats(env.time),
            CleanedTransactionMetadata(),
            -1,
            head.base_offset + 1,
        )
    assert files_with_suffix(env.dir, ".cleaned") == []


def test_corrupt_message_size_larger_than_bytes_available(env: Env) -> None:
    log, offset_map = create_log_with_messages_larger_than_max_size(env, MB)
    config = log.config
    # Kafka cuts the file under the open log; kafkalog maps its segment files (a read of a mapped page past
    # the end of the file is a SIGBUS), so the log is closed, the file cut to 1024 bytes, and the log reopened
    head_file = log.log_segments()[0].log.file
    log.close()
    os.truncate(head_file, 1024)
    log = env.make_log(config)
    head = log.log_segments()[0]
    assert head.size() == 1024
    cleaner = env.make_cleaner(INT_MAX, max_message_size=1024)
    with pytest.raises(CorruptRecordError):
        cleaner.clean_segments(
            log,
            [head],
            offset_map,
            0,
            CleanerStats(env.time),
            CleanedTransactionMetadata(),
            -1,
            head.base_offset + 1,
        )
    assert files_with_suffix(env.dir, ".cleaned") == []


def test_cleaning_beyond_missing_offsets(env: Env) -> None:
    config = LogConfig({"segment.bytes": 1024 * 1024, "cleanup.policy": "compact"})
    cleaner = env.make_cleaner(INT_MAX)

    log = env.make_log(config, env.root / "test-1")
    write_to_log(log, same(range(10)), range(10))
    # roll a new segment at 11, leaving a hole at [10, 10]
    log.roll(11)
    log.append_as_follower(message_with_offset(1015, 1015, 11))  # the active segment
    next_dirty_offset, _ = cleaner.clean(
        LogToClean(log.topic_partition, log, 0, log.active_segment.base_offset, need_compaction_now=True)
    )
    assert next_dirty_offset == log.active_segment.base_offset == 11, "Cleaning point should pass offset gap"

    log = env.make_log(config, env.root / "test-2")
    write_to_log(log, same(range(10)), range(10))
    log.roll(15)  # a hole at [10, 14]
    write_to_log(log, same(range(15, 25)), range(15, 25))
    log.roll(30)  # a hole at [25, 29]
    log.append_as_follower(message_with_offset(1015, 1015, 30))
    next_dirty_offset, _ = cleaner.clean(
        LogToClean(log.topic_partition, log, 0, log.active_segment.base_offset, need_compaction_now=True)
    )
    assert next_dirty_offset == log.active_segment.base_offset == 30, (
        "Cleaning point should pass offset gap in multiple segments"
    )


# -- tombstones ---------------------------------------------------------------------------------------------


def test_clean_tombstone(env: Env) -> None:
    log_config = LogConfig()
    log = env.make_log(log_config)
    cleaner = env.make_cleaner(10)
    retention = log_config.delete_retention_ms
    assert retention == TOMBSTONE_RETENTION_MS

    # a message with a large timestamp
    log.append_as_leader(singleton(b"0", b"0", env.time.milliseconds() + retention + 10000), 0)
    log.roll()
    cleaner.clean(to_clean(log, 0))
    # a tombstone with a small timestamp, in a new segment
    log.append_as_leader(singleton(None, b"0", env.time.milliseconds() - retention - 10000), 0)
    log.roll()
    first_cleaning = env.time.milliseconds()
    cleaner.clean(to_clean(log, 1))
    head_batch = next(iter(log.log_segments()[0].log.batches()))
    assert head_batch.last_offset == 1, "The tombstone should be retained."
    # the first cleaning that kept it wrote the delete horizon into the batch (v2, attribute bit 6)
    assert head_batch.delete_horizon_ms == first_cleaning + retention
    assert [(r.offset, r.key, r.value) for r in head_batch.records()] == [(1, b"0", None)]

    # a message and another segment
    log.append_as_leader(singleton(b"1", b"1", env.time.milliseconds()), 0)
    log.roll()
    cleaner.clean(to_clean(log, 2))
    head_batch = next(iter(log.log_segments()[0].log.batches()))
    assert head_batch.last_offset == 1, "The tombstone should be retained."
    assert head_batch.delete_horizon_ms == first_cleaning + retention

    # still there one millisecond before the horizon ...
    env.time.sleep(retention - 1)
    log.append_as_leader(singleton(b"2", b"2", env.time.milliseconds()), 0)
    log.roll()
    cleaner.clean(to_clean(log, 3))
    assert offsets_in_log(log) == [2, 3]
    assert next(iter(log.log_segments()[0].log.batches())).last_offset == 1
    # ... and gone at it
    env.time.sleep(1)
    log.append_as_leader(singleton(b"3", b"3", env.time.milliseconds()), 0)
    log.roll()
    cleaner.clean(to_clean(log, 4))
    assert [b.last_offset for b in batches_in(log)] == [2, 3, 4]
    assert keys_in_log(log) == [1, 2, 3]


def test_tombstones_of_legacy_records_follow_the_clean_segments_modification_time(env: Env) -> None:
    """v0/v1 batches have no delete horizon: a tombstone stays while its segment was modified after the last
    clean segment's modification time minus delete.retention.ms (spec §4.5)."""
    # 80-byte segments: two 36-byte v1 messages each, and groups of at most two cleaned segments
    log = env.make_log(env.config(segment_bytes=80, delete_retention_ms=1000))
    cleaner = env.make_cleaner(10)
    log.append_as_follower(MemoryRecords.with_records([(b"0", b"v", 0)], magic=1, base_offset=0))
    log.append_as_follower(MemoryRecords.with_records([(b"0", None, 0)], magic=1, base_offset=1))
    log.roll()
    log.append_as_follower(MemoryRecords.with_records([(b"1", b"v", 0)], magic=1, base_offset=2))
    log.roll()
    # first round: no clean section yet, so the horizon is 0 and every segment is newer: the tombstone stays
    end, _ = cleaner.clean(to_clean(log, 0))
    assert end == 3
    assert [(r.offset, r.value) for b in batches_in(log) for r in b.records()] == [(1, None), (2, b"v")]
    assert [s.base_offset for s in log.log_segments()] == [0, 2, 3]

    # the tombstone's segment is old, the last clean segment recent: horizon = recent - 1000
    now = env.time.milliseconds()
    log.log_segments()[0].set_last_modified(now - 5000)
    log.log_segments()[1].set_last_modified(now)
    log.append_as_follower(MemoryRecords.with_records([(b"2", b"v", 0)], magic=1, base_offset=3))
    log.roll()
    cleaner.clean(to_clean(log, 3))
    assert [r.offset for b in batches_in(log) for r in b.records()] == [2, 3]
    assert all(b.magic == 1 for b in batches_in(log))


# -- every magic and codec ----------------------------------------------------------------------------------

FORMATS = [
    (magic, codec)
    for magic in (0, 1, 2)
    for codec in ("none", "gzip", "snappy", "lz4") + (("zstd",) if magic == 2 else ())
]


@pytest.mark.parametrize(("magic", "codec"), FORMATS)
def test_clean_every_magic_and_codec(env: Env, magic: int, codec: str) -> None:
    log = env.make_log(env.config(segment_bytes=1024 * 1024))
    cleaner = env.make_cleaner(INT_MAX)
    first = [(key(k), b"a%d" % k, 1000 + k) for k in range(5)]  # offsets 10..14
    second = [(key(k), b"b%d" % k, 2000 + k) for k in (1, 3)]  # offsets 15, 16
    log.append_as_follower(MemoryRecords.with_records(first, magic=magic, compression=codec, base_offset=10))
    log.append_as_follower(MemoryRecords.with_records(second, magic=magic, compression=codec, base_offset=15))
    log.roll()

    end_offset, stats = cleaner.clean(to_clean(log, 0))
    assert end_offset == 17
    timestamp = (lambda ts: -1) if magic == 0 else (lambda ts: ts)
    expected = [
        (10, b"0", b"a0", timestamp(1000)),
        (12, b"2", b"a2", timestamp(1002)),
        (14, b"4", b"a4", timestamp(1004)),
        (15, b"1", b"b1", timestamp(2001)),
        (16, b"3", b"b3", timestamp(2003)),
    ]
    batches = batches_in(log)
    assert [(r.offset, r.key, r.value, r.timestamp) for b in batches for r in b.records()] == expected
    assert all(b.magic == magic for b in batches)
    assert all(b.compression.kafka_name == codec for b in batches)
    assert all(b.is_valid() for b in batches)
    assert (stats.messages_read, stats.messages_written) == (7, 5)
    if magic == 2:
        # a v2 batch keeps its base offset and its last offset (producers' sequences depend on them)
        assert [(b.base_offset, b.last_offset, b.count) for b in batches] == [(10, 14, 3), (15, 16, 2)]
    elif codec == "none":
        assert [(b.base_offset, b.last_offset) for b in batches] == [(o, o) for o in (10, 12, 14, 15, 16)]
    else:
        # a legacy wrapper is rebuilt around the kept messages, keeping their offsets and the gaps
        assert [(b.base_offset, b.last_offset, b.count) for b in batches] == [(10, 14, 3), (15, 16, 2)]
        if codec in ("gzip", "snappy"):
            raw_inner = batches[0].raw_bytes()
            key_size_at = 12 + 4 + 2 + (8 if magic == 1 else 0)
            value_at = key_size_at + 4 + max(struct.unpack_from(">i", raw_inner, key_size_at)[0], 0)
            size = struct.unpack_from(">i", raw_inner, value_at)[0]
            inner = decompress_legacy(codec, raw_inner[value_at + 4 : value_at + 4 + size])
            inner_offsets, position = [], 0
            while position < len(inner):
                offset, message_size = struct.unpack_from(">qi", inner, position)
                inner_offsets.append(offset)
                position += 12 + message_size
            # v1 inner offsets are relative to the first message, v0 ones absolute
            assert inner_offsets == ([0, 2, 4] if magic == 1 else [10, 12, 14])

    # a second round finds nothing more to remove and leaves the bytes as they are
    before = [b.raw_bytes() for b in batches_in(log)]
    cleaner.clean(to_clean(log, 0))
    assert [b.raw_bytes() for b in batches_in(log)] == before


@pytest.mark.parametrize("timestamp_type", ["CreateTime", "LogAppendTime"])
def test_rebuilt_v2_batch_keeps_its_header_fields(env: Env, timestamp_type: str) -> None:
    log = env.make_log(env.config(segment_bytes=1024 * 1024))
    cleaner = env.make_cleaner(INT_MAX)
    records = [(key(k), b"v%d" % k, 5000 + k, [("h", b"%d" % k)]) for k in (0, 1, 0)]
    log.append_as_follower(
        MemoryRecords.with_records(
            records,
            compression="lz4",
            base_offset=0,
            timestamp_type=timestamp_type,
            log_append_time=9999 if timestamp_type == "LogAppendTime" else None,
            producer_id=7,
            producer_epoch=3,
            base_sequence=11,
            partition_leader_epoch=5,
        )
    )
    log.roll()
    cleaner.clean(to_clean(log, 0))
    (batch,) = batches_in(log)
    assert (batch.base_offset, batch.last_offset, batch.count) == (0, 2, 2)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence, batch.last_sequence) == (
        7,
        3,
        11,
        13,
    )
    assert batch.partition_leader_epoch == 5
    assert str(batch.timestamp_type) == timestamp_type
    assert batch.compression.kafka_name == "lz4"
    assert batch.is_valid()
    expected_ts = [9999, 9999] if timestamp_type == "LogAppendTime" else [5001, 5000]
    assert [(r.offset, r.key, r.value, r.timestamp, r.headers) for r in batch.records()] == [
        (1, b"1", b"v1", expected_ts[0], [("h", b"1")]),
        (2, b"0", b"v0", expected_ts[1], [("h", b"0")]),
    ]
    assert batch.max_timestamp == (9999 if timestamp_type == "LogAppendTime" else 5001)


# -- statistics ---------------------------------------------------------------------------------------------


def stats_with(time: MockTime, **values: Any) -> CleanerStats:
    stats = CleanerStats(time)
    for name, value in values.items():
        setattr(stats, name, value)
    return stats


def test_cleaner_stats_summary(impl: ModuleType) -> None:
    stats = stats_with(
        MockTime(),
        start_time=1000,
        map_complete_time=2500,
        end_time=5000,
        bytes_read=1250 * MB,
        map_bytes_read=3 * MB,
        bytes_written=500 * MB,
        messages_read=1_234_567,
        messages_written=654_321,
        buffer_utilization=0.125,
    )
    assert stats.elapsed_secs() == 4.0
    assert stats.elapsed_index_secs() == 1.5
    assert stats.summary(3, "test-0", 100, 200) == (
        "\n"
        "\tLog cleaner thread 3 cleaned log test-0 (dirty section = [100, 200])\n"
        "\t1,250.0 MB of log processed in 4.0 seconds (312.5 MB/sec).\n"
        "\tIndexed 3.0 MB in 1.5 seconds (2.0 Mb/sec, 37.5% of total time)\n"
        "\tBuffer utilization: 12.5%\n"
        "\tCleaned 1,250.0 MB in 2.5 seconds (500.0 Mb/sec, 62.5% of total time)\n"
        "\tStart size: 1,250.0 MB (1,234,567 messages)\n"
        "\tEnd size: 500.0 MB (654,321 messages)\n"
        "\t60.0% size reduction (47.0% fewer messages)\n"
    )


def test_cleaner_stats_summary_with_no_elapsed_time(impl: ModuleType) -> None:
    # a clean within one millisecond: Java's double division gives Infinity and NaN
    stats = stats_with(
        MockTime(),
        start_time=1000,
        map_complete_time=1000,
        end_time=1000,
        bytes_read=2 * MB,
        map_bytes_read=MB,
        bytes_written=MB,
        messages_read=10,
        messages_written=5,
    )
    assert stats.summary(0, "test-0", 0, 10) == (
        "\n"
        "\tLog cleaner thread 0 cleaned log test-0 (dirty section = [0, 10])\n"
        "\t2.0 MB of log processed in 0.0 seconds (Infinity MB/sec).\n"
        "\tIndexed 1.0 MB in 0.0 seconds (Infinity Mb/sec, NaN% of total time)\n"
        "\tBuffer utilization: 0.0%\n"
        "\tCleaned 2.0 MB in 0.0 seconds (Infinity Mb/sec, NaN% of total time)\n"
        "\tStart size: 2.0 MB (10 messages)\n"
        "\tEnd size: 1.0 MB (5 messages)\n"
        "\t50.0% size reduction (50.0% fewer messages)\n"
    )
    # nothing read at all: 0 / 0 everywhere
    empty = stats_with(MockTime(), start_time=7, map_complete_time=7, end_time=7)
    assert empty.summary(1, "t-2", 5, 5).splitlines() == [
        "",
        "\tLog cleaner thread 1 cleaned log t-2 (dirty section = [5, 5])",
        "\t0.0 MB of log processed in 0.0 seconds (NaN MB/sec).",
        "\tIndexed 0.0 MB in 0.0 seconds (NaN Mb/sec, NaN% of total time)",
        "\tBuffer utilization: 0.0%",
        "\tCleaned 0.0 MB in 0.0 seconds (NaN Mb/sec, NaN% of total time)",
        "\tStart size: 0.0 MB (0 messages)",
        "\tEnd size: 0.0 MB (0 messages)",
        "\tNaN% size reduction (NaN% fewer messages)",
    ]


def test_cleaner_stats_summary_rounds_half_up_as_java(impl: ModuleType) -> None:
    # Java's %.1f rounds the shortest decimal form of the double half up (java.util.Formatter): 1.25 MB
    # prints 1.3 and 6.25 % prints 6.3, where Python's format rounds the binary value half to even (1.2, 6.2)
    stats = stats_with(
        MockTime(),
        start_time=0,
        map_complete_time=500,
        end_time=1000,
        bytes_read=1_310_720,
        map_bytes_read=1_310_720,
        bytes_written=0,
        messages_read=4,
        messages_written=0,
        buffer_utilization=0.0625,
    )
    lines = stats.summary(0, "test-0", 0, 4).splitlines()
    assert lines[2] == "\t1.3 MB of log processed in 1.0 seconds (1.3 MB/sec)."
    assert lines[3] == "\tIndexed 1.3 MB in 0.5 seconds (2.5 Mb/sec, 50.0% of total time)"
    assert lines[4] == "\tBuffer utilization: 6.3%"
    assert lines[6] == "\tStart size: 1.3 MB (4 messages)"


def test_cleaner_stats_counters(impl: ModuleType) -> None:
    time = MockTime(current_time_ms=10_000)
    stats = CleanerStats(time)
    assert stats.start_time == 10_000
    stats.read_messages(3, 300)
    stats.read_messages(2, 50)
    stats.invalid_message()
    stats.recopy_messages(4, 280)
    stats.index_messages_read(5)
    stats.index_bytes_read(350)
    time.sleep(250)
    stats.index_done()
    time.sleep(750)
    stats.all_done()
    assert (stats.messages_read, stats.bytes_read, stats.invalid_messages_read) == (5, 350, 1)
    assert (stats.messages_written, stats.bytes_written) == (4, 280)
    assert (stats.map_messages_read, stats.map_bytes_read) == (5, 350)
    assert (stats.elapsed_index_secs(), stats.elapsed_secs()) == (0.25, 1.0)


# -- transactions -------------------------------------------------------------------------------------------


def test_basic_transaction_aware_cleaning(env: Env) -> None:
    cleaner = env.make_cleaner(INT_MAX)
    log = env.make_log(env.config(segment_bytes=2048))
    producer1, producer2 = TxnProducer(env, log, 1), TxnProducer(env, log, 2)
    producer1([1, 2])
    producer2([2, 3])
    producer1([3, 4])
    abort(env, log, 1)
    commit(env, log, 2)
    producer1([2])
    commit(env, log, 1)
    aborted_transactions = collect_aborted_transactions(log, log.log_start_offset, log.log_end_offset)
    assert [(t.producer_id, t.first_offset, t.last_offset) for t in aborted_transactions] == [(1, 0, 6)]

    log.roll()
    cleaner.clean(to_clean(log, 0))
    assert keys_in_log(log) == [3, 2]
    assert offsets_in_log(log) == [3, 6, 7, 8, 9]
    # (Kafka then finds the aborted transaction in the cleaned .txnindex; kafkalog reads aborted transactions
    # from the batches, and none of this one's is left)


def test_clean_with_transactions_spanning_segments(env: Env) -> None:
    cleaner = env.make_cleaner(INT_MAX)
    log = env.make_log(env.config(segment_bytes=1024))
    producer1, producer2, producer3 = (
        TxnProducer(env, log, 1),
        TxnProducer(env, log, 2),
        TxnProducer(env, log, 3),
    )
    producer1([1, 2])
    producer3([2, 3])
    producer2([3, 4])
    log.roll()
    producer2([5, 6])
    producer3([6, 7])
    producer1([7, 8])
    abort(env, log, 2)
    producer3([8, 9])
    commit(env, log, 3)
    producer1([9, 10])
    abort(env, log, 1)

    # only the records in the first segment are cleaned
    dirty_offset = cleaner.clean(to_clean(log, 0))[0]
    assert keys_in_log(log) == [2, 3, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10]
    log.roll()
    # a couple of extra appends in the new segment, so the producers have sequence numbers there
    producer2([11])
    producer1([12])
    # finally only the keys from producer 3 remain
    cleaner.clean(to_clean(log, dirty_offset))
    assert keys_in_log(log) == [2, 3, 6, 7, 8, 9, 11, 12]


def test_commit_marker_removal(env: Env) -> None:
    cleaner = env.make_cleaner(INT_MAX)
    log = env.make_log(env.config(segment_bytes=256))
    producer = TxnProducer(env, log, 1)
    producer([1])
    producer([2, 3])
    commit(env, log, 1)
    producer([2])
    commit(env, log, 1)
    log.roll()

    # the marker cannot go in this pass: there are still valid records
    dirty_offset = cleaner.do_clean(to_clean(log, 0), LARGE_TIMESTAMP)[0]
    assert keys_in_log(log) == [1, 3, 2]
    assert offsets_in_log(log) == [0, 2, 3, 4, 5]

    producer([1, 3])
    commit(env, log, 1)
    log.roll()
    # the first cleaning keeps the commit marker at offset 3, since records of its transaction remained
    dirty_offset = cleaner.do_clean(to_clean(log, dirty_offset), LARGE_TIMESTAMP)[0]
    assert keys_in_log(log) == [2, 1, 3]
    assert offsets_in_log(log) == [3, 4, 5, 6, 7, 8]
    # again at the same time: the marker is not removed early
    dirty_offset = cleaner.do_clean(to_clean(log, dirty_offset), LARGE_TIMESTAMP)[0]
    assert keys_in_log(log) == [2, 1, 3]
    assert offsets_in_log(log) == [3, 4, 5, 6, 7, 8]
    # at the end of time the marker goes
    dirty_offset = cleaner.do_clean(to_clean(log, dirty_offset), LONG_MAX)[0]
    assert keys_in_log(log) == [2, 1, 3]
    assert offsets_in_log(log) == [4, 5, 6, 7, 8]


def test_deleted_batches_with_no_messages_read(env: Env) -> None:
    cleaner = env.make_cleaner(INT_MAX, max_message_size=100)
    log = env.make_log(env.config(max_message_bytes=100, segment_bytes=1000))
    producer = TxnProducer(env, log, 1)
    producer([1])
    abort(env, log, 1)
    producer([2])
    producer([2])
    commit(env, log, 1)
    log.roll()

    cleaner.do_clean(to_clean(log, 0), LARGE_TIMESTAMP)
    assert keys_in_log(log) == [2]
    assert offsets_in_log(log) == [1, 3, 4]
    # the first pass sets the commit's delete horizon, the second removes it
    run_two_pass_clean(cleaner, to_clean(log, 0), LARGE_TIMESTAMP)
    assert keys_in_log(log) == [2]
    assert offsets_in_log(log) == [3, 4]


def test_commit_marker_retention_with_empty_batch(env: Env) -> None:
    cleaner = env.make_cleaner(INT_MAX)
    log = env.make_log(env.config(segment_bytes=256))
    producer1, producer2 = TxnProducer(env, log, 1), TxnProducer(env, log, 2)
    producer1([2, 3])  # offsets 0, 1
    log.roll()
    producer2([2, 3])  # offsets 2, 3
    commit(env, log, 2)  # offset 4
    log.roll()
    log.append_as_leader(record(2, 2), 0)  # offset 5
    log.append_as_leader(record(3, 3), 0)  # offset 6
    commit(env, log, 1)  # offset 7
    log.roll()

    # first time through the records are removed
    dirty_offset = cleaner.do_clean(to_clean(log, 0), LARGE_TIMESTAMP)[0]
    assert keys_in_log(log) == [2, 3]
    assert offsets_in_log(log) == [4, 5, 6, 7]
    assert last_offsets_per_batch_in_log(log) == [1, 3, 4, 5, 6, 7]

    # the empty batches remain when cleaned again, as they still hold the last sequences
    dirty_offset = cleaner.do_clean(to_clean(log, dirty_offset), LARGE_TIMESTAMP)[0]
    assert keys_in_log(log) == [2, 3]
    assert offsets_in_log(log) == [4, 5, 6, 7]
    assert last_offsets_per_batch_in_log(log) == [1, 3, 4, 5, 6, 7]

    # a new record from producer 2 lets its empty batch go
    producer2([1])  # offset 8
    commit(env, log, 2)  # offset 9
    log.roll()
    dirty_offset = cleaner.do_clean(to_clean(log, dirty_offset), LARGE_TIMESTAMP)[0]
    assert keys_in_log(log) == [2, 3, 1]
    assert offsets_in_log(log) == [4, 5, 6, 7, 8, 9]
    assert last_offsets_per_batch_in_log(log) == [1, 4, 5, 6, 7, 8, 9]

    # the first pass sets the delete horizon of producer 2's first commit, the second removes it
    dirty_offset = run_two_pass_clean(cleaner, to_clean(log, dirty_offset), LARGE_TIMESTAMP)
    assert keys_in_log(log) == [2, 3, 1]
    assert offsets_in_log(log) == [5, 6, 7, 8, 9]
    assert last_offsets_per_batch_in_log(log) == [1, 5, 6, 7, 8, 9]


def test_clean_empty_control_batch(env: Env) -> None:
    cleaner = env.make_cleaner(INT_MAX)
    log = env.make_log(env.config(segment_bytes=256))
    commit(env, log, 1)  # offset 0
    log.append_as_leader(record(2, 2), 0)  # offset 1
    log.append_as_leader(record(3, 3), 0)  # offset 2
    log.roll()

    # the first pass sets the marker's delete horizon; the second removes the marker but keeps its batch,
    # empty, for the producer's epoch
    dirty_offset = run_two_pass_clean(cleaner, to_clean(log, 0), LARGE_TIMESTAMP)
    assert keys_in_log(log) == [2, 3]
    assert offsets_in_log(log) == [1, 2]
    assert last_offsets_per_batch_in_log(log) == [0, 1, 2]

    # the empty control batch is no trouble for a later clean
    dirty_offset = cleaner.do_clean(to_clean(log, dirty_offset), LONG_MAX)[0]
    assert keys_in_log(log) == [2, 3]
    assert offsets_in_log(log) == [1, 2]
    assert last_offsets_per_batch_in_log(log) == [0, 1, 2]


def test_committed_transaction_spanning_segments(env: Env) -> None:
    cleaner = env.make_cleaner(INT_MAX)
    log = env.make_log(env.config(segment_bytes=128))
    producer = TxnProducer(env, log, 1)
    producer([1])
    log.roll()
    commit(env, log, 1)
    log.roll()
    # both the record and the marker remain
    run_two_pass_clean(cleaner, to_clean(log, 0), LARGE_TIMESTAMP)
    assert offsets_in_log(log) == [0, 1]
    assert last_offsets_per_batch_in_log(log) == [0, 1]


def test_aborted_transaction_spanning_segments(env: Env) -> None:
    cleaner = env.make_cleaner(INT_MAX)
    log = env.make_log(env.config(segment_bytes=128))
    producer = TxnProducer(env, log, 1)
    producer([1])
    log.roll()
    abort(env, log, 1)
    log.roll()
    # the batch stays, empty, as the producer's last; the marker stays while a batch of its transaction does
    cleaner.do_clean(to_clean(log, 0), LARGE_TIMESTAMP)
    assert offsets_in_log(log) == [1]
    assert last_offsets_per_batch_in_log(log) == [0, 1]
    # and after a second cleaning
    cleaner.do_clean(to_clean(log, 0), LONG_MAX)
    assert offsets_in_log(log) == [1]
    assert last_offsets_per_batch_in_log(log) == [0, 1]


def test_abort_marker_removal(env: Env) -> None:
    cleaner = env.make_cleaner(INT_MAX)
    log = env.make_log(env.config(segment_bytes=256))
    producer = TxnProducer(env, log, 1)
    producer([1])
    producer([2, 3])
    abort(env, log, 1)
    producer([3])
    commit(env, log, 1)
    log.roll()

    # the aborted records go, the abort marker stays
    dirty_offset = cleaner.do_clean(to_clean(log, 0), LARGE_TIMESTAMP)[0]
    assert keys_in_log(log) == [3]
    assert offsets_in_log(log) == [3, 4, 5]
    # the first pass sets the abort marker's delete horizon, the second removes it
    run_two_pass_clean(cleaner, to_clean(log, dirty_offset), LARGE_TIMESTAMP)
    assert keys_in_log(log) == [3]
    assert offsets_in_log(log) == [4, 5]


def test_empty_batch_removal_with_sequence_reuse(env: Env) -> None:
    # the group coordinator starts every batch at sequence 0: old empty batches and markers must still go
    cleaner = env.make_cleaner(INT_MAX)
    log = env.make_log(env.config(segment_bytes=2048))
    first_transaction = TxnProducer(env, log, 1)
    first_transaction([1])
    commit(env, log, 1)
    second_transaction = TxnProducer(env, log, 1)
    second_transaction([2])
    commit(env, log, 1)
    log.append_as_leader(record(1, 1), 0)
    log.append_as_leader(record(2, 1), 0)
    log.roll()

    # both transactional batches are cleaned; the last stays, empty, for the producer's sequence and epoch
    cleaner.do_clean(to_clean(log, 0), LARGE_TIMESTAMP)
    assert offsets_in_log(log) == [1, 3, 4, 5]
    assert last_offsets_per_batch_in_log(log) == [1, 2, 3, 4, 5]
    # the first pass sets the first marker's delete horizon, the second removes it
    run_two_pass_clean(cleaner, to_clean(log, 0), LARGE_TIMESTAMP)
    assert offsets_in_log(log) == [3, 4, 5]
    assert last_offsets_per_batch_in_log(log) == [2, 3, 4, 5]


def test_abort_marker_retention_with_empty_batch(env: Env) -> None:
    cleaner = env.make_cleaner(INT_MAX)
    log = env.make_log(env.config(segment_bytes=256))
    producer = TxnProducer(env, log, 1)
    producer([2, 3])  # last offset 1
    abort(env, log, 1)  # offset 2
    log.roll()

    def assert_aborted_transaction_indexed() -> None:
        aborted = collect_aborted_transactions(log, 0, 100)
        assert [(t.producer_id, t.first_offset, t.last_offset) for t in aborted] == [(1, 0, 2)]

    assert_aborted_transaction_indexed()
    # first time through the records are removed
    dirty_offset = cleaner.do_clean(to_clean(log, 0), LARGE_TIMESTAMP)[0]
    assert_aborted_transaction_indexed()
    assert keys_in_log(log) == []
    assert offsets_in_log(log) == [2]  # the abort marker is retained
    assert last_offsets_per_batch_in_log(log) == [1, 2]  # and the empty batch

    # the empty batch stays when cleaned again, as it still holds the last sequence
    dirty_offset = run_two_pass_clean(cleaner, to_clean(log, dirty_offset), LARGE_TIMESTAMP)
    assert_aborted_transaction_indexed()
    assert keys_in_log(log) == []
    assert offsets_in_log(log) == [2]
    assert last_offsets_per_batch_in_log(log) == [1, 2]

    # a new last sequence lets the empty batch go
    producer([1])
    log.roll()
    dirty_offset = cleaner.do_clean(to_clean(log, dirty_offset), LARGE_TIMESTAMP)[0]
    # (Kafka still finds the aborted transaction in the cleaned .txnindex here; kafkalog reads it from the
    # batches, and the empty batch that began it is gone)
    assert keys_in_log(log) == [1]
    assert offsets_in_log(log) == [2, 3]  # the marker is not yet gone, as the empty batch was read
    assert last_offsets_per_batch_in_log(log) == [2, 3]  # but the empty batch is not kept

    # the first pass sets the abort marker's delete horizon, the second removes it
    dirty_offset = run_two_pass_clean(cleaner, to_clean(log, dirty_offset), LARGE_TIMESTAMP)
    assert keys_in_log(log) == [1]
    assert offsets_in_log(log) == [3]
    assert last_offsets_per_batch_in_log(log) == [3]
    assert collect_aborted_transactions(log, 0, 100) == []


def test_log_cleaner_retains_last_sequence_even_if_transaction_aborted(env: Env) -> None:
    cleaner = env.make_cleaner(10)
    log = env.make_log(env.config(segment_bytes=1024))
    producer = TxnProducer(env, log, 1)
    producer([1])
    producer([2, 3])
    abort(env, log, 1)
    log.roll()

    cleaner.clean(to_clean(log, 0))
    assert last_offsets_per_batch_in_log(log) == [2, 3]
    assert last_sequences_in_log(log) == {1: 2}
    assert keys_in_log(log) == []
    assert offsets_in_log(log) == [3]

    # a new entry from the producer lets the empty batch go
    producer([1, 5])
    log.roll()
    cleaner.clean(to_clean(log, 0))
    assert last_offsets_per_batch_in_log(log) == [3, 5]
    assert last_sequences_in_log(log) == {1: 4}
    assert keys_in_log(log) == [1, 5]
    assert offsets_in_log(log) == [3, 4, 5]


def test_cleaning_with_keys_conflicting_with_txn_marker_keys(env: Env) -> None:
    cleaner = env.make_cleaner(10)
    log = env.make_log(env.config(segment_bytes=1024))
    leader_epoch = 5
    # one committed transaction
    producer1 = TxnProducer(env, log, 1, leader_epoch=leader_epoch)
    producer1([1])
    commit(env, log, 1)
    # a transaction whose key is the COMMIT marker's key
    records = MemoryRecords.with_records(
        [(ControlRecordType.COMMIT.record_key(), b"foo", env.time.milliseconds())],
        producer_id=2,
        producer_epoch=0,
        base_sequence=0,
        is_transactional=True,
    )
    log.append_as_leader(records, leader_epoch)
    commit(env, log, 2)
    log.roll()
    assert offsets_in_log(log) == [0, 1, 2, 3]

    # the marker is not removed after cleaning
    cleaner.clean(to_clean(log, 0))
    assert last_offsets_per_batch_in_log(log) == [0, 1, 2, 3]
    assert offsets_in_log(log) == [0, 1, 2, 3]


def test_multi_pass_segment_cleaning_with_aborted_transactions(env: Env) -> None:
    """Aborted transactions are handled even when a pass cannot clean a whole segment (the transaction-index
    assertions of Kafka's case are left out, see the module docstring)."""
    delete_retention_ms = 50_000
    offset_map_slots = 4
    cleaner = env.make_cleaner(INT_MAX)
    log = env.make_log(env.config(delete_retention_ms=delete_retention_ms))
    producer1, producer2 = TxnProducer(env, log, 1), TxnProducer(env, log, 2)

    producer1([1, 2])  # [0, 1]
    producer2([2, 3])  # [2, 3]
    producer1([3, 4])  # [4, 5]
    commit(env, log, 1)  # [6, 6]
    commit(env, log, 2)  # [7, 7]
    producer1([2, 3])  # [8, 9]
    abort(env, log, 1)  # [10, 10]
    producer2([4, 5])  # [11, 12]
    producer1([5, 6])  # [13, 14]
    commit(env, log, 1)  # [15, 15]
    abort(env, log, 2)  # [16, 16]
    producer2([6, 7])  # [17, 18]
    commit(env, log, 2)  # [19, 19]
    log.roll()
    assert log.log_end_offset == 20
    aborted = collect_aborted_transactions(log, 0, log.log_end_offset)
    assert [(t.producer_id, t.first_offset, t.last_offset) for t in aborted] == [(1, 8, 10), (2, 11, 16)]

    dirty_offset = 0

    def clean_segments() -> None:
        nonlocal dirty_offset
        offset_map = FakeOffsetMap(offset_map_slots)
        segments = log.log_segments(0, log.active_segment.base_offset)
        stats = CleanerStats(env.time)
        cleaner.build_offset_map(log, dirty_offset, log.active_segment.base_offset, offset_map, stats)
        cleaner.clean_segments(
            log,
            segments,
            offset_map,
            env.time.milliseconds(),
            stats,
            CleanedTransactionMetadata(),
            LONG_MAX,
            log.active_segment.base_offset,
        )
        dirty_offset = offset_map.latest_offset + 1

    # first pass: the data of the aborted transactions goes, their markers stay until the retention passes
    clean_segments()
    assert dirty_offset == 4
    assert batch_base_offsets_in_log(log) == [0, 2, 4, 6, 7, 10, 13, 15, 16, 17, 19]
    assert offsets_in_log(log) == [0, 2, 3, 4, 5, 6, 7, 10, 13, 14, 15, 16, 17, 18, 19]

    # second pass: no data of the aborted transactions is left; the markers still wait for their retention
    clean_segments()
    assert dirty_offset == 14
    assert batch_base_offsets_in_log(log) == [0, 2, 4, 6, 7, 10, 13, 15, 16, 17, 19]
    assert offsets_in_log(log) == [0, 2, 4, 5, 6, 7, 10, 13, 14, 15, 16, 17, 18, 19]

    # last pass, after the retention: the abort markers (offsets 10 and 16) go
    env.time.sleep(delete_retention_ms)
    clean_segments()
    assert dirty_offset == 20
    assert batch_base_offsets_in_log(log) == [0, 2, 4, 6, 7, 13, 15, 17, 19]
    assert offsets_in_log(log) == [0, 2, 4, 5, 6, 7, 13, 15, 17, 18, 19]


# -- the kernels' map against Kafka's fake one, the twins against each other, a whole round --------------


def random_compacted_log(env: Env, directory: Path, seed: int) -> Log:
    """A log of 400 records over 40 keys in batches of every codec, with tombstones, in 2 KiB segments."""
    rng = random.Random(seed)
    log = env.make_log(env.config(segment_bytes=2048), directory)
    while log.log_end_offset < 400:
        n = rng.randrange(1, 8)
        records = [
            (
                key(rng.randrange(40)),
                None if rng.random() < 0.1 else rng.randbytes(rng.randrange(1, 12)),
                1000 + i,
            )
            for i in range(n)
        ]
        codec = rng.choice(["none", "none", "gzip", "lz4", "zstd", "snappy"])
        log.append_as_leader(MemoryRecords.with_records(records, compression=codec), 0)
    log.roll()
    return log


def latest_per_key(log: Log) -> dict[bytes, tuple[int, bytes | None]]:
    latest: dict[bytes, tuple[int, bytes | None]] = {}
    for batch in batches_in(log):
        for r in batch.records():
            latest[r.key] = (r.offset, r.value)
    return latest


def test_skimpy_map_cleans_as_the_fake_map(env: Env) -> None:
    fake_log = random_compacted_log(env, env.root / "fake-0", 7)
    skimpy_log = random_compacted_log(env, env.root / "skimpy-0", 7)
    latest = latest_per_key(fake_log)
    fake = env.make_cleaner(INT_MAX)
    skimpy = env.make_cleaner(0, offset_map=SkimpyOffsetMap(1000 * 24))
    fake_end, fake_stats = fake.clean(to_clean(fake_log, 0))
    skimpy_end, skimpy_stats = skimpy.clean(to_clean(skimpy_log, 0))
    assert fake_end == skimpy_end == fake_log.active_segment.base_offset
    assert [b.raw_bytes() for b in batches_in(skimpy_log)] == [b.raw_bytes() for b in batches_in(fake_log)]
    for name in ("bytes_read", "bytes_written", "messages_read", "messages_written", "map_messages_read"):
        assert getattr(skimpy_stats, name) == getattr(fake_stats, name), name
    # what is left is the latest record of every key, tombstones included (inside their horizon)
    kept = {r.key: (r.offset, r.value) for b in batches_in(skimpy_log) for r in b.records()}
    assert kept == latest
    assert sorted(r.offset for b in batches_in(skimpy_log) for r in b.records()) == sorted(
        offset for offset, _ in latest.values()
    )


def test_twins_clean_to_identical_bytes(scratch: Path) -> None:
    if "cython" not in _impl.both():
        pytest.skip("kafkalog._core is not built")
    results = {}
    for name in ("python", "cython"):
        with _impl.using(name):
            env = Env(scratch / name)
            env.time = MockTime(current_time_ms=1_600_000_000_000, current_high_res_time_ns=0)
            try:
                log = random_compacted_log(env, env.dir, 11)
                cleaner = env.make_cleaner(0, offset_map=SkimpyOffsetMap(25 * 24))  # a partial round
                end, stats = cleaner.clean(to_clean(log, 0))
                end2, _ = cleaner.clean(to_clean(log, end))
                results[name] = (end, end2, stats.messages_written, [b.raw_bytes() for b in batches_in(log)])
            finally:
                env.close()
    assert results["python"] == results["cython"]
    assert results["python"][0] < results["python"][1]


def test_log_cleaner_run_once_logs_kafka_summary(env: Env, caplog: pytest.LogCaptureFixture) -> None:
    log = env.make_log(env.config(segment_bytes=1024))
    for i in range(40):
        log.append_as_leader(record(i % 4, i), 0)
    log.roll()
    assert log.topic_partition == TP
    log_cleaner = LogCleaner(CleanerConfig.from_enable(True), [env.root], {TP: log}, time=env.time)
    with caplog.at_level(logging.INFO, logger="kafkalog.cleaner"):
        all_stats = log_cleaner.run_once()
    assert len(all_stats) == 1
    (stats,) = all_stats
    assert keys_in_log(log) == [0, 1, 2, 3]
    assert offsets_in_log(log) == [36, 37, 38, 39]
    assert (stats.messages_read, stats.messages_written) == (40, 4)
    assert log_cleaner.cleaner_manager.all_cleaner_checkpoints() == {TP: 40}
    summary = stats.summary(0, "test-0", 0, 40)
    assert summary.startswith("\n\tLog cleaner thread 0 cleaned log test-0 (dirty section = [0, 40])\n")
    assert "[kafka-log-cleaner-thread-0]: " + summary in caplog.messages


def test_max_clean_time_secs(env: Env) -> None:
    """The gauges over the cleaner threads (max-buffer-utilization-percent, max-clean-time-secs,
    max-compaction-delay-secs) are 0 when there is no thread.  Kafka reads them through its metrics registry;
    kafkalog's are properties of the LogCleaner."""
    log_dir = env.root / "data"
    log_dir.mkdir()
    log_cleaner = LogCleaner(CleanerConfig.from_enable(True), [log_dir], {}, time=env.time)
    try:
        assert log_cleaner.cleaner_count == 0
        assert log_cleaner.max_buffer_utilization_percent == 0
        assert log_cleaner.max_clean_time_secs == 0
        assert log_cleaner.max_compaction_delay_secs == 0
    finally:
        log_cleaner.shutdown()


def test_reconfigure_log_cleaner_io_max_bytes_per_second(env: Env) -> None:
    """The throttler starts from ``log.cleaner.io.max.bytes.per.second`` and takes the new value when the
    cleaner is reconfigured.  Kafka's broker configs are here a broker's properties
    (``CleanerConfig.from_props``, Kafka's ``LogCleaner.cleanerConfig(KafkaConfig)``)."""
    log_dir = env.root / "data"
    log_dir.mkdir()
    old_kafka_props = {"broker.id": "1", "log.dirs": str(log_dir), "log.cleaner.io.max.bytes.per.second": "10000000"}

    class NoThreadsLogCleaner(LogCleaner):
        """``reconfigure`` stops and starts the threads: as in Kafka's test, they do nothing here, so no thread is
        left behind."""

        def startup(self) -> None:
            pass

        def shutdown(self) -> None:
            pass

    log_cleaner = NoThreadsLogCleaner(CleanerConfig.from_props(old_kafka_props), [log_dir], {}, time=env.time)
    try:
        assert log_cleaner.throttler.desired_rate_per_sec == 10000000, (
            "Throttler.desired_rate_per_sec should be initialized from the initial "
            "log.cleaner.io.max.bytes.per.second config.")
        new_kafka_props = {**old_kafka_props, "log.cleaner.io.max.bytes.per.second": "20000000"}
        log_cleaner.reconfigure(old_kafka_props, new_kafka_props)
        assert log_cleaner.throttler.desired_rate_per_sec == 20000000, (
            "Throttler.desired_rate_per_sec should be updated with the new log.cleaner.io.max.bytes.per.second "
            "config.")
    finally:
        log_cleaner.shutdown()


# -- offset overflow ----------------------------------------------------------------------------------------


def test_segment_with_offset_overflow(env: Env) -> None:
    cleaner = env.make_cleaner(INT_MAX)
    config = env.config(index_interval_bytes=1, file_delete_delay_ms=1000)
    initialize_log_dir_with_overflowed_segment(env.dir)
    log = env.make_log(config, recovery_point=LONG_MAX)
    segment_with_overflow = first_overflow_segment(log)
    assert segment_with_overflow is not None, (
        "Failed to create log with a segment which has overflowed offsets"
    )

    num_segments_initial = log.number_of_segments
    all_keys = keys_in_log(log)
    expected_keys_after_cleaning = []
    # pretend we want to clean every alternate key
    offset_map = FakeOffsetMap(INT_MAX)
    for k in range(1, len(all_keys), 2):
        expected_keys_after_cleaning.append(all_keys[k - 1])
        offset_map.put(key(all_keys[k]), LONG_MAX)

    # cleaning the segment with overflow splits it, and the cleaning itself aborts
    with pytest.raises(LogCleaningAbortedError):
        cleaner.clean_segments(
            log,
            [segment_with_overflow],
            offset_map,
            0,
            CleanerStats(env.time),
            CleanedTransactionMetadata(),
            -1,
            segment_with_overflow.read_next_offset(),
        )
    assert log.number_of_segments == num_segments_initial + 1
    assert keys_in_log(log) == all_keys
    assert first_overflow_segment(log) is None
    assert files_with_suffix(env.dir, ".cleaned") == []

    # now each segment can be cleaned
    for segment in log.log_segments():
        cleaner.clean_segments(
            log,
            [segment],
            offset_map,
            0,
            CleanerStats(env.time),
            CleanedTransactionMetadata(),
            -1,
            segment.read_next_offset(),
        )
    assert keys_in_log(log) == expected_keys_after_cleaning
    assert first_overflow_segment(log) is None


# -- batches of many records ------------------------------------------------------------------------------


@pytest.mark.parametrize("map_kind", ["fake", "skimpy"])
def test_batches_read_in_pieces_clean_as_whole_ones(env: Env, map_kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch of more records than one decode call takes (``CHUNK_RECORDS``) is read in pieces by both passes,
    so the cleaner never holds all of its records: the cleaned log is the same, byte for byte, as when every
    batch is read whole.  Keys repeat (most records go), some are tombstones, some have headers, one batch is
    transactional and legacy wrappers are there too, so batches are kept whole, rebuilt and emptied."""
    rng = random.Random()

    def batch(magic: int, codec: str, n: int) -> list[Any]:
        out: list[Any] = []
        for i in range(n):
            value = None if rng.random() < 0.1 else b"v%d" % rng.randrange(1000)
            headers = [("h", b"x")] if magic == 2 and i % 7 == 0 else None
            out.append((key(rng.randrange(60)), value, 1_000 + i, headers) if headers else
                       (key(rng.randrange(60)), value, 1_000 + i))
        return out

    def cleaned(name: str) -> list[bytes]:
        rng.seed(15)
        log = env.make_log(env.config(segment_bytes=MB, max_message_bytes=MB), directory=env.root / f"{name}-0")
        offset = 0
        for magic, codec, n in [(2, "none", 700), (2, "gzip", 900), (1, "gzip", 300), (2, "zstd", 500),
                                (0, "none", 3), (2, "none", 40)]:
            data = MemoryRecords.with_records(batch(magic, codec, n), magic=magic, compression=codec,
                                              base_offset=offset)
            log.append_as_follower(data)
            offset += n
        log.append_as_follower(MemoryRecords.with_records(batch(2, "gzip", 200), compression="gzip", base_offset=offset,
                                                          producer_id=5, producer_epoch=0, base_sequence=0,
                                                          is_transactional=True))
        offset += 200
        log.roll()
        log.append_as_follower(MemoryRecords.with_records([(b"last", b"v")], base_offset=offset))
        offset_map: OffsetMap = FakeOffsetMap(1000) if map_kind == "fake" else SkimpyOffsetMap(1000 * 24)
        cleaner = env.make_cleaner(INT_MAX, max_message_size=MB, offset_map=offset_map)
        cleaner.clean(LogToClean(log.topic_partition, log, 0, log.active_segment.base_offset))
        return [segment.log.read_bytes() for segment in log.log_segments()]

    whole = cleaned("whole")
    monkeypatch.setattr(batch_module, "CHUNK_RECORDS", 64)
    assert cleaned("pieces") == whole
    assert len(whole[0]) < 30_000  # most records went

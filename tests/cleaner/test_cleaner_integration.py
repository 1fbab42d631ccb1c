"""The fully integrated log cleaner: a LogCleaner with its threads over real logs, as Kafka's cleaner integration
tests run it.

Ports, of Kafka 3.8.0, ``core/src/test/scala/unit/kafka/log/AbstractLogCleanerIntegrationTest.scala`` (the
harness: :class:`Harness`), ``LogCleanerIntegrationTest.scala``, ``LogCleanerLagIntegrationTest.scala`` and
``LogCleanerParameterizedIntegrationTest.scala``; and of 0.10.1.1 ``LogCleanerIntegrationTest.scala`` and
``LogCleanerLagIntegrationTest.scala``, the older forms of the same tests, run here as the ``0.10.1.1``
parameters of the 3.8.0 ports (their own harness values: 256-byte segments, records of message format v1, the
0.10.1 ``CleanerConfig`` defaults).

The logs are made with :class:`~kafkalog.log.unified_log.Log` under a :class:`~kafkalog.scheduler.MockTime` and handed
to a
:class:`~kafkalog.cleaner.log_cleaner.LogCleaner` in a ``{TopicPartition: Log}`` dict (Kafka's ``Pool``); the cleaner
threads run for real, and the tests wait for them with ``await_cleaned``, as Kafka's do.  The cases run once per
codec (Kafka's parameters: every ``CompressionType`` of the tag; 3.8.0 leaves zstd out where the records are of
message format v0 or v1) and once per kernel twin.

What differs from Kafka's numbers, to keep the tests fast (an append costs about half a millisecond here, every
case runs per codec and per twin, and a cleaner thread with nothing to do sleeps its backoff, in real time):

* the blocks of 100 keys are of :data:`KEYS` (50), still many segments each, but in testCleanerWithMessageFormatV0,
  whose final check (the log smaller than the first block was) needs Kafka's numbers;
* the backoff of Kafka's default (15 s) is :data:`BACKOFF_MS` (the tests that append again after a first cleaning
  would otherwise wait out a whole backoff); the lag tests' 200 ms is :data:`LAG_BACKOFF_MS`, and their real-time
  wait of five backoffs ("give cleaning thread a chance to not clean") shrinks with it;
* in the 0.10.1.1 forms, a partition is dropped from the cleaner checkpoint with ``update_checkpoints(dir,
  partition_to_remove=tp)``, as 3.8.0 does: kafkalog keeps the checkpoints of partitions whose directory is still
  there (see ``LogCleanerManager.update_checkpoints``), where 0.10.1 kept only those of the logs it was given;
  and the first log of testCleansCombinedCompactAndDeleteTopic is closed before the same directory is opened
  again, as 3.8.0 does (0.10.1.1 opened it a second time while it was open).

The gauges Kafka reads through its metrics registry (uncleanable-partitions-count, uncleanable-bytes,
DeadThreadCount) are kafkalog's methods and properties of the same names (``uncleanable_partitions_count(dir)``,
``uncleanable_bytes(dir)``, ``dead_thread_count``).  testIsThreadFailed stops the threads with an unexpected
error raised in their loop, where Kafka interrupts them (Python threads cannot be interrupted).
"""

from __future__ import annotations

import dataclasses
import time as wall_time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from kafkalog import MemoryRecords
from kafkalog.checkpoint import OffsetCheckpoint
from kafkalog.cleaner import LogCleaner
from kafkalog.cleaner.config import CleanerConfig
from kafkalog.cleaner.manager import calculate_cleanable_bytes
from kafkalog.config.log_config import LogConfig
from kafkalog.log import Log
from kafkalog.scheduler import MockTime
from kafkalog.topic import TopicPartition
from tests.support.log_test_utils import singleton

LONG_MAX = 2**63 - 1
DOUBLE_MAX = 1.7976931348623157e308
TOPIC_PARTITIONS = [TopicPartition("log", 0), TopicPartition("log", 1), TopicPartition("log", 2)]
TP0 = TOPIC_PARTITIONS[0]

#: The keys of the blocks Kafka writes with 100 (each record appended alone, three times over), but in
#: testCleanerWithMessageFormatV0.
KEYS = 50
#: The backoff where Kafka's tests keep the default 15 s.
BACKOFF_MS = 50
#: The lag tests' backoff (Kafka: 200 ms).
LAG_BACKOFF_MS = 20

#: Kafka 3.8.0's ``CompressionType.values``; 0.10.1.1 had no zstd.
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
CODECS_0_10 = ("none", "gzip", "snappy", "lz4")
#: (tag, codec) for a test ported from both tags, each with its own codecs.
BOTH_TAGS = [("3.8.0", c) for c in CODECS] + [("0.10.1.1", c) for c in CODECS_0_10]
#: The same where 3.8.0 leaves zstd out (message formats v0 and v1 cannot carry it: ``ExcludeZstd``).
BOTH_TAGS_NO_ZSTD = [("3.8.0", c) for c in CODECS_0_10] + [("0.10.1.1", c) for c in CODECS_0_10]

#: Kafka's ``IBP_0_9_0``, ``IBP_0_10_0_IV1``, ``IBP_0_11_0_IV0`` and 0.10.1's current message format.
FORMAT_0_9_0, FORMAT_0_10_0, FORMAT_0_10_1, FORMAT_0_11_0 = "0.9.0", "0.10.0-IV1", "0.10.1-IV2", "0.11.0-IV0"


def java_random_alphanumeric(seed: int, length: int) -> str:
    """Scala's ``new Random(seed).alphanumeric.take(length)``: characters of ``0-9A-Za-z`` chosen by
    ``java.util.Random.nextInt(62)``, so the value is Kafka's own."""
    chars = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
    mask = (1 << 48) - 1
    state = (seed ^ 0x5DEECE66D) & mask

    def next31() -> int:
        nonlocal state
        state = (state * 0x5DEECE66D + 0xB) & mask
        return state >> 17

    out = []
    bound = len(chars)
    while len(out) < length:
        bits = next31()
        value = bits % bound
        if bits - value + (bound - 1) >= 2**31:  # Java's int overflow: draw again
            continue
        out.append(chars[value])
    return "".join(out)


def wait_until(condition: Callable[[], bool], message: str, wait_ms: int = 15000) -> None:
    """Kafka's ``TestUtils.waitUntilTrue``."""
    deadline = wall_time.monotonic() + wait_ms / 1000.0
    while not condition():
        if wall_time.monotonic() > deadline:
            pytest.fail(message)
        wall_time.sleep(0.01)


Appended = tuple[int, str, int]


class Harness:
    """Kafka's ``AbstractLogCleanerIntegrationTest``: a log dir, a MockTime, the logs made and the cleaner, torn
    down after the test.  ``tag`` picks the harness values: 3.8.0's, or 0.10.1.1's (256-byte segments, message
    format v1, the 0.10.1 ``CleanerConfig`` defaults)."""

    def __init__(self, root: Path, time: MockTime, tag: str = "3.8.0") -> None:
        self.log_dir = root
        self.time = time
        self.tag = tag
        self.cleaner: LogCleaner | None = None
        self.logs: list[Log] = []
        self.counter = 0
        self.default_segment_size = 2048 if tag == "3.8.0" else 256
        #: The magic of the records the tests write by default (Kafka: ``RecordBatch.CURRENT_MAGIC_VALUE``, and
        #: 0.10.1's ``Message.CurrentMagicValue``).
        self.magic = 2 if tag == "3.8.0" else 1

    def teardown(self) -> None:
        if self.cleaner is not None:
            self.cleaner.shutdown()
        for log in self.logs:
            log.close()
        self.time.scheduler.shutdown()

    def log_config_properties(self, property_overrides: dict[str, Any] | None = None, *, max_message_size: int,
                              min_cleanable_dirty_ratio: float = 0.0, min_compaction_lag_ms: int = 0,
                              delete_delay: int = 1000, segment_size: int | None = None,
                              max_compaction_lag_ms: int = LONG_MAX) -> dict[str, Any]:
        """Kafka: ``logConfigProperties``."""
        props: dict[str, Any] = {
            "max.message.bytes": max_message_size,
            "segment.bytes": self.default_segment_size if segment_size is None else segment_size,
            "segment.index.bytes": 100 * 1024,
            "file.delete.delay.ms": delete_delay,
            "cleanup.policy": "compact",
            "min.cleanable.dirty.ratio": min_cleanable_dirty_ratio,
            "min.compaction.lag.ms": min_compaction_lag_ms,
            "max.compaction.lag.ms": max_compaction_lag_ms,
        }
        if self.tag != "3.8.0":
            props["message.format.version"] = FORMAT_0_10_1
        props.update(property_overrides or {})
        return props

    def make_cleaner(self, partitions: Iterable[TopicPartition], *, min_cleanable_dirty_ratio: float = 0.0,
                     num_threads: int = 1, backoff_ms: int = BACKOFF_MS, max_message_size: int = 128,
                     min_compaction_lag_ms: int = 0, delete_delay: int = 1000, segment_size: int | None = None,
                     max_compaction_lag_ms: int = LONG_MAX, cleaner_io_buffer_size: int | None = None,
                     property_overrides: dict[str, Any] | None = None, log_props: dict[str, Any] | None = None,
                     cleaner_config: CleanerConfig | None = None) -> LogCleaner:
        """Kafka: ``makeCleaner``: a log per partition in ``<log dir>/<topic>-<partition>`` and a cleaner of them.
        ``log_props`` and ``cleaner_config``, when given, replace the harness's log and cleaner configurations
        (for a test whose own ``makeCleaner`` differs)."""
        logs: dict[TopicPartition, Log] = {}
        for partition in partitions:
            directory = self.log_dir / str(partition)
            directory.mkdir(parents=True, exist_ok=True)
            config = LogConfig(log_props if log_props is not None else self.log_config_properties(
                property_overrides, max_message_size=max_message_size,
                min_cleanable_dirty_ratio=min_cleanable_dirty_ratio, min_compaction_lag_ms=min_compaction_lag_ms,
                delete_delay=delete_delay, segment_size=segment_size, max_compaction_lag_ms=max_compaction_lag_ms))
            log = Log(directory, config, log_start_offset=0, recovery_point=0, scheduler=self.time.scheduler,
                      time=self.time)
            logs[partition] = log
            self.logs.append(log)
        if cleaner_config is None:
            cleaner_config = CleanerConfig(
                num_threads, 4 * 1024 * 1024, 0.9,
                max_message_size // 2 if cleaner_io_buffer_size is None else cleaner_io_buffer_size,
                max_message_size, DOUBLE_MAX, backoff_ms, True)
        self.cleaner = LogCleaner(cleaner_config, [self.log_dir], logs, time=self.time)
        return self.cleaner

    @property
    def logs_of_cleaner(self) -> dict[TopicPartition, Log]:
        assert self.cleaner is not None
        logs: dict[TopicPartition, Log] = self.cleaner.logs
        return logs

    def write_dups(self, num_keys: int, num_dups: int, log: Log, codec: str, start_key: int = 0,
                   magic: int | None = None, timestamp: int = -1) -> list[Appended]:
        """Kafka: ``writeDups``: ``num_dups`` rounds over the keys, each record alone, its value the counter; the
        high watermark follows each append (3.8.0: "move LSO forward to increase compaction bound").  Returns
        ``(key, value, offset)`` of each."""
        out = []
        for _ in range(num_dups):
            for key in range(start_key, start_key + num_keys):
                value = str(self.counter)
                info = log.append_as_leader(singleton(value.encode(), str(key).encode(), timestamp,
                                                      magic=self.magic if magic is None else magic,
                                                      compression=codec), 0)
                log.high_watermark = log.log_end_offset
                self.counter += 1
                assert info.first_offset is not None
                out.append((key, value, info.first_offset))
        return out

    def write_dups_single_message_set(self, num_keys: int, num_dups: int, log: Log, codec: str, magic: int,
                                      start_key: int = 0) -> list[Appended]:
        """Kafka: ``writeDupsSingleMessageSet``: the same, as one append of all the records (with a codec, one
        wrapper message holding them all)."""
        kvs = []
        for _ in range(num_dups):
            for key in range(start_key, start_key + num_keys):
                kvs.append((key, str(self.counter)))
                self.counter += 1
        records = MemoryRecords.with_records([(str(k).encode(), v.encode()) for k, v in kvs], magic=magic,
                                             compression=codec)
        info = log.append_as_leader(records, 0)
        log.high_watermark = log.log_end_offset
        assert info.first_offset is not None
        offsets = range(info.first_offset, info.last_offset + 1)
        return [(k, v, o) for (k, v), o in zip(kvs, offsets, strict=True)]

    def create_large_single_message_set(self, key: int, magic: int, codec: str) -> tuple[str, MemoryRecords]:
        """Kafka: ``createLargeSingleMessageSet``: one record whose value is 128 alphanumeric characters."""
        value = java_random_alphanumeric(0, 128)
        return value, singleton(value.encode(), str(key).encode(), magic=magic, compression=codec)

    def close_log(self, log: Log) -> None:
        """Kafka: ``closeLog``."""
        log.close()
        self.logs.remove(log)

    def check_last_cleaned(self, topic_partition: TopicPartition, first_dirty: int) -> None:
        """Kafka: ``checkLastCleaned``: wait until the cleaner has processed up to ``first_dirty``."""
        assert self.cleaner is not None
        self.cleaner.await_cleaned(topic_partition, first_dirty)
        last_cleaned = self.cleaner.cleaner_manager.all_cleaner_checkpoints()[topic_partition]
        assert last_cleaned >= first_dirty, \
            f"log cleaner should have processed up to offset {first_dirty}, but lastCleaned={last_cleaned}"

    def check_log_after_appending_dups(self, log: Log, start_size: int, appends: list[Appended]) -> None:
        """Kafka: ``checkLogAfterAppendingDups``: every key's last value (and its offset) is still there, and the
        log is smaller than it was."""
        read = read_from_log(log)
        assert to_map(appends) == to_map(read), "Contents of the map shouldn't change"
        assert start_size > log.size


def read_from_log(log: Log) -> list[Appended]:
    """Kafka: ``readFromLog``: ``(key, value, offset)`` of every record, deep."""
    return [(int(r.key), r.value.decode(), r.offset)
            for segment in log.log_segments() for r in segment.log.records()]


def read_int_pairs(log: Log) -> list[tuple[int, int]]:
    """The lag tests' ``readFromLog``: ``(key, value)`` of every record, both numbers."""
    return [(int(r.key), int(r.value)) for segment in log.log_segments() for r in segment.log.records()]


def to_map(messages: Iterable[Appended]) -> dict[int, tuple[str, int]]:
    """Kafka: ``toMap``: the last value and offset of each key."""
    return {key: (value, offset) for key, value, offset in messages}


def compacted_size(log: Log) -> int:
    return sum(segment.size() for segment in log.log_segments())


@pytest.fixture
def harness_factory(scratch: Path, impl: ModuleType) -> Iterator[Callable[..., Harness]]:
    made: list[Harness] = []

    def make(time: MockTime | None = None, tag: str = "3.8.0") -> Harness:
        harness = Harness(scratch / f"kafka-{len(made)}", time if time is not None else MockTime(), tag)
        harness.log_dir.mkdir(parents=True)
        made.append(harness)
        return harness

    yield make
    for harness in made:
        harness.teardown()


# -- LogCleanerParameterizedIntegrationTest (3.8.0) and LogCleanerIntegrationTest (0.10.1.1) --------------------


@pytest.mark.parametrize(("tag", "codec"), BOTH_TAGS)
def test_cleans_dups_and_a_large_message(harness_factory: Callable[..., Harness], tag: str, codec: str) -> None:
    """LogCleanerParameterizedIntegrationTest.cleanerTest (3.8.0), LogCleanerIntegrationTest.cleanerTest
    (0.10.1.1): the cleaner compacts three records of each of :data:`KEYS` keys (Kafka: 100), then of a message
    as large as the largest allowed and of :data:`KEYS` more keys three times, keeping each key's last value at
    its offset; a partition removed from the cleaner leaves its checkpoint file."""
    h = harness_factory(tag=tag)
    large_message_key = 20
    large_message_value, large_message_set = h.create_large_single_message_set(large_message_key, h.magic, codec)
    max_message_size = large_message_set.size_in_bytes()

    cleaner = h.make_cleaner(TOPIC_PARTITIONS, max_message_size=max_message_size)
    log = h.logs_of_cleaner[TP0]

    appends = h.write_dups(KEYS, 3, log, codec)
    start_size = log.size
    cleaner.startup()

    first_dirty = log.active_segment.base_offset
    h.check_last_cleaned(TP0, first_dirty)
    compacted = compacted_size(log)
    assert start_size > compacted, f"log should have been compacted: startSize={start_size} compactedSize={compacted}"

    h.check_log_after_appending_dups(log, start_size, appends)

    append_info = log.append_as_leader(large_message_set, 0)
    log.high_watermark = log.log_end_offset
    assert append_info.first_offset is not None
    large_message_offset = append_info.first_offset

    dups = h.write_dups(KEYS, 3, log, codec, start_key=large_message_key + 1)
    appends2 = [*appends, (large_message_key, large_message_value, large_message_offset), *dups]
    first_dirty2 = log.active_segment.base_offset
    h.check_last_cleaned(TP0, first_dirty2)

    h.check_log_after_appending_dups(log, start_size, appends2)

    # simulate deleting a partition, by removing it from logs; force a checkpoint and make sure it is gone
    del cleaner.logs[TP0]
    cleaner.update_checkpoints(h.log_dir, partition_to_remove=TP0)
    checkpoints = OffsetCheckpoint(h.log_dir / cleaner.cleaner_manager.offset_checkpoint_file).read()
    assert TP0 not in checkpoints


@pytest.mark.parametrize(("tag", "codec"), BOTH_TAGS)
def test_cleans_combined_compact_and_delete_topic(harness_factory: Callable[..., Harness], tag: str,
                                                  codec: str) -> None:
    """testCleansCombinedCompactAndDeleteTopic (3.8.0 LogCleanerParameterizedIntegrationTest, 0.10.1.1
    LogCleanerIntegrationTest): a ``compact,delete`` log of :data:`KEYS` keys (Kafka: 100) is compacted, then its
    expired segments are deleted by the cleaner thread's retention, and a new cleaner over the same directory
    compacts it again."""
    h = harness_factory(tag=tag)
    retention_ms = 100000
    log_props = {"retention.ms": retention_ms, "cleanup.policy": "compact,delete"}

    def run_cleaner_and_check_compacted(num_keys: int) -> tuple[Log, list[Appended]]:
        cleaner = h.make_cleaner(TOPIC_PARTITIONS[:1], property_overrides=log_props, backoff_ms=100)
        log = h.logs_of_cleaner[TP0]
        messages = h.write_dups(num_keys, 3, log, codec)
        start_size = log.size
        log.high_watermark = log.log_end_offset
        first_dirty = log.active_segment.base_offset
        cleaner.startup()
        # should compact the log
        h.check_last_cleaned(TP0, first_dirty)
        compacted = compacted_size(log)
        assert start_size > compacted, \
            f"log should have been compacted: startSize={start_size} compactedSize={compacted}"
        return log, messages

    log, _ = run_cleaner_and_check_compacted(KEYS)

    # set the last modified time to an old value to force deletion of old segments
    end_offset = log.log_end_offset
    for segment in log.log_segments():
        segment.set_last_modified(h.time.milliseconds() - 2 * retention_ms)
    if tag == "3.8.0":
        wait_until(lambda: log.log_start_offset == end_offset and log.number_of_segments == 1,
                   "Timed out waiting for deletion of old segments")
    else:
        wait_until(lambda: log.number_of_segments == 1, "There should only be 1 segment remaining", 10000)
        assert log.number_of_segments == 1

    assert h.cleaner is not None
    h.cleaner.shutdown()
    h.close_log(log)

    # run the cleaner again to make sure there are no issues post deletion
    log2, messages = run_cleaner_and_check_compacted(20)
    read = read_from_log(log2)
    assert to_map(messages) == to_map(read), "Contents of the map shouldn't change"


@pytest.mark.parametrize(("tag", "codec"), BOTH_TAGS_NO_ZSTD)
def test_cleaner_with_message_format_v0(harness_factory: Callable[..., Harness], tag: str, codec: str) -> None:
    """testCleanerWithMessageFormatV0 (3.8.0 LogCleanerParameterizedIntegrationTest, 0.10.1.1
    LogCleanerIntegrationTest): a log of message format v0 is compacted, then records of v0, a large message, v1
    records (and in 3.8.0 v2 records) under a newer format are added and the mixed log compacted again."""
    h = harness_factory(tag=tag)
    large_message_key = 20
    large_message_value, large_message_set = h.create_large_single_message_set(large_message_key, 0, codec)
    # The broker gives a v0 compressed set absolute inner offsets, which may make it larger than the client's; a
    # few bytes cover that and stay below the cost of a conversion to v1 (3.8.0 allows 6, 0.10.1.1 5).
    max_message_size = large_message_set.size_in_bytes() + (0 if codec == "none" else 6 if tag == "3.8.0" else 5)

    cleaner = h.make_cleaner(TOPIC_PARTITIONS, max_message_size=max_message_size)
    log = h.logs_of_cleaner[TP0]
    props = h.log_config_properties(max_message_size=max_message_size)
    props["message.format.version"] = FORMAT_0_9_0
    log.config = LogConfig(props)

    appends = h.write_dups(100, 3, log, codec, magic=0)
    start_size = log.size
    cleaner.startup()

    first_dirty = log.active_segment.base_offset
    h.check_last_cleaned(TP0, first_dirty)
    compacted = compacted_size(log)
    assert start_size > compacted, f"log should have been compacted: startSize={start_size} compactedSize={compacted}"

    h.check_log_after_appending_dups(log, start_size, appends)

    dups_v0 = h.write_dups(40, 3, log, codec, magic=0)
    append_info = log.append_as_leader(large_message_set, 0)
    log.high_watermark = log.log_end_offset
    assert append_info.first_offset is not None
    large_message_offset = append_info.first_offset

    # also add some messages with version 1 (and 2) to check that mixed format versions are handled
    props["message.format.version"] = FORMAT_0_11_0 if tag == "3.8.0" else FORMAT_0_10_0
    log.config = LogConfig(props)
    dups_v1 = h.write_dups(40, 3, log, codec, start_key=30, magic=1)
    dups_v2 = h.write_dups(5, 3, log, codec, start_key=15, magic=2) if tag == "3.8.0" else []
    appends2 = [*appends, *dups_v0, (large_message_key, large_message_value, large_message_offset), *dups_v1,
                *dups_v2]
    first_dirty2 = log.active_segment.base_offset
    h.check_last_cleaned(TP0, first_dirty2)

    h.check_log_after_appending_dups(log, start_size, appends2)


@pytest.mark.parametrize(("tag", "codec"), BOTH_TAGS_NO_ZSTD)
def test_cleaning_nested_messages_with_v0_and_v1(harness_factory: Callable[..., Harness], tag: str,
                                                 codec: str) -> None:
    """testCleaningNestedMessagesWithV0AndV1 (3.8.0 LogCleanerParameterizedIntegrationTest),
    LogCleanerIntegrationTest.testCleaningNestedMessagesWithMultipleVersions (0.10.1.1): sets of several records
    (with a codec, one wrapper message holding them all) of formats v0 then v1 are compacted."""
    h = harness_factory(tag=tag)
    max_message_size = 192
    cleaner = h.make_cleaner(TOPIC_PARTITIONS, max_message_size=max_message_size, segment_size=256)
    log = h.logs_of_cleaner[TP0]
    props = h.log_config_properties(max_message_size=max_message_size, segment_size=256)
    props["message.format.version"] = FORMAT_0_9_0
    log.config = LogConfig(props)

    # with compression enabled, these messages are written as one message holding each of them
    appends_v0 = h.write_dups_single_message_set(2, 3, log, codec, magic=0)
    appends_v0 += h.write_dups_single_message_set(2, 2, log, codec, magic=0, start_key=3)

    props["message.format.version"] = FORMAT_0_10_0
    log.config = LogConfig(props)

    appends_v1 = h.write_dups_single_message_set(2, 2, log, codec, magic=1, start_key=4)
    appends_v1 += h.write_dups_single_message_set(2, 2, log, codec, magic=1, start_key=4)
    appends_v1 += h.write_dups_single_message_set(2, 2, log, codec, magic=1, start_key=6)

    appends = appends_v0 + appends_v1

    start_size = log.size
    cleaner.startup()

    first_dirty = log.active_segment.base_offset
    assert first_dirty > len(appends_v0)  # ensure we clean data from V0 and V1

    h.check_last_cleaned(TP0, first_dirty)
    compacted = compacted_size(log)
    assert start_size > compacted, f"log should have been compacted: startSize={start_size} compactedSize={compacted}"

    h.check_log_after_appending_dups(log, start_size, appends)


@pytest.mark.parametrize("codec", CODECS)
def test_cleaner_config_update_test(harness_factory: Callable[..., Harness], codec: str) -> None:
    """cleanerConfigUpdateTest (3.8.0): with an I/O buffer of 1 byte (0 per thread) the cleaner thread reads
    nothing and cleans nothing; reconfigured with a larger buffer and two threads, it cleans.  (:data:`KEYS` keys
    for Kafka's 100.)"""
    h = harness_factory()
    large_message_key = 20
    _, large_message_set = h.create_large_single_message_set(large_message_key, 2, codec)
    max_message_size = large_message_set.size_in_bytes()

    cleaner = h.make_cleaner(TOPIC_PARTITIONS, backoff_ms=1, max_message_size=max_message_size,
                             cleaner_io_buffer_size=1)
    log = h.logs_of_cleaner[TP0]

    h.write_dups(KEYS, 3, log, codec)
    start_size = log.size
    cleaner.startup()
    assert cleaner.cleaner_count == 1

    # verify no cleaning with log.cleaner.io.buffer.size=1
    first_dirty = log.active_segment.base_offset
    cleaner.await_cleaned(TP0, first_dirty, timeout_ms=10)
    assert cleaner.cleaner_manager.all_cleaner_checkpoints() == {}, "Should not have cleaned"

    # verify cleaning done with a larger log.cleaner.io.buffer.size; Kafka's KafkaConfig of each CleanerConfig is
    # here the broker properties it gives
    current = cleaner.current_config
    old_config = current.to_props()
    new_config = CleanerConfig(2, current.dedupe_buffer_size, current.dedupe_buffer_load_factor, 100000,
                               current.max_message_size, current.max_io_bytes_per_second, current.backoff_ms,
                               True).to_props()
    cleaner.reconfigure(old_config, new_config)

    assert cleaner.cleaner_count == 2
    h.check_last_cleaned(TP0, first_dirty)
    compacted = compacted_size(log)
    assert start_size > compacted, f"log should have been compacted: startSize={start_size} compactedSize={compacted}"


# -- LogCleanerIntegrationTest (3.8.0) ---------------------------------------------------------------------------


def test_marks_partitions_as_offline_and_populates_uncleanable_metrics(
        harness_factory: Callable[..., Harness]) -> None:
    """testMarksPartitionsAsOfflineAndPopulatesUncleanableMetrics (3.8.0): two logs whose segment file was
    overwritten with garbage are marked uncleanable, with their cleanable bytes counted as uncleanable; a
    partition that goes away is forgotten.  The waits are ten times Kafka's (2 s, 1 s, 2 s): they only bound how
    long the cleaner thread may take, on a machine that may be busy."""
    h = harness_factory()
    codec = "lz4"
    large_message_key = 20
    _, large_message_set = h.create_large_single_message_set(large_message_key, 2, codec)
    max_message_size = large_message_set.size_in_bytes()
    cleaner = h.make_cleaner(TOPIC_PARTITIONS, max_message_size=max_message_size, backoff_ms=100)

    def break_partition_log(tp: TopicPartition) -> None:
        log = h.logs_of_cleaner[tp]
        h.write_dups(20, 3, log, codec)
        partition_file = log.log_segments()[-1].log.file
        partition_file.write_text("jogeajgoea")  # Java's PrintWriter: the file is cut to these bytes
        h.write_dups(20, 3, log, codec)

    break_partition_log(TOPIC_PARTITIONS[0])
    break_partition_log(TOPIC_PARTITIONS[1])

    cleaner.startup()

    log = h.logs_of_cleaner[TOPIC_PARTITIONS[0]]
    log2 = h.logs_of_cleaner[TOPIC_PARTITIONS[1]]
    uncleanable_directory = log.dir.parent
    manager = cleaner.cleaner_manager

    wait_until(lambda: manager.uncleanable_partitions_count(uncleanable_directory) == 2,
               "There should be 2 uncleanable partitions", 10 * 2000)
    expected_total_uncleanable_bytes = (
        calculate_cleanable_bytes(log, 0, log.log_segments()[-1].base_offset)[1]
        + calculate_cleanable_bytes(log2, 0, log2.log_segments()[-1].base_offset)[1])
    wait_until(lambda: manager.uncleanable_bytes(uncleanable_directory) == expected_total_uncleanable_bytes,
               f"There should be {expected_total_uncleanable_bytes} uncleanable bytes", 10 * 1000)

    uncleanable_partitions = manager.uncleanable_partitions(uncleanable_directory)
    assert TOPIC_PARTITIONS[0] in uncleanable_partitions
    assert TOPIC_PARTITIONS[1] in uncleanable_partitions
    assert TOPIC_PARTITIONS[2] not in uncleanable_partitions

    # delete one partition
    del cleaner.logs[TOPIC_PARTITIONS[0]]

    def one_left() -> bool:
        h.time.sleep(1000)
        return manager.uncleanable_partitions_count(uncleanable_directory) == 1

    wait_until(one_left, "There should be 1 uncleanable partitions", 10 * 2000)

    uncleanable_partitions2 = manager.uncleanable_partitions(uncleanable_directory)
    assert TOPIC_PARTITIONS[0] not in uncleanable_partitions2
    assert TOPIC_PARTITIONS[1] in uncleanable_partitions2
    assert TOPIC_PARTITIONS[2] not in uncleanable_partitions2


def write_key_dups(num_keys: int, num_dups: int, log: Log, codec: str, timestamp: int, start_value: int,
                   step: int) -> list[tuple[int, int]]:
    """Kafka: ``writeKeyDups``: values from ``start_value`` going up by ``step``, the high watermark following."""
    value = start_value
    out = []
    for _ in range(num_dups):
        for key in range(num_keys):
            log.append_as_leader(singleton(str(value).encode(), str(key).encode(), timestamp, compression=codec), 0)
            log.high_watermark = log.log_end_offset
            out.append((key, value))
            value += step
    return out


def test_max_log_compaction_lag(harness_factory: Callable[..., Harness]) -> None:
    """testMaxLogCompactionLag (3.8.0): with a dirty ratio no log can exceed, a log is cleaned only once its
    oldest dirty record is older than max.compaction.lag.ms, first the block written at T0, then (after the lag
    again) the one written at T1, which leaves only its zero values.  (:data:`KEYS` keys for Kafka's 100; backoff
    20 ms for Kafka's 200.)"""
    h = harness_factory()
    ms_per_hour = 60 * 60 * 1000
    min_compaction_lag_ms = 1 * ms_per_hour
    max_compaction_lag_ms = 6 * ms_per_hour
    cleaner_backoff_ms = LAG_BACKOFF_MS
    cleaner = h.make_cleaner(TOPIC_PARTITIONS, backoff_ms=cleaner_backoff_ms,
                             min_compaction_lag_ms=min_compaction_lag_ms, segment_size=512,
                             max_compaction_lag_ms=max_compaction_lag_ms, min_cleanable_dirty_ratio=1.0)
    log = h.logs_of_cleaner[TP0]

    t0 = h.time.milliseconds()
    write_key_dups(KEYS, 3, log, "none", timestamp=t0, start_value=0, step=1)
    start_size_block0 = log.size
    active_seg_at_t0 = log.active_segment

    cleaner.startup()

    # advance to a time still less than max.compaction.lag.ms from the start
    h.time.sleep(max_compaction_lag_ms // 2)
    wall_time.sleep(5 * cleaner_backoff_ms / 1000.0)  # give the cleaning thread a chance to _not_ clean
    assert start_size_block0 == log.size, "There should be no cleaning until the max compaction lag has passed"

    # advance to a bit more than one max.compaction.lag.ms from the start
    h.time.sleep(max_compaction_lag_ms // 2 + 1)
    t1 = h.time.milliseconds()

    # write the second block of data: all zero values
    appends1 = write_key_dups(KEYS, 1, log, "none", timestamp=t1, start_value=0, step=0)

    # roll the active segment
    log.roll()
    active_seg_at_t1 = log.active_segment
    first_block_cleanable_segment_offset = active_seg_at_t0.base_offset

    # the first block should get cleaned
    cleaner.await_cleaned(TP0, first_block_cleanable_segment_offset)

    read1 = read_int_pairs(log)
    last_cleaned = cleaner.cleaner_manager.all_cleaner_checkpoints()[TP0]
    assert last_cleaned >= first_block_cleanable_segment_offset, (
        f"log cleaner should have processed at least to offset {first_block_cleanable_segment_offset}, but "
        f"lastCleaned={last_cleaned}")

    # min.cleanable.dirty.ratio keeps the second block from compacting
    assert appends1 != read1, "log should still contain non-zero keys"

    h.time.sleep(max_compaction_lag_ms + 1)
    # the second block should get cleaned: only zero values left
    cleaner.await_cleaned(TP0, active_seg_at_t1.base_offset)

    read2 = read_int_pairs(log)
    assert appends1 == read2, "log should only contain zero keys now"

    last_cleaned2 = cleaner.cleaner_manager.all_cleaner_checkpoints()[TP0]
    second_block_cleanable_segment_offset = active_seg_at_t1.base_offset
    assert last_cleaned2 >= second_block_cleanable_segment_offset, (
        f"log cleaner should have processed at least to offset {second_block_cleanable_segment_offset}, but "
        f"lastCleaned={last_cleaned2}")


def test_is_thread_failed(harness_factory: Callable[..., Harness], monkeypatch: pytest.MonkeyPatch) -> None:
    """testIsThreadFailed (3.8.0): a cleaner thread stopped by an unexpected error counts as failed, and the
    dead thread count (Kafka's DeadThreadCount gauge) says how many.  Kafka interrupts the threads; here their
    loop's last step raises."""
    h = harness_factory()
    cleaner = h.make_cleaner(TOPIC_PARTITIONS, max_message_size=100000, backoff_ms=100)
    cleaner.startup()
    assert cleaner.dead_thread_count == 0

    def unexpected_error() -> None:
        raise RuntimeError("simulated unexpected error (Kafka's test interrupts the thread)")

    # simulate the unexpected error
    monkeypatch.setattr(cleaner.cleaner_manager, "maintain_uncleanable_partitions", unexpected_error)
    # wait until it has reached every thread
    wait_until(lambda: all(thread.is_thread_failed for thread in cleaner.cleaners),
               "Threads didn't terminate unexpectedly")
    assert cleaner.dead_thread_count == len(cleaner.cleaners) == 1


# -- LogCleanerLagIntegrationTest (3.8.0 and 0.10.1.1) -----------------------------------------------------------


@pytest.mark.parametrize(("tag", "codec"), BOTH_TAGS)
def test_cleaning_waits_for_min_compaction_lag(harness_factory: Callable[..., Harness], tag: str,
                                               codec: str) -> None:
    """LogCleanerLagIntegrationTest.cleanerTest (3.8.0 and 0.10.1.1): records are not cleaned before
    min.compaction.lag.ms has passed since their timestamp; after it, the block written then is compacted, every
    key keeping its last value.  (:data:`KEYS` keys for Kafka's 100; backoff 20 ms for Kafka's 200.)"""
    ms_per_hour = 60 * 60 * 1000
    min_compaction_lag = 1 * ms_per_hour
    assert min_compaction_lag % 2 == 0, "compactionLag must be divisible by 2 for this test"
    cleaner_backoff_ms = LAG_BACKOFF_MS
    if tag == "3.8.0":
        h = harness_factory(MockTime(current_time_ms=1400000000000, current_high_res_time_ns=1000), tag)
        cleaner = h.make_cleaner(TOPIC_PARTITIONS, backoff_ms=cleaner_backoff_ms,
                                 min_compaction_lag_ms=min_compaction_lag, segment_size=512)
    else:
        # 0.10.1.1's own makeCleaner: 100-byte segments, the 0.10.1 CleanerConfig defaults
        h = harness_factory(MockTime(current_time_ms=1400000000000), tag)
        log_props = {"segment.bytes": 100, "segment.index.bytes": 100 * 1024, "file.delete.delay.ms": 1000,
                     "min.compaction.lag.ms": min_compaction_lag, "cleanup.policy": "compact",
                     "min.cleanable.dirty.ratio": 0.0, "message.format.version": FORMAT_0_10_1}
        cleaner = h.make_cleaner(TOPIC_PARTITIONS, log_props=log_props, cleaner_config=dataclasses.replace(
            CleanerConfig.from_enable(True), num_threads=1, backoff_ms=cleaner_backoff_ms))
    log = h.logs_of_cleaner[TP0]

    def write_dups(num_keys: int, num_dups: int, timestamp: int) -> list[tuple[int, int]]:
        """The lag tests' ``writeDups``: ``(key, value)`` of each, the value the counter."""
        return [(key, int(value)) for key, value, _ in h.write_dups(num_keys, num_dups, log, codec,
                                                                     timestamp=timestamp)]

    # t = T0
    t0 = h.time.milliseconds()
    appends0 = write_dups(KEYS, 3, t0)
    start_size_block0 = log.size
    active_seg_at_t0 = log.active_segment
    size_up_to_active_segment_at_t0 = sum(s.size() for s in log.log_segments(0, active_seg_at_t0.base_offset))

    cleaner.startup()

    # T0 < t < T1: advance to a time still less than one compaction lag from the start
    h.time.sleep(min_compaction_lag // 2)
    wall_time.sleep(5 * cleaner_backoff_ms / 1000.0)  # give the cleaning thread a chance to _not_ clean
    assert start_size_block0 == log.size, "There should be no cleaning until the compaction lag has passed"

    # t = T1 > T0 + compactionLag: advance to a bit more than one compaction lag from the start
    h.time.sleep(min_compaction_lag // 2 + 1)
    t1 = h.time.milliseconds()

    # write another block of data
    appends1 = appends0 + write_dups(KEYS, 3, t1)
    first_block1_segment_base_offset = active_seg_at_t0.base_offset

    # the first block should get cleaned
    cleaner.await_cleaned(TP0, active_seg_at_t0.base_offset)

    # check the data is the same
    read1 = read_int_pairs(log)
    assert dict(appends1) == dict(read1), "Contents of the map shouldn't change."

    compacted = sum(s.size() for s in log.log_segments(0, active_seg_at_t0.base_offset))
    last_cleaned = cleaner.cleaner_manager.all_cleaner_checkpoints()[TP0]
    assert last_cleaned >= first_block1_segment_base_offset, (
        f"log cleaner should have processed up to offset {first_block1_segment_base_offset}, but "
        f"lastCleaned={last_cleaned}")
    assert size_up_to_active_segment_at_t0 > compacted, (
        f"log should have been compacted: size up to offset of active segment at "
        f"T0={size_up_to_active_segment_at_t0} compacted size={compacted}")

    if tag == "0.10.1.1":
        del cleaner.logs[TP0]
        cleaner.shutdown()

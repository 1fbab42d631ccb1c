"""The Cleaner against Kafka's LogCleanerTest (spec §4, §7.8).

Ports ``core/src/test/scala/unit/kafka/log/LogCleanerTest.scala`` of Kafka 3.8.0 (plus
testCleanSegmentsRetainingLastEmptyBatch from trunk, which keeps the last batch of a cleaning round as an
empty batch) and the older ``LogCleanerTest`` / ``CleanerTest`` of 0.10.1.1 and 0.8.2, with Kafka's values:
logs of 1024-byte segments and indexes, a Cleaner over Kafka's dict-backed ``FakeOffsetMap`` (or a real
SkimpyOffsetMap where the case checks the kernels), I/O buffers of 64 KiB, load factor 0.75, no throttling, a
MockTime. Kafka's ``record(key, value)`` is one v2 record whose key and value are the decimal digits of two
numbers; ``keys_in_log`` and the other helpers read the segment files as ``LogTestUtils`` does. Transaction
markers come from ``MemoryRecords.with_end_transaction_marker`` and are appended as Kafka's tests append them:
as the leader, with the coordinator origin.

Added to Kafka's cases: removal of a tombstone once its v2 delete horizon has passed, and of a legacy one by
the segments' modification times; the exact summary text with Java's number formatting; crash recovery at
each stage of the swap, done by hand on the files; cleaning logs of every magic (v0, v1, v2) and codec; the
SkimpyOffsetMap kernels against the fake map, the two kernel twins against each other, and a LogCleaner
round with its log line.

testLogToClean and testLogToCleanWithUncleanableSection are in tests/cleaner/test_cleaner_manager.py.

The gauges of testMaxCleanTimeSecs are read from :class:`~kafkalog.cleaner.log_cleaner.LogCleaner`'s properties
(kafkalog registers no metrics), and testReconfigureLogCleanerIoMaxBytesPerSecond reconfigures from broker properties as
Kafka does from a ``KafkaConfig``.

Every test takes ``impl`` (reading a log runs the record kernels) and runs once per twin.

The port is cut by area: cleaning and compaction, grouping, tombstones and every magic and codec here;
transactions in ``test_cleaner_transactions.py``; the swap, crash recovery, offset overflow and legacy or
corrupt input in ``test_cleaner_recovery.py``; the offset map, statistics and the kernels in
``test_cleaner_offset_map_stats.py``.  The environment and helpers (Kafka's ``FakeOffsetMap``, ``record``,
``keys_in_log``...) are in :mod:`tests.support.cleaner_utils`, the ``env`` fixture in ``conftest.py``.

Kafka tests not ported:

- ``testRemoveMetricsOnClose``: checks, with Mockito mocks of ``KafkaMetricsGroup``, that the cleaner and its
  manager register their Yammer gauges and remove each on shutdown; kafkalog's gauges are plain properties,
  with nothing to register or remove.
"""

from __future__ import annotations

import random
import struct
import threading
from typing import Any

import numpy as np
import pytest

from kafkalog import MemoryRecords
from kafkalog._common import RecordFate
from kafkalog.cleaner import CleanedTransactionMetadata, Cleaner, CleaningRound
from kafkalog.cleaner.manager import LogCleaningAbortedError, LogToClean
from kafkalog.cleaner.offset_map import OffsetMap, SkimpyOffsetMap
from kafkalog.cleaner.stats import CleanerStats
from kafkalog.config.log_config import LogConfig
from kafkalog.errors import IllegalStateError
from kafkalog.log import Log
from kafkalog.record import batch as batch_module
from kafkalog.record.filter import DecodedBatch, decoded_batches
from kafkalog.segment import LogSegment
from tests.support.cleaner_utils import (
    INT_MAX,
    LONG_MAX,
    MB,
    TOMBSTONE_RETENTION_MS,
    Env,
    FakeOffsetMap,
    TxnProducer,
    abort_check_done,
    batches_in,
    decompress_legacy,
    files_with_suffix,
    fill_segments,
    key,
    keys_in_log,
    last_offsets_per_batch_in_log,
    last_sequences_in_log,
    message_with_offset,
    offsets_in_log,
    record,
    singleton,
    to_clean,
    unkeyed,
    unkeyed_message_count_in_log,
)

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
        log, segments,
        CleaningRound(offset_map, 0, stats, CleanedTransactionMetadata(), -1, segments[-1].read_next_offset()),
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
        cleaner.clean_segments(
            log, segments,
            CleaningRound(offset_map, 0, stats, CleanedTransactionMetadata(), -1, log.active_segment.base_offset),
        )
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
        log, segments,
        CleaningRound(offset_map, 0, stats, CleanedTransactionMetadata(), -1, segments[-1].read_next_offset()),
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
    initial_log_size = log.size

    end_offset, stats = cleaner.clean(to_clean(log, 2))
    assert end_offset == 5
    assert stats.messages_read == 5
    assert stats.bytes_read == initial_log_size
    assert stats.messages_written == 2
    assert stats.bytes_written == log.size
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
    initial_log_size = log.size

    end_offset, stats = cleaner.clean(to_clean(log, 2))
    assert end_offset == 5
    assert (stats.messages_read, stats.messages_written, stats.invalid_messages_read) == (5, 2, 0)
    assert stats.bytes_read == initial_log_size
    assert stats.bytes_written == log.size
    assert stats.map_messages_read == 5
    assert stats.buffer_utilization == 0.5
    assert offsets_in_log(log) == [3, 4]
    assert keys_in_log(log) == [1, 0]


def _three_producers_log(env: Env) -> tuple[Any, Log]:
    """testLogCleanerRetainsProducerLastSequence's cleaner and log: keys 0 and 1 written by no producer and by
    producers 1, 2 (twice) and 3, then rolled."""
    cleaner = env.make_cleaner(10)
    log = env.make_log(env.config(segment_bytes=1024))
    log.append_as_leader(record(0, 0), 0)  # offset 0
    log.append_as_leader(record(0, 1, producer_id=1, producer_epoch=0, sequence=0), 0)  # offset 1
    log.append_as_leader(record(0, 2, producer_id=2, producer_epoch=0, sequence=0), 0)  # offset 2
    log.append_as_leader(record(0, 3, producer_id=3, producer_epoch=0, sequence=0), 0)  # offset 3
    log.append_as_leader(record(1, 1, producer_id=2, producer_epoch=0, sequence=1), 0)  # offset 4
    log.roll()
    return cleaner, log


def test_log_cleaner_retains_producer_last_sequence(env: Env) -> None:
    cleaner, log = _three_producers_log(env)

    cleaner.clean(to_clean(log, 0))
    assert last_offsets_per_batch_in_log(log) == [1, 3, 4]
    assert last_sequences_in_log(log) == {1: 0, 2: 1, 3: 0}
    assert keys_in_log(log) == [0, 1]
    assert offsets_in_log(log) == [3, 4]


def test_log_cleaner_lets_an_expired_producer_s_last_batch_go(env: Env) -> None:
    """The cleaner keeps the last batch of the producers the log's producer state holds (Kafka:
    ``lastRecordsOfActiveProducers``), so a producer expired by ``producer.id.expiration.ms`` is no longer
    protected: with every producer of testLogCleanerRetainsProducerLastSequence expired, producer 1's only batch
    (key 0, overwritten at offset 3) is cleaned away like any other."""
    cleaner, log = _three_producers_log(env)
    state = log.producer_state_manager
    expiration_ms = state.producer_state_manager_config.producer_id_expiration_ms
    state.remove_expired_producers(env.time.milliseconds() + expiration_ms + 1)
    assert log.last_records_of_active_producers() == {}

    cleaner.clean(to_clean(log, 0))
    assert last_offsets_per_batch_in_log(log) == [3, 4]
    assert last_sequences_in_log(log) == {2: 1, 3: 0}
    assert offsets_in_log(log) == [3, 4]


def test_producers_last_batches_are_read_for_each_group(env: Env) -> None:
    """The producers' last batches are read from the producer state for each group of segments, as Kafka's
    ``cleanSegments`` reads ``lastRecordsOfActiveProducers``: producer 7's only batch (key 1000, overwritten
    later) is its last when the round starts, but while the first group is cleaned the producer appends again,
    so by the time its group is cleaned that batch holds nothing the producer state needs, and it goes."""
    cleaner = env.make_cleaner(INT_MAX)
    log = env.make_log(env.config(segment_bytes=1024))
    fill_segments(log, 2)  # a full first segment: a group of its own
    producer = TxnProducer(env, log, 7, transactional=False)
    first = producer([1000])
    log.append_as_leader(record(1000, 1), 0)  # supersedes the producer's record
    fill_segments(log, 3)
    log.roll()
    cleanable = to_clean(log, 0)
    assert [b.last_offset for b in batches_in(log) if b.producer_id == 7] == [first.last_offset]
    assert log.last_records_of_active_producers()[7].last_data_offset == first.last_offset

    groups_cleaned = []
    clean_group = cleaner.clean_segments

    def clean_then_append(log: Log, segments: list[LogSegment], cleaning_round: CleaningRound) -> None:
        clean_group(log, segments, cleaning_round)
        groups_cleaned.append([s.base_offset for s in segments])
        if len(groups_cleaned) == 1:
            producer([2000])  # to the active segment, past the round's range

    cleaner.clean_segments = clean_then_append  # type: ignore[method-assign]
    cleaner.clean(cleanable)
    assert first.first_offset is not None
    assert len(groups_cleaned) >= 2 and first.first_offset >= groups_cleaned[1][0]
    last = log.last_records_of_active_producers()[7].last_data_offset
    assert last is not None and last > first.last_offset
    assert [b.last_offset for b in batches_in(log) if b.producer_id == 7] == [last]
    assert last_sequences_in_log(log) == {7: 1}


def test_cleaning_after_idempotent_appends_and_reload(env: Env) -> None:
    """testDuplicateCheckAfterCleaning: the cleaning keeps each producer's last batch, offsets and sequence
    numbers, across a reload and a second round, so that after each reload a producer's retry of its last
    batch is found by the producer state rebuilt from the cleaned log and answered with the first append's
    offsets."""
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

    def retry(pid: int, keys: list[int]) -> tuple[int, int]:
        """The producer's batch of ``keys`` sent again from sequence 0 (Kafka: a new appendIdempotentAsLeader)."""
        info = TxnProducer(env, log, pid, transactional=False)(keys)
        return info.first_offset, info.last_offset

    assert retry(1, [1, 2, 3]) == (0, 2)
    assert retry(3, [1, 4]) == (6, 7)
    assert retry(2, [3, 1, 4]) == (3, 5)
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

    log.close()
    log = env.make_log(config, recovery_point=0)
    # the duplicate append from producer 1 is still found, its batch emptied but kept
    assert retry(1, [1, 2, 3]) == (0, 2)


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
    size_with_unkeyed_messages = log.size

    while log.number_of_segments < 3:
        log.append_as_leader(record(log.log_end_offset, log.log_end_offset), 0)

    expected_size_after_cleaning = log.size - size_with_unkeyed_messages
    _, stats = cleaner.clean(to_clean(log, 0))

    assert num_invalid_messages > 0
    assert unkeyed_message_count_in_log(log) == 0, "Log should only contain keyed messages after cleaning."
    assert log.size == expected_size_after_cleaning, (
        "Log should only contain keyed messages after cleaning."
    )
    assert stats.invalid_messages_read == num_invalid_messages


def test_cleaning_with_unkeyed_messages_and_skimpy_map(env: Env) -> None:
    cleaner = env.make_cleaner(0, offset_map=SkimpyOffsetMap(1000 * 24))
    log = env.make_log(env.config(segment_bytes=1024, cleanup_policy="delete"))
    while log.number_of_segments < 2:
        log.append_as_leader(unkeyed(log.log_end_offset), 0)
    num_invalid_messages = unkeyed_message_count_in_log(log)
    size_with_unkeyed_messages = log.size
    while log.number_of_segments < 3:
        log.append_as_leader(record(log.log_end_offset, log.log_end_offset), 0)
    expected_size_after_cleaning = log.size - size_with_unkeyed_messages
    _, stats = cleaner.clean(to_clean(log, 0))
    assert unkeyed_message_count_in_log(log) == 0
    assert log.size == expected_size_after_cleaning
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
            log, log.log_segments()[:3],
            CleaningRound(offset_map,
                          0,
                          CleanerStats(env.time),
                          CleanedTransactionMetadata(),
                          -1,
                          log.active_segment.base_offset),
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
    epoch = 0 if magic == 2 else -1  # a follower's v2 batch carries its leader's epoch
    log.append_as_follower(MemoryRecords.with_records(first, magic=magic, compression=codec, base_offset=10,
                                                      partition_leader_epoch=epoch))
    log.append_as_follower(MemoryRecords.with_records(second, magic=magic, compression=codec, base_offset=15,
                                                      partition_leader_epoch=epoch))
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
                                              base_offset=offset, partition_leader_epoch=0 if magic == 2 else -1)
            log.append_as_follower(data)
            offset += n
        log.append_as_follower(MemoryRecords.with_records(batch(2, "gzip", 200), compression="gzip", base_offset=offset,
                                                          producer_id=5, producer_epoch=0, base_sequence=0,
                                                          is_transactional=True, partition_leader_epoch=0))
        offset += 200
        log.roll()
        log.append_as_follower(MemoryRecords.with_records([(b"last", b"v")], base_offset=offset,
                                                          partition_leader_epoch=0))
        offset_map: OffsetMap = FakeOffsetMap(1000) if map_kind == "fake" else SkimpyOffsetMap(1000 * 24)
        cleaner = env.make_cleaner(INT_MAX, max_message_size=MB, offset_map=offset_map)
        cleaner.clean(LogToClean(log.topic_partition, log, 0, log.active_segment.base_offset))
        return [segment.log.read_bytes() for segment in log.log_segments()]

    whole = cleaned("whole")
    monkeypatch.setattr(batch_module, "CHUNK_RECORDS", 64)
    assert cleaned("pieces") == whole
    assert len(whole[0]) < 30_000  # most records went


# -- the per-record step: Cleaner.should_retain_records ------------------------------------------------


def _pieces(records: MemoryRecords) -> list[DecodedBatch]:
    return list(decoded_batches(records))


@pytest.mark.parametrize("magic", [0, 1, 2])
def test_should_retain_records_decision_table(env: Env, magic: int) -> None:
    """Kafka ``shouldRetainRecord``: past the map kept; the latest of its key kept with a value, or as a
    tombstone inside the delete horizon; superseded dropped; keyless dropped and counted as invalid."""
    rows = [(b"a", b"1"), (None, b"2"), (b"b", None), (b"a", b"4"), (b"c", b"5"), (b"d", None)]
    # A v0/v1 wrapper holds every message of a compressed set: one batch, as a v2 batch is.
    (piece,) = _pieces(MemoryRecords.with_records(rows, magic=magic, compression="none" if magic >= 2 else "gzip"))
    fates = np.array([RecordFate.SUPERSEDED, RecordFate.NO_KEY, RecordFate.LATEST, RecordFate.LATEST,
                      RecordFate.PAST_MAP, RecordFate.PAST_MAP], dtype=np.int8)
    stats = CleanerStats(env.time)
    keep = Cleaner.should_retain_records(True, piece, fates, stats, 0)
    assert keep.tolist() == [False, False, True, True, True, True]
    assert stats.invalid_messages_read == 1
    # Without retaining deletes, the tombstone that is the latest of its key goes; one past the map stays.
    retain_deletes = magic >= 2  # a v2 batch without a horizon keeps its tombstones whatever the segment's age
    keep = Cleaner.should_retain_records(False, piece, fates, stats, 0)
    assert keep.tolist() == [False, False, retain_deletes, True, True, True]
    assert stats.invalid_messages_read == 2


def test_should_retain_records_follows_a_v2_batch_delete_horizon(env: Env) -> None:
    records = MemoryRecords.with_records([(b"a", None)], delete_horizon_ms=1000)
    (piece,) = _pieces(records)
    latest = np.array([RecordFate.LATEST], dtype=np.int8)
    stats = CleanerStats(env.time)
    # The batch's own horizon decides, not the legacy flag: a tombstone stays until the horizon passes.
    assert Cleaner.should_retain_records(False, piece, latest, stats, 999).tolist() == [True]
    assert Cleaner.should_retain_records(True, piece, latest, stats, 1000).tolist() == [False]


def test_record_fate_matches_the_map_kernel(env: Env) -> None:
    """The scalar fate (any OffsetMap) and SkimpyOffsetMap.latest_codes (the kernel) agree record for record."""
    rows = [(b"a", b"1"), (None, b"2"), (b"b", None), (b"a", b"4"), (b"c", b"5")]
    records = MemoryRecords.with_records(rows)
    skimpy = SkimpyOffsetMap(10 * 24)
    fake = FakeOffsetMap(10)
    for offset_map in (skimpy, fake):
        offset_map.put(b"a", 3)
        offset_map.put(b"b", 2)
        offset_map.update_latest_offset(3)
    (piece,) = _pieces(records)
    codes = skimpy.latest_codes(piece.columns.data, piece.columns.records).tolist()
    scalar = [Cleaner.record_fate(fake, r.offset, r.key) for r in records.records()]
    assert scalar == codes == [RecordFate.SUPERSEDED, RecordFate.NO_KEY, RecordFate.LATEST, RecordFate.LATEST,
                               RecordFate.PAST_MAP]


def test_cleaning_asks_should_retain_records_of_every_data_record(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    """clean_into runs each piece of a data batch through Cleaner.should_retain_records (the per-record step the
    walkthrough names), and keeps exactly what it answers."""
    cleaner = env.make_cleaner(INT_MAX)
    log = env.make_log(env.config(segment_bytes=1024))
    fill_segments(log, 3)
    asked: list[int] = []
    real = Cleaner.should_retain_records

    def spy(retain: bool, piece: DecodedBatch, fates: Any, stats: CleanerStats, now: int) -> Any:
        keep = real(retain, piece, fates, stats, now)
        asked.extend(piece.columns.records["offset"][piece.lo:piece.hi].tolist())
        keep[:] = piece.columns.records["offset"][piece.lo:piece.hi] % 2 == 0  # keep even offsets only
        return keep

    monkeypatch.setattr(Cleaner, "should_retain_records", staticmethod(spy))
    segments = log.log_segments(0, log.active_segment.base_offset)
    upper = segments[-1].read_next_offset()
    offset_map = FakeOffsetMap(INT_MAX)
    cleaner.clean_segments(log, segments, CleaningRound(offset_map, 0, CleanerStats(env.time),
                                                        CleanedTransactionMetadata(), -1, upper))
    assert asked == list(range(upper))
    kept = [o for o in offsets_in_log(log) if o < upper]
    # every even offset, and the round's last batch kept empty if its record went (KAFKA-17076)
    assert kept == [o for o in range(upper) if o % 2 == 0]

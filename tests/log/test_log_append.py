"""Log appends against Kafka's UnifiedLogTest (core 3.8.0) and LogTest (0.10.1.1): what an append reports, the
offsets a follower's or a Raft leader's append must carry, appends without timestamps, the time index a
follower builds, time-based rolling with 0.10.1's message format, and flushing an empty active segment.

Logs are made as in ``tests/log/test_log.py`` (``create_log``: Kafka's ``createLog`` with a :class:`MockTime`,
under both kernel twins).  The 0.10.1.1 ports run on a log whose ``message.format.version`` is 0.10.1, as
0.10.1.1's default was, with v1 messages (``TestUtils.singleMessageSet``).

A log whose log dir failed (``testAppendToOrReadFromLogInFailedLogDir``) refuses every later append and read, and
so does every other log that shares its failure channel; the failure itself is a real one, the transaction index
pointed at the partition directory, which cannot be opened as a file.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest

from kafkalog import MemoryRecords
from kafkalog.errors import KafkaStorageError, UnexpectedAppendOffsetError
from kafkalog.log_dir_failure_channel import LogDirFailureChannel
from kafkalog.record import ControlRecordType
from kafkalog.record.records_util import RecordValidationStats
from kafkalog.scheduler import MockTime
from tests.support.log_test_utils import (
    LogFactory,
    append_end_txn_marker_as_leader,
    append_transactional_as_leader,
    config,
    create_empty_logs,
    singleton,
)

NO_TIMESTAMP = -1


def three_records(mock_time: MockTime, base_offset: int = 0, leader_epoch: int = -1) -> MemoryRecords:
    """The three keyed records (``a``, ``b``, ``c`` -> ``value``) of Kafka's ``records(offset)`` helpers."""
    now = mock_time.milliseconds()
    return MemoryRecords.with_records([(key, b"value", now) for key in (b"a", b"b", b"c")],
                                      base_offset=base_offset, partition_leader_epoch=leader_epoch)


def test_append_info_first_offset(create_log: LogFactory, mock_time: MockTime) -> None:
    log = create_log(config(segment_bytes=1024 * 1024))

    first_append_info = log.append_as_leader(three_records(mock_time), leader_epoch=0)
    assert first_append_info.first_offset == 0

    second_append_info = log.append_as_leader(three_records(mock_time), leader_epoch=0)
    assert second_append_info.first_offset == 3

    log.roll()
    after_roll_append_info = log.append_as_leader(three_records(mock_time), leader_epoch=0)
    assert after_roll_append_info.first_offset == 6


def test_append_info_log_start_offset(create_log: LogFactory, mock_time: MockTime) -> None:
    """UnifiedLog.append (3.8.0): the append info that ``analyzeAndValidateRecords`` makes carries the log's
    ``logStartOffset`` of the moment, for a leader's append, a follower's and one of no batch alike."""
    log = create_log(config(segment_bytes=1024 * 1024))
    assert log.append_as_leader(three_records(mock_time), leader_epoch=0).log_start_offset == 0

    log.high_watermark = log.log_end_offset
    assert log.maybe_increment_log_start_offset(2)
    leader = log.append_as_leader(three_records(mock_time), leader_epoch=0)
    assert (leader.first_offset, leader.last_offset, leader.log_start_offset) == (3, 5, 2)

    follower = log.append_as_follower(three_records(mock_time, base_offset=6, leader_epoch=0))
    assert (follower.first_offset, follower.last_offset, follower.log_start_offset) == (6, 8, 2)

    empty = log.append_as_leader(MemoryRecords(b""), leader_epoch=0)
    assert (empty.valid_bytes, empty.log_start_offset) == (0, 2)
    assert log.log_end_offset == 9


def test_append_info_record_validation_stats(create_log: LogFactory, mock_time: MockTime) -> None:
    """UnifiedLog.append (3.9.2): a leader's append info carries the validator's ``recordValidationStats`` (the
    bytes held while validating and the records converted); a follower's keeps ``RecordValidationStats.EMPTY``, as
    ``analyzeAndValidateRecords`` made it."""
    log = create_log(config(segment_bytes=1024 * 1024))
    now = mock_time.milliseconds()
    gzip = MemoryRecords.with_records([(key, b"value", now) for key in (b"a", b"b", b"c")], compression="gzip")
    stats = log.append_as_leader(gzip, leader_epoch=0).record_validation_stats
    # The v2 batch header (61 bytes) and three records of 13 bytes each (length varint 1, attributes 1, timestamp
    # and offset deltas 1 + 1, key length 1 + 1, value length 1 + 5, header count 1), decompressed to be checked;
    # none converted.
    assert (stats.temporary_memory_bytes, stats.num_records_converted) == (61 + 3 * 13, 0)
    plain = log.append_as_leader(three_records(mock_time), leader_epoch=0).record_validation_stats
    assert (plain.temporary_memory_bytes, plain.num_records_converted) == (0, 0)
    follower = log.append_as_follower(three_records(mock_time, base_offset=6, leader_epoch=0))
    assert follower.record_validation_stats == RecordValidationStats.EMPTY

    v1_log = create_log(config(message_format_version="0.10.2"), directory=log.dir.parent / "v1-0")
    converted = v1_log.append_as_leader(three_records(mock_time), leader_epoch=0).record_validation_stats
    assert converted.num_records_converted == 3


def test_append_info_log_append_time_only_on_log_append_time_topics(create_log: LogFactory,
                                                                     mock_time: MockTime) -> None:
    """UnifiedLog.append (3.9.2): ``appendInfo.setLogAppendTime`` is called only when the topic's
    ``message.timestamp.type`` is LogAppendTime; a CreateTime topic's append info keeps -1 (``NO_TIMESTAMP``), and a
    duplicate's carries its original batch's timestamp either way (found by the oracle:
    ``tests/oracle/scenarios/create-time-log-append-time.json``)."""
    create_time = create_log(config(segment_bytes=1024 * 1024))
    mock_time.sleep(5)
    assert create_time.append_as_leader(three_records(mock_time), leader_epoch=0).log_append_time == NO_TIMESTAMP
    append_time = create_log(config(message_timestamp_type="LogAppendTime"),
                             directory=create_time.dir.parent / "append-time-0")
    assert append_time.append_as_leader(three_records(mock_time), leader_epoch=0).log_append_time == \
        mock_time.milliseconds()


def test_append_as_leader_with_raft_leader(create_log: LogFactory, mock_time: MockTime) -> None:
    log = create_log(config(segment_bytes=1024 * 1024))
    leader_epoch = 0

    log.append_as_leader(three_records(mock_time, 0, leader_epoch), leader_epoch, origin="raft_leader")
    assert log.log_start_offset == 0
    assert log.log_end_offset == 3

    # The Raft leader assigns the offsets itself (the validator is bypassed), so the first offset of what it
    # appends must be the log's next offset
    with pytest.raises(UnexpectedAppendOffsetError):
        log.append_as_leader(three_records(mock_time, 1, leader_epoch), leader_epoch, origin="raft_leader")

    log.append_as_leader(three_records(mock_time, 3, leader_epoch), leader_epoch, origin="raft_leader")
    assert log.log_end_offset == 6


def test_append_empty_log_below_log_start_offset_throws_exception(create_log: LogFactory, log_dir: Path) -> None:
    create_empty_logs(log_dir, 7)
    log = create_log(config())
    assert log.log_start_offset == 7
    assert log.log_end_offset == 7

    first_offset = 4
    for magic in (0, 1, 2):
        for compression in ("none", "lz4"):
            batch = MemoryRecords.with_records([(b"k1", b"v1"), (b"k2", b"v2"), (b"k3", b"v3")], magic=magic,
                                               compression=compression, base_offset=first_offset)
            with pytest.raises(UnexpectedAppendOffsetError) as caught:
                log.append_as_follower(batch)
            what = f"Magic={magic}, compressionType={compression}"
            assert caught.value.first_offset == first_offset, what
            assert caught.value.last_offset == first_offset + 2, what
    assert log.log_end_offset == 7


def test_should_apply_epoch_to_message_on_append_if_leader(create_log: LogFactory) -> None:
    """shouldApplyEpochToMessageOnAppendIfLeader: the partition is on leader epoch 72 (assigned to the cache as a
    leader election does), and a leader's append stamps that epoch on every batch."""
    epoch = 72
    log = create_log(config())
    log.maybe_assign_epoch_start_offset(epoch, 50)
    for i in range(50):
        log.append_as_leader(MemoryRecords.with_records([(None, str(i).encode())]), leader_epoch=epoch)
    for i in range(50):
        batch = next(iter(log.read(i, 1).records.batches()))
        assert batch.partition_leader_epoch == 72, "Should have set leader epoch"


def test_append_with_no_timestamp(create_log: LogFactory) -> None:
    log = create_log(config())
    log.append_as_leader(MemoryRecords.with_records([(b"key", b"value", NO_TIMESTAMP)]), leader_epoch=0)
    assert log.log_end_offset == 1


@pytest.mark.parametrize("magic", [1, 2], ids=["v1-0.10.1.1", "v2-3.8.0"])
def test_build_time_index_when_not_assigning_offsets(create_log: LogFactory, mock_time: MockTime,
                                                      magic: int) -> None:
    """testBuildTimeIndexWhenNotAssigningOffsets (3.8.0, v2 batches) and
    LogTest.testBuildTimeIndexWhenNotAssigningOffsets (0.10.1.1, v1 messages): a follower's appends, each of one
    record at offset 100 + i with timestamp now + i, build the time index; the first append, at the segment's
    start, adds no entry."""
    num_messages = 100
    log = create_log(config(segment_bytes=10000, index_interval_bytes=1))
    now = mock_time.milliseconds()
    for i in range(num_messages):
        log.append_as_follower(MemoryRecords.with_records(
            [(None, str(i).encode(), now + i)], magic=magic, base_offset=100 + i,
            partition_leader_epoch=0 if magic == 2 else -1))
    time_index_entries = sum(segment.time_index.entries for segment in log.log_segments())
    assert time_index_entries == num_messages - 1, f"There should be {num_messages - 1} time index entries"
    assert log.active_segment.time_index.last_entry.timestamp == now + num_messages - 1, \
        f"The last time index entry should have timestamp {now + num_messages - 1}"


def test_time_based_log_roll(create_log: LogFactory, mock_time: MockTime) -> None:
    """LogTest.testTimeBasedLogRoll (0.10.1.1): time-based rolling with 0.10.1's v1 messages, by the wall clock
    while the segment's first message has no timestamp and by message timestamps once it has one (3.8.0's
    testTimeBasedLogRollDuringAppend, with v2 batches, is ``test_log.py::test_time_based_log_roll_during_append``)."""
    def message_set(timestamp: int = NO_TIMESTAMP) -> MemoryRecords:
        return singleton(b"test", timestamp=timestamp, magic=1)

    log = create_log(config(segment_ms=1 * 60 * 60, message_format_version="0.10.1"))
    segment_ms = log.config.segment_ms
    assert log.number_of_segments == 1, "Log begins with a single empty segment."

    # messages without a timestamp
    mock_time.sleep(segment_ms + 1)
    log.append_as_leader(message_set())
    assert log.number_of_segments == 1, "Log doesn't roll if doing so creates an empty segment."
    log.append_as_leader(message_set())
    assert log.number_of_segments == 2, "Log rolls on this append since time has expired."
    for num_segments in range(3, 5):
        mock_time.sleep(segment_ms + 1)
        log.append_as_leader(message_set())
        assert log.number_of_segments == num_segments, \
            "Changing time beyond rollMs and appending should create a new segment."

    # a message with a timestamp into a segment whose first message has none
    timestamp = mock_time.milliseconds() + segment_ms + 1
    log.append_as_leader(message_set(timestamp))
    assert log.number_of_segments == 4, \
        "Segment should not have been rolled out because the log rolling should be based on wall clock."

    # messages with timestamps
    mock_time.sleep(segment_ms + 1)
    log.append_as_leader(message_set(timestamp))
    assert log.number_of_segments == 5, "A new segment should have been rolled out"

    # the wall clock past the roll time
    mock_time.sleep(segment_ms + 1)
    log.append_as_leader(message_set(timestamp))
    assert log.number_of_segments == 5, \
        "Log should not roll because the roll should depend on timestamp of the first message."

    log.append_as_leader(message_set(mock_time.milliseconds()))
    assert log.number_of_segments == 6, \
        "Log should roll because the timestamp in the message should make the log segment expire."
    assert all(batch.magic == 1 for segment in log.log_segments() for batch in segment.batches())

    num_segments = log.number_of_segments
    mock_time.sleep(segment_ms + 1)
    log.append_as_leader(MemoryRecords(b""))
    assert log.number_of_segments == num_segments, \
        "Appending an empty message set should not roll log even if sufficient time has passed."


def test_flushing_empty_active_segments(create_log: LogFactory, log_dir: Path, mock_time: MockTime) -> None:
    log = create_log(config())
    log.append_as_leader(singleton(b"Test", timestamp=mock_time.milliseconds()), leader_epoch=0)
    log.roll()
    assert len(list(log_dir.glob("*.log"))) == 2
    assert len(list(log_dir.glob("*.index"))) == 1  # the new segment's index is created when first used
    assert log.active_segment.size() == 0
    log.flush(including_offset=True)  # Kafka: flush(forceFlushActiveSegment = true)
    assert len(list(log_dir.glob("*.log"))) == 2
    assert len(list(log_dir.glob("*.index"))) == 2


def test_append_to_or_read_from_log_in_failed_log_dir(create_log: LogFactory, mock_time: MockTime) -> None:
    pid, epoch = 1, 0
    log = create_log(config())
    log.append_as_leader(singleton(None), leader_epoch=0)
    assert next(iter(log.read(0, 4096).records.records())).offset == 0
    append = append_transactional_as_leader(log, pid, epoch, mock_time)
    append(10)
    # The index file does not exist yet, so nothing moves: the index now points at the partition directory,
    # and the marker's write to it fails as a disk would.
    log.active_segment.txn_index.rename_to(log.dir)
    with pytest.raises(KafkaStorageError):
        append_end_txn_marker_as_leader(log, pid, epoch, ControlRecordType.ABORT, mock_time.milliseconds(),
                                        coordinator_epoch=1)
    with pytest.raises(KafkaStorageError):
        log.append_as_leader(singleton(None), leader_epoch=0)
    with pytest.raises(KafkaStorageError):
        next(iter(log.read(0, 4096).records.records()))
    # kafkalog's: the error names the dir, and the readers of the consumer's view and by timestamp are refused too
    with pytest.raises(KafkaStorageError, match=re.escape(f"The log dir {log.dir.parent} is already offline")):
        list(log.records())
    with pytest.raises(KafkaStorageError, match="already offline"):
        log.fetch_offset_by_timestamp(0)
    assert log.is_log_dir_offline and log.log_end_offset == 12


def test_a_failed_log_dir_refuses_the_other_logs_sharing_its_channel(
        create_log: LogFactory, mock_time: MockTime, scratch: Path) -> None:
    """Two logs of one log dir sharing a failure channel, and one of another dir: an I/O error in one log's append
    takes its dir offline for both logs of that dir (writes, flushes, rolls, truncations, reads); the log of the
    other dir goes on.  Closing a log of the failed dir releases its files and raises; reopened (a new channel,
    as after a broker's restart), it holds every record appended before the failure."""
    channel = LogDirFailureChannel()
    first = create_log(config(), scratch / "a" / "topic-0", log_dir_failure_channel=channel)
    second = create_log(config(), scratch / "a" / "topic-1", log_dir_failure_channel=channel)
    other = create_log(config(), scratch / "b" / "topic-0", log_dir_failure_channel=channel)
    for log in (first, second, other):
        log.append_as_leader(singleton(b"before"), leader_epoch=0)
    append_transactional_as_leader(first, 1, 0, mock_time)(2)
    first.active_segment.txn_index.rename_to(first.dir)
    appending = r"Error while appending records to topic-0 in dir .*[/\\]a: "
    with pytest.raises(KafkaStorageError, match=appending) as failed:
        append_end_txn_marker_as_leader(first, 1, 0, ControlRecordType.ABORT, mock_time.milliseconds())
    assert failed.value.log_dir == str((scratch / "a").absolute())
    assert isinstance(failed.value.__cause__, KafkaStorageError) and failed.value.errno is not None
    assert channel.offline_log_dirs() == [str((scratch / "a").absolute())]
    assert channel.take_next_offline_log_dir(0) == str((scratch / "a").absolute())
    for log in (first, second):
        assert log.is_log_dir_offline
        for refused in (functools.partial(log.append_as_leader, singleton(b"after"), leader_epoch=0), log.flush,
                        log.roll, functools.partial(log.truncate_to, 0), functools.partial(log.read, 0, 4096)):
            with pytest.raises(KafkaStorageError, match="already offline due to a previous IO exception"):
                refused()
    assert not other.is_log_dir_offline
    assert other.append_as_leader(singleton(b"after"), leader_epoch=0).last_offset == 1
    other.flush()
    assert [r.value for r in other.records()] == [b"before", b"after"]
    for log in (first, second):
        with pytest.raises(KafkaStorageError, match="already offline"):
            log.close()
        assert log.local_log.is_memory_mapped_buffer_closed  # its files were released
    reopened = create_log(config(), scratch / "a" / "topic-1", had_clean_shutdown=False)
    assert [r.value for r in reopened.records()] == [b"before"]
    assert reopened.append_as_leader(singleton(b"after"), leader_epoch=0).last_offset == 1

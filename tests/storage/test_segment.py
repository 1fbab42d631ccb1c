"""LogSegment against Kafka's LogSegmentTest (storage 3.8.0 / core 0.10.1.1), spec §3.4-3.9 and §7.4.

Segments are built as Kafka's ``LogTestUtils.createSegment`` builds them: a log file, an offset index of
1000 bytes, a time index of 1500 bytes, ``index.interval.bytes`` 10 unless a test says otherwise, no roll
jitter.  ``records(offset, *values)`` is Kafka's helper: v1 messages, CreateTime, every timestamp
``offset * 10``.  A random oracle at the end appends mixed batches with gaps and checks every read and every
recovered index against a list model.  Every test runs on both kernel twins (``impl``).

The segment's transaction index (``.txnindex``) is checked after them: created by the first abort
(``update_txn_index``), searched, truncated, renamed, moved, deleted and emptied by recovery with the segment,
and refilled by recovery from the producer state it replays (testRecoverTransactionIndex).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from kafkalog import MemoryRecords
from kafkalog.checkpoint import EpochEntry, LeaderEpochCheckpoint
from kafkalog.config.log_config import LogConfig
from kafkalog.errors import CorruptIndexError, IllegalArgumentError, LogSegmentOffsetOverflowError, ReadOnlyError
from kafkalog.fetch import LogOffsetMetadata
from kafkalog.file_message_set import FileMessageSet, LogOffsetPosition, TimestampAndOffset
from kafkalog.filenames import index_filename, log_filename, time_index_filename, txn_index_filename
from kafkalog.index import LazyIndex, OffsetIndex, OffsetPosition, TimeIndex, TimestampOffset
from kafkalog.leader_epoch_cache import LeaderEpochFileCache
from kafkalog.producer_state import BatchMetadata, ProducerStateEntry, ProducerStateManager, ProducerStateManagerConfig
from kafkalog.record import ControlRecordType, EndTransactionMarker
from kafkalog.scheduler import SYSTEM_TIME, MockTime, Time
from kafkalog.segment import NO_MAX_POSITION, LogSegment, RollParams
from kafkalog.topic import TopicPartition
from kafkalog.transaction_index import AbortedTxn, TxnIndexSearchResult

INT32_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1
NO_TIMESTAMP = -1
MB = 1024 * 1024


def records(offset: int, *values: str) -> MemoryRecords:
    """Kafka's ``records`` helper: v1, no compression, CreateTime, timestamp ``offset * 10``."""
    return MemoryRecords.with_records([(None, v.encode(), offset * 10) for v in values], magic=1,
                                      base_offset=offset)


def tuples(source: Any) -> list[tuple[Any, ...]]:
    return [r.as_tuple() for r in source.records()]


def write_nonsense(path: Path, position: int, size: int, rng: random.Random) -> None:
    """Kafka's ``writeNonsenseToFile``: ``size`` random bytes from ``position`` (the file may grow)."""
    with open(path, "r+b") as f:
        f.seek(position)
        f.write(bytes(rng.randrange(255) for _ in range(size)))


SegmentFactory = Callable[..., LogSegment]


@pytest.fixture
def create_segment(tmp_path: Path, impl: ModuleType) -> Iterator[SegmentFactory]:
    """Kafka's ``createSegment(offset, indexIntervalBytes = 10, time = Time.SYSTEM)``, with lazily opened
    indexes of 1000 and 1500 bytes; every segment made is closed after the test (Kafka's ``teardown``)."""
    made: list[LogSegment] = []

    def create(base_offset: int, index_interval_bytes: int = 10, time: Time = SYSTEM_TIME,
               offset_index_bytes: int = 1000, time_index_bytes: int = 1500, jitter_ms: int = 0,
               directory: Path = tmp_path) -> LogSegment:
        # filenames refuses a negative offset; Kafka's formatter writes one, so such a segment gets plain names
        name = str(base_offset) if base_offset < 0 else None
        log_path = directory / f"{name}.log" if name else log_filename(directory, base_offset)
        index_path = directory / f"{name}.index" if name else index_filename(directory, base_offset)
        time_path = directory / f"{name}.timeindex" if name else time_index_filename(directory, base_offset)
        log = FileMessageSet.open(log_path, file_already_exists=log_path.exists())
        segment = LogSegment(log, LazyIndex(OffsetIndex, index_path, base_offset, offset_index_bytes),
                             LazyIndex(TimeIndex, time_path, base_offset, time_index_bytes), base_offset,
                             index_interval_bytes, jitter_ms, time, offset_index_bytes)
        made.append(segment)
        return segment

    yield create
    for segment in made:
        if not segment.log.channel.closed:  # closing a deleted segment is test_close_after_delete's
            segment.close()


def config(**extra: Any) -> LogConfig:
    return LogConfig({"index.interval.bytes": 10, "segment.index.bytes": 1000, "segment.jitter.ms": 0, **extra})


# --- Kafka's LogSegmentTest ---------------------------------------------------------------------------

@pytest.mark.parametrize(("base_offset", "largest_offset"), [
    (0, -2147483648),
    (0, 2147483648),
    (1, 0),
    (100, 10),
    (2147483648, 0),
    (-2147483648, 0),
    (2147483648, 4294967296),
])
def test_append_for_log_segment_offset_overflow_exception(
    create_segment: SegmentFactory, impl: ModuleType, base_offset: int, largest_offset: int
) -> None:
    """testAppendForLogSegmentOffsetOverflowException: largest - base outside [0, Int.MAX] is refused and
    nothing is written."""
    seg = create_segment(base_offset)
    with pytest.raises(LogSegmentOffsetOverflowError) as info:
        seg.append(largest_offset, 1_000, largest_offset, records(0, "hello"))
    assert info.value.offset == largest_offset
    assert seg.size() == 0


def test_append_at_the_edges_of_the_relative_range(create_segment: SegmentFactory, impl: ModuleType) -> None:
    seg = create_segment(100)
    seg.append(100, 1_000, 100, MemoryRecords.with_records([(None, b"a", 1_000)], base_offset=100))
    top = 100 + INT32_MAX
    seg.append(top, 1_001, top, MemoryRecords.with_records([(None, b"b", 1_001)], base_offset=top))
    assert seg.read_next_offset() == top + 1
    assert seg.has_overflow() is False


def test_read_on_empty_segment(create_segment: SegmentFactory, impl: ModuleType) -> None:
    """testReadOnEmptySegment: a read past the last offset is None."""
    seg = create_segment(40)
    assert seg.read(40, 300) is None


def test_read_before_first_offset(create_segment: SegmentFactory, impl: ModuleType) -> None:
    """testReadBeforeFirstOffset: reading 41 returns everything from 50."""
    seg = create_segment(40)
    ms = records(50, "hello", "there", "little", "bee")
    seg.append(53, NO_TIMESTAMP, -1, ms)
    read = seg.read(41, 300)
    assert read is not None
    assert tuples(read.records) == tuples(ms)
    assert [r[0] for r in tuples(read.records)] == [50, 51, 52, 53]
    assert read.fetch_offset_metadata == LogOffsetMetadata(41, 40, 0)
    assert read.first_entry_incomplete is False


def test_read_after_last(create_segment: SegmentFactory, impl: ModuleType) -> None:
    """testReadAfterLast: reading 52 after 50-51 is None."""
    seg = create_segment(40)
    seg.append(51, NO_TIMESTAMP, -1, records(50, "hello", "there"))
    assert seg.read(52, 200) is None


def test_read_from_gap(create_segment: SegmentFactory, impl: ModuleType) -> None:
    """testReadFromGap: reading 55 returns the batch at 60-61."""
    seg = create_segment(40)
    ms = records(50, "hello", "there")
    seg.append(51, NO_TIMESTAMP, -1, ms)
    ms2 = records(60, "alpha", "beta")
    seg.append(61, NO_TIMESTAMP, -1, ms2)
    read = seg.read(55, 200)
    assert read is not None
    assert tuples(read.records) == tuples(ms2)
    assert read.fetch_offset_metadata == LogOffsetMetadata(55, 40, ms.size_in_bytes())


@pytest.mark.parametrize("min_one_message", [True, False])
def test_read_when_no_max_position(create_segment: SegmentFactory, impl: ModuleType,
                                   min_one_message: bool) -> None:
    """testReadWhenNoMaxPosition: without a max position only the offset metadata comes back."""
    max_size = 1
    seg = create_segment(40)
    seg.append(51, NO_TIMESTAMP, -1, records(50, "hello", "there"))
    expected = {48: LogOffsetMetadata(48, 40, 0), 50: LogOffsetMetadata(50, 40, 0),
                51: LogOffsetMetadata(51, 40, 39)}
    for offset, metadata in expected.items():
        read = seg.read(offset, max_size, NO_MAX_POSITION, min_one_message)
        assert read is not None
        assert read.fetch_offset_metadata == metadata
        assert list(read.records.records()) == []
        assert read.records.size_in_bytes() == 0
    assert seg.read(52, max_size, NO_MAX_POSITION, min_one_message) is None
    assert seg.read(53, max_size, NO_MAX_POSITION, min_one_message) is None


def test_truncate(create_segment: SegmentFactory, impl: ModuleType) -> None:
    """testTruncate: 30 rounds of append(o), append(o + 1), truncateTo(o + 1) leave only o."""
    seg = create_segment(40)
    offset = 40
    for _ in range(30):
        ms1 = records(offset, "hello")
        seg.append(offset, NO_TIMESTAMP, -1, ms1)
        ms2 = records(offset + 1, "hello")
        seg.append(offset + 1, NO_TIMESTAMP, -1, ms2)
        read = seg.read(offset, 10000)
        assert read is not None
        assert tuples(read.records) == tuples(ms1) + tuples(ms2)
        assert seg.truncate_to(offset + 1) == ms2.size_in_bytes()
        read2 = seg.read(offset, 10000)
        assert read2 is not None
        assert tuples(read2.records) == tuples(ms1)
        assert seg.read(offset + 1, 10000) is None
        offset += 1
    assert seg.read_next_offset() == 70
    assert [b.last_offset for b in seg.batches()] == list(range(40, 70))


def test_truncate_empty_segment(create_segment: SegmentFactory, impl: ModuleType) -> None:
    """testTruncateEmptySegment: a reopened empty segment's trimmed indexes are resized by truncateTo, so
    it does not roll for a full index, nor for time while empty, but does when the offset cannot fit."""
    max_segment_ms = 300000
    time = MockTime()
    seg = create_segment(0, time=time)
    # force the indexes open before closing the segment, so close trims their files to nothing
    assert seg.time_index.entries == 0
    assert seg.offset_index.entries == 0
    seg.close()

    reopened = create_segment(0, time=time)
    assert reopened.time_index.size_in_bytes() == 0
    assert reopened.offset_index.size_in_bytes() == 0
    assert reopened.offset_index.is_full()  # trimmed to nothing by close

    time.sleep(500)
    assert reopened.truncate_to(57) == 0
    assert reopened.time_waited_for_roll(time.milliseconds(), NO_TIMESTAMP) == 0
    assert not reopened.time_index.is_full()
    assert not reopened.offset_index.is_full()

    params = RollParams(max_segment_ms, INT32_MAX, NO_TIMESTAMP, 100, 1024, time.milliseconds())
    assert reopened.should_roll(params) is False

    # not rolled even past segment.ms: it is empty
    time.sleep(max_segment_ms + 1)
    assert reopened.time_waited_for_roll(time.milliseconds(), NO_TIMESTAMP) == max_segment_ms + 1
    params = RollParams(max_segment_ms, INT32_MAX, NO_TIMESTAMP, 100, 1024, time.milliseconds())
    assert reopened.should_roll(params) is False

    # but rolled when the next offset does not fit
    params = RollParams(max_segment_ms, INT32_MAX, NO_TIMESTAMP, INT32_MAX + 200, 1024, time.milliseconds())
    assert reopened.should_roll(params) is True


def test_reload_largest_timestamp_and_next_offset_after_truncation(
    create_segment: SegmentFactory, impl: ModuleType
) -> None:
    """testReloadLargestTimestampAndNextOffsetAfterTruncation: interval 2s - 1 gives 14 time-index entries
    for 30 messages; truncateTo(41) leaves none, largest timestamp 400 (read back from the log), next
    offset 41.  Also LogSegmentTest.testReloadLargestTimestampAfterTruncation (0.10.1.1), the same case
    without the next-offset check."""
    num_messages = 30
    assert records(0, "hello").size_in_bytes() == 39
    seg = create_segment(40, 2 * records(0, "hello").size_in_bytes() - 1)
    offset = 40
    for _ in range(num_messages):
        seg.append(offset, offset, offset, records(offset, "hello"))
        offset += 1
    assert seg.read_next_offset() == offset == 70
    assert seg.time_index.entries == num_messages // 2 - 1 == 14
    assert seg.offset_index.entries == 14
    assert seg.offset_index.entry(0) == OffsetPosition(42, 78)
    # 3.9.2 indexes the batch's own max timestamp (offset * 10), not the append's timestamp argument
    assert seg.time_index.entry(0) == TimestampOffset(420, 42)

    seg.truncate_to(41)
    assert seg.time_index.entries == 0
    assert seg.offset_index.entries == 0
    assert seg.largest_timestamp() == 400
    assert seg.max_timestamp_so_far == 400
    assert seg.offset_of_max_timestamp_so_far == 40
    assert seg.read_next_offset() == 41


def test_truncate_full(create_segment: SegmentFactory, impl: ModuleType) -> None:
    """testTruncateFull: truncating everything resets the roll clock, the indexes can take entries again,
    and the same offsets can be appended again."""
    time = MockTime()
    seg = create_segment(40, time=time)
    # Without timestamps, so that the roll clock is the segment's creation time (3.9.2 takes the first batch's
    # timestamp from the file, where 3.8 took the append's argument).
    untimed = MemoryRecords.with_records([(None, b"hello", NO_TIMESTAMP), (None, b"there", NO_TIMESTAMP)], magic=1,
                                         base_offset=40)
    seg.append(41, NO_TIMESTAMP, -1, untimed)

    time.sleep(500)
    assert seg.time_waited_for_roll(time.milliseconds(), NO_TIMESTAMP) == 500

    assert seg.truncate_to(0) == 78
    assert seg.time_waited_for_roll(time.milliseconds(), NO_TIMESTAMP) == 0
    assert not seg.time_index.is_full()
    assert not seg.offset_index.is_full()
    assert seg.read(0, 1024) is None
    assert seg.size() == 0
    assert seg.log.channel.size() == 0

    seg.append(41, NO_TIMESTAMP, -1, untimed)
    read = seg.read(40, 1024)
    assert read is not None
    assert [r[0] for r in tuples(read.records)] == [40, 41]


def test_truncate_resizes_each_index_to_its_own_max_size(create_segment: SegmentFactory,
                                                         impl: ModuleType) -> None:
    """Kafka's truncateTo resizes ``offsetIndex`` to ``offsetIndex.maxIndexSize`` and ``timeIndex`` to
    ``timeIndex.maxIndexSize``: with the test segment's 1000 / 1500 bytes that is 125 slots each (as
    ``recover``'s reset does here)."""
    seg = create_segment(40)
    for offset in range(40, 45):
        seg.append(offset, offset * 10, offset, records(offset, "x"))
    assert (seg.offset_index.max_entries, seg.time_index.max_entries) == (125, 125)
    seg.truncate_to(42)
    assert (seg.offset_index.length(), seg.time_index.length()) == (1000, 1500)
    assert (seg.offset_index.max_entries, seg.time_index.max_entries) == (125, 125)
    seg.recover()
    seg.truncate_to(41)
    assert (seg.offset_index.length(), seg.time_index.length()) == (1000, 1500)


def test_find_offset_by_timestamp(create_segment: SegmentFactory, impl: ModuleType) -> None:
    """testFindOffsetByTimestamp: ten messages, timestamp = offset * 10, interval 2 * size - 1."""
    message_size = records(0, "msg00").size_in_bytes()
    seg = create_segment(40, message_size * 2 - 1)
    for i in range(40, 50):
        seg.append(i, i * 10, i, records(i, f"msg{i}"))

    assert seg.largest_timestamp() == 490
    # an indexed timestamp
    assert seg.find_offset_by_timestamp(420, 0) == TimestampAndOffset(420, 42)
    assert seg.find_offset_by_timestamp(421, 0) == TimestampAndOffset(430, 43)
    # an un-indexed timestamp
    assert seg.find_offset_by_timestamp(430, 0) == TimestampAndOffset(430, 43)
    assert seg.find_offset_by_timestamp(431, 0) == TimestampAndOffset(440, 44)
    # beyond the last timestamp
    assert seg.find_offset_by_timestamp(491, 0) is None
    # before the first indexed timestamp
    assert seg.find_offset_by_timestamp(401, 0) == TimestampAndOffset(410, 41)
    # before the first timestamp
    assert seg.find_offset_by_timestamp(399, 0) == TimestampAndOffset(400, 40)
    # the starting offset bounds the answer; no starting offset means the base offset
    assert seg.find_offset_by_timestamp(399, 45) == TimestampAndOffset(450, 45)
    assert seg.find_offset_by_timestamp(399) == TimestampAndOffset(400, 40)
    assert seg.find_offset_by_timestamp(0, 50) is None


def test_next_offset_calculation(create_segment: SegmentFactory, impl: ModuleType) -> None:
    """testNextOffsetCalculation: 40 while empty, 53 after 50-52."""
    seg = create_segment(40)
    assert seg.read_next_offset() == 40
    seg.append(52, NO_TIMESTAMP, -1, records(50, "hello", "there", "you"))
    assert seg.read_next_offset() == 53
    assert seg.next_offset() == 53


def test_change_file_suffixes(create_segment: SegmentFactory, tmp_path: Path, impl: ModuleType) -> None:
    """testChangeFileSuffixes: the index files are not created by opening the segment nor by renaming it;
    the names change, and an index file appears, under its new name, when the index is first used."""
    seg = create_segment(40)
    log_file = seg.log.file
    index_file, time_file = index_filename(tmp_path, 40), time_index_filename(tmp_path, 40)
    assert not index_file.exists()
    assert not time_file.exists()
    seg.change_file_suffixes("", ".deleted")
    deleted = [index_filename(tmp_path, 40, ".deleted"), time_index_filename(tmp_path, 40, ".deleted")]
    assert not index_file.exists() and not time_file.exists()
    assert not deleted[0].exists() and not deleted[1].exists()
    assert seg.log.file == Path(str(log_file) + ".deleted")
    assert seg.log.file.exists()
    assert not log_file.exists()
    assert seg.has_suffix(".deleted")
    assert seg.offset_index.file == deleted[0]
    assert deleted[0].exists()
    assert seg.time_index.file == deleted[1]
    assert deleted[1].exists()
    assert not index_file.exists() and not time_file.exists()


def test_change_file_suffixes_of_open_indexes(create_segment: SegmentFactory, impl: ModuleType) -> None:
    """The same once the indexes are open (0.10.1.1's form of the test): every file moves, the segment
    keeps working, and the suffix comes off again."""
    seg = create_segment(40)
    seg.append(41, 500, 41, records(40, "hello", "there"))
    log_file, index_file, time_file = seg.log.file, seg.offset_index.file, seg.time_index.file
    seg.change_file_suffixes("", ".deleted")
    assert seg.log.file == Path(str(log_file) + ".deleted")
    assert seg.offset_index.file == Path(str(index_file) + ".deleted")
    assert seg.time_index.file == Path(str(time_file) + ".deleted")
    for path in (seg.log.file, seg.offset_index.file, seg.time_index.file):
        assert path.exists()
    for path in (log_file, index_file, time_file):
        assert not path.exists()
    read = seg.read(40, 1000)
    assert read is not None
    assert [r[0] for r in tuples(read.records)] == [40, 41]
    seg.append(42, 600, 42, records(42, "again"))
    seg.change_file_suffixes(".deleted", "")
    assert (seg.log.file, seg.offset_index.file, seg.time_index.file) == (log_file, index_file, time_file)
    assert log_file.exists() and index_file.exists() and time_file.exists()
    assert seg.read_next_offset() == 43


def test_recovery_fixes_corrupt_index(create_segment: SegmentFactory, impl: ModuleType) -> None:
    """testRecoveryFixesCorruptIndex: nonsense over the offset index, recover, every offset readable."""
    seg = create_segment(0)
    for i in range(100):
        seg.append(i, NO_TIMESTAMP, -1, records(i, str(i)))
    entries_before = [seg.offset_index.entry(n) for n in range(seg.offset_index.entries)]
    index_file = seg.offset_index.file
    write_nonsense(index_file, 5, index_file.stat().st_size, random.Random(1))
    assert seg.recover() == 0
    for i in range(100):
        read = seg.read(i, 1, seg.size(), True)
        assert read is not None
        assert next(iter(read.records.records())).offset == i
    assert [seg.offset_index.entry(n) for n in range(seg.offset_index.entries)] == entries_before
    assert seg.offset_index.length() == seg.offset_index.entries * 8


def test_recovery_fixes_corrupt_time_index(create_segment: SegmentFactory, impl: ModuleType) -> None:
    """testRecoveryFixesCorruptTimeIndex: nonsense over the time index, recover, every timestamp found."""
    seg = create_segment(0)
    for i in range(100):
        seg.append(i, i * 10, i, records(i, str(i)))
    time_index_file = seg.time_index.file
    write_nonsense(time_index_file, 5, time_index_file.stat().st_size, random.Random(2))
    assert seg.recover() == 0
    for i in range(100):
        assert seg.find_offset_by_timestamp(i * 10, 0) == TimestampAndOffset(i * 10, i)
        if i < 99:
            assert seg.find_offset_by_timestamp(i * 10 + 1, 0) == TimestampAndOffset(i * 10 + 10, i + 1)
    # recovery writes the final entry that close would write
    assert seg.time_index.last_entry == TimestampOffset(990, 99)
    assert seg.max_timestamp_so_far == 990


@pytest.mark.parametrize("seed", range(10))
def test_recovery_with_corrupt_message(create_segment: SegmentFactory, impl: ModuleType, seed: int) -> None:
    """testRecoveryWithCorruptMessage: garbage from somewhere in the first 15 bytes of a random message to
    the end of the file; recovery keeps exactly the messages before it."""
    rng = random.Random(seed)
    messages_appended = 20
    seg = create_segment(0)
    for i in range(messages_appended):
        seg.append(i, NO_TIMESTAMP, -1, records(i, str(i)))
    offset_to_begin_corruption = rng.randrange(messages_appended)
    found = seg.log.search_for(offset_to_begin_corruption, 0)
    assert found is not None
    position = found.position + rng.randrange(15)
    size = seg.log.file.stat().st_size
    write_nonsense(seg.log.file, position, size - position, rng)
    assert seg.recover() == size - found.position
    assert [b.last_offset for b in seg.log.batches()] == list(range(offset_to_begin_corruption))
    assert seg.size() == seg.log.channel.size() == found.position
    assert seg.read_next_offset() == offset_to_begin_corruption
    assert all(seg.offset_index.entry(n).offset < offset_to_begin_corruption
               for n in range(seg.offset_index.entries))
    seg.delete()
    assert not seg.log.file.exists()
    assert not seg.offset_index.file.exists()
    assert not seg.time_index.file.exists()


def test_recovery_logs_as_kafka_does(create_segment: SegmentFactory, impl: ModuleType,
                                     caplog: pytest.LogCaptureFixture) -> None:
    """Kafka 3.8 ``LogSegment.recover``: a batch cut short at the end of the file (``FileLogInputStream.nextBatch``
    returns null) ends the loop without a warning, and only DEBUG "Truncated N invalid bytes" tells of it; a batch
    that fails its check (a CRC here) is a WARNING "Found invalid messages" at its position, then the same DEBUG."""
    seg = create_segment(0)
    for i in range(3):
        seg.append(i, NO_TIMESTAMP, -1, records(i, str(i)))
    whole = seg.size()
    seg.close_handlers()
    with open(seg.log.file, "ab") as f:
        f.write(records(3, "torn").buffer[:30])
    seg = create_segment(0)
    caplog.set_level("DEBUG", logger="kafkalog")

    assert seg.recover() == 30
    assert [(r.levelname, r.getMessage()) for r in caplog.records if r.name.startswith("kafkalog")] == [
        ("DEBUG", f"Truncated 30 invalid bytes at the end of segment {seg.log.file} during recovery")]

    caplog.clear()
    last = seg.log.search_for(2, 0)
    assert last is not None
    with open(seg.log.file, "r+b") as f:
        f.seek(whole - 1)
        flipped = f.read(1)[0] ^ 0xFF
        f.seek(whole - 1)
        f.write(bytes([flipped]))
    assert seg.recover() == whole - last.position
    assert [(r.levelname, r.getMessage()) for r in caplog.records if r.name.startswith("kafkalog")] == [
        ("WARNING", f"Found invalid messages in log segment {seg.log.file} at byte offset {last.position}: "
                    "a CRC that does not match."),
        ("DEBUG", f"Truncated {whole - last.position} invalid bytes at the end of segment {seg.log.file} during "
                  "recovery")]
    assert seg.read_next_offset() == 2


def test_create_with_init_file_size_append_message(tmp_path: Path, impl: ModuleType) -> None:
    """testCreateWithInitFileSizeAppendMessage (64 MiB rather than Kafka's 512 MiB)."""
    seg = LogSegment.open(tmp_path, 40, config(), SYSTEM_TIME, file_already_exists=False,
                          init_file_size=64 * MB, preallocate=True)
    try:
        ms = records(50, "hello", "there")
        seg.append(51, NO_TIMESTAMP, -1, ms)
        ms2 = records(60, "alpha", "beta")
        seg.append(61, NO_TIMESTAMP, -1, ms2)
        read = seg.read(55, 200)
        assert read is not None
        assert tuples(read.records) == tuples(ms2)
        assert seg.log.file.stat().st_size == 64 * MB
        assert seg.size() == ms.size_in_bytes() + ms2.size_in_bytes()
    finally:
        seg.close()


def test_create_with_init_file_size_clear_shutdown(tmp_path: Path, impl: ModuleType) -> None:
    """testCreateWithInitFileSizeClearShutdown: close trims the preallocated file; reopening reads the same
    data at the same size."""
    seg = LogSegment.open(tmp_path, 40, config(), SYSTEM_TIME, init_file_size=64 * MB, preallocate=True)
    ms = records(50, "hello", "there")
    seg.append(51, NO_TIMESTAMP, -1, ms)
    ms2 = records(60, "alpha", "beta")
    seg.append(61, NO_TIMESTAMP, -1, ms2)
    read = seg.read(55, 200)
    assert read is not None
    assert tuples(read.records) == tuples(ms2)
    old_size = seg.log.size_in_bytes()
    assert seg.log.file.stat().st_size == 64 * MB
    seg.close()
    assert seg.log.file.stat().st_size == old_size

    reopened = LogSegment.open(tmp_path, 40, config(), SYSTEM_TIME, file_already_exists=True,
                               init_file_size=64 * MB, preallocate=True)
    try:
        read_again = reopened.read(55, 200)
        assert read_again is not None
        assert tuples(read_again.records) == tuples(ms2)
        assert reopened.log.size_in_bytes() == old_size
        assert reopened.log.file.stat().st_size == old_size
        assert reopened.read_next_offset() == 62
    finally:
        reopened.close()


def test_recover_preallocated_segment_after_crash(tmp_path: Path, impl: ModuleType) -> None:
    """Without the trim of a clean close the zero tail is found by recovery and cut (spec §2.6)."""
    seg = LogSegment.open(tmp_path, 40, config(), SYSTEM_TIME, init_file_size=MB, preallocate=True)
    seg.append(51, NO_TIMESTAMP, -1, records(50, "hello", "there"))
    seg.append(61, NO_TIMESTAMP, -1, records(60, "alpha", "beta"))
    size = seg.size()
    seg.close_handlers()
    reopened = LogSegment.open(tmp_path, 40, config(), SYSTEM_TIME, file_already_exists=True)
    try:
        assert reopened.size() == MB
        assert reopened.recover() == MB - size
        assert reopened.size() == reopened.log.file.stat().st_size == size
        assert reopened.read_next_offset() == 62
        assert [b.last_offset for b in reopened.batches()] == [50, 51, 60, 61]
    finally:
        reopened.close()


def test_should_truncate_even_if_offset_points_to_a_gap_in_the_log(
    create_segment: SegmentFactory, impl: ModuleType
) -> None:
    """shouldTruncateEvenIfOffsetPointsToAGapInTheLog: batches at 40 and 43, truncateTo(41) removes 43."""
    seg = create_segment(40)
    offset = 40

    def v2(offset: int, value: str) -> MemoryRecords:
        return MemoryRecords.with_records([(None, value.encode(), offset * 1000)], base_offset=offset)

    ms1 = v2(offset, "first message")
    seg.append(offset, NO_TIMESTAMP, -1, ms1)
    seg.append(offset + 3, NO_TIMESTAMP, -1, v2(offset + 3, "message after gap"))
    seg.truncate_to(offset + 1)
    read = seg.read(offset, 10000)
    assert read is not None
    batches = list(read.records.batches())
    assert [b.base_offset for b in batches] == [offset]
    assert seg.size() == ms1.size_in_bytes()


def test_append_from_file(create_segment: SegmentFactory, tmp_path: Path, impl: ModuleType) -> None:
    """testAppendFromFile: copies up to the first batch whose offset would overflow; the rest goes into a
    segment based at Int.MAX."""

    def v2(offset: int, size: int) -> MemoryRecords:
        return MemoryRecords.with_records([(None, bytes(size))], base_offset=offset)

    other = tmp_path / "other"
    other.mkdir()
    with FileMessageSet.open(log_filename(other, 0)) as file_records:
        file_records.append(v2(0, 1024))
        file_records.append(v2(500, MB + 1))
        size_before_overflow = file_records.size_in_bytes()
        file_records.append(v2(INT32_MAX + 5, 1024))
        size_after_overflow = file_records.size_in_bytes()

        segment = create_segment(0)
        bytes_appended = segment.append_from_file(file_records, 0)
        assert bytes_appended == size_before_overflow
        assert segment.size() == size_before_overflow

        overflow_segment = create_segment(INT32_MAX)
        overflow_bytes_appended = overflow_segment.append_from_file(file_records, size_before_overflow)
        assert overflow_bytes_appended == size_after_overflow - size_before_overflow
        assert overflow_segment.size() == overflow_bytes_appended

        assert segment.read_next_offset() == 501
        assert overflow_segment.read_next_offset() == INT32_MAX + 6
        assert segment.log.read_bytes() == file_records.read(0, size_before_overflow).read_bytes()


def test_get_first_batch_timestamp(create_segment: SegmentFactory, impl: ModuleType) -> None:
    """testGetFirstBatchTimestamp: Long.MAX while empty, then the first batch's timestamp (3.9.2 reads it from the
    file; 3.8 took the append's largest-timestamp argument)."""
    segment = create_segment(1)
    assert segment.get_first_batch_timestamp() == LONG_MAX
    segment.append(1, 1000, 1, MemoryRecords.with_records([(None, b"one", 1000)], base_offset=1))
    assert segment.get_first_batch_timestamp() == 1000
    segment.truncate_to(1)
    assert segment.get_first_batch_timestamp() == LONG_MAX


def test_first_batch_timestamp_is_read_from_the_log_when_reopened(
    create_segment: SegmentFactory, impl: ModuleType
) -> None:
    seg = create_segment(1)
    seg.append(2, 2000, 2, MemoryRecords.with_records([(None, b"one", 1500), (None, b"two", 2000)],
                                                      base_offset=1))
    seg.append(3, 9000, 3, MemoryRecords.with_records([(None, b"three", 9000)], base_offset=3))
    seg.close()
    reopened = create_segment(1)
    assert reopened.get_first_batch_timestamp() == 2000
    assert reopened.time_waited_for_roll(0, 2500) == 500
    assert reopened.max_timestamp_so_far == 9000
    assert reopened.offset_of_max_timestamp_so_far == 3


# --- read: max size, max position, min_one_message ------------------------------------------------

def test_min_one_message_and_first_entry_incomplete(create_segment: SegmentFactory, impl: ModuleType) -> None:
    """A max size smaller than the first batch: a slice cut inside it (no batch, first_entry_incomplete)
    or, with min_one_message, the whole batch; max size 0 gives metadata only (spec §3.6)."""
    seg = create_segment(40)
    first = MemoryRecords.with_records([(None, b"x" * 100, 1), (None, b"y" * 100, 2)], base_offset=40)
    second = MemoryRecords.with_records([(None, b"z" * 10, 3)], base_offset=42)
    seg.append(41, 2, 41, first)
    seg.append(42, 3, 42, second)
    size1 = first.size_in_bytes()

    cut = seg.read(41, 50)
    assert cut is not None
    assert cut.first_entry_incomplete is True
    assert cut.records.size_in_bytes() == 50
    assert list(cut.records.batches()) == []
    assert cut.fetch_offset_metadata == LogOffsetMetadata(41, 40, 0)

    whole = seg.read(41, 50, min_one_message=True)
    assert whole is not None
    assert whole.first_entry_incomplete is False
    assert whole.records.size_in_bytes() == size1
    assert [r[0] for r in tuples(whole.records)] == [40, 41]

    # a max size larger than the first batch is used as it is
    more = seg.read(40, size1 + 5, min_one_message=True)
    assert more is not None
    assert more.records.size_in_bytes() == size1 + 5
    assert [b.last_offset for b in more.records.batches()] == [41]

    exact = seg.read(40, size1)
    assert exact is not None
    assert exact.first_entry_incomplete is False
    assert [b.last_offset for b in exact.records.batches()] == [41]

    for min_one in (False, True):
        empty = seg.read(42, 0, min_one_message=min_one)
        assert empty is not None
        assert empty.fetch_offset_metadata == LogOffsetMetadata(42, 40, size1)
        if min_one:
            assert empty.records.size_in_bytes() == second.size_in_bytes()
        else:
            assert empty.records.size_in_bytes() == 0
            assert empty.first_entry_incomplete is False
    with pytest.raises(ValueError):
        seg.read(40, -1)


def test_read_with_max_position(create_segment: SegmentFactory, impl: ModuleType) -> None:
    """maxPosition bounds the bytes returned (the high watermark's position, in Kafka)."""
    seg = create_segment(40)
    ms = records(50, "hello", "there", "little", "bee")
    seg.append(53, NO_TIMESTAMP, -1, ms)
    read = seg.read(50, 1000, max_position=78)
    assert read is not None
    assert [r[0] for r in tuples(read.records)] == [50, 51]
    read = seg.read(51, 1000, max_position=80)
    assert read is not None
    assert read.records.size_in_bytes() == 41
    assert [r[0] for r in tuples(read.records)] == [51]
    read = seg.read(52, 1000, max_position=78)  # the batch starts at the max position
    assert read is not None
    assert read.records.size_in_bytes() == 0


def test_max_offset(create_segment: SegmentFactory, impl: ModuleType) -> None:
    """LogSegmentTest.testMaxOffset (0.10.1.1): a read bounded at ``offset + 1`` returns exactly the message at
    ``offset``.  0.10.1's ``read`` took ``maxOffset`` and turned it into a position with ``translateOffset``
    (the segment's size when no batch reaches it); modern Kafka's ``read`` takes that position
    (``maxPosition``), so the port makes the same translation and reads to it."""
    base_offset = 50
    seg = create_segment(base_offset)
    ms = records(base_offset, "hello", "there", "beautiful")
    seg.append(52, NO_TIMESTAMP, -1, ms)

    def validate(offset: int) -> None:
        bound = seg.translate_offset(offset + 1)
        max_position = seg.size() if bound is None else bound.position
        read = seg.read(offset, 1024, max_position)
        assert read is not None
        assert tuples(read.records) == [r for r in tuples(ms) if r[0] == offset]

    validate(50)
    validate(51)
    validate(52)


def test_translate_offset(create_segment: SegmentFactory, impl: ModuleType) -> None:
    seg = create_segment(40)
    seg.append(41, NO_TIMESTAMP, -1, records(40, "hello", "there"))
    seg.append(61, NO_TIMESTAMP, -1, records(60, "alpha", "beta"))
    assert seg.translate_offset(40) == LogOffsetPosition(40, 0, 39)
    assert seg.translate_offset(45) == LogOffsetPosition(60, 78, 39)
    assert seg.translate_offset(61) == LogOffsetPosition(61, 117, 38)
    assert seg.translate_offset(40, 78) == LogOffsetPosition(60, 78, 39)
    assert seg.translate_offset(62) is None


# --- should_roll -----------------------------------------------------------------------------------

def test_should_roll_on_size(create_segment: SegmentFactory, impl: ModuleType) -> None:
    """size > maxSegmentBytes - messagesSize."""
    time = MockTime()
    seg = create_segment(40, time=time)
    seg.append(41, NO_TIMESTAMP, -1, records(40, "hello", "there"))
    size = seg.size()
    now = time.milliseconds()
    assert seg.should_roll(RollParams(LONG_MAX, size + 100, NO_TIMESTAMP, 42, 100, now)) is False
    assert seg.should_roll(RollParams(LONG_MAX, size + 100, NO_TIMESTAMP, 42, 101, now)) is True
    assert seg.should_roll(RollParams(LONG_MAX, size - 1, NO_TIMESTAMP, 42, 0, now)) is True
    empty = create_segment(100, time=time)
    assert empty.should_roll(RollParams(LONG_MAX, 50, NO_TIMESTAMP, 101, 50, now)) is False
    assert empty.should_roll(RollParams(LONG_MAX, 50, NO_TIMESTAMP, 101, 51, now)) is True


@pytest.mark.parametrize("jitter_ms", [0, 100])
def test_should_roll_on_time_with_timestamps(create_segment: SegmentFactory, impl: ModuleType,
                                             jitter_ms: int) -> None:
    """With timestamps the segment's age is the incoming max timestamp minus the first batch's, compared
    to segment.ms - jitter; the wall clock does not matter."""
    time = MockTime()
    seg = create_segment(40, time=time, jitter_ms=jitter_ms)
    seg.append(40, 1000, 40, MemoryRecords.with_records([(None, b"a", 1000)], base_offset=40))
    time.sleep(10**9)
    now = time.milliseconds()
    limit = 1000 + 500 - jitter_ms
    assert seg.time_waited_for_roll(now, limit) == 500 - jitter_ms
    assert seg.should_roll(RollParams(500, INT32_MAX, limit, 41, 10, now)) is False
    assert seg.should_roll(RollParams(500, INT32_MAX, limit + 1, 41, 10, now)) is True
    # only the first batch counts
    seg.append(41, 5000, 41, MemoryRecords.with_records([(None, b"b", 5000)], base_offset=41))
    assert seg.get_first_batch_timestamp() == 1000
    assert seg.should_roll(RollParams(500, INT32_MAX, limit, 42, 10, now)) is False


@pytest.mark.parametrize("jitter_ms", [0, 100])
def test_should_roll_on_time_without_timestamps(create_segment: SegmentFactory, impl: ModuleType,
                                                jitter_ms: int) -> None:
    """Without timestamps (v0, or NO_TIMESTAMP) the age is now - created; an empty segment never rolls for
    time."""
    time = MockTime()
    seg = create_segment(40, time=time, jitter_ms=jitter_ms)
    empty = create_segment(100, time=time, jitter_ms=jitter_ms)
    seg.append(40, NO_TIMESTAMP, -1, MemoryRecords.with_records([(None, b"a")], magic=0, base_offset=40))
    time.sleep(500 - jitter_ms)
    now = time.milliseconds()
    assert seg.time_waited_for_roll(now, NO_TIMESTAMP) == 500 - jitter_ms
    assert seg.should_roll(RollParams(500, INT32_MAX, NO_TIMESTAMP, 41, 10, now)) is False
    # an incoming timestamp does not matter when the first batch has none
    assert seg.should_roll(RollParams(500, INT32_MAX, 10**12, 41, 10, now)) is False
    time.sleep(1)
    now = time.milliseconds()
    assert seg.should_roll(RollParams(500, INT32_MAX, NO_TIMESTAMP, 41, 10, now)) is True
    time.sleep(10**6)
    assert empty.should_roll(RollParams(500, INT32_MAX, NO_TIMESTAMP, 101, 10, time.milliseconds())) is False


def test_should_roll_on_full_offset_index(create_segment: SegmentFactory, impl: ModuleType) -> None:
    seg = create_segment(40, index_interval_bytes=0, offset_index_bytes=16)
    params = RollParams(LONG_MAX, INT32_MAX, NO_TIMESTAMP, 50, 10, 0)
    for offset in (40, 41):
        seg.append(offset, NO_TIMESTAMP, -1, records(offset, "x"))
        assert seg.should_roll(params) is False
    seg.append(42, NO_TIMESTAMP, -1, records(42, "x"))
    assert seg.offset_index.entries == 2
    assert seg.offset_index.is_full()
    assert seg.should_roll(params) is True


def test_should_roll_on_full_time_index(create_segment: SegmentFactory, impl: ModuleType) -> None:
    """The time index keeps its last slot for the roll: 3 slots are full at 2 entries."""
    seg = create_segment(40, index_interval_bytes=0, time_index_bytes=36)
    params = RollParams(LONG_MAX, INT32_MAX, NO_TIMESTAMP, 50, 10, 0)
    for offset in (40, 41):
        seg.append(offset, offset * 10, offset, records(offset, "x"))
        assert seg.should_roll(params) is False
    seg.append(42, 420, 42, records(42, "x"))
    assert seg.time_index.entries == 2
    assert seg.time_index.is_full()
    assert not seg.offset_index.is_full()
    assert seg.should_roll(params) is True


def test_should_roll_on_offset_overflow(create_segment: SegmentFactory, impl: ModuleType) -> None:
    seg = create_segment(40)
    seg.append(40, NO_TIMESTAMP, -1, records(40, "x"))

    def params(max_offset: int) -> RollParams:
        return RollParams(LONG_MAX, INT32_MAX, NO_TIMESTAMP, max_offset, 10, 0)

    assert seg.should_roll(params(40 + INT32_MAX)) is False
    assert seg.should_roll(params(41 + INT32_MAX)) is True
    assert seg.should_roll(params(39)) is True


# --- shutdown and read-only -------------------------------------------------------------------------

def test_close_writes_the_final_time_index_entry(tmp_path: Path, impl: ModuleType) -> None:
    seg = LogSegment.open(tmp_path, 0, config(**{"index.interval.bytes": 1000}), MockTime())
    for i in range(5):
        seg.append(i, 10 * i, i, records(i, "v"))
    assert seg.time_index.entries == 0
    seg.close()
    reopened = LogSegment.open(tmp_path, 0, config(), MockTime(), file_already_exists=True)
    try:
        assert reopened.time_index.entries == 1
        assert reopened.time_index.last_entry == TimestampOffset(40, 4)
        assert reopened.largest_timestamp() == 40
        assert reopened.read_next_offset() == 5
    finally:
        reopened.close()


def test_read_only_segment(tmp_path: Path, impl: ModuleType) -> None:
    """A segment opened read-only reads like any other but never changes a byte."""
    seg = LogSegment.open(tmp_path, 40, config(), MockTime())
    for i in range(40, 50):
        seg.append(i, i * 10, i, records(i, f"msg{i}"))
    seg.close()
    files = [log_filename(tmp_path, 40), index_filename(tmp_path, 40), time_index_filename(tmp_path, 40)]
    before = [p.read_bytes() for p in files]
    ro = LogSegment.open(tmp_path, 40, config(), MockTime(), read_only=True)
    try:
        read = ro.read(45, 1000)
        assert read is not None
        assert [r[0] for r in tuples(read.records)] == list(range(45, 50))
        assert ro.find_offset_by_timestamp(431) == TimestampAndOffset(440, 44)
        assert ro.read_next_offset() == 50
        with pytest.raises(ReadOnlyError):
            ro.append(50, 500, 50, records(50, "x"))
        with pytest.raises(ReadOnlyError):
            ro.recover()
        with pytest.raises(ReadOnlyError):
            ro.truncate_to(45)
        with pytest.raises(ReadOnlyError):
            ro.change_file_suffixes("", ".deleted")
        with pytest.raises(ReadOnlyError):
            ro.delete()
        ro.flush()
    finally:
        ro.close()
    assert [p.read_bytes() for p in files] == before


# --- random oracle --------------------------------------------------------------------------------

@dataclass
class Entry:
    """One log entry as the model knows it."""

    base: int
    last: int
    position: int
    size: int
    max_timestamp: int
    records: list[tuple[int, int]]  # (offset, timestamp)


def _random_append(rng: random.Random, next_offset: int, clock: int) -> MemoryRecords:
    """One log entry: a v2 batch of any codec, a v1 compressed wrapper, or a single v1 message; the
    timestamps wander around ``clock``, so they are not in order."""
    magic = rng.choice((1, 2))
    if magic == 2:
        codec = rng.choice(("none", "gzip", "snappy", "lz4", "zstd"))
        count = rng.randint(1, 6)
    else:
        codec = rng.choice(("none", "gzip", "snappy", "lz4"))
        count = 1 if codec == "none" else rng.randint(1, 6)  # one entry per append
    rows = [(rng.choice((None, b"k%d" % rng.randrange(100))), rng.randbytes(rng.randrange(0, 300)),
             clock + rng.randrange(-300, 300)) for _ in range(count)]
    return MemoryRecords.with_records(rows, magic=magic, compression=codec, base_offset=next_offset)


def _expected_timestamp_search(model: list[Entry], target: int, start: int) -> TimestampAndOffset | None:
    for entry in model:
        if entry.max_timestamp >= target:
            for offset, ts in entry.records:
                if ts >= target and offset >= start:
                    return TimestampAndOffset(ts, offset)
    return None


def _index_state(seg: LogSegment, base: int, end: int) -> tuple[list[Any], list[Any], dict[int, Any]]:
    return ([seg.offset_index.entry(n) for n in range(seg.offset_index.entries)],
            [seg.time_index.entry(n) for n in range(seg.time_index.entries)],
            {o: seg.offset_index.lookup(o) for o in range(base - 2, end + 3)})


@pytest.mark.parametrize("seed", range(6))
def test_random_oracle(tmp_path: Path, impl: ModuleType, seed: int) -> None:
    """Random entries (v1 and v2, every codec, gaps in the offsets, unordered timestamps) against a list
    model: every read, translation and timestamp search, before and after recovery, the indexes recovery
    rebuilds, and the same again after a reopen."""
    rng = random.Random(seed)
    base = (0, 1000, 2**40)[seed % 3]
    cfg = config(**{"index.interval.bytes": (0, 100, 400)[seed // 2], "segment.index.bytes": 4000})
    seg = LogSegment.open(tmp_path, base, cfg, MockTime())
    try:
        model: list[Entry] = []
        next_offset = base + rng.randrange(3)
        clock = 10_000
        for _ in range(50):
            if rng.random() < 0.3:
                next_offset += rng.randint(1, 20)
            clock += rng.randrange(0, 200)
            ms = _random_append(rng, next_offset, clock)
            batch = next(ms.batches())
            entry = Entry(batch.base_offset, batch.last_offset, seg.size(), ms.size_in_bytes(),
                          batch.max_timestamp, [(r.offset, r.timestamp) for r in ms.records()])
            assert entry.size == batch.size_in_bytes  # one entry per append
            assert [o for o, _ in entry.records] == list(range(entry.base, entry.last + 1))
            seg.append(batch.last_offset, batch.max_timestamp, batch.last_offset, ms)
            model.append(entry)
            next_offset = batch.last_offset + 1
        end = model[-1].last + 1
        assert seg.read_next_offset() == end
        assert seg.size() == sum(e.size for e in model)
        containing = {o: e for e in model for o, _ in e.records}
        assert len(containing) < end - base  # there are gaps

        def check_reads() -> dict[int, tuple[int, int, int]]:
            seen = {}
            for offset in range(base - 2, end + 3):
                expected = containing.get(offset) or next((e for e in model if e.base > offset), None)
                read = seg.read(offset, 10 * MB)
                if expected is None:
                    assert offset >= end
                    assert read is None, offset
                    assert seg.translate_offset(offset) is None
                    continue
                assert read is not None, offset
                assert read.fetch_offset_metadata == LogOffsetMetadata(offset, base, expected.position)
                assert read.first_entry_incomplete is False
                assert read.records.size_in_bytes() == seg.size() - expected.position
                first = next(iter(read.records.batches()))
                seen[offset] = (first.position, first.last_offset, first.size_in_bytes)
                assert seen[offset] == (expected.position, expected.last, expected.size), offset
                assert seg.translate_offset(offset) == \
                    LogOffsetPosition(expected.last, expected.position, expected.size)
                small = seg.read(offset, 1, min_one_message=True)
                assert small is not None
                assert small.records.size_in_bytes() == expected.size
                assert small.first_entry_incomplete is False
                max_size = rng.randint(1, 2 * expected.size)
                limited = seg.read(offset, max_size)
                assert limited is not None
                assert limited.first_entry_incomplete is (max_size < expected.size)
                assert limited.records.size_in_bytes() == min(max_size, seg.size() - expected.position)
                assert [b.last_offset for b in limited.records.batches()] == [
                    e.last for e in model
                    if expected.position <= e.position and e.position + e.size <= expected.position + max_size]
            return seen

        low = min(ts for e in model for _, ts in e.records)
        targets = sorted({rng.randrange(low - 10, clock + 310) for _ in range(30)}
                         | {e.max_timestamp for e in model})
        starts = [base, model[len(model) // 2].base, end]

        def check_timestamps() -> None:
            for target in targets:
                for start in starts:
                    assert seg.find_offset_by_timestamp(target, start) == \
                        _expected_timestamp_search(model, target, start), (target, start)

        reads_before = check_reads()
        check_timestamps()
        offset_entries, time_entries, lookups = _index_state(seg, base, end)
        assert len(offset_entries) >= 10
        assert len(time_entries) >= 3
        max_ts = max(e.max_timestamp for e in model)
        owner = next(e for e in model if e.max_timestamp == max_ts)  # the first to reach it
        assert (seg.max_timestamp_so_far, seg.offset_of_max_timestamp_so_far) == (max_ts, owner.last)

        assert seg.recover() == 0

        recovered = _index_state(seg, base, end)
        assert recovered[0] == offset_entries
        assert recovered[2] == lookups
        # recovery also writes the entry that close would write (the reserved slot)
        assert recovered[1][:len(time_entries)] == time_entries
        assert recovered[1][len(time_entries):] in ([], [TimestampOffset(max_ts, owner.last)])
        assert (seg.max_timestamp_so_far, seg.offset_of_max_timestamp_so_far) == (max_ts, owner.last)
        assert seg.read_next_offset() == end
        assert check_reads() == reads_before
        check_timestamps()

        seg.close()
        seg = LogSegment.open(tmp_path, base, cfg, MockTime(), file_already_exists=True)
        assert _index_state(seg, base, end)[0] == offset_entries
        assert seg.time_index.last_entry == TimestampOffset(max_ts, owner.last)
        assert check_reads() == reads_before
        check_timestamps()
    finally:
        seg.close()


def test_close_after_delete(create_segment: SegmentFactory, impl: ModuleType) -> None:
    """Kafka's teardown closes segments a test deleted (testRecoveryWithCorruptMessage): close after
    deleteIfExists swallows the final time-index append and re-creates no file; deleting again finds
    nothing."""
    seg = create_segment(0)
    seg.append(1, 10, 1, records(0, "a", "b"))
    seg.append(2, 20, 2, records(2, "c"))
    files = [seg.log.file, seg.offset_index.file, seg.time_index.file]
    assert all(p.exists() for p in files)
    seg.delete()
    assert not any(p.exists() for p in files)
    assert repr(seg).startswith("LogSegment(baseOffset=0, size=")  # Kafka: lastModified of a gone file is 0
    seg.close()
    assert not any(p.exists() for p in files)
    seg.delete()
    assert not any(p.exists() for p in files)


# --- the leader-epoch cache and the transaction index -------------------------------------------------


def test_recover_transaction_index(create_segment: SegmentFactory, tmp_path: Path) -> None:
    """testRecoverTransactionIndex: recovery replays the transactional batches into the producer state it is given
    and writes the abort to the ``.txnindex`` with the last stable offset the other open transaction leaves, also
    when the aborted transaction began in an earlier segment."""
    seg = create_segment(100)
    producer_epoch, partition_leader_epoch, sequence = 0, 15, 100
    pid1, pid2 = 5, 10

    def transactional(base: int, pid: int) -> MemoryRecords:
        return MemoryRecords.with_records([(None, b"a"), (None, b"b")], base_offset=base, producer_id=pid,
                                          producer_epoch=producer_epoch, base_sequence=sequence,
                                          is_transactional=True, partition_leader_epoch=partition_leader_epoch)

    def end_txn(control_type: ControlRecordType, pid: int, offset: int) -> MemoryRecords:
        return MemoryRecords.with_end_transaction_marker(pid, producer_epoch, EndTransactionMarker(control_type, 0),
                                                         base_offset=offset, timestamp=NO_TIMESTAMP)

    def new_producer_state_manager() -> ProducerStateManager:
        return ProducerStateManager(TopicPartition("topic", 0), tmp_path, 5 * 60 * 1000,
                                    ProducerStateManagerConfig(86_400_000, False), MockTime())

    seg.append(101, NO_TIMESTAMP, 100, transactional(100, pid1))
    seg.append(103, NO_TIMESTAMP, 102, transactional(102, pid2))
    seg.append(105, NO_TIMESTAMP, 104, MemoryRecords.with_records([(None, b"a"), (None, b"b")], base_offset=104,
                                                                   partition_leader_epoch=partition_leader_epoch))
    # abort pid2's transaction (the last stable offset is 100: pid1's has not completed), then commit pid1's
    seg.append(106, NO_TIMESTAMP, 106, end_txn(ControlRecordType.ABORT, pid2, 106))
    seg.append(107, NO_TIMESTAMP, 107, end_txn(ControlRecordType.COMMIT, pid1, 107))

    def recover_and_check_abort(state_manager: ProducerStateManager, first_offset: int) -> None:
        seg.recover(state_manager)
        assert state_manager.map_end_offset == 108
        aborted_txns = seg.txn_index.all_aborted_txns()
        assert len(aborted_txns) == 1
        aborted = aborted_txns[0]
        assert (aborted.producer_id, aborted.first_offset, aborted.last_offset, aborted.last_stable_offset) == (
            pid2, first_offset, 106, 100)

    recover_and_check_abort(new_producer_state_manager(), 102)
    # again, with pid2's transaction begun in a previous segment
    state_manager = new_producer_state_manager()
    state_manager.load_producer_entry(ProducerStateEntry(pid2, producer_epoch, 0, NO_TIMESTAMP, 75,
                                                         BatchMetadata(10, 10, 5, NO_TIMESTAMP)))
    recover_and_check_abort(state_manager, 75)


def test_recovery_rebuilds_epoch_cache(create_segment: SegmentFactory, tmp_path: Path) -> None:
    """testRecoveryRebuildsEpochCache: recovery assigns each batch's epoch above the cache's latest from the
    batch's base offset."""
    seg = create_segment(0)
    cache = LeaderEpochFileCache(TopicPartition("topic", 0), LeaderEpochCheckpoint(tmp_path / "checkpoint"),
                                 MockTime().scheduler)
    for base, epoch in ((104, 0), (106, 1), (108, 1), (110, 2)):
        seg.append(base + 1, NO_TIMESTAMP, base, MemoryRecords.with_records(
            [(None, b"a"), (None, b"b")], base_offset=base, partition_leader_epoch=epoch))
    seg.recover(leader_epoch_cache=cache)
    assert cache.epoch_entries() == [EpochEntry(0, 104), EpochEntry(1, 106), EpochEntry(2, 110)]


def test_recovery_assigns_only_epochs_above_the_latest(create_segment: SegmentFactory, tmp_path: Path) -> None:
    """Kafka's rule in recover: a batch without an epoch (-1), a v0/v1 batch, and an epoch not above the
    cache's latest (even a lower one after a higher) assign nothing; entries already there stay; a batch past
    the first invalid one is never read."""
    seg = create_segment(0)
    cache = LeaderEpochFileCache(TopicPartition("topic", 0), LeaderEpochCheckpoint(tmp_path / "checkpoint"),
                                 MockTime().scheduler)
    cache.assign(1, 0)
    for base, epoch in ((0, 1), (2, -1), (3, 3), (4, None), (5, 2), (6, 5)):
        if epoch is None:
            seg.append(4, 40, 4, records(4, "legacy"))
        else:
            seg.append(base, NO_TIMESTAMP, base, MemoryRecords.with_records([(None, b"x")], base_offset=base,
                                                                            partition_leader_epoch=epoch))
    seg.append(7, NO_TIMESTAMP, 7, MemoryRecords.with_records([(None, b"y")], base_offset=7,
                                                              partition_leader_epoch=9))
    # corrupt the last batch's CRC: recovery stops before it
    size = seg.size()
    with open(seg.log.file, "r+b") as f:
        f.seek(size - 1)
        last = f.read(1)
        f.seek(size - 1)
        f.write(bytes([last[0] ^ 0xFF]))
    assert seg.recover(leader_epoch_cache=cache) > 0
    assert cache.epoch_entries() == [EpochEntry(1, 0), EpochEntry(3, 3), EpochEntry(5, 6)]
    assert LeaderEpochCheckpoint(tmp_path / "checkpoint").read() == cache.epoch_entries()


def test_recovery_without_a_cache_and_of_an_empty_segment(create_segment: SegmentFactory, tmp_path: Path) -> None:
    seg = create_segment(0)
    cache = LeaderEpochFileCache(TopicPartition("topic", 0), LeaderEpochCheckpoint(tmp_path / "checkpoint"),
                                 MockTime().scheduler)
    assert seg.recover(leader_epoch_cache=cache) == 0
    assert cache.epoch_entries() == []
    seg.append(0, NO_TIMESTAMP, 0, MemoryRecords.with_records([(None, b"x")], partition_leader_epoch=4))
    assert seg.recover() == 0
    assert seg.read_next_offset() == 1


@dataclass(frozen=True)
class Completed:
    """A completed transaction as the producer state hands it over (Kafka: ``CompletedTxn``)."""

    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


def test_update_txn_index_writes_aborts_only(create_segment: SegmentFactory, tmp_path: Path) -> None:
    """``updateTxnIndex``: an aborted transaction becomes an entry with the last stable offset given; a committed
    one writes nothing, and the file exists only once an abort was written."""
    seg = create_segment(100)
    txn_file = txn_index_filename(tmp_path, 100)
    seg.update_txn_index(Completed(5, 100, 104, is_aborted=False), 105)
    assert not txn_file.exists()
    seg.update_txn_index(Completed(7, 101, 106, is_aborted=True), 100)
    seg.update_txn_index(Completed(8, 107, 110, is_aborted=True), 111)
    assert seg.txn_index.file == txn_file
    assert seg.txn_index.all_aborted_txns() == [AbortedTxn(7, 101, 106, 100), AbortedTxn(8, 107, 110, 111)]
    assert txn_file.stat().st_size == 2 * 34
    with pytest.raises(IllegalArgumentError):
        seg.update_txn_index(Completed(9, 90, 110, is_aborted=True), 111)
    # collectAbortedTxns: the overlapping ones, complete once a last stable offset reaches the upper bound
    assert seg.collect_aborted_txns(100, 105) == TxnIndexSearchResult([AbortedTxn(7, 101, 106, 100)], True)
    assert seg.collect_aborted_txns(100, 200) == TxnIndexSearchResult(
        [AbortedTxn(7, 101, 106, 100), AbortedTxn(8, 107, 110, 111)], False)
    assert seg.collect_aborted_txns(107, 111) == TxnIndexSearchResult([AbortedTxn(8, 107, 110, 111)], True)
    assert seg.collect_aborted_txns(111, 200) == TxnIndexSearchResult([], False)


def test_txn_index_truncated_flushed_and_emptied_by_recovery(create_segment: SegmentFactory) -> None:
    seg = create_segment(0)
    for offset in range(10):
        seg.append(offset, NO_TIMESTAMP, offset, MemoryRecords.with_records([(None, b"v")], base_offset=offset))
    seg.update_txn_index(Completed(1, 0, 3, is_aborted=True), 4)
    seg.update_txn_index(Completed(2, 4, 6, is_aborted=True), 7)
    seg.update_txn_index(Completed(3, 7, 8, is_aborted=True), 9)
    seg.flush()
    seg.truncate_to(6)
    assert seg.txn_index.all_aborted_txns() == [AbortedTxn(1, 0, 3, 4)]
    # the last offset is the kept entry's again, so an abort at 5 may follow
    seg.update_txn_index(Completed(2, 4, 5, is_aborted=True), 6)
    assert [t.last_offset for t in seg.txn_index.all_aborted_txns()] == [3, 5]
    seg.recover()
    assert seg.txn_index.all_aborted_txns() == []
    assert seg.txn_index.file.stat().st_size == 0
    assert seg.read_next_offset() == 6


def test_sanity_check_refuses_an_entry_below_the_base_offset(create_segment: SegmentFactory,
                                                            tmp_path: Path) -> None:
    """``sanityCheck`` checks the transaction index: an entry ending below the segment's base offset is a
    CorruptIndexError (which makes the loader rebuild the segment)."""
    seg = create_segment(100)
    seg.append(100, NO_TIMESTAMP, 100, MemoryRecords.with_records([(None, b"v")], base_offset=100))
    seg.flush()
    seg.sanity_check(False)
    txn_index_filename(tmp_path, 100).write_bytes(AbortedTxn(1, 10, 99, 100).to_bytes())
    reopened = create_segment(100)
    with pytest.raises(CorruptIndexError, match="less than start offset 100"):
        reopened.sanity_check(False)


def test_sanity_check_leaves_the_offset_and_time_indexes_to_check_index_files(create_segment: SegmentFactory,
                                                                               tmp_path: Path) -> None:
    """LogSegment.sanityCheck (3.8.0) checks that the offset index file exists and checks the transaction index,
    not the offset and time indexes (Kafka leaves them to recovery or trusts them); kafkalog's
    ``check_index_files`` checks those two, as 0.10.1.1's loader did, on the files, without opening them."""
    seg = create_segment(100, index_interval_bytes=1)
    for offset in range(100, 104):
        seg.append(offset, 1_000 + offset, offset, MemoryRecords.with_records([(None, b"v", 1_000 + offset)],
                                                                             base_offset=offset))
    seg.close()
    index, time_index = index_filename(tmp_path, 100), time_index_filename(tmp_path, 100)
    index.write_bytes(index.read_bytes() + b"\x01\x02\x03")  # not a whole number of 8-byte entries
    time_index.write_bytes(time_index.read_bytes() + (0).to_bytes(8, "big") + (3).to_bytes(4, "big"))
    reopened = create_segment(100)
    reopened.sanity_check(False)
    with pytest.raises(CorruptIndexError, match=f"Index file {index} is corrupt, found 27 bytes"):
        reopened.check_index_files()
    assert not reopened._lazy_offset_index.is_loaded and not reopened._lazy_time_index.is_loaded
    index.write_bytes(index.read_bytes()[:-3])
    with pytest.raises(CorruptIndexError, match="last timestamp is 0 which is less than the first timestamp 1101"):
        reopened.check_index_files()

    index.unlink()
    with pytest.raises(FileNotFoundError, match=f"Offset index file {index} does not exist"):
        reopened.sanity_check(False)


def test_txn_index_follows_suffix_changes_parent_dir_and_deletion(create_segment: SegmentFactory,
                                                                  tmp_path: Path) -> None:
    """``changeFileSuffixes``, ``updateParentDir``, ``deleteIfExists`` and ``deleted`` take the ``.txnindex`` along
    with the log and its other indexes (before, a swap or a deletion left it behind)."""
    seg = create_segment(40)
    seg.append(40, NO_TIMESTAMP, 40, MemoryRecords.with_records([(None, b"v")], base_offset=40))
    seg.update_txn_index(Completed(1, 40, 40, is_aborted=True), 41)
    assert seg.offset_index.entries == seg.time_index.entries == 0  # opened, so their files exist
    seg.change_file_suffixes("", ".deleted")
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "00000000000000000040.index.deleted", "00000000000000000040.log.deleted",
        "00000000000000000040.timeindex.deleted", "00000000000000000040.txnindex.deleted"]
    seg.change_file_suffixes(".deleted", "")
    assert seg.txn_index.file == txn_index_filename(tmp_path, 40)
    moved = tmp_path / "moved"
    moved.mkdir()
    for path in tmp_path.glob("0*"):
        path.rename(moved / path.name)
    seg.update_parent_dir(moved)
    assert seg.txn_index.file == txn_index_filename(moved, 40)
    seg.update_txn_index(Completed(1, 41, 42, is_aborted=True), 43)  # the open descriptor followed the rename
    assert [t.last_offset for t in seg.txn_index.all_aborted_txns()] == [40, 42]
    assert not seg.deleted()
    seg.delete_if_exists()
    assert seg.deleted()
    assert list(moved.iterdir()) == []


def test_close_and_close_handlers_release_the_txn_index(create_segment: SegmentFactory) -> None:
    for close in ("close", "close_handlers"):
        seg = create_segment(0 if close == "close" else 10)
        seg.update_txn_index(Completed(1, 0, 3, is_aborted=True), 4)
        getattr(seg, close)()
        # a closed index reads as empty, as Kafka's does; the file keeps the entry
        assert seg.txn_index.all_aborted_txns() == []
        assert seg.txn_index.file.stat().st_size == 34


def test_read_only_segment_reads_but_never_writes_the_txn_index(tmp_path: Path, impl: ModuleType) -> None:
    seg = LogSegment.open(tmp_path, 0, config())
    seg.append(0, NO_TIMESTAMP, 0, MemoryRecords.with_records([(None, b"v")]))
    seg.update_txn_index(Completed(1, 0, 0, is_aborted=True), 1)
    seg.close()
    data = txn_index_filename(tmp_path, 0).read_bytes()
    ro = LogSegment.open(tmp_path, 0, config(), read_only=True)
    try:
        assert not ro.txn_index.writable
        assert ro.collect_aborted_txns(0, 1) == TxnIndexSearchResult([AbortedTxn(1, 0, 0, 1)], True)
        ro.sanity_check(False)
        with pytest.raises(ReadOnlyError):
            ro.update_txn_index(Completed(1, 1, 1, is_aborted=True), 2)
        with pytest.raises(ReadOnlyError):
            ro.delete_if_exists()
    finally:
        ro.close()
    assert txn_index_filename(tmp_path, 0).read_bytes() == data
    absent = LogSegment.absent(tmp_path / "none", 0)
    assert absent.collect_aborted_txns(0, 10) == TxnIndexSearchResult([], False)


def test_an_append_of_several_batches_is_indexed_batch_by_batch(create_segment: SegmentFactory,
                                                                impl: ModuleType) -> None:
    """LogSegment.append (3.9.2): each batch of the append in turn may take an index entry (its last offset, its
    first byte) once more than ``index.interval.bytes`` were written since the last, and moves the largest
    timestamp so far (with its last offset); 3.8 indexed the whole append once (found by the oracle on a
    cleaning, whose appends hold several batches: ``tests/oracle/scenarios/cleaned-batches-indexed-each.json``)."""
    seg = create_segment(40, index_interval_bytes=1)
    batches = [MemoryRecords.with_records([(None, b"v%d" % i, 1000 + 10 * i)], base_offset=40 + i) for i in range(3)]
    seg.append(42, 1020, 42, MemoryRecords(b"".join(bytes(b.buffer) for b in batches)))
    sizes = [b.size_in_bytes() for b in batches]
    assert seg.offset_index.entries == 2
    assert [seg.offset_index.entry(i) for i in range(2)] == [(41, sizes[0]), (42, sizes[0] + sizes[1])]
    assert [tuple(seg.time_index.entry(i)) for i in range(2)] == [(1010, 41), (1020, 42)]
    assert (seg.max_timestamp_so_far, seg.offset_of_max_timestamp_so_far) == (1020, 42)

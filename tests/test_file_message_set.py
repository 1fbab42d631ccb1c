"""FileMessageSet against Kafka's FileRecordsTest (clients, 3.8.0) and FileMessageSetTest (0.10.1.1).

Spec §3.3 and §7.5.  The fixture file holds Kafka's three single-record v2 batches with the values
``abcd``, ``efgh`` and ``ijkl`` at offsets 0, 1 and 2.  Kafka's mock-channel cases (truncate called or
not, the 2 GiB overflow, the oversize file) use a real file here: a counted ``truncate`` on the channel,
and sparse files of 2 GiB, which cost no disk.  Every test runs on both kernel twins (``impl``).
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from kafkalog import MemoryRecords
from kafkalog.errors import (
    CorruptRecordError,
    IllegalArgumentError,
    IllegalStateError,
    KafkaLogError,
    KafkaStorageError,
    ReadOnlyError,
)
from kafkalog.file_message_set import FileMessageSet, LogOffsetPosition, TimestampAndOffset
from kafkalog.scheduler import MockTime

INT32_MAX = 2**31 - 1
VALUES = [b"abcd", b"efgh", b"ijkl"]
TIME = MockTime(current_time_ms=1_700_000_000_000)
TS = TIME.milliseconds()  # Kafka stamps the records with the wall clock; a fixed clock keeps them stable


def batch_records(offset: int, value: bytes, timestamp: int = TS) -> MemoryRecords:
    """One v2 batch of one record, key null (Kafka's ``append`` helper of FileRecordsTest)."""
    return MemoryRecords.with_records([(None, value, timestamp)], base_offset=offset)


def append_values(fms: FileMessageSet, values: list[bytes]) -> None:
    for offset, value in enumerate(values):
        fms.append(batch_records(offset, value))
    fms.flush()


def shallow(fms: FileMessageSet) -> list[tuple[int, int, bytes]]:
    """The set's batches as (file position, last offset, bytes): what Kafka's batch equality compares."""
    return [(b.position, b.last_offset, b.raw_bytes()) for b in fms.batches()]


def values_of(fms: FileMessageSet) -> list[bytes | None]:
    return [r.value for r in fms.records()]


@pytest.fixture
def fms(tmp_path: Path, impl: ModuleType) -> Iterator[FileMessageSet]:
    """Kafka's ``setup``: a new file with the three batches."""
    records = FileMessageSet.open(tmp_path / "fixture.log")
    append_values(records, VALUES)
    yield records
    records.close()


def test_fixture_layout(fms: FileMessageSet, impl: ModuleType) -> None:
    # Three v2 batches of one 4-byte record, null key: 61 + 11 = 72 bytes each.
    assert [(p, o, len(b)) for p, o, b in shallow(fms)] == [(0, 0, 72), (72, 1, 72), (144, 2, 72)]
    assert fms.size_in_bytes() == 216
    assert [(r.offset, r.timestamp, r.key, r.value) for r in fms.records()] == [
        (0, TS, None, b"abcd"), (1, TS, None, b"efgh"), (2, TS, None, b"ijkl")]


def test_file_size(fms: FileMessageSet, impl: ModuleType) -> None:
    """testFileSize: the cached size follows the file as records are appended."""
    assert fms.channel.size() == fms.size_in_bytes() == 216
    for i in range(20):
        written = fms.append(MemoryRecords.with_records([(None, b"abcd")]))
        assert written == 72
        assert fms.channel.size() == fms.size_in_bytes() == 216 + 72 * (i + 1)
    assert len(list(fms.batches())) == 23


def test_iteration_over_partial_and_truncation(fms: FileMessageSet, impl: ModuleType) -> None:
    """testIterationOverPartialAndTruncation: 0, 2, 4, 5 then 6 zero bytes written to the end of the file
    behind the set's back (Kafka writes them through the channel, so the set's size does not count them)
    never change what iteration and search see."""
    fd = fms.channel.fd
    assert fd is not None
    written = 0
    for size in (0, 2, 4, 5, 6):
        os.pwrite(fd, b"\x00" * size, 216 + written)
        written += size
        assert fms.channel.size() == 216 + written
        assert fms.size_in_bytes() == 216
        assert values_of(fms) == VALUES
        assert [b.last_offset for b in fms.batches()] == [0, 1, 2]
        assert fms.search_for(2) == LogOffsetPosition(2, 144, 72)
        assert fms.search_for(3) is None


def test_trailing_bytes_shorter_than_header_up_to_magic_are_invisible(
    fms: FileMessageSet, impl: ModuleType
) -> None:
    """The same zeros counted in the set (appended, or found in the file when it is opened): Kafka's file
    reader ends the iteration when ``position >= end - 17`` (HEADER_SIZE_UP_TO_MAGIC, spec §1.7 rule 1),
    before it reads a size, so up to 17 trailing bytes of any content are invisible; Kafka's test writes
    exactly 0 + 2 + 4 + 5 + 6 = 17."""
    written = 0
    for size in (0, 2, 4, 5, 6):
        fms.append(b"\x00" * size)
        written += size
        assert fms.size_in_bytes() == 216 + written
        assert values_of(fms) == VALUES
        assert [b.last_offset for b in fms.batches()] == [0, 1, 2]
        assert fms.search_for(2) == LogOffsetPosition(2, 144, 72)
        assert fms.search_for(3) is None
    assert written == 17
    with FileMessageSet(fms.file, writable=False) as reopened:
        assert reopened.size_in_bytes() == 233
        assert values_of(reopened) == VALUES
        assert reopened.search_for(3) is None


def test_partial_trailing_batch_is_invisible(tmp_path: Path, impl: ModuleType) -> None:
    """A batch cut short at the end of the file (a write in progress, or a crash mid-write) is seen by
    neither iteration nor search, whatever the length of the part written."""
    path = tmp_path / "partial.log"
    whole = b"".join(batch_records(o, v).buffer for o, v in enumerate(VALUES))
    tail = batch_records(3, b"mnop").buffer
    for cut in (1, 2, 4, 5, 6, 8, 11, 12, 16, 17, 18, 30, 61, len(tail) - 1):
        path.write_bytes(whole + tail[:cut])
        with FileMessageSet(path) as fms:
            assert fms.size_in_bytes() == 216 + cut
            assert values_of(fms) == VALUES
            assert fms.search_for(3) is None
            assert fms.search_for(2) == LogOffsetPosition(2, 144, 72)
            assert fms.scan().valid_bytes == 216
    path.write_bytes(whole + tail)
    with FileMessageSet(path) as fms:
        assert values_of(fms) == [*VALUES, b"mnop"]
        assert fms.search_for(3) == LogOffsetPosition(3, 216, len(tail))


def test_corrupt_size_field_is_an_error(tmp_path: Path, impl: ModuleType) -> None:
    """Past the last 17 bytes a size below the 14-byte minimum is corrupt, not partial (spec §1.7 rule 2)."""
    path = tmp_path / "corrupt.log"
    path.write_bytes(batch_records(0, b"abcd").buffer + b"\x00" * 18)
    with FileMessageSet(path) as fms:
        with pytest.raises(CorruptRecordError) as info:
            list(fms.batches())
        assert info.value.position == 72


def test_iteration_doesnt_change_position(fms: FileMessageSet, impl: ModuleType) -> None:
    """testIterationDoesntChangePosition: reading does not move where the next append goes."""
    assert values_of(fms) == VALUES
    assert [fms.search_for(o) for o in range(3)] == [
        LogOffsetPosition(0, 0, 72), LogOffsetPosition(1, 72, 72), LogOffsetPosition(2, 144, 72)]
    assert fms.size_in_bytes() == fms.channel.size() == 216
    fms.append(batch_records(3, b"mnop"))
    assert shallow(fms)[-1][:2] == (216, 3)
    assert values_of(fms) == [*VALUES, b"mnop"]


def test_read(fms: FileMessageSet, impl: ModuleType) -> None:
    """testRead: slices from 0, from the second batch, past the end, overflowing, nested."""
    size = fms.size_in_bytes()
    read = fms.read(0, size)
    assert read.size_in_bytes() == size
    assert shallow(read) == shallow(fms)
    items = shallow(read)
    first = len(items[0][2])
    second = len(items[1][2])
    rest = size - first

    # from the second batch to the end
    read = fms.read(first, size - first)
    assert read.size_in_bytes() == rest
    assert shallow(read) == items[1:]
    # the size reaches past the end of the file
    read = fms.read(first, size)
    assert read.size_in_bytes() == rest
    assert shallow(read) == items[1:]
    # position + size overflows an int
    read = fms.read(first, INT32_MAX)
    assert read.size_in_bytes() == rest
    assert shallow(read) == items[1:]
    # on a slice of a slice: the size past the end of the view
    read = fms.read(1, size - 1).read(first - 1, size)
    assert read.size_in_bytes() == rest
    assert shallow(read) == items[1:]
    # on a slice of a slice: position + size overflows
    read = fms.read(1, size - 1).read(first - 1, INT32_MAX)
    assert read.size_in_bytes() == rest
    assert shallow(read) == items[1:]
    # a single batch, the second
    read = fms.read(first, second)
    assert read.size_in_bytes() == second
    assert shallow(read) == [items[1]]
    assert [r.value for r in read.records()] == [b"efgh"]
    assert read.read_bytes() == items[1][2]
    # the method's other name, Kafka's modern ``slice``
    assert shallow(fms.slice(first, second)) == [items[1]]
    # a slice is a window: it does not grow with the file
    fms.append(batch_records(3, b"mnop"))
    assert read.size_in_bytes() == second
    assert shallow(read) == [items[1]]


def test_read_argument_checks(fms: FileMessageSet, impl: ModuleType) -> None:
    """Negative positions or sizes and a start past the end are refused (testOutOfRangeSlice)."""
    size = fms.size_in_bytes()
    with pytest.raises(IllegalArgumentError):
        fms.read(-1, 10)
    with pytest.raises(IllegalArgumentError):
        fms.read(0, -1)
    with pytest.raises(IllegalArgumentError):
        fms.read(size + 1, 15)
    with pytest.raises(IllegalArgumentError):
        fms.read(73, 10).read(11, 1)
    # the end itself is a valid, empty, start
    empty = fms.read(size, 15)
    assert empty.size_in_bytes() == 0
    assert list(empty.batches()) == []
    assert empty.read_bytes() == b""
    assert fms.read(10, 0).size_in_bytes() == 0


def test_search(fms: FileMessageSet, impl: ModuleType) -> None:
    """testSearch: by offset, from a position, a missing offset finds the next batch."""
    last = MemoryRecords.with_records([(None, b"test", TS)], base_offset=50)
    fms.append(last)
    batches = shallow(fms)
    sizes = [len(b) for _, _, b in batches]
    position = 0
    assert fms.search_for(0, 0) == LogOffsetPosition(0, position, sizes[0])
    position += sizes[0]
    assert fms.search_for(1, 0) == LogOffsetPosition(1, position, sizes[1])
    assert fms.search_for(1, position) == LogOffsetPosition(1, position, sizes[1])
    position += sizes[1] + sizes[2]
    assert fms.search_for(3, position) == LogOffsetPosition(50, position, sizes[3])
    assert fms.search_for(50, position) == LogOffsetPosition(50, position, sizes[3])
    # also from the start, and below the first offset
    assert fms.search_for(3) == LogOffsetPosition(50, 216, sizes[3])
    assert fms.search_for(-5) == LogOffsetPosition(0, 0, sizes[0])
    # a start past a batch skips it even when it holds the offset
    assert fms.search_for(0, sizes[0]) == LogOffsetPosition(1, sizes[0], sizes[1])
    # nothing at or after the offset, or nothing left to read
    assert fms.search_for(51) is None
    assert fms.search_for(0, fms.size_in_bytes()) is None


def test_search_matches_last_offset_of_a_batch(tmp_path: Path, impl: ModuleType) -> None:
    """Modern ``searchForOffsetWithSize`` compares the batch's last offset, so an offset inside a
    multi-record batch finds that batch; legacy entries are matched by their (last) offset."""
    with FileMessageSet.open(tmp_path / "multi.log") as fms:
        v2 = MemoryRecords.with_records([(None, b"a", 1), (None, b"b", 2), (None, b"c", 3)], base_offset=10)
        wrapper = MemoryRecords.with_records([(None, b"d", 4), (None, b"e", 5)], magic=1, base_offset=13,
                                             compression="gzip")
        plain_v0 = MemoryRecords.with_records([(None, b"f"), (None, b"g")], magic=0, base_offset=20)
        for records in (v2, wrapper, plain_v0):
            fms.append(records)
        p1 = v2.size_in_bytes()
        p2 = p1 + wrapper.size_in_bytes()
        v0_size = plain_v0.size_in_bytes() // 2
        assert fms.search_for(11) == LogOffsetPosition(12, 0, p1)
        assert fms.search_for(12) == LogOffsetPosition(12, 0, p1)
        assert fms.search_for(13) == LogOffsetPosition(14, p1, wrapper.size_in_bytes())
        assert fms.search_for(15) == LogOffsetPosition(20, p2, v0_size)
        assert fms.search_for(21) == LogOffsetPosition(21, p2 + v0_size, v0_size)
        assert fms.search_for(22) is None


def test_iterator_with_limits(fms: FileMessageSet, impl: ModuleType) -> None:
    """testIteratorWithLimits: a slice one byte short of a batch yields nothing."""
    batch = shallow(fms)[1]
    found = fms.search_for(1, 0)
    assert found is not None
    start, size = found.position, len(batch[2])
    assert shallow(fms.read(start, size)) == [batch]
    short = fms.read(start, size - 1)
    assert shallow(short) == []
    assert list(short.records()) == []
    assert short.search_for(1) is None


def test_truncate(fms: FileMessageSet, impl: ModuleType) -> None:
    """testTruncate: cut at the start of the second batch."""
    batch = shallow(fms)[0]
    found = fms.search_for(1, 0)
    assert found is not None
    assert fms.truncate_to(found.position) == 216 - 72
    assert shallow(fms) == [batch]
    assert fms.size_in_bytes() == len(batch[2]) == 72
    assert fms.channel.size() == 72
    assert fms.search_for(1) is None
    # appends go on from the cut
    fms.append(batch_records(1, b"EFGH"))
    assert values_of(fms) == [b"abcd", b"EFGH"]


def _count_truncates(fms: FileMessageSet, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    channel = fms.channel
    real = channel.truncate

    def counted(size: int) -> None:
        calls.append(size)
        real(size)

    monkeypatch.setattr(channel, "truncate", counted)
    return calls


def test_truncate_not_called_if_size_is_same_as_target_size(
    fms: FileMessageSet, impl: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """testTruncateNotCalledIfSizeIsSameAsTargetSize: no truncate (it may touch the mtime) when the file is
    already that long."""
    calls = _count_truncates(fms, monkeypatch)
    os.utime(fms.file, (1_000_000, 1_000_000))
    assert fms.truncate_to(216) == 0
    assert calls == []
    assert fms.last_modified() == 1_000_000_000.0
    assert fms.size_in_bytes() == fms.channel.size() == 216


def test_truncate_past_size_is_an_error(
    fms: FileMessageSet, impl: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """testTruncateNotCalledIfSizeIsBiggerThanTargetSize: a target past the size (or negative) raises
    (Kafka: KafkaException) and nothing is cut."""
    calls = _count_truncates(fms, monkeypatch)
    with pytest.raises(KafkaLogError):
        fms.truncate_to(217)
    with pytest.raises(KafkaLogError):
        fms.truncate_to(-1)
    assert calls == []
    assert fms.size_in_bytes() == fms.channel.size() == 216


def test_truncate_if_size_is_different_to_target_size(
    fms: FileMessageSet, impl: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """testTruncateIfSizeIsDifferentToTargetSize: a smaller target truncates the channel to exactly it."""
    calls = _count_truncates(fms, monkeypatch)
    assert fms.truncate_to(23) == 216 - 23
    assert calls == [23]
    assert fms.size_in_bytes() == fms.channel.size() == 23
    assert shallow(fms) == []


def test_truncate_preallocated_file_to_its_size(
    tmp_path: Path, impl: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Truncate only if smaller than the *file*: a preallocated file longer than its logical size is cut
    even when the target is the logical size, and 0 bytes are reported removed."""
    path = tmp_path / "prealloc.log"
    fms = FileMessageSet.open(path, init_file_size=1024 * 1024, preallocate=True)
    try:
        append_values(fms, VALUES)
        assert path.stat().st_size == 1024 * 1024
        calls = _count_truncates(fms, monkeypatch)
        assert fms.truncate_to(216) == 0
        assert calls == [216]
        assert path.stat().st_size == 216
        assert fms.truncate_to(216) == 0
        assert calls == [216]
        assert values_of(fms) == VALUES
    finally:
        fms.close()


def test_preallocate_true(tmp_path: Path, impl: ModuleType) -> None:
    """testPreallocateTrue: the file is created at the initial size, the set is empty."""
    path = tmp_path / "pre.log"
    with FileMessageSet.open(path, file_already_exists=False, init_file_size=1024 * 1024,
                             preallocate=True) as fms:
        assert fms.size_in_bytes() == 0
        assert path.stat().st_size == 1024 * 1024
        assert list(fms.batches()) == []
        assert fms.search_for(0) is None
        # the first append goes at position 0, not after the preallocated space
        fms.append(batch_records(0, b"abcd"))
        assert shallow(fms)[0][:2] == (0, 0)
        assert fms.size_in_bytes() == 72
        assert path.stat().st_size == 1024 * 1024
    assert path.stat().st_size == 72


def test_preallocate_false(tmp_path: Path, impl: ModuleType) -> None:
    """testPreallocateFalse: without preallocation the new file is empty."""
    path = tmp_path / "nopre.log"
    with FileMessageSet.open(path, file_already_exists=False, init_file_size=1024 * 1024,
                             preallocate=False) as fms:
        assert fms.size_in_bytes() == 0
        assert path.stat().st_size == 0


def test_preallocate_clear_shutdown(tmp_path: Path, fms: FileMessageSet, impl: ModuleType) -> None:
    """testPreallocateClearShutdown: close trims the file to the data; reopening reads the same."""
    path = tmp_path / "clean.log"
    pre = FileMessageSet.open(path, file_already_exists=False, init_file_size=1024 * 1024, preallocate=True)
    append_values(pre, VALUES)
    old_size = pre.size_in_bytes()
    assert old_size == fms.size_in_bytes() == 216
    assert path.stat().st_size == 1024 * 1024
    pre.close()
    assert path.stat().st_size == old_size
    pre.close()  # twice is harmless
    with FileMessageSet.open(path, file_already_exists=True, init_file_size=1024 * 1024,
                             preallocate=True) as reopened:
        assert reopened.size_in_bytes() == old_size
        assert path.stat().st_size == old_size
        assert values_of(reopened) == VALUES
        assert shallow(reopened) == shallow(fms)


def test_preallocated_file_after_crash_shows_its_zero_tail(tmp_path: Path, impl: ModuleType) -> None:
    """Without the trim of a clean close the zeros are part of the file: iteration stops on the first
    zero size field (spec §2.6: recovery cuts the tail)."""
    path = tmp_path / "crash.log"
    pre = FileMessageSet.open(path, init_file_size=4096, preallocate=True)
    append_values(pre, VALUES)
    pre.close_handlers()  # no flush, no trim
    assert path.stat().st_size == 4096
    with FileMessageSet(path) as reopened:
        assert reopened.size_in_bytes() == 4096
        scan = reopened.scan()
        assert scan.valid_bytes == 216
        assert len(scan.batches) == 3
        with pytest.raises(CorruptRecordError):
            list(reopened.batches())


def _append_with_offset_and_timestamp(fms: FileMessageSet, magic: int, timestamp: int, offset: int,
                                      leader_epoch: int) -> None:
    epoch = leader_epoch if magic == 2 else -1  # only v2 carries a partition leader epoch
    fms.append(MemoryRecords.with_records([(b"", b"", timestamp)], magic=magic, base_offset=offset,
                                          partition_leader_epoch=epoch))


@pytest.mark.parametrize("magic", [0, 1, 2])
def test_search_for_timestamp(tmp_path: Path, impl: ModuleType, magic: int) -> None:
    """testSearchForTimestamp: two records (ts 10 at offset 5 in leader epoch 0, ts 11 at offset 6 in epoch 1);
    v0 has no timestamps, and only v2 batches carry the leader epoch."""
    with FileMessageSet.open(tmp_path / "ts.log", file_already_exists=False, init_file_size=1024 * 1024,
                             preallocate=True) as fms:
        _append_with_offset_and_timestamp(fms, magic, 10, 5, 0)
        _append_with_offset_and_timestamp(fms, magic, 11, 6, 1)
        expected = {
            9: TimestampAndOffset(10, 5, 0 if magic == 2 else None),
            10: TimestampAndOffset(10, 5, 0 if magic == 2 else None),
            11: TimestampAndOffset(11, 6, 1 if magic == 2 else None),
        }
        for target, found in expected.items():
            assert fms.search_for_timestamp(target, 0, 0) == (None if magic == 0 else found)
        assert fms.search_for_timestamp(12, 0, 0) is None


def test_search_for_timestamp_within_batches(tmp_path: Path, impl: ModuleType) -> None:
    """Inside a batch the first record at or past the timestamp wins, with the starting offset and the
    starting position bounding the search; timestamps need not be ordered."""
    with FileMessageSet.open(tmp_path / "ts.log") as fms:
        fms.append(MemoryRecords.with_records(
            [(None, b"a", 100), (None, b"b", 300), (None, b"c", 200)], base_offset=0))
        first = fms.size_in_bytes()
        fms.append(MemoryRecords.with_records(
            [(None, b"d", 150), (None, b"e", 400)], base_offset=3, compression="lz4"))
        fms.append(MemoryRecords.with_records(
            [(None, b"f", 250), (None, b"g", 500)], magic=1, base_offset=5, compression="gzip"))
        assert fms.search_for_timestamp(0) == TimestampAndOffset(100, 0)
        assert fms.search_for_timestamp(150) == TimestampAndOffset(300, 1)
        assert fms.search_for_timestamp(250) == TimestampAndOffset(300, 1)
        assert fms.search_for_timestamp(301) == TimestampAndOffset(400, 4)
        assert fms.search_for_timestamp(401) == TimestampAndOffset(500, 6)
        assert fms.search_for_timestamp(501) is None
        # starting_offset skips earlier records, even in a batch that reaches the timestamp
        assert fms.search_for_timestamp(150, 0, 2) == TimestampAndOffset(200, 2)
        assert fms.search_for_timestamp(250, 0, 2) == TimestampAndOffset(400, 4)
        assert fms.search_for_timestamp(0, 0, 3) == TimestampAndOffset(150, 3)
        assert fms.search_for_timestamp(0, 0, 7) is None
        # starting_position skips whole batches
        assert fms.search_for_timestamp(0, first) == TimestampAndOffset(150, 3)
        assert fms.search_for_timestamp(0, fms.size_in_bytes()) is None


def test_search_for_timestamp_log_append_time(tmp_path: Path, impl: ModuleType) -> None:
    """A LogAppendTime batch gives every record the batch's append time, whatever the producer wrote."""
    with FileMessageSet.open(tmp_path / "lat.log") as fms:
        fms.append(MemoryRecords.with_records([(None, b"a", 1), (None, b"b", 2)], base_offset=0))
        fms.append(MemoryRecords.with_records(
            [(None, b"c", 5), (None, b"d", 9_999)], base_offset=2, timestamp_type="LogAppendTime",
            log_append_time=1_000))
        fms.append(MemoryRecords.with_records(
            [(None, b"e", 7), (None, b"f", 8)], magic=1, base_offset=4, compression="gzip",
            timestamp_type="LogAppendTime", log_append_time=2_000))
        assert fms.search_for_timestamp(2) == TimestampAndOffset(2, 1)
        assert fms.search_for_timestamp(3) == TimestampAndOffset(1_000, 2)
        assert fms.search_for_timestamp(1_000) == TimestampAndOffset(1_000, 2)
        assert fms.search_for_timestamp(1_000, 0, 3) == TimestampAndOffset(1_000, 3)
        assert fms.search_for_timestamp(1_001) == TimestampAndOffset(2_000, 4)
        assert fms.search_for_timestamp(1_001, 0, 5) == TimestampAndOffset(2_000, 5)
        assert fms.search_for_timestamp(2_001) is None
        assert fms.largest_timestamp_after(0) == TimestampAndOffset(2_000, 5)


def test_largest_timestamp_after(tmp_path: Path, impl: ModuleType) -> None:
    """largestTimestampAfter: the largest batch max timestamp from a position, with its batch's last
    offset; (-1, -1) when there is none."""
    with FileMessageSet.open(tmp_path / "lt.log") as fms:
        assert fms.largest_timestamp_after(0) == TimestampAndOffset(-1, -1)
        positions = []
        for offset, ts in ((0, 30), (2, 70), (4, 50), (6, 70), (8, 60)):
            positions.append(fms.size_in_bytes())
            fms.append(MemoryRecords.with_records([(None, b"x", ts - 5), (None, b"y", ts)], base_offset=offset))
        assert fms.largest_timestamp_after(0) == TimestampAndOffset(70, 3)
        assert fms.largest_timestamp_after(positions[2]) == TimestampAndOffset(70, 7)
        assert fms.largest_timestamp_after(positions[4]) == TimestampAndOffset(60, 9)
        assert fms.largest_timestamp_after(fms.size_in_bytes()) == TimestampAndOffset(-1, -1)
    with FileMessageSet.open(tmp_path / "v0.log") as v0:
        v0.append(MemoryRecords.with_records([(None, b"x")], magic=0))
        assert v0.largest_timestamp_after(0) == TimestampAndOffset(-1, -1)


def test_append_protects_from_overflow(tmp_path: Path, impl: ModuleType) -> None:
    """testAppendProtectsFromOverflow: a set already 2 GiB - 1 long refuses an append (a sparse file)."""
    path = tmp_path / "huge.log"
    with open(path, "wb") as f:
        f.truncate(INT32_MAX)
    with FileMessageSet(path) as fms:
        assert fms.size_in_bytes() == INT32_MAX
        with pytest.raises(IllegalArgumentError):
            append_values(fms, VALUES)
        with pytest.raises(IllegalArgumentError):
            fms.append(b"\x00")
        assert fms.size_in_bytes() == INT32_MAX
        assert path.stat().st_size == INT32_MAX
        fms.truncate_to(INT32_MAX - 72)
        assert fms.size_in_bytes() == INT32_MAX - 72
        # exactly up to the limit is still allowed, one byte more is not
        with pytest.raises(IllegalArgumentError):
            fms.append(batch_records(0, b"abcde"))
        assert fms.append(batch_records(0, b"abcd")) == 72
        assert fms.size_in_bytes() == INT32_MAX
        assert fms.read(INT32_MAX - 72, 72).read_bytes() == batch_records(0, b"abcd").buffer
        fms.truncate_to(0)


def test_open_oversize_file(tmp_path: Path, impl: ModuleType) -> None:
    """testOpenOversizeFile: a file longer than 2 GiB - 1 cannot be opened (Kafka: KafkaException)."""
    path = tmp_path / "oversize.log"
    with open(path, "wb") as f:
        f.truncate(INT32_MAX + 5)
    with pytest.raises(KafkaStorageError):
        FileMessageSet(path)
    with pytest.raises(KafkaStorageError):
        FileMessageSet(path, writable=False)
    assert path.stat().st_size == INT32_MAX + 5
    path.unlink()


def test_open_missing_file(tmp_path: Path, impl: ModuleType) -> None:
    with pytest.raises(KafkaStorageError):
        FileMessageSet(tmp_path / "missing.log")
    assert not (tmp_path / "missing.log").exists()
    with FileMessageSet.open(tmp_path / "created.log") as fms:
        assert fms.size_in_bytes() == 0
    assert (tmp_path / "created.log").stat().st_size == 0


def test_rename_to(fms: FileMessageSet, tmp_path: Path, impl: ModuleType) -> None:
    """renameTo: the file moves, the set keeps reading and appending through the same channel."""
    old = fms.file
    new = tmp_path / "renamed.log.deleted"
    fms.rename_to(new)
    assert fms.file == new
    assert not old.exists()
    assert new.stat().st_size == 216
    assert values_of(fms) == VALUES
    fms.append(batch_records(3, b"mnop"))
    assert values_of(fms) == [*VALUES, b"mnop"]
    # the new name is kept even when the rename fails (spec §3.3)
    missing_dir = tmp_path / "no-such-dir" / "x.log"
    with pytest.raises(OSError):
        fms.rename_to(missing_dir)
    assert fms.file == missing_dir
    assert new.exists()


def test_delete(fms: FileMessageSet, impl: ModuleType) -> None:
    """deleteIfExists: closes and removes the file; a second call finds nothing to delete."""
    path = fms.file
    assert fms.delete() is True
    assert not path.exists()
    assert fms.channel.closed
    assert fms.delete() is False


def test_delete_missing_file(tmp_path: Path, impl: ModuleType) -> None:
    fms = FileMessageSet.open(tmp_path / "gone.log")
    fms.file.unlink()
    assert fms.delete() is False
    assert fms.channel.closed


def test_read_only(tmp_path: Path, impl: ModuleType) -> None:
    """A set opened read-only reads but never writes: the file's bytes (zero tail included) and its
    length stay as they were, and close does not trim."""
    path = tmp_path / "ro.log"
    content = b"".join(batch_records(o, v).buffer for o, v in enumerate(VALUES)) + b"\x00" * 100
    path.write_bytes(content)
    os.utime(path, (1_000_000, 1_000_000))
    fms = FileMessageSet(path, writable=False)
    try:
        assert fms.size_in_bytes() == 316
        assert fms.scan().valid_bytes == 216
        assert fms.search_for(1) == LogOffsetPosition(1, 72, 72)
        assert [r.value for r in fms.read(0, 216).records()] == VALUES
        with pytest.raises(ReadOnlyError):
            fms.append(batch_records(3, b"mnop"))
        with pytest.raises(ReadOnlyError):
            fms.truncate_to(216)
        with pytest.raises(ReadOnlyError):
            fms.trim()
        with pytest.raises(ReadOnlyError):
            fms.rename_to(tmp_path / "other.log")
        with pytest.raises(ReadOnlyError):
            fms.delete()
        with pytest.raises(ReadOnlyError):
            fms.set_last_modified(5_000_000)
        fms.flush()
    finally:
        fms.close()
    assert path.read_bytes() == content
    assert path.stat().st_mtime == 1_000_000
    # creating a file read-only is refused, and nothing is created
    with pytest.raises(ReadOnlyError):
        FileMessageSet(tmp_path / "new.log", file_already_exists=False, writable=False)
    assert not (tmp_path / "new.log").exists()


def test_slices_refuse_writes(fms: FileMessageSet, impl: ModuleType) -> None:
    piece = fms.read(72, 72)
    with pytest.raises(IllegalStateError):
        piece.append(batch_records(3, b"mnop"))
    with pytest.raises(IllegalStateError):
        piece.truncate_to(0)
    piece.close()  # a slice closes nothing
    assert not fms.channel.closed
    assert values_of(fms) == VALUES


def test_closed_set_refuses_writes(tmp_path: Path, impl: ModuleType) -> None:
    fms = FileMessageSet.open(tmp_path / "closed.log")
    fms.close()
    with pytest.raises(IllegalStateError):
        fms.append(batch_records(0, b"abcd"))


def test_write_to_file(fms: FileMessageSet, tmp_path: Path, impl: ModuleType) -> None:
    """writeTo (testBytesLengthOfWriteTo): a third, then the rest with one byte too many; only what the
    set holds is written, into a real file (sendfile) and into a file-like object without a descriptor."""
    size = fms.size_in_bytes()
    first = size // 3
    whole = fms.read_bytes()
    dest_path = tmp_path / "copy.bin"
    with open(dest_path, "wb") as dest:
        dest.write(b"HEAD")
        assert fms.write_to(dest, 0, first) == first
        assert fms.write_to(dest, first, size - first + 1) == size - first
        assert fms.write_to(dest, size, 10) == 0
    assert dest_path.read_bytes() == b"HEAD" + whole
    buffer = io.BytesIO()
    assert fms.write_to(buffer, 0, first) == first
    assert fms.write_to(buffer, first, size) == size - first
    assert buffer.getvalue() == whole
    # on a slice, positions are relative to the slice
    piece = fms.read(72, 72)
    out = io.BytesIO()
    assert piece.write_to(out, 10, 1000) == 62
    assert out.getvalue() == whole[82:144]
    with pytest.raises(IllegalArgumentError):
        fms.write_to(io.BytesIO(), -1, 5)
    with pytest.raises(IllegalArgumentError):
        fms.write_to(io.BytesIO(), 0, -5)


def test_read_into(fms: FileMessageSet, impl: ModuleType) -> None:
    """readInto: fills the buffer from a position of the set, no further than its end."""
    whole = fms.read_bytes()
    buffer = bytearray(72)
    assert fms.read_into(buffer, 72) is buffer
    assert bytes(buffer) == whole[72:144]
    buffer = bytearray(b"\xff" * 100)
    fms.read_into(buffer, 180)
    assert bytes(buffer[:36]) == whole[180:]
    assert bytes(buffer[36:]) == b"\xff" * 64
    view = memoryview(bytearray(10))
    piece = fms.read(144, 72)
    assert bytes(piece.read_into(view, 5)) == whole[149:159]
    assert MemoryRecords(bytes(fms.read_into(bytearray(72), 0))).buffer == whole[:72]


def test_to_memory_records_and_records_agree(fms: FileMessageSet, impl: ModuleType) -> None:
    memory = fms.to_memory_records()
    assert memory.buffer == fms.read_bytes()
    assert [r.as_tuple() for r in memory.records()] == [r.as_tuple() for r in fms.records()]
    assert [r.as_tuple() for r in fms.read(72, 144).records()] == [
        (1, TS, None, b"efgh", []), (2, TS, None, b"ijkl", [])]


def test_set_last_modified(fms: FileMessageSet, impl: ModuleType) -> None:
    fms.set_last_modified(1_600_000_000_000)
    assert fms.last_modified() == 1_600_000_000_000.0

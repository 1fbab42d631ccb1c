"""FileMessageSet against Kafka's FileRecordsTest (clients/src/test/java/org/apache/kafka/common/record,
3.8.0) and FileMessageSetTest (core/src/test/scala/unit/kafka/log, 0.10.1.1).

Spec §3.3 and §7.5.  The fixture file holds Kafka's three single-record v2 batches with the values
``abcd``, ``efgh`` and ``ijkl`` at offsets 0, 1 and 2 (0.10.1.1's cases on v1 messages have a v1 fixture of
their own).  Kafka's mock-channel cases (truncate called or not, the 2 GiB overflow, the oversize file, the
count handed to ``transferFrom``) use a real file here: a counted ``truncate`` on the channel, sparse files
of 2 GiB, which cost no disk, and the bytes that arrive.  The conversion cases (``downConvert``,
``LazyDownConversionRecords``, 0.10.1's ``toMessageFormat``) run against :mod:`kafkalog.record.convert`
through the set.  Every test runs on both kernel twins (``impl``).
"""

from __future__ import annotations

import io
import os
import random
import struct
import threading
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from kafkalog import MemoryRecords, TimestampType
from kafkalog.errors import (
    ConcurrentTruncationError,
    CorruptRecordError,
    IllegalArgumentError,
    IllegalStateError,
    KafkaLogError,
    KafkaStorageError,
    ReadOnlyError,
    UnsupportedCompressionError,
)
from kafkalog.file_message_set import ChunkBuffer, FileMessageSet, LogOffsetPosition, TimestampAndOffset
from kafkalog.record import CompressionType, ControlRecordType, EndTransactionMarker, LegacyRecordBatch, ScanStop
from kafkalog.record.batch import build_default_batch
from kafkalog.record.convert import LazyDownConversionRecords
from kafkalog.record.legacy import build_legacy_message_set
from kafkalog.record.records_util import RecordValidationStats
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


@pytest.mark.parametrize("tail", [b"\x00" * 8 + b"\x00\x00\x00\x05" + b"\x00" * 6,
                                  b"\x00" * 17 + b"\x01", b"\x07" + b"\x00" * 17])
def test_corrupt_size_field_is_an_error(tmp_path: Path, impl: ModuleType, tail: bytes) -> None:
    """Past the last 17 bytes a size below the 14-byte minimum is corrupt, not partial (spec §1.7 rule 2),
    unless every byte from there to the end is zero (the next test)."""
    path = tmp_path / "corrupt.log"
    path.write_bytes(batch_records(0, b"abcd").buffer + tail)
    with FileMessageSet(path) as fms:
        for read in (fms.batches, fms.records):
            with pytest.raises(CorruptRecordError) as info:
                list(read())
            assert info.value.position == 72


@pytest.mark.parametrize("zeros", [18, 61, 4096, 1 << 20])
def test_zero_filled_tail_ends_the_data(tmp_path: Path, impl: ModuleType, zeros: int) -> None:
    """Zeros from the end of the last batch to the end of the file (a preallocated file that was not trimmed,
    a file extended but never written) are where the data ends: iteration, deep iteration and the offset
    search stop there without an error.  0.10.1's ``FileMessageSet.iterator`` ended at any size below the
    minimum; Kafka 3.x never reads past the logical size of a preallocated file, and its recovery cuts
    the zeros (spec §2.6)."""
    path = tmp_path / "zeros.log"
    whole = b"".join(batch_records(o, v).buffer for o, v in enumerate(VALUES))
    path.write_bytes(whole + bytes(zeros))
    with FileMessageSet(path, writable=False) as fms:
        assert values_of(fms) == VALUES
        assert [r.value for r in fms.records()] == VALUES
        assert [b.last_offset for b in fms.batches()] == [0, 1, 2]
        assert fms.search_for(3) is None
        assert fms.search_for(2) == LogOffsetPosition(2, 144, 72)
        scan = fms.scan()
        assert scan.valid_bytes == 216
        assert scan.stop_reason is ScanStop.ZERO_TAIL


@pytest.mark.parametrize("writable", [False, True])
@pytest.mark.parametrize("hole", [False, True])
def test_zeros_followed_by_data_are_no_tail(tmp_path: Path, impl: ModuleType, monkeypatch: pytest.MonkeyPatch,
                                            writable: bool, hole: bool) -> None:
    """Zeros that data follows are corruption, not the end of the data, however the file is read: mapped (a
    writer's set), or a read at a time (a read-only set, or a sparse file) where the zeros fill a whole read.
    With the reads made small, the zeros here span several of them, as a broker's zeroed run would 1 MiB
    reads; without the data after them, the same file ends quietly."""
    from kafkalog import file_message_set

    monkeypatch.setattr(file_message_set, "SCAN_READ_BYTES", 256)
    monkeypatch.setattr(file_message_set, "SEARCH_READ_BYTES", 128)
    whole = b"".join(batch_records(o, v).buffer for o, v in enumerate(VALUES))
    path = tmp_path / "zeros.log"
    with open(path, "wb") as f:
        f.write(whole)
        if hole:
            f.seek(len(whole) + 4096)  # a hole where the zeros are
        else:
            f.write(bytes(4096))
        f.write(b"not zero")
    with FileMessageSet(path, writable=writable) as fms:
        scan = fms.scan()
        assert (scan.stop_reason, scan.stop_position) == (ScanStop.SIZE_TOO_SMALL, 216)
        with pytest.raises(CorruptRecordError) as info:
            list(fms.records())
        assert info.value.position == 216
        with pytest.raises(CorruptRecordError):
            fms.search_for(3)
    with open(path, "r+b") as f:
        f.truncate(len(whole) + 4096)  # the data after the zeros gone: now they are a tail
    with FileMessageSet(path, writable=writable) as fms:
        assert fms.scan().stop_reason is ScanStop.ZERO_TAIL
        assert [r.value for r in fms.records()] == VALUES
        assert fms.search_for(3) is None


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
    """testOutOfRangeSlice: a slice from past the end is refused (IllegalArgumentError); so are negative
    positions and sizes, and past the end of a slice."""
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
    """Without the trim of a clean close the zeros are part of the file: iteration ends at the first zero
    size field, as at the end of the data (spec §2.6: recovery cuts the tail)."""
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
        assert scan.stop_reason is ScanStop.ZERO_TAIL
        assert values_of(reopened) == VALUES
        assert [r.value for r in reopened.records()] == VALUES


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
    """testBytesLengthOfWriteTo: a third, then the rest with one byte too many; only what the set holds is
    written (Kafka checks the count passed to the channel's ``transferFrom``; here the count returned and the
    bytes that arrive), into a real file (sendfile) and into a file-like object without a descriptor."""
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


def test_read_bytes_at_a_position(fms: FileMessageSet, impl: ModuleType) -> None:
    """read_bytes(position, size): a batch found by a search, read by its set-relative position, no further
    than the set's end; positions are the set's own on a slice too; bad positions and sizes are refused."""
    whole = fms.read_bytes()
    found = fms.search_for(1)
    assert found is not None
    assert fms.read_bytes(found.position, found.size) == whole[72:144]
    assert MemoryRecords(fms.read_bytes(found.position, found.size)).records().__next__().value == b"efgh"
    assert fms.read_bytes(180) == whole[180:]
    assert fms.read_bytes(180, 1_000) == whole[180:]
    assert fms.read_bytes(len(whole), 10) == b""
    piece = fms.read(72, 144)
    assert piece.read_bytes(72, 72) == whole[144:216]
    assert piece.read_bytes(0, 1_000) == whole[72:216]
    for position, size in ((-1, 1), (len(whole) + 1, 1), (0, -1)):
        with pytest.raises(IllegalArgumentError):
            fms.read_bytes(position, size)
    with pytest.raises(IllegalArgumentError):
        piece.read_bytes(145, 1)


def test_to_memory_records_and_records_agree(fms: FileMessageSet, impl: ModuleType) -> None:
    memory = fms.to_memory_records()
    assert memory.buffer == fms.read_bytes()
    assert [r.as_tuple() for r in memory.records()] == [r.as_tuple() for r in fms.records()]
    assert [r.as_tuple() for r in fms.read(72, 144).records()] == [
        (1, TS, None, b"efgh", []), (2, TS, None, b"ijkl", [])]


def test_set_last_modified(fms: FileMessageSet, impl: ModuleType) -> None:
    fms.set_last_modified(1_600_000_000_000)
    assert fms.last_modified() == 1_600_000_000_000.0


# ---------------------------------------------------------------------------------------------------------
# Concurrent writes


def test_slice_size_limit_with_concurrent_write(scratch: Path, impl: ModuleType) -> None:
    """testSliceSizeLimitWithConcurrentWrite: a reader slicing ``[0, size)`` while a writer appends always
    gets a slice of the size it read, never more: slices are fixed windows.  Two threads, until the file
    holds 16384 bytes (on tmpfs: the writer flushes after every three batches, as Kafka's helper does)."""
    log = FileMessageSet.open(scratch / "concurrent.log")
    max_size = 16384
    failures: list[BaseException] = []

    def reader() -> None:
        try:
            while log.size_in_bytes() < max_size:
                current = log.size_in_bytes()
                piece = log.read(0, current)
                assert piece.size_in_bytes() == current
        except BaseException as e:
            failures.append(e)

    def writer() -> None:
        try:
            while log.size_in_bytes() < max_size:
                append_values(log, VALUES)
        except BaseException as e:
            failures.append(e)

    threads = [threading.Thread(target=reader), threading.Thread(target=writer)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        assert not any(thread.is_alive() for thread in threads)
        assert not failures, failures
    finally:
        log.close()


def test_write_to_after_the_file_was_truncated_underneath(
    fms: FileMessageSet, tmp_path: Path, impl: ModuleType
) -> None:
    """writeTo checks that the file still holds the set: truncated underneath (by another handle, here), it
    raises Kafka's "has been truncated during write" with the path and both sizes, for the whole set and
    for a slice past the new end; a slice that still fits is written."""
    piece = fms.read(72, 144)
    early = fms.read(0, 72)
    os.truncate(fms.file, 100)
    path = str(fms.file.absolute())
    with pytest.raises(ConcurrentTruncationError) as caught:
        fms.write_to(io.BytesIO(), 0, 216)
    error = caught.value
    assert isinstance(error, KafkaLogError)
    assert str(error) == (f"Size of FileMessageSet {path} has been truncated during write: old size 216, new "
                          "size 100")
    assert (error.path, error.old_size, error.new_size) == (path, 216, 100)
    with pytest.raises(ConcurrentTruncationError, match=r"old size 144, new size 28$"):
        piece.write_to(io.BytesIO(), 0, 144)
    out = io.BytesIO()
    assert early.write_to(out, 0, 72) == 72
    assert len(out.getvalue()) == 72


# ---------------------------------------------------------------------------------------------------------
# Conversion for older readers: FileRecords.downConvert and LazyDownConversionRecords (3.8.0),
# FileMessageSet.toMessageFormat and isMagicValueInAllWrapperMessages (0.10.1.1)

TP = "topic-1-0"
HEADERS = [("headerKey1", b"headerValue1"), ("headerKey2", b"headerValue2"), ("headerKey3", b"headerValue3")]


def down_convert_and_verify_records(
    initial: list[tuple[int, bytes, bytes, list[tuple[str, bytes]]]], offsets: list[int], fms: FileMessageSet,
    codec: str, to_magic: int, first_offset: int,
) -> None:
    """Kafka's ``downConvertAndVerifyRecords``: the whole set at once, then lazily in chunks of several
    read sizes, down to one batch per chunk."""
    sizes = [b.size_in_bytes for b in fms.batches()]
    converted = fms.down_convert(to_magic, first_offset, nanoseconds=TIME.nanoseconds)
    verify_converted_records(initial, offsets, [converted.records], codec, to_magic)
    size = fms.size_in_bytes()
    for read_size in (16 * 1024, size, size - 1, size // 4, max(sizes) + 1, 1):
        lazy = LazyDownConversionRecords(TP, fms, to_magic, first_offset)
        chunks = [chunk.records for chunk in lazy.iterator(read_size)]
        verify_converted_records(initial, offsets, chunks, codec, to_magic)


def verify_converted_records(
    initial: list[tuple[int, bytes, bytes, list[tuple[str, bytes]]]], offsets: list[int], converted: list[Any],
    codec: str, magic: int,
) -> None:
    """Kafka's ``verifyConvertedRecords``: no batch newer than ``magic``, the codec kept, and every record's
    offset, key and value as written; v0 records have no timestamp, v1 and v2 ones theirs, v2 ones their
    headers too.  No record is LogAppendTime, and every inner message has its batch's magic."""
    i = 0
    for records in converted:
        for batch in records.batches():
            assert batch.magic <= magic, f"Magic byte should be lower than or equal to {magic}"
            expected_type = TimestampType.NO_TIMESTAMP_TYPE if batch.magic == 0 else TimestampType.CREATE_TIME
            assert batch.timestamp_type is expected_type
            assert batch.compression.kafka_name == codec, "Compression type should not be affected by conversion"
            if isinstance(batch, LegacyRecordBatch):
                assert set(batch.record_columns().records["magic"].tolist()) == {batch.magic}
            for record in batch.records():
                timestamp, key, value, headers = initial[i]
                assert record.offset == offsets[i], "Offset should not change"
                assert record.key == key, "Key should not change"
                assert record.value == value, "Value should not change"
                if batch.magic == 0:
                    assert record.timestamp == -1
                else:
                    assert record.timestamp == timestamp, "Timestamp should not change"
                if batch.magic == 2:
                    assert record.headers == headers, "Headers should not change"
                i += 1
    assert i == len(offsets)


def conversion_records() -> list[tuple[int, bytes, bytes, list[tuple[str, bytes]]]]:
    """``doTestConversion``'s ten records (timestamp, key, value, headers)."""
    values = [b"hello", b"goodbye", b"hello again", b"goodbye for now", b"hello again", b"I sense indecision",
              b"what now", b"running out", b"ok, almost done", b"finally"]
    return [(i + 1, b"k%d" % (i + 1), v, HEADERS if i in (7, 9) else []) for i, v in enumerate(values)]


def do_test_conversion(tmp_path: Path, codec: str, to_magic: int) -> None:
    """Kafka's ``doTestConversion``: a v0 batch (records 0-2), a v1 batch (3-5) and a v2 batch (6-9), each
    written by a builder whose base offset is 0, at offsets with gaps."""
    offsets = [0, 2, 3, 9, 11, 15, 16, 17, 22, 24]
    records = conversion_records()
    rows = [(key, value, timestamp, headers) for timestamp, key, value, headers in records]
    data = build_legacy_message_set([r[:3] for r in rows[:3]], magic=0, compression=codec, offsets=offsets[:3])
    data += build_legacy_message_set([r[:3] for r in rows[3:6]], magic=1, compression=codec,
                                     offsets=offsets[3:6])
    data += build_default_batch(rows[6:], base_offset=0, compression=codec, offset_deltas=offsets[6:])
    with FileMessageSet.open(tmp_path / f"convert-{codec}-{to_magic}.log") as fms:
        fms.append(MemoryRecords(data))
        fms.flush()
        down_convert_and_verify_records(records, offsets, fms, codec, to_magic, 0)
        if to_magic <= 1 and codec == "none":
            # from the middle of a batch that converts: the records before the first offset are left out
            first_offset = 11 if to_magic == 0 else 17  # a v1 record, a v2 record
            index = offsets.index(first_offset) - 1
            down_convert_and_verify_records(records[:index] + records[index + 1:],
                                            offsets[:index] + offsets[index + 1:], fms, codec, to_magic,
                                            first_offset)
        else:
            # the first offset does not matter here
            down_convert_and_verify_records(records, offsets, fms, codec, to_magic, 10)


def test_conversion(tmp_path: Path, impl: ModuleType) -> None:
    """testConversion: down-conversion of a file holding v0, v1 and v2 batches, to each magic, uncompressed
    and gzip."""
    for codec in ("none", "gzip"):
        for to_magic in (0, 1, 2):
            do_test_conversion(tmp_path, codec, to_magic)


def test_downconversion_after_message_format_downgrade(tmp_path: Path, impl: ModuleType) -> None:
    """testDownconversionAfterMessageFormatDowngrade: a v2 gzip batch then a v1 gzip batch (the topic's
    format was downgraded), 3000 random bytes each, down-converted to v1."""
    payload = random.Random(7).randbytes(3000)
    records = [(1, b"k1", payload, []), (2, b"k2", payload, [])]
    data = build_default_batch([(b"k1", payload, 1)], base_offset=0, compression="gzip")
    data += build_legacy_message_set([(b"k2", payload, 2)], magic=1, compression="gzip", offsets=[1])
    with FileMessageSet.open(tmp_path / "downgrade.log") as fms:
        fms.append(MemoryRecords(data))
        fms.flush()
        down_convert_and_verify_records(records, [0, 1], fms, "gzip", 1, 0)


def test_format_conversion_with_partial_message(fms: FileMessageSet, impl: ModuleType) -> None:
    """testFormatConversionWithPartialMessage (3.8.0): a slice one byte short of the second batch holds no
    whole batch: down-conversion gives the slice back as it is, and lazy down-conversion gives nothing."""
    batch = list(fms.batches())[1]
    found = fms.search_for(1, 0)
    assert found is not None
    size = batch.size_in_bytes
    piece = fms.read(found.position, size - 1)
    converted = piece.down_convert(0, 0, nanoseconds=TIME.nanoseconds)
    assert converted.records is piece
    assert converted.record_conversion_stats == RecordValidationStats.EMPTY
    assert list(converted.records.batches()) == [], "No message should be there"
    assert converted.records.size_in_bytes() == size - 1, f"There should be {size - 1} bytes"
    lazy = LazyDownConversionRecords(TP, piece, 0, 0)
    assert list(lazy.iterator(16 * 1024)) == [], "No messages should be returned"
    # no whole batch to convert and none in the source: nothing is announced
    assert lazy.size_in_bytes() == 0


def test_format_conversion_with_no_messages(impl: ModuleType) -> None:
    """testFormatConversionWithNoMessages: lazy down-conversion of empty records announces 0 bytes and
    gives nothing."""
    lazy = LazyDownConversionRecords(TP, MemoryRecords(b""), 0, 0)
    assert lazy.size_in_bytes() == 0
    assert list(lazy.iterator(16 * 1024)) == [], "No messages should be returned"


def test_lazy_down_conversion_sizes_and_chunks(tmp_path: Path, impl: ModuleType) -> None:
    """The announced size is the source's, or the first converted chunk's when larger (one whole batch,
    which a consumer needs to make progress); an old consumer is announced an entry header when nothing
    converts.  Chunks take the batches that fit the read size, at least one, and skip what converts to
    nothing; no record is handed out twice, even when the first batches convert to nothing (a transaction
    marker, which a v0/v1 reader does not see)."""
    marker = MemoryRecords.with_end_transaction_marker(5, 1, EndTransactionMarker(ControlRecordType.COMMIT, 0),
                                                       timestamp=TS)
    data = bytes(marker.buffer) + b"".join(
        MemoryRecords.with_records([(b"k", v, TS), (b"l", v, TS)], base_offset=1 + 2 * i).buffer
        for i, v in enumerate(VALUES)
    )
    with FileMessageSet.open(tmp_path / "lazy.log") as source:
        source.append(MemoryRecords(data))
        lazy = LazyDownConversionRecords(TP, source, 0, 0)
        assert lazy.size_in_bytes() == source.size_in_bytes()
        chunks = list(lazy.iterator(1))
        assert [[r.offset for r in chunk.records.records()] for chunk in chunks] == [[1, 2], [3, 4], [5, 6]]
        assert all(chunk.record_conversion_stats.num_records_converted == 2 for chunk in chunks)
        # a second iterator converts from the start again
        assert len(list(lazy.iterator(1 << 20))) == 1
        # the v0 form of a tiny v2 batch is larger than the batch: the first chunk's size is announced
        tiny = MemoryRecords.with_records([(None, b"", TS)])
        grown = LazyDownConversionRecords(TP, tiny, 1, 0)
        first = next(iter(grown.iterator(1)))
        assert grown.size_in_bytes() == max(tiny.size_in_bytes(), first.records.size_in_bytes())
        assert "toMagic=1" in repr(grown)
        # nothing converts, yet there are batches: an entry header is announced
        assert LazyDownConversionRecords(TP, marker, 0, 0).size_in_bytes() == 12


def test_down_conversion_refuses_zstd_and_drops_control_batches(impl: ModuleType) -> None:
    """RecordsUtil.downConvert: v0/v1 have no zstd and no control batch; v2 keeps both."""
    zstd = MemoryRecords.with_records([(b"k", b"v", TS)], compression="zstd")
    with pytest.raises(UnsupportedCompressionError,
                       match=r"^Down-conversion of zstandard-compressed batches is not supported"):
        zstd.down_convert(1, 0)
    kept = zstd.down_convert(2, 0)
    assert kept.records.buffer == bytes(zstd.buffer)
    assert kept.record_conversion_stats == RecordValidationStats(zstd.size_in_bytes(), 0,
                                                                 kept.record_conversion_stats.conversion_time_nanos)
    marker = MemoryRecords.with_end_transaction_marker(5, 1, EndTransactionMarker(ControlRecordType.ABORT, 0),
                                                       timestamp=TS)
    assert marker.down_convert(1, 0).records.size_in_bytes() == 0
    assert marker.down_convert(2, 0).records.buffer == bytes(marker.buffer)


def test_down_conversion_keeps_log_append_time(impl: ModuleType) -> None:
    """A LogAppendTime batch converts to LogAppendTime messages stamped with the batch's append time."""
    records = MemoryRecords.with_records([(b"k", b"a", 5), (b"l", b"b", 6)], timestamp_type="LogAppendTime",
                                         log_append_time=99, base_offset=40)
    for codec_records in (records, MemoryRecords.with_records(
            [(b"k", b"a", 5), (b"l", b"b", 6)], timestamp_type="LogAppendTime", log_append_time=99,
            base_offset=40, compression="gzip")):
        converted = codec_records.down_convert(1, 0)
        batches = list(converted.records.batches())
        assert all(b.timestamp_type is TimestampType.LOG_APPEND_TIME and b.magic == 1 for b in batches)
        assert [(r.offset, r.timestamp, r.value) for r in converted.records.records()] == [(40, 99, b"a"),
                                                                                          (41, 99, b"b")]
        stats = converted.record_conversion_stats
        assert stats.num_records_converted == 2
        assert stats.temporary_memory_bytes > codec_records.size_in_bytes()


# 0.10.1.1's FileMessageSetTest uses v1 messages ("abcd", "efgh", "ijkl" at offsets 0, 1, 2).


@pytest.fixture
def v1_set(tmp_path: Path, impl: ModuleType) -> Iterator[FileMessageSet]:
    records = FileMessageSet.open(tmp_path / "v1.log")
    records.append(MemoryRecords.with_records([(None, v, TS) for v in VALUES], magic=1))
    records.flush()
    yield records
    records.close()


def test_format_conversion_with_partial_message_0_10_1_1(v1_set: FileMessageSet, impl: ModuleType) -> None:
    """FileMessageSetTest.testFormatConversionWithPartialMessage (0.10.1.1): a slice one byte short of the
    second message converts to nothing, so the slice itself is returned, bytes and all."""
    message = list(v1_set.batches())[1]
    found = v1_set.search_for(1, 0)
    assert found is not None
    size = message.size_in_bytes
    piece = v1_set.read(found.position, size - 1)
    converted = piece.to_message_format(0)
    assert converted is piece
    assert list(converted.records()) == [], "No message should be there"
    assert converted.size_in_bytes() == size - 1, f"There should be {size - 1} bytes"


def test_message_format_conversion(tmp_path: Path, impl: ModuleType) -> None:
    """FileMessageSetTest.testMessageFormatConversion (0.10.1.1): v1 to v0 and v0 to v1 (up-conversion,
    which 0.10.1 never needed but supported), uncompressed and gzip; offsets, keys and values kept."""
    offsets = [0, 2]
    keys, values = [b"k1", b"k2"], [b"hello", b"goodbye"]

    def message_set(magic: int, codec: str) -> MemoryRecords:
        return MemoryRecords(build_legacy_message_set(
            [(k, v, i + 1) for i, (k, v) in enumerate(zip(keys, values, strict=True))], magic=magic,
            compression=codec, offsets=offsets))

    for from_magic, to_magic in ((1, 0), (0, 1)):
        for codec in ("none", "gzip"):
            with FileMessageSet.open(tmp_path / f"fmt-{from_magic}-{codec}.log") as fms:
                fms.append(message_set(from_magic, codec))
                fms.flush()
                converted = fms.to_message_format(to_magic)
                assert isinstance(converted, MemoryRecords)
                seen = 0
                for batch in converted.batches():
                    assert batch.magic == to_magic
                    assert batch.compression.kafka_name == codec
                    assert set(batch.record_columns().records["magic"].tolist()) == {to_magic}
                    for record in batch.records():
                        assert record.offset == offsets[seen], "offset should not change"
                        assert record.key == keys[seen], "key should not change"
                        assert record.value == values[seen], "payload should not change"
                        # up-converted v0 messages have no timestamp; down-converted ones lose theirs
                        assert record.timestamp == -1
                        seen += 1
                assert seen == 2
                for batch in converted.batches():
                    batch.ensure_valid()
                    assert all(batch.record_validity())


def test_to_message_format_keeps_what_is_already_in_format(tmp_path: Path, impl: ModuleType) -> None:
    """Uncompressed messages already in the target magic are kept byte for byte (LogAppendTime bit and
    all), v2 batches convert as downConvert converts them, one set is built with the first entry's codec,
    and an empty set converts to empty records."""
    plain_v1 = MemoryRecords.with_records([(b"a", b"1", 7)], magic=1, timestamp_type="LogAppendTime",
                                          log_append_time=70, base_offset=3)
    v2 = MemoryRecords.with_records([(b"b", b"2", 8, [("h", b"x")]), (b"c", b"3", 9)], base_offset=4,
                                    compression="snappy")
    with FileMessageSet.open(tmp_path / "mixed.log") as fms:
        fms.append(plain_v1)
        fms.append(v2)
        converted = fms.to_message_format(1)
        assert isinstance(converted, MemoryRecords)
        entries = list(converted.batches())
        assert entries[0].raw_bytes() == bytes(plain_v1.buffer)
        assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in converted.records()] == [
            (3, 70, b"a", b"1", []), (4, 8, b"b", b"2", []), (5, 9, b"c", b"3", [])]
        assert [e.compression.kafka_name for e in entries] == ["none"] * 3
        with pytest.raises(IllegalArgumentError):
            fms.to_message_format(2)
    with FileMessageSet.open(tmp_path / "mixed-gzip.log") as fms:
        fms.append(MemoryRecords.with_records([(b"a", b"1", 7)], magic=0, compression="gzip", base_offset=3))
        fms.append(v2)
        converted = fms.to_message_format(1)
        wrapper = list(converted.batches())
        assert len(wrapper) == 1 and wrapper[0].compression is CompressionType.GZIP
        assert (wrapper[0].last_offset, wrapper[0].max_timestamp) == (5, 9)
        assert [(r.offset, r.timestamp, r.key) for r in converted.records()] == [(3, -1, b"a"), (4, 8, b"b"),
                                                                                  (5, 9, b"c")]
    with FileMessageSet.open(tmp_path / "empty.log") as fms:
        empty = fms.to_message_format(0)
        assert isinstance(empty, MemoryRecords) and empty.size_in_bytes() == 0


def test_is_magic_value_in_all_wrapper_messages(tmp_path: Path, impl: ModuleType) -> None:
    """0.10.1.1's isMagicValueInAllWrapperMessages, and 3.x's hasMatchingMagic: a wrapper counts as one entry;
    a partial last entry counts when its magic byte is there; a size below 14 is an error."""
    v1 = MemoryRecords.with_records([(None, v, TS) for v in VALUES], magic=1, compression="gzip")
    v0 = MemoryRecords.with_records([(None, b"x")], magic=0, base_offset=3)
    with FileMessageSet.open(tmp_path / "magic.log") as fms:
        assert fms.is_magic_value_in_all_wrapper_messages(0) and fms.has_matching_magic(0)
        fms.append(v1)
        assert fms.is_magic_value_in_all_wrapper_messages(1)
        assert not fms.is_magic_value_in_all_wrapper_messages(0)
        assert fms.has_matching_magic(1) and not fms.has_matching_magic(2)
        fms.append(v0)
        assert not fms.is_magic_value_in_all_wrapper_messages(1)
        assert not fms.has_matching_magic(1)
        assert not fms.read(0, v1.size_in_bytes()).is_magic_value_in_all_wrapper_messages(0)
        assert fms.read(v1.size_in_bytes(), 100).is_magic_value_in_all_wrapper_messages(0)
    with FileMessageSet.open(tmp_path / "partial.log") as fms:
        fms.append(v1)
        whole = fms.size_in_bytes()
        # a partial v0 entry after it: its magic byte is read
        fms.append(bytes(v0.buffer)[:20])
        assert not fms.is_magic_value_in_all_wrapper_messages(1)
        assert fms.read(0, whole + 16).is_magic_value_in_all_wrapper_messages(1)  # no magic byte yet
        assert fms.read(0, whole + 5).is_magic_value_in_all_wrapper_messages(1)  # no size yet
    with FileMessageSet.open(tmp_path / "small.log") as fms:
        fms.append(v1)
        fms.append(struct.pack(">qi", 9, 13) + b"\x00" * 13)
        with pytest.raises(IllegalStateError, match=r"^Invalid message size: 13$"):
            fms.is_magic_value_in_all_wrapper_messages(1)
        with pytest.raises(CorruptRecordError):
            fms.has_matching_magic(1)
    with FileMessageSet.open(tmp_path / "short-v1.log") as fms:
        # a v1 entry of 20 bytes (the scan wants 22) is judged by its magic, and the walk goes on
        fms.append(struct.pack(">qiIbb", 0, 20, 0, 1, 0) + b"\x00" * 14)
        fms.append(v1)
        assert fms.is_magic_value_in_all_wrapper_messages(1)
        assert not fms.is_magic_value_in_all_wrapper_messages(2)


def test_memory_chunks_reusing_one_buffer_read_the_same_records(tmp_path: Path, impl: ModuleType) -> None:
    """``reuse`` reads every chunk into one buffer (a larger one for a chunk that does not fit): the records
    taken from each chunk before the next is read are those of fresh reads, whatever the codec or format."""
    records = FileMessageSet.open(tmp_path / "chunks.log")
    try:
        offset = 0
        for i, codec in enumerate(["none", "zstd", "lz4", "none", "gzip"]):
            values = [bytes([65 + i]) * (40 + 300 * i) for _ in range(3)]
            records.append(MemoryRecords.with_records([(b"k", v, TS) for v in values], base_offset=offset,
                                                      compression=codec))
            offset += 3
        records.append(build_legacy_message_set([(b"k", b"legacy", TS)], magic=1, base_offset=offset))
        records.flush()

        def read(reuse: bool) -> list[Any]:
            out = []
            for _position, chunk in records.memory_chunks(chunk_bytes=200, reuse=ChunkBuffer() if reuse else None):
                out.extend(r.as_tuple() for r in chunk.records())
            return out

        fresh = read(False)
        assert len(fresh) == 16 and fresh[-1][3] == b"legacy"
        assert read(True) == fresh
    finally:
        records.close()


@pytest.mark.parametrize("kind", ["bytes", "bytearray", "memoryview", "MemoryRecords"])
def test_append_resumes_short_writes(tmp_path: Path, impl: ModuleType, kind: str,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``pwrite`` that writes less than asked (a signal, a filesystem's limit) is resumed from where it stopped,
    for every kind of buffer, bytes and bytearrays included (they are written without a view first)."""
    data = bytes(range(256)) * 3
    file = FileMessageSet(tmp_path / "short.log", file_already_exists=False)
    real_pwrite = os.pwrite
    calls: list[int] = []

    def short(fd: int, buffer: Any, offset: int) -> int:
        with memoryview(buffer) as view:
            calls.append(view.nbytes)
            return real_pwrite(fd, view[:100], offset)  # at most 100 bytes a call, for real

    monkeypatch.setattr(os, "pwrite", short)
    source: Any = {"bytes": data, "bytearray": bytearray(data), "memoryview": memoryview(data),
                   "MemoryRecords": MemoryRecords(bytearray(data))}[kind]
    try:
        assert file.append(source) == len(data)
        assert file.size_in_bytes() == len(data)
        monkeypatch.setattr(os, "pwrite", real_pwrite)
        assert calls == list(range(len(data), 0, -100))
        assert (tmp_path / "short.log").read_bytes()[:len(data)] == data
    finally:
        file.close()

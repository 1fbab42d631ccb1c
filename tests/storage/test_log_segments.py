"""LogSegments against Kafka's LogSegmentsTest (core 3.8.0 ``kafka/log/LogSegmentsTest.scala``), spec §7.11.

Segments are made as Kafka's ``LogTestUtils.createSegment`` makes them: a log file, an offset index of 1000
bytes and a time index of 1500 bytes opened lazily, ``index.interval.bytes`` 10, no roll jitter.  Kafka's
``firstEntry``/``lastEntry``/``higherEntry`` (map entries) become the segment lookups kafkalog has
(``first_segment``, ``last_segment``, ``higher_segment``), whose base offset is the entry's key.  The map
holds no records, so these tests touch no kernel and run once (no ``impl`` fixture).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kafkalog.errors import IllegalArgumentError
from kafkalog.file_message_set import FileMessageSet
from kafkalog.filenames import index_filename, log_filename, time_index_filename
from kafkalog.index import LazyIndex, OffsetIndex, TimeIndex
from kafkalog.log.segments import LogSegments
from kafkalog.scheduler import SYSTEM_TIME
from kafkalog.segment import LogSegment
from kafkalog.topic import TopicPartition

INT32_MAX = 2**31 - 1
TOPIC_PARTITION = TopicPartition("topic", 0)


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "topic-0"
    directory.mkdir()
    return directory


@pytest.fixture
def create_segment(log_dir: Path) -> Iterator[Callable[[int], LogSegment]]:
    """Kafka's ``LogTestUtils.createSegment(offset, logDir, indexIntervalBytes = 10, time = Time.SYSTEM)``;
    every segment made is closed after the test."""
    made: list[LogSegment] = []

    def create(base_offset: int) -> LogSegment:
        log = FileMessageSet.open(log_filename(log_dir, base_offset))
        offset_index = LazyIndex(OffsetIndex, index_filename(log_dir, base_offset), base_offset, 1000)
        time_index = LazyIndex(TimeIndex, time_index_filename(log_dir, base_offset), base_offset, 1500)
        segment = LogSegment(log, offset_index, time_index, base_offset, 10, 0, SYSTEM_TIME, 1000)
        made.append(segment)
        return segment

    yield create
    for segment in made:
        segment.close()


def test_basic_operations(create_segment: Callable[[int], LogSegment]) -> None:
    segments = LogSegments(TOPIC_PARTITION)
    assert segments.is_empty()
    assert len(segments) == 0

    offset1, offset2 = 40, 80
    seg1 = create_segment(offset1)
    seg2 = create_segment(offset2)
    seg3 = create_segment(offset1)

    # add seg1
    assert segments.add(seg1) is None
    assert not segments.is_empty()
    assert segments.number_of_segments == 1
    assert segments.contains(offset1)
    assert segments.get(offset1) is seg1

    # add seg2
    assert segments.add(seg2) is None
    assert not segments.is_empty()
    assert segments.number_of_segments == 2
    assert segments.contains(offset2)
    assert segments.get(offset2) is seg2

    # replace seg1 with seg3: the replaced segment is returned
    assert segments.add(seg3) is seg1
    assert not segments.is_empty()
    assert segments.number_of_segments == 2
    assert segments.contains(offset1)
    assert segments.get(offset1) is seg3
    assert segments.base_offsets() == [offset1, offset2]

    # remove seg2
    segments.remove(offset2)
    assert not segments.is_empty()
    assert segments.number_of_segments == 1
    assert not segments.contains(offset2)
    assert segments.get(offset2) is None
    segments.remove(offset2)  # removing an absent base offset changes nothing
    assert segments.base_offsets() == [offset1]

    # clear every segment, seg3 included
    segments.clear()
    assert segments.is_empty()
    assert segments.number_of_segments == 0
    assert not segments.contains(offset1)
    assert segments.first_segment() is None
    assert segments.last_segment() is None
    assert segments.first_segment_base_offset() is None


def test_segment_access(create_segment: Callable[[int], LogSegment]) -> None:
    segments = LogSegments(TOPIC_PARTITION)
    seg1, seg2, seg3, seg4 = (create_segment(offset) for offset in (1, 2, 3, 4))

    # first and last as the segments are added
    for seg in (seg1, seg2, seg3, seg4):
        segments.add(seg)
        first = segments.first_segment()
        assert first is seg1
        assert first.base_offset == 1
        assert segments.first_segment_base_offset() == 1
        last = segments.last_segment()
        assert last is seg
        assert segments.active_segment is seg

    assert segments.base_offsets() == [1, 2, 3, 4]
    assert segments.values() == [seg1, seg2, seg3, seg4]
    assert list(segments) == [seg1, seg2, seg3, seg4]

    # values(from, to): the segments that may hold offsets in [from, to)
    with pytest.raises(IllegalArgumentError):
        segments.values(2, 1)
    assert segments.values(1, 1) == []
    assert segments.values(1, 2) == [seg1]
    assert segments.values(1, 3) == [seg1, seg2]
    assert segments.values(1, 4) == [seg1, seg2, seg3]
    assert segments.values(2, 4) == [seg2, seg3]
    assert segments.values(3, 4) == [seg3]
    assert segments.values(4, 4) == []
    assert segments.values(4, 5) == [seg4]

    assert segments.last_segment() is seg4

    assert segments.non_active_log_segments_from(2) == [seg2, seg3]
    assert segments.non_active_log_segments_from(4) == []
    assert segments.non_active_log_segments_from(5) == []

    segments.close()


def test_values_from_inside_a_segment(create_segment: Callable[[int], LogSegment]) -> None:
    """Spec §7.11: a range starting inside a segment includes that segment (its floor)."""
    segments = LogSegments(TOPIC_PARTITION)
    seg10, seg20, seg30 = (create_segment(offset) for offset in (10, 20, 30))
    for seg in (seg10, seg20, seg30):
        segments.add(seg)
    assert segments.values(15, 25) == [seg10, seg20]
    assert segments.values(25, 31) == [seg20, seg30]
    assert segments.values(35, 100) == [seg30]
    assert segments.values(0, 10) == []
    assert segments.values(0, 11) == [seg10]
    assert segments.values(15, None) == [seg10, seg20, seg30]
    assert segments.values(None, 20) == [seg10]
    assert segments.non_active_log_segments_from(15) == [seg10, seg20]
    segments.close()


def test_closest_match_operations(create_segment: Callable[[int], LogSegment]) -> None:
    segments = LogSegments(TOPIC_PARTITION)
    seg1, seg2, seg3, seg4 = (create_segment(offset) for offset in (1, 3, 5, 7))
    for seg in (seg1, seg2, seg3, seg4):
        segments.add(seg)

    assert segments.floor_segment(2) is seg1
    assert segments.floor_segment(3) is seg2
    assert segments.floor_segment(0) is None
    assert segments.floor_entry(6) == 5

    assert segments.lower_segment(3) is seg1
    assert segments.lower_segment(4) is seg2
    assert segments.lower_segment(1) is None

    higher = segments.higher_segment(4)
    assert higher is seg3
    assert higher.base_offset == 5
    higher = segments.higher_segment(5)
    assert higher is seg4
    assert higher.base_offset == 7
    assert segments.higher_segment(7) is None

    segments.close()


def test_higher_segments(create_segment: Callable[[int], LogSegment]) -> None:
    segments = LogSegments(TOPIC_PARTITION)
    seg1, seg2, seg3, seg4, seg5 = (create_segment(offset) for offset in (1, 3, 5, 7, 9))
    for seg in (seg1, seg2, seg3, seg4, seg5):
        segments.add(seg)

    assert segments.higher_segments(0) == [seg1, seg2, seg3, seg4, seg5]
    assert segments.higher_segments(1) == [seg2, seg3, seg4, seg5]
    assert segments.higher_segments(8) == [seg5]
    assert segments.higher_segments(9) == []

    segments.close()


class _FakeSegment:
    """Kafka's mocked ``LogSegment`` whose ``size`` is ``Int.MaxValue``."""

    def __init__(self, base_offset: int) -> None:
        self.base_offset = base_offset

    def size(self) -> int:
        return INT32_MAX


def test_size_for_large_logs() -> None:
    segments = LogSegments(TOPIC_PARTITION)
    segments.add(_FakeSegment(0))  # type: ignore[arg-type]
    assert segments.size_in_bytes() == INT32_MAX
    segments.add(_FakeSegment(INT32_MAX))  # type: ignore[arg-type]
    # Kafka sums as a long: the total passes Int.MaxValue without wrapping
    assert segments.size_in_bytes() == INT32_MAX * 2
    assert segments.size_in_bytes() > INT32_MAX


def test_update_dir(create_segment: Callable[[int], LogSegment], tmp_path: Path) -> None:
    seg1 = create_segment(1)
    segments = LogSegments(TOPIC_PARTITION)
    segments.add(seg1)

    new_dir = tmp_path / "other-0"
    new_dir.mkdir()
    segments.update_parent_dir(new_dir)
    assert seg1.log.file.parent == new_dir
    assert seg1.log.file.name == "00000000000000000001.log"
    # Kafka's LogSegment.updateParentDir points the log, both indexes and the txn index at the new dir
    assert seg1._lazy_time_index.file.parent == new_dir
    assert seg1._lazy_offset_index.file.parent == new_dir

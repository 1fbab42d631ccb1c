"""Kafka's ``TimeIndexTest`` (3.8.0 and 0.10.1.1, ``core/src/test/scala/unit/kafka/log``; the later Java port
in ``storage`` adds testIsFull, testLastEntry, testResize, testEntrySize and testParseEntry) against
:class:`kafkalog.index.TimeIndex`, with Kafka's values.  Every test takes ``impl``.
"""

from __future__ import annotations

import struct
from pathlib import Path
from types import ModuleType

import pytest

from kafkalog.errors import (
    CorruptIndexError,
    IllegalArgumentError,
    IllegalStateError,
    InvalidOffsetError,
)
from kafkalog.index import (
    OffsetIndex,
    TimeIndex,
    TimestampOffset,
)
from tests.support.index_utils import BASE_OFFSET, MAX_ENTRIES, append_time_entries

# =================================================================================================
# TimeIndexTest
# =================================================================================================


def test_time_lookup(time_index: TimeIndex) -> None:
    """TimeIndexTest.testLookUp (3.8.0 and 0.10.1.1): before the first entry, between two, on one; and
    past the last."""
    idx = time_index
    assert idx.lookup(100) == TimestampOffset(-1, BASE_OFFSET)
    append_time_entries(idx, MAX_ENTRIES - 1)
    assert idx.lookup(9) == TimestampOffset(-1, BASE_OFFSET)
    assert idx.lookup(25) == TimestampOffset(20, 65)
    assert idx.lookup(30) == TimestampOffset(30, 75)
    assert idx.lookup(290) == TimestampOffset(290, 335)
    assert idx.lookup(10**12) == TimestampOffset(290, 335)


def test_time_entry(time_index: TimeIndex) -> None:
    """TimeIndexTest.testEntry, and the last slot and one past it."""
    append_time_entries(time_index, MAX_ENTRIES - 1)
    assert time_index.entry(0) == TimestampOffset(10, 55)
    assert time_index.entry(1) == TimestampOffset(20, 65)
    assert time_index.entry(2) == TimestampOffset(30, 75)
    assert time_index.entry(3) == TimestampOffset(40, 85)
    assert time_index.entry(28) == TimestampOffset(290, 335)
    with pytest.raises(IllegalArgumentError):
        time_index.entry(29)


def test_time_entry_overflow(time_index: TimeIndex) -> None:
    """TimeIndexTest.testEntryOverflow."""
    with pytest.raises(IllegalArgumentError):
        time_index.entry(0)


def test_time_truncate(time_index: TimeIndex) -> None:
    """TimeIndexTest.testTruncate (3.8.0 and 0.10.1.1), and truncations between and on entries."""
    idx = time_index
    append_time_entries(idx, MAX_ENTRIES - 1)
    idx.truncate()
    assert idx.entries == 0
    assert idx.last_entry == TimestampOffset(-1, BASE_OFFSET)
    append_time_entries(idx, MAX_ENTRIES - 1)
    idx.truncate_to(10 + BASE_OFFSET)  # the offset of the first entry: it goes too
    assert idx.entries == 0
    append_time_entries(idx, MAX_ENTRIES - 1)
    idx.truncate_to(86)  # between (40, 85) and (50, 95)
    assert idx.entries == 4
    assert idx.last_entry == TimestampOffset(40, 85)
    idx.truncate_to(85)
    assert idx.entries == 3
    assert idx.last_entry == TimestampOffset(30, 75)
    idx.truncate_to(10**9)
    assert idx.entries == 3


def test_time_append(time_index: TimeIndex) -> None:
    """TimeIndexTest.testAppend (3.8.0 and 0.10.1.1): a full index refuses a new entry unless the segment
    rolls (``skip_full_check``), and an offset below the last entry is an InvalidOffsetError."""
    idx = time_index
    append_time_entries(idx, MAX_ENTRIES - 1)
    with pytest.raises(IllegalArgumentError):
        idx.maybe_append(10000, 1000)
    with pytest.raises(InvalidOffsetError):
        idx.maybe_append(10000, (MAX_ENTRIES - 2) * 10, True)
    idx.maybe_append(10000, 1000, True)
    assert idx.entries == MAX_ENTRIES
    assert idx.last_entry == TimestampOffset(10000, 1000)
    assert idx.entry(29) == TimestampOffset(10000, 1000)


def test_time_append_rules(time_index: TimeIndex) -> None:
    """maybeAppend: equal timestamps and -1 timestamps add nothing; a smaller timestamp is an error."""
    idx = time_index
    idx.maybe_append(-1, 50)
    assert idx.entries == 0
    idx.maybe_append(100, 50)
    idx.maybe_append(100, 51)
    assert idx.entries == 1
    assert idx.last_entry == TimestampOffset(100, 50)
    with pytest.raises(IllegalStateError):
        idx.maybe_append(99, 52)
    with pytest.raises(InvalidOffsetError):
        idx.maybe_append(101, 49)
    idx.maybe_append(101, 50)  # the same offset with a larger timestamp is fine
    assert idx.last_entry == TimestampOffset(101, 50)
    assert idx.entries == 2


def test_time_sanity_check(impl: ModuleType, tmp_path: Path) -> None:
    """testSanityCheck: Kafka corrupts a mock's last entry and length; here the file itself is
    corrupted the same three ways."""
    path = tmp_path / "sane.timeindex"
    idx = TimeIndex(path, BASE_OFFSET, MAX_ENTRIES * 12)
    idx.sanity_check()
    append_time_entries(idx, 5)
    first_entry = idx.entry(0)
    assert idx.sanity_check() is None
    idx.trim_to_valid_size()
    idx.close()
    good = path.read_bytes()
    assert len(good) == 5 * 12

    last = good[-12:]
    timestamp, relative = struct.unpack(">qi", last)
    assert (timestamp, relative) == (50, 50)
    corrupt_offset = good[:-12] + struct.pack(">qi", timestamp, -1)  # last offset = base - 1
    corrupt_timestamp = good[:-12] + struct.pack(">qi", first_entry.timestamp - 1, relative)
    corrupt_length = good + b"\x00"
    for name, data, message in (("offset", corrupt_offset, r"\b44\b"),
                                ("timestamp", corrupt_timestamp, r"\b9\b"),
                                ("length", corrupt_length, r"\b61\b")):
        bad = tmp_path / f"{name}.timeindex"
        bad.write_bytes(data)
        with TimeIndex(bad, BASE_OFFSET, MAX_ENTRIES * 12) as mock:
            assert mock.entries == 5
            with pytest.raises(CorruptIndexError, match=message):
                mock.sanity_check()
    with TimeIndex(path, BASE_OFFSET, MAX_ENTRIES * 12) as reopened:
        assert reopened.sanity_check() is None
        assert reopened.last_entry == TimestampOffset(50, 95)


def test_time_is_full(time_index: TimeIndex) -> None:
    assert not time_index.is_full()
    append_time_entries(time_index, MAX_ENTRIES - 2)
    assert not time_index.is_full()
    time_index.maybe_append(290, 335)
    assert time_index.entries == MAX_ENTRIES - 1
    assert time_index.is_full()  # the last slot is kept for the roll


def test_time_last_entry(time_index: TimeIndex) -> None:
    assert time_index.last_entry == TimestampOffset(-1, BASE_OFFSET)
    time_index.maybe_append(1, 1 + BASE_OFFSET)
    assert time_index.last_entry == TimestampOffset(1, BASE_OFFSET + 1)
    assert time_index.read_last_entry() == TimestampOffset(1, BASE_OFFSET + 1)


def test_time_resize(time_index: TimeIndex) -> None:
    idx = time_index
    assert idx.resize(MAX_ENTRIES * 12) is False
    assert idx.resize(MAX_ENTRIES // 2 * 12) is True
    assert idx.max_entries == 15
    assert idx.length() == 180
    assert idx.resize(MAX_ENTRIES * 2 * 12) is True
    assert idx.max_entries == 60
    assert idx.length() == 720


def test_entry_size() -> None:
    assert TimeIndex.ENTRY_SIZE == 12
    assert OffsetIndex.ENTRY_SIZE == 8


def test_time_parse_entry(time_index: TimeIndex) -> None:
    time_index.maybe_append(1, 1 + BASE_OFFSET)
    time_index.flush()
    raw = time_index.file.read_bytes()[:12]
    assert struct.unpack(">qi", raw) == (1, 1)  # the offset is stored relative to the base
    assert time_index.entry(0) == TimestampOffset(1, BASE_OFFSET + 1)

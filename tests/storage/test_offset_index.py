"""Kafka's ``OffsetIndexTest`` (3.8.0, ``core/src/test/scala/unit/kafka/log``; 0.10.1.1 where it had the
case) against :class:`kafkalog.index.OffsetIndex`, with Kafka's values, plus the port's own cases of the same
methods.  Every test takes ``impl``, so it runs on both kernel twins.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from kafkalog.errors import (
    CorruptIndexError,
    IllegalArgumentError,
    IllegalStateError,
    InvalidOffsetError,
    KafkaLogError,
)
from kafkalog.index import (
    OffsetIndex,
    OffsetPosition,
    TimeIndex,
)
from tests.support.index_utils import (
    BASE_OFFSET,
    KAFKA_MONOTONIC_STEPS,
    MAX_ENTRIES,
    monotonic_seq,
    raises_exactly,
    write_offset_entries,
)

# =================================================================================================
# OffsetIndexTest (Kafka 3.8.0)
# =================================================================================================


def test_random_lookup(offset_index: OffsetIndex) -> None:
    """randomLookupTest: every appended key is found; any other offset gives the floor entry, or
    (base, 0) below the first entry."""
    idx = offset_index
    assert idx.lookup(92) == OffsetPosition(BASE_OFFSET, 0)
    assert idx.max_entries == MAX_ENTRIES
    offsets = monotonic_seq(BASE_OFFSET + 1, idx.max_entries)
    positions = monotonic_seq(0, idx.max_entries)
    assert offsets[:4] == [47, 61, 69, 73] and positions[-1] == sum(KAFKA_MONOTONIC_STEPS)
    for offset, position in zip(offsets, positions, strict=True):
        idx.append(offset, position)
    for offset, position in zip(offsets, positions, strict=True):
        assert idx.lookup(offset) == OffsetPosition(offset, position)
    # Kafka shuffles the offsets base .. last-1 and checks 30 of them; here every one of them is checked
    # (its Scala shuffle of a primitive array is a no-op, so 3.8.0 checks 45..74), and a few past the end.
    for offset in range(BASE_OFFSET, offsets[-1] + 5):
        if offset < offsets[0]:
            expected = OffsetPosition(BASE_OFFSET, 0)
        else:
            floor = max(o for o in offsets if o <= offset)
            expected = OffsetPosition(floor, positions[offsets.index(floor)])
        assert idx.lookup(offset) == expected
    assert idx.lookup(46) == OffsetPosition(45, 0)
    assert idx.lookup(60) == OffsetPosition(47, 1)
    assert idx.lookup(61) == OffsetPosition(61, 15)


def test_lookup_extreme_cases(offset_index: OffsetIndex) -> None:
    idx = offset_index
    assert idx.lookup(BASE_OFFSET) == OffsetPosition(BASE_OFFSET, 0), "lookup on empty file"
    for i in range(idx.max_entries):
        idx.append(BASE_OFFSET + i + 1, i)
    # the first entry is base + 1, so the base offset itself is below it
    assert idx.lookup(BASE_OFFSET) == OffsetPosition(BASE_OFFSET, 0)
    assert idx.lookup(BASE_OFFSET + idx.max_entries) == OffsetPosition(BASE_OFFSET + 30, 29)
    assert idx.lookup(2**62) == OffsetPosition(BASE_OFFSET + 30, 29)
    assert idx.lookup(-(2**62)) == OffsetPosition(BASE_OFFSET, 0)


def test_entry(offset_index: OffsetIndex) -> None:
    idx = offset_index
    for i in range(idx.max_entries):
        idx.append(BASE_OFFSET + i + 1, i)
    for i in range(idx.max_entries):
        assert idx.entry(i) == OffsetPosition(BASE_OFFSET + i + 1, i)
        assert idx.relative_offset_at(i) == i + 1
        assert idx.physical(i) == i
    with pytest.raises(IllegalArgumentError):
        idx.entry(idx.max_entries)


def test_entry_overflow(offset_index: OffsetIndex) -> None:
    with pytest.raises(IllegalArgumentError):
        offset_index.entry(0)
    offset_index.append(50, 7)
    assert offset_index.entry(0) == OffsetPosition(50, 7)
    with pytest.raises(IllegalArgumentError):
        offset_index.entry(1)


def test_entry_out_of_range_names_the_index(offset_index: OffsetIndex, time_index: TimeIndex) -> None:
    # Kafka's messages: "... from index <file> ..." and "... from time index <file> ...".
    with pytest.raises(IllegalArgumentError, match=r"Attempt to fetch the 0th entry from index .*, which has size 0"):
        offset_index.entry(0)
    with pytest.raises(IllegalArgumentError, match=r"the -1th entry from time index .*, which has size 0"):
        time_index.entry(-1)


def test_append_too_many(offset_index: OffsetIndex) -> None:
    idx = offset_index
    for i in range(idx.max_entries):
        idx.append(BASE_OFFSET + i + 1, i)
    assert idx.is_full()
    raises_exactly(IllegalArgumentError, lambda: idx.append(idx.max_entries + 1, 1))
    assert idx.entries == MAX_ENTRIES
    assert idx.last_offset == BASE_OFFSET + 30


def test_append_out_of_order(offset_index: OffsetIndex) -> None:
    offset_index.append(51, 0)
    with pytest.raises(InvalidOffsetError):
        offset_index.append(50, 1)
    with pytest.raises(InvalidOffsetError):
        offset_index.append(51, 1)  # equal is out of order too
    assert offset_index.entries == 1
    assert offset_index.last_offset == 51


def test_fetch_upper_bound_offset(offset_index: OffsetIndex) -> None:
    idx = offset_index
    first = OffsetPosition(BASE_OFFSET + 0, 0)
    second = OffsetPosition(BASE_OFFSET + 1, 10)
    third = OffsetPosition(BASE_OFFSET + 2, 23)
    fourth = OffsetPosition(BASE_OFFSET + 3, 37)
    assert idx.fetch_upper_bound_offset(first, 5) is None
    for entry in (first, second, third, fourth):
        idx.append(entry.offset, entry.position)
    assert idx.fetch_upper_bound_offset(first, 5) == second
    assert idx.fetch_upper_bound_offset(first, 10) == second
    assert idx.fetch_upper_bound_offset(first, 23) == third
    assert idx.fetch_upper_bound_offset(first, 22) == third
    assert idx.fetch_upper_bound_offset(second, 24) == fourth
    assert idx.fetch_upper_bound_offset(fourth, 1) is None
    assert idx.fetch_upper_bound_offset(first, 200) is None
    assert idx.fetch_upper_bound_offset(second, 200) is None


def test_fetch_upper_bound_offset_first_entry_quirk(offset_index: OffsetIndex) -> None:
    """Kafka's smallest-upper-bound search never compares slot 0: a bound equal to the first entry's
    position answers the second entry, and with one entry, none (spec §3.1, §8.5)."""
    idx = offset_index
    first = OffsetPosition(BASE_OFFSET, 0)
    idx.append(BASE_OFFSET, 0)
    assert idx.fetch_upper_bound_offset(first, 0) is None
    assert idx.smallest_upper_bound_slot_for(0, by_value=True) == -1
    assert idx.smallest_upper_bound_slot_for(BASE_OFFSET) == -1
    assert idx.smallest_upper_bound_slot_for(BASE_OFFSET - 1) == 0
    idx.append(BASE_OFFSET + 1, 10)
    assert idx.fetch_upper_bound_offset(first, 0) == OffsetPosition(BASE_OFFSET + 1, 10)
    assert idx.smallest_upper_bound_slot_for(BASE_OFFSET) == 1
    assert idx.smallest_upper_bound_slot_for(BASE_OFFSET + 1) == 1
    assert idx.largest_lower_bound_slot_for(BASE_OFFSET) == 0
    assert idx.largest_lower_bound_slot_for(10, by_value=True) == 1


def test_reopen(offset_index: OffsetIndex) -> None:
    """testReopen: a closed index reopens (default max size) at its trimmed length, hence full."""
    idx = offset_index
    first = OffsetPosition(51, 0)
    sec = OffsetPosition(52, 1)
    idx.append(first.offset, first.position)
    idx.append(sec.offset, sec.position)
    idx.close()
    assert idx.file.stat().st_size == 16
    reopened = OffsetIndex(idx.file, BASE_OFFSET)
    try:
        assert reopened.lookup(first.offset) == first
        assert reopened.lookup(sec.offset) == sec
        assert reopened.last_offset == sec.offset
        assert reopened.entries == 2
        assert reopened.max_entries == 2
        raises_exactly(IllegalArgumentError, lambda: reopened.append(53, 1))
    finally:
        reopened.close()


def test_truncate(impl: ModuleType, tmp_path: Path) -> None:
    with OffsetIndex(tmp_path / "t.index", 0, 10 * 8) as idx:
        idx.truncate()
        for i in range(1, 10):
            idx.append(i, i)

        idx.truncate_to(12)
        assert idx.lookup(10) == OffsetPosition(9, 9), "unchanged by a truncate past the end"
        assert idx.last_offset == 9

        idx.append(10, 10)
        idx.truncate_to(10)
        assert idx.lookup(10) == OffsetPosition(9, 9), "unchanged by a truncate at the end"
        assert idx.last_offset == 9
        idx.append(10, 10)

        idx.truncate_to(9)
        assert idx.lookup(10) == OffsetPosition(8, 8), "truncates off the last entry"
        assert idx.last_offset == 8
        idx.append(9, 9)

        idx.truncate_to(5)
        assert idx.lookup(10) == OffsetPosition(4, 4)
        assert idx.last_offset == 4
        assert idx.entries == 4
        idx.append(5, 5)

        idx.truncate()
        assert idx.entries == 0, "full truncation leaves no entries"
        assert idx.last_offset == 0
        idx.append(0, 0)
        assert idx.entry(0) == OffsetPosition(0, 0)
    assert (tmp_path / "t.index").stat().st_size == 8


def test_closed_index_refuses_lookups(impl: ModuleType, tmp_path: Path) -> None:
    """forceUnmapTest: once unmapped (here: closed), a lookup fails; closing again is harmless."""
    idx = OffsetIndex(tmp_path / "u.index", 0, 10 * 8)
    idx.append(3, 30)
    idx.close()
    for call in (lambda: idx.lookup(1), lambda: idx.entry(0), lambda: idx.append(4, 40),
                 lambda: idx.truncate_to(1), lambda: idx.fetch_upper_bound_offset(OffsetPosition(0, 0), 1)):
        with pytest.raises(IllegalStateError):
            call()
    with pytest.raises(KafkaLogError):
        idx.lookup(1)
    idx.close()
    t = TimeIndex(tmp_path / "u.timeindex", 0, 10 * 12)
    t.close()
    with pytest.raises(IllegalStateError):
        t.lookup(1)
    with pytest.raises(IllegalStateError):
        t.maybe_append(1, 1)


def test_sanity_last_offset_equal_to_base_offset(impl: ModuleType, tmp_path: Path) -> None:
    with OffsetIndex(tmp_path / "s.index", 20, 10 * 8) as idx:
        idx.append(20, 0)
        assert idx.sanity_check() is None
        assert idx.last_offset == 20
        assert idx.entries == 1


def test_offset_sanity_check_last_offset_below_base(impl: ModuleType, tmp_path: Path) -> None:
    path = tmp_path / "c.index"
    write_offset_entries(path, [(1, 0), (2, 10), (-1, 20)])
    with OffsetIndex(path, BASE_OFFSET, 30 * 8) as idx:
        assert idx.entries == 3
        assert idx.last_offset == BASE_OFFSET - 1
        with pytest.raises(CorruptIndexError, match=r"\b44\b"):
            idx.sanity_check()

"""The offset and time indexes (``kafkalog/index.py``) and their kernels.

Kafka's ``OffsetIndexTest`` and ``TimeIndexTest`` (3.8.0, ``core/src/test/scala/unit/kafka/log``; the
later Java ports in ``storage`` add testIsFull, testLastEntry, testResize, testEntrySize and
testParseEntry) with their values, then random indexes checked against ``bisect`` on a Python list,
the two kernel twins against each other, the bulk appends against the one-at-a-time ones, read-only
opening and the file lifecycle.  Every index test takes ``impl``, so it runs on both twins.
"""

from __future__ import annotations

import bisect
import os
import struct
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import kafkalog
from kafkalog import _impl
from kafkalog._common import IndexKind
from kafkalog.errors import (
    CorruptIndexError,
    IllegalArgumentError,
    IllegalStateError,
    IndexOffsetOverflowError,
    InvalidOffsetError,
    KafkaLogError,
    ReadOnlyError,
)
from kafkalog.index import (
    DEFAULT_MAX_INDEX_SIZE,
    AbstractIndex,
    OffsetIndex,
    OffsetPosition,
    TimeIndex,
    TimestampOffset,
)

BASE_OFFSET = 45
MAX_ENTRIES = 30
INT32_MAX = 2**31 - 1
OFFSET_WARM_ENTRIES = 8192 // 8
TIME_WARM_ENTRIES = 8192 // 12

# Kafka's OffsetIndexTest.monotonicSeq draws its steps from ``new Random(1L)``: ``nextInt(15) + 1``.
# These are the first 30 of them, as a JVM gives them.
KAFKA_MONOTONIC_STEPS = (1, 14, 8, 4, 15, 5, 15, 2, 14, 14, 5, 14, 8, 4, 13, 5, 3, 13, 7, 15, 12, 3, 11, 15,
                         15, 15, 14, 9, 13, 3)


def monotonic_seq(base: int, length: int) -> list[int]:
    """Kafka's ``monotonicSeq(base, len)`` (3.8.0): a running sum of the seeded steps."""
    out = []
    last = base
    for step in KAFKA_MONOTONIC_STEPS[:length]:
        last += step
        out.append(last)
    return out


# -- models --------------------------------------------------------------------------------------


def llb_model(keys: Sequence[int], target: int) -> int:
    """Largest entry <= target, -1 when none (keys strictly increasing)."""
    return bisect.bisect_right(keys, target) - 1


def sub_model(keys: Sequence[int], target: int) -> int:
    """Kafka's smallest-upper-bound slot, quirk included: slot 0 is never compared, so a target equal
    to the first key answers slot 1 (or -1 with a single entry) (spec §3.1)."""
    n = len(keys)
    if n == 0:
        return -1
    if target == keys[0]:
        return 1 if n > 1 else -1
    slot = bisect.bisect_left(keys, target)
    return -1 if slot == n else slot


def offset_lookup_model(offsets: Sequence[int], positions: Sequence[int], base: int,
                        target: int) -> OffsetPosition:
    slot = llb_model(offsets, target)
    return OffsetPosition(base, 0) if slot < 0 else OffsetPosition(offsets[slot], positions[slot])


def time_lookup_model(timestamps: Sequence[int], offsets: Sequence[int], base: int,
                      target: int) -> TimestampOffset:
    slot = llb_model(timestamps, target)
    return TimestampOffset(-1, base) if slot < 0 else TimestampOffset(timestamps[slot], offsets[slot])


def targets_for(keys: Sequence[int], rng: np.random.Generator, warm: int, count: int) -> list[int]:
    """Targets of every kind: below the first key, equal to keys, between keys, past the last, in the
    warm section (the last ``warm`` + 1 entries) and far before it."""
    n = len(keys)
    first, last = keys[0], keys[-1]
    out = [first - 1, first, first + 1, last - 1, last, last + 1, last + 10**6, first - 10**6, -1, 0]
    first_hot = max(0, n - 1 - warm)
    out += [keys[first_hot], keys[first_hot] - 1, keys[first_hot] + 1]
    slots = rng.integers(0, n, count)
    warm_slots = rng.integers(first_hot, n, count)
    cold_slots = rng.integers(0, max(1, first_hot), count)
    for chosen in (slots, warm_slots, cold_slots):
        for s in chosen.tolist():
            out += [keys[s], keys[s] - 1, keys[s] + 1]
    out += rng.integers(first - 100, last + 100, count).tolist()
    return out


def random_increasing(rng: np.random.Generator, n: int, start: int, max_step: int) -> np.ndarray:
    return start + np.cumsum(rng.integers(1, max_step + 1, n)).astype(np.int64)


# -- fixtures and helpers ------------------------------------------------------------------------


@pytest.fixture
def offset_index(impl: ModuleType, tmp_path: Path) -> Any:
    """Kafka's setup: an offset index at base 45 over a new file, 30 entries of 8 bytes."""
    idx = OffsetIndex(tmp_path / "offset.index", BASE_OFFSET, MAX_ENTRIES * 8)
    yield idx
    idx.close()


@pytest.fixture
def time_index(impl: ModuleType, tmp_path: Path) -> Any:
    """Kafka's setup: a time index at base 45 over a new file, 30 entries of 12 bytes."""
    idx = TimeIndex(tmp_path / "time.timeindex", BASE_OFFSET, MAX_ENTRIES * 12)
    yield idx
    idx.close()


def append_time_entries(idx: TimeIndex, count: int) -> None:
    """TimeIndexTest.appendEntries: (i * 10, i * 10 + base) for i in 1..count."""
    for i in range(1, count + 1):
        idx.maybe_append(i * 10, i * 10 + BASE_OFFSET)


def raises_exactly(cls: type[BaseException], fn: Callable[[], object]) -> BaseException:
    """Kafka's assertWriteFails: the error must be this class, not a subclass."""
    with pytest.raises(Exception) as info:  # the class is checked exactly below
        fn()
    assert type(info.value) is cls, f"expected {cls.__name__}, got {type(info.value).__name__}: {info.value}"
    return info.value


def write_offset_entries(path: Path, entries: Sequence[tuple[int, int]], tail: bytes = b"") -> None:
    path.write_bytes(b"".join(struct.pack(">ii", r, p) for r, p in entries) + tail)


def write_time_entries(path: Path, entries: Sequence[tuple[int, int]], tail: bytes = b"") -> None:
    path.write_bytes(b"".join(struct.pack(">qi", t, r) for t, r in entries) + tail)


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


# =================================================================================================
# Random indexes against a list model
# =================================================================================================


def test_random_offset_index_against_bisect(impl: ModuleType, tmp_path: Path) -> None:
    rng = np.random.default_rng(20240811)
    n = 50_000
    base = 1_000_000
    offsets_np = random_increasing(rng, n, base + 3, 20)
    positions_np = random_increasing(rng, n, -1, 4000)  # the first position can be 0
    offsets, positions = offsets_np.tolist(), positions_np.tolist()
    with OffsetIndex(tmp_path / "r.index", base, n * 8) as idx:
        idx.append_entries(offsets_np, positions_np)
        assert idx.entries == n and idx.is_full()
        assert idx.last_offset == offsets[-1]
        for target in targets_for(offsets, rng, OFFSET_WARM_ENTRIES, 150):
            assert idx.lookup(target) == offset_lookup_model(offsets, positions, base, target), target
            assert idx.largest_lower_bound_slot_for(target) == llb_model(offsets, target), target
            assert idx.smallest_upper_bound_slot_for(target) == sub_model(offsets, target), target
        for target in targets_for(positions, rng, OFFSET_WARM_ENTRIES, 100):
            assert idx.largest_lower_bound_slot_for(target, by_value=True) == llb_model(positions, target)
            slot = sub_model(positions, target)
            assert idx.smallest_upper_bound_slot_for(target, by_value=True) == slot, target
            start = OffsetPosition(0, target - 17)
            expected = None if slot < 0 else OffsetPosition(offsets[slot], positions[slot])
            assert idx.fetch_upper_bound_offset(start, 17) == expected
        # truncate_to at random offsets, from the end towards the start
        kept = n
        for target in sorted(rng.integers(base, offsets[-1] + 50, 40).tolist(), reverse=True):
            idx.truncate_to(target)
            kept = min(kept, bisect.bisect_left(offsets, target))
            assert idx.entries == kept
            assert idx.last_offset == (offsets[kept - 1] if kept else base)
            assert idx.lookup(target) == offset_lookup_model(offsets[:kept], positions, base, target)
            top = offsets[-1]
            assert idx.lookup(top) == offset_lookup_model(offsets[:kept], positions, base, top)


def test_full_10mib_offset_index(impl: ModuleType, tmp_path: Path) -> None:
    """A default-sized (10 MiB) index, filled to its last slot with one append_entries."""
    rng = np.random.default_rng(7)
    slots = DEFAULT_MAX_INDEX_SIZE // 8
    base = 2**40
    offsets_np = random_increasing(rng, slots, base - 1, 3)
    positions_np = np.arange(slots, dtype=np.int64) * 1000 + rng.integers(0, 999, slots)
    offsets, positions = offsets_np.tolist(), positions_np.tolist()
    path = tmp_path / "full.index"
    with OffsetIndex(path, base) as idx:
        assert idx.max_entries == slots == 1_310_720
        assert idx.length() == DEFAULT_MAX_INDEX_SIZE
        idx.append_entries(offsets_np, positions_np)
        assert idx.entries == slots and idx.is_full()
        with pytest.raises(IllegalArgumentError):
            idx.append(offsets[-1] + 1, positions[-1] + 1)
        for target in targets_for(offsets, rng, OFFSET_WARM_ENTRIES, 150):
            assert idx.lookup(target) == offset_lookup_model(offsets, positions, base, target), target
            assert idx.smallest_upper_bound_slot_for(target) == sub_model(offsets, target), target
        for target in targets_for(positions, rng, OFFSET_WARM_ENTRIES, 50):
            slot = sub_model(positions, target)
            expected = None if slot < 0 else OffsetPosition(offsets[slot], positions[slot])
            assert idx.fetch_upper_bound_offset(OffsetPosition(0, target), 0) == expected
        assert idx.entry(slots - 1) == OffsetPosition(offsets[-1], positions[-1])
    assert path.stat().st_size == DEFAULT_MAX_INDEX_SIZE  # every slot is valid: nothing to trim
    raw = np.frombuffer(path.read_bytes(), dtype=[("relative", ">i4"), ("position", ">i4")])
    assert np.array_equal(raw["relative"], offsets_np - base)
    assert np.array_equal(raw["position"], positions_np)
    with OffsetIndex(path, base, writable=False) as ro:
        assert ro.entries == slots
        for s in rng.integers(0, slots, 50).tolist():
            assert ro.lookup(offsets[s]) == OffsetPosition(offsets[s], positions[s])


def test_full_10mib_time_index(impl: ModuleType, tmp_path: Path) -> None:
    """A default-sized time index: bulk up to the full mark, one more append makes it full, and the
    roll's entry goes in the reserved slot."""
    rng = np.random.default_rng(11)
    slots = DEFAULT_MAX_INDEX_SIZE // 12
    base = 5_000
    bulk = slots - 2
    timestamps_np = random_increasing(rng, bulk, 1_600_000_000_000, 50)
    offsets_np = random_increasing(rng, bulk, base - 1, 2)
    path = tmp_path / "full.timeindex"
    with TimeIndex(path, base) as idx:
        assert idx.max_entries == slots == 873_813
        assert idx.length() == 10_485_756
        idx.append_entries(timestamps_np, offsets_np)
        assert idx.entries == bulk and not idx.is_full()
        timestamps, offsets = timestamps_np.tolist(), offsets_np.tolist()
        idx.maybe_append(timestamps[-1] + 1, offsets[-1] + 1)
        timestamps.append(timestamps[-1] + 1)
        offsets.append(offsets[-1] + 1)
        assert idx.is_full()
        with pytest.raises(IllegalArgumentError):
            idx.maybe_append(timestamps[-1] + 1, offsets[-1] + 1)
        idx.maybe_append(timestamps[-1] + 1, offsets[-1] + 1, skip_full_check=True)
        timestamps.append(timestamps[-1] + 1)
        offsets.append(offsets[-1] + 1)
        assert idx.entries == slots
        with pytest.raises(IllegalArgumentError):
            idx.maybe_append(timestamps[-1] + 1, offsets[-1] + 1, skip_full_check=True)
        for target in targets_for(timestamps, rng, TIME_WARM_ENTRIES, 150):
            assert idx.lookup(target) == time_lookup_model(timestamps, offsets, base, target), target
            assert idx.smallest_upper_bound_slot_for(target) == sub_model(timestamps, target), target
        for target in targets_for(offsets, rng, TIME_WARM_ENTRIES, 50):
            assert idx.largest_lower_bound_slot_for(target, by_value=True) == llb_model(offsets, target)
    assert path.stat().st_size == 10_485_756


def test_random_time_index_against_bisect(impl: ModuleType, tmp_path: Path) -> None:
    rng = np.random.default_rng(99)
    n = 20_000
    base = 300
    # candidates as recovery passes them: a running maximum, so many repeat and are skipped
    candidates = np.maximum.accumulate(rng.integers(0, 30_000_000, n * 2)).astype(np.int64)
    candidate_offsets = random_increasing(rng, n * 2, base, 5)
    keep = candidates > np.concatenate(([-1], candidates[:-1]))
    timestamps = candidates[keep].tolist()
    offsets = candidate_offsets[keep].tolist()
    assert len(timestamps) < n * 2
    with TimeIndex(tmp_path / "r.timeindex", base, (n * 2 + 2) * 12) as idx:
        idx.append_entries(candidates, candidate_offsets)
        assert idx.entries == len(timestamps)
        assert idx.last_entry == TimestampOffset(timestamps[-1], offsets[-1])
        for target in targets_for(timestamps, rng, TIME_WARM_ENTRIES, 150):
            assert idx.lookup(target) == time_lookup_model(timestamps, offsets, base, target), target
            assert idx.largest_lower_bound_slot_for(target) == llb_model(timestamps, target)
            assert idx.smallest_upper_bound_slot_for(target) == sub_model(timestamps, target), target
        for target in targets_for(offsets, rng, TIME_WARM_ENTRIES, 60):
            assert idx.largest_lower_bound_slot_for(target, by_value=True) == llb_model(offsets, target)
            assert idx.smallest_upper_bound_slot_for(target, by_value=True) == sub_model(offsets, target)
        kept = len(timestamps)
        for target in sorted(rng.integers(base - 5, offsets[-1] + 20, 40).tolist(), reverse=True):
            idx.truncate_to(target)
            kept = min(kept, bisect.bisect_left(offsets, target))
            assert idx.entries == kept
            expected_last = TimestampOffset(timestamps[kept - 1], offsets[kept - 1]) if kept else \
                TimestampOffset(-1, base)
            assert idx.last_entry == expected_last
            probe = timestamps[min(kept, len(timestamps) - 1)]
            assert idx.lookup(probe) == time_lookup_model(timestamps[:kept], offsets, base, probe)


def test_sub_model_quirk_across_the_warm_boundary(impl: ModuleType, tmp_path: Path) -> None:
    """The smallest-upper-bound quirk for the first key holds whether or not the index is larger than
    its warm section, and for both indexes."""
    for n in (1, 2, 3, OFFSET_WARM_ENTRIES, OFFSET_WARM_ENTRIES + 1, OFFSET_WARM_ENTRIES + 2, 3000):
        offsets = list(range(10, 10 + 3 * n, 3))
        with OffsetIndex(tmp_path / f"q{n}.index", 0, n * 8) as idx:
            idx.append_entries(np.array(offsets), np.arange(n) * 5)
            assert idx.smallest_upper_bound_slot_for(10) == (1 if n > 1 else -1)
            assert idx.smallest_upper_bound_slot_for(9) == 0
            assert idx.smallest_upper_bound_slot_for(0, by_value=True) == (1 if n > 1 else -1)
            for t in (11, 13, offsets[-1], offsets[-1] + 1, offsets[n // 2], offsets[n // 2] + 1):
                assert idx.smallest_upper_bound_slot_for(t) == sub_model(offsets, t)
                assert idx.largest_lower_bound_slot_for(t) == llb_model(offsets, t)
    for n in (1, 2, TIME_WARM_ENTRIES + 1, TIME_WARM_ENTRIES + 2, 2000):
        ts = list(range(100, 100 + 7 * n, 7))
        with TimeIndex(tmp_path / f"q{n}.timeindex", 0, (n + 2) * 12) as t_idx:
            t_idx.append_entries(np.array(ts), np.arange(n) * 2)
            assert t_idx.entries == n
            assert t_idx.smallest_upper_bound_slot_for(100) == (1 if n > 1 else -1)
            assert t_idx.smallest_upper_bound_slot_for(0, by_value=True) == (1 if n > 1 else -1)
            assert t_idx.smallest_upper_bound_slot_for(99) == 0


# =================================================================================================
# The two kernel twins
# =================================================================================================


@pytest.fixture(scope="module")
def twins() -> tuple[ModuleType, ModuleType]:
    both = _impl.both()
    if "cython" not in both:
        if os.environ.get("KAFKALOG_REQUIRE_EXTENSION", "") not in ("", "0"):
            pytest.fail("KAFKALOG_REQUIRE_EXTENSION is set but kafkalog._core is not built")
        pytest.skip("kafkalog._core is not built")
    return both["python"], both["cython"]


def _sorted_index_buffer(rng: np.random.Generator, kind: IndexKind, n: int,
                         base: int) -> tuple[bytes, list[int]]:
    """A valid index of n entries for ``kind`` and the keys that kind compares."""
    rel = random_increasing(rng, n, -1, 9)
    second = random_increasing(rng, n, -1, 9)
    if kind in (IndexKind.OFFSET_KEY, IndexKind.OFFSET_VALUE):
        arr = np.empty(n, dtype=[("a", ">i4"), ("b", ">i4")])
        arr["a"], arr["b"] = rel, second
        keys = (rel + base) if kind is IndexKind.OFFSET_KEY else second
    else:
        ts = random_increasing(rng, n, 1_700_000_000_000, 1000)
        arr = np.empty(n, dtype=[("a", ">i8"), ("b", ">i4")])
        arr["a"], arr["b"] = ts, rel
        keys = ts if kind is IndexKind.TIME_KEY else rel + base
    return arr.tobytes(), keys.tolist()


def test_index_kernels_agree(twins: tuple[ModuleType, ModuleType]) -> None:
    py, cy = twins
    rng = np.random.default_rng(31337)
    for kind in IndexKind:
        size = 8 if kind < 2 else 12
        warm = 8192 // size
        for n in (1, 2, 5, warm, warm + 1, warm + 2, 4000):
            base = int(rng.integers(0, 2**40))
            buf, keys = _sorted_index_buffer(rng, kind, n, base)
            padded = bytearray(buf + bytes(size * 3))  # a preallocated tail the kernels must not read
            for target in [*targets_for(keys, rng, warm, 12), -(2**63), 2**63 - 1]:
                for sub in (False, True):
                    a = py.index_search(buf, n, kind, target, base, sub)
                    assert a == cy.index_search(padded, n, int(kind), target, base, sub), (kind, n, target)
                    assert a == (sub_model(keys, target) if sub else llb_model(keys, target))
                found = py.index_lookup(buf, n, kind, target, base)
                assert found == cy.index_lookup(padded, n, kind, target, base)
                slot = llb_model(keys, target)
                assert (found is None) == (slot < 0)
                if found is not None:
                    assert found[0 if kind in (IndexKind.OFFSET_KEY, IndexKind.TIME_KEY) else 1] == keys[slot]
        # random bytes: no order at all, the searches still take the same path in both
        for _ in range(6):
            n = int(rng.integers(1, 3000))
            garbage = rng.integers(0, 256, n * size + int(rng.integers(0, size)), dtype=np.uint8).tobytes()
            base = int(rng.integers(-(2**31), 2**40))
            for target in [*rng.integers(-(2**62), 2**62, 30).tolist(), 0, base]:
                for sub in (False, True):
                    assert py.index_search(garbage, n, kind, target, base, sub) == \
                        cy.index_search(garbage, n, kind, target, base, sub)
                assert py.index_lookup(garbage, n, kind, target, base) == \
                    cy.index_lookup(garbage, n, kind, target, base)
            assert py.index_search(garbage, 0, kind, 5, base) == -1
            assert cy.index_search(garbage, 0, kind, 5, base) == -1
            assert py.index_lookup(garbage, 0, kind, 5, base) is None
            assert cy.index_lookup(garbage, 0, kind, 5, base) is None


def test_index_kernels_refuse_bad_arguments(twins: tuple[ModuleType, ModuleType]) -> None:
    buf = bytes(8 * 3)
    for core in twins:
        for kind, fits in ((IndexKind.OFFSET_KEY, 3), (IndexKind.OFFSET_VALUE, 3), (IndexKind.TIME_KEY, 2),
                           (IndexKind.TIME_VALUE, 2)):
            assert core.index_search(buf, fits, kind, 0, 0) == 0
            for entries in (fits + 1, -1):
                with pytest.raises(ValueError):
                    core.index_search(buf, entries, kind, 0, 0)
                with pytest.raises(ValueError):
                    core.index_search(buf, entries, kind, 0, 0, True)
                with pytest.raises(ValueError):
                    core.index_lookup(buf, entries, kind, 0, 0)
        for kind in (4, -1, 99):
            with pytest.raises(ValueError):
                core.index_search(buf, 1, kind, 0, 0)
            with pytest.raises(ValueError):
                core.index_lookup(buf, 1, kind, 0, 0)


def _log_buffer() -> tuple[bytes, list[tuple[int, int, int]]]:
    """A log of mixed magics; (position, size, last offset) per entry."""
    parts = []
    offset = 0
    rng = np.random.default_rng(5)
    for i in range(30):
        count = int(rng.integers(1, 6))
        records = [(b"k%d" % j, b"v" * int(rng.integers(0, 50)), 1000 + j) for j in range(count)]
        magic = (2, 2, 1, 0, 2)[i % 5]
        compression = "gzip" if i % 7 == 3 else "none"
        mr = kafkalog.MemoryRecords.with_records(records, magic=magic, base_offset=offset,
                                                 compression=compression)
        parts.append(mr.buffer)
        offset += count + int(rng.integers(0, 3))  # gaps, as compaction leaves them
    data = b"".join(parts)
    rows = kafkalog.MemoryRecords(data).scan().batches
    entries = [(int(r["position"]), int(r["size"]), int(r["last_offset"])) for r in rows]
    assert sum(size for _, size, _ in entries) == len(data)
    return data, entries


def test_search_for_offset_kernels_agree(twins: tuple[ModuleType, ModuleType]) -> None:
    py, cy = twins
    data, entries = _log_buffer()
    last = entries[-1][2]
    rng = np.random.default_rng(17)
    # the whole log: the first entry whose last offset reaches the target
    for target in range(-2, last + 3):
        expected = next(((p, s, lo) for p, s, lo in entries if lo >= target), None)
        result = py.search_for_offset(data, 0, len(data), target)
        assert result == cy.search_for_offset(data, 0, len(data), target)
        if expected is None:
            assert result == (-1, 0, -1, len(data), 0)
        else:
            assert result == (*expected, expected[0], 0)
    # the same log cut short, broken and bounded in every way
    broken = bytearray(data)
    broken[entries[10][0] + 8:entries[10][0] + 12] = struct.pack(">i", 3)  # a size below the minimum
    variants = [data, data[:-7], data[: entries[5][0] + 20], bytes(broken), data + bytes(40),
                data + rng.integers(0, 256, 300, dtype=np.uint8).tobytes(), b"", data[:11]]
    positions = [p for p, _, _ in entries]
    for buf in variants:
        for _ in range(120):
            target = int(rng.integers(-5, last + 10))
            start = int(rng.choice(positions))
            if rng.random() < 0.3:
                start = int(rng.integers(-10, len(buf) + 10))
            end = int(rng.integers(-1, len(buf) + 20))
            limit = int(rng.choice([0x7FFFFFFF, 200, 60]))
            assert py.search_for_offset(buf, start, end, target, limit) == \
                cy.search_for_offset(buf, start, end, target, limit), (len(buf), start, end, target, limit)


# =================================================================================================
# Bulk appends against one-at-a-time appends
# =================================================================================================


Outcome = tuple[type[BaseException] | None, str, bytes, int]


def _outcome(make: Callable[[], AbstractIndex], prefill: Callable[[Any], None],
             action: Callable[[Any], None]) -> Outcome:
    """Run ``action`` on a fresh index and report the error it raised, the file after close and the
    entries; the file is then removed so the next run uses the same path (errors name the path)."""
    idx = make()
    error: BaseException | None = None
    try:
        prefill(idx)
        try:
            action(idx)
        except Exception as e:  # compared below
            error = e
        entries = idx.entries
    finally:
        idx.close()
    data = idx.file.read_bytes()
    idx.file.unlink()
    return (type(error) if error else None, str(error) if error else "", data, entries)


def _offset_loop(offsets: Sequence[int], positions: Sequence[int]) -> Callable[[OffsetIndex], None]:
    def run(idx: OffsetIndex) -> None:
        for o, p in zip(offsets, positions, strict=True):
            idx.append(o, p)
    return run


def _time_loop(timestamps: Sequence[int], offsets: Sequence[int]) -> Callable[[TimeIndex], None]:
    def run(idx: TimeIndex) -> None:
        for t, o in zip(timestamps, offsets, strict=True):
            idx.maybe_append(t, o)
    return run


def _bulk(single: str, vectorized: bool, first: Sequence[int],
          second: Sequence[int]) -> Callable[[Any], None]:
    """``append_entries`` of the two columns; when the input is one the bulk path takes whole, the
    one-entry method is made to fail, so the comparison is of the bulk write and not of its replay."""
    def run(idx: Any) -> None:
        if vectorized:
            def replayed(*args: object, **kwargs: object) -> None:
                raise AssertionError(f"append_entries replayed {single}{args}")
            setattr(idx, single, replayed)
        idx.append_entries(np.array(first, dtype=np.int64), np.array(second, dtype=np.int64))
    return run


def test_offset_append_entries_equals_append_loop(impl: ModuleType, tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    path = tmp_path / "bulk.index"
    base = 1000
    good_o = random_increasing(rng, 500, base + 100, 7).tolist()
    good_p = random_increasing(rng, 500, 50, 300).tolist()

    def prefill(idx: OffsetIndex) -> None:
        for o, p in ((base, 0), (base + 50, 10), (base + 100, 50)):
            idx.append(o, p)

    def none(idx: OffsetIndex) -> None:
        return None

    overflow_o = [*good_o[:10], base + 2**31, *good_o[10:]]
    cases: list[tuple[str, int, Callable[[Any], None], list[int], list[int], type[BaseException] | None]] = [
        ("fits", 600, prefill, good_o, good_p, None),
        ("empty start", 600, none, good_o, good_p, None),
        ("full", 200, prefill, good_o, good_p, IllegalArgumentError),
        ("exactly full", 503, prefill, good_o, good_p, None),
        ("out of order inside", 600, prefill, [*good_o[:40], good_o[38], *good_o[41:]], good_p,
         InvalidOffsetError),
        ("duplicate inside", 600, prefill, [*good_o[:40], good_o[39], *good_o[41:]], good_p,
         InvalidOffsetError),
        ("not past the last entry", 600, prefill, [base + 100, *good_o[1:]], good_p, InvalidOffsetError),
        ("relative overflow", 600, prefill, overflow_o[:500], good_p, IndexOffsetOverflowError),
        ("below the base on an empty index", 600, none, [base - 1, *good_o[1:]], good_p,
         IndexOffsetOverflowError),
        ("largest relative offset", 600, prefill, [*good_o[:-1], base + INT32_MAX], good_p, None),
        ("negative position", 600, prefill, good_o, [*good_p[:70], -5, *good_p[71:]], IllegalArgumentError),
    ]
    for name, max_entries, pre, offsets, positions, error in cases:
        def make(max_entries: int = max_entries) -> OffsetIndex:
            return OffsetIndex(path, base, max_entries * 8)

        loop = _outcome(make, pre, _offset_loop(offsets, positions))
        bulk = _outcome(make, pre, _bulk("append", error is None, offsets, positions))
        assert loop[0] is error, (name, loop[1])
        assert bulk == loop, name
        if error is None:
            assert loop[3] == len(offsets) + (3 if pre is prefill else 0)
            stored = np.frombuffer(loop[2], dtype=[("r", ">i4"), ("p", ">i4")])[-len(offsets):]
            assert stored["r"].tolist() == [o - base for o in offsets]
            assert stored["p"].tolist() == list(positions)
    # an empty batch changes nothing
    empty = np.array([], dtype=np.int64)
    nothing = _outcome(lambda: OffsetIndex(path, base, 80), prefill, lambda idx: None)
    assert _outcome(lambda: OffsetIndex(path, base, 80), prefill,
                    lambda idx: idx.append_entries(empty, empty)) == nothing
    assert nothing[0] is None and nothing[3] == 3


def test_time_append_entries_equals_maybe_append_loop(impl: ModuleType, tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    path = tmp_path / "bulk.timeindex"
    base = 500
    n = 400
    ts = (10_000 + np.cumsum(rng.choice([0, 0, 3, 7, 20], n))).tolist()  # repeats: skipped candidates
    ts[-1] = ts[-2] + 1  # the last candidate is kept
    offs = random_increasing(rng, n, base + 20, 4).tolist()
    distinct = len(set(ts))
    assert distinct < n

    def prefill(idx: TimeIndex) -> None:
        idx.maybe_append(5_000, base + 3)
        idx.maybe_append(9_000, base + 20)

    def none(idx: TimeIndex) -> None:
        return None

    # a kept candidate right after a kept one, and a skipped candidate right after a kept one
    later = next(i for i in range(50, n) if ts[i] > ts[i - 1] > ts[i - 2])
    skipped = next(i for i in range(60, n) if ts[i] == ts[i - 1] > ts[i - 2])
    cases: list[tuple[str, int, Callable[[Any], None], list[int], list[int], type[BaseException] | None]] = [
        ("fits", 500, prefill, ts, offs, None),
        ("empty start", 500, none, ts, offs, None),
        ("v0 data: no timestamps", 500, none, [-1] * 20, offs[:20], None),
        ("a timestamp equal to the last entry is skipped", 500, prefill, [9_000, 9_000, *ts[2:]], offs, None),
        ("a timestamp below the last entry", 500, prefill, [9_000, 8_000, *ts[2:]], offs, IllegalStateError),
        ("full", distinct // 2, prefill, ts, offs, IllegalArgumentError),
        ("full mark reached by the last candidate", distinct + 3, prefill, ts, offs, None),
        ("offset going back on a kept candidate", 500, prefill, ts,
         [*offs[:later], offs[later - 1] - 1, *offs[later + 1:]], InvalidOffsetError),
        ("offset going back on a skipped candidate", 500, prefill, ts,
         [*offs[:skipped], offs[skipped - 1] - 1, *offs[skipped + 1:]], InvalidOffsetError),
        ("offset below the prefilled entry", 500, prefill, ts, [base + 5, *offs[1:]], InvalidOffsetError),
        ("timestamp going back", 500, prefill, [*ts[:later], ts[later - 1] - 1, *ts[later + 1:]], offs,
         IllegalStateError),
        ("relative overflow", 500, prefill, ts,
         [*offs[:later], base + 2**31, *(o + 2**31 for o in offs[later + 1:])], IndexOffsetOverflowError),
        ("below the base on an empty index", 500, none, ts, [base - 2, *offs[1:]], IndexOffsetOverflowError),
    ]
    for name, max_entries, pre, timestamps, offsets, error in cases:
        def make(max_entries: int = max_entries) -> TimeIndex:
            return TimeIndex(path, base, max_entries * 12)

        loop = _outcome(make, pre, _time_loop(timestamps, offsets))
        vectorized = error is None and not name.startswith("full mark")
        bulk = _outcome(make, pre, _bulk("maybe_append", vectorized, timestamps, offsets))
        assert loop[0] is error, (name, loop[1])
        assert bulk == loop, name
        if name == "fits":
            assert loop[3] == distinct + 2
            stored = np.frombuffer(loop[2], dtype=[("t", ">i8"), ("r", ">i4")])
            assert stored["t"].tolist() == [5_000, 9_000, *sorted(set(ts))]
        if name == "v0 data: no timestamps":
            assert loop[3] == 0 and loop[2] == b""


# =================================================================================================
# Read-only indexes
# =================================================================================================


OLD_MTIME_NS = 1_000_000_000 * 10**9


@pytest.mark.parametrize("cls", [OffsetIndex, TimeIndex])
def test_read_only_never_writes(impl: ModuleType, tmp_path: Path, cls: type[AbstractIndex]) -> None:
    path = tmp_path / ("ro.index" if cls is OffsetIndex else "ro.timeindex")
    with cls(path, 100, 20 * cls.ENTRY_SIZE) as idx:
        for i in range(1, 6):
            if isinstance(idx, OffsetIndex):
                idx.append(100 + i * 10, i * 1000)
            else:
                assert isinstance(idx, TimeIndex)
                idx.maybe_append(i * 7, 100 + i * 10)
    before = path.read_bytes()
    os.utime(path, ns=(OLD_MTIME_NS, OLD_MTIME_NS))
    ro = cls(path, 100, 20 * cls.ENTRY_SIZE, writable=False)
    try:
        assert ro.entries == 5
        assert ro.length() == len(before) == 5 * cls.ENTRY_SIZE
        if isinstance(ro, OffsetIndex):
            assert ro.lookup(125) == OffsetPosition(120, 2000)
            assert ro.lookup(99) == OffsetPosition(100, 0)
            assert ro.entry(4) == OffsetPosition(150, 5000)
            assert ro.fetch_upper_bound_offset(OffsetPosition(110, 1000), 1500) == OffsetPosition(130, 3000)
            with pytest.raises(ReadOnlyError):
                ro.append(160, 6000)
            with pytest.raises(ReadOnlyError):
                ro.append_entries(np.array([160]), np.array([6000]))
        else:
            assert isinstance(ro, TimeIndex)
            assert ro.lookup(15) == TimestampOffset(14, 120)
            assert ro.lookup(1) == TimestampOffset(-1, 100)
            assert ro.last_entry == TimestampOffset(35, 150)
            with pytest.raises(ReadOnlyError):
                ro.maybe_append(40, 160)
            with pytest.raises(ReadOnlyError):
                ro.append_entries(np.array([40]), np.array([160]))
        ro.sanity_check()
        ro.flush()
        for write in (lambda: ro.truncate_to(120), ro.truncate, lambda: ro.truncate_to_entries(1),
                      lambda: ro.resize(1000), lambda: ro.resize(ro.length()), ro.trim_to_valid_size,
                      ro.reset, lambda: ro.rename_to(tmp_path / "elsewhere"), ro.delete):
            with pytest.raises(ReadOnlyError):
                write()
        assert ro.entries == 5
    finally:
        ro.close()
    ro.close()
    assert path.read_bytes() == before
    assert path.stat().st_mtime_ns == OLD_MTIME_NS
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]


def test_read_only_untrimmed_file_is_left_as_is(impl: ModuleType, tmp_path: Path) -> None:
    """A file a crash left untrimmed: read-only, every whole entry counts (the zero tail too), and
    closing does not trim it."""
    path = tmp_path / "crash.index"
    idx = OffsetIndex(path, 0, 30 * 8)
    for i in range(1, 4):
        idx.append(i, i * 100)
    idx.flush()
    idx.close_handler()
    assert path.stat().st_size == 240
    before = path.read_bytes()
    os.utime(path, ns=(OLD_MTIME_NS, OLD_MTIME_NS))
    with OffsetIndex(path, 0, writable=False) as ro:
        assert ro.entries == 30
        assert ro.entry(2) == OffsetPosition(3, 300)
        assert ro.entry(3) == OffsetPosition(0, 0)
        assert ro.max_entries == 30
    assert path.read_bytes() == before
    assert path.stat().st_mtime_ns == OLD_MTIME_NS


@pytest.mark.parametrize("cls", [OffsetIndex, TimeIndex])
def test_read_only_missing_file_reads_empty(impl: ModuleType, tmp_path: Path,
                                            cls: type[AbstractIndex]) -> None:
    path = tmp_path / "absent"
    with cls(path, 77, writable=False) as ro:
        assert ro.entries == 0
        assert ro.length() == 0
        assert ro.size_in_bytes() == 0
        if isinstance(ro, OffsetIndex):
            assert ro.lookup(100) == OffsetPosition(77, 0)
            assert ro.last_offset == 77
            assert ro.fetch_upper_bound_offset(OffsetPosition(77, 0), 10) is None
        else:
            assert isinstance(ro, TimeIndex)
            assert ro.lookup(100) == TimestampOffset(-1, 77)
            assert ro.last_entry == TimestampOffset(-1, 77)
        assert ro.largest_lower_bound_slot_for(100) == -1
        assert ro.smallest_upper_bound_slot_for(100) == -1
        ro.sanity_check()
        with pytest.raises(IllegalArgumentError):
            ro.entry(0)
        with pytest.raises(ReadOnlyError):
            ro.truncate()
        ro.flush()
    assert not path.exists()
    assert list(tmp_path.iterdir()) == []


# =================================================================================================
# Lifecycle
# =================================================================================================


@pytest.mark.parametrize(("cls", "max_size", "length"), [
    (OffsetIndex, 1001, 1000), (OffsetIndex, 8, 8), (OffsetIndex, None, 10 * 1024 * 1024),
    (TimeIndex, 1001, 996), (TimeIndex, 12, 12), (TimeIndex, None, 10_485_756),
])
def test_new_file_is_preallocated(impl: ModuleType, tmp_path: Path, cls: type[AbstractIndex],
                                  max_size: int | None, length: int) -> None:
    path = tmp_path / "new"
    idx = cls(path, 0, max_size)
    try:
        assert path.stat().st_size == length
        assert idx.length() == length
        assert idx.max_entries == length // cls.ENTRY_SIZE
        assert idx.entries == 0
        assert idx.size_in_bytes() == 0
    finally:
        idx.close()
    assert path.stat().st_size == 0


@pytest.mark.parametrize("cls", [OffsetIndex, TimeIndex])
def test_new_file_smaller_than_one_entry_is_refused(impl: ModuleType, tmp_path: Path,
                                                    cls: type[AbstractIndex]) -> None:
    """Kafka's constructor: a new index must have room for one entry (Invalid max index size)."""
    with pytest.raises(IllegalArgumentError, match=str(cls.ENTRY_SIZE - 1)):
        cls(tmp_path / "tiny", 0, cls.ENTRY_SIZE - 1)
    with cls(tmp_path / "one", 0, cls.ENTRY_SIZE) as idx:
        assert idx.max_entries == 1


@pytest.mark.parametrize("cls", [OffsetIndex, TimeIndex])
def test_close_trims_reset_and_resize(impl: ModuleType, tmp_path: Path, cls: type[AbstractIndex]) -> None:
    path = tmp_path / "life"

    def add(idx: Any, i: int) -> None:
        if isinstance(idx, OffsetIndex):
            idx.append(10 + i, i * 64)
        else:
            idx.maybe_append(1000 + i, 10 + i)

    idx = cls(path, 10, 100 * cls.ENTRY_SIZE + 5)
    for i in range(7):
        add(idx, i)
    assert idx.size_in_bytes() == 7 * cls.ENTRY_SIZE
    assert idx.resize(100 * cls.ENTRY_SIZE + 3) is False  # rounds down to the same length
    assert idx.resize(50 * cls.ENTRY_SIZE) is True
    assert idx.max_entries == 50 and idx.entries == 7
    idx.reset()
    assert idx.entries == 0
    assert idx.length() == path.stat().st_size == 100 * cls.ENTRY_SIZE
    assert idx.resize(100 * cls.ENTRY_SIZE) is False
    for i in range(3):
        add(idx, i)
    idx.trim_to_valid_size()
    assert path.stat().st_size == 3 * cls.ENTRY_SIZE
    assert idx.is_full()
    assert idx.resize(100 * cls.ENTRY_SIZE) is True
    add(idx, 3)
    # Below the live entries (AbstractIndex.resize: the new map refuses the write position) nothing changes.
    with pytest.raises(IllegalArgumentError, match=r"newPosition > limit: \(32 > 24\)" if cls is OffsetIndex
                       else r"newPosition > limit: \(48 > 36\)"):
        idx.resize(3 * cls.ENTRY_SIZE + 1)
    assert (idx.entries, idx.length(), path.stat().st_size) == (4, 100 * cls.ENTRY_SIZE, 100 * cls.ENTRY_SIZE)
    idx.close()
    assert path.stat().st_size == 4 * cls.ENTRY_SIZE
    with cls(path, 10) as reopened:
        assert reopened.entries == 4
        if isinstance(reopened, OffsetIndex):
            assert reopened.entry(3) == OffsetPosition(13, 192)
        else:
            assert isinstance(reopened, TimeIndex)
            assert reopened.last_entry == TimestampOffset(1003, 13)


@pytest.mark.parametrize("cls", [OffsetIndex, TimeIndex])
def test_rename_to(impl: ModuleType, tmp_path: Path, cls: type[AbstractIndex]) -> None:
    old, new = tmp_path / "a.index", tmp_path / "a.index.swap"
    idx = cls(old, 0, 10 * cls.ENTRY_SIZE)
    try:
        if isinstance(idx, OffsetIndex):
            idx.append(5, 50)
        else:
            assert isinstance(idx, TimeIndex)
            idx.maybe_append(5, 50)
        idx.rename_to(new)
        assert not old.exists() and new.exists()
        assert idx.path == new and idx.file == new
        if isinstance(idx, OffsetIndex):
            assert idx.lookup(6) == OffsetPosition(5, 50)
            idx.append(6, 60)
        else:
            assert isinstance(idx, TimeIndex)
            assert idx.lookup(6) == TimestampOffset(5, 50)
            idx.maybe_append(6, 60)
    finally:
        idx.close()
    assert new.stat().st_size == 2 * cls.ENTRY_SIZE
    assert not old.exists()


@pytest.mark.parametrize("cls", [OffsetIndex, TimeIndex])
def test_delete(impl: ModuleType, tmp_path: Path, cls: type[AbstractIndex]) -> None:
    """Kafka's deleteIfExists: true when the file was there, false after (closing twice is harmless)."""
    path = tmp_path / "d"
    idx = cls(path, 0, 10 * cls.ENTRY_SIZE)
    assert idx.delete() is True
    assert not path.exists()
    assert idx.delete() is False
    assert not path.exists()


@pytest.mark.parametrize("cls", [OffsetIndex, TimeIndex])
def test_delete_of_a_file_already_gone(impl: ModuleType, tmp_path: Path, cls: type[AbstractIndex]) -> None:
    path = tmp_path / "gone"
    idx = cls(path, 0, 10 * cls.ENTRY_SIZE)
    path.unlink()
    assert idx.delete() is False
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("cls", "extra"),
                         [(OffsetIndex, 3), (OffsetIndex, 7), (TimeIndex, 5), (TimeIndex, 11)])
def test_length_not_a_multiple_of_the_entry_size(impl: ModuleType, tmp_path: Path, cls: type[AbstractIndex],
                                                 extra: int) -> None:
    path = tmp_path / "odd"
    if cls is OffsetIndex:
        write_offset_entries(path, [(1, 0), (2, 10), (3, 20)], b"\x01" * extra)
    else:
        write_time_entries(path, [(10, 1), (20, 2), (30, 3)], b"\x01" * extra)
    idx = cls(path, 40, writable=True)
    try:
        assert idx.entries == 3
        assert idx.length() == 3 * cls.ENTRY_SIZE + extra
        name = "Index" if cls is OffsetIndex else "Time index"
        with pytest.raises(CorruptIndexError, match=rf"^{name} file .* is corrupt, found {3 * cls.ENTRY_SIZE + extra} "
                           rf"bytes which is neither positive nor a multiple of {cls.ENTRY_SIZE}\.$"):
            idx.sanity_check()
    finally:
        idx.close()
    assert path.stat().st_size == 3 * cls.ENTRY_SIZE  # close trims the stray bytes


def test_offset_overflow(impl: ModuleType, tmp_path: Path) -> None:
    base = 100
    with OffsetIndex(tmp_path / "o.index", base, 10 * 8) as idx:
        with pytest.raises(IndexOffsetOverflowError):
            idx.append(base - 1, 0)
        assert idx.entries == 0
        idx.append(base + 5, 0)
        with pytest.raises(IndexOffsetOverflowError):
            idx.append(base + 2**31, 10)
        assert idx.entries == 1
        idx.append(base + INT32_MAX, 10)
        assert idx.entry(1) == OffsetPosition(base + INT32_MAX, 10)
        assert idx.lookup(base + INT32_MAX + 1000) == OffsetPosition(base + INT32_MAX, 10)
        assert idx.can_append_offset(base + INT32_MAX)
        assert not idx.can_append_offset(base + 2**31)
        assert not idx.can_append_offset(base - 1)
        assert idx.relative_offset(base + 7) == 7
        with pytest.raises(IndexOffsetOverflowError):
            idx.relative_offset(base + 2**31)
    with TimeIndex(tmp_path / "o.timeindex", base, 10 * 12) as t_idx:
        with pytest.raises(IndexOffsetOverflowError):
            t_idx.maybe_append(5, base + 2**31)
        with pytest.raises(IndexOffsetOverflowError):
            t_idx.maybe_append(5, base - 1)
        assert t_idx.entries == 0
        t_idx.maybe_append(5, base + INT32_MAX)
        assert t_idx.lookup(6) == TimestampOffset(5, base + INT32_MAX)

"""The index lookups and appends checked wholesale: random offset and time indexes (up to a full 10 MiB file)
against ``bisect`` on a Python list, the two kernel twins against each other, and the bulk appends
(``append_entries``) against the one-at-a-time appends they replace, outcome for outcome.
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
    IllegalArgumentError,
    IllegalStateError,
    IndexOffsetOverflowError,
    InvalidOffsetError,
)
from kafkalog.index import (
    DEFAULT_MAX_INDEX_SIZE,
    AbstractIndex,
    OffsetIndex,
    OffsetPosition,
    TimeIndex,
    TimestampOffset,
)
from tests.support.index_utils import (
    INT32_MAX,
    OFFSET_WARM_ENTRIES,
    TIME_WARM_ENTRIES,
    llb_model,
    offset_lookup_model,
    random_increasing,
    sub_model,
    targets_for,
    time_lookup_model,
)

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


def test_index_lookup_makes_the_entry_type_or_gives_missing(twins: tuple[ModuleType, ModuleType]) -> None:
    """``index_lookup``'s result as an index's ``lookup`` hands it out: the pair made an ``entry_type`` (a
    NamedTuple, without its ``__new__``), or ``missing`` itself when no entry is at or below the target (an empty
    index, whose buffer is not read and may be ``None``; a target below the first entry); past the last entry,
    the last.  Both twins, the same answers."""
    base = 1_000
    offsets = np.zeros(3, dtype=[("a", ">i4"), ("b", ">i4")])
    offsets["a"], offsets["b"] = [5, 9, 20], [0, 100, 250]
    times = np.zeros(3, dtype=[("a", ">i8"), ("b", ">i4")])
    times["a"], times["b"] = [1_700_000_000_000, 1_700_000_000_500, 1_700_000_001_000], [5, 9, 20]
    cases = [
        (IndexKind.OFFSET_KEY, offsets.tobytes(), OffsetPosition, OffsetPosition(base, 0),
         [(base - 1, None), (base + 4, None), (base + 5, (base + 5, 0)), (base + 19, (base + 9, 100)),
          (base + 20, (base + 20, 250)), (2**63 - 1, (base + 20, 250))]),
        (IndexKind.TIME_KEY, times.tobytes(), TimestampOffset, TimestampOffset(-1, base),
         [(-1, None), (1_699_999_999_999, None), (1_700_000_000_000, (1_700_000_000_000, base + 5)),
          (1_700_000_000_999, (1_700_000_000_500, base + 9)), (2**63 - 1, (1_700_000_001_000, base + 20))]),
    ]
    for core in twins:
        for kind, buf, entry_type, missing, expected in cases:
            assert core.index_lookup(None, 0, kind, 7, base, entry_type, missing) is missing
            assert core.index_lookup(buf, 0, kind, 7, base, entry_type, missing) is missing
            for target, pair in expected:
                found = core.index_lookup(buf, 3, kind, target, base, entry_type, missing)
                if pair is None:
                    assert found is missing, (core.IMPLEMENTATION, kind, target)
                else:
                    assert type(found) is entry_type and found == pair, (core.IMPLEMENTATION, kind, target)
                plain = core.index_lookup(buf, 3, kind, target, base)
                assert plain == pair and (plain is None or type(plain) is tuple)
            for wrong in (int, list, "tuple"):
                with pytest.raises(TypeError):
                    core.index_lookup(buf, 3, kind, base, base, wrong, missing)
            with pytest.raises(ValueError):
                core.index_lookup(buf, 4, kind, base, base, entry_type, missing)
            with pytest.raises(ValueError):
                core.index_lookup(buf, -1, kind, base, base, entry_type, missing)


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

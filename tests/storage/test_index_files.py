"""An index's file: read-only opening (never writes, an untrimmed or missing file), and the lifecycle every
index shares through :class:`kafkalog.index.AbstractIndex` (preallocation, trimming on close, reset and
resize, rename, delete, a length that is not a whole number of entries, relative-offset overflow).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from kafkalog.errors import (
    CorruptIndexError,
    IllegalArgumentError,
    IllegalStateError,
    IndexOffsetOverflowError,
    ReadOnlyError,
)
from kafkalog.index import (
    AbstractIndex,
    OffsetIndex,
    OffsetPosition,
    TimeIndex,
    TimestampOffset,
)
from tests.support.index_utils import INT32_MAX, write_offset_entries, write_time_entries

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


def _index_of_three(tmp_path: Path, cls: type[AbstractIndex], writable: bool) -> AbstractIndex:
    """An index at base 100 holding three entries (offsets 105, 110, 120; timestamps 1,000, 2,000, 3,000), opened
    ``writable`` or read-only over the file a writer left."""
    path = tmp_path / ("00000000000000000100.index" if cls is OffsetIndex else "00000000000000000100.timeindex")
    with cls(path, 100, 10 * cls.ENTRY_SIZE) as writer:
        for i, (offset, timestamp) in enumerate(((105, 1_000), (110, 2_000), (120, 3_000))):
            if isinstance(writer, OffsetIndex):
                writer.append(offset, i * 100)
            else:
                assert isinstance(writer, TimeIndex)
                writer.maybe_append(timestamp, offset)
    return cls(path, 100, 10 * cls.ENTRY_SIZE, writable=writable)


@pytest.mark.parametrize("writable", [True, False], ids=["writable", "read-only"])
@pytest.mark.parametrize("cls", [OffsetIndex, TimeIndex])
def test_lookup_at_the_ends_empty_and_closed(impl: ModuleType, tmp_path: Path, cls: type[AbstractIndex],
                                             writable: bool) -> None:
    """``lookup`` through its one kernel call, on each twin, writable and read-only: below the first entry (and
    below the base) Kafka's fallback, past the last entry the last, an exact key its entry, always the index's
    own NamedTuple; an empty index the fallback; a closed one an IllegalStateError."""
    idx = _index_of_three(tmp_path, cls, writable)
    if isinstance(idx, OffsetIndex):
        cases = [(99, (100, 0)), (100, (100, 0)), (104, (100, 0)), (105, (105, 0)), (119, (110, 100)),
                 (120, (120, 200)), (2**63 - 1, (120, 200))]
        entry_type: type = OffsetPosition
    else:
        cases = [(-1, (-1, 100)), (999, (-1, 100)), (1_000, (1_000, 105)), (2_999, (2_000, 110)),
                 (3_000, (3_000, 120)), (2**63 - 1, (3_000, 120))]
        entry_type = TimestampOffset
    for target, expected in cases:
        found = idx.lookup(target)
        assert type(found) is entry_type and found == expected, target
    idx.close()
    with pytest.raises(IllegalStateError, match="closed"):
        idx.lookup(cases[0][0])
    empty_path = tmp_path / ("empty.index" if cls is OffsetIndex else "empty.timeindex")
    with cls(empty_path, 100, 10 * cls.ENTRY_SIZE, writable=writable) as empty:
        assert empty.entries == 0
        for target, _ in cases:
            found = empty.lookup(target)
            assert type(found) is entry_type and found == cases[0][1]


@pytest.mark.parametrize("cls", [OffsetIndex, TimeIndex])
def test_read_only_lookup_in_flight_while_the_index_closes(impl: ModuleType, tmp_path: Path,
                                                           cls: type[AbstractIndex],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A read-only index's lookup takes no lock (its copy of the file never changes): ``close`` does not wait
    for a lookup in flight, and does not close the copy under it (a view of it is alive, as a kernel's is while
    it searches: closing would be a BufferError), only drops it; the lookup answers from the copy it holds, and
    the next one finds the index closed.  The lookup is paused inside its kernel call, holding a view."""
    idx = _index_of_three(tmp_path, cls, writable=False)
    target, expected = (119, (110, 100)) if cls is OffsetIndex else (2_999, (2_000, 110))
    kernel = impl.index_lookup
    inside, resume = threading.Event(), threading.Event()

    def paused(buf: Any, *args: Any) -> Any:
        with memoryview(buf):
            inside.set()
            assert resume.wait(10)
        return kernel(buf, *args)

    monkeypatch.setattr(impl, "index_lookup", paused)
    found: list[Any] = []
    reader = threading.Thread(target=lambda: found.append(idx.lookup(target)))
    reader.start()
    try:
        assert inside.wait(10)
        closer = threading.Thread(target=idx.close)
        closer.start()
        closer.join(2)
        closed_meanwhile = not closer.is_alive()
    finally:
        resume.set()
        reader.join(10)
    closer.join(10)
    assert closed_meanwhile, "close() waited for a read-only lookup"
    assert found == [expected]
    monkeypatch.undo()
    with pytest.raises(IllegalStateError, match="closed"):
        idx.lookup(target)


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

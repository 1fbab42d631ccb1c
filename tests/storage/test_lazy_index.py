""":class:`kafkalog.index.LazyIndex`: an index opened at its first use (Kafka: ``LazyIndex``, storage, 3.8.0:
``storage/src/main/java/org/apache/kafka/storage/internals/log/LazyIndex.java``; Kafka has no test class of
its own for it, its behaviour is exercised through LogSegmentTest).

What a lazy index must do before it is opened: nothing on disk (no file made, none mapped), while rename,
parent-dir moves, deletion and the sanity check work on the file alone; once opened, it hands out the one
index and forwards those operations to it.  Every test takes ``impl``.
"""

from __future__ import annotations

import struct
from pathlib import Path
from types import ModuleType

import pytest

from kafkalog.errors import CorruptIndexError, IllegalStateError, ReadOnlyError
from kafkalog.index import LazyIndex, OffsetIndex, OffsetPosition, TimeIndex
from tests.support.index_utils import BASE_OFFSET, write_offset_entries, write_time_entries


def test_not_opened_until_get(impl: ModuleType, tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000045.index"
    lazy = LazyIndex(OffsetIndex, path, BASE_OFFSET, 1024)
    assert not lazy.is_loaded
    assert lazy.file == path
    assert not path.exists()  # nothing was created
    assert "loaded=False" in repr(lazy)
    index = lazy.get()
    try:
        assert lazy.is_loaded
        assert lazy.get() is index  # one index, however often it is asked for
        assert isinstance(index, OffsetIndex)
        assert path.exists()
        index.append(50, 100)
        assert index.lookup(52) == OffsetPosition(50, 100)
    finally:
        lazy.close()


def test_opens_the_existing_file(impl: ModuleType, tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000045.timeindex"
    write_time_entries(path, [(1000, 1), (2000, 5)])
    lazy = LazyIndex(TimeIndex, path, BASE_OFFSET, 1200)
    try:
        index = lazy.get()
        assert index.entries == 2
        assert index.lookup(1500).offset == BASE_OFFSET + 1
    finally:
        lazy.close()


def test_rename_before_opening_moves_the_file(impl: ModuleType, tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000045.index"
    write_offset_entries(path, [(1, 10)])
    lazy = LazyIndex(OffsetIndex, path, BASE_OFFSET, 1024)
    target = tmp_path / "00000000000000000045.index.deleted"
    lazy.rename_to(target)
    assert not lazy.is_loaded
    assert lazy.file == target
    assert target.read_bytes() == struct.pack(">ii", 1, 10)
    assert not path.exists()


def test_rename_of_a_missing_file_only_changes_the_name(impl: ModuleType, tmp_path: Path) -> None:
    lazy = LazyIndex(OffsetIndex, tmp_path / "a.index", BASE_OFFSET, 1024)
    lazy.rename_to(tmp_path / "b.index")
    assert lazy.file == tmp_path / "b.index"
    assert not (tmp_path / "b.index").exists()


def test_rename_after_opening_goes_through_the_index(impl: ModuleType, tmp_path: Path) -> None:
    lazy = LazyIndex(OffsetIndex, tmp_path / "a.index", BASE_OFFSET, 1024)
    try:
        lazy.get().append(46, 0)
        lazy.rename_to(tmp_path / "b.index")
        assert lazy.file == tmp_path / "b.index"
        assert lazy.get().path == tmp_path / "b.index"
        assert not (tmp_path / "a.index").exists()
    finally:
        lazy.close()


def test_update_parent_dir(impl: ModuleType, tmp_path: Path) -> None:
    """Kafka: ``LazyIndex.updateParentDir`` (a partition dir renamed under the index)."""
    lazy = LazyIndex(TimeIndex, tmp_path / "old" / "x.timeindex", BASE_OFFSET, 1200)
    lazy.update_parent_dir(tmp_path / "new")
    assert lazy.file == tmp_path / "new" / "x.timeindex"
    assert not lazy.is_loaded


def test_delete_before_opening(impl: ModuleType, tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000045.index"
    write_offset_entries(path, [(1, 10)])
    lazy = LazyIndex(OffsetIndex, path, BASE_OFFSET, 1024)
    assert lazy.delete() is True
    assert not path.exists()
    assert lazy.delete() is False  # already gone
    # A read racing the deletion must not open (and so create) the file again.
    with pytest.raises(IllegalStateError):
        lazy.get()
    assert not path.exists()


def test_delete_after_opening(impl: ModuleType, tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000045.index"
    lazy = LazyIndex(OffsetIndex, path, BASE_OFFSET, 1024)
    lazy.get()
    assert lazy.delete() is True
    assert not path.exists()


def test_read_only_refuses_rename_and_delete(impl: ModuleType, tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000045.index"
    write_offset_entries(path, [(1, 10)])
    before = path.read_bytes()
    lazy = LazyIndex(OffsetIndex, path, BASE_OFFSET, 1024, writable=False)
    with pytest.raises(ReadOnlyError):
        lazy.rename_to(tmp_path / "other.index")
    with pytest.raises(ReadOnlyError):
        lazy.delete()
    assert path.read_bytes() == before
    assert not (tmp_path / "other.index").exists()


def test_check_file_without_opening(impl: ModuleType, tmp_path: Path) -> None:
    good = tmp_path / "00000000000000000045.index"
    write_offset_entries(good, [(1, 10), (2, 20)])
    lazy = LazyIndex(OffsetIndex, good, BASE_OFFSET, 1024)
    lazy.check_file()
    assert not lazy.is_loaded

    bad = tmp_path / "00000000000000000046.index"
    write_offset_entries(bad, [(1, 10)], tail=b"\x00\x01\x02")  # not a whole number of entries
    with pytest.raises(CorruptIndexError):
        LazyIndex(OffsetIndex, bad, 46, 1024).check_file()


def test_ignore_file_reads_empty_on_a_read_only_index(impl: ModuleType, tmp_path: Path) -> None:
    """A read-only segment whose index failed its check reads it as empty (a lookup then scans the log)."""
    path = tmp_path / "00000000000000000045.index"
    write_offset_entries(path, [(1, 10), (2, 20)])
    lazy = LazyIndex(OffsetIndex, path, BASE_OFFSET, 1024, writable=False)
    lazy.get()
    lazy.ignore_file()
    assert lazy.file_ignored
    try:
        assert lazy.get().entries == 0
        assert lazy.get().lookup(BASE_OFFSET + 2) == OffsetPosition(BASE_OFFSET, 0)
    finally:
        lazy.close()
    assert path.read_bytes() == struct.pack(">iiii", 1, 10, 2, 20)


def test_ignore_file_is_a_no_op_on_a_writable_index(impl: ModuleType, tmp_path: Path) -> None:
    lazy = LazyIndex(OffsetIndex, tmp_path / "x.index", BASE_OFFSET, 1024)
    lazy.ignore_file()
    assert not lazy.file_ignored


def test_close_before_opening_does_nothing(impl: ModuleType, tmp_path: Path) -> None:
    lazy = LazyIndex(OffsetIndex, tmp_path / "x.index", BASE_OFFSET, 1024)
    lazy.close()
    lazy.close_handler()
    assert not (tmp_path / "x.index").exists()
    assert not lazy.is_loaded

"""An index opened at its first use (Kafka: ``LazyIndex``, storage 3.8.0), and the sanity check of an index
file that does not open it.
"""


from __future__ import annotations

import os
import struct
import threading
from pathlib import Path
from typing import Any

from ..errors import (
    CorruptIndexError,
    IllegalStateError,
    ReadOnlyError,
)
from ..fsutil import open_regular
from .abstract_index import AbstractIndex, rename_index_file
from .live_entries import IndexExtent
from .time_index import TimeIndex

__all__ = ["LazyIndex"]

def _check_index_file(path: Path, entry_size: int, base_offset: int, time_index: bool) -> None:
    """The sanity check of an index file done with a stat and a pread or two, without mapping it."""
    try:
        fd = open_regular(path, os.O_RDONLY)
    except FileNotFoundError:
        return
    try:
        length = os.fstat(fd).st_size
        entries = length // entry_size
        if entries:
            last = os.pread(fd, entry_size, (entries - 1) * entry_size)
            first = os.pread(fd, 8, 0)
            if len(last) != entry_size or len(first) != 8:
                raise CorruptIndexError(f"Index file {path} was cut to {os.fstat(fd).st_size} bytes while it "
                                        f"was checked ({length} bytes before)")
            if time_index:
                first_timestamp = struct.unpack(">q", first)[0]
                last_timestamp, relative = struct.unpack(">qi", last)
                if last_timestamp < first_timestamp:
                    raise CorruptIndexError(
                        f"Corrupt time index found, time index file ({path}) has non-zero size but the "
                        f"last timestamp is {last_timestamp} which is less than the first timestamp "
                        f"{first_timestamp}")
            else:
                relative = struct.unpack(">i", last[:4])[0]
            if base_offset + relative < base_offset:
                raise CorruptIndexError(
                    f"Corrupt {'time ' if time_index else ''}index found, index file ({path}) has non-zero "
                    f"size but the last offset is {base_offset + relative} which is less than the base "
                    f"offset {base_offset}.")
    finally:
        os.close(fd)
    if length % entry_size != 0:
        raise CorruptIndexError(
            f"Index file {path} is corrupt, found {length} bytes which is neither positive nor a multiple of "
            f"{entry_size}.")


class LazyIndex:
    """An index that is opened at first use (Kafka: ``LazyIndex``; lazy index loading arrived in 2.3, the
    ``LazyIndex`` class in 2.4).

    A log of thousands of segments opens without mapping thousands of files: only the segments that
    are read or written map their indexes.  Renaming and deleting an index that was never opened work
    on the file alone; closing one does nothing.  ``check_file`` runs the index's sanity check with a
    stat and a pread, so loading a log can still refuse a corrupt index without opening it.
    """

    def __init__(self, kind: type[AbstractIndex], path: str | os.PathLike[str], base_offset: int,
                 max_index_size: int | None = None, writable: bool = True) -> None:
        self._kind = kind
        self._path = Path(path)
        self.base_offset = base_offset
        self.max_index_size = max_index_size
        self.writable = writable
        self._index: AbstractIndex | None = None
        self._lock = threading.Lock()
        self._ignore_file = False
        self._deleted = False

    @property
    def file(self) -> Path:
        return self._index.path if self._index is not None else self._path

    @property
    def is_loaded(self) -> bool:
        return self._index is not None

    def get(self) -> Any:
        """The index, opened now if it was not yet."""
        index = self._index
        if index is None:
            with self._lock:
                if self._deleted:
                    # A read that raced the deletion of the segment: opening now would make a new file.
                    raise IllegalStateError(f"Index {self._path} was deleted")
                if self._index is None:
                    self._index = self._kind(self._path, self.base_offset, self.max_index_size, self.writable,
                                             ignore_file=self._ignore_file)
                index = self._index
        return index

    def ignore_file(self) -> None:
        """Read as empty from now on: a read-only segment whose index failed its check cannot rebuild it,
        and a lookup in an empty index scans from the start of the log, which is slower but right."""
        with self._lock:
            if not self.writable:
                if self._index is not None:
                    self._index.close_handler()
                    self._index = None
                self._ignore_file = True

    @property
    def file_ignored(self) -> bool:
        return self._ignore_file

    def check_file(self) -> None:
        """The index's sanity check; on the open index if it is open, else on the file."""
        if self._index is not None:
            self._index.sanity_check()  # type: ignore[attr-defined]
        else:
            _check_index_file(self._path, self._kind.ENTRY_SIZE, self.base_offset, self._kind is TimeIndex)

    def take_live_entries(self, zero_first_entry: bool) -> IndexExtent:
        """Open the index and take only its live entries (:meth:`AbstractIndex.take_live_entries`): a read-only
        index of a segment whose file may end in a preallocated zero tail (the active segment of a live
        broker's directory).

        Raises:
            CorruptIndexError: a zero-filled slot is followed by data.
        """
        index: AbstractIndex = self.get()
        return index.take_live_entries(zero_first_entry)

    def rename_to(self, path: str | os.PathLike[str]) -> None:
        with self._lock:
            if self._index is not None:
                self._index.rename_to(path)
            else:
                rename_index_file(self._path, path, self.writable, self._keep_path)

    def _keep_path(self, path: Path) -> None:
        self._path = path

    def update_parent_dir(self, parent: str | os.PathLike[str]) -> None:
        """Kafka: ``LazyIndex.updateParentDir``."""
        with self._lock:
            if self._index is not None:
                self._index.update_parent_dir(parent)
            self._path = Path(parent) / self._path.name

    def delete(self) -> bool:
        with self._lock:
            if self.writable:
                self._deleted = True
            if self._index is not None:
                return self._index.delete()
            if not self.writable:
                raise ReadOnlyError(f"Cannot delete index {self._path}: it was opened read-only")
            try:
                self._path.unlink()
            except FileNotFoundError:
                return False
            return True

    def close(self) -> None:
        with self._lock:
            if self._index is not None:
                self._index.close()

    def close_handler(self) -> None:
        with self._lock:
            if self._index is not None:
                self._index.close_handler()

    def __repr__(self) -> str:
        return f"LazyIndex({self._kind.__name__}, {str(self.file)!r}, loaded={self.is_loaded})"

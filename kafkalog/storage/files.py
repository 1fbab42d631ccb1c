"""A segment's files wherever they are: one call opens a local file (the fast path, as before) or an object
read by range, for the tools that take either (``kafkalog dump``).

A file is a :class:`~pathlib.Path` or a :class:`~kafkalog.storage.location.StorageLocation`; each function
answers for both alike, the local one through the classes that always read it.
"""

from __future__ import annotations

import errno
from pathlib import Path
from typing import TypeVar

from ..file_message_set import FileMessageSet
from ..index import AbstractIndex
from ..producer_state import MAX_SNAPSHOT_BYTES, CorruptSnapshotError, ProducerStateEntry, parse_snapshot, read_snapshot
from ..transaction_index import ABORTED_TXN_SIZE, MAX_ENTRIES, AbortedTxn, parse_aborted_txns, read_aborted_txns
from .channel import open_remote_log, read_index
from .location import StorageLocation

__all__ = ["AnyFile", "absolute", "exists", "open_index_file", "open_log_file", "read_producer_snapshot",
           "read_txn_index", "sibling"]

AnyFile = Path | StorageLocation
_Index = TypeVar("_Index", bound=AbstractIndex)


def absolute(file: AnyFile) -> AnyFile:
    return file.absolute() if isinstance(file, Path) else file


def sibling(file: AnyFile, name: str) -> AnyFile:
    """The file ``name`` in the directory of ``file``."""
    return absolute(file).parent / name


def exists(file: AnyFile) -> bool:
    return file.exists()


def open_log_file(file: AnyFile) -> FileMessageSet:
    """A read-only set of the ``.log`` (Raises: ``KafkaStorageError``/``StorageNotFoundError`` when missing)."""
    if isinstance(file, Path):
        return FileMessageSet(file, writable=False)
    return open_remote_log(file)


def open_index_file(kind: type[_Index], file: AnyFile, base_offset: int) -> _Index:
    """A read-only index of ``kind`` (a missing file reads as empty, as for a read-only open)."""
    if isinstance(file, Path):
        return kind(file, base_offset, -1, writable=False)
    return read_index(kind, file, base_offset)


def read_txn_index(file: AnyFile) -> list[AbortedTxn]:
    """The entries of a ``.txnindex`` (Kafka: ``TransactionIndex.allAbortedTxns``)."""
    if isinstance(file, Path):
        return read_aborted_txns(file)
    size = min(file.size(), MAX_ENTRIES * ABORTED_TXN_SIZE)
    return parse_aborted_txns(file.read_range(0, size), file.url)


def read_producer_snapshot(file: AnyFile) -> list[ProducerStateEntry]:
    """The entries of a producer snapshot (Kafka: ``ProducerStateManager.readSnapshot``)."""
    if isinstance(file, Path):
        return read_snapshot(file)
    size = file.size()
    if size > MAX_SNAPSHOT_BYTES:
        raise CorruptSnapshotError(f"Snapshot {file} is {size} bytes, more than a producer snapshot can hold")
    return parse_snapshot(file.read_range(0, size), file.url)


def missing(file: AnyFile) -> FileNotFoundError:
    """The error for a file that is not there, as the tools raise it."""
    return FileNotFoundError(errno.ENOENT, "No such file", str(file))

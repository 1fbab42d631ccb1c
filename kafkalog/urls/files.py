"""A partition's files wherever they are: one call opens a local file (the fast path, as before) or an object
read by range, for the tools that take either (``kafkalog dump``, ``verify``, ``stats``).

A file is a :class:`~pathlib.Path` or a :class:`~kafkalog.urls.location.StorageLocation`; each function
answers for both alike, the local one through the classes that always read it, the object through the same
byte parser (:func:`~kafkalog.producer_state.snapshot.scan_snapshot`,
:func:`~kafkalog.transaction_index.parse_aborted_txns`, :func:`~kafkalog.checkpoint.parse_checkpoint`), so a
bad file gives the same error either way, naming the path or the URL.

A small file (a checkpoint) is read whole with one ranged read of the size a listing gave (``size``); without
one, its size is asked first (an object store refuses a range of an empty object, so the read cannot simply ask
for more than a file may hold).  A file larger than its kind can be is refused unread.  A producer snapshot of
more than one chunk (3 MiB) is read a chunk at a time, local or not; a ``.txnindex``, which has no bound of its
own, is read a chunk at a time too (:func:`iter_txn_index_entries`: one ranged read a chunk), as compact numpy
rows.
"""

from __future__ import annotations

import contextlib
import errno
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from ..checkpoint import CorruptCheckpointError, EpochEntry, LeaderEpochCheckpoint, OffsetCheckpoint
from ..errors import KafkaStorageError, StorageNotFoundError
from ..file_message_set import FileMessageSet
from ..index import AbstractIndex
from ..producer_state.snapshot import (
    ReadRange,
    SnapshotTransactions,
    iter_snapshot,
    open_snapshot_file,
    read_snapshot_transactions,
    scan_snapshot,
)
from ..topic import TopicPartition
from ..transaction_index import (
    ABORTED_TXN_SIZE,
    CHUNK_ENTRIES,
    AbortedTxn,
    aborted_txns_of,
    iter_aborted_txn_entries,
    parse_aborted_txn_entries,
    read_aborted_txns,
)
from .channel import open_remote_log, read_index
from .location import StorageLocation

__all__ = ["MAX_CHECKPOINT_BYTES", "AnyFile", "absolute", "check_producer_snapshot", "exists", "file_size",
           "iter_producer_snapshot", "iter_txn_index_entries", "open_index_file", "open_log_file",
           "read_leader_epoch_checkpoint", "read_offset_checkpoint", "read_producer_snapshot_transactions",
           "read_txn_index", "sibling"]

#: The most bytes of a checkpoint object read (Kafka sets no limit on the local file; a line is at most a
#: 249-character topic and two numbers, so this is over 400,000 partitions): a larger object is refused.
MAX_CHECKPOINT_BYTES = 128 << 20

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


def file_size(file: AnyFile, size: int | None = None) -> int:
    """The size of ``file``: ``size`` when a listing gave it, else asked of the file system."""
    if size is not None:
        return size
    return file.stat().st_size if isinstance(file, Path) else file.size()


def iter_txn_index_entries(file: AnyFile, size: int | None = None,
                           chunk_entries: int = CHUNK_ENTRIES) -> Iterator[npt.NDArray[Any]]:
    """The whole entries of a ``.txnindex`` as rows of :data:`~kafkalog.transaction_index.ABORTED_TXN_DTYPE`, at
    most ``chunk_entries`` at a time (Kafka: ``TransactionIndex.allAbortedTxns``, in bounded memory): a local file
    by ``pread``, an object by one ranged read a chunk (``size``: its size when a listing gave it).

    Raises:
        TransactionIndexError: an entry of a version this reader does not know.
        KafkaStorageError: the object ended before the size it was listed with.
    """
    if isinstance(file, Path):
        yield from iter_aborted_txn_entries(file, chunk_entries)
        return
    length = file_size(file, size)
    whole = length - length % ABORTED_TXN_SIZE
    step = max(chunk_entries, 1) * ABORTED_TXN_SIZE
    for position in range(0, whole, step):
        end = min(position + step, whole)
        data = file.read_range(position, end)
        if len(data) < end - position:
            raise KafkaStorageError(f"Failed to read from the transaction index {file.url}: {end - position} bytes "
                                    f"expected at position {position}, {len(data)} read (the object shrank)")
        yield parse_aborted_txn_entries(data, file.url)


def read_txn_index(file: AnyFile, size: int | None = None) -> list[AbortedTxn]:
    """The entries of a ``.txnindex`` as objects (Kafka: ``TransactionIndex.allAbortedTxns``); a reader of a whole
    index takes :func:`iter_txn_index_entries` instead.

    Raises:
        TransactionIndexError: an entry of an unknown version, or more than
            :data:`~kafkalog.transaction_index.MAX_ENTRIES` entries.
    """
    if isinstance(file, Path):
        return read_aborted_txns(file)
    return [txn for chunk in iter_txn_index_entries(file, size) for txn in aborted_txns_of(chunk)]


@contextlib.contextmanager
def _snapshot_reads(file: AnyFile, size: int | None) -> Iterator[tuple[ReadRange, int, str]]:
    """How a producer snapshot is read: ``pread`` on one descriptor of a local file, ranged reads of an object
    (``size``: its size when a listing gave it); its size; its name in errors."""
    if isinstance(file, Path):
        with open_snapshot_file(file) as (read, length):
            yield read, length, str(file)
    else:
        yield file.read_range, file_size(file, size), file.url


def check_producer_snapshot(file: AnyFile, size: int | None = None) -> int:
    """Check a producer snapshot as Kafka's ``ProducerStateManager.readSnapshot`` does, keeping no entry (memory:
    one chunk); the number of its entries.  A snapshot of one chunk (65,536 entries) or less is one read.

    Raises:
        CorruptSnapshotError: see :func:`~kafkalog.producer_state.snapshot.scan_snapshot` (a file larger than a
            snapshot can be is refused unread).
    """
    count = 0

    def keep_none(rows: npt.NDArray[Any]) -> npt.NDArray[np.bool_]:
        nonlocal count
        count += len(rows)
        return np.zeros(len(rows), dtype=np.bool_)

    with _snapshot_reads(file, size) as (read, length, name):
        scan_snapshot(read, length, name, keep_none)
    return count


def iter_producer_snapshot(file: AnyFile, size: int | None = None) -> Iterator[npt.NDArray[Any]]:
    """The entries of a producer snapshot, a chunk of :data:`~kafkalog.producer_state.snapshot.SNAPSHOT_ENTRY`
    rows at a time, once the whole file has been checked (:func:`~kafkalog.producer_state.snapshot.iter_snapshot`).

    Raises:
        CorruptSnapshotError: see :func:`~kafkalog.producer_state.snapshot.scan_snapshot`.
    """
    with _snapshot_reads(file, size) as (read, length, name):
        yield from iter_snapshot(read, length, name)


def read_producer_snapshot_transactions(file: AnyFile, size: int | None, current_time_ms: int,
                                        expiration_ms: int) -> SnapshotTransactions:
    """The transactions a producer snapshot leaves open, as a load leaves them
    (:func:`~kafkalog.producer_state.snapshot.read_snapshot_transactions`), a local file and an object alike.

    Raises:
        CorruptSnapshotError: see :func:`~kafkalog.producer_state.snapshot.scan_snapshot`.
    """
    with _snapshot_reads(file, size) as (read, length, name):
        return read_snapshot_transactions(read, length, name, current_time_ms, expiration_ms)


def _read_checkpoint_object(file: StorageLocation, size: int | None) -> bytes | None:
    """The bytes of a checkpoint object, one ranged read; ``None`` when it is missing (a read-only open reads a
    missing checkpoint as empty)."""
    try:
        length = file_size(file, size)
        if length > MAX_CHECKPOINT_BYTES:
            raise CorruptCheckpointError(f"Checkpoint file [{file.url}] is {length} bytes, more than kafkalog reads "
                                         f"of a checkpoint ({MAX_CHECKPOINT_BYTES})", file.url)
        return file.read_range(0, length)
    except StorageNotFoundError:
        return None


def read_offset_checkpoint(file: AnyFile, size: int | None = None) -> dict[TopicPartition, int]:
    """The offsets of an offset checkpoint (``recovery-point-offset-checkpoint`` and the others), read-only: a
    missing file reads as empty (Kafka: ``OffsetCheckpointFile.read``); an object is one ranged read.

    Raises:
        CorruptCheckpointError: see :func:`~kafkalog.checkpoint.parse_checkpoint`.
    """
    if isinstance(file, Path):
        return OffsetCheckpoint(file, read_only=True).read()
    data = _read_checkpoint_object(file, size)
    return {} if data is None else OffsetCheckpoint.parse(data, file.url)


def read_leader_epoch_checkpoint(file: AnyFile, size: int | None = None) -> list[EpochEntry]:
    """The entries of a partition's ``leader-epoch-checkpoint``, read-only: a missing file reads as empty
    (Kafka: ``LeaderEpochCheckpointFile.read``); an object is one ranged read.

    Raises:
        CorruptCheckpointError: see :func:`~kafkalog.checkpoint.parse_checkpoint`.
    """
    if isinstance(file, Path):
        return LeaderEpochCheckpoint(file, read_only=True).read()
    data = _read_checkpoint_object(file, size)
    return [] if data is None else LeaderEpochCheckpoint.parse(data, file.url)


def missing(file: AnyFile) -> FileNotFoundError:
    """The error for a file that is not there, as the tools raise it."""
    return FileNotFoundError(errno.ENOENT, "No such file", str(file))

"""Aborted transactions (``AbortedTxn``) and the transaction index files (``<offset>.txnindex``) that list them.

Port of ``AbortedTxn``, ``TxnIndexSearchResult`` and ``TransactionIndex`` (storage,
``org.apache.kafka.storage.internals.log``, tag 3.8.0).  :class:`TransactionIndex` is the writable index a
segment owns; :func:`read_aborted_txns` and :func:`parse_aborted_txns` read a broker's file (or its bytes, from
an object store) without opening anything for writing.

An index can be large (a segment of ABORT markers alone holds one entry per 78 bytes of log), so the readers that
take a whole index read it as numpy rows of :data:`ABORTED_TXN_DTYPE` (the 34 bytes of an entry, no object per
entry) a chunk at a time (:meth:`TransactionIndex.entry_chunks`, :func:`iter_aborted_txn_entries`,
:func:`parse_aborted_txn_entries`); :class:`AbortedTxn` objects are made only for the entries a caller needs
(:func:`aborted_txns_of`).

Layout: a sequence of 34-byte entries, big-endian, no header and no preallocation::

    0  version           int16   0
    2  producerId        int64
    10 firstOffset       int64   the transaction's first offset
    18 lastOffset        int64   the offset of its ABORT marker (strictly increasing down the file)
    26 lastStableOffset  int64   the last stable offset when the abort was written

Invariants and life cycle, as Kafka keeps them:

* One index per segment, named after the segment's base offset; an entry goes into the index of the segment
  where the ABORT marker lands, even when the transaction began in an earlier segment (so recovering an index
  means scanning earlier segments for the transaction's start: ``LogSegment.recover`` with the producer
  state).  The index is rebuilt by recovery, never trusted past the recovery point.
* The file is created lazily, by the first :meth:`TransactionIndex.append`: a segment whose log never saw an
  abort has no ``.txnindex`` at all.  An index opened on an existing file appends after its last byte.
* A trailing part-entry (a write cut short) is never read: reading stops before it, and an append after it
  writes at the end of the file, as Kafka's ``FileChannel`` does.
* ``lastOffset`` must increase from one append to the next, but only within one opening: the last offset is
  not read back when a file is reopened (Kafka keeps it in memory only).

Where kafkalog differs from Kafka 3.8.0, on purpose:

* The version is read as the int16 it is written as.  Kafka's ``AbortedTxn.version()`` reads one byte
  (``buffer.get``), the high byte of that int16, so a version-1 entry (``00 01``) would pass its check;
  kafkalog refuses it, as the check means to.
* Errors are kafkalog's: :class:`~kafkalog.errors.IllegalArgumentError` for an append whose last offset does
  not increase (Kafka: ``IllegalArgumentException``, same message) or whose fields do not fit the format,
  :class:`~kafkalog.errors.CorruptIndexError` from :meth:`TransactionIndex.sanity_check`,
  :class:`TransactionIndexError` for an unknown version and :class:`~kafkalog.errors.KafkaStorageError` for
  I/O failures (Kafka: ``KafkaException`` / ``IOException``), each naming the file.
* :meth:`TransactionIndex.is_empty` is not in 3.8.0 (later Kafka adds one, for tiered storage).
* :func:`sanity_check_entries` is Kafka's ``sanityCheck`` over entries already read (an object's, or a chunk's);
  :meth:`TransactionIndex.ignore_file` is how a read-only index that fails it is kept from being trusted (a
  read-only open cannot rebuild it, as a broker's open does).
* ``writable=False`` (as kafkalog's offset and time indexes have it) opens an existing file read-only and never
  creates, changes, renames or deletes one: those calls raise :class:`~kafkalog.errors.ReadOnlyError`.  This is
  how a read-only log holds a broker's index.

Like Kafka's, a :class:`TransactionIndex` is not thread-safe: its segment's owner (the log, under its lock)
serialises every change.  A walk of the entries may run beside one (a fetch's aborted transactions are read
without the lock): it reads no further than the file's end when it began, and no entry a truncation removed
before the walk reached it (entries appended after that truncation may be read in their place).
"""

from __future__ import annotations

import itertools
import os
import struct
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from ._common import INT64_MAX, INT64_MIN, RECORD_BATCH_OVERHEAD
from .errors import CorruptIndexError, IllegalArgumentError, KafkaLogError, KafkaStorageError, ReadOnlyError
from .fsutil import fsync_dir, open_regular, storage_error

__all__ = [
    "ABORTED_TXN_DTYPE",
    "ABORTED_TXN_SIZE",
    "ABORTED_TXN_VERSION",
    "CHUNK_ENTRIES",
    "REWRITE_SUFFIX",
    "AbortedTxn",
    "TransactionIndex",
    "TransactionIndexError",
    "TxnIndexSearchResult",
    "aborted_txns_of",
    "checked_entry_chunks",
    "iter_aborted_txn_entries",
    "parse_aborted_txn_entries",
    "parse_aborted_txns",
    "read_aborted_txns",
    "sanity_check_entries",
]

ABORTED_TXN_VERSION = 0
_ENTRY = struct.Struct(">hqqqq")
ABORTED_TXN_SIZE = _ENTRY.size
#: An entry as numpy reads it from the file: packed, big-endian, the fields of :class:`AbortedTxn` in file order.
ABORTED_TXN_DTYPE = np.dtype([("version", ">i2"), ("producer_id", ">i8"), ("first_offset", ">i8"),
                              ("last_offset", ">i8"), ("last_stable_offset", ">i8")])
#: Entries the chunked readers read at once (about 2 MB).
CHUNK_ENTRIES = 1 << 16
#: The most entries :func:`read_aborted_txns` and :func:`parse_aborted_txns` make objects of (about 3 GB of them);
#: a larger index is read in chunks (:func:`iter_aborted_txn_entries`).
MAX_ENTRIES = 1 << 24
#: What :meth:`TransactionIndex.rewrite` writes before it renames: ``<base>.txnindex.tmp``.
REWRITE_SUFFIX = ".tmp"
#: Entries read by one ``pread`` when walking an open index (Kafka reads one entry per call).
_READ_ENTRIES = 1024


class TransactionIndexError(KafkaLogError, ValueError):
    """A transaction index this reader cannot read: an entry of a version it does not know, or more entries than
    the list readers make objects of."""


class AbortedTxn(NamedTuple):
    """A transaction that ended with an ABORT marker (Kafka: ``AbortedTxn``, one entry of a ``.txnindex``).

    ``first_offset`` is the offset of the transaction's first batch, ``last_offset`` the offset of its
    ABORT marker, and ``last_stable_offset`` the partition's last stable offset when the marker was written:
    the first offset of the earliest transaction of another producer still open then, else
    ``last_offset + 1`` (Kafka: ``ProducerStateManager.lastStableOffset(CompletedTxn)``).  The fields come in
    the order of Kafka's constructor; ``version`` is the entry format's, 0 in every release so far.
    """

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int
    version: int = ABORTED_TXN_VERSION

    def to_bytes(self) -> bytes:
        """The 34 bytes of the entry (Kafka: ``AbortedTxn.toByteBuffer``).

        Raises:
            IllegalArgumentError: a field does not fit the format (an offset or producer id outside Java's
                ``long``, a version outside ``short``).
        """
        for name, value in zip(self._fields, self, strict=True):
            low, high = (-(1 << 15), (1 << 15) - 1) if name == "version" else (INT64_MIN, INT64_MAX)
            if not isinstance(value, int) or not low <= value <= high:
                raise IllegalArgumentError(f"{name} {value!r} of {self} does not fit a transaction index entry")
        return _ENTRY.pack(self.version, self.producer_id, self.first_offset, self.last_offset,
                           self.last_stable_offset)

    @classmethod
    def from_bytes(cls, data: bytes | bytearray | memoryview, at: int = 0) -> AbortedTxn:
        """The entry at byte ``at`` of ``data``, version unchecked (Kafka: ``new AbortedTxn(ByteBuffer)``)."""
        version, producer_id, first_offset, last_offset, last_stable_offset = _ENTRY.unpack_from(data, at)
        return cls(producer_id, first_offset, last_offset, last_stable_offset, version)


class TxnIndexSearchResult(NamedTuple):
    """What :meth:`TransactionIndex.collect_aborted_txns` found (Kafka: ``TxnIndexSearchResult``).

    ``is_complete`` is true when an entry's last stable offset reached the upper bound of the fetch, so no
    later segment's index can hold a transaction overlapping the range and the search stops here.
    """

    aborted_transactions: list[AbortedTxn]
    is_complete: bool


def _checked(entry: AbortedTxn, name: str) -> AbortedTxn:
    if entry.version > ABORTED_TXN_VERSION:
        raise _unknown_version(entry.version, name)
    return entry


def _unknown_version(version: int, name: str) -> TransactionIndexError:
    return TransactionIndexError(f"Unexpected aborted transaction version {version} in transaction index {name}, "
                                 f"current version is {ABORTED_TXN_VERSION}")


def parse_aborted_txn_entries(data: bytes | bytearray | memoryview, name: str) -> npt.NDArray[Any]:
    """The whole entries of the bytes of a ``.txnindex`` named ``name``, as rows of :data:`ABORTED_TXN_DTYPE` over
    ``data`` (not copied); a part-entry at the end is left out, as every reader of the index leaves it.

    Raises:
        TransactionIndexError: an entry is of a version this reader does not know (Kafka's iterator: a
            ``KafkaException``).
    """
    entries: npt.NDArray[Any] = np.frombuffer(data, ABORTED_TXN_DTYPE,
                                              count=memoryview(data).nbytes // ABORTED_TXN_SIZE)
    unknown = np.flatnonzero(entries["version"] > ABORTED_TXN_VERSION)
    if len(unknown):
        raise _unknown_version(int(entries["version"][unknown[0]]), name)
    return entries


def aborted_txns_of(entries: npt.NDArray[Any]) -> list[AbortedTxn]:
    """The :class:`AbortedTxn` of each row of ``entries`` (:data:`ABORTED_TXN_DTYPE`)."""
    return [AbortedTxn(producer_id, first_offset, last_offset, last_stable_offset, version)
            for version, producer_id, first_offset, last_offset, last_stable_offset in entries.tolist()]


def sanity_check_entries(entries: npt.NDArray[Any], start_offset: int, name: str) -> None:
    """Kafka's ``TransactionIndex.sanityCheck`` over entries read already (rows of :data:`ABORTED_TXN_DTYPE` of the
    index ``name`` of the segment at ``start_offset``, or a chunk of them), with its message.

    Raises:
        CorruptIndexError: an entry's last offset is below ``start_offset``.
    """
    below = np.flatnonzero(entries["last_offset"] < start_offset)
    if len(below):
        (txn,) = aborted_txns_of(entries[below[:1]])
        raise CorruptIndexError(f"Last offset of aborted transaction {_java_repr(txn)} in index {name} is less "
                                f"than start offset {start_offset}")


def checked_entry_chunks(chunks: Iterable[npt.NDArray[Any]], count: int, start_offset: int, segment_bytes: int,
                         name: str) -> Iterator[npt.NDArray[Any]]:
    """The chunks of entries of the index ``name`` (``count`` entries in all) of the segment at ``start_offset``
    whose log holds ``segment_bytes``, each checked as it comes: what a reader that trusts the index needs.

    The count is checked first, before anything is read: an entry stands for an ABORT marker in the segment, a v2
    batch of at least :data:`~kafkalog._common.RECORD_BATCH_OVERHEAD` bytes, so an index with more entries than
    that is not the segment's (and reading it would cost memory its segment does not account for).  Then each
    chunk gets Kafka's sanity check (:func:`sanity_check_entries`).

    Raises:
        CorruptIndexError: the index holds more entries than its segment holds batches, or fails the sanity check.
    """
    most = segment_bytes // RECORD_BATCH_OVERHEAD
    if count > most:
        raise CorruptIndexError(f"Transaction index {name} holds {count} entries, more than its segment's "
                                f"{segment_bytes} bytes can hold ABORT markers ({most})")
    for chunk in chunks:
        sanity_check_entries(chunk, start_offset, name)
        yield chunk


def _read_entry_chunks(fd: int, end: int, name: str, chunk_entries: int) -> Iterator[npt.NDArray[Any]]:
    """The whole entries of the descriptor's first ``end`` bytes, ``chunk_entries`` at most at a time.  A read
    that comes back short ends the walk at the last whole entry read, as :meth:`TransactionIndex._entries` ends it:
    a truncation cut the file since the end was taken, and what it removed is past the bound of any reader."""
    whole = end - end % ABORTED_TXN_SIZE
    position = 0
    while position < whole:
        size = min(whole - position, max(chunk_entries, 1) * ABORTED_TXN_SIZE)
        try:
            data = os.pread(fd, size, position)
        except OSError as e:
            raise KafkaStorageError(f"Failed to read from the transaction index {name}: {e}") from e
        entries = parse_aborted_txn_entries(data, name)
        if len(entries):
            yield entries
        if len(data) < size:
            return
        position += size


def iter_aborted_txn_entries(path: str | os.PathLike[str],
                             chunk_entries: int = CHUNK_ENTRIES) -> Iterator[npt.NDArray[Any]]:
    """The whole entries of a ``.txnindex`` file, read-only, as rows of :data:`ABORTED_TXN_DTYPE`, at most
    ``chunk_entries`` at a time: a reader of a whole index holds a chunk, never the file.  The file's size when
    the walk starts is its end."""
    file = Path(path)
    name = str(file.absolute())
    fd = open_regular(file, os.O_RDONLY)
    try:
        yield from _read_entry_chunks(fd, os.fstat(fd).st_size, name, chunk_entries)
    finally:
        os.close(fd)


def _list_cap(count: int, name: str) -> None:
    if count > MAX_ENTRIES:
        raise TransactionIndexError(f"Transaction index {name} holds {count} entries, more than the {MAX_ENTRIES} "
                                    "kafkalog makes objects of at once: read it in chunks (iter_aborted_txn_entries)")


def read_aborted_txns(path: str | os.PathLike[str]) -> list[AbortedTxn]:
    """Every whole entry of a ``.txnindex`` file (Kafka: ``TransactionIndex.allAbortedTxns``), read-only.

    Raises:
        TransactionIndexError: an entry of an unknown version, or more than :data:`MAX_ENTRIES` entries.
    """
    file = Path(path)
    if file.exists() and file.is_file():
        _list_cap(file.stat().st_size // ABORTED_TXN_SIZE, str(file.absolute()))
    return [txn for chunk in iter_aborted_txn_entries(file) for txn in aborted_txns_of(chunk)]


def parse_aborted_txns(data: bytes | bytearray | memoryview, name: str) -> list[AbortedTxn]:
    """Every whole entry of the bytes of a ``.txnindex`` named ``name``.

    Raises:
        TransactionIndexError: an entry of an unknown version, or more than :data:`MAX_ENTRIES` entries.
    """
    _list_cap(memoryview(data).nbytes // ABORTED_TXN_SIZE, name)
    return aborted_txns_of(parse_aborted_txn_entries(data, name))


class TransactionIndex:
    """The aborted transactions whose ABORT markers are in one segment (Kafka: ``TransactionIndex``).

    ``start_offset`` is the segment's base offset (checked by :meth:`sanity_check`), ``file`` the
    ``<offset>.txnindex`` path.  The file is opened now if it exists, else created by the first append.
    ``writable=False`` opens it read-only, if it exists, and refuses every change (:class:`ReadOnlyError`).
    """

    def __init__(self, start_offset: int, file: str | os.PathLike[str], *, writable: bool = True) -> None:
        self.start_offset = start_offset
        self.writable = writable
        self._file = Path(file)
        # Kafka: maybeChannel; None until the file exists and is opened.  The descriptor's position is the
        # channel's: the end of what was read or written, which bounds every walk of the entries.
        self._fd: int | None = None
        # Kafka: lastOffset, the last offset appended since this object opened the file.
        self._last_offset: int | None = None
        #: Whether a read-only index reads as if its file were not there (:meth:`ignore_file`).
        self.file_ignored = False
        if self._file.exists():
            self._open_channel()

    @property
    def file(self) -> Path:
        """The index file (Kafka: ``file()``); it may not exist yet."""
        return self._file

    def __repr__(self) -> str:
        return f"TransactionIndex({self.start_offset}, {str(self._file)!r})"

    def __enter__(self) -> TransactionIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def update_parent_dir(self, parent_dir: str | os.PathLike[str]) -> None:
        """Point at the same file name in ``parent_dir``, after the directory was renamed
        (Kafka: ``updateParentDir``)."""
        self._file = Path(parent_dir) / self._file.name

    def append(self, aborted_txn: AbortedTxn) -> None:
        """Add an entry at the end of the file, creating the file if need be (Kafka: ``append``).

        Raises:
            IllegalArgumentError: ``aborted_txn.last_offset`` is not greater than the last offset appended
                since the index was opened, or its fields do not fit an entry (or it is of another version).
        """
        self._check_writable("append to")
        if not isinstance(aborted_txn, AbortedTxn):
            raise IllegalArgumentError(f"Not an AbortedTxn: {aborted_txn!r}")
        if aborted_txn.version != ABORTED_TXN_VERSION:
            raise IllegalArgumentError(
                f"Cannot append {aborted_txn} to {self._file.absolute()}: "
                f"the current version is {ABORTED_TXN_VERSION}")
        # Kafka's AbortedTxn always holds its bytes, so encoding comes before every check.
        data = aborted_txn.to_bytes()
        if self._last_offset is not None and self._last_offset >= aborted_txn.last_offset:
            raise IllegalArgumentError(
                "The last offset of appended transactions must increase sequentially, but "
                f"{aborted_txn.last_offset} is not greater than current last offset {self._last_offset} of index "
                f"{self._file.absolute()}")
        self._last_offset = aborted_txn.last_offset
        fd = self._channel()
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(fd, view):]
        except OSError as e:
            raise storage_error(e, f"Appending to the transaction index {self._file.absolute()}") from e

    def flush(self) -> None:
        """fsync the file, if it is open (Kafka: ``flush``, ``force(true)``); nothing to do when read-only."""
        if self._fd is not None and self.writable:
            try:
                os.fsync(self._fd)
            except OSError as e:
                raise storage_error(e, f"Flushing the transaction index {self._file.absolute()}") from e

    def reset(self) -> None:
        """Remove every entry (Kafka: ``reset``).  Unlike the offset and time indexes nothing is preallocated,
        so the file is cut to nothing."""
        self._check_writable("reset")
        if self._fd is not None:
            self._truncate_channel(0)
        self._last_offset = None

    def rewrite(self, entries: Iterable[AbortedTxn]) -> None:
        """Replace every entry with ``entries`` so that a crash leaves the old file or the new one whole: they are
        written to ``<file>.tmp``, fsynced, and renamed over the file (kafkalog's: Kafka never rewrites an index;
        kafkalog does once, for a log written before it kept one, in
        :func:`~kafkalog.log.producer_state_updates.complete_txn_index`).  A ``.txnindex.tmp`` left by a crash is
        removed by the next load.

        Raises:
            IllegalArgumentError: the last offsets of ``entries`` do not increase, or an entry does not fit.
        """
        self._check_writable("rewrite")
        entries = list(entries)
        for before, after in itertools.pairwise(entries):
            if after.last_offset <= before.last_offset:
                raise IllegalArgumentError(
                    "The last offset of appended transactions must increase sequentially, but "
                    f"{after.last_offset} is not greater than {before.last_offset} in the rewrite of index "
                    f"{self._file.absolute()}")
        for entry in entries:
            if not isinstance(entry, AbortedTxn) or entry.version != ABORTED_TXN_VERSION:
                raise IllegalArgumentError(f"Cannot write {entry!r} to {self._file.absolute()}: the current "
                                           f"version is {ABORTED_TXN_VERSION}")
        data = b"".join(entry.to_bytes() for entry in entries)
        temporary = self._file.with_name(self._file.name + REWRITE_SUFFIX)
        try:
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
                os.fsync(fd)
            finally:
                os.close(fd)
            self.close()
            try:
                os.replace(temporary, self._file)
            finally:
                # The file is the old one or the new one, whole: the index answers from whichever it is.
                self._open_channel()
                self._last_offset = None
            fsync_dir(self._file.parent)
        except OSError as e:
            temporary.unlink(missing_ok=True)
            raise storage_error(e, f"Rewriting the transaction index {self._file.absolute()}") from e
        self._last_offset = entries[-1].last_offset if entries else None

    def close(self) -> None:
        """Close the file, if open (Kafka: ``close``).  A later :meth:`append` opens it again; until then
        the index reads as empty, as Kafka's does."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def delete_if_exists(self) -> bool:
        """Close and delete the file; ``False`` if it did not exist (Kafka: ``deleteIfExists``)."""
        self._check_writable("delete")
        self.close()
        try:
            self._file.unlink()
        except FileNotFoundError:
            return False
        except OSError as e:
            raise storage_error(e, f"Deleting the transaction index {self._file.absolute()}") from e
        return True

    #: kafkalog's name for it on the offset and time indexes.
    delete = delete_if_exists

    def rename_to(self, file: str | os.PathLike[str]) -> None:
        """Rename the file, if it exists, keeping it open (Kafka: ``renameTo``, an atomic move without a
        directory flush); the new name is kept even if the rename fails."""
        self._check_writable("rename")
        target = Path(file)
        try:
            if self._file.exists():
                os.replace(self._file, target)
        except OSError as e:
            raise storage_error(e, f"Renaming the transaction index {self._file.absolute()} to {target}") from e
        finally:
            self._file = target

    def truncate_to(self, offset: int) -> None:
        """Remove every entry from the first whose last offset is ``>= offset`` (Kafka: ``truncateTo``)."""
        self._check_writable("truncate")
        new_last_offset: int | None = None
        for txn, position in self._entries():
            if txn.last_offset >= offset:
                self._truncate_channel(position)
                self._last_offset = new_last_offset
                return
            new_last_offset = txn.last_offset

    def all_aborted_txns(self) -> list[AbortedTxn]:
        """Every entry, in file order (Kafka: ``allAbortedTxns``)."""
        return [txn for txn, _position in self._entries()]

    def collect_aborted_txns(self, fetch_offset: int, upper_bound_offset: int) -> TxnIndexSearchResult:
        """The aborted transactions that overlap ``[fetch_offset, upper_bound_offset)`` (Kafka:
        ``collectAbortedTxns``): those that end at or after ``fetch_offset`` and begin before the upper
        bound.  The search is complete, and stops, at the first entry whose last stable offset is at or past
        the upper bound."""
        aborted: list[AbortedTxn] = []
        for txn, _position in self._entries():
            if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound_offset:
                aborted.append(txn)
            if txn.last_stable_offset >= upper_bound_offset:
                return TxnIndexSearchResult(aborted, True)
        return TxnIndexSearchResult(aborted, False)

    def sanity_check(self) -> None:
        """Check that no entry ends before the segment starts (Kafka: ``sanityCheck``).

        Raises:
            CorruptIndexError: an entry's last offset is below :attr:`start_offset`.
        """
        name = str(self._file.absolute())
        for chunk in self.entry_chunks():
            sanity_check_entries(chunk, self.start_offset, name)

    def is_empty(self) -> bool:
        """Whether the index holds no whole entry (not in Kafka 3.8.0; a closed index is empty)."""
        return next(self._entries(), None) is None

    # -- kafkalog's: the index read whole, in bounded memory -------------------------------------------

    def _end(self) -> int:
        """Where a walk of the entries ends: the channel's position (Kafka's iterator reads up to it), 0 when
        the file is not open."""
        if self._fd is None:
            return 0
        try:
            return os.lseek(self._fd, 0, os.SEEK_CUR)
        except OSError as e:
            raise KafkaStorageError(f"Failed read position from the transaction index {self._file.absolute()}: "
                                    f"{e}") from e

    def entry_count(self) -> int:
        """How many whole entries a walk reads (those before the channel's position)."""
        return self._end() // ABORTED_TXN_SIZE

    def ends_in_part_entry(self) -> bool:
        """Whether the entries end in part of one (a write cut short), which the walks leave out and after which
        an append would land misaligned."""
        return self._end() % ABORTED_TXN_SIZE != 0

    def entry_chunks(self, chunk_entries: int = CHUNK_ENTRIES) -> Iterator[npt.NDArray[Any]]:
        """Every whole entry, in file order, as rows of :data:`ABORTED_TXN_DTYPE`, at most ``chunk_entries`` at a
        time (the compact form of :meth:`all_aborted_txns`: a reader of the whole index holds a chunk, not an
        object per entry).  The walk ends at the channel's position when it starts.

        Raises:
            TransactionIndexError: an entry of a version this reader does not know.
        """
        fd = self._fd
        if fd is None:
            return
        yield from _read_entry_chunks(fd, self._end(), str(self._file.absolute()), chunk_entries)

    def ignore_file(self) -> None:
        """Read as if the file were not there: no entry (kafkalog's, for a read-only index that fails
        :meth:`sanity_check`, which a read-only open cannot rebuild as a broker's open does; the in-place reader
        of transactions then reads the log's batch headers instead).

        Raises:
            IllegalArgumentError: the index is writable (a writable segment's is rebuilt by recovery).
        """
        if self.writable:
            raise IllegalArgumentError("Only a read-only transaction index ignores its file; a writable one is "
                                       "rebuilt")
        self.close()
        self.file_ignored = True

    # -- the channel ---------------------------------------------------------------------------------

    def _check_writable(self, what: str) -> None:
        if not self.writable:
            raise ReadOnlyError(f"Cannot {what} transaction index {self._file.absolute()}: it was opened read-only")

    def _open_channel(self) -> int:
        """Kafka: ``openChannel``: open (creating) read-write, positioned at the end; read-only, an existing
        file only."""
        try:
            fd = open_regular(self._file, os.O_RDWR | os.O_CREAT if self.writable else os.O_RDONLY)
        except OSError as e:
            raise storage_error(e, f"Opening the transaction index {self._file.absolute()}") from e
        try:
            os.lseek(fd, 0, os.SEEK_END)
        except OSError as e:
            os.close(fd)
            raise storage_error(e, f"Opening the transaction index {self._file.absolute()}") from e
        self._fd = fd
        return fd

    def _channel(self) -> int:
        return self._fd if self._fd is not None else self._open_channel()

    def _truncate_channel(self, size: int) -> None:
        """``FileChannel.truncate``: cut the file, and pull the position back to the new end if past it."""
        fd = self._channel()
        try:
            os.ftruncate(fd, size)
            if os.lseek(fd, 0, os.SEEK_CUR) > size:
                os.lseek(fd, size, os.SEEK_SET)
        except OSError as e:
            raise storage_error(e, f"Truncating the transaction index {self._file.absolute()}") from e

    def _entries(self) -> Iterator[tuple[AbortedTxn, int]]:
        """Each whole entry and its byte position, up to the channel's position when the walk began (Kafka:
        ``iterable``, which asks the position before each entry).

        A reader walks without the log's lock (a fetch's aborted transactions), while the writer appends and
        truncates through the same descriptor, so the walk fixes its end once, first, and a read that comes back
        short ends it at the last whole entry read: a truncation cut the file since.  What it removed (entries
        whose ABORT marker is at or past its offset), and what was appended after it in their place, is past the
        bound of any reader it may cut under, a ``read_committed`` one included, whose last stable offset is at or
        below the high watermark (kafkalog's: Kafka's walk reads the entry from what is left, and fails on the
        bytes that are gone)."""
        fd = self._fd
        if fd is None:
            return
        name = str(self._file.absolute())
        try:
            end = os.lseek(fd, 0, os.SEEK_CUR)
        except OSError as e:
            raise KafkaStorageError(f"Failed read position from the transaction index {name}: {e}") from e
        position = 0
        while True:
            count = min((end - position) // ABORTED_TXN_SIZE, _READ_ENTRIES)
            if count <= 0:
                return
            size = count * ABORTED_TXN_SIZE
            try:
                data = os.pread(fd, size, position)
            except OSError as e:
                raise KafkaStorageError(f"Failed to read from the transaction index {name}: {e}") from e
            whole = len(data) - len(data) % ABORTED_TXN_SIZE
            for at in range(0, whole, ABORTED_TXN_SIZE):
                yield _checked(AbortedTxn.from_bytes(data, at), name), position + at
            if whole < size:
                return
            position += size


def _java_repr(txn: AbortedTxn) -> str:
    """Kafka's ``AbortedTxn.toString``."""
    return (f"AbortedTxn(version={txn.version}, producerId={txn.producer_id}, firstOffset={txn.first_offset}, "
            f"lastOffset={txn.last_offset}, lastStableOffset={txn.last_stable_offset})")

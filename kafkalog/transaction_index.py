"""Aborted transactions (``AbortedTxn``) and the transaction index files (``<offset>.txnindex``) that list them.

Port of ``AbortedTxn``, ``TxnIndexSearchResult`` and ``TransactionIndex`` (storage,
``org.apache.kafka.storage.internals.log``, tag 3.8.0).  :class:`TransactionIndex` is the writable index a
segment owns; :func:`read_aborted_txns` and :func:`parse_aborted_txns` read a broker's file (or its bytes, from
an object store) without opening anything for writing.

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
* ``writable=False`` (as kafkalog's offset and time indexes have it) opens an existing file read-only and never
  creates, changes, renames or deletes one: those calls raise :class:`~kafkalog.errors.ReadOnlyError`.  This is
  how a read-only log holds a broker's index.

Like Kafka's, a :class:`TransactionIndex` is not thread-safe: its segment's owner (the log, under its lock)
serialises every call.
"""

from __future__ import annotations

import itertools
import os
import struct
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

from ._common import INT64_MAX, INT64_MIN
from .errors import CorruptIndexError, IllegalArgumentError, KafkaLogError, KafkaStorageError, ReadOnlyError
from .fsutil import fsync_dir, open_regular, storage_error

__all__ = [
    "ABORTED_TXN_SIZE",
    "ABORTED_TXN_VERSION",
    "REWRITE_SUFFIX",
    "AbortedTxn",
    "TransactionIndex",
    "TransactionIndexError",
    "TxnIndexSearchResult",
    "check_aborted_txns",
    "parse_aborted_txns",
    "read_aborted_txns",
]

ABORTED_TXN_VERSION = 0
_ENTRY = struct.Struct(">hqqqq")
ABORTED_TXN_SIZE = _ENTRY.size
#: The most entries :func:`read_aborted_txns` reads from one file; a broker's hold a handful per segment.
MAX_ENTRIES = 1 << 24
#: What :meth:`TransactionIndex.rewrite` writes before it renames: ``<base>.txnindex.tmp``.
REWRITE_SUFFIX = ".tmp"
#: Entries read by one ``pread`` when walking an open index (Kafka reads one entry per call).
_READ_ENTRIES = 1024


class TransactionIndexError(KafkaLogError, ValueError):
    """An entry of a version this reader does not know."""


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
        raise TransactionIndexError(
            f"Unexpected aborted transaction version {entry.version} in transaction index "
            f"{name}, current version is {ABORTED_TXN_VERSION}")
    return entry


def read_aborted_txns(path: str | os.PathLike[str]) -> list[AbortedTxn]:
    """Every whole entry of a ``.txnindex`` file (Kafka: ``TransactionIndex.allAbortedTxns``), read-only."""
    file = Path(path)
    with os.fdopen(open_regular(file, os.O_RDONLY), "rb") as f:
        data = f.read(min(os.fstat(f.fileno()).st_size, MAX_ENTRIES * ABORTED_TXN_SIZE))
    return parse_aborted_txns(data, str(file.absolute()))


def parse_aborted_txns(data: bytes, name: str) -> list[AbortedTxn]:
    """Every whole entry of the bytes of a ``.txnindex`` named ``name`` (at most :data:`MAX_ENTRIES`)."""
    return [_checked(AbortedTxn.from_bytes(data, at), name)
            for at in range(0, min(len(data) // ABORTED_TXN_SIZE, MAX_ENTRIES) * ABORTED_TXN_SIZE,
                            ABORTED_TXN_SIZE)]


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
        :func:`~kafkalog.producer_state.log_updates.complete_txn_index`).  A ``.txnindex.tmp`` left by a crash is
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
        check_aborted_txns((txn for txn, _position in self._entries()), self.start_offset, self._file.absolute())

    def is_empty(self) -> bool:
        """Whether the index holds no whole entry (not in Kafka 3.8.0; a closed index is empty)."""
        return next(self._entries(), None) is None

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
        """Each whole entry and its byte position, up to the channel's position (Kafka: ``iterable``)."""
        fd = self._fd
        if fd is None:
            return
        name = str(self._file.absolute())
        position = 0
        while True:
            try:
                end = os.lseek(fd, 0, os.SEEK_CUR)
            except OSError as e:
                raise KafkaStorageError(f"Failed read position from the transaction index {name}: {e}") from e
            count = min((end - position) // ABORTED_TXN_SIZE, _READ_ENTRIES)
            if count <= 0:
                return
            size = count * ABORTED_TXN_SIZE
            try:
                data = os.pread(fd, size, position)
            except OSError as e:
                raise KafkaStorageError(f"Failed to read from the transaction index {name}: {e}") from e
            if len(data) < size:
                raise KafkaStorageError(
                    f"Failed to read from the transaction index {name}: {size} bytes expected at "
                    f"position {position}, {len(data)} read (the file shrank)")
            for at in range(0, size, ABORTED_TXN_SIZE):
                yield _checked(AbortedTxn.from_bytes(data, at), name), position + at
            position += size


def _java_repr(txn: AbortedTxn) -> str:
    """Kafka's ``AbortedTxn.toString``."""
    return (f"AbortedTxn(version={txn.version}, producerId={txn.producer_id}, firstOffset={txn.first_offset}, "
            f"lastOffset={txn.last_offset}, lastStableOffset={txn.last_stable_offset})")


def check_aborted_txns(txns: Iterable[AbortedTxn], start_offset: int, name: object) -> None:
    """:meth:`TransactionIndex.sanity_check` of entries read elsewhere (an index object at a URL), the one rule
    for both: no entry may end below ``start_offset``, the segment's base offset; ``name`` names the index.

    Raises:
        CorruptIndexError: an entry's last offset is below ``start_offset``.
    """
    for txn in txns:
        if txn.last_offset < start_offset:
            raise CorruptIndexError(f"Last offset of aborted transaction {_java_repr(txn)} in index {name} "
                                    f"is less than start offset {start_offset}")

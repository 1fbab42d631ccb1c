"""Producer-state snapshot files (``<offset>.snapshot``): reading, writing and naming them.

Ports of (Apache Kafka, tag 3.8.0, ``storage/src/main/java/org/apache/kafka/storage/internals/log/``):
``ProducerStateManager.readSnapshot``, ``writeSnapshot``, ``listSnapshotFiles`` and ``isSnapshotFile``
(:func:`scan_snapshot`, :func:`read_snapshot`, :func:`write_snapshot`, :func:`list_snapshot_files`), and
``SnapshotFile.java`` (:class:`SnapshotFile`).  ``kafkalog dump``, ``kafkalog verify``, the read-only readers
and the writable load all read snapshots through :func:`scan_snapshot`.

A snapshot is named for the producer-state end offset it was taken at (20 digits, ``.snapshot``): it holds the
state of every producer after the records below that offset.  Layout (schema version 1, big-endian)::

    0  version        int16   1
    2  crc            uint32  CRC-32C of every byte from offset 6 to the end
    6  entry count    int32
    10 entries        46 bytes each (:data:`SNAPSHOT_ENTRY`):
                        producerId int64, producerEpoch int16, lastSequence int32, lastOffset int64,
                        offsetDelta int32, timestamp int64, coordinatorEpoch int32,
                        currentTxnFirstOffset int64 (-1: no open transaction)

Only the last retained batch of a producer is written (``lastSequence``, ``lastOffset``, ``offsetDelta``;
``lastOffset`` -1 when the producer has no batch, only a marker); ``timestamp`` is the producer's last
timestamp.  Entries follow the iteration order of the broker's ``HashMap<Long, ProducerStateEntry>``, which
:func:`java_hash_map_order` reproduces, so a state rebuilt from a broker's snapshot is written back byte for
byte.  A broker never writes a producer id twice; a file that holds one twice is read as Kafka's loader reads
it (:class:`SnapshotTransactions`).

Reading in bounded memory.  The entries are decoded as rows of a numpy structured array over the file's own
bytes (:data:`SNAPSHOT_ENTRY`, 46 bytes a row: the file's size, not a Python object per field), a chunk of at
most :data:`SNAPSHOT_CHUNK_ENTRIES` rows (3 MiB) at a time, the CRC computed as the chunks go by.  Each reader
keeps only the rows it needs (``select``), and Python objects are made only for those:

- ``kafkalog verify`` keeps none: one chunk at a time;
- ``kafkalog dump`` prints each chunk as it comes (:func:`iter_snapshot`): a file of more than one chunk is
  read twice, the CRC checked first, so a corrupt snapshot prints nothing, as Kafka's tool prints nothing;
- a read-only reader keeps the producers with an open transaction, and any later entry of theirs
  (:func:`read_snapshot_transactions`);
- a writable load reads every row into one array, the file's size, and keeps it, indexed, for the producers not
  expired (the manager's :class:`~kafkalog.producer_state.producer_map.ProducerMap`, which makes an entry object
  only for a producer the log touches).

Caps: a file larger than :data:`MAX_SNAPSHOT_BYTES` (1 GiB, 23 million producers; a broker's hold a few MB) is
refused unread.  Reading one costs a chunk (3 MiB) plus the rows kept: nothing more for ``verify`` and ``dump``;
46 bytes (and 8 for its id) a producer with an open transaction for a read-only reader; for a writable load the
file's size in rows, at most 1 GiB, plus 25 bytes a producer for the index (about 40 more while it is built):
at worst 1.6 GiB kept, 2.5 GiB at the peak.

Where kafkalog differs from Kafka:

- bytes after the last entry are refused, once the CRC (which covers them) has matched: Kafka's schema read
  stops after the entries and ignores them;
- a file larger than :data:`MAX_SNAPSHOT_BYTES` is refused (Kafka reads any file whole).
"""

from __future__ import annotations

import contextlib
import logging
import os
import struct
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from .. import _impl
from .._common import INT64_MAX, INT64_MIN
from ..errors import CorruptSnapshotError, IllegalArgumentError
from ..filenames import DELETED_FILE_SUFFIX, PRODUCER_SNAPSHOT_FILE_SUFFIX, offset_from_file_name, replace_suffix
from ..fsutil import open_regular, storage_error
from .entry import BatchMetadata, ProducerStateEntry

__all__ = [
    "MAX_SNAPSHOT_BYTES",
    "PRODUCER_SNAPSHOT_VERSION",
    "SNAPSHOT_CHUNK_ENTRIES",
    "SNAPSHOT_ENTRY",
    "ReadRange",
    "RowSelector",
    "SnapshotFile",
    "SnapshotTransactions",
    "canonicalize_rows",
    "entries_of_rows",
    "expired_rows",
    "is_expired",
    "iter_snapshot",
    "java_hash_map_order",
    "java_hash_map_positions",
    "list_snapshot_files",
    "open_snapshot_file",
    "parse_snapshot",
    "read_snapshot",
    "read_snapshot_rows",
    "read_snapshot_transactions",
    "rows_of_entries",
    "scan_snapshot",
    "serialize_rows",
    "serialize_snapshot",
    "snapshot_transactions",
    "transaction_rows",
    "write_snapshot",
    "write_snapshot_rows",
]

logger = logging.getLogger(__name__)

PRODUCER_SNAPSHOT_VERSION = 1
_HEADER = struct.Struct(">hIi")
_ENTRY = struct.Struct(">qhiqiqiq")
_CRC_OFFSET = 2
_PRODUCER_ENTRIES_OFFSET = 6
#: Bigger snapshots than this are refused unread (a broker's hold a few MB at most); see the module docstring.
MAX_SNAPSHOT_BYTES = 1 << 30
#: One entry of a snapshot as a row (Kafka: ``PRODUCER_SNAPSHOT_ENTRY_SCHEMA``), big-endian as on disk.
SNAPSHOT_ENTRY = np.dtype([
    ("producer_id", ">i8"), ("producer_epoch", ">i2"), ("last_sequence", ">i4"), ("last_offset", ">i8"),
    ("offset_delta", ">i4"), ("timestamp", ">i8"), ("coordinator_epoch", ">i4"),
    ("current_txn_first_offset", ">i8")])
#: The most entries read with one read (3 MiB); read when a read starts.
SNAPSHOT_CHUNK_ENTRIES = 1 << 16

#: Bytes ``[start, end)`` of a file or an object; fewer only where it ends.
ReadRange = Callable[[int, int], bytes]
#: Which rows of a chunk a reader keeps.
RowSelector = Callable[[npt.NDArray[Any]], npt.NDArray[np.bool_]]

assert SNAPSHOT_ENTRY.itemsize == _ENTRY.size


def _schema_error(problem: str) -> CorruptSnapshotError:
    return CorruptSnapshotError(f"Snapshot failed schema validation: {problem}")


def _open(read: ReadRange, size: int, name: str) -> tuple[int, Iterator[npt.NDArray[Any]]]:
    """The number of entries of the snapshot ``name`` of ``size`` bytes, and its entries as rows, a chunk at a
    time, read through ``read``.

    The checks come in Kafka's order (``readSnapshot``): the schema (a whole header, a count that is not
    negative and whose entries the file holds), the version, the CRC; then kafkalog's own, no bytes after the
    entries.  The header's are made here; the CRC's and the trailing bytes' after the last chunk: a caller acts
    on the rows only once the iteration has ended without an error.
    """
    if size > MAX_SNAPSHOT_BYTES:
        raise CorruptSnapshotError(f"Snapshot {name} is {size} bytes, more than a producer snapshot can hold "
                                   f"({MAX_SNAPSHOT_BYTES})")
    chunk_bytes = SNAPSHOT_CHUNK_ENTRIES * _ENTRY.size
    first = read(0, min(size, _HEADER.size + chunk_bytes))
    if len(first) < _HEADER.size:
        raise _schema_error(f"{name} is {len(first)} bytes, shorter than the {_HEADER.size}-byte header")
    version, stored_crc, count = _HEADER.unpack_from(first)
    if count < 0:
        raise _schema_error(f"Array size {count} cannot be negative, in {name}")
    needed = _HEADER.size + count * _ENTRY.size
    if size < needed:
        raise _schema_error(f"{count} entries need {needed} bytes, the file {name} has {size}")
    if version != PRODUCER_SNAPSHOT_VERSION:
        raise CorruptSnapshotError(f"Snapshot contained an unknown file version {version}")

    def chunks() -> Iterator[npt.NDArray[Any]]:
        buffer, buffer_at, done = first, 0, 0
        crc = int(_impl.core.crc32c(memoryview(buffer)[_PRODUCER_ENTRIES_OFFSET:]))
        while True:
            # Every read but the last is whole entries long, so each buffer after the first starts at an entry.
            rows = min(count - done, (buffer_at + len(buffer) - _HEADER.size) // _ENTRY.size - done)
            if rows > 0:
                yield np.frombuffer(buffer, SNAPSHOT_ENTRY, rows, _HEADER.size + done * _ENTRY.size - buffer_at)
                done += rows
            at = buffer_at + len(buffer)
            if at >= size:
                break
            end = min(size, at + chunk_bytes)
            buffer = read(at, end)
            if len(buffer) != end - at:
                raise _schema_error(f"{name} was cut short while it was read: {at + len(buffer)} bytes of the "
                                    f"{size} it had")
            buffer_at = at
            crc = int(_impl.core.crc32c(buffer, crc))
        if crc != stored_crc:
            raise CorruptSnapshotError(f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {stored_crc}. "
                                       f"Computed crc: {crc}")
        if size > needed:
            raise _schema_error(f"{size - needed} bytes after the {count} entries of {name}")

    return count, chunks()


def scan_snapshot(read: ReadRange, size: int, name: str, select: RowSelector | None = None) -> npt.NDArray[Any]:
    """The entries of a snapshot as :data:`SNAPSHOT_ENTRY` rows, those ``select`` keeps of each chunk (all
    when it is ``None``), in file order (Kafka: ``ProducerStateManager.readSnapshot``).  ``read`` reads the file
    or object ``name`` of ``size`` bytes.  Memory: a chunk and the rows kept (all of them are read into one
    array, the file's size).

    Raises:
        CorruptSnapshotError: a file larger than :data:`MAX_SNAPSHOT_BYTES`, shorter than its header, with a
            negative count or fewer bytes than its entries need, an unknown version, a CRC that does not match,
            or bytes after its entries; with Kafka's wording where Kafka has one.
    """
    count, chunks = _open(read, size, name)
    if select is None:
        if count <= SNAPSHOT_CHUNK_ENTRIES:
            one = list(chunks)  # one chunk at most: its rows are a view of the bytes read
            return one[0] if one else np.empty(0, SNAPSHOT_ENTRY)
        every = np.empty(count, SNAPSHOT_ENTRY)
        done = 0
        for rows in chunks:
            every[done:done + len(rows)] = rows
            done += len(rows)
        return every
    kept: list[npt.NDArray[Any]] = []
    for rows in chunks:
        mask = select(rows)
        if mask.any():
            kept.append(rows[mask])
    if len(kept) == 1:
        return kept[0]
    return np.concatenate(kept) if kept else np.empty(0, SNAPSHOT_ENTRY)


def iter_snapshot(read: ReadRange, size: int, name: str) -> Iterator[npt.NDArray[Any]]:
    """The entries of a snapshot as chunks of rows, once the whole file has been checked: a file of one chunk
    is read once; a larger one twice, the first time for the checks alone (memory: one chunk).  A file changed
    between the two reads fails the second read's checks, after some chunks were yielded.

    Raises:
        CorruptSnapshotError: see :func:`scan_snapshot`, before any chunk is yielded.
    """
    if size <= _HEADER.size + SNAPSHOT_CHUNK_ENTRIES * _ENTRY.size:
        rows = scan_snapshot(read, size, name)
        if len(rows):
            yield rows
        return
    scan_snapshot(read, size, name, _keep_none)
    yield from _open(read, size, name)[1]


def _keep_none(rows: npt.NDArray[Any]) -> npt.NDArray[np.bool_]:
    return np.zeros(len(rows), dtype=np.bool_)


@contextlib.contextmanager
def open_snapshot_file(path: str | os.PathLike[str]) -> Iterator[tuple[ReadRange, int]]:
    """A local file's ``read`` and size, for :func:`scan_snapshot` and :func:`iter_snapshot`: ``pread`` on one
    descriptor, so every read is of the same file, whatever is renamed over it meanwhile.

    Raises:
        KafkaStorageError: the path is not a regular file.
        FileNotFoundError: it does not exist.
    """
    fd = open_regular(path, os.O_RDONLY)
    try:
        def read(start: int, end: int) -> bytes:
            parts = []
            while start < end:
                part = os.pread(fd, end - start, start)
                if not part:
                    break
                parts.append(part)
                start += len(part)
            return parts[0] if len(parts) == 1 else b"".join(parts)

        yield read, os.fstat(fd).st_size
    finally:
        os.close(fd)


def read_snapshot_rows(path: str | os.PathLike[str], select: RowSelector | None = None) -> npt.NDArray[Any]:
    """:func:`scan_snapshot` of a local file.

    Raises:
        CorruptSnapshotError: see :func:`scan_snapshot`.
        KafkaStorageError: the path is not a regular file.
        FileNotFoundError: it does not exist.
    """
    with open_snapshot_file(path) as (read, size):
        return scan_snapshot(read, size, str(path), select)


def read_snapshot(path: str | os.PathLike[str]) -> list[ProducerStateEntry]:
    """The entries of a producer snapshot file as objects (Kafka: ``ProducerStateManager.readSnapshot``): an
    object an entry, for the callers that want them all (a snapshot of a few producers; the loaders keep rows).

    Raises:
        CorruptSnapshotError: see :func:`scan_snapshot`.
    """
    return entries_of_rows(read_snapshot_rows(path))


def parse_snapshot(data: bytes, file: str) -> list[ProducerStateEntry]:
    """The entries of the bytes of a producer snapshot named ``file``, as :func:`read_snapshot` reads a file."""
    return entries_of_rows(scan_snapshot(lambda start, end: data[start:end], len(data), file))


def entries_of_rows(rows: npt.NDArray[Any]) -> list[ProducerStateEntry]:
    """A :class:`~kafkalog.producer_state.entry.ProducerStateEntry` for each row, as ``readSnapshot`` makes
    them: a batch when ``lastOffset`` is not negative, an open transaction when ``currentTxnFirstOffset`` is
    not."""
    entries = []
    for start in range(0, len(rows), SNAPSHOT_CHUNK_ENTRIES):
        for (producer_id, epoch, last_seq, last_offset, offset_delta, timestamp, coordinator_epoch,
             txn_first) in rows[start:start + SNAPSHOT_CHUNK_ENTRIES].tolist():
            metadata = BatchMetadata(last_seq, last_offset, offset_delta, timestamp) if last_offset >= 0 else None
            entries.append(ProducerStateEntry(producer_id, epoch, coordinator_epoch, timestamp,
                                              txn_first if txn_first >= 0 else None, metadata))
    return entries


def rows_of_entries(entries: Iterable[ProducerStateEntry]) -> npt.NDArray[Any]:
    """The rows ``writeSnapshot`` writes for ``entries``, in the order given: the last batch of each, or -1 and 0
    fields with none, and -1 for no open transaction.

    Raises:
        IllegalArgumentError: an entry holds a value its field cannot (an epoch past int16, say).
    """
    body = bytearray()
    for entry in entries:
        fields = (entry.producer_id, entry.producer_epoch, entry.last_seq, entry.last_data_offset,
                  entry.last_offset_delta, entry.last_timestamp, entry.coordinator_epoch,
                  -1 if entry.current_txn_first_offset is None else entry.current_txn_first_offset)
        try:
            body += _ENTRY.pack(*fields)
        except struct.error as e:
            # Kafka's Struct would throw at the same place: a field wider than its schema type.
            raise IllegalArgumentError(f"Cannot write {entry} to a producer snapshot: a field does not fit its "
                                       f"type (int64 ids, offsets and timestamps; int16 epoch; int32 sequence, "
                                       f"offset delta and coordinator epoch): {e}") from None
    return np.frombuffer(bytes(body), SNAPSHOT_ENTRY)


def canonicalize_rows(rows: npt.NDArray[Any]) -> None:
    """Make ``rows`` (writable) what ``writeSnapshot`` writes for the entries ``readSnapshot`` makes of them, in
    place: a row with a negative last offset has no batch, so its last sequence and offset are written -1 and its
    offset delta 0; a negative transaction offset is none, written -1."""
    no_batch = rows["last_offset"] < 0
    rows["last_sequence"][no_batch] = -1
    rows["last_offset"][no_batch] = -1
    rows["offset_delta"][no_batch] = 0
    rows["current_txn_first_offset"][rows["current_txn_first_offset"] < 0] = -1


def _header_and_crc(rows: npt.NDArray[Any]) -> tuple[bytes, memoryview]:
    """The header of a snapshot of ``rows`` and the rows' bytes (Kafka: the buffer ``writeSnapshot`` builds: the
    schema's struct with a zero CRC, then the CRC-32C of bytes 6.. written in place)."""
    body = np.ascontiguousarray(rows, dtype=SNAPSHOT_ENTRY).view(np.uint8).data
    count = struct.pack(">i", len(rows))
    crc = int(_impl.core.crc32c(body, int(_impl.core.crc32c(count))))
    return struct.pack(">hI", PRODUCER_SNAPSHOT_VERSION, crc) + count, body


def serialize_rows(rows: npt.NDArray[Any]) -> bytes:
    """The bytes of a snapshot of ``rows``, in the order given."""
    header, body = _header_and_crc(rows)
    return header + bytes(body)


def serialize_snapshot(entries: Iterable[ProducerStateEntry]) -> bytes:
    """The bytes of a snapshot of ``entries``, in the order given (Kafka: the buffer ``writeSnapshot`` builds).

    Raises:
        IllegalArgumentError: an entry holds a value its field cannot (an epoch past int16, say).
    """
    return serialize_rows(rows_of_entries(entries))


def write_snapshot(path: str | os.PathLike[str], entries: Iterable[ProducerStateEntry], sync: bool) -> None:
    """Write a snapshot of ``entries`` to ``path``, fsynced when ``sync`` (Kafka: ``writeSnapshot``).

    Raises:
        IllegalArgumentError: an entry holds a value its field cannot.
        KafkaStorageError: the file could not be written (a full disk, a directory in the way), naming it.
    """
    write_snapshot_rows(path, rows_of_entries(entries), sync)


def write_snapshot_rows(path: str | os.PathLike[str], rows: npt.NDArray[Any], sync: bool) -> None:
    """Write a snapshot of ``rows`` (:data:`SNAPSHOT_ENTRY`, in the order given) to ``path``, fsynced when
    ``sync`` (Kafka: ``writeSnapshot``).

    Kafka opens the file with ``CREATE, WRITE`` and no ``TRUNCATE_EXISTING``, so a longer file already there
    keeps its tail and fails its CRC when read; kafkalog truncates it, so the file holds this snapshot only.

    Raises:
        KafkaStorageError: the file could not be written (a full disk, a directory in the way), naming it.
    """
    header, body = _header_and_crc(rows)
    try:
        fd = open_regular(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        try:
            for part in (memoryview(header), body):
                while part:
                    part = part[os.write(fd, part):]
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as e:
        # A partial file would be read as a corrupt snapshot (and deleted) at the next load; none is cleaner.
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise storage_error(e, f"Error while writing producer snapshot {path}") from e


# -- what a load keeps -----------------------------------------------------------------------------------------

def expired_rows(rows: npt.NDArray[Any], current_time_ms: int, expiration_ms: int) -> npt.NDArray[np.bool_]:
    """Which rows are of producers a load forgets (Kafka: ``ProducerStateManager.isProducerExpired``, the rule
    of :meth:`~kafkalog.producer_state.manager.ProducerStateManager.remove_expired_producers`): no open
    transaction, and a last timestamp ``expiration_ms`` or more before ``current_time_ms``."""
    # now - timestamp >= expiration, as a bound on the timestamp: no int64 subtraction to overflow.
    bound = current_time_ms - expiration_ms
    if bound >= INT64_MAX:
        old = np.ones(len(rows), dtype=np.bool_)
    elif bound < INT64_MIN:
        old = np.zeros(len(rows), dtype=np.bool_)
    else:
        old = rows["timestamp"] <= bound
    result: npt.NDArray[np.bool_] = old & (rows["current_txn_first_offset"] < 0)
    return result


def is_expired(entry: ProducerStateEntry, current_time_ms: int, expiration_ms: int) -> bool:
    """:func:`expired_rows` of one entry (Kafka: ``ProducerStateManager.isProducerExpired``)."""
    return (entry.current_txn_first_offset is None
            and current_time_ms - entry.last_timestamp >= expiration_ms)


class SnapshotTransactions(NamedTuple):
    """The transactions a snapshot leaves open, as ``ProducerStateManager.loadFromSnapshot`` leaves them: the
    one decision the writable load and the read-only readers share.

    The load puts each entry in turn (its expired ones left out) into the producer map, where a later entry of a
    producer id replaces an earlier one, and each entry's open transaction into ``ongoingTxns``, by first offset.
    So with a producer id written twice, both of its transactions are open (and the earlier holds the last
    stable offset back), while the producer's own open transaction, the one its marker will close, is its last
    entry's.

    ``ongoing``: first offset -> producer id, every transaction open (Kafka: ``ongoingTxns``).
    ``current``: producer id -> the first offset of the transaction its last entry has open, for the producers
    that have one.
    """

    ongoing: dict[int, int]
    current: dict[int, int]


def snapshot_transactions(rows: npt.NDArray[Any], kept: npt.NDArray[np.bool_] | None = None) -> SnapshotTransactions:
    """The :class:`SnapshotTransactions` of a snapshot's rows in file order, those ``kept`` keeps (the ones not
    expired; all by default): all of a file's rows, or those :func:`transaction_rows` keeps."""
    txn = rows["current_txn_first_offset"]
    with_txn = txn >= 0
    ongoing: dict[int, int] = {}
    current: dict[int, int] = {}
    if not with_txn.any():
        return SnapshotTransactions(ongoing, current)
    # Only producers that ever have a transaction matter, and of them every entry (a later one may have none).
    relevant = with_txn | np.isin(rows["producer_id"], rows["producer_id"][with_txn])
    if kept is not None:
        relevant &= kept
    for producer_id, first in zip(rows["producer_id"][relevant].tolist(), txn[relevant].tolist(), strict=True):
        if first >= 0:
            ongoing[first] = producer_id
            current[producer_id] = first
        else:
            current.pop(producer_id, None)
    return SnapshotTransactions(ongoing, current)


def transaction_rows(current_time_ms: int, expiration_ms: int) -> RowSelector:
    """A selector of the rows :func:`snapshot_transactions` needs, chunk after chunk: the entries with an open
    transaction and, of their producers, every later entry not expired; memory 46 bytes a row kept and 8 a
    producer with a transaction."""
    seen = np.empty(0, dtype=np.int64)

    def select(rows: npt.NDArray[Any]) -> npt.NDArray[np.bool_]:
        nonlocal seen
        with_txn: npt.NDArray[np.bool_] = rows["current_txn_first_offset"] >= 0
        if with_txn.any():
            seen = np.union1d(seen, rows["producer_id"][with_txn].astype(np.int64))
        if not len(seen):
            return with_txn
        later: npt.NDArray[np.bool_] = np.isin(rows["producer_id"], seen) & ~expired_rows(rows, current_time_ms,
                                                                                          expiration_ms)
        return with_txn | later

    return select


def read_snapshot_transactions(read: ReadRange, size: int, name: str, current_time_ms: int,
                               expiration_ms: int) -> SnapshotTransactions:
    """The transactions a snapshot leaves open (:class:`SnapshotTransactions`), read keeping only the rows they
    need (:func:`transaction_rows`): what a read-only reader takes of a snapshot.

    Raises:
        CorruptSnapshotError: see :func:`scan_snapshot`.
    """
    return snapshot_transactions(scan_snapshot(read, size, name, transaction_rows(current_time_ms, expiration_ms)))


# -- the order of Java's HashMap --------------------------------------------------------------------------

def java_hash_map_positions(producer_ids: npt.NDArray[np.int64], ranks: npt.NDArray[np.int64],
                            largest_size: int) -> npt.NDArray[np.intp]:
    """The order (indices into ``producer_ids``) in which a Java ``HashMap<Long, ...>`` that once held
    ``largest_size`` entries iterates these keys, ``ranks`` giving their order of insertion: by table slot, then
    by insertion within a slot.

    A ``HashMap`` starts with 16 slots and doubles whenever it holds more than 3/4 of them; it never
    shrinks, not even on ``clear``.  A resize keeps the order within a slot, so within each slot the order is
    the order of insertion (a key removed and put again goes last).  Slots that Java turns into trees (8
    colliding keys in a table of 64 or more) may iterate otherwise; producer ids, handed out in sequence, do not
    collide so.
    """
    capacity = 16
    while max(largest_size, len(producer_ids)) > capacity * 3 // 4:
        capacity *= 2
    unsigned = np.asarray(producer_ids, dtype=np.int64).view(np.uint64)
    folded = (unsigned ^ (unsigned >> np.uint64(32))) & np.uint64(0xFFFF_FFFF)  # Long.hashCode
    slots = (folded ^ (folded >> np.uint64(16))) & np.uint64(capacity - 1)  # HashMap.hash, then the table index
    order: npt.NDArray[np.intp] = np.lexsort((ranks, slots))
    return order


def java_hash_map_order(producers: Mapping[int, ProducerStateEntry], largest_size: int) -> list[ProducerStateEntry]:
    """``producers`` (a mapping in insertion order) in the order a Java ``HashMap<Long, ...>`` that once held
    ``largest_size`` entries iterates them (:func:`java_hash_map_positions`)."""
    items = list(producers.items())
    producer_ids = np.fromiter((producer_id for producer_id, _ in items), dtype=np.int64, count=len(items))
    order = java_hash_map_positions(producer_ids, np.arange(len(items), dtype=np.int64), largest_size)
    return [items[i][1] for i in order.tolist()]


class SnapshotFile:
    """A snapshot file and the offset it is named for (Kafka: ``SnapshotFile``).

    ``file`` follows the file through :meth:`update_parent_dir` and :meth:`rename_to_delete`.
    """

    __slots__ = ("file", "offset")

    def __init__(self, file: str | os.PathLike[str], offset: int | None = None) -> None:
        self.file = Path(file)
        self.offset = offset_from_file_name(self.file.name) if offset is None else offset

    def delete_if_exists(self) -> bool:
        """Delete the file; whether it was there (Kafka: ``deleteIfExists``)."""
        try:
            self.file.unlink()
        except FileNotFoundError:
            logger.info("Failed to delete producer state snapshot %s because it does not exist.",
                        self.file.absolute())
            return False
        except OSError as e:
            raise storage_error(e, f"Error while deleting producer snapshot {self.file}") from e
        logger.info("Deleted producer state snapshot %s", self.file.absolute())
        return True

    def update_parent_dir(self, parent_dir: str | os.PathLike[str]) -> None:
        """The file is now in ``parent_dir`` (the log dir was renamed) (Kafka: ``updateParentDir``)."""
        self.file = Path(parent_dir) / self.file.name

    def rename_to_delete(self) -> None:
        """Rename the file with the ``.deleted`` suffix, for deletion later (Kafka: ``renameToDelete``).

        ``file`` names the renamed file afterwards even if the rename fails, as in Kafka's ``finally``.

        Raises:
            FileNotFoundError: the file is gone (Kafka: ``NoSuchFileException``).
        """
        renamed = replace_suffix(self.file, "", DELETED_FILE_SUFFIX)
        try:
            os.replace(self.file, renamed)
        finally:
            self.file = renamed

    def __repr__(self) -> str:
        return f"SnapshotFile(offset={self.offset}, file={self.file})"


def _is_snapshot_file(path: Path) -> bool:
    return path.is_file() and path.name.endswith(PRODUCER_SNAPSHOT_FILE_SUFFIX)


def list_snapshot_files(directory: str | os.PathLike[str]) -> list[SnapshotFile]:
    """The snapshot files of ``directory``, in no particular order; none when it is not a directory (Kafka:
    ``listSnapshotFiles``).

    A ``*.snapshot`` file whose name is not an offset (Kafka's ``Long.parseLong`` throws on it) is skipped with
    a warning rather than failing the whole listing.
    """
    folder = Path(directory)
    if not folder.is_dir():
        return []
    found = []
    for path in folder.iterdir():
        if not _is_snapshot_file(path):
            continue
        try:
            found.append(SnapshotFile(path))
        except ValueError as e:
            logger.warning("Ignoring %s, not named for an offset: %s", path, e)
    return found

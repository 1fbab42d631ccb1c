"""Producer-state snapshot files (``<offset>.snapshot``): reading, writing and naming them.

Ports of (Apache Kafka, tag 3.8.0, ``storage/src/main/java/org/apache/kafka/storage/internals/log/``):
``ProducerStateManager.readSnapshot``, ``writeSnapshot``, ``listSnapshotFiles`` and ``isSnapshotFile``
(:func:`read_snapshot`, :func:`write_snapshot`, :func:`list_snapshot_files`), and ``SnapshotFile.java``
(:class:`SnapshotFile`).  ``kafkalog dump`` and ``kafkalog verify`` read snapshots through the same parser.

A snapshot is named for the producer-state end offset it was taken at (20 digits, ``.snapshot``): it holds the
state of every producer after the records below that offset.  Layout (schema version 1, big-endian)::

    0  version        int16   1
    2  crc            uint32  CRC-32C of every byte from offset 6 to the end
    6  entry count    int32
    10 entries        46 bytes each:
                        producerId int64, producerEpoch int16, lastSequence int32, lastOffset int64,
                        offsetDelta int32, timestamp int64, coordinatorEpoch int32,
                        currentTxnFirstOffset int64 (-1: no open transaction)

Only the last retained batch of a producer is written (``lastSequence``, ``lastOffset``, ``offsetDelta``;
``lastOffset`` -1 when the producer has no batch, only a marker); ``timestamp`` is the producer's last
timestamp.  Entries follow the iteration order of the broker's ``HashMap<Long, ProducerStateEntry>``, which
:func:`java_hash_map_order` reproduces, so a state rebuilt from a broker's snapshot is written back byte for
byte.
"""

from __future__ import annotations

import contextlib
import logging
import os
import struct
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import NamedTuple

from .. import _impl
from ..errors import CorruptSnapshotError, IllegalArgumentError
from ..filenames import DELETED_FILE_SUFFIX, PRODUCER_SNAPSHOT_FILE_SUFFIX, offset_from_file_name, replace_suffix
from ..fsutil import open_regular, read_regular, storage_error
from .entry import BatchMetadata, ProducerStateEntry

__all__ = [
    "MAX_SNAPSHOT_BYTES",
    "PRODUCER_SNAPSHOT_VERSION",
    "SnapshotFile",
    "SnapshotTransactions",
    "java_hash_map_order",
    "list_snapshot_files",
    "parse_snapshot",
    "read_snapshot",
    "serialize_snapshot",
    "snapshot_transactions",
    "write_snapshot",
]

logger = logging.getLogger(__name__)

PRODUCER_SNAPSHOT_VERSION = 1
_HEADER = struct.Struct(">hIi")
_ENTRY = struct.Struct(">qhiqiqiq")
_CRC_OFFSET = 2
_PRODUCER_ENTRIES_OFFSET = 6
#: Bigger snapshots than this are refused rather than read whole (a broker's hold a few MB at most).
MAX_SNAPSHOT_BYTES = 1 << 30


def read_snapshot(path: str | os.PathLike[str]) -> list[ProducerStateEntry]:
    """The entries of a producer snapshot file (Kafka: ``ProducerStateManager.readSnapshot``).

    Raises :class:`~kafkalog.errors.CorruptSnapshotError` for an unknown version, a CRC mismatch or a size that does not
    match the entry count, with Kafka's wording where Kafka has one.
    """
    file = Path(path)
    size = file.stat().st_size
    if size > MAX_SNAPSHOT_BYTES:
        raise CorruptSnapshotError(f"Snapshot {file} is {size} bytes, more than a producer snapshot can hold")
    return parse_snapshot(read_regular(file), str(file))


def parse_snapshot(data: bytes, file: str) -> list[ProducerStateEntry]:
    """The entries of the bytes of a producer snapshot named ``file`` (:func:`read_snapshot`'s checks)."""
    if len(data) > MAX_SNAPSHOT_BYTES:
        raise CorruptSnapshotError(f"Snapshot {file} is {len(data)} bytes, more than a producer snapshot can hold")
    if len(data) < _HEADER.size:
        raise CorruptSnapshotError(f"Snapshot failed schema validation: {file} is {len(data)} bytes, shorter "
                                   f"than the {_HEADER.size}-byte header")
    version, crc, count = _HEADER.unpack_from(data)
    if version != PRODUCER_SNAPSHOT_VERSION:
        raise CorruptSnapshotError(f"Snapshot contained an unknown file version {version}")
    computed = int(_impl.core.crc32c(memoryview(data)[6:]))
    if crc != computed:
        raise CorruptSnapshotError(f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {crc}. "
                                   f"Computed crc: {computed}")
    expected = _HEADER.size + count * _ENTRY.size if count >= 0 else -1
    if expected != len(data):
        raise CorruptSnapshotError(f"Snapshot failed schema validation: {count} entries need {expected} bytes, "
                                   f"the file {file} has {len(data)}")
    entries = []
    for i in range(count):
        (producer_id, epoch, last_seq, last_offset, offset_delta, timestamp, coordinator_epoch,
         txn_first) = _ENTRY.unpack_from(data, _HEADER.size + i * _ENTRY.size)
        metadata = BatchMetadata(last_seq, last_offset, offset_delta, timestamp) if last_offset >= 0 else None
        entries.append(ProducerStateEntry(producer_id, epoch, coordinator_epoch, timestamp,
                                          txn_first if txn_first >= 0 else None, metadata))
    return entries


def serialize_snapshot(entries: Iterable[ProducerStateEntry]) -> bytes:
    """The bytes of a snapshot of ``entries``, in the order given (Kafka: the buffer ``writeSnapshot`` builds:
    the schema's struct with a zero CRC, then the CRC-32C of bytes 6.. written in place).

    Raises:
        IllegalArgumentError: an entry holds a value its field cannot (an epoch past int16, say).
    """
    body = bytearray(_HEADER.size)
    count = 0
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
        count += 1
    struct.pack_into(">i", body, _PRODUCER_ENTRIES_OFFSET, count)
    crc = int(_impl.core.crc32c(memoryview(body)[_PRODUCER_ENTRIES_OFFSET:]))
    struct.pack_into(">hI", body, 0, PRODUCER_SNAPSHOT_VERSION, crc)
    return bytes(body)


def write_snapshot(path: str | os.PathLike[str], entries: Iterable[ProducerStateEntry], sync: bool) -> None:
    """Write a snapshot of ``entries`` to ``path``, fsynced when ``sync`` (Kafka: ``writeSnapshot``).

    Kafka opens the file with ``CREATE, WRITE`` and no ``TRUNCATE_EXISTING``, so a longer file already there
    keeps its tail and fails its CRC when read; kafkalog truncates it, so the file holds this snapshot only.

    Raises:
        KafkaStorageError: the file could not be written (a full disk, a directory in the way), naming it.
    """
    data = serialize_snapshot(entries)
    try:
        fd = open_regular(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as e:
        # A partial file would be read as a corrupt snapshot (and deleted) at the next load; none is cleaner.
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise storage_error(e, f"Error while writing producer snapshot {path}") from e


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


def snapshot_transactions(entries: Iterable[ProducerStateEntry]) -> SnapshotTransactions:
    """The :class:`SnapshotTransactions` of a snapshot's entries, in file order (Kafka: ``loadProducerEntry`` for
    each)."""
    ongoing: dict[int, int] = {}
    current: dict[int, int] = {}
    for entry in entries:
        first = entry.current_txn_first_offset
        if first is not None:
            ongoing[first] = entry.producer_id
            current[entry.producer_id] = first
        else:
            current.pop(entry.producer_id, None)
    return SnapshotTransactions(ongoing, current)


def _java_long_hash_bucket(key: int, capacity: int) -> int:
    unsigned = key & 0xFFFF_FFFF_FFFF_FFFF
    h = (unsigned ^ (unsigned >> 32)) & 0xFFFF_FFFF  # Long.hashCode
    return (h ^ (h >> 16)) & (capacity - 1)  # HashMap.hash, then the table index


def java_hash_map_order(producers: Mapping[int, ProducerStateEntry], largest_size: int) -> list[ProducerStateEntry]:
    """``producers`` (a dict in insertion order) in the order a Java ``HashMap<Long, ...>`` that once held
    ``largest_size`` entries iterates them: by table slot, then by insertion within a slot.

    A ``HashMap`` starts with 16 slots and doubles whenever it holds more than 3/4 of them; it never
    shrinks, not even on ``clear``.  A resize keeps the order within a slot, so within each slot the order is
    the order of insertion (a key removed and put again goes last, as in a dict).  Slots that Java turns into
    trees (8 colliding keys in a table of 64 or more) may iterate otherwise; producer ids, handed out in
    sequence, do not collide so.
    """
    capacity = 16
    while max(largest_size, len(producers)) > capacity * 3 // 4:
        capacity *= 2
    order = sorted(enumerate(producers.items()), key=lambda item: (_java_long_hash_bucket(item[1][0], capacity),
                                                                 item[0]))
    return [entry for _, (_, entry) in order]


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

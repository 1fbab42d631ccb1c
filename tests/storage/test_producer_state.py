"""Producer-state snapshot files (kafkalog.producer_state.snapshot) against Kafka's
``ProducerStateManager.readSnapshot`` and ``writeSnapshot`` (storage 3.8.0).

The tests below lay snapshots out byte by byte, in Kafka's schema version 1, independently of kafkalog's writer,
and read them back, good and bad; they check that kafkalog writes the same bytes, in the order of Java's
``HashMap``; and they read the empty snapshots of the golden broker directories.  The manager's own tests,
Kafka's ``ProducerStateManagerTest``, are in test_producer_state_manager.py (the golden rewrite is in
tests/golden/test_producer_state_golden.py).
"""

from __future__ import annotations

import struct
from pathlib import Path
from types import ModuleType

import pytest

from kafkalog import _impl
from kafkalog.errors import IllegalArgumentError, KafkaStorageError
from kafkalog.producer_state import (
    BatchMetadata,
    CorruptSnapshotError,
    ProducerStateEntry,
    SnapshotFile,
    list_snapshot_files,
    read_snapshot,
    serialize_snapshot,
    write_snapshot,
)
from kafkalog.producer_state.snapshot import java_hash_map_order
from tests.support.golden_data import SHARAWEIL

_HEADER = struct.Struct(">hIi")
_ENTRY = struct.Struct(">qhiqiqiq")


def snapshot(entries: list[tuple[int, ...]], version: int = 1) -> bytes:
    """A snapshot as ``ProducerStateManager.writeSnapshot`` lays it out: version, CRC-32C of everything after
    the CRC field, entry count, then the entries (producer id, epoch, last sequence, last offset, offset delta,
    timestamp, coordinator epoch, current transaction's first offset)."""
    body = struct.pack(">i", len(entries)) + b"".join(_ENTRY.pack(*e) for e in entries)
    return struct.pack(">hI", version, _impl.core.crc32c(body)) + body


def test_read_snapshot(impl: ModuleType, tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000042.snapshot"
    path.write_bytes(snapshot([(7, 2, 9, 41, 4, 1_700_000_000_000, 3, 38), (8, 0, -1, -1, 0, -1, -1, -1)]))
    assert read_snapshot(path) == [
        ProducerStateEntry(7, 2, 3, 1_700_000_000_000, 38, BatchMetadata(9, 41, 4, 1_700_000_000_000)),
        ProducerStateEntry(8, 0, -1, -1, None, None),
    ]
    assert read_snapshot(path)[0].batch_metadata[-1].first_seq == 5
    # A sequence that wrapped past Integer.MAX_VALUE (DefaultRecordBatch.decrementSequence).
    assert BatchMetadata(2, 100, 5, 0).first_seq == 2**31 - 3


def test_golden_snapshots_are_empty(golden: Path) -> None:
    """The broker-written snapshots of the golden dirs: version 1, a valid CRC, no producer (DETAILS.md)."""
    snapshots = sorted(golden.glob(f"{SHARAWEIL}/**/*.snapshot"))
    assert len(snapshots) == 3
    for path in snapshots:
        assert path.read_bytes()[:2] == b"\x00\x01"
        assert read_snapshot(path) == []


@pytest.mark.parametrize(("mutate", "message"), [
    (lambda data: data[:5], "shorter than the 10-byte header"),
    (lambda data: b"\x00\x02" + data[2:], "unknown file version 2"),
    (lambda data: data[:-1] + bytes([data[-1] ^ 1]), "CRC is no longer valid"),
    (lambda data: data + b"\x00" * 3, "CRC is no longer valid"),
])
def test_bad_snapshots_are_refused(impl: ModuleType, tmp_path: Path, mutate: object, message: str) -> None:
    """Kafka's ``readSnapshot``: an unknown version or a bad CRC is a CorruptSnapshotException."""
    path = tmp_path / "00000000000000000001.snapshot"
    path.write_bytes(mutate(snapshot([(7, 2, 9, 41, 4, 5, 3, -1)])))  # type: ignore[operator]
    with pytest.raises(CorruptSnapshotError, match=message):
        read_snapshot(path)


def test_entry_count_must_match_the_size(impl: ModuleType, tmp_path: Path) -> None:
    """A count the bytes do not hold (negative, or more entries than follow) fails the schema check, even with
    a CRC that matches, instead of reading past the file."""
    for count in (-1, 2, 2**31 - 1):
        body = struct.pack(">i", count) + _ENTRY.pack(7, 2, 9, 41, 4, 5, 3, -1)
        path = tmp_path / f"count{count}.snapshot"
        path.write_bytes(struct.pack(">hI", 1, _impl.core.crc32c(body)) + body)
        with pytest.raises(CorruptSnapshotError, match="failed schema validation"):
            read_snapshot(path)


def test_snapshot_checks_come_in_kafkas_order(impl: ModuleType, tmp_path: Path) -> None:
    """``readSnapshot`` reads the schema first (``Schema.read``: a file cut short fails it, whatever its version or
    CRC), then checks the version, then the CRC.  Bytes after the entries, which Kafka's schema read passes over,
    are refused once the CRC (which covers them) has matched: kafkalog's own check."""
    good = snapshot([(7, 2, 9, 41, 4, 5, 3, -1), (8, 0, -1, -1, 0, -1, -1, -1)])
    path = tmp_path / "00000000000000000001.snapshot"
    for data, message in [
        (b"\x00\x09" + good[2:-1], "failed schema validation: 2 entries need 102 bytes"),  # cut short, version 9
        (b"\x00\x09" + good[2:], "unknown file version 9"),
        (good[:-1] + bytes([good[-1] ^ 1]), "CRC is no longer valid"),
    ]:
        path.write_bytes(data)
        with pytest.raises(CorruptSnapshotError, match=message):
            read_snapshot(path)
    body = good[6:] + b"\x00" * 5
    path.write_bytes(struct.pack(">hI", 1, _impl.core.crc32c(body)) + body)
    with pytest.raises(CorruptSnapshotError, match="5 bytes after the 2 entries"):
        read_snapshot(path)


def test_a_snapshot_of_many_chunks_reads_as_one(impl: ModuleType, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Read a chunk at a time (here 3 entries), a snapshot gives the entries it gives read whole, and a damaged
    byte anywhere fails it before anything is returned or printed (``kafkalog dump`` prints nothing of it, as
    Kafka's tool, whose ``readSnapshot`` throws first, prints nothing)."""
    import io

    from kafkalog.cli import main
    from kafkalog.producer_state import snapshot as snapshot_module

    entries = [(1000 + i, i % 3, i, 10 * i, 1, 1_700_000_000_000 + i, 2, i if i % 4 == 0 else -1) for i in range(11)]
    path = tmp_path / "00000000000000000110.snapshot"
    path.write_bytes(snapshot(entries))
    whole = read_snapshot(path)
    monkeypatch.setattr(snapshot_module, "SNAPSHOT_CHUNK_ENTRIES", 3)
    assert read_snapshot(path) == whole
    assert [e.producer_id for e in whole] == [e[0] for e in entries]
    out = io.StringIO()
    assert main(["--no-progress", "dump", "--files", str(path)], stdout=out, stderr=io.StringIO()) == 0
    assert out.getvalue().count("producerId: ") == 11
    data = path.read_bytes()
    path.write_bytes(data[:-20] + bytes([data[-20] ^ 0x40]) + data[-19:])  # the last chunk's
    with pytest.raises(CorruptSnapshotError, match="CRC is no longer valid"):
        read_snapshot(path)
    out, err = io.StringIO(), io.StringIO()
    assert main(["--no-progress", "dump", "--files", str(path)], stdout=out, stderr=err) != 0
    assert "producerId" not in out.getvalue()
    assert "CRC is no longer valid" in err.getvalue()


def test_write_snapshot_lays_out_kafkas_bytes(impl: ModuleType, tmp_path: Path) -> None:
    """``writeSnapshot``: the last batch of each producer (or -1 / 0 fields with none), the producer's last
    timestamp, the open transaction's first offset or -1, CRC-32C over bytes 6.."""
    with_batch = ProducerStateEntry(7, 2, 3, 1_700_000_000_123, 38, BatchMetadata(4, 40, 3, 1_700_000_000_000))
    with_batch.add_batch(2, 9, 41, 4, 1_700_000_000_999)  # two batches retained: only the last is written
    marker_only = ProducerStateEntry(8, 0, 5, 1_600_000_000_000, None, None)
    path = tmp_path / "00000000000000000042.snapshot"
    path.write_bytes(b"\xff" * 300)  # a longer file already there is replaced whole
    write_snapshot(path, [with_batch, marker_only], sync=True)
    expected = snapshot([(7, 2, 9, 41, 4, 1_700_000_000_999, 3, 38), (8, 0, -1, -1, 0, 1_600_000_000_000, 5, -1)])
    assert path.read_bytes() == expected
    assert serialize_snapshot([]) == snapshot([])
    assert read_snapshot(path) == [
        ProducerStateEntry(7, 2, 3, 1_700_000_000_999, 38, BatchMetadata(9, 41, 4, 1_700_000_000_999)),
        ProducerStateEntry(8, 0, 5, 1_600_000_000_000, None, None),
    ]


def test_entries_follow_java_hash_map_order() -> None:
    """A ``HashMap<Long, _>`` iterates by slot (the key's hash, folded, masked by the table size), then by
    insertion: 16 slots up to 12 keys, 32 up to 24, and never fewer than the map once needed."""

    def order(keys: list[int], largest: int = 0) -> list[int]:
        producers = {k: ProducerStateEntry.empty(k) for k in keys}
        return [e.producer_id for e in java_hash_map_order(producers, largest)]

    assert order([5, 1, 3]) == [1, 3, 5]
    assert order([17, 1, 16]) == [16, 17, 1]  # 16 and 17 share slots 0 and 1 with 0 and 1 in a 16-slot table
    assert order([17, 1, 16], largest=13) == [1, 16, 17]  # 32 slots: each key its own
    assert order([-1, 3]) == [-1, 3]  # Long.hashCode(-1) is 0
    assert order([2**32, 5]) == [2**32, 5]  # Long.hashCode folds the high word 1 into slot 1
    assert order(list(range(30, 0, -1))) == list(range(1, 31))  # 30 keys: 64 slots


def test_snapshot_files_are_listed_and_marked_for_deletion(tmp_path: Path) -> None:
    """``listSnapshotFiles`` and ``SnapshotFile.renameToDelete``: only regular ``*.snapshot`` files named for an
    offset; the renamed file keeps its name with ``.deleted`` after it."""
    (tmp_path / "00000000000000000007.snapshot").write_bytes(b"")
    (tmp_path / "00000000000000000009.snapshot.deleted").write_bytes(b"")
    (tmp_path / "00000000000000000011.log").write_bytes(b"")
    (tmp_path / "notanoffset.snapshot").write_bytes(b"")
    (tmp_path / "00000000000000000013.snapshot").mkdir()
    (found,) = list_snapshot_files(tmp_path)
    assert found.offset == 7
    assert list_snapshot_files(tmp_path / "missing") == []
    found.rename_to_delete()
    assert found.file == tmp_path / "00000000000000000007.snapshot.deleted"
    assert found.file.exists()
    gone = SnapshotFile(tmp_path / "00000000000000000021.snapshot")
    assert gone.offset == 21
    assert not gone.delete_if_exists()
    with pytest.raises(FileNotFoundError):
        gone.rename_to_delete()


def test_bad_entries_and_places_are_refused(impl: ModuleType, tmp_path: Path) -> None:
    """A value wider than its field, or a directory that is not there, is a kafkalog error naming it; nothing
    half-written is left behind."""
    too_wide = ProducerStateEntry(7, 2**15, 0, 0, None, None)
    path = tmp_path / "00000000000000000001.snapshot"
    with pytest.raises(IllegalArgumentError, match="int16 epoch"):
        write_snapshot(path, [too_wide], sync=False)
    assert not path.exists()
    with pytest.raises(KafkaStorageError, match="missing"):
        write_snapshot(tmp_path / "missing" / path.name, [], sync=False)

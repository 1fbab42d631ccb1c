"""The broker-written data directories of the golden folder opened as logs: read-only, then a copy read-write.

Every data directory (a ``log.dirs`` entry: the folder that holds ``<topic>-<partition>`` directories) under
``/work/shared/golden`` is opened with ``LogManager(root, read_only=True)`` and every partition directory with
``Log(dir, read_only=True)``.  The expected segments are the rows of
``/work/shared/golden/DETAILS.md`` as :mod:`tests.support.golden_data` transcribes them
(``PARTITION_SEGMENTS``, from each ``.log`` row: base offset from the file name, ``records=`` and
``offsets=first..last``); a partition's log end offset is the last segment's ``last + 1`` (its base when the
segment is empty) and its log start offset the first segment's base, except where the directory's
``log-start-offset-checkpoint`` says more (two ksqlDB repartition topics of the Danielowo2000 set, at 5:
their records below 5 were deleted by the application, so a manager serves 1 of their 6 records).

Multi-segment partitions: dipendrasaini ``invoice-0``/``invoice-1`` (4 segments each), ArthurArutunyan04
``__cluster_metadata-0`` (2), ronem123 ``__consumer_offsets-31``/``-44`` (2 each, compacted, with offset gaps)
and yuanliubei ``__consumer_offsets-17`` (2, compacted).  Empty segments at non-zero bases: SharaWeil
``mac_test-0`` (78), ronem123 ``topic_transactions-0`` (5), yuanliubei ``topic1-0`` (2722402).

Each log is read through ``Log.read`` from its start to its end, 1 MiB at a time (Kafka's fetch loop: the
next read starts after the last whole batch returned).  Every time, the reads must tile each segment file
byte for byte from the batch holding the start offset to the file's end; through the read-only managers the
records of the batches read are also decoded (on the live twin) and must be the records decoded straight
from the ``.log`` files.  Nothing under the golden folder may change: the bytes and modification times of
every file and directory are compared before and after.

A copy is then opened read-write as after a crash (the ``.kafka_cleanshutdown`` markers removed): the
segments from each checkpointed recovery point on, and those whose offset index is missing, are recovered,
no record or byte of a ``.log`` is lost, the files the port does not manage are left alone, and a clean
shutdown followed by a new open recovers nothing.  The copy's managers are not started: the golden records
are years past the default seven days of retention, which the background task would apply at once; and
``os.fsync`` there only checks its descriptor (no power is cut, and 64 logs ask for hundreds of syncs).
"""

from __future__ import annotations

import hashlib
import itertools
import os
import shutil
from pathlib import Path
from types import ModuleType
from typing import Any, NamedTuple

import pytest

from kafkalog import _impl
from kafkalog.checkpoint import LEADER_EPOCH_CHECKPOINT_FILE, EpochEntry, LeaderEpochCheckpoint
from kafkalog.errors import ReadOnlyError
from kafkalog.leader_epoch_cache import LeaderEpochFileCache
from kafkalog.log import Log
from kafkalog.manager.log_manager import LogManager
from kafkalog.record import MemoryRecords, ScanStop
from kafkalog.scheduler import MockTime
from kafkalog.segment import LogSegment
from kafkalog.topic import TopicPartition, parse_topic_partition_name
from tests.support.golden_data import CHECKPOINTED_LOG_START, PARTITION_SEGMENTS, Segment

MIB = 1024 * 1024
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
RECOVERY_POINT_FILE = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_FILE = "log-start-offset-checkpoint"


PARTITIONS = [(root, name) for root, partitions in PARTITION_SEGMENTS.items() for name in partitions]


def log_end(segments: tuple[Segment, ...]) -> int:
    last = segments[-1]
    return last.base if last.last is None else last.last + 1


def first_base(segments: tuple[Segment, ...]) -> int:
    return segments[0].base


def manager_log_start(root: str, name: str) -> int:
    return max(CHECKPOINTED_LOG_START.get((root, name), 0), first_base(PARTITION_SEGMENTS[root][name]))


def test_table_matches_details_totals() -> None:
    """The transcription: 13 data directories, 64 partitions, 293 639 records, 74 ``.log`` files."""
    assert len(PARTITION_SEGMENTS) == 13
    assert len(PARTITIONS) == 64
    all_segments = [s for partitions in PARTITION_SEGMENTS.values() for segs in partitions.values() for s in segs]
    assert sum(s.records for s in all_segments) == 293639
    assert len(all_segments) == 74
    for segments in (segs for partitions in PARTITION_SEGMENTS.values() for segs in partitions.values()):
        for this, following in itertools.pairwise(segments):
            assert this.last is None or this.last < following.base


def test_every_data_directory_is_in_the_table(golden: Path) -> None:
    """The data directories are exactly the folders holding partition directories with ``.log`` files."""
    roots = {path.parent.parent.relative_to(golden).as_posix() for path in golden.rglob("*.log")}
    assert roots == set(PARTITION_SEGMENTS)
    for root, partitions in PARTITION_SEGMENTS.items():
        found = {p.name for p in (golden / root).iterdir() if p.is_dir()}
        assert found == set(partitions), root
        for name, segments in partitions.items():
            logs = sorted(p.name for p in (golden / root / name).glob("*.log"))
            assert logs == [f"{s.base:020d}.log" for s in segments], (root, name)


# --- helpers --------------------------------------------------------------------------------------------

Snapshot = dict[str, tuple[Any, ...]]


def snapshot(top: Path) -> Snapshot:
    """Every file's size, mtime and SHA-256 and every directory's mtime and entries."""
    state: Snapshot = {}
    for dirpath, dirnames, filenames in os.walk(top):
        d = Path(dirpath)
        state[str(d)] = ("dir", d.stat().st_mtime_ns, tuple(sorted(dirnames + filenames)))
        for name in filenames:
            path = d / name
            st = path.stat()
            state[str(path)] = (st.st_size, st.st_mtime_ns, hashlib.sha256(path.read_bytes()).hexdigest())
    return state


_DECODED: dict[str, dict[int, list[tuple[Any, ...]]]] = {}


def decoded(partition_dir: Path) -> dict[int, list[tuple[Any, ...]]]:
    """Every record of a partition decoded straight from its ``.log`` files, per segment base offset.

    Decoded once per session, by the compiled twin when it is built: the records of the two twins compare
    equal field by field, so a read through the plain twin is checked against the compiled decoding (and
    the slow plain decoding of 17 MB runs once, on the read side)."""
    key = str(partition_dir)
    if key not in _DECODED:
        twins = _impl.both()
        with _impl.using("cython" if "cython" in twins else "python"):
            _DECODED[key] = {
                int(path.name.split(".")[0]): [r.as_tuple()
                                               for r in MemoryRecords(path.read_bytes()).records()]
                for path in sorted(partition_dir.glob("*.log"))
            }
    return _DECODED[key]


class Slice(NamedTuple):
    """What one ``Log.read`` returned: the segment file, the byte range of its whole batches, their bytes, the
    offset read and the offset after its last whole batch."""

    file: str
    start: int
    end: int
    data: bytes
    first_offset: int
    next_offset: int


def read_through_log(log: Log, decode: bool) -> tuple[list[Slice], list[tuple[Any, ...]]]:
    """Kafka's fetch loop: ``read(offset, 1 MiB)`` from the log start offset to its end, each read starting
    at the offset after the last batch returned.  Returns the slices read and, with ``decode``, the records
    of their batches from the read offset on."""
    slices: list[Slice] = []
    records: list[tuple[Any, ...]] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        fetch = log.read(offset, MIB)
        assert fetch.fetch_offset_metadata.message_offset == offset
        found = fetch.records
        assert found.size_in_bytes() > 0, f"a read at {offset} of {log.dir} returned nothing"
        # As in Kafka the slice is max_length bytes when the segment has more: its last batch may be cut
        # short, and the next read starts at that batch.
        scan = found.scan(check_crc=False)  # framing only: the bytes are compared with the files below
        rows = scan.batches
        if scan.stop_reason is ScanStop.PARTIAL:
            assert found.size_in_bytes() == MIB and len(rows) > 0
        else:
            assert (scan.stop_reason, scan.stop_position) == (ScanStop.END, found.end)
        assert rows["last_offset"][0] >= offset
        complete = scan.stop_position
        whole = found.read_bytes()[: complete - found.start]
        next_offset = int(rows["last_offset"][-1]) + 1
        slices.append(Slice(found.file.name, found.start, complete, whole, offset, next_offset))
        if decode:
            records.extend(r.as_tuple() for b in found.batches() for r in b.records() if r.offset >= offset)
        offset = slices[-1].next_offset
    assert offset == log.log_end_offset
    return slices, records


def check_log(log: Log, root: str, name: str, start: int, files: Path, decode: bool = False) -> None:
    """A log against its table row, the bytes of the segment files in ``files`` (the golden partition
    directory) and, with ``decode``, the records decoded from them."""
    segments = PARTITION_SEGMENTS[root][name]
    assert [s.base_offset for s in log.log_segments()] == [s.base for s in segments], (root, name)
    assert log.number_of_segments == len(segments)
    assert (log.log_start_offset, log.log_end_offset) == (start, log_end(segments)), (root, name)
    by_segment = decoded(files)
    for segment in segments:
        offsets = [r[0] for r in by_segment[segment.base]]
        assert len(offsets) == segment.records, (root, name, segment)
        if segment.records:
            assert (offsets[0], offsets[-1]) == (segment.first, segment.last), (root, name, segment)
    expected = [r for segment in segments for r in by_segment[segment.base] if r[0] >= start]
    skipped = start - first_base(segments)  # below a checkpointed start (offsets 0..4 of 6 contiguous ones)
    assert len(expected) == sum(s.records for s in segments) - skipped

    slices, records = read_through_log(log, decode)
    if decode:
        assert records == expected, (root, name)
    # Byte for byte: the reads tile each segment file from the batch holding the start offset to its end.
    for segment in segments:
        data = (files / f"{segment.base:020d}.log").read_bytes()
        mine = [s for s in slices if s.file == f"{segment.base:020d}.log"]
        if not data:
            assert mine == []
            continue
        if start <= segment.base:
            first_position = 0
        else:  # the batch holding the start offset
            rows = MemoryRecords(data).scan(check_crc=False).batches
            first_position = int(rows["position"][rows["last_offset"] >= start][0])
        assert [s.start for s in mine] == [first_position] + [s.end for s in mine[:-1]], (root, name, segment)
        assert mine[-1].end == len(data)
        assert b"".join(s.data for s in mine) == data[first_position:], (root, name, segment)
    assert len(slices) == len({(s.file, s.start) for s in slices})


_BEFORE: dict[str, Snapshot] = {}


@pytest.fixture
def unchanged_golden(golden: Path) -> Snapshot:
    """The golden folder as it was when this module's first test began (taken once: 17 MB to hash)."""
    if str(golden) not in _BEFORE:
        _BEFORE[str(golden)] = snapshot(golden)
    return _BEFORE[str(golden)]


# --- read-only --------------------------------------------------------------------------------------------


def test_log_manager_read_only_opens_every_data_directory(golden: Path, impl: ModuleType,
                                                          unchanged_golden: Snapshot) -> None:
    for root, partitions in PARTITION_SEGMENTS.items():
        with LogManager(golden / root, read_only=True) as manager:
            logs = manager.logs_by_topic_partition()
            # As Kafka 3.8's loadLogs, the manager leaves a KRaft broker's metadata log to the Raft layer
            # (the Log tests below open it directly).
            managed = [name for name in partitions if not name.startswith("__cluster_metadata-")]
            assert sorted(str(tp) for tp in logs) == sorted(managed), root
            assert manager.log_dirs == [(golden / root).resolve()]
            for tp, log in logs.items():
                name = str(tp)
                assert log.read_only and log.dir == (golden / root / name).resolve()
                check_log(log, root, name, manager_log_start(root, name), golden / root / name, decode=True)
            with pytest.raises(ReadOnlyError):
                manager.get_or_create_log(TopicPartition("new-topic", 0))
            some = logs[parse_topic_partition_name(sorted(managed)[0])]
            with pytest.raises(ReadOnlyError):
                some.append(MemoryRecords.with_records([(b"k", b"v")]))
    assert snapshot(golden) == unchanged_golden


def test_log_read_only_opens_every_partition(golden: Path, impl: ModuleType,
                                             unchanged_golden: Snapshot) -> None:
    for root, name in PARTITIONS:
        with Log(golden / root / name, read_only=True) as log:
            assert log.topic_partition == parse_topic_partition_name(name)
            # Without a manager there is no log-start-offset checkpoint: the log starts at its first segment.
            check_log(log, root, name, first_base(PARTITION_SEGMENTS[root][name]), golden / root / name)
            with pytest.raises(ReadOnlyError):
                log.truncate_to(0)
    assert snapshot(golden) == unchanged_golden


# --- a copy, read-write -----------------------------------------------------------------------------------


def read_checkpoint(path: Path) -> dict[TopicPartition, int]:
    """An offset checkpoint, parsed here (spec §2.9)."""
    lines = path.read_text().splitlines()
    assert lines[0] == "0" and int(lines[1]) == len(lines) - 2
    return {TopicPartition(t, int(p)): int(o) for t, p, o in (line.split() for line in lines[2:])}


def expected_recovered(partition_dir: Path, segments: tuple[Segment, ...], recovery_point: int) -> set[Path]:
    """The segments an unclean open recovers: those with no offset index (rebuilt at load), and the one
    holding the recovery point and every later one (``recoverLog`` over ``segments.values(rp, MAX)``)."""
    bases = [s.base for s in segments]
    floor = max((b for b in bases if b <= recovery_point), default=bases[0])
    no_index = {b for b in bases if not (partition_dir / f"{b:020d}.index").exists()}
    return {partition_dir / f"{b:020d}.log" for b in bases if b >= floor or b in no_index}


def unmanaged_files(top: Path) -> dict[str, bytes]:
    """The files the port must never touch: everything but segments, producer snapshots (the log writes them at
    load, roll and close, and removes stray ones, as Kafka's does), checkpoints it owns and the markers."""
    owned_suffixes = (".log", ".index", ".timeindex", ".snapshot")
    owned_names = {RECOVERY_POINT_FILE, LOG_START_OFFSET_FILE, CLEAN_SHUTDOWN_FILE, ".lock",
                   LEADER_EPOCH_CHECKPOINT_FILE}
    return {str(p.relative_to(top)): p.read_bytes() for p in sorted(top.rglob("*"))
            if p.is_file() and not p.name.endswith(owned_suffixes) and p.name not in owned_names}


def loaded_epochs(broker_dir: Path, recovered: set[Path], log_start_checkpoint: int, log_end_offset: int,
                  scratch: Path) -> list[EpochEntry]:
    """The leader epochs a log loaded from a copy of ``broker_dir`` must hold, worked out from the broker's files:
    its checkpoint (none when the set lacks it), then each batch of the ``recovered`` segments (by name, in
    offset order) with an epoch above the latest assigned from its base offset (``LogSegment.recover``), then
    the whole cut to the loaded log as Kafka's ``LogLoader.load`` cuts it (entries at or past the log end go,
    then the first entry moves up to the log start checkpoint)."""
    file = broker_dir / LEADER_EPOCH_CHECKPOINT_FILE
    entries = LeaderEpochCheckpoint(file, read_only=True).read() if file.exists() else []
    cut = LeaderEpochFileCache(parse_topic_partition_name(broker_dir),
                               LeaderEpochCheckpoint(scratch / f"{broker_dir.parent.name}-{broker_dir.name}"),
                               MockTime().scheduler)
    cut.assign_all(entries)
    for name in sorted(path.name for path in recovered):
        for batch in MemoryRecords((broker_dir / name).read_bytes()).batches():
            latest = cut.latest_epoch()
            if batch.magic >= 2 and batch.partition_leader_epoch >= 0 and (
                    latest is None or batch.partition_leader_epoch > latest):
                cut.assign(batch.partition_leader_epoch, batch.base_offset)
    cut.truncate_from_end_async_flush(log_end_offset)
    cut.truncate_from_start_async_flush(log_start_checkpoint)
    return cut.epoch_entries()


def test_copy_recovers_after_unclean_shutdown_then_reopens_cleanly(
        golden: Path, impl: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        unchanged_golden: Snapshot) -> None:
    # No power is cut here, so what reaches the disk is not observable: fsync only checks its descriptor
    # (the shutdowns of 64 logs ask for hundreds, at ~4 ms each).
    synced: list[int] = []

    def fake_fsync(fd: int) -> None:
        os.fstat(fd)
        synced.append(fd)

    monkeypatch.setattr(os, "fsync", fake_fsync)
    scratch = tmp_path / "epochs"
    scratch.mkdir()
    copy = tmp_path / "golden"
    shutil.copytree(golden, copy)
    for root in PARTITION_SEGMENTS:
        (copy / root / CLEAN_SHUTDOWN_FILE).unlink(missing_ok=True)
    unmanaged_before = unmanaged_files(copy)

    recovered: list[Path] = []
    real_recover = LogSegment.recover

    def counting_recover(segment: LogSegment, *args: Any) -> int:
        recovered.append(segment.log.file)
        return real_recover(segment, *args)

    monkeypatch.setattr(LogSegment, "recover", counting_recover)
    for root, all_partitions in PARTITION_SEGMENTS.items():
        # The manager leaves a KRaft broker's metadata log to the Raft layer, as Kafka 3.8's loadLogs does.
        partitions = {name: segments for name, segments in all_partitions.items()
                      if not name.startswith("__cluster_metadata-")}
        data_dir = copy / root
        checkpoint = data_dir / RECOVERY_POINT_FILE
        checkpointed = read_checkpoint(checkpoint) if checkpoint.exists() else {}
        wanted_recovery = {
            name: expected_recovered(data_dir.resolve() / name, segments,
                                     checkpointed.get(parse_topic_partition_name(name), 0))
            for name, segments in partitions.items()}
        recovered.clear()
        epochs: dict[str, list[EpochEntry]] = {}
        mock_time = MockTime()
        manager = LogManager(data_dir, scheduler=mock_time.scheduler, time=mock_time)
        try:
            logs = manager.logs_by_topic_partition()
            assert sorted(str(tp) for tp in logs) == sorted(partitions), root
            assert set(recovered) == set().union(*wanted_recovery.values()), root
            for tp, log in logs.items():
                name = str(tp)
                wanted = min(checkpointed.get(tp, 0), log_end(partitions[name]))
                assert log.recovery_point == wanted, (root, name)
                check_log(log, root, name, manager_log_start(root, name), golden / root / name)
                for segment in log.log_segments():
                    assert segment.offset_index.path.exists() and segment.time_index.path.exists()
                assert log.leader_epoch_cache is not None
                epochs[name] = loaded_epochs(golden / root / name, wanted_recovery[name],
                                             CHECKPOINTED_LOG_START.get((root, name), 0), log_end(partitions[name]),
                                             scratch)
                assert log.leader_epoch_cache.epoch_entries() == epochs[name], (root, name)
        finally:
            synced.clear()
            manager.shutdown()
        for name, entries in epochs.items():
            assert LeaderEpochCheckpoint(data_dir / name / LEADER_EPOCH_CHECKPOINT_FILE).read() == entries
        assert synced, "a clean shutdown flushes"
        assert (data_dir / CLEAN_SHUTDOWN_FILE).exists()
        assert read_checkpoint(data_dir / RECOVERY_POINT_FILE) == {
            parse_topic_partition_name(name): log_end(segments) for name, segments in partitions.items()}
        assert read_checkpoint(data_dir / LOG_START_OFFSET_FILE) == {
            parse_topic_partition_name(name): start for (r, name), start in CHECKPOINTED_LOG_START.items()
            if r == root}

        # Clean this time: nothing is recovered and every record is still there.
        recovered.clear()
        mock_time = MockTime()
        manager = LogManager(data_dir, scheduler=mock_time.scheduler, time=mock_time)
        try:
            assert recovered == [], root
            assert not (data_dir / CLEAN_SHUTDOWN_FILE).exists()
            for tp, log in manager.logs_by_topic_partition().items():
                name = str(tp)
                assert log.recovery_point == log.log_end_offset == log_end(partitions[name])
                check_log(log, root, name, manager_log_start(root, name), golden / root / name)
        finally:
            manager.shutdown()
    assert unmanaged_files(copy) == unmanaged_before
    assert snapshot(golden) == unchanged_golden


def test_recovery_rebuilds_the_brokers_leader_epoch_checkpoint(golden: Path, impl: ModuleType, tmp_path: Path,
                                                               unchanged_golden: Snapshot) -> None:
    """Each partition the broker left a leader-epoch checkpoint with entries for, copied without that file and
    opened as after a crash with nothing flushed (recovery point 0): recovery refills the cache from the batches
    (``LogSegment.recover`` with the cache) and loading cuts it to the log, and the checkpoint the log writes is
    the broker's byte for byte wherever the log still holds the batch that opened the broker's first epoch.
    Elsewhere the log start moved past that batch (retention, compaction, deleteRecords) or the broker's last
    epoch began with no write, and the files differ; those are counted, not compared."""
    exact = moved = 0
    for n, (root, name) in enumerate((root, name) for root, parts in PARTITION_SEGMENTS.items() for name in parts):
        broker_file = golden / root / name / LEADER_EPOCH_CHECKPOINT_FILE
        if not broker_file.exists() or not LeaderEpochCheckpoint(broker_file, read_only=True).read():
            continue
        copy = tmp_path / str(n) / name
        shutil.copytree(golden / root / name, copy)
        (copy / LEADER_EPOCH_CHECKPOINT_FILE).unlink()
        # Index files the set lacks (MISSING.txt) come back empty, as the broker had them: a missing one would be
        # rebuilt while loading, before the recovery of the segments below it, and its epochs assigned first
        # (Kafka's order too), which is not what the broker's run saw.
        for segment_file in copy.glob("*.log"):
            for suffix in (".index", ".timeindex"):
                segment_file.with_suffix(suffix).touch()
        mock_time = MockTime()
        with Log(copy, log_start_offset=manager_log_start(root, name), recovery_point=0, had_clean_shutdown=False,
                 scheduler=mock_time.scheduler, time=mock_time) as log:
            first_v2 = next((batch.base_offset for segment in log.log_segments() for batch in segment.batches()
                             if batch.magic >= 2 and batch.partition_leader_epoch >= 0), None)
        broker = LeaderEpochCheckpoint(broker_file, read_only=True).read()
        if first_v2 is not None and broker[0].start_offset == first_v2 and broker[-1].start_offset < log_end(
                PARTITION_SEGMENTS[root][name]):
            assert (copy / LEADER_EPOCH_CHECKPOINT_FILE).read_bytes() == broker_file.read_bytes(), (root, name)
            exact += 1
        else:
            moved += 1
    assert (exact, moved) == (45, 9)
    assert snapshot(golden) == unchanged_golden

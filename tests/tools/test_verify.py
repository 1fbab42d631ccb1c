"""The ``verify`` tool (:mod:`kafkalog.tools.verify`): :func:`~kafkalog.tools.verify.verify_partition`,
:func:`~kafkalog.tools.verify.verify_log_dir` and :func:`~kafkalog.tools.verify.iter_findings` on logs written
here, healthy and damaged, read-only; then the cost of its index checks.

The index checks cost what the index holds, not what its file's length is (issue 15, defect 14).  A broker
preallocates each index of the active segment to ``segment.index.bytes`` (10 MiB by default) and
trims it only at a clean shutdown; the file is sparse.  Verify used to read every slot of the file as an
entry, about a second per MiB, and a sparse 8 GiB index never finished.  Now it reads entries until the
first all-zero entry after the first (the end of a preallocated index's entries, DumpLogSegments' rule)
and never reads the zero tail beyond that; the tail is a note.  The checks of the entries themselves stay
what they were: planted faults anywhere among the live entries are still found.
"""

from __future__ import annotations

import io
import os
import struct
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from kafkalog.checkpoint import RECOVERY_POINT_CHECKPOINT_FILE, OffsetCheckpoint
from kafkalog.config.log_config import LogConfig
from kafkalog.dir_layout import NotAPartitionDirError
from kafkalog.manager.log_manager import LogManager
from kafkalog.record import MemoryRecords
from kafkalog.tools.partition_dir import classify_dir
from kafkalog.tools.verify import Severity, iter_findings, verify_log_dir, verify_partition
from kafkalog.topic import TopicPartition
from tests.support.log_test_utils import LogFactory, append_abort_across_a_roll

GIB = 1024**3
MIB = 1024**2


def build(root: Path, records: int = 2000) -> Path:
    """A partition of one segment with an offset and a time index entry every ~100 bytes, trimmed by a
    clean shutdown; returns the partition dir."""
    with LogManager(root, LogConfig({"index.interval.bytes": 100})) as manager:
        log = manager.create_log(TopicPartition("events", 0))
        for i in range(0, records, 10):
            log.append(MemoryRecords.with_records(
                [(b"k%d" % (i + j), b"v" * 20, 1_700_000_000_000 + i + j) for j in range(10)]))
    return root / "events-0"


def preallocate(partition: Path, size: int) -> tuple[int, int]:
    """Extend both indexes to ``size`` bytes (rounded down to whole entries) with a zero tail, sparse, as a
    broker's active segment has them; returns the live entries of each."""
    live = []
    for suffix, entry in ((".index", 8), (".timeindex", 12)):
        file = partition / f"{0:020d}{suffix}"
        live.append(file.stat().st_size // entry)
        os.truncate(file, size - size % entry)
    return live[0], live[1]

# -- verify_partition, verify_log_dir, iter_findings -------------------------------------------------------


def _snapshot(root: Path) -> dict[Path, tuple[bytes, int]]:
    return {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


def test_a_healthy_partition(impl: ModuleType, tmp_path: Path) -> None:
    directory = build(tmp_path / "logs", records=200)
    before = _snapshot(tmp_path / "logs")
    report = verify_partition(directory)
    assert report.ok, report.errors
    assert report.topic_partition == TopicPartition("events", 0)
    assert (report.segments, report.batches, report.records) == (1, 20, 200)
    assert (report.log_start_offset, report.log_end_offset) == (0, 200)
    assert report.size == (directory / "00000000000000000000.log").stat().st_size
    shallow = verify_partition(directory, deep=False)
    assert shallow.ok and shallow.records is None and shallow.batches == 20
    assert _snapshot(tmp_path / "logs") == before  # verify changes nothing


def test_a_corrupt_batch_is_an_error(impl: ModuleType, tmp_path: Path) -> None:
    directory = build(tmp_path / "logs", records=200)
    log = directory / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    data[len(data) // 2] ^= 0xFF  # a byte inside some batch: its CRC no longer matches
    log.write_bytes(bytes(data))
    report = verify_partition(directory)
    assert not report.ok
    assert [f.message for f in report.errors if f.path == str(log)] == [
        "batch at position 3600 (offsets 100..109) fails its CRC check"]


def test_a_log_dir_and_its_checkpoints(impl: ModuleType, tmp_path: Path) -> None:
    root = tmp_path / "logs"
    build(root, records=50)
    report = verify_log_dir(root)
    assert report.ok
    assert [p.dir.name for p in report.partitions] == ["events-0"]
    assert any("clean" in f.message for f in report.findings)  # the clean-shutdown marker is a note
    seen: list[str] = []
    verify_log_dir(root, on_partition=lambda p: seen.append(p.dir.name))
    assert seen == ["events-0"]


def test_a_checkpoint_past_the_log_end_is_found(impl: ModuleType, tmp_path: Path) -> None:
    root = tmp_path / "logs"
    build(root, records=50)
    OffsetCheckpoint(root / RECOVERY_POINT_CHECKPOINT_FILE).write({TopicPartition("events", 0): 5000})
    report = verify_log_dir(root)
    assert not report.ok  # the finding is the partition's: its flushed records are missing
    findings = [f for f in iter_findings([report]) if RECOVERY_POINT_CHECKPOINT_FILE in f.path]
    assert [(f.severity, f.message) for f in findings] == [
        (Severity.ERROR, "recovery point 5000 of events-0 is past its log end offset 50: "
                         "records that were flushed are missing")]


def test_iter_findings_order(impl: ModuleType, tmp_path: Path) -> None:
    root = tmp_path / "logs"
    build(root, records=50)
    (root / "events-0" / "00000000000000000000.log").write_bytes(b"\x00" * 7)  # a torn, tiny log
    report = verify_log_dir(root)
    findings = list(iter_findings([report]))
    assert findings[: len(report.partitions[0].findings)] == report.partitions[0].findings
    assert findings[len(report.partitions[0].findings):] == report.findings
    assert all(str(f).startswith(f.severity.value.upper()) for f in findings)


def test_not_a_partition_dir(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    with pytest.raises(NotAPartitionDirError):
        classify_dir(tmp_path / "plain")



def index_findings(report_findings: list, partition: Path) -> list:
    return [f for f in report_findings if f.path.endswith(("index", "timeindex"))]


def test_a_preallocated_index_is_checked_up_to_its_zero_tail(tmp_path: Path) -> None:
    partition = build(tmp_path / "logs")
    clean = verify_partition(partition)
    assert clean.ok and index_findings(clean.findings, partition) == []
    live_offsets, live_times = preallocate(partition, 10 * MIB)
    assert live_offsets > 100 and live_times > 100
    report = verify_partition(partition)
    found = index_findings(report.findings, partition)
    # A zero tail is a note for both indexes (the time index's used to fail the broker's whole-file sanity
    # check, which the broker answers by rebuilding the index on open).
    assert [f.severity for f in found] == [Severity.NOTE, Severity.NOTE], found
    assert f"end at entry {live_offsets}" in found[0].message and f"end at entry {live_times}" in found[1].message
    assert report.ok


def test_an_index_with_no_entry_yet_is_all_preallocated_tail(tmp_path: Path) -> None:
    """A broker killed while its active segment holds less than ``index.interval.bytes`` leaves both indexes
    preallocated and all zeros (found on a real Kafka 4.4 broker, tests/oracle/broker: every partition of a killed
    broker, and its KRaft metadata log at any stop).  Their first slot is no entry: ``(timestamp 0, offset +0)`` is
    one only over a first batch of max timestamp 0, ``(offset +0, position 0)`` only over a batch; verify used to
    check it as one and report errors on a healthy log dir."""
    partition = build(tmp_path / "logs", records=10)
    for suffix in (".index", ".timeindex"):
        file = partition / f"{0:020d}{suffix}"
        os.truncate(file, 0)
        os.truncate(file, 10 * MIB - 10 * MIB % (8 if suffix == ".index" else 12))
    report = verify_partition(partition)
    found = index_findings(report.findings, partition)
    assert report.ok, report.errors
    # The offset index's first slot over the batch at position 0 is a right entry ((+0, 0) finds it).
    assert [(f.severity, f.path[-6:], f.message.split(",")[0]) for f in found] == [
        (Severity.NOTE, ".index", "its entries end at entry 1"),
        (Severity.NOTE, "eindex", "its entries end at entry 0")], found
    # An empty segment's preallocated indexes: no batch, so no entry either.
    (partition / f"{0:020d}.log").write_bytes(b"")
    report = verify_partition(partition)
    assert report.ok, report.errors
    # A first batch stamped 0 makes (0, +0) a real time index entry: checked as one, and right.
    with LogManager(tmp_path / "zero", LogConfig({"index.interval.bytes": 1})) as manager:
        log = manager.create_log(TopicPartition("events", 0))
        for ts in (0, 0, 5):  # the second append indexes the max timestamp so far, 0, at its first offset
            log.append(MemoryRecords.with_records([(b"k", b"v", ts)]))
    zero = tmp_path / "zero" / "events-0"
    assert (zero / f"{0:020d}.timeindex").read_bytes()[:12] == bytes(12)
    assert verify_partition(zero).ok
    # Planted under a later first batch, the same all-zero first entry followed by live ones is an error.
    with LogManager(tmp_path / "late", LogConfig({"index.interval.bytes": 1})) as manager:
        log = manager.create_log(TopicPartition("events", 0))
        for ts in (10, 20, 30):
            log.append(MemoryRecords.with_records([(b"k", b"v", ts)]))
    time_index = tmp_path / "late" / "events-0" / f"{0:020d}.timeindex"
    raw = bytearray(time_index.read_bytes())
    raw[:12] = bytes(12)
    time_index.write_bytes(bytes(raw))
    errors = [f for f in verify_partition(time_index.parent).errors if f.path == str(time_index)]
    assert errors and "entry 0 is zero-filled" in errors[0].message, errors


def test_faults_among_the_live_entries_are_still_found(tmp_path: Path) -> None:
    partition = build(tmp_path / "logs")
    index = partition / f"{0:020d}.index"
    time_index = partition / f"{0:020d}.timeindex"
    pristine, pristine_times = index.read_bytes(), time_index.read_bytes()
    entries = len(pristine) // 8
    # The last live entry's offset does not rise (an error), then it is zeroed in a preallocated file (it
    # ends the entries there).
    raw = bytearray(pristine)
    struct.pack_into(">i", raw, (entries - 1) * 8, struct.unpack_from(">i", raw, 0)[0])
    index.write_bytes(bytes(raw) + bytes(MIB))
    found = index_findings(verify_partition(partition).findings, partition)
    assert [f.severity for f in found if f.severity is not Severity.ERROR] == [Severity.NOTE], found
    assert any(f"entry {entries - 1} " in f.message for f in found if f.severity is Severity.ERROR), found
    raw[(entries - 1) * 8:] = bytes(8)
    index.write_bytes(bytes(raw) + bytes(MIB))
    report = verify_partition(partition)
    assert [f.severity for f in index_findings(report.findings, partition)] == [Severity.NOTE]
    assert f"end at entry {entries - 1}" in index_findings(report.findings, partition)[0].message
    # A zeroed entry among live ones, in a trimmed file: not a preallocated tail.
    raw = bytearray(pristine)
    raw[80:88] = bytes(8)
    index.write_bytes(bytes(raw))
    found = index_findings(verify_partition(partition).findings, partition)
    assert [f.severity for f in found] == [Severity.ERROR], found
    assert "entry 10 is zero-filled" in found[0].message and "entry 11 after it is not" in found[0].message
    index.write_bytes(pristine)
    # Time index: the last live entry's timestamp below the first (the broker's sanity check on the live
    # entries), with and without a zero tail.
    raw = bytearray(pristine_times)
    last = len(raw) // 12 - 1
    struct.pack_into(">q", raw, last * 12, 1)
    for tail in (b"", bytes(12 * 1000)):
        time_index.write_bytes(bytes(raw) + tail)
        report = verify_partition(partition)
        errors = [f for f in index_findings(report.findings, partition) if f.severity is Severity.ERROR]
        assert len(errors) == 1 and "sanity check" in errors[0].message, errors
    # A file of part-entries is an error, as the broker's check says.
    time_index.write_bytes(pristine_times + b"\0")
    found = index_findings(verify_partition(partition).findings, partition)
    assert [f.severity for f in found] == [Severity.ERROR] and "multiple of 12" in found[0].message
    time_index.write_bytes(pristine_times)
    assert verify_partition(partition).ok


def test_entries_past_long_max_in_a_segment_based_near_it(tmp_path: Path) -> None:
    """Relative offsets that would take an entry past Long.MaxValue are reported, not overflowed."""
    partition = tmp_path / "logs" / "events-0"
    partition.mkdir(parents=True)
    base = 2**63 - 1000
    (partition / f"{base:020d}.log").touch()
    (partition / f"{base:020d}.index").write_bytes(struct.pack(">ii", 2**31 - 1, 0))
    (partition / f"{base:020d}.timeindex").write_bytes(struct.pack(">qi", 5, 2**31 - 1))
    report = verify_partition(partition)
    found = index_findings(report.findings, partition)
    assert [f.severity for f in found] == [Severity.ERROR, Severity.ERROR], found
    assert all(str(base + 2**31 - 1) in f.message for f in found), found


def test_a_sparse_8_gib_index_is_verified_in_seconds(tmp_path: Path) -> None:
    """Run in a child with a time limit: before the fix it read a billion slots and never finished."""
    partition = build(tmp_path / "logs")
    preallocate(partition, 8 * GIB)
    assert os.stat(partition / f"{0:020d}.index").st_blocks * 512 < MIB  # sparse: costs no disk
    code = ("import sys; from kafkalog.tools.verify import verify_partition; r = verify_partition(sys.argv[1]); "
            "print(r.ok, sorted(f.severity.value for f in r.findings))")
    try:
        done = subprocess.run([sys.executable, "-c", code, str(partition)], capture_output=True, text=True,
                              timeout=30, check=True)
    except subprocess.TimeoutExpired:
        pytest.fail("verify of a sparse 8 GiB index took more than 30 s")
    assert done.stdout.strip() == "True ['note', 'note']", done.stdout + done.stderr


def test_a_transaction_index_the_readers_do_not_trust_is_an_error(impl: ModuleType, create_log: LogFactory) -> None:
    """Issue 28: ``verify`` said ok of a ``.txnindex`` that fails Kafka's ``TransactionIndex.sanityCheck`` (an entry
    ending below the segment's base offset), which a broker's open rebuilds and kafkalog's read-only readers do not
    trust; so too of one with more entries than its segment holds batches.  Both are errors now, and the index is read
    a chunk at a time, its out-of-order entries reported up to five."""
    from kafkalog.cli import main
    from kafkalog.transaction_index import AbortedTxn

    log = create_log()
    append_abort_across_a_roll(log)
    directory = log.dir
    log.close()
    index = directory / "00000000000000000002.txnindex"
    assert verify_partition(directory).ok
    index.write_bytes(AbortedTxn(8, 0, 1, 2).to_bytes() + AbortedTxn(7, 1, 2, 3).to_bytes())
    report = verify_partition(directory)
    assert not report.ok
    assert [(f.severity, f.message) for f in report.findings if f.path == str(index)] == [(
        Severity.ERROR, "fails the broker's sanity check: Last offset of aborted transaction AbortedTxn(version=0, "
        f"producerId=8, firstOffset=0, lastOffset=1, lastStableOffset=2) in index {index} is less than start offset 2 "
        "(a broker rebuilds it on open; read-only readers do not trust it)")]
    out = io.StringIO()
    assert main(["--no-progress", "verify", str(directory)], stdout=out, stderr=out) == 1
    segment_bytes = (directory / "00000000000000000002.log").stat().st_size
    most = segment_bytes // 61
    index.write_bytes(b"".join(AbortedTxn(7, 2, 2 + i, 3).to_bytes() for i in range(most + 1)))
    assert [f.message for f in verify_partition(directory).findings if f.path == str(index)] == [
        f"holds {most + 1} entries, more than its segment's {segment_bytes} bytes can hold ABORT markers ({most}): it "
        "is not the segment's, and read-only readers do not trust it"]
    descending = list(range(most + 12, most + 2, -1))  # ten entries, nine pairs out of order
    index.write_bytes(b"".join(AbortedTxn(7, 2, last, 3).to_bytes() for last in descending))
    assert [f.message for f in verify_partition(directory).findings if f.path == str(index)][1:] == [
        *(f"aborted transactions out of order: last offset {a} then {a - 1}" for a in descending[:5]),
        "4 more pairs of aborted transactions out of order"]

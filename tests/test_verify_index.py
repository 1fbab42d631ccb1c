"""``verify``'s index checks cost what the index holds, not what its file's length is (issue 15, defect 14).

A broker preallocates each index of the active segment to ``segment.index.bytes`` (10 MiB by default) and
trims it only at a clean shutdown; the file is sparse.  Verify used to read every slot of the file as an
entry, about a second per MiB, and a sparse 8 GiB index never finished.  Now it reads entries until the
first all-zero entry after the first (the end of a preallocated index's entries, DumpLogSegments' rule)
and never reads the zero tail beyond that; the tail is a note.  The checks of the entries themselves stay
what they were: planted faults anywhere among the live entries are still found.
"""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from kafkalog.config import LogConfig
from kafkalog.manager import LogManager
from kafkalog.record import MemoryRecords
from kafkalog.tools.verify import Severity, verify_partition
from kafkalog.topic import TopicPartition

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

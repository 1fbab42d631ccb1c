"""No SIGBUS, whatever happens to the files under a reader or a writer (issue 15, defects 4 and 5).

Touching a mapped page that is no longer backed kills the process with SIGBUS, and a Python process
cannot recover from it.  Two ways to get there:

* another process cuts a file a reader has mapped (a writer truncating its log, recovery cutting a torn
  tail, a roll or a close trimming a preallocated index): the page past the new end is gone;
* a page of a sparse file is touched while the filesystem is full (writing an index entry through the
  map; on tmpfs even reading a hole): there is no block to back it.

A read-only reader therefore never maps a file (it reads with ``pread``, and a file cut under it reads
shorter), and a writer allocates an index page before it writes one through the map (so a full disk is
a :class:`~kafkalog.errors.KafkaStorageError` before anything is written).  Every case runs in a child
interpreter, once per kernel twin, so that a signal fails the test instead of killing the runner.
"""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from kafkalog import MemoryRecords, file_message_set
from kafkalog.checkpoint import OffsetCheckpoint
from kafkalog.errors import KafkaLogError, KafkaStorageError
from kafkalog.file_message_set import FileMessageSet
from kafkalog.filenames import index_filename, log_filename, time_index_filename
from kafkalog.index import OffsetIndex, TimeIndex
from kafkalog.topic import TopicPartition
from tests.support.fault_utils import ROOT, child_env, fill, run_child, small_disk, small_fs

__all__ = ["small_disk", "small_fs"]  # the fixtures, imported for the tests below

T0 = 1_700_000_000_000
INT32_MAX = 2**31 - 1


def _write_segment(path: Path, batches: int = 200, value_size: int = 1000) -> None:
    """A ``.log`` of ``batches`` one-record batches, offsets 0.., timestamps T0.."""
    with FileMessageSet.open(path) as f:
        for i in range(batches):
            f.append(MemoryRecords.with_records([(b"k%d" % i, b"v" * value_size, T0 + i)], base_offset=i))


# -- a reader while another process cuts the file ----------------------------------------------------

# The file is cut to nothing at the worst moment: when the kernel is entered, after every size check the
# reader makes (as another process's truncation can land there).  Before kafkalog read-only sets stopped
# mapping their file, the kernel then touched pages past the end of the file: SIGBUS.
_CUT_IN_KERNEL = r"""
import os, sys
from pathlib import Path
from kafkalog import _impl
from kafkalog.errors import KafkaLogError
from kafkalog.file_message_set import FileMessageSet

path, what = Path(sys.argv[1]), sys.argv[2]
fms = FileMessageSet(path, writable=False)
before = len(fms.scan().batches)
kernels = {name: getattr(_impl.core, name) for name in ("scan_batches", "search_for_offset")}

def cutting(kernel):
    def call(*args, **kwargs):
        os.truncate(path, 0)
        return kernel(*args, **kwargs)
    return call

for name, kernel in kernels.items():
    setattr(_impl.core, name, cutting(kernel))
try:
    if what == "scan":
        result = len(fms.scan().batches)
    elif what == "search_for":
        result = fms.search_for(150)
    elif what == "search_for_timestamp":
        result = fms.search_for_timestamp(""" + str(T0 + 150) + r""")
    elif what == "batches":
        result = sum(1 for _ in fms.batches())
    else:
        result = sum(1 for _ in fms.records())
except KafkaLogError as e:
    result = type(e).__name__
print("survived", before, result)
"""


@pytest.mark.parametrize("what", ["scan", "search_for", "search_for_timestamp", "batches", "records"])
def test_read_only_set_survives_a_cut_during_a_read(impl: ModuleType, tmp_path: Path, what: str) -> None:
    path = log_filename(tmp_path, 0)
    _write_segment(path)
    result = run_child(_CUT_IN_KERNEL, impl.IMPLEMENTATION, str(path), what)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("survived 200 "), result.stdout


_CUT_INDEX = r"""
import os, sys
from pathlib import Path
from kafkalog.errors import KafkaLogError
from kafkalog.index import OffsetIndex, TimeIndex

offsets, times = Path(sys.argv[1]), Path(sys.argv[2])
index = OffsetIndex(offsets, 0, writable=False)
time_index = TimeIndex(times, 0, writable=False)
first = (index.lookup(5000), time_index.lookup(5000))
# A roll or a close trims the files, recovery resets them: here both are cut to one entry.
os.truncate(offsets, 8)
os.truncate(times, 12)
answers = []
for call in (lambda: index.lookup(9990), lambda: index.entry(999), lambda: index.fetch_upper_bound_offset(
        index.lookup(100), 5000), lambda: time_index.lookup(9990), lambda: time_index.entry(999),
        lambda: index.sanity_check(), lambda: time_index.sanity_check()):
    try:
        answers.append(call())
    except KafkaLogError as e:
        answers.append(type(e).__name__)
print("survived", first, answers)
"""


def test_read_only_index_survives_a_trim(impl: ModuleType, tmp_path: Path) -> None:
    offsets, times = index_filename(tmp_path, 0), time_index_filename(tmp_path, 0)
    index = OffsetIndex(offsets, 0, 1 << 20)
    time_index = TimeIndex(times, 0, 1 << 20)
    for i in range(1000):
        index.append(i * 10, i * 100)
        time_index.maybe_append(i * 10, i * 10)
    index.close()
    time_index.close()
    result = run_child(_CUT_INDEX, impl.IMPLEMENTATION, str(offsets), str(times))
    assert result.returncode == 0, result.stderr
    # The index reads as it was when it was opened: a consistent answer, from before the trim.
    assert result.stdout.strip() == (
        "survived (OffsetPosition(offset=5000, position=50000), TimestampOffset(timestamp=5000, offset=5000)) "
        "[OffsetPosition(offset=9990, position=99900), OffsetPosition(offset=9990, position=99900), "
        "OffsetPosition(offset=600, position=6000), TimestampOffset(timestamp=9990, offset=9990), "
        "TimestampOffset(timestamp=9990, offset=9990), None, None]"), result.stdout


# A broker-like writer in one process, a read-only reader in another: the writer cuts its log back
# (Log.truncate_to, as a follower does) and appends again, over and over; the reader keeps scanning the
# whole log.  The forced interleavings above are what fails on mapped reads every time; this race of two
# real processes is the campaign's scenario end to end, and killed a mapped reader with SIGBUS in most runs
# (on one twin or both), never a reading one.
_WRITER_LOOP = r"""
import os, select, sys
from kafkalog import MemoryRecords
from kafkalog.config.log_config import LogConfig
from kafkalog.log import Log

log = Log(sys.argv[1], LogConfig({"segment.bytes": 64 << 20}))
batch = [(b"k", b"v" * 4000, 1_700_000_000_000)] * 16
while log.log_end_offset < 16 * 64:
    log.append(MemoryRecords.with_records(batch))
print("ready", flush=True)
rounds = 0
while not select.select([sys.stdin], [], [], 0)[0]:
    log.truncate_to(16 * 32)
    while log.log_end_offset < 16 * 64:
        log.append(MemoryRecords.with_records(batch))
    rounds += 1
print("rounds", rounds, flush=True)
"""

_READER_LOOP = r"""
import sys, time
from kafkalog.errors import KafkaLogError
from kafkalog.log import Log

deadline = time.monotonic() + float(sys.argv[2])
reads = errors = 0
log = Log(sys.argv[1], read_only=True)
while time.monotonic() < deadline:
    try:
        for segment in log.segments:
            segment.log.scan()
        reads += 1
        if reads % 16 == 0:
            for record in log.records():
                pass
    except KafkaLogError:
        errors += 1
log.close()
print("survived", reads, errors)
"""


def test_read_only_log_survives_a_writer_truncating(impl: ModuleType, tmp_path: Path) -> None:
    directory = tmp_path / "topic-0"
    writer = subprocess.Popen([sys.executable, "-c", _WRITER_LOOP, str(directory)], env=child_env(impl.IMPLEMENTATION),
                              cwd=str(ROOT), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "ready"
        reader = run_child(_READER_LOOP, impl.IMPLEMENTATION, str(directory), "0.5")
    finally:
        writer.communicate("stop\n", timeout=60)
    assert reader.returncode == 0, reader.stderr
    assert reader.stdout.startswith("survived"), reader.stdout
    assert writer.returncode == 0, writer.stderr


# -- a full disk --------------------------------------------------------------------------------------

_INDEX_ON_FULL_DISK = r"""
import sys
from pathlib import Path
from kafkalog.errors import KafkaStorageError
from kafkalog.index import OffsetIndex, TimeIndex
sys.path.insert(0, "tests")
from tests.support.fault_utils import fill

directory = Path(sys.argv[1])
index = OffsetIndex(directory / "00000000000000000000.index", 0, 1 << 20)
time_index = TimeIndex(directory / "00000000000000000000.timeindex", 0, 1 << 20)
fill(directory)
outcomes = []
for append in (lambda: index.append(10, 100), lambda: time_index.maybe_append(5, 10)):
    try:
        append()
        outcomes.append("appended")
    except KafkaStorageError as e:
        outcomes.append("No space left on device" in str(e) and str(directory) in str(e))
print("survived", outcomes, index.entries, time_index.entries)
"""


def test_index_append_on_a_full_disk(impl: ModuleType, small_disk: Path) -> None:
    result = run_child(_INDEX_ON_FULL_DISK, impl.IMPLEMENTATION, str(small_disk))
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["survived", "[True,", "True]", "0", "0"], result.stdout


# Appends (flushed every few) until the disk is full; the error must be a KafkaStorageError naming the
# file, and the offsets acknowledged are printed.  ``crash`` leaves without closing, as a kill would.
_APPEND_UNTIL_FULL = r"""
import os, sys
from kafkalog import MemoryRecords
from kafkalog.config.log_config import LogConfig
from kafkalog.errors import KafkaStorageError
from kafkalog.log import Log

directory, how = sys.argv[1], sys.argv[2]
log = Log(directory, LogConfig({"segment.bytes": 8192, "index.interval.bytes": 1, "segment.index.bytes": 1 << 16}))
acknowledged = 0
try:
    for i in range(100000):
        size = 300 if i % 7 else 5000
        log.append(MemoryRecords.with_records([(b"k%d" % i, b"v" * size, 1_700_000_000_000 + i)]))
        acknowledged += 1
        if i % 5 == 0:
            log.flush()
    raise SystemExit("the disk never filled")
except KafkaStorageError as e:
    named = directory in str(e) and "No space left on device" in str(e)
print(acknowledged, log.log_end_offset, named, flush=True)
if how == "crash":
    os._exit(0)
try:
    log.close()
except KafkaStorageError as e:  # the full disk took the log dir offline: nothing more is written
    assert "already offline due to a previous IO exception" in str(e), e
    assert log.local_log.is_memory_mapped_buffer_closed
else:
    raise SystemExit("closed a log whose log dir is offline")
"""

_READ_ALL = r"""
import sys
from kafkalog.errors import KafkaLogError
from kafkalog.log import Log

directory, mode = sys.argv[1], sys.argv[2]
try:
    with Log(directory, read_only=(mode == "read-only")) as log:
        offsets = [record.offset for record in log.records()]
        values = {len(record.value) for record in log.records()}
    print("opened", len(offsets), offsets == list(range(len(offsets))), sorted(values))
except KafkaLogError as e:
    print("refused", type(e).__name__, "No space left on device" in str(e), str(e)[:300])
"""


@pytest.mark.parametrize("how", ["close", "crash"])
def test_log_on_a_full_disk(impl: ModuleType, small_fs: Path, how: str) -> None:
    """Appending until the disk is full: a KafkaStorageError naming the file and the cause, which takes the log
    dir offline (closing the log then releases its files and raises, Kafka's failure model), the log keeps
    every acknowledged record and no other, and it opens again while the disk is still full (read-only
    always; read-write when nothing needs a new block, which the new segment's preallocated index does) and
    read-write once there is room."""
    directory = small_fs / "topic-0"
    # Deleted at the end, to make room.  Large enough that what is left is not only the active segment's 64 KiB
    # index, which the append that met the full disk had opened and a writer must back before it maps it, but
    # also the producer snapshot every roll writes (a 4 KiB block each on tmpfs).
    (small_fs / "ballast").write_bytes(b"\xbb" * (640 << 10))
    written = run_child(_APPEND_UNTIL_FULL, impl.IMPLEMENTATION, str(directory), how)
    assert written.returncode == 0, written.stderr
    acknowledged, end, named = written.stdout.split()
    assert (int(acknowledged), int(end), named) == (int(end), int(end), "True"), written.stdout
    values = "[300, 5000]"
    for mode in ("read-only", "read-write"):
        opened = run_child(_READ_ALL, impl.IMPLEMENTATION, str(directory), mode)
        assert opened.returncode == 0, opened.stderr
        if opened.stdout.startswith("refused"):
            # The append that found the disk full had opened the new segment's offset index (as Kafka's does,
            # to check the offset fits): preallocated index space a writer must back before it maps it, left by
            # a crash and by a close that the offline dir turned into a release of the files.
            assert mode == "read-write" and opened.stdout.split()[1:3] == [
                "KafkaStorageError", "True"], opened.stdout
        else:
            assert opened.stdout.strip() == f"opened {acknowledged} True {values}", (mode, opened.stdout)
    (small_fs / "ballast").unlink()
    opened = run_child(_READ_ALL, impl.IMPLEMENTATION, str(directory), "read-write")
    assert opened.stdout.strip() == f"opened {acknowledged} True {values}", opened.stdout


# A segment appended to on a full disk, in the two places an append can meet it: the index pages, taken
# before anything is written, and the log write itself, cut back when it fails half done.
_SEGMENT_ON_FULL_DISK = r"""
import os, sys
from pathlib import Path
from kafkalog import MemoryRecords
from kafkalog.config.log_config import LogConfig
from kafkalog.errors import KafkaStorageError
from kafkalog.segment import LogSegment
sys.path.insert(0, "tests")
from tests.support.fault_utils import fill

directory, where = Path(sys.argv[1]), sys.argv[2]
interval = 1 if where == "index" else 1 << 20
segment = LogSegment.open(directory, 0, LogConfig({"index.interval.bytes": interval, "segment.index.bytes": 1 << 20}))

def batch(offset, size):
    return MemoryRecords.with_records([(b"k", b"v" * size, 1_700_000_000_000 + offset)], base_offset=offset)

segment.append(0, 1_700_000_000_000, 0, batch(0, 100))
filler = fill(directory)
if where == "log":
    os.truncate(filler, filler.stat().st_size - 4096)  # room for part of the next batch
before = segment.size()
try:
    segment.append(1, 1_700_000_000_001, 1, batch(1, 10000))
    outcome = "appended"
except KafkaStorageError as e:
    outcome = "No space left on device" in str(e) and str(directory) in str(e)
after = (segment.size(), (directory / "00000000000000000000.log").stat().st_size, segment.offset_index.entries,
         segment.time_index.entries)
filler.unlink()
segment.append(1, 1_700_000_000_001, 1, batch(1, 300))
print(outcome, before, after, segment.recover(), [b.last_offset for b in segment.log.batches()],
      segment.offset_index.entries)
"""


@pytest.mark.parametrize("where", ["index", "log"])
def test_segment_append_on_a_full_disk(impl: ModuleType, small_disk: Path, where: str) -> None:
    """The append fails with a KafkaStorageError naming the file, leaves the segment as it was (no byte of
    the batch in the log, no index entry), and the next append, once there is room, is whole."""
    result = run_child(_SEGMENT_ON_FULL_DISK, impl.IMPLEMENTATION, str(small_disk), where)
    assert result.returncode == 0, result.stderr
    size = len(MemoryRecords.with_records([(b"k", b"v" * 100, T0)]).buffer)
    entries = 1 if where == "index" else 0
    assert result.stdout.strip() == f"True {size} ({size}, {size}, 0, 0) 0 [0, 1] {entries}", result.stdout


# A writer killed while its active segment's indexes were preallocated (sparse), then a full disk: the
# next opens must not touch a hole of those files through a map (on tmpfs even a read of one needs a page).
_CRASH_WITH_SPARSE_INDEXES = r"""
import os, sys
from kafkalog import MemoryRecords
from kafkalog.config.log_config import LogConfig
from kafkalog.log import Log

log = Log(sys.argv[1], LogConfig({"index.interval.bytes": 1, "segment.index.bytes": 256 << 10}))
for i in range(20):
    log.append(MemoryRecords.with_records([(b"k%d" % i, b"v" * 300, 1_700_000_000_000 + i)]))
log.flush()
os._exit(0)
"""


def test_crashed_log_opens_on_a_full_disk(impl: ModuleType, small_fs: Path) -> None:
    directory = small_fs / "topic-0"
    result = run_child(_CRASH_WITH_SPARSE_INDEXES, impl.IMPLEMENTATION, str(directory))
    assert result.returncode == 0, result.stderr
    assert index_filename(directory, 0).stat().st_size == 256 << 10  # preallocated, not trimmed
    filler = fill(small_fs)
    opened = run_child(_READ_ALL, impl.IMPLEMENTATION, str(directory), "read-only")
    assert opened.stdout.strip() == "opened 20 True [300]", opened.stdout + opened.stderr
    opened = run_child(_READ_ALL, impl.IMPLEMENTATION, str(directory), "read-write")
    # Recovery must write the indexes again, so a writer needs their pages: a full disk refuses it, saying so.
    assert opened.stdout.split()[:3] == ["refused", "KafkaStorageError", "True"], opened.stdout + opened.stderr
    filler.unlink()
    opened = run_child(_READ_ALL, impl.IMPLEMENTATION, str(directory), "read-write")
    assert opened.stdout.strip() == "opened 20 True [300]", opened.stdout + opened.stderr


# -- reading instead of mapping answers the same ------------------------------------------------------


def _mixed_log(path: Path, rng: random.Random) -> list[int]:
    """A ``.log`` of v0, v1 and v2 entries, plain and compressed, of many sizes; returns each entry's
    last offset."""
    lasts = []
    offset = 0
    with FileMessageSet.open(path) as f:
        for _ in range(rng.randrange(5, 40)):
            magic = rng.choice([0, 1, 2, 2, 2])
            count = rng.randrange(1, 6)
            records = [(b"k", rng.randbytes(rng.choice([1, 50, 700, 3000])), T0 + rng.randrange(100))
                       for _ in range(count)]
            compression = rng.choice(["none", "none", "gzip"])
            batch = MemoryRecords.with_records(records, magic=magic, compression=compression, base_offset=offset)
            f.append(batch)
            offset += count
            lasts.append(offset - 1)
    return lasts


def _damage(path: Path, rng: random.Random) -> None:
    data = bytearray(path.read_bytes())
    kind = rng.choice(["none", "cut", "flip", "size", "zeros", "huge"])
    at = rng.randrange(len(data))
    if kind == "cut":
        del data[at:]
    elif kind == "flip":
        data[at] ^= 0xFF
    elif kind == "size" and at + 12 <= len(data):
        data[at + 8:at + 12] = rng.randrange(-5, 1 << 20).to_bytes(4, "big", signed=True)
    elif kind == "zeros":
        data += bytes(rng.randrange(1, 5000))
    elif kind == "huge":
        data += (10 << 20).to_bytes(8, "big") + (10 << 20).to_bytes(4, "big") + bytes(50)
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("seed", range(12))
def test_reads_answer_as_the_map_does(impl: ModuleType, tmp_path: Path, seed: int,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A read-only set scans and searches by reading the file a chunk at a time; with chunks far smaller
    than the entries (so every boundary case is met), every answer is the mapped scan's."""
    rng = random.Random(seed)
    path = log_filename(tmp_path, 0)
    lasts = _mixed_log(path, rng)
    _damage(path, rng)
    chunk = rng.choice([5, 61, 512, 4096])
    monkeypatch.setattr(file_message_set, "SCAN_READ_BYTES", chunk)
    monkeypatch.setattr(file_message_set, "SEARCH_READ_BYTES", max(chunk // 4, 1))
    with FileMessageSet(path) as mapped, FileMessageSet(path, writable=False) as read:
        assert mapped.channel.mappable and not read.channel.mappable
        for check_crc, stop_on_invalid in ((True, True), (True, False), (False, False)):
            for start in (0, rng.randrange(len(mapped) + 1)):
                for max_batches in (None, 1, 3):
                    for max_entry_size in (INT32_MAX, 2000):
                        kwargs = {"check_crc": check_crc, "stop_on_invalid": stop_on_invalid,
                                  "starting_position": start, "max_batches": max_batches,
                                  "max_entry_size": max_entry_size}
                        a, b = mapped.scan(**kwargs), read.scan(**kwargs)
                        assert (b.stop_position, b.stop_reason) == (a.stop_position, a.stop_reason), kwargs
                        assert b.batches.tobytes() == a.batches.tobytes(), kwargs
        for target in [-1, *lasts, lasts[-1] + 1]:
            for start in (0, rng.randrange(len(mapped) + 1)):
                outcomes = []
                for fms in (mapped, read):
                    try:
                        outcomes.append(fms.search_for(target, start))
                    except KafkaLogError as e:
                        outcomes.append(str(e))
                assert outcomes[0] == outcomes[1], (target, start)
        for target in (T0 - 1, T0 + 50, T0 + 200):
            assert read.search_for_timestamp(target) == mapped.search_for_timestamp(target)


def test_checkpoint_write_on_a_full_disk(small_fs: Path) -> None:
    """A checkpoint written on a full disk: a KafkaStorageError naming the file and the cause, the previous
    checkpoint whole, and no half-written temporary file left to hold space."""
    checkpoint = OffsetCheckpoint(small_fs / "recovery-point-offset-checkpoint")
    checkpoint.write({("topic", 0): 5})
    filler = fill(small_fs)
    with pytest.raises(KafkaStorageError, match="No space left on device") as raised:
        checkpoint.write({("topic", p): 10**12 + p for p in range(500)})
    assert "recovery-point-offset-checkpoint" in str(raised.value)
    assert checkpoint.read() == {TopicPartition("topic", 0): 5}
    assert sorted(p.name for p in small_fs.iterdir()) == ["filler", "recovery-point-offset-checkpoint"]
    filler.unlink()
    checkpoint.write({("topic", 0): 6})
    assert checkpoint.read() == {TopicPartition("topic", 0): 6}

"""Crash safety: a child process writes to a Log and is killed with SIGKILL at random moments; the parent
reopens the log as after an unclean shutdown and checks what survived.

The child (``CHILD``, run as ``python -c``) opens the log, then loops: append a batch of records whose
key, value and timestamp are derived from the seed and the offset (:func:`record_for`, so the parent can
recompute them and see any corruption), sometimes flush (writing the recovery-point checkpoint and
printing ``flushed <last offset> <first offset> <sha256 of the records since the previous flush>``),
often apply retention (``retention.bytes`` is small, so segments go while it writes; the high watermark
follows the log end offset), sometimes roll.  Before each operation it prints ``op <name>``, so the
parent knows what a kill interrupted.  ``segment.bytes`` is small, so it rolls every few appends.

The parent waits a random time, kills the child, reopens the log with ``had_clean_shutdown=False`` from
the child's recovery-point checkpoint or from 0, and checks that:

* reopening succeeds and leaves no temporary (``.deleted``, ``.cleaned``, ``.swap``) or orphan files;
* the offsets are exactly ``log_start_offset .. log_end_offset - 1``, none twice, in order, and every
  record is the one :func:`record_for` gives for its offset;
* every record the child reported flushed, and every record it finished appending (a SIGKILL loses no
  completed write: the page cache keeps it), at or past the log start offset, is there, and the flush
  hashes match; the log start offset never goes back;
* every segment's indexes pass Kafka's sanity checks and agree with its batches;

then appends more records itself and closes the log cleanly, and the next child opens that clean log.
Each kernel twin runs 5 rounds (a fresh log each) of 6 kills, 60 kills in all, about 7 s a twin; the
child runs the same twin as the parent (``KAFKALOG_PURE_PYTHON`` for the plain one).

A second run (:func:`test_kill_a_log_manager_while_its_cleaner_runs`, issue 15) kills a child whose
``LogManager`` has a running ``LogCleaner`` thread compacting its logs while it appends: the log dir is
reopened with a ``LogManager`` as a broker's restart would, and checked (no cleaner or swap leftovers,
every record the one written at its offset, the latest record of every key flushed before the kill kept),
then closed and opened again, which must trust the clean shutdown.  2 rounds of 3 kills a twin, about
4 s a round (marked slow); most kills land with cleaner output on disk (the test prints how many).
"""

from __future__ import annotations

import hashlib
import inspect
import itertools
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import kafkalog
from kafkalog import MemoryRecords
from kafkalog.checkpoint import (
    LOG_START_OFFSET_CHECKPOINT_FILE,
    RECOVERY_POINT_CHECKPOINT_FILE,
    OffsetCheckpoint,
)
from kafkalog.config.log_config import LogConfig
from kafkalog.log import Log
from kafkalog.scheduler import SYSTEM_TIME, MockScheduler
from kafkalog.topic import TopicPartition

ROUNDS = 5
KILLS_PER_ROUND = 6
TOPIC_PARTITION = TopicPartition("crash", 0)
CHILD_TIMEOUT_S = 20.0


def record_for(seed: int, offset: int) -> tuple[bytes, bytes, int]:
    """The key, value and timestamp of the record at ``offset`` in a log written with ``seed``."""
    digest = hashlib.sha256(b"%d:%d" % (seed, offset)).digest()
    return b"k%d-%d" % (seed, offset), digest * (1 + digest[0] % 8), 1_700_000_000_000 + 10 * offset


def records_hash(items: list[tuple[int, bytes | None, bytes | None, int]]) -> str:
    """sha256 of (offset, key, value, timestamp) tuples, as the child prints it for a flush."""
    h = hashlib.sha256()
    for offset, key, value, timestamp in items:
        h.update(b"%d|%d|%d|" % (offset, timestamp, len(value or b"")))
        h.update(key or b"")
        h.update(b"|")
        h.update(value or b"")
    return h.hexdigest()


def config_for(seed: int) -> dict[str, Any]:
    """The log's properties: small segments and retention so rolls and deletions are frequent."""
    return {
        "segment.bytes": 8192,
        "index.interval.bytes": 512,
        "segment.index.bytes": 4096,
        "retention.bytes": 30_000,
        "retention.ms": -1,
        "file.delete.delay.ms": [0, 20, 60_000][seed % 3],
    }


CHILD_BODY = """
import random
import sys
from pathlib import Path

from kafkalog import MemoryRecords
from kafkalog.checkpoint import OffsetCheckpoint
from kafkalog.config.log_config import LogConfig
from kafkalog.log import Log
from kafkalog.topic import TopicPartition

directory, seed, run, mode = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
rng = random.Random(seed * 1_000_003 + run)
tp = TopicPartition("crash", 0)
recovery_file = OffsetCheckpoint(directory.parent / "recovery-point-offset-checkpoint")
start_file = OffsetCheckpoint(directory.parent / "log-start-offset-checkpoint")
recovery_point = recovery_file.read().get(tp, 0)
log_start = start_file.read().get(tp, 0)
log = Log(directory, LogConfig(config_for(seed)), log_start_offset=log_start, recovery_point=recovery_point,
          had_clean_shutdown=(mode == "clean"))
out = sys.stdout
print("ready", log.log_start_offset, log.log_end_offset, flush=True)
since_flush = log.log_end_offset
for _ in range(200_000):
    base = log.log_end_offset
    count = rng.randint(1, 10)
    batch = [record_for(seed, base + i) for i in range(count)]
    codec = rng.choice(["none", "none", "gzip", "lz4", "snappy", "zstd"])
    print("op append", base, flush=True)
    info = log.append(MemoryRecords.with_records(batch, compression=codec))
    assert info.first_offset == base and info.last_offset == base + count - 1, info
    print("appended", info.last_offset, flush=True)
    if rng.random() < 0.3:
        print("op flush", flush=True)
        log.flush()
        recovery_file.write({tp: log.recovery_point})
        end = log.log_end_offset
        fetched = [(r.offset, r.key, r.value, r.timestamp) for r in log.records(since_flush)] \\
            if since_flush >= log.log_start_offset else []
        items = [(o, *record_for(seed, o)) for o in range(since_flush, end)]
        assert fetched in ([], items), (since_flush, end)
        print("flushed", end - 1, since_flush, records_hash(items), flush=True)
        since_flush = end
    if rng.random() < 0.5:
        print("op retention", flush=True)
        if log.delete_old_segments():
            start_file.write({tp: log.log_start_offset})
    if rng.random() < 0.15:
        print("op roll", flush=True)
        log.roll()
print("op close", flush=True)
log.close()
print("closed", flush=True)
"""

# The child: the derivation, hash and configuration functions of this module, then the loop.
CHILD = "from __future__ import annotations\nimport hashlib\n" + "\n".join(
    textwrap.dedent(inspect.getsource(f)) for f in (record_for, records_hash, config_for)) + CHILD_BODY


def index_checks(log: Log) -> None:
    """Kafka's sanity checks on every segment's indexes, then each offset-index entry against the batches
    (a batch's last offset, pointing at the start of a batch at or before it, entries growing) and each
    time-index entry against the batch holding its offset (whose max timestamp it is)."""
    segments = log.log_segments()
    for i, segment in enumerate(segments):
        upper = segments[i + 1].base_offset if i + 1 < len(segments) else None
        segment.offset_index.sanity_check()
        segment.time_index.sanity_check()
        batches = list(segment.log.batches())
        assert all(b.base_offset >= segment.base_offset for b in batches)
        assert upper is None or all(b.last_offset < upper for b in batches)
        by_position = {b.position: b for b in batches}
        by_last = {b.last_offset: b for b in batches}
        previous = (-1, -1)
        for n in range(segment.offset_index.entries):
            offset, position = segment.offset_index.entry(n)
            assert offset > previous[0] and position > previous[1], (segment, n)
            previous = (offset, position)
            assert position in by_position and by_position[position].base_offset <= offset, (segment, n)
            assert offset in by_last and by_last[offset].position >= position, (segment, n)
        previous = (-2, -1)
        for n in range(segment.time_index.entries):
            timestamp, offset = segment.time_index.entry(n)
            assert timestamp > previous[0] and offset >= previous[1], (segment, n)
            previous = (timestamp, offset)
            holder = [b for b in batches if b.base_offset <= offset <= b.last_offset]
            assert len(holder) == 1 and holder[0].max_timestamp == timestamp, (segment, n, timestamp)
        if batches and upper is not None:
            last = segment.time_index.entry(segment.time_index.entries - 1)
            assert last.timestamp == max(b.max_timestamp for b in batches), segment


class Round:
    """One log directory that a sequence of children write to and the parent checks."""

    def __init__(self, root: Path, seed: int, twin: str) -> None:
        self.root = root
        self.dir = root / "crash-0"
        self.seed = seed
        self.twin = twin
        self.config = LogConfig(config_for(seed))
        self.must_have_end = 0  # every offset below this (and >= log start) must survive
        self.log_start = 0
        self.mode = "new"
        self.hashes: dict[tuple[int, int], str] = {}  # (first, last) -> hash of a reported flush

    def checkpoint(self, name: str) -> int | None:
        return OffsetCheckpoint(self.root / name).read().get(TOPIC_PARTITION)

    def run_child(self, run: int, rng: random.Random) -> tuple[list[list[str]], str]:
        """Start a child, kill it at a random moment, and return its output lines and what it was doing."""
        env = dict(os.environ)
        env["PYTHONPATH"] = str(Path(kafkalog.__file__).resolve().parent.parent)
        env.pop("KAFKALOG_PURE_PYTHON", None)
        if self.twin == "python":
            env["KAFKALOG_PURE_PYTHON"] = "1"
        out_path = self.root / f"child-{run}.out"
        err_path = self.root / f"child-{run}.err"
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            proc = subprocess.Popen([sys.executable, "-c", CHILD, str(self.dir), str(self.seed), str(run),
                                     self.mode], stdout=out, stderr=err, env=env)
        try:
            if rng.random() < 0.15:
                # From the spawn: during start-up, the child's own recovery, or the first writes.
                time.sleep(rng.uniform(0.0, 0.4))
            else:
                deadline = time.monotonic() + CHILD_TIMEOUT_S
                while b"ready" not in out_path.read_bytes():
                    assert proc.poll() is None, err_path.read_text()
                    assert time.monotonic() < deadline, "the child did not open its log"
                    time.sleep(0.002)
                time.sleep(rng.choice([rng.uniform(0.0, 0.02), rng.uniform(0.0, 0.3)]))
            returncode = proc.poll()
            proc.send_signal(signal.SIGKILL)
        finally:
            proc.kill()
            proc.wait(timeout=CHILD_TIMEOUT_S)
        assert returncode is None, f"the child exited by itself ({returncode}): {err_path.read_text()}"
        assert proc.returncode == -signal.SIGKILL
        text = out_path.read_text()
        complete = text[:text.rfind("\n") + 1]  # a line the kill cut short is not a report
        lines = [line.split() for line in complete.splitlines() if line.strip()]
        ops = [line[1] for line in lines if line[0] == "op"]
        last = lines[-1][0] if lines else ""
        doing = "start-up" if not lines else ops[-1] if last == "op" else f"after {last}"
        return lines, doing

    def check(self, lines: list[list[str]], use_checkpoint: bool) -> Log:
        """Reopen the log after a kill and check it (see the module docstring); returns it open."""
        recovery_point = (self.checkpoint(RECOVERY_POINT_CHECKPOINT_FILE) or 0) if use_checkpoint else 0
        log_start = self.checkpoint(LOG_START_OFFSET_CHECKPOINT_FILE) or 0
        scheduler = MockScheduler(SYSTEM_TIME)
        log = Log(self.dir, self.config, log_start_offset=log_start, recovery_point=recovery_point,
                  had_clean_shutdown=False, scheduler=scheduler)
        try:
            scheduler.shutdown()  # deletions the load scheduled (segments after a torn write)
            names = sorted(p.name for p in self.dir.iterdir())
            assert not [n for n in names if n.endswith((".deleted", ".cleaned", ".swap"))], names
            logs = {n.split(".")[0] for n in names if n.endswith(".log")}
            assert {n.split(".")[0] for n in names if n.endswith((".index", ".timeindex"))} <= logs, names

            start, end = log.log_start_offset, log.log_end_offset
            assert start >= self.log_start, (start, self.log_start)
            assert log.segments.first_segment_base_offset() == start
            for line in lines:
                if line[0] == "flushed":
                    last, first = int(line[1]), int(line[2])
                    self.must_have_end = max(self.must_have_end, last + 1)
                    self.hashes[(first, last)] = line[3]
                elif line[0] == "appended":
                    self.must_have_end = max(self.must_have_end, int(line[1]) + 1)
            assert end >= self.must_have_end, (end, self.must_have_end, start)

            got = [(r.offset, r.key, r.value, r.timestamp, r.headers) for r in log.records()]
            assert [g[0] for g in got] == list(range(start, end))
            for offset, key, value, timestamp, headers in got:
                assert (key, value, timestamp) == record_for(self.seed, offset), offset
                assert headers == []
            by_offset = {g[0]: g[:4] for g in got}
            for (first, last), digest in self.hashes.items():
                if first >= start:
                    flushed = [by_offset[o] for o in range(first, last + 1)]
                    assert records_hash(flushed) == digest, (first, last)
            assert log.recovery_point <= end
            index_checks(log)
            self.log_start = start
        except BaseException:
            log.close_handlers()
            raise
        return log

    def append_and_close(self, log: Log, rng: random.Random) -> None:
        """The parent's own appends after a check, then a clean close that the next child trusts."""
        for _ in range(rng.randint(1, 3)):
            base = log.log_end_offset
            batch = [record_for(self.seed, base + i) for i in range(rng.randint(1, 10))]
            info = log.append(MemoryRecords.with_records(batch, compression=rng.choice(["none", "gzip"])))
            assert (info.first_offset, info.last_offset) == (base, base + len(batch) - 1)
        end = log.log_end_offset
        log.close()
        log.scheduler.shutdown()
        OffsetCheckpoint(self.root / RECOVERY_POINT_CHECKPOINT_FILE).write({TOPIC_PARTITION: end})
        start = log.log_start_offset
        OffsetCheckpoint(self.root / LOG_START_OFFSET_CHECKPOINT_FILE).write({TOPIC_PARTITION: start})
        self.must_have_end = end
        self.mode = "clean"


@pytest.mark.parametrize("round_index", range(ROUNDS))
def test_kill_and_recover(impl: ModuleType, tmp_path: Path, round_index: int) -> None:
    twin = "cython" if impl.IMPLEMENTATION == "cython" else "python"
    seed = 1000 * round_index + (7 if twin == "cython" else 3)
    rng = random.Random(seed)
    state = Round(tmp_path, seed, twin)
    interrupted: list[str] = []
    for run in range(KILLS_PER_ROUND):
        lines, doing = state.run_child(run, rng)
        interrupted.append(doing)
        log = state.check(lines, use_checkpoint=rng.random() < 0.7)
        state.append_and_close(log, rng)
    # The last check ran on a log that several children and the parent wrote: it must hold something.
    assert state.must_have_end > 0
    print(f"round {round_index} ({twin}): kills interrupted {interrupted}")


# --- a LogManager killed while its cleaner threads compact its logs ---------------------------------------

CLEANED_TOPIC = "compacted"
CLEANED_PARTITIONS = 2
CLEANED_KEYS = 300
CLEANED_KILLS = 3
CLEANED_ROUNDS = 2
#: Compacted logs of 8 KiB segments, so the appends roll every few batches and the cleaner always has work.
CLEANED_CONFIG: dict[str, Any] = {
    "cleanup.policy": "compact", "segment.bytes": 8192, "segment.index.bytes": 4096, "index.interval.bytes": 512,
    "min.cleanable.dirty.ratio": 0.0, "min.compaction.lag.ms": 0, "file.delete.delay.ms": 20,
}


def cleaned_record(seed: int, partition: int, offset: int) -> tuple[bytes, bytes, int]:
    """The key, value and timestamp written at ``offset`` of ``partition``: a few hundred keys, so the cleaner
    removes most records."""
    digest = hashlib.blake2b(b"%d:%d:%d" % (seed, partition, offset), digest_size=16).digest()
    key = b"key-%03d" % (int.from_bytes(digest[:4], "big") % CLEANED_KEYS)
    return key, digest * (1 + digest[5] % 6), 1_700_000_000_000 + offset


CLEANED_CHILD_BODY = """
import random
import sys
from pathlib import Path

from kafkalog import MemoryRecords
from kafkalog.cleaner.config import CleanerConfig
from kafkalog.config.log_config import LogConfig
from kafkalog.manager.log_manager import LogManager
from kafkalog.topic import TopicPartition

root, seed, run = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(seed * 7919 + run)
# one cleaner thread, a map of 2000 entries, waking every 5 ms when it found nothing to clean
cleaner = CleanerConfig(1, 24 * 2000, 0.9, 64 * 1024, 1 << 20, 1e308, 5, True)
manager = LogManager(root, LogConfig(CLEANED_CONFIG), cleaner_config=cleaner, retention_check_ms=10**9,
                     flush_recovery_offset_checkpoint_ms=10**9, flush_start_offset_checkpoint_ms=10**9,
                     initial_task_delay_ms=10**9)
manager.startup()
logs = [manager.get_or_create_log(TopicPartition(CLEANED_TOPIC, p)) for p in range(CLEANED_PARTITIONS)]
print("ready", flush=True)
for _ in range(1_000_000):
    partition = rng.randrange(CLEANED_PARTITIONS)
    log = logs[partition]
    base = log.log_end_offset
    batch = [cleaned_record(seed, partition, base + i) for i in range(rng.randint(1, 20))]
    codec = rng.choice(["none", "none", "gzip", "lz4", "zstd"])
    info = log.append(MemoryRecords.with_records(batch, compression=codec))
    assert info.first_offset == base, (info, base)
    if rng.random() < 0.1:
        log.flush()
        manager.checkpoint_recovery_point_offsets()
        print("flushed", partition, log.log_end_offset, flush=True)
"""

CLEANED_CHILD = "from __future__ import annotations\nimport hashlib\n" + "\n".join(
    [f"CLEANED_TOPIC = {CLEANED_TOPIC!r}", f"CLEANED_PARTITIONS = {CLEANED_PARTITIONS}",
     f"CLEANED_KEYS = {CLEANED_KEYS}", f"CLEANED_CONFIG = {CLEANED_CONFIG!r}",
     textwrap.dedent(inspect.getsource(cleaned_record))]) + CLEANED_CHILD_BODY


def _cleaned_check(root: Path, seed: int, flushed: dict[int, int], cleaned: dict[int, int]) -> None:
    """Reopen the log dir with a LogManager (recovering, the marker being gone) and check every partition: no
    cleaner or swap leftovers, no overlapping segments, every record the one written at its offset, and the
    latest record of every key flushed before the kill there (or a later one of that key); then close it
    cleanly and check that the next open trusts that and finds the same records."""
    from kafkalog.filenames import CLEAN_SHUTDOWN_FILE
    from kafkalog.manager.log_manager import LogManager

    config = LogConfig(CLEANED_CONFIG)
    assert not (root / CLEAN_SHUTDOWN_FILE).exists()
    seen: dict[TopicPartition, list[tuple[int, bytes | None, bytes | None, int]]] = {}
    with LogManager(root, config) as manager:
        for partition in range(CLEANED_PARTITIONS):
            tp = TopicPartition(CLEANED_TOPIC, partition)
            log = manager.get_log(tp)
            if log is None:
                assert flushed.get(partition, 0) == 0, tp
                continue
            left = sorted(p.name for p in log.dir.iterdir() if p.name.endswith((".cleaned", ".swap")))
            assert left == [], left
            segments = log.log_segments()
            for segment, following in itertools.pairwise(segments):
                batches = list(segment.log.batches())
                assert not batches or batches[-1].last_offset < following.base_offset, (segment, following)
            records = [(r.offset, r.key, r.value, r.timestamp) for r in log.records()]
            offsets = [r[0] for r in records]
            assert offsets == sorted(set(offsets)), tp
            for offset, key, value, timestamp in records:
                assert (key, value, timestamp) == cleaned_record(seed, partition, offset), (tp, offset)
            end = flushed.get(partition, 0)
            assert log.log_end_offset >= end, (tp, log.log_end_offset, end)
            latest: dict[bytes, int] = {}
            for offset in range(end):
                latest[cleaned_record(seed, partition, offset)[0]] = offset
            newest: dict[bytes | None, int] = {}
            for offset, key, _value, _timestamp in records:
                newest[key] = offset
            for key, offset in latest.items():
                assert newest.get(key, -1) >= offset, f"{tp}: the flushed record {offset} of {key!r} is lost"
            cleaned[partition] = max(cleaned.get(partition, 0), len(range(log.log_end_offset)) - len(records))
            seen[tp] = records
            index_checks(log)
    with LogManager(root, config) as reopened:
        for tp, records in seen.items():
            log = reopened.get_log(tp)
            assert log is not None and log.load_report.recovered_segments == [], tp
            assert [(r.offset, r.key, r.value, r.timestamp) for r in log.records()] == records, tp


@pytest.mark.slow
@pytest.mark.parametrize("round_index", range(CLEANED_ROUNDS))
def test_kill_a_log_manager_while_its_cleaner_runs(impl: ModuleType, tmp_path: Path, round_index: int) -> None:
    """A child runs a LogManager whose cleaner thread compacts two logs (8 KiB segments, a dirty ratio of 0, a
    5 ms backoff) while it appends to them and now and then flushes one and checkpoints the recovery points; the
    test kills it at a random moment, reopens the log dir as a broker would (a LogManager, recovering) and checks
    it (see :func:`_cleaned_check`); the next child goes on from there.  Each twin runs 2 rounds of 3 kills."""
    twin = "cython" if impl.IMPLEMENTATION == "cython" else "python"
    seed = 100 * round_index + (11 if twin == "cython" else 5)
    rng = random.Random(seed)
    root = tmp_path / "logs"
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(kafkalog.__file__).resolve().parent.parent)
    env.pop("KAFKALOG_PURE_PYTHON", None)
    if twin == "python":
        env["KAFKALOG_PURE_PYTHON"] = "1"
    flushed: dict[int, int] = {}
    cleaned: dict[int, int] = {}
    mid_cleaning = 0
    for run in range(CLEANED_KILLS):
        out_path, err_path = tmp_path / f"child-{run}.out", tmp_path / f"child-{run}.err"
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            proc = subprocess.Popen([sys.executable, "-c", CLEANED_CHILD, str(root), str(seed), str(run)],
                                    stdout=out, stderr=err, env=env)
        try:
            deadline = time.monotonic() + CHILD_TIMEOUT_S
            while b"ready" not in out_path.read_bytes():
                assert proc.poll() is None, err_path.read_text()
                assert time.monotonic() < deadline, "the child did not open its log dir"
                time.sleep(0.005)
            time.sleep(rng.uniform(0.3, 1.2))
            assert proc.poll() is None, err_path.read_text()
            proc.send_signal(signal.SIGKILL)
        finally:
            proc.kill()
            proc.wait(timeout=CHILD_TIMEOUT_S)
        assert proc.returncode == -signal.SIGKILL, err_path.read_text()
        # A kill that left cleaner output behind landed while a segment was being cleaned or swapped.
        mid_cleaning += any(p.name.endswith((".cleaned", ".swap")) for p in root.rglob("*"))
        text = out_path.read_text()
        for line in text[:text.rfind("\n") + 1].splitlines():
            fields = line.split()
            if fields[0] == "flushed":
                flushed[int(fields[1])] = max(flushed.get(int(fields[1]), 0), int(fields[2]))
        _cleaned_check(root, seed, flushed, cleaned)
    assert sum(flushed.values()) > 0
    # The cleaner did run: records below the log end are gone (the latest of each key kept).
    assert sum(cleaned.values()) > 0, cleaned
    print(f"round {round_index} ({twin}): {mid_cleaning} of {CLEANED_KILLS} kills left cleaner output; the cleaner "
          f"removed {cleaned} records below the flushed ends {flushed}")

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
"""

from __future__ import annotations

import hashlib
import inspect
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
from kafkalog.config import LogConfig
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
from kafkalog.config import LogConfig
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

"""The cleaner killed with SIGKILL: a child process appends to a compacted log of a few MiB and cleans it with
``LogCleaner.run_once`` in a loop; the test kills it at random moments and at chosen steps of the segment swap
(spec §3.18: ``.cleaned`` -> ``.swap``, old -> ``.deleted``, ``.swap`` -> live), reopens the log as after a
crash and checks it (spec §3.10):

* the reopen completes or rolls back the swap: no ``.swap``, ``.cleaned`` or ``.deleted`` file is left and no
  two segments overlap in offsets;
* every record is the one written at its offset (the key and value of offset ``o`` are a function of ``o``,
  :func:`plan_key` and :func:`plan_value`), and offsets strictly increase;
* everything flushed before the kill that was live is there: the latest record of every key among the
  flushed offsets, unless it is a tombstone (which the cleaner may have removed after its horizon, in which
  case no older record of its key may be left either);
* the log still cleans, exactly.

The children run on the same directory one after another, each continuing where the last one was killed;
half of them run the plain-Python kernels.  The steps of the swap are made to last by wrapping, in the child
only, ``LogSegment.change_file_suffixes``, ``LazyIndex.rename_to`` and ``Log.replace_segments``: at the chosen
step the child prints ``PAUSE`` and sleeps until it is killed; children killed at random times sleep a few
milliseconds after every rename instead, so random kills land between renames too.
"""

from __future__ import annotations

import hashlib
import inspect
import os
import pathlib
import random
import selectors
import signal
import subprocess
import sys
import textwrap
import time as wall_time
from typing import Any

from kafkalog import MemoryRecords
from kafkalog.cleaner import LogCleaner
from kafkalog.cleaner.config import CleanerConfig
from kafkalog.config.log_config import LogConfig
from kafkalog.log import Log
from kafkalog.scheduler import MockTime
from kafkalog.topic import TopicPartition

KEYS = 5000
START_MS = 1_400_000_000_000
TP = TopicPartition("crash", 0)
CONFIG: dict[str, Any] = {
    "cleanup.policy": "compact", "segment.bytes": 192 * 1024, "segment.index.bytes": 64 * 1024,
    "min.cleanable.dirty.ratio": 0.0, "delete.retention.ms": 300, "file.delete.delay.ms": 0,
}
#: one thread, a map of 2000 entries (so a big dirty section takes several rounds), 256 KiB of I/O buffers
CLEANER = (1, 24 * 2000, 0.9, 256 * 1024, 1 << 20, 1e308, 15000, True)
PHASES = ("cleaned-to-swap", "swapped", "deleting", "deleting-index", "deleted", "swap-to-live", "replaced")
ROOT = pathlib.Path(__file__).resolve().parents[2]


def plan_key(seed: int, offset: int) -> bytes:
    """The key written at ``offset``."""
    digest = hashlib.blake2b(b"key:%d:%d" % (seed, offset), digest_size=8).digest()
    return b"key-%05d" % (int.from_bytes(digest, "big") % KEYS)


def plan_value(seed: int, key: bytes, offset: int) -> bytes | None:
    """The value written at ``offset`` for ``key``: about one in twenty-five is a tombstone."""
    digest = hashlib.blake2b(b"value:%d:%s:%d" % (seed, key, offset), digest_size=16).digest()
    if digest[0] < 10:
        return None
    return digest * (4 + digest[1] % 10)


CHILD = r'''
import os, random, sys, time as wall_time
from pathlib import Path
from kafkalog import MemoryRecords
from kafkalog.cleaner import LogCleaner
from kafkalog.cleaner.config import CleanerConfig
from kafkalog.config.log_config import LogConfig
from kafkalog.index import LazyIndex
from kafkalog.log import Log
from kafkalog.scheduler import MockTime
from kafkalog.segment import LogSegment
from kafkalog.topic import TopicPartition

root, seed, phase = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
nth, run = int(sys.argv[4]), int(sys.argv[5])
rng = random.Random(seed * 1000 + run)
hits = 0
in_replace = False
old_renamed = 0
live_started = False


def say(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def pause(step):
    global hits
    if step != phase:
        return
    hits += 1
    if hits == nth:
        say("PAUSE " + step)
        wall_time.sleep(120)
        say("NOT KILLED")
        os._exit(3)


def jitter():
    if phase == "jitter":
        wall_time.sleep(rng.uniform(0.002, 0.012))


change_file_suffixes = LogSegment.change_file_suffixes
rename_index = LazyIndex.rename_to
replace_segments = Log.replace_segments


def change(self, old, new):
    global old_renamed, live_started
    if in_replace and new == ".deleted":
        old_renamed += 1
        pause("swapped" if old_renamed == 1 else "deleting")
    if in_replace and old == ".swap" and new == "" and not live_started:
        live_started = True
        pause("deleted")
    change_file_suffixes(self, old, new)
    if in_replace:
        jitter()


def rename(self, path):
    if in_replace:
        source, target = str(self.file), str(path)
        if target.endswith(".index.swap") and source.endswith(".index.cleaned"):
            pause("cleaned-to-swap")
        elif target.endswith(".index.deleted"):
            pause("deleting-index")
        elif target.endswith(".index") and source.endswith(".index.swap"):
            pause("swap-to-live")
    rename_index(self, path)


def replace(self, new_segments, old_segments, is_recovered_swap_file=False):
    global in_replace, old_renamed, live_started
    in_replace, old_renamed, live_started = True, 0, False
    try:
        replace_segments(self, new_segments, old_segments, is_recovered_swap_file)
    finally:
        in_replace = False
    pause("replaced")
    jitter()


LogSegment.change_file_suffixes = change
LazyIndex.rename_to = rename
Log.replace_segments = replace

time = MockTime(current_time_ms=START_MS + run * 10_000_000, current_high_res_time_ns=0)
log = Log(root / "crash-0", LogConfig(CONFIG), scheduler=time.scheduler, time=time, had_clean_shutdown=False)
cleaner = LogCleaner(CleanerConfig(*CLEANER), [root], {TopicPartition("crash", 0): log}, time=time)
progress = open(root / "progress", "a")
say("READY")
for _ in range(40):
    for _ in range(rng.randint(20, 50)):
        leo = log.log_end_offset
        records = []
        for offset in range(leo, leo + rng.randint(1, 50)):
            key = plan_key(seed, offset)
            records.append((key, plan_value(seed, key, offset), time.milliseconds()))
        codec = rng.choice(("none", "none", "gzip", "lz4", "zstd", "snappy"))
        info = log.append(MemoryRecords.with_records(records, compression=codec))
        assert info.first_offset == leo
    log.flush()
    progress.write("flushed %d\n" % log.log_end_offset)
    progress.flush()
    time.sleep(100)
    cleaner.run_once()
    time.sleep(100)
say("DONE")
'''


def child_script() -> str:
    header = "\n".join([
        "import hashlib",
        f"KEYS = {KEYS}",
        f"START_MS = {START_MS}",
        f"CONFIG = {CONFIG!r}",
        f"CLEANER = {CLEANER!r}",
        textwrap.dedent(inspect.getsource(plan_key)),
        textwrap.dedent(inspect.getsource(plan_value)),
    ])
    return header + CHILD


class Plan:
    """What was written at each offset, and the latest offset of each key among the first ``upto`` offsets."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.keys: list[bytes] = []
        self.values: list[bytes | None] = []
        self.latest: dict[bytes, int] = {}

    def extend(self, upto: int) -> None:
        for offset in range(len(self.keys), upto):
            key = plan_key(self.seed, offset)
            self.keys.append(key)
            self.values.append(plan_value(self.seed, key, offset))
            self.latest[key] = offset


class LineReader:
    """Lines of a child's stdout, read with a deadline."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None
        self.fd = proc.stdout.fileno()
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.fd, selectors.EVENT_READ)
        self.buffer = b""

    def read_line(self, timeout: float) -> str | None:
        deadline = wall_time.monotonic() + timeout
        while b"\n" not in self.buffer:
            remaining = deadline - wall_time.monotonic()
            if remaining <= 0 or not self.selector.select(remaining):
                return None
            chunk = os.read(self.fd, 4096)
            if not chunk:
                return None
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line.decode()

    def close(self) -> None:
        self.selector.close()


def flushed(root: pathlib.Path) -> int:
    lines = (root / "progress").read_text().split("\n")
    return max(int(line.split()[1]) for line in lines if line.startswith("flushed "))


def open_log(root: pathlib.Path, time: MockTime) -> Log:
    return Log(root / "crash-0", LogConfig(CONFIG), scheduler=time.scheduler, time=time,
               had_clean_shutdown=False)


def build(root: pathlib.Path, seed: int) -> None:
    """A 4 MiB compacted log of 20 segments, never cleaned."""
    time = MockTime(current_time_ms=START_MS, current_high_res_time_ns=0)
    log = open_log(root, time)
    rng = random.Random(seed)
    try:
        while log.size < 4 << 20:
            leo = log.log_end_offset
            records = [(plan_key(seed, o), plan_value(seed, plan_key(seed, o), o), START_MS)
                       for o in range(leo, leo + rng.randint(1, 50))]
            log.append(MemoryRecords.with_records(records, compression=rng.choice(("none", "gzip"))))
        assert log.number_of_segments >= 20
        log.flush()
        (root / "progress").write_text(f"flushed {log.log_end_offset}\n")
    finally:
        log.close()


def verify(root: pathlib.Path, plan: Plan, time: MockTime) -> Log:
    """Reopen the log as after a crash and check it (module docstring); returns the open log."""
    upto = flushed(root)
    plan.extend(upto)
    log = open_log(root, time)
    try:
        directory = root / "crash-0"
        left = sorted(p.name for p in directory.iterdir()
                      if p.name.endswith((".swap", ".cleaned", ".deleted")))
        assert left == [], f"temporary files left after the reopen: {left}"
        assert log.log_end_offset >= upto, f"flushed records lost: end offset {log.log_end_offset} < {upto}"
        segments = log.log_segments()
        for segment, following in zip(segments, [*segments[1:], None], strict=True):
            offsets = [(b.base_offset, b.last_offset) for b in segment.log.batches()]
            if offsets:
                assert offsets[0][0] >= segment.base_offset
                if following is not None:
                    assert offsets[-1][1] < following.base_offset, (
                        f"segments {segment.base_offset} and {following.base_offset} overlap")
        plan.extend(log.log_end_offset)
        present: dict[int, bytes | None] = {}
        keys_present: dict[bytes, list[int]] = {}
        previous = -1
        for record in log.records():
            offset = record.offset
            assert offset > previous, "offsets must strictly increase"
            previous = offset
            assert record.key == plan.keys[offset] and record.value == plan.values[offset], (
                f"record at {offset} is not the one written there")
            present[offset] = record.value
            keys_present.setdefault(record.key, []).append(offset)
        latest = {}
        for offset in range(upto):
            latest[plan.keys[offset]] = offset
        for key, offset in latest.items():
            if plan.values[offset] is not None:
                assert offset in present, f"live record {offset} (key {key!r}) flushed before the kill lost"
            elif offset not in present:
                older = [o for o in keys_present.get(key, ()) if o < offset]
                assert older == [], f"tombstone {offset} of {key!r} removed, older records {older} remain"
        return log
    except BaseException:
        log.close_handlers()
        raise


def run_child(root: pathlib.Path, seed: int, phase: str, nth: int, run: int, pure_python: bool,
              kill_after: float) -> str:
    """Run one child until it is killed; returns how it ended: the step it paused at, ``random`` (killed at a
    random time), ``missed`` (killed after it did not reach its step in time) or ``done``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    env.pop("KAFKALOG_PURE_PYTHON", None)
    if pure_python:
        env["KAFKALOG_PURE_PYTHON"] = "1"
    errors = root / f"child-{run}.err"
    with open(errors, "wb") as stderr:
        proc = subprocess.Popen([sys.executable, "-c", child_script(), str(root), str(seed), phase, str(nth),
                                 str(run)], stdout=subprocess.PIPE, stderr=stderr, cwd=str(ROOT), env=env,
                                bufsize=0)
    reader = LineReader(proc)
    try:
        line = reader.read_line(30)
        assert line == "READY", f"child {run} did not start: {line!r}\n{errors.read_text()}"
        if phase == "jitter":
            line = reader.read_line(kill_after)
            outcome = "done" if line == "DONE" else "random"
        else:
            line = reader.read_line(20)
            if line is not None and line.startswith("PAUSE "):
                outcome = line.split()[1]
            else:
                outcome = "done" if line == "DONE" else "missed"
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
        returncode = proc.wait(30)
        if outcome == "done":
            assert returncode == 0, f"child {run} failed:\n{errors.read_text()}"
        else:
            assert returncode == -signal.SIGKILL, (
                f"child {run} ended with {returncode}:\n{errors.read_text()}")
        return outcome
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        reader.close()
        assert proc.stdout is not None
        proc.stdout.close()


def test_kill_while_cleaning(tmp_path: pathlib.Path) -> None:
    seed = 17
    root = tmp_path
    build(root, seed)
    rng = random.Random(seed)
    # every step of the swap three times (at its first, second and third occurrence), and random moments
    kills = [(phase, nth) for nth in (1, 2, 3) for phase in PHASES] + [("jitter", 0)] * 15
    rng.shuffle(kills)
    plan = Plan(seed)
    outcomes: dict[str, int] = {}
    time = MockTime(current_time_ms=START_MS, current_high_res_time_ns=0)
    for run, (phase, nth) in enumerate(kills):
        outcome = run_child(root, seed, phase, nth, run, pure_python=run % 2 == 1,
                            kill_after=rng.uniform(0.0, 1.5))
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
        log = verify(root, plan, time)
        time.sleep(1)
        log.close()
    killed = sum(n for outcome, n in outcomes.items() if outcome != "done")
    assert killed >= 30, outcomes
    for phase in PHASES:
        assert outcomes.get(phase, 0) >= 1, f"no kill landed at step {phase}: {outcomes}"
    # the log still cleans, exactly: below the checkpoint only the latest record of each key
    log = verify(root, plan, time)
    try:
        cleaner = LogCleaner(CleanerConfig(*CLEANER), [root], {TP: log}, time=time)
        log.roll()
        cleaner.run_once()
        end = cleaner.cleaner_manager.all_cleaner_checkpoints()[TP]
        assert end == log.log_end_offset
        plan.extend(end)
        latest = {}
        for offset in range(end):
            latest[plan.keys[offset]] = offset
        offsets = [r.offset for r in log.records()]
        live = sorted(o for o in latest.values() if plan.values[o] is not None)
        assert set(live) <= set(offsets) <= set(latest.values())
    finally:
        time.sleep(1)
        log.close()

"""The log cleaner against a model: random keyed workloads compacted in many partial rounds, the
broker-written compacted topics of the golden data, and bad input (maps too small, keyless records,
truncation and appends while a round runs).

The model (spec §4.2-4.5) is exact.  A round with end offset ``E`` (the cleaner checkpoint it writes) leaves,
below ``E``, only the latest record of each key among the records below ``E``, and everything at or past ``E``
untouched; rounds follow one another from the checkpoint, so after every pass of
:meth:`~kafkalog.cleaner.log_cleaner.LogCleaner.run_once` the log must hold exactly:

* every record at or past the checkpoint;
* below it, for each key, its latest record below the checkpoint, unless that is a tombstone whose delete
  horizon has passed.  A v2 tombstone gets its horizon (``now + delete.retention.ms``, written into its
  batch) the first time a round keeps it, and goes in the first round that starts at or after the horizon; a
  v0/v1 tombstone goes when its segment's modification time is at least ``delete.retention.ms`` older than
  the last clean segment's, so it may only go when its segment is that old (the segment times are set
  explicitly to the mock clock's time of the segment's last append).

Every record the log holds must be the one appended at that offset (key, value, timestamp, headers), offsets
strictly increase, and a v2 batch keeps its base and last offsets.  Small segments and small offset maps make
many segments and many partial rounds.  Each test takes the ``impl`` fixture and runs once per kernel twin.
"""

from __future__ import annotations

import itertools
import pathlib
import random
import shutil
import threading
import time as wall_time
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest

from kafkalog import MemoryRecords
from kafkalog.cleaner import Cleaner, LogCleaner
from kafkalog.cleaner.config import CleanerConfig
from kafkalog.cleaner.manager import LogCleaningAborted, LogCleaningAbortedError, LogToClean
from kafkalog.cleaner.offset_map import SkimpyOffsetMap
from kafkalog.cleaner.stats import CleanerStats
from kafkalog.cleaner.throttler import Throttler
from kafkalog.config.log_config import LogConfig
from kafkalog.errors import IllegalArgumentError, IllegalStateError, InvalidRecordError
from kafkalog.log import Log
from kafkalog.manager.log_manager import LogManager
from kafkalog.scheduler import MockTime
from kafkalog.topic import TopicPartition
from tests.support.golden_data import (
    ARTHUR,
    BULLSHIT,
    DANIELOWO,
    KAIPASUBHASH,
    MSCALDAS,
    RONEM,
    SEANORTH,
    VOLODYMYRZEE,
    YUANLIUBEI,
)

START_MS = 1_400_000_000_000
RETENTION_MS = 1000
TP = TopicPartition("model", 0)
CODECS = {0: ("none", "gzip", "snappy", "lz4"), 1: ("none", "gzip", "snappy", "lz4"),
          2: ("none", "gzip", "snappy", "lz4", "zstd")}
TEMP_SUFFIXES = (".cleaned", ".swap")

Rec = tuple[bytes | None, bytes | None, int, tuple[tuple[str, bytes | None], ...]]


def read_all(log: Log) -> list[tuple[int, Rec]]:
    """Every record of the log as ``(offset, (key, value, timestamp, headers))``, in log order."""
    return [(r.offset, (r.key, r.value, r.timestamp, tuple(r.headers))) for r in log.records()]


def cleaner_config(slots: int, load_factor: float = 0.75, io_buffer: int = 4096) -> CleanerConfig:
    """One thread, an offset map of ``slots`` entries (24 bytes each), no I/O limit."""
    return CleanerConfig(1, 24 * slots, load_factor, io_buffer, 1 << 20, 1e308, 15000, True)


def temp_files(directory: pathlib.Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(TEMP_SUFFIXES))


def checkpoint_of(lc: LogCleaner, tp: TopicPartition = TP) -> int:
    return lc.cleaner_manager.all_cleaner_checkpoints().get(tp, 0)


def latest_below(history: dict[int, Rec], end: int) -> dict[bytes | None, int]:
    latest: dict[bytes | None, int] = {}
    for offset in sorted(history):
        if offset < end:
            latest[history[offset][0]] = offset
    return latest


def assert_ordered_and_genuine(records: list[tuple[int, Rec]], history: dict[int, Rec]) -> None:
    offsets = [o for o, _ in records]
    assert all(a < b for a, b in itertools.pairwise(offsets)), "offsets must strictly increase"
    for offset, rec in records:
        assert rec == history[offset], f"record at {offset} changed: {rec!r} != {history[offset]!r}"


# ----------------------------------------------------------------------------------------------------------
# The model harness


class Model:
    """A compacted log, its cleaner and what was appended, with the exact expectations of the module
    docstring."""

    def __init__(self, root: pathlib.Path, rng: random.Random, slots: int, keys: int,
                 dirty_ratio: float) -> None:
        self.root = root
        self.rng = rng
        self.time = MockTime(current_time_ms=START_MS, current_high_res_time_ns=0)
        self.keys = [b"key-%03d" % i for i in range(keys)]
        self.tombstone_rate = rng.choice((0.05, 0.15, 0.3))
        self.slots = slots
        self.config = LogConfig({
            "cleanup.policy": "compact", "segment.bytes": rng.choice((3500, 4500)),
            "index.interval.bytes": 128, "segment.index.bytes": 8192,
            "min.cleanable.dirty.ratio": dirty_ratio, "delete.retention.ms": RETENTION_MS,
            "file.delete.delay.ms": 0})
        self.dir = root / f"{TP.topic}-{TP.partition}"
        self.history: dict[int, Rec] = {}
        self.magic_of: dict[int, int] = {}
        self.v2_spans: set[tuple[int, int]] = set()
        self.segment_mtime: dict[int, int] = {}
        self.horizons: dict[int, int] = {}
        self.dropped: set[int] = set()
        self.rounds = 0
        self.passes = 0
        self.most_segments = 0
        self.full_maps = 0
        self.log = self._open(had_clean_shutdown=None)
        self.cleaner = LogCleaner(cleaner_config(self.slots), [root], {TP: self.log}, time=self.time)

    def _open(self, had_clean_shutdown: bool | None) -> Log:
        return Log(self.dir, self.config, scheduler=self.time.scheduler, time=self.time,
                   had_clean_shutdown=had_clean_shutdown)

    # -- appending ------------------------------------------------------------------------------------------

    def append_batch(self) -> None:
        rng, log = self.rng, self.log
        magic = rng.choice((0, 1, 2, 2, 2))
        codec = rng.choice(CODECS[magic])
        now = self.time.milliseconds()
        records: list[Any] = []
        for _ in range(rng.randint(1, 50)):
            key = rng.choice(self.keys)
            value = None if rng.random() < self.tombstone_rate else rng.randbytes(rng.randint(0, 24))
            timestamp = now - rng.randint(0, 500)
            if magic == 2 and rng.random() < 0.2:
                records.append((key, value, timestamp, [("h", rng.randbytes(3)), ("n", None)]))
            else:
                records.append((key, value, timestamp))
        leo = log.log_end_offset
        if magic == 2 and rng.random() < 0.5:
            info = log.append(MemoryRecords.with_records(records, compression=codec))  # as the leader
        else:
            log_append = magic > 0 and rng.random() < 0.2
            built = MemoryRecords.with_records(
                records, magic=magic, compression=codec, base_offset=leo,
                timestamp_type="LogAppendTime" if log_append else "CreateTime",
                log_append_time=now if log_append else None, partition_leader_epoch=0 if magic == 2 else -1)
            info = log.append(built, assign_offsets=False)  # as a follower: mixed magics stay as written
        assert info.first_offset in (leo, None)  # a follower's v0/v1 append does not say where it starts
        assert info.last_offset == leo + len(records) - 1
        assert log.log_end_offset == leo + len(records)
        appended = [(r.offset, (r.key, r.value, r.timestamp, tuple(r.headers))) for r in log.records(leo)]
        assert [o for o, _ in appended] == list(range(leo, leo + len(records)))
        for (offset, rec), built_rec in zip(appended, records, strict=True):
            assert (rec[0], rec[1]) == (built_rec[0], built_rec[1])
            self.history[offset] = rec
            self.magic_of[offset] = magic
        if magic == 2:
            self.v2_spans.add((leo, leo + len(records) - 1))
        self.segment_mtime[log.active_segment.base_offset] = now
        self.time.sleep(rng.randint(0, 40))

    # -- cleaning -------------------------------------------------------------------------------------------

    def set_segment_times(self) -> list[tuple[int, int]]:
        """Give every segment the mock time of its last append (or the time a cleaning gave it)."""
        now = self.time.milliseconds()
        times = []
        for segment in self.log.log_segments():
            mtime = self.segment_mtime.setdefault(segment.base_offset, now)
            segment.set_last_modified(mtime)
            times.append((segment.base_offset, mtime))
        return times

    def clean_pass(self) -> list[CleanerStats]:
        self.time.sleep(self.rng.choice((0, 100, 400, 700, 1100)))
        segment_times = self.set_segment_times()
        self.most_segments = max(self.most_segments, len(segment_times))
        before = dict(read_all(self.log))
        horizons_before = dict(self.horizons)
        now = self.time.milliseconds()
        stats = self.cleaner.run_once()
        self.passes += 1
        self.rounds += len(stats)
        full = int(self.slots * 0.75) / self.slots
        self.full_maps += sum(1 for st in stats if st.buffer_utilization >= full)
        self.check_after_pass(now, stats, before, horizons_before, segment_times)
        self.segment_mtime = {s.base_offset: round(s.last_modified()) for s in self.log.log_segments()}
        self.time.sleep(1)  # runs the deferred deletes of the replaced segments
        return stats

    def check_after_pass(self, now: int, stats: list[CleanerStats], before: dict[int, Rec],
                         horizons_before: dict[int, int], segment_times: list[tuple[int, int]]) -> None:
        records = read_all(self.log)
        assert_ordered_and_genuine(records, self.history)
        present = dict(records)
        assert set(present) <= set(before), "a cleaning pass cannot add records"
        assert temp_files(self.dir) == []
        end = checkpoint_of(self.cleaner)
        assert end <= self.log.active_segment.base_offset
        cleaned = bool(stats)
        # every record at or past the checkpoint is untouched
        missing_tail = [o for o in self.history if o >= end and o not in present]
        assert missing_tail == [], f"records past the cleaned end offset {end} lost: {missing_tail[:10]}"
        latest = latest_below(self.history, end)
        latest_offsets = set(latest.values())
        max_mtime_below_end = max((t for base, t in segment_times if base < end), default=0)
        for offset in sorted(self.history):
            if offset >= end:
                continue
            key, value, _, _ = self.history[offset]
            if offset not in latest_offsets:
                assert offset not in present, f"{offset} (key {key!r}) superseded below {end} but kept"
                continue
            if value is not None:
                assert offset in present, f"live record {offset} (key {key!r}) lost"
                continue
            # the latest record of its key is a tombstone
            if self.magic_of[offset] == 2:
                horizon = horizons_before.get(offset)
                due = offset in self.dropped or (cleaned and horizon is not None and horizon <= now)
                assert (offset in present) == (not due), (
                    f"tombstone {offset}: horizon {horizon}, now {now}, present {offset in present}")
            elif offset not in present and offset not in self.dropped:
                base = max(b for b, _ in segment_times if b <= offset)
                segment_time = dict(segment_times)[base]
                assert segment_time <= max_mtime_below_end - RETENTION_MS + 2, (
                    f"legacy tombstone {offset} dropped too early: its segment was written at "
                    f"{segment_time}, the newest clean segment at {max_mtime_below_end}")
            if offset not in present:
                self.dropped.add(offset)
        # the delete horizons written into v2 batches
        for segment in self.log.log_segments():
            for batch in segment.log.batches():
                if batch.magic < 2:
                    continue
                assert (batch.base_offset, batch.last_offset) in self.v2_spans, (
                    f"v2 batch [{batch.base_offset}, {batch.last_offset}] does not keep its original offsets")
                horizon = batch.delete_horizon_ms
                for record in batch.records():
                    if record.value is not None:
                        continue
                    if record.offset in self.horizons:
                        assert horizon == self.horizons[record.offset]
                    elif horizon is not None:
                        assert cleaned and horizon == now + RETENTION_MS
                        self.horizons[record.offset] = horizon
                    else:
                        assert record.offset >= end, f"tombstone {record.offset} below {end} without horizon"

    # -- reopening ------------------------------------------------------------------------------------------

    def crash_and_reopen(self) -> None:
        before = read_all(self.log)
        self.time.sleep(1)
        self.log.close_handlers()
        self.log = self._open(had_clean_shutdown=False)
        assert read_all(self.log) == before
        assert temp_files(self.dir) == []
        self.cleaner = LogCleaner(cleaner_config(self.slots), [self.root], {TP: self.log}, time=self.time)

    def close(self) -> None:
        self.time.sleep(1)
        self.log.close()


@pytest.mark.parametrize(("seed", "slots", "keys", "dirty_ratio"), [
    (1, 6, 10, 0.0),    # four keys a round: many partial rounds
    (2, 8, 40, 0.3),    # passes that stop while a third of the log is still dirty
    (3, 24, 120, 0.0),
    (4, 40, 6, 0.0),    # every round maps all the keys
    (5, 16, 80, 0.3),
])
def test_random_workloads_compact_exactly(impl: ModuleType, tmp_path: pathlib.Path, seed: int, slots: int,
                                          keys: int, dirty_ratio: float) -> None:
    model = Model(tmp_path, random.Random(seed * 7919), slots, keys, dirty_ratio)
    try:
        for _ in range(8):
            for _ in range(model.rng.randint(2, 5)):
                model.append_batch()
            model.clean_pass()
        assert model.most_segments >= 3
        model.crash_and_reopen()
        for _ in range(3):
            for _ in range(model.rng.randint(1, 4)):
                model.append_batch()
            model.clean_pass()
        # two last passes well past every horizon, each with something new to clean, whatever the dirty
        # ratio: the first gives a horizon to the tombstones never cleaned yet, the second passes all of them
        props = {**model.config.to_props(), "min.cleanable.dirty.ratio": 0.0}
        model.config = model.log.config = LogConfig(props)
        ends = []
        for _ in range(2):
            model.time.sleep(3 * RETENTION_MS)
            model.append_batch()
            model.log.roll()
            assert model.clean_pass()
            ends.append(checkpoint_of(model.cleaner))
            assert ends[-1] == model.log.active_segment.base_offset == model.log.log_end_offset
        present = dict(read_all(model.log))
        for key, offset in latest_below(model.history, ends[1]).items():
            _, value, _, _ = model.history[offset]
            if value is not None:
                assert present.get(offset) == model.history[offset]
            elif model.magic_of[offset] == 2 and offset < ends[0]:
                assert offset not in present, f"v2 tombstone {offset} of {key!r} outlived its horizon"
        assert model.rounds >= 10
        assert model.full_maps > 0 or model.slots > 24
        assert model.horizons, "the workload wrote tombstones that were cleaned"
    finally:
        model.close()


def test_legacy_tombstones_go_by_segment_time(impl: ModuleType, tmp_path: pathlib.Path) -> None:
    """A v0/v1 tombstone goes once its segment is delete.retention.ms older than the last clean segment
    (Kafka's legacy delete horizon, spec §4.5), and stays while it is not."""
    time = MockTime(current_time_ms=START_MS, current_high_res_time_ns=0)
    # 50-byte segments: one legacy tombstone each, and no two of them fit one cleaned segment
    config = LogConfig({"cleanup.policy": "compact", "segment.bytes": 50, "min.cleanable.dirty.ratio": 0.0,
                        "delete.retention.ms": RETENTION_MS, "file.delete.delay.ms": 0})
    log = Log(tmp_path / "model-0", config, scheduler=time.scheduler, time=time)
    try:
        for magic, key in ((1, b"a"), (0, b"b"), (1, b"c")):
            leo = log.log_end_offset
            log.append(MemoryRecords.with_records([(key, None, START_MS)], magic=magic, base_offset=leo),
                       assign_offsets=False)
            log.roll()
        lc = LogCleaner(cleaner_config(100), [tmp_path], {TP: log}, time=time)
        # first pass: nothing is clean yet, so the legacy horizon is 0 and every tombstone stays
        for segment in log.log_segments():
            segment.set_last_modified(START_MS)
        assert len(lc.run_once()) == 1
        assert checkpoint_of(lc) == 3
        assert [(o, k, v) for o, (k, v, _, _) in read_all(log)] == [(0, b"a", None), (1, b"b", None),
                                                                     (2, b"c", None)]
        # a dirty record, then the times: "c" (the last clean segment) written 5 retention periods after "a",
        # "b" half a period after the horizon that gives (c's time - retention)
        log.append(MemoryRecords.with_records([(b"d", b"v", START_MS)], magic=0, base_offset=3),
                   assign_offsets=False)
        log.roll()
        segments = log.log_segments()
        assert [s.base_offset for s in segments] == [0, 1, 2, 3, 4]
        for segment, mtime in zip(segments[:4], (0, 4.5, 5, 5), strict=True):
            segment.set_last_modified(START_MS + int(mtime * RETENTION_MS))
        assert len(lc.run_once()) == 1
        assert [(o, k, v) for o, (k, v, _, _) in read_all(log)] == [(1, b"b", None), (2, b"c", None),
                                                                     (3, b"d", b"v")]
    finally:
        time.sleep(1)
        log.close()


# ----------------------------------------------------------------------------------------------------------
# Golden compacted topics

GOLDEN_COMPACTED = {
    # path: (records, first offset, last offset, tombstones, distinct keys)
    f"{ARTHUR}/__consumer_offsets-19": (7, 186795, 258526, 0, 7),
    f"{DANIELOWO}/_kafka-connect-configs-0": (1, 0, 0, 0, 1),
    f"{DANIELOWO}/_schemas-0": (4, 0, 3, 4, 1),
    f"{KAIPASUBHASH}/__consumer_offsets-2": (3, 0, 2, 0, 2),
    f"{KAIPASUBHASH}/__consumer_offsets-26": (8, 0, 7, 0, 2),
    f"{KAIPASUBHASH}/__consumer_offsets-46": (8, 0, 7, 0, 2),
    f"{VOLODYMYRZEE}/__consumer_offsets-12": (470, 0, 469, 0, 4),
    f"{VOLODYMYRZEE}/__consumer_offsets-17": (3, 0, 2, 1, 1),
    f"{VOLODYMYRZEE}/__consumer_offsets-18": (499, 0, 498, 0, 4),
    f"{VOLODYMYRZEE}/__consumer_offsets-32": (50, 0, 49, 0, 4),
    f"{VOLODYMYRZEE}/__consumer_offsets-33": (3, 0, 2, 1, 1),
    f"{MSCALDAS}/__consumer_offsets-0": (6, 0, 5, 1, 1),
    f"{MSCALDAS}/__consumer_offsets-29": (78, 0, 77, 1, 1),
    f"{MSCALDAS}/__consumer_offsets-37": (90, 0, 89, 1, 1),
    f"{MSCALDAS}/_confluent-command-0": (2, 0, 1, 0, 2),
    f"{MSCALDAS}/_schemas-0": (63, 0, 62, 63, 1),
    f"{MSCALDAS}/docker-connect-configs-0": (54, 0, 53, 18, 39),
    f"{MSCALDAS}/docker-connect-status-0": (135, 0, 134, 18, 20),
    f"{RONEM}/__consumer_offsets-31": (3, 2, 4, 0, 1),
    f"{RONEM}/__consumer_offsets-44": (4, 6, 10, 2, 2),
    f"{SEANORTH}/__consumer_offsets-16": (69, 0, 68, 0, 3),
    f"{BULLSHIT}/__consumer_offsets-40": (860, 0, 859, 0, 2),
    f"{YUANLIUBEI}/__consumer_offsets-17": (4, 56, 59, 2, 2),
}


def decode_original(directory: pathlib.Path) -> tuple[dict[int, Rec], set[tuple[int, int]], set[int]]:
    """The records of a golden partition read straight from its ``.log`` files, the offset spans of its v2
    batches, and the magics it holds."""
    history: dict[int, Rec] = {}
    spans: set[tuple[int, int]] = set()
    magics: set[int] = set()
    for path in sorted(directory.glob("*.log")):
        for batch in MemoryRecords(path.read_bytes()).batches():
            magics.add(batch.magic)
            if batch.magic == 2:
                spans.add((batch.base_offset, batch.last_offset))
            for r in batch.records():
                history[r.offset] = (r.key, r.value, r.timestamp, tuple(r.headers))
    return history, spans, magics


def clean_until_done(lc: LogCleaner) -> int:
    rounds = 0
    for _ in range(1000):
        stats = lc.run_once()
        if not stats:
            return rounds
        rounds += len(stats)
    raise AssertionError("the cleaner never ran out of work")


def _tp(name: str) -> tuple[str, int]:
    topic, _, partition = name.rpartition("-")
    return topic, int(partition)


@pytest.mark.parametrize("path", sorted(GOLDEN_COMPACTED))
def test_golden_compacted_topics(impl: ModuleType, golden: pathlib.Path, tmp_path: pathlib.Path,
                                 path: str) -> None:
    source = golden / path
    history, spans, magics = decode_original(source)
    count, first, last, tombstones, distinct = GOLDEN_COMPACTED[path]
    assert (len(history), min(history), max(history)) == (count, first, last)
    assert sum(1 for rec in history.values() if rec[1] is None) == tombstones
    latest = latest_below(history, last + 1)
    assert len(latest) == distinct and None not in latest
    root = tmp_path / "data"
    root.mkdir()
    directory = root / source.name
    shutil.copytree(source, directory)
    time = MockTime(current_time_ms=START_MS, current_high_res_time_ns=0)
    config = LogConfig({"cleanup.policy": "compact", "min.cleanable.dirty.ratio": 0.0,
                        "delete.retention.ms": RETENTION_MS, "file.delete.delay.ms": 0})
    log = Log(directory, config, scheduler=time.scheduler, time=time, had_clean_shutdown=False)
    try:
        assert log.log_end_offset == last + 1
        assert log.high_watermark == log.log_end_offset
        assert dict(read_all(log)) == history
        log.roll()  # every broker-written record is now in a non-active, cleanable segment
        for segment in log.log_segments():
            segment.set_last_modified(START_MS)
        lc = LogCleaner(cleaner_config(4096), [root], {TopicPartition(*_tp(source.name)): log}, time=time)
        assert clean_until_done(lc) >= 1
        now = time.milliseconds()
        kept = read_all(log)
        assert_ordered_and_genuine(kept, history)
        # all of it was cleaned at once: the latest record of every key, tombstones still inside their horizon
        assert [o for o, _ in kept] == sorted(latest.values())
        for segment in log.log_segments():
            for batch in segment.log.batches():
                if batch.magic == 2:
                    assert (batch.base_offset, batch.last_offset) in spans
                    if any(r.value is None for r in batch.records()):
                        assert batch.delete_horizon_ms == now + RETENTION_MS
        if magics == {1}:
            assert {b.magic for s in log.log_segments() for b in s.log.batches()} == {1}
        assert temp_files(directory) == []
        # past the horizon, with something new to clean: the tombstones go, the values stay
        time.sleep(RETENTION_MS + 1)
        probe_record = (b"\x00kafkalog-probe", b"probe", time.milliseconds())
        probe = log.append(MemoryRecords.with_records([probe_record]))
        log.roll()
        assert clean_until_done(lc) >= 1
        live = sorted(o for o in latest.values() if history[o][1] is not None)
        after = read_all(log)
        assert_ordered_and_genuine([(o, r) for o, r in after if o != probe.first_offset], history)
        assert [o for o, _ in after] == [*live, probe.first_offset]
        time.sleep(1)
        log.close()
        reopened = Log(directory, config, scheduler=time.scheduler, time=time, had_clean_shutdown=False)
        try:
            assert read_all(reopened) == after
        finally:
            reopened.close()
    finally:
        time.sleep(1)
        log.close()


# ----------------------------------------------------------------------------------------------------------
# Bad input


def build_log(directory: pathlib.Path, time: MockTime, config: LogConfig, rng: random.Random, batches: int,
              keys: int, tombstone_rate: float = 0.0, log: Log | None = None) -> tuple[Log, dict[int, Rec]]:
    """A log of ``batches`` v2 batches of 1..20 records over ``keys`` keys; returns it and what it holds."""
    if log is None:
        log = Log(directory, config, scheduler=time.scheduler, time=time)
    for _ in range(batches):
        records = [(b"k%03d" % rng.randrange(keys),
                    None if rng.random() < tombstone_rate else rng.randbytes(rng.randint(1, 30)),
                    time.milliseconds()) for _ in range(rng.randint(1, 20))]
        log.append(MemoryRecords.with_records(records, compression=rng.choice(CODECS[2])))
    return log, dict(read_all(log))


def compact_config(**overrides: Any) -> LogConfig:
    props: dict[str, Any] = {"cleanup.policy": "compact", "segment.bytes": 1500, "index.interval.bytes": 128,
                             "segment.index.bytes": 4096,
                             "min.cleanable.dirty.ratio": 0.0, "delete.retention.ms": 10 * RETENTION_MS,
                             "file.delete.delay.ms": 0}
    props.update(overrides)
    return LogConfig(props)


def assert_exact(records: list[tuple[int, Rec]], history: dict[int, Rec], end: int) -> None:
    """The exact model without tombstone drops: below ``end`` the latest record of each key, then
    everything."""
    assert_ordered_and_genuine(records, history)
    expected = sorted(set(latest_below(history, end).values()) | {o for o in history if o >= end})
    assert [o for o, _ in records] == expected


@pytest.mark.parametrize(("memory", "load_factor", "error"), [
    (24, 0.9, IllegalStateError),   # one slot: 1 x 0.9 <= 1
    (47, 1.0, IllegalStateError),   # still one slot: 1 x 1.0 <= 1
    (10, 0.9, IllegalArgumentError),  # not even one 24-byte entry
])
def test_offset_map_too_small_is_refused(impl: ModuleType, tmp_path: pathlib.Path, memory: int,
                                         load_factor: float, error: type[Exception]) -> None:
    time = MockTime(current_time_ms=START_MS, current_high_res_time_ns=0)
    log, history = build_log(tmp_path / "model-0", time, compact_config(), random.Random(5), 30, 8)
    try:
        log.roll()
        files = sorted(p.name for p in log.dir.iterdir())
        config = CleanerConfig(1, memory, load_factor, 4096, 1 << 20, 1e308, 15000, True)
        lc = LogCleaner(config, [tmp_path], {TP: log}, time=time)
        with pytest.raises(error) as info:
            lc.run_once()
        if error is IllegalStateError:
            assert "offset map is too small to fit in even a single message" in str(info.value)
        else:
            assert "cannot hold one 24-byte entry" in str(info.value)
        assert sorted(p.name for p in log.dir.iterdir()) == files
        assert dict(read_all(log)) == history
        assert checkpoint_of(lc) == 0
    finally:
        time.sleep(1)
        log.close()


def test_map_of_one_key_makes_progress(impl: ModuleType, tmp_path: pathlib.Path) -> None:
    """Two slots at load factor 0.75 map one record per round (the map counts as full before any second put,
    even of the same key, as Kafka's does): every round still moves the end offset forward by one, and the
    rounds together clean the log exactly."""
    time = MockTime(current_time_ms=START_MS, current_high_res_time_ns=0)
    config = compact_config(**{"segment.bytes": 300})

    def build(name: str) -> tuple[Log, dict[int, Rec]]:
        rng = random.Random(11)
        log = Log(tmp_path / name, config, scheduler=time.scheduler, time=time)
        for _ in range(40):
            log.append(MemoryRecords.with_records([(b"k%d" % rng.randrange(6), rng.randbytes(20), START_MS)]))
        log.roll()
        return log, dict(read_all(log))

    log, history = build("model-0")
    other, other_history = build("other-0")
    try:
        assert log.number_of_segments >= 8
        uncleanable = log.active_segment.base_offset
        assert uncleanable == 40
        cleaner = Cleaner(0, SkimpyOffsetMap(48), 4096, 1 << 20, 0.75, Throttler(1e308), time,
                          lambda tp: None)
        assert cleaner.offset_map.slots == 2
        first_dirty, ends = 0, []
        while first_dirty < uncleanable:
            end, stats = cleaner.clean(LogToClean(TP, log, first_dirty, uncleanable))
            assert cleaner.offset_map.size == 1
            assert stats.map_messages_read >= 1
            ends.append(end)
            assert_exact(read_all(log), history, end)
            first_dirty = end
        assert ends == list(range(1, 41))
        # the same through the LogCleaner and its 48-byte dedupe buffer
        assert other_history == history
        lc = LogCleaner(cleaner_config(2), [tmp_path], {TopicPartition("other", 0): other}, time=time)
        stats = lc.run_once()
        assert len(stats) == 40
        assert all(st.buffer_utilization == 0.5 for st in stats)
        assert checkpoint_of(lc, TopicPartition("other", 0)) == 40
        assert read_all(other) == read_all(log)
    finally:
        time.sleep(1)
        log.close()
        other.close()


@pytest.mark.parametrize("magic", [0, 1, 2])
def test_keyless_records(impl: ModuleType, tmp_path: pathlib.Path, magic: int) -> None:
    """A record without a key is refused on a compacted topic; one already in the log (written before the
    topic became compacted) is removed by the cleaner and counted as invalid, wherever it is, the last entry
    of the cleaned range included."""
    time = MockTime(current_time_ms=START_MS, current_high_res_time_ns=0)
    compact = compact_config()
    log = Log(tmp_path / "model-0", compact, scheduler=time.scheduler, time=time)
    try:
        # refused at append on a compacted topic, the log unchanged
        with pytest.raises(InvalidRecordError, match="Compacted topic cannot accept message without key"):
            log.append(MemoryRecords.with_records([(b"k", b"v", START_MS), (None, b"nokey", START_MS)],
                                                  magic=magic))
        assert log.log_end_offset == 0 and log.size == 0
        # written while the topic was not compacted, then the policy switched
        log.config = compact_config(**{"cleanup.policy": "delete"})
        rng = random.Random(magic)
        keyless = 0
        for i in range(30):
            leo = log.log_end_offset
            records = []
            for _ in range(rng.randint(1, 8)):
                key = None if rng.random() < 0.3 else b"k%d" % rng.randrange(5)
                records.append((key, rng.randbytes(8), START_MS))
            if i == 29:
                records = [(None, b"last", START_MS)]  # the last entry of the cleaned range has no key
            keyless += sum(1 for r in records if r[0] is None)
            built = MemoryRecords.with_records(records, magic=magic, base_offset=leo,
                                               compression=rng.choice(CODECS[magic]),
                                               partition_leader_epoch=0 if magic == 2 else -1)
            log.append(built, assign_offsets=False)
        history = dict(read_all(log))
        assert keyless > 0 and sum(1 for r in history.values() if r[0] is None) == keyless
        log.roll()
        log.config = compact
        lc = LogCleaner(cleaner_config(100), [tmp_path], {TP: log}, time=time)
        stats = lc.run_once()
        assert len(stats) == 1
        assert stats[0].invalid_messages_read == keyless
        assert stats[0].messages_read == len(history)
        kept = read_all(log)
        assert_ordered_and_genuine(kept, history)
        assert [o for o, _ in kept] == sorted(o for k, o in latest_below(history, len(history)).items()
                                              if k is not None)
    finally:
        time.sleep(1)
        log.close()


class TruncateWhileCleaning:
    """A LogManager-owned compacted log whose cleaning is interrupted at the ``at``-th check of the cleaner
    by a truncation from another thread through ``LogManager.truncate_to`` (which aborts and pauses the
    cleaning)."""

    def __init__(self, root: pathlib.Path, at: int, seed: int) -> None:
        self.time = MockTime(current_time_ms=START_MS, current_high_res_time_ns=0)
        self.manager = LogManager([root], default_config=compact_config(), cleaner_config=cleaner_config(12),
                                  scheduler=self.time.scheduler, time=self.time)
        self.log = self.manager.create_log(TP)
        self.log, self.history = build_log(self.log.dir, self.time, compact_config(), random.Random(seed),
                                           60, 20, tombstone_rate=0.1, log=self.log)
        self.at = at
        self.target = 0
        self.calls = 0
        self.truncator: threading.Thread | None = None
        self.errors: list[BaseException] = []

    def hook(self, original: Callable[[TopicPartition], None]) -> Callable[[TopicPartition], None]:
        manager = self.manager.cleaner.cleaner_manager

        def check(tp: TopicPartition) -> None:
            self.calls += 1
            if self.calls == self.at and self.truncator is None:
                self.truncator = threading.Thread(target=self._truncate)
                self.truncator.start()
                deadline = wall_time.monotonic() + 10
                while not manager.is_cleaning_in_state(TP, LogCleaningAborted):
                    assert wall_time.monotonic() < deadline, "the truncation never aborted the cleaning"
                    wall_time.sleep(0.001)
            original(tp)

        return check

    def _truncate(self) -> None:
        try:
            self.manager.truncate_to({TP: self.target})
        except BaseException as e:  # reported by the test
            self.errors.append(e)


@pytest.mark.parametrize("at", [1, 3, 8, 21])
def test_truncation_while_cleaning_aborts_cleanly(impl: ModuleType, tmp_path: pathlib.Path, at: int) -> None:
    case = TruncateWhileCleaning(tmp_path, at, seed=at)
    manager, log = case.manager, case.log
    try:
        segments = log.log_segments()
        assert len(segments) >= 8
        # the cleaner may not go past the high watermark, which the truncation point respects (Kafka
        # truncates a follower at or above its high watermark), so no record below it can be superseded by
        # one above it; a truncation removes the batch holding its offset whole (Kafka), so truncate at a
        # batch's base offset
        batches = [b.base_offset for b in segments[len(segments) * 2 // 3].log.batches()]
        assert len(batches) >= 2
        case.target = batches[1]
        log.high_watermark = case.target
        cleaner_manager = manager.cleaner.cleaner_manager
        cleaner_manager.check_cleaning_aborted = case.hook(  # type: ignore[method-assign]
            cleaner_manager.check_cleaning_aborted)
        manager.cleaner.run_once()
        assert case.truncator is not None, "the cleaner never reached the check where the truncation starts"
        case.truncator.join(10)
        assert not case.truncator.is_alive() and case.errors == []
        assert log.log_end_offset == case.target
        case.time.sleep(1)
        assert temp_files(log.dir) == []
        assert not [p.name for p in log.dir.iterdir() if p.name.endswith(".deleted")]
        below = {o: r for o, r in case.history.items() if o < case.target}
        records = read_all(log)
        assert_ordered_and_genuine(records, below)
        present = dict(records)
        for key, offset in latest_below(below, case.target).items():
            assert offset in present, f"record {offset} of key {key!r} below the truncation point lost"
        # aborted, paused for the truncation, then resumed (Kafka: LogManager.truncateTo)
        assert cleaner_manager.cleaning_state(TP) is None
        # and the log still compacts, exactly
        log.high_watermark = None
        log, history = build_log(log.dir, case.time, compact_config(), random.Random(99), 10, 20, log=log)
        log.roll()
        manager.cleaner.run_once()
        end = checkpoint_of(manager.cleaner)
        assert end == log.active_segment.base_offset
        assert_exact(read_all(log), history, end)
    finally:
        case.time.sleep(1)
        manager.shutdown()


def test_truncation_through_the_manager_lowers_the_cleaner_checkpoint(impl: ModuleType,
                                                                      tmp_path: pathlib.Path) -> None:
    """Kafka's LogManager.truncateTo lowers the cleaner checkpoint to the active segment's base offset after
    truncating below it (``maybeTruncateCleanerCheckpointToActiveSegmentBaseOffset``), so the records written
    again over the truncated range are cleaned as dirty ones."""
    case = TruncateWhileCleaning(tmp_path, at=0, seed=3)
    manager, log = case.manager, case.log
    try:
        log.roll()
        manager.cleaner.run_once()
        end = checkpoint_of(manager.cleaner)
        assert end == log.active_segment.base_offset > 0
        target = end // 2
        manager.truncate_to({TP: target})
        assert log.log_end_offset == target
        assert checkpoint_of(manager.cleaner) <= log.active_segment.base_offset <= target
        manager.truncate_fully_and_start_at(TP, 5)
        assert checkpoint_of(manager.cleaner) <= 5
    finally:
        case.time.sleep(1)
        manager.shutdown()


@pytest.mark.parametrize("fraction", [0.0, 0.2, 0.45, 0.7, 0.95])
def test_abort_from_check_done_leaves_no_temp_files(impl: ModuleType, tmp_path: pathlib.Path,
                                                   fraction: float) -> None:
    """A round stopped by ``check_done`` (Kafka's testCleanSegmentsWithAbort) deletes its ``.cleaned``
    segment: the groups already swapped stay cleaned, the rest untouched, nothing live lost."""
    time = MockTime(current_time_ms=START_MS, current_high_res_time_ns=0)
    calls = 0
    abort_at: int | None = None

    def check_done(tp: TopicPartition) -> None:
        nonlocal calls
        calls += 1
        if abort_at is not None and calls >= abort_at:
            raise LogCleaningAbortedError()

    def cleaner(slots: int) -> Cleaner:
        return Cleaner(0, SkimpyOffsetMap(24 * slots), 512, 1 << 20, 0.75, Throttler(1e308), time, check_done)

    # the same log twice: one to count the checks of a whole round, one to abort
    counted, _ = build_log(tmp_path / "counted-0", time, compact_config(), random.Random(7), 50, 10)
    log, history = build_log(tmp_path / "model-0", time, compact_config(), random.Random(7), 50, 10)
    try:
        counted.roll()
        log.roll()
        uncleanable = log.active_segment.base_offset
        assert uncleanable == counted.active_segment.base_offset
        cleaner(100).clean(LogToClean(TopicPartition("counted", 0), counted, 0, uncleanable))
        assert calls > 20
        abort_at, calls = 1 + int(fraction * calls), 0
        with pytest.raises(LogCleaningAbortedError):
            cleaner(100).clean(LogToClean(TP, log, 0, uncleanable))
        assert calls == abort_at
        assert temp_files(log.dir) == []
        records = read_all(log)
        assert_ordered_and_genuine(records, history)
        present = dict(records)
        for offset in latest_below(history, uncleanable).values():
            assert offset in present
        # a later, uninterrupted round finishes the job
        abort_at = None
        end, _ = cleaner(1000).clean(LogToClean(TP, log, 0, uncleanable))
        assert end == uncleanable
        assert_exact(read_all(log), history, end)
    finally:
        time.sleep(1)
        counted.close()
        log.close()


def test_appends_while_cleaning(impl: ModuleType, tmp_path: pathlib.Path) -> None:
    """A thread appends (rolling segments) while run_once cleans: every append lands, in order, and the log
    ends exactly compacted."""
    time = MockTime(current_time_ms=START_MS, current_high_res_time_ns=0)
    config = compact_config(**{"segment.bytes": 2500})
    log, history = build_log(tmp_path / "model-0", time, config, random.Random(1), 40, 15)
    prefilled = log.log_end_offset
    errors: list[BaseException] = []
    appended: list[tuple[int, int]] = []
    done = threading.Event()

    def appender() -> None:
        rng = random.Random(2)
        try:
            for _ in range(150):
                records = [(b"k%03d" % rng.randrange(15), rng.randbytes(rng.randint(1, 30)), START_MS)
                           for _ in range(rng.randint(1, 10))]
                codec = rng.choice(("none", "gzip"))
                info = log.append(MemoryRecords.with_records(records, compression=codec))
                appended.append((info.first_offset, info.last_offset))
                for offset, (key, value, timestamp) in zip(range(info.first_offset, info.last_offset + 1),
                                                           records, strict=True):
                    history[offset] = (key, value, timestamp, ())
                wall_time.sleep(0.004)
        except BaseException as e:  # reported by the test
            errors.append(e)
        finally:
            done.set()

    try:
        lc = LogCleaner(cleaner_config(18), [tmp_path], {TP: log}, time=time)
        manager = lc.cleaner_manager
        check_cleaning_aborted = manager.check_cleaning_aborted
        concurrent_checks = 0

        def counting_check(tp: TopicPartition) -> None:
            nonlocal concurrent_checks
            concurrent_checks += not done.is_set()  # the cleaner at work while the appends go on
            check_cleaning_aborted(tp)

        manager.check_cleaning_aborted = counting_check  # type: ignore[method-assign]
        thread = threading.Thread(target=appender)
        thread.start()
        passes = rounds = 0
        while not done.is_set() or passes < 3:
            rounds += len(lc.run_once())
            passes += 1
            time.sleep(1)
        thread.join()
        assert errors == []
        assert rounds > 0 and concurrent_checks > 20
        assert len(appended) == 150
        assert all(b[0] == a[1] + 1 for a, b in itertools.pairwise(appended))
        assert log.log_end_offset == appended[-1][1] + 1 == len(history)
        assert appended[0][0] == prefilled
        end = checkpoint_of(lc)
        assert_exact(read_all(log), history, end)
        log.roll()
        lc.run_once()
        end = checkpoint_of(lc)
        assert end == log.log_end_offset
        assert_exact(read_all(log), history, end)
    finally:
        time.sleep(1)
        log.close()

"""Log against an in-memory model: a hypothesis state machine of appends, reads, rolls, truncations,
retention, flushes and clean or unclean reopens, checked after every step.

The model is the list of records the log must hold (offset, timestamp, key, value, headers) and the
batch each one was written in, with the log start and end offsets.  What the model needs to know of the
log's rules (spec §3.12-3.17, Kafka's ``LogValidator``):

* offsets are given from the log end offset; the stored timestamp is -1 on a v0 log, the append time on a
  LogAppendTime log, otherwise the record's own (-1 when it came in as v0);
* a v2 log writes every append as one batch; a v0/v1 log writes one wrapper when the target codec
  compresses and one entry per record when it does not; headers cannot go to v0/v1 and zstd cannot be
  written as v0/v1 (both ``IllegalArgumentError``, the log unchanged);
* a truncation removes the batch holding the target offset whole and sets the end offset to the target,
  so the tail can have a gap that a reopen closes (the end offset is then read from the active segment);
* retention is checked against an oracle that applies Kafka's predicates (size, then time, each segment
  wholly below the high watermark, never an empty last segment) to the segments as they were before.

After every step ``list(log.records())`` must equal the model below the high watermark (and before a batch
holding it), the offsets must match, and every
segment's indexes must agree with its batches.  Small ``segment.bytes`` and ``index.interval.bytes`` make
rolls and index entries frequent.  Each twin runs 60 examples of up to 40 steps (about 5 s a twin).
A failure the machine finds only in longer runs is kept below as a fixed test.
"""

from __future__ import annotations

import bisect
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from kafkalog import MemoryRecords
from kafkalog.config.log_config import LogConfig
from kafkalog.errors import IllegalArgumentError, OffsetOutOfRangeError
from kafkalog.log import Log
from kafkalog.scheduler import MockTime

SEGMENT_BYTES = 3200
INDEX_INTERVAL = 256
# 30 offset entries, 20 time entries: more than a 3200-byte segment can need at a 256-byte interval, so
# a rebuilt index always fits (Kafka shares the limit: recovery cannot outgrow a full index).
INDEX_BYTES = 240
START_MS = 1_700_000_000_000
HOUR = 3_600_000
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")

SETTINGS = settings(max_examples=60, stateful_step_count=40, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@dataclass
class Rec:
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]
    batch: int

    def as_tuple(self) -> tuple[Any, ...]:
        return (self.offset, self.timestamp, self.key, self.value, self.headers)


@dataclass
class Model:
    records: list[Rec] = field(default_factory=list)
    log_start: int = 0
    log_end: int = 0
    next_batch: int = 0

    def offsets(self) -> list[int]:
        return [r.offset for r in self.records]

    def visible(self) -> list[tuple[Any, ...]]:
        return [r.as_tuple() for r in self.records if r.offset >= self.log_start]

    def max_timestamp(self, lo: int, hi: int | None) -> int:
        """The largest timestamp of the records in [lo, hi) (-1 when none has one)."""
        best = -1
        for r in self.records:
            if r.offset >= lo and (hi is None or r.offset < hi):
                best = max(best, r.timestamp)
        return best


def index_checks(log: Log, batch_times: bool = True) -> None:
    """Every segment's indexes against its batches: Kafka's sanity checks, then each offset-index entry
    is a batch's last offset and points at the start of a batch at or before it, entries grow, and each
    time-index entry names a batch whose max timestamp it is, no smaller than any batch before it.

    ``batch_times=False`` (a v0 log under LogAppendTime) checks the time index only for order: there
    Kafka's ``MemoryRecordsBuilder.info()`` gives the append time as the max timestamp of v0 batches that
    carry none, so the live time index holds times the batches do not."""
    segments = log.log_segments()
    bases = [s.base_offset for s in segments]
    assert bases == sorted(set(bases))
    for i, segment in enumerate(segments):
        upper = bases[i + 1] if i + 1 < len(bases) else None
        segment.offset_index.sanity_check()
        segment.time_index.sanity_check()
        batches = list(segment.log.batches())
        by_position = {b.position: b for b in batches}
        last_offsets = {b.last_offset: b for b in batches}
        for b in batches:
            assert b.last_offset >= segment.base_offset
            assert upper is None or b.last_offset < upper
        assert segment.size() <= log.config.segment_size
        index = segment.offset_index
        previous = (-1, -1)
        for n in range(index.entries):
            offset, position = index.entry(n)
            assert offset > previous[0] and position > previous[1], (segment, n, offset, position)
            previous = (offset, position)
            assert position in by_position, (segment, n, position)
            assert by_position[position].base_offset <= offset
            assert offset in last_offsets and last_offsets[offset].position >= position
        times = segment.time_index
        previous = (-2, -1)
        for n in range(times.entries):
            timestamp, offset = times.entry(n)
            assert timestamp > previous[0] and offset >= previous[1], (segment, n, timestamp, offset)
            assert segment.base_offset <= offset and (upper is None or offset < upper)
            previous = (timestamp, offset)
            if not batch_times:
                continue
            holder = [b for b in batches if b.base_offset <= offset <= b.last_offset]
            assert len(holder) == 1, (segment, n, offset)
            assert holder[0].max_timestamp == timestamp, (segment, n, timestamp, holder[0].max_timestamp)
            assert all(b.max_timestamp <= timestamp for b in batches if b.last_offset <= offset)
        stamped = [b.max_timestamp for b in batches if b.max_timestamp >= 0]
        if not batch_times:
            continue
        if stamped and upper is not None:
            # A rolled segment's last time-index entry is its largest timestamp (onBecomeInactiveSegment).
            assert times.entries > 0 and times.entry(times.entries - 1).timestamp == max(stamped)
        if not stamped:
            assert times.entries == 0


record_st = st.tuples(
    st.one_of(st.none(), st.binary(max_size=6)),
    st.one_of(st.none(), st.binary(max_size=20), st.binary(min_size=12, max_size=20),
              st.binary(min_size=12, max_size=20)),
    st.one_of(st.just(None), st.integers(-3 * HOUR, 10 * 60_000)),
    st.lists(st.tuples(st.text(alphabet="abhkz", max_size=3), st.one_of(st.none(), st.binary(max_size=3))),
             max_size=2),
)


advance_st = st.one_of(st.integers(0, 2 * HOUR), st.sampled_from([HOUR // 2, 2 * HOUR, 4 * HOUR, 30 * HOUR]))


class LogMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="kafkalog-model-"))
        self.dir = self.root / "model-0"
        self.time = MockTime(current_time_ms=START_MS)
        self.log: Log | None = None
        self.model = Model()
        self.props: dict[str, Any] = {}
        self.exact_times = True

    # -- setup and teardown -------------------------------------------------------------------------

    @initialize(fmt=st.sampled_from(["3.0", "3.0", "0.10.2", "0.9.0"]),
                ts_type=st.sampled_from(["CreateTime", "LogAppendTime"]),
                codec=st.sampled_from(["producer", "producer", "producer", "uncompressed", "gzip", "lz4"]),
                preallocate=st.booleans(), delete_delay=st.sampled_from([0, 60_000]),
                segment_ms=st.sampled_from([7 * 24 * HOUR, 2 * HOUR]), data=st.data())
    def open_log(self, fmt: str, ts_type: str, codec: str, preallocate: bool, delete_delay: int,
                 segment_ms: int, data: st.DataObject) -> None:
        self.props = {"segment.bytes": SEGMENT_BYTES, "index.interval.bytes": INDEX_INTERVAL,
                      "segment.index.bytes": INDEX_BYTES, "message.format.version": fmt,
                      "message.timestamp.type": ts_type, "compression.type": codec,
                      "preallocate": preallocate,
                      "file.delete.delay.ms": delete_delay, "segment.ms": segment_ms}
        self.log = Log(self.dir, LogConfig(self.props), scheduler=self.time.scheduler, time=self.time)
        # v0 + LogAppendTime: the time index holds append times the v0 batches do not (index_checks)
        self.exact_times = not (fmt == "0.9.0" and ts_type == "LogAppendTime")
        # A few appends first, so that every run starts from a log of some segments.
        for _ in range(data.draw(st.integers(0, 8), label="prefill")):
            self._append(data.draw(st.sampled_from([0, 1, 2]), label="magic"), data)

    def teardown(self) -> None:
        try:
            if self.log is not None:
                self.log.close()
            self.time.scheduler.shutdown()
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    @property
    def target_magic(self) -> int:
        assert self.log is not None
        return self.log.config.record_version()

    # -- appends ------------------------------------------------------------------------------------

    @rule(magic=st.sampled_from([0, 1, 2]), data=st.data())
    def append(self, magic: int, data: st.DataObject) -> None:
        self._append(magic, data)

    @rule(magic=st.sampled_from([0, 1, 2]), data=st.data())
    def append_again(self, magic: int, data: st.DataObject) -> None:
        """Appends twice as likely as any other step, so logs grow past a few segments."""
        self._append(magic, data)

    def _append(self, magic: int, data: st.DataObject) -> None:
        assert self.log is not None
        codecs = CODECS if magic == 2 else CODECS[:-1]
        codec = data.draw(st.sampled_from(codecs), label="codec")
        count = data.draw(st.one_of(st.integers(1, 50), st.sampled_from([20, 35, 50])), label="count")
        raw = data.draw(st.lists(record_st, min_size=count, max_size=count), label="records")
        if magic != 2 or not data.draw(st.booleans(), label="headers"):
            raw = [(key, value, delta, []) for key, value, delta, _ in raw]
        now = self.time.milliseconds()
        inputs: list[tuple[Any, ...]] = []
        for key, value, delta, headers in raw:
            ts = -1 if delta is None else now + delta
            if magic == 0:
                inputs.append((key, value))
            elif magic == 1:
                inputs.append((key, value, ts))
            else:
                inputs.append((key, value, ts, headers))
        records = MemoryRecords.with_records(inputs, magic=magic, compression=codec)

        config = self.log.config
        log_magic = self.target_magic
        target_codec = codec if str(config.compression_type) == "producer" else str(config.compression_type)
        target_codec = "none" if target_codec in ("uncompressed", "none") else target_codec
        with_headers = magic == 2 and any(h for *_, h in raw)
        if log_magic < 2 and (target_codec == "zstd" or with_headers):
            before = self.model.visible()
            with pytest.raises(IllegalArgumentError):
                self.log.append(records)
            assert self.log.log_end_offset == self.model.log_end
            assert self.model.visible() == before
            return

        info = self.log.append(records)
        first = self.model.log_end
        assert info.first_offset == first
        assert info.last_offset == first + len(raw) - 1
        one_batch = log_magic == 2 or target_codec != "none"
        log_append_time = str(config.message_timestamp_type) == "LogAppendTime"
        for i, (key, value, delta, headers) in enumerate(raw):
            if log_magic == 0:
                ts = -1
            elif log_append_time:
                ts = now
            elif magic == 0 or delta is None:
                ts = -1
            else:
                ts = now + delta
            batch = self.model.next_batch if one_batch else self.model.next_batch + i
            kept_headers = list(headers) if magic == 2 and log_magic == 2 else []
            self.model.records.append(Rec(first + i, ts, key, value, kept_headers, batch))
        self.model.next_batch += 1 if one_batch else len(raw)
        self.model.log_end = first + len(raw)

    # -- reads --------------------------------------------------------------------------------------

    @rule(data=st.data(), max_length=st.integers(0, 6000), min_one=st.booleans())
    def read(self, data: st.DataObject, max_length: int, min_one: bool) -> None:
        log, model = self.log, self.model
        assert log is not None
        offset = data.draw(st.integers(max(0, model.log_start - 2), model.log_end + 2), label="offset")
        if offset < model.log_start or offset > model.log_end:
            with pytest.raises(OffsetOutOfRangeError):
                log.read(offset, max_length, min_one_message=min_one)
            return
        fetch = log.read(offset, max_length, min_one_message=min_one)
        offsets = model.offsets()
        at = bisect.bisect_left(offsets, offset)
        if offset == model.log_end or at == len(offsets):
            # Nothing at or past the offset (it is the end, or in the gap a truncation left before it):
            # an empty read positioned at the log end offset.
            assert fetch.records.size_in_bytes() == 0
            assert fetch.fetch_offset_metadata.message_offset == model.log_end
            return
        assert fetch.fetch_offset_metadata.message_offset == offset
        target = model.records[at]
        batches = list(fetch.records.batches())
        meta = fetch.fetch_offset_metadata
        segment = log.segments.get(meta.segment_base_offset)
        assert segment is not None
        available = segment.size() - meta.relative_position_in_segment
        if not batches:
            # Only a size limit below the first batch leaves no whole batch, and only without min_one; a
            # limit of 0 reads nothing at all (Kafka: adjustedMaxSize == 0 -> MemoryRecords.EMPTY).
            assert not min_one
            assert fetch.first_entry_incomplete == (max_length > 0)
            assert fetch.records.size_in_bytes() == min(max_length, available)
            return
        first = batches[0]
        assert first.position == meta.relative_position_in_segment
        got = [r.as_tuple() for b in batches for r in b.records()]
        first_offsets = [r.offset for r in first.records()]
        assert target.offset in first_offsets, (offset, first_offsets)
        start = bisect.bisect_left(offsets, first_offsets[0])
        assert got == [r.as_tuple() for r in model.records[start:start + len(got)]]
        # The first batch holding the offset begins the read: every record of the batch is the model's.
        assert {model.records[start + i].batch for i in range(len(first_offsets))} == {target.batch}
        assert start == 0 or model.records[start - 1].batch != target.batch
        limit = max(max_length, first.size_in_bytes) if min_one else max_length
        assert fetch.records.size_in_bytes() == min(limit, available)
        nxt = log.segments.higher_segment(segment.base_offset)
        assert nxt is None or batches[-1].last_offset < nxt.base_offset

    # -- rolls, flushes, time -----------------------------------------------------------------------

    @rule()
    def roll(self) -> None:
        assert self.log is not None
        count = self.log.number_of_segments
        active = self.log.active_segment
        # An empty active segment at the new base is recreated; any other stays (even empty, below a gap).
        replaced = active.size() == 0 and active.base_offset == self.model.log_end
        segment = self.log.roll()
        assert segment.base_offset == self.model.log_end
        assert self.log.active_segment is segment
        assert self.log.number_of_segments == count + (0 if replaced else 1)

    @rule(data=st.data())
    def flush(self, data: st.DataObject) -> None:
        log = self.log
        assert log is not None
        before = log.recovery_point
        if data.draw(st.booleans(), label="to end"):
            log.flush()
            assert log.recovery_point == max(before, self.model.log_end)
        else:
            offset = data.draw(st.integers(before, self.model.log_end), label="flush offset")
            log.flush(offset)
            assert log.recovery_point == max(before, offset)

    @rule(ms=advance_st)
    def advance_time(self, ms: int) -> None:
        self.time.sleep(ms)

    # -- truncation ---------------------------------------------------------------------------------

    @rule(data=st.data())
    def truncate(self, data: st.DataObject) -> None:
        log, model = self.log, self.model
        assert log is not None
        target = data.draw(st.integers(0, model.log_end + 3), label="truncate to")
        changed = log.truncate_to(target)
        assert changed == (target < model.log_end)
        if not changed:
            return
        if target < model.log_start:
            model.records = []
            model.log_start = target
        else:
            gone = {r.batch for r in model.records if r.offset >= target}
            model.records = [r for r in model.records if r.batch not in gone]
        model.log_end = target
        assert log.recovery_point <= target

    # -- retention ----------------------------------------------------------------------------------

    @rule(data=st.data(), retention_bytes=st.sampled_from([-1, 0, 0.3, 0.6, 1.0, 5000]),
          retention_ms=st.sampled_from([-1, HOUR, 3 * HOUR, 24 * HOUR]), advance=advance_st)
    def retention(self, data: st.DataObject, retention_bytes: float, retention_ms: int, advance: int) -> None:
        """retention.bytes is -1, a fraction of the log's size or 5000; the high watermark is left to follow
        the log end offset, set to it, or set below it."""
        log, model = self.log, self.model
        assert log is not None
        if isinstance(retention_bytes, float):
            retention_bytes = int(log.size * retention_bytes)
        log.config = LogConfig({**self.props, "retention.bytes": retention_bytes,
                                "retention.ms": retention_ms})
        hw_choice = data.draw(st.one_of(st.none(), st.just(model.log_end),
                                        st.integers(model.log_start, model.log_end)), label="hw")
        log.high_watermark = hw_choice
        hw = model.log_end if hw_choice is None else hw_choice
        assert log.high_watermark == hw
        self.time.sleep(advance)
        now = self.time.milliseconds()

        segments = log.log_segments()
        snapshot = []
        for i, segment in enumerate(segments):
            upper = segments[i + 1].base_offset if i + 1 < len(segments) else None
            newest = model.max_timestamp(segment.base_offset, upper)
            if not self.exact_times:
                pass
            elif newest >= 0:
                assert segment.largest_timestamp() == newest, (segment, newest)
            else:
                assert segment.largest_timestamp() == segment.last_modified()
            snapshot.append((segment.base_offset, segment.size(), segment.largest_timestamp()))
        expected_deleted, expected_start = retention_oracle(snapshot, model.log_end, hw, now,
                                                            retention_bytes, retention_ms)
        deleted = log.delete_old_segments()
        assert deleted == expected_deleted, (snapshot, hw, now)
        if deleted:
            assert log.log_start_offset == expected_start
            model.log_start = expected_start
            model.records = [r for r in model.records if r.offset >= expected_start]
        assert log.log_start_offset <= log.high_watermark

    # -- reopening ----------------------------------------------------------------------------------

    def _expected_end_after_reopen(self, active_base: int) -> int:
        last = self.model.records[-1].offset if self.model.records else None
        return last + 1 if last is not None and last >= active_base else active_base

    @rule(run_deletes_first=st.booleans())
    def clean_reopen(self, run_deletes_first: bool) -> None:
        log = self.log
        assert log is not None
        active_base = log.active_segment.base_offset
        assert active_base <= self.model.log_end
        config = log.config
        if run_deletes_first:
            self.time.scheduler.shutdown()
        log.close()
        self.log = Log(self.dir, config, log_start_offset=self.model.log_start,
                       recovery_point=log.recovery_point, scheduler=self.time.scheduler, time=self.time,
                       had_clean_shutdown=True)
        self.time.scheduler.shutdown()  # the old log's deferred deletes, of files the load may have removed
        self.model.log_end = self._expected_end_after_reopen(active_base)
        assert self.log.recovery_point == self.model.log_end

    @rule(from_zero=st.booleans())
    def unclean_reopen(self, from_zero: bool) -> None:
        log = self.log
        assert log is not None
        active_base = log.active_segment.base_offset
        recovery_point = 0 if from_zero else log.recovery_point
        config = log.config
        log.close_handlers()
        self.log = Log(self.dir, config, log_start_offset=self.model.log_start, recovery_point=recovery_point,
                       scheduler=self.time.scheduler, time=self.time, had_clean_shutdown=False)
        self.time.scheduler.shutdown()
        self.model.log_end = self._expected_end_after_reopen(active_base)
        # recovery's min(checkpoint, log end), never below the log start offset (Kafka: UnifiedLog's constructor)
        assert self.log.recovery_point == max(min(recovery_point, self.model.log_end), self.model.log_start)

    # -- after every step ---------------------------------------------------------------------------

    @precondition(lambda self: self.log is not None)
    @invariant()
    def matches_model(self) -> None:
        log, model = self.log, self.model
        assert log is not None
        assert log.log_start_offset == model.log_start
        assert log.log_end_offset == model.log_end
        assert log.segments.first_segment_base_offset() == model.log_start
        assert log.active_segment.base_offset <= model.log_end
        assert 0 <= log.recovery_point <= model.log_end
        # Log.records() is the consumer's view: it stops at the high watermark's position, before a batch that
        # holds the high watermark (a truncation to the high watermark removes that batch whole).
        high_watermark = log.high_watermark
        holding = {r.batch for r in model.records if r.offset >= high_watermark}
        assert [r.as_tuple() for r in log.records()] == [
            r.as_tuple() for r in model.records
            if model.log_start <= r.offset < high_watermark and r.batch not in holding]
        index_checks(log, batch_times=self.exact_times)


def retention_oracle(segments: list[tuple[int, int, float]], log_end: int, hw: int, now: int,
                     retention_bytes: int, retention_ms: int) -> tuple[int, int]:
    """Kafka's deleteOldSegments on (base, size, largest timestamp) triples: the number of segments
    deleted and the new log start offset (spec §3.16)."""
    segs = list(segments)
    deleted = 0

    def deletable(predicate: Any) -> int:
        count = 0
        for i, (_base, size, largest) in enumerate(segs):
            upper = segs[i + 1][0] if i + 1 < len(segs) else log_end
            last_and_empty = i + 1 == len(segs) and size == 0
            if hw >= upper and predicate(size, largest) and not last_and_empty:
                count += 1
            else:
                break
        return count

    def drop(count: int) -> None:
        nonlocal segs, deleted
        deleted += count
        segs = segs[count:]
        if not segs:
            segs = [(log_end, 0, -1)]  # deleting every segment rolls a new, empty one first

    total = sum(size for _, size, _ in segs)
    if retention_bytes >= 0 and total >= retention_bytes:
        diff = total - retention_bytes

        def by_size(size: int, _largest: float) -> bool:
            nonlocal diff
            if diff - size >= 0:
                diff -= size
                return True
            return False

        drop(deletable(by_size))
    if retention_ms >= 0:
        drop(deletable(lambda _size, largest: now - largest > retention_ms))
    return deleted, segs[0][0]


def test_log_matches_model(impl: ModuleType) -> None:
    run_state_machine_as_test(LogMachine, settings=SETTINGS)


def test_truncation_after_reopen_keeps_the_largest_timestamp(impl: ModuleType, tmp_path: Path) -> None:
    """A case the machine finds only now and then, kept as a fixed test: after a clean reopen, truncating
    away every time-index entry must not lose the largest timestamp of the batches that stay.

    ``LogSegment.truncate_to`` loads the (lazy) largest timestamp only after it has truncated the time
    index, reads -1 there and so skips the rescan: the segment then reports its file's mtime as its
    largest timestamp and, once rolled, has an empty time index though its batch has a timestamp.
    """
    time = MockTime(current_time_ms=START_MS)
    config = LogConfig({"message.timestamp.type": "LogAppendTime"})
    directory = tmp_path / "truncate-0"
    log = Log(directory, config, scheduler=time.scheduler, time=time)
    log.append(MemoryRecords.with_records([(b"a", b"1")]))
    time.sleep(1)
    log.append(MemoryRecords.with_records([(b"b", b"2")]))
    log.close()
    log = Log(directory, config, scheduler=time.scheduler, time=time, had_clean_shutdown=True)
    try:
        assert log.truncate_to(1)
        assert [r.as_tuple() for r in log.records()] == [(0, START_MS, b"a", b"1", [])]
        segment = log.active_segment
        assert segment.max_timestamp_so_far == START_MS
        assert segment.largest_timestamp() == START_MS
        log.roll()
        assert segment.time_index.entries == 1
        assert segment.time_index.entry(0) == (START_MS, 0)
    finally:
        log.close()
        time.scheduler.shutdown()

"""Damaged segments: what ``LogSegment.recover`` keeps, rebuilds and refuses, and the index errors.

Kafka's recovery (``LogSegment.recover``) walks the log from its start, checking each entry's framing and
CRC, rebuilds both indexes from the entries it accepts, and cuts the log at the first entry it does not
accept, whatever follows.  So for every kind of damage:

* the bytes cut are the file's size minus the start of the first bad entry, the entries before it are
  kept byte for byte, every offset they hold is read back and every max timestamp found again;
* the rebuilt indexes do not depend on what the index files held: they are byte for byte the indexes of
  a segment built afresh from the kept entries, one append per entry (recovery keys each entry by the
  entry's own last offset).

The segments are built here (v2 batches of every codec, a v1 gzip wrapper, v1 messages written in one
append, two v2 batches written in one append, offset gaps, timestamps that go back and forth, a small
``index.interval.bytes`` so the indexes have many entries), or are copies of broker-written segments
from the golden folder (never written in place).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import pathlib
import random
import re
import shutil
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from kafkalog import _impl
from kafkalog.config.log_config import LogConfig
from kafkalog.errors import (
    CorruptIndexError,
    IllegalArgumentError,
    IllegalStateError,
    IndexOffsetOverflowError,
    InvalidOffsetError,
    LogSegmentOffsetOverflowError,
)
from kafkalog.fetch import LogOffsetMetadata
from kafkalog.file_message_set import FileMessageSet
from kafkalog.filenames import index_filename, log_filename, time_index_filename
from kafkalog.index import OffsetIndex, OffsetPosition, TimeIndex, TimestampOffset
from kafkalog.record import MemoryRecords, ScanStop
from kafkalog.scheduler import MockTime
from kafkalog.segment import LogSegment
from tests.support.golden_data import ARTHUR, BULLSHIT, DANIELOWO, DIPENDRASAINI, KAFKALITE, MSCALDAS, RONEM

BASE = 1000
INDEX_INTERVAL = 256
INDEX_BYTES = 4096
CONFIG = LogConfig({"index.interval.bytes": INDEX_INTERVAL, "segment.index.bytes": INDEX_BYTES})
T0 = 1_700_000_000_000
READ_SIZE = 1 << 20
INT32_MAX = 2**31 - 1
V2_CRC = 17  # the CRC field of a v2 batch, from the start of the entry
LEGACY_CRC = 12  # the CRC field of a v0/v1 message, from the start of the entry (after offset and size)


# -- building segments -----------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Entry:
    """One log entry as written: a v2 batch, a v1 message or a v1 wrapper."""

    position: int
    raw: bytes
    magic: int
    base: int  # the batch's base offset (a wrapper's first inner offset)
    last: int
    max_timestamp: int
    offsets: tuple[int, ...]
    timestamps: tuple[int, ...]

    @property
    def size(self) -> int:
        return len(self.raw)

    @property
    def end(self) -> int:
        return self.position + len(self.raw)


@dataclasses.dataclass(frozen=True)
class Plan:
    """A segment's appends (records, largest offset, largest timestamp) and the entries they write."""

    appends: list[tuple[MemoryRecords, int, int]]
    entries: list[Entry]

    @property
    def data(self) -> bytes:
        return b"".join(e.raw for e in self.entries)


def _entries_of(records: MemoryRecords, start: int) -> list[Entry]:
    """The entries of ``records``, written at file position ``start``."""
    out = []
    for batch in records.batches():
        raw = batch.raw_bytes()
        inner = list(MemoryRecords(raw).records())
        out.append(Entry(start + batch.position, raw, batch.magic, batch.base_offset, batch.last_offset,
                         batch.max_timestamp, tuple(r.offset for r in inner),
                         tuple(r.timestamp for r in inner)))
    return out


def _plan(seed: int, n: int = 24) -> Plan:
    """``n`` appends of varied entries (see the module docstring), seeded."""
    rng = random.Random(seed)
    codecs = ["none", "gzip", "snappy", "lz4", "zstd"]
    offset = BASE
    position = 0
    appends: list[tuple[MemoryRecords, int, int]] = []
    entries: list[Entry] = []
    for i in range(n):
        if i % 7 == 6:
            offset += rng.randint(1, 5)  # a gap, as compaction leaves
        count = rng.randint(1, 5)

        def batch(count: int, i: int = i) -> list[tuple[bytes, bytes, int]]:
            return [(f"key-{i}-{k}".encode(), rng.randbytes(rng.randint(8, 160)),
                     T0 + 100 * i + rng.randint(-150, 150)) for k in range(count)]

        if i == 9:
            records = MemoryRecords.with_records(batch(count), magic=1, compression="gzip",
                                                 base_offset=offset)
        elif i == 13:  # three v1 messages in one append
            count = 3
            records = MemoryRecords.with_records(batch(count), magic=1, base_offset=offset)
        elif i == 17:  # two v2 batches in one append
            first = MemoryRecords.with_records(batch(count), base_offset=offset, compression="lz4")
            second = MemoryRecords.with_records(batch(2), base_offset=offset + count)
            count += 2
            records = MemoryRecords(first.buffer + second.buffer)
        else:
            records = MemoryRecords.with_records(batch(count), base_offset=offset,
                                                 compression=codecs[i % len(codecs)])
        written = _entries_of(records, position)
        assert [o for e in written for o in e.offsets] == list(range(offset, offset + count))
        entries.extend(written)
        appends.append((records, offset + count - 1, max(e.max_timestamp for e in written)))
        position += records.size_in_bytes()
        offset += count
    return Plan(appends, entries)


def _write(directory: pathlib.Path, appends: list[tuple[MemoryRecords, int, int]], crash: bool = False,
           base: int = BASE, config: LogConfig = CONFIG) -> None:
    """Append to a new segment and close it; with ``crash`` release the files without closing (the
    indexes keep their preallocated zero tail and miss the time-index entry written at close)."""
    directory.mkdir(exist_ok=True)
    segment = LogSegment.open(directory, base, config=config, time=MockTime())
    try:
        for records, largest_offset, largest_timestamp in appends:
            # the offset of the max timestamp, for a v2 batch or a v1 wrapper: its last offset
            segment.append(largest_offset, largest_timestamp, largest_offset, records)
    except BaseException:
        segment.close_handlers()
        raise
    if crash:
        segment.close_handlers()
    else:
        segment.close()


def _single_appends(entries: list[Entry]) -> list[tuple[MemoryRecords, int, int]]:
    return [(MemoryRecords(e.raw), e.last, e.max_timestamp) for e in entries]


def _files(directory: pathlib.Path, base: int = BASE) -> list[pathlib.Path]:
    return [log_filename(directory, base), index_filename(directory, base),
            time_index_filename(directory, base)]


def _contents(directory: pathlib.Path, base: int = BASE) -> list[bytes]:
    """The bytes of a segment's files.  An index never opened (indexes open at first use) has no file:
    its contents are empty, as those of an index opened and closed with no entries."""
    return [p.read_bytes() if p.exists() else b"" for p in _files(directory, base)]


def _reference(directory: pathlib.Path, entries: list[Entry], base: int = BASE,
               config: LogConfig = CONFIG) -> list[bytes]:
    """The files of a segment built afresh from ``entries``, one append each, and closed."""
    _write(directory, _single_appends(entries), base=base, config=config)
    return _contents(directory, base)


# -- checks ----------------------------------------------------------------------------------------------


#: A segment holding more offsets than this (the broker-written copies) is read at a seeded sample:
#: both ends of (up to SAMPLED_ENTRIES of) its entries and SAMPLED_OFFSETS random offsets; and its
#: timestamps searched for at SAMPLED_TIMESTAMPS entries (each search scans the rest of the log).
ALL_OFFSETS_LIMIT = 600
SAMPLED_ENTRIES = 250
SAMPLED_OFFSETS = 150
SAMPLED_TIMESTAMPS = 30


def _check_entries_readable(segment: LogSegment, entries: list[Entry]) -> None:
    """Every offset of ``entries`` is read from its entry (a sample, for many); the offset after the last
    reads nothing; each entry's max timestamp is found (a sample, for many)."""
    size = segment.size()
    assert size == (entries[-1].end if entries else 0)
    holder = {o: e for e in entries for o in e.offsets}
    rng = random.Random(len(holder))
    if len(holder) <= ALL_OFFSETS_LIMIT:
        offsets = sorted(holder)
    else:
        ends = rng.sample(entries, min(SAMPLED_ENTRIES, len(entries)))
        offsets = sorted({o for e in ends for o in (e.offsets[0], e.offsets[-1])}
                         | set(rng.sample(sorted(holder), SAMPLED_OFFSETS)))
    for offset in offsets:
        entry = holder[offset]
        fetch = segment.read(offset, READ_SIZE)
        assert fetch is not None, f"offset {offset} is not read back"
        assert fetch.fetch_offset_metadata == LogOffsetMetadata(offset, segment.base_offset, entry.position)
        assert fetch.records.size_in_bytes() == min(READ_SIZE, size - entry.position)
        (batch,) = fetch.records.read(0, entry.size).batches()
        assert (batch.position, batch.base_offset, batch.last_offset) == (entry.position, entry.base,
                                                                         entry.last)
        assert batch.base_offset <= offset <= batch.last_offset
    end = entries[-1].last + 1 if entries else segment.base_offset
    assert segment.read(end, READ_SIZE) is None
    assert segment.read_next_offset() == end
    offsets_in_order = np.array([o for e in entries for o in e.offsets], dtype=np.int64)
    timestamps = np.array([t for e in entries for t in e.timestamps], dtype=np.int64)
    searched = entries if len(entries) <= SAMPLED_TIMESTAMPS else \
        [entries[0], entries[-1], *rng.sample(entries[1:-1], SAMPLED_TIMESTAMPS - 2)]
    for entry in searched:
        _check_timestamp(segment, offsets_in_order, timestamps, entry)


def _check_timestamp(segment: LogSegment, offsets: npt.NDArray[Any], timestamps: npt.NDArray[Any],
                     entry: Entry) -> None:
    """The search for ``entry``'s max timestamp finds a record (``offsets``, ``timestamps``: every record,
    in log order) with that timestamp or a later one, no later than ``entry``, no earlier than the first
    record that reaches it; exactly that first record when the time index has no entry at the timestamp
    itself (the search then starts before it)."""
    target = entry.max_timestamp
    found = segment.find_offset_by_timestamp(target)
    assert found is not None, f"timestamp {target} of the entry at {entry.position} is not found"
    at = int(np.searchsorted(offsets, found.offset))
    assert offsets[at] == found.offset
    assert int(timestamps[at]) == found.timestamp >= target
    assert found.offset <= entry.last
    first_reaching = int(offsets[int(np.argmax(timestamps >= target))])
    assert found.offset >= first_reaching
    if segment.time_index.lookup(target).timestamp < target:
        assert found.offset == first_reaching


def _check_indexes_point_at_entries(segment: LogSegment, entries: list[Entry]) -> None:
    """Every rebuilt offset-index entry is (an entry's last offset, its position); every time-index
    entry names the offset of an entry whose max timestamp it holds."""
    by_position = {e.position: e for e in entries}
    by_last = {e.last: e for e in entries}
    for n in range(segment.offset_index.entries):
        got = segment.offset_index.entry(n)
        assert got.position in by_position and by_position[got.position].last == got.offset
    for n in range(segment.time_index.entries):
        got = segment.time_index.entry(n)
        assert by_last[got.offset].max_timestamp == got.timestamp


# -- damage ----------------------------------------------------------------------------------------------

LOG_DAMAGE = ["random", "zeros", "truncated", "truncated_header", "crc", "payload"]


def _damage(data: bytes, entries: list[Any], kind: str, rng: random.Random) -> tuple[bytes, int]:
    """``data`` damaged from one entry on; returns the damaged bytes and the index of that entry.

    ``entries`` are (position, size, magic) triples in file order."""
    n = len(entries)
    if kind in ("crc", "payload"):
        k = rng.randrange(1, n - 1)  # a middle entry: valid entries follow it
        position, size, magic = entries[k]
        if kind == "crc":
            at = position + (V2_CRC if magic == 2 else LEGACY_CRC) + rng.randrange(4)
        else:  # the entry's last byte: a record's value, under the CRC
            at = position + size - 1
        damaged = bytearray(data)
        damaged[at] ^= 0xFF
        return bytes(damaged), k
    k = rng.randrange(n)
    position, size, _ = entries[k]
    if kind == "random":
        return data[:position] + rng.randbytes(len(data) - position + rng.randrange(64)), k
    if kind == "zeros":
        return data[:position] + bytes(len(data) - position), k
    if kind == "truncated":
        return data[:position + rng.randrange(12, size)], k
    assert kind == "truncated_header"
    return data[:position + rng.randrange(1, 12)], k


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("kind", LOG_DAMAGE)
def test_recover_cuts_log_at_first_bad_entry(impl: ModuleType, tmp_path: pathlib.Path, kind: str,
                                              seed: int) -> None:
    """Garbage from a random entry on (random bytes, zeros, a cut in its body or header, a flipped CRC
    or payload byte in a middle entry): recover keeps exactly the entries before it."""
    plan = _plan(seed)
    _write(tmp_path / "seg", plan.appends)
    log = log_filename(tmp_path / "seg", BASE)
    data = log.read_bytes()
    assert data == plan.data
    rng = random.Random(f"{kind}-{seed}")
    damaged, k = _damage(data, [(e.position, e.size, e.magic) for e in plan.entries], kind, rng)
    log.write_bytes(damaged)
    kept = plan.entries[:k]
    start = plan.entries[k].position

    segment = LogSegment.open(tmp_path / "seg", BASE, config=CONFIG, file_already_exists=True)
    try:
        assert segment.size() == len(damaged)
        assert segment.recover() == len(damaged) - start
        assert segment.size() == start
        assert log.stat().st_size == start
        scan = segment.log.scan()
        assert scan.stop_reason is ScanStop.END
        assert scan.batches["position"].tolist() == [e.position for e in kept]
        assert scan.batches["last_offset"].tolist() == [e.last for e in kept]
        _check_indexes_point_at_entries(segment, kept)
        _check_entries_readable(segment, kept)
        if kept:
            top = max(kept, key=lambda e: e.max_timestamp)
            assert segment.time_index.last_entry == TimestampOffset(top.max_timestamp, top.last)
    finally:
        segment.close()
    assert log.read_bytes() == data[:start]
    assert _contents(tmp_path / "seg") == _reference(tmp_path / "ref", kept)


def test_recover_keeps_a_whole_log(impl: ModuleType, tmp_path: pathlib.Path) -> None:
    """An undamaged log loses nothing, and recovery rebuilds the indexes the appends wrote: entry by entry
    either way since 3.9.2's LogSegment.append indexes each batch of a multi-entry append (3.8 keyed one entry
    per append by its last offset, which recovery then turned into one per entry)."""
    plan = _plan(3)
    _write(tmp_path / "seg", plan.appends)
    original = _contents(tmp_path / "seg")
    reference = _reference(tmp_path / "ref", plan.entries)
    assert original[0] == reference[0]
    # the appends of several entries are indexed entry by entry, as recovery does
    assert original[1] == reference[1]
    segment = LogSegment.open(tmp_path / "seg", BASE, config=CONFIG, file_already_exists=True)
    try:
        assert segment.recover() == 0
        _check_indexes_point_at_entries(segment, plan.entries)
        _check_entries_readable(segment, plan.entries)
    finally:
        segment.close()
    assert _contents(tmp_path / "seg") == reference


INDEX_DAMAGE = ["random", "odd_length", "zero_tail", "missing", "stale"]


def _damage_indexes(directory: pathlib.Path, kind: str, rng: random.Random) -> None:
    index, time_index = _files(directory)[1:]
    if kind == "random":
        for path in (index, time_index):
            path.write_bytes(rng.randbytes(path.stat().st_size))
    elif kind == "odd_length":
        for path, cut in ((index, 3), (time_index, 5)):
            path.write_bytes(path.read_bytes()[:-cut])
            assert path.stat().st_size % 2 == 1
    elif kind == "missing":
        index.unlink()
        time_index.unlink()
    else:
        assert kind in ("zero_tail", "stale"), kind


def _expect_sanity_failure(segment: LogSegment, kind: str, last_offset: int) -> None:
    """What the load-time checks say of the damaged indexes, on the files and once opened: 3.8's
    ``sanity_check`` checks neither index, kafkalog's ``check_index_files`` both."""
    index, time_index = _files(segment.dir)[1:]
    if kind == "odd_length":
        segment.sanity_check(False)
        with pytest.raises(CorruptIndexError, match=re.escape(str(index))):
            segment.check_index_files()
        with pytest.raises(CorruptIndexError, match=re.escape(str(index))):
            segment.offset_index.sanity_check()
        with pytest.raises(CorruptIndexError, match=re.escape(str(time_index))):
            segment.time_index.sanity_check()
    elif kind == "zero_tail":
        # a crash leaves the preallocated zeros, read as entries: the time index's last timestamp (0)
        # is below its first, which the check refuses
        segment.sanity_check(False)
        with pytest.raises(CorruptIndexError, match=re.escape(str(time_index))):
            segment.check_index_files()
        assert segment.offset_index.entries == INDEX_BYTES // 8
        assert segment.offset_index.last_offset == BASE
        segment.offset_index.sanity_check()
        with pytest.raises(CorruptIndexError, match=re.escape(str(time_index))):
            segment.time_index.sanity_check()
    elif kind == "missing":
        # Kafka 3.8's sanityCheck: NoSuchFileException for a missing offset index, before anything else (the
        # loader then rebuilds it); opened anyway, the index is new and empty
        with pytest.raises(FileNotFoundError, match=re.escape(str(index))):
            segment.sanity_check(False)
        assert (segment.offset_index.entries, segment.time_index.entries) == (0, 0)
    elif kind == "stale":
        # whole, ordered entries that pass the check, but reach past the log's end
        segment.sanity_check(False)
        segment.check_index_files()
        assert segment.offset_index.last_offset > last_offset
        assert segment.offset_index.read_last_entry().position > segment.size()


@pytest.mark.parametrize("kind", INDEX_DAMAGE)
def test_recover_rebuilds_damaged_indexes(impl: ModuleType, tmp_path: pathlib.Path, kind: str) -> None:
    """Garbage in the index files (random bytes, a length that is not whole entries, the zero tail of a
    crash, no files, the indexes of a longer log): recovery cuts no log byte and rebuilds both, and every
    offset and timestamp is found again."""
    plan = _plan(4)
    if kind == "stale":
        # the indexes of a longer log with the same start: entries past this log's end
        longer = _plan(4, n=40)
        assert longer.data.startswith(plan.data)
        _write(tmp_path / "seg", longer.appends)
        log_filename(tmp_path / "seg", BASE).write_bytes(plan.data)
    else:
        _write(tmp_path / "seg", plan.appends, crash=kind == "zero_tail")
    _damage_indexes(tmp_path / "seg", kind, random.Random(kind))
    segment = LogSegment.open(tmp_path / "seg", BASE, config=CONFIG, file_already_exists=True)
    try:
        _expect_sanity_failure(segment, kind, plan.entries[-1].last)
        assert segment.recover() == 0
        segment.offset_index.sanity_check()
        segment.time_index.sanity_check()
        _check_indexes_point_at_entries(segment, plan.entries)
        _check_entries_readable(segment, plan.entries)
    finally:
        segment.close()
    assert _contents(tmp_path / "seg") == _reference(tmp_path / "ref", plan.entries)


# -- copies of broker-written segments -------------------------------------------------------------------


# (partition folder, base offset, damage): v1 messages, v0 gzip wrappers, a compacted v2 topic with
# tombstones, transactional batches with COMMIT markers, LogAppendTime lz4 batches, v2 snappy batches
# with the broker's own indexes (which point past the cut).
GOLDEN_LOG_DAMAGE = [
    (f"{BULLSHIT}/foo-0", 0, "random"),
    (f"{BULLSHIT}/foo-0", 0, "crc"),
    (f"{KAFKALITE}/hamlet-gzip-0", 0, "truncated"),
    (f"{KAFKALITE}/hamlet-gzip-0", 0, "payload"),
    (f"{MSCALDAS}/docker-connect-status-0", 0, "zeros"),
    (f"{MSCALDAS}/docker-connect-status-0", 0, "truncated_header"),
    (f"{DANIELOWO}/_confluent-ksql-default__command_topic-0", 0, "crc"),
    (f"{MSCALDAS}/_confluent-controlcenter-5-1-2-1-monitoring-trigger-event-rekey-0", 0, "random"),
    (f"{ARTHUR}/oms_order_status_changed-2", 10917, "truncated"),
]

# (partition folder, base offset): the broker's indexes, with entries keyed by batch last offsets,
# entries keyed by a later batch of the same append, and a time index alone (its offset index empty).
GOLDEN_INDEXED = [
    (f"{ARTHUR}/__cluster_metadata-0", 5151),
    (f"{DIPENDRASAINI}/invoice-1", 30620),
    (f"{RONEM}/__consumer_offsets-44", 0),
]


_GOLDEN_ENTRIES: dict[bytes, list[Entry]] = {}


def _golden_entries(data: bytes) -> list[Entry]:
    """A broker's log as entries, decoded from its bytes once per session (with the fastest twin: the
    reference does not depend on the twin under test)."""
    key = hashlib.sha256(data).digest()
    if key not in _GOLDEN_ENTRIES:
        with _impl.using("cython" if "cython" in _impl.both() else "python"):
            records = MemoryRecords(data)
            scan = records.scan()
            assert scan.stop_reason is ScanStop.END and scan.stop_position == len(data)
            _GOLDEN_ENTRIES[key] = _entries_of(records, 0)
    return _GOLDEN_ENTRIES[key]


def _golden_state(golden: pathlib.Path, folder: str, base: int) -> list[tuple[int, bytes] | None]:
    """The mtimes and bytes of a golden segment's files, to show they are left as they were."""
    paths = _files(golden / folder, base)
    return [(p.stat().st_mtime_ns, p.read_bytes()) if p.exists() else None for p in paths]


def _copy_segment(golden: pathlib.Path, folder: str, base: int, destination: pathlib.Path) -> bytes:
    """Copy a golden segment's files into ``destination``; returns the log's bytes."""
    destination.mkdir(exist_ok=True)
    for path in _files(golden / folder, base):
        if path.exists():
            shutil.copy(path, destination / path.name)
    return log_filename(golden / folder, base).read_bytes()


@pytest.mark.parametrize(("folder", "base", "kind"), GOLDEN_LOG_DAMAGE,
                         ids=[f"{f.rsplit('/', 1)[1]}-{k}" for f, _, k in GOLDEN_LOG_DAMAGE])
def test_recover_golden_copy_with_damaged_log(impl: ModuleType, golden: pathlib.Path, tmp_path: pathlib.Path,
                                              folder: str, base: int, kind: str) -> None:
    """A copy of a broker's segment damaged from one entry on keeps exactly the entries before it, byte
    for byte, reads them back, and has the indexes a segment of those entries would have; the golden
    files are not touched."""
    untouched = _golden_state(golden, folder, base)
    data = _copy_segment(golden, folder, base, tmp_path)
    entries = _golden_entries(data)
    damaged, k = _damage(data, [(e.position, e.size, e.magic) for e in entries], kind,
                         random.Random(f"{folder}-{kind}"))
    log = log_filename(tmp_path, base)
    log.write_bytes(damaged)
    kept = entries[:k]
    start = entries[k].position
    segment = LogSegment.open(tmp_path, base, file_already_exists=True)
    try:
        assert segment.recover() == len(damaged) - start
        assert segment.size() == start
        _check_indexes_point_at_entries(segment, kept)
        _check_entries_readable(segment, kept)
    finally:
        segment.close()
    assert log.read_bytes() == data[:start]
    assert _contents(tmp_path, base) == _reference(tmp_path / "ref", kept, base, LogConfig())
    assert _golden_state(golden, folder, base) == untouched


@pytest.mark.parametrize("kind", ["random", "odd_length", "zero_tail"])
@pytest.mark.parametrize(("folder", "base"), GOLDEN_INDEXED,
                         ids=[f.rsplit("/", 1)[1] for f, _ in GOLDEN_INDEXED])
def test_recover_golden_copy_with_damaged_indexes(impl: ModuleType, golden: pathlib.Path,
                                                  tmp_path: pathlib.Path, folder: str, base: int,
                                                  kind: str) -> None:
    """Garbage in the indexes of a copy of a broker's segment: recovery rebuilds the same indexes as from a
    clean copy, and offsets and timestamps are found again; the golden files are not touched."""
    untouched = _golden_state(golden, folder, base)
    data = _copy_segment(golden, folder, base, tmp_path / "clean")
    _copy_segment(golden, folder, base, tmp_path / "damaged")
    entries = _golden_entries(data)
    rng = random.Random(f"{folder}-{kind}")
    for path in _files(tmp_path / "damaged", base)[1:]:
        if kind == "random":
            path.write_bytes(rng.randbytes(max(path.stat().st_size, 24)))
        elif kind == "odd_length":
            path.write_bytes(path.read_bytes() + b"\x01\x02\x03")
        else:  # untrimmed: the preallocated zeros after the entries
            with open(path, "r+b") as f:
                f.truncate(path.stat().st_size + 1200)
    rebuilt = []
    for name in ("clean", "damaged"):
        segment = LogSegment.open(tmp_path / name, base, file_already_exists=True)
        try:
            if name == "damaged" and kind == "odd_length":
                damaged_index = re.escape(str(index_filename(tmp_path / name, base)))
                segment.sanity_check(False)
                with pytest.raises(CorruptIndexError, match=damaged_index):
                    segment.check_index_files()
            assert segment.recover() == 0
            if name == "damaged":
                _check_indexes_point_at_entries(segment, entries)
                _check_entries_readable(segment, entries)
        finally:
            segment.close()
        rebuilt.append(_contents(tmp_path / name, base))
    assert rebuilt[0] == rebuilt[1]
    assert rebuilt[1][0] == data
    assert _golden_state(golden, folder, base) == untouched


# -- the errors --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("writable", [True, False])
@pytest.mark.parametrize(("kind", "entry_size"), [(OffsetIndex, 8), (TimeIndex, 12)])
def test_sanity_check_refuses_partial_entries(impl: ModuleType, tmp_path: pathlib.Path, kind: type[Any],
                                              entry_size: int, writable: bool) -> None:
    """An index whose length is not a whole number of entries fails its sanity check, naming the file;
    one whose length is whole passes."""
    path = tmp_path / f"{BASE:020d}{'.index' if kind is OffsetIndex else '.timeindex'}"
    good = b"".join((k * 10).to_bytes(4, "big") + (k * 100).to_bytes(4, "big") for k in range(1, 4)) \
        if kind is OffsetIndex else \
        b"".join((T0 + k).to_bytes(8, "big") + (k * 10).to_bytes(4, "big") for k in range(1, 4))
    for extra in range(1, entry_size):
        path.write_bytes(good + bytes(range(extra)))
        index = kind(path, BASE, writable=writable)
        try:
            assert index.entries == 3
            with pytest.raises(CorruptIndexError) as raised:
                index.sanity_check()
            assert str(path) in str(raised.value)
            assert f"found {len(good) + extra} bytes" in str(raised.value)
        finally:
            index.close_handler()
        assert path.stat().st_size == len(good) + extra
    path.write_bytes(good)
    index = kind(path, BASE, writable=writable)
    try:
        index.sanity_check()
        assert index.entries == 3
    finally:
        index.close()


def test_offset_index_refuses_out_of_order_appends(impl: ModuleType, tmp_path: pathlib.Path) -> None:
    index = OffsetIndex(tmp_path / "x.index", BASE, max_index_size=80)
    try:
        index.append(BASE + 10, 100)
        for offset in (BASE + 10, BASE + 9, BASE):
            with pytest.raises(InvalidOffsetError, match=f"offset \\({offset}\\)"):
                index.append(offset, 200)
        index.append(BASE + 11, 200)
        assert [index.entry(n) for n in range(index.entries)] == [OffsetPosition(BASE + 10, 100),
                                                                   OffsetPosition(BASE + 11, 200)]
    finally:
        index.close()
    assert (tmp_path / "x.index").read_bytes() == bytes.fromhex("0000000a00000064" "0000000b000000c8")


def test_time_index_refuses_out_of_order_appends(impl: ModuleType, tmp_path: pathlib.Path) -> None:
    index = TimeIndex(tmp_path / "x.timeindex", BASE, max_index_size=120)
    try:
        index.maybe_append(T0 + 10, BASE + 10)
        with pytest.raises(InvalidOffsetError, match=f"offset \\({BASE + 9}\\)"):
            index.maybe_append(T0 + 20, BASE + 9)
        with pytest.raises(IllegalStateError, match=f"timestamp \\({T0 + 9}\\)"):
            index.maybe_append(T0 + 9, BASE + 11)
        index.maybe_append(T0 + 10, BASE + 12)  # not larger: nothing is written
        index.maybe_append(T0 + 11, BASE + 12)
        assert [index.entry(n) for n in range(index.entries)] == [TimestampOffset(T0 + 10, BASE + 10),
                                                                   TimestampOffset(T0 + 11, BASE + 12)]
    finally:
        index.close()


def test_full_indexes_refuse_appends(impl: ModuleType, tmp_path: pathlib.Path) -> None:
    """An offset index takes as many entries as fit; a time index one fewer, its last slot kept for the
    entry written when the segment rolls."""
    index = OffsetIndex(tmp_path / "x.index", BASE, max_index_size=4 * 8 + 5)
    try:
        assert index.max_entries == 4
        for k in range(4):
            assert not index.is_full()
            index.append(BASE + k, 10 * k)
        assert index.is_full()
        with pytest.raises(IllegalArgumentError, match="full index"):
            index.append(BASE + 4, 40)
        assert index.entries == 4
    finally:
        index.close()
    times = TimeIndex(tmp_path / "x.timeindex", BASE, max_index_size=4 * 12)
    try:
        for k in range(3):
            assert not times.is_full()
            times.maybe_append(T0 + k, BASE + k)
        assert times.is_full()
        with pytest.raises(IllegalArgumentError, match="full time index"):
            times.maybe_append(T0 + 3, BASE + 3)
        times.maybe_append(T0 + 3, BASE + 3, skip_full_check=True)
        assert times.entries == 4
        with pytest.raises(IllegalArgumentError, match="full time index"):
            times.maybe_append(T0 + 4, BASE + 4, skip_full_check=True)
        assert times.last_entry == TimestampOffset(T0 + 3, BASE + 3)
    finally:
        times.close()


def test_index_append_offset_overflow(impl: ModuleType, tmp_path: pathlib.Path) -> None:
    """An offset more than 2**31 - 1 past the base, or below it, does not fit a 4-byte relative offset."""
    index = OffsetIndex(tmp_path / "x.index", BASE, max_index_size=64)
    try:
        with pytest.raises(IndexOffsetOverflowError, match=str(BASE - 1)):
            index.append(BASE - 1, 0)
        index.append(BASE + INT32_MAX - 1, 10)
        with pytest.raises(IndexOffsetOverflowError, match=str(BASE + INT32_MAX + 1)):
            index.append(BASE + INT32_MAX + 1, 20)
        index.append(BASE + INT32_MAX, 20)
        assert index.entry(1) == OffsetPosition(BASE + INT32_MAX, 20)
        assert index.lookup(BASE + INT32_MAX + 5) == OffsetPosition(BASE + INT32_MAX, 20)
    finally:
        index.close()
    times = TimeIndex(tmp_path / "x.timeindex", BASE, max_index_size=64)
    try:
        with pytest.raises(IndexOffsetOverflowError, match=str(BASE + 2**31)):
            times.maybe_append(T0, BASE + 2**31)
        assert times.entries == 0
        times.maybe_append(T0, BASE + INT32_MAX)
        assert times.last_entry == TimestampOffset(T0, BASE + INT32_MAX)
    finally:
        times.close()


def _one(offset: int, count: int = 1, timestamp: int = T0) -> MemoryRecords:
    records = [(b"k", b"v" * 40, timestamp + k) for k in range(count)]
    return MemoryRecords.with_records(records, base_offset=offset)


def test_segment_append_offset_overflow(impl: ModuleType, tmp_path: pathlib.Path) -> None:
    """A segment takes offsets up to base + 2**31 - 1 and refuses a batch past it or before its base,
    writing nothing."""
    segment = LogSegment.open(tmp_path, BASE, config=CONFIG)
    try:
        segment.append(BASE + 1, T0 + 1, BASE + 1, _one(BASE, 2))
        size = segment.size()
        for largest in (BASE + 2**31, BASE + 2**40, BASE - 1):
            batch = _one(largest)
            with pytest.raises(LogSegmentOffsetOverflowError) as raised:
                segment.append(largest, T0, largest, batch)
            assert raised.value.offset == largest
            assert segment.size() == size
        top = BASE + INT32_MAX
        segment.append(top, T0 + 5, top, _one(top - 1, 2, T0 + 4))
        assert segment.read_next_offset() == top + 1
        assert not segment.has_overflow()
        fetch = segment.read(top, READ_SIZE)
        assert fetch is not None and fetch.fetch_offset_metadata.relative_position_in_segment == size
    finally:
        segment.close()


@pytest.mark.parametrize("straddles", [False, True])
def test_recover_refuses_offsets_past_relative_range(impl: ModuleType, tmp_path: pathlib.Path,
                                                     straddles: bool) -> None:
    """A log holding a batch whose last offset is past base + 2**31 - 1 (written behind the segment's
    back) cannot be indexed: recovery raises LogSegmentOffsetOverflowError at that offset."""
    with FileMessageSet.open(log_filename(tmp_path, BASE)) as log:
        log.append(_one(BASE, 3))
        if straddles:  # base in range, last offset out of it
            log.append(_one(BASE + INT32_MAX - 1, 3))
            bad = BASE + INT32_MAX + 1
        else:
            log.append(_one(BASE + 2**31 + 7))
            bad = BASE + 2**31 + 7
        size = log.size_in_bytes()
    segment = LogSegment.open(tmp_path, BASE, config=CONFIG, file_already_exists=True)
    try:
        assert segment.has_overflow()
        with pytest.raises(LogSegmentOffsetOverflowError, match=str(bad)) as raised:
            segment.recover()
        assert raised.value.offset == bad
        assert raised.value.segment is segment
        assert segment.size() == size
    finally:
        segment.close()


def test_recover_refuses_offsets_going_backwards(impl: ModuleType, tmp_path: pathlib.Path) -> None:
    """A log whose batches go back in offset (written behind the segment's back) cannot be indexed:
    recovery's index append raises InvalidOffsetError, as Kafka's does (its log loader then replaces the
    segment), and cuts nothing."""
    with FileMessageSet.open(log_filename(tmp_path, BASE)) as log:
        for base in (BASE, BASE + 10, BASE + 5, BASE + 20):
            log.append(_one(base, 1, T0 + base))
        size = log.size_in_bytes()
    config = LogConfig({"index.interval.bytes": 50, "segment.index.bytes": INDEX_BYTES})
    segment = LogSegment.open(tmp_path, BASE, config=config, file_already_exists=True)
    try:
        with pytest.raises(InvalidOffsetError, match=f"offset \\({BASE + 5}\\)"):
            segment.recover()
        assert segment.size() == size
    finally:
        segment.close()
    assert log_filename(tmp_path, BASE).stat().st_size == size


@pytest.mark.parametrize("tail", ["zeros", "partial_write"])
def test_recover_trims_preallocated_log(impl: ModuleType, tmp_path: pathlib.Path, tail: str) -> None:
    """A preallocated log left untrimmed by a crash (batches, then the zeros of the preallocation; or a
    batch cut short before them): recovery cuts exactly the tail after the last whole batch."""
    init_size = 64 * 1024
    plan = _plan(5, n=12)
    segment = LogSegment.open(tmp_path, BASE, config=CONFIG, time=MockTime(), preallocate=True,
                              init_file_size=init_size)
    try:
        assert segment.size() == 0
        for records, largest_offset, largest_timestamp in plan.appends:
            segment.append(largest_offset, largest_timestamp, largest_offset, records)
        valid = segment.size()
        assert valid == len(plan.data)
    finally:
        segment.close_handlers()
    log = log_filename(tmp_path, BASE)
    assert log.stat().st_size == init_size
    if tail == "partial_write":
        with open(log, "r+b") as f:
            f.seek(valid)
            f.write(_one(plan.entries[-1].last + 1, 3).buffer[:-9])
    segment = LogSegment.open(tmp_path, BASE, config=CONFIG, file_already_exists=True)
    try:
        assert segment.size() == init_size
        assert segment.recover() == init_size - valid
        assert segment.size() == valid
        _check_indexes_point_at_entries(segment, plan.entries)
        _check_entries_readable(segment, plan.entries)
    finally:
        segment.close()
    assert log.stat().st_size == valid
    assert log.read_bytes() == plan.data
    assert _contents(tmp_path) == _reference(tmp_path / "ref", plan.entries)


def test_zero_tail_index_lookups_are_wrong_until_recovered(impl: ModuleType, tmp_path: pathlib.Path) -> None:
    """Why recovery must rebuild after a crash: the zero entries of an untrimmed index are taken as
    entries, so a lookup past the real ones answers (base, 0); after recovery it answers the last real
    entry again."""
    plan = _plan(6)
    _write(tmp_path / "seg", plan.appends, crash=True)
    reference = _reference(tmp_path / "ref", plan.entries)
    real = np.frombuffer(reference[1], dtype=">i4").reshape(-1, 2)
    assert len(real) > 3
    last_real = OffsetPosition(BASE + int(real[-1][0]), int(real[-1][1]))
    segment = LogSegment.open(tmp_path / "seg", BASE, config=CONFIG, file_already_exists=True)
    try:
        assert segment.offset_index.lookup(plan.entries[-1].last) == OffsetPosition(BASE, 0)
        segment.recover()
        assert segment.offset_index.lookup(plan.entries[-1].last) == last_real
        assert os.path.getsize(index_filename(tmp_path / "seg", BASE)) == len(real) * 8
    finally:
        segment.close()

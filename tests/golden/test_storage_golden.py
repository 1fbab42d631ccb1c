"""The storage layer over broker-written segments: the golden ``.index``/``.timeindex``/``.log`` files.

Every golden file is opened read-only, and every test fingerprints each file it opens (size, mtime,
SHA-256) and the listing of its folder before and after: opening, sanity-checking, reading and
searching a broker's directory must not change a byte, an mtime or create a file (the missing
preallocated indexes named in ``MISSING.txt`` must stay missing).  Recovery works on copies.

The expectations come from ``/work/shared/golden/DETAILS.md`` (transcribed in :mod:`tests.support.golden_data`):
record, batch and offset counts per segment, entry counts per index, and how many index entries are
exactly ``(batch last offset, batch position)``.  Two things real brokers write are accepted, as the
DETAILS notes say they must be:

* an offset-index entry is keyed by the largest offset of the whole *append* it indexes, so its offset
  can be the last offset of a later batch of that append than the one at its position (16 of 85
  entries of ``invoice-0/0.index``, 18 of 94 of ``invoice-1/0.index``, every entry of the small
  ``invoice-*`` indexes);
* a time-index entry can point at its batch's base offset instead of its last offset
  (``yuanliubei __consumer_offsets-17/58.timeindex``).

Reads and timestamp searches are checked against the records decoded from the ``.log`` itself.
Reading every offset of the 300 000 that the segments hold would take minutes (each read walks the
file from the indexed position), so a segment whose reads fit ``WALK_BUDGET`` is read at every
offset, and a larger one at a fixed, seeded probe set: its first and last offsets, both ends of
(a sample of) its batches, the offsets on either side of (a sample of) its index entries, and random
offsets.  A read can only answer with one batch, so the batch ends and index-entry neighbours are the
places where an answer can change.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import itertools
import os
import pathlib
import shutil
import zlib
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from kafkalog import _impl
from kafkalog.config.log_config import LogConfig
from kafkalog.errors import ReadOnlyError
from kafkalog.fetch import LogOffsetMetadata
from kafkalog.file_message_set import FileMessageSet, LogOffsetPosition
from kafkalog.index import OffsetIndex, OffsetPosition, TimeIndex, TimestampOffset
from kafkalog.record import MemoryRecords, ScanStop
from kafkalog.segment import LogSegment
from tests.support.golden_data import OFFSET_INDEX_FACTS, SEGMENT_FACTS, TIME_INDEX_FACTS


def _rel(folder: str, base: int, suffix: str) -> str:
    return f"{folder}/{base:020d}{suffix}"


SEGMENTS = [(_rel(folder, base, ".log"), *facts) for folder, base, *facts in SEGMENT_FACTS]
OFFSET_INDEXES = [(_rel(folder, base, ".index"), *facts) for folder, base, *facts in OFFSET_INDEX_FACTS]
TIME_INDEXES = [(_rel(folder, base, ".timeindex"), *facts) for folder, base, *facts in TIME_INDEX_FACTS]

#: Batch frames the reads of one segment may walk, summed (a read walks from the indexed position to
#: its batch, and a python-twin frame costs about a microsecond).  A segment whose every offset fits
#: is read at every offset; a larger one at a probe set of about this budget, at least MIN_PROBES reads
#: and at most MAX_PROBES.
WALK_BUDGET = 80_000
FULL_PROBE_LIMIT = 1000
MIN_PROBES = 30
MAX_PROBES = 180
#: Timestamp searches per segment: each scans the rest of the file, so a segment of n batches gets
#: TIMESTAMP_SCAN_BUDGET // n of them (at most TIMESTAMP_PROBES, at least the first and last batch).
TIMESTAMP_SCAN_BUDGET = 10_000
TIMESTAMP_PROBES = 12
READ_SIZE = 1 << 20


def _ids(table: list[tuple[Any, ...]]) -> list[str]:
    """Test ids: the set's owner, the partition and the base offset."""
    ids = []
    for rel, *_ in table:
        parts = rel.split("/")
        ids.append(f"{parts[0].split('__')[0]}:{parts[-2]}/{int(parts[-1].split('.')[0])}")
    return ids


# -- keeping the golden folder untouched ------------------------------------------------------------


def _fingerprint(path: pathlib.Path) -> tuple[int, int, str]:
    stat = path.stat()
    with open(path, "rb") as f:
        digest = hashlib.file_digest(f, "sha256").hexdigest()
    return stat.st_size, stat.st_mtime_ns, digest


@contextlib.contextmanager
def _untouched(paths: list[pathlib.Path]) -> Iterator[dict[pathlib.Path, tuple[int, int, str]]]:
    """Fingerprint ``paths`` (and list their folders) before and after the block: the same bytes,
    sizes and mtimes afterwards, no file created or removed (a path that does not exist stays so)."""
    folders = sorted({p.parent for p in paths})
    listings = {folder: sorted(os.listdir(folder)) for folder in folders}
    before = {p: _fingerprint(p) for p in paths if p.exists()}
    yield before
    after = {p: _fingerprint(p) for p in paths if p.exists()}
    assert after == before
    assert {folder: sorted(os.listdir(folder)) for folder in folders} == listings


def _segment_files(log: pathlib.Path) -> list[pathlib.Path]:
    return [log, log.with_suffix(".index"), log.with_suffix(".timeindex")]


def _missing(golden: pathlib.Path) -> set[pathlib.Path]:
    """The files ``MISSING.txt`` says the source repositories had but the snapshot did not."""
    out = set()
    for listing in golden.glob("*/MISSING.txt"):
        for line in listing.read_text().splitlines():
            if line.startswith("MISSING "):
                out.add(listing.parent / line.split(" ", 1)[1].strip())
    return out


def _expected_absent(path: pathlib.Path, missing: set[pathlib.Path]) -> bool:
    """Whether a segment's index is absent from the folder: named in ``MISSING.txt``, or a time index of
    the Kafka 0.8/0.9 kafkalite set, written before time indexes existed (0.10.1)."""
    return path in missing or (path.suffix == ".timeindex" and "asayers__kafkalite" in path.parts)


# -- what a segment holds, decoded from its bytes ----------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Truth:
    """A segment's batches (scan rows) and records (decoded), the reference every answer is checked
    against.  ``base[j]``/``last[j]`` are batch ``j``'s base and last offsets (a compacted v2 batch keeps
    both when its first or last records are gone), ``first[j]`` its first record's offset; ``owner[i]``
    is the batch of record ``i``."""

    size: int
    positions: npt.NDArray[Any]
    sizes: npt.NDArray[Any]
    base: npt.NDArray[Any]
    first: npt.NDArray[Any]
    last: npt.NDArray[Any]
    max_timestamps: npt.NDArray[Any]
    offsets: npt.NDArray[Any]
    timestamps: npt.NDArray[Any]
    owner: npt.NDArray[Any]

    def batch_of(self, offset: int) -> int:
        """The first batch whose last offset is >= ``offset`` (what a read of ``offset`` must find)."""
        return int(np.searchsorted(self.last, offset, side="left"))

    def record_at(self, offset: int) -> int:
        i = int(np.searchsorted(self.offsets, offset))
        assert i < len(self.offsets) and self.offsets[i] == offset, f"offset {offset} is not in the segment"
        return i


_TRUTH: dict[str, Truth] = {}


def _truth(rel: str, data: bytes) -> Truth:
    """Decode the segment once per session, with the fastest twin there is: the reference is the same
    whichever twin is under test (golden/test_golden.py checks that the two decode the files alike)."""
    if rel not in _TRUTH:
        with _impl.using("cython" if "cython" in _impl.both() else "python"):
            _TRUTH[rel] = _decode(data)
    return _TRUTH[rel]


def _decode(data: bytes) -> Truth:
    records = MemoryRecords(data)
    scan = records.scan(check_crc=True, stop_on_invalid=True)
    assert scan.stop_reason is ScanStop.END
    assert scan.stop_position == len(data)
    rows = scan.batches
    offsets: list[npt.NDArray[Any]] = []
    timestamps: list[npt.NDArray[Any]] = []
    owners: list[npt.NDArray[Any]] = []
    batch = 0
    if len(rows) and bool(np.all((rows["magic"] < 2) & (rows["attributes"] & 7 == 0))):
        # uncompressed v0/v1 messages, one record each: one kernel call decodes the whole file
        columns = _impl.core.decode_legacy_records(data, 0, len(data))
        return _columns_truth(data, rows, columns["offset"], columns["timestamp"], np.arange(len(rows)))
    for columns in records.record_columns():
        assert columns.starts is not None
        for i in range(len(columns.starts) - 1):
            owners.append(np.full(int(columns.starts[i + 1] - columns.starts[i]), batch, dtype=np.int64))
            batch += 1
        offsets.append(columns.records["offset"].astype(np.int64))
        timestamps.append(columns.records["timestamp"].astype(np.int64))
    assert batch == len(rows)
    empty = np.empty(0, np.int64)
    return _columns_truth(data, rows, np.concatenate(offsets) if offsets else empty,
                          np.concatenate(timestamps) if timestamps else empty,
                          np.concatenate(owners) if owners else empty)


def _columns_truth(data: bytes, rows: npt.NDArray[Any], all_offsets: npt.NDArray[Any],
                   timestamps: npt.NDArray[Any], owner: npt.NDArray[Any]) -> Truth:
    all_offsets = all_offsets.astype(np.int64)
    n = len(rows)
    first = np.full(n, -1, dtype=np.int64)
    # Records are in batch order, so the first record of each batch is where its owner changes.
    starts = np.flatnonzero(np.diff(owner, prepend=-1) != 0)
    first[owner[starts]] = all_offsets[starts]
    # A v2 batch keeps its base offset when compaction removes its first records; a legacy wrapper's base
    # is its first inner offset (Kafka: AbstractLegacyRecordBatch.baseOffset).
    base = np.where(rows["magic"] == 2, rows["base_offset"], first).astype(np.int64)
    truth = Truth(len(data), rows["position"].astype(np.int64), rows["size"].astype(np.int64), base, first,
                  rows["last_offset"].astype(np.int64), rows["max_timestamp"].astype(np.int64), all_offsets,
                  timestamps.astype(np.int64), owner.astype(np.int64))
    return truth


def _check_truth(truth: Truth, batches: int, records: int, offsets: tuple[int, int] | None) -> None:
    """The decode agrees with DETAILS.md before anything is checked against it."""
    assert len(truth.positions) == batches
    assert len(truth.offsets) == records
    if offsets is None:
        assert truth.size == 0
        return
    assert (int(truth.offsets[0]), int(truth.offsets[-1])) == offsets
    assert bool(np.all(np.diff(truth.offsets) > 0))
    assert bool(np.all(truth.base <= truth.first))
    assert bool(np.all(truth.first <= truth.last))
    # every record sits in its batch's range, and the batch's last offset is its last record's
    assert bool(np.all(truth.offsets <= truth.last[truth.owner]))
    assert bool(np.all(truth.offsets >= truth.first[truth.owner]))
    assert int(truth.last[-1]) == offsets[1]


def _probes(rel: str, truth: Truth, index_offsets: list[int]) -> list[int]:
    """The held offsets a segment is read at (see the module docstring)."""
    held = truth.offsets
    n_batches = len(truth.positions)
    walk = max(1.0, n_batches / (len(index_offsets) + 1) / 2)  # frames walked by an average read
    if len(held) <= FULL_PROBE_LIMIT and len(held) * walk <= WALK_BUDGET:
        return [int(o) for o in held]
    rng = np.random.default_rng(zlib.crc32(rel.encode()))
    quota = int(min(MAX_PROBES, max(MIN_PROBES, WALK_BUDGET / walk))) // 3
    chosen = {int(held[0]), int(held[-1])}
    # both ends of sampled batches, random offsets, and each side of sampled index entries
    batches = rng.choice(n_batches, min(n_batches, quota // 2 if index_offsets else quota), replace=False)
    chosen.update(int(truth.first[j]) for j in batches)
    chosen.update(int(truth.last[j]) for j in batches)
    chosen.update(int(o) for o in rng.choice(held, quota if index_offsets else 2 * quota, replace=False))
    if index_offsets:
        picked = rng.choice(len(index_offsets), min(len(index_offsets), quota // 3 + 1), replace=False)
        for k in picked:
            chosen.update({index_offsets[k] - 1, index_offsets[k], index_offsets[k] + 1})
    held_set = set(held.tolist())
    return sorted(o for o in chosen if o in held_set)


def _timestamp_batches(rel: str, truth: Truth) -> list[int]:
    """The batches whose max timestamp is searched for."""
    n = len(truth.positions)
    count = min(n, TIMESTAMP_PROBES, max(2, TIMESTAMP_SCAN_BUDGET // max(n, 1)))
    if count >= n:
        return list(range(n))
    rng = np.random.default_rng(zlib.crc32(rel.encode()) + 1)
    return sorted({0, n - 1, *(int(j) for j in rng.choice(np.arange(1, n - 1), count - 2, replace=False))})


def _check_read(segment: LogSegment, truth: Truth, offset: int) -> LogOffsetPosition:
    """``read(offset)`` answers with the batch holding ``offset``, from its position to the end of the
    segment or 1 MiB, whichever is first.  Returns where the read found it, as ``translate_offset``
    says it."""
    j = truth.batch_of(offset)
    position = int(truth.positions[j])
    fetch = segment.read(offset, READ_SIZE)
    assert fetch is not None, f"read({offset}) found nothing"
    assert fetch.fetch_offset_metadata == LogOffsetMetadata(offset, segment.base_offset, position)
    assert fetch.first_entry_incomplete is False
    assert fetch.records.start == position
    assert fetch.records.size_in_bytes() == min(READ_SIZE, truth.size - position)
    first = list(fetch.records.read(0, int(truth.sizes[j])).batches())
    assert len(first) == 1
    batch = first[0]
    assert batch.position == position
    assert batch.base_offset <= offset <= batch.last_offset
    assert (batch.base_offset, batch.last_offset) == (int(truth.base[j]), int(truth.last[j]))
    return LogOffsetPosition(batch.last_offset, position, batch.size_in_bytes)


def _check_find_by_timestamp(segment: LogSegment, truth: Truth, j: int) -> tuple[int, int]:
    """Searching for batch ``j``'s max timestamp finds a record of the segment with that timestamp or a
    later one, no later than batch ``j`` (whose own max it is); and when the time index has no entry
    at the timestamp itself the search starts before every candidate, so the answer is the first
    record in the log with a timestamp that large."""
    target = int(truth.max_timestamps[j])
    found = segment.find_offset_by_timestamp(target)
    assert found is not None, f"no record found for timestamp {target} (max timestamp of batch {j})"
    i = truth.record_at(found.offset)
    assert int(truth.timestamps[i]) == found.timestamp
    assert found.timestamp >= target
    assert found.offset <= int(truth.last[j])
    reaching = np.flatnonzero(truth.timestamps >= target)
    assert len(reaching) > 0
    first_reaching = int(truth.offsets[reaching[0]])
    assert found.offset >= first_reaching
    if segment.time_index.lookup(target).timestamp < target:
        assert found.offset == first_reaching
    return found.timestamp, found.offset


def _rebuilt_entries(truth: Truth, interval: int,
                     base: int) -> tuple[list[OffsetPosition], list[TimestampOffset]]:
    """The index entries a segment appended one batch at a time would have (Kafka's ``LogSegment.append``
    rule): an offset-index entry (batch last offset, batch position) for a batch that starts more than
    ``interval`` bytes after the last indexed one (or the file's start), and with it a time-index entry
    (largest timestamp so far, last offset of the first batch that reached it) when that timestamp grew;
    the closing time-index entry for the largest timestamp of all.  What recovery must rebuild."""
    offsets: list[OffsetPosition] = []
    times: list[TimestampOffset] = []
    last_indexed = 0
    best, best_offset = -1, base
    for position, last, max_timestamp in zip(truth.positions.tolist(), truth.last.tolist(),
                                             truth.max_timestamps.tolist(), strict=True):
        if max_timestamp > best:
            best, best_offset = max_timestamp, last
        if position - last_indexed > interval:
            offsets.append(OffsetPosition(last, position))
            if best > (times[-1].timestamp if times else -1):
                times.append(TimestampOffset(best, best_offset))
            last_indexed = position
    if best > (times[-1].timestamp if times else -1):
        times.append(TimestampOffset(best, best_offset))
    return offsets, times


#: What the broker's own segment answered, by (segment, "offset" or "timestamp", offset or batch): the
#: read-only test records them and the recovery test compares the rebuilt indexes' answers with them
#: (computing any it finds missing, as when it runs alone).
_GOLDEN_ANSWERS: dict[tuple[str, str, int], Any] = {}


def _golden_answer(rel: str, kind: str, key: int, compute: Callable[[], Any]) -> Any:
    if (rel, kind, key) not in _GOLDEN_ANSWERS:
        _GOLDEN_ANSWERS[rel, kind, key] = compute()
    return _GOLDEN_ANSWERS[rel, kind, key]


def _index_offsets(segment: LogSegment) -> list[int]:
    return [segment.offset_index.entry(n).offset for n in range(segment.offset_index.entries)]


# -- the tables cover the folder ------------------------------------------------------------------------


def test_tables_cover_every_segment_and_index(golden: pathlib.Path) -> None:
    """Every segment ``.log`` and every non-empty index in the golden folder is in a table above, and the
    indexes a segment lacks are the ones ``MISSING.txt`` names."""
    logs = {p.relative_to(golden).as_posix() for p in golden.rglob("*.log")}
    assert logs == {rel for rel, *_ in SEGMENTS}
    assert len(logs) == 74
    indexes = {p.relative_to(golden).as_posix() for p in golden.rglob("*.index") if p.stat().st_size}
    assert indexes == {rel for rel, *_ in OFFSET_INDEXES}
    times = {p.relative_to(golden).as_posix() for p in golden.rglob("*.timeindex") if p.stat().st_size}
    assert times == {rel for rel, *_ in TIME_INDEXES}
    missing = _missing(golden)
    for rel, *_ in SEGMENTS:
        log = golden / rel
        for path in _segment_files(log)[1:]:
            assert path.exists() != _expected_absent(path, missing), path
    assert sum(1 for rel, *_ in SEGMENTS if (golden / rel).with_suffix(".index") in missing) == 48


# -- the index files against their logs -----------------------------------------------------------------


@pytest.mark.parametrize(("rel", "entries", "exact"), OFFSET_INDEXES, ids=_ids(OFFSET_INDEXES))
def test_golden_offset_index(impl: ModuleType, golden: pathlib.Path, rel: str, entries: int,
                             exact: int) -> None:
    """Each entry of a broker's offset index points at the start of a batch, and its offset is the last
    offset of that batch or of a later batch of the same append (before the next entry's position);
    DETAILS.md's count of entries that are exactly (batch last offset, batch position) holds."""
    path = golden / rel
    log = path.with_suffix(".log")
    base = int(path.stem)
    with _untouched([path, log]):
        with FileMessageSet(log, writable=False) as records:
            rows = records.scan().batches
            size = records.size_in_bytes()
        index = OffsetIndex(path, base, writable=False)
        try:
            index.sanity_check()
            assert index.entries == entries == path.stat().st_size // 8
            assert index.max_entries == entries
            got = [index.entry(n) for n in range(entries)]
            # lookups give back the entries: at an entry's offset that entry, just before it the one before
            for n, entry in enumerate(got):
                assert index.lookup(entry.offset) == entry
                below_next = got[n + 1].offset - 1 if n + 1 < len(got) else entry.offset + 1
                assert index.lookup(below_next) == entry
                previous = got[n - 1] if n else OffsetPosition(base, 0)
                assert index.lookup(entry.offset - 1) == previous
            assert index.lookup(base) == (got[0] if got[0].offset == base else OffsetPosition(base, 0))
            assert index.last_offset == got[-1].offset
        finally:
            index.close()
    positions = rows["position"].tolist()
    lasts = rows["last_offset"].tolist()
    at = {p: j for j, p in enumerate(positions)}
    offsets = [e.offset for e in got]
    assert offsets == sorted(set(offsets))
    assert [e.position for e in got] == sorted({e.position for e in got})
    exact_count = 0
    for n, entry in enumerate(got):
        assert entry.position > 0  # the first append of a segment is never indexed
        assert entry.position in at, f"entry {n} {entry} is not at a batch start"
        j = at[entry.position]
        assert lasts[j] <= entry.offset
        k = lasts.index(entry.offset)  # the batch that ends the append
        assert k >= j
        next_position = got[n + 1].position if n + 1 < len(got) else size
        assert positions[k] < next_position
        exact_count += k == j
    assert exact_count == exact
    assert sum(1 for e in got if lasts[at[e.position]] < e.offset) == entries - exact


@pytest.mark.parametrize(("rel", "entries", "at_last"), TIME_INDEXES, ids=_ids(TIME_INDEXES))
def test_golden_time_index(impl: ModuleType, golden: pathlib.Path, rel: str, entries: int,
                           at_last: int) -> None:
    """Each entry (T, O) of a broker's time index: O is inside a batch, that batch's max timestamp is T and
    T is the largest timestamp up to it; O is the batch's last offset in DETAILS.md's count of entries,
    its base offset in the others."""
    path = golden / rel
    log = path.with_suffix(".log")
    base = int(path.stem)
    with _untouched([path, log]):
        with FileMessageSet(log, writable=False) as records:
            rows = records.scan().batches
        index = TimeIndex(path, base, writable=False)
        try:
            index.sanity_check()
            assert index.entries == entries == path.stat().st_size // 12
            got = [index.entry(n) for n in range(entries)]
            for n, entry in enumerate(got):
                assert index.lookup(entry.timestamp) == entry
                below_next = got[n + 1].timestamp - 1 if n + 1 < len(got) else entry.timestamp + 1
                assert index.lookup(below_next) == entry
                previous = got[n - 1] if n else TimestampOffset(-1, base)
                assert index.lookup(entry.timestamp - 1) == previous
            assert index.last_entry == got[-1]
        finally:
            index.close()
    assert all(a.timestamp < b.timestamp for a, b in itertools.pairwise(got))
    assert all(a.offset <= b.offset for a, b in itertools.pairwise(got))
    running = np.maximum.accumulate(rows["max_timestamp"])
    on_last = on_base = 0
    for entry in got:
        holding = np.flatnonzero((rows["base_offset"] <= entry.offset)
                                 & (rows["last_offset"] >= entry.offset))
        assert len(holding) == 1, f"{entry} is not inside exactly one batch"
        j = int(holding[0])
        assert int(rows["max_timestamp"][j]) == entry.timestamp
        assert int(running[j]) == entry.timestamp
        if entry.offset == int(rows["last_offset"][j]):
            on_last += 1
        else:
            assert entry.offset == int(rows["base_offset"][j])
            on_base += 1
    assert (on_last, on_base) == (at_last, entries - at_last)


# -- whole segments, read-only ---------------------------------------------------------------------------


@pytest.mark.parametrize(("rel", "batches", "records", "offsets"), SEGMENTS, ids=_ids(SEGMENTS))
def test_golden_segment_reads(impl: ModuleType, golden: pathlib.Path, rel: str, batches: int, records: int,
                              offsets: tuple[int, int] | None) -> None:
    """A broker's segment opened read-only answers reads at the offsets it holds with the batch holding
    each, nothing past its end, and finds records by timestamp; a missing index reads as empty and is
    not created; nothing in the folder changes."""
    log = golden / rel
    base = int(log.stem)
    files = _segment_files(log)
    with _untouched(files):
        truth = _truth(rel, log.read_bytes())
        _check_truth(truth, batches, records, offsets)
        missing = _missing(golden)
        for path in files[1:]:
            assert path.exists() != _expected_absent(path, missing)
        segment = LogSegment.open(log.parent, base, read_only=True)
        try:
            segment.sanity_check(False)
            segment.check_index_files()
            assert segment.size() == truth.size
            for index, entry_size in ((segment.offset_index, 8), (segment.time_index, 12)):
                expected = index.path.stat().st_size // entry_size if index.path.exists() else 0
                assert index.entries == expected
            index_offsets = _index_offsets(segment)
            for offset in _probes(rel, truth, index_offsets):
                _GOLDEN_ANSWERS[rel, "offset", offset] = _check_read(segment, truth, offset)
            end = int(truth.last[-1]) + 1 if len(truth.last) else base
            assert segment.read(end, READ_SIZE) is None
            assert segment.translate_offset(end) is None
            assert segment.read_next_offset() == end
            for j in _timestamp_batches(rel, truth):
                _GOLDEN_ANSWERS[rel, "timestamp", j] = _check_find_by_timestamp(segment, truth, j)
            # a read-only segment refuses what would write
            with pytest.raises(ReadOnlyError):
                segment.recover()
            with pytest.raises(ReadOnlyError):
                segment.truncate_to(base)
            if truth.size == 0:
                assert segment.read(base, READ_SIZE) is None
                assert segment.find_offset_by_timestamp(0) is None
            else:
                beyond = int(truth.max_timestamps.max()) + 1
                assert segment.find_offset_by_timestamp(beyond) is None
        finally:
            segment.close()


@pytest.mark.parametrize(("rel", "batches", "records", "offsets"), SEGMENTS, ids=_ids(SEGMENTS))
def test_golden_segment_recover_copy(impl: ModuleType, golden: pathlib.Path, tmp_path: pathlib.Path, rel: str,
                                     batches: int, records: int, offsets: tuple[int, int] | None) -> None:
    """``recover()`` of a copy of a broker's segment cuts nothing, rebuilds the indexes that appending its
    batches one by one would have written (keyed by batch last offsets), and they lead every read and
    timestamp search to the same batch and record as the broker's indexes."""
    log = golden / rel
    base = int(log.stem)
    files = _segment_files(log)
    with _untouched(files) as before:
        truth = _truth(rel, log.read_bytes())
        _check_truth(truth, batches, records, offsets)
        for path in files:
            if path.exists():
                shutil.copy(path, tmp_path / path.name)
        original = LogSegment.open(log.parent, base, read_only=True)
        try:
            copy = LogSegment.open(tmp_path, base, file_already_exists=True)
            try:
                assert copy.recover() == 0
                assert copy.size() == truth.size
                copy.offset_index.sanity_check()
                copy.time_index.sanity_check()
                expected_index, expected_times = _rebuilt_entries(truth, LogConfig().index_interval, base)
                rebuilt = copy.offset_index, copy.time_index
                assert [rebuilt[0].entry(n) for n in range(rebuilt[0].entries)] == expected_index
                assert [rebuilt[1].entry(n) for n in range(rebuilt[1].entries)] == expected_times
                for offset in _probes(rel, truth, _index_offsets(original)):
                    j = truth.batch_of(offset)
                    expected = LogOffsetPosition(int(truth.last[j]), int(truth.positions[j]),
                                                 int(truth.sizes[j]))
                    golden_answer = _golden_answer(rel, "offset", offset,
                                                   functools.partial(original.translate_offset, offset))
                    assert golden_answer == expected
                    assert copy.translate_offset(offset) == expected
                end = int(truth.last[-1]) + 1 if len(truth.last) else base
                assert original.translate_offset(end) is None
                assert copy.translate_offset(end) is None
                assert copy.read(end, READ_SIZE) is None
                for j in _timestamp_batches(rel, truth):
                    search = functools.partial(_check_find_by_timestamp, original, truth, j)
                    golden_answer = _golden_answer(rel, "timestamp", j, search)
                    assert _check_find_by_timestamp(copy, truth, j) == golden_answer
                if len(truth.max_timestamps) and int(truth.max_timestamps.max()) >= 0:
                    top = int(truth.max_timestamps.max())
                    assert copy.max_timestamp_so_far == top
                    assert copy.time_index.last_entry.timestamp == top
            finally:
                copy.close()
        finally:
            original.close()
        assert _fingerprint(tmp_path / log.name)[::2] == before[log][::2]

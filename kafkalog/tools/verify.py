"""Read-only checks of partition directories and whole log.dirs: what ``kafkalog verify`` runs.

Nothing here writes, renames or locks; a live broker's directory can be checked.  Each check states the
invariant a broker relies on, and a finding says which file broke it and how:

Per segment (``<base>.log`` and its indexes):
  - every batch's CRC matches (and, with ``deep``, every record decodes and every inner legacy message's
    own CRC matches);
  - the file ends on a batch boundary (a torn tail is what recovery truncates);
  - offsets rise: each batch starts after the previous one's last offset, no offset is below the
    segment's base offset or more than ``Int.MaxValue`` past it (the index stores offsets relative to
    the base in 4 bytes);
  - offset index: whole 8-byte entries; offsets strictly rising; each entry ``(o, p)`` points at the
    start of a batch, no batch before ``p`` holds an offset >= ``o``, and some batch from ``p`` on
    does.  (A broker may index a multi-batch append by its last offset at the position of its first
    batch, so the batch at ``p`` need not end at ``o``; Kafka's DumpLogSegments reports those as
    mismatches, wrongly);
  - time index: whole 12-byte entries; timestamps strictly rising and offsets not falling; each entry
    ``(t, o)`` names an offset in the segment, and the batch holding ``o`` has max timestamp ``t`` with no
    earlier batch later than ``t``;
  - a zero-filled index tail (a preallocated index not trimmed by a clean shutdown) is a note; an index's
    entries end at its first all-zero entry after the first, and only they are read (with the tail's data
    regions, to see that it is zero), so a 10 MiB or a sparse 8 GiB preallocated index costs what it holds.
    The first slot, zero-filled, is an entry only where a broker could have written it: ``(offset +0,
    position 0)`` when the segment has a batch, ``(timestamp 0, offset +0)`` when its first batch's max
    timestamp is 0 (Kafka's ``TimeIndex.maybeAppend`` starts from ``NO_TIMESTAMP``); otherwise the whole file is
    the preallocated tail of an index that holds no entry yet, which a broker's active segment has after a
    crash while it holds less than ``index.interval.bytes`` (and a KRaft metadata log at every stop, as Kafka
    loads that log with recovery each time).  DumpLogSegments reads that slot as an entry and reports the time
    index's as a mismatch; verify does not.

Per partition: segment base offsets rise and each follows the previous segment's last offset; the
leader-epoch checkpoint, producer snapshots and transaction indexes read back; a transaction index's last offsets
rise, none is below its segment's base offset (Kafka's ``TransactionIndex.sanityCheck``, which a broker's open
rebuilds an index on and kafkalog's read-only readers do not trust one without), it holds no more entries than its
segment holds batches, and it ends on a whole entry (read a chunk at a time, whatever its size); leftover
``.cleaned``/``.swap``/``.deleted`` files and orphan indexes are noted.

Per log dir: the offset checkpoints read back, and each entry is consistent with its log: the
recovery point and the high watermark are at most the log end offset (beyond it, flushed or
committed records are missing), the log start offset lies between the first segment's base offset
and the log end offset, and the cleaner's checkpoint is not past the log end.

A directory at a URL (:func:`verify_remote_partition`, :func:`verify_remote_log_dir`) gets every check above
through the same functions, which take a ``Path`` or a :class:`~kafkalog.urls.location.StorageLocation`:
the segments are read by range, the small files (snapshots, transaction indexes, checkpoints) each with one
ranged read of the size the listing gave (:mod:`kafkalog.urls.files`), and the findings are the local
ones, naming the URL where those name the path.
"""

from __future__ import annotations

import enum
import itertools
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import numpy.typing as npt

from .._common import INT32_MAX, INT64_MAX, RECORD_BATCH_OVERHEAD, ScanStop
from .._text import counted, is_or_are
from ..checkpoint import (
    CLEANER_OFFSET_CHECKPOINT_FILE,
    FIRST_ENTRY_LINE,
    LEADER_EPOCH_CHECKPOINT_FILE,
    LOG_START_OFFSET_CHECKPOINT_FILE,
    RECOVERY_POINT_CHECKPOINT_FILE,
    REPLICATION_OFFSET_CHECKPOINT_FILE,
)
from ..dir_layout import OFFSET_CHECKPOINTS, SEGMENT_FILE_NAME, TEMP_FILE_SUFFIXES
from ..errors import CorruptIndexError, IllegalArgumentError, KafkaLogError
from ..file_message_set import FileMessageSet
from ..filenames import (
    CLEAN_SHUTDOWN_FILE,
    INDEX_FILE_SUFFIX,
    LOG_FILE_SUFFIX,
    TIME_INDEX_FILE_SUFFIX,
    TXN_INDEX_FILE_SUFFIX,
    offset_from_file_name,
    segment_file_offset,
)
from ..index.live_entries import (
    TAIL_READ_BUDGET,
    IndexExtent,
    first_nonzero_byte,
    first_nonzero_read,
    index_extent,
    offset_index_zero_first_entry,
    time_index_zero_first_entry,
)
from ..leader_epoch_cache import check_epoch_entry
from ..record import MemoryRecords, ScanResult
from ..record.legacy import LegacyRecordBatch
from ..topic import TopicPartition
from ..transaction_index import ABORTED_TXN_SIZE, sanity_check_entries
from ..urls.files import (
    check_producer_snapshot,
    file_size,
    iter_txn_index_entries,
    read_leader_epoch_checkpoint,
    read_offset_checkpoint,
)
from .partition_dir import partition_dirs, partition_name

if TYPE_CHECKING:
    from ..urls.location import StorageLocation

__all__ = [
    "Finding",
    "LogDirReport",
    "PartitionReport",
    "Severity",
    "log_tail_finding",
    "verify_log_dir",
    "verify_partition",
    "verify_remote_log_dir",
    "verify_remote_partition",
    "verify_segment_index",
]

#: What a broker's loader takes for a segment's file, whatever the digits (Kafka: ``isLogFile``,
#: ``isIndexFile`` and the swap and cleaned suffixes, then ``offsetFromFile``).
_SEGMENT_SHAPE = re.compile(r"^[0-9]+\.(log|index|timeindex|txnindex|snapshot)(\.(swap|cleaned))?$")


class Severity(enum.Enum):
    ERROR = "error"  #: data is corrupt, missing or inconsistent: a reader or a broker would go wrong
    WARNING = "warning"  #: a broker repairs or ignores this on open, but it is not what it writes
    NOTE = "note"  #: a normal state worth knowing (an unclean shutdown's leftovers, a missing index)


@dataclass(frozen=True)
class Finding:
    severity: Severity
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.severity.value.upper()} {self.path}: {self.message}"


@dataclass
class PartitionReport:
    """What :func:`verify_partition` found in one partition dir (``dir``: a ``Path``, or for a URL its
    :class:`~kafkalog.urls.location.StorageLocation`, whose ``str`` is the URL)."""

    dir: Path | StorageLocation
    topic_partition: TopicPartition | None
    segments: int = 0
    batches: int = 0
    records: int | None = None  # counted only by a deep check
    size: int = 0
    log_start_offset: int | None = None  # the first segment's base offset
    log_end_offset: int | None = None
    findings: list[Finding] = field(default_factory=list)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity is Severity.ERROR]

    @property
    def ok(self) -> bool:
        return not self.errors

    def add(self, severity: Severity, path: object, message: str) -> None:
        self.findings.append(Finding(severity, str(path), message))


@dataclass
class LogDirReport:
    """What :func:`verify_log_dir` found: one report per partition, plus the dir's own findings (``dir`` as in
    :class:`PartitionReport`)."""

    dir: Path | StorageLocation
    partitions: list[PartitionReport] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(p.ok for p in self.partitions) and not any(f.severity is Severity.ERROR for f in self.findings)


# -- one segment ----------------------------------------------------------------------------------------

_STOP_MESSAGES = {
    ScanStop.SIZE_TOO_SMALL: "a batch header declares a size smaller than any batch",
    ScanStop.TOO_LARGE: "a batch header declares a size larger than the file allows",
    ScanStop.BAD_MAGIC: "a batch header has an unknown magic byte",
}


@dataclass
class _Segment:
    base_offset: int
    log: Path
    rows: npt.NDArray[Any]  # BATCH_DTYPE rows of the whole batches
    size: int

    @property
    def last_offset(self) -> int | None:
        return int(self.rows["last_offset"][-1]) if len(self.rows) else None


def log_tail_finding(result: ScanResult, size: int) -> tuple[Severity, str] | None:
    """What the end of a scan (``records.scan(check_crc=True, stop_on_invalid=False)``) of a ``.log`` of
    ``size`` bytes says about the bytes after its last whole batch, as a severity and a message; ``None`` when
    the batches fill the file.  Bytes that are not a whole batch (a torn write) and a batch header no batch can
    have are errors, which recovery truncates; a zero-filled tail is a note.  ``kafkalog stats`` warns of the
    errors by the same words."""
    rows = result.batches
    end = int(rows["position"][-1]) + int(rows["size"][-1]) if len(rows) else 0
    if result.stop_reason is ScanStop.PARTIAL or (result.stop_reason is ScanStop.END and end < size):
        return Severity.ERROR, (f"{counted(size - end, 'byte')} at position {end} {is_or_are(size - end)} "
                                "not a whole batch (a torn write: recovery truncates them)")
    if result.stop_reason is ScanStop.ZERO_TAIL:
        return Severity.NOTE, (f"ends in {counted(size - end, 'zero byte')} after its last batch, at position {end} "
                               "(a preallocated segment a broker did not trim, or a write that never reached the disk: "
                               "readers stop there, recovery truncates them)")
    if result.stop_reason in _STOP_MESSAGES:
        return Severity.ERROR, (f"{_STOP_MESSAGES[result.stop_reason]} at position {result.stop_position}: the "
                                f"{counted(size - result.stop_position, 'byte')} from there cannot be read")
    return None


def _check_log(report: PartitionReport, log_file: Path, base_offset: int, deep: bool,
               progress: Callable[[int], None], records: FileMessageSet | None = None) -> _Segment:
    """Check one ``.log`` (opened here, or ``records``: an object read by range, named ``log_file``)."""
    with records if records is not None else FileMessageSet(log_file, writable=False) as records:
        size = records.size_in_bytes()
        result = records.scan(check_crc=True, stop_on_invalid=False)
        rows = result.batches
        bad = rows[rows["valid"] == 0]
        for row in bad[:20]:
            report.add(Severity.ERROR, log_file,
                       f"batch at position {int(row['position'])} (offsets {int(row['base_offset'])}.."
                       f"{int(row['last_offset'])}) fails its CRC check")
        if len(bad) > 20:
            report.add(Severity.ERROR, log_file,
                       f"{counted(len(bad) - 20, 'more batch', 'more batches')} fail their CRC check")
        tail = log_tail_finding(result, size)
        if tail is not None:
            report.add(tail[0], log_file, tail[1])
        _check_offsets(report, log_file, base_offset, rows)
        if deep and len(rows):
            report.records = (report.records or 0) + _deep_check(report, records, log_file, rows, progress)
        else:
            progress(size)
    report.batches += len(rows)
    report.size += size
    return _Segment(base_offset, log_file, rows, size)


def _check_offsets(report: PartitionReport, log_file: Path, base_offset: int, rows: npt.NDArray[Any]) -> None:
    if len(rows) == 0:
        return
    base = rows["base_offset"]
    last = rows["last_offset"]
    first_offsets = np.where(rows["magic"] == 2, base, last)  # a legacy wrapper's base needs decompression
    inverted = np.flatnonzero(last < first_offsets)
    for i in inverted[:5]:
        report.add(Severity.ERROR, log_file, f"batch at position {int(rows['position'][i])} has last offset "
                                             f"{int(last[i])} below its base offset {int(base[i])}")
    falling = np.flatnonzero(first_offsets[1:] <= last[:-1]) + 1
    for i in falling[:5]:
        report.add(Severity.ERROR, log_file,
                   f"offsets do not rise: the batch at position {int(rows['position'][i])} starts at "
                   f"{int(first_offsets[i])}, after a batch that ends at {int(last[i - 1])}")
    if int(first_offsets[0]) < base_offset:
        report.add(Severity.ERROR, log_file, f"the first batch starts at offset {int(first_offsets[0])}, below "
                                             f"the segment's base offset {base_offset}")
    if int(last.max()) - base_offset > INT32_MAX:
        report.add(Severity.ERROR, log_file, f"offset {int(last.max())} is more than Int.MaxValue past the base "
                                             f"offset {base_offset}: the index cannot hold it (split needed)")


def _deep_check(report: PartitionReport, records: FileMessageSet, log_file: Path, rows: npt.NDArray[Any],
                progress: Callable[[int], None]) -> int:
    """Decode every record, a chunk of whole batches at a time; returns the number of records."""
    count = 0
    for start, memory in records.memory_chunks(rows):
        try:
            # CRCs are checked (and reported) by the scan; here only whether the records decode.  The columns
            # come a bounded number of records at a time, whatever a batch's record count.
            decoded = sum(len(columns) for columns in memory.record_columns(check_crcs=False))
            for batch in memory.batches():
                if isinstance(batch, LegacyRecordBatch) and batch.is_compressed and \
                        not all(valid.all() for valid in batch.validity_chunks()):
                    report.add(Severity.ERROR, log_file,
                               f"a message inside the compressed wrapper at position {start + batch.position} "
                               "fails its own CRC check")
            count += decoded
        except KafkaLogError as e:
            position = getattr(e, "position", None)
            where = f" at position {start + position}" if isinstance(position, int) else ""
            report.add(Severity.ERROR, log_file, f"records do not decode{where}: {e}")
            # Go on batch by batch, so one bad batch hides nothing after it.
            count += _decode_one_by_one(report, memory, log_file, start)
        progress(len(memory))
    return count


def _decode_one_by_one(report: PartitionReport, memory: MemoryRecords, log_file: Path, start: int) -> int:
    count = 0
    failures = 0
    for batch in memory.batches():
        try:
            count += sum(len(columns) for columns in batch.column_chunks(check_crcs=False))
        except KafkaLogError:
            failures += 1
    if failures > 1:
        report.add(Severity.ERROR, log_file, f"{failures} batches in the chunk from position {start} do not decode")
    return count


_OFFSET_ENTRY = np.dtype([("relative", ">i4"), ("position", ">i4")])
_TIME_ENTRY = np.dtype([("timestamp", ">i8"), ("relative", ">i4")])


def _index_entries(report: PartitionReport, file: Any, entry: np.dtype[Any], kind: str,
                   base_offset: int, zero_first_entry: bool = True) -> npt.NDArray[Any] | None:
    """The live entries of an index file (a ``Path``, or an object at a URL: a
    :class:`~kafkalog.urls.location.StorageLocation`, read by range); ``None`` when it cannot be read or
    fails the broker's sanity check (reported).

    Where the entries end is :func:`~kafkalog.index.live_entries.index_extent`'s rule, the one a read-only open
    reads an active segment's indexes by: they end at the first all-zero slot after the first, or at the first
    when ``zero_first_entry`` is false (the caller knows no broker wrote an all-zero first entry into this
    index); the zeros after it are a preallocated tail the broker did not trim (a note), data after it a zeroed
    entry among live ones (an error).  The broker's sanity check (Kafka: ``OffsetIndex.sanityCheck``,
    ``TimeIndex.sanityCheck``) is then applied to the live entries: on the whole preallocated file a time index
    always fails it, and the broker rebuilds the index, which is what the note about the tail says.
    """
    if not isinstance(file, Path):
        try:
            length = file.size()
        except (OSError, KafkaLogError) as e:
            report.add(Severity.ERROR, file, f"cannot be read: {e}")
            return None

        def read_object(position: int, n: int) -> bytes:
            return bytes(file.read_range(position, position + n))

        return _live_entries(report, file, entry, kind, base_offset, index_extent(
            length, entry.itemsize, read_object, lambda start, end, budget: first_nonzero_read(
                read_object, start, end, budget), zero_first_entry=zero_first_entry))
    try:
        fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        report.add(Severity.ERROR, file, f"cannot be read: {e}")
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            report.add(Severity.ERROR, file, "is not a regular file: a broker cannot map it")
            return None
        extent = index_extent(info.st_size, entry.itemsize, lambda position, n: os.pread(fd, n, position),
                              lambda start, end, budget: first_nonzero_byte(fd, start, end, budget),
                              zero_first_entry=zero_first_entry)
    finally:
        os.close(fd)
    return _live_entries(report, file, entry, kind, base_offset, extent)


def _live_entries(report: PartitionReport, file: Any, entry: np.dtype[Any], kind: str, base_offset: int,
                  extent: IndexExtent) -> npt.NDArray[Any] | None:
    """The live entries :func:`_index_entries` found (``extent``), with the findings about the file's length, its
    tail, and the broker's sanity check of the entries."""
    size = entry.itemsize
    if not extent.whole:
        report.add(Severity.ERROR, file, f"fails the broker's sanity check: Index file {file} is corrupt, found "
                                         f"{extent.length} bytes which is neither positive nor a multiple of {size}.")
        return None
    if extent.zeroed_entry:
        assert extent.nonzero_after is not None
        report.add(Severity.ERROR, file, f"entry {extent.zero_from} is zero-filled, which ends an index's entries, "
                                         f"but entry {extent.nonzero_after // size} after it is not: the entries "
                                         f"from {extent.zero_from} on are not checked (a broker takes them all, and "
                                         "its lookups stop at the zero entry)")
    elif extent.zero_tail:
        report.add(Severity.NOTE, file, f"its entries end at entry {extent.zero_from}, the first zero-filled one: "
                                        f"{counted(extent.slots - extent.entries, 'slot')} from there "
                                        f"{is_or_are(extent.slots - extent.entries)} a preallocated "
                                        "tail the broker did not trim (no clean shutdown)"
                                        + ("" if extent.tail_complete else f"; past the first {TAIL_READ_BUDGET} "
                                           "bytes of its data the tail was not read"))
    data = b"".join(extent.chunks)
    entries = np.frombuffer(data, dtype=entry, count=len(data) // size)
    if len(entries):
        problem = None
        if kind == "time" and int(entries["timestamp"][-1]) < int(entries["timestamp"][0]):
            problem = (f"Corrupt time index found, time index file ({file}) has non-zero size but the last "
                       f"timestamp is {int(entries['timestamp'][-1])} which is less than the first timestamp "
                       f"{int(entries['timestamp'][0])}")
        elif int(entries["relative"][-1]) < 0:
            last = base_offset + int(entries["relative"][-1])
            problem = (f"Corrupt time index found, time index file ({file}) has non-zero size but the last offset "
                       f"is {last} which is less than the first offset {base_offset}" if kind == "time" else
                       f"Corrupt index found, index file ({file}) has non-zero size but the last offset is {last} "
                       f"which is less than the base offset {base_offset}.")
        if problem is not None:
            report.add(Severity.ERROR, file, f"fails the broker's sanity check: {problem}")
            return None
    return entries


def _absolute_offsets(report: PartitionReport, file: Any, base_offset: int,
                      relative: npt.NDArray[Any]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.intp]]:
    """The entries' offsets (base offset plus relative offset) and the entry numbers they belong to, without
    the entries whose offset would be past ``Long.MaxValue`` (reported): a segment based near it holds none."""
    relative = relative.astype(np.int64)
    over = np.flatnonzero(relative > INT64_MAX - base_offset)
    for i in over[:5]:
        report.add(Severity.ERROR, file, f"entry {int(i)} names offset {base_offset + int(relative[i])}, past the "
                                         f"largest offset a log can hold ({INT64_MAX})")
    keep = np.flatnonzero(relative <= INT64_MAX - base_offset)
    return np.int64(base_offset) + relative[keep], keep


def _report_some(report: PartitionReport, file: Any, messages: list[str], total: int, noun: tuple[str, str],
                 verb: tuple[str, str]) -> None:
    """The first ``messages`` of ``total`` errors, then how many more there are: ``noun`` and ``verb`` in the
    singular and the plural (``("entry", "entries")``, ``("points", "point")``) say what they are and do."""
    for message in messages:
        report.add(Severity.ERROR, file, message)
    more = total - len(messages)
    if more > 0:
        report.add(Severity.ERROR, file, f"{counted(more, 'more ' + noun[0], 'more ' + noun[1])} "
                                         f"{verb[0] if more == 1 else verb[1]}")


def _check_offset_index(report: PartitionReport, segment: _Segment, index_file: Any) -> None:
    rows = segment.rows
    # An all-zero first entry (offset +0 at position 0) is one a broker writes only over a batch.
    entries = _index_entries(report, index_file, _OFFSET_ENTRY, "offset", segment.base_offset,
                             zero_first_entry=offset_index_zero_first_entry(len(rows) > 0))
    if entries is None or not len(entries):
        return
    offsets, numbers = _absolute_offsets(report, index_file, segment.base_offset, entries["relative"])
    positions = entries["position"][numbers].astype(np.int64)
    for i in np.flatnonzero(offsets[1:] <= offsets[:-1])[:5] + 1:
        report.add(Severity.ERROR, index_file, f"entry {int(numbers[i])} (offset {int(offsets[i])}) does not rise "
                                               f"above entry {int(numbers[i - 1])} (offset {int(offsets[i - 1])})")
    if not len(offsets):
        return
    n = len(rows)
    batch_positions = rows["position"]
    # Each entry against the batches, all at once; the first failed condition is the entry's message.
    k = np.searchsorted(batch_positions, positions)
    at = np.minimum(k, max(n - 1, 0))
    not_at_a_batch = (k >= n) | (batch_positions[at] != positions) if n else np.ones(len(offsets), dtype=bool)
    if n:
        running_max = np.maximum.accumulate(rows["last_offset"])
        before = np.where(k > 0, running_max[np.maximum(k - 1, 0)], np.iinfo(np.int64).min)
        past_holder = ~not_at_a_batch & (k > 0) & (before >= offsets)
        past_last = ~not_at_a_batch & ~past_holder & (int(running_max[-1]) < offsets)
    else:
        past_holder = past_last = np.zeros(len(offsets), dtype=bool)
    bad = np.flatnonzero(not_at_a_batch | past_holder | past_last)
    messages = []
    for i in bad[:10]:
        o, p = int(offsets[i]), int(positions[i])
        if not_at_a_batch[i]:
            messages.append(f"entry (offset {o}, position {p}) does not point at the start of a batch"
                            + (" (past the last whole batch)" if k[i] >= n else ""))
        elif past_holder[i]:
            holder = int(np.searchsorted(running_max, o))
            messages.append(f"entry (offset {o}, position {p}) points past the batch holding offset {o} "
                            f"(at position {int(batch_positions[holder])}): lookups of it would miss")
        else:
            messages.append(f"entry (offset {o}, position {p}) names an offset past the segment's last "
                            f"({int(running_max[-1])})")
    _report_some(report, index_file, messages, len(bad), ("entry", "entries"),
                 ("points at the wrong batch", "point at the wrong batch"))


def _check_time_index(report: PartitionReport, segment: _Segment, time_index_file: Any) -> None:
    rows = segment.rows
    # An all-zero first entry (timestamp 0, offset +0) is one a broker writes only when the first batch's max
    # timestamp is 0: its index starts from no timestamp (-1) and takes only later ones.
    entries = _index_entries(report, time_index_file, _TIME_ENTRY, "time", segment.base_offset,
                             zero_first_entry=time_index_zero_first_entry(
                                 int(rows["max_timestamp"][0]) if len(rows) else None))
    if entries is None or not len(entries):
        return
    offsets, numbers = _absolute_offsets(report, time_index_file, segment.base_offset, entries["relative"])
    timestamps = entries["timestamp"][numbers].astype(np.int64)
    for i in np.flatnonzero(timestamps[1:] <= timestamps[:-1])[:5] + 1:
        report.add(Severity.ERROR, time_index_file,
                   f"entry {int(numbers[i])} (timestamp {int(timestamps[i])}) is not later than entry "
                   f"{int(numbers[i - 1])} (timestamp {int(timestamps[i - 1])}): timestamps out of order")
    for i in np.flatnonzero(offsets[1:] < offsets[:-1])[:5] + 1:
        report.add(Severity.ERROR, time_index_file,
                   f"entry {int(numbers[i])} (offset {int(offsets[i])}) is below entry {int(numbers[i - 1])} "
                   f"(offset {int(offsets[i - 1])})")
    if not len(offsets):
        return
    n = len(rows)
    if n == 0:
        report.add(Severity.ERROR, time_index_file,
                   f"has {counted(len(offsets), 'entry', 'entries')} but the log holds no batch")
        return
    running_last = np.maximum.accumulate(rows["last_offset"])
    running_max_ts = np.maximum.accumulate(rows["max_timestamp"])
    max_timestamps = rows["max_timestamp"]
    # Each entry against the batches, all at once; the first failed condition is the entry's message.
    k = np.searchsorted(running_last, offsets)
    at = np.minimum(k, n - 1)
    outside = (k >= n) | (offsets < segment.base_offset)
    wrong_batch = ~outside & (max_timestamps[at] != timestamps)
    hidden = ~outside & ~wrong_batch & (running_max_ts[at] > timestamps)
    bad = np.flatnonzero(outside | wrong_batch | hidden)
    messages = []
    for i in bad[:10]:
        t, o, b = int(timestamps[i]), int(offsets[i]), int(at[i])
        if outside[i]:
            messages.append(f"entry (timestamp {t}, offset {o}) names an offset outside the segment")
        elif wrong_batch[i]:
            messages.append(f"entry (timestamp {t}, offset {o}): the batch holding offset {o} (at position "
                            f"{int(rows['position'][b])}) has max timestamp {int(max_timestamps[b])}")
        else:
            messages.append(f"entry (timestamp {t}, offset {o}): an earlier batch has the later timestamp "
                            f"{int(running_max_ts[b])}, so lookups by timestamp would miss it")
    _report_some(report, time_index_file, messages, len(bad), ("entry", "entries"),
                 ("disagrees with the log", "disagree with the log"))


def verify_segment_index(index_file: Path | StorageLocation, records: FileMessageSet | None = None) -> list[Finding]:
    """The findings about one segment's offset index (``<base>.index``) or time index (``<base>.timeindex``),
    checked against its ``.log`` beside it (or ``records``, that log opened, which this closes; an index at a URL
    needs it) as :func:`verify_partition` checks them: by the rule lookups rely on (the module docstring).
    ``kafkalog dump`` bases its exit status on these where Kafka's DumpLogSegments reports "mismatches", some of
    which brokers write legitimately.  Only the index's own findings are returned: the log's (a CRC failure, a
    torn tail) are the log's.

    Raises:
        OSError, KafkaLogError: the log cannot be read.
        IllegalArgumentError: the file is not named as a segment's offset or time index.
    """
    name = index_file.name
    check: Callable[[PartitionReport, _Segment, Any], None]
    if name.endswith(TIME_INDEX_FILE_SUFFIX):
        check = _check_time_index
    elif name.endswith(INDEX_FILE_SUFFIX):
        check = _check_offset_index
    else:
        raise IllegalArgumentError(f"{name} is neither an offset index nor a time index")
    base_offset = offset_from_file_name(name)
    log_file = index_file.parent / f"{name.split('.', 1)[0]}{LOG_FILE_SUFFIX}"
    report = PartitionReport(index_file.parent, None)
    segment = _check_log(report, cast(Path, log_file), base_offset, False, lambda _n: None, records)
    check(report, segment, index_file)
    return [finding for finding in report.findings if finding.path == str(index_file)]


# -- one partition ----------------------------------------------------------------------------------

def verify_partition(path: str | os.PathLike[str], *, deep: bool = True,
                     progress: Callable[[int], None] | None = None) -> PartitionReport:
    """Check one partition directory, reading every segment (see the module docstring).

    ``progress`` is called with the number of bytes of log read, as the check goes.
    """
    directory = Path(path)
    report = PartitionReport(directory, partition_name(directory), records=0 if deep else None)
    step = progress if progress is not None else (lambda _n: None)
    names = sorted(os.listdir(directory))
    _check_segments(report, directory, names, deep, step, lambda _file: None,
                    index_exists=lambda name: (directory / name).exists())
    _check_partition_files(report, directory, names)
    return report


def _check_segments(report: PartitionReport, directory: Any, names: list[str], deep: bool,
                    step: Callable[[int], None], open_log: Callable[[Any], FileMessageSet | None], *,
                    index_exists: Callable[[str], bool]) -> list[tuple[int, Any]]:
    """Check the segments among ``names``, the entries of ``directory`` (a ``Path``, or a
    :class:`~kafkalog.urls.location.StorageLocation` whose ``.log`` objects ``open_log`` opens), with their
    index files (``index_exists(name)``: whether one is there); returns the segments' ``(base offset, .log)``."""
    logs = _segment_logs(report, directory, names)
    report.segments = len(logs)
    if not logs:
        report.add(Severity.NOTE, str(directory), "holds no segment: a broker opening it creates an empty one at "
                                                  "the log start offset; read-only opens read it as that empty log")
    previous: _Segment | None = None
    for base_offset, log_file in logs:
        try:
            segment = _check_log(report, log_file, base_offset, deep, step, open_log(log_file))
        except (OSError, KafkaLogError) as e:
            report.add(Severity.ERROR, str(log_file), f"cannot be read: {e}")
            continue
        if previous is not None and previous.last_offset is not None and base_offset <= previous.last_offset:
            report.add(Severity.ERROR, str(log_file), f"base offset {base_offset} is not past the previous "
                                                      f"segment's last offset {previous.last_offset}")
        for suffix, check in ((INDEX_FILE_SUFFIX, _check_offset_index), (TIME_INDEX_FILE_SUFFIX, _check_time_index)):
            index_file = directory / f"{base_offset:020d}{suffix}"
            if not index_exists(index_file.name):
                if segment.rows.size:
                    report.add(Severity.NOTE, index_file, "missing: a broker rebuilds it from the log on open")
                continue
            try:
                check(report, segment, index_file)
            except (OSError, KafkaLogError) as e:
                report.add(Severity.ERROR, index_file, f"cannot be read: {e}")
        if report.log_start_offset is None:
            report.log_start_offset = base_offset
        last = segment.last_offset
        report.log_end_offset = last + 1 if last is not None else max(base_offset, report.log_end_offset or 0)
        previous = segment
    return logs


def _segment_logs(report: PartitionReport, directory: Any, names: list[str]) -> list[tuple[int, Any]]:
    """The ``(base offset, file)`` of the segments among ``names`` (the entries of ``directory``, a ``Path`` or a
    :class:`~kafkalog.urls.location.StorageLocation`), with the findings the other names give."""
    logs: list[tuple[int, Any]] = []
    for name in names:
        file = directory / name
        match = SEGMENT_FILE_NAME.match(name)
        problem = _offset_name_problem(name)
        if problem is not None:
            report.add(Severity.ERROR, file, problem)
        elif name.endswith(TEMP_FILE_SUFFIXES):
            report.add(Severity.NOTE, file, "left by an interrupted clean, split or delete: a broker completes "
                                            "or removes it when it opens the log")
        elif match and match.group(2) == "log":
            logs.append((int(match.group(1)), file))
        elif match and match.group(2) in ("index", "timeindex", "txnindex"):
            if f"{match.group(1)}{LOG_FILE_SUFFIX}" not in names:
                report.add(Severity.WARNING, file, "an index with no log segment (a broker deletes it on open)")
        elif name.endswith(LOG_FILE_SUFFIX):
            report.add(Severity.ERROR, file, "a log file whose name is not a 20-digit offset: a broker cannot load the "
                                             "partition (Long.parseLong fails); kafkalog's loaders skip it")
    return logs


def verify_remote_partition(location: StorageLocation, *, deep: bool = True,
                            progress: Callable[[int], None] | None = None) -> PartitionReport:
    """:func:`verify_partition` of a partition dir at a URL, read by range and never changed.

    Every check is the local one, over the same bytes, with the same findings (naming the URL where the local
    ones name the path): the segments (CRCs, torn tails, offsets, and with ``deep`` every record), their
    indexes (read by range), the leader-epoch checkpoint, the producer snapshots and the transaction indexes
    (each read whole with one ranged read of the size the listing gave)."""
    from ..urls.channel import open_remote_log

    report = PartitionReport(location, partition_name(Path(location.name)),
                             records=0 if deep else None)
    step = progress if progress is not None else (lambda _n: None)
    sizes = {name: size for name, kind, size in location.entries() if kind == "file"}
    names = sorted(sizes)
    _check_segments(report, location, names, deep, step,
                    lambda file: open_remote_log(file, sizes[file.name]), index_exists=sizes.__contains__)
    _check_partition_files(report, location, names, sizes)
    return report


def _offset_name_problem(name: str) -> str | None:
    """Why a file named like a segment's (or a producer snapshot) is not named for an offset as Kafka writes
    one; ``None`` for a good name or another file."""
    if not _SEGMENT_SHAPE.match(name):
        return None
    try:
        segment_file_offset(name)
    except IllegalArgumentError as e:
        try:
            offset: int | None = offset_from_file_name(name)
        except IllegalArgumentError:
            offset = None
        if offset is None:
            return f"{e}: a broker cannot load the partition (Long.parseLong fails); kafkalog's loaders skip it"
        return (f"{e}: a broker reads it as offset {offset}, whose files have another name; kafkalog's loaders "
                "skip it")
    return None


def _check_partition_files(report: PartitionReport, directory: Any, names: list[str],
                           sizes: Mapping[str, int] | None = None) -> None:
    """Check the leader-epoch checkpoint, producer snapshots and transaction indexes among ``names``, the
    entries of ``directory`` (a ``Path``, or a :class:`~kafkalog.urls.location.StorageLocation` whose
    objects' sizes ``sizes`` gives, from its listing: each is then one ranged read)."""
    for name in names:
        file = directory / name
        if _offset_name_problem(name) is not None:
            continue  # reported as such
        size = None if sizes is None else sizes.get(name)
        try:
            if name == LEADER_EPOCH_CHECKPOINT_FILE:
                epochs = read_leader_epoch_checkpoint(file, size)
                for number, entry in enumerate(epochs, start=FIRST_ENTRY_LINE):
                    try:
                        check_epoch_entry(entry)  # the leader-epoch cache's own rule, as a broker's load runs it
                    except IllegalArgumentError as e:
                        report.add(Severity.ERROR, file, f"line {number}: {e}: a broker refuses to load the "
                                                         "partition")
                for a, b in itertools.pairwise(epochs):
                    if b.epoch <= a.epoch or b.start_offset < a.start_offset:
                        report.add(Severity.ERROR, file, f"epochs out of order: {tuple(a)} then {tuple(b)}")
                if epochs and report.log_end_offset is not None and epochs[-1].start_offset > report.log_end_offset:
                    report.add(Severity.WARNING, file, f"the last epoch starts at {epochs[-1].start_offset}, past "
                                                       f"the log end offset {report.log_end_offset}")
            elif name.endswith(".snapshot") and SEGMENT_FILE_NAME.match(name):
                check_producer_snapshot(file, size)
            elif name.endswith(TXN_INDEX_FILE_SUFFIX) and SEGMENT_FILE_NAME.match(name):
                log_name = name[:-len(TXN_INDEX_FILE_SUFFIX)] + LOG_FILE_SUFFIX
                log_size = (sizes.get(log_name) if sizes is not None
                            else (directory / log_name).stat().st_size if (directory / log_name).is_file() else None)
                _check_txn_index(report, file, size, log_size)
        except (OSError, KafkaLogError) as e:
            report.add(Severity.ERROR, file, f"cannot be read: {e}")


def _check_txn_index(report: PartitionReport, file: Any, size: int | None, log_size: int | None) -> None:
    """A ``.txnindex``, read a chunk at a time: its last offsets rise; none is below the segment's base offset
    (Kafka's ``TransactionIndex.sanityCheck``: a broker's open rebuilds an index that fails it, and kafkalog's
    read-only readers do not trust it); it holds no more entries than its segment's ``.log`` (``log_size`` bytes,
    when there is one) holds batches, one ABORT marker an entry, which the read-only readers check before they
    read it; and it ends on a whole entry."""
    base_offset = int(file.name.split(".", 1)[0])
    length = file_size(file, size)
    most = None if log_size is None else log_size // RECORD_BATCH_OVERHEAD
    if most is not None and length // ABORTED_TXN_SIZE > most:
        report.add(Severity.ERROR, file, f"holds {counted(length // ABORTED_TXN_SIZE, 'entry', 'entries')}, more "
                                         f"than its segment's {log_size} bytes can hold ABORT markers ({most}): it "
                                         "is not the segment's, and read-only readers do not trust it")
    falling: list[str] = []
    total_falling = 0
    previous: int | None = None
    sane = True
    for chunk in iter_txn_index_entries(file, size):
        last_offsets = chunk["last_offset"].astype(np.int64)
        if previous is not None:
            last_offsets = np.concatenate(([previous], last_offsets))
        out_of_order = np.flatnonzero(last_offsets[1:] <= last_offsets[:-1])
        total_falling += len(out_of_order)
        falling.extend(f"aborted transactions out of order: last offset {int(last_offsets[i])} then "
                       f"{int(last_offsets[i + 1])}" for i in out_of_order[:max(0, 5 - len(falling))])
        if len(last_offsets):
            previous = int(last_offsets[-1])
        if sane:
            try:
                sanity_check_entries(chunk, base_offset, str(file))
            except CorruptIndexError as e:
                report.add(Severity.ERROR, file, f"fails the broker's sanity check: {e} (a broker rebuilds it on "
                                                 "open; read-only readers do not trust it)")
                sane = False
    _report_some(report, file, falling, total_falling, ("pair", "pairs"),
                 ("of aborted transactions out of order", "of aborted transactions out of order"))
    if length % ABORTED_TXN_SIZE:
        report.add(Severity.WARNING, file, "ends in a part-entry (a write cut short)")


# -- a log dir -------------------------------------------------------------------------------------

def verify_log_dir(path: str | os.PathLike[str], *, deep: bool = True,
                   progress: Callable[[int], None] | None = None,
                   on_partition: Callable[[PartitionReport], None] | None = None) -> LogDirReport:
    """Check every partition of a log dir and the dir's checkpoint files against them."""
    root = Path(path)
    # A name is enough: a checkpoint that is not a readable file is reported as one that cannot be read.
    return _log_dir_report(LogDirReport(root), (verify_partition(d, deep=deep, progress=progress)
                                                for d in partition_dirs(root)),
                           on_partition, lambda: dict.fromkeys(os.listdir(root)))


def verify_remote_log_dir(location: StorageLocation, *, deep: bool = True,
                          progress: Callable[[int], None] | None = None,
                          on_partition: Callable[[PartitionReport], None] | None = None) -> LogDirReport:
    """:func:`verify_log_dir` of a log dir at a URL, read by range and never changed: every partition dir
    (:func:`verify_remote_partition`), then the log dir's checkpoint files against them, each read whole with
    one ranged read; the findings are the local ones, naming the URL where those name the path."""
    from ..urls.partition import remote_partition_dirs

    return _log_dir_report(LogDirReport(location), (verify_remote_partition(d, deep=deep, progress=progress)
                                                    for d in remote_partition_dirs(location)),
                           on_partition, lambda: {name: size for name, kind, size in location.entries()
                                                  if kind == "file"})


def _log_dir_report(report: LogDirReport, partitions: Iterable[PartitionReport],
                    on_partition: Callable[[PartitionReport], None] | None,
                    entries: Callable[[], Mapping[str, int | None]]) -> LogDirReport:
    """Fill ``report`` with the partitions' reports, each told to ``on_partition`` as it comes, then with the
    log dir's own findings (:func:`_check_log_dir_files` over ``entries()``)."""
    for partition in partitions:
        report.partitions.append(partition)
        if on_partition is not None:
            on_partition(partition)
    _check_log_dir_files(report, report.dir, entries())
    return report


def _check_log_dir_files(report: LogDirReport, root: Any, sizes: Mapping[str, int | None]) -> None:
    """The log dir's own findings: its clean-shutdown marker, and each offset checkpoint among the entries
    ``sizes`` names (with their sizes when a listing gave them) read back and held against the partitions'
    reports.  ``root`` is a ``Path`` or a :class:`~kafkalog.urls.location.StorageLocation`."""
    if CLEAN_SHUTDOWN_FILE in sizes:
        report.findings.append(Finding(Severity.NOTE, str(root / CLEAN_SHUTDOWN_FILE),
                                       "the last shutdown was clean"))
    by_name: dict[str, PartitionReport] = {p.dir.name: p for p in report.partitions}
    for name in OFFSET_CHECKPOINTS:
        if name not in sizes:
            continue
        file = root / name
        try:
            offsets = read_offset_checkpoint(file, sizes[name])
        except (OSError, KafkaLogError) as e:
            report.findings.append(Finding(Severity.ERROR, str(file), f"cannot be read: {e}"))
            continue
        for tp, offset in offsets.items():
            listed = by_name.get(f"{tp.topic}-{tp.partition}")
            if listed is None:
                report.findings.append(Finding(Severity.NOTE, str(file), f"lists {tp}, which has no directory here"))
                continue
            listed.findings.extend(_checkpoint_findings(name, file, tp, offset, listed))


def _checkpoint_findings(name: str, file: Any, tp: TopicPartition, offset: int,
                         partition: PartitionReport) -> Iterator[Finding]:
    leo = partition.log_end_offset
    start = partition.log_start_offset
    if leo is None or start is None:
        return
    where = str(file)
    if name == RECOVERY_POINT_CHECKPOINT_FILE and offset > leo:
        yield Finding(Severity.ERROR, where, f"recovery point {offset} of {tp} is past its log end offset {leo}: "
                                             "records that were flushed are missing")
    elif name == REPLICATION_OFFSET_CHECKPOINT_FILE and offset > leo:
        yield Finding(Severity.ERROR, where, f"high watermark {offset} of {tp} is past its log end offset {leo}: "
                                             "committed records are missing")
    elif name == LOG_START_OFFSET_CHECKPOINT_FILE and not start <= offset <= leo:
        severity = Severity.ERROR if offset > leo else Severity.WARNING
        yield Finding(severity, where, f"log start offset {offset} of {tp} is outside its log "
                                       f"[{start}, {leo}]" + (": a broker would delete every segment"
                                                              if offset > leo else ""))
    elif name == CLEANER_OFFSET_CHECKPOINT_FILE and offset > leo:
        yield Finding(Severity.WARNING, where, f"cleaner checkpoint {offset} of {tp} is past its log end offset "
                                               f"{leo}: the cleaner resets it")


def iter_findings(reports: Iterable[PartitionReport | LogDirReport]) -> Iterator[Finding]:
    """Every finding of some reports, partition findings before their log dir's own."""
    for report in reports:
        if isinstance(report, LogDirReport):
            for partition in report.partitions:
                yield from partition.findings
            yield from report.findings
        else:
            yield from report.findings

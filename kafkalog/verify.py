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
  - a zero-filled index tail (a preallocated index not trimmed by a clean shutdown) is a note.

Per partition: segment base offsets rise and each follows the previous segment's last offset; the
leader-epoch checkpoint, producer snapshots and transaction indexes read back; leftover
``.cleaned``/``.swap``/``.deleted`` files and orphan indexes are noted.

Per log dir: the offset checkpoints read back, and each entry is consistent with its log: the
recovery point and the high watermark are at most the log end offset (beyond it, flushed or
committed records are missing), the log start offset lies between the first segment's base offset
and the log end offset, and the cleaner's checkpoint is not past the log end.
"""

from __future__ import annotations

import enum
import itertools
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ._common import INT32_MAX, ScanStop
from .checkpoint import (
    CLEAN_SHUTDOWN_FILE,
    CLEANER_OFFSET_CHECKPOINT_FILE,
    LEADER_EPOCH_CHECKPOINT_FILE,
    LOG_START_OFFSET_CHECKPOINT_FILE,
    RECOVERY_POINT_CHECKPOINT_FILE,
    REPLICATION_OFFSET_CHECKPOINT_FILE,
    LeaderEpochCheckpoint,
    OffsetCheckpoint,
)
from .errors import KafkaLogError
from .file_message_set import FileMessageSet
from .filenames import (
    CLEANED_FILE_SUFFIX,
    DELETED_FILE_SUFFIX,
    INDEX_FILE_SUFFIX,
    LOG_FILE_SUFFIX,
    SWAP_FILE_SUFFIX,
    TIME_INDEX_FILE_SUFFIX,
    TXN_INDEX_FILE_SUFFIX,
)
from .index import OffsetIndex, TimeIndex
from .producer_state import read_snapshot
from .record import MemoryRecords
from .record.legacy import LegacyRecordBatch
from .topic import InvalidPartitionDirError, TopicPartition, parse_topic_partition_name
from .transaction_index import read_aborted_txns

__all__ = [
    "Finding",
    "LogDirReport",
    "NotAPartitionDirError",
    "PartitionReport",
    "Severity",
    "classify_dir",
    "verify_log_dir",
    "verify_partition",
]

_OFFSET_NAME = re.compile(r"^(\d{20})\.(log|index|timeindex|txnindex|snapshot)$")
_TEMP_SUFFIXES = (CLEANED_FILE_SUFFIX, SWAP_FILE_SUFFIX, DELETED_FILE_SUFFIX)
OFFSET_CHECKPOINTS = (RECOVERY_POINT_CHECKPOINT_FILE, REPLICATION_OFFSET_CHECKPOINT_FILE,
                      LOG_START_OFFSET_CHECKPOINT_FILE, CLEANER_OFFSET_CHECKPOINT_FILE)


class Severity(enum.Enum):
    ERROR = "error"  #: data is corrupt, missing or inconsistent: a reader or a broker would go wrong
    WARNING = "warning"  #: a broker repairs or ignores this on open, but it is not what it writes
    NOTE = "note"  #: a normal state worth knowing (an unclean shutdown's leftovers, a missing index)


class NotAPartitionDirError(KafkaLogError, ValueError):
    """A directory that is neither a partition dir nor a log dir."""


@dataclass(frozen=True)
class Finding:
    severity: Severity
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.severity.value.upper()} {self.path}: {self.message}"


@dataclass
class PartitionReport:
    """What :func:`verify_partition` found in one partition dir."""

    dir: Path
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

    def add(self, severity: Severity, path: Path | str, message: str) -> None:
        self.findings.append(Finding(severity, str(path), message))


@dataclass
class LogDirReport:
    """What :func:`verify_log_dir` found: one report per partition, plus the dir's own findings."""

    dir: Path
    partitions: list[PartitionReport] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(p.ok for p in self.partitions) and not any(f.severity is Severity.ERROR for f in self.findings)


# -- what a directory is -------------------------------------------------------------------------------

def _partition_name(path: Path) -> TopicPartition | None:
    try:
        return parse_topic_partition_name(path.name)
    except InvalidPartitionDirError:
        return None


def classify_dir(path: str | os.PathLike[str]) -> str:
    """``"partition"`` or ``"logdir"``; raises :class:`NotAPartitionDirError` for anything else.

    A partition dir is named ``<topic>-<partition>`` and holds segment files (or nothing yet); a log dir
    holds the broker's checkpoint files, a ``meta.properties``, or partition dirs.
    """
    directory = Path(path)
    if not directory.exists():
        raise FileNotFoundError(f"No such directory: {directory}")
    if not directory.is_dir():
        raise NotAPartitionDirError(f"{directory} is a file, not a partition dir or a log dir")
    names = os.listdir(directory)
    if _partition_name(directory) is not None and _looks_like_partition(names):
        return "partition"
    if any(n in OFFSET_CHECKPOINTS or n == "meta.properties" for n in names) or any(
            _partition_name(directory / n) is not None and (directory / n).is_dir()
            and _looks_like_partition(os.listdir(directory / n)) for n in names):
        return "logdir"
    raise NotAPartitionDirError(
        f"{directory} is neither a partition dir (named <topic>-<partition>, holding segment files) nor a "
        "log dir (holding checkpoint files or partition dirs)")


def _looks_like_partition(names: list[str]) -> bool:
    """Holds segment files or a leader-epoch checkpoint, or nothing yet (a partition just created)."""
    return not names or LEADER_EPOCH_CHECKPOINT_FILE in names or any(
        _OFFSET_NAME.match(n) or n.endswith(_TEMP_SUFFIXES) for n in names)


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


def _check_log(report: PartitionReport, log_file: Path, base_offset: int, deep: bool,
               progress: Callable[[int], None]) -> _Segment:
    with FileMessageSet(log_file, writable=False) as records:
        size = records.size_in_bytes()
        result = records.scan(check_crc=True, stop_on_invalid=False)
        rows = result.batches
        bad = rows[rows["valid"] == 0]
        for row in bad[:20]:
            report.add(Severity.ERROR, log_file,
                       f"batch at position {int(row['position'])} (offsets {int(row['base_offset'])}.."
                       f"{int(row['last_offset'])}) fails its CRC check")
        if len(bad) > 20:
            report.add(Severity.ERROR, log_file, f"{len(bad) - 20} more batches fail their CRC check")
        end = int(rows["position"][-1]) + int(rows["size"][-1]) if len(rows) else 0
        if result.stop_reason is ScanStop.PARTIAL or (result.stop_reason is ScanStop.END and end < size):
            report.add(Severity.ERROR, log_file,
                       f"{size - end} bytes at position {end} are not a whole batch (a torn write: recovery "
                       "truncates them)")
        elif result.stop_reason is ScanStop.ZERO_TAIL:
            report.add(Severity.NOTE, log_file,
                       f"ends in {size - end} zero bytes after its last batch, at position {end} (a preallocated "
                       "segment a broker did not trim, or a write that never reached the disk: readers stop there, "
                       "recovery truncates them)")
        elif result.stop_reason in _STOP_MESSAGES:
            report.add(Severity.ERROR, log_file,
                       f"{_STOP_MESSAGES[result.stop_reason]} at position {result.stop_position}: the "
                       f"{size - result.stop_position} bytes from there are unreadable")
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


def _index_entries(report: PartitionReport, index_class: type[OffsetIndex] | type[TimeIndex], file: Path,
                   base_offset: int, is_zero: Callable[[Any], bool]) -> list[Any]:
    """An index file's entries up to its zero-filled tail; none when it fails the broker's sanity check
    (reported)."""
    index = index_class(file, base_offset, -1, writable=False)
    try:
        try:
            index.sanity_check()
        except KafkaLogError as e:
            report.add(Severity.ERROR, file, f"fails the broker's sanity check: {e}")
            return []
        entries = [index.entry(i) for i in range(index.entries)]
    finally:
        index.close_handler()
    return _drop_zero_tail(report, file, entries, is_zero)


def _check_offset_index(report: PartitionReport, segment: _Segment, index_file: Path) -> None:
    rows = segment.rows
    entries = _index_entries(report, OffsetIndex, index_file, segment.base_offset,
                             lambda e: e.offset == segment.base_offset and e.position == 0)
    if not entries:
        return
    offsets = np.array([e.offset for e in entries], dtype=np.int64)
    positions = np.array([e.position for e in entries], dtype=np.int64)
    for i in np.flatnonzero(offsets[1:] <= offsets[:-1])[:5] + 1:
        report.add(Severity.ERROR, index_file, f"entry {i} (offset {int(offsets[i])}) does not rise above entry "
                                               f"{i - 1} (offset {int(offsets[i - 1])})")
    batch_positions = rows["position"]
    running_max = np.maximum.accumulate(rows["last_offset"]) if len(rows) else rows["last_offset"]
    problems = 0
    for o, p in zip(offsets.tolist(), positions.tolist(), strict=True):
        k = int(np.searchsorted(batch_positions, p))
        if k >= len(rows) or int(batch_positions[k]) != p:
            message = f"entry (offset {o}, position {p}) does not point at the start of a batch" + (
                " (past the last whole batch)" if k >= len(rows) else "")
        elif k > 0 and int(running_max[k - 1]) >= o:
            holder = int(np.searchsorted(running_max, o))
            message = (f"entry (offset {o}, position {p}) points past the batch holding offset {o} "
                       f"(at position {int(batch_positions[holder])}): lookups of it would miss")
        elif int(running_max[-1]) < o:
            message = (f"entry (offset {o}, position {p}) names an offset past the segment's last "
                       f"({int(running_max[-1])})")
        else:
            continue
        problems += 1
        if problems <= 10:
            report.add(Severity.ERROR, index_file, message)
    if problems > 10:
        report.add(Severity.ERROR, index_file, f"{problems - 10} more entries point at the wrong batch")


def _check_time_index(report: PartitionReport, segment: _Segment, time_index_file: Path) -> None:
    rows = segment.rows
    entries = _index_entries(report, TimeIndex, time_index_file, segment.base_offset,
                             lambda e: e.offset == segment.base_offset and e.timestamp == 0)
    if not entries:
        return
    timestamps = np.array([e.timestamp for e in entries], dtype=np.int64)
    offsets = np.array([e.offset for e in entries], dtype=np.int64)
    for i in np.flatnonzero(timestamps[1:] <= timestamps[:-1])[:5] + 1:
        report.add(Severity.ERROR, time_index_file,
                   f"entry {i} (timestamp {int(timestamps[i])}) is not later than entry {i - 1} (timestamp "
                   f"{int(timestamps[i - 1])}): timestamps out of order")
    for i in np.flatnonzero(offsets[1:] < offsets[:-1])[:5] + 1:
        report.add(Severity.ERROR, time_index_file,
                   f"entry {i} (offset {int(offsets[i])}) is below entry {i - 1} (offset {int(offsets[i - 1])})")
    if len(rows) == 0:
        report.add(Severity.ERROR, time_index_file, f"has {len(entries)} entries but the log holds no batch")
        return
    running_last = np.maximum.accumulate(rows["last_offset"])
    running_max_ts = np.maximum.accumulate(rows["max_timestamp"])
    problems = 0
    for t, o in zip(timestamps.tolist(), offsets.tolist(), strict=True):
        k = int(np.searchsorted(running_last, o))
        if k >= len(rows) or o < segment.base_offset:
            message = f"entry (timestamp {t}, offset {o}) names an offset outside the segment"
        elif int(rows["max_timestamp"][k]) != t:
            message = (f"entry (timestamp {t}, offset {o}): the batch holding offset {o} (at position "
                       f"{int(rows['position'][k])}) has max timestamp {int(rows['max_timestamp'][k])}")
        elif int(running_max_ts[k]) > t:
            message = (f"entry (timestamp {t}, offset {o}): an earlier batch has the later timestamp "
                       f"{int(running_max_ts[k])}, so lookups by timestamp would miss it")
        else:
            continue
        problems += 1
        if problems <= 10:
            report.add(Severity.ERROR, time_index_file, message)
    if problems > 10:
        report.add(Severity.ERROR, time_index_file, f"{problems - 10} more entries disagree with the log")


def _drop_zero_tail(report: PartitionReport, file: Path, entries: list[Any],
                    is_zero: Callable[[Any], bool]) -> list[Any]:
    """Entries up to a preallocated index's zero-filled tail (its first all-zero entry after the first,
    Kafka DumpLogSegments' rule), noting the tail."""
    for i in range(1, len(entries)):
        if is_zero(entries[i]):
            report.add(Severity.NOTE, file, f"ends in {len(entries) - i} zero-filled entries (a preallocated "
                                            "index the broker did not trim: no clean shutdown)")
            return entries[:i]
    return entries


# -- one partition ----------------------------------------------------------------------------------

def verify_partition(path: str | os.PathLike[str], *, deep: bool = True,
                     progress: Callable[[int], None] | None = None) -> PartitionReport:
    """Check one partition directory, reading every segment (see the module docstring).

    ``progress`` is called with the number of bytes of log read, as the check goes.
    """
    directory = Path(path)
    report = PartitionReport(directory, _partition_name(directory), records=0 if deep else None)
    step = progress if progress is not None else (lambda _n: None)
    names = sorted(os.listdir(directory))
    logs: list[tuple[int, Path]] = []
    for name in names:
        file = directory / name
        match = _OFFSET_NAME.match(name)
        if name.endswith(_TEMP_SUFFIXES):
            report.add(Severity.NOTE, file, "left by an interrupted clean, split or delete: a broker completes "
                                            "or removes it when it opens the log")
        elif match and match.group(2) == "log":
            logs.append((int(match.group(1)), file))
        elif match and match.group(2) in ("index", "timeindex", "txnindex"):
            if f"{match.group(1)}{LOG_FILE_SUFFIX}" not in names:
                report.add(Severity.WARNING, file, "an index with no log segment (a broker deletes it on open)")
        elif name.endswith(LOG_FILE_SUFFIX):
            report.add(Severity.ERROR, file, "a log file whose name is not a 20-digit offset: brokers ignore it")
    report.segments = len(logs)
    previous: _Segment | None = None
    for base_offset, log_file in logs:
        try:
            segment = _check_log(report, log_file, base_offset, deep, step)
        except (OSError, KafkaLogError) as e:
            report.add(Severity.ERROR, log_file, f"cannot be read: {e}")
            continue
        if previous is not None and previous.last_offset is not None and base_offset <= previous.last_offset:
            report.add(Severity.ERROR, log_file, f"base offset {base_offset} is not past the previous segment's "
                                                 f"last offset {previous.last_offset}")
        for suffix, check in ((INDEX_FILE_SUFFIX, _check_offset_index), (TIME_INDEX_FILE_SUFFIX, _check_time_index)):
            index_file = directory / f"{base_offset:020d}{suffix}"
            if not index_file.exists():
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
    _check_partition_files(report, directory, names)
    return report


def _check_partition_files(report: PartitionReport, directory: Path, names: list[str]) -> None:
    for name in names:
        file = directory / name
        try:
            if name == LEADER_EPOCH_CHECKPOINT_FILE:
                epochs = LeaderEpochCheckpoint(file, read_only=True).read()
                for a, b in itertools.pairwise(epochs):
                    if b.epoch <= a.epoch or b.start_offset < a.start_offset:
                        report.add(Severity.ERROR, file, f"epochs out of order: {tuple(a)} then {tuple(b)}")
                if epochs and report.log_end_offset is not None and epochs[-1].start_offset > report.log_end_offset:
                    report.add(Severity.WARNING, file, f"the last epoch starts at {epochs[-1].start_offset}, past "
                                                       f"the log end offset {report.log_end_offset}")
            elif name.endswith(".snapshot") and _OFFSET_NAME.match(name):
                read_snapshot(file)
            elif name.endswith(TXN_INDEX_FILE_SUFFIX) and _OFFSET_NAME.match(name):
                txns = read_aborted_txns(file)
                for earlier, later in itertools.pairwise(txns):
                    if later.last_offset <= earlier.last_offset:
                        report.add(Severity.ERROR, file, f"aborted transactions out of order: last offset "
                                                         f"{earlier.last_offset} then {later.last_offset}")
                if os.path.getsize(file) % 34:
                    report.add(Severity.WARNING, file, "ends in a part-entry (a write cut short)")
        except (OSError, KafkaLogError) as e:
            report.add(Severity.ERROR, file, f"cannot be read: {e}")


# -- a log dir -------------------------------------------------------------------------------------

def partition_dirs(log_dir: str | os.PathLike[str]) -> list[Path]:
    """The partition dirs of a log dir, sorted by name (``-delete`` and ``-future`` dirs included)."""
    root = Path(log_dir)
    return sorted(p for p in root.iterdir() if p.is_dir() and _partition_name(p) is not None)


def verify_log_dir(path: str | os.PathLike[str], *, deep: bool = True,
                   progress: Callable[[int], None] | None = None,
                   on_partition: Callable[[PartitionReport], None] | None = None) -> LogDirReport:
    """Check every partition of a log dir and the dir's checkpoint files against them."""
    root = Path(path)
    report = LogDirReport(root)
    for directory in partition_dirs(root):
        partition = verify_partition(directory, deep=deep, progress=progress)
        report.partitions.append(partition)
        if on_partition is not None:
            on_partition(partition)
    if (root / CLEAN_SHUTDOWN_FILE).exists():
        report.findings.append(Finding(Severity.NOTE, str(root / CLEAN_SHUTDOWN_FILE),
                                       "the last shutdown was clean"))
    by_name: dict[str, PartitionReport] = {p.dir.name: p for p in report.partitions}
    for name in OFFSET_CHECKPOINTS:
        file = root / name
        if not file.exists():
            continue
        try:
            offsets = OffsetCheckpoint(file, read_only=True).read()
        except (OSError, KafkaLogError) as e:
            report.findings.append(Finding(Severity.ERROR, str(file), f"cannot be read: {e}"))
            continue
        for tp, offset in offsets.items():
            listed = by_name.get(f"{tp.topic}-{tp.partition}")
            if listed is None:
                report.findings.append(Finding(Severity.NOTE, str(file), f"lists {tp}, which has no directory here"))
                continue
            listed.findings.extend(_checkpoint_findings(name, file, tp, offset, listed))
    return report


def _checkpoint_findings(name: str, file: Path, tp: TopicPartition, offset: int,
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

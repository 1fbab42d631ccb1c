"""Rewriting a run of batches without the records a filter drops: Kafka's ``MemoryRecords.filterTo``.

Port of ``clients/src/main/java/org/apache/kafka/common/record/MemoryRecords.java`` (tag 3.8.0):
``filterTo``, ``filterBatch``, ``buildRetainedRecordsInto``, the ``RecordFilter`` they call back
(``checkBatchRetention``, ``shouldRetainRecord``) and the ``FilterResult`` they fill.  The log cleaner is the
caller (``Cleaner.cleanInto``, :meth:`kafkalog.cleaner.cleaner.Cleaner.clean_into`), and the filter is the cleaner's:
it decides from the offset map and the transactions.

Per batch, in Kafka's order:

1. the filter's batch retention: ``DELETE`` drops the batch unread (its bytes count as read, its records
   do not);
2. every record is kept or not: here a piece of a batch at a time, the filter answering with a mask;
3. a batch that keeps every record, needs no new delete horizon and holds records of its own magic only
   is copied as it is; otherwise its kept records are rebuilt into a batch of the same magic, codec,
   timestamp type and producer fields (``buildRetainedRecordsInto``): a v2 batch keeps its base offset and
   its last offset (so a producer's sequence numbers survive), a v0/v1 wrapper starts at its first kept
   offset;
4. a batch that kept nothing is dropped, unless the filter said ``RETAIN_EMPTY``: then a v2 header with no
   records keeps its offsets and its producer's state (``DefaultRecordBatch.writeEmptyHeader``).

A v2 batch gets a delete horizon (attribute bit 6, Kafka 3.1+) the first time a filtering keeps a tombstone
or the marker of an empty transaction in it: ``current_time + delete_retention_ms``, written as its base
timestamp.

The records arrive decoded (:func:`decoded_batches`): runs of uncompressed v2 batches share one set of
columns (one kernel call), and a batch of many records comes in pieces, so what a pass holds is bounded
whatever a batch's record count; a batch read in pieces is never held whole.

Steps 3 and 4 of a run of kernel batches (v2, uncompressed, CreateTime, read whole: data or control,
transactional or not, with a delete horizon or without) are one ``filter_v2_batches`` kernel call
(:class:`_PlainRun`), which writes the bytes the steps above write: a batch copied whole, its kept records
rebuilt (with a new delete horizon when it needs one), or an empty header kept for its producer.  A batch it
cannot write (kept records with headers) goes the Python way.

A run of whole kernel batches read together (a :class:`ColumnRun` of :func:`decoded_runs`) may be answered for
at once: the filter's :meth:`~RecordFilter.batch_fates` gives every batch's retention and every record's fate as
arrays, its state moving as it would batch by batch, and the run goes to the kernel with no Python step a
batch.  A filter that cannot answer so is asked batch by batch, in order.
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from .. import _impl
from .._common import (
    CONTROL_FLAG_MASK,
    DELETE_HORIZON_FLAG_MASK,
    FILTER_EMPTY_TXN_MARKER,
    FILTER_RETAIN_EMPTY,
    INT64_MAX,
    MAGIC_V2,
    TRANSACTIONAL_FLAG_MASK,
)
from .._java_utf8 import JAVA_UTF8
from ..errors import IllegalStateError
from .batch import RecordBatch, RecordColumns, encode_default_batch, write_empty_header
from .legacy import build_legacy_message_set
from .memory import MemoryRecords
from .types import TimestampType

__all__ = [
    "BatchRetention",
    "BatchRetentionResult",
    "ColumnRun",
    "DecodedBatch",
    "FilterResult",
    "KERNEL_ATTRIBUTES",
    "KeptRecords",
    "RecordFilter",
    "RunFates",
    "build_retained_records",
    "decoded_batches",
    "decoded_runs",
    "filter_to",
    "records_of",
    "whole_v2_batches",
]


class BatchRetention(enum.Enum):
    """What becomes of a batch before its records are looked at (Kafka: ``RecordFilter.BatchRetention``)."""

    DELETE = "DELETE"  #: drop the batch without inspecting its records
    RETAIN_EMPTY = "RETAIN_EMPTY"  #: keep the batch, as a bare header if no record is kept
    DELETE_EMPTY = "DELETE_EMPTY"  #: drop the batch if no record is kept


class BatchRetentionResult(NamedTuple):
    """Kafka: ``RecordFilter.BatchRetentionResult``: the batch's fate, and whether it is the marker of a
    transaction none of whose batches is left (so the marker itself may go once its horizon passes)."""

    batch_retention: BatchRetention
    contains_marker_for_empty_txn: bool


class RecordFilter(ABC):
    """Decides what :func:`filter_to` keeps (Kafka: ``MemoryRecords.RecordFilter``).

    ``current_time`` and ``delete_retention_ms`` give the delete horizon written into a v2 batch that keeps a
    tombstone or an empty transaction's marker for the first time.
    """

    def __init__(self, current_time: int, delete_retention_ms: int) -> None:
        self.current_time = current_time
        self.delete_retention_ms = delete_retention_ms

    @abstractmethod
    def check_batch_retention(self, batch: RecordBatch) -> BatchRetentionResult:
        """Kafka: ``checkBatchRetention``: called once a batch, before any of its records."""

    @abstractmethod
    def should_retain_records(self, piece: DecodedBatch) -> npt.NDArray[np.bool_]:
        """Which records of ``piece`` (``piece.columns.records[piece.lo:piece.hi]``) are kept: Kafka's
        ``shouldRetainRecord``, asked for the records of a piece of a batch at once."""

    def batch_fates(self, run: ColumnRun) -> RunFates | None:
        """:meth:`check_batch_retention` then :meth:`should_retain_records` of every batch of ``run`` (whole
        kernel batches: v2, uncompressed, CreateTime, of :data:`KERNEL_ATTRIBUTES`) at once, when the filter can
        answer so; the filter's state moves as if it were asked batch by batch.  ``None`` (the default): ask
        batch by batch; the state has not moved."""
        return None


class RunFates(NamedTuple):
    """A filter's answer for a whole :class:`ColumnRun` (:meth:`RecordFilter.batch_fates`): for each batch its
    ``FILTER_RETAIN_EMPTY`` / ``FILTER_EMPTY_TXN_MARKER`` bits (``fates``) and whether it is deleted unread
    (``deleted``, Kafka's ``DELETE``: its records neither counted nor kept), and for each record whether it is
    kept (``keep``)."""

    fates: npt.NDArray[np.uint8]
    deleted: npt.NDArray[np.bool_]
    keep: npt.NDArray[np.bool_]


@dataclass
class FilterResult:
    """What :func:`filter_to` wrote and counted (Kafka: ``MemoryRecords.FilterResult``): the kept batches,
    the messages and bytes read and retained, and the largest offset and timestamp written, with the
    shallow offset of the batch holding that timestamp (-1 when nothing was written)."""

    output: bytearray = field(default_factory=bytearray)
    messages_read: int = 0
    bytes_read: int = 0
    messages_retained: int = 0
    max_offset: int = -1
    max_timestamp: int = -1
    shallow_offset_of_max_timestamp: int = -1

    @property
    def bytes_retained(self) -> int:
        """Kafka: ``bytesRetained``."""
        return len(self.output)

    def update_retained_batch_metadata(self, max_timestamp: int, shallow_offset_of_max_timestamp: int,
                                       max_offset: int, messages_retained: int) -> None:
        """Kafka: ``updateRetainedBatchMetadata``."""
        self.messages_retained += messages_retained
        self.max_offset = max(self.max_offset, max_offset)
        if max_timestamp > self.max_timestamp:
            self.max_timestamp, self.shallow_offset_of_max_timestamp = max_timestamp, shallow_offset_of_max_timestamp


class DecodedBatch(NamedTuple):
    """A batch of a chunk, or a piece of one, and where its records are in the chunk's columns:
    ``columns.records[lo:hi]``.  A batch of more records than one decode call takes
    (:data:`~kafkalog.record.batch.CHUNK_RECORDS`) comes in pieces, ``first`` and ``last`` marking its ends.

    A named tuple, not a frozen dataclass: one is made for every batch a cleaning reads, twice, and a frozen
    dataclass's ``__init__`` (an ``object.__setattr__`` a field) was 4% of a cleaning's time."""

    batch: RecordBatch
    columns: Any
    lo: int
    hi: int
    first: bool = True
    last: bool = True


def decoded_batches(records: MemoryRecords) -> Iterator[DecodedBatch]:
    """The batches of ``records`` with their decoded columns, decoded as they are asked for: runs of
    uncompressed v2 batches share one set of columns (one kernel call), every other batch has its own, or
    several, one per piece, when it holds many records (so what a pass holds is bounded whatever the count)."""
    for item in decoded_runs(records, None):
        assert isinstance(item, DecodedBatch)  # no runs asked for
        yield item


class ColumnRun(NamedTuple):
    """A set of decoded columns of ``records`` whose batches are all v2 and whole in it (none comes in pieces),
    handed out as one (:func:`decoded_runs`), so a pass can treat its batches as arrays: ``columns.batches``
    their scan rows, ``columns.starts`` their records."""

    records: MemoryRecords
    columns: RecordColumns

    def pieces(self) -> Iterator[DecodedBatch]:
        """Its batches one by one, as :func:`decoded_batches` gives them."""
        columns, records = self.columns, self.records
        assert columns.starts is not None and columns.batches is not None
        starts = columns.starts.tolist()
        for b, row in enumerate(columns.batches):
            yield DecodedBatch(records.batch_for(row), columns, starts[b], starts[b + 1])


def whole_v2_batches(columns: RecordColumns, attributes: int) -> bool:
    """Whether ``columns`` holds v2 batches only, each with all its records (its header's count), whose
    attributes have no bit outside ``attributes``."""
    rows, starts = columns.batches, columns.starts
    assert rows is not None and starts is not None  # MemoryRecords.record_columns gives both
    # count_nonzero and plain ufuncs, not np.all/np.diff/np.array_equal, whose Python wrappers cost more than
    # the work on a read's few rows: this runs for every read of both passes.
    return (not np.count_nonzero(rows["magic"] != MAGIC_V2) and not np.count_nonzero(rows["attributes"] & ~attributes)
            and not np.count_nonzero(starts[1:] - starts[:-1] != rows["record_count"]))


def decoded_runs(records: MemoryRecords, run_attributes: int | None, rows: Any = None,
                 ) -> Iterator[DecodedBatch | ColumnRun]:
    """:func:`decoded_batches`, but a set of columns whose batches are all v2, whole in it, and have no attribute
    bit outside ``run_attributes`` (``None``: no set) comes as one :class:`ColumnRun`: a pass handles those
    batches as arrays, where a Python step a batch (two objects, a call or two) was most of a cleaning's time.

    The batch objects come from the rows the columns were decoded from, so each piece is its batch's.  ``rows``:
    the scan rows of ``records``' batches, when the caller has them (:meth:`MemoryRecords.columns_of`: no second
    scan, no CRC check, as with ``check_crcs=False``)."""
    previous: DecodedBatch | None = None
    position = -1
    batch: RecordBatch | None = None
    for columns in records.record_columns(check_crcs=False) if rows is None else records.columns_of(rows):
        assert columns.starts is not None  # MemoryRecords.record_columns always gives batch boundaries
        assert columns.batches is not None
        if run_attributes is not None and whole_v2_batches(columns, run_attributes):
            if previous is not None:
                # A whole batch comes next: the one before has ended.
                yield DecodedBatch(previous.batch, previous.columns, previous.lo, previous.hi, previous.first, True)
                previous = None
            position = -1
            yield ColumnRun(records, columns)
            continue
        starts = columns.starts.tolist()
        positions = columns.batches["position"].tolist()
        for b in range(len(starts) - 1):
            first = positions[b] != position
            if previous is not None:
                # A batch's last piece comes before another's first.
                yield DecodedBatch(previous.batch, previous.columns, previous.lo, previous.hi, previous.first, first)
            if first:
                batch, position = records.batch_for(columns.batches[b]), positions[b]
            assert batch is not None
            previous = DecodedBatch(batch, columns, starts[b], starts[b + 1], first, False)
    if previous is not None:
        yield DecodedBatch(previous.batch, previous.columns, previous.lo, previous.hi, previous.first, True)


class KeptRecords:
    """What a filtering keeps of one batch, piece after piece (Kafka: ``filterBatch``'s retained records and
    its ``BatchFilterResult``): how many records it read and kept, the facts of the kept ones the rebuild
    needs, and which ones (a bit per record read).  A batch read in pieces is never held whole: when it must
    be rebuilt, its kept records are taken from it again."""

    def __init__(self) -> None:
        self.read = 0
        self.count = 0
        self.tombstones = False
        self.other_magic = False
        self.max_timestamp = -1
        self.last_offset = -1
        self._masks: list[Any] = []
        self._only: DecodedBatch | None = None
        #: The kept rows of a batch read whole (for the rebuild, which would otherwise select them again).
        self.rows: Any = None

    def add(self, item: DecodedBatch, keep: Any) -> None:
        n = len(keep)
        self.read += n
        whole = item.first and item.last
        # A bit per record for a batch in pieces (its masks are kept until its last piece).
        self._masks.append(keep if whole else (np.packbits(keep), n))
        self._only = item if whole else None
        # count_nonzero and the ufuncs' reduce, not ndarray.any()/max(): those go through numpy's Python
        # wrappers, a few microseconds a call, and this runs for every batch a cleaning reads.
        count = int(np.count_nonzero(keep))
        if not count:
            return
        rows = item.columns.records[item.lo:item.hi]
        if count != n:
            rows = rows[keep]
        self.rows = rows if whole else None
        self.count += count
        self.tombstones = self.tombstones or int(np.minimum.reduce(rows["value_len"])) < 0
        self.other_magic = self.other_magic or bool(np.count_nonzero(rows["magic"] != item.batch.magic))
        self.max_timestamp = max(self.max_timestamp, int(np.maximum.reduce(rows["timestamp"])))
        self.last_offset = int(rows["offset"][-1])

    def columns(self, batch: RecordBatch) -> tuple[Any, Any]:
        """Columns holding the kept records, and their rows in them."""
        if self._only is not None:
            return self._only.columns, self._only.lo + np.flatnonzero(self._masks[0])
        keep = np.concatenate([np.unpackbits(bits, count=n).astype(bool) for bits, n in self._masks])
        records, headers = [], []
        at = lo = 0
        data = None
        for columns in batch.column_chunks(check_crcs=False):
            mask = keep[lo:lo + len(columns)]
            lo += len(columns)
            if not mask.any():
                continue
            rows = columns.records[mask]
            rows["header_index"] += at
            records.append(rows)
            headers.append(columns.headers)
            at += len(columns.headers)
            data = columns.data
        if lo != len(keep):
            raise IllegalStateError(f"the batch at {batch.position} decoded to {lo} records, then {len(keep)}")
        merged = RecordColumns(np.concatenate(records), np.concatenate(headers), data)
        return merged, np.arange(len(merged))


def records_of(columns: Any, lo: int, hi: int) -> list[Any]:
    """Record objects (offset, timestamp, key, value, headers) of ``columns.records[lo:hi]``."""
    out = []
    data = columns.data
    headers = columns.headers
    for row in columns.records[lo:hi]:
        record_headers = []
        for h in range(int(row["header_index"]), int(row["header_index"]) + int(row["header_count"])):
            hrow = headers[h]
            kp, kl, vp, vl = int(hrow["key_pos"]), int(hrow["key_len"]), int(hrow["value_pos"]), int(hrow["value_len"])
            record_headers.append((bytes(data[kp:kp + kl]).decode("utf-8", JAVA_UTF8),
                                   None if vl < 0 else bytes(data[vp:vp + vl])))
        kp, kl, vp, vl = int(row["key_pos"]), int(row["key_len"]), int(row["value_pos"]), int(row["value_len"])
        out.append(_impl.core.Record(int(row["offset"]), int(row["timestamp"]),
                                     None if kl < 0 else bytes(data[kp:kp + kl]),
                                     None if vl < 0 else bytes(data[vp:vp + vl]), record_headers))
    return out


def build_retained_records(batch: RecordBatch, columns: Any, kept_index: Any, delete_horizon_ms: int | None, *,
                           rows: Any = None) -> bytes:
    """The kept records (rows ``kept_index`` of the batch's columns) as a batch of the same magic, codec,
    timestamp type and producer fields (Kafka: ``MemoryRecords.buildRetainedRecordsInto``): v2 keeps the base
    offset and overrides the last offset with the original's; legacy starts at the first kept offset.
    ``rows``: ``columns.records[kept_index]``, when the caller has them already."""
    if rows is None:
        rows = columns.records[kept_index]
    data = columns.data
    keys = [None if kl < 0 else bytes(data[kp:kp + kl]) for kp, kl in zip(rows["key_pos"].tolist(),
                                                                         rows["key_len"].tolist(), strict=True)]
    values = [None if vl < 0 else bytes(data[vp:vp + vl]) for vp, vl in zip(rows["value_pos"].tolist(),
                                                                           rows["value_len"].tolist(), strict=True)]
    timestamps = rows["timestamp"].tolist()
    offsets = rows["offset"].tolist()
    log_append_time = batch.max_timestamp if batch.timestamp_type is TimestampType.LOG_APPEND_TIME else None
    if batch.magic >= MAGIC_V2:
        headers: list[Any] | None = None
        if np.count_nonzero(rows["header_count"] > 0):
            headers = [r.headers or None for r in (records_of(columns, int(i), int(i) + 1)[0] for i in kept_index)]
        return encode_default_batch(
            keys, values, timestamps, headers, base_offset=batch.base_offset, compression=batch.compression,
            timestamp_type=batch.timestamp_type, log_append_time=log_append_time, producer_id=batch.producer_id,
            producer_epoch=batch.producer_epoch, base_sequence=batch.base_sequence,
            is_transactional=batch.is_transactional, is_control=batch.is_control,
            partition_leader_epoch=batch.partition_leader_epoch,
            delete_horizon_ms=delete_horizon_ms if delete_horizon_ms is not None and delete_horizon_ms >= 0 else None,
            offset_deltas=[o - batch.base_offset for o in offsets],
            last_offset_delta=batch.last_offset - batch.base_offset)
    timestamp_type = batch.timestamp_type
    if timestamp_type is TimestampType.NO_TIMESTAMP_TYPE:
        timestamp_type = TimestampType.CREATE_TIME
    return build_legacy_message_set(
        list(zip(keys, values, [max(t, -1) for t in timestamps], strict=True)), magic=batch.magic,
        compression=batch.compression, timestamp_type=timestamp_type, log_append_time=log_append_time,
        offsets=offsets)


def _max_timestamp_of(data: bytes) -> tuple[int, int]:
    """The largest max timestamp among the entries in ``data`` and the last offset of the entry holding it
    (Kafka: ``MemoryRecordsBuilder.info()`` of a rebuilt legacy batch)."""
    best, offset = -1, -1
    for batch in MemoryRecords(data).batches():
        if batch.max_timestamp > best:
            best, offset = batch.max_timestamp, batch.last_offset
    return best, offset


def filter_to(decoded: Iterable[DecodedBatch | ColumnRun], record_filter: RecordFilter) -> FilterResult:
    """Write the batches of ``decoded`` without the records ``record_filter`` drops (Kafka:
    ``MemoryRecords.filterTo``, its steps in the module's docstring); returns what was written and counted.

    A :class:`ColumnRun` of kernel batches (:func:`decoded_runs` with :data:`KERNEL_ATTRIBUTES`) is filtered as
    arrays when the filter answers for all its batches at once (:meth:`RecordFilter.batch_fates`), else
    batch by batch."""
    result = FilterResult()
    retention, marker_for_empty_txn = BatchRetention.DELETE, False
    kept = KeptRecords()
    run = _PlainRun()
    for entry in decoded:
        if isinstance(entry, ColumnRun):
            run.flush(result, record_filter)
            if _filter_column_run(result, record_filter, entry):
                continue
            pieces: Iterable[DecodedBatch] = entry.pieces()
        else:
            pieces = (entry,)
        for item in pieces:
            batch = item.batch
            if item.first:
                result.bytes_read += batch.size_in_bytes
                # Once a batch, with its first piece: the filter's transaction state moves on with it.
                retention, marker_for_empty_txn = record_filter.check_batch_retention(batch)
                kept = KeptRecords()
            plain = (item.first and item.last and batch.magic == MAGIC_V2 and not batch.attributes & ~KERNEL_ATTRIBUTES
                     and (not run.items or run.items[-1].columns is item.columns))
            if not plain:
                run.flush(result, record_filter)
            if retention is BatchRetention.DELETE:
                if plain:
                    run.add(item, retention, marker_for_empty_txn, None)
                continue  # Kafka's filterTo counts the bytes of a deleted batch, not its messages
            result.messages_read += item.hi - item.lo
            keep = record_filter.should_retain_records(item)
            if plain:
                run.add(item, retention, marker_for_empty_txn, keep)
                continue
            kept.add(item, keep)
            if item.last:
                _write_retained(result, record_filter, batch, kept, retention, marker_for_empty_txn)
    run.flush(result, record_filter)
    return result


#: The attribute bits a batch the ``filter_v2_batches`` kernel rewrites may have: transactional, control, delete
#: horizon; none else (uncompressed, CreateTime).
KERNEL_ATTRIBUTES = TRANSACTIONAL_FLAG_MASK | CONTROL_FLAG_MASK | DELETE_HORIZON_FLAG_MASK


def _retention_of(fate: int, deleted: bool) -> BatchRetention:
    if deleted:
        return BatchRetention.DELETE
    return BatchRetention.RETAIN_EMPTY if fate & FILTER_RETAIN_EMPTY else BatchRetention.DELETE_EMPTY


def _filter_column_run(result: FilterResult, record_filter: RecordFilter, run: ColumnRun) -> bool:
    """The steps of :func:`filter_to` for every batch of a run of kernel batches at once, when the filter answers
    for them all; ``False`` (nothing done) when it does not."""
    answer = record_filter.batch_fates(run)
    if answer is None:
        return False
    fates, deleted, keep = answer
    columns = run.columns
    rows, starts = columns.batches, columns.starts
    assert rows is not None and starts is not None
    # Every batch counts its bytes; a batch deleted unread does not count its records (Kafka's filterTo).
    result.bytes_read += int(np.add.reduce(rows["size"], dtype=np.int64))
    counts = rows["record_count"]
    result.messages_read += (int(np.add.reduce(counts, dtype=np.int64))
                             - int(np.add.reduce(counts[deleted], dtype=np.int64)))

    def leftover(b: int) -> None:
        item = DecodedBatch(run.records.batch_for(rows[b]), columns, int(starts[b]), int(starts[b + 1]))
        kept = KeptRecords()
        retention = _retention_of(int(fates[b]), bool(deleted[b]))
        if retention is not BatchRetention.DELETE:
            kept.add(item, keep[item.lo:item.hi])
        _write_retained(result, record_filter, item.batch, kept, retention, bool(fates[b] & FILTER_EMPTY_TXN_MARKER))

    _rewrite_plain(result, record_filter, columns.data, columns.records, np.asarray(starts, dtype=np.int64),
                   np.ascontiguousarray(rows["position"]), rows["last_offset"], keep.view(np.uint8), fates, leftover)
    return True


def _rewrite_plain(result: FilterResult, record_filter: RecordFilter, data: Any, records: Any, starts: Any,
                   positions: Any, last_offsets: Any, keep: Any, fates: Any, leftover: Callable[[int], None]) -> None:
    """Batches ``b`` (the batch at ``positions[b]`` of ``data``, its records ``records[starts[b]:starts[b + 1]]``)
    rewritten by ``filter_v2_batches`` calls; ``leftover(b)`` writes a batch the kernel leaves to the record
    layer, and the kernel takes up the rest after it."""
    start, n = 0, len(positions)
    horizon = record_filter.current_time + record_filter.delete_retention_ms
    if not 0 <= horizon <= INT64_MAX:
        horizon = -1  # no horizon a batch can hold: the record layer writes (or refuses) such a batch
    while start < n:
        lo = int(starts[start])
        done, kept_counts, max_timestamps = _impl.core.filter_v2_batches(
            data, records[lo:], starts[start:] - lo, positions[start:], keep[lo:], fates[start:], horizon,
            result.output)
        _account(result, last_offsets[start:start + done], kept_counts[:done], max_timestamps[:done])
        start += done
        if start < n:
            leftover(start)
            start += 1


def _account(result: FilterResult, last_offsets: Any, kept_counts: Any, max_timestamps: Any) -> None:
    """:meth:`FilterResult.update_retained_batch_metadata` for each batch the kernel wrote (those with a count of
    0 or more: kept records, or an empty header), in order, as arrays: the first of the largest max timestamps
    wins, as it does one by one."""
    written = (kept_counts >= 0).nonzero()[0]
    if not len(written):
        return
    result.messages_retained += int(np.add.reduce(kept_counts[written], dtype=np.int64))
    result.max_offset = max(result.max_offset, int(np.maximum.reduce(last_offsets[written])))
    timestamps = max_timestamps[written]
    best = int(np.argmax(timestamps))
    if int(timestamps[best]) > result.max_timestamp:
        result.max_timestamp = int(timestamps[best])
        result.shallow_offset_of_max_timestamp = int(last_offsets[written[best]])


class _PlainRun:
    """Whole kernel batches of one set of columns, asked about one by one, waiting to be rewritten by
    ``filter_v2_batches`` calls (:func:`_rewrite_plain`), where a Python pass a batch, ~30 µs, was most of a
    cleaning's time.  A batch the kernel leaves to the record layer (kept records with headers) goes the general
    way of :func:`_write_retained`."""

    def __init__(self) -> None:
        self.items: list[DecodedBatch] = []
        self.fates: list[tuple[BatchRetention, bool]] = []
        self.masks: list[Any] = []

    def add(self, item: DecodedBatch, retention: BatchRetention, marker_for_empty_txn: bool, keep: Any) -> None:
        self.items.append(item)
        self.fates.append((retention, marker_for_empty_txn))
        # A deleted batch keeps nothing and is not asked about its records (Kafka counts none of them).
        self.masks.append(np.zeros(item.hi - item.lo, dtype=bool) if keep is None else keep)

    def flush(self, result: FilterResult, record_filter: RecordFilter) -> None:
        items, fates, masks = self.items, self.fates, self.masks
        if not items:
            return
        self.items, self.fates, self.masks = [], [], []
        lo = items[0].lo

        def leftover(b: int) -> None:
            item, (retention, marker_for_empty_txn) = items[b], fates[b]
            kept = KeptRecords()
            if retention is not BatchRetention.DELETE:
                kept.add(item, masks[b])
            _write_retained(result, record_filter, item.batch, kept, retention, marker_for_empty_txn)

        _rewrite_plain(
            result, record_filter, items[0].columns.data, items[0].columns.records[lo:items[-1].hi],
            np.array([item.lo - lo for item in items] + [items[-1].hi - lo], dtype=np.int64),
            np.array([item.batch.position for item in items], dtype=np.int64),
            np.array([item.batch.last_offset for item in items], dtype=np.int64),
            np.concatenate(masks).view(np.uint8),
            np.array([(FILTER_RETAIN_EMPTY if retention is BatchRetention.RETAIN_EMPTY else 0)
                      | (FILTER_EMPTY_TXN_MARKER if marker else 0) for retention, marker in fates], dtype=np.uint8),
            leftover)


def _write_retained(result: FilterResult, record_filter: RecordFilter, batch: RecordBatch, kept: KeptRecords,
                    retention: BatchRetention, marker_for_empty_txn: bool) -> None:
    """What :func:`filter_to` writes of one batch once all its records were asked about (Kafka: the end of
    ``filterTo``'s loop over batches): the batch as it is, its kept records rebuilt, or an empty header."""
    out = result.output
    if kept.count:
        need_horizon = (batch.magic >= MAGIC_V2 and (kept.tombstones or marker_for_empty_txn)
                        and batch.delete_horizon_ms is None)
        magic_mismatch = batch.magic < MAGIC_V2 and kept.other_magic
        if kept.count == kept.read and not need_horizon and not magic_mismatch:
            out += batch.raw_bytes()
            batch_max_ts, batch_shallow = batch.max_timestamp, batch.last_offset
        else:
            horizon = (record_filter.current_time + record_filter.delete_retention_ms if need_horizon
                       else batch.delete_horizon_ms)
            kept_columns, kept_index = kept.columns(batch)
            data = build_retained_records(batch, kept_columns, kept_index, horizon, rows=kept.rows)
            out += data
            if batch.magic >= MAGIC_V2:
                batch_max_ts = (batch.max_timestamp if batch.timestamp_type is TimestampType.LOG_APPEND_TIME
                                else kept.max_timestamp)
                batch_shallow = batch.last_offset
            else:
                batch_max_ts, batch_shallow = _max_timestamp_of(data)
        last_kept = batch.last_offset if batch.magic >= MAGIC_V2 else kept.last_offset
        result.update_retained_batch_metadata(batch_max_ts, batch_shallow, last_kept, kept.count)
    elif retention is BatchRetention.RETAIN_EMPTY:
        if batch.magic < MAGIC_V2:
            raise IllegalStateError("Empty batches are only supported for magic v2 and above")
        out += write_empty_header(
            base_offset=batch.base_offset, last_offset=batch.last_offset, producer_id=batch.producer_id,
            producer_epoch=batch.producer_epoch, base_sequence=batch.base_sequence,
            partition_leader_epoch=batch.partition_leader_epoch, timestamp_type=batch.timestamp_type,
            timestamp=batch.max_timestamp, is_transactional=batch.is_transactional,
            is_control=batch.is_control)
        result.update_retained_batch_metadata(batch.max_timestamp, batch.last_offset, batch.last_offset, 0)

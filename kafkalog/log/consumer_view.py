"""The consumer's view of a partition: what a Kafka consumer is given when it reads a log.

A consumer (Kafka 3.8.0 ``CompletedFetch.nextFetchedRecord`` over a fetch bounded by the broker's
``FetchIsolation``) reads a partition through four rules, and kafkalog's two consumers — ``Log.records()``
and the Spark source — both read through this module, so they cannot drift apart:

- **a bound**: a ``read_uncommitted`` consumer reads up to the high watermark, a ``read_committed`` one up
  to the last stable offset (the first offset of the earliest transaction still open);
- **CRCs** (``check.crcs=true``, the default): every batch fetched is checked before its records are
  returned, control and aborted batches included; a mismatch is a
  :class:`~kafkalog.errors.CorruptRecordError` naming the file and the byte position, raised once the
  records before the bad batch have been handed out;
- **control batches** (transaction markers, KRaft control records) are never returned;
- **aborted transactions** (``read_committed`` only): the batches of a transaction that ended with an ABORT
  marker are skipped (:class:`~kafkalog.log.transactions.TransactionState`).

The view is a small frozen value: it pickles, so a Spark planner builds it once on the driver and every
task of the partition reads through it.
"""

from __future__ import annotations

import enum
import itertools
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import numpy as np
import numpy.typing as npt

from .. import _impl
from .._common import MAGIC_V2
from ..file_message_set import ChunkBuffer, FileMessageSet, KeptChunkBuffers
from ..record import MemoryRecords, RecordColumns
from .transactions import TransactionalLog, TransactionState

if TYPE_CHECKING:
    from ..record import Record

__all__ = ["ConsumedLog", "ConsumerView", "IsolationLevel"]

#: What one decode of a consumer's read gives (the records of a run, as objects or as columns), and what it is once
#: cut to the range.
_Decoded = TypeVar("_Decoded")
_Run = TypeVar("_Run")


class ConsumedLog(TransactionalLog, Protocol):
    """A log as :meth:`ConsumerView.of` reads it (a :class:`~kafkalog.log.unified_log.Log` is one): its offsets and, for
    ``read_committed``, its transactions.  A protocol rather than the log class, so that the view stays below
    the log that reads through it."""

    @property
    def high_watermark(self) -> int: ...

#: The bytes of a segment one chunk of a consumer's read holds in memory.
CONSUMER_CHUNK_BYTES = 4 * 1024 * 1024


class IsolationLevel(enum.IntEnum):
    """Which records a consumer may read (Kafka: ``org.apache.kafka.common.IsolationLevel``);
    ``str()`` gives Kafka's ``isolation.level`` value."""

    READ_UNCOMMITTED = 0
    READ_COMMITTED = 1

    def __str__(self) -> str:
        return self.name.lower()

    @classmethod
    def of(cls, value: str | int | IsolationLevel) -> IsolationLevel:
        """Accepts Kafka's ``isolation.level`` values (``"read_committed"``), the enum and its ids."""
        if isinstance(value, str):
            name = value.strip().lower().replace("-", "_")
            for member in cls:
                if name == str(member):
                    return member
            raise ValueError(f"Unknown isolation level {value!r}: expected read_uncommitted or read_committed")
        try:
            return cls(value)
        except ValueError:
            raise ValueError(f"Unknown isolation level id {value!r}") from None


@dataclass(frozen=True)
class ConsumerView:
    """A consumer's read of offsets ``[start_offset, end_offset)`` of one partition.

    ``end_offset`` is already bounded by the high watermark or the last stable offset (:meth:`of` does
    that); ``transactions`` says which transactional batches are aborted.  ``bound_offset`` is that bound itself
    (``None`` in a view made by hand: ``end_offset``), where a reader of a live log stops reading bytes
    (:meth:`Log.records <kafkalog.log.reads.LogReads.records>`), so that a writer cutting the log above it
    meanwhile (a follower truncating back to its high watermark) does not reach what is read.
    """

    start_offset: int
    end_offset: int
    isolation: IsolationLevel = IsolationLevel.READ_UNCOMMITTED
    transactions: TransactionState = field(default_factory=TransactionState)
    check_crcs: bool = True
    bound_offset: int | None = None

    @property
    def read_committed(self) -> bool:
        return self.isolation is IsolationLevel.READ_COMMITTED

    @classmethod
    def of(cls, log: ConsumedLog, start_offset: int | None = None, end_offset: int | None = None, *,
           isolation: str | int | IsolationLevel = IsolationLevel.READ_UNCOMMITTED,
           check_crcs: bool = True) -> ConsumerView:
        """The view of ``log`` a consumer with ``isolation`` gets: from ``start_offset`` (the log start
        offset by default) up to ``end_offset`` (exclusive), never past the high watermark, nor for
        ``read_committed`` past the last stable offset; the aborted transactions and the last stable offset are
        those of :meth:`TransactionState.of <kafkalog.log.transactions.TransactionState.of>` (the producer state and
        ``.txnindex`` files of a log that keeps them, the batch headers of one that does not)."""
        level = IsolationLevel.of(isolation)
        start = log.log_start_offset if start_offset is None else start_offset
        bound = log.high_watermark
        transactions = TransactionState()
        if level is IsolationLevel.READ_COMMITTED:
            transactions = TransactionState.of(log)
            bound = min(bound, transactions.last_stable_offset)
        end = bound if end_offset is None else min(end_offset, bound)
        return cls(start, max(start, end), level, transactions, check_crcs, bound)

    # -- the rules, on scan rows ---------------------------------------------------------------------

    def rows_in_range(self, rows: npt.NDArray[Any]) -> npt.NDArray[Any]:
        """The scan rows that may hold offsets of the range: whole batches below it are skipped unread,
        and a v2 batch's base offset bounds it above (a legacy wrapper's first offset needs decompressing)."""
        wanted = rows["last_offset"] >= self.start_offset
        wanted &= (rows["magic"] != MAGIC_V2) | (rows["base_offset"] < self.end_offset)
        found: npt.NDArray[Any] = rows[wanted]
        return found

    def hidden_batches(self, data: Any, rows: npt.NDArray[Any], origin: int = 0) -> npt.NDArray[np.bool_]:
        """Which of ``rows`` (batches in ``data``, positions less ``origin``) the consumer does not return:
        control batches always, aborted ones when ``read_committed``."""
        return self.transactions.hidden_batches(data, rows, origin, self.read_committed)

    # -- reading a segment ---------------------------------------------------------------------------

    def chunks(self, segment: FileMessageSet, start_position: int = 0, chunk_bytes: int = CONSUMER_CHUNK_BYTES,
               *, reuse: ChunkBuffer | None = None) -> Generator[tuple[int, MemoryRecords], None, int | None]:
        """The whole batches of ``segment`` from ``start_position`` (a file position) that may hold offsets
        of the range, as in-memory chunks with the file position each starts at.  The segment is read once,
        and no further than the first batch that reaches the end of the range.  Corrupt framing raises with
        the file and position once the chunks before it are handed out; a partial batch at the end (a write
        in progress) is not read.  ``reuse`` is as for ``FileMessageSet.memory_chunks``.

        The generator's value (``StopIteration.value``) is the offset after the last batch it read, ``None``
        when it read none: a reader that must know whether the segment held every offset it should (the Spark
        source over tiered storage) compares it with the range."""
        wanted_chunks = self._wanted_chunks(segment, start_position, chunk_bytes, reuse)
        while True:
            try:
                position, data, wanted = next(wanted_chunks)
            except StopIteration as done:
                reached: int | None = done.value
                return reached
            # The batches of a range are consecutive: one slice of the chunk holds them.
            first = int(wanted["position"][0])
            end = int(wanted["position"][-1]) + int(wanted["size"][-1])
            yield position + first, MemoryRecords(data[first:end])

    def _wanted_chunks(self, segment: FileMessageSet, start_position: int, chunk_bytes: int,
                       reuse: ChunkBuffer | None
                       ) -> Generator[tuple[int, bytes | memoryview, npt.NDArray[Any]], None, int | None]:
        """What :meth:`chunks` reads, as ``segment.scanned_chunks`` gives it: ``(file position of the chunk, its
        bytes, the rows of its batches that may hold offsets of the range)``, row positions relative to the
        chunk; only chunks with such rows.  The generator's value is :meth:`chunks`'."""
        reached = None
        for position, data, rows in segment.scanned_chunks(start_position, chunk_bytes, reuse=reuse):
            wanted = self.rows_in_range(rows)
            if len(wanted):
                yield position, data, wanted
            reached = int(rows["last_offset"][-1]) + 1
            if reached >= self.end_offset:
                # Offsets grow from batch to batch: all that follow this one are past the range, unread.
                return reached
        return reached

    def records(self, segments: Iterable[tuple[FileMessageSet, int]]) -> Iterator[Record]:
        """The records the consumer is given from ``(segment, start position)`` pairs in offset order, as
        :class:`~kafkalog.record.Record` objects; stops at the end of the range."""
        # chain walks each run's list at C speed: a generator yielding record by record, with the range test
        # in Python, was half the time of a whole-log read (issue 18's profile).
        return itertools.chain.from_iterable(self._record_runs(segments))

    def _record_runs(self, segments: Iterable[tuple[FileMessageSet, int]]) -> Iterator[list[Record]]:
        """The records of :meth:`records`, a list per run the record layer decodes at once, each cut to the
        range by one kernel call (``records_in_range``, Kafka's per-record offset test).  The decode is a
        fetch's (``FileMessageSet.chunk_record_runs``, what ``Log.read(...).records.records()`` makes its records
        with), over the rows the chunk's scan found."""
        # A chunk's records are Record objects holding copies of their bytes, all made before the next
        # chunk is read, so one buffer serves every chunk of the read.
        return self._runs(segments, ChunkBuffer(), FileMessageSet.chunk_record_runs, _records_in_range)

    def record_columns(self, segments: Iterable[tuple[FileMessageSet, int]]) -> Iterator[RecordColumns]:
        """The records the consumer is given from ``(segment, start position)`` pairs in offset order, as
        :class:`~kafkalog.record.RecordColumns`, one per run the record layer decodes at once (what
        :meth:`records` gives, by the same pass: ``FileMessageSet.chunk_column_runs``).

        Each set holds only records of the range: hidden batches are not decoded, and records outside the range
        are cut by Kafka's per-record test (one below the start is skipped, the first at or past the end ends the
        read).  ``batches`` are the rows of the batches decoded, positions in their segment's file, and
        ``starts`` their spans in ``records``; a batch none of whose records is in the range (a batch holding the
        start or the end), or that holds none, has an empty span.  ``headers`` is the run's whole header column,
        which the records' ``header_index`` points into.  ``data`` of an uncompressed run is the chunk itself
        and the caller may keep the columns, so a chunk is read into memory no column set points into
        (``kafkalog.file_message_set.KeptChunkBuffers``)."""
        return self._runs(segments, KeptChunkBuffers(), FileMessageSet.chunk_column_runs, _columns_in_range)

    def segment_columns(self, segment: FileMessageSet, start_position: int = 0,
                        chunk_bytes: int = CONSUMER_CHUNK_BYTES, *, reuse: ChunkBuffer | None = None
                        ) -> Generator[RecordColumns, None, int | None]:
        """:meth:`record_columns` of one segment from ``start_position`` (a file position), read ``chunk_bytes``
        at a time: the same pass and the same sets (hidden batches not decoded, records cut to the range, CRCs
        checked, errors with the file and position), for a reader that goes segment by segment and must know how
        far each one reached (the Spark source's tasks).

        ``reuse`` is the memory the chunks are read into (default: a ``KeptChunkBuffers``, which a caller keeping
        the sets needs); a plain ``ChunkBuffer`` serves a caller that copies each set out before it asks for the
        next.  The generator's value is the offset after the last batch read (as :meth:`chunks`'), ``None`` when
        the segment held none in the range: past the end of the range once a record at or past it is met."""
        reached, _ended = yield from self._segment_runs(
            segment, start_position, chunk_bytes, KeptChunkBuffers() if reuse is None else reuse,
            FileMessageSet.chunk_column_runs, _columns_in_range)
        return reached

    def _runs(self, segments: Iterable[tuple[FileMessageSet, int]], buffer: ChunkBuffer,
              decode: Callable[..., Iterator[_Decoded]],
              cut: Callable[[_Decoded, int, int], tuple[_Run | None, bool]]) -> Iterator[_Run]:
        """The one pass of every consumer read over ``(segment, start position)`` pairs
        (:meth:`_segment_runs` each), ended by the first record at or past the end of the range."""
        for segment, start_position in segments:
            _reached, ended = yield from self._segment_runs(segment, start_position, CONSUMER_CHUNK_BYTES, buffer,
                                                            decode, cut)
            if ended:
                return

    def _segment_runs(self, segment: FileMessageSet, start_position: int, chunk_bytes: int, buffer: ChunkBuffer,
                      decode: Callable[..., Iterator[_Decoded]],
                      cut: Callable[[_Decoded, int, int], tuple[_Run | None, bool]]
                      ) -> Generator[_Run, None, tuple[int | None, bool]]:
        """The one pass of every consumer read, over one segment: each chunk of the range scanned once, its
        hidden batches found on the scan rows, its runs decoded by ``decode`` (a ``FileMessageSet`` method, as
        objects or columns) and cut to the range by ``cut``, which also says whether a record at or past the end
        was met.  The generator's value: the offset after the last batch read (``None``: none was), and whether
        such a record ended the read."""
        start, end = self.start_offset, self.end_offset
        chunks = self._wanted_chunks(segment, start_position, chunk_bytes, buffer)
        while True:
            try:
                position, data, rows = next(chunks)
            except StopIteration as done:
                return done.value, False
            hidden = self.hidden_batches(data, rows)
            for run in decode(segment, position, data, rows, hidden=hidden, check_crcs=self.check_crcs):
                kept, ended = cut(run, start, end)
                if kept:
                    yield kept
                if ended:
                    # The batch of that record was read whole: the read reached past its last offset.
                    return int(rows["last_offset"][-1]) + 1, True


def _records_in_range(run: Iterable[Record], start: int, end: int) -> tuple[list[Record], bool]:
    """The records of ``run`` in ``[start, end)`` (the ``records_in_range`` kernel), and whether one at or past
    ``end`` ended them."""
    records, ended = _impl.core.records_in_range(run if isinstance(run, list) else list(run), start, end)
    return records, ended


def _columns_in_range(columns: RecordColumns, start: int, end: int) -> tuple[RecordColumns | None, bool]:
    """:func:`_records_in_range` for columns (``None`` when no record is left): records below ``start`` left
    out, the first at or past ``end`` and all after it cut, as Kafka's consumer tests each record in turn; the
    batch spans (``starts``) recounted over the records kept."""
    offsets = columns.records["offset"]
    n = len(offsets)
    if n == 0:
        return None, False
    # The usual run lies inside the range: two reductions tell, with no mask made.
    if int(offsets.min()) >= start and int(offsets.max()) < end:
        return columns, False
    stop, ended = n, False
    past = offsets >= end
    if past.any():
        stop, ended = int(np.argmax(past)), True
    kept = offsets[:stop] >= start
    if not kept.any():
        return None, ended
    starts = columns.starts
    batches = columns.batches
    records = columns.records[:stop][kept]
    if starts is not None:
        # Each batch's span, counted again over the records kept (batch_of: the batch of each record).
        counts = np.diff(starts)
        batch_of = np.repeat(np.arange(len(counts)), counts)[:stop][kept]
        new_counts = np.bincount(batch_of, minlength=len(counts))
        starts = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(new_counts, out=starts[1:])
    return RecordColumns(records, columns.headers, columns.data, starts, batches), ended

"""MemoryRecords: a run of log entries of any magic in one buffer, and the builders that make one.

Port of ``MemoryRecords.java`` and ``ByteBufferLogInputStream.java`` (clients, tag 3.8.0), the
successor of 0.10.1's ``ByteBufferMessageSet``.  The buffer may be ``bytes``, ``bytearray``, a
``memoryview`` or an ``mmap``; MemoryRecords keeps the object itself, never a view of it, so an mmap
underneath can still be closed once the MemoryRecords is dropped.

Walking the buffer is the batch-scan kernel's job (``_core.scan_batches``); this class turns what the
scan found into batch objects and what made it stop into kafkalog errors with their positions.
"""

from __future__ import annotations

import bisect
import itertools
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from .. import _impl
from .._common import (
    COMPRESSION_CODEC_MASK,
    HEADER_DTYPE,
    INT32_MAX,
    INT64_MAX,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    MAGIC_V0,
    MAGIC_V1,
    MAGIC_V2,
    MIN_RECORD_OVERHEAD,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    RECORD_BATCH_OVERHEAD,
    RECORD_OVERHEAD_V1,
    ScanStop,
)
from ..errors import CorruptRecordError, RecordTooLargeError, UnsupportedMagicError
from . import batch as _batch
from .batch import (
    DEFAULT_MAX_DECOMPRESSED_SIZE,
    DefaultRecordBatch,
    RecordBatch,
    RecordColumns,
    RecordInput,
    build_default_batch,
)
from .compression import CompressionType
from .legacy import LegacyRecordBatch, build_legacy_message_set
from .records_util import ConvertedRecords, down_convert_batches
from .types import ControlRecordType, EndTransactionMarker, TimestampType

__all__ = ["DECODE_CHUNK_BYTES", "OBJECT_CHUNK_BYTES", "MemoryRecords", "ScanResult"]


#: The most bytes of uncompressed v2 batches that ``records()`` and ``record_columns()`` hand to one
#: kernel call: large enough that the cost of a call disappears, small enough that reading a large
#: segment never holds all of its records at once.
DECODE_CHUNK_BYTES = 4 * 1024 * 1024
#: The same for ``records()``, which builds Python objects: a smaller run keeps the objects made by one
#: call in the CPU cache until the caller has walked them.
OBJECT_CHUNK_BYTES = 64 * 1024


@dataclass(frozen=True)
class ScanResult:
    """What the batch scan found: one row per complete entry (:data:`~kafkalog._common.BATCH_DTYPE`),
    the position it stopped at, and why (:class:`~kafkalog._common.ScanStop`)."""

    batches: npt.NDArray[Any]
    stop_position: int
    stop_reason: ScanStop

    @property
    def valid_bytes(self) -> int:
        """Bytes from the start of the scan to the end of the last entry it accepted."""
        if len(self.batches) == 0:
            return 0
        last = self.batches[-1]
        return int(last["position"]) + int(last["size"]) - int(self.batches[0]["position"])


_NO_HEADERS = np.empty(0, dtype=HEADER_DTYPE)

#: Kinds of the runs :func:`_decode_plan` yields.
RUN_V2, RUN_LEGACY, SINGLE = "v2", "legacy", "single"


def _decode_plan(rows: npt.NDArray[Any], chunk_bytes: int,
                 legacy_runs: bool = False) -> Iterator[tuple[str, npt.NDArray[Any]]]:
    """Split scan rows into runs a multi-entry kernel can take whole (uncompressed v2 batches for
    ``decode_v2_batches``; with ``legacy_runs``, uncompressed v0/v1 messages for ``decode_legacy_records``),
    up to ``chunk_bytes`` a run, and single rows that need a batch object (compressed, or legacy without
    ``legacy_runs``).

    Yields ``(kind, rows)`` in buffer order, kind one of :data:`RUN_V2`, :data:`RUN_LEGACY`,
    :data:`SINGLE`.  The kinds are found on numpy columns and the runs cut by a bisection of the rows' running
    byte count, so the Python steps are per run, not per batch, and a fetch's few batches cost a few numpy
    calls (each some microseconds, paid again by every fetch).
    """
    n = len(rows)
    if n == 0:
        return
    if (not np.count_nonzero(rows["attributes"] & COMPRESSION_CODEC_MASK)
            and not np.count_nonzero(rows["magic"] != MAGIC_V2)):
        # The usual case, uncompressed v2 batches only, without the general split's dozen numpy calls.
        ends = np.cumsum(rows["size"], dtype=np.int64).tolist()
        if ends[-1] <= chunk_bytes:
            yield RUN_V2, rows
            return
        for i, j in _runs_of_bytes(ends, 0, n, chunk_bytes):
            yield RUN_V2, rows[i:j]
        return
    uncompressed = (rows["attributes"] & COMPRESSION_CODEC_MASK) == 0
    v2 = rows["magic"] == MAGIC_V2
    kinds = np.where(uncompressed & v2, 2, np.where(uncompressed & ~v2 & legacy_runs, 1, 0)).astype(np.int8)
    ends = np.cumsum(rows["size"], dtype=np.int64).tolist()  # bytes of rows[0..i] inclusive
    # Boundaries where the kind changes, and every single row on its own.
    cuts = (np.flatnonzero((kinds[1:] != kinds[:-1]) | (kinds[1:] == 0)) + 1).tolist()
    run_kinds = kinds[[0, *cuts]].tolist()
    for lo, hi, kind in zip([0, *cuts], [*cuts, n], run_kinds, strict=True):
        if kind == 0:
            yield SINGLE, rows[lo:hi]
            continue
        for i, j in _runs_of_bytes(ends, lo, hi, chunk_bytes):
            yield (RUN_V2 if kind == 2 else RUN_LEGACY), rows[i:j]


def _runs_of_bytes(ends: list[int], lo: int, hi: int, chunk_bytes: int) -> Iterator[tuple[int, int]]:
    """Cut rows ``[lo, hi)`` into runs of at most ``chunk_bytes`` (a larger row is a run of its own), greedily:
    ``(first row, row past the last)`` of each.  ``ends`` are the rows' running byte counts (of rows 0..i)."""
    i = lo
    while i < hi:
        before = ends[i - 1] if i else 0
        j = min(max(bisect.bisect_right(ends, before + chunk_bytes, i, hi), i + 1), hi)
        yield i, j
        i = j


def _runs_with_mask(rows: npt.NDArray[Any], keep: npt.NDArray[np.bool_] | None
                    ) -> Iterator[tuple[str, npt.NDArray[Any], npt.NDArray[np.bool_] | None]]:
    """:func:`_decode_plan`'s runs for Record objects, each with the part of ``keep`` that covers it (``None``
    when ``keep`` is: every batch is kept)."""
    if keep is None:
        for kind, run in _decode_plan(rows, OBJECT_CHUNK_BYTES):
            yield kind, run, None
        return
    at = 0
    for kind, run in _decode_plan(rows, OBJECT_CHUNK_BYTES):
        n = len(run)
        yield kind, run, keep[at:at + n]
        at += n


def _one_large_batch(run: npt.NDArray[Any]) -> bool:
    """Whether a run is one batch with more records than one kernel call should decode: it is then read
    :data:`~kafkalog.record.batch.CHUNK_RECORDS` records at a time."""
    return len(run) == 1 and int(run["record_count"][0]) > _batch.CHUNK_RECORDS


def _batch_at(buf: Any, position: int, size: int, magic: int, max_decompressed_size: int) -> RecordBatch:
    if magic == MAGIC_V2:
        return DefaultRecordBatch(buf, position, size, max_decompressed_size)
    return LegacyRecordBatch(buf, position, size, max_decompressed_size)


class MemoryRecords:
    """A buffer of log entries: v0/v1 messages and v2 batches, in any mix (Kafka: ``MemoryRecords``).

    ``max_batch_size`` bounds the size field an entry may declare (Kafka: the ``maxMessageSize`` of
    ``ByteBufferLogInputStream``) and ``max_decompressed_size`` what one batch may decompress to.
    """

    __slots__ = ("_buf", "_size", "max_batch_size", "max_decompressed_size")

    def __init__(self, buffer: Any, *, max_batch_size: int = INT32_MAX,
                 max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> None:
        if isinstance(buffer, str):
            raise TypeError("MemoryRecords needs a bytes-like buffer, not str")
        with memoryview(buffer) as view:
            if not view.c_contiguous:
                raise ValueError("MemoryRecords needs a contiguous buffer")
            self._size = view.nbytes
            plain_bytes = view.format == "B" and view.ndim == 1
        # Keep the caller's object when it is already bytes (so an mmap is held, not a view of it);
        # see any other buffer (an int8 array, an array('I')) as its bytes, since slicing the object
        # itself would count items.
        self._buf = buffer if plain_bytes else memoryview(buffer).cast("B")
        self.max_batch_size = max_batch_size
        self.max_decompressed_size = max_decompressed_size

    @property
    def buffer(self) -> Any:
        return self._buf

    def writable(self) -> MemoryRecords:
        """These records over a buffer that can be written: themselves when theirs can (a ``bytearray``, a
        writable ``memoryview`` or ``mmap``); otherwise new records, with the same limits, over one
        ``bytearray`` copy of theirs, made by one ``memcpy``.

        The leader's append rewrites each batch's header where it lies, as Kafka's ``LogValidator`` rewrites
        the request's buffer; a caller's ``bytes`` (what :meth:`with_records` builds), a read-only
        ``memoryview`` or ``mmap`` are never written: the append writes this copy, which is what the log
        then holds.  The copy's batches are the same bytes at the same positions, so batches already read
        from this buffer carry over to it (:meth:`RecordBatch.over <kafkalog.record.batch.RecordBatch.over>`)
        without a second walk.
        """
        buf = self._buf
        kind = type(buf)
        if kind is bytearray:
            return self
        if kind is bytes:
            copy = bytearray(buf)
        else:
            with memoryview(buf) as view:
                if not view.readonly:
                    return self
                copy = bytearray(view)
        # A bytearray of the same size: nothing for the constructor to check (a one-record append would spend
        # more on its memoryview than on the copy).
        records = MemoryRecords.__new__(MemoryRecords)
        records._buf, records._size = copy, self._size
        records.max_batch_size, records.max_decompressed_size = self.max_batch_size, self.max_decompressed_size
        return records

    def size_in_bytes(self) -> int:
        return self._size

    def __len__(self) -> int:
        return self._size

    def scan(self, *, check_crc: bool = True, stop_on_invalid: bool = True, start: int = 0,
             end: int = -1, max_batches: int | None = None) -> ScanResult:
        """Run the batch scan over the buffer (see ``_core_py.scan.scan_batches`` for the rules)."""
        batches, stop, reason = _impl.core.scan_batches(
            self._buf, start, end, check_crc, stop_on_invalid, self.max_batch_size,
            INT64_MAX if max_batches is None else max_batches,
        )
        return ScanResult(batches, int(stop), ScanStop(reason))

    def _raise_for(self, reason: ScanStop, position: int) -> None:
        """Turn a scan stop into Kafka's error for it (``ByteBufferLogInputStream.nextBatchSize``)."""
        remaining = self._size - position
        if reason in (ScanStop.END, ScanStop.LIMIT, ScanStop.ZERO_TAIL):
            return
        size = None
        if remaining >= LOG_OVERHEAD:
            with memoryview(self._buf) as view:
                size = int.from_bytes(view[position + 8:position + 12], "big", signed=True)
        if reason is ScanStop.PARTIAL:
            if size is None:
                raise CorruptRecordError(
                    f"Truncated batch: {remaining} trailing bytes, fewer than the {LOG_OVERHEAD}-byte log "
                    "overhead",
                    position,
                )
            raise CorruptRecordError(
                f"Truncated batch: its size field says {LOG_OVERHEAD + size} bytes but only {remaining} "
                "remain",
                position,
            )
        if reason is ScanStop.SIZE_TOO_SMALL:
            minimum, what = MIN_RECORD_OVERHEAD, "the minimum record overhead"
            if size is not None and size >= MIN_RECORD_OVERHEAD and remaining > MAGIC_OFFSET:
                # The size passed the 14-byte floor, so it is the entry's own magic that needs more.
                with memoryview(self._buf) as view:
                    magic = view[position + MAGIC_OFFSET]
                if magic == MAGIC_V2:
                    minimum, what = RECORD_BATCH_OVERHEAD - LOG_OVERHEAD, "the v2 batch header"
                elif magic == MAGIC_V1:
                    minimum, what = RECORD_OVERHEAD_V1, "the v1 record overhead"
            raise CorruptRecordError(
                f"Record size {size} is smaller than {what} ({minimum})", position
            )
        if reason is ScanStop.TOO_LARGE:
            raise RecordTooLargeError(
                f"Record size {size} exceeds the largest allowable message size ({self.max_batch_size})",
                position,
            )
        if reason is ScanStop.BAD_MAGIC:
            with memoryview(self._buf) as view:
                magic = view[position + MAGIC_OFFSET]
            raise UnsupportedMagicError(f"Invalid magic found in record: {magic}", position)
        if reason is ScanStop.BAD_CRC:
            self._batch_for_position(position).ensure_valid()
            raise CorruptRecordError("Record is corrupt (stored crc does not match the bytes)", position)

    def batches(self, *, strict: bool = False) -> Iterator[RecordBatch]:
        """The entries of the buffer as batches, shallowly: no CRC check, no decompression.

        A partial entry at the end (a fetch of ``max_length`` bytes cuts the last batch, as Kafka's
        ``ByteBufferLogInputStream`` expects) ends the iteration before it; ``strict=True`` raises on it
        instead.  Zeros from the last entry to the end (a preallocated segment, :data:`ScanStop.ZERO_TAIL`)
        end it too, strict or not.  Corrupt framing (a size too small or too large, a bad magic) raises
        either way.
        """
        only = self.only_batch()  # one whole entry (an append, a converted batch): no scan array to build
        if only is not None:
            yield only
            return
        result = self.scan(check_crc=False, stop_on_invalid=False)
        rows = result.batches
        positions = rows["position"].tolist()
        sizes = rows["size"].tolist()
        magics = rows["magic"].tolist()
        buf = self._buf
        limit = self.max_decompressed_size
        for position, size, magic in zip(positions, sizes, magics, strict=True):
            yield _batch_at(buf, position, size, magic, limit)
        self._raise_for_stop(result, strict)

    def batch_facts(self) -> Iterable[tuple[int, int, int]]:
        """``(max timestamp, last offset, size)`` of each entry :meth:`batches` yields, read by the scan kernel
        with the same framing checks (and the same errors, raised before any fact is given), but without an
        object an entry: what a segment's append indexes by, for the many batches of a cleaner's or a
        follower's append."""
        only = self.only_batch()
        if only is not None:
            return ((only.max_timestamp, only.last_offset, only.size_in_bytes),)
        result = self.scan(check_crc=False, stop_on_invalid=False)
        self._raise_for_stop(result, False)
        rows = result.batches
        return zip(rows["max_timestamp"].tolist(), rows["last_offset"].tolist(), rows["size"].tolist(), strict=True)

    def only_batch(self) -> RecordBatch | None:
        """The buffer's batch when it holds exactly one whole entry, else ``None`` (then :meth:`batches`
        says what it holds).  When given, it is what :meth:`batches` would yield alone: the same framing
        checks, by a kernel that builds no scan array (a one-batch append spends more on that array than
        on the walk)."""
        magic = _impl.core.single_entry_magic(self._buf, self.max_batch_size)
        if magic < 0:
            return None
        return _batch_at(self._buf, 0, self._size, magic, self.max_decompressed_size)

    def _raise_for_stop(self, result: ScanResult, strict: bool) -> None:
        """Raise what ended ``result``'s scan, unless it is the end or (not ``strict``) a partial tail."""
        if result.stop_reason is not ScanStop.PARTIAL or strict:
            self._raise_for(result.stop_reason, result.stop_position)

    def records(self, *, strict: bool = False, check_crcs: bool = True) -> Iterator[Any]:
        """Every record of every batch, in order (deep iteration), control records included (each says
        ``is_control``).

        Each batch's CRC is checked before its records are returned (a consumer's ``check.crcs=true``;
        for a legacy wrapper its inner messages' too): the records before a corrupt batch are yielded,
        then a :class:`CorruptRecordError` at its position is raised.  The same holds for a batch whose CRC
        is right but whose records are malformed: the records of every batch before it, then an
        :class:`~kafkalog.errors.InvalidRecordError` at its bad record.  ``check_crcs=False`` reads past
        bad CRCs, for forensic tools.  ``strict`` is as for :meth:`batches`.

        Runs of uncompressed v2 batches are decoded by one kernel call each (see
        :data:`OBJECT_CHUNK_BYTES`); legacy and compressed batches one at a time, at most
        :data:`~kafkalog.record.batch.CHUNK_RECORDS` records a call, so what the iteration holds is
        bounded whatever a batch's record count.  Nothing is read until the first record is asked for.
        """
        # chain walks each run's list at C speed; a generator yielding record by record would
        # cost a frame resumption per record, a fifth of the whole object decode.
        return itertools.chain.from_iterable(self._record_runs(strict, check_crcs))

    def _record_runs(self, strict: bool, check_crcs: bool) -> Iterator[Iterable[Any]]:
        """The records of :meth:`records`, as one iterable per run or per batch."""
        result = self.scan(check_crc=False, stop_on_invalid=False)
        yield from self.records_of(result.batches, check_crcs=check_crcs)
        self._raise_for_stop(result, strict)

    def records_of(self, rows: npt.NDArray[Any], *, hidden: npt.NDArray[np.bool_] | None = None,
                   check_crcs: bool = True) -> Iterator[Iterable[Any]]:
        """The records of the batches ``rows`` (scan rows of this buffer, each batch right after the one before)
        as :class:`~kafkalog.record.Record` objects, less those of the batches ``hidden`` marks (a consumer's
        control and aborted batches): one iterable per run of uncompressed v2 batches (one kernel call) and one
        per other batch.

        With ``check_crcs`` every batch's CRC is checked before its records are handed out, the hidden ones'
        too, as a consumer checks every batch it fetches: one scan over the rows' bytes, before the first
        record, and a legacy wrapper's inner messages as it is decoded.  A mismatch raises
        :class:`CorruptRecordError` after the records of the batches before it; so does a malformed record,
        after the records of the batches before its own.
        """
        # A mask that hides nothing (a consumer's usual chunk: no control batch) is no mask: each run is then
        # decoded whole, with no numpy call to ask which of its batches are kept.
        keep = None if hidden is None or not hidden.any() else ~hidden
        bad = self._first_bad_crc(rows) if check_crcs and len(rows) else None
        for kind, run, visible in _runs_with_mask(rows, keep):
            if bad is not None and int(run["position"][-1]) >= bad:
                # The bad batch is in this run: the records of the batches before it, then the error.
                before = run["position"] < bad
                if visible is not None:
                    before &= visible
                if kind == RUN_V2 and before.any():
                    yield from self._objects_one_batch_a_call(run[before])
                self._raise_for(ScanStop.BAD_CRC, bad)
            if kind == RUN_V2 and not _one_large_batch(run):
                batches = run if visible is None or visible.all() else run[visible] if visible.any() else None
                if batches is None:
                    continue
                try:
                    records = _impl.core.decode_v2_batch_objects(self._buf, batches)
                except CorruptRecordError:
                    records = None
                if records is None:
                    # A batch of the run is malformed: the records of the batches before it, then its error.
                    yield from self._objects_one_batch_a_call(batches)
                else:
                    yield records
            elif visible is None or visible[0]:
                # Its own CRC was checked by the scan above (a compressed v2 batch's too, so it is not computed
                # twice); a legacy wrapper's inner messages are checked here.
                legacy = int(run["magic"][0]) != MAGIC_V2
                yield from self.batch_for(run[0]).record_chunks(check_crcs=check_crcs and legacy)

    def _objects_one_batch_a_call(self, run: npt.NDArray[Any]) -> Iterator[list[Any]]:
        """The records of a run of uncompressed v2 batches, one kernel call a batch: for a run one call
        could not decode, the records of the batches before the malformed one, then its error."""
        for i in range(len(run)):
            yield _impl.core.decode_v2_batch_objects(self._buf, run[i:i + 1])

    def _first_bad_crc(self, rows: npt.NDArray[Any]) -> int | None:
        """The position of the first batch of the contiguous ``rows`` whose CRC does not match, or ``None``."""
        end = int(rows["position"][-1]) + int(rows["size"][-1])
        result = self.scan(check_crc=True, stop_on_invalid=True, start=int(rows["position"][0]), end=end)
        return result.stop_position if result.stop_reason is ScanStop.BAD_CRC else None

    def record_columns(self, *, strict: bool = False, check_crcs: bool = True) -> Iterator[RecordColumns]:
        """Every record of the buffer as columns, decoded as they are asked for: one :class:`RecordColumns`
        per run of uncompressed v2 batches (decoded by one kernel call, ``data`` is this buffer) and per
        legacy or compressed batch (``data`` is its decompressed bytes).  Each has ``starts``, its batch
        boundaries, and ``batches``, the scan rows of its batches (positions in this buffer).  A batch of
        more than :data:`~kafkalog.record.batch.CHUNK_RECORDS` records comes as several consecutive
        column sets, each with that batch's row, so what the iteration holds is bounded whatever the
        record count.

        CRCs are checked as by :meth:`records`: a corrupt batch, or one whose records are malformed, raises
        once the columns of every batch before it are handed out.  ``strict`` is as for :meth:`batches`.
        """
        result = self.scan(check_crc=check_crcs, stop_on_invalid=check_crcs)
        yield from self._columns(result.batches, None, check_crcs)
        self._raise_for_stop(result, strict)

    def columns_of(self, rows: npt.NDArray[Any], *, hidden: npt.NDArray[np.bool_] | None = None,
                   check_crcs: bool = False) -> Iterator[RecordColumns]:
        """:meth:`record_columns` of the batches ``rows``: scan rows of this buffer, each batch right after the one
        before, framed by the scan that found them, so the buffer is not scanned again (for a reader that has the
        rows already: the cleaner reads a segment by its scan, a consumer a chunk by its scan).

        The batches ``hidden`` marks (a consumer's control and aborted batches) are not decoded: their rows are
        in no column set's ``batches``.  With ``check_crcs`` every batch's CRC is checked first, the hidden ones'
        too, as :meth:`records_of` checks them: one scan over the rows' bytes, then a mismatch raises
        :class:`CorruptRecordError` at its batch once the columns of the batches before it are handed out.
        """
        keep = None if hidden is None or not hidden.any() else ~hidden
        bad = self._first_bad_crc(rows) if check_crcs and len(rows) else None
        if bad is not None:
            before = rows["position"] < bad
            yield from self._columns(rows[before], None if keep is None else keep[before], check_crcs)
            self._raise_for(ScanStop.BAD_CRC, bad)
        yield from self._columns(rows, keep, check_crcs)

    def _columns(self, batch_rows: npt.NDArray[Any], keep: npt.NDArray[np.bool_] | None,
                 check_crcs: bool) -> Iterator[RecordColumns]:
        """The columns of :meth:`record_columns`, of the batches ``batch_rows`` that ``keep`` marks (all when it is
        ``None``).  ``check_crcs`` checks a legacy wrapper's inner messages as it is decoded (the batches' own
        CRCs are the caller's scan's)."""
        buf = self._buf
        at = 0
        for kind, rows in _decode_plan(batch_rows, DECODE_CHUNK_BYTES, legacy_runs=True):
            visible = None if keep is None else keep[at:at + len(rows)]
            at += len(rows)
            if visible is not None and not visible.all():
                if not visible.any():
                    continue
                if kind == RUN_LEGACY:
                    # A legacy message is never a control or transactional batch: hidden ones are kept apart
                    # only because a run's kernel call decodes a contiguous range of the buffer.
                    for i in np.flatnonzero(visible).tolist():
                        yield from self._columns(rows[i:i + 1], None, check_crcs)
                    continue
                rows = rows[visible]
            if kind == RUN_V2 and not _one_large_batch(rows):
                try:
                    decoded = _impl.core.decode_v2_batches(buf, rows)
                except CorruptRecordError:
                    decoded = None
                if decoded is None:
                    # As in records_of: the columns of the batches before the malformed one, then its error.
                    yield from self._columns_one_batch_a_call(rows)
                else:
                    records, headers, starts = decoded
                    yield RecordColumns(records, headers, buf, starts, rows)
            elif kind == RUN_LEGACY:
                # Each uncompressed legacy message is a batch of one record.
                first, last = rows[0], rows[-1]
                records = _impl.core.decode_legacy_records(
                    buf, int(first["position"]), int(last["position"]) + int(last["size"]))
                yield RecordColumns(records, _NO_HEADERS, buf, np.arange(len(rows) + 1, dtype=np.int64), rows)
            else:
                # The scan checked the batch's own CRC; a legacy wrapper's inner messages are checked here.
                legacy = int(rows["magic"][0]) != MAGIC_V2
                batch = self.batch_for(rows[0])
                for columns in batch.column_chunks(check_crcs=check_crcs and legacy):
                    yield RecordColumns(columns.records, columns.headers, columns.data,
                                        np.array([0, len(columns)], dtype=np.int64), rows[:1])

    def _columns_one_batch_a_call(self, rows: npt.NDArray[Any]) -> Iterator[RecordColumns]:
        """:meth:`_objects_one_batch_a_call` for columns."""
        buf = self._buf
        for i in range(len(rows)):
            records, headers, starts = _impl.core.decode_v2_batches(buf, rows[i:i + 1])
            yield RecordColumns(records, headers, buf, starts, rows[i:i + 1])

    def _batch_for_position(self, position: int) -> RecordBatch:
        with memoryview(self._buf) as view:
            size = LOG_OVERHEAD + int.from_bytes(view[position + 8:position + 12], "big", signed=True)
            magic = view[position + MAGIC_OFFSET]
        return _batch_at(self._buf, position, size, magic, self.max_decompressed_size)

    def batch_for(self, row: Any) -> RecordBatch:
        """The batch of one scan row of this buffer (:data:`~kafkalog._common.BATCH_DTYPE`): a shallow view, as
        :meth:`batches` gives it."""
        return _batch_at(self._buf, int(row["position"]), int(row["size"]), int(row["magic"]),
                         self.max_decompressed_size)

    def __iter__(self) -> Iterator[RecordBatch]:
        return self.batches()

    def valid_bytes(self) -> int:
        """Length of the prefix made of whole entries with valid CRCs (what recovery would keep)."""
        result = self.scan(check_crc=True, stop_on_invalid=True)
        return result.stop_position

    def __repr__(self) -> str:
        return f"MemoryRecords(size={self._size})"

    def down_convert(self, to_magic: int, first_offset: int) -> ConvertedRecords[MemoryRecords]:
        """The batches in ``to_magic`` or older, for a reader of that format (Kafka:
        ``MemoryRecords.downConvert``; see :mod:`kafkalog.record.convert` for the rules)."""
        converted = down_convert_batches(self.batches(), to_magic, first_offset)
        return ConvertedRecords(MemoryRecords(converted.records), converted.record_conversion_stats)

    # -----------------------------------------------------------------------------------------------
    # Builders

    @classmethod
    def with_records(
        cls,
        records: Iterable[RecordInput],
        *,
        magic: int = MAGIC_V2,
        compression: CompressionType | int | str = CompressionType.NONE,
        base_offset: int = 0,
        timestamp_type: TimestampType | int | str = TimestampType.CREATE_TIME,
        log_append_time: int | None = None,
        producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = NO_PRODUCER_EPOCH,
        base_sequence: int = NO_SEQUENCE,
        is_transactional: bool = False,
        partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
        delete_horizon_ms: int | None = None,
    ) -> MemoryRecords:
        """Records in one batch of ``magic``, as a Kafka producer writes them (Kafka:
        ``MemoryRecords.withRecords``).

        Each record is ``(key, value)``, ``(key, value, timestamp)`` or ``(key, value, timestamp,
        headers)`` with ``headers`` a list of ``(str, bytes | None)``; a missing timestamp is -1.  For
        magic 0/1 uncompressed every record is its own message; compressed, they share one wrapper.
        Producer fields, transactions, headers and the delete horizon need magic 2.
        """
        if magic == MAGIC_V2:
            data = build_default_batch(
                records, base_offset=base_offset, compression=compression, timestamp_type=timestamp_type,
                log_append_time=log_append_time, producer_id=producer_id, producer_epoch=producer_epoch,
                base_sequence=base_sequence, is_transactional=is_transactional,
                partition_leader_epoch=partition_leader_epoch, delete_horizon_ms=delete_horizon_ms,
            )
            return cls(data)
        if magic not in (MAGIC_V0, MAGIC_V1):
            raise UnsupportedMagicError(f"Unknown magic {magic}: Kafka writes 0, 1 or 2")
        v2_only = {
            "producer_id": producer_id != NO_PRODUCER_ID,
            "producer_epoch": producer_epoch != NO_PRODUCER_EPOCH,
            "base_sequence": base_sequence != NO_SEQUENCE,
            "is_transactional": is_transactional,
            "partition_leader_epoch": partition_leader_epoch != NO_PARTITION_LEADER_EPOCH,
            "delete_horizon_ms": delete_horizon_ms is not None,
        }
        used = [name for name, set_ in v2_only.items() if set_]
        if used:
            raise ValueError(f"{', '.join(used)} need magic 2; magic {magic} cannot carry them")
        data = build_legacy_message_set(
            records, magic=magic, base_offset=base_offset, compression=compression,
            timestamp_type=timestamp_type, log_append_time=log_append_time,
        )
        return cls(data)

    @classmethod
    def with_end_transaction_marker(
        cls,
        producer_id: int,
        producer_epoch: int,
        marker: EndTransactionMarker,
        *,
        base_offset: int = 0,
        timestamp: int | None = None,
        partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    ) -> MemoryRecords:
        """A control batch holding one ABORT or COMMIT marker (Kafka:
        ``MemoryRecords.withEndTransactionMarker``); ``timestamp`` defaults to now."""
        if marker.control_type not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
            raise ValueError("An end transaction marker is ABORT or COMMIT")
        ts = int(time.time() * 1000) if timestamp is None else timestamp
        data = build_default_batch(
            [(marker.record_key(), marker.record_value(), ts)], base_offset=base_offset,
            producer_id=producer_id, producer_epoch=producer_epoch, is_transactional=True,
            is_control=True, partition_leader_epoch=partition_leader_epoch,
        )
        return cls(data)

    @classmethod
    def with_control_record(
        cls,
        control_type: ControlRecordType,
        value: bytes | None,
        *,
        base_offset: int = 0,
        timestamp: int | None = None,
        partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    ) -> MemoryRecords:
        """A non-transactional control batch of one record, as KRaft writes LEADER_CHANGE and the
        snapshot and voter records; ``value`` is the type's payload, passed through as given."""
        ts = int(time.time() * 1000) if timestamp is None else timestamp
        data = build_default_batch(
            [(control_type.record_key(), value, ts)], base_offset=base_offset, is_control=True,
            partition_leader_epoch=partition_leader_epoch,
        )
        return cls(data)

"""The oracle's comparison: two answers to the same request, and two partition directories, Kafka's and kafkalog's.

After every request the harness compares, in this order, and reports the first difference (:class:`Difference`):

1. the result, or the error's class (messages are Kafka's own words and are not compared);
2. the state (offsets, segments, producers, leader epochs, the clock);
3. every file of the two partition directories: the same names, then the same bytes.

Bytes are compared as they are, with the rules below for bytes that legitimately depend on the runtime.  Each rule
is listed, with its reason, in ``docs/oracle.rst`` (section "Comparison rules"):

* **Recompressed batches are compared decoded.**  A batch whose compressed bytes come from the log or the cleaner
  itself, not from the producer (a leader append recompressing to the topic's ``compression.type`` or converting to
  v0/v1, a cleaned compressed batch), is made by the runtime's compression library: Java's ``Deflater``,
  ``snappy-java``, ``lz4-java`` and ``zstd-jni`` on one side, zlib, python-snappy, lz4 and zstandard on the other.
  Two such batches are equal when their headers are equal field by field save the length and the CRC (v2:
  base offset, partition leader epoch, magic, attributes, last offset delta, base and max timestamps, producer id,
  epoch and base sequence, record count; v0/v1: offset, magic, attributes, timestamp) and every record is equal
  (offset, timestamp, key, value, headers).  The rule applies only when Kafka's batch is compressed, both batches
  use the same codec, and Kafka's compressed payload is not one a producer sent (:attr:`DirComparison`'s
  ``producer_payloads``): a batch Kafka kept as the producer compressed it must be kept byte for byte.
* **Positions follow the batches.**  Once a recompressed batch has another size, what follows it sits elsewhere
  in the file: a position (an ``.index`` entry's, a read's ``relativePositionInSegment``) is equal to the other
  side's when both are the start of the same batch (by its index in the segment) or both the segment's end; a
  segment's size in the state is equal when both are the size of their files, which compared equal.
* **Byte counts of a cleaning follow the batches.**  A cleaning's ``bytesRead`` and ``bytesWritten`` are compared
  only while no batch of the scenario has been compared decoded with another size.

Everything else is compared exactly: a difference there is a kafkalog bug until shown to be a deliberate,
documented deviation.

kafkalog ports Kafka 3.9's behaviour.  Two changes of Kafka 4.x that kafkalog deliberately does not follow are
compared by rules of their own (:class:`Rules`, set for the ``"4"`` line by :func:`rules_for`; ``docs/oracle.rst``,
"Kafka 4 changes kafkalog does not follow"):

* **A read's offset metadata names its batch** (:attr:`Rules.read_names_batch`).  Kafka 4's ``LogSegment.read``
  answers the base offset of the batch holding the fetch offset as ``messageOffset``; 3.9 (and kafkalog) answer
  the fetch offset.  Kafka's value must be the base offset of the first batch it read (when it read any), else an
  offset of the segment; the position is compared as ever.
* **Close leaves the active indexes as they were** (:attr:`Rules.close_keeps_indexes`, at ``end`` only).  Kafka
  4's ``LogSegment.close`` neither appends the time index's last entry nor trims the indexes (``AbstractIndex.close``
  only unmaps them): Kafka's ``.index``/``.timeindex`` may be longer than kafkalog's (zeros, or stale entries a
  truncation left, beyond it), and kafkalog's ``.timeindex`` may end with one entry where Kafka's has zeros.
"""

from __future__ import annotations

import base64
import errno
import hashlib
import os
import struct
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from kafkalog.record import MemoryRecords
from kafkalog.record.compression import decompress

__all__ = [
    "RULES_3_9",
    "DirComparison",
    "Difference",
    "LogMatch",
    "compare_answers",
    "compare_dirs",
    "compare_entries",
    "producer_payload",
    "Rules",
    "rules_for",
]

_T = TypeVar("_T")


@dataclass(frozen=True)
class Rules:
    """The comparison rules that depend on the Kafka line (see the module docstring)."""

    #: Kafka's read answers the base offset of the batch holding the fetch offset as ``messageOffset`` (4.x).
    read_names_batch: bool = False
    #: Kafka's close leaves the active segment's index files untrimmed and the last time-index entry unwritten (4.x).
    close_keeps_indexes: bool = False
    #: A log start offset moved into an open transaction's batch sets Kafka's first unstable offset to the batch's
    #: base offset (4.x).
    unstable_offset_names_batch: bool = False


RULES_3_9 = Rules()


def rules_for(kafka: str) -> Rules:
    """The rules of a scenario's Kafka line (``"3.9"``: none; ``"4"``: the two 4.x changes)."""
    return RULES_3_9 if kafka == "3.9" else Rules(read_names_batch=True, close_keeps_indexes=True,
                                                  unstable_offset_names_batch=True)


#: Result keys that a Kafka version may lack (``LogAppendInfo`` has changed between releases): compared only
#: when both answers carry them.
VERSION_DEPENDENT_KEYS = frozenset({"errorMessage", "shallowOffsetOfMaxTimestamp", "shallowCount"})

_LOG_OVERHEAD = 12  # offset (int64) and size (int32) before every entry
_MIN_ENTRY_SIZE = 14  # the smallest entry a v0 message can be, past the 12-byte overhead
_V2_HEADER = struct.Struct(">qiibIhiqqqhii")
_V2_FIELDS = ("baseOffset", "batchLength", "partitionLeaderEpoch", "magic", "crc", "attributes", "lastOffsetDelta",
              "baseTimestamp", "maxTimestamp", "producerId", "producerEpoch", "baseSequence", "recordCount")
_V2_RUNTIME_FIELDS = frozenset({"batchLength", "crc"})


@dataclass(frozen=True)
class Difference:
    """The first difference found: what differed (``kind``: ``result``, ``error``, ``state`` or ``file``), where
    (``path``: the field's JSON path, or the file's name), both sides' values, and for a file the byte offset
    (Kafka's file; ``kafkalog_offset`` when kafkalog's differs because batches before it had other sizes)."""

    kind: str
    path: str
    kafka: Any = None
    kafkalog: Any = None
    byte_offset: int | None = None
    kafkalog_offset: int | None = None
    detail: str = ""

    def describe(self) -> str:
        where = self.path
        if self.byte_offset is not None:
            where += f" at byte {self.byte_offset}"
            if self.kafkalog_offset is not None and self.kafkalog_offset != self.byte_offset:
                where += f" (kafkalog's byte {self.kafkalog_offset})"
        text = f"{self.kind} differs: {where}"
        if self.detail:
            text += f": {self.detail}"
        if self.kafka is not None or self.kafkalog is not None:
            text += f"\n    kafka:    {_short(self.kafka)}\n    kafkalog: {_short(self.kafkalog)}"
        return text


def _short(value: Any, limit: int = 400) -> str:
    text = value.hex(" ") if isinstance(value, bytes) else repr(value)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"


# ---------------------------------------------------------------------------------------------------------
# Entries (batches of any magic) in a run of bytes


@dataclass(frozen=True)
class _Entry:
    position: int
    size: int  # with the 12-byte overhead


def _entries(data: bytes) -> tuple[list[_Entry], int]:
    """The whole entries of ``data`` by their framing alone (offset, size), and where the rest begins (a torn
    tail, zeros of a preallocated file)."""
    entries = []
    position = 0
    while position + _LOG_OVERHEAD <= len(data):
        (size,) = struct.unpack_from(">i", data, position + 8)
        if size < _MIN_ENTRY_SIZE or position + _LOG_OVERHEAD + size > len(data):
            break
        entries.append(_Entry(position, _LOG_OVERHEAD + size))
        position += _LOG_OVERHEAD + size
    return entries, position


def _magic(entry: bytes) -> int:
    return entry[16] if len(entry) > 16 else -1


def _codec(entry: bytes) -> int:
    """The compression codec of an entry (its attributes' low three bits)."""
    magic = _magic(entry)
    if magic >= 2:
        return entry[22] & 0x07 if len(entry) > 22 else 0
    return entry[17] & 0x07 if len(entry) > 17 else 0


def producer_payload(entry: bytes, offset: int | None = None) -> bytes | None:
    """The digest of an entry's compressed payload (v2: the records section; v0/v1: from the wrapper's key on),
    which a log that keeps the producer's compression keeps unchanged, with the entry's offset (v2: its base
    offset; v0/v1: the wrapper's, its last), or ``offset`` in its place: two batches of the same records compress
    alike, and only the one at the offsets the producer's append got is the producer's.  ``None`` for an
    uncompressed entry."""
    if _codec(entry) == 0:
        return None
    start = {0: 18, 1: 26}.get(_magic(entry), _V2_HEADER.size)
    at = entry[:8] if offset is None else struct.pack(">q", offset)
    return hashlib.sha256(entry[start:]).digest() + at


def producer_payloads(data: bytes, first_offset: int | None = None,
                      last_offset: int | None = None, leader: bool = False) -> set[bytes]:
    """The payload digests (:func:`producer_payload`) of every compressed entry of ``data``; an append's input
    gives the offsets its append got (``first_offset`` for a v2 batch's base, ``last_offset`` for a v0/v1
    wrapper's), since a leader assigns them.  A leader never keeps a v0 entry as it came (Kafka's
    ``LogValidator``: no in-place assignment to magic 0), so for a ``leader`` append v0 entries give none: Java
    recompressing the same records may well write the producer's very bytes, and that is no proof it kept them."""
    entries, _ = _entries(data)
    digests = set()
    for e in entries:
        entry = data[e.position:e.position + e.size]
        if leader and _magic(entry) == 0:
            continue
        offset = first_offset if _magic(entry) >= 2 else last_offset
        digest = producer_payload(entry, offset)
        if digest is not None:
            digests.add(digest)
    return digests


def _header_fields(entry: bytes) -> dict[str, int]:
    magic = _magic(entry)
    if magic >= 2 and len(entry) >= _V2_HEADER.size:
        return dict(zip(_V2_FIELDS, _V2_HEADER.unpack_from(entry), strict=True))
    fields = {"offset": struct.unpack_from(">q", entry)[0], "magic": magic, "attributes": entry[17]}
    if magic == 1 and len(entry) >= 26:
        fields["timestamp"] = struct.unpack_from(">q", entry, 18)[0]
    return fields


def _decoded_records(entry: bytes) -> list[tuple[Any, ...]]:
    batch = next(MemoryRecords(entry).batches())
    return [(r.offset, r.timestamp, r.key, r.value, tuple(r.headers)) for r in batch.records(check_crcs=False)]


def _legacy_inner(entry: bytes) -> bytes:
    """A v0/v1 wrapper's inner messages, decompressed: uncompressed messages, which the runtime does not shape."""
    magic = _magic(entry)
    at = 18 if magic == 0 else 26
    (key_size,) = struct.unpack_from(">i", entry, at)
    at += 4 + max(key_size, 0)
    (value_size,) = struct.unpack_from(">i", entry, at)
    value = entry[at + 4:at + 4 + max(value_size, 0)]
    return decompress(_codec(entry), value, magic=magic, max_size=1 << 30)



def _decode_both(decode: Callable[[bytes], _T], kafka: bytes, kafkalog: bytes, failure: str) -> tuple[_T, _T] | str:
    """``decode`` of each side's batch, or what failed (``"kafka's <failure>: <error>"``): a batch one side wrote
    that does not decode is itself the difference."""
    results: list[_T] = []
    for side, data in (("kafka", kafka), ("kafkalog", kafkalog)):
        try:
            results.append(decode(data))
        except Exception as e:
            return f"{side}'s {failure}: {e}"
    return results[0], results[1]

def _decoded_difference(kafka: bytes, kafkalog: bytes) -> str | None:
    """Why two recompressed entries differ once decoded (header field or record; for a v0/v1 wrapper, also its
    inner messages' bytes, which hold what a decoded record does not show, like an inner timestamp a LogAppendTime
    wrapper overrides), or ``None`` when they do not."""
    kafka_fields, kafkalog_fields = _header_fields(kafka), _header_fields(kafkalog)
    for name, value in kafka_fields.items():
        if name in _V2_RUNTIME_FIELDS:
            continue
        if kafkalog_fields.get(name) != value:
            return f"batch header field {name}: kafka {value}, kafkalog {kafkalog_fields.get(name)}"
    if _magic(kafka) in (0, 1):
        inners = _decode_both(_legacy_inner, kafka, kafkalog, "wrapper does not decompress")
        if isinstance(inners, str):
            return inners
        kafka_inner, kafkalog_inner = inners
        if kafka_inner != kafkalog_inner:
            at = _first_difference(kafka_inner, kafkalog_inner)
            return (f"the wrapper's inner messages, decompressed, at byte {at}: kafka "
                    f"{kafka_inner[at:at + 16].hex(' ')}, kafkalog {kafkalog_inner[at:at + 16].hex(' ')}")
    decoded = _decode_both(_decoded_records, kafka, kafkalog, "batch does not decode")
    if isinstance(decoded, str):
        return decoded
    kafka_records, kafkalog_records = decoded
    for i, (a, b) in enumerate(zip(kafka_records, kafkalog_records, strict=False)):
        if a != b:
            return f"record {i} (offset, timestamp, key, value, headers): kafka {a}, kafkalog {b}"
    if len(kafka_records) != len(kafkalog_records):
        return f"record count: kafka {len(kafka_records)}, kafkalog {len(kafkalog_records)}"
    return None


def _first_difference(a: bytes, b: bytes) -> int:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return min(len(a), len(b))


@dataclass
class LogMatch:
    """How two runs of entries (two ``.log`` files, two reads) correspond: the start of every entry and the end,
    on each side, and whether any entry compared decoded with another size (``resized``)."""

    kafka_positions: list[int] = field(default_factory=list)
    kafkalog_positions: list[int] = field(default_factory=list)
    resized: bool = False
    #: The entries (by index) that were compared decoded: recompressed batches.
    recompressed: set[int] = field(default_factory=set)
    #: Kafka's v2 batches, as (base offset, last offset), in file order.
    kafka_batches: list[tuple[int, int]] = field(default_factory=list)

    def equivalent(self, kafka_position: int, kafkalog_position: int) -> bool:
        """Whether the two positions are the same place: the start of the same entry (by its index), or both
        the end; a position at no entry boundary on either side is compared as it is."""
        if not self.resized:
            return kafka_position == kafkalog_position
        kafka_index = _index_of(self.kafka_positions, kafka_position)
        kafkalog_index = _index_of(self.kafkalog_positions, kafkalog_position)
        if kafka_index is None and kafkalog_index is None:
            return kafka_position == kafkalog_position
        return kafka_index == kafkalog_index


def _v2_batches(data: bytes, entries: list[_Entry]) -> list[tuple[int, int]]:
    """The (base offset, last offset) of every v2 batch among ``entries`` of ``data``."""
    batches = []
    for e in entries:
        if e.size >= _V2_HEADER.size and data[e.position + 16] >= 2:
            (base,) = struct.unpack_from(">q", data, e.position)
            (delta,) = struct.unpack_from(">i", data, e.position + 23)
            batches.append((base, base + delta))
    return batches


def _index_of(positions: list[int], position: int) -> int | None:
    try:
        return positions.index(position)
    except ValueError:
        return None


Digests = set[bytes] | frozenset[bytes]


def compare_entries(kafka: bytes, kafkalog: bytes, path: str, producer_digests: Digests = frozenset(),
                    cut_recompressed: Callable[[int, int], bool] | None = None,
                    cut_read: bool = False) -> tuple[Difference | None, LogMatch]:
    """Compare two runs of entries (a segment's ``.log``, a read's records) entry by entry, with the rule for
    recompressed batches (the module docstring).  ``cut_recompressed(kafka_end, kafkalog_end)`` tells whether the
    bytes after the last whole entry (a read's cut last batch) begin a recompressed batch, which is then not
    compared (its bytes are the compression library's, and cut it cannot be decoded).  ``cut_read``: the two runs
    are reads of the same size limit, so once a whole entry before the cut one was resized, the cut one is cut at
    another byte of it: the two cut parts are then compared as far as the shorter goes."""
    match = LogMatch()
    if kafka == kafkalog:
        entries, end = _entries(kafka)
        match.kafka_positions = [e.position for e in entries] + [end]
        match.kafkalog_positions = list(match.kafka_positions)
        match.kafka_batches = _v2_batches(kafka, entries)
        return None, match
    kafka_entries, kafka_end = _entries(kafka)
    kafkalog_entries, kafkalog_end = _entries(kafkalog)
    match.kafka_batches = _v2_batches(kafka, kafka_entries)
    match.kafka_positions = [e.position for e in kafka_entries] + [kafka_end]
    match.kafkalog_positions = [e.position for e in kafkalog_entries] + [kafkalog_end]
    for i, (a, b) in enumerate(zip(kafka_entries, kafkalog_entries, strict=False)):
        kafka_bytes = kafka[a.position:a.position + a.size]
        kafkalog_bytes = kafkalog[b.position:b.position + b.size]
        if kafka_bytes == kafkalog_bytes:
            continue
        recompressed = (_codec(kafka_bytes) != 0 and _codec(kafka_bytes) == _codec(kafkalog_bytes)
                        and _magic(kafka_bytes) == _magic(kafkalog_bytes)
                        and producer_payload(kafka_bytes) not in producer_digests)
        if recompressed:
            why = _decoded_difference(kafka_bytes, kafkalog_bytes)
            if why is None:
                match.resized |= a.size != b.size
                match.recompressed.add(i)
                continue
            return Difference("file", path, byte_offset=a.position, kafkalog_offset=b.position,
                              detail=f"entry {i} (recompressed, compared decoded): {why}"), match
        at = _first_difference(kafka_bytes, kafkalog_bytes)
        return Difference("file", path, kafka_bytes[max(0, at - 8):at + 24], kafkalog_bytes[max(0, at - 8):at + 24],
                          byte_offset=a.position + at, kafkalog_offset=b.position + at,
                          detail=f"entry {i} ({_describe_entry(kafka_bytes, at)}); bytes from {max(0, at - 8)} of "
                                 "the entry"), match
    if len(kafka_entries) != len(kafkalog_entries):
        n = min(len(kafka_entries), len(kafkalog_entries))
        return Difference("file", path, len(kafka_entries), len(kafkalog_entries),
                          byte_offset=match.kafka_positions[n], kafkalog_offset=match.kafkalog_positions[n],
                          detail=f"entry {n}: one side has {abs(len(kafka_entries) - len(kafkalog_entries))} more "
                                 "entries (kafka, kafkalog: number of entries)"), match
    kafka_tail, kafkalog_tail = kafka[kafka_end:], kafkalog[kafkalog_end:]
    shorter = min(len(kafka_tail), len(kafkalog_tail))
    cut_elsewhere = (cut_read and match.resized and shorter > 0 and len(kafka) == len(kafkalog)
                     and kafka_tail[:shorter] == kafkalog_tail[:shorter])
    if kafka_tail != kafkalog_tail and not cut_elsewhere and not (
            cut_recompressed is not None and kafka_tail and kafkalog_tail
            and cut_recompressed(kafka_end, kafkalog_end)):
        at = _first_difference(kafka_tail, kafkalog_tail)
        return Difference("file", path, kafka_tail[at:at + 32], kafkalog_tail[at:at + 32],
                          byte_offset=kafka_end + at, kafkalog_offset=kafkalog_end + at,
                          detail=f"the bytes after the last whole entry ({len(kafka_tail)} and {len(kafkalog_tail)} "
                                 "bytes)"), match
    return None, match


def _describe_entry(entry: bytes, at: int) -> str:
    """The header field of an entry that byte ``at`` belongs to, or where in the entry it is."""
    magic = _magic(entry)
    if magic >= 2:
        layout = [(0, 8, "baseOffset"), (8, 12, "batchLength"), (12, 16, "partitionLeaderEpoch"), (16, 17, "magic"),
                  (17, 21, "crc"), (21, 23, "attributes"), (23, 27, "lastOffsetDelta"), (27, 35, "baseTimestamp"),
                  (35, 43, "maxTimestamp"), (43, 51, "producerId"), (51, 53, "producerEpoch"),
                  (53, 57, "baseSequence"), (57, 61, "recordCount")]
    else:
        layout = [(0, 8, "offset"), (8, 12, "size"), (12, 16, "crc"), (16, 17, "magic"), (17, 18, "attributes")]
        if magic == 1:
            layout.append((18, 26, "timestamp"))
    for start, end, name in layout:
        if start <= at < end:
            return f"magic {magic}, field {name}"
    return f"magic {magic}, the records, byte {at} of the entry"


# ---------------------------------------------------------------------------------------------------------
# Directories


@dataclass
class DirComparison:
    """Two partition directories compared: the first difference (``None``: the same), and how each pair of
    ``.log`` files corresponds (by file name), for the positions and sizes the answers carry."""

    difference: Difference | None = None
    logs: dict[str, LogMatch] = field(default_factory=dict)
    sizes: dict[str, tuple[int, int]] = field(default_factory=dict)

    @property
    def resized(self) -> bool:
        return any(match.resized for match in self.logs.values())

    def segment(self, base_offset: int) -> LogMatch | None:
        return self.logs.get(f"{base_offset:020d}.log")


def _files(directory: Path) -> dict[str, Path]:
    if not directory.is_dir():
        return {}
    return {p.name: p for p in directory.iterdir()}


def _kind(name: str) -> str:
    """``log``, ``index``, ``timeindex`` or ``other`` for a segment file, whatever suffix follows (``.deleted``,
    ``.cleaned``, ``.swap``)."""
    parts = name.split(".")
    return parts[1] if len(parts) >= 2 and parts[0].isdigit() and parts[1] in ("log", "index", "timeindex") else "other"


def read_image(path: Path) -> tuple[int, bytes]:
    """A file's size and its bytes up to the end of its last data extent: the rest is a hole, zeros.  An active
    segment's index files are preallocated sparse (10 MiB by default) on both sides, so the holes are skipped
    (``SEEK_DATA``/``SEEK_HOLE``) rather than read; a file system without them is read whole."""
    with path.open("rb") as f:
        fd = f.fileno()
        size = os.fstat(fd).st_size
        extents: list[tuple[int, int]] = []
        position = 0
        try:
            while position < size:
                try:
                    start = os.lseek(fd, position, os.SEEK_DATA)
                except OSError as e:
                    if e.errno == errno.ENXIO:  # no data past position: a hole to the end
                        break
                    raise
                position = os.lseek(fd, start, os.SEEK_HOLE)
                extents.append((start, position))
        except OSError:
            return size, f.read()
        if not extents:
            return size, b""
        end = extents[-1][1]
        image = bytearray(end)
        for start, stop in extents:
            f.seek(start)
            image[start:stop] = f.read(stop - start)
        return size, bytes(image)


def _contents(kafka: tuple[int, bytes], kafkalog: tuple[int, bytes]) -> tuple[bytes, bytes]:
    """The two images padded with the zeros their files hold, to the same length where the files allow."""
    length = max(len(kafka[1]), len(kafkalog[1]))
    return (kafka[1] + bytes(min(kafka[0], length) - len(kafka[1])),
            kafkalog[1] + bytes(min(kafkalog[0], length) - len(kafkalog[1])))


def compare_dirs(kafka_dir: Path, kafkalog_dir: Path,
                 producer_digests: set[bytes] | frozenset[bytes] = frozenset(), *,
                 closed_untrimmed: bool = False,
                 earlier: Mapping[str, list[LogMatch]] | None = None,
                 truncated_reopened: bool = False, closed: bool = False) -> DirComparison:
    """Compare every file of the two partition directories (see the module docstring): names first, then bytes,
    ``.log`` files entry by entry, ``.index`` files entry by entry with positions through their ``.log``'s entries.
    ``closed_untrimmed``: Kafka's log was just closed by a version whose close leaves the indexes as they were
    (:attr:`Rules.close_keeps_indexes`).  ``earlier``: the resized correspondences each ``.log`` had after earlier
    requests of the scenario (the driver keeps them), for the stale index entries a truncation leaves.
    ``truncated_reopened``: the scenario truncated a log reopened from disk (kafkalog's deliberate deviation in
    ``LogSegment.truncate_to``, :func:`_lost_largest_timestamp`).  ``closed``: both logs were just closed (``end``):
    kafkalog's close deletes the files waiting for their deletion task, where Kafka's leaves them ``.deleted`` for
    the next start (kafkalog's deliberate deviation, :mod:`kafkalog.log.pending_deletions`), so Kafka's ``.deleted``
    files are not compared, and any left in kafkalog's dir is a difference."""
    earlier = earlier if earlier is not None else {}
    result = DirComparison()
    kafka_files, kafkalog_files = _files(kafka_dir), _files(kafkalog_dir)
    if closed:
        kafka_files = {name: path for name, path in kafka_files.items() if not name.endswith(".deleted")}
    only = sorted(set(kafka_files) ^ set(kafkalog_files))
    if only:
        side = "kafka" if only[0] in kafka_files else "kafkalog"
        result.difference = Difference("file", only[0], sorted(kafka_files), sorted(kafkalog_files),
                                       detail=f"only {side} has this file (kafka, kafkalog: the files)")
    # Logs first: the index comparison needs their entries.
    names = sorted(set(kafka_files) & set(kafkalog_files), key=lambda n: (_kind(n) != "log", n))
    for name in names:
        kafka_path, kafkalog_path = kafka_files[name], kafkalog_files[name]
        if kafka_path.is_dir() or kafkalog_path.is_dir():
            if result.difference is None and kafka_path.is_dir() != kafkalog_path.is_dir():
                result.difference = Difference("file", name, detail="a directory on one side only")
            continue
        kafka_image, kafkalog_image = read_image(kafka_path), read_image(kafkalog_path)
        kind = _kind(name)
        if closed_untrimmed and kind in ("index", "timeindex"):
            kafka_image = _untrimmed(kafka_image, kafkalog_image, kind)
        result.sizes[name] = (kafka_image[0], kafkalog_image[0])
        kafka_bytes, kafkalog_bytes = _contents(kafka_image, kafkalog_image)
        difference: Difference | None = None
        if kind == "log":
            difference, match = compare_entries(kafka_bytes, kafkalog_bytes, name, producer_digests)
            result.logs[name] = match
        elif kind == "index" and (kafka_bytes != kafkalog_bytes or _log_of(result, name).resized):
            # Equal bytes are not enough once the log was resized: the positions must move with the batches.
            log_name = name.replace(".index", ".log", 1)
            difference = _compare_offset_index(kafka_bytes, kafkalog_bytes, name, _log_of(result, name),
                                               earlier.get(log_name, []))
        elif (kind == "timeindex" and truncated_reopened and name.endswith(".timeindex")
              and _lost_largest_timestamp(kafka_image, kafkalog_image)):
            kafka_image = kafkalog_image
        elif kind == "other" and name.endswith(".snapshot") and _stale_snapshot_tail(kafka_image, kafkalog_image):
            # kafkalog's deliberate deviation: Kafka rewrites a snapshot file without truncating it.
            kafka_image = kafkalog_image
        elif kafka_bytes != kafkalog_bytes:
            at = _first_difference(kafka_bytes, kafkalog_bytes)
            difference = Difference("file", name, kafka_bytes[at:at + 32], kafkalog_bytes[at:at + 32],
                                    byte_offset=at, detail=f"sizes {kafka_image[0]} and {kafkalog_image[0]}")
        if difference is None and kafka_image[0] != kafkalog_image[0] and not (
                kind == "log" and result.logs[name].resized):
            difference = Difference("file", name, kafka_image[0], kafkalog_image[0], byte_offset=min(
                kafka_image[0], kafkalog_image[0]), detail="the same bytes, but the sizes differ (kafka, kafkalog: "
                                                          "sizes)")
        if result.difference is None:
            result.difference = difference
    return result


def _lost_largest_timestamp(kafka: tuple[int, bytes], kafkalog: tuple[int, bytes]) -> bool:
    """Whether Kafka's ``.timeindex`` is kafkalog's without its last entry, which is a larger timestamp than
    any Kafka's holds: kafkalog's deliberate deviation in ``LogSegment.truncate_to`` (the segment walkthrough,
    "Truncation and the largest timestamp").  Kafka asks whether the segment knows a largest timestamp only
    after cutting the time index, so a segment reopened from disk whose time index the truncation emptied
    forgets the timestamps of the batches it keeps, and its roll writes no entry where kafkalog's writes one."""
    (kafka_size, kafka_bytes), (kafkalog_size, kafkalog_bytes) = kafka, kafkalog
    entry = 12
    if kafkalog_size != kafka_size + entry or len(kafkalog_bytes) != kafkalog_size or kafka_size % entry:
        return False
    if kafkalog_bytes[:kafka_size] != kafka_bytes[:kafka_size].ljust(kafka_size, b"\0"):
        return False
    (last_timestamp,) = struct.unpack_from(">q", kafkalog_bytes, kafka_size)
    return all(struct.unpack_from(">q", kafka_bytes, i)[0] < last_timestamp for i in range(0, kafka_size, entry))


def _stale_snapshot_tail(kafka: tuple[int, bytes], kafkalog: tuple[int, bytes]) -> bool:
    """Whether Kafka's producer snapshot is kafkalog's followed by the tail of a longer snapshot written there
    before: Kafka's ``writeSnapshot`` opens the file with ``CREATE, WRITE`` and no ``TRUNCATE_EXISTING``, so a
    snapshot written again at the same offset (a load of an old message format after a clean close) over a
    longer one keeps that one's tail; kafkalog truncates the file (its deliberate deviation,
    :func:`kafkalog.producer_state.snapshot.write_snapshot_rows`).  Only that: kafkalog's whole file must be the
    start of Kafka's."""
    (kafka_size, kafka_bytes), (kafkalog_size, kafkalog_bytes) = kafka, kafkalog
    return (kafka_size > kafkalog_size and len(kafkalog_bytes) == kafkalog_size
            and kafka_bytes[:kafkalog_size] == kafkalog_bytes)


def _untrimmed(kafka: tuple[int, bytes], kafkalog: tuple[int, bytes], kind: str) -> tuple[int, bytes]:
    """Kafka's image of an index file a 4.x close left as it was, cut to kafkalog's trimmed size: what is cut is
    the preallocated rest, zeros or the stale entries a truncation left behind its valid ones (the whole file
    was compared before the close); a ``.timeindex`` may also lack the one last entry a 3.9 close appends,
    which is then taken as kafkalog's.  Anything else is left for the comparison to show."""
    (kafka_size, kafka_bytes), (kafkalog_size, kafkalog_bytes) = kafka, kafkalog
    if kafka_size < kafkalog_size:
        return kafka
    cut = kafka_bytes[:kafkalog_size].ljust(kafkalog_size, b"\0")
    entry = 12
    if (kind == "timeindex" and cut != kafkalog_bytes and kafkalog_size >= entry
            and cut[:-entry] == kafkalog_bytes[:-entry]):
        # Where kafkalog's close wrote its last entry, Kafka's file holds zeros or a stale entry.
        cut = kafkalog_bytes
    return kafkalog_size, cut


def _log_of(result: DirComparison, index_name: str) -> LogMatch:
    return result.logs.get(index_name.replace(".index", ".log", 1), LogMatch())


def _compare_offset_index(kafka: bytes, kafkalog: bytes, name: str, match: LogMatch,
                          earlier: Sequence[LogMatch] = ()) -> Difference | None:
    """Two ``.index`` files: entry by entry (relative offset, position), positions compared through their
    ``.log``'s entries when a batch there was resized, else byte for byte.  A truncation leaves the entries past
    the new end in the file (only the count of valid entries, which is not on disk, goes back): such a stale
    entry, whose position is the start of no entry of the ``.log`` now on either side, is compared through the
    ``earlier`` correspondences of that ``.log``, when it was written."""
    if len(kafka) == len(kafkalog) and (match.resized or earlier) and len(kafka) % 8 == 0:
        for i in range(0, len(kafka), 8):
            kafka_offset, kafka_position = struct.unpack_from(">ii", kafka, i)
            kafkalog_offset, kafkalog_position = struct.unpack_from(">ii", kafkalog, i)
            stale = (kafka_position not in match.kafka_positions
                     and kafkalog_position not in match.kafkalog_positions)
            same_place = match.equivalent(kafka_position, kafkalog_position) or (
                stale and any(m.equivalent(kafka_position, kafkalog_position) for m in earlier))
            if kafka_offset != kafkalog_offset or not same_place:
                return Difference("file", name, (kafka_offset, kafka_position), (kafkalog_offset, kafkalog_position),
                                  byte_offset=i, detail=f"index entry {i // 8} (relative offset, position); the "
                                                        "positions compared through the batches they point at")
        return None
    at = _first_difference(kafka, kafkalog)
    return Difference("file", name, kafka[at:at + 32], kafkalog[at:at + 32], byte_offset=at,
                      detail=f"sizes {len(kafka)} and {len(kafkalog)}")


# ---------------------------------------------------------------------------------------------------------
# Answers


def _walk(kafka: Any, kafkalog: Any, path: str) -> Iterator[tuple[str, Any, Any]]:
    """The leaves of two JSON values that differ, as (path, kafka's, kafkalog's); a missing key is ``...``."""
    if isinstance(kafka, dict) and isinstance(kafkalog, dict):
        for key in list(kafka) + [k for k in kafkalog if k not in kafka]:
            a, b = kafka.get(key, ...), kafkalog.get(key, ...)
            if key in VERSION_DEPENDENT_KEYS and (a is ... or b is ...):
                continue
            yield from _walk(a, b, f"{path}.{key}")
    elif isinstance(kafka, list) and isinstance(kafkalog, list) and len(kafka) == len(kafkalog):
        for i, (a, b) in enumerate(zip(kafka, kafkalog, strict=True)):
            yield from _walk(a, b, f"{path}[{i}]")
    elif type(kafka) is not type(kafkalog) or kafka != kafkalog:
        yield path, kafka, kafkalog


def compare_answers(kafka: dict[str, Any], kafkalog: dict[str, Any], dirs: DirComparison | None = None, *,
                    resized_before: bool = False, producer_digests: Iterable[bytes] = (),
                    rules: Rules = RULES_3_9) -> Difference | None:
    """Compare two answers to one request: the error class or the result, then the state (the module docstring's
    rules; ``dirs`` gives the correspondence of positions in the segments, ``resized_before`` whether a batch of
    this scenario was compared decoded with another size before, ``rules`` the Kafka line's)."""
    dirs = dirs if dirs is not None else DirComparison()
    resized = resized_before or dirs.resized
    if "error" in kafka or "error" in kafkalog:
        kafka_class = kafka.get("error", {}).get("class")
        kafkalog_class = kafkalog.get("error", {}).get("class")
        if kafka_class != kafkalog_class:
            return Difference("error", "error.class", kafka.get("error", kafka.get("result")),
                              kafkalog.get("error", kafkalog.get("result")),
                              detail="one side threw where the other did not, or another exception")
    elif "result" in kafka or "result" in kafkalog:
        difference = _compare_result(kafka.get("result"), kafkalog.get("result"), dirs, resized,
                                     frozenset(producer_digests), rules)
        if difference is not None:
            return difference
    return _compare_state(kafka.get("state"), kafkalog.get("state"), dirs, rules)


def _compare_result(kafka: Any, kafkalog: Any, dirs: DirComparison, resized: bool,
                    producer_digests: frozenset[bytes], rules: Rules = RULES_3_9) -> Difference | None:
    if isinstance(kafka, dict) and isinstance(kafkalog, dict):
        kafka, kafkalog = dict(kafka), dict(kafkalog)
        if "records" in kafka and "records" in kafkalog and "fetchOffsetMetadata" in kafka:
            straddled = _straddled_limit(kafka, kafkalog, dirs)
            difference = _compare_read(kafka, kafkalog, dirs, producer_digests, rules, straddled)
            if difference is not None:
                return difference
            keys = ["records", "fetchOffsetMetadata"]
            if straddled is not None and straddled[2]:
                keys.append("firstEntryIncomplete")  # the straddling batch is the first: whole on one side only
            for key in keys:
                kafka.pop(key, None)
                kafkalog.pop(key, None)
        if resized and "bytesWritten" in kafka:
            for key in ("bytesRead", "bytesWritten"):
                kafka.pop(key, None)
                kafkalog.pop(key, None)
    for path, a, b in _walk(kafka, kafkalog, "result"):
        return Difference("result", path, a, b)
    return None


def _names_batch(kafka_offset: Any, kafkalog_offset: Any, segment_base: Any, kafka_records: bytes) -> bool:
    """Kafka 4's ``messageOffset`` of a read (:attr:`Rules.read_names_batch`): the base offset of the first batch
    it read, or, having read nothing, an offset in the segment (the batch's, which the position then names)."""
    if not all(isinstance(v, int) for v in (kafka_offset, kafkalog_offset, segment_base)):
        return False
    if len(kafka_records) > 16 and _magic(kafka_records) == 2:
        # Past the log start offset the batch found may begin after the fetch offset: it is the first one read.
        return bool(kafka_offset == struct.unpack_from(">q", kafka_records, 0)[0])
    # Nothing read: the batch is named by the position, compared next.
    return bool(segment_base <= kafka_offset)


def _read_segment(kafka: dict[str, Any], kafkalog: dict[str, Any],
                  dirs: DirComparison) -> tuple[LogMatch, int, int] | None:
    """The segment a read started in (by Kafka's ``fetchOffsetMetadata``) and each side's position there;
    ``None`` when either answer does not say, or the segment is not one both dirs hold."""
    a, b = kafka.get("fetchOffsetMetadata"), kafkalog.get("fetchOffsetMetadata")
    if not isinstance(a, dict) or not isinstance(b, dict) or not isinstance(a.get("segmentBaseOffset"), int):
        return None
    match = dirs.segment(a["segmentBaseOffset"])
    start_a, start_b = a.get("relativePositionInSegment"), b.get("relativePositionInSegment")
    if match is None or not isinstance(start_a, int) or not isinstance(start_b, int):
        return None
    return match, start_a, start_b


def _straddled_limit(kafka: dict[str, Any], kafkalog: dict[str, Any],
                     dirs: DirComparison) -> tuple[int, int, bool] | None:
    """A read whose size limit falls inside a recompressed batch on one side and past its end on the other (its
    size is the compression library's): the length of each side's read before that batch, and whether it is the
    read's first batch; ``None`` when that is not so.  It is so when one read holds one more whole entry than the
    other, that entry and the other side's cut part are the same entry of the segment (by index), recompressed
    (compared decoded in the segment), and the cut part is the rest of the read; past the whole entry, that
    side may have read the first bytes of the segment's next batch (the same limit cuts there), which the other
    side has no counterpart of and are not compared."""
    read_from = _read_segment(kafka, kafkalog, dirs)
    if read_from is None:
        return None
    match, start_a, start_b = read_from
    try:
        reads = (base64.b64decode(kafka["records"]), base64.b64decode(kafkalog["records"]))
    except (TypeError, ValueError):
        return None
    (kafka_entries, kafka_end), (kafkalog_entries, kafkalog_end) = _entries(reads[0]), _entries(reads[1])
    if len(kafka_entries) == len(kafkalog_entries) + 1 and kafkalog_end < len(reads[1]):
        kafka_before, kafkalog_before = kafka_entries[-1].position, kafkalog_end
        whole_positions, whole_start, whole_end = match.kafka_positions, start_a, kafka_end
        whole_cut = kafka_end < len(reads[0])
    elif len(kafkalog_entries) == len(kafka_entries) + 1 and kafka_end < len(reads[0]):
        kafka_before, kafkalog_before = kafka_end, kafkalog_entries[-1].position
        whole_positions, whole_start, whole_end = match.kafkalog_positions, start_b, kafkalog_end
        whole_cut = kafkalog_end < len(reads[1])
    else:
        return None
    index = _index_of(match.kafka_positions, start_a + kafka_before)
    if index is None or index not in match.recompressed or index != _index_of(match.kafkalog_positions,
                                                                                 start_b + kafkalog_before):
        return None
    if whole_cut and _index_of(whole_positions, whole_start + whole_end) != index + 1:
        # What the whole side read past that batch must be the first bytes of the segment's next batch.
        return None
    return kafka_before, kafkalog_before, kafka_before == 0


def _compare_read(kafka: dict[str, Any], kafkalog: dict[str, Any], dirs: DirComparison,
                  producer_digests: frozenset[bytes], rules: Rules = RULES_3_9,
                  straddled: tuple[int, int, bool] | None = None) -> Difference | None:
    kafka_bytes = base64.b64decode(kafka["records"])
    kafkalog_bytes = base64.b64decode(kafkalog["records"])
    if straddled is not None:
        # The batch at the limit is not compared (whole on one side, cut on the other); what precedes it is.
        kafka_bytes, kafkalog_bytes = kafka_bytes[:straddled[0]], kafkalog_bytes[:straddled[1]]

    def cut_recompressed(kafka_end: int, kafkalog_end: int) -> bool:
        """Whether the cut entry is, in the segment read, a recompressed batch on both sides (the same one)."""
        read_from = _read_segment(kafka, kafkalog, dirs)
        if read_from is None:
            return False
        match, start_a, start_b = read_from
        index = _index_of(match.kafka_positions, start_a + kafka_end)
        return (index is not None and index in match.recompressed
                and index == _index_of(match.kafkalog_positions, start_b + kafkalog_end))

    difference, _ = compare_entries(kafka_bytes, kafkalog_bytes, "result.records", producer_digests,
                                    cut_recompressed, cut_read=True)
    if difference is not None:
        return Difference("result", difference.path, difference.kafka, difference.kafkalog, difference.byte_offset,
                          difference.kafkalog_offset, f"the records read: {difference.detail}")
    a, b = kafka["fetchOffsetMetadata"], kafkalog.get("fetchOffsetMetadata")
    if not isinstance(b, dict):
        return Difference("result", "result.fetchOffsetMetadata", a, b)
    for key in ("messageOffset", "segmentBaseOffset"):
        if a.get(key) != b.get(key):
            if (key == "messageOffset" and rules.read_names_batch
                    and _names_batch(a.get(key), b.get(key), a.get("segmentBaseOffset"), kafka_bytes)):
                continue
            return Difference("result", f"result.fetchOffsetMetadata.{key}", a.get(key), b.get(key))
    position_a, position_b = a.get("relativePositionInSegment"), b.get("relativePositionInSegment")
    if position_a != position_b:
        match = dirs.segment(a["segmentBaseOffset"]) if isinstance(a.get("segmentBaseOffset"), int) else None
        if (match is None or not isinstance(position_a, int) or not isinstance(position_b, int)
                or not match.equivalent(position_a, position_b)):
            return Difference("result", "result.fetchOffsetMetadata.relativePositionInSegment", position_a,
                              position_b)
    return None


def _unstable_names_batch(kafka: dict[str, Any], kafkalog: dict[str, Any], dirs: DirComparison) -> bool:
    """Kafka 4's first unstable offset after the log start offset moved into an open transaction's batch
    (:attr:`Rules.unstable_offset_names_batch`): kafkalog's (3.9's) is the log start offset, inside a batch of
    Kafka's log, and Kafka's is that batch's base offset; each side's last stable offset is the lesser of its own
    first unstable offset and the high watermark."""
    kafka_first, kafkalog_first = kafka.get("firstUnstableOffset"), kafkalog.get("firstUnstableOffset")
    start, watermark = kafkalog.get("logStartOffset"), kafkalog.get("highWatermark")
    if not all(isinstance(v, int) for v in (kafka_first, kafkalog_first, start, watermark)):
        return False
    if kafkalog_first != start or kafka.get("logStartOffset") != start or kafka.get("highWatermark") != watermark:
        return False
    if (kafka.get("lastStableOffset") != min(kafka_first, watermark)
            or kafkalog.get("lastStableOffset") != min(kafkalog_first, watermark)):
        return False
    return any(base == kafka_first and base < kafkalog_first <= last
               for match in dirs.logs.values() for base, last in match.kafka_batches)


def _compare_state(kafka: Any, kafkalog: Any, dirs: DirComparison, rules: Rules = RULES_3_9) -> Difference | None:
    if not isinstance(kafka, dict) or not isinstance(kafkalog, dict):
        return Difference("state", "state", kafka, kafkalog) if kafka != kafkalog else None
    kafka, kafkalog = dict(kafka), dict(kafkalog)
    if (rules.unstable_offset_names_batch and kafka.get("firstUnstableOffset") != kafkalog.get("firstUnstableOffset")
            and _unstable_names_batch(kafka, kafkalog, dirs)):
        for key in ("firstUnstableOffset", "lastStableOffset"):
            kafka.pop(key, None)
            kafkalog.pop(key, None)
    segments_a, segments_b = kafka.pop("segments", None), kafkalog.pop("segments", None)
    for path, a, b in _walk(kafka, kafkalog, "state"):
        return Difference("state", path, a, b)
    if not isinstance(segments_a, list) or not isinstance(segments_b, list) or len(segments_a) != len(segments_b):
        return Difference("state", "state.segments", segments_a, segments_b) if segments_a != segments_b else None
    for i, (a, b) in enumerate(zip(segments_a, segments_b, strict=True)):
        if a == b:
            continue
        if isinstance(a, list) and isinstance(b, list) and len(a) == len(b) == 2 and a[0] == b[0]:
            name = f"{a[0]:020d}.log"
            sizes = dirs.sizes.get(name)
            if name in dirs.logs and dirs.logs[name].resized and sizes == (a[1], b[1]):
                continue
        return Difference("state", f"state.segments[{i}]", a, b, detail="[base offset, size in bytes]")
    return None

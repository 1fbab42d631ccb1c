"""Five of the reference's pictures, drawn as SVG at build time from logs that kafkalog writes.

- ``batch-layout.svg``: the bytes of one v2 batch as :class:`~kafkalog.log.unified_log.Log` wrote it to its ``.log``
  file, field by field (Kafka: ``DefaultRecordBatch.java`` and ``DefaultRecord.java``, clients 3.8.0);
- ``read-path.svg``: how ``Log.read`` finds an offset: the segment by base offset, the ``.index`` entry,
  then the batch headers from that byte position (Kafka: ``LogSegment.translateOffset``);
- ``recovery.svg``: a log opened after a crash, before and after ``LogLoader.recoverLog`` (its
  :class:`~kafkalog.log.loader.LoadReport`);
- ``transactions.svg``: a partition with an aborted, a committed and an open transaction, its last stable
  offset and high watermark, and what each isolation level reads;
- ``offsets.svg``: the four offsets of a partition (log start, last stable, high watermark, log end), what
  moves each, and which reader each one bounds.

Nothing is typed in: every number in a picture is read back from the files (or from kafkalog's answer
about them), and each drawing checks what it shows against kafkalog's own reading (``check`` raises when
they disagree, which stops the docs build).  The field layout of the batch is decoded here independently
of kafkalog's decoder, so that picture is a second reading of the bytes, not kafkalog's reading restated.
``kafkalog_figures`` draws them into ``docs/_generated/`` (not in git) with its matplotlib figures.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import math
import struct
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafkalog_svg import COLOURS, MARGIN, PADDING, Svg, text_width

from kafkalog.config.log_config import LogConfig
from kafkalog.errors import OffsetOutOfRangeError
from kafkalog.log import Log
from kafkalog.log.transactions import TransactionState, first_unstable_offset
from kafkalog.record import MemoryRecords
from kafkalog.record.types import ControlRecordType, EndTransactionMarker
from kafkalog.scheduler import MockTime

BASE_TIME = 1_700_000_000_000
DASH = "\u2013"  # an en dash, for ranges of offsets and bytes


def check(condition: bool, what: str) -> None:
    """Stop the build when a picture would show something kafkalog does not do."""
    if not condition:
        raise RuntimeError(f"kafkalog_pictures: {what}")


def _segment_batches(log: Log) -> list[tuple[int, list[tuple[int, int, int, int]]]]:
    """Per segment: its base offset and its batches as (position, size, base offset, last offset)."""
    out = []
    for segment in log.log_segments():
        rows = segment.log.scan().batches
        out.append((segment.base_offset, [(int(b["position"]), int(b["size"]), int(b["base_offset"]),
                                           int(b["last_offset"])) for b in rows]))
    return out


def _span(first: int, last: int) -> str:
    return str(first) if first == last else f"{first}{DASH}{last}"


# -- 1. the v2 batch, byte by byte ------------------------------------------------------------------------

@dataclass
class Field:
    start: int  # position in the batch
    raw: bytes
    name: str
    meaning: str
    group: str  # "header", "record 0", ...


def _varint(data: bytes, at: int) -> tuple[int, int]:
    """A zigzag varint (Kafka: ``ByteUtils.readVarint``/``readVarlong``) at ``at``: (value, its length)."""
    shift = result = 0
    n = 0
    while True:
        byte = data[at + n]
        result |= (byte & 0x7F) << shift
        n += 1
        if not byte & 0x80:
            break
        shift += 7
    return (result >> 1) ^ -(result & 1), n


def batch_fields(batch: bytes) -> list[Field]:
    """The fields of a v2 batch, uncompressed, decoded from ``batch`` (Kafka: ``DefaultRecordBatch`` header
    offsets; each record as ``DefaultRecord.writeTo`` lays it out)."""
    fields: list[Field] = []

    def fixed(at: int, size: int, fmt: str, name: str, say: Callable[[int], str]) -> int:
        (value,) = struct.unpack_from(fmt, batch, at)
        fields.append(Field(at, batch[at:at + size], name, say(value), "batch header (61 bytes)"))
        return int(value)

    fixed(0, 8, ">q", "baseOffset", lambda v: f"{v}: the first record's offset")
    length = fixed(8, 4, ">i", "batchLength", lambda v: f"{v}: the bytes after this field")
    fixed(12, 4, ">i", "partitionLeaderEpoch", lambda v: f"{v}: the leader's epoch")
    fixed(16, 1, ">b", "magic", lambda v: f"{v}: format v2")
    fixed(17, 4, ">I", "crc", lambda v: f"0x{v:08x}: CRC-32C, attributes to end")
    attrs = fixed(21, 2, ">h", "attributes",
                  lambda v: f"0x{v:04x}: codec {v & 7}, {'log-append' if v & 8 else 'create'} time"
                            f"{', transactional' if v & 16 else ''}{', control' if v & 32 else ''}")
    check(attrs & 7 == 0, "the layout picture needs an uncompressed batch")
    count_delta = fixed(23, 4, ">i", "lastOffsetDelta", lambda v: f"{v}: last offset = base + {v}")
    base_ts = fixed(27, 8, ">q", "baseTimestamp", lambda v: f"{v} ms")
    fixed(35, 8, ">q", "maxTimestamp", lambda v: f"{v} ms (base + {v - base_ts})")
    fixed(43, 8, ">q", "producerId", lambda v: f"{v}" + (" (none)" if v == -1 else ": an idempotent producer"))
    fixed(51, 2, ">h", "producerEpoch", lambda v: f"{v}")
    fixed(53, 4, ">i", "baseSequence", lambda v: f"{v}: the first record's sequence")
    count = fixed(57, 4, ">i", "recordsCount", lambda v: f"{v} records follow")
    check(count == count_delta + 1, "recordsCount and lastOffsetDelta disagree")
    check(length == len(batch) - 12, "batchLength is not the rest of the batch")
    at = 61
    for r in range(count):
        group = f"record {r}"

        def var(name: str, say: Callable[[int], str], group: str = group) -> int:
            nonlocal at
            value, n = _varint(batch, at)
            fields.append(Field(at, batch[at:at + n], name, say(value), group))
            at += n
            return value

        def blob(name: str, size: int, group: str = group) -> None:
            nonlocal at
            if size > 0:
                fields.append(Field(at, batch[at:at + size], name, repr(batch[at:at + size])[1:], group))
                at += size

        var("length", lambda v: f"{v}: the bytes after this varint")
        fields.append(Field(at, batch[at:at + 1], "attributes", "0: unused", group))
        at += 1
        var("timestampDelta", lambda v: f"{v}: baseTimestamp + {v}")
        var("offsetDelta", lambda v: f"{v}: baseOffset + {v}")
        blob("key", var("keyLength", lambda v: f"{v} (-1: a null key)"))
        blob("value", var("valueLength", lambda v: f"{v} (-1: null, a tombstone)"))
        for _h in range(var("headersCount", lambda v: f"{v}")):
            blob("header key", var("headerKeyLength", lambda v: f"{v}"))
            blob("header value", var("headerValueLength", lambda v: f"{v}"))
    check(at == len(batch), "the records do not end where the batch does")
    return fields


def _layout_batch() -> tuple[bytes, int, Any, list[Any]]:
    """A log with one batch before ours, then an idempotent producer's batch of two records (one with a
    header) appended by the leader: the batch's bytes from the ``.log`` file, its position, and kafkalog's
    own reading of it (the batch, its records)."""
    with tempfile.TemporaryDirectory() as tmp, Log(Path(tmp) / "orders-0", LogConfig(), time=MockTime()) as log:
        log.append_as_leader(MemoryRecords.with_records([(b"k", b"earlier", BASE_TIME - 5)] * 3), leader_epoch=4)
        records: list[Any] = [(b"order-7", b"created", BASE_TIME, [("trace", b"t-42")]),
                              (b"order-7", b"paid", BASE_TIME + 1500)]
        log.append_as_leader(MemoryRecords.with_records(records, producer_id=4001, producer_epoch=0,
                                                        base_sequence=0), leader_epoch=4)
        (_base, batches), = _segment_batches(log)
        position, size, _first, _last = batches[1]
        data = (log.dir / f"{0:020d}.log").read_bytes()[position:position + size]
        batch = next(iter(MemoryRecords(data).batches()))
        return data, position, batch, list(batch.records())


def batch_layout(path: Path) -> None:
    data, position, batch, records = _layout_batch()
    fields = batch_fields(data)
    # kafkalog's decoder and the decoding above must tell the same story.
    check(batch.is_valid(), "kafkalog finds the batch's CRC wrong")
    check(struct.unpack_from(">I", data, 17)[0] == batch.computed_crc(), "the stored CRC is not the computed one")
    keys = [f.raw for f in fields if f.name == "key"]
    values = [f.raw for f in fields if f.name == "value"]
    check(keys == [r.key for r in records] and values == [r.value for r in records], "keys or values differ")
    check([f.raw for f in fields if f.name == "header value"] == [v for r in records for _k, v in r.headers],
          "headers differ")

    row, top, left = 19, 76, 16
    col_pos, col_hex = left + 146, left + 156
    col_name, col_say = col_hex + 198, col_hex + 346
    width = col_say + 330
    svg = Svg(width, top + row * len(fields) + 50, "A v2 record batch, byte by byte, as kafkalog wrote it")
    svg.text(left, 22, "One v2 batch from a real .log file, field by field", size=15, bold=True)
    svg.text(left, 42, f"At byte {position} of 00000000000000000000.log. The header's integers are big-endian; "
                       "a record's lengths and", size=12, colour=COLOURS["muted"])
    svg.text(left, 58, "deltas are zigzag varints. Hover over a field to see all of its bytes.", size=12,
             colour=COLOURS["muted"])
    svg.text(col_pos, top - 6, "bytes", size=11, anchor="end", colour=COLOURS["muted"])
    svg.text(col_hex, top - 6, "as stored (hex)", size=11, colour=COLOURS["muted"])
    svg.text(col_name, top - 6, "field", size=11, colour=COLOURS["muted"])
    svg.text(col_say, top - 6, "value", size=11, colour=COLOURS["muted"])
    groups: dict[str, list[int]] = {}
    for i, f in enumerate(fields):
        groups.setdefault(f.group, []).append(i)
        y = top + i * row
        fill = {"key": "key", "value": "value", "header key": "headers", "header value": "headers"}.get(
            f.name, "header" if f.group.startswith("batch") else "record")
        shade = COLOURS[fill + "2"] if i % 2 and fill + "2" in COLOURS else COLOURS[fill]
        hexes = " ".join(f"{b:02x}" for b in f.raw)
        shown = hexes if len(f.raw) <= 8 else " ".join(f"{b:02x}" for b in f.raw[:7]) + " …"
        svg.rect(col_hex - 4, y + 1, 186, row - 2, shade, stroke="none", tip=f"{f.name}: {hexes}")
        end = f.start + len(f.raw) - 1
        svg.text(col_pos, y + 14, f"{f.start}" if end == f.start else f"{f.start}{DASH}{end}", size=11, anchor="end",
                 mono=True, colour=COLOURS["muted"])
        svg.text(col_hex, y + 14, shown, size=12, mono=True)
        svg.text(col_name, y + 14, f.name, size=12, bold=True)
        svg.text(col_say, y + 14, f.meaning, size=12)
    for name, members in groups.items():
        y1, y2 = top + members[0] * row + 1, top + (members[-1] + 1) * row - 1
        svg.rect(left, y1, 6, y2 - y1, COLOURS["header2" if name.startswith("batch") else "record2"], stroke="none")
        label = (name.replace(" (", "\n(") if name.startswith("batch")
                 else f"{name}\n(offset {records[int(name.split()[1])].offset})")
        for j, part in enumerate(label.split("\n")):
            svg.text(left + 12, (y1 + y2) / 2 - 3 + j * 15, part, size=12, bold=j == 0)
    bottom = top + row * len(fields)
    # The two ranges the header's fields cover: what batchLength counts, what the CRC sums.
    by_start = {f.start: i for i, f in enumerate(fields)}
    for x, first_byte, label in ((width - 50, 12, "batchLength counts these bytes"),
                                 (width - 24, 21, "the CRC covers these bytes")):
        y1 = top + by_start[first_byte] * row + 2
        svg.path(f"M{x:.1f},{y1:.1f} h6 V{bottom - 2:.1f} h-6", colour=COLOURS["link"])
        svg.text(x + 18, (y1 + bottom) / 2, label, size=11, anchor="middle", vertical=True, colour=COLOURS["link"])
    svg.text(left, bottom + 22, f"{len(data)} bytes in all: the 61-byte header, then {len(records)} records. "
                                "kafkalog's own reader agrees", size=12, colour=COLOURS["muted"])
    svg.text(left, bottom + 38, "on every key, value and header, and on the CRC.", size=12, colour=COLOURS["muted"])
    svg.save(path)


# -- 2. the read path --------------------------------------------------------------------------------------

def _read_path_log(tmp: Path) -> Log:
    config = LogConfig({"segment.bytes": 1100, "index.interval.bytes": 240})
    log = Log(tmp / "orders-0", config, time=MockTime())
    for n in range(30):
        log.append(MemoryRecords.with_records([(f"order-{n}".encode(), f"order {n}.{i} ".encode() * 2,
                                                BASE_TIME + 10 * n + i) for i in range(1 + n % 3)]))
    return log


def read_path(path: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        log = _read_path_log(Path(tmp))
        with log:
            segments = _segment_batches(log)
            chosen = 2
            base, batches = segments[chosen]
            segment = log.log_segments()[chosen]
            # A target between two index entries, inside a batch of several records: the scan has work.
            index = [segment.offset_index.entry(i) for i in range(segment.offset_index.entries)]
            check(len(index) >= 2, "the read-path log needs two index entries in its third segment")
            target = next(last - 1 for _p, _s, first, last in batches
                          if first > index[1].offset and last > first)
            entry = segment.offset_index.lookup(target)
            found = segment.translate_offset(target)
            fetch = log.read(target, max_length=400)
            check(found is not None and fetch.fetch_offset_metadata.segment_base_offset == base
                  and fetch.fetch_offset_metadata.relative_position_in_segment == found.position,
                  "Log.read does not start where the picture says")
            assert found is not None
            hops = [b for b in batches if entry.position <= b[0] <= found.position]
            first_record = next(iter(fetch.records.records()))

    width, left = 800, 16
    svg = Svg(width, 470, f"How Log.read finds offset {target}")
    svg.text(left, 24, f"Log.read({target}): from an offset to the bytes, in three lookups", size=15, bold=True)
    svg.text(left, 44, "A real log: 30 batches in 1100-byte segments, an index entry every 240 bytes",
             size=12, colour=COLOURS["muted"])

    # Lane 1: the segments, by base offset.
    y = 78
    svg.text(left, y, f"1. The segments by base offset: the last one whose base is ≤ {target}", size=13, bold=True)
    seg_w = (width - 2 * left) / len(segments) - 10
    for i, (b, bs) in enumerate(segments):
        x = left + i * (seg_w + 10)
        svg.rect(x, y + 12, seg_w, 44, COLOURS["chosen"] if i == chosen else COLOURS["header"],
                 width=1.6 if i == chosen else 0.8)
        svg.text(x + seg_w / 2, y + 31, f"{b:020d}.log", size=11, mono=True, anchor="middle")
        svg.text(x + seg_w / 2, y + 48, f"offsets {_span(bs[0][2], bs[-1][3])}", size=11, anchor="middle",
                 colour=COLOURS["muted"])
    seg_x = left + chosen * (seg_w + 10) + seg_w / 2

    # Lane 2: the chosen segment's offset index.
    y = 184
    svg.text(left, y, f"2. Its .index, binary-searched: the last entry whose offset is ≤ {target}", size=13,
             bold=True)
    svg.line(seg_x, 134, seg_x, y - 16, colour=COLOURS["accent"], arrow=True)
    entry_w = 148
    entry_x = {}
    for i, e in enumerate(index):
        x = left + i * (entry_w + 14)
        hit = e.offset == entry.offset
        svg.rect(x, y + 12, entry_w, 30, COLOURS["chosen"] if hit else COLOURS["index"], width=1.6 if hit else 0.8)
        svg.text(x + entry_w / 2, y + 32, f"offset {e.offset} → byte {e.position}", size=12, anchor="middle")
        entry_x[e.position] = x + entry_w / 2
    svg.text(left + len(index) * (entry_w + 14), y + 25, "one entry per ~240 bytes:", size=11,
             colour=COLOURS["muted"])
    svg.text(left + len(index) * (entry_w + 14), y + 39, "the index is sparse", size=11, colour=COLOURS["muted"])

    # Lane 3: the segment's batches to scale; the scan from the index's position.
    y = 290
    svg.text(left, y, f"3. The .log from byte {entry.position}: hop over batch headers to the batch holding "
                      f"{target}", size=13, bold=True)
    scale = (width - 2 * left) / max(p + s for p, s, _f, _l in batches)
    bar_y = y + 46
    for p, s, first, last in batches:
        hit = first <= target <= last
        svg.rect(left + p * scale, bar_y, s * scale, 40, COLOURS["chosen"] if hit else COLOURS["record"],
                 width=1.6 if hit else 0.8, tip=f"offsets {_span(first, last)} at byte {p}, {s} bytes")
        svg.text(left + (p + s / 2) * scale, bar_y + 25, _span(first, last), size=11, anchor="middle")
    start_x = left + entry.position * scale
    svg.path(f"M{entry_x[entry.position]:.1f},{184 + 42:.1f} L{start_x:.1f},{bar_y - 2:.1f}",
             colour=COLOURS["accent"], arrow=True)
    for (p, _s, _f, _l), nxt in itertools.pairwise(hops):
        x1, x2 = left + (p + 4) * scale, left + nxt[0] * scale
        svg.path(f"M{x1:.1f},{bar_y + 42:.1f} Q{(x1 + x2) / 2:.1f},{bar_y + 70:.1f} {x2 + 2:.1f},{bar_y + 43:.1f}",
                 colour=COLOURS["accent"], arrow=True)
    svg.text(left, bar_y + 92, f"{len(hops) - 1} hop(s): each batch's size field says where the next begins, so "
                               "only a batch's header is read.", size=12)
    svg.text(left, bar_y + 110, f"Log.read({target}) starts at byte {found.position} of segment {base}. The fetch "
                                "returns that whole batch:", size=12)
    svg.text(left, bar_y + 128, f"its first record is offset {first_record.offset}, and a consumer skips the records "
                                f"before {target}.", size=12)
    svg.save(path)


# -- 3. recovery after a crash -----------------------------------------------------------------------------

def recovery(path: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp) / "orders-0"
        config = LogConfig({"segment.bytes": 700, "index.interval.bytes": 200})
        with Log(directory, config, time=MockTime()) as log:
            for n in range(18):
                log.append(MemoryRecords.with_records([(f"k{n}".encode(), f"order {n} ".encode() * 4,
                                                        BASE_TIME + n)] * (1 + n % 2)))
            before = _segment_batches(log)
            end_before = log.log_end_offset
        check(len(before) >= 3, "the recovery log needs three segments")
        recovery_point = before[1][0]
        # The crash: one byte of a batch in the middle of the second segment flipped (its CRC no longer
        # matches), and the clean-shutdown marker never written.
        bad = before[1][1][len(before[1][1]) // 2]
        seg_file = directory / f"{before[1][0]:020d}.log"
        data = bytearray(seg_file.read_bytes())
        data[bad[0] + bad[1] - 3] ^= 0xFF
        seg_file.write_bytes(bytes(data))
        with Log(directory, config, time=MockTime(), recovery_point=recovery_point,
                 had_clean_shutdown=False) as reopened:
            report = reopened.load_report
            after = _segment_batches(reopened)
            end_after = reopened.log_end_offset
    truncated = dict(report.recovered_segments)
    check(truncated.get(before[1][0]) == before[1][1][-1][0] + before[1][1][-1][1] - bad[0],
          "recovery did not truncate at the corrupt batch")
    check(report.deleted_segments == [b for b, _ in before[2:]], "recovery did not delete the later segments")
    check(before[0][0] not in truncated, "recovery read a segment below the recovery point")

    width, left, label_w = 800, 16, 162
    scale = (width - left - label_w - 20) / max(bs[-1][0] + bs[-1][1] for _b, bs in before)
    svg = Svg(width, 2 * len(before) * 40 + 300, "Recovery after a crash")
    svg.text(left, 24, "Opening a log after a crash: LogLoader.recoverLog, on a real log", size=15, bold=True)
    svg.text(left, 44, f"The recovery point (how far the last flush reached) is {recovery_point}; one byte is "
                       f"flipped in the batch at offsets {_span(bad[2], bad[3])}.", size=12, colour=COLOURS["muted"])

    def draw(y: float, title: str, segments: list[tuple[int, list[tuple[int, int, int, int]]]],
             state: Callable[[int, tuple[int, int, int, int]], str]) -> float:
        svg.text(left, y, title, size=13, bold=True)
        y += 14
        shown = {b: bs for b, bs in segments}
        for base, bs in before:
            svg.text(left, y + 22, f"{base:020d}.log", size=11, mono=True)
            for batch in bs:
                p, s, first, last = batch
                fill = state(base, batch)
                if base in shown or fill == "bad":
                    svg.rect(left + label_w + p * scale, y + 6, s * scale, 26, COLOURS[fill],
                             dash="3,2" if fill == "gone" else None, tip=f"offsets {_span(first, last)}")
                    svg.text(left + label_w + (p + s / 2) * scale, y + 23, _span(first, last), size=10,
                             anchor="middle", colour=COLOURS["muted"] if fill == "gone" else COLOURS["ink"])
            if base not in shown:
                svg.rect(left + label_w, y + 6, (bs[-1][0] + bs[-1][1]) * scale, 26, "none", stroke=COLOURS["accent"],
                         dash="4,3")
                svg.text(left + label_w + 8, y + 23, "deleted: it follows a truncated segment", size=12,
                         colour=COLOURS["accent"])
            y += 40
        return y

    def before_state(base: int, batch: tuple[int, int, int, int]) -> str:
        if batch == bad:
            return "bad"
        return "header" if base < recovery_point else "record"

    def after_state(base: int, batch: tuple[int, int, int, int]) -> str:
        kept = {b for _base, bs in after for b in bs}
        if batch in kept:
            return "header" if base < recovery_point else "ok"
        return "gone"

    y = draw(80, f"Before: as the crash left it (log end offset {end_before})", before, before_state)
    svg.text(left, y + 4, "blue: below the recovery point, trusted, not read;  orange: past it, read batch by batch, "
                          "each CRC checked;", size=11, colour=COLOURS["muted"])
    svg.text(left, y + 19, "red: the CRC fails", size=11, colour=COLOURS["muted"])
    y = draw(y + 52, f"After: what recovery keeps (log end offset {end_after})", after, after_state)
    (seg1, cut), = [(b, t) for b, t in report.recovered_segments if t]
    svg.text(left, y + 4, "green: checked and kept; dashed grey: truncated", size=11, colour=COLOURS["muted"])
    lines = [f"LoadReport: segment {seg1} truncated by {cut} bytes at the first bad batch (offset {bad[2]}),",
             f"segment(s) {', '.join(map(str, report.deleted_segments))} deleted, the checked segments' indexes "
             "rebuilt from their batches.",
             f"Every record from offset {bad[2]} on is gone: a replica fetches them again from the leader."]
    for j, line in enumerate(lines):
        svg.text(left, y + 30 + j * 17, line, size=12)
    svg.save(path)


# -- 4. transactions and the last stable offset ------------------------------------------------------------

#: The partition of the picture, in append order: (producer id or None, what, number of records).
_TXN_STORY: list[tuple[int | None, str, int]] = [
    (None, "data", 2), (7, "data", 2), (None, "data", 1), (8, "data", 1), (7, "data", 1), (7, "ABORT", 1),
    (8, "COMMIT", 1), (9, "data", 2), (None, "data", 2), (9, "data", 1),
]
_PRODUCER_COLOURS = {None: "#dbe7f5", 7: "#f4b6b6", 8: "#bfe3b4", 9: "#ffe08a"}


def transactions(path: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp, Log(Path(tmp) / "payments-0", LogConfig(), time=MockTime()) as log:
        cells: list[tuple[int, int | None, str]] = []
        # Each producer's batches follow its sequence, as the log checks (a batch starting at 0 again would be
        # an OutOfOrderSequenceError).
        sequences: dict[int, int] = {}
        for i, (pid, what, n) in enumerate(_TXN_STORY):
            leo = log.log_end_offset
            if i == len(_TXN_STORY) - 1:
                # The followers have everything but the last batch: the high watermark stays here.
                log.high_watermark = leo
            if what == "data":
                records = MemoryRecords.with_records(
                    [(f"p{i}".encode(), f"payment {i}.{j}".encode(), BASE_TIME + i) for j in range(n)],
                    **({} if pid is None else {"producer_id": pid, "producer_epoch": 0, "is_transactional": True,
                                               "base_sequence": sequences.get(pid, 0)}))
                if pid is not None:
                    sequences[pid] = sequences.get(pid, 0) + n
            else:
                control = ControlRecordType.ABORT if what == "ABORT" else ControlRecordType.COMMIT
                assert pid is not None
                records = MemoryRecords.with_end_transaction_marker(pid, 0, EndTransactionMarker(control, 0),
                                                                   timestamp=BASE_TIME + i)
            # A marker is the transaction coordinator's write; a client may not append one.
            log.append(records, origin="client" if what == "data" else "coordinator")
            cells += [(o, pid, what) for o in range(leo, log.log_end_offset)]
        hw = log.high_watermark
        state = TransactionState.of(log)
        unstable = first_unstable_offset(log, hw)
        lso = hw if unstable is None else min(unstable, hw)
        committed = [r.offset for r in log.records(isolation="read_committed")]
        uncommitted = [r.offset for r in log.records()]
        leo = log.log_end_offset
    check(state.last_stable_offset == lso, "TransactionState and first_unstable_offset disagree on the LSO")
    check(max(committed) < lso and max(uncommitted) < hw, "a consumer read past its bound")

    def name(pid: int | None, what: str) -> str:
        return what if what != "data" else ("plain" if pid is None else f"P{pid}")

    def name_size(what: str) -> float:
        return 9 if what != "data" else 10

    # A cell is as wide as its widest name (a marker's ABORT or COMMIT) and its padding, 44 pixels at least;
    # the picture, as wide as its row of cells and the log end's label over the last edge.
    left = 16
    cell = max(44, math.ceil(max(text_width(name(p, w), name_size(w)) for _o, p, w in cells) + 2 * PADDING + 6))
    x0 = left + 136
    width = max(800, x0 + leo * cell + text_width(f"LEO = {leo}", 12, bold=True) / 2 + MARGIN)
    svg = Svg(width, 460, "Transactions, the last stable offset and the high watermark")
    svg.text(left, 24, "A partition with an aborted, a committed and an open transaction", size=15, bold=True)
    svg.text(left, 44, "Producers 7, 8 and 9 write in transactions, beside plain writes; a transaction ends with "
                       "a marker,", size=12, colour=COLOURS["muted"])
    svg.text(left, 60, "a control batch saying ABORT or COMMIT.", size=12, colour=COLOURS["muted"])
    y = 112
    svg.text(left, y + 24, "offset", size=12, colour=COLOURS["muted"])
    for offset, pid, what in cells:
        x = x0 + offset * cell
        svg.rect(x, y, cell - 4, 38, _PRODUCER_COLOURS[pid], width=1.4 if what != "data" else 0.8,
                 dash="3,2" if what != "data" else None)
        svg.text(x + (cell - 4) / 2, y + 16, str(offset), size=12, anchor="middle", bold=True)
        svg.text(x + (cell - 4) / 2, y + 31, name(pid, what), size=name_size(what), anchor="middle",
                 colour=COLOURS["ink"] if what != "data" else COLOURS["muted"])
    # The three bounds first, so the transactions' labels are written over them.
    for name, offset, colour, dy in (("LSO", lso, COLOURS["accent"], 0), ("HW", hw, COLOURS["link"], 0),
                                     ("LEO", leo, COLOURS["ink"], -16)):
        x = x0 + offset * cell - 2
        svg.line(x, y - 22 + dy, x, y + 112, colour=colour, width=2)
        svg.text(x, y - 28 + dy, f"{name} = {offset}", size=12, anchor="middle", bold=True, colour=colour)
    # Each transaction, first data batch to marker (or to the log end while open).
    for row, pid in enumerate((7, 8, 9)):
        mine = [o for o, p, _w in cells if p == pid]
        marker = next((w for _o, p, w in cells if p == pid and w != "data"), None)
        ty = y + 54 + row * 20
        x1, x2 = x0 + mine[0] * cell + 4, x0 + (mine[-1] + 1) * cell - 8
        svg.path(f"M{x1:.1f},{ty - 6:.1f} V{ty:.1f} H{x2:.1f} V{ty - 6:.1f}", colour=COLOURS["ink"],
                 dash=None if marker else "4,3")
        label = f"P{pid}'s transaction: " + {"ABORT": "aborted", "COMMIT": "committed", None: "still open"}[marker]
        lx = x1 if marker is None else x1 + 4
        svg.rect(lx - PADDING, ty + 2, text_width(label, 11) + 2 * PADDING, 15, "#ffffff", stroke="none")
        svg.text(lx, ty + 14, label, size=11)

    def reader(yr: float, title: str, offsets: list[int], bound: int, why: str) -> None:
        svg.text(left, yr + 18, title, size=12, bold=True)
        for offset, pid, _what in cells:
            x = x0 + offset * cell
            if offset in offsets:
                svg.rect(x, yr, cell - 4, 26, _PRODUCER_COLOURS[pid])
                svg.text(x + (cell - 4) / 2, yr + 18, str(offset), size=12, anchor="middle")
            elif offset < bound:
                svg.text(x + (cell - 4) / 2, yr + 18, DASH, size=12, anchor="middle", colour=COLOURS["muted"])
        svg.text(left, yr + 44, why, size=11, colour=COLOURS["muted"])

    reader(y + 150, "read_committed", committed, lso,
           f"reads below the LSO ({lso}), the first offset of the earliest open transaction; skips aborted records.")
    reader(y + 225, "read_uncommitted", uncommitted, hw,
           f"reads below the high watermark ({hw}), aborted records included. Neither reader is given a marker.")
    svg.text(left, y + 306, "Aborted transactions (what a .txnindex holds): "
                            + "; ".join(f"producer {t.producer_id}, offsets {t.first_offset}{DASH}{t.last_offset}"
                                        for t in state.aborted) + ".", size=12)
    svg.text(left, y + 324, "Both rows are what Log.records() returns on this log with each isolation level.", size=12)
    svg.save(path)


#: The offsets picture's partition: (producer id or None, records) per batch, in the order they are appended.
#: Producer 5's transaction opens at the fourth batch and is still open at the end.
_OFFSETS_STORY: list[tuple[int | None, int]] = [(None, 2), (None, 2), (None, 2), (5, 2), (None, 2), (5, 1),
                                                (None, 2), (None, 2), (None, 2)]
#: How far behind the leader's log end each follower is, as its fetches report it (A one batch, B two).
_FOLLOWER_LAG = {"A": 2, "B": 4}


def offsets(path: Path) -> None:
    config = LogConfig({"segment.bytes": 400})
    with tempfile.TemporaryDirectory() as tmp, Log(Path(tmp) / "orders-0", config, time=MockTime()) as log:
        # Set by the caller from here on, as a leader sets it from its followers' fetches, rather than following
        # the log end offset as a log used on its own does.
        log.high_watermark = 0
        sequence = 0
        for i, (pid, n) in enumerate(_OFFSETS_STORY):
            records = [(f"k{i}".encode(), f"order {i}.{j}".encode(), BASE_TIME + i) for j in range(n)]
            if pid is None:
                log.append(MemoryRecords.with_records(records))
            else:
                log.append(MemoryRecords.with_records(records, producer_id=pid, producer_epoch=0,
                                                      base_sequence=sequence, is_transactional=True))
                sequence += n
        leo = log.log_end_offset
        followers = {name: leo - lag for name, lag in _FOLLOWER_LAG.items()}
        # The leader's rule: the high watermark is the smallest log end offset of the in-sync replicas.
        log.high_watermark = min(leo, *followers.values())
        hw = log.high_watermark
        # DeleteRecords up to the second batch's end (the log start offset may not pass the high watermark).
        log.maybe_increment_log_start_offset(4)
        start = log.log_start_offset
        unstable = first_unstable_offset(log, hw)
        lso = hw if unstable is None else min(unstable, hw)
        committed = [r.offset for r in log.records(isolation="read_committed")]
        uncommitted = [r.offset for r in log.records()]
        # A follower fetches to the log end, one segment a fetch, each from where the last one ended.
        follower: list[int] = []
        while (follower[-1] + 1 if follower else start) < leo:
            fetched = log.read(follower[-1] + 1 if follower else start, 1 << 20, isolation="log_end").records
            follower += [r.offset for r in fetched.records()]
        try:
            next(iter(log.records(start - 1)))
            refused = False
        except OffsetOutOfRangeError:
            refused = True
        segments = [(s.base_offset, s.read_next_offset()) for s in log.log_segments()]
        cells = [(o, pid) for pid, n in _OFFSETS_STORY for o in range(n)]
        owners = {}
        offset = 0
        for pid, n in _OFFSETS_STORY:
            for _ in range(n):
                owners[offset] = pid
                offset += 1
    check(refused, "a read below the log start offset was not refused")
    check(unstable is not None and start <= lso <= hw <= leo and lso < hw,
          "the story should give log start <= LSO < HW <= LEO")
    check(committed == list(range(start, lso)), "read_committed did not read from the log start to the LSO")
    check(uncommitted == list(range(start, hw)), "read_uncommitted did not read from the log start to the HW")
    check(follower[-1] == leo - 1 and follower[0] <= start, "a follower's fetch did not reach the log end")
    del cells

    left = 16
    cell = 46
    x0 = left + 150
    width = x0 + leo * cell + 20  # the labels past the last cell widen the picture as they need
    svg = Svg(width, 560, "The four offsets of a partition and the readers they bound")
    svg.text(left, 24, "The four offsets of a partition, and which reader each one bounds", size=15, bold=True)
    svg.text(left, 44, f"A real log of {leo} records in {len(segments)} segments; producer 5's transaction is "
                       "still open; two followers are fetching.", size=12, colour=COLOURS["muted"])
    y = 120

    def x_of(offset: int) -> float:
        return x0 + offset * cell

    svg.text(left, y + 24, "offset", size=12, colour=COLOURS["muted"])
    for offset in range(leo):
        pid = owners[offset]
        gone = offset < start
        fill = COLOURS["gone"] if gone else _PRODUCER_COLOURS[None] if pid is None else _PRODUCER_COLOURS[9]
        svg.rect(x_of(offset), y, cell - 4, 38, fill, dash="3,2" if gone else None)
        svg.text(x_of(offset) + (cell - 4) / 2, y + 16, str(offset), size=12, anchor="middle", bold=not gone,
                 colour=COLOURS["muted"] if gone else COLOURS["ink"])
        svg.text(x_of(offset) + (cell - 4) / 2, y + 31, "P5" if pid is not None else "", size=10,
                 anchor="middle", colour=COLOURS["muted"])
    # The segments under the records, each bracket as wide as the offsets it holds.
    for base, end in segments:
        if end <= base:
            continue
        x1, x2 = x_of(base) + 2, x_of(end) - 6
        svg.path(f"M{x1:.1f},{y + 46:.1f} v6 H{x2:.1f} v-6", colour=COLOURS["muted"])
        svg.text((x1 + x2) / 2, y + 66, f"segment {base}", size=10, anchor="middle", colour=COLOURS["muted"])
    svg.text(left, y + 66, "segments", size=12, colour=COLOURS["muted"])
    bounds = (("log start", start, COLOURS["muted"], -32), ("LSO", lso, COLOURS["accent"], 0),
              ("HW", hw, COLOURS["link"], -16), ("LEO", leo, COLOURS["ink"], 0))
    for name, offset, colour, dy in bounds:
        x = x_of(offset) - 2
        svg.line(x, y - 22 + dy, x, y + 40, colour=colour, width=2)
        svg.text(x, y - 28 + dy, f"{name} = {offset}", size=12, anchor="middle", bold=True, colour=colour)
    # The followers' positions, under the segments: the high watermark is the smallest of them and the leader's.
    fy = y + 96
    svg.text(left, fy + 4, "replicas' LEOs", size=12, colour=COLOURS["muted"])
    for i, (name, position) in enumerate([("leader", leo), *sorted(followers.items(), key=lambda kv: -kv[1])]):
        x = x_of(position) - 2
        yy = fy + i * 18
        svg.path(f"M{x - 5:.1f},{yy + 2:.1f} L{x:.1f},{yy - 7:.1f} L{x + 5:.1f},{yy + 2:.1f} z",
                 colour=COLOURS["link"] if position == hw else COLOURS["ink"])
        label = name if name == "leader" else f"follower {name}"
        svg.text(x + 10, yy + 2, f"{label}: {position}", size=11,
                 colour=COLOURS["link"] if position == hw else COLOURS["ink"])

    def reader(yr: float, title: str, offsets: list[int], bound: int, why: str) -> None:
        svg.text(left, yr + 18, title, size=12, bold=True)
        for offset in range(leo):
            if offset in offsets:
                pid = owners[offset]
                svg.rect(x_of(offset), yr, cell - 4, 26, _PRODUCER_COLOURS[None if pid is None else 9])
                svg.text(x_of(offset) + (cell - 4) / 2, yr + 18, str(offset), size=12, anchor="middle")
            elif start <= offset < bound:
                svg.text(x_of(offset) + (cell - 4) / 2, yr + 18, DASH, size=12, anchor="middle",
                         colour=COLOURS["muted"])
        svg.text(left, yr + 44, why, size=11, colour=COLOURS["muted"])

    ry = fy + 70
    reader(ry, "a follower's fetch", [o for o in follower if o >= start], leo,
           f"reads up to the log end offset ({leo}): a replica copies everything, committed or not.")
    reader(ry + 70, "read_uncommitted", uncommitted, hw,
           f"reads from the log start offset ({start}) to below the high watermark ({hw}): only what every "
           "in-sync replica has.")
    reader(ry + 140, "read_committed", committed, lso,
           f"reads below the last stable offset ({lso}): the first offset of the earliest open transaction, "
           "or the HW if none is open.")
    ty = ry + 210
    svg.text(left, ty, f"Below the log start offset ({start}) nothing is read: DeleteRecords or retention moved it, "
                       "and a fetch of an offset there is OffsetOutOfRange.", size=12)
    svg.text(left, ty + 18, f"The HW is the smallest LEO of the in-sync replicas, min({leo}, "
                            f"{', '.join(str(v) for v in sorted(followers.values(), reverse=True))}) = {hw}: "
                            "it moves up as the followers' fetches report new positions, never down.", size=12)
    svg.text(left, ty + 36, "The LSO is never above the HW: a transaction is stable only once its marker is "
                            "replicated, below the HW.", size=12)
    svg.text(left, ty + 54, "log start ≤ LSO ≤ HW ≤ LEO. The three rows are what kafkalog returns on this log "
                            "(Log.read to the log end; Log.records with each isolation level).", size=12)
    svg.height = ty + 80
    svg.save(path)


PICTURES: dict[str, Callable[[Path], None]] = {
    "batch-layout.svg": batch_layout, "read-path.svg": read_path, "recovery.svg": recovery,
    "transactions.svg": transactions, "offsets.svg": offsets,
}


@contextlib.contextmanager
def quiet_kafkalog() -> Iterator[None]:
    """Keep kafkalog's log records out of the build's output while a picture or the tour is made: a
    crash and its recovery make kafkalog log what a broker would (a bad CRC, deleted segments), which
    is expected here and said by the page itself."""
    library = logging.getLogger("kafkalog")
    level = library.level
    library.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        library.setLevel(level)


__all__ = ["PICTURES", "batch_fields", "check", "quiet_kafkalog"]

"""Every broker-written ``.log`` in the golden folder decodes to what ``DETAILS.md`` says it holds.

The expectations are the per-file rows of ``/work/shared/golden/DETAILS.md`` (the "inspection" column of
each set's table, written by an independent struct-based reader), transcribed by hand into
:mod:`tests.support.golden_data` (``LOG_FILES``; the conventions are in its docstring); nothing there is
computed from kafkalog.  The coverage summary of DETAILS.md agrees with the rows: LogAppendTime occurs only
in the four mscaldas2012 ``*-rekey-0`` partitions, transactions only in Danielowo2000.

* Every row says ``crcErrors=0`` and that the file parsed to its end: no file has trailing partial
  bytes, so every scan must stop with ``END`` at the file's length (none is expected to stop PARTIAL).

The KRaft snapshot/bootstrap ``.checkpoint`` files use the same record format and DETAILS inspects
them the same way, so they are in a second table (``CHECKPOINT_FILES``) and go through the same checks.

The kafkalite set also ships its own expected decodings (``tests/test-data/golden/<topic>``): those are
compared line for line with a renderer of Haskell's ``show``.
"""

from __future__ import annotations

import collections
import functools
import itertools
import pathlib
import re
from types import ModuleType
from typing import Any

import pytest

from kafkalog.record import (
    ControlRecordType,
    DefaultRecordBatch,
    LegacyRecordBatch,
    MemoryRecords,
    ScanStop,
    TimestampType,
)
from tests.support.golden_data import (
    ARTHUR,
    CHECKPOINT_FILES,
    DANIELOWO,
    KAFKALITE,
    KAFKALITE_EXPECTED,
    KAFKALITE_EXPECTED_LINES,
    KSQL,
    LOG_FILES,
    SEG0,
    Facts,
)

ALL_FILES = LOG_FILES + CHECKPOINT_FILES
EMPTY_LOGS = [f["path"] for f in LOG_FILES if f["bytes"] == 0]


def _file_id(facts: Facts) -> str:
    parts = facts["path"].split("/")
    return f"{parts[0].split('__')[0]}/{parts[-2]}/{parts[-1]}"


@functools.cache
def _read(path: pathlib.Path) -> bytes:
    return path.read_bytes()


def _data(golden: pathlib.Path, rel: str) -> bytes:
    return _read(golden / rel)


def _batches(memory: MemoryRecords) -> list[DefaultRecordBatch | LegacyRecordBatch]:
    """``memory.batches()``, each checked to be one of the two concrete batch classes."""
    out = []
    for batch in memory.batches():
        assert isinstance(batch, DefaultRecordBatch | LegacyRecordBatch)
        out.append(batch)
    return out


def _v2_batches(data: bytes) -> list[DefaultRecordBatch]:
    out = []
    for batch in MemoryRecords(data).batches():
        assert isinstance(batch, DefaultRecordBatch)
        out.append(batch)
    return out


def _legacy_batches(data: bytes) -> list[LegacyRecordBatch]:
    out = []
    for batch in MemoryRecords(data).batches():
        assert isinstance(batch, LegacyRecordBatch)
        out.append(batch)
    return out


# ---------------------------------------------------------------------------------------------------
# The table is complete


def test_table_lists_every_golden_log(golden: pathlib.Path) -> None:
    on_disk = {p.relative_to(golden).as_posix() for p in golden.rglob("*.log")}
    assert on_disk == {f["path"] for f in LOG_FILES}
    assert len(LOG_FILES) == 74
    assert len(EMPTY_LOGS) == 3


# ---------------------------------------------------------------------------------------------------
# Decoding matches DETAILS.md, file by file


@pytest.mark.parametrize("facts", ALL_FILES, ids=_file_id)
def test_golden_file_decodes_as_details_says(impl: ModuleType, golden: pathlib.Path, facts: Facts) -> None:
    data = _data(golden, facts["path"])
    assert len(data) == facts["bytes"]
    memory = MemoryRecords(data)
    batches = _batches(memory)
    records = list(memory.records())

    assert len(batches) == facts["batches"]
    assert len(records) == facts["records"]
    assert {b.magic for b in batches} == facts["magic"]
    for batch in batches:
        assert isinstance(batch, DefaultRecordBatch if batch.magic == 2 else LegacyRecordBatch)
        assert batch.is_valid(), f"CRC mismatch in the batch at {batch.position}"
    assert {b.compression.kafka_name for b in batches} == facts["codecs"]
    assert sum(b.count for b in batches) == facts["records"]

    # Offsets: first and last as DETAILS gives them, strictly increasing in between.
    offsets = [r.offset for r in records]
    if facts["offsets"] is None:
        assert offsets == []
    else:
        assert (offsets[0], offsets[-1]) == facts["offsets"]
        assert batches[-1].last_offset == facts["offsets"][1]
        assert all(a < b for a, b in itertools.pairwise(offsets))
    assert sum(r.value is None for r in records) == facts["tombstones"]

    # Leader epochs (v2 rows list them; a legacy message has none).
    if facts["magic"] == {2}:
        assert {b.partition_leader_epoch for b in batches} == facts["epochs"]
    else:
        assert {b.partition_leader_epoch for b in batches} <= {-1}

    # Timestamp type: v0 has none, LogAppendTime only where DETAILS says tstype=['LogAppend'].
    if facts["magic"] == {0}:
        expected_type = TimestampType.NO_TIMESTAMP_TYPE
        assert {r.timestamp for r in records} == {-1}
    elif facts["log_append_time"]:
        expected_type = TimestampType.LOG_APPEND_TIME
    else:
        expected_type = TimestampType.CREATE_TIME
    assert {b.timestamp_type for b in batches} == ({expected_type} if batches else set())
    if facts["log_append_time"]:
        assert {str(b.timestamp_type) for b in batches} == {"LogAppendTime"}
        for batch in batches:
            # Kafka: every record of a LogAppendTime batch reports the batch's append time.
            assert {r.timestamp for r in batch.records()} == {batch.max_timestamp}

    # Producer state: distinct producer ids, idempotent (sequence set) data batches, transactions.
    producer_ids = {b.producer_id for b in batches if b.has_producer_id}
    assert len(producer_ids) == facts["producer_ids"]
    for batch in batches:
        if batch.has_producer_id and not batch.is_control:
            assert batch.producer_epoch >= 0
            assert batch.base_sequence >= 0
            assert batch.last_sequence == batch.base_sequence + batch.last_offset - batch.base_offset
    assert sum(b.is_transactional for b in batches) == facts["txn_batches"]

    # Control batches and the types their records carry.
    control = [b for b in batches if isinstance(b, DefaultRecordBatch) and b.is_control]
    assert len(control) == facts["control_batches"]
    control_record_types: set[str] = set()
    for batch in control:
        control_records = batch.records()
        assert control_records
        kinds = [ControlRecordType.parse(r.key) for r in control_records]
        assert batch.control_type is kinds[0]
        control_record_types.update(kind.name for kind in kinds)
    assert control_record_types == facts["control_types"]
    data_batches = [b for b in batches if isinstance(b, DefaultRecordBatch) and not b.is_control]
    assert all(b.control_type is None for b in data_batches)

    # Compressed v0/v1 wrappers.
    assert sum(isinstance(b, LegacyRecordBatch) and b.is_compressed for b in batches) == facts["wrappers"]


@pytest.mark.parametrize("facts", ALL_FILES, ids=_file_id)
def test_golden_file_scan_agrees(impl: ModuleType, golden: pathlib.Path, facts: Facts) -> None:
    size = facts["bytes"]
    memory = MemoryRecords(_data(golden, facts["path"]))
    result = memory.scan(check_crc=True, stop_on_invalid=True)
    rows = result.batches
    # No DETAILS row reports trailing partial bytes: every scan consumes the whole file.
    assert result.stop_reason is ScanStop.END
    assert result.stop_position == size
    assert result.valid_bytes == size
    assert memory.valid_bytes() == size
    assert len(rows) == facts["batches"]
    assert set(rows["magic"].tolist()) == set(facts["magic"])
    assert rows["valid"].tolist() == [1] * facts["batches"]
    if facts["batches"]:
        positions = rows["position"].tolist()
        ends = (rows["position"] + rows["size"]).tolist()
        assert positions == [0, *ends[:-1]]
        assert ends[-1] == size
        assert int(rows["last_offset"][-1]) == facts["offsets"][1]
        counts = rows["record_count"].tolist()
        assert counts.count(-1) == facts["wrappers"]  # a legacy wrapper's count needs decompression
        if not facts["wrappers"]:
            assert sum(counts) == facts["records"]
    # The same walk without CRC checks finds the same entries and marks none as checked.
    unchecked = memory.scan(check_crc=False)
    assert unchecked.stop_reason is ScanStop.END
    assert unchecked.batches["position"].tolist() == rows["position"].tolist()
    assert unchecked.batches["valid"].tolist() == [-1] * facts["batches"]


@pytest.mark.parametrize("rel", EMPTY_LOGS, ids=lambda p: p.split("/")[-2])
def test_empty_segments_decode_to_nothing(impl: ModuleType, golden: pathlib.Path, rel: str) -> None:
    data = _data(golden, rel)
    assert data == b""
    memory = MemoryRecords(data)
    assert list(memory.batches()) == []
    assert list(memory.records()) == []
    result = memory.scan()
    assert (len(result.batches), result.stop_position, result.stop_reason) == (0, 0, ScanStop.END)
    assert memory.valid_bytes() == 0


def test_multi_segment_partitions_are_contiguous(impl: ModuleType, golden: pathlib.Path) -> None:
    """A rolled segment ends right before the base offset in the next segment's file name (DETAILS:
    dipendrasaini 4 segments, ArthurArutunyan04 metadata 0/5151, ronem123 31: 0/3, 44: 0/9,
    yuanliubei 0/58)."""
    partitions: dict[str, list[str]] = collections.defaultdict(list)
    for facts in LOG_FILES:
        directory, _, _ = facts["path"].rpartition("/")
        partitions[directory].append(facts["path"])
    multi = {d: sorted(paths) for d, paths in partitions.items() if len(paths) > 1}
    assert len(multi) == 6
    for paths in multi.values():
        for older, newer in itertools.pairwise(paths):
            batches = list(MemoryRecords(_data(golden, older)).batches())
            assert batches[-1].next_offset == int(newer.rsplit("/", 1)[1].removesuffix(".log"))


# ---------------------------------------------------------------------------------------------------
# The facts DETAILS singles out


def test_command_topic_transactions(impl: ModuleType, golden: pathlib.Path) -> None:
    """Danielowo2000's ksql command topic: 8 transactional batches, 4 of them COMMIT markers."""
    batches = _v2_batches(_data(golden, f"{DANIELOWO}/{KSQL}_command_topic-0/{SEG0}"))
    assert len(batches) == 8
    assert all(b.is_transactional for b in batches)
    data_batches = [b for b in batches if not b.is_control]
    markers = [b for b in batches if b.is_control]
    assert (len(data_batches), len(markers)) == (4, 4)
    assert len({b.producer_id for b in batches}) == 1  # producerIds=1
    (producer_id,) = {b.producer_id for b in batches}
    assert producer_id >= 0
    for batch in data_batches:
        assert batch.base_sequence >= 0 and batch.producer_epoch >= 0
        assert batch.end_transaction_marker() is None
    for batch in markers:
        assert batch.control_type is ControlRecordType.COMMIT
        marker = batch.end_transaction_marker()
        assert marker is not None and marker.control_type is ControlRecordType.COMMIT
        assert len(batch.records()) == 1
        # Kafka: a marker carries the producer id and epoch of the transaction it ends.
        previous = [b for b in data_batches if b.base_offset < batch.base_offset][-1]
        assert batch.producer_epoch == previous.producer_epoch


@pytest.mark.parametrize("segment", [SEG0, "00000000000000005151.log"])
def test_kraft_leader_change_batches(impl: ModuleType, golden: pathlib.Path, segment: str) -> None:
    """ArthurArutunyan04's __cluster_metadata: LEADER_CHANGE control batches are read as such, not as
    an error nor as a transaction marker (DETAILS: controlBatches=5 then 3, leader epochs 1..5, 6..8)."""
    expected_epochs = [1, 2, 3, 4, 5] if segment == SEG0 else [6, 7, 8]
    batches = _v2_batches(_data(golden, f"{ARTHUR}/__cluster_metadata-0/{segment}"))
    control = [b for b in batches if b.is_control]
    assert len(control) == len(expected_epochs)
    for batch in control:
        assert batch.control_type is ControlRecordType.LEADER_CHANGE
        assert batch.end_transaction_marker() is None
        assert not batch.is_transactional
        assert not batch.has_producer_id
        (record,) = batch.records()
        assert record.key == b"\x00\x00\x00\x02"  # version 0, type 2
    # KRaft: a new leader's first append in its epoch is its LeaderChangeMessage.
    first_of_epoch: dict[int, Any] = {}
    for batch in batches:
        first_of_epoch.setdefault(batch.partition_leader_epoch, batch)
    assert sorted(first_of_epoch) == expected_epochs
    assert [b.position for b in first_of_epoch.values()] == [b.position for b in control]


@pytest.mark.parametrize("codec", ["gzip", "snappy"])
def test_kafkalite_compressed_wrappers(impl: ModuleType, golden: pathlib.Path, codec: str) -> None:
    """DETAILS: 22 wrappers, the first at offset 253 holding inner offsets 0..253; inner offsets are
    absolute and a wrapper's offset is its last inner offset; snappy uses xerial framing."""
    batches = _legacy_batches(_data(golden, f"{KAFKALITE}/hamlet-{codec}-0/{SEG0}"))
    assert len(batches) == 22
    first = batches[0]
    assert (first.offset, first.last_offset, first.base_offset) == (253, 253, 0)
    assert [r.offset for r in first.records()] == list(range(254))
    next_offset = 0
    for batch in batches:
        assert batch.magic == 0 and batch.is_compressed and batch.compression.kafka_name == codec
        inner = batch.record_columns().records
        assert set(inner["magic"].tolist()) == {0}
        assert set((inner["attributes"] & 0x07).tolist()) == {0}
        assert inner["offset"].tolist() == list(range(next_offset, batch.offset + 1))
        next_offset = batch.offset + 1
        # v0 message after the 12-byte frame: crc(4) magic(1) attributes(1) key length(4) = -1 (null
        # key), value length(4), then the compressed payload at byte 26 of the entry.
        raw = batch.raw_bytes()
        assert raw[18:22] == b"\xff\xff\xff\xff"
        assert int.from_bytes(raw[22:26], "big") == len(raw) - 26
        payload_magic = b"\x82SNAPPY\x00" if codec == "snappy" else b"\x1f\x8b"  # xerial / gzip member
        assert raw[26:26 + len(payload_magic)] == payload_magic
    assert next_offset == 5382


def test_kafkalite_three_codecs_decode_identically(impl: ModuleType, golden: pathlib.Path) -> None:
    decoded = {
        codec: list(MemoryRecords(_data(golden, f"{KAFKALITE}/hamlet-{codec}-0/{SEG0}")).records())
        for codec in ("none", "gzip", "snappy")
    }
    assert len(decoded["none"]) == 5382
    assert decoded["gzip"] == decoded["none"]
    assert decoded["snappy"] == decoded["none"]


# ---------------------------------------------------------------------------------------------------
# kafkalite's own golden decodings: `offset: "value"` per line, the value in Haskell `show` syntax

# GHC.Show.showLitChar: the names of the control characters below space; \a..\v have short escapes.
_ASCII_NAMES = [
    "NUL", "SOH", "STX", "ETX", "EOT", "ENQ", "ACK", "BEL", "BS", "HT", "LF", "VT", "FF", "CR", "SO", "SI",
    "DLE", "DC1", "DC2", "DC3", "DC4", "NAK", "SYN", "ETB", "CAN", "EM", "SUB", "ESC", "FS", "GS", "RS", "US",
]
_SHORT_ESCAPES = {7: "\\a", 8: "\\b", 9: "\\t", 10: "\\n", 11: "\\v", 12: "\\f", 13: "\\r"}


def haskell_show(value: bytes) -> str:
    """``show`` of a ByteString (each byte a Char), as kafkalite's golden files print values."""
    out = ['"']
    for i, byte in enumerate(value):
        following = value[i + 1] if i + 1 < len(value) else None
        if byte == 0x22:
            out.append('\\"')
        elif byte == 0x5C:
            out.append("\\\\")
        elif 0x20 <= byte < 0x7F:
            out.append(chr(byte))
        elif byte == 0x7F:
            out.append("\\DEL")
        elif byte in _SHORT_ESCAPES:
            out.append(_SHORT_ESCAPES[byte])
        elif byte < 0x20:
            out.append("\\" + _ASCII_NAMES[byte])
            if byte == 0x0E and following == ord("H"):
                out.append("\\&")  # "\SO" then "H" would read back as "\SOH"
        else:
            out.append(f"\\{byte}")
            if following is not None and ord("0") <= following <= ord("9"):
                out.append("\\&")  # a decimal escape followed by a digit needs the empty escape
    out.append('"')
    return "".join(out)


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (b"ACT I", '"ACT I"'),
        (b"[Within]\tLord Hamlet,--", '"[Within]\\tLord Hamlet,--"'),
        (b'say "ay"', '"say \\"ay\\""'),
        (b"a\\b", '"a\\\\b"'),
        (b"\n\r\x07\x08\x0b\x0c", '"\\n\\r\\a\\b\\v\\f"'),
        (b"\x00\x01\x1b\x1f\x7f", '"\\NUL\\SOH\\ESC\\US\\DEL"'),
        (b"\x0eH\x0eI", '"\\SO\\&H\\SOI"'),
        (b"\xe9t\xe91\xff", '"\\233t\\233\\&1\\255"'),
        (b"", '""'),
    ],
)
def test_haskell_show_renderer(value: bytes, shown: str) -> None:
    assert haskell_show(value) == shown


_GOLDEN_LINE = re.compile(r'(0|[1-9][0-9]*): "(?:[^"\\]|\\.)*"')


@pytest.mark.parametrize("topic", sorted(KAFKALITE_EXPECTED_LINES))
def test_kafkalite_golden_decoding(impl: ModuleType, golden: pathlib.Path, topic: str) -> None:
    text = (golden / KAFKALITE_EXPECTED / topic).read_bytes().decode("ascii")
    assert text.endswith("\n")
    expected = text.splitlines()
    assert len(expected) == KAFKALITE_EXPECTED_LINES[topic]  # DETAILS: lines=5382 / lines=11394
    assert all(_GOLDEN_LINE.fullmatch(line) for line in expected)
    records = list(MemoryRecords(_data(golden, f"{KAFKALITE}/{topic}/{SEG0}")).records())
    assert all(r.value is not None for r in records)
    actual = [f"{r.offset}: {haskell_show(r.value)}" for r in records]
    assert len(actual) == len(expected)
    mismatched = [(i, a, e) for i, (a, e) in enumerate(zip(actual, expected, strict=True)) if a != e]
    assert mismatched[:5] == []
    assert actual == expected
    if topic.startswith("hamlet"):
        # The only escape the Hamlet files use is \t, on two lines; the renderer must produce both.
        assert sum("\\t" in line for line in actual) == 2

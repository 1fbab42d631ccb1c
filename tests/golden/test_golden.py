"""Every broker-written ``.log`` in the golden folder decodes to what ``DETAILS.md`` says it holds.

The expectations are a table transcribed by hand from ``/work/shared/golden/DETAILS.md`` (the
"inspection" column of each set's table, written by an independent struct-based reader), one entry per
file; nothing here is computed from kafkalog.  Conventions used when transcribing:

* ``magic=[m]`` -> ``magic``; ``batches=``/``top-level msgs=`` -> ``batches`` (v2 batches, or top-level
  v0/v1 messages, wrappers counting once); ``records=`` -> ``records`` (deep); ``offsets=a..b`` ->
  ``offsets``; ``codecs=[...]`` -> ``codecs``; ``leaderEpochs=[...]`` -> ``epochs`` (v2 only).
* The inspection prints ``nullValues(tombstones)``, ``producerIds``, ``txnBatches``, ``controlBatches``,
  ``compressedWrappers`` and ``tstype`` only when there is something to say, so a file whose row omits
  them holds 0 of each and CreateTime timestamps (v0: none).  The coverage summary agrees: LogAppendTime
  occurs only in the four mscaldas2012 ``*-rekey-0`` partitions, transactions only in Danielowo2000.
* Every row says ``crcErrors=0`` and that the file parsed to its end: no file has trailing partial
  bytes, so every scan must stop with ``END`` at the file's length (none is expected to stop PARTIAL).

The KRaft snapshot/bootstrap ``.checkpoint`` files use the same record format and DETAILS inspects
them the same way, so they are in a second table and go through the same checks.

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

Facts = dict[str, Any]


def _facts(
    path: str,
    size: int,
    magic: int | None,
    batches: int,
    records: int,
    offsets: tuple[int, int] | None,
    codecs: tuple[str, ...] = (),
    *,
    epochs: tuple[int, ...] = (),
    tombstones: int = 0,
    log_append_time: bool = False,
    producer_ids: int = 0,
    txn_batches: int = 0,
    control_batches: int = 0,
    control_types: tuple[str, ...] = (),
    wrappers: int = 0,
) -> Facts:
    """One row of DETAILS.md as the tests use it (see the module docstring for the field mapping)."""
    return {
        "path": path,
        "bytes": size,
        "magic": frozenset() if magic is None else frozenset({magic}),
        "batches": batches,
        "records": records,
        "offsets": offsets,
        "codecs": frozenset(codecs),
        "epochs": frozenset(epochs),
        "tombstones": tombstones,
        "log_append_time": log_append_time,
        "producer_ids": producer_ids,
        "txn_batches": txn_batches,
        "control_batches": control_batches,
        "control_types": frozenset(control_types),
        "wrappers": wrappers,
    }


KAFKALITE = "asayers__kafkalite/tests/test-data"
XPX = "xpxwo100__bullShit/tmp/kafka-logs"
SHARA = "SharaWeil__kafka-0.11.0/data"
KAIPA = "KAIPASUBHASH__kafka-logs"
VOLO = "VolodymyrZee__kafka"
DIPEN = "dipendrasaini__kafka-learnning-series/tmp/kafka-logs"
SEAN = "seanorth__kafka-server/kafka-logs"
ARTHUR = "ArthurArutunyan04__Backend_labs/kafka-data"
MSC = "mscaldas2012__kafka-connect-spooldir/kafka-data"
BERK = "berkayakcay__toy-node-log-collector/kafka-data"
DANIEL = "Danielowo2000__BigDataTechnologies-Version-2/kafka_data"
RONEM = "ronem123__rupia-transaction-service/kafka-logs"
YUAN = "yuanliubei__kafka-source-code/kafka-logs"
SEG0 = "00000000000000000000.log"
CC = "_confluent-controlcenter-5-1-2-1-"
KSQL = "_confluent-ksql-default_"

GOLDEN_LOGS: list[Facts] = [
    # DETAILS.md "## asayers__kafkalite": v0, 22 gzip/snappy wrappers ("compressedWrappers=22").
    _facts(f"{KAFKALITE}/fs-data/hamlet-gzip-0/{SEG0}", 143118, 0, 22, 5382, (0, 5381), ("gzip",),
           wrappers=22),
    _facts(f"{KAFKALITE}/fs-data/hamlet-none-0/{SEG0}", 309516, 0, 5382, 5382, (0, 5381), ("none",)),
    _facts(f"{KAFKALITE}/fs-data/hamlet-snappy-0/{SEG0}", 193332, 0, 22, 5382, (0, 5381), ("snappy",),
           wrappers=22),
    _facts(f"{KAFKALITE}/fs-data/numbers-0/{SEG0}", 342100, 0, 11394, 11394, (0, 11393), ("none",)),
    # DETAILS.md "## xpxwo100__bullShit": v1, CreateTime, uncompressed.
    _facts(f"{XPX}/TEST-TOPIC-0/{SEG0}", 1315082, 1, 21211, 21211, (0, 21210), ("none",)),
    _facts(f"{XPX}/__consumer_offsets-40/{SEG0}", 70141, 1, 860, 860, (0, 859), ("none",)),
    _facts(f"{XPX}/foo-0/{SEG0}", 8730, 1, 204, 204, (0, 203), ("none",)),
    _facts(f"{XPX}/topic1-0/{SEG0}", 215, 1, 5, 5, (0, 4), ("none",)),
    # DETAILS.md "## SharaWeil__kafka-0.11.0": mac_test-0 "empty"; test0-* v2 uncompressed.
    _facts(f"{SHARA}/mac_test-0/00000000000000000078.log", 0, None, 0, 0, None),
    _facts(f"{SHARA}/test0-0/{SEG0}", 757, 2, 11, 11, (0, 10), ("none",), epochs=(0,)),
    _facts(f"{SHARA}/test0-1/{SEG0}", 758, 2, 11, 11, (0, 10), ("none",), epochs=(0,)),
    _facts(f"{SHARA}/test0-2/{SEG0}", 698, 2, 10, 11, (0, 10), ("none",), epochs=(0,)),
    # DETAILS.md "## KAIPASUBHASH__kafka-logs".
    _facts(f"{KAIPA}/__consumer_offsets-2/{SEG0}", 573, 2, 3, 3, (0, 2), ("none",), epochs=(0,)),
    _facts(f"{KAIPA}/__consumer_offsets-26/{SEG0}", 1263, 2, 8, 8, (0, 7), ("none",), epochs=(0,)),
    _facts(f"{KAIPA}/__consumer_offsets-46/{SEG0}", 1263, 2, 8, 8, (0, 7), ("none",), epochs=(0,)),
    _facts(f"{KAIPA}/subhash-0/{SEG0}", 221, 2, 3, 3, (0, 2), ("none",), epochs=(0,)),
    # DETAILS.md "## VolodymyrZee__kafka" (nullValues(tombstones)=1 on __consumer_offsets-17 and -33).
    _facts(f"{VOLO}/__consumer_offsets-12/{SEG0}", 45702, 2, 162, 470, (0, 469), ("none",), epochs=(0,)),
    _facts(f"{VOLO}/__consumer_offsets-17/{SEG0}", 630, 2, 3, 3, (0, 2), ("none",), epochs=(0,),
           tombstones=1),
    _facts(f"{VOLO}/__consumer_offsets-18/{SEG0}", 57161, 2, 277, 499, (0, 498), ("none",), epochs=(0,)),
    _facts(f"{VOLO}/__consumer_offsets-32/{SEG0}", 5058, 2, 18, 50, (0, 49), ("none",), epochs=(0,)),
    _facts(f"{VOLO}/__consumer_offsets-33/{SEG0}", 630, 2, 3, 3, (0, 2), ("none",), epochs=(0,),
           tombstones=1),
    _facts(f"{VOLO}/first_topic-0/{SEG0}", 804, 2, 10, 11, (0, 10), ("none",), epochs=(0,)),
    _facts(f"{VOLO}/first_topic-1/{SEG0}", 971, 2, 12, 12, (0, 11), ("none",), epochs=(0,)),
    _facts(f"{VOLO}/first_topic-2/{SEG0}", 1267, 2, 16, 18, (0, 17), ("none",), epochs=(0,)),
    _facts(f"{VOLO}/new_topic-0/{SEG0}", 189, 2, 2, 2, (0, 1), ("none",), epochs=(0,)),
    # DETAILS.md "## dipendrasaini__kafka-learnning-series": 4 segments per partition.
    _facts(f"{DIPEN}/invoice-0/{SEG0}", 999252, 2, 380, 30626, (0, 30625), ("none",), epochs=(0,)),
    _facts(f"{DIPEN}/invoice-0/00000000000000030626.log", 989360, 2, 64, 29985, (30626, 60610), ("none",),
           epochs=(0,)),
    _facts(f"{DIPEN}/invoice-0/00000000000000060611.log", 998265, 2, 61, 30256, (60611, 90866), ("none",),
           epochs=(0,)),
    _facts(f"{DIPEN}/invoice-0/00000000000000090867.log", 311092, 2, 20, 9427, (90867, 100293), ("none",),
           epochs=(0,)),
    _facts(f"{DIPEN}/invoice-1/{SEG0}", 999904, 2, 403, 30620, (0, 30619), ("none",), epochs=(0,)),
    _facts(f"{DIPEN}/invoice-1/00000000000000030620.log", 985789, 2, 65, 29872, (30620, 60491), ("none",),
           epochs=(0,)),
    _facts(f"{DIPEN}/invoice-1/00000000000000060492.log", 998265, 2, 61, 30256, (60492, 90747), ("none",),
           epochs=(0,)),
    _facts(f"{DIPEN}/invoice-1/00000000000000090748.log", 289521, 2, 18, 8775, (90748, 99522), ("none",),
           epochs=(0,)),
    # DETAILS.md "## seanorth__kafka-server": some-topic-0 is v2 snappy.
    _facts(f"{SEAN}/__consumer_offsets-16/{SEG0}", 15526, 2, 69, 69, (0, 68), ("none",), epochs=(0,)),
    _facts(f"{SEAN}/some-topic-0/{SEG0}", 1989, 2, 9, 9, (0, 8), ("snappy",), epochs=(0,)),
    # DETAILS.md "## ArthurArutunyan04__Backend_labs": KRaft metadata with
    # controlBatches=5/3['LEADER_CHANGE'], compacted __consumer_offsets-19 (7 records over
    # 186795..258526), snappy oms_order_* topics.
    _facts(f"{ARTHUR}/__cluster_metadata-0/{SEG0}", 359259, 2, 4690, 5151, (0, 5150), ("none",),
           epochs=(1, 2, 3, 4, 5), control_batches=5, control_types=("LEADER_CHANGE",)),
    _facts(f"{ARTHUR}/__cluster_metadata-0/00000000000000005151.log", 142722, 2, 1746, 2169, (5151, 7319),
           ("none",), epochs=(6, 7, 8), control_batches=3, control_types=("LEADER_CHANGE",)),
    _facts(f"{ARTHUR}/__consumer_offsets-19/{SEG0}", 1204, 2, 3, 7, (186795, 258526), ("none",),
           epochs=(6,)),
    _facts(f"{ARTHUR}/oms_order_created-1/00000000000000081908.log", 3098017, 2, 1253, 12738,
           (81908, 94645), ("snappy",), epochs=(10, 12, 14)),
    _facts(f"{ARTHUR}/oms_order_status_changed-0/{SEG0}", 297084, 2, 1257, 3298, (0, 3297), ("snappy",),
           epochs=(10, 12, 14)),
    _facts(f"{ARTHUR}/oms_order_status_changed-1/00000000000000021236.log", 305262, 2, 1291, 3415,
           (21236, 24650), ("snappy",), epochs=(10, 12, 14)),
    _facts(f"{ARTHUR}/oms_order_status_changed-2/00000000000000010917.log", 295935, 2, 1262, 3258,
           (10917, 14174), ("snappy",), epochs=(10, 12, 14)),
    # DETAILS.md "## mscaldas2012__kafka-connect-spooldir": lz4, tstype=['LogAppend'] on the four rekey
    # partitions, tombstones on __consumer_offsets, _schemas-0 (all 63) and the Connect topics.
    _facts(f"{MSC}/__consumer_offsets-0/{SEG0}", 720, 2, 6, 6, (0, 5), ("none",), epochs=(0,), tombstones=1),
    _facts(f"{MSC}/__consumer_offsets-29/{SEG0}", 25270, 2, 78, 78, (0, 77), ("none",), epochs=(0,),
           tombstones=1),
    _facts(f"{MSC}/__consumer_offsets-37/{SEG0}", 30198, 2, 90, 90, (0, 89), ("none",), epochs=(0,),
           tombstones=1),
    _facts(f"{MSC}/_confluent-command-0/{SEG0}", 231, 2, 1, 2, (0, 1), ("lz4",), epochs=(0,)),
    _facts(f"{MSC}/{CC}KSTREAM-OUTEROTHER-0000000096-store-changelog-0/{SEG0}", 1595, 2, 11, 11, (0, 10),
           ("lz4",), epochs=(0,)),
    _facts(f"{MSC}/{CC}KSTREAM-OUTERTHIS-0000000095-store-changelog-0/{SEG0}", 1595, 2, 11, 11, (0, 10),
           ("lz4",), epochs=(0,)),
    _facts(f"{MSC}/{CC}actual-group-consumption-rekey-0/{SEG0}", 1640, 2, 12, 14, (0, 13), ("lz4",),
           epochs=(0,), log_append_time=True),
    _facts(f"{MSC}/{CC}expected-group-consumption-rekey-0/{SEG0}", 1640, 2, 12, 14, (0, 13), ("lz4",),
           epochs=(0,), log_append_time=True),
    _facts(f"{MSC}/{CC}monitoring-message-rekey-0/{SEG0}", 1375, 2, 11, 11, (0, 10), ("lz4",),
           epochs=(0,), log_append_time=True),
    _facts(f"{MSC}/{CC}monitoring-trigger-event-rekey-0/{SEG0}", 1080, 2, 11, 22, (0, 21), ("lz4",),
           epochs=(0,), log_append_time=True),
    _facts(f"{MSC}/_schemas-0/{SEG0}", 6048, 2, 63, 63, (0, 62), ("none",), epochs=(0,), tombstones=63),
    _facts(f"{MSC}/docker-connect-configs-0/{SEG0}", 35640, 2, 45, 54, (0, 53), ("none",), epochs=(0,),
           tombstones=18),
    _facts(f"{MSC}/docker-connect-status-0/{SEG0}", 21682, 2, 127, 135, (0, 134), ("none",), epochs=(0,),
           tombstones=18),
    # DETAILS.md "## berkayakcay__toy-node-log-collector": v2 gzip, 17/16/17 batches.
    _facts(f"{BERK}/topic-logx-001-0/{SEG0}", 10422, 2, 17, 17, (0, 16), ("gzip",), epochs=(0,)),
    _facts(f"{BERK}/topic-logx-001-1/{SEG0}", 12936, 2, 16, 16, (0, 15), ("gzip",), epochs=(0,)),
    _facts(f"{BERK}/topic-logx-001-2/{SEG0}", 10475, 2, 17, 17, (0, 16), ("gzip",), epochs=(0,)),
    # DETAILS.md "## Danielowo2000__BigDataTechnologies-Version-2": producerIds=1 (6 on locations-0),
    # command topic "txnBatches=8 controlBatches=4['COMMIT']", _schemas-0 leaderEpochs=[0, 2, 4] tombstones=4.
    _facts(f"{DANIEL}/CURRENTLOCATION-0/{SEG0}", 630, 2, 6, 6, (0, 5), ("none",), epochs=(0,),
           producer_ids=1),
    _facts(f"{DANIEL}/{KSQL}_command_topic-0/{SEG0}", 29110, 2, 8, 8, (0, 7), ("none",), epochs=(0,),
           producer_ids=1, txn_batches=8, control_batches=4, control_types=("COMMIT",)),
    _facts(f"{DANIEL}/{KSQL}query_CTAS_CURRENTLOCATION_3-Aggregate-GroupBy-repartition-0/{SEG0}", 858, 2, 6,
           6, (0, 5), ("none",), epochs=(0,), producer_ids=1),
    _facts(f"{DANIEL}/{KSQL}query_CTAS_RIDERSNEARMOUNTAINVIEW_5-Aggregate-GroupBy-repartition-0/{SEG0}", 930,
           2, 6, 6, (0, 5), ("none",), epochs=(0,), producer_ids=1),
    _facts(f"{DANIEL}/_kafka-connect-configs-0/{SEG0}", 195, 2, 1, 1, (0, 0), ("none",), epochs=(0,)),
    _facts(f"{DANIEL}/_schemas-0/{SEG0}", 384, 2, 4, 4, (0, 3), ("none",), epochs=(0, 2, 4), tombstones=4),
    _facts(f"{DANIEL}/locations-0/{SEG0}", 810, 2, 6, 6, (0, 5), ("none",), epochs=(0,), producer_ids=6),
    # DETAILS.md "## ronem123__rupia-transaction-service".  Its metadata segment's row lists no
    # controlBatches (the coverage summary's LEADER_CHANGE mention is not borne out by the per-file row:
    # the per-file row is what is transcribed).  __consumer_offsets-44/0 has a gap (6..8 in 2 records).
    _facts(f"{RONEM}/__cluster_metadata-0/00000000000001725413.log", 874344, 2, 12105, 12156,
           (1725413, 1737568), ("none",), epochs=(1,)),
    _facts(f"{RONEM}/__consumer_offsets-31/{SEG0}", 366, 2, 1, 1, (2, 2), ("none",), epochs=(0,)),
    _facts(f"{RONEM}/__consumer_offsets-31/00000000000000000003.log", 491, 2, 2, 2, (3, 4), ("none",),
           epochs=(2, 10)),
    _facts(f"{RONEM}/__consumer_offsets-44/{SEG0}", 272, 2, 2, 2, (6, 8), ("none",), epochs=(0,)),
    _facts(f"{RONEM}/__consumer_offsets-44/00000000000000000009.log", 153, 2, 1, 2, (9, 10), ("none",),
           epochs=(4,), tombstones=2),
    _facts(f"{RONEM}/topic_transactions-0/00000000000000000005.log", 0, None, 0, 0, None),
    # DETAILS.md "## yuanliubei__kafka-source-code": cleaned __consumer_offsets-17, empty topic1-0 segment.
    _facts(f"{YUAN}/__consumer_offsets-17/{SEG0}", 236, 2, 2, 2, (56, 57), ("none",), epochs=(0,)),
    _facts(f"{YUAN}/__consumer_offsets-17/00000000000000000058.log", 119, 2, 1, 2, (58, 59), ("none",),
           epochs=(0,), tombstones=2),
    _facts(f"{YUAN}/topic1-0/00000000000002722402.log", 0, None, 0, 0, None),
]

_SNAPSHOT_TYPES = ("KRAFT_VERSION", "KRAFT_VOTERS", "SNAPSHOT_FOOTER", "SNAPSHOT_HEADER")

GOLDEN_CHECKPOINTS: list[Facts] = [
    # DETAILS.md rows of the KRaft bootstrap/snapshot .checkpoint files (record batches, v2).
    _facts(f"{ARTHUR}/bootstrap.checkpoint", 309, 2, 3, 5, (0, 4), ("none",), epochs=(0,),
           control_batches=2, control_types=("SNAPSHOT_FOOTER", "SNAPSHOT_HEADER")),
    _facts(f"{DANIEL}/bootstrap.checkpoint", 249, 2, 3, 3, (0, 2), ("none",), epochs=(0,),
           control_batches=2, control_types=("SNAPSHOT_FOOTER", "SNAPSHOT_HEADER")),
    _facts(f"{RONEM}/bootstrap.checkpoint", 355, 2, 3, 6, (0, 5), ("none",), epochs=(0,),
           control_batches=2, control_types=("SNAPSHOT_FOOTER", "SNAPSHOT_HEADER")),
    *[
        _facts(f"{RONEM}/__cluster_metadata-0/{name}-0000000001.checkpoint", 4973, 2, 3, 68, (0, 67),
               ("none",), epochs=(1,), control_batches=2, control_types=_SNAPSHOT_TYPES)
        for name in ("00000000000001720405", "00000000000001727631", "00000000000001734780")
    ],
]

ALL_FILES = GOLDEN_LOGS + GOLDEN_CHECKPOINTS
EMPTY_LOGS = [f["path"] for f in GOLDEN_LOGS if f["bytes"] == 0]


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
    assert on_disk == {f["path"] for f in GOLDEN_LOGS}
    assert len(GOLDEN_LOGS) == 74
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
        assert batch.control_type() is kinds[0]
        control_record_types.update(kind.name for kind in kinds)
    assert control_record_types == facts["control_types"]
    data_batches = [b for b in batches if isinstance(b, DefaultRecordBatch) and not b.is_control]
    assert all(b.control_type() is None for b in data_batches)

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
    for facts in GOLDEN_LOGS:
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
    batches = _v2_batches(_data(golden, f"{DANIEL}/{KSQL}_command_topic-0/{SEG0}"))
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
        assert batch.control_type() is ControlRecordType.COMMIT
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
        assert batch.control_type() is ControlRecordType.LEADER_CHANGE
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
    batches = _legacy_batches(_data(golden, f"{KAFKALITE}/fs-data/hamlet-{codec}-0/{SEG0}"))
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
        codec: list(MemoryRecords(_data(golden, f"{KAFKALITE}/fs-data/hamlet-{codec}-0/{SEG0}")).records())
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


KAFKALITE_GOLDEN = {"hamlet-gzip-0": 5382, "hamlet-none-0": 5382, "hamlet-snappy-0": 5382, "numbers-0": 11394}
_GOLDEN_LINE = re.compile(r'(0|[1-9][0-9]*): "(?:[^"\\]|\\.)*"')


@pytest.mark.parametrize("topic", sorted(KAFKALITE_GOLDEN))
def test_kafkalite_golden_decoding(impl: ModuleType, golden: pathlib.Path, topic: str) -> None:
    text = (golden / KAFKALITE / "golden" / topic).read_bytes().decode("ascii")
    assert text.endswith("\n")
    expected = text.splitlines()
    assert len(expected) == KAFKALITE_GOLDEN[topic]  # DETAILS: lines=5382 / lines=11394
    assert all(_GOLDEN_LINE.fullmatch(line) for line in expected)
    records = list(MemoryRecords(_data(golden, f"{KAFKALITE}/fs-data/{topic}/{SEG0}")).records())
    assert all(r.value is not None for r in records)
    actual = [f"{r.offset}: {haskell_show(r.value)}" for r in records]
    assert len(actual) == len(expected)
    mismatched = [(i, a, e) for i, (a, e) in enumerate(zip(actual, expected, strict=True)) if a != e]
    assert mismatched[:5] == []
    assert actual == expected
    if topic.startswith("hamlet"):
        # The only escape the Hamlet files use is \t, on two lines; the renderer must produce both.
        assert sum("\\t" in line for line in actual) == 2

"""What the golden folder holds: its path, its data directories, and the facts of DETAILS.md, in one place.

``../shared/golden`` (``/work/shared/golden``) is a read-only folder of data directories copied byte for
byte from brokers (Kafka 0.8 to 3.7+, KRaft included); ``DETAILS.md`` there lists, per file, what an
independent struct-based reader found in it.  The tables below transcribe those rows by hand, once; the
golden, storage-golden and log-golden suites, the fault tests and the CLI tests take what they need from
here, so a fact corrected in one place is corrected for all.  Nothing here is computed from kafkalog.

Transcription conventions (one row per ``.log`` file, and per KRaft ``.checkpoint`` snapshot, which uses the
same record format):

* ``magic=[m]`` -> ``magic``; ``batches=``/``top-level msgs=`` -> ``batches`` (v2 batches, or top-level
  v0/v1 messages, wrappers counting once); ``records=`` -> ``records`` (deep); ``offsets=a..b`` ->
  ``offsets``; ``codecs=[...]`` -> ``codecs``; ``leaderEpochs=[...]`` -> ``epochs`` (v2 only).
* ``nullValues(tombstones)``, ``producerIds``, ``txnBatches``, ``controlBatches``, ``compressedWrappers``
  and ``tstype`` are printed only when there is something to say: a row that omits them means 0 of each and
  CreateTime timestamps (v0: none).
* An index row "N/M entries (relOffset,pos) == (batch lastOffset, batch position)" gives
  :data:`OFFSET_INDEX_FACTS`; "timeindex vs log: N/M entries = a batch lastOffset" gives
  :data:`TIME_INDEX_FACTS`.

Paths are relative to :data:`GOLDEN`.  A data directory (``log.dirs`` entry) is named by its set's owner;
:data:`KAFKALITE` is the kafkalite set's data directory (``fs-data``) and :data:`KAFKALITE_EXPECTED` the
folder of that set's own expected decodings.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

#: The golden folder: ``shared/golden`` beside the repository.
GOLDEN = Path(__file__).resolve().parents[3] / "shared" / "golden"

# The data directories (``log.dirs`` entries), relative to GOLDEN, one per set of DETAILS.md.
KAFKALITE = "asayers__kafkalite/tests/test-data/fs-data"
BULLSHIT = "xpxwo100__bullShit/tmp/kafka-logs"
SHARAWEIL = "SharaWeil__kafka-0.11.0/data"
KAIPASUBHASH = "KAIPASUBHASH__kafka-logs"
VOLODYMYRZEE = "VolodymyrZee__kafka"
DIPENDRASAINI = "dipendrasaini__kafka-learnning-series/tmp/kafka-logs"
SEANORTH = "seanorth__kafka-server/kafka-logs"
ARTHUR = "ArthurArutunyan04__Backend_labs/kafka-data"
MSCALDAS = "mscaldas2012__kafka-connect-spooldir/kafka-data"
BERKAYAKCAY = "berkayakcay__toy-node-log-collector/kafka-data"
DANIELOWO = "Danielowo2000__BigDataTechnologies-Version-2/kafka_data"
RONEM = "ronem123__rupia-transaction-service/kafka-logs"
YUANLIUBEI = "yuanliubei__kafka-source-code/kafka-logs"
DATA_DIRS = (KAFKALITE, BULLSHIT, SHARAWEIL, KAIPASUBHASH, VOLODYMYRZEE, DIPENDRASAINI, SEANORTH, ARTHUR,
             MSCALDAS, BERKAYAKCAY, DANIELOWO, RONEM, YUANLIUBEI)

#: The kafkalite set's expected decodings (one file per topic, Haskell ``show`` lines) and their line counts.
KAFKALITE_EXPECTED = "asayers__kafkalite/tests/test-data/golden"
KAFKALITE_EXPECTED_LINES = {"hamlet-gzip-0": 5382, "hamlet-none-0": 5382, "hamlet-snappy-0": 5382,
                            "numbers-0": 11394}

# Topic-name prefixes of the Confluent Control Center and ksqlDB topics.
CC = "_confluent-controlcenter-5-1-2-1-"
KSQL = "_confluent-ksql-default_"
#: The file name of a segment at base offset 0.
SEG0 = "00000000000000000000.log"

#: One file's row of DETAILS.md (see :func:`facts` for the keys).
Facts = dict[str, Any]


def facts(
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


#: Every ``.log`` file of DETAILS.md.
LOG_FILES: list[Facts] = [
    # DETAILS.md "## asayers__kafkalite": v0, 22 gzip/snappy wrappers ("compressedWrappers=22").
    facts(f"{KAFKALITE}/hamlet-gzip-0/{SEG0}", 143118, 0, 22, 5382, (0, 5381), ("gzip",),
           wrappers=22),
    facts(f"{KAFKALITE}/hamlet-none-0/{SEG0}", 309516, 0, 5382, 5382, (0, 5381), ("none",)),
    facts(f"{KAFKALITE}/hamlet-snappy-0/{SEG0}", 193332, 0, 22, 5382, (0, 5381), ("snappy",),
           wrappers=22),
    facts(f"{KAFKALITE}/numbers-0/{SEG0}", 342100, 0, 11394, 11394, (0, 11393), ("none",)),
    # DETAILS.md "## xpxwo100__bullShit": v1, CreateTime, uncompressed.
    facts(f"{BULLSHIT}/TEST-TOPIC-0/{SEG0}", 1315082, 1, 21211, 21211, (0, 21210), ("none",)),
    facts(f"{BULLSHIT}/__consumer_offsets-40/{SEG0}", 70141, 1, 860, 860, (0, 859), ("none",)),
    facts(f"{BULLSHIT}/foo-0/{SEG0}", 8730, 1, 204, 204, (0, 203), ("none",)),
    facts(f"{BULLSHIT}/topic1-0/{SEG0}", 215, 1, 5, 5, (0, 4), ("none",)),
    # DETAILS.md "## SharaWeil__kafka-0.11.0": mac_test-0 "empty"; test0-* v2 uncompressed.
    facts(f"{SHARAWEIL}/mac_test-0/00000000000000000078.log", 0, None, 0, 0, None),
    facts(f"{SHARAWEIL}/test0-0/{SEG0}", 757, 2, 11, 11, (0, 10), ("none",), epochs=(0,)),
    facts(f"{SHARAWEIL}/test0-1/{SEG0}", 758, 2, 11, 11, (0, 10), ("none",), epochs=(0,)),
    facts(f"{SHARAWEIL}/test0-2/{SEG0}", 698, 2, 10, 11, (0, 10), ("none",), epochs=(0,)),
    # DETAILS.md "## KAIPASUBHASH__kafka-logs".
    facts(f"{KAIPASUBHASH}/__consumer_offsets-2/{SEG0}", 573, 2, 3, 3, (0, 2), ("none",), epochs=(0,)),
    facts(f"{KAIPASUBHASH}/__consumer_offsets-26/{SEG0}", 1263, 2, 8, 8, (0, 7), ("none",), epochs=(0,)),
    facts(f"{KAIPASUBHASH}/__consumer_offsets-46/{SEG0}", 1263, 2, 8, 8, (0, 7), ("none",), epochs=(0,)),
    facts(f"{KAIPASUBHASH}/subhash-0/{SEG0}", 221, 2, 3, 3, (0, 2), ("none",), epochs=(0,)),
    # DETAILS.md "## VolodymyrZee__kafka" (nullValues(tombstones)=1 on __consumer_offsets-17 and -33).
    facts(f"{VOLODYMYRZEE}/__consumer_offsets-12/{SEG0}", 45702, 2, 162, 470, (0, 469), ("none",), epochs=(0,)),
    facts(f"{VOLODYMYRZEE}/__consumer_offsets-17/{SEG0}", 630, 2, 3, 3, (0, 2), ("none",), epochs=(0,),
           tombstones=1),
    facts(f"{VOLODYMYRZEE}/__consumer_offsets-18/{SEG0}", 57161, 2, 277, 499, (0, 498), ("none",), epochs=(0,)),
    facts(f"{VOLODYMYRZEE}/__consumer_offsets-32/{SEG0}", 5058, 2, 18, 50, (0, 49), ("none",), epochs=(0,)),
    facts(f"{VOLODYMYRZEE}/__consumer_offsets-33/{SEG0}", 630, 2, 3, 3, (0, 2), ("none",), epochs=(0,),
           tombstones=1),
    facts(f"{VOLODYMYRZEE}/first_topic-0/{SEG0}", 804, 2, 10, 11, (0, 10), ("none",), epochs=(0,)),
    facts(f"{VOLODYMYRZEE}/first_topic-1/{SEG0}", 971, 2, 12, 12, (0, 11), ("none",), epochs=(0,)),
    facts(f"{VOLODYMYRZEE}/first_topic-2/{SEG0}", 1267, 2, 16, 18, (0, 17), ("none",), epochs=(0,)),
    facts(f"{VOLODYMYRZEE}/new_topic-0/{SEG0}", 189, 2, 2, 2, (0, 1), ("none",), epochs=(0,)),
    # DETAILS.md "## dipendrasaini__kafka-learnning-series": 4 segments per partition.
    facts(f"{DIPENDRASAINI}/invoice-0/{SEG0}", 999252, 2, 380, 30626, (0, 30625), ("none",), epochs=(0,)),
    facts(f"{DIPENDRASAINI}/invoice-0/00000000000000030626.log", 989360, 2, 64, 29985, (30626, 60610), ("none",),
           epochs=(0,)),
    facts(f"{DIPENDRASAINI}/invoice-0/00000000000000060611.log", 998265, 2, 61, 30256, (60611, 90866), ("none",),
           epochs=(0,)),
    facts(f"{DIPENDRASAINI}/invoice-0/00000000000000090867.log", 311092, 2, 20, 9427, (90867, 100293), ("none",),
           epochs=(0,)),
    facts(f"{DIPENDRASAINI}/invoice-1/{SEG0}", 999904, 2, 403, 30620, (0, 30619), ("none",), epochs=(0,)),
    facts(f"{DIPENDRASAINI}/invoice-1/00000000000000030620.log", 985789, 2, 65, 29872, (30620, 60491), ("none",),
           epochs=(0,)),
    facts(f"{DIPENDRASAINI}/invoice-1/00000000000000060492.log", 998265, 2, 61, 30256, (60492, 90747), ("none",),
           epochs=(0,)),
    facts(f"{DIPENDRASAINI}/invoice-1/00000000000000090748.log", 289521, 2, 18, 8775, (90748, 99522), ("none",),
           epochs=(0,)),
    # DETAILS.md "## seanorth__kafka-server": some-topic-0 is v2 snappy.
    facts(f"{SEANORTH}/__consumer_offsets-16/{SEG0}", 15526, 2, 69, 69, (0, 68), ("none",), epochs=(0,)),
    facts(f"{SEANORTH}/some-topic-0/{SEG0}", 1989, 2, 9, 9, (0, 8), ("snappy",), epochs=(0,)),
    # DETAILS.md "## ArthurArutunyan04__Backend_labs": KRaft metadata with
    # controlBatches=5/3['LEADER_CHANGE'], compacted __consumer_offsets-19 (7 records over
    # 186795..258526), snappy oms_order_* topics.
    facts(f"{ARTHUR}/__cluster_metadata-0/{SEG0}", 359259, 2, 4690, 5151, (0, 5150), ("none",),
           epochs=(1, 2, 3, 4, 5), control_batches=5, control_types=("LEADER_CHANGE",)),
    facts(f"{ARTHUR}/__cluster_metadata-0/00000000000000005151.log", 142722, 2, 1746, 2169, (5151, 7319),
           ("none",), epochs=(6, 7, 8), control_batches=3, control_types=("LEADER_CHANGE",)),
    facts(f"{ARTHUR}/__consumer_offsets-19/{SEG0}", 1204, 2, 3, 7, (186795, 258526), ("none",),
           epochs=(6,)),
    facts(f"{ARTHUR}/oms_order_created-1/00000000000000081908.log", 3098017, 2, 1253, 12738,
           (81908, 94645), ("snappy",), epochs=(10, 12, 14)),
    facts(f"{ARTHUR}/oms_order_status_changed-0/{SEG0}", 297084, 2, 1257, 3298, (0, 3297), ("snappy",),
           epochs=(10, 12, 14)),
    facts(f"{ARTHUR}/oms_order_status_changed-1/00000000000000021236.log", 305262, 2, 1291, 3415,
           (21236, 24650), ("snappy",), epochs=(10, 12, 14)),
    facts(f"{ARTHUR}/oms_order_status_changed-2/00000000000000010917.log", 295935, 2, 1262, 3258,
           (10917, 14174), ("snappy",), epochs=(10, 12, 14)),
    # DETAILS.md "## mscaldas2012__kafka-connect-spooldir": lz4, tstype=['LogAppend'] on the four rekey
    # partitions, tombstones on __consumer_offsets, _schemas-0 (all 63) and the Connect topics.
    facts(f"{MSCALDAS}/__consumer_offsets-0/{SEG0}", 720, 2, 6, 6, (0, 5), ("none",), epochs=(0,), tombstones=1),
    facts(f"{MSCALDAS}/__consumer_offsets-29/{SEG0}", 25270, 2, 78, 78, (0, 77), ("none",), epochs=(0,),
           tombstones=1),
    facts(f"{MSCALDAS}/__consumer_offsets-37/{SEG0}", 30198, 2, 90, 90, (0, 89), ("none",), epochs=(0,),
           tombstones=1),
    facts(f"{MSCALDAS}/_confluent-command-0/{SEG0}", 231, 2, 1, 2, (0, 1), ("lz4",), epochs=(0,)),
    facts(f"{MSCALDAS}/{CC}KSTREAM-OUTEROTHER-0000000096-store-changelog-0/{SEG0}", 1595, 2, 11, 11, (0, 10),
           ("lz4",), epochs=(0,)),
    facts(f"{MSCALDAS}/{CC}KSTREAM-OUTERTHIS-0000000095-store-changelog-0/{SEG0}", 1595, 2, 11, 11, (0, 10),
           ("lz4",), epochs=(0,)),
    facts(f"{MSCALDAS}/{CC}actual-group-consumption-rekey-0/{SEG0}", 1640, 2, 12, 14, (0, 13), ("lz4",),
           epochs=(0,), log_append_time=True),
    facts(f"{MSCALDAS}/{CC}expected-group-consumption-rekey-0/{SEG0}", 1640, 2, 12, 14, (0, 13), ("lz4",),
           epochs=(0,), log_append_time=True),
    facts(f"{MSCALDAS}/{CC}monitoring-message-rekey-0/{SEG0}", 1375, 2, 11, 11, (0, 10), ("lz4",),
           epochs=(0,), log_append_time=True),
    facts(f"{MSCALDAS}/{CC}monitoring-trigger-event-rekey-0/{SEG0}", 1080, 2, 11, 22, (0, 21), ("lz4",),
           epochs=(0,), log_append_time=True),
    facts(f"{MSCALDAS}/_schemas-0/{SEG0}", 6048, 2, 63, 63, (0, 62), ("none",), epochs=(0,), tombstones=63),
    facts(f"{MSCALDAS}/docker-connect-configs-0/{SEG0}", 35640, 2, 45, 54, (0, 53), ("none",), epochs=(0,),
           tombstones=18),
    facts(f"{MSCALDAS}/docker-connect-status-0/{SEG0}", 21682, 2, 127, 135, (0, 134), ("none",), epochs=(0,),
           tombstones=18),
    # DETAILS.md "## berkayakcay__toy-node-log-collector": v2 gzip, 17/16/17 batches.
    facts(f"{BERKAYAKCAY}/topic-logx-001-0/{SEG0}", 10422, 2, 17, 17, (0, 16), ("gzip",), epochs=(0,)),
    facts(f"{BERKAYAKCAY}/topic-logx-001-1/{SEG0}", 12936, 2, 16, 16, (0, 15), ("gzip",), epochs=(0,)),
    facts(f"{BERKAYAKCAY}/topic-logx-001-2/{SEG0}", 10475, 2, 17, 17, (0, 16), ("gzip",), epochs=(0,)),
    # DETAILS.md "## Danielowo2000__BigDataTechnologies-Version-2": producerIds=1 (6 on locations-0),
    # command topic "txnBatches=8 controlBatches=4['COMMIT']", _schemas-0 leaderEpochs=[0, 2, 4] tombstones=4.
    facts(f"{DANIELOWO}/CURRENTLOCATION-0/{SEG0}", 630, 2, 6, 6, (0, 5), ("none",), epochs=(0,),
           producer_ids=1),
    facts(f"{DANIELOWO}/{KSQL}_command_topic-0/{SEG0}", 29110, 2, 8, 8, (0, 7), ("none",), epochs=(0,),
           producer_ids=1, txn_batches=8, control_batches=4, control_types=("COMMIT",)),
    facts(f"{DANIELOWO}/{KSQL}query_CTAS_CURRENTLOCATION_3-Aggregate-GroupBy-repartition-0/{SEG0}", 858, 2, 6,
           6, (0, 5), ("none",), epochs=(0,), producer_ids=1),
    facts(f"{DANIELOWO}/{KSQL}query_CTAS_RIDERSNEARMOUNTAINVIEW_5-Aggregate-GroupBy-repartition-0/{SEG0}", 930,
           2, 6, 6, (0, 5), ("none",), epochs=(0,), producer_ids=1),
    facts(f"{DANIELOWO}/_kafka-connect-configs-0/{SEG0}", 195, 2, 1, 1, (0, 0), ("none",), epochs=(0,)),
    facts(f"{DANIELOWO}/_schemas-0/{SEG0}", 384, 2, 4, 4, (0, 3), ("none",), epochs=(0, 2, 4), tombstones=4),
    facts(f"{DANIELOWO}/locations-0/{SEG0}", 810, 2, 6, 6, (0, 5), ("none",), epochs=(0,), producer_ids=6),
    # DETAILS.md "## ronem123__rupia-transaction-service".  Its metadata segment's row lists no
    # controlBatches (the coverage summary's LEADER_CHANGE mention is not borne out by the per-file row:
    # the per-file row is what is transcribed).  __consumer_offsets-44/0 has a gap (6..8 in 2 records).
    facts(f"{RONEM}/__cluster_metadata-0/00000000000001725413.log", 874344, 2, 12105, 12156,
           (1725413, 1737568), ("none",), epochs=(1,)),
    facts(f"{RONEM}/__consumer_offsets-31/{SEG0}", 366, 2, 1, 1, (2, 2), ("none",), epochs=(0,)),
    facts(f"{RONEM}/__consumer_offsets-31/00000000000000000003.log", 491, 2, 2, 2, (3, 4), ("none",),
           epochs=(2, 10)),
    facts(f"{RONEM}/__consumer_offsets-44/{SEG0}", 272, 2, 2, 2, (6, 8), ("none",), epochs=(0,)),
    facts(f"{RONEM}/__consumer_offsets-44/00000000000000000009.log", 153, 2, 1, 2, (9, 10), ("none",),
           epochs=(4,), tombstones=2),
    facts(f"{RONEM}/topic_transactions-0/00000000000000000005.log", 0, None, 0, 0, None),
    # DETAILS.md "## yuanliubei__kafka-source-code": cleaned __consumer_offsets-17, empty topic1-0 segment.
    facts(f"{YUANLIUBEI}/__consumer_offsets-17/{SEG0}", 236, 2, 2, 2, (56, 57), ("none",), epochs=(0,)),
    facts(f"{YUANLIUBEI}/__consumer_offsets-17/00000000000000000058.log", 119, 2, 1, 2, (58, 59), ("none",),
           epochs=(0,), tombstones=2),
    facts(f"{YUANLIUBEI}/topic1-0/00000000000002722402.log", 0, None, 0, 0, None),
]

_SNAPSHOT_TYPES = ("KRAFT_VERSION", "KRAFT_VOTERS", "SNAPSHOT_FOOTER", "SNAPSHOT_HEADER")

CHECKPOINT_FILES: list[Facts] = [
    # DETAILS.md rows of the KRaft bootstrap/snapshot .checkpoint files (record batches, v2).
    facts(f"{ARTHUR}/bootstrap.checkpoint", 309, 2, 3, 5, (0, 4), ("none",), epochs=(0,),
           control_batches=2, control_types=("SNAPSHOT_FOOTER", "SNAPSHOT_HEADER")),
    facts(f"{DANIELOWO}/bootstrap.checkpoint", 249, 2, 3, 3, (0, 2), ("none",), epochs=(0,),
           control_batches=2, control_types=("SNAPSHOT_FOOTER", "SNAPSHOT_HEADER")),
    facts(f"{RONEM}/bootstrap.checkpoint", 355, 2, 3, 6, (0, 5), ("none",), epochs=(0,),
           control_batches=2, control_types=("SNAPSHOT_FOOTER", "SNAPSHOT_HEADER")),
    *[
        facts(f"{RONEM}/__cluster_metadata-0/{name}-0000000001.checkpoint", 4973, 2, 3, 68, (0, 67),
               ("none",), epochs=(1,), control_batches=2, control_types=_SNAPSHOT_TYPES)
        for name in ("00000000000001720405", "00000000000001727631", "00000000000001734780")
    ],
]

# Every non-empty offset index: (partition folder, base offset, entries, entries equal to (batch
# lastOffset, batch position)), DETAILS.md "index vs log: N/M entries (relOffset,pos) == (batch lastOffset,
# batch position)".
OFFSET_INDEX_FACTS: list[tuple[str, int, int, int]] = [
    (f"{DIPENDRASAINI}/invoice-0", 0, 85, 69),
    (f"{DIPENDRASAINI}/invoice-0", 60611, 1, 0),
    (f"{DIPENDRASAINI}/invoice-1", 0, 94, 76),
    (f"{DIPENDRASAINI}/invoice-1", 30620, 2, 0),
    (f"{DIPENDRASAINI}/invoice-1", 60492, 1, 0),
    (f"{ARTHUR}/__cluster_metadata-0", 0, 86, 86),
    (f"{ARTHUR}/__cluster_metadata-0", 5151, 33, 33),
    (f"{ARTHUR}/oms_order_created-1", 81908, 581, 581),
    (f"{ARTHUR}/oms_order_status_changed-0", 0, 70, 70),
    (f"{ARTHUR}/oms_order_status_changed-1", 21236, 71, 71),
    (f"{ARTHUR}/oms_order_status_changed-2", 10917, 69, 69),
    (f"{RONEM}/__cluster_metadata-0", 1725413, 213, 213),
]

# Every non-empty time index: (partition folder, base offset, entries, entries at a batch's last offset),
# DETAILS.md "timeindex vs log: N/M entries = a batch lastOffset".  The others sit at their batch's base
# offset.
TIME_INDEX_FACTS: list[tuple[str, int, int, int]] = [
    (f"{SHARAWEIL}/test0-0", 0, 1, 1),
    (f"{SHARAWEIL}/test0-1", 0, 1, 1),
    (f"{SHARAWEIL}/test0-2", 0, 1, 1),
    (f"{DIPENDRASAINI}/invoice-0", 0, 85, 85),
    (f"{DIPENDRASAINI}/invoice-0", 30626, 1, 1),
    (f"{DIPENDRASAINI}/invoice-0", 60611, 1, 1),
    (f"{DIPENDRASAINI}/invoice-1", 0, 90, 90),
    (f"{DIPENDRASAINI}/invoice-1", 30620, 2, 2),
    (f"{DIPENDRASAINI}/invoice-1", 60492, 1, 1),
    (f"{ARTHUR}/__cluster_metadata-0", 0, 87, 87),
    (f"{ARTHUR}/__cluster_metadata-0", 5151, 35, 35),
    (f"{ARTHUR}/__consumer_offsets-19", 0, 1, 1),
    (f"{ARTHUR}/oms_order_created-1", 81908, 583, 583),
    (f"{ARTHUR}/oms_order_status_changed-0", 0, 73, 73),
    (f"{ARTHUR}/oms_order_status_changed-1", 21236, 74, 74),
    (f"{ARTHUR}/oms_order_status_changed-2", 10917, 72, 72),
    (f"{RONEM}/__cluster_metadata-0", 1725413, 214, 214),
    (f"{RONEM}/__consumer_offsets-31", 0, 1, 1),
    (f"{RONEM}/__consumer_offsets-31", 3, 1, 1),
    (f"{RONEM}/__consumer_offsets-44", 0, 1, 1),
    (f"{RONEM}/__consumer_offsets-44", 9, 1, 1),
    (f"{YUANLIUBEI}/__consumer_offsets-17", 0, 1, 1),
    (f"{YUANLIUBEI}/__consumer_offsets-17", 58, 1, 0),
]


#: ``log-start-offset-checkpoint`` entries above the first segment's base (DETAILS.md, Danielowo2000 set:
#: the application deleted the records below 5 of two ksqlDB repartition topics).
CHECKPOINTED_LOG_START = {
    (DANIELOWO, f"{KSQL}query_CTAS_RIDERSNEARMOUNTAINVIEW_5-Aggregate-GroupBy-repartition-0"): 5,
    (DANIELOWO, f"{KSQL}query_CTAS_CURRENTLOCATION_3-Aggregate-GroupBy-repartition-0"): 5,
}


# -- the same rows, seen per partition and per segment ---------------------------------------------------


class Segment(NamedTuple):
    """One ``.log`` row: base offset (from the file name), ``records=``, ``offsets=first..last`` (None: empty)."""

    base: int
    records: int
    first: int | None = None
    last: int | None = None


def _segments() -> dict[str, dict[str, tuple[Segment, ...]]]:
    table: dict[str, dict[str, list[Segment]]] = {}
    for row in LOG_FILES:
        data_dir, partition, name = row["path"].rsplit("/", 2)
        first, last = row["offsets"] if row["offsets"] is not None else (None, None)
        table.setdefault(data_dir, {}).setdefault(partition, []).append(
            Segment(int(name.removesuffix(".log")), row["records"], first, last))
    return {d: {p: tuple(sorted(segs)) for p, segs in parts.items()} for d, parts in table.items()}


#: Per data directory, per partition directory: its segments in offset order.
PARTITION_SEGMENTS: dict[str, dict[str, tuple[Segment, ...]]] = _segments()

#: Per ``.log`` segment: (partition folder, base offset, batches or top-level messages, records,
#: (first, last) offset or None when empty).
SEGMENT_FACTS: list[tuple[str, int, int, int, tuple[int, int] | None]] = [
    (row["path"].rsplit("/", 1)[0], int(row["path"].rsplit("/", 1)[1].removesuffix(".log")), row["batches"],
     row["records"], row["offsets"])
    for row in LOG_FILES
]

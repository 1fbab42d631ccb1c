"""Broker to kafkalog: what real clients wrote into a Kafka 4.4 broker, read from its stopped log dir by kafkalog,
is exactly what the broker's consumers got.

The run (:func:`~tests.oracle.broker.conftest.broker_to_kafkalog`) writes every kind of data of
:mod:`~tests.oracle.broker.workloads` with confluent-kafka, kafka-python and aiokafka, lets the broker's cleaner
clean the compacted topic, reads every partition with a ``read_committed`` and a ``read_uncommitted`` consumer,
and stops the broker.  Then, on its files: ``Log.records`` of each isolation level gives each partition's records
as that consumer got them (offsets, timestamps and their type, keys, values, headers); ``kafkalog dump`` prints
those records (and the transaction markers between them); ``kafkalog verify`` finds the whole log dir clean,
the KRaft metadata log and the internal topics included; ``kafkalog stats`` gives the broker's offsets; the Spark
source, both isolation levels, gives every partition's records as the consumers got them.
"""

from __future__ import annotations

import base64
import io
import json
from types import ModuleType
from typing import Any

import pytest

from kafkalog.cli import main
from kafkalog.manager.log_manager import LogManager
from tests.oracle.broker.clients import Row, library_rows
from tests.oracle.broker.conftest import ISOLATIONS, BrokerRun
from tests.oracle.broker.workloads import CODECS

pytestmark = pytest.mark.slow


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main(list(argv), stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


def test_the_broker_wrote_every_case(broker_to_kafkalog: BrokerRun) -> None:
    """The run holds what the comparisons below are about (else they would compare little): aborted records the
    committed consumer does not see, records the broker stamped, a compacted partition its cleaner cleaned with
    tombstones kept, and every record each client sent, once."""
    run = broker_to_kafkalog
    committed, uncommitted = run.consumed["read_committed"], run.consumed["read_uncommitted"]
    for topic in ("plain", "keyed", "codecs", "idempotent", "logappend", "recompressed"):
        got = [row for (t, _), rows in uncommitted.items() if t == topic for row in rows]
        assert len(got) == run.workload.sent[topic], topic
    for p in (0, 1):
        values = [row.value.decode() for row in uncommitted[("txn", p)] if row.value is not None]
        visible = [row.value.decode() for row in committed[("txn", p)] if row.value is not None]
        assert any(v.startswith("c-abort") for v in values) and not any("abort" in v for v in visible)
        assert sum(v.startswith(("c-commit", "a-commit", "k-commit")) for v in visible) == 30 + 24 + 18
    assert {row.timestamp_type for row in uncommitted[("logappend", 0)]} == {1}
    compacted = uncommitted[("compacted", 0)]
    assert run.cleaned_up_to > 0
    cleaned = [row for row in compacted if row.offset < run.cleaned_up_to]
    assert len({row.key for row in cleaned}) == len(cleaned), "the cleaned part keeps one record a key"
    assert sum(row.value is None for row in cleaned) == 10
    assert len(compacted) < run.workload.sent["compacted"] + 5


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_log_records_are_what_the_consumer_got(broker_to_kafkalog: BrokerRun, isolation: str,
                                               impl: ModuleType) -> None:
    run = broker_to_kafkalog
    with LogManager(run.log_dir, read_only=True) as manager:
        for tp, expected in run.consumed[isolation].items():
            log = manager.get_log(_tp(tp))
            assert log is not None, tp
            assert log.log_start_offset == run.log_start_offsets[tp], tp
            assert log.log_end_offset == run.high_watermarks[tp], tp
            assert library_rows(log.records(isolation=isolation)) == expected, tp


def _tp(tp: tuple[str, int]) -> Any:
    from kafkalog.topic import TopicPartition

    return TopicPartition(*tp)


def _dump_rows(lines: list[dict[str, Any]]) -> tuple[list[Row], int]:
    """The data records of ``kafkalog dump --json --print-data-log`` as :class:`Row` s, and how many control records
    it printed."""
    rows, controls, control_batch, timestamp_type = [], 0, False, 0
    for line in lines:
        if line["type"] == "batch":
            control_batch = line["isControl"]
            timestamp_type = 1 if line["timestampType"] == "LogAppendTime" else 0
        elif line["type"] == "record":
            if control_batch:
                controls += 1
                continue
            headers = tuple((h["key"], None if h["value"] is None else base64.b64decode(h["value"]))
                            for h in line.get("headers", ()))
            key = None if line["keySize"] < 0 else line["key"].encode()
            value = None if line["valueSize"] < 0 else line["payload"].encode()
            rows.append(Row(line["offset"], timestamp_type, line["timestamp"], key, value, headers))
    return rows, controls


def test_dump_prints_the_records_the_consumer_got(broker_to_kafkalog: BrokerRun, impl: ModuleType) -> None:
    """``kafkalog dump --deep-iteration --print-data-log`` of each partition dir prints every record a
    ``read_uncommitted`` consumer got, in order, with nothing else but the transaction markers, and exits 0."""
    run = broker_to_kafkalog
    for tp, expected in run.consumed["read_uncommitted"].items():
        status, out, err = run_cli("dump", "--json", "--deep-iteration", "--print-data-log", "--files",
                                   str(run.log_dir / f"{tp[0]}-{tp[1]}"))
        assert status == 0, (tp, err)
        rows, controls = _dump_rows([json.loads(line) for line in out.splitlines()])
        assert rows == expected, tp
        if tp[0] == "txn":
            assert controls > 0


def test_verify_finds_the_broker_log_dir_clean(broker_to_kafkalog: BrokerRun, impl: ModuleType) -> None:
    """``kafkalog verify`` of the whole log dir (the KRaft metadata log, ``__consumer_offsets`` and
    ``__transaction_state`` included) finds no error."""
    status, out, err = run_cli("verify", "--json", str(broker_to_kafkalog.log_dir))
    reports = [json.loads(line) for line in out.splitlines()]
    assert status == 0, [r for r in reports if not r.get("ok", True)] or err
    names = {r.get("topic") for r in reports}
    assert {"__cluster_metadata", "__consumer_offsets", "__transaction_state", "txn", "compacted"} <= names


def test_stats_give_the_broker_offsets(broker_to_kafkalog: BrokerRun, impl: ModuleType) -> None:
    """``kafkalog stats`` of the log dir: each partition's log start and end offsets are the broker's, its records and
    tombstones (keyed records without a value) those the uncommitted consumer got (and the markers), and its codecs
    those the clients (or, for the ``compression.type=zstd`` topic, the broker) wrote with."""
    run = broker_to_kafkalog
    status, out, err = run_cli("stats", "--json", str(run.log_dir))
    assert status == 0, err
    stats = {(s["topic"], s["partition"]): s for s in map(json.loads, out.splitlines())}
    for tp, rows in run.consumed["read_uncommitted"].items():
        s = stats[tp]
        assert (s["logStartOffset"], s["logEndOffset"]) == (run.log_start_offsets[tp], run.high_watermarks[tp]), tp
        assert s["tombstones"] == sum(row.key is not None and row.value is None for row in rows), tp
        # The transactional topics hold markers too, which stats count and consumers are not given.
        assert s["records"] == len(rows) if tp[0] not in ("txn", "compacted") else s["records"] > len(rows), tp
    codecs = {topic: set() for topic, _ in stats}
    for (topic, _), s in stats.items():
        codecs[topic] |= set(s["codecs"])
    # librdkafka sends a batch uncompressed when the compressed one came out larger (rd_kafka_msgset_writer_compress;
    # a batch cut down to a record or two by timing): every codec is there, and "none" may be beside them
    assert set(CODECS) <= codecs["codecs"] <= set(CODECS) | {"none"}
    assert codecs["recompressed"] == {"zstd"}
    assert codecs["logappend"] == {"lz4", "none"}


def test_spark_reads_what_the_consumer_got(broker_to_kafkalog: BrokerRun, spark: Any) -> None:
    """The Spark source over the stopped broker's log dir, every partition the clients wrote (``assign``), both
    isolation levels: each partition's rows are the records that consumer got, with their timestamp type,
    timestamp, key, value and headers (the compacted topic as the broker's cleaner left it)."""
    run = broker_to_kafkalog
    partitions = sorted(run.consumed["read_uncommitted"])
    assign: dict[str, list[int]] = {}
    for topic, partition in partitions:
        assign.setdefault(topic, []).append(partition)
    columns = ("topic", "partition", "offset", "timestampType", "unix_millis(timestamp)", "key", "value", "headers")
    for isolation in ISOLATIONS:
        frame = (spark.read.format("kafkalog").option("kafka.isolation.level", isolation)
                 .option("includeHeaders", "true").option("assign", json.dumps(assign)).load(str(run.log_dir)))
        got: dict[tuple[str, int], list[Row]] = {tp: [] for tp in partitions}
        for r in frame.selectExpr(*columns).collect():
            got[(r[0], r[1])].append(Row(r[2], r[3], r[4], None if r[5] is None else bytes(r[5]),
                                         None if r[6] is None else bytes(r[6]),
                                         tuple((h["key"], None if h["value"] is None else bytes(h["value"]))
                                               for h in r[7] or ())))
        assert {tp: sorted(rows) for tp, rows in got.items()} == \
            {tp: sorted(rows) for tp, rows in run.consumed[isolation].items()}, isolation

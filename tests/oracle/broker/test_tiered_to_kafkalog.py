"""Broker to kafkalog, tiered: what real clients wrote into a Kafka 3.9.2 broker that copied the partition's closed
segments to ``LocalTieredStorage`` and deleted them from its log dir is, read by kafkalog from the store and the
stopped broker's log dir, exactly what the broker's consumers got (Kafka 3.9.2, not 4.4: ``LocalTieredStorage``
is in the kafka-storage test jar, which Maven serves for 3.9.2 only).

The run (:func:`~tests.oracle.broker.conftest.tiered_to_kafkalog`, :mod:`~tests.oracle.broker.tiered`) writes
every codec, keys, headers, an idempotent producer and committed and aborted transactions, waits until the
broker tiered the first segments, reads the partition from offset 0 with a ``read_committed`` and a
``read_uncommitted`` consumer (the broker serves the first offsets from the store) and stops the broker.

kafkalog reads the first offsets from the store (:mod:`kafkalog.remote` through the planner's
:mod:`kafkalog.partition_view.tiered`, the segments ``__remote_log_metadata`` names as copied, the aborted transactions
of the uploaded ``.txnindex`` files) and the rest from the log dir (``Log.records``); the Spark source reads
the store and the partition dir; ``dump``, ``verify`` and ``stats`` read the log dir.
"""

from __future__ import annotations

import io
import json
from types import ModuleType
from typing import Any

import pytest

from kafkalog.cli import main
from kafkalog.log.consumer_view import ConsumerView, IsolationLevel
from kafkalog.manager.log_manager import LogManager
from kafkalog.topic import TopicPartition
from tests.oracle.broker.clients import Row, library_rows
from tests.oracle.broker.conftest import ISOLATIONS, TieredRun
from tests.oracle.broker.tiered import TIERED_TOPIC, store_segments

pytestmark = pytest.mark.slow

TP = TopicPartition(TIERED_TOPIC, 0)


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main(list(argv), stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


def _metadata_dir(run: TieredRun) -> str:
    return str(run.log_dir / "__remote_log_metadata-0")


def _store_rows(run: TieredRun, isolation: str) -> tuple[list[Row], int]:
    """The records of the store's partition a consumer of ``isolation`` gets, and the store's log end offset."""
    from kafkalog.partition_view.tiered import copied_ids, log_end_offset, tiered_partitions, transactions

    partitions = tiered_partitions(str(run.store), None, "kafka-local-tiered-storage",
                                   copied=copied_ids([_metadata_dir(run)], None))
    assert partitions is not None and [p.partition.name for p in partitions] == [f"{TIERED_TOPIC}-0"], partitions
    partition = partitions[0]
    assert not partition.skipped, partition.skipped
    end = log_end_offset(partition)
    segments = partition.partition.segments
    view = ConsumerView(segments[0].base_offset, end, IsolationLevel.of(isolation), transactions(partition, end))
    source = partition.source()
    records = view.records((source.open_log(s.base_offset), 0) for s in segments)
    return library_rows(records), end


def test_the_broker_tiered_the_partition(tiered_to_kafkalog: TieredRun) -> None:
    """The run holds what the comparisons are about: segments in the store, the first of them gone from the log
    dir, the broker's log start offset 0 (served from the store), every record sent, once, and an aborted
    transaction only the uncommitted consumer got."""
    run = tiered_to_kafkalog
    copied = store_segments(run.store)
    local = min(int(p.stem) for p in (run.log_dir / f"{TIERED_TOPIC}-0").glob("*.log"))
    assert len(copied) >= 3 and copied[0] == 0 and local > 0, (copied, local)
    assert run.log_start_offset == 0
    uncommitted, committed = run.consumed["read_uncommitted"], run.consumed["read_committed"]
    assert len(uncommitted) == run.sent
    assert [r.offset for r in uncommitted][:1] == [0]
    aborted = [r for r in uncommitted if r.value is not None and r.value.startswith(b"tx-abort")]
    assert len(aborted) == 40 and not any(r.value is not None and r.value.startswith(b"tx-abort") for r in committed)
    assert aborted[-1].offset < local, "the aborted transaction is in the tiered part"


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_the_store_and_the_log_dir_give_what_the_consumer_got(tiered_to_kafkalog: TieredRun, isolation: str,
                                                              impl: ModuleType) -> None:
    """The store's records are the consumer's below the store's end; ``Log.records`` of the log dir the
    consumer's from the local log's start; the two meet (no offset is in neither) and end at the broker's high
    watermark.  kafkalog's ``Log`` does not read the store (remote storage is not ported in ``Log``): its log
    start offset is the local log's first offset, where the broker's is 0."""
    run = tiered_to_kafkalog
    expected = run.consumed[isolation]
    store_rows, store_end = _store_rows(run, isolation)
    assert store_rows == [r for r in expected if r.offset < store_end]
    with LogManager(run.log_dir, read_only=True) as manager:
        log = manager.get_log(TP)
        assert log is not None
        local_start = log.log_start_offset
        assert log.log_end_offset == run.high_watermark
        local_rows = library_rows(log.records(isolation=isolation))
    assert 0 < local_start <= store_end < run.high_watermark
    assert local_rows == [r for r in expected if r.offset >= local_start]


def test_spark_reads_the_store_and_the_log_dir_as_the_consumer_got(tiered_to_kafkalog: TieredRun,
                                                                  spark: Any) -> None:
    """The Spark source over the store (``remoteLogMetadata`` naming the copied segments) and over the partition
    dir, both isolation levels: the consumer's records, each from where the store or the log dir holds them."""
    run = tiered_to_kafkalog
    columns = ("offset", "timestampType", "unix_millis(timestamp)", "key", "value", "headers")

    def rows(frame: Any) -> list[Row]:
        got = frame.selectExpr(*columns).collect()
        return sorted(Row(r[0], r[1], r[2], None if r[3] is None else bytes(r[3]),
                          None if r[4] is None else bytes(r[4]),
                          tuple((h["key"], None if h["value"] is None else bytes(h["value"])) for h in r[5] or ()))
                      for r in got)

    for isolation in ISOLATIONS:
        expected = run.consumed[isolation]
        def reader() -> Any:
            return (spark.read.format("kafkalog").option("kafka.isolation.level", isolation)  # noqa: B023
                    .option("includeHeaders", "true"))

        store = rows(reader().option("remoteLogMetadata", _metadata_dir(run)).load(str(run.store)))
        local = rows(reader().load(str(run.log_dir / f"{TIERED_TOPIC}-0")))
        assert store and local
        store_end = store[-1].offset + 1
        assert store == [r for r in expected if r.offset < store_end], isolation
        assert local == [r for r in expected if r.offset >= local[0].offset], isolation
        assert local[0].offset <= store_end


def test_dump_verify_and_stats_of_the_tiered_broker_log_dir(tiered_to_kafkalog: TieredRun, impl: ModuleType) -> None:
    """``dump`` prints the local records the consumer got and decodes ``__remote_log_metadata`` (every segment of
    the store is named there); ``verify`` finds the log dir clean; ``stats`` gives the broker's high watermark."""
    run = tiered_to_kafkalog
    status, out, err = run_cli("dump", "--json", "--deep-iteration", "--print-data-log", "--files",
                               str(run.log_dir / f"{TIERED_TOPIC}-0"))
    assert status == 0, err
    offsets = [line["offset"] for line in map(json.loads, out.splitlines()) if line["type"] == "record"]
    uncommitted = [r.offset for r in run.consumed["read_uncommitted"]]
    assert offsets and set(offsets) >= {o for o in uncommitted if o >= offsets[0]}
    status, out, err = run_cli("dump", "--remote-log-metadata-decoder", "--files", _metadata_dir(run))
    assert status == 0, err
    store = sorted((run.store / "kafka-tiered-storage").glob(f"{TIERED_TOPIC}-0-*/*.log"))
    for segment in store:
        assert segment.stem.split("-", 1)[1] in out, segment.name
    status, out, err = run_cli("verify", "--json", str(run.log_dir))
    reports = [json.loads(line) for line in out.splitlines()]
    assert status == 0, [r for r in reports if not r.get("ok", True)] or err
    assert {"__remote_log_metadata", TIERED_TOPIC} <= {r.get("topic") for r in reports}
    status, out, err = run_cli("stats", "--json", str(run.log_dir))
    assert status == 0, err
    stats = {(s["topic"], s["partition"]): s for s in map(json.loads, out.splitlines())}
    assert stats[(TIERED_TOPIC, 0)]["logEndOffset"] == run.high_watermark

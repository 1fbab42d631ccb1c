"""The ``kafkalog`` Spark data source and jobs, on a ``local[2]`` session shared by the test session.

Every expectation is computed by the library directly (``Log`` read-only, ``partition_stats``, the
cleaner) and compared with what Spark returns.
"""

from __future__ import annotations

import logging
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest

pyspark = pytest.importorskip("pyspark", reason="the spark extra is not installed")

from kafkalog.config.log_config import LogConfig  # noqa: E402
from kafkalog.fsutil import DirLock, clean_shutdown_marker_present  # noqa: E402
from kafkalog.record import MemoryRecords  # noqa: E402
from kafkalog.spark import compact, stats  # noqa: E402
from kafkalog.spark.options import is_internal  # noqa: E402
from kafkalog.spark.plan import find_partitions  # noqa: E402
from kafkalog.tools.log_dir_writer import LogDirWriter  # noqa: E402
from kafkalog.tools.partition_dir import PartitionDir  # noqa: E402
from kafkalog.tools.stats import partition_stats  # noqa: E402
from kafkalog.topic import TopicPartition  # noqa: E402
from tests.support.golden_data import ARTHUR, DANIELOWO, KAFKALITE  # noqa: E402
from tests.support.kraft_metadata import (  # noqa: E402
    TOPIC,
    config_record,
    topic_id,
    topic_record,
    write_meta_properties,
    write_metadata_log,
)
from tests.support.log_test_utils import append_transaction_sample, golden_log_dirs  # noqa: E402

pytestmark = pytest.mark.slow


def library_rows(path: Path, read_committed: bool = False) -> list[tuple[Any, ...]]:
    """What a consumer reads from a partition dir, by the library (``Log.records``, the consumer's view): no
    control batches; for read_committed (not the default, as in Kafka and Spark) no aborted transactions, up to
    the last stable offset."""
    partition = PartitionDir.of(path)
    tp = partition.topic_partition
    with partition.open_read_only() as log:
        isolation = "read_committed" if read_committed else "read_uncommitted"
        return [(tp.topic, tp.partition, r.offset, r.key, r.value) for r in log.records(isolation=isolation)]


def spark_rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted((r.topic, r.partition, r.offset, r.key, r.value) for r in df.collect())


def test_every_golden_log_dir_reads_as_the_library_reads_it(spark: Any, golden: Path) -> None:
    dirs = golden_log_dirs(golden)
    assert len(dirs) >= 13
    checked = 0
    for directory in dirs:
        if (directory.parent / "MISSING.txt").exists() and "258527" in (directory.parent / "MISSING.txt").read_text():
            continue  # a segment's .log was not copied: the log itself is incomplete
        partitions = find_partitions([str(directory)])
        # The broker's internal topics are read only when named, as a Kafka consumer reads them.
        internal = sorted({tp.topic for tp, _path in partitions if is_internal(tp.topic)})
        expected = sorted(row for tp, path in partitions if not is_internal(tp.topic) for row in library_rows(path))
        got = spark_rows(spark.read.format("kafkalog").load(str(directory)))
        assert got == expected, directory
        if internal:
            named = spark.read.format("kafkalog").option("subscribe", ",".join(internal)).load(str(directory))
            assert spark_rows(named) == sorted(row for tp, path in partitions if is_internal(tp.topic)
                                               for row in library_rows(path))
            checked += len(internal)
        checked += len(got)
    assert checked > 50_000


def test_formats_timestamps_and_headers(spark: Any, golden: Path, tmp_path: Path) -> None:
    root = tmp_path / "logs"
    with LogDirWriter(root, LogConfig({"message.format.version": "0.10.0"})) as writer:
        writer.log(TopicPartition("v1", 0)).append(MemoryRecords.with_records(
            [(b"k", b"v", 1_700_000_000_123)], magic=1, compression="gzip"))
    with LogDirWriter(root) as writer:
        writer.log(TopicPartition("v2", 0)).append(MemoryRecords.with_records(
            [(b"k", b"v", 1_700_000_000_456, [("h1", b"x"), ("h2", None)]), (None, None, 1_700_000_000_457)],
            compression="zstd"))
    rows = {r.topic: r for r in spark.read.format("kafkalog").option("includeHeaders", "true").load(str(root))
            .where("offset = 0").collect()}
    assert rows["v1"].timestampType == 0 and rows["v1"].headers == []
    assert int(rows["v1"].timestamp.timestamp() * 1000) == 1_700_000_000_123
    assert [(h.key, h.value) for h in rows["v2"].headers] == [("h1", b"x"), ("h2", None)]
    second = spark.read.format("kafkalog").load(str(root / "v2-0")).where("offset = 1").collect()[0]
    assert second.key is None and second.value is None
    hamlet = spark.read.format("kafkalog").load(str(golden / KAFKALITE))
    assert {r.timestampType for r in hamlet.select("timestampType").distinct().collect()} == {-1}


def _generated(root: Path) -> None:
    config = LogConfig({"segment.bytes": "2048"})
    with LogDirWriter(root, config) as writer:
        for topic in ("alpha", "beta"):
            for p in range(2):
                log = writer.log(TopicPartition(topic, p))
                for i in range(0, 200, 10):
                    log.append(MemoryRecords.with_records(
                        [(f"k{j % 7}".encode(), f"{topic}-{p}-{j}".encode(), 1_700_000_000_000 + j, [("n", b"%d" % j)])
                         for j in range(i, i + 10)]))


def test_offsets_topics_and_many_segments(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "logs"
    _generated(root)
    assert len(list((root / "alpha-0").glob("*.log"))) > 3
    def reader() -> Any:  # a DataFrameReader keeps its options: a new one per read
        return spark.read.format("kafkalog").option("maxPartitionBytes", "4096")

    everything = reader().load(str(root))
    assert everything.rdd.getNumPartitions() > 4  # ranges of segments, not one task a partition
    assert spark_rows(everything) == sorted(r for d in sorted(root.glob("*-[0-9]*")) for r in library_rows(d))
    window = (reader().option("topics", "alpha")
              .option("startingOffsets", '{"alpha": {"0": 15, "1": -2}}')
              .option("endingOffsets", '{"alpha": {"0": 42, "1": -1}}').load(str(root)))
    got = spark_rows(window)
    assert [r[2] for r in got if r[1] == 0] == list(range(15, 42))
    assert [r[2] for r in got if r[1] == 1] == list(range(200))
    assert {r[0] for r in got} == {"alpha"}
    beta = reader().option("topicPattern", "b.t.").load(str(root))
    assert {r.topic for r in beta.select("topic").distinct().collect()} == {"beta"}
    headers = reader().option("includeHeaders", "true").load(str(root / "beta-1")).where("offset = 123").collect()
    assert [(h.key, h.value) for h in headers[0].headers] == [("n", b"123")]


def test_read_committed_leaves_out_aborted_records_and_open_transactions(spark: Any, golden: Path,
                                                                          tmp_path: Path) -> None:
    def read_committed() -> Any:
        return spark.read.format("kafkalog").option("kafka.isolation.level", "read_committed")

    ksql = golden / f"{DANIELOWO}/_confluent-ksql-default__command_topic-0"
    rows = read_committed().load(str(ksql)).collect()
    # Four committed transactions of one record each; their COMMIT markers (offsets 1, 3, 5, 7) are not rows.
    assert [r.offset for r in rows] == [r[2] for r in library_rows(ksql, read_committed=True)] == [0, 2, 4, 6]
    root = tmp_path / "logs"
    with LogDirWriter(root) as writer:
        log = writer.log(TopicPartition("txn", 0))

        append_transaction_sample(log)
    committed = read_committed().load(str(root)).collect()
    assert [r.value for r in committed] == [b"plain", b"committed"]  # stops at the open transaction (LSO 5)
    # read_uncommitted is the default, as in Spark's Kafka source.
    for everything in (spark.read.format("kafkalog").load(str(root)),
                       spark.read.format("kafkalog").option("kafka.isolation.level", "read_uncommitted").load(
                           str(root))):
        assert [r.value for r in everything.collect()] == [b"plain", b"aborted", b"committed", b"open",
                                                            b"after the open one"]


def test_write_then_read_round_trip(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "out"
    source = spark.range(0, 3000).selectExpr(
        "cast(id % 50 as string) as key", "concat('value-', id) as value",
        "case when id % 3 = 0 then 'orders' else 'payments' end as topic",
        "timestamp_millis(1700000000000 + id) as timestamp",
        "array(named_struct('key', 'id', 'value', cast(cast(id as string) as binary))) as headers")
    (source.repartition(4).write.format("kafkalog").mode("append")
     .option("numPartitions", "3").option("compression", "lz4").option("segment.bytes", "16384").save(str(root)))
    assert not list(root.rglob("*.kafkalog-staging"))
    back = spark.read.format("kafkalog").option("includeHeaders", "true").load(str(root)).collect()
    assert len(back) == 3000
    assert {r.topic for r in back} == {"orders", "payments"} and {r.partition for r in back} == {0, 1, 2}
    by_id = {int(r.headers[0].value): r for r in back}
    assert sorted(by_id) == list(range(3000))
    for i in (0, 1, 1234, 2999):
        r = by_id[i]
        assert r.key == str(i % 50).encode() and r.value == f"value-{i}".encode()
        assert int(r.timestamp.timestamp() * 1000) == 1_700_000_000_000 + i
    # Kafka's partitioner: one key, one partition.
    assert all(len({r.partition for r in back if r.key == k and r.topic == t}) == 1
               for k in {r.key for r in back} for t in ("orders", "payments"))
    # Offsets are dense per partition, and the library reads what Spark read.
    for d in sorted(root.glob("*-[0-9]*")):
        assert [r[2] for r in library_rows(d)] == list(range(len(library_rows(d))))
    # A second append continues each partition's offsets.
    source.limit(10).write.format("kafkalog").mode("append").save(str(root))
    assert spark.read.format("kafkalog").load(str(root)).count() == 3010
    # What a read gives is written back as it is (offset and timestampType are the log's to assign): a copy.
    copy = tmp_path / "copy"
    spark.read.format("kafkalog").option("includeHeaders", "true").load(str(root)) \
        .write.format("kafkalog").mode("append").save(str(copy))
    for d in sorted(root.glob("*-[0-9]*")):
        assert library_rows(copy / d.name) == library_rows(d)


def test_a_locked_log_dir_refuses_a_write_and_leaves_nothing(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "locked"
    _generated(root)
    before = sorted(str(p.relative_to(root)) for p in root.rglob("*"))
    df = spark.createDataFrame([("x", b"1")], "topic string, value binary")
    with DirLock(root), pytest.raises(Exception, match="Failed to acquire lock"):
        df.write.format("kafkalog").mode("append").save(str(root))
    assert sorted(str(p.relative_to(root)) for p in root.rglob("*")) == before
    with pytest.raises(Exception, match="never overwrites"):
        df.write.format("kafkalog").mode("overwrite").save(str(root))


def test_a_write_without_mode_append_is_told_to_use_append(spark: Any, tmp_path: Path) -> None:
    """Spark refuses its default mode itself, suggesting Append or Overwrite; the user who tries overwrite is told
    what works, and what it says works."""
    root = tmp_path / "out"
    df = spark.createDataFrame([("t", b"k", b"v")], "topic string, key binary, value binary")
    with pytest.raises(Exception, match="UNSUPPORTED_DATA_SOURCE_SAVE_MODE"):
        df.write.format("kafkalog").save(str(root))
    with pytest.raises(Exception) as caught:
        df.write.format("kafkalog").mode("overwrite").save(str(root))
    message = str(caught.value)
    assert "kafkalog appends to Kafka logs and never overwrites them" in message
    assert "write with df.write.format('kafkalog').mode('append')" in message
    df.write.format("kafkalog").mode("append").save(str(root))
    assert [(r.topic, r.offset, r.key, r.value) for r in spark.read.format("kafkalog").load(str(root)).collect()] == [
        ("t", 0, b"k", b"v")]


def test_streaming_reads_appends_exactly_once_in_order(spark: Any, tmp_path: Path) -> None:
    """Every record appended while a query runs, and after it stops, is read exactly once, in order.

    A micro-batch is planned (its offsets written to the checkpoint), handed to the sink, then committed.  A query
    stopped between the sink and the commit replays that batch when it restarts, with the same batch id: Spark's
    ``foreachBatch`` contract is at-least-once, exactly-once for a sink that keys its writes by batch id.  (This is
    how the old version of this test once saw 116 rows for 102: it stopped the query while the last batch was in
    flight, and its sink counted the replay twice.)  Here the sink keys by batch id, every stop waits for the batch
    in flight to commit (``processAllAvailable``), and a replay is made on purpose by losing the last commit, so the
    source's side of the promise is what is checked: a replayed batch returns the same rows.
    """
    root = tmp_path / "live"
    checkpoint = tmp_path / "checkpoint"
    tp0, tp1 = TopicPartition("live", 0), TopicPartition("live", 1)
    with LogDirWriter(root) as writer:
        for tp in (tp0, tp1):
            writer.log(tp).append(MemoryRecords.with_records([(b"old", b"before the query")]))
    batches: dict[int, list[tuple[int, int, bytes]]] = {}
    replayed: dict[int, list[tuple[int, int, bytes]]] = {}
    lock = threading.Lock()

    def collect(df: Any, batch_id: int) -> None:
        rows = [(r.partition, r.offset, r.value) for r in df.collect()]
        with lock:
            (replayed if batch_id in batches else batches)[batch_id] = rows

    def append(start: int, count: int) -> None:
        for i in range(start, start + count):
            with LogDirWriter(root) as writer:
                writer.log(tp0 if i % 2 else tp1).append(MemoryRecords.with_records([(None, b"%d" % i)]))

    def run_query(appending: tuple[int, int] | None = None) -> None:
        query = (spark.readStream.format("kafkalog").option("startingOffsets", "earliest")
                 .option("maxOffsetsPerTrigger", "25").load(str(root))
                 .writeStream.foreachBatch(collect).option("checkpointLocation", str(checkpoint))
                 .trigger(processingTime="100 milliseconds").start())
        try:
            if appending is not None:
                appender = threading.Thread(target=append, args=appending)
                appender.start()
                appender.join()
            # Returns once everything appended so far is read and its batches committed.
            query.processAllAvailable()
        finally:
            query.stop()
        assert query.exception() is None

    run_query(appending=(0, 60))  # the query reads while the appends go on
    assert sum(len(rows) for rows in batches.values()) == 62
    # Lose the last batch's commit, as a stop between the sink and the commit does.
    last = max(batches)
    (checkpoint / "commits" / str(last)).unlink()
    (checkpoint / "commits" / f".{last}.crc").unlink(missing_ok=True)  # Hadoop's checksum of it
    append(60, 40)
    run_query()
    assert list(replayed) == [last]
    assert replayed[last] == batches[last]  # the same offsets give the same rows
    seen = [row for _batch_id, rows in sorted(batches.items()) for row in rows]
    assert len(seen) == 102
    for partition in (0, 1):
        assert [o for p, o, _v in seen if p == partition] == list(range(51))
    assert sorted(int(v) for _p, _o, v in seen if v != b"before the query") == list(range(100))
    assert max(len(rows) for rows in batches.values()) <= 25


def test_compact_and_stats_agree_with_the_library(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "logs"
    _generated(root)
    copy = tmp_path / "copy"
    shutil.copytree(root, copy)
    table = {(r.topic, r.partition): r for r in stats(spark, str(root)).collect()}
    for d in sorted(root.glob("*-[0-9]*")):
        expected = partition_stats(d)
        row = table[(expected.topic, expected.partition)]
        assert (row.records, row.segments, row.size, row.distinct_keys, row.log_end_offset) == (
            expected.records, expected.segments, expected.size, expected.distinct_keys, expected.log_end_offset)
    # No KRaft metadata log here to say the topics' policy: the job is told it.
    cleaned = compact(spark, str(root), {"cleanup.policy": "compact"}).collect()
    assert {(r.topic, r.partition) for r in cleaned} == set(table)
    assert {(r.cleanup_policy, r.policy_source, r.skipped) for r in cleaned} == {("compact", "from config", None)}
    from kafkalog.spark.jobs import clean_partition

    for d in sorted(copy.glob("*-[0-9]*")):
        rounds = clean_partition(str(d), {"cleanup.policy": "compact"})
        spark_rounds = sorted((r for r in cleaned if (r.topic, r.partition) == (rounds[0][0], rounds[0][1])),
                              key=lambda r: r.round)
        assert [(r.messages_read, r.messages_written, r.bytes_written) for r in spark_rounds] == [
            (x[7], x[8], x[6]) for x in rounds]
        assert library_rows(d) == library_rows(root / d.name)
    for d in sorted(root.glob("*-[0-9]*")):
        rows = library_rows(d)
        with PartitionDir.of(d).open_read_only() as log:
            active = log.active_segment.base_offset
        keys = [r[3] for r in rows if r[2] < active]
        assert len(keys) == len(set(keys))  # one record a key below the active segment


def test_compact_says_when_the_active_segment_kept_a_partition_from_being_cleaned(spark: Any,
                                                                                  tmp_path: Path) -> None:
    """Kafka's cleaner never cleans the active segment: a compacted topic whose records are all in it comes back as
    a row saying so (it once came back as no row at all), and ``roll=True`` rolls it first, so every record is
    cleaned, as ``kafkalog clean --roll`` does."""
    root = tmp_path / "logs"
    with LogDirWriter(root) as writer:
        log = writer.log(TopicPartition("users", 0))
        for i in range(12):
            log.append(MemoryRecords.with_records([(b"k%d" % (i % 3), b"v%d" % i)]))
    policy = {"users": {"cleanup.policy": "compact"}}
    rows = compact(spark, str(root), topic_configs=policy).collect()
    assert [(r.topic, r.partition, r.round, r.messages_read, r.cleanup_policy) for r in rows] == [
        ("users", 0, 0, None, "compact")]
    assert "never cleans the active segment" in rows[0].skipped and "roll=True" in rows[0].skipped
    assert len(library_rows(root / "users-0")) == 12
    rolled = compact(spark, str(root), topic_configs=policy, roll=True).collect()
    assert [(r.round, r.messages_read, r.skipped) for r in rolled] == [(1, 12, None)]
    # The latest record of each key is what is left.
    assert [(r[2], r[3], r[4]) for r in library_rows(root / "users-0")] == [
        (9, b"k0", b"v9"), (10, b"k1", b"v10"), (11, b"k2", b"v11")]
    again = compact(spark, str(root), topic_configs=policy, roll=True).collect()
    assert [(r.round, r.skipped) for r in again] == [(0, "the cleaner found nothing to clean: no record past the "
                                                        "cleaned part")]


def test_clean_log_dir_cleans_one_log_dir_under_one_lock(tmp_path: Path) -> None:
    """The job's task: the partitions of one log dir, one after the other under one hold of its lock, with the
    same rounds as clean_partition gives each; partitions of two log dirs are refused."""
    from kafkalog.spark.jobs import clean_log_dir, clean_partition

    root, copy = tmp_path / "logs", tmp_path / "copy"
    _generated(root)
    shutil.copytree(root, copy)
    marker = clean_shutdown_marker_present(root)
    dirs = sorted(root.glob("*-[0-9]*"))
    assert len(dirs) > 1
    compacted = {"cleanup.policy": "compact"}
    rows = clean_log_dir([(str(d), compacted) for d in dirs])
    expected = [row for d in sorted(copy.glob("*-[0-9]*")) for row in clean_partition(str(d), compacted)]
    assert [row[:3] + row[5:9] for row in rows] == [row[:3] + row[5:9] for row in expected]
    for d in dirs:
        assert library_rows(d) == library_rows(copy / d.name)
    assert clean_shutdown_marker_present(root) == marker
    assert clean_log_dir([(str(dirs[0]), {"cleanup.policy": "delete"})]) == []
    other = tmp_path / "other"
    shutil.copytree(copy, other)
    with pytest.raises(ValueError, match="one log dir"):
        clean_log_dir([(str(dirs[0]), compacted), (str(other / dirs[1].name), compacted)])


def _kraft_log_dir(root: Path) -> None:
    """A KRaft broker's log dir: alpha (compact), beta (delete), gamma (keyless, compact), delta (not in the
    metadata log), and the metadata log that says so."""
    _generated(root)
    write_meta_properties(root, 1)
    write_metadata_log(root, [[topic_record("alpha", topic_id(1)), topic_record("beta", topic_id(2)),
                               topic_record("gamma", topic_id(3)),
                               config_record(TOPIC, "alpha", "cleanup.policy", "compact"),
                               config_record(TOPIC, "beta", "cleanup.policy", "delete"),
                               config_record(TOPIC, "gamma", "cleanup.policy", "compact")]])
    with LogDirWriter(root, LogConfig({"segment.bytes": "2048"})) as writer:
        for topic in ("gamma", "delta"):
            log = writer.log(TopicPartition(topic, 0))
            for i in range(0, 400, 10):  # several segments: the active one is never cleaned
                log.append(MemoryRecords.with_records([(None, b"v%d" % j, 1_700_000_000_000 + j)
                                                       for j in range(i, i + 10)]))


def test_compact_takes_each_topics_policy_from_the_metadata_log(spark: Any, tmp_path: Path,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    """What the metadata log says compacts; a partition whose policy is not known, one whose policy is delete
    and the metadata log come back as rows saying why, untouched; a policy the job is given wins; records
    dropped for having no key are a column and a warning.  (compact() used to default every partition to
    compact: the metadata log and keyless topics lost their records.)"""
    root = tmp_path / "logs"
    _kraft_log_dir(root)
    untouched = {d.name: sorted((p.name, p.read_bytes()) for p in d.iterdir() if p.is_file())
                 for d in root.iterdir() if d.name.split("-")[0] in ("beta", "delta", "__cluster_metadata")}
    with PartitionDir.of(root / "gamma-0").open_read_only() as log:
        gamma_records = len(list(log.records()))
    with caplog.at_level(logging.INFO, logger="kafkalog.spark.jobs"):
        rows = compact(spark, str(root)).collect()
    by_partition: dict[str, list[Any]] = {}
    for r in rows:
        by_partition.setdefault(f"{r.topic}-{r.partition}", []).append(r)
    metadata = root / "__cluster_metadata-0"
    for name in ("alpha-0", "alpha-1", "gamma-0"):
        assert all(r.round > 0 and r.skipped is None and r.cleanup_policy == "compact" for r in by_partition[name])
        assert {r.policy_source for r in by_partition[name]} == {f"the topic's config in the KRaft metadata log "
                                                                 f"{metadata}"}
    ((delta,),) = [by_partition["delta-0"]]
    assert (delta.round, delta.bytes_read, delta.cleanup_policy, delta.policy_source) == (0, None, None, None)
    assert delta.skipped == (f"its cleanup.policy is not known (the KRaft metadata log {metadata} has no topic "
                             "delta (deleted, or never created in this cluster)); "
                             "topic_configs={'delta': {'cleanup.policy': 'compact'}} compacts it")
    assert [r.skipped.startswith("cleanup.policy=delete (the topic's config") for r in
            by_partition["beta-0"] + by_partition["beta-1"]] == [True, True]
    assert by_partition["__cluster_metadata-0"][0].skipped.startswith("it is the KRaft metadata log, a Raft log")
    for name, files in untouched.items():
        assert sorted((p.name, p.read_bytes()) for p in (root / name).iterdir() if p.is_file()) == files, name
    with PartitionDir.of(root / "gamma-0").open_read_only() as log:
        dropped = gamma_records - len(list(log.records()))
    assert dropped > 0 and sum(r.invalid_messages_read for r in by_partition["gamma-0"]) == dropped
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert (f"compact: gamma-0: dropped {dropped} records without a key (a compacted topic keeps each key's latest "
            "record; Kafka's cleaner drops records without one)") in warnings
    assert f"compact: delta-0 not compacted: {delta.skipped}" in warnings
    assert any(w.startswith("compact: __cluster_metadata-0 not compacted: it is the KRaft") for w in warnings)
    infos = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert any(i.startswith("compact: beta-0, beta-1 not compacted: cleanup.policy=delete") for i in infos)
    # What the job is given wins, and says what it overrides; the metadata log stays refused.
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="kafkalog.spark.jobs"):
        rows = compact(spark, str(root), {"cleanup.policy": "compact"},
                       topic_configs={"beta": {"cleanup.policy": "compact,delete"}}).collect()
    assert {(r.topic, r.policy_source) for r in rows if r.topic in ("beta", "delta")} == {
        ("beta", "from topic_configs['beta']"), ("delta", "from config")}
    assert [r.skipped is not None for r in rows if r.topic == "__cluster_metadata"] == [True]
    assert (f"compact: beta-0: cleanup.policy=compact,delete from topic_configs['beta'] overrides cleanup.policy="
            f"delete (the topic's config in the KRaft metadata log {metadata})") in [r.getMessage()
                                                                                  for r in caplog.records]


def test_compact_on_a_brokers_log_dir(spark: Any, golden: Path, tmp_path: Path) -> None:
    """A copy of a KRaft broker's log dir: compact() used to cut its metadata log from 5,151 records to 5; now
    only __consumer_offsets (compact, as the metadata log says) is compacted, and nothing else changes."""
    root = tmp_path / "logs"
    shutil.copytree(golden / ARTHUR, root)
    for path in [root, *root.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    before = {d.name: sorted((p.name, p.read_bytes()) for p in d.iterdir() if p.is_file())
              for d in root.iterdir() if d.is_dir() and not d.name.startswith("__consumer_offsets")}
    rows = compact(spark, str(root)).collect()
    skipped = {f"{r.topic}-{r.partition}": r.skipped for r in rows if r.skipped is not None}
    # A __consumer_offsets partition whose records are all in its active segment has nothing to clean, and says so.
    nothing = {name for name, why in skipped.items() if why.startswith("the cleaner found nothing to clean")}
    assert nothing and all(name.startswith("__consumer_offsets-") for name in nothing)
    assert set(skipped) - nothing == set(before)
    assert {f"{r.topic}-{r.partition}" for r in rows} == {d.name for d in root.iterdir() if d.is_dir()}
    assert all("cleanup.policy=delete (the topic's config" in skipped[name] for name in before
               if name.startswith("oms_"))
    assert {(r.topic, r.cleanup_policy) for r in rows if r.skipped is None} <= {("__consumer_offsets", "compact")}
    after = {name: sorted((p.name, p.read_bytes()) for p in (root / name).iterdir() if p.is_file()) for name in before}
    assert after == before


def test_clean_log_dir_refuses_a_raft_log(tmp_path: Path) -> None:
    """The task itself refuses the metadata log, whatever config it is handed."""
    from kafkalog.errors import IllegalArgumentError
    from kafkalog.spark.jobs import clean_log_dir

    root = tmp_path / "logs"
    _kraft_log_dir(root)
    before = sorted((p.name, p.read_bytes()) for p in (root / "__cluster_metadata-0").iterdir())
    with pytest.raises(IllegalArgumentError, match="it is the KRaft metadata log, a Raft log"):
        clean_log_dir([(str(root / "alpha-0"), {"cleanup.policy": "compact"}),
                       (str(root / "__cluster_metadata-0"), {"cleanup.policy": "compact"})])
    assert sorted((p.name, p.read_bytes()) for p in (root / "__cluster_metadata-0").iterdir()) == before


def test_bad_input_gets_clear_errors(spark: Any, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("not a log")
    with pytest.raises(Exception, match="neither a partition dir"):
        spark.read.format("kafkalog").load(str(empty)).collect()
    with pytest.raises(Exception, match="No such directory"):
        spark.read.format("kafkalog").load(str(tmp_path / "missing")).collect()
    root = tmp_path / "logs"
    _generated(root)
    with pytest.raises(Exception, match="startingOffsets must be"):
        spark.read.format("kafkalog").option("startingOffsets", "{alpha: 1").load(str(root)).collect()
    with pytest.raises(Exception, match="must name every partition"):
        spark.read.format("kafkalog").option("startingOffsets", '{"alpha": {"0": 1}}').load(str(root)).collect()
    with pytest.raises(Exception, match="out of range"):
        spark.read.format("kafkalog").option("topics", "alpha").option(
            "startingOffsets", '{"alpha": {"0": 999, "1": -2}}').load(str(root)).collect()
    with pytest.raises(Exception, match=r"unknown option 'startingoffset' for a kafkalog read; did you mean "
                                        r"startingOffsets"):
        spark.read.format("kafkalog").option("startingOffset", "earliest").load(str(root)).collect()
    with pytest.raises(Exception, match="startingTimestamp must be one timestamp"):
        spark.readStream.format("kafkalog").option("startingTimestamp", "noon").load(str(root))
    with pytest.raises(Exception, match=r"unknown option 'compresion' for a kafkalog write; did you mean "
                                        r"compression"):
        spark.createDataFrame([(b"v",)], "value binary").write.format("kafkalog").mode("append").option(
            "topic", "t").option("compresion", "gzip").save(str(tmp_path / "out"))
    with pytest.raises(Exception, match=r"topics that are not under .*: nope"):
        spark.read.format("kafkalog").option("topics", "nope").load(str(root)).collect()
    with pytest.raises(Exception, match="needs a 'value' column"):
        spark.createDataFrame([("t", b"k")], "topic string, key binary").write.format("kafkalog").mode(
            "append").save(str(tmp_path / "out"))
    with pytest.raises(Exception, match="no topic"):
        spark.createDataFrame([(b"v",)], "value binary").write.format("kafkalog").mode("append").save(
            str(tmp_path / "out"))


def test_the_readme_spark_example_runs_as_written(spark: Any, tmp_path: Path) -> None:
    """The README's Spark example, taken from ``README.md`` (see ``tests/test_readme.py``), on this suite's
    session (its ``session()`` returns the running one): it reads, writes the read back, plans a stream,
    shows statistics and compacts, and each step did what the README says."""
    import contextlib
    import io
    import random

    from tests.test_readme import readme_block

    data, copy = tmp_path / "data", tmp_path / "copy"
    noise = random.Random(17)  # incompressible values, so that the zstd copy rolls 1 MiB segments
    with LogDirWriter(data) as writer:
        for partition in (0, 1):
            log = writer.log(TopicPartition("orders", partition))
            for start in range(0, 2000, 100):
                log.append(MemoryRecords.with_records(
                    [(b"k%d" % (i % 50), b"%04d" % i + noise.randbytes(700), 1_700_000_000_000 + i)
                     for i in range(start, start + 100)]))
    code = readme_block("python", "spark.read.format").replace("/var/lib/kafka/data", str(data))
    code = code.replace("/tmp/copy", str(copy))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {"__name__": "readme"})
    # startingOffsets: partition 0 from offset 1000, partition 1 from the earliest; the copy holds those,
    # compacted to the latest value of each of the 50 keys, behind each partition's active segment.
    shown = out.getvalue()
    assert "orders|        0|" in shown and "orders|        1|" in shown, shown
    for partition, first in ((0, 1000), (1, 0)):
        original = [r[3:] for r in library_rows(data / f"orders-{partition}") if r[2] >= first]
        copied = [r[3:] for r in library_rows(copy / f"orders-{partition}")]
        assert dict(copied) == dict(original)
        if partition == 1:  # 1.4 MB of records: two segments, the first one cleaned
            assert len(list((copy / "orders-1").glob("*.log"))) == 2 and len(copied) < len(original)

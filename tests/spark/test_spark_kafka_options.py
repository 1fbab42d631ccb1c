"""The options of Spark's Kafka source that the ``kafkalog`` source takes with Spark's meaning (``assign``, the
timestamp options, ``maxRecordsPerPartition``, ``minOffsetsPerTrigger`` / ``maxTriggerDelay``), internal topics,
path globs, and errors as the user gets them: parsing and planning first (no Spark), then through the test
session's ``local[2]`` Spark.  Expectations come from the library (``Log.find_offset_by_timestamp``, the records
written) or from Spark's rules as its source code states them."""

from __future__ import annotations

import itertools
import threading
from pathlib import Path
from typing import Any

import pytest

from kafkalog.config.log_config import LogConfig
from kafkalog.record import MemoryRecords
from kafkalog.tools.log_dir_writer import LogDirWriter
from kafkalog.tools.partition_dir import PartitionDir
from kafkalog.topic import TopicPartition

pytest.importorskip("pyspark", reason="kafkalog.spark needs the spark extra")
from pyspark.sql.streaming.datasource import ReadMaxRows

from kafkalog.spark.options import ReadOptions, SparkOptionError, TimestampSpec, parse_time_ms
from kafkalog.spark.plan import divide_offsets, find_partitions, plan_read
from kafkalog.spark.source import _StreamReader
from kafkalog.spark.stream import AdmissionControl, from_json, initial_position, latest_position, plan_micro_batch

T0 = 1_700_000_000_000


def _logs(root: Path) -> None:
    """Topics alpha and beta, two partitions each, 200 records a partition, record j stamped T0 + j; and the
    broker's own ``__consumer_offsets-0``."""
    with LogDirWriter(root, LogConfig({"segment.bytes": "2048"})) as writer:
        for topic in ("alpha", "beta"):
            for p in range(2):
                log = writer.log(TopicPartition(topic, p))
                for i in range(0, 200, 10):
                    log.append(MemoryRecords.with_records(
                        [(b"k%d" % j, b"%s-%d-%d" % (topic.encode(), p, j), T0 + j) for j in range(i, i + 10)]))
        writer.log(TopicPartition("__consumer_offsets", 0)).append(
            MemoryRecords.with_records([(b"group", b"commit", T0)]))


def _ranges(options: dict[str, str]) -> dict[tuple[str, int], list[tuple[int, int]]]:
    found: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for task in plan_read(ReadOptions.parse(options)):
        found.setdefault((task.topic, task.partition), []).append((task.view.start_offset, task.view.end_offset))
    return found


def test_options_parse_with_spark_s_rules(tmp_path: Path) -> None:
    assign = ReadOptions.parse({"path": "/x", "assign": '{"a": [0, 2], "b": [1]}'})
    assert assign.selects("a", 2) and not assign.selects("a", 1) and assign.selects("b")
    for bad, message in (("a", "assign must be JSON like"), ('{"a": [-1]}', "list of partition numbers"),
                         ("{}", "names no partition"), ("{x", "not JSON")):
        with pytest.raises(SparkOptionError, match=message):
            ReadOptions.parse({"path": "/x", "assign": bad})
    with pytest.raises(SparkOptionError, match="not assign and subscribe"):
        ReadOptions.parse({"path": "/x", "assign": '{"a": [0]}', "subscribe": "a"})
    # Precedence (Spark's getKafkaOffsetRangeLimit): the global timestamp, then per partition, then offsets.
    both = ReadOptions.parse({"path": "/x", "startingTimestamp": "5", "startingOffsetsByTimestamp": '{"a": {"0": 6}}',
                              "startingOffsets": "earliest", "endingOffsetsByTimestamp": '{"a": {"0": 9}}'})
    assert both.starting == TimestampSpec("startingTimestamp", 5)
    assert both.timestamps_for(TopicPartition("a", 0)) == {5, 9}
    latest = ReadOptions.parse({"path": "/x", "startingOffsetsByTimestampStrategy": "LATEST",
                                "startingOffsetsByTimestamp": '{"a": {"0": 6}}'}, streaming=True)
    assert isinstance(latest.starting, TimestampSpec) and latest.starting.latest_when_none
    for options, message in (
            ({"startingTimestamp": "soon"}, "must be one timestamp"),
            ({"startingTimestamp": "-1"}, "is not a timestamp"),
            ({"startingOffsetsByTimestampStrategy": "first"}, "must be error or latest"),
            ({"startingOffsetsByTimestamp": '{"a": {"0": 9}}', "endingOffsetsByTimestamp": '{"a": {"0": 5}}'},
             "the starting timestamp 9 is after the ending timestamp 5"),
            ({"startingOffsetsByTimestamp": '{"a": {"0": 1}}', "endingOffsetsByTimestamp": '{"b": {"0": 5}}'},
             "must name the same partitions"),
            ({"minOffsetsPerTrigger": "10", "maxOffsetsPerTrigger": "5"}, r"minOffsetsPerTrigger \(10\) is higher"),
            ({"maxTriggerDelay": "soon"}, "must be a duration"),
            ({"maxRecordsPerPartition": "0"}, "must be positive")):
        with pytest.raises(SparkOptionError, match=message):
            ReadOptions.parse({"path": "/x", **options})
    # A stream has no end (Spark: validateStreamOptions); the message says what to do instead.
    for name in ("endingOffsets", "endingTimestamp", "endingOffsetsByTimestamp"):
        value = {"endingOffsets": "latest", "endingTimestamp": "5"}.get(name, '{"a": {"0": 5}}')
        with pytest.raises(SparkOptionError, match=rf"{name} is not valid in a stream, which has no end: leave it "
                                                   r"out of spark.readStream .* or read up to it with spark.read"):
            ReadOptions.parse({"path": "/x", name: value}, streaming=True)
    assert [parse_time_ms("d", t) for t in ("250", "2s", "3m", "1min", "1h", "1d")] == [
        250, 2000, 180_000, 60_000, 3_600_000, 86_400_000]
    assert ReadOptions.parse({"path": "/x", "maxOffsetsPerTrigger": "5"}).ignored == ("maxOffsetsPerTrigger",)
    # Internal topics: left out unless named (a pattern does not name them, as with exclude.internal.topics).
    every, pattern = ReadOptions.parse({"path": "/x"}), ReadOptions.parse({"path": "/x", "subscribePattern": "_.*"})
    named = ReadOptions.parse({"path": "/x", "subscribe": "__transaction_state"})
    for topic in ("__consumer_offsets", "__transaction_state", "__cluster_metadata"):
        assert not every.selects(topic) and not pattern.selects(topic)
    assert named.selects("__transaction_state") and pattern.selects("_mine")
    # Globs expand, sorted; one that matches nothing is an error, naming it.
    for name in ("b-logs", "a-logs"):
        (tmp_path / name).mkdir()
    assert ReadOptions.parse({"path": str(tmp_path / "*-logs")}).paths == (str(tmp_path / "a-logs"),
                                                                           str(tmp_path / "b-logs"))
    with pytest.raises(SparkOptionError, match=r"no path matches '.*/nothing-\*'"):
        ReadOptions.parse({"paths": f'["{tmp_path / "a-logs"}", "{tmp_path / "nothing-*"}"]'})


def test_planning_by_timestamp_assign_and_records_per_partition(tmp_path: Path) -> None:
    root = tmp_path / "logs"
    _logs(root)
    path = str(root)
    assert [tp.topic for tp, _p in find_partitions([path], ReadOptions.parse({"path": path}))].count(
        "__consumer_offsets") == 0
    # Timestamps resolve through the time index to what Log.find_offset_by_timestamp gives.
    with PartitionDir.of(root / "alpha-1").open_read_only() as log:
        assert log.find_offset_by_timestamp(T0 + 57).offset == 57
    window = _ranges({"path": path, "subscribe": "alpha", "startingTimestamp": str(T0 + 57),
                      "endingOffsetsByTimestamp": f'{{"alpha": {{"0": {T0 + 120}, "1": {T0 + 10**9}}}}}'})
    assert window == {("alpha", 0): [(57, 120)], ("alpha", 1): [(57, 200)]}  # no record that late: the end
    with pytest.raises(SparkOptionError, match=r"no record of alpha-0 has a timestamp at or after .*Strategy=latest"):
        _ranges({"path": path, "subscribe": "alpha", "startingTimestamp": str(T0 + 10**9)})
    late = _ranges({"path": path, "subscribe": "alpha", "startingTimestamp": str(T0 + 10**9),
                    "startingOffsetsByTimestampStrategy": "latest"})
    assert late == {}  # every partition starts at its end: nothing to read
    with pytest.raises(SparkOptionError, match="must name every partition read: alpha-1 is missing"):
        _ranges({"path": path, "subscribe": "alpha", "startingOffsetsByTimestamp": f'{{"alpha": {{"0": {T0}}}}}'})
    assert set(_ranges({"path": path, "assign": '{"beta": [1], "__consumer_offsets": [0]}'})) == {
        ("beta", 1), ("__consumer_offsets", 0)}
    with pytest.raises(SparkOptionError, match=r"assign names partitions that are not under .*: beta-7"):
        _ranges({"path": path, "assign": '{"beta": [7]}'})
    # maxRecordsPerPartition: ceil(size / max) runs as equal as whole numbers allow (Spark's getDividedPartition).
    assert divide_offsets(0, 200, 30) == [(0, 28), (28, 56), (56, 84), (84, 113), (113, 142), (142, 171), (171, 200)]
    assert divide_offsets(5, 5, 3) == [] and divide_offsets(3, 9, None) == [(3, 9)]
    split = _ranges({"path": path, "assign": '{"alpha": [0]}', "startingOffsets": '{"alpha": {"0": 10}}',
                     "maxRecordsPerPartition": "100"})
    assert split == {("alpha", 0): [(10, 105), (105, 200)]}


def test_admission_control_holds_a_batch_until_enough_waits_or_the_delay_passes() -> None:
    now = [100.0]
    control = AdmissionControl(min_offsets=10, max_delay_ms=5_000, clock=lambda: now[0])
    assert control.admits(0)  # the first trigger always runs (Spark's last trigger time starts at 0)
    now[0] += 1
    assert not control.admits(9)
    assert control.admits(10)
    now[0] += 4.999
    assert not control.admits(3)
    now[0] += 0.001
    assert control.admits(3)  # 5 s since the last batch: whatever waits
    assert not control.admits(3)


def _short(error: BaseException) -> str:
    """What the user reads first: the message Spark gives, which must name the cause, not hold a traceback."""
    text = str(error)
    assert "Traceback" not in text, text
    return text.splitlines()[0]


def test_the_kafka_source_options_through_spark(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "logs-1"
    _logs(root)

    def read(**options: str) -> Any:
        reader = spark.read.format("kafkalog")
        for key, value in options.items():
            reader = reader.option(key, value)
        return reader.load(str(tmp_path / "logs-*"))  # a glob

    # The session (kafkalog.spark.session, as the fixture makes it) is as quiet as QUIET_SETTINGS say.
    assert spark.conf.get("spark.sql.execution.pyspark.udf.hideTraceback.enabled") == "true"
    assert "log4j2.properties" in spark.sparkContext.getConf().get("spark.driver.extraJavaOptions")
    everything = read()
    assert {r.topic for r in everything.select("topic").distinct().collect()} == {"alpha", "beta"}
    assert everything.count() == 800
    internal = read(subscribe="__consumer_offsets").collect()
    assert [(r.key, r.value) for r in internal] == [(b"group", b"commit")]
    window = read(assign='{"beta": [1]}', startingTimestamp=str(T0 + 150), endingTimestamp=str(T0 + 160))
    assert sorted((r.partition, r.offset) for r in window.collect()) == [(1, o) for o in range(150, 160)]
    # Every partition past its last record: nothing to read, which is no error.
    assert read(startingTimestamp=str(T0 + 10**9), startingOffsetsByTimestampStrategy="latest").count() == 0
    split = read(subscribe="alpha", maxRecordsPerPartition="50")
    assert split.rdd.getNumPartitions() == 8
    assert sorted(r.offset for r in split.where("partition = 0").collect()) == list(range(200))
    # An error is one short message naming the cause, its kafkalog class first.
    with pytest.raises(Exception) as caught:
        read(startingTimestamp="soon").collect()
    first = _short(caught.value)
    assert "kafkalog.spark.options.SparkOptionError: startingTimestamp must be one timestamp" in first
    assert len(str(caught.value)) < 300
    with pytest.raises(Exception) as caught:
        spark.read.format("kafkalog").load(str(tmp_path / "nothing-*")).collect()
    assert "no path matches" in _short(caught.value)


def test_a_stream_waits_for_min_offsets_per_trigger(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "live"
    tp = TopicPartition("live", 0)

    def append(count: int) -> None:
        with LogDirWriter(root) as writer:
            writer.log(tp).append(MemoryRecords.with_records([(None, b"x")] * count))

    append(3)
    batches: list[int] = []
    lock = threading.Lock()

    def collect(df: Any, batch_id: int) -> None:
        with lock:
            batches.append(df.count())

    query = (spark.readStream.format("kafkalog").option("startingOffsets", "earliest")
             .option("minOffsetsPerTrigger", "10").option("maxTriggerDelay", "1h").load(str(root))
             .writeStream.foreachBatch(collect).option("checkpointLocation", str(tmp_path / "checkpoint"))
             .trigger(processingTime="100 milliseconds").start())
    try:
        query.processAllAvailable()
        assert batches == [3]  # the first trigger runs with what there is, as in Spark
        append(6)
        query.processAllAvailable()
        assert batches == [3]  # 6 waiting, fewer than 10: held back
        append(4)
        query.processAllAvailable()
        assert batches == [3, 10]
    finally:
        query.stop()
    # A stream's own mistakes surface when it starts, as one message naming the cause.
    failing = (spark.readStream.format("kafkalog").option("endingTimestamp", "5").load(str(root))
               .writeStream.format("noop").start())
    with pytest.raises(Exception) as caught:
        failing.awaitTermination(60)
    assert "SparkOptionError: endingTimestamp is not valid in a stream, which has no end: leave it out of " \
           "spark.readStream" in _short(caught.value)


def test_subscribe_fails_on_a_missing_topic_and_a_pattern_may_match_nothing(tmp_path: Path) -> None:
    """As in Spark's source (its Admin's describeTopics fails on an unknown topic; a pattern matching no topic
    assigns no partition): a ``subscribe`` topic not found is an error naming it, even beside topics that are
    found; a ``subscribePattern`` matching nothing is an empty batch read, and an empty stream position that
    reads a matching topic from its start once it appears."""
    root = tmp_path / "logs"
    _logs(root)
    path = str(root)
    with pytest.raises(SparkOptionError, match=r"subscribe names topics that are not under .*: nope, zzz \(a topic "
                                               r"is its <topic>-<partition> dirs"):
        plan_read(ReadOptions.parse({"path": path, "subscribe": "alpha,nope,zzz"}))
    assert plan_read(ReadOptions.parse({"path": path, "subscribePattern": "gamma.*"})) == []
    stream = ReadOptions.parse({"path": path, "subscribePattern": "gamma.*"}, streaming=True)
    assert initial_position(stream) == {}
    assert latest_position(stream, {}, None) == {}
    with LogDirWriter(root) as writer:
        writer.log(TopicPartition("gamma", 0)).append(MemoryRecords.with_records([(b"k", b"v%d" % i) for i in
                                                                                  range(5)]))
    end = latest_position(stream, {}, None)
    assert end == {TopicPartition("gamma", 0): 5}
    tasks = plan_micro_batch(stream, {}, end)
    assert [(t.topic, t.partition, t.view.start_offset, t.view.end_offset) for t in tasks] == [("gamma", 0, 0, 5)]


def _available_now_batches(reader: _StreamReader, start: dict[str, Any]) -> list[dict[str, Any]]:
    """The ends of the micro-batches Trigger.AvailableNow makes, as Spark asks for them: ``latestOffset`` from the
    last end with the default read limit, until it answers its start (no new data: the query ends)."""
    ends = []
    limit = reader.getDefaultReadLimit()
    while True:
        end = reader.latestOffset(start, limit)
        if end == start:
            return ends
        ends.append(end)
        start = end


def test_available_now_splits_by_max_offsets_per_trigger_up_to_the_end_fixed_at_the_start(tmp_path: Path) -> None:
    """Spark's ``KafkaMicroBatchStream`` under ``Trigger.AvailableNow``: ``prepareForTriggerAvailableNow`` fixes
    the end (what is there when the query starts), then each ``latestOffset`` takes at most
    ``maxOffsetsPerTrigger`` offsets, shared among partitions in proportion to their lag (``rateLimit``)."""
    root = tmp_path / "logs"
    tp0, tp1 = TopicPartition("now", 0), TopicPartition("now", 1)

    def append(tp: TopicPartition, count: int) -> None:
        with LogDirWriter(root) as writer:
            writer.log(tp).append(MemoryRecords.with_records([(None, b"x")] * count))

    append(tp0, 60)
    append(tp1, 40)
    reader = _StreamReader(ReadOptions.parse({"path": str(root), "startingOffsets": "earliest",
                                              "maxOffsetsPerTrigger": "20"}, streaming=True))
    assert reader.getDefaultReadLimit() == ReadMaxRows(20)
    reader.prepareForTriggerAvailableNow()
    start = reader.initialOffset()
    # Appended after the query started: left for the next query, as a new partition is.
    append(tp0, 7)
    append(TopicPartition("now", 2), 3)
    ends = _available_now_batches(reader, start)
    assert len(ends) == 5  # ceil(100 / 20)
    positions = [from_json(start)] + [from_json(end) for end in ends]
    taken = [{tp: after[tp] - before[tp] for tp in after} for before, after in itertools.pairwise(positions)]
    assert taken == [{tp0: 12, tp1: 8}] * 5  # 60:40 of every 20
    assert positions[-1] == {tp0: 60, tp1: 40}

    # The minimum never holds an AvailableNow batch back: what is left below it is read, and the query ends.
    held = _StreamReader(ReadOptions.parse({"path": str(root), "assign": '{"now": [1]}', "startingOffsets": "earliest",
                                            "maxOffsetsPerTrigger": "30", "minOffsetsPerTrigger": "30",
                                            "maxTriggerDelay": "1h"}, streaming=True))
    held.prepareForTriggerAvailableNow()
    assert [from_json(end) for end in _available_now_batches(held, held.initialOffset())] == [{tp1: 30}, {tp1: 40}]


def test_available_now_through_spark(spark: Any, tmp_path: Path) -> None:
    """A query with ``Trigger.AvailableNow`` and ``maxOffsetsPerTrigger`` runs ceil(N / k) micro-batches of at most
    k records, reads every record once, and stops by itself."""
    root = tmp_path / "logs"
    with LogDirWriter(root) as writer:
        for p, count in ((0, 30), (1, 20)):
            writer.log(TopicPartition("now", p)).append(MemoryRecords.with_records(
                [(None, b"%d-%d" % (p, i)) for i in range(count)]))
    batches: list[list[tuple[int, int]]] = []
    lock = threading.Lock()

    def collect(df: Any, batch_id: int) -> None:
        with lock:
            batches.append(sorted((r.partition, r.offset) for r in df.collect()))

    query = (spark.readStream.format("kafkalog").option("startingOffsets", "earliest")
             .option("maxOffsetsPerTrigger", "10").load(str(root))
             .writeStream.foreachBatch(collect).option("checkpointLocation", str(tmp_path / "checkpoint"))
             .trigger(availableNow=True).start())
    assert query.awaitTermination(120)
    assert query.exception() is None
    assert [len(rows) for rows in batches] == [10] * 5  # ceil(50 / 10)
    assert sorted(row for rows in batches for row in rows) == [(0, o) for o in range(30)] + [(1, o) for o in range(20)]


def test_a_pattern_matching_no_topic_through_spark(spark: Any, tmp_path: Path) -> None:
    """A batch read gives an empty DataFrame with the source's columns; a stream waits, then reads the topic that
    appears; a missing ``subscribe`` topic fails the read, naming it."""
    root = tmp_path / "logs"
    _logs(root)
    empty = spark.read.format("kafkalog").option("subscribePattern", "gamma.*").load(str(root))
    assert empty.columns == ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]
    assert empty.collect() == []
    with pytest.raises(Exception) as caught:
        spark.read.format("kafkalog").option("subscribe", "alpha,nope").load(str(root)).collect()
    assert "subscribe names topics that are not under" in _short(caught.value)
    rows: list[tuple[str, int, bytes]] = []
    lock = threading.Lock()

    def collect(df: Any, batch_id: int) -> None:
        with lock:
            rows.extend((r.topic, r.offset, r.value) for r in df.collect())

    query = (spark.readStream.format("kafkalog").option("subscribePattern", "gamma.*").load(str(root))
             .writeStream.foreachBatch(collect).option("checkpointLocation", str(tmp_path / "checkpoint"))
             .trigger(processingTime="100 milliseconds").start())
    try:
        query.processAllAvailable()
        assert rows == []
        with LogDirWriter(root) as writer:
            writer.log(TopicPartition("gamma", 0)).append(MemoryRecords.with_records([(None, b"g0"), (None, b"g1")]))
        query.processAllAvailable()
        assert rows == [("gamma", 0, b"g0"), ("gamma", 1, b"g1")]  # from its start, though the stream began at latest
    finally:
        query.stop()
    assert query.exception() is None

"""The Cleaner's offset map and statistics: building the map (Kafka 3.8.0 ``LogCleanerTest``'s buildOffsetMap
cases), ``CleanerStats`` and the round's summary with Java's number formatting, the SkimpyOffsetMap kernels
against Kafka's fake map, the two kernel twins against each other, and a whole LogCleaner round.  Helpers in
:mod:`tests.support.cleaner_utils`.
"""

from __future__ import annotations

import logging
import random
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from kafkalog import MemoryRecords, _impl
from kafkalog.cleaner import LogCleaner
from kafkalog.cleaner.config import CleanerConfig
from kafkalog.cleaner.offset_map import OffsetMap, SkimpyOffsetMap
from kafkalog.cleaner.stats import CleanerStats
from kafkalog.config.log_config import LogConfig
from kafkalog.errors import IllegalStateError
from kafkalog.log import Log
from kafkalog.scheduler import MockTime
from tests.support.cleaner_utils import (
    INT_MAX,
    MB,
    TP,
    Env,
    FakeOffsetMap,
    batches_in,
    key,
    keys_in_log,
    offsets_in_log,
    record,
    same,
    to_clean,
    write_to_log,
)

# -- the offset map -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("map_kind", ["fake", "skimpy"])
def test_build_offset_map(env: Env, map_kind: str) -> None:
    offset_map: OffsetMap = FakeOffsetMap(1000) if map_kind == "fake" else SkimpyOffsetMap(1000 * 24)
    log = env.make_log(env.config())
    cleaner = env.make_cleaner(INT_MAX)
    start, end = 0, 500
    write_to_log(log, same(range(start, end)))

    def check_range(start: int, end: int) -> None:
        stats = CleanerStats(env.time)
        cleaner.build_offset_map(log, start, end, offset_map, stats)
        assert offset_map.latest_offset + 1 == end, "Last offset should be the end offset."
        assert offset_map.size == end - start, "Should have the expected number of messages in the map."
        for i in range(start, end):
            assert offset_map.get(key(i)) == i, "Should find all the keys"
        assert offset_map.get(key(start - 1)) == -1, "Should not find a value too small"
        assert offset_map.get(key(end)) == -1, "Should not find a value too large"
        assert stats.map_messages_read == end - start

    segments = log.log_segments()
    assert len(segments) >= 4
    check_range(0, segments[1].base_offset)
    check_range(segments[1].base_offset, segments[3].base_offset)
    check_range(segments[3].base_offset, log.log_end_offset)


def test_build_offset_map_fake_large(env: Env) -> None:
    offset_map = FakeOffsetMap(1000)
    log = env.make_log(
        LogConfig({"segment.bytes": 120, "segment.index.bytes": 120, "cleanup.policy": "compact"})
    )
    cleaner = env.make_cleaner(INT_MAX)
    key_start, key_end = 0, 2
    offset_end = 7_206_178
    write_to_log(log, same(range(key_start, key_end)), [0, offset_end])
    cleaner.build_offset_map(log, key_start, offset_end + 1, offset_map, CleanerStats(env.time))
    assert offset_map.latest_offset == offset_end, "Last offset should be the end offset."
    assert offset_map.size == key_end - key_start
    assert offset_map.get(key(0)) == 0, "Map should contain first value"
    assert offset_map.get(key(1)) == offset_end, "Map should contain second value"


@pytest.mark.parametrize("map_kind", ["fake", "skimpy"])
def test_build_partial_offset_map(env: Env, map_kind: str) -> None:
    # because loadFactor is 0.75, this means we can fit 2 messages in the map
    log = env.make_log(env.config())
    cleaner = env.make_cleaner(3, offset_map=None if map_kind == "fake" else SkimpyOffsetMap(3 * 24))
    offset_map = cleaner.offset_map
    for k in range(5):
        log.append_as_leader(record(k, k), 0)
    log.roll()

    stats = CleanerStats(env.time)
    cleaner.build_offset_map(log, 2, INT_MAX, offset_map, stats)
    assert offset_map.size == 2
    assert offset_map.get(key(0)) == -1
    assert offset_map.get(key(2)) == 2
    assert offset_map.get(key(3)) == 3
    assert offset_map.get(key(4)) == -1
    assert stats.map_messages_read == 4
    assert offset_map.latest_offset == 3


def test_cleaner_needs_room_for_one_message(env: Env) -> None:
    # Kafka's Cleaner requires slots * loadFactor > 1
    with pytest.raises(IllegalStateError):
        env.make_cleaner(1)
    with pytest.raises(IllegalStateError):
        env.make_cleaner(0, offset_map=SkimpyOffsetMap(24))
    assert env.make_cleaner(2).offset_map.slots == 2


# -- statistics ---------------------------------------------------------------------------------------------


def stats_with(time: MockTime, **values: Any) -> CleanerStats:
    stats = CleanerStats(time)
    for name, value in values.items():
        setattr(stats, name, value)
    return stats


def test_cleaner_stats_summary(impl: ModuleType) -> None:
    stats = stats_with(
        MockTime(),
        start_time=1000,
        map_complete_time=2500,
        end_time=5000,
        bytes_read=1250 * MB,
        map_bytes_read=3 * MB,
        bytes_written=500 * MB,
        messages_read=1_234_567,
        messages_written=654_321,
        buffer_utilization=0.125,
    )
    assert stats.elapsed_secs() == 4.0
    assert stats.elapsed_index_secs() == 1.5
    assert stats.summary(3, "test-0", 100, 200) == (
        "\n"
        "\tLog cleaner thread 3 cleaned log test-0 (dirty section = [100, 200])\n"
        "\t1,250.0 MB of log processed in 4.0 seconds (312.5 MB/sec).\n"
        "\tIndexed 3.0 MB in 1.5 seconds (2.0 Mb/sec, 37.5% of total time)\n"
        "\tBuffer utilization: 12.5%\n"
        "\tCleaned 1,250.0 MB in 2.5 seconds (500.0 Mb/sec, 62.5% of total time)\n"
        "\tStart size: 1,250.0 MB (1,234,567 messages)\n"
        "\tEnd size: 500.0 MB (654,321 messages)\n"
        "\t60.0% size reduction (47.0% fewer messages)\n"
    )


def test_cleaner_stats_summary_with_no_elapsed_time(impl: ModuleType) -> None:
    # a clean within one millisecond: Java's double division gives Infinity and NaN
    stats = stats_with(
        MockTime(),
        start_time=1000,
        map_complete_time=1000,
        end_time=1000,
        bytes_read=2 * MB,
        map_bytes_read=MB,
        bytes_written=MB,
        messages_read=10,
        messages_written=5,
    )
    assert stats.summary(0, "test-0", 0, 10) == (
        "\n"
        "\tLog cleaner thread 0 cleaned log test-0 (dirty section = [0, 10])\n"
        "\t2.0 MB of log processed in 0.0 seconds (Infinity MB/sec).\n"
        "\tIndexed 1.0 MB in 0.0 seconds (Infinity Mb/sec, NaN% of total time)\n"
        "\tBuffer utilization: 0.0%\n"
        "\tCleaned 2.0 MB in 0.0 seconds (Infinity Mb/sec, NaN% of total time)\n"
        "\tStart size: 2.0 MB (10 messages)\n"
        "\tEnd size: 1.0 MB (5 messages)\n"
        "\t50.0% size reduction (50.0% fewer messages)\n"
    )
    # nothing read at all: 0 / 0 everywhere
    empty = stats_with(MockTime(), start_time=7, map_complete_time=7, end_time=7)
    assert empty.summary(1, "t-2", 5, 5).splitlines() == [
        "",
        "\tLog cleaner thread 1 cleaned log t-2 (dirty section = [5, 5])",
        "\t0.0 MB of log processed in 0.0 seconds (NaN MB/sec).",
        "\tIndexed 0.0 MB in 0.0 seconds (NaN Mb/sec, NaN% of total time)",
        "\tBuffer utilization: 0.0%",
        "\tCleaned 0.0 MB in 0.0 seconds (NaN Mb/sec, NaN% of total time)",
        "\tStart size: 0.0 MB (0 messages)",
        "\tEnd size: 0.0 MB (0 messages)",
        "\tNaN% size reduction (NaN% fewer messages)",
    ]


def test_cleaner_stats_summary_rounds_half_up_as_java(impl: ModuleType) -> None:
    # Java's %.1f rounds the shortest decimal form of the double half up (java.util.Formatter): 1.25 MB
    # prints 1.3 and 6.25 % prints 6.3, where Python's format rounds the binary value half to even (1.2, 6.2)
    stats = stats_with(
        MockTime(),
        start_time=0,
        map_complete_time=500,
        end_time=1000,
        bytes_read=1_310_720,
        map_bytes_read=1_310_720,
        bytes_written=0,
        messages_read=4,
        messages_written=0,
        buffer_utilization=0.0625,
    )
    lines = stats.summary(0, "test-0", 0, 4).splitlines()
    assert lines[2] == "\t1.3 MB of log processed in 1.0 seconds (1.3 MB/sec)."
    assert lines[3] == "\tIndexed 1.3 MB in 0.5 seconds (2.5 Mb/sec, 50.0% of total time)"
    assert lines[4] == "\tBuffer utilization: 6.3%"
    assert lines[6] == "\tStart size: 1.3 MB (4 messages)"


def test_cleaner_stats_counters(impl: ModuleType) -> None:
    time = MockTime(current_time_ms=10_000)
    stats = CleanerStats(time)
    assert stats.start_time == 10_000
    stats.read_messages(3, 300)
    stats.read_messages(2, 50)
    stats.invalid_message()
    stats.recopy_messages(4, 280)
    stats.index_messages_read(5)
    stats.index_bytes_read(350)
    time.sleep(250)
    stats.index_done()
    time.sleep(750)
    stats.all_done()
    assert (stats.messages_read, stats.bytes_read, stats.invalid_messages_read) == (5, 350, 1)
    assert (stats.messages_written, stats.bytes_written) == (4, 280)
    assert (stats.map_messages_read, stats.map_bytes_read) == (5, 350)
    assert (stats.elapsed_index_secs(), stats.elapsed_secs()) == (0.25, 1.0)


# -- the kernels' map against Kafka's fake one, the twins against each other, a whole round --------------


def random_compacted_log(env: Env, directory: Path, seed: int) -> Log:
    """A log of 400 records over 40 keys in batches of every codec, with tombstones, in 2 KiB segments."""
    rng = random.Random(seed)
    log = env.make_log(env.config(segment_bytes=2048), directory)
    while log.log_end_offset < 400:
        n = rng.randrange(1, 8)
        records = [
            (
                key(rng.randrange(40)),
                None if rng.random() < 0.1 else rng.randbytes(rng.randrange(1, 12)),
                1000 + i,
            )
            for i in range(n)
        ]
        codec = rng.choice(["none", "none", "gzip", "lz4", "zstd", "snappy"])
        log.append_as_leader(MemoryRecords.with_records(records, compression=codec), 0)
    log.roll()
    return log


def latest_per_key(log: Log) -> dict[bytes, tuple[int, bytes | None]]:
    latest: dict[bytes, tuple[int, bytes | None]] = {}
    for batch in batches_in(log):
        for r in batch.records():
            latest[r.key] = (r.offset, r.value)
    return latest


def test_skimpy_map_cleans_as_the_fake_map(env: Env) -> None:
    fake_log = random_compacted_log(env, env.root / "fake-0", 7)
    skimpy_log = random_compacted_log(env, env.root / "skimpy-0", 7)
    latest = latest_per_key(fake_log)
    fake = env.make_cleaner(INT_MAX)
    skimpy = env.make_cleaner(0, offset_map=SkimpyOffsetMap(1000 * 24))
    fake_end, fake_stats = fake.clean(to_clean(fake_log, 0))
    skimpy_end, skimpy_stats = skimpy.clean(to_clean(skimpy_log, 0))
    assert fake_end == skimpy_end == fake_log.active_segment.base_offset
    assert [b.raw_bytes() for b in batches_in(skimpy_log)] == [b.raw_bytes() for b in batches_in(fake_log)]
    for name in ("bytes_read", "bytes_written", "messages_read", "messages_written", "map_messages_read"):
        assert getattr(skimpy_stats, name) == getattr(fake_stats, name), name
    # what is left is the latest record of every key, tombstones included (inside their horizon)
    kept = {r.key: (r.offset, r.value) for b in batches_in(skimpy_log) for r in b.records()}
    assert kept == latest
    assert sorted(r.offset for b in batches_in(skimpy_log) for r in b.records()) == sorted(
        offset for offset, _ in latest.values()
    )


def test_twins_clean_to_identical_bytes(scratch: Path) -> None:
    if "cython" not in _impl.both():
        pytest.skip("kafkalog._core is not built")
    results = {}
    for name in ("python", "cython"):
        with _impl.using(name):
            env = Env(scratch / name)
            env.time = MockTime(current_time_ms=1_600_000_000_000, current_high_res_time_ns=0)
            try:
                log = random_compacted_log(env, env.dir, 11)
                cleaner = env.make_cleaner(0, offset_map=SkimpyOffsetMap(25 * 24))  # a partial round
                end, stats = cleaner.clean(to_clean(log, 0))
                end2, _ = cleaner.clean(to_clean(log, end))
                results[name] = (end, end2, stats.messages_written, [b.raw_bytes() for b in batches_in(log)])
            finally:
                env.close()
    assert results["python"] == results["cython"]
    assert results["python"][0] < results["python"][1]


def test_log_cleaner_run_once_logs_kafka_summary(env: Env, caplog: pytest.LogCaptureFixture) -> None:
    log = env.make_log(env.config(segment_bytes=1024))
    for i in range(40):
        log.append_as_leader(record(i % 4, i), 0)
    log.roll()
    assert log.topic_partition == TP
    log_cleaner = LogCleaner(CleanerConfig.from_enable(True), [env.root], {TP: log}, time=env.time)
    with caplog.at_level(logging.INFO, logger="kafkalog.cleaner"):
        all_stats = log_cleaner.run_once()
    assert len(all_stats) == 1
    (stats,) = all_stats
    assert keys_in_log(log) == [0, 1, 2, 3]
    assert offsets_in_log(log) == [36, 37, 38, 39]
    assert (stats.messages_read, stats.messages_written) == (40, 4)
    assert log_cleaner.cleaner_manager.all_cleaner_checkpoints() == {TP: 40}
    summary = stats.summary(0, "test-0", 0, 40)
    assert summary.startswith("\n\tLog cleaner thread 0 cleaned log test-0 (dirty section = [0, 40])\n")
    assert "[kafka-log-cleaner-thread-0]: " + summary in caplog.messages


def test_max_clean_time_secs(env: Env) -> None:
    """The gauges over the cleaner threads (max-buffer-utilization-percent, max-clean-time-secs,
    max-compaction-delay-secs) are 0 when there is no thread.  Kafka reads them through its metrics registry;
    kafkalog's are properties of the LogCleaner."""
    log_dir = env.root / "data"
    log_dir.mkdir()
    log_cleaner = LogCleaner(CleanerConfig.from_enable(True), [log_dir], {}, time=env.time)
    try:
        assert log_cleaner.cleaner_count == 0
        assert log_cleaner.max_buffer_utilization_percent == 0
        assert log_cleaner.max_clean_time_secs == 0
        assert log_cleaner.max_compaction_delay_secs == 0
    finally:
        log_cleaner.shutdown()


def test_reconfigure_log_cleaner_io_max_bytes_per_second(env: Env) -> None:
    """The throttler starts from ``log.cleaner.io.max.bytes.per.second`` and takes the new value when the
    cleaner is reconfigured.  Kafka's broker configs are here a broker's properties
    (``CleanerConfig.from_props``, Kafka's ``LogCleaner.cleanerConfig(KafkaConfig)``)."""
    log_dir = env.root / "data"
    log_dir.mkdir()
    old_kafka_props = {"broker.id": "1", "log.dirs": str(log_dir), "log.cleaner.io.max.bytes.per.second": "10000000"}

    class NoThreadsLogCleaner(LogCleaner):
        """``reconfigure`` stops and starts the threads: as in Kafka's test, they do nothing here, so no thread is
        left behind."""

        def startup(self) -> None:
            pass

        def shutdown(self) -> None:
            pass

    log_cleaner = NoThreadsLogCleaner(CleanerConfig.from_props(old_kafka_props), [log_dir], {}, time=env.time)
    try:
        assert log_cleaner.throttler.desired_rate_per_sec == 10000000, (
            "Throttler.desired_rate_per_sec should be initialized from the initial "
            "log.cleaner.io.max.bytes.per.second config.")
        new_kafka_props = {**old_kafka_props, "log.cleaner.io.max.bytes.per.second": "20000000"}
        log_cleaner.reconfigure(old_kafka_props, new_kafka_props)
        assert log_cleaner.throttler.desired_rate_per_sec == 20000000, (
            "Throttler.desired_rate_per_sec should be updated with the new log.cleaner.io.max.bytes.per.second "
            "config.")
    finally:
        log_cleaner.shutdown()

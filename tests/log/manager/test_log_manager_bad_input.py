"""LogManager on bad input: each error is a clear kafkalog error and nothing on disk is lost (every case leaves
a populated log directory behind, opened again to check that every record written before the error is
still there); and, from issue 15, opening succeeds whatever recovery does, and partition dirs that name no
topic are left alone.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from kafkalog.config.config_def import ConfigError
from kafkalog.config.log_config import LogConfig
from kafkalog.errors import (
    InvalidRecordError,
    KafkaLogError,
    KafkaStorageError,
    OffsetOutOfRangeError,
    RecordTooLargeError,
)
from kafkalog.log import Log
from kafkalog.manager.log_manager import (
    LogManager,
)
from kafkalog.record import MemoryRecords
from kafkalog.scheduler import KafkaScheduler, MockTime
from kafkalog.topic import InvalidTopicError, TopicPartition
from tests.support.manager_utils import (
    CLEAN_SHUTDOWN_FILE,
    HOLD_LOCK,
    LOG_CONFIG,
    LOG_START_OFFSET_FILE,
    MAX_LOG_AGE_MS,
    NAME,
    RECOVERY_POINT_FILE,
    ManagerFactory,
    append_many,
    child_env,
    read_checkpoint,
    record_tuples,
    singleton,
)

# --- bad input: each error is a clear kafkalog error and nothing on disk is lost ---------------------------

POPULATED_CONFIGS = {"compacted": {"cleanup.policy": "compact"}, "small": {"max.message.bytes": "100"}}


def _populate(manager: LogManager) -> dict[TopicPartition, list[tuple[Any, ...]]]:
    """Records in three topics (one compacted, one with a 100-byte message limit) over several segments."""
    for topic, partitions in (("plain", 2), ("compacted", 1), ("small", 1)):
        for partition in range(partitions):
            log = manager.get_or_create_log(TopicPartition(topic, partition))
            for i in range(25):
                value = b"%s-%d-%d" % (topic.encode(), partition, i)
                key = b"key-%d" % (i % 4)
                log.append_as_leader(MemoryRecords.with_records([(key, value, 1_700_000_000_000 + i)]))
    assert manager.get_log(TopicPartition("plain", 0)).number_of_segments > 1
    return {tp: record_tuples(log) for tp, log in manager.logs_by_topic_partition().items()}


@pytest.fixture
def populated(make_manager: ManagerFactory) -> tuple[LogManager, dict[TopicPartition, list[tuple[Any, ...]]]]:
    manager = make_manager(topic_configs=POPULATED_CONFIGS)
    manager.startup()
    return manager, _populate(manager)


def _assert_intact(make_manager: ManagerFactory, live: LogManager | None,
                   expected: dict[TopicPartition, list[tuple[Any, ...]]]) -> None:
    """Shut ``live`` down, open the directory again and compare every record."""
    if live is not None:
        live.shutdown()
    reopened = make_manager(topic_configs=POPULATED_CONFIGS)
    logs = reopened.logs_by_topic_partition()
    assert set(logs) == set(expected)
    for tp, records in expected.items():
        assert len(records) >= 25
        assert record_tuples(logs[tp]) == records
    reopened.shutdown()


BAD_TOPIC_CONFIGS = [
    ({"plain": {"segment.byte": "1024"}}, "Unknown topic config name: segment.byte"),
    ({"plain": {"segment.bytes": "-1"}},
     "Invalid value -1 for configuration segment.bytes: Value must be at least 14"),
    ({"plain": {"cleanup.policy": "Compact"}}, "Invalid value 'Compact' for configuration cleanup.policy"),
    ({"plain": {"retention.ms": "ten minutes"}}, "retention.ms"),
    ({"plain": {"segment.bytes": 1.5}}, "segment.bytes"),
]


def test_bad_topic_config(make_manager: ManagerFactory, populated: Any) -> None:
    """An unknown property or a bad value in ``topic_configs`` is a ConfigError naming it, raised before the
    directory is touched (here while another manager holds it, and again once it is free)."""
    manager, expected = populated
    for configs, message in BAD_TOPIC_CONFIGS:
        with pytest.raises(ConfigError, match=message):
            make_manager(topic_configs=configs)
    manager.shutdown()
    for configs, message in BAD_TOPIC_CONFIGS:
        with pytest.raises(ConfigError, match=message):
            make_manager(topic_configs=configs)
    _assert_intact(make_manager, None, expected)


ILLEGAL_TOPICS = [
    ("..", "'..' is not allowed"),
    (".", "'.' is not allowed"),
    ("../escape", "contains one or more characters other than"),
    ("bad topic", "contains one or more characters other than"),
    ("", "the empty string is not allowed"),
    ("x" * 250, "longer than the max allowed length 249"),
]


def test_illegal_topic_name(make_manager: ManagerFactory, populated: Any, log_dir: Path,
                            tmp_path: Path) -> None:
    """Illegal topics (``..`` among them) are an InvalidTopicError from ``get_or_create_log`` and from
    ``topic_configs``, and no directory appears, inside the log directory or next to it."""
    manager, expected = populated
    entries_before = sorted(p.name for p in log_dir.iterdir())
    outside_before = sorted(p.name for p in tmp_path.iterdir())
    for topic, reason in ILLEGAL_TOPICS:
        with pytest.raises(InvalidTopicError, match=f"Topic name is invalid: .*{reason}"):
            manager.get_or_create_log(TopicPartition(topic, 0))
        with pytest.raises(InvalidTopicError, match=f"Topic name is invalid: .*{reason}"):
            make_manager(topic_configs={topic: {"retention.ms": "1000"}})
    with pytest.raises(KafkaLogError, match="Invalid partition -1 for topic plain"):
        manager.get_or_create_log(TopicPartition("plain", -1))
    assert sorted(p.name for p in log_dir.iterdir()) == entries_before
    assert sorted(p.name for p in tmp_path.iterdir()) == outside_before
    assert len(manager.all_logs()) == 4
    _assert_intact(make_manager, manager, expected)


def test_directory_locked_by_another_process(any_twin_manager: ManagerFactory, log_dir: Path) -> None:
    make_manager = any_twin_manager
    manager = make_manager(topic_configs=POPULATED_CONFIGS)
    expected = _populate(manager)
    manager.shutdown()
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(log_dir)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env())
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "locked 4\n"
        with pytest.raises(KafkaStorageError,
                           match=r"Failed to acquire lock on file \.lock in .*another process"):
            make_manager()
    finally:
        out, err = holder.communicate("\n", timeout=60)
    assert (holder.returncode, out) == (0, "released\n"), err
    _assert_intact(make_manager, None, expected)


def test_batch_over_max_message_bytes(make_manager: ManagerFactory, populated: Any) -> None:
    manager, expected = populated
    log = manager.get_log(TopicPartition("small", 0))
    end, size = log.log_end_offset, log.size
    big = MemoryRecords.with_records([(b"key", b"x" * 200, 1_700_000_000_100)])
    with pytest.raises(RecordTooLargeError, match="exceeds the maximum configured value of 100"):
        log.append_as_leader(big)
    assert (log.log_end_offset, log.size) == (end, size)
    assert record_tuples(log) == expected[TopicPartition("small", 0)]
    # A follower takes what its leader accepted: appendAsFollower skips the size check (ignoreRecordSize).
    follower_batch = MemoryRecords.with_records([(b"key", b"x" * 200, 1_700_000_000_100)], base_offset=end,
                                                partition_leader_epoch=0)
    assert log.append_as_follower(follower_batch).last_offset == end
    expected[TopicPartition("small", 0)].append((end, 1_700_000_000_100, b"key", b"x" * 200, []))
    _assert_intact(make_manager, manager, expected)


def test_unkeyed_record_on_compacted_topic(make_manager: ManagerFactory, populated: Any) -> None:
    manager, expected = populated
    log = manager.get_log(TopicPartition("compacted", 0))
    end, size = log.log_end_offset, log.size
    batch = MemoryRecords.with_records([(b"key", b"keyed", 1), (None, b"unkeyed", 2)])
    with pytest.raises(InvalidRecordError, match="Compacted topic cannot accept message without key"):
        log.append_as_leader(batch)
    assert (log.log_end_offset, log.size) == (end, size)
    _assert_intact(make_manager, manager, expected)


def test_offset_out_of_range_on_read(make_manager: ManagerFactory, populated: Any) -> None:
    manager, expected = populated
    log = manager.get_log(TopicPartition("plain", 0))
    assert log.log_end_offset == 25
    for offset in (-1, 26, 1000):
        with pytest.raises(OffsetOutOfRangeError,
                           match=f"Received request for offset {offset} for partition plain-0"):
            log.read(offset, 1024)
    assert log.read(25, 1024).records.size_in_bytes() == 0
    log.high_watermark = 10
    log.maybe_increment_log_start_offset(5)
    with pytest.raises(OffsetOutOfRangeError, match="starting from offset: 5"):
        log.read(4, 1024)
    with pytest.raises(OffsetOutOfRangeError):
        log.maybe_increment_log_start_offset(11)
    assert [r.offset for r in log.records()] == list(range(5, 10))  # up to the high watermark
    assert log.read(10, 1 << 20).records.size_in_bytes() > 0  # a follower's read goes on to the log end
    # The start offset moved (and is checkpointed at shutdown), but no record was deleted from disk.
    manager.shutdown()
    expected_after = dict(expected)
    reopened = make_manager(topic_configs=POPULATED_CONFIGS)
    assert reopened.get_log(TopicPartition("plain", 0)).log_start_offset == 5
    reopened.shutdown()
    on_disk = [r.as_tuple() for path in sorted((manager.log_dirs[0] / "plain-0").glob("*.log"))
               for r in MemoryRecords(path.read_bytes()).records()]
    assert on_disk == expected_after[TopicPartition("plain", 0)]


def test_the_kraft_metadata_log_and_the_remote_index_cache_are_not_loaded(make_manager: ManagerFactory,
                                                                          log_dir: Path) -> None:
    """LogManagerTest.testLoadLogsSkipRemoteIndexCache, and the same for the metadata log: Kafka 3.8's
    ``loadLogs`` skips ``__cluster_metadata-0`` (the Raft layer owns it) and tiered storage's
    ``remote-log-index-cache``: neither becomes a log, gets files, or enters a checkpoint."""
    metadata = log_dir / "__cluster_metadata-0"
    metadata.mkdir(parents=True)
    (log_dir / "remote-log-index-cache").mkdir()
    manager = make_manager()
    log = manager.get_or_create_log(TopicPartition(NAME, 0))
    append_many(log, 3)
    assert [tp for tp in manager.logs_by_topic_partition()] == [TopicPartition(NAME, 0)]
    manager.shutdown()
    assert list(metadata.iterdir()) == [] and list((log_dir / "remote-log-index-cache").iterdir()) == []
    assert read_checkpoint(log_dir / RECOVERY_POINT_FILE) == {TopicPartition(NAME, 0): 3}


def test_retention_with_a_cleaner_pauses_the_deletable_logs_and_leaves_compacted_ones_to_it(
        make_manager: ManagerFactory, mock_time: MockTime) -> None:
    """Kafka 3.8's ``cleanupLogs`` with a cleaner: ``pauseCleaningForNonCompactedPartitions`` gives the logs
    retention works on (not the compacted ones, ``compact,delete`` included: the cleaner threads apply
    theirs), paused for the cleaner while it runs and resumed after."""
    from kafkalog.cleaner.config import CleanerConfig
    from kafkalog.cleaner.manager import LogCleaningPaused

    topics = {"plain": {"cleanup.policy": "delete"}, "both": {"cleanup.policy": "compact,delete"}}
    manager = LogManager(make_manager().log_dirs[0].parent / "with-cleaner", LOG_CONFIG, topics,
                         CleanerConfig.from_enable(True), scheduler=mock_time.scheduler, time=mock_time)
    try:
        logs = {topic: manager.get_or_create_log(TopicPartition(topic, 0)) for topic in topics}
        for log in logs.values():
            for i in range(30):
                log.append_as_leader(singleton(b"x" * 100, f"k{i}".encode()), leader_epoch=0)
            log.high_watermark = log.log_end_offset
            for segment in log.log_segments():
                segment.set_last_modified(mock_time.milliseconds())
            assert log.number_of_segments > 1
        assert manager.cleaner is not None
        states = []
        real = Log.delete_old_segments

        def observing(log: Log) -> int:
            states.append((log.topic_partition.topic,
                           manager.cleaner.cleaner_manager.cleaning_state(log.topic_partition)))
            return real(log)

        mock_time.sleep(MAX_LOG_AGE_MS + 1)
        Log.delete_old_segments = observing  # type: ignore[method-assign]
        try:
            deleted = manager.cleanup_logs()
        finally:
            Log.delete_old_segments = real  # type: ignore[method-assign]
        assert deleted > 0
        assert [topic for topic, _state in states] == ["plain"]
        assert isinstance(states[0][1], LogCleaningPaused)
        assert manager.cleaner.cleaner_manager.cleaning_state(TopicPartition("plain", 0)) is None  # resumed
        assert logs["both"].log_start_offset == 0  # left to the cleaner threads
    finally:
        manager.shutdown()


# --- issue 15: opening succeeds whatever recovery does; partition dirs that are no topic -------------------

#: 1 KiB segments and the broker's own scheduler (the manager's, started by the manager).
SMALL_SEGMENTS = LogConfig({"segment.bytes": 1024, "segment.index.bytes": 4096})


def _segmented_log(root: Path) -> list[int]:
    """A log of ``NAME-0`` over at least four segments, shut down cleanly; returns their base offsets."""
    with LogManager(root, SMALL_SEGMENTS) as manager:
        log = manager.get_or_create_log(TopicPartition(NAME, 0))
        while log.number_of_segments < 4:
            append_many(log, 5)
        return [s.base_offset for s in log.log_segments()]


def _unclean(root: Path, recovery_point: int = 0) -> None:
    """Make the last shutdown an unclean one, with the recovery point at ``recovery_point``."""
    (root / CLEAN_SHUTDOWN_FILE).unlink()
    (root / RECOVERY_POINT_FILE).write_text(f"0\n1\n{NAME} 0 {recovery_point}\n")


def test_open_succeeds_when_recovery_deletes_segments_after_a_corrupt_one(impl: ModuleType, tmp_path: Path) -> None:
    """Issue 15, defect 6: recovery cuts a corrupt middle segment and deletes the segments after it, which
    it does in the background (``delete-file``, after ``file.delete.delay.ms``); the manager's own scheduler
    was not started until ``startup``, so the open failed with SchedulerStateError.  Kafka's broker starts
    its scheduler before the logs load; the manager now starts its own in the constructor."""
    root = tmp_path / "logs"
    bases = _segmented_log(root)
    _unclean(root)
    middle = root / f"{NAME}-0" / f"{bases[1]:020d}.log"
    data = bytearray(middle.read_bytes())
    data[70] ^= 0xFF  # inside the first batch's record: its CRC no longer matches
    middle.write_bytes(bytes(data))

    manager = LogManager(root, SMALL_SEGMENTS)
    try:
        log = manager.get_log(TopicPartition(NAME, 0))
        assert log.log_end_offset == bases[1]
        assert [s.base_offset for s in log.log_segments()] == bases[:2]
        assert log.load_report.deleted_segments == bases[2:]
        assert [r.offset for r in log.records()] == list(range(bases[1]))
        append_many(log, 1)
    finally:
        manager.shutdown()
    # The deletions still waiting at shutdown are finished by the next open: no .deleted file stays.
    with LogManager(root, SMALL_SEGMENTS) as reopened:
        assert [r.offset for r in reopened.get_log(TopicPartition(NAME, 0)).records()] == list(range(bases[1] + 1))
        assert not [p.name for p in (root / f"{NAME}-0").iterdir() if p.name.endswith(".deleted")]


def test_open_succeeds_when_the_log_start_checkpoint_is_past_the_log_end(impl: ModuleType, tmp_path: Path) -> None:
    """Issue 15, defect 6: a log start offset checkpointed above the log end (segments deleted by hand) makes
    recovery delete every segment in the background and start an empty one at the checkpoint."""
    root = tmp_path / "logs"
    _segmented_log(root)
    _unclean(root)
    (root / LOG_START_OFFSET_FILE).write_text(f"0\n1\n{NAME} 0 10000\n")
    with LogManager(root, SMALL_SEGMENTS) as manager:
        log = manager.get_log(TopicPartition(NAME, 0))
        assert (log.log_start_offset, log.log_end_offset, log.number_of_segments) == (10000, 10000, 1)
    with LogManager(root, SMALL_SEGMENTS) as reopened:
        assert reopened.get_log(TopicPartition(NAME, 0)).log_end_offset == 10000
        # The producer snapshot is the one Kafka's reload after a clean shutdown with none writes at the log end.
        assert sorted(p.name for p in (root / f"{NAME}-0").iterdir()) == [
            "00000000000000010000.index", "00000000000000010000.log", "00000000000000010000.snapshot",
            "00000000000000010000.timeindex", "leader-epoch-checkpoint"]


def test_a_manager_used_without_startup_rolls(tmp_path: Path) -> None:
    """Issue 15, defect 6: a roll schedules a flush of the old segment; a manager whose background tasks
    were never started (no ``startup``) failed on every roll."""
    manager = LogManager(tmp_path / "logs", SMALL_SEGMENTS)
    try:
        log = manager.get_or_create_log(TopicPartition(NAME, 0))
        while log.number_of_segments < 3:
            append_many(log, 5)
        end = log.log_end_offset
    finally:
        manager.shutdown()
    with LogManager(tmp_path / "logs", SMALL_SEGMENTS) as reopened:
        assert reopened.get_log(TopicPartition(NAME, 0)).log_end_offset == end


def test_a_given_scheduler_must_run_before_the_logs_load(tmp_path: Path) -> None:
    """A broker starts its scheduler before its LogManager loads; kafkalog loads in the constructor, so a
    scheduler given to a writable manager must be running then: one that is not is refused up front, before
    any lock is taken or file touched, rather than failing whenever recovery or a roll schedules a task."""
    from kafkalog.scheduler import SchedulerStateError

    scheduler = KafkaScheduler(1, "given-")
    with pytest.raises(SchedulerStateError, match="must be started before"):
        LogManager(tmp_path / "logs", SMALL_SEGMENTS, scheduler=scheduler)
    assert not (tmp_path / "logs" / ".lock").exists()
    scheduler.startup()
    try:
        with LogManager(tmp_path / "logs", SMALL_SEGMENTS, scheduler=scheduler) as manager:
            append_many(manager.get_or_create_log(TopicPartition(NAME, 0)), 40)
        assert scheduler.is_started  # the caller's scheduler is the caller's to stop
    finally:
        scheduler.shutdown()
    LogManager(tmp_path / "logs", read_only=True, scheduler=KafkaScheduler(1)).shutdown()  # a reader schedules nothing


@pytest.mark.parametrize("name", [b"my topic-0", b"t\xff-0", b"t" * 250 + b"-0"])
def test_partition_dirs_that_are_no_topic_are_skipped(tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                                      name: bytes) -> None:
    """Issue 15, defect 8: a directory named ``<topic>-<partition>`` whose topic Kafka does not allow (a space,
    a byte that is not UTF-8, a name longer than 249 characters) was loaded, and then no checkpoint could
    list it, so the whole directory's recovery points and its clean-shutdown marker were not written.  It is
    skipped at load with a warning (Kafka's ``loadLog`` refuses it: ``Topic.validate``), and left as it is."""
    root = tmp_path / "logs"
    with LogManager(root, SMALL_SEGMENTS) as manager:
        append_many(manager.get_or_create_log(TopicPartition(NAME, 0)), 3)
    stranger = os.path.join(os.fsencode(root), name)
    shutil.copytree(os.fsencode(root / f"{NAME}-0"), stranger)
    before = sorted(os.listdir(stranger))
    for read_only in (True, False):
        with LogManager(root, SMALL_SEGMENTS, read_only=read_only) as manager:
            assert list(manager.logs_by_topic_partition()) == [TopicPartition(NAME, 0)]
        assert "is not a partition directory" in caplog.text and "Topic name is invalid" in caplog.text
        # a name that is not UTF-8 is shown with its bytes escaped: a UTF-8 log file can take the warning
        for record in caplog.records:
            record.getMessage().encode("utf-8")
        if name == b"t\xff-0":
            assert "t\\xff-0" in caplog.text
        caplog.clear()
    assert (root / CLEAN_SHUTDOWN_FILE).exists()
    assert read_checkpoint(root / RECOVERY_POINT_FILE) == {TopicPartition(NAME, 0): 3}
    assert sorted(os.listdir(stranger)) == before

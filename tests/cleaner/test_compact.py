"""Compaction from Python without the cleaner's internals: ``LogManager.compact`` and
:func:`kafkalog.cleaner.compact` of a lone log (issue 17; ``Log.compact`` until issue 31),
and the statistics that say which partition they are about."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from kafkalog import CleanerConfig, Log, LogConfig, LogManager, MemoryRecords
from kafkalog.cleaner import compact
from kafkalog.errors import IllegalArgumentError, IllegalStateError, ReadOnlyError
from kafkalog.topic import TopicPartition

COMPACTED = {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0", "segment.bytes": "512"}


def _write_updates(log: Log, rounds: int = 10, keys: int = 4) -> None:
    for i in range(rounds * keys):
        log.append(MemoryRecords.with_records([(b"key-%d" % (i % keys), b"value-%d" % i, 1000 + i)]))
    log.roll()  # the active segment is never cleaned: make every update cleanable


def _latest(log: Log) -> dict[bytes | None, bytes | None]:
    return {r.key: r.value for r in log.records()}


def test_the_manager_compacts_its_compacted_topics(tmp_path: Path, impl: ModuleType) -> None:
    with LogManager(tmp_path, LogConfig(), {"users": COMPACTED}) as manager:
        users = [manager.get_or_create_log(TopicPartition("users", p)) for p in range(2)]
        events = manager.get_or_create_log(TopicPartition("events", 0))
        for log in [*users, events]:
            _write_updates(log)
        before = {log.topic_partition: (_latest(log), log.size) for log in users}
        events_size = events.size
        stats = manager.compact()
        assert sorted(s.topic_partition for s in stats) == [TopicPartition("users", 0), TopicPartition("users", 1)]
        for log in users:
            latest, size = before[log.topic_partition]
            assert _latest(log) == latest and log.size < size
            assert len(list(log.records())) == 4
        assert events.size == events_size  # cleanup.policy=delete: not the cleaner's
        assert manager.compact() == []  # nothing dirty is left


def test_compacting_one_topic_leaves_the_others(tmp_path: Path) -> None:
    with LogManager(tmp_path, LogConfig(), {"a": COMPACTED, "b": COMPACTED},
                    CleanerConfig.from_enable(True)) as manager:  # the manager's own cleaner does the work
        a, b = (manager.get_or_create_log(TopicPartition(t, 0)) for t in "ab")
        _write_updates(a)
        _write_updates(b)
        b_size = b.size
        [stats] = manager.compact("a")
        assert stats.topic_partition == TopicPartition("a", 0) and b.size == b_size
        assert [s.topic_partition for s in manager.compact("b", max_rounds=1)] == [TopicPartition("b", 0)]


def test_compact_refuses_what_it_cannot_clean(tmp_path: Path) -> None:
    with LogManager(tmp_path, LogConfig(), {"users": COMPACTED}) as manager:
        manager.get_or_create_log(TopicPartition("events", 0))
        with pytest.raises(IllegalArgumentError, match="it has no log in"):
            manager.compact("nowhere")
        with pytest.raises(IllegalArgumentError, match=r"its cleanup.policy is delete, not compact"):
            manager.compact("events")
        with pytest.raises(IllegalStateError, match="held by a LogManager"):
            compact(manager.get_or_create_log(TopicPartition("users", 0)))
    with LogManager(tmp_path, LogConfig(), read_only=True) as reader, \
            pytest.raises(ReadOnlyError, match="read-only"):
        reader.compact()


def test_a_lone_log_compacts_itself(tmp_path: Path, impl: ModuleType) -> None:
    with Log(tmp_path / "users-0", LogConfig(COMPACTED)) as log:
        _write_updates(log)
        latest, size = _latest(log), log.size
        stats = compact(log)
        assert [s.topic_partition for s in stats] == [TopicPartition("users", 0)]
        assert _latest(log) == latest and log.size < size
        assert stats[0].messages_read > stats[0].messages_written
        assert repr(stats[0]).startswith("CleanerStats(topic_partition=TopicPartition(topic='users', partition=0),")
        assert str(stats[0]).startswith("users-0: read ")
    assert (tmp_path / "cleaner-offset-checkpoint").is_file()
    with Log(tmp_path / "events-0", LogConfig()) as plain, \
            pytest.raises(IllegalArgumentError, match="which does not include compact"):
        compact(plain)

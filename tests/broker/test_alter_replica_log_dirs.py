"""AlterReplicaLogDirs (API 34; kafkalog.broker.log_dir_moves): a partition moved to another of the broker's log
dirs as Kafka 3.8's ``ReplicaManager.alterReplicaLogDirs`` moves it -- a ``-future`` copy in the destination, the
records copied, the copy promoted -- with Kafka's errors; DescribeLogDirs showing the copy while it is under way;
and the data intact after the move, after a restart, and after a crash in the middle of the copy."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kio.schema.alter_replica_log_dirs.v2.request import (
    AlterReplicaLogDir,
    AlterReplicaLogDirsRequest,
    AlterReplicaLogDirTopic,
)
from kio.schema.describe_log_dirs.v4.request import DescribeLogDirsRequest
from kio.schema.errors import ErrorCode

from kafkalog.broker import RunningBroker, serve
from kafkalog.broker.log_dir_moves import LogDirMoves
from kafkalog.record import MemoryRecords
from kafkalog.topic import TopicPartition
from tests.support.kafka_wire import WireClient

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

TOPIC = "moving"


def _dirs(tmp_path: Path) -> list[Path]:
    dirs = [tmp_path / "d0", tmp_path / "d1"]
    for d in dirs:
        d.mkdir(parents=True)
    return [d.resolve() for d in dirs]


def _write(running: RunningBroker, partition: int, values: list[bytes]) -> None:
    def append() -> None:
        registry = running.broker.partitions
        for value in values:
            registry.append(registry.log(TOPIC, partition), MemoryRecords.with_records([(None, value, 1000)]))
    running.call(append)


def _values(running: RunningBroker, partition: int) -> list[bytes]:
    log = running.call(lambda: running.broker.partitions.log(TOPIC, partition))
    return [r.value for r in log.records()]  # type: ignore[attr-defined]


def _alter(running: RunningBroker, moves: dict[str, dict[str, list[int]]]) -> dict[tuple[str, int], ErrorCode]:
    request = AlterReplicaLogDirsRequest(dirs=tuple(
        AlterReplicaLogDir(path=path, topics=tuple(AlterReplicaLogDirTopic(name=name, partitions=tuple(parts))
                                                   for name, parts in topics.items()))
        for path, topics in moves.items()))
    with WireClient(running.bootstrap_servers) as client:
        _, response = client.request(request)
    return {(t.topic_name, p.partition_index): p.error_code for t in response.results for p in t.partitions}


def _described(running: RunningBroker) -> dict[tuple[str, str, int], bool]:
    """(log dir, topic, partition) -> is_future_key, from DescribeLogDirs."""
    with WireClient(running.bootstrap_servers) as client:
        _, response = client.request(DescribeLogDirsRequest(topics=None))
    return {(r.log_dir, t.name, p.partition_index): p.is_future_key
            for r in response.results for t in r.topics for p in t.partitions}


def _wait_moved(running: RunningBroker, partition: int) -> None:
    moves = running.broker.log_dir_moves
    assert moves is not None
    running.call(lambda: moves.wait(TopicPartition(TOPIC, partition)))


def _where(running: RunningBroker, partition: int) -> Path:
    return running.call(lambda: running.broker.partitions.log(TOPIC, partition).dir)  # type: ignore[no-any-return]


@pytest.fixture
def two_dirs(tmp_path: Path) -> Iterator[tuple[RunningBroker, list[Path]]]:
    dirs = _dirs(tmp_path)
    with serve(dirs, config={"log.segment.delete.delay.ms": "0"}) as running:
        running.create_topic(TOPIC, 2)
        yield running, dirs


def test_a_partition_moves_with_its_records_and_stays_after_a_restart(tmp_path: Path) -> None:
    dirs = _dirs(tmp_path)
    values = [b"v%d" % i for i in range(50)]
    with serve(dirs) as running:
        running.create_topic(TOPIC, 1)
        source = _where(running, 0).parent
        target = next(d for d in dirs if d != source)
        _write(running, 0, values)
        assert _alter(running, {str(target): {TOPIC: [0]}}) == {(TOPIC, 0): ErrorCode.none}
        _wait_moved(running, 0)
        moved = _where(running, 0)
        assert moved == target / f"{TOPIC}-0"
        assert _values(running, 0) == values
        assert (moved / "partition.metadata").exists()
        assert _described(running) == {(str(target), TOPIC, 0): False}
        _write(running, 0, [b"after"])  # the moved log is the one served and written
    assert not (source / f"{TOPIC}-0").exists()
    with serve(dirs) as running:
        assert _where(running, 0) == target / f"{TOPIC}-0"
        assert _values(running, 0) == [*values, b"after"]


def test_kafkas_errors(two_dirs: tuple[RunningBroker, list[Path]], tmp_path: Path) -> None:
    running, dirs = two_dirs
    current = _where(running, 0).parent
    other = next(d for d in dirs if d != current)
    assert _alter(running, {str(tmp_path / "elsewhere"): {TOPIC: [0]}}) == {(TOPIC, 0): ErrorCode.log_dir_not_found}
    assert _alter(running, {"relative/d0": {TOPIC: [0]}}) == {(TOPIC, 0): ErrorCode.log_dir_not_found}
    # Kafka compares the path as a string with the dir's absolute path
    assert _alter(running, {f"{current}/": {TOPIC: [0]}}) == {(TOPIC, 0): ErrorCode.log_dir_not_found}
    assert _alter(running, {str(other): {"missing": [0], TOPIC: [7]}}) == {
        ("missing", 0): ErrorCode.unknown_topic_or_partition, (TOPIC, 7): ErrorCode.unknown_topic_or_partition}
    # already there: nothing to do, and no copy is made
    assert _alter(running, {str(current): {TOPIC: [0]}}) == {(TOPIC, 0): ErrorCode.none}
    assert running.broker.log_dir_moves.moving() == []  # type: ignore[union-attr]
    assert not any(p.name.endswith("-future") for d in dirs for p in d.iterdir())
    long_name = "t" * 240
    running.create_topic(long_name, 1)
    assert _alter(running, {str(other): {long_name: [0]}}) == {(long_name, 0): ErrorCode.invalid_topic_exception}


def test_an_offline_dir_is_a_storage_error(two_dirs: tuple[RunningBroker, list[Path]]) -> None:
    running, dirs = two_dirs
    current = _where(running, 0).parent
    other = next(d for d in dirs if d != current)
    manager = running.broker.log_manager
    assert manager is not None
    running.call(lambda: manager.log_dir_failure_channel.maybe_add_offline_log_dir(str(other), "test", OSError()))
    assert _alter(running, {str(other): {TOPIC: [0]}}) == {(TOPIC, 0): ErrorCode.kafka_storage_error}


class _Paused:
    """Makes the copy of a move stop after its first step until released (a step that waits on an event)."""

    def __init__(self, running: RunningBroker, monkeypatch: pytest.MonkeyPatch) -> None:
        self.running = running
        self.steps = 0
        self.release = running.call(asyncio.Event)
        self.first_step_done = running.call(asyncio.Event)
        original = LogDirMoves._move

        async def paused_move(moves: LogDirMoves, tp: TopicPartition) -> None:
            moves.step(tp)
            self.steps += 1
            self.first_step_done.set()
            await self.release.wait()
            await original(moves, tp)
        monkeypatch.setattr(LogDirMoves, "_move", paused_move)

    def wait_first_step(self) -> None:
        self.running.call(self.first_step_done.wait)

    def go(self) -> None:
        self.running.call(self.release.set)


def test_describe_log_dirs_shows_the_copy_while_the_move_is_under_way(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    dirs = _dirs(tmp_path)
    with serve(dirs) as running:
        running.create_topic(TOPIC, 1)
        source = _where(running, 0).parent
        target = next(d for d in dirs if d != source)
        _write(running, 0, [b"x" * 1000] * 20)
        running.broker.log_dir_moves.fetch_max_bytes = 3000  # type: ignore[union-attr]
        paused = _Paused(running, monkeypatch)
        assert _alter(running, {str(target): {TOPIC: [0]}}) == {(TOPIC, 0): ErrorCode.none}
        paused.wait_first_step()
        assert _described(running) == {(str(source), TOPIC, 0): False, (str(target), TOPIC, 0): True}
        # the same move again changes nothing; records written meanwhile are copied too
        assert _alter(running, {str(target): {TOPIC: [0]}}) == {(TOPIC, 0): ErrorCode.none}
        _write(running, 0, [b"during"])
        paused.go()
        _wait_moved(running, 0)
        assert _described(running) == {(str(target), TOPIC, 0): False}
        assert _values(running, 0) == [b"x" * 1000] * 20 + [b"during"]


def test_a_move_elsewhere_replaces_the_one_under_way(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Kafka: ``futureReplicaDirChanged``: the fetcher stops and the copy is deleted before the new move."""
    dirs = [*_dirs(tmp_path), (tmp_path / "d2").resolve()]
    dirs[2].mkdir()
    with serve(dirs, config={"log.segment.delete.delay.ms": "0"}) as running:
        running.create_topic(TOPIC, 1)
        source = _where(running, 0).parent
        first, second = [d for d in dirs if d != source]
        _write(running, 0, [b"y" * 1000] * 10)
        running.broker.log_dir_moves.fetch_max_bytes = 2000  # type: ignore[union-attr]
        paused = _Paused(running, monkeypatch)
        assert _alter(running, {str(first): {TOPIC: [0]}}) == {(TOPIC, 0): ErrorCode.none}
        paused.wait_first_step()
        monkeypatch.undo()
        assert _alter(running, {str(second): {TOPIC: [0]}}) == {(TOPIC, 0): ErrorCode.none}
        _wait_moved(running, 0)
        assert _where(running, 0) == second / f"{TOPIC}-0"
        assert _values(running, 0) == [b"y" * 1000] * 10
        assert not any(p.name.endswith("-future") for p in first.iterdir())


def test_a_crash_in_the_middle_of_the_copy_loses_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The data dirs as a crash leaves them mid-copy (copied while the move is paused: no clean shutdown, the
    ``-future`` copy half made) open with the partition's log as it was, the copy loaded as a future log and its
    move resumed to the end."""
    dirs = _dirs(tmp_path / "live")
    crashed = [tmp_path / "crashed" / d.name for d in dirs]
    values = [b"z%d" % i + b"." * 500 for i in range(30)]
    with serve(dirs) as running:
        running.create_topic(TOPIC, 1)
        source = _where(running, 0).parent
        target = next(d for d in dirs if d != source)
        _write(running, 0, values)
        running.broker.log_dir_moves.fetch_max_bytes = 4000  # type: ignore[union-attr]
        paused = _Paused(running, monkeypatch)
        assert _alter(running, {str(target): {TOPIC: [0]}}) == {(TOPIC, 0): ErrorCode.none}
        paused.wait_first_step()

        def snapshot() -> None:
            for d, copy in zip(dirs, crashed, strict=True):
                shutil.copytree(d, copy)
        running.call(snapshot)
        paused.go()
    crashed = [d.resolve() for d in crashed]
    futures = [p for p in crashed[dirs.index(target)].iterdir() if p.name.endswith("-future")]
    assert len(futures) == 1 and not (crashed[dirs.index(target)] / f"{TOPIC}-0").exists()
    assert not any((d / ".kafka_cleanshutdown").exists() for d in crashed)
    with serve(crashed) as running:
        _wait_moved(running, 0)
        assert _where(running, 0) == crashed[dirs.index(target)] / f"{TOPIC}-0"
        assert _values(running, 0) == values
    with serve(crashed) as running:
        assert _values(running, 0) == values


def test_a_topic_deleted_during_its_move(two_dirs: tuple[RunningBroker, list[Path]],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    running, dirs = two_dirs
    source = _where(running, 0).parent
    target = next(d for d in dirs if d != source)
    _write(running, 0, [b"w" * 1000] * 10)
    running.broker.log_dir_moves.fetch_max_bytes = 2000  # type: ignore[union-attr]
    paused = _Paused(running, monkeypatch)
    assert _alter(running, {str(target): {TOPIC: [0]}}) == {(TOPIC, 0): ErrorCode.none}
    paused.wait_first_step()
    running.call(lambda: running.broker.partitions.delete_topic(TOPIC))
    paused.go()
    _wait_moved(running, 0)
    manager = running.broker.log_manager
    assert manager is not None
    assert manager.get_log(TopicPartition(TOPIC, 0), is_future=True) is None
    assert _described(running) == {}


def test_kafka_python_alter_replica_log_dirs(two_dirs: tuple[RunningBroker, list[Path]]) -> None:
    from kafka import TopicPartitionReplica
    from kafka.admin import KafkaAdminClient
    from kafka.errors import NoError
    running, dirs = two_dirs
    source = _where(running, 1).parent
    target = next(d for d in dirs if d != source)
    _write(running, 1, [b"a", b"b"])
    admin = KafkaAdminClient(bootstrap_servers=running.bootstrap_servers)
    replica = TopicPartitionReplica(TOPIC, 1, running.broker.node_id)
    try:
        result: Any = admin.alter_replica_log_dirs({replica: str(target)})
    finally:
        admin.close()
    assert result == {replica: NoError}
    _wait_moved(running, 1)
    assert _where(running, 1) == target / f"{TOPIC}-1"
    assert _values(running, 1) == [b"a", b"b"]

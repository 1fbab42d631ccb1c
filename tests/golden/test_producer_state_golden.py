"""Producer state on broker-written data (``../shared/golden``): the broker's snapshots read, rebuilt and written
back byte for byte, and producer state rebuilt from the batches of the golden logs that carry producer ids.

Every golden ``.snapshot`` holds no producer (DETAILS.md: "all empty, version 1, CRC32C ok"), so the rewrite
checks the header, the CRC of the empty body and the naming.  The logs with producers (Danielowo2000's ksqlDB
command topic, 4 transactions each ended by a COMMIT; ``locations-0``, 6 idempotent producers; the repartition
topics) are fed through the manager with a client's full checks, as a leader would have appended them.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from kafkalog.append_origin import AppendOrigin
from kafkalog.filenames import offset_from_file, producer_snapshot_filename
from kafkalog.log import Log
from kafkalog.log.transactions import TransactionState, producer_batches
from kafkalog.producer_state import (
    CompletedTxn,
    ProducerStateManager,
    ProducerStateManagerConfig,
    read_snapshot,
    serialize_snapshot,
)
from kafkalog.producer_state.snapshot import java_hash_map_order
from kafkalog.record.batch import DefaultRecordBatch
from kafkalog.record.memory import MemoryRecords
from kafkalog.scheduler import MockTime
from kafkalog.topic import TopicPartition
from tests.support.golden_data import DANIELOWO, KSQL, SEG0

#: No producer expires while a test runs: the golden data is years old.
NEVER = 2**62


def _manager(log_dir: Path) -> ProducerStateManager:
    return ProducerStateManager(TopicPartition(log_dir.name, 0), log_dir, 900_000,
                                ProducerStateManagerConfig(NEVER, True), MockTime(current_time_ms=0))


def test_golden_snapshots_are_written_back_byte_for_byte(impl: ModuleType, golden: Path, tmp_path: Path) -> None:
    snapshots = sorted(golden.rglob("*.snapshot"))
    assert len(snapshots) == 101
    for number, original in enumerate(snapshots):
        offset = offset_from_file(original)
        # Load it as a broker does on open: the newest snapshot in the log's range.
        loaded_dir = tmp_path / f"loaded-{number}"
        loaded_dir.mkdir()
        shutil.copyfile(original, loaded_dir / original.name)
        loader = _manager(loaded_dir)
        loader.truncate_and_reload(0, offset, 0)
        assert loader.latest_snapshot_offset() == offset
        assert loader.map_end_offset == offset
        # Rebuild the state in a fresh manager and snapshot it at the same offset.
        written_dir = tmp_path / f"written-{number}"
        written_dir.mkdir()
        writer = _manager(written_dir)
        for entry in loader.active_producers().values():
            writer.load_producer_entry(entry)
        writer.update_map_end_offset(offset)
        path = writer.take_snapshot(sync=False)
        assert path == producer_snapshot_filename(written_dir, offset)
        assert path.read_bytes() == original.read_bytes(), original


def _batches(path: Path) -> list[DefaultRecordBatch]:
    out = []
    for batch in MemoryRecords(path.read_bytes()).batches():
        assert isinstance(batch, DefaultRecordBatch)
        out.append(batch)
    return out


def _rebuild(manager: ProducerStateManager, batches: list[DefaultRecordBatch]) -> list[CompletedTxn]:
    """Each batch as its own leader append (markers from the coordinator), as ``UnifiedLog`` orders the calls."""
    completed_txns = []
    for batch in batches:
        if batch.producer_id < 0:
            continue
        origin = AppendOrigin.COORDINATOR if batch.is_control else AppendOrigin.CLIENT
        info = manager.prepare_update(batch.producer_id, origin)
        completed = info.append(batch)
        manager.update(info)
        if completed is not None:
            assert manager.last_stable_offset(completed) == completed.last_offset + 1
            manager.complete_txn(completed)
            completed_txns.append(completed)
        manager.update_map_end_offset(batch.last_offset + 1)
    return completed_txns


@pytest.mark.parametrize(("partition", "producers"), [
    (f"{KSQL}_command_topic-0", 1),
    ("locations-0", 6),
    ("CURRENTLOCATION-0", 1),
    (f"{KSQL}query_CTAS_CURRENTLOCATION_3-Aggregate-GroupBy-repartition-0", 1),
    (f"{KSQL}query_CTAS_RIDERSNEARMOUNTAINVIEW_5-Aggregate-GroupBy-repartition-0", 1),
])
def test_producer_state_rebuilt_from_golden_logs(impl: ModuleType, golden: Path, tmp_path: Path, partition: str,
                                                 producers: int) -> None:
    batches = _batches(golden / DANIELOWO / partition / SEG0)
    manager = _manager(tmp_path)
    completed = _rebuild(manager, batches)
    assert len(manager.active_producers()) == producers
    assert manager.first_undecided_offset() is None
    manager.on_high_watermark_updated(batches[-1].last_offset + 1)
    assert manager.first_unstable_offset() is None
    for producer_id, entry in manager.active_producers().items():
        data = [b for b in batches if b.producer_id == producer_id and not b.is_control]
        last = data[-1]
        assert (entry.producer_epoch, entry.last_seq, entry.last_data_offset) == (
            last.producer_epoch, last.last_sequence, last.last_offset)
        assert entry.current_txn_first_offset is None
    if partition.endswith("_command_topic-0"):
        # 4 transactions of one data batch each, every one committed by the marker after it.
        markers = [b for b in batches if b.is_control]
        assert [(t.first_offset, t.last_offset, t.is_aborted) for t in completed] == [
            (b.base_offset - 1, b.base_offset, False) for b in markers]
    else:
        assert completed == []
    # The snapshot at the end offset reads back as the state, in Java's HashMap order.
    path = manager.take_snapshot(sync=False)
    assert path is not None
    assert path.read_bytes() == serialize_snapshot(java_hash_map_order(dict(manager.active_producers()), 0))
    assert {e.producer_id for e in read_snapshot(path)} == set(manager.active_producers())


@pytest.mark.parametrize("partition", [
    f"{KSQL}_command_topic-0",
    "locations-0",
    "CURRENTLOCATION-0",
    f"{KSQL}query_CTAS_CURRENTLOCATION_3-Aggregate-GroupBy-repartition-0",
])
@pytest.mark.parametrize("had_clean_shutdown", [False, True])
def test_log_opens_golden_logs_with_their_producer_state(impl: ModuleType, golden: Path, tmp_path: Path,
                                                         partition: str, had_clean_shutdown: bool) -> None:
    """A copy of a golden log with producers, opened as a Log: the loader rebuilds the state of the manager fed
    batch by batch, no transaction is left open, and the snapshot at the log end gives the state back on the next
    open.  The copy has no index, so even a clean open recovers the segment (Kafka's ``recoverSegment`` from
    ``loadSegmentFiles``), with the producer state: the upgrade shortcut does not apply.  After an unclean
    shutdown the log loads the snapshot recovery took, which keeps each producer's last batch only (Kafka's
    format); after a clean one the copy, which has no snapshot, has its transaction indexes completed first and
    no snapshot is written until they are, so the state is the replay's, each producer's last five batches: the
    facts a snapshot keeps are the same."""
    directory = tmp_path / partition
    directory.mkdir()
    shutil.copyfile(golden / DANIELOWO / partition / SEG0, directory / SEG0)
    (tmp_path / "expected").mkdir()
    manager = _manager(tmp_path / "expected")
    _rebuild(manager, _batches(directory / SEG0))
    # What a load gives back: recovery snapshots the state at the segment's end and the log loads that snapshot,
    # which keeps each producer's last batch only (Kafka's format).
    snapshot = manager.take_snapshot(sync=False)
    assert snapshot is not None
    expected = {entry.producer_id: entry for entry in read_snapshot(snapshot)}
    assert set(expected) == set(manager.active_producers())
    config = ProducerStateManagerConfig(NEVER, False)
    with Log(directory, time=MockTime(current_time_ms=0), producer_state_manager_config=config,
             had_clean_shutdown=had_clean_shutdown) as log:
        assert log.first_unstable_offset is None
        assert log.last_stable_offset == log.high_watermark == log.log_end_offset
        if had_clean_shutdown:
            assert _kept(log.active_producers()) == _kept(expected)
            assert log.active_producers() == dict(manager.active_producers())
        else:
            assert log.active_producers() == expected
        assert log.latest_producer_snapshot_offset() == log.log_end_offset
        state = _kept(log.active_producers())
    with Log(directory, time=MockTime(current_time_ms=0), producer_state_manager_config=config,
             had_clean_shutdown=False) as reopened:
        assert _kept(reopened.active_producers()) == state


def _kept(producers: dict[int, Any]) -> dict[int, tuple[int, ...]]:
    """What a snapshot keeps of each producer: epoch, last sequence, last offset, open transaction, coordinator
    epoch and last timestamp."""
    return {pid: (e.producer_epoch, e.last_seq, e.last_data_offset, e.current_txn_first_offset, e.coordinator_epoch,
                  e.last_timestamp) for pid, e in producers.items()}


def test_golden_transactions_from_indexes_and_snapshots_match_the_batches(impl: ModuleType, golden: Path,
                                                                          tmp_path: Path) -> None:
    """Every golden partition dir with producer snapshots (brokers 0.11 to 3.7), read in place: the transactions a
    reader takes from the broker's ``.txnindex`` files and newest snapshot (``TransactionState.of``, what the Spark
    source and ``Log.records`` use) are those the batches themselves say.  The golden set holds no abort and no
    transaction left open, so every last stable offset is the log end.  The ksqlDB command topic, whose four
    transactions were committed, was copied without its snapshots: read in place its batch headers are read, and
    its first open for writing replays it, leaves no ``.txnindex`` (nothing was aborted) and snapshots it, after
    which a reader takes the same answer from the snapshot."""
    directories = sorted({snapshot.parent for snapshot in golden.rglob("*.snapshot")})
    assert len(directories) == 43
    for directory in directories:
        with Log(directory, read_only=True) as log:
            from_indexes = TransactionState.of(log)
            batches = [batch for segment in log.log_segments()
                       for batch in producer_batches(segment, transactional_only=True)]
            assert from_indexes == TransactionState.from_batches(batches, log.log_end_offset), directory
            assert from_indexes == TransactionState((), log.log_end_offset), directory

    command_topic = golden / DANIELOWO / f"{KSQL}_command_topic-0"
    assert not list(command_topic.glob("*.snapshot"))
    with Log(command_topic, read_only=True) as log:
        from_headers = TransactionState.of(log)
        assert from_headers == TransactionState((), log.log_end_offset)
        assert sum(1 for segment in log.log_segments()
                   for batch in producer_batches(segment, transactional_only=True) if batch.is_control) == 4
    copy = tmp_path / command_topic.name
    copy.mkdir()
    shutil.copyfile(command_topic / SEG0, copy / SEG0)
    config = ProducerStateManagerConfig(NEVER, False)
    with Log(copy, time=MockTime(current_time_ms=0), producer_state_manager_config=config) as log:
        assert TransactionState.of(log) == from_headers
    assert not list(copy.glob("*.txnindex"))
    assert list(copy.glob("*.snapshot"))
    with Log(copy, read_only=True) as reader:
        assert TransactionState.of(reader) == from_headers

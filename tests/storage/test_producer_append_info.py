"""kafkalog.producer_state fed with real v2 batches, as the log will feed it: ``ProducerAppendInfo.append`` over
:class:`~kafkalog.record.batch.DefaultRecordBatch` (the :class:`ProducerBatchInfo` seam), duplicates found with
``ProducerStateEntry.find_duplicate_batch``, and the refusals Kafka's suite does not exercise.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from kafkalog.append_origin import AppendOrigin
from kafkalog.errors import (
    IllegalArgumentError,
    InvalidRecordError,
    InvalidTxnStateError,
    OutOfOrderSequenceError,
)
from kafkalog.producer_state import (
    NUM_BATCHES_TO_RETAIN,
    BatchMetadata,
    CompletedTxn,
    ProducerBatchInfo,
    ProducerStateEntry,
    ProducerStateManager,
    ProducerStateManagerConfig,
    read_snapshot,
    serialize_snapshot,
)
from kafkalog.record.batch import DefaultRecordBatch
from kafkalog.record.memory import MemoryRecords
from kafkalog.record.types import ControlRecordType, EndTransactionMarker
from kafkalog.scheduler import MockTime
from kafkalog.topic import TopicPartition

PID = 4000
EPOCH = 3


def _batch(records: MemoryRecords) -> DefaultRecordBatch:
    (batch,) = list(records.batches())
    assert isinstance(batch, DefaultRecordBatch)
    return batch


def data_batch(base_offset: int, base_sequence: int, count: int, *, transactional: bool = False,
               epoch: int = EPOCH, timestamp: int = 1_000) -> DefaultRecordBatch:
    return _batch(MemoryRecords.with_records(
        [(b"k", b"v%d" % i, timestamp + i) for i in range(count)], base_offset=base_offset, producer_id=PID,
        producer_epoch=epoch, base_sequence=base_sequence, is_transactional=transactional))


def marker_batch(offset: int, control_type: ControlRecordType, coordinator_epoch: int = 0,
                 timestamp: int = 5_000) -> DefaultRecordBatch:
    return _batch(MemoryRecords.with_end_transaction_marker(
        PID, EPOCH, EndTransactionMarker(control_type, coordinator_epoch), base_offset=offset, timestamp=timestamp))


def feed(manager: ProducerStateManager, batch: ProducerBatchInfo,
         origin: AppendOrigin = AppendOrigin.CLIENT) -> CompletedTxn | None:
    """One append of one batch, in the order the log will call the manager."""
    info = manager.prepare_update(batch.producer_id, origin)
    completed = info.append(batch)
    manager.update(info)
    if completed is not None:
        manager.complete_txn(completed)
    manager.update_map_end_offset(batch.last_offset + 1)
    return completed


@pytest.fixture
def manager(impl: ModuleType, tmp_path: Path) -> ProducerStateManager:
    return ProducerStateManager(TopicPartition("t", 0), tmp_path, 60_000, ProducerStateManagerConfig(), MockTime())


def test_data_batches_are_checked_and_kept(manager: ProducerStateManager) -> None:
    feed(manager, data_batch(0, 0, 3))
    feed(manager, data_batch(3, 3, 2))
    entry = manager.last_entry(PID)
    assert entry is not None
    assert (entry.producer_epoch, entry.first_seq, entry.last_seq) == (EPOCH, 0, 4)
    assert (entry.first_data_offset, entry.last_data_offset, entry.last_timestamp) == (0, 4, 1_001)
    # A gap in the sequence from a client is refused and leaves the state alone.
    with pytest.raises(OutOfOrderSequenceError, match=r"7 \(incoming seq\. number\), 4"):
        feed(manager, data_batch(5, 7, 1))
    assert manager.last_entry(PID) == entry


def test_retried_batches_are_found_among_the_last_five(manager: ProducerStateManager) -> None:
    batches = [data_batch(2 * i, 2 * i, 2) for i in range(7)]
    for batch in batches:
        feed(manager, batch)
    entry = manager.last_entry(PID)
    assert entry is not None
    assert len(entry.batch_metadata) == NUM_BATCHES_TO_RETAIN
    for batch in batches[-NUM_BATCHES_TO_RETAIN:]:
        duplicate = entry.find_duplicate_batch(batch)
        assert duplicate is not None
        assert (duplicate.first_offset, duplicate.last_offset) == (batch.base_offset, batch.last_offset)
    for batch in batches[:-NUM_BATCHES_TO_RETAIN]:
        assert entry.find_duplicate_batch(batch) is None
    # The same sequences from a newer epoch are no duplicate.
    assert entry.find_duplicate_batch(data_batch(12, 12, 2, epoch=EPOCH + 1)) is None
    assert entry.find_duplicate_batch(data_batch(12, 12, 2)) is not None


def test_a_transaction_through_real_markers(manager: ProducerStateManager, tmp_path: Path) -> None:
    feed(manager, data_batch(10, 0, 2, transactional=True))
    with pytest.raises(InvalidTxnStateError):
        feed(manager, data_batch(12, 2, 1))
    first = manager.first_unstable_offset()
    assert first is not None and first.message_offset == 10
    completed = feed(manager, marker_batch(12, ControlRecordType.ABORT, coordinator_epoch=7),
                     AppendOrigin.COORDINATOR)
    assert completed == CompletedTxn(PID, 10, 12, True)
    entry = manager.last_entry(PID)
    assert entry is not None
    assert (entry.coordinator_epoch, entry.last_timestamp, entry.current_txn_first_offset) == (7, 5_000, None)
    assert manager.first_undecided_offset() is None
    manager.on_high_watermark_updated(13)
    assert manager.first_unstable_offset() is None
    # The snapshot holds the last batch, stamped (as Kafka writes it) with the producer's last timestamp.
    path = manager.take_snapshot()
    assert path == tmp_path / "00000000000000000013.snapshot"
    (loaded,) = read_snapshot(path)
    assert loaded == ProducerStateEntry(PID, EPOCH, 7, 5_000, None, BatchMetadata(1, 11, 1, 5_000))
    assert path.read_bytes() == serialize_snapshot([entry])


def test_a_control_batch_that_is_no_marker_is_refused(manager: ProducerStateManager) -> None:
    batch = _batch(MemoryRecords.with_control_record(ControlRecordType.LEADER_CHANGE, b"\x00\x00", base_offset=3))
    info = manager.prepare_update(PID, AppendOrigin.REPLICATION)
    with pytest.raises(InvalidRecordError, match="LEADER_CHANGE"):
        info.append(batch)


def test_complete_txn_not_started_is_refused(manager: ProducerStateManager) -> None:
    with pytest.raises(IllegalArgumentError, match="which was not started"):
        manager.complete_txn(CompletedTxn(PID, 5, 9, False))


def test_update_of_no_producer_is_refused(manager: ProducerStateManager) -> None:
    info = manager.prepare_update(-1, AppendOrigin.REPLICATION)
    with pytest.raises(IllegalArgumentError, match="Invalid producer id -1"):
        manager.update(info)

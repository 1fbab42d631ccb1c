"""kafkalog.producer_state.ProducerStateManager against Kafka's ``ProducerStateManagerTest`` (3.8.0,
``core/src/test/scala/unit/kafka/log/ProducerStateManagerTest.scala``), every method and assertion
(``VerificationGuardTest`` is in test_verification_guard.py).

The snapshot writes and reads go through the CRC-32C kernel, so every test runs on both twins (``impl``).
Kafka's helpers are kept: ``append`` feeds one single-record data batch through ``prepare_update`` /
``append_data_batch`` / ``update`` and moves the map end offset past it; ``append_end_txn_marker`` does the same
for a marker, completing the transaction it ends.  As in Kafka, the marker helper prepares its update on the
test's own manager whatever manager it is given.

Differences from Kafka's tests, none of which drops an assertion:

- ``testAppendEmptyControlBatch`` mocks a ``RecordBatch``; here the batch is a real v2 control batch with no
  record (the cleaner leaves such batches), read back from its bytes.
- ``testSequenceNotValidatedForGroupMetadataTopic`` builds its manager for ``__consumer_offsets-0`` as Kafka's
  does; the partition only names the manager in messages.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import ModuleType

import pytest

from kafkalog.append_origin import AppendOrigin
from kafkalog.errors import (
    InvalidProducerEpochError,
    InvalidTxnStateError,
    OutOfOrderSequenceError,
    TransactionCoordinatorFencedError,
)
from kafkalog.fetch import LogOffsetMetadata
from kafkalog.filenames import DELETED_FILE_SUFFIX, offset_from_file, producer_snapshot_filename
from kafkalog.producer_state import (
    LATE_TRANSACTION_BUFFER_MS,
    CompletedTxn,
    ProducerAppendInfo,
    ProducerStateEntry,
    ProducerStateManager,
    ProducerStateManagerConfig,
    TxnMetadata,
    VerificationStateEntry,
    list_snapshot_files,
)
from kafkalog.producer_state.batch_info import ProducerBatchInfo
from kafkalog.record.memory import MemoryRecords, build_default_batch
from kafkalog.record.types import ControlRecordType, EndTransactionMarker
from kafkalog.scheduler import MockTime
from kafkalog.topic import GROUP_METADATA_TOPIC_NAME, TopicPartition

INT_MAX = 2**31 - 1
NO_SEQUENCE = -1
PARTITION = TopicPartition("test", 0)
PRODUCER_ID = 1
MAX_TRANSACTION_TIMEOUT_MS = 5 * 60 * 1000
LATE_TRANSACTION_TIMEOUT_MS = MAX_TRANSACTION_TIMEOUT_MS + LATE_TRANSACTION_BUFFER_MS


class Harness:
    """Kafka's test fixture: a log dir, a MockTime, a config and the manager under test."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.time = MockTime()
        self.config = ProducerStateManagerConfig(86_400_000, True)
        self.state_manager = self.new_manager()

    def new_manager(self, partition: TopicPartition = PARTITION) -> ProducerStateManager:
        return ProducerStateManager(partition, self.log_dir, MAX_TRANSACTION_TIMEOUT_MS, self.config, self.time)

    def append(self, state_manager: ProducerStateManager, producer_id: int, producer_epoch: int, seq: int,
               offset: int, timestamp: int | None = None, is_transactional: bool = False,
               origin: AppendOrigin = AppendOrigin.CLIENT) -> None:
        info = state_manager.prepare_update(producer_id, origin)
        info.append_data_batch(producer_epoch, seq, seq, self.time.milliseconds() if timestamp is None else timestamp,
                               LogOffsetMetadata(offset), offset, is_transactional)
        state_manager.update(info)
        state_manager.update_map_end_offset(offset + 1)

    def append_batch(self, state_manager: ProducerStateManager, producer_id: int, offset: int,
                     batch: ProducerBatchInfo, origin: AppendOrigin) -> None:
        info = state_manager.prepare_update(producer_id, origin)
        info.append(batch)
        state_manager.update(info)
        state_manager.update_map_end_offset(offset + 1)

    def append_end_txn_marker(self, mapping: ProducerStateManager, producer_id: int, producer_epoch: int,
                              control_type: ControlRecordType, offset: int, coordinator_epoch: int = 0,
                              timestamp: int | None = None) -> CompletedTxn | None:
        info = self.state_manager.prepare_update(producer_id, AppendOrigin.COORDINATOR)
        completed = info.append_end_txn_marker(EndTransactionMarker(control_type, coordinator_epoch), producer_epoch,
                                               offset, self.time.milliseconds() if timestamp is None else timestamp)
        mapping.update(info)
        if completed is not None:
            mapping.complete_txn(completed)
        mapping.update_map_end_offset(offset + 1)
        return completed

    def snapshot_and_recover(self, log_start_offset: int, log_end_offset: int,
                             current_time_ms: int | None = None) -> ProducerStateManager:
        """Kafka's ``takeSnapshot()`` then a new manager over the log dir, ``truncateAndReload``-ed."""
        self.state_manager.take_snapshot()
        recovered = self.new_manager()
        recovered.truncate_and_reload(log_start_offset, log_end_offset,
                                      self.time.milliseconds() if current_time_ms is None else current_time_ms)
        return recovered

    def current_snapshot_offsets(self) -> set[int]:
        return {offset_from_file(f) for f in self.log_dir.iterdir()}

    def files(self) -> list[str]:
        return os.listdir(self.log_dir)

    def assert_snapshots(self, offsets: set[int]) -> None:
        """Kafka's pair ``assertEquals(n, logDir.listFiles().length)`` and
        ``assertEquals(set, currentSnapshotOffsets)``."""
        assert len(self.files()) == len(offsets)
        assert self.current_snapshot_offsets() == offsets


@pytest.fixture
def h(impl: ModuleType, tmp_path: Path) -> Harness:
    log_dir = tmp_path / "test-0"
    log_dir.mkdir()
    return Harness(log_dir)


def assert_txn_metadata_equals(expected: TxnMetadata, actual: TxnMetadata) -> None:
    assert (expected.producer_id, expected.first_offset, expected.last_offset) == (
        actual.producer_id, actual.first_offset, actual.last_offset)


def assert_txn_metadata_list_equals(expected: list[TxnMetadata], actual: tuple[TxnMetadata, ...]) -> None:
    assert len(expected) == len(actual)
    for e, a in zip(expected, actual, strict=True):
        assert_txn_metadata_equals(e, a)


def test_basic_id_mapping(h: Harness) -> None:
    sm, epoch = h.state_manager, 0
    h.append(sm, PRODUCER_ID, epoch, 0, 0, 0)  # first entry for the id
    h.append(sm, PRODUCER_ID, epoch, 1, 0, 1)  # second entry
    # Duplicates are checked separately and are out of sequence if appended.
    with pytest.raises(OutOfOrderSequenceError):
        h.append(sm, PRODUCER_ID, epoch, 1, 0, 1)
    # A sequence past the next expected one.
    with pytest.raises(OutOfOrderSequenceError):
        h.append(sm, PRODUCER_ID, epoch, 5, 0, 2)
    h.append(sm, PRODUCER_ID, epoch + 1, 0, 0, 3)  # new epoch
    with pytest.raises(InvalidProducerEpochError):
        h.append(sm, PRODUCER_ID, epoch, 0, 0, 4)


def test_append_txn_marker_with_no_producer_state(h: Harness) -> None:
    sm, producer_epoch = h.state_manager, 2
    h.append_end_txn_marker(sm, PRODUCER_ID, producer_epoch, ControlRecordType.COMMIT, offset=27)
    first_entry = sm.last_entry(PRODUCER_ID)
    assert first_entry is not None
    assert (first_entry.producer_epoch, first_entry.producer_id, first_entry.last_seq) == (
        producer_epoch, PRODUCER_ID, NO_SEQUENCE)
    # Fencing still works when the marker is all that is left.
    with pytest.raises(InvalidProducerEpochError):
        h.append(sm, PRODUCER_ID, 0, 0, 0, 4)
    # With only the marker left, a non-zero sequence is out of order so that the producer resets.
    with pytest.raises(OutOfOrderSequenceError):
        h.append(sm, PRODUCER_ID, producer_epoch, 17, 0, 4)
    # Sequence 0 is accepted.
    h.append(sm, PRODUCER_ID, producer_epoch, 0, 39, 4)
    second_entry = sm.last_entry(PRODUCER_ID)
    assert second_entry is not None
    assert (second_entry.producer_epoch, second_entry.producer_id, second_entry.last_seq) == (
        producer_epoch, PRODUCER_ID, 0)


def test_producer_sequence_wrap_around(h: Harness) -> None:
    sm, epoch, offset = h.state_manager, 15, 735
    h.append(sm, PRODUCER_ID, epoch, INT_MAX, offset, origin=AppendOrigin.REPLICATION)
    h.append(sm, PRODUCER_ID, epoch, 0, offset + 500)
    last_entry = sm.last_entry(PRODUCER_ID)
    assert last_entry is not None
    assert (last_entry.producer_epoch, last_entry.first_seq, last_entry.last_seq) == (epoch, INT_MAX, 0)


def test_producer_sequence_with_wrap_around_batch_record(h: Harness) -> None:
    sm, epoch = h.state_manager, 15
    info = sm.prepare_update(PRODUCER_ID, AppendOrigin.REPLICATION)
    # The sequence wraps inside the batch.
    info.append_data_batch(epoch, INT_MAX - 10, 9, h.time.milliseconds(), LogOffsetMetadata(2000), 2020, False)
    assert sm.last_entry(PRODUCER_ID) is None
    sm.update(info)
    last_entry = sm.last_entry(PRODUCER_ID)
    assert last_entry is not None
    assert (last_entry.first_seq, last_entry.last_seq, last_entry.first_data_offset, last_entry.last_data_offset) == (
        INT_MAX - 10, 9, 2000, 2020)


def test_producer_sequence_invalid_wrap_around(h: Harness) -> None:
    sm, epoch, offset = h.state_manager, 15, 735
    h.append(sm, PRODUCER_ID, epoch, INT_MAX, offset, origin=AppendOrigin.REPLICATION)
    with pytest.raises(OutOfOrderSequenceError):
        h.append(sm, PRODUCER_ID, epoch, 1, offset + 500)


def test_no_validation_on_first_entry_when_loading_log(h: Harness) -> None:
    sm, epoch, sequence, offset = h.state_manager, 5, 16, 735
    h.append(sm, PRODUCER_ID, epoch, sequence, offset, origin=AppendOrigin.REPLICATION)
    last_entry = sm.last_entry(PRODUCER_ID)
    assert last_entry is not None
    assert (last_entry.producer_epoch, last_entry.first_seq, last_entry.last_seq, last_entry.last_data_offset,
            last_entry.first_data_offset) == (epoch, sequence, sequence, offset, offset)


def test_control_record_bumps_producer_epoch(h: Harness) -> None:
    sm = h.state_manager
    h.append(sm, PRODUCER_ID, 0, 0, 0)
    bumped = 1
    h.append_end_txn_marker(sm, PRODUCER_ID, bumped, ControlRecordType.ABORT, 1)
    last_entry = sm.last_entry(PRODUCER_ID)
    assert last_entry is not None
    assert last_entry.producer_epoch == bumped
    assert last_entry.current_txn_first_offset is None
    assert last_entry.first_seq == NO_SEQUENCE
    assert last_entry.last_seq == NO_SEQUENCE
    # The new epoch may append from sequence 0.
    h.append(sm, PRODUCER_ID, bumped, 0, 2)
    entry = sm.last_entry(PRODUCER_ID)
    assert entry is not None and entry.first_seq == 0


def test_txn_first_offset_metadata_cached(h: Harness) -> None:
    sm, producer_epoch, offset, seq = h.state_manager, 0, 992342, 0
    info = ProducerAppendInfo(PARTITION, PRODUCER_ID, ProducerStateEntry.empty(PRODUCER_ID), AppendOrigin.CLIENT,
                              sm.maybe_create_verification_state_entry(PRODUCER_ID, seq, producer_epoch))
    first_offset_metadata = LogOffsetMetadata(offset, 990000, 234224)
    info.append_data_batch(producer_epoch, seq, seq, h.time.milliseconds(), first_offset_metadata, offset, True)
    sm.update(info)
    assert sm.first_unstable_offset() == first_offset_metadata


def test_skip_empty_transactions(h: Harness) -> None:
    sm, producer_epoch, coordinator_epoch = h.state_manager, 0, 27
    seq = [0]

    def append_end_txn(record_type: ControlRecordType, offset: int, info: ProducerAppendInfo) -> CompletedTxn | None:
        return info.append_end_txn_marker(EndTransactionMarker(record_type, coordinator_epoch), producer_epoch,
                                          offset, h.time.milliseconds())

    def append_data(start_offset: int, end_offset: int, info: ProducerAppendInfo) -> None:
        count = end_offset - start_offset
        first = seq[0]
        seq[0] += count
        info.append_data_batch(producer_epoch, first, seq[0], h.time.milliseconds(), LogOffsetMetadata(start_offset),
                               end_offset, True)
        seq[0] += 1

    # One transaction started in its own append.
    first_append = sm.prepare_update(PRODUCER_ID, AppendOrigin.CLIENT)
    append_data(16, 20, first_append)
    assert_txn_metadata_equals(TxnMetadata(PRODUCER_ID, 16), first_append.started_transactions[0])
    sm.update(first_append)
    sm.on_high_watermark_updated(21)
    assert sm.first_unstable_offset() == LogOffsetMetadata(16)

    # One append that ends it, mixes in empty transactions, a complete non-empty one and an open one.
    second_append = sm.prepare_update(PRODUCER_ID, AppendOrigin.CLIENT)
    first_completed = append_end_txn(ControlRecordType.COMMIT, 21, second_append)
    assert first_completed == CompletedTxn(PRODUCER_ID, 16, 21, False)
    assert append_end_txn(ControlRecordType.COMMIT, 22, second_append) is None
    assert append_end_txn(ControlRecordType.ABORT, 23, second_append) is None
    append_data(24, 27, second_append)
    second_completed = append_end_txn(ControlRecordType.ABORT, 28, second_append)
    assert second_completed is not None
    assert append_end_txn(ControlRecordType.ABORT, 29, second_append) is None
    append_data(30, 31, second_append)

    size = len(second_append.started_transactions)
    assert size == 2
    assert_txn_metadata_equals(TxnMetadata(PRODUCER_ID, LogOffsetMetadata(24)), second_append.started_transactions[0])
    assert_txn_metadata_equals(TxnMetadata(PRODUCER_ID, LogOffsetMetadata(30)),
                               second_append.started_transactions[size - 1])
    sm.update(second_append)
    assert first_completed is not None
    sm.complete_txn(first_completed)
    sm.complete_txn(second_completed)
    sm.on_high_watermark_updated(32)
    assert sm.first_unstable_offset() == LogOffsetMetadata(30)


def _two_transactions_500_ms_apart(h: Harness) -> tuple[int, int, int, int]:
    """Kafka's opening of the late-transaction tests: producers 39 (epoch 2) and 57 (epoch 9) start a
    transaction each, 500 ms apart; neither is late yet."""
    sm = h.state_manager
    producer_id1, epoch1, producer_id2, epoch2 = 39, 2, 57, 9
    h.append(sm, producer_id1, epoch1, seq=0, offset=100, is_transactional=True)
    assert not sm.has_late_transaction(h.time.milliseconds())
    h.time.sleep(500)
    h.append(sm, producer_id2, epoch2, seq=0, offset=150, is_transactional=True)
    assert not sm.has_late_transaction(h.time.milliseconds())
    return producer_id1, epoch1, producer_id2, epoch2


def _one_late_transaction(h: Harness) -> ProducerStateManager:
    """Producer 39 starts a transaction, then sleeps until it is late."""
    sm, producer_id, epoch = h.state_manager, 39, 2
    h.append(sm, producer_id, epoch, seq=0, offset=100, is_transactional=True)
    assert not sm.has_late_transaction(h.time.milliseconds())
    h.time.sleep(LATE_TRANSACTION_TIMEOUT_MS + 1)
    assert sm.has_late_transaction(h.time.milliseconds())
    return sm


def test_has_late_transaction(h: Harness) -> None:
    sm = h.state_manager
    producer_id1, epoch1, producer_id2, epoch2 = _two_transactions_500_ms_apart(h)
    # Only the first is late.
    h.time.sleep(LATE_TRANSACTION_TIMEOUT_MS - 500 + 1)
    assert sm.has_late_transaction(h.time.milliseconds())
    # Both are late.
    h.time.sleep(500)
    assert sm.has_late_transaction(h.time.milliseconds())
    # The first ends.
    h.append_end_txn_marker(sm, producer_id1, epoch1, ControlRecordType.COMMIT, offset=200)
    assert sm.has_late_transaction(h.time.milliseconds())
    # The second ends.
    h.append_end_txn_marker(sm, producer_id2, epoch2, ControlRecordType.COMMIT, offset=250)
    assert not sm.has_late_transaction(h.time.milliseconds())


def test_has_late_transaction_initialized_after_reload(h: Harness) -> None:
    sm = h.state_manager
    _two_transactions_500_ms_apart(h)
    # Snapshot, then reload.
    sm.take_snapshot()
    h.time.sleep(LATE_TRANSACTION_TIMEOUT_MS - 500 + 1)
    assert sm.has_late_transaction(h.time.milliseconds())
    # Still late after reloading from the snapshot.
    reloaded = h.new_manager()
    reloaded.truncate_and_reload(0, sm.map_end_offset, h.time.milliseconds())
    assert reloaded.has_late_transaction(h.time.milliseconds())


def test_has_late_transaction_updated_after_partial_truncation(h: Harness) -> None:
    sm = _one_late_transaction(h)
    # Truncation clears the open transaction.
    sm.truncate_and_reload(0, 80, h.time.milliseconds())
    assert not sm.has_late_transaction(h.time.milliseconds())


def test_has_late_transaction_updated_after_full_truncation(h: Harness) -> None:
    sm = _one_late_transaction(h)
    sm.truncate_fully_and_start_at(150)
    assert not sm.has_late_transaction(h.time.milliseconds())


def test_last_stable_offset_completed_txn(h: Harness) -> None:
    sm, producer_epoch, segment_base_offset = h.state_manager, 0, 990000

    def begin_txn(producer_id: int, start_offset: int) -> None:
        relative_offset = start_offset - segment_base_offset
        info = ProducerAppendInfo(PARTITION, producer_id, ProducerStateEntry.empty(producer_id), AppendOrigin.CLIENT,
                                  sm.maybe_create_verification_state_entry(producer_id, 0, producer_epoch))
        first_offset_metadata = LogOffsetMetadata(start_offset, segment_base_offset, 50 * relative_offset)
        info.append_data_batch(producer_epoch, 0, 0, h.time.milliseconds(), first_offset_metadata, start_offset, True)
        sm.update(info)

    producer_id1, start_offset1 = PRODUCER_ID, 992342
    begin_txn(producer_id1, start_offset1)
    producer_id2, start_offset2 = PRODUCER_ID + 1, start_offset1 + 25
    begin_txn(producer_id2, start_offset2)
    producer_id3, start_offset3 = PRODUCER_ID + 2, start_offset1 + 57
    begin_txn(producer_id3, start_offset3)

    def complete(producer_id: int, start_offset: int, last_offset: int, expected_lso: int) -> int | None:
        completed = CompletedTxn(producer_id, start_offset, last_offset, False)
        assert sm.last_stable_offset(completed) == expected_lso
        sm.complete_txn(completed)
        sm.on_high_watermark_updated(last_offset + 1)
        first = sm.first_unstable_offset()
        return None if first is None else first.message_offset

    last_offset1 = start_offset3 + 15
    assert complete(producer_id1, start_offset1, last_offset1, start_offset2) == start_offset2
    last_offset3 = last_offset1 + 20
    assert complete(producer_id3, start_offset3, last_offset3, start_offset2) == start_offset2
    last_offset2 = last_offset3 + 78
    assert complete(producer_id2, start_offset2, last_offset2, last_offset2 + 1) is None


def test_prepare_update_does_not_mutate(h: Harness) -> None:
    sm, producer_epoch = h.state_manager, 0
    info = sm.prepare_update(PRODUCER_ID, AppendOrigin.CLIENT)
    info.append_data_batch(producer_epoch, 0, 5, h.time.milliseconds(), LogOffsetMetadata(15), 20, False)
    assert sm.last_entry(PRODUCER_ID) is None
    sm.update(info)
    assert sm.last_entry(PRODUCER_ID) is not None

    next_info = sm.prepare_update(PRODUCER_ID, AppendOrigin.CLIENT)
    next_info.append_data_batch(producer_epoch, 6, 10, h.time.milliseconds(), LogOffsetMetadata(26), 30, False)
    last_entry = sm.last_entry(PRODUCER_ID)
    assert last_entry is not None
    assert (last_entry.first_seq, last_entry.last_seq, last_entry.last_data_offset) == (0, 5, 20)

    sm.update(next_info)
    last_entry = sm.last_entry(PRODUCER_ID)
    assert last_entry is not None
    assert (last_entry.first_seq, last_entry.last_seq, last_entry.last_data_offset) == (0, 10, 30)


def test_update_producer_transaction_state(h: Harness) -> None:
    """Kafka: ``updateProducerTransactionState``.  Each tuple compares what Kafka asserts one by one: epoch,
    first and last sequence, first and last data offset, the open transaction's first offset."""
    sm, producer_epoch, coordinator_epoch, offset = h.state_manager, 0, 15, 9
    h.append(sm, PRODUCER_ID, producer_epoch, 0, offset)

    def facts(entry: ProducerStateEntry) -> tuple[int, int, int, int, int, int | None]:
        return (entry.producer_epoch, entry.first_seq, entry.last_seq, entry.first_data_offset,
                entry.last_data_offset, entry.current_txn_first_offset)

    info = sm.prepare_update(PRODUCER_ID, AppendOrigin.CLIENT)
    info.append_data_batch(producer_epoch, 1, 5, h.time.milliseconds(), LogOffsetMetadata(16), 20, True)
    assert facts(info.to_entry()) == (producer_epoch, 1, 5, 16, 20, 16)
    assert_txn_metadata_list_equals([TxnMetadata(PRODUCER_ID, 16)], info.started_transactions)

    info.append_data_batch(producer_epoch, 6, 10, h.time.milliseconds(), LogOffsetMetadata(26), 30, True)
    assert facts(info.to_entry()) == (producer_epoch, 1, 10, 16, 30, 16)
    assert_txn_metadata_list_equals([TxnMetadata(PRODUCER_ID, 16)], info.started_transactions)

    marker = EndTransactionMarker(ControlRecordType.COMMIT, coordinator_epoch)
    completed = info.append_end_txn_marker(marker, producer_epoch, 40, h.time.milliseconds())
    assert completed is not None
    assert (completed.producer_id, completed.first_offset, completed.last_offset) == (PRODUCER_ID, 16, 40)
    assert not completed.is_aborted

    # The marker leaves the cached batches alone and closes the transaction.
    last_entry = info.to_entry()
    assert facts(last_entry) == (producer_epoch, 1, 10, 16, 30, None)
    assert last_entry.coordinator_epoch == coordinator_epoch
    assert_txn_metadata_list_equals([TxnMetadata(PRODUCER_ID, 16)], info.started_transactions)


def test_out_of_sequence_after_control_record_epoch_bump(h: Harness) -> None:
    sm, epoch = h.state_manager, 0
    h.append(sm, PRODUCER_ID, epoch, 0, 0, is_transactional=True)
    h.append(sm, PRODUCER_ID, epoch, 1, 1, is_transactional=True)
    bumped = 1
    h.append_end_txn_marker(sm, PRODUCER_ID, bumped, ControlRecordType.ABORT, 1)
    # The sequence must restart.
    with pytest.raises(OutOfOrderSequenceError):
        h.append(sm, PRODUCER_ID, bumped, 2, 2, is_transactional=True)
    with pytest.raises(OutOfOrderSequenceError):
        h.append(sm, PRODUCER_ID, bumped + 1, 2, 2, is_transactional=True)
    # From sequence 0 the bumped epoch is fine.
    h.append(sm, PRODUCER_ID, bumped, 0, 0, is_transactional=True)
    entry = sm.last_entry(PRODUCER_ID)
    assert entry is not None
    assert entry.producer_epoch == bumped
    assert entry.last_seq == 0


def test_non_transactional_append_with_ongoing_transaction(h: Harness) -> None:
    sm = h.state_manager
    h.append(sm, PRODUCER_ID, 0, 0, 0, is_transactional=True)
    with pytest.raises(InvalidTxnStateError):
        h.append(sm, PRODUCER_ID, 0, 1, 1)


def test_truncate_and_reload_removes_out_of_range_snapshots(h: Harness) -> None:
    sm = h.state_manager
    for i in range(5):
        h.append(sm, PRODUCER_ID, 0, i, i)
        sm.take_snapshot()
    sm.truncate_and_reload(1, 3, h.time.milliseconds())
    assert sm.oldest_snapshot_offset() == 2
    assert sm.latest_snapshot_offset() == 3


def test_take_snapshot(h: Harness) -> None:
    sm = h.state_manager
    h.append(sm, PRODUCER_ID, 0, 0, 0, 0)
    h.append(sm, PRODUCER_ID, 0, 1, 1, 1)
    sm.take_snapshot()
    # One file, and not empty.
    assert len(h.files()) == 1, "Directory doesn't contain a single file as expected"
    assert h.files()[0], "Snapshot file is empty"
    assert (h.log_dir / h.files()[0]).stat().st_size > 0


def test_fetch_snapshot_empty_snap_shot(h: Harness) -> None:
    assert h.state_manager.fetch_snapshot(1) is None


def test_recover_from_snapshot_unfinished_transaction(h: Harness) -> None:
    sm, epoch = h.state_manager, 0
    h.append(sm, PRODUCER_ID, epoch, 0, 0, is_transactional=True)
    h.append(sm, PRODUCER_ID, epoch, 1, 1, is_transactional=True)
    recovered = h.snapshot_and_recover(0, 3)
    # The snapshot keeps the last batch only.
    loaded = recovered.last_entry(PRODUCER_ID)
    assert loaded is not None
    assert (loaded.first_data_offset, loaded.first_seq, loaded.last_data_offset, loaded.last_seq) == (1, 1, 1, 1)
    assert loaded.current_txn_first_offset == 0
    # An entry added after recovery.
    h.append(recovered, PRODUCER_ID, epoch, 2, 2, is_transactional=True)


def test_recover_from_snapshot_finished_transaction(h: Harness) -> None:
    sm, epoch = h.state_manager, 0
    h.append(sm, PRODUCER_ID, epoch, 0, 0, is_transactional=True)
    h.append(sm, PRODUCER_ID, epoch, 1, 1, is_transactional=True)
    h.append_end_txn_marker(sm, PRODUCER_ID, epoch, ControlRecordType.ABORT, offset=2)
    loaded = h.snapshot_and_recover(0, 3).last_entry(PRODUCER_ID)
    assert loaded is not None
    assert (loaded.first_data_offset, loaded.first_seq, loaded.last_data_offset, loaded.last_seq) == (1, 1, 1, 1)
    assert loaded.current_txn_first_offset is None


def test_recover_from_snapshot_empty_transaction(h: Harness) -> None:
    sm, epoch = h.state_manager, 0
    append_timestamp = h.time.milliseconds()
    h.append_end_txn_marker(sm, PRODUCER_ID, epoch, ControlRecordType.ABORT, offset=0, timestamp=append_timestamp)
    last_entry = h.snapshot_and_recover(0, 1).last_entry(PRODUCER_ID)
    assert last_entry is not None
    assert last_entry.last_timestamp == append_timestamp
    assert last_entry.current_txn_first_offset is None


def test_producer_state_after_fencing_abort_marker(h: Harness) -> None:
    sm, epoch = h.state_manager, 0
    h.append(sm, PRODUCER_ID, epoch, 0, 0, is_transactional=True)
    h.append_end_txn_marker(sm, PRODUCER_ID, epoch + 1, ControlRecordType.ABORT, offset=1)
    last_entry = sm.last_entry(PRODUCER_ID)
    assert last_entry is not None
    assert last_entry.current_txn_first_offset is None
    assert last_entry.last_data_offset == -1
    assert last_entry.first_data_offset == -1
    # Not expired: the fencing epoch is kept.
    sm.remove_expired_producers(h.time.milliseconds())
    assert sm.last_entry(PRODUCER_ID) is not None


def test_remove_expired_pids_on_reload(h: Harness) -> None:
    sm, epoch = h.state_manager, 0
    h.append(sm, PRODUCER_ID, epoch, 0, 0, 0)
    h.append(sm, PRODUCER_ID, epoch, 1, 1, 1)
    recovered = h.snapshot_and_recover(0, 1, 70000)
    # The pid expired on reload, so the append is accepted and the pid comes back.
    h.append(recovered, PRODUCER_ID, epoch, 2, 2, 70001)
    assert len(recovered.active_producers()) == 1
    assert next(iter(recovered.active_producers().values())).last_seq == 2
    assert recovered.map_end_offset == 3


def test_accept_append_without_producer_state_on_replica(h: Harness) -> None:
    sm, epoch = h.state_manager, 0
    h.append(sm, PRODUCER_ID, epoch, 0, 0, 0)
    h.append(sm, PRODUCER_ID, epoch, 1, 1, 1)
    recovered = h.snapshot_and_recover(0, 1, 70000)
    sequence = 2
    # The pid expired; a replica's append is accepted all the same and sets the state.
    assert PRODUCER_ID not in recovered.active_producers()
    h.append(recovered, PRODUCER_ID, epoch, sequence, 2, 70001, origin=AppendOrigin.REPLICATION)
    assert PRODUCER_ID in recovered.active_producers()
    entry = recovered.active_producers()[PRODUCER_ID]
    assert (entry.producer_epoch, entry.first_seq, entry.last_seq) == (epoch, sequence, sequence)


def test_accept_append_with_sequence_gaps_on_replica(h: Harness) -> None:
    sm, epoch = h.state_manager, 0
    h.append(sm, PRODUCER_ID, epoch, 0, 0, 0)
    out_of_order_sequence = 3
    # A client's append is refused...
    with pytest.raises(OutOfOrderSequenceError):
        h.append(sm, PRODUCER_ID, epoch, out_of_order_sequence, 1, 1, origin=AppendOrigin.CLIENT)
    assert PRODUCER_ID in sm.active_producers()
    entry = sm.active_producers().get(PRODUCER_ID)
    assert entry is not None
    assert entry.last_seq == 0
    # ...a replica's is taken.
    h.append(sm, PRODUCER_ID, epoch, out_of_order_sequence, 1, 1, origin=AppendOrigin.REPLICATION)
    entry = sm.active_producers().get(PRODUCER_ID)
    assert entry is not None
    assert entry.last_seq == out_of_order_sequence


def _snapshots_at_2_and_3(h: Harness) -> ProducerStateManager:
    """The opening both Kafka tests share: two appends and a snapshot, a third and another."""
    sm = h.state_manager
    h.append(sm, PRODUCER_ID, 0, 0, 0)
    h.append(sm, PRODUCER_ID, 0, 1, 1)
    sm.take_snapshot()
    h.assert_snapshots({2})

    h.append(sm, PRODUCER_ID, 0, 2, 2)
    sm.take_snapshot()
    h.assert_snapshots({2, 3})
    return sm


def test_delete_snapshots_before(h: Harness) -> None:
    sm = _snapshots_at_2_and_3(h)

    sm.delete_snapshots_before(3)
    h.assert_snapshots({3})

    sm.delete_snapshots_before(4)
    h.assert_snapshots(set())


def test_truncate_fully_and_start_at(h: Harness) -> None:
    sm = _snapshots_at_2_and_3(h)

    sm.truncate_fully_and_start_at(0)
    h.assert_snapshots(set())

    h.append(sm, PRODUCER_ID, 0, 0, 0)
    sm.take_snapshot()
    h.assert_snapshots({1})


def test_reload_snapshots(h: Harness) -> None:
    sm = h.state_manager
    h.append(sm, PRODUCER_ID, 0, 1, 1)
    h.append(sm, PRODUCER_ID, 0, 2, 2)
    sm.take_snapshot()
    path_and_data = [(h.log_dir / name, (h.log_dir / name).read_bytes()) for name in h.files()]

    h.append(sm, PRODUCER_ID, 0, 3, 3)
    h.append(sm, PRODUCER_ID, 0, 4, 4)
    sm.take_snapshot()
    h.assert_snapshots({3, 5})

    # Truncating to (3, 5) deletes the snapshot at 3.
    sm.truncate_and_reload(3, 5, h.time.milliseconds())
    h.assert_snapshots({5})

    # Put the snapshot at 3 back, then forget everything and list the files again.
    for path, data in path_and_data:
        path.write_bytes(data)
    sm.truncate_fully_and_reload_snapshots()
    assert sm.latest_snapshot_offset() == 3
    assert h.current_snapshot_offsets() == {3}


def test_first_unstable_offset_after_truncation(h: Harness) -> None:
    sm, epoch, sequence = h.state_manager, 0, 0

    def first_unstable() -> int | None:
        first = sm.first_unstable_offset()
        return None if first is None else first.message_offset

    h.append(sm, PRODUCER_ID, epoch, sequence, offset=99, is_transactional=True)
    assert first_unstable() == 99
    sm.take_snapshot()

    h.append_end_txn_marker(sm, PRODUCER_ID, epoch, ControlRecordType.COMMIT, offset=105)
    sm.on_high_watermark_updated(106)
    assert first_unstable() is None
    sm.take_snapshot()

    h.append(sm, PRODUCER_ID, epoch, sequence + 1, offset=106)
    sm.truncate_and_reload(0, 106, h.time.milliseconds())
    assert first_unstable() is None

    sm.truncate_and_reload(0, 100, h.time.milliseconds())
    assert first_unstable() == 99


def test_load_from_snapshot_retains_non_expired_producers(h: Harness) -> None:
    sm, epoch, pid1, pid2 = h.state_manager, 0, 1, 2
    h.append(sm, pid1, epoch, 0, 0)
    h.append(sm, pid2, epoch, 0, 1)
    sm.take_snapshot()
    assert len(sm.active_producers()) == 2

    sm.truncate_and_reload(1, 2, h.time.milliseconds())
    assert len(sm.active_producers()) == 2

    entry1 = sm.last_entry(pid1)
    assert entry1 is not None
    assert entry1.last_seq == 0
    assert entry1.last_data_offset == 0

    entry2 = sm.last_entry(pid2)
    assert entry2 is not None
    assert entry2.last_seq == 0
    assert entry2.last_data_offset == 1


def test_skip_snapshot_if_offset_unchanged(h: Harness) -> None:
    sm = h.state_manager
    h.append(sm, PRODUCER_ID, 0, 0, 0, 0)
    sm.take_snapshot()
    h.assert_snapshots({1})
    # Nothing changed: no new snapshot.
    assert sm.take_snapshot() is None
    h.assert_snapshots({1})


def test_pid_expiration_timeout(h: Harness) -> None:
    sm, epoch, sequence = h.state_manager, 5, 37
    h.append(sm, PRODUCER_ID, epoch, sequence, 1)
    h.time.sleep(h.config.producer_id_expiration_ms + 1)
    sm.remove_expired_producers(h.time.milliseconds())
    h.append(sm, PRODUCER_ID, epoch, sequence + 1, 2)
    assert len(sm.active_producers()) == 1
    assert next(iter(sm.active_producers().values())).last_seq == sequence + 1
    assert sm.map_end_offset == 3


def test_first_unstable_offset(h: Harness) -> None:
    sm, epoch, sequence = h.state_manager, 5, 0

    def first_unstable() -> int | None:
        first = sm.first_unstable_offset()
        return None if first is None else first.message_offset

    assert sm.first_undecided_offset() is None

    h.append(sm, PRODUCER_ID, epoch, sequence, offset=99, is_transactional=True)
    assert sm.first_undecided_offset() == 99
    assert first_unstable() == 99

    another_pid = 2
    h.append(sm, another_pid, epoch, sequence, offset=105, is_transactional=True)
    assert sm.first_undecided_offset() == 99
    assert first_unstable() == 99

    h.append_end_txn_marker(sm, PRODUCER_ID, epoch, ControlRecordType.COMMIT, offset=109)
    assert sm.first_undecided_offset() == 105
    assert first_unstable() == 99

    sm.on_high_watermark_updated(100)
    assert first_unstable() == 99

    sm.on_high_watermark_updated(110)
    assert first_unstable() == 105

    h.append_end_txn_marker(sm, another_pid, epoch, ControlRecordType.ABORT, offset=112)
    assert sm.first_undecided_offset() is None
    assert first_unstable() == 105

    sm.on_high_watermark_updated(113)
    assert first_unstable() is None


def test_producers_with_ongoing_transactions_dont_expire(h: Harness) -> None:
    sm, epoch, sequence = h.state_manager, 5, 0
    h.append(sm, PRODUCER_ID, epoch, sequence, offset=99, is_transactional=True)
    assert sm.first_undecided_offset() == 99

    h.time.sleep(h.config.producer_id_expiration_ms + 1)
    sm.remove_expired_producers(h.time.milliseconds())

    assert sm.last_entry(PRODUCER_ID) is not None
    assert sm.first_undecided_offset() == 99

    sm.remove_expired_producers(h.time.milliseconds())
    assert sm.last_entry(PRODUCER_ID) is not None


def test_sequence_not_validated_for_group_metadata_topic(h: Harness) -> None:
    sm = h.new_manager(TopicPartition(GROUP_METADATA_TOPIC_NAME, 0))
    epoch = 0
    h.append(sm, PRODUCER_ID, epoch, NO_SEQUENCE, offset=99, is_transactional=True, origin=AppendOrigin.COORDINATOR)
    h.append(sm, PRODUCER_ID, epoch, NO_SEQUENCE, offset=100, is_transactional=True, origin=AppendOrigin.COORDINATOR)
    # Kafka's test asserts only that nothing throws; the state shows both appends were taken.
    entry = sm.last_entry(PRODUCER_ID)
    assert entry is not None and entry.last_data_offset == 100


def test_old_epoch_for_control_record(h: Harness) -> None:
    sm, epoch, sequence = h.state_manager, 5, 0
    assert sm.first_undecided_offset() is None
    h.append(sm, PRODUCER_ID, epoch, sequence, offset=99, is_transactional=True)
    with pytest.raises(InvalidProducerEpochError):
        h.append_end_txn_marker(sm, PRODUCER_ID, 3, ControlRecordType.COMMIT, offset=100)


def test_coordinator_fencing(h: Harness) -> None:
    sm, epoch, sequence = h.state_manager, 5, 0
    h.append(sm, PRODUCER_ID, epoch, sequence, offset=99, is_transactional=True)
    h.append_end_txn_marker(sm, PRODUCER_ID, epoch, ControlRecordType.COMMIT, offset=100, coordinator_epoch=1)

    last_entry = sm.last_entry(PRODUCER_ID)
    assert last_entry is not None and last_entry.coordinator_epoch == 1

    # The current coordinator epoch is allowed.
    h.append_end_txn_marker(sm, PRODUCER_ID, epoch, ControlRecordType.COMMIT, offset=101, coordinator_epoch=1)
    # A bumped one too.
    h.append_end_txn_marker(sm, PRODUCER_ID, epoch, ControlRecordType.COMMIT, offset=102, coordinator_epoch=2)
    # An older one is not.
    with pytest.raises(TransactionCoordinatorFencedError):
        h.append_end_txn_marker(sm, PRODUCER_ID, epoch, ControlRecordType.COMMIT, offset=103, coordinator_epoch=1)


def test_coordinator_fenced_after_reload(h: Harness) -> None:
    sm, producer_epoch = h.state_manager, 0
    h.append(sm, PRODUCER_ID, producer_epoch, 0, offset=99, is_transactional=True)
    h.append_end_txn_marker(sm, PRODUCER_ID, producer_epoch, ControlRecordType.COMMIT, offset=100,
                            coordinator_epoch=1)
    h.snapshot_and_recover(0, 2, 70000)
    # A marker from the old coordinator is refused.
    with pytest.raises(TransactionCoordinatorFencedError):
        h.append_end_txn_marker(sm, PRODUCER_ID, producer_epoch, ControlRecordType.COMMIT, offset=100)


def _load_from_corrupt_snapshot(h: Harness, make_file_corrupt: object) -> None:
    """Kafka's ``testLoadFromCorruptSnapshot``: the newest snapshot is damaged, so the reload deletes it and
    loads the one before."""
    sm, epoch, producer_id = h.state_manager, 0, 1
    h.append(sm, producer_id, epoch, seq=0, offset=0)
    sm.take_snapshot()
    h.append(sm, producer_id, epoch, seq=1, offset=1)
    sm.take_snapshot()

    latest = sm.latest_snapshot_offset()
    assert latest == 2
    to_corrupt = producer_snapshot_filename(h.log_dir, latest)
    with open(to_corrupt, "r+b") as channel:
        make_file_corrupt(channel)  # type: ignore[operator]

    reloaded = h.new_manager()
    reloaded.truncate_and_reload(0, 20, h.time.milliseconds())
    assert not to_corrupt.exists()
    loaded = reloaded.active_producers().get(producer_id)
    assert loaded is not None
    assert loaded.last_data_offset == 0


def _size(channel: object) -> int:
    return os.fstat(channel.fileno()).st_size  # type: ignore[attr-defined]


def test_load_from_empty_snapshot_file(h: Harness) -> None:
    _load_from_corrupt_snapshot(h, lambda channel: channel.truncate(0))


def test_load_from_truncated_snapshot_file(h: Harness) -> None:
    def truncate_midway(channel: object) -> None:
        # Somewhere in the middle of the snapshot.
        assert _size(channel) > 2
        channel.truncate(_size(channel) // 2)  # type: ignore[attr-defined]

    _load_from_corrupt_snapshot(h, truncate_midway)


def test_load_from_corrupt_snapshot_file(h: Harness) -> None:
    def write_garbage(channel: object) -> None:
        assert _size(channel) > 2
        channel.seek(_size(channel) // 2)  # type: ignore[attr-defined]
        channel.write(bytes([37]))  # type: ignore[attr-defined]

    _load_from_corrupt_snapshot(h, write_garbage)


def test_append_empty_control_batch(h: Harness) -> None:
    sm, producer_id, base_offset = h.state_manager, 23423, 15
    data = build_default_batch([], base_offset=base_offset, producer_id=producer_id, producer_epoch=0,
                               is_transactional=True, is_control=True)
    batch = next(MemoryRecords(data).batches())
    assert batch.is_control and batch.count == 0
    # No error, and no transaction started.
    h.append_batch(sm, producer_id, base_offset, batch, origin=AppendOrigin.CLIENT)
    entry = sm.last_entry(producer_id)
    assert entry is not None
    assert entry.current_txn_first_offset is None


def _touch_snapshot(log_dir: Path, offset: int) -> None:
    producer_snapshot_filename(log_dir, offset).touch(exist_ok=False)  # Files.createFile


def test_remove_stray_snapshots_keep_clean_shutdown_snapshot(h: Harness) -> None:
    # The largest stray snapshot is the one a clean shutdown writes past the active segment's base: kept.
    _touch_snapshot(h.log_dir, 5)  # not stray
    _touch_snapshot(h.log_dir, 2)  # stray
    _touch_snapshot(h.log_dir, 42)  # not stray
    # One segment, based at 5.
    h.state_manager.remove_stray_snapshots([5])
    assert h.state_manager.latest_snapshot_offset() == 42
    assert h.state_manager.oldest_snapshot_offset() == 5
    assert sorted(s.offset for s in list_snapshot_files(h.log_dir)) == [5, 42]


def test_remove_all_stray_snapshots(h: Harness) -> None:
    # Strays below the largest segment base offset go; the snapshots at segment bases stay.
    _touch_snapshot(h.log_dir, 5)  # stray
    _touch_snapshot(h.log_dir, 2)  # stray
    _touch_snapshot(h.log_dir, 42)  # not stray
    h.state_manager.remove_stray_snapshots([42])
    assert sorted(s.offset for s in list_snapshot_files(h.log_dir)) == [42]


def test_remove_and_mark_snapshot_for_deletion(h: Harness) -> None:
    _touch_snapshot(h.log_dir, 5)
    manager = h.new_manager()
    assert manager.latest_snapshot_offset() is not None
    snapshot = manager.remove_and_mark_snapshot_for_deletion(5)
    assert snapshot is not None
    assert str(snapshot.file).endswith(DELETED_FILE_SUFFIX)
    assert manager.latest_snapshot_offset() is None


def test_remove_and_mark_snapshot_for_deletion_already_deleted(h: Harness) -> None:
    # The interim manager of log recovery may have deleted the file behind this one's back.
    file = producer_snapshot_filename(h.log_dir, 5)
    file.touch(exist_ok=False)
    manager = h.new_manager()
    assert manager.latest_snapshot_offset() is not None
    file.unlink()
    assert manager.remove_and_mark_snapshot_for_deletion(5) is None
    assert manager.latest_snapshot_offset() is None


def test_entry_for_verification(h: Harness) -> None:
    sm = h.state_manager
    original = sm.maybe_create_verification_state_entry(PRODUCER_ID, 0, 0)
    original_guard = original.verification_guard

    def verify_entry(producer_id: int, new_entry: VerificationStateEntry) -> None:
        entry = sm.verification_state_entry(producer_id)
        assert entry is not None
        assert entry.verification_guard == original_guard
        assert new_entry.verification_guard == entry.verification_guard

    # An existing entry is reused.
    verify_entry(PRODUCER_ID, sm.maybe_create_verification_state_entry(PRODUCER_ID, 0, 0))
    # Transactional data, then the entry is cleared.
    h.append(sm, PRODUCER_ID, 0, 0, offset=0, is_transactional=True)
    sm.clear_verification_state_entry(PRODUCER_ID)
    assert sm.verification_state_entry(PRODUCER_ID) is None


def test_sequence_and_epoch_in_verification_entry(h: Harness) -> None:
    sm = h.state_manager
    original = sm.maybe_create_verification_state_entry(PRODUCER_ID, 1, 0)
    original_guard = original.verification_guard

    def verify_entry(producer_id: int, new_entry: VerificationStateEntry, expected_sequence: int,
                     expected_epoch: int) -> None:
        entry = sm.verification_state_entry(producer_id)
        assert entry is not None
        assert entry.verification_guard == original_guard
        assert new_entry.verification_guard == entry.verification_guard
        assert entry.lowest_sequence == expected_sequence
        assert entry.epoch == expected_epoch

    verify_entry(PRODUCER_ID, original, 1, 0)
    # A lower sequence is taken.
    verify_entry(PRODUCER_ID, sm.maybe_create_verification_state_entry(PRODUCER_ID, 0, 0), 0, 0)
    # A higher epoch takes its sequence.
    verify_entry(PRODUCER_ID, sm.maybe_create_verification_state_entry(PRODUCER_ID, 2, 1), 2, 1)
    # A lower epoch is ignored.
    verify_entry(PRODUCER_ID, sm.maybe_create_verification_state_entry(PRODUCER_ID, 0, 0), 2, 1)


@pytest.mark.parametrize("dynamically_disable", [True, False])
def test_throw_out_of_order_sequence_with_verification_sequence_check(h: Harness, dynamically_disable: bool) -> None:
    sm = h.state_manager
    original = sm.maybe_create_verification_state_entry(PRODUCER_ID, 0, 0)
    # With an entry the check runs even when verification is switched off.
    if dynamically_disable:
        h.config.set_transaction_verification_enabled(False)
    # A higher sequence fails.
    with pytest.raises(OutOfOrderSequenceError):
        h.append(sm, PRODUCER_ID, 0, 4, offset=0, is_transactional=True)
    assert sm.verification_state_entry(PRODUCER_ID) is original


def test_verification_state_entry_expiration(h: Harness) -> None:
    sm = h.state_manager
    original = sm.maybe_create_verification_state_entry(PRODUCER_ID, 0, 0)
    # Kept before the timeout (reading the entry does not refresh it).
    h.time.sleep(h.config.producer_id_expiration_ms // 2)
    sm.remove_expired_producers(h.time.milliseconds())
    assert sm.verification_state_entry(PRODUCER_ID) is original

    h.time.sleep(h.config.producer_id_expiration_ms // 2 + 1)
    sm.remove_expired_producers(h.time.milliseconds())
    assert sm.verification_state_entry(PRODUCER_ID) is None

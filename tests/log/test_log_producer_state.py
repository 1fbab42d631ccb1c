"""The producer state of a Log against Kafka's UnifiedLogTest (core 3.8.0): idempotent appends, duplicates,
sequence and epoch checks, transactions and the first unstable offset, snapshots at roll, close, truncation,
retention and load, and producer expiration.

Kafka's log starts with its high watermark at the log start offset and moves it only when told; a kafkalog log's
high watermark follows the log end offset until someone sets it.  The tests whose assertions depend on the high
watermark lagging pin it first (:func:`kafka_log`), as Kafka's ``createLog`` leaves it.

The two failure cases (testAppendToTransactionIndexFailure and
testRecoveryPointNotIncrementedOnProducerStateSnapshotFlushFailure) take the log dir offline through the log's
:class:`~kafkalog.log_dir_failure_channel.LogDirFailureChannel`.  The first fails as Kafka's does, on a real error
(the index pointed at the partition directory); the second makes the snapshot's fsync fail with ``EIO`` where
Kafka's mocks the whole ``flushProducerStateSnapshot``: no real fault makes an fsync fail on demand.
"""

from __future__ import annotations

import errno
import os
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kafkalog import MemoryRecords
from kafkalog.cleaner import Cleaner
from kafkalog.cleaner.manager import LogToClean
from kafkalog.cleaner.throttler import Throttler
from kafkalog.errors import (
    InvalidProducerEpochError,
    InvalidTxnStateError,
    KafkaStorageError,
    OutOfOrderSequenceError,
    TransactionCoordinatorFencedError,
)
from kafkalog.fetch import FetchIsolation, LogOffsetMetadata
from kafkalog.filenames import producer_snapshot_filename
from kafkalog.log import Log
from kafkalog.producer_state import ProducerStateManagerConfig, VerificationGuard, list_snapshot_files
from kafkalog.record import ControlRecordType, EndTransactionMarker
from kafkalog.record.filter import (
    BatchRetention,
    BatchRetentionResult,
    DecodedBatch,
    RecordFilter,
    decoded_batches,
    filter_to,
)
from kafkalog.scheduler import KafkaScheduler, MockTime
from kafkalog.transaction_index import AbortedTxn
from tests.support import log_test_utils
from tests.support.cleaner_utils import FakeOffsetMap
from tests.support.log_test_utils import (
    LogFactory,
    append_end_txn_marker_as_leader,
    append_mixed_transactions,
    append_non_transactional_as_leader,
    append_transactional_as_leader,
    assert_valid_log_offset_metadata,
    config,
    singleton,
)


def kafka_log(create_log: LogFactory, log_config: Any = None, **kwargs: Any) -> Log:
    """Kafka's ``createLog``: the high watermark at the log start offset, moved only when told."""
    log = create_log(log_config, **kwargs)
    log.high_watermark = log.log_start_offset
    return log


def records(values: list[tuple[bytes | None, bytes | None, int]], *, producer_id: int = -1, producer_epoch: int = -1,
            sequence: int = -1, base_offset: int = 0, is_transactional: bool = False,
            partition_leader_epoch: int = -1, timestamp_type: str = "CreateTime",
            log_append_time: int | None = None) -> MemoryRecords:
    """Kafka's ``TestUtils.records``: one v2 batch of ``(key, value, timestamp)`` records."""
    return MemoryRecords.with_records(values, producer_id=producer_id, producer_epoch=producer_epoch,
                                      base_sequence=sequence, base_offset=base_offset,
                                      is_transactional=is_transactional, partition_leader_epoch=partition_leader_epoch,
                                      timestamp_type=timestamp_type, log_append_time=log_append_time)


def concatenated(*parts: MemoryRecords) -> MemoryRecords:
    """Batches built one after another into one buffer (Kafka: builders sharing a ``ByteBuffer``)."""
    return MemoryRecords(b"".join(bytes(part.buffer) for part in parts))


def snapshot_offsets(directory: Path) -> list[int]:
    """Kafka's ``LogTestUtils.listProducerSnapshotOffsets``, sorted."""
    return sorted(snapshot.offset for snapshot in list_snapshot_files(directory))


def delete_producer_snapshot_files(directory: Path) -> None:
    """Kafka's ``LogTestUtils.deleteProducerSnapshotFiles``."""
    for snapshot in list_snapshot_files(directory):
        snapshot.delete_if_exists()


# -- idempotent appends ---------------------------------------------------------------------------------


def test_duplicate_appends(create_log: LogFactory, mock_time: MockTime) -> None:
    """testDuplicateAppends: a duplicate of one of the last five batches returns the original offsets; a
    partial duplicate or one older than five batches is out of order."""
    log = create_log(config())
    pid, epoch = 1, 0
    seq = 0
    for _ in range(6):  # pad the beginning of the log
        log.append_as_leader(records([(b"key", b"value", mock_time.milliseconds())], producer_id=pid,
                                     producer_epoch=epoch, sequence=seq), leader_epoch=0)
        seq += 1

    def create_records() -> MemoryRecords:
        return records([(f"key-{seq}".encode(), f"value-{seq}".encode(), mock_time.milliseconds())] * 3,
                       producer_id=pid, producer_epoch=epoch, sequence=seq)

    multi_entry_append_info = log.append_as_leader(create_records(), leader_epoch=0)
    assert multi_entry_append_info.last_offset - multi_entry_append_info.first_offset + 1 == 3, \
        "should have appended 3 entries"

    # a duplicate of the tail, when the entry at the tail has multiple records
    dup_multi_entry_append_info = log.append_as_leader(create_records(), leader_epoch=0)
    assert multi_entry_append_info.first_offset == dup_multi_entry_append_info.first_offset, \
        "Somehow appended a duplicate entry with multiple log records to the tail"
    assert multi_entry_append_info.last_offset == dup_multi_entry_append_info.last_offset, \
        "Somehow appended a duplicate entry with multiple log records to the tail"

    seq += 3
    # a partial duplicate of the tail is not allowed
    partial = records([(f"key-{seq}".encode(), f"value-{seq}".encode(), mock_time.milliseconds())] * 2,
                      producer_id=pid, producer_epoch=epoch, sequence=seq - 2)
    with pytest.raises(OutOfOrderSequenceError):
        log.append_as_leader(partial, leader_epoch=0)

    # a duplicate of the 4th batch from the tail succeeds: the metadata of the last 5 batches is retained
    duplicate_of_fourth = records([(b"key", b"value", mock_time.milliseconds())], producer_id=pid,
                                  producer_epoch=epoch, sequence=2)
    log.append_as_leader(duplicate_of_fourth, leader_epoch=0)

    # duplicates of older entries are out of order
    older = records([(b"key-1", b"value-1", mock_time.milliseconds())], producer_id=pid, producer_epoch=epoch,
                    sequence=1)
    with pytest.raises(OutOfOrderSequenceError):
        log.append_as_leader(older, leader_epoch=0)

    # a duplicate of a single-record entry at the tail returns the original entry's offsets
    def create_records_with_duplicate() -> MemoryRecords:
        return records([(b"key", b"value", mock_time.milliseconds())], producer_id=pid, producer_epoch=epoch,
                       sequence=seq)

    orig_append_info = log.append_as_leader(create_records_with_duplicate(), leader_epoch=0)
    new_append_info = log.append_as_leader(create_records_with_duplicate(), leader_epoch=0)
    assert orig_append_info.first_offset == new_append_info.first_offset, "Inserted a duplicate records into the log"
    assert orig_append_info.last_offset == new_append_info.last_offset, "Inserted a duplicate records into the log"


def test_multiple_producer_ids_per_memory_record(create_log: LogFactory, mock_time: MockTime) -> None:
    """testMultipleProducerIdsPerMemoryRecord: four batches of four producers in one follower append keep their
    producer ids, offsets and sequences."""
    log = create_log(config())
    epoch = 0
    memory_records = concatenated(*(
        records([(b"key", b"value", mock_time.milliseconds())], producer_id=offset + 1, producer_epoch=epoch,
                sequence=0, base_offset=offset, timestamp_type="LogAppendTime",
                log_append_time=mock_time.milliseconds(), partition_leader_epoch=0)
        for offset in range(4)))
    log.append_as_follower(memory_records)
    log.flush(including_offset=False)

    fetched = list(log.read(0, 2**31 - 1).records.batches())
    originals = list(memory_records.batches())
    assert len(fetched) == len(originals)
    for original, batch in zip(originals, fetched, strict=True):
        assert original.producer_id == batch.producer_id
        assert original.base_offset == batch.base_offset
        assert original.base_sequence == batch.base_sequence


def test_duplicate_append_to_follower(create_log: LogFactory) -> None:
    """testDuplicateAppendToFollower: a follower takes batches with repeated sequences (no validation)."""
    log = create_log(config(segment_bytes=1024 * 1024 * 5))
    epoch, pid, base_sequence, partition_leader_epoch = 0, 1, 0, 0
    assert log.log_end_offset == 0
    for base_offset in (0, 2):
        log.append_as_follower(records([(None, b"a", -1), (None, b"b", -1)], producer_id=pid, producer_epoch=epoch,
                                       sequence=base_sequence, base_offset=base_offset,
                                       partition_leader_epoch=partition_leader_epoch))
    # even the duplicate sequences are accepted on the follower
    assert log.log_end_offset == 4


def test_multiple_producers_with_duplicates_in_single_append(create_log: LogFactory, mock_time: MockTime) -> None:
    """testMultipleProducersWithDuplicatesInSingleAppend: a follower append holding a duplicate batch is taken
    whole."""
    log = create_log(config(segment_bytes=1024 * 1024 * 5))
    pid1, pid2, epoch = 1, 2, 0
    batches = [(pid1, 0), (pid2, 0), (pid1, 1), (pid2, 1), (pid1, 1)]  # the last: pid1 seq 1 again
    appended = concatenated(*(
        records([(b"key", b"value", mock_time.milliseconds())], producer_id=pid, producer_epoch=epoch, sequence=seq,
                base_offset=offset, timestamp_type="LogAppendTime", log_append_time=mock_time.milliseconds(),
                partition_leader_epoch=0)
        for offset, (pid, seq) in enumerate(batches)))
    assert log.log_end_offset == 0
    log.append_as_follower(appended)
    assert log.log_end_offset == 5


def _keyed_record(mock_time: MockTime, pid: int, epoch: int, sequence: int) -> MemoryRecords:
    return records([(b"key", b"value", mock_time.milliseconds())], producer_id=pid, producer_epoch=epoch,
                   sequence=sequence)


def test_old_producer_epoch(create_log: LogFactory, mock_time: MockTime) -> None:
    """testOldProducerEpoch: a batch of an epoch older than the producer's is refused."""
    log = create_log(config())
    pid, new_epoch, old_epoch = 1, 1, 0
    log.append_as_leader(_keyed_record(mock_time, pid, new_epoch, 0), leader_epoch=0)
    with pytest.raises(InvalidProducerEpochError):
        log.append_as_leader(_keyed_record(mock_time, pid, old_epoch, 0), leader_epoch=0)


def test_non_sequential_append(create_log: LogFactory, mock_time: MockTime) -> None:
    """testNonSequentialAppend: a sequence gap is out of order."""
    log = create_log(config())
    pid, epoch = 1, 0
    log.append_as_leader(_keyed_record(mock_time, pid, epoch, 0), leader_epoch=0)
    with pytest.raises(OutOfOrderSequenceError):
        log.append_as_leader(_keyed_record(mock_time, pid, epoch, 2), leader_epoch=0)


# -- the producer state and its snapshots ---------------------------------------------------------------


def test_producer_id_map_offset_updated_for_non_idempotent_data(create_log: LogFactory,
                                                                  mock_time: MockTime) -> None:
    """testProducerIdMapOffsetUpdatedForNonIdempotentData: the state's end offset moves with every append."""
    log = create_log(config(segment_bytes=2048 * 5))
    log.append_as_leader(records([(b"key", b"value", mock_time.milliseconds())]), leader_epoch=0)
    log.take_producer_snapshot()
    assert log.latest_producer_snapshot_offset() == 1


class _KeepUnkeyed(RecordFilter):
    """Kafka's test filters: every batch ``retention`` (``marker_for_empty_txn`` as given), records kept when they
    have no key (``keep_keyless``) or never."""

    def __init__(self, retention: BatchRetention, marker_for_empty_txn: bool, keep_keyless: bool) -> None:
        super().__init__(0, 0)
        self.result = BatchRetentionResult(retention, marker_for_empty_txn)
        self.keep_keyless = keep_keyless

    def check_batch_retention(self, batch: Any) -> BatchRetentionResult:
        return self.result

    def should_retain_records(self, piece: DecodedBatch) -> Any:
        keys = piece.columns.records[piece.lo:piece.hi]["key_len"]
        return (keys < 0) if self.keep_keyless else np.zeros(len(keys), dtype=bool)


def compacted(original: MemoryRecords, record_filter: RecordFilter) -> MemoryRecords:
    """Kafka's ``records.filterTo(...)`` into a fresh buffer."""
    return MemoryRecords(bytes(filter_to(decoded_batches(original), record_filter).output))


def _batch_with_gaps(mock_time: MockTime, base_offset: int) -> MemoryRecords:
    """Four records of producer 1 from ``base_offset``, the keyed two compacted away (gaps at 1 and 3)."""
    now = mock_time.milliseconds()
    original = records([(None, b"a", now), (b"key", b"b", now), (None, b"c", now), (b"key", b"d", now)],
                       producer_id=1, producer_epoch=0, sequence=0, base_offset=base_offset, partition_leader_epoch=0)
    return compacted(original, _KeepUnkeyed(BatchRetention.DELETE_EMPTY, False, keep_keyless=True))


def _append_more_and_truncate(log: Log, mock_time: MockTime, base_offset: int) -> None:
    """Append some more data at ``base_offset`` and truncate it away, to force rebuilding the producer state."""
    now = mock_time.milliseconds()
    log.append_as_follower(records([(None, b"e", now), (None, b"f", now)], base_offset=base_offset,
                                   partition_leader_epoch=0))
    log.truncate_to(base_offset)


def assert_last_sequence(log: Log, pid: int, last_seq: int) -> None:
    active_producers = log.active_producers_with_last_sequence()
    assert pid in active_producers
    assert active_producers[pid] == last_seq


def test_rebuild_producer_id_map_with_compacted_data(create_log: LogFactory, mock_time: MockTime) -> None:
    """testRebuildProducerIdMapWithCompactedData: a batch with compaction gaps rebuilds its producer's last
    sequence from the batch header."""
    log = create_log(config(segment_bytes=2048 * 5))
    pid, base_offset = 1, 23
    log.append_as_follower(_batch_with_gaps(mock_time, base_offset))
    _append_more_and_truncate(log, mock_time, base_offset + 4)
    assert_last_sequence(log, pid, 3)


def test_rebuild_producer_state_with_empty_compacted_batch(create_log: LogFactory, mock_time: MockTime) -> None:
    """testRebuildProducerStateWithEmptyCompactedBatch: an empty batch left by compaction still carries its
    producer's last sequence."""
    log = create_log(config(segment_bytes=2048 * 5))
    pid, base_offset = 1, 23
    now = mock_time.milliseconds()
    original = records([(b"key", b"a", now), (b"key", b"b", now)], producer_id=pid, producer_epoch=0, sequence=0,
                       base_offset=base_offset, partition_leader_epoch=0)
    log.append_as_follower(compacted(original, _KeepUnkeyed(BatchRetention.RETAIN_EMPTY, True, keep_keyless=False)))
    _append_more_and_truncate(log, mock_time, base_offset + 2)
    assert_last_sequence(log, pid, 1)


def test_update_producer_id_map_with_compacted_data(create_log: LogFactory, mock_time: MockTime) -> None:
    """testUpdateProducerIdMapWithCompactedData: a follower append of a compacted batch takes its last
    sequence."""
    log = create_log(config(segment_bytes=2048 * 5))
    pid = 1
    log.append_as_follower(_batch_with_gaps(mock_time, 23))
    assert_last_sequence(log, pid, 3)


def test_producer_id_map_truncate_to(create_log: LogFactory) -> None:
    """testProducerIdMapTruncateTo: truncation drops the snapshots past the new end and reloads the state."""
    log = create_log(config(segment_bytes=2048 * 5))
    log.append_as_leader(records([(None, b"a", -1)]), leader_epoch=0)
    log.append_as_leader(records([(None, b"b", -1)]), leader_epoch=0)
    log.take_producer_snapshot()
    log.append_as_leader(records([(None, b"c", -1)]), leader_epoch=0)
    log.take_producer_snapshot()

    log.truncate_to(2)
    assert log.latest_producer_snapshot_offset() == 2
    assert log.latest_producer_state_end_offset() == 2

    log.truncate_to(1)
    assert log.latest_producer_snapshot_offset() == 1
    assert log.latest_producer_state_end_offset() == 1

    log.truncate_to(0)
    assert log.latest_producer_snapshot_offset() is None
    assert log.latest_producer_state_end_offset() == 0


def test_producer_id_map_truncate_to_with_no_snapshots(create_log: LogFactory, log_dir: Path) -> None:
    """testProducerIdMapTruncateToWithNoSnapshots: a truncation with no snapshot left rebuilds from the log (the
    upgrade shortcut is for loading only)."""
    log = create_log(config(segment_bytes=2048 * 5))
    pid, epoch = 1, 0
    log.append_as_leader(records([(None, b"a", -1)], producer_id=pid, producer_epoch=epoch, sequence=0),
                         leader_epoch=0)
    log.append_as_leader(records([(None, b"b", -1)], producer_id=pid, producer_epoch=epoch, sequence=1),
                         leader_epoch=0)
    delete_producer_snapshot_files(log_dir)

    log.truncate_to(1)
    assert len(log.active_producers_with_last_sequence()) == 1
    last_seq = log.active_producers_with_last_sequence().get(pid)
    assert last_seq is not None
    assert last_seq == 0


def _three_segments_of_one_producer(log: Log) -> None:
    for seq, value in enumerate((b"a", b"b", b"c")):
        if seq:
            log.roll()
        log.append_as_leader(records([(None, value, -1)], producer_id=1, producer_epoch=0, sequence=seq),
                             leader_epoch=0)


@pytest.mark.parametrize("create_empty_active_segment", [True, False])
def test_retention_deletes_producer_state_snapshots(create_log: LogFactory, log_dir: Path, mock_time: MockTime,
                                                    create_empty_active_segment: bool) -> None:
    """testRetentionDeletesProducerStateSnapshots: the snapshots of the segments retention deletes go with them."""
    log = create_log(config(segment_bytes=2048 * 5, retention_bytes=0, retention_ms=1000 * 60,
                            file_delete_delay_ms=0))
    _three_segments_of_one_producer(log)
    if create_empty_active_segment:
        log.roll()
    log.update_high_watermark(log.log_end_offset)

    num_producer_snapshots = 3 if create_empty_active_segment else 2
    assert len(list_snapshot_files(log_dir)) == num_producer_snapshots
    mock_time.sleep(1000 * 60 + 1)  # breach the retention period
    log.delete_old_segments()
    mock_time.sleep(1)  # breach the file delete delay: the scheduled deletions run
    assert len(list_snapshot_files(log_dir)) == 1, "expect a single producer state snapshot remaining"
    assert log.log_start_offset == 3


def test_log_start_offset_movement_deletes_snapshots(create_log: LogFactory, log_dir: Path,
                                                     mock_time: MockTime) -> None:
    """testLogStartOffsetMovementDeletesSnapshots."""
    log = create_log(config(segment_bytes=2048 * 5, retention_bytes=-1, file_delete_delay_ms=0))
    _three_segments_of_one_producer(log)
    log.update_high_watermark(log.log_end_offset)
    assert len(list_snapshot_files(log_dir)) == 2

    # move the log start offset past the first two segments
    log.maybe_increment_log_start_offset(log.log_end_offset - 1)
    log.delete_old_segments()
    mock_time.sleep(1)
    assert len(list_snapshot_files(log_dir)) == 1, "expect a single producer state snapshot remaining"


def test_delete_snapshots_on_increment_log_start_offset(create_log: LogFactory, log_dir: Path,
                                                        mock_time: MockTime) -> None:
    """testDeleteSnapshotsOnIncrementLogStartOffset: deleting records keeps the producers but not the snapshots
    of the deleted segments."""
    log_config = config(segment_bytes=2048 * 5)
    log = create_log(log_config)
    pid1, pid2, epoch = 1, 2, 0
    log.append_as_leader(records([(None, b"a", mock_time.milliseconds())], producer_id=pid1, producer_epoch=epoch,
                                 sequence=0), leader_epoch=0)
    log.roll()
    log.append_as_leader(records([(None, b"b", mock_time.milliseconds())], producer_id=pid2, producer_epoch=epoch,
                                 sequence=0), leader_epoch=0)
    log.roll()
    assert len(log.active_producers_with_last_sequence()) == 2
    assert len(list_snapshot_files(log.dir)) == 2

    log.update_high_watermark(log.log_end_offset)
    log.maybe_increment_log_start_offset(2)
    log.delete_old_segments()  # retention cleans the snapshot files up
    mock_time.sleep(log_config.file_delete_delay_ms + 1000)

    assert len(log.active_producers_with_last_sequence()) == 2
    assert len(list_snapshot_files(log.dir)) == 1
    retained_last_seq = log.active_producers_with_last_sequence().get(pid2)
    assert retained_last_seq is not None
    assert retained_last_seq == 0


def test_compaction_deletes_producer_state_snapshots(create_log: LogFactory, log_dir: Path,
                                                     mock_time: MockTime) -> None:
    """testCompactionDeletesProducerStateSnapshots: segments the cleaner replaces take their snapshots along;
    there is one snapshot per segment base but the first's, before and after."""
    log = create_log(config(segment_bytes=2048 * 5, cleanup_policy="compact", file_delete_delay_ms=0))
    cleaner = Cleaner(0, FakeOffsetMap(2**31 - 1), 64 * 1024, 64 * 1024, 0.75,
                      Throttler(sys.float_info.max, 2**63 - 1, mock_time), mock_time, lambda _tp: None)
    for seq, value in enumerate((b"a", b"b", b"c")):
        if seq:
            log.roll()
        log.append_as_leader(records([(b"a", value, -1)], producer_id=1, producer_epoch=0, sequence=seq),
                             leader_epoch=0)
    log.update_high_watermark(log.log_end_offset)

    def bases_but_the_first() -> list[int]:
        return sorted(segment.base_offset for segment in log.log_segments())[1:]

    assert snapshot_offsets(log_dir) == bases_but_the_first(), \
        "expected a snapshot file per segment base offset, except the first segment"
    assert len(list_snapshot_files(log_dir)) == 2

    # only the key "a" exists: cleaning leaves the active segment alone and empties the others
    cleaner.clean(LogToClean(log.topic_partition, log, 0, log.log_end_offset))
    log.delete_old_segments()
    mock_time.sleep(1)  # the file delete delay passes and the deletions run
    assert snapshot_offsets(log_dir) == bases_but_the_first(), \
        "expected a snapshot file per segment base offset, excluding the first"


def test_loading_log_deletes_producer_state_snapshots_past_log_end_offset(create_log: LogFactory,
                                                                          log_dir: Path) -> None:
    """testLoadingLogDeletesProducerStateSnapshotsPastLogEndOffset."""
    log_dir.mkdir(parents=True, exist_ok=True)
    producer_snapshot_filename(log_dir, 42).touch()
    create_log(config(segment_bytes=2048 * 5, retention_bytes=-1, file_delete_delay_ms=0))
    assert len(list_snapshot_files(log_dir)) == 0, \
        "expected producer state snapshots greater than the log end offset to be cleaned up"


def test_producer_id_map_truncate_fully_and_start_at(create_log: LogFactory) -> None:
    """testProducerIdMapTruncateFullyAndStartAt."""
    one = singleton(b"foo")
    log = create_log(config(segment_bytes=one.size_in_bytes(), retention_bytes=one.size_in_bytes() * 2))
    log.append_as_leader(one, leader_epoch=0)
    log.take_producer_snapshot()
    log.append_as_leader(singleton(b"bar"), leader_epoch=0)
    log.append_as_leader(singleton(b"baz"), leader_epoch=0)
    log.take_producer_snapshot()

    assert log.number_of_segments == 3
    assert log.latest_producer_state_end_offset() == 3
    assert log.latest_producer_snapshot_offset() == 3

    log.truncate_fully_and_start_at(29)
    assert log.number_of_segments == 1
    assert log.latest_producer_snapshot_offset() is None
    assert log.latest_producer_state_end_offset() == 29


def test_producer_id_expiration_on_segment_deletion(create_log: LogFactory) -> None:
    """testProducerIdExpirationOnSegmentDeletion: retention deleting a producer's segment keeps the producer."""
    pid1 = 1
    first = records([(None, b"foo", -1)], producer_id=pid1, producer_epoch=0, sequence=0)
    log = create_log(config(segment_bytes=first.size_in_bytes(), retention_bytes=first.size_in_bytes() * 2))
    log.append_as_leader(first, leader_epoch=0)
    log.take_producer_snapshot()
    pid2 = 2
    log.append_as_leader(records([(None, b"bar", -1)], producer_id=pid2, producer_epoch=0, sequence=0),
                         leader_epoch=0)
    log.append_as_leader(records([(None, b"baz", -1)], producer_id=pid2, producer_epoch=0, sequence=1),
                         leader_epoch=0)
    log.take_producer_snapshot()

    assert log.number_of_segments == 3
    assert set(log.active_producers_with_last_sequence()) == {pid1, pid2}

    log.update_high_watermark(log.log_end_offset)
    log.delete_old_segments()

    # the producer state stays when the segment goes
    assert log.number_of_segments == 2
    assert set(log.active_producers_with_last_sequence()) == {pid1, pid2}


def test_take_snapshot_on_roll_and_delete_snapshot_on_recovery_point_checkpoint(create_log: LogFactory) -> None:
    """testTakeSnapshotOnRollAndDeleteSnapshotOnRecoveryPointCheckpoint: a roll snapshots at the new base, and
    flushes keep every snapshot."""
    log = create_log(config(segment_bytes=2048 * 5))
    # each roll snapshots at the new base; its flush at that base retains every snapshot
    for offset, value in enumerate((b"a", b"b", b"c"), start=1):
        log.append_as_leader(singleton(value), leader_epoch=0)
        log.roll(offset)
        assert log.latest_producer_snapshot_offset() == offset
        assert log.oldest_producer_snapshot_offset() == 1

    # a flush inside the active segment keeps the snapshot too
    log.append_as_leader(singleton(b"baz"), leader_epoch=0)
    log.flush(4)
    assert log.latest_producer_snapshot_offset() == 3


def test_producer_snapshot_after_segment_roll_on_append(create_log: LogFactory, mock_time: MockTime) -> None:
    """testProducerSnapshotAfterSegmentRollOnAppend: the roll an append makes snapshots the state before the
    append, and reloading from it gives the producer's first batch."""
    producer_id = 1
    log = create_log(config(segment_bytes=1024))
    log.append_as_leader(records([(None, bytes(512), mock_time.milliseconds())], producer_id=producer_id,
                                 producer_epoch=0, sequence=0), leader_epoch=0)
    # the next append overflows the segment and rolls it
    log.append_as_leader(records([(None, bytes(512), mock_time.milliseconds())], producer_id=producer_id,
                                 producer_epoch=0, sequence=1), leader_epoch=0)
    assert log.number_of_segments == 2
    assert log.active_segment.base_offset == 1
    assert log.latest_producer_snapshot_offset() == 1

    # force a reload from the snapshot to check it
    log.truncate_to(1)
    assert log.number_of_segments == 2
    assert log.active_segment.base_offset == 1
    assert not list(log.active_segment.log.batches())
    assert log.latest_producer_snapshot_offset() == 1

    last_entry = log.producer_state_manager.last_entry(producer_id)
    assert last_entry is not None
    assert last_entry.first_data_offset == 0
    assert last_entry.last_data_offset == 0


def test_recovery_point_not_incremented_on_producer_state_snapshot_flush_failure(
        create_log: LogFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """testRecoveryPointNotIncrementedOnProducerStateSnapshotFlushFailure: the flush a roll schedules stops at the
    snapshot's failed fsync, so the recovery point does not move past records that were never flushed.  Kafka
    mocks ``flushProducerStateSnapshot`` to throw; here the fsync of the snapshot fails with ``EIO``, which also
    takes the log dir offline (kafkalog's assertions after Kafka's)."""
    log = create_log(config())
    snapshot = producer_snapshot_filename(log.dir, 1)
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        if snapshot.exists() and os.path.samestat(os.fstat(fd), snapshot.stat()):
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    log.append_as_leader(singleton(b"a"), leader_epoch=0)
    with pytest.raises(KafkaStorageError, match="Input/output error") as raised:
        log.roll(1)  # the scheduled flush runs at once, on the mock clock
    assert log.recovery_point == 0
    assert raised.value.errno == errno.EIO and raised.value.log_dir == str(log.dir.parent.absolute())
    assert log.is_log_dir_offline
    with pytest.raises(KafkaStorageError, match="already offline"):
        log.flush()
    assert log.recovery_point == 0


def test_initialization_of_producer_snapshots_upgrade_path(create_log: LogFactory, log_dir: Path,
                                                           mock_time: MockTime) -> None:
    """testInitializationOfProducerSnapshotsUpgradePath: with no snapshot, a clean load (or one from the log end)
    writes snapshots at the last two segments' bases and the log end; an unclean one from 0 one per segment
    past the first."""
    log_config = config(segment_bytes=64 * 10)
    log = create_log(log_config)
    assert log.oldest_producer_snapshot_offset() is None
    for i in range(101):
        log.append_as_leader(records([(None, str(i).encode(), mock_time.milliseconds())]), leader_epoch=0)
    assert log.number_of_segments >= 2
    log_end_offset = log.log_end_offset
    log.close()
    delete_producer_snapshot_files(log_dir)

    # reload after a clean shutdown
    log = create_log(log_config, recovery_point=log_end_offset)
    expected = [*[s.base_offset for s in log.log_segments()][-2:], log.log_end_offset]
    assert snapshot_offsets(log_dir) == expected
    log.close()
    delete_producer_snapshot_files(log_dir)

    # reload after an unclean shutdown with the recovery point at the log end
    log = create_log(log_config, recovery_point=log_end_offset, had_clean_shutdown=False)
    assert snapshot_offsets(log_dir) == expected
    log.close()
    delete_producer_snapshot_files(log_dir)

    # reload after an unclean shutdown from 0: a snapshot for each segment after the recovery point
    log = create_log(log_config, recovery_point=0, had_clean_shutdown=False)
    expected = [*[s.base_offset for s in log.log_segments()][1:], log.log_end_offset]
    assert snapshot_offsets(log_dir) == expected
    log.close()


def test_producer_expire_check_after_delete(log_dir: Path) -> None:
    """testProducerExpireCheckAfterDelete: deleting the log cancels its periodic expiration check."""
    scheduler = KafkaScheduler(1)
    try:
        scheduler.startup()
        log = Log(log_dir, config(), scheduler=scheduler)
        producer_expire_check = log._producer_expire_check
        assert producer_expire_check is not None and not producer_expire_check.done(), \
            "producerExpireCheck isn't as part of scheduled tasks"
        log.delete()
        assert producer_expire_check.cancelled(), \
            "producerExpireCheck is part of scheduled tasks even after log deletion"
    finally:
        scheduler.shutdown()


def test_periodic_producer_id_expiration(create_log: LogFactory, mock_time: MockTime) -> None:
    """testPeriodicProducerIdExpiration: the scheduler forgets a producer idle for producer.id.expiration.ms."""
    producer_id_expiration_check_interval_ms = 100
    pid = 23
    log = create_log(config(segment_bytes=2048 * 5),
                     producer_state_manager_config=ProducerStateManagerConfig(200, False),
                     producer_id_expiration_check_interval_ms=producer_id_expiration_check_interval_ms)
    log.append_as_leader(records([(None, b"foo", mock_time.milliseconds())], producer_id=pid, producer_epoch=0,
                                 sequence=0), leader_epoch=0)
    assert set(log.active_producers_with_last_sequence()) == {pid}
    mock_time.sleep(producer_id_expiration_check_interval_ms)
    assert set(log.active_producers_with_last_sequence()) == {pid}
    mock_time.sleep(producer_id_expiration_check_interval_ms)
    assert set(log.active_producers_with_last_sequence()) == set()


# -- transactions ---------------------------------------------------------------------------------------


def txn_records(pid: int, epoch: int, seq: int, *values: bytes) -> MemoryRecords:
    """Kafka's ``MemoryRecords.withTransactionalRecords``."""
    return records([(None, value, -1) for value in values], producer_id=pid, producer_epoch=epoch, sequence=seq,
                   is_transactional=True)


def test_rebuild_transactional_state(create_log: LogFactory, mock_time: MockTime) -> None:
    """testRebuildTransactionalState: an aborted transaction stays complete after an unclean reopen."""
    log_config = config(segment_bytes=1024 * 1024 * 5)
    log = kafka_log(create_log, log_config)
    pid, epoch = 137, 5
    log.append_as_leader(txn_records(pid, epoch, 0, b"foo", b"bar", b"baz"), leader_epoch=0)
    abort_append_info = append_end_txn_marker_as_leader(log, pid, epoch, ControlRecordType.ABORT,
                                                        mock_time.milliseconds())
    log.update_high_watermark(abort_append_info.last_offset + 1)
    assert log.first_unstable_offset is None
    log.close()

    reopened = kafka_log(create_log, log_config, had_clean_shutdown=False)
    reopened.update_high_watermark(abort_append_info.last_offset + 1)
    assert reopened.first_unstable_offset is None


def test_first_unstable_offset_no_transactional_data(create_log: LogFactory) -> None:
    """testFirstUnstableOffsetNoTransactionalData."""
    log = kafka_log(create_log, config(segment_bytes=1024 * 1024 * 5))
    log.append_as_leader(MemoryRecords.with_records([(None, b"foo"), (None, b"bar"), (None, b"baz")]),
                         leader_epoch=0)
    assert log.first_unstable_offset is None


def test_first_unstable_offset_with_transactional_data(create_log: LogFactory, mock_time: MockTime) -> None:
    """testFirstUnstableOffsetWithTransactionalData: the transaction's first offset until the high watermark
    passes its COMMIT marker."""
    log = kafka_log(create_log, config(segment_bytes=1024 * 1024 * 5))
    pid, epoch, seq = 137, 5, 0
    first_append_info = log.append_as_leader(txn_records(pid, epoch, seq, b"foo", b"bar", b"baz"), leader_epoch=0)
    assert log.first_unstable_offset == first_append_info.first_offset

    seq += 3
    log.append_as_leader(txn_records(pid, epoch, seq, b"blah"), leader_epoch=0)
    assert log.first_unstable_offset == first_append_info.first_offset  # the LSO did not move

    commit_append_info = append_end_txn_marker_as_leader(log, pid, epoch, ControlRecordType.COMMIT,
                                                         mock_time.milliseconds())
    # not until the high watermark passes the marker
    assert log.first_unstable_offset == first_append_info.first_offset
    log.update_high_watermark(commit_append_info.last_offset + 1)
    assert log.first_unstable_offset is None


def test_truncation_below_the_high_watermark_leaves_the_first_unstable_offset(create_log: LogFactory) -> None:
    """UnifiedLog.truncateTo (3.9.2, and 4.4): the producer state is rebuilt to the target offset, but the first
    unstable offset is updated only through the high watermark, which moves when it was at or past the new log
    end.  A truncation that removes an open transaction while the high watermark stays below the end leaves the
    first unstable offset where it was until the next high-watermark update (found by the oracle:
    ``tests/oracle/scenarios/truncation-keeps-first-unstable-offset.json``)."""
    log = kafka_log(create_log, config(segment_bytes=1024 * 1024))
    log.append_as_leader(records([(None, b"plain", 0)]), leader_epoch=0)
    log.append_as_leader(txn_records(1000, 0, 0, b"a", b"b", b"c"), leader_epoch=0)
    assert log.first_unstable_offset == 1 and log.high_watermark == 0
    assert log.truncate_to(2)
    assert log.active_producers() == {}
    assert log.first_unstable_offset == 1
    log.update_high_watermark(1)
    assert log.first_unstable_offset is None


def test_zombie_coordinator_fenced(create_log: LogFactory, mock_time: MockTime) -> None:
    """testZombieCoordinatorFenced: a marker of an older coordinator epoch is refused."""
    pid, epoch = 1, 0
    log = create_log(config(segment_bytes=1024 * 1024 * 5))
    append = append_transactional_as_leader(log, pid, epoch, mock_time)
    append(10)
    append_end_txn_marker_as_leader(log, pid, epoch, ControlRecordType.ABORT, mock_time.milliseconds(),
                                    coordinator_epoch=1)
    append(5)
    append_end_txn_marker_as_leader(log, pid, epoch, ControlRecordType.COMMIT, mock_time.milliseconds(),
                                    coordinator_epoch=2)
    with pytest.raises(TransactionCoordinatorFencedError):
        append_end_txn_marker_as_leader(log, pid, epoch, ControlRecordType.ABORT, mock_time.milliseconds(),
                                        coordinator_epoch=1)


def test_zombie_coordinator_fenced_empty_transaction(create_log: LogFactory, mock_time: MockTime) -> None:
    """testZombieCoordinatorFencedEmptyTransaction: markers ending no transaction still fence older
    coordinators."""
    pid, epoch = 1, 0
    log = create_log(config(segment_bytes=1024 * 1024 * 5))
    data = records([(None, str(i).encode(), -1) for i in range(10)], producer_id=pid, producer_epoch=epoch,
                   sequence=0, is_transactional=True, partition_leader_epoch=1)
    marker = MemoryRecords.with_end_transaction_marker(pid, epoch, EndTransactionMarker(ControlRecordType.COMMIT, 0),
                                                       base_offset=10, partition_leader_epoch=1)
    log.append_as_follower(concatenated(data, marker))
    append_end_txn_marker_as_leader(log, pid, epoch, ControlRecordType.ABORT, mock_time.milliseconds(),
                                    coordinator_epoch=2, leader_epoch=1)
    append_end_txn_marker_as_leader(log, pid, epoch, ControlRecordType.ABORT, mock_time.milliseconds(),
                                    coordinator_epoch=2, leader_epoch=1)
    with pytest.raises(TransactionCoordinatorFencedError):
        append_end_txn_marker_as_leader(log, pid, epoch, ControlRecordType.ABORT, mock_time.milliseconds(),
                                        coordinator_epoch=1, leader_epoch=1)


def test_end_txn_with_fenced_producer_epoch(create_log: LogFactory, mock_time: MockTime) -> None:
    """testEndTxnWithFencedProducerEpoch: a marker of an older producer epoch is refused."""
    producer_id, epoch = 1, 5
    log = create_log(config(segment_bytes=1024 * 1024 * 5))
    append_end_txn_marker_as_leader(log, producer_id, epoch, ControlRecordType.ABORT, mock_time.milliseconds(),
                                    coordinator_epoch=1)
    with pytest.raises(InvalidProducerEpochError):
        append_end_txn_marker_as_leader(log, producer_id, epoch - 1, ControlRecordType.ABORT,
                                        mock_time.milliseconds(), coordinator_epoch=1)


def test_last_stable_offset_with_mixed_producer_data(create_log: LogFactory, mock_time: MockTime) -> None:
    """testLastStableOffsetWithMixedProducerData: two transactions and plain records."""
    log = kafka_log(create_log, config(segment_bytes=1024 * 1024 * 5))
    epoch = 5  # both producers share it
    pid1, seq1, pid2, seq2 = 137, 0, 983, 0
    first_append_info = log.append_as_leader(txn_records(pid1, epoch, seq1, b"a", b"b", b"c"), leader_epoch=0)
    assert log.first_unstable_offset == first_append_info.first_offset

    log.append_as_leader(MemoryRecords.with_records([(None, b"g"), (None, b"h"), (None, b"i")]), leader_epoch=0)
    second_append_info = log.append_as_leader(txn_records(pid2, epoch, seq2, b"d", b"e", b"f"), leader_epoch=0)
    assert log.first_unstable_offset == first_append_info.first_offset

    abort_append_info = append_end_txn_marker_as_leader(log, pid1, epoch, ControlRecordType.ABORT,
                                                        mock_time.milliseconds())
    log.update_high_watermark(abort_append_info.last_offset + 1)
    assert log.first_unstable_offset == second_append_info.first_offset

    commit_append_info = append_end_txn_marker_as_leader(log, pid2, epoch, ControlRecordType.COMMIT,
                                                         mock_time.milliseconds())
    log.update_high_watermark(commit_append_info.last_offset + 1)
    assert log.first_unstable_offset is None


def _open_transaction_over_two_segments(create_log: LogFactory, mock_time: MockTime) -> Log:
    """A transaction open over two segments with plain records between, the high watermark at the log end."""
    log = kafka_log(create_log, config(segment_bytes=1024 * 1024 * 5))
    append_pid = append_transactional_as_leader(log, 1, 0, mock_time)
    append_pid(5)
    append_non_transactional_as_leader(log, 3)
    assert log.log_end_offset == 8
    log.roll()
    assert log.number_of_segments == 2
    append_pid(5)
    assert log.first_unstable_offset == 0
    log.update_high_watermark(log.log_end_offset)
    return log


def test_last_stable_offset_does_not_exceed_log_start_offset_mid_segment(create_log: LogFactory,
                                                                         mock_time: MockTime) -> None:
    """testLastStableOffsetDoesNotExceedLogStartOffsetMidSegment."""
    log = _open_transaction_over_two_segments(create_log, mock_time)
    log.maybe_increment_log_start_offset(5)
    # the first unstable offset is bounded below by the log start offset
    assert log.first_unstable_offset == 5


def test_last_stable_offset_does_not_exceed_log_start_offset_after_segment_deletion(create_log: LogFactory,
                                                                                    mock_time: MockTime) -> None:
    """testLastStableOffsetDoesNotExceedLogStartOffsetAfterSegmentDeletion."""
    log = _open_transaction_over_two_segments(create_log, mock_time)
    log.maybe_increment_log_start_offset(8)
    log.update_high_watermark(log.log_end_offset)
    log.delete_old_segments()
    assert log.number_of_segments == 1
    assert log.first_unstable_offset == 8


def test_active_producers(create_log: LogFactory, mock_time: MockTime) -> None:
    """testActiveProducers: each producer's epoch, last sequence, open transaction and coordinator epoch."""
    log = create_log(config(segment_bytes=1024 * 1024))

    def assert_producer_state(producer_id: int, producer_epoch: int, last_sequence: int,
                              current_txn_start_offset: int | None, coordinator_epoch: int | None) -> None:
        producer_state = log.active_producers().get(producer_id)
        assert producer_state is not None
        assert producer_state.producer_epoch == producer_epoch
        assert producer_state.last_seq == last_sequence
        assert producer_state.current_txn_first_offset == current_txn_start_offset
        assert producer_state.coordinator_epoch == (-1 if coordinator_epoch is None else coordinator_epoch)

    producer1_epoch, producer_id1 = 5, 1
    append_transactional_as_leader(log, producer_id1, producer1_epoch, mock_time)(5)
    assert_producer_state(producer_id1, producer1_epoch, 4, 0, None)  # an open transaction

    coordinator_epoch = 15
    append_end_txn_marker_as_leader(log, producer_id1, producer1_epoch, ControlRecordType.COMMIT,
                                    mock_time.milliseconds(), coordinator_epoch)
    assert_producer_state(producer_id1, producer1_epoch, 4, None, coordinator_epoch)  # closed

    producer2_epoch, producer_id2 = 5, 2
    log_test_utils.append_idempotent_as_leader(log, producer_id2, producer2_epoch, mock_time)(3)
    assert_producer_state(producer_id2, producer2_epoch, 2, None, None)  # idempotent


@pytest.mark.parametrize("truncate", ["truncate_to", "truncate_fully_and_start_at"])
def test_truncate_below_first_unstable_offset(create_log: LogFactory, truncate: str) -> None:
    """testTruncateBelowFirstUnstableOffset and UnifiedLogTest.testTruncateFullyAndStartBelowFirstUnstableOffset:
    truncating
    below a first unstable offset whose position is unknown (after a reopen) resets the producer state."""
    log_config = config(segment_bytes=1024 * 1024)
    log = create_log(log_config)
    producer_id, producer_epoch, sequence = 17, 10, 0
    log.append_as_leader(records([(None, b"0", -1), (None, b"1", -1), (None, b"2", -1)]), leader_epoch=0)
    log.append_as_leader(txn_records(producer_id, producer_epoch, sequence, b"3", b"4"), leader_epoch=0)
    assert log.first_unstable_offset == 3
    # reopened, the first unstable offset's position is unknown
    log.close()

    reopened = create_log(log_config)
    assert reopened.producer_state_manager.first_unstable_offset() == LogOffsetMetadata(3)
    getattr(reopened, truncate)(0)
    assert reopened.first_unstable_offset is None
    assert dict(reopened.producer_state_manager.active_producers()) == {}


# -- transaction verification (KIP-890) -----------------------------------------------------------------


@pytest.mark.parametrize("append_origin", ["client", "coordinator"])
def test_transaction_is_ongoing_and_verification_guard(create_log: LogFactory, append_origin: str) -> None:
    """testTransactionIsOngoingAndVerificationGuard: with verification on, the guard stays through idempotent
    appends, goes once the transaction has a first offset, and a new one is needed after the marker."""
    log = create_log(config(segment_bytes=2048 * 5),
                     producer_state_manager_config=ProducerStateManagerConfig(86_400_000, True))
    producer_id, producer_epoch = 23, 1
    sequence = 3 if append_origin == "client" else 0
    assert not log.has_ongoing_transaction(producer_id)
    assert log.verification_guard(producer_id) == VerificationGuard.SENTINEL
    assert not log.verification_guard(producer_id).verify(VerificationGuard.SENTINEL)

    idempotent_records = records([(None, b"1", -1), (None, b"2", -1)], producer_id=producer_id,
                                 producer_epoch=producer_epoch, sequence=sequence)
    if append_origin == "client":  # only clients have non-zero sequences
        sequence += 2
    transactional_records = txn_records(producer_id, producer_epoch, sequence, b"1", b"2")

    verification_guard = log.maybe_start_transaction_verification(producer_id, sequence, producer_epoch)
    assert verification_guard != VerificationGuard.SENTINEL

    log.append_as_leader(idempotent_records, origin=append_origin, leader_epoch=0)
    assert not log.has_ongoing_transaction(producer_id)
    # idempotent records keep the guard
    assert log.verification_guard(producer_id) == verification_guard

    assert log.verification_guard(producer_id).verify(verification_guard)
    log.append_as_leader(transactional_records, leader_epoch=0, origin=append_origin,
                         verification_guard=verification_guard)
    assert log.has_ongoing_transaction(producer_id)
    assert log.verification_guard(producer_id) == VerificationGuard.SENTINEL  # cleared

    # already verified: no new guard
    assert log.maybe_start_transaction_verification(producer_id, sequence, producer_epoch) == \
        VerificationGuard.SENTINEL

    end_transaction_marker = MemoryRecords.with_end_transaction_marker(
        producer_id, producer_epoch, EndTransactionMarker(ControlRecordType.COMMIT, 0))
    log.append_as_leader(end_transaction_marker, origin="coordinator", leader_epoch=0)
    assert not log.has_ongoing_transaction(producer_id)
    assert log.verification_guard(producer_id) == VerificationGuard.SENTINEL

    if append_origin == "client":
        sequence += 1
    # the next transaction needs verifying again
    new_verification_guard = log.maybe_start_transaction_verification(producer_id, sequence, producer_epoch)
    assert new_verification_guard != VerificationGuard.SENTINEL
    assert new_verification_guard != verification_guard
    assert not verification_guard.verify(new_verification_guard)


def test_empty_transaction_still_clears_verification_guard(create_log: LogFactory) -> None:
    """testEmptyTransactionStillClearsVerificationGuard: a marker with no transaction clears the guard."""
    log = create_log(config(segment_bytes=2048 * 5),
                     producer_state_manager_config=ProducerStateManagerConfig(86_400_000, True))
    producer_id, producer_epoch = 23, 1
    verification_guard = log.maybe_start_transaction_verification(producer_id, 0, producer_epoch)
    assert verification_guard != VerificationGuard.SENTINEL
    end_transaction_marker = MemoryRecords.with_end_transaction_marker(
        producer_id, producer_epoch, EndTransactionMarker(ControlRecordType.COMMIT, 0))
    log.append_as_leader(end_transaction_marker, origin="coordinator", leader_epoch=0)
    assert not log.has_ongoing_transaction(producer_id)
    assert log.verification_guard(producer_id) == VerificationGuard.SENTINEL


def test_disabled_verification_clears_verification_guard(create_log: LogFactory) -> None:
    """testDisabledVerificationClearsVerificationGuard: with verification turned off meanwhile, the append needs
    no guard and clears the one there was."""
    producer_state_manager_config = ProducerStateManagerConfig(86_400_000, True)
    log = create_log(config(segment_bytes=2048 * 5), producer_state_manager_config=producer_state_manager_config)
    producer_id, producer_epoch = 23, 1
    verification_guard = log.maybe_start_transaction_verification(producer_id, 0, producer_epoch)
    assert verification_guard != VerificationGuard.SENTINEL

    producer_state_manager_config.set_transaction_verification_enabled(False)
    log.append_as_leader(txn_records(producer_id, producer_epoch, 0, b"1", b"2"), leader_epoch=0)
    assert log.has_ongoing_transaction(producer_id)
    assert log.verification_guard(producer_id) == VerificationGuard.SENTINEL


def test_enabling_verification_when_request_is_at_log_layer(create_log: LogFactory) -> None:
    """testEnablingVerificationWhenRequestIsAtLogLayer: verification turned on between the produce request and
    the append refuses the unverified transactional append, and takes it with a guard."""
    producer_state_manager_config = ProducerStateManagerConfig(86_400_000, False)
    log = create_log(config(segment_bytes=2048 * 5), producer_state_manager_config=producer_state_manager_config)
    producer_id, producer_epoch, sequence = 23, 1, 4
    producer_state_manager_config.set_transaction_verification_enabled(True)
    transactional_records = txn_records(producer_id, producer_epoch, sequence, b"1", b"2")

    with pytest.raises(InvalidTxnStateError):
        log.append_as_leader(transactional_records, leader_epoch=0)
    assert not log.has_ongoing_transaction(producer_id)
    assert log.verification_guard(producer_id) == VerificationGuard.SENTINEL

    verification_guard = log.maybe_start_transaction_verification(producer_id, sequence, producer_epoch)
    assert verification_guard != VerificationGuard.SENTINEL
    log.append_as_leader(transactional_records, leader_epoch=0, origin="client",
                         verification_guard=verification_guard)
    assert log.has_ongoing_transaction(producer_id)
    assert log.verification_guard(producer_id) == VerificationGuard.SENTINEL


def test_allow_non_zero_sequence_on_first_append_non_zero_epoch(create_log: LogFactory) -> None:
    """testAllowNonZeroSequenceOnFirstAppendNonZeroEpoch: a verified first append of an unknown producer may
    start at any sequence."""
    log = create_log(config(segment_bytes=2048 * 5),
                     producer_state_manager_config=ProducerStateManagerConfig(86_400_000, True))
    producer_id, producer_epoch, sequence = 23, 1, 3
    assert not log.has_ongoing_transaction(producer_id)
    assert log.verification_guard(producer_id) == VerificationGuard.SENTINEL
    transactional_records = txn_records(producer_id, producer_epoch, sequence, b"1", b"2")
    verification_guard = log.maybe_start_transaction_verification(producer_id, sequence, producer_epoch)
    # the append does not raise
    log.append_as_leader(transactional_records, leader_epoch=0, origin="client",
                         verification_guard=verification_guard)


# -- the transaction index --------------------------------------------------------------------------------


#: Kafka's expected aborted transactions of testTransactionIndexUpdated*: (pid1, 0, 29, 8) and (pid2, 8, 74, 36).
EXPECTED_ABORTED = [AbortedTxn(1, 0, 29, 8), AbortedTxn(2, 8, 74, 36)]


def all_aborted_transactions(log: Log) -> list[AbortedTxn]:
    """Kafka's ``LogTestUtils.allAbortedTransactions``: every segment's ``.txnindex`` entries."""
    return [txn for segment in log.log_segments() for txn in segment.txn_index.all_aborted_txns()]


def assert_cached_first_unstable_offset(log: Log, expected_offset: int) -> None:
    """Kafka's ``assertCachedFirstUnstableOffset``: the producer state's first unstable offset carries its segment
    and position, and they are where a read of that offset starts."""
    first_unstable_offset = log.producer_state_manager.first_unstable_offset()
    assert first_unstable_offset is not None
    assert first_unstable_offset.message_offset == expected_offset
    assert not first_unstable_offset.message_offset_only
    assert_valid_log_offset_metadata(log, first_unstable_offset)


def _check_transaction_index_updated(log: Log) -> None:
    assert all_aborted_transactions(log) == EXPECTED_ABORTED
    # the segment position of the first unstable offset is cached
    log.update_high_watermark(30)
    assert_cached_first_unstable_offset(log, 8)
    log.update_high_watermark(75)
    assert_cached_first_unstable_offset(log, 36)
    log.update_high_watermark(log.log_end_offset)
    assert log.first_unstable_offset is None


def test_transaction_index_updated(create_log: LogFactory, mock_time: MockTime) -> None:
    """testTransactionIndexUpdated: the ABORT markers appended as a leader write the ``.txnindex`` entries, with
    the last stable offset each leaves."""
    log = kafka_log(create_log, config(segment_bytes=1024 * 1024 * 5))
    append_mixed_transactions(log, mock_time)
    _check_transaction_index_updated(log)


def test_transaction_index_updated_through_replication(create_log: LogFactory, mock_time: MockTime) -> None:
    """testTransactionIndexUpdatedThroughReplication: the same batches in one follower append."""
    log = kafka_log(create_log, config(segment_bytes=1024 * 1024 * 5))
    sequences: dict[int, int] = {}
    parts: list[MemoryRecords] = []

    def transactional(pid: int, offset: int, count: int) -> None:
        seq = sequences.get(pid, 0)
        parts.append(records([(None, str(s).encode(), mock_time.milliseconds()) for s in range(seq, seq + count)],
                             producer_id=pid, producer_epoch=0, sequence=seq, base_offset=offset,
                             is_transactional=True, partition_leader_epoch=0))
        sequences[pid] = seq + count

    def plain(offset: int, count: int) -> None:
        parts.append(records([(None, str(s).encode(), mock_time.milliseconds()) for s in range(count)],
                             base_offset=offset, partition_leader_epoch=0))

    def marker(pid: int, offset: int, control_type: ControlRecordType) -> None:
        parts.append(MemoryRecords.with_end_transaction_marker(
            pid, 0, EndTransactionMarker(control_type, 0), base_offset=offset, timestamp=mock_time.milliseconds(),
            partition_leader_epoch=0))

    transactional(1, 0, 5)
    plain(5, 3)
    transactional(2, 8, 2)
    transactional(1, 10, 4)
    transactional(3, 14, 3)
    plain(17, 2)
    transactional(1, 19, 10)
    marker(1, 29, ControlRecordType.ABORT)
    transactional(2, 30, 6)
    transactional(4, 36, 3)
    plain(39, 10)
    transactional(3, 49, 9)
    marker(3, 58, ControlRecordType.COMMIT)
    transactional(4, 59, 8)
    transactional(2, 67, 7)
    marker(2, 74, ControlRecordType.ABORT)
    plain(75, 10)
    transactional(4, 85, 4)
    marker(4, 89, ControlRecordType.COMMIT)
    log.append_as_follower(concatenated(*parts))
    _check_transaction_index_updated(log)


def test_append_to_transaction_index_failure(create_log: LogFactory, mock_time: MockTime) -> None:
    """testAppendToTransactionIndexFailure: a marker whose ``.txnindex`` write fails is in the log (its offset
    taken), but its transaction stays open and the log dir goes offline: the next append adds nothing, the last
    stable offset stays where the transaction began even once the high watermark passes it, and closing fails.
    Reopened, recovery indexes the abort and the transaction is over."""
    pid, epoch = 1, 0
    log_config = config(segment_bytes=1024 * 1024 * 5)
    log = kafka_log(create_log, log_config)
    append = append_transactional_as_leader(log, pid, epoch, mock_time)
    append(10)
    # The index file does not exist yet, so nothing moves: the index now points at the partition directory, and
    # the marker's write to it fails.
    log.active_segment.txn_index.rename_to(log.dir)
    # the marker is written to the log, the write to the index fails
    with pytest.raises(KafkaStorageError):
        append_end_txn_marker_as_leader(log, pid, epoch, ControlRecordType.ABORT, mock_time.milliseconds(),
                                        coordinator_epoch=1)
    assert log.log_end_offset == 11
    assert log.last_stable_offset == 0
    # a second try appends nothing, since the log dir is offline, and writes nothing to the index
    with pytest.raises(KafkaStorageError):
        append_end_txn_marker_as_leader(log, pid, epoch, ControlRecordType.ABORT, mock_time.milliseconds(),
                                        coordinator_epoch=1)
    assert log.log_end_offset == 11
    assert log.last_stable_offset == 0
    # the first unstable offset does not move, even with the high watermark past the marker
    log.update_high_watermark(12)
    assert log.last_stable_offset == 0
    with pytest.raises(KafkaStorageError):
        log.close()
    reopened_log = create_log(log_config, had_clean_shutdown=False)
    assert reopened_log.log_end_offset == 11
    assert len(reopened_log.active_segment.txn_index.all_aborted_txns()) == 1
    reopened_log.update_high_watermark(12)
    assert reopened_log.first_unstable_offset is None


def test_aborted_transaction_spanning_multiple_segments(create_log: LogFactory, mock_time: MockTime) -> None:
    """testAbortedTransactionSpanningMultipleSegments: an abort whose transaction began in the previous segment is
    found by a read-committed fetch from the transaction's start."""
    pid, epoch = 137, 5
    first = txn_records(pid, epoch, 0, b"a", b"b", b"c")
    log = kafka_log(create_log, config(segment_bytes=first.size_in_bytes()))
    first_append_info = log.append_as_leader(first, leader_epoch=0)
    assert log.first_unstable_offset == first_append_info.first_offset

    # this write spills to the second segment
    log.append_as_leader(txn_records(pid, epoch, 3, b"d", b"e", b"f"), leader_epoch=0)
    assert log.first_unstable_offset == first_append_info.first_offset
    assert log.log_end_offset_metadata.segment_base_offset == 3

    abort_append_info = append_end_txn_marker_as_leader(log, pid, epoch, ControlRecordType.ABORT,
                                                        mock_time.milliseconds())
    log.update_high_watermark(abort_append_info.last_offset + 1)
    assert log.first_unstable_offset is None

    fetch_data_info = log.read(0, 2048, isolation=FetchIsolation.TXN_COMMITTED, min_one_message=True)
    assert fetch_data_info.aborted_transactions is not None
    assert [(txn.producer_id, txn.first_offset) for txn in fetch_data_info.aborted_transactions] == [(pid, 0)]


def _assert_non_empty_committed_fetch(log: Log, offset: int) -> None:
    """Kafka's ``assertNonEmptyFetch`` with ``FetchIsolation.TXN_COMMITTED``."""
    read_info = log.read(offset, 2**31 - 1, isolation=FetchIsolation.TXN_COMMITTED, min_one_message=True)
    assert not read_info.first_entry_incomplete
    assert read_info.records.size_in_bytes() > 0
    assert all(record.offset < log.last_stable_offset for record in read_info.records.records())
    assert read_info.fetch_offset_metadata.message_offset == offset
    assert_valid_log_offset_metadata(log, read_info.fetch_offset_metadata)


def _assert_empty_committed_fetch(log: Log, offset: int) -> None:
    """Kafka's ``assertEmptyFetch`` with ``FetchIsolation.TXN_COMMITTED``."""
    read_info = log.read(offset, 2**31 - 1, isolation=FetchIsolation.TXN_COMMITTED, min_one_message=True)
    assert not read_info.first_entry_incomplete
    assert read_info.records.size_in_bytes() == 0
    assert read_info.fetch_offset_metadata.message_offset == offset
    assert_valid_log_offset_metadata(log, read_info.fetch_offset_metadata)


def test_fetch_up_to_last_stable_offset(create_log: LogFactory, mock_time: MockTime) -> None:
    """testFetchUpToLastStableOffset: a read-committed fetch returns records from every offset below the last
    stable offset and none from it to the log end, as transactions end and the high watermark moves."""
    log = kafka_log(create_log, config(segment_bytes=1024 * 1024))
    epoch = 0
    append_producer1 = append_transactional_as_leader(log, 1, epoch, mock_time)
    append_producer2 = append_transactional_as_leader(log, 2, epoch, mock_time)
    append_producer1(5)
    append_non_transactional_as_leader(log, 3)
    append_producer2(2)
    append_producer1(4)
    append_non_transactional_as_leader(log, 2)
    append_producer1(10)

    def assert_lso_bounded_fetches() -> None:
        for offset in range(log.log_start_offset, log.last_stable_offset):
            _assert_non_empty_committed_fetch(log, offset)
        for offset in range(log.last_stable_offset, log.log_end_offset + 1):
            _assert_empty_committed_fetch(log, offset)

    assert_lso_bounded_fetches()
    log.update_high_watermark(log.log_end_offset)
    assert_lso_bounded_fetches()

    append_end_txn_marker_as_leader(log, 1, epoch, ControlRecordType.COMMIT, mock_time.milliseconds())
    assert log.last_stable_offset == 0
    log.update_high_watermark(log.log_end_offset)
    assert log.last_stable_offset == 8
    assert_lso_bounded_fetches()

    append_end_txn_marker_as_leader(log, 2, epoch, ControlRecordType.ABORT, mock_time.milliseconds())
    assert log.last_stable_offset == 8
    log.update_high_watermark(log.log_end_offset)
    assert log.last_stable_offset == log.log_end_offset
    assert_lso_bounded_fetches()


def test_read_committed_with_concurrent_high_watermark_updates(create_log: LogFactory, mock_time: MockTime) -> None:
    """testReadCommittedWithConcurrentHighWatermarkUpdates: one thread appends one-record transactions, reads each
    read-committed before aborting it, while another moves the high watermark to the log end: no read returns the
    open transaction's record."""
    log = kafka_log(create_log, config(segment_bytes=1024 * 1024 * 5))
    last_offset = 50
    producer_epoch, producer_id = 0, 15
    append_producer = append_transactional_as_leader(log, producer_id, producer_epoch, mock_time)
    done = threading.Event()

    def hw_update_loop() -> None:
        while log.log_end_offset < last_offset and not done.is_set():
            log.update_high_watermark(log.log_end_offset)

    updater = threading.Thread(target=hw_update_loop, daemon=True)
    updater.start()
    non_empty_reads = 0
    try:
        while log.log_end_offset < last_offset:
            current_log_end_offset = log.log_end_offset
            append_producer(1)
            read_info = log.read(current_log_end_offset, 2**31 - 1, isolation=FetchIsolation.TXN_COMMITTED,
                                 min_one_message=False)
            if read_info.records.size_in_bytes() > 0:
                non_empty_reads += 1
            append_end_txn_marker_as_leader(log, producer_id, producer_epoch, ControlRecordType.ABORT,
                                            mock_time.milliseconds())
    finally:
        done.set()
        updater.join(timeout=30)
    assert not updater.is_alive()
    assert non_empty_reads == 0

"""Helpers shared by the Log, LogLoader and cleaner tests (Kafka: ``kafka.log.LogTestUtils``, and
``TestUtils.singletonRecords``).

Segments whose batches overflow the 32-bit relative offsets of their indexes cannot be made through
``Log.append``, which rolls first; these write them by hand, as Kafka's tests do.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from kafkalog import MemoryRecords
from kafkalog.config.log_config import LogConfig
from kafkalog.fetch import LogOffsetMetadata
from kafkalog.file_message_set import FileMessageSet
from kafkalog.filenames import index_filename, log_filename, time_index_filename
from kafkalog.log import Log, LogAppendInfo
from kafkalog.record import ControlRecordType, EndTransactionMarker
from kafkalog.segment import LogSegment
from kafkalog.tools.partition_dir import classify_dir

INT32_MAX = 2**31 - 1
NO_TIMESTAMP = -1

# What the ``create_log`` fixture (conftest.py) hands a test: ``create(config=None, directory=None, **kwargs)``.
LogFactory = Callable[..., Log]


def create_empty_logs(directory: Path, *offsets: int) -> None:
    """Kafka's ``createEmptyLogs``: an empty ``.log`` and ``.index`` per offset."""
    directory.mkdir(parents=True, exist_ok=True)
    for offset in offsets:
        log_filename(directory, offset).touch()
        index_filename(directory, offset).touch()


def singleton(value: bytes | None, key: bytes | None = None, timestamp: int = NO_TIMESTAMP, *,
              magic: int = 2, compression: str = "none", base_offset: int = 0) -> MemoryRecords:
    """Kafka's ``TestUtils.singletonRecords``: one record in one batch."""
    return MemoryRecords.with_records([(key, value, timestamp)], magic=magic, compression=compression,
                                      base_offset=base_offset)


def config(**props: Any) -> LogConfig:
    """Kafka's ``LogTestUtils.createLogConfig``, with property names spelt with underscores."""
    return LogConfig({name.replace("_", "."): value for name, value in props.items()})


def write_sample_batches(directory: Path, base_offset: int, file: FileMessageSet) -> int:
    """Kafka's ``writeSampleBatches``: batches at base, base+1 (two records) and base + Int.MaxValue - 1,
    each record's key and value its offset, plus empty index files for the segment at ``base_offset``
    (so loading does not recover, and truncate, it).  Returns the offset after the last batch."""
    def records(offset: int, count: int = 1) -> MemoryRecords:
        keys = [str(o).encode() for o in range(offset, offset + count)]
        return MemoryRecords.with_records([(key, key) for key in keys], base_offset=offset,
                                          partition_leader_epoch=0)

    file.append(records(base_offset))
    file.append(records(base_offset + 1, 2))
    file.append(records(base_offset + INT32_MAX - 1))
    index_filename(directory, base_offset).touch()
    time_index_filename(directory, base_offset).touch()
    return base_offset + INT32_MAX


def initialize_log_dir_with_overflowed_segment(directory: Path) -> None:
    """Kafka's ``initializeLogDirWithOverflowedSegment``: three segments, the second holding offsets that
    overflow its base offset."""
    directory.mkdir(parents=True, exist_ok=True)
    next_offset = 0
    with FileMessageSet.open(log_filename(directory, next_offset)) as file:
        next_offset = write_sample_batches(directory, next_offset, file)
    with FileMessageSet.open(log_filename(directory, next_offset)) as file:
        following = write_sample_batches(directory, next_offset, file)
        next_offset = write_sample_batches(directory, following, file)
    with FileMessageSet.open(log_filename(directory, next_offset)) as file:
        write_sample_batches(directory, next_offset, file)


def first_overflow_segment(log: Log) -> LogSegment | None:
    """Kafka's ``firstOverflowSegment``: the first segment holding a batch its indexes cannot address."""
    for segment in log.log_segments():
        for batch in segment.log.batches():
            if batch.last_offset > segment.base_offset + INT32_MAX or batch.base_offset < segment.base_offset:
                return segment
    return None


def assert_valid_log_offset_metadata(log: Log, offset_metadata: LogOffsetMetadata) -> None:
    """Kafka's ``UnifiedLogTest.assertValidLogOffsetMetadata``: the metadata names a segment of the log and a
    position in it, and reading the segment at that offset finds the same metadata (or nothing, when the
    position is the segment's end)."""
    assert not offset_metadata.message_offset_only
    base_offset = offset_metadata.segment_base_offset
    segments = log.log_segments(base_offset, base_offset + 1)
    assert segments, f"no segment at {base_offset}"
    segment = segments[0]
    assert segment.base_offset == base_offset
    assert offset_metadata.relative_position_in_segment <= segment.size()
    read = segment.read(offset_metadata.message_offset, 2048, segment.size(), False)
    if offset_metadata.relative_position_in_segment < segment.size():
        assert read is not None
        assert read.fetch_offset_metadata == offset_metadata
    else:
        assert read is None


def golden_log_dirs(golden: Path) -> list[Path]:
    """Every log dir (a broker's ``log.dirs`` entry) in the golden folder, sorted."""
    found = []
    for directory in sorted(p for p in golden.rglob("*") if p.is_dir()):
        try:
            if classify_dir(directory) == "logdir" and directory != golden:
                found.append(directory)
        except Exception:
            continue
    return found


def append_idempotent_as_leader(log: Log, producer_id: int, producer_epoch: int, time: Any,
                                is_transactional: bool = False) -> Callable[[int], None]:
    """Kafka's ``appendIdempotentAsLeader``: a function that appends ``n`` records of ``producer_id`` in one
    batch, their values the decimal sequence numbers, the sequence carrying on from call to call."""
    sequence = 0

    def append(num_records: int) -> None:
        nonlocal sequence
        batch = [(None, str(seq).encode(), time.milliseconds()) for seq in range(sequence, sequence + num_records)]
        log.append_as_leader(MemoryRecords.with_records(batch, producer_id=producer_id,
                                                        producer_epoch=producer_epoch, base_sequence=sequence,
                                                        is_transactional=is_transactional), leader_epoch=0)
        sequence += num_records

    return append


def append_transactional_as_leader(log: Log, producer_id: int, producer_epoch: int,
                                   time: Any) -> Callable[[int], None]:
    """Kafka's ``appendTransactionalAsLeader``."""
    return append_idempotent_as_leader(log, producer_id, producer_epoch, time, is_transactional=True)


def append_non_transactional_as_leader(log: Log, num_records: int) -> None:
    """Kafka's ``appendNonTransactionalAsLeader``: ``num_records`` records without a producer, values 0, 1, ..."""
    log.append_as_leader(MemoryRecords.with_records([(None, str(seq).encode()) for seq in range(num_records)]),
                         leader_epoch=0)


def append_end_txn_marker_as_leader(log: Log, producer_id: int, producer_epoch: int, control_type: Any,
                                    timestamp: int, coordinator_epoch: int = 0, leader_epoch: int = 0) -> LogAppendInfo:
    """Kafka's ``appendEndTxnMarkerAsLeader``: a COMMIT or ABORT marker, appended as the transaction coordinator
    does (``AppendOrigin.COORDINATOR``); returns what was appended."""
    marker = MemoryRecords.with_end_transaction_marker(producer_id, producer_epoch,
                                                       EndTransactionMarker(control_type, coordinator_epoch),
                                                       timestamp=timestamp, partition_leader_epoch=0)
    return log.append_as_leader(marker, leader_epoch=leader_epoch, origin="coordinator")


def append_mixed_transactions(log: Log, mock_time: Any) -> None:
    """The appends of Kafka's testFullTransactionIndexRecovery and testRecover*LastSegment*: four transactional
    producers mixed with plain records; producers 1 and 2 abort, 3 and 4 commit.  The comments give the log
    end offset after each step."""
    epoch = 0
    append_pid1 = append_transactional_as_leader(log, 1, epoch, mock_time)
    append_pid2 = append_transactional_as_leader(log, 2, epoch, mock_time)
    append_pid3 = append_transactional_as_leader(log, 3, epoch, mock_time)
    append_pid4 = append_transactional_as_leader(log, 4, epoch, mock_time)

    append_pid1(5)  # 5
    append_non_transactional_as_leader(log, 3)  # 8
    append_pid2(2)  # 10
    append_pid1(4)  # 14
    append_pid3(3)  # 17
    append_non_transactional_as_leader(log, 2)  # 19
    append_pid1(10)  # 29
    append_end_txn_marker_as_leader(log, 1, epoch, ControlRecordType.ABORT, mock_time.milliseconds())  # 30
    append_pid2(6)  # 36
    append_pid4(3)  # 39
    append_non_transactional_as_leader(log, 10)  # 49
    append_pid3(9)  # 58
    append_end_txn_marker_as_leader(log, 3, epoch, ControlRecordType.COMMIT, mock_time.milliseconds())  # 59
    append_pid4(8)  # 67
    append_pid2(7)  # 74
    append_end_txn_marker_as_leader(log, 2, epoch, ControlRecordType.ABORT, mock_time.milliseconds())  # 75
    append_non_transactional_as_leader(log, 10)  # 85
    append_pid4(4)  # 89
    append_end_txn_marker_as_leader(log, 4, epoch, ControlRecordType.COMMIT, mock_time.milliseconds())  # 90
    assert log.log_end_offset == 90


def append_transaction_sample(log: Log) -> None:
    """Offsets 0..6 of a partition with every kind of transactional state: ``plain`` (no producer),
    ``aborted`` (producer 7) and its ABORT marker, ``committed`` (producer 8) and its COMMIT marker, ``open``
    (producer 9, never ended) and ``after the open one``; the last stable offset is 5.  Appended as a follower
    replicates them (offsets given, leader epoch 0), since a client may not write markers.  Every record's key is
    the first byte of its value, its timestamp 1000."""
    def data(value: bytes, producer_id: int | None = None) -> None:
        txn: dict[str, Any] = {} if producer_id is None else {
            "producer_id": producer_id, "producer_epoch": 0, "base_sequence": 0, "is_transactional": True}
        log.append(MemoryRecords.with_records([(value[:1], value, 1_000)], base_offset=log.log_end_offset,
                                              partition_leader_epoch=0, **txn),
                   assign_offsets=False)

    def marker(producer_id: int, kind: ControlRecordType) -> None:
        log.append(MemoryRecords.with_end_transaction_marker(producer_id, 0, EndTransactionMarker(kind, 0),
                                                             base_offset=log.log_end_offset, timestamp=1_000,
                                                             partition_leader_epoch=0),
                   assign_offsets=False)

    data(b"plain")
    data(b"aborted", 7)
    marker(7, ControlRecordType.ABORT)
    data(b"committed", 8)
    marker(8, ControlRecordType.COMMIT)
    data(b"open", 9)
    data(b"after the open one")


def append_abort_across_a_roll(log: Log) -> None:
    """Offsets 0..3 over two segments: ``plain``, producer 7's ``aborted`` (the transaction's one data batch), a
    roll, its ABORT marker at 2 (the second segment's base: that segment's ``.txnindex`` holds the entry,
    ``AbortedTxn(7, 1, 2, 3)``), then ``after``, appended as a follower of epoch 0 appends them.  A
    ``read_committed`` reader gets ``plain`` and ``after``."""
    log.append(MemoryRecords.with_records([(b"p", b"plain", 1_000)], base_offset=0, partition_leader_epoch=0),
               assign_offsets=False)
    log.append(MemoryRecords.with_records([(b"a", b"aborted", 1_000)], base_offset=1, producer_id=7, producer_epoch=0,
                                          base_sequence=0, is_transactional=True, partition_leader_epoch=0),
               assign_offsets=False)
    log.roll()
    log.append(MemoryRecords.with_end_transaction_marker(7, 0, EndTransactionMarker(ControlRecordType.ABORT, 0),
                                                         base_offset=2, timestamp=1_000,
                                                         partition_leader_epoch=0), assign_offsets=False)
    log.append(MemoryRecords.with_records([(b"a", b"after", 1_000)], base_offset=3, partition_leader_epoch=0),
               assign_offsets=False)


#: One v2 record of 7 bytes, the least a record can take: length 6, attributes 0, timestamp delta 0,
#: offset delta 0, null key, null value, no headers.
SMALLEST_V2_RECORD = bytes([0x0C, 0x00, 0x00, 0x00, 0x01, 0x01, 0x00])


def record_count_bomb(records: int, *, base_offset: int = 0, timestamp: int = 1_000) -> bytes:
    """One gzip v2 batch of ``records`` copies of :data:`SMALLEST_V2_RECORD` (every record at
    ``base_offset``): a few hundred bytes per MiB of records, so a small segment holds tens of millions of
    records (37,449,142 records are 250 MiB decompressed, inside the default 256 MiB decompression bound,
    and about 250 KB compressed).  Built a piece at a time, so building it costs little memory."""
    import struct
    import zlib

    from kafkalog import _impl

    compressor = zlib.compressobj(6, zlib.DEFLATED, 31)  # wbits 31: a gzip member, as Kafka writes
    piece = 1 << 16
    parts = []
    left = records
    block = SMALLEST_V2_RECORD * piece
    while left:
        n = min(left, piece)
        parts.append(compressor.compress(block if n == piece else SMALLEST_V2_RECORD * n))
        left -= n
    parts.append(compressor.flush())
    body = b"".join(parts)
    header = bytearray(61)
    # baseOffset, batchLength, partitionLeaderEpoch, magic, crc (later), attributes (gzip), lastOffsetDelta,
    # baseTimestamp, maxTimestamp, producerId, producerEpoch, baseSequence, recordsCount
    struct.pack_into(">qiibIhiqqqhii", header, 0, base_offset, 49 + len(body), 0, 2, 0, 1, 0, timestamp,
                     timestamp, -1, -1, -1, records)
    batch = header + body
    struct.pack_into(">I", batch, 17, _impl.core.crc32c(bytes(batch[21:])))
    return bytes(batch)


def write_record_count_bomb_partition(directory: Path, records: int) -> Path:
    """A partition dir whose first segment is one :func:`record_count_bomb` batch (offset 0) and whose
    second, active segment holds one keyed record at offset 1, so the first one can be cleaned.  Returns
    the first segment's ``.log``."""
    directory.mkdir(parents=True, exist_ok=True)
    first = log_filename(directory, 0)
    first.write_bytes(record_count_bomb(records))
    log_filename(directory, 1).write_bytes(
        bytes(MemoryRecords.with_records([(b"k", b"v", 1_000)], base_offset=1).buffer))
    for offset in (0, 1):
        index_filename(directory, offset).touch()
        time_index_filename(directory, offset).touch()
    return first

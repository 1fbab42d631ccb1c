"""Helpers of the Cleaner tests (tests/cleaner/test_cleaner*.py), as Kafka's LogCleanerTest has them: its
constants and ``logProps``, the dict-backed ``FakeOffsetMap``, the test environment (a MockTime, a scheduler,
logs of 1024-byte segments), ``record``/``tombstone`` and the other record builders, the readers of what a
log holds (``keys_in_log``, ``offsets_in_log``...), a transactional producer, and its markers appended as
the transaction coordinator appends them.
"""

from __future__ import annotations

import gzip
import struct
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import cramjam

from kafkalog import MemoryRecords
from kafkalog.cleaner import Cleaner
from kafkalog.cleaner.manager import LogCleaningAbortedError, LogToClean
from kafkalog.cleaner.offset_map import OffsetMap
from kafkalog.cleaner.throttler import Throttler
from kafkalog.config.log_config import LogConfig
from kafkalog.log import Log
from kafkalog.record import ControlRecordType, EndTransactionMarker
from kafkalog.scheduler import MockTime
from kafkalog.segment import LogSegment
from kafkalog.topic import TopicPartition

TP = TopicPartition("test", 0)
INT_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1
TOMBSTONE_RETENTION_MS = 86_400_000
LARGE_TIMESTAMP = LONG_MAX - TOMBSTONE_RETENTION_MS - 1
#: Kafka's LogCleanerTest ``logProps``: 1024-byte segments and indexes, compacted.
BASE_PROPS: dict[str, Any] = {"segment.bytes": 1024, "segment.index.bytes": 1024, "cleanup.policy": "compact"}
MB = 1024 * 1024


class FakeOffsetMap(OffsetMap):
    """Kafka's ``FakeOffsetMap``: a dict from the key (as a string) to its offset; ``slots`` is the
    capacity.  Like Kafka's, ``clear`` empties the dict but keeps the latest offset."""

    def __init__(self, slots: int) -> None:
        self._slots = slots
        self.map: dict[str, int] = {}
        self.last_offset = -1

    @property
    def slots(self) -> int:
        return self._slots

    def put(self, key: bytes, offset: int) -> None:
        self.last_offset = offset
        self.map[bytes(key).decode()] = offset

    def get(self, key: bytes) -> int:
        return self.map.get(bytes(key).decode(), -1)

    def clear(self) -> None:
        self.map.clear()

    @property
    def size(self) -> int:
        return len(self.map)

    @property
    def latest_offset(self) -> int:
        return self.last_offset

    def update_latest_offset(self, offset: int) -> None:
        self.last_offset = offset


def no_op_check_done(topic_partition: TopicPartition) -> None:
    """Kafka: ``checkDone = _ => ()``."""


def abort_check_done(topic_partition: TopicPartition) -> None:
    """Kafka: ``abortCheckDone``."""
    raise LogCleaningAbortedError("abort")


class Env:
    """Kafka's LogCleanerTest fixture: a partition directory ``test-0`` in a temporary dir, a MockTime and
    the logs made (closed at the end, after the deferred deletions ran)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.dir = root / "test-0"
        self.time = MockTime()
        self.logs: list[Log] = []
        self.segments_to_close: list[LogSegment] = []

    def config(self, **overrides: Any) -> LogConfig:
        """Kafka: ``LogConfig.fromProps(logConfig.originals, logProps)``; keys with dots as in Kafka."""
        return LogConfig({**BASE_PROPS, **{k.replace("_", "."): v for k, v in overrides.items()}})

    def make_log(
        self,
        config: LogConfig | None = None,
        directory: Path | None = None,
        recovery_point: int = 0,
        clean_shutdown: bool = True,
    ) -> Log:
        """Kafka: ``makeLog(dir, config, recoveryPoint)``."""
        log = Log(
            directory if directory is not None else self.dir,
            config if config is not None else self.config(),
            recovery_point=recovery_point,
            scheduler=self.time.scheduler,
            time=self.time,
            had_clean_shutdown=clean_shutdown,
        )
        self.logs.append(log)
        return log

    def make_cleaner(
        self,
        capacity: int,
        check_done: Callable[[TopicPartition], None] = no_op_check_done,
        max_message_size: int = 64 * 1024,
        offset_map: OffsetMap | None = None,
    ) -> Cleaner:
        """Kafka: ``makeCleaner(capacity, checkDone, maxMessageSize)``."""
        return Cleaner(
            0,
            offset_map if offset_map is not None else FakeOffsetMap(capacity),
            max_message_size,
            max_message_size,
            0.75,
            Throttler(sys.float_info.max, 300, self.time),
            self.time,
            check_done,
        )

    def close(self) -> None:
        self.time.scheduler.shutdown()
        for log in self.logs:
            log.close()
        for segment in self.segments_to_close:
            segment.close_handlers()


# -- records and what the log holds ---------------------------------------------------------------------


def key(n: int) -> bytes:
    return str(n).encode()


def record(
    k: int, v: int | None, producer_id: int = -1, producer_epoch: int = -1, sequence: int = -1
) -> MemoryRecords:
    """Kafka's ``record(key, value, producerId, producerEpoch, sequence)``: one v2 record, no timestamp."""
    return MemoryRecords.with_records(
        [(key(k), None if v is None else key(v))],
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=sequence,
    )


def large_record(k: int, value: bytes) -> MemoryRecords:
    return MemoryRecords.with_records([(key(k), value)])


def tombstone(k: int) -> MemoryRecords:
    return MemoryRecords.with_records([(key(k), None)])


def unkeyed(v: int) -> MemoryRecords:
    return MemoryRecords.with_records([(None, key(v))])


def singleton(value: bytes | None, k: bytes | None = None, timestamp: int = -1) -> MemoryRecords:
    """Kafka's ``TestUtils.singletonRecords``."""
    return MemoryRecords.with_records([(k, value, timestamp)])


def message_with_offset(k: bytes | int, v: bytes | int, offset: int) -> MemoryRecords:
    """Kafka's ``messageWithOffset``: one v2 record at ``offset`` in leader epoch 0, for a follower append."""
    kb = key(k) if isinstance(k, int) else k
    vb = key(v) if isinstance(v, int) else v
    return MemoryRecords.with_records([(kb, vb)], base_offset=offset, partition_leader_epoch=0)


def same(numbers: Iterable[int]) -> list[tuple[int, int]]:
    """Kafka's ``(start until end) zip (start until end)``: each number as key and value."""
    return [(n, n) for n in numbers]


def write_to_log(
    log: Log, pairs: Iterable[tuple[int, int]], offsets: Iterable[int] | None = None
) -> list[int]:
    """Kafka's ``writeToLog``: as a leader, or as a follower at the given offsets."""
    if offsets is None:
        return [log.append_as_leader(record(k, v), 0).first_offset for k, v in pairs]
    return [
        log.append_as_follower(message_with_offset(k, v, o)).last_offset
        for (k, v), o in zip(pairs, offsets, strict=True)
    ]


def batches_in(log: Log) -> list[Any]:
    return [batch for segment in log.log_segments() for batch in segment.log.batches()]


def keys_in_log(log: Log) -> list[int]:
    """Kafka's ``LogTestUtils.keysInLog``: keys of records with a key and a value, control batches skipped."""
    return [
        int(r.key)
        for b in batches_in(log)
        if not b.is_control
        for r in b.records()
        if r.key is not None and r.value is not None
    ]


def offsets_in_log(log: Log) -> list[int]:
    """Kafka's ``offsetsInLog``: offsets of records with a key and a value (markers included)."""
    return [
        r.offset for b in batches_in(log) for r in b.records() if r.key is not None and r.value is not None
    ]


def last_offsets_per_batch_in_log(log: Log) -> list[int]:
    return [b.last_offset for b in batches_in(log)]


def batch_base_offsets_in_log(log: Log) -> list[int]:
    return [b.base_offset for b in batches_in(log)]


def last_sequences_in_log(log: Log) -> dict[int, int]:
    return {b.producer_id: b.last_sequence for b in batches_in(log) if not b.is_control and b.has_producer_id}


def unkeyed_message_count_in_log(log: Log) -> int:
    return sum(1 for b in batches_in(log) for r in b.records() if r.value is not None and r.key is None)


def files_with_suffix(directory: Path, suffix: str) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(suffix))


def fill_segments(log: Log, count: int, value_of: Callable[[int], int] = lambda offset: offset) -> None:
    """Append ``record(leo, value_of(leo))`` until the log has ``count`` segments."""
    while log.number_of_segments < count:
        leo = log.log_end_offset
        log.append_as_leader(record(leo, value_of(leo)), 0)


class TxnProducer:
    """Kafka's ``appendIdempotentAsLeader`` / ``appendTransactionalAsLeader``: each call appends one
    batch of the given keys (value = key, timestamp = now) and advances the sequence, appended with Kafka's
    ``origin`` (``client`` by default)."""

    def __init__(
        self,
        env: Env,
        log: Log,
        producer_id: int,
        producer_epoch: int = 0,
        transactional: bool = True,
        leader_epoch: int = 0,
        origin: str = "client",
    ) -> None:
        self.env, self.log, self.producer_id, self.producer_epoch = env, log, producer_id, producer_epoch
        self.transactional, self.leader_epoch, self.origin = transactional, leader_epoch, origin
        self.sequence = 0

    def __call__(self, keys: list[int]) -> Any:
        now = self.env.time.milliseconds()
        records = MemoryRecords.with_records(
            [(key(k), key(k), now) for k in keys],
            producer_id=self.producer_id,
            producer_epoch=self.producer_epoch,
            base_sequence=self.sequence,
            is_transactional=self.transactional,
        )
        self.sequence += len(keys)
        return self.log.append_as_leader(records, self.leader_epoch, origin=self.origin)


def append_marker(
    env: Env,
    log: Log,
    producer_id: int,
    control_type: ControlRecordType,
    producer_epoch: int = 0,
    timestamp: int | None = None,
    origin: str = "coordinator",
    leader_epoch: int = 0,
) -> int:
    """Kafka's ``log.appendAsLeader(commitMarker(...) | abortMarker(...), leaderEpoch = 0, origin = COORDINATOR)``:
    a marker of coordinator epoch 0, built at offset 0 with no partition leader epoch, appended as the leader of
    ``leader_epoch`` with ``origin`` (``replication`` in Kafka's testMultiPassSegmentCleaningWithAbortedTransactions),
    so the log's producer state, transaction index and last stable offset take it as they take a coordinator's;
    returns its offset."""
    marker = MemoryRecords.with_end_transaction_marker(
        producer_id,
        producer_epoch,
        EndTransactionMarker(control_type, 0),
        timestamp=env.time.milliseconds() if timestamp is None else timestamp,
        partition_leader_epoch=0,
    )
    info = log.append_as_leader(marker, leader_epoch, origin=origin)
    assert info.first_offset is not None
    return info.first_offset


def commit(env: Env, log: Log, producer_id: int, producer_epoch: int = 0, origin: str = "coordinator",
           leader_epoch: int = 0) -> int:
    return append_marker(env, log, producer_id, ControlRecordType.COMMIT, producer_epoch, origin=origin,
                         leader_epoch=leader_epoch)


def abort(env: Env, log: Log, producer_id: int, producer_epoch: int = 0, origin: str = "coordinator",
          leader_epoch: int = 0) -> int:
    return append_marker(env, log, producer_id, ControlRecordType.ABORT, producer_epoch, origin=origin,
                         leader_epoch=leader_epoch)


def to_clean(
    log: Log, first_dirty: int, uncleanable: int | None = None, need_compaction_now: bool = False
) -> LogToClean:
    return LogToClean(
        TP,
        log,
        first_dirty,
        log.active_segment.base_offset if uncleanable is None else uncleanable,
        need_compaction_now,
    )


def run_two_pass_clean(
    cleaner: Cleaner,
    log_to_clean: LogToClean,
    current_time: int,
    tombstone_retention_ms: int = TOMBSTONE_RETENTION_MS,
) -> int:
    """Kafka's ``runTwoPassClean``: the first pass sets delete horizons, the second (past them) removes."""
    cleaner.do_clean(log_to_clean, current_time)
    return cleaner.do_clean(log_to_clean, current_time + tombstone_retention_ms + 1)[0]


#: The framing of a snappy message set in Kafka's legacy formats (xerial's stream header, version 1).
XERIAL_HEADER = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)


def decompress_legacy(codec: str, data: bytes) -> bytes:
    if codec == "gzip":
        return gzip.decompress(data)
    assert data.startswith(XERIAL_HEADER)
    out, position = b"", len(XERIAL_HEADER)
    while position < len(data):
        size = struct.unpack_from(">i", data, position)[0]
        out += bytes(cramjam.snappy.decompress_raw(data[position + 4 : position + 4 + size]))
        position += 4 + size
    return out

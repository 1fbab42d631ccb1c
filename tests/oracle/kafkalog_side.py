"""kafkalog's side of the oracle: the runner's protocol (``docs/oracle.rst``) answered by kafkalog's ``Log`` and
cleaner.

:class:`KafkalogRunner` takes the same requests as the Java runner (``tests/oracle/jvm.py``'s ``KafkaRunner``) and
answers the same JSON: ``{"cmd": "start", "dir", "config", "time_ms"}``, ``{"cmd": "op", "op"}`` and ``{"cmd":
"end"}``, each answered with the log's state after it, an op with its ``result`` or, where kafkalog raised one of
its errors, ``{"error": {"class", "message"}}`` with the class Kafka would have thrown (:func:`kafka_class_name`).
Each op is applied as the contract says the runner applies it to Kafka's ``UnifiedLog``:

* ``append`` and ``marker`` append the bytes given in the request's ``"input"`` (base64: the batch Kafka's own
  ``MemoryRecordsBuilder`` made, which the runner answered) or, without one, a batch kafkalog builds the way
  Kafka's producer builds it (:func:`build_append_records`, :func:`build_marker_records`); the bytes appended are
  answered as ``"input"`` either way;
* ``clean`` is one cleaning by Kafka's ``Cleaner`` as its thread would run it now: ``cleanable_offsets`` from the
  last end offset cleaned (none at first), a ``SkimpyOffsetMap`` of 4 MiB (MD5), I/O buffers of 64 KiB (at most
  1 MiB), load factor 0.9 and no throttling; nothing cleanable (no whole segment in the dirty range) answers
  ``{"endOffset": null}`` without cleaning;
* ``reopen`` closes the log (clean) or abandons it as a crash leaves it (unclean: :meth:`Log.close_handlers
  <kafkalog.log.unified_log.Log.close_handlers>`, which writes nothing), damages the last segment's ``.log`` if
  asked, and opens it again with the same clock; the tasks the old log left queued are dropped, unrun (a
  restarted broker's new scheduler), and so are those of a log at ``end``.

One adaptation, documented in ``docs/oracle.rst``: kafkalog's high watermark follows the log end offset until set
(its documented deviation, :attr:`Log.high_watermark <kafkalog.log.unified_log.Log.high_watermark>`); Kafka's
``UnifiedLog`` starts it at the log start offset.  Each open here sets it there, as Kafka's constructor does, so
the two logs are in the same state from the start.
"""

from __future__ import annotations

import base64
import json
import re
import traceback
from pathlib import Path
from typing import Any

from kafkalog.cleaner import Cleaner
from kafkalog.cleaner.manager import LogToClean, cleanable_offsets
from kafkalog.cleaner.offset_map import SkimpyOffsetMap
from kafkalog.cleaner.throttler import Throttler
from kafkalog.config.log_config import LogConfig
from kafkalog.errors import KafkaLogError
from kafkalog.fetch import FetchDataInfo
from kafkalog.fsutil import DirLock
from kafkalog.log import Log
from kafkalog.log.append_info import LogAppendInfo as _LogAppendInfo
from kafkalog.producer_state import ProducerStateManagerConfig
from kafkalog.record import MemoryRecords
from kafkalog.record.types import ControlRecordType, EndTransactionMarker
from kafkalog.scheduler import MockTime
from tests.oracle.scenario import InvalidOp, canonical_op

__all__ = [
    "CLEANER_DEDUPE_BUFFER_SIZE",
    "DEFAULT_PRODUCER_ID_EXPIRATION_MS",
    "KafkalogRunner",
    "build_append_records",
    "build_marker_records",
    "kafka_class_name",
]

#: The runner's producer-state settings (Kafka's broker defaults, or the scenario's ``producer.id.expiration.ms``).
DEFAULT_PRODUCER_ID_EXPIRATION_MS = 86_400_000
MAX_TRANSACTION_TIMEOUT_MS = 900_000
PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS = 600_000

#: The cleaner of the ``clean`` op (the contract's numbers).
CLEANER_DEDUPE_BUFFER_SIZE = 4 * 1024 * 1024
CLEANER_IO_BUFFER_SIZE = 64 * 1024
CLEANER_MAX_IO_BUFFER_SIZE = 1024 * 1024
CLEANER_LOAD_FACTOR = 0.9

#: kafkalog's error classes whose Kafka exception is not the name with ``Error`` made ``Exception``.
_KAFKA_CLASS_NAMES = {
    # Kafka's validator wraps the InvalidTimestampException in the RecordValidationException it throws.
    "InvalidTimestampError": "RecordValidationException",
    "UnsupportedCompressionError": "UnsupportedCompressionTypeException",
    "ConfigError": "ConfigException",
}

_SEGMENT_LOG = re.compile(r"^\d{20}\.log$")


def kafka_class_name(error: BaseException) -> str:
    """The simple name of the exception Kafka throws where kafkalog raised ``error``: kafkalog keeps Kafka's names
    with ``Exception`` spelled ``Error`` (``kafkalog.errors``), save the few of :data:`_KAFKA_CLASS_NAMES`; anything
    but a kafkalog error (a crash) keeps its Python name."""
    name = type(error).__name__
    if not isinstance(error, KafkaLogError):
        return name
    if name in _KAFKA_CLASS_NAMES:
        return _KAFKA_CLASS_NAMES[name]
    if name.endswith("Error"):
        return name[: -len("Error")] + "Exception"
    return name


def _text(value: str | None) -> bytes | None:
    return None if value is None else value.encode("utf-8")


def build_append_records(op: dict[str, Any], log_end_offset: int) -> MemoryRecords:
    """The batch an ``append`` op stands for, built as Kafka's producer builds it (Kafka:
    ``MemoryRecords.withRecords``): CreateTime, the op's magic and codec, the producer's id, epoch, first sequence
    and transactional flag, the leader epoch as the partition leader epoch (v2), and base offset 0 for a leader
    (who assigns the offsets) or ``base_offset`` (default ``log_end_offset``) for a follower."""
    producer = op["producer"]
    base_offset = 0
    if op["origin"] == "replication":
        base_offset = log_end_offset if op["base_offset"] is None else op["base_offset"]
    records = [(_text(r["key"]), _text(r["value"]), r["timestamp"],
                [(name, value.encode("utf-8")) for name, value in r["headers"].items()]) for r in op["records"]]
    v2 = op["magic"] == 2
    return MemoryRecords.with_records(
        records, magic=op["magic"], compression=op["compression"], base_offset=base_offset,
        producer_id=producer["id"] if producer else -1, producer_epoch=producer["epoch"] if producer else -1,
        base_sequence=producer["sequence"] if producer else -1,
        is_transactional=bool(producer and producer["transactional"]),
        partition_leader_epoch=op["leader_epoch"] if v2 else -1)


def build_marker_records(op: dict[str, Any], now_ms: int) -> MemoryRecords:
    """The control batch of a ``marker`` op (Kafka: ``MemoryRecords.withEndTransactionMarker(now, leader epoch,
    producer id, producer epoch, EndTransactionMarker(type, coordinator epoch))``)."""
    control_type = ControlRecordType.COMMIT if op["type"] == "commit" else ControlRecordType.ABORT
    return MemoryRecords.with_end_transaction_marker(
        op["producer"]["id"], op["producer"]["epoch"], EndTransactionMarker(control_type, op["coordinator_epoch"]),
        timestamp=now_ms, partition_leader_epoch=op["leader_epoch"])


def _append_info(info: _LogAppendInfo) -> dict[str, Any]:
    """Kafka's ``LogAppendInfo``, every field, under its Java name (the contract's result of an append)."""
    stats = info.record_validation_stats
    return {
        "firstOffset": -1 if info.first_offset is None else info.first_offset,
        "lastOffset": info.last_offset,
        "lastLeaderEpoch": info.last_leader_epoch,
        "maxTimestamp": info.max_timestamp,
        "shallowOffsetOfMaxTimestamp": info.shallow_offset_of_max_timestamp,
        "logAppendTime": info.log_append_time,
        "logStartOffset": info.log_start_offset,
        # Conversion time is the runtime's: always 0, on both sides.
        "recordValidationStats": {"temporaryMemoryBytes": stats.temporary_memory_bytes,
                                  "numRecordsConverted": stats.num_records_converted, "conversionTimeNanos": 0},
        "sourceCompression": info.source_compression.kafka_name,
        "validBytes": info.valid_bytes,
        "lastOffsetOfFirstBatch": info.last_offset_of_first_batch,
        "recordErrors": [{"batchIndex": e.batch_index, "message": e.message} for e in info.record_errors],
        "errorMessage": None,
        # UnifiedLog never changes it: the Partition above does.
        "leaderHwChange": "NONE",
        "shallowCount": info.shallow_count,
    }


def _fetch_result(info: FetchDataInfo) -> dict[str, Any]:
    metadata = info.fetch_offset_metadata
    records = info.records
    data = records.buffer if isinstance(records, MemoryRecords) else records.read_bytes()
    aborted = info.aborted_transactions
    return {
        "fetchOffsetMetadata": {"messageOffset": metadata.message_offset,
                                "segmentBaseOffset": metadata.segment_base_offset,
                                "relativePositionInSegment": metadata.relative_position_in_segment},
        "records": base64.b64encode(bytes(data)).decode("ascii"),
        "firstEntryIncomplete": info.first_entry_incomplete,
        "abortedTransactions": None if aborted is None else [
            {"producerId": txn.producer_id, "firstOffset": txn.first_offset} for txn in aborted],
    }


def last_segment_log_file(directory: Path) -> Path | None:
    """The ``.log`` file of the segment with the highest base offset in ``directory`` (the "last segment" of a
    torn or corrupted tail), or ``None`` when there is none."""
    logs = sorted(p for p in directory.iterdir() if _SEGMENT_LOG.match(p.name))
    return logs[-1] if logs else None


def damage_tail(directory: Path, truncate_bytes: int, corrupt_byte: int) -> None:
    """What a crash does to the last segment's ``.log``: cut ``truncate_bytes`` off its end (at most all of it),
    then flip every bit of the byte ``corrupt_byte`` places back from the new end (1 = the last; 0 = none, and a
    position before the file's start damages nothing)."""
    if not truncate_bytes and not corrupt_byte:
        return
    path = last_segment_log_file(directory)
    if path is None:
        return
    with path.open("r+b") as f:
        size = f.seek(0, 2)
        if truncate_bytes:
            size = max(0, size - truncate_bytes)
            f.truncate(size)
        if corrupt_byte and corrupt_byte <= size:
            f.seek(size - corrupt_byte)
            byte = f.read(1)[0]
            f.seek(size - corrupt_byte)
            f.write(bytes([byte ^ 0xFF]))


class KafkalogRunner:
    """The kafkalog twin of ``KafkaRunner``: one log at a time, driven by the protocol's requests.

    A context manager; :meth:`close` abandons an open log's files (as ``KafkaRunner.close`` ends the JVM).
    """

    def __init__(self) -> None:
        self.log: Log | None = None
        self.time: MockTime | None = None
        self.dir: Path | None = None
        self._config: LogConfig | None = None
        self._producer_config: ProducerStateManagerConfig | None = None
        self._last_clean_offset: int | None = None
        # The log dir's lock, held from start to end as a LogManager holds it: the log is opened under it, so its
        # close is UnifiedLog.close (a log holding its dir itself flushes first, as LogManager.shutdown does).
        self._dir_lock: DirLock | None = None

    def __enter__(self) -> KafkalogRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release an open log's files without writing (the JVM's end leaves Kafka's as they are) and stop."""
        if self.log is not None:
            self.log.close_handlers()
            self.log = None
        self._release_dir_lock()
        if self.time is not None:
            self.time.scheduler.shutdown()
            self.time = None

    # -- the protocol -------------------------------------------------------------------------------

    def request(self, message: dict[str, Any]) -> dict[str, Any]:
        """Answer one request as the runner does (see the module docstring)."""
        cmd = message.get("cmd")
        if cmd == "start":
            return self._start(message)
        if self.log is None or self.time is None:
            return {"fatal": f"no log: {cmd!r} before start"}
        if cmd == "op":
            return self._op(message["op"], message.get("input"))
        if cmd == "end":
            log, self.log = self.log, None
            self._drop_queued_tasks()
            log.close()
            self._release_dir_lock()
            state = self.state(log)
            self.time = None
            return {"state": state}
        return {"fatal": f"unknown cmd {cmd!r}"}

    def _release_dir_lock(self) -> None:
        if self._dir_lock is not None:
            self._dir_lock.release()
            self._dir_lock = None

    def _start(self, message: dict[str, Any]) -> dict[str, Any]:
        if self.log is not None:
            return {"fatal": "start while a log is open"}
        directory = Path(message["dir"])
        if directory.exists():
            return {"fatal": f"the partition dir {directory} exists already"}
        props = dict(message.get("config", {}))
        expiration = int(props.pop("producer.id.expiration.ms", DEFAULT_PRODUCER_ID_EXPIRATION_MS))
        time_ms = int(message["time_ms"])
        self.time = MockTime(current_time_ms=time_ms, current_high_res_time_ns=time_ms * 1_000_000)
        self._config = LogConfig(props)
        self._producer_config = ProducerStateManagerConfig(expiration, transaction_verification_enabled=False)
        self._last_clean_offset = None
        self.dir = directory
        directory.parent.mkdir(parents=True, exist_ok=True)
        self._dir_lock = DirLock(directory.parent, holder="the oracle's kafkalog runner")
        self.log = self._open(log_start_offset=0, recovery_point=0, clean=True)
        return {"state": self.state(self.log)}

    def _open(self, *, log_start_offset: int, recovery_point: int, clean: bool) -> Log:
        assert self.time is not None and self.dir is not None
        log = Log(self.dir, self._config, log_start_offset=log_start_offset, recovery_point=recovery_point,
                  scheduler=self.time.scheduler, time=self.time, had_clean_shutdown=clean,
                  producer_state_manager_config=self._producer_config,
                  max_transaction_timeout_ms=MAX_TRANSACTION_TIMEOUT_MS,
                  producer_id_expiration_check_interval_ms=PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS,
                  dir_lock=self._dir_lock)
        # Kafka's UnifiedLog starts its high watermark at the log start offset (see the module docstring).
        log.update_high_watermark(log.log_start_offset)
        return log

    def _op(self, op: Any, given_input: str | None) -> dict[str, Any]:
        assert self.log is not None
        try:
            # The wire form leaves optional fields out (scenario.wire_op): complete it, as the runner reads it.
            op = canonical_op(op)
        except InvalidOp as e:
            return {"fatal": f"op {json.dumps(op)[:300]}: {e.field + ': ' if e.field else ''}{e.reason}"}
        answer: dict[str, Any] = {}
        try:
            answer["result"] = self._apply(op, given_input, answer)
        except KafkaLogError as e:
            answer.pop("result", None)
            answer["error"] = {"class": kafka_class_name(e), "message": str(e)}
        except Exception as e:
            # Not one of kafkalog's errors: a crash, which the comparison shows as this op's difference.
            answer["error"] = {"class": type(e).__name__, "message": "".join(traceback.format_exception(e))}
        answer["state"] = self.state(self.log)
        return answer

    def _apply(self, op: dict[str, Any], given_input: str | None, answer: dict[str, Any]) -> dict[str, Any]:
        log, time = self.log, self.time
        assert log is not None and time is not None
        kind = op["op"]
        if kind in ("append", "marker"):
            if given_input is not None:
                records = MemoryRecords(base64.b64decode(given_input))
            elif kind == "append":
                records = build_append_records(op, log.log_end_offset)
            else:
                records = build_marker_records(op, time.milliseconds())
            answer["input"] = base64.b64encode(bytes(records.buffer)).decode("ascii")
            if kind == "marker":
                info = log.append_as_leader(records, op["leader_epoch"], origin="coordinator")
            elif op["origin"] == "replication":
                info = log.append_as_follower(records)
            else:
                info = log.append_as_leader(records, op["leader_epoch"], origin=op["origin"])
            return _append_info(info)
        if kind == "roll":
            return {"activeSegment": log.roll().base_offset}
        if kind == "truncate_to":
            return {"truncated": log.truncate_to(op["offset"])}
        if kind == "truncate_fully_and_start_at":
            log.truncate_fully_and_start_at(op["offset"])
            return {}
        if kind == "delete_records":
            return {"incremented": log.maybe_increment_log_start_offset(op["offset"])}
        if kind == "advance_time":
            time.sleep(op["ms"])
            return {"timeMs": time.milliseconds()}
        if kind == "update_high_watermark":
            return {"highWatermark": log.update_high_watermark(op["offset"])}
        if kind == "retention":
            return {"deleted": log.delete_old_segments()}
        if kind == "clean":
            return self._clean(log, time)
        if kind == "flush":
            log.flush()
            return {"recoveryPoint": log.recovery_point}
        if kind == "reopen":
            self._reopen(op)
            return {}
        if kind == "read":
            fetched = log.read(op["offset"], op["max_bytes"], isolation=op["isolation"],
                               min_one_message=op["min_one_message"])
            return _fetch_result(fetched)
        raise ValueError(f"unknown op {kind!r}")  # the scenario loader lets none through

    def _clean(self, log: Log, time: MockTime) -> dict[str, Any]:
        now = time.milliseconds()
        offsets = cleanable_offsets(log, self._last_clean_offset, now)
        cleanable = LogToClean(log.topic_partition, log, offsets.first_dirty_offset,
                               offsets.first_uncleanable_dirty_offset)
        if cleanable.cleanable_bytes == 0:
            return {"endOffset": None}
        cleaner = Cleaner(0, SkimpyOffsetMap(CLEANER_DEDUPE_BUFFER_SIZE, "MD5"), CLEANER_IO_BUFFER_SIZE,
                          CLEANER_MAX_IO_BUFFER_SIZE, CLEANER_LOAD_FACTOR,
                          Throttler(float("inf"), 300, time), time, lambda _tp: None)
        end_offset, stats = cleaner.clean(cleanable)
        self._last_clean_offset = end_offset
        return {"endOffset": end_offset, "firstDirtyOffset": cleanable.first_dirty_offset,
                "firstUncleanableOffset": cleanable.first_uncleanable_offset,
                "messagesRead": stats.messages_read, "bytesRead": stats.bytes_read,
                "messagesWritten": stats.messages_written, "bytesWritten": stats.bytes_written,
                "invalidMessagesRead": stats.invalid_messages_read}

    def _reopen(self, op: dict[str, Any]) -> None:
        log = self.log
        assert log is not None and self.dir is not None
        log_start_offset = log.log_start_offset
        if op["clean_shutdown"]:
            log.close()
            recovery_point = log.recovery_point
        else:
            recovery_point = log.recovery_point if op["recovery_point"] is None else op["recovery_point"]
            log.close_handlers()
            damage_tail(self.dir, op["truncate_bytes"], op["corrupt_byte"])
        self.log = None
        self._drop_queued_tasks()
        self.log = self._open(log_start_offset=log_start_offset, recovery_point=recovery_point,
                              clean=op["clean_shutdown"])

    def _drop_queued_tasks(self) -> None:
        """Forget every task the log left queued (delayed deletions, the producer-expiration check) without
        running it, as a restarted broker starts with a new scheduler: the runner does this at ``reopen`` and at
        ``end`` (so a snapshot's delayed deletion does not run at the end here and not there).  The clock goes on
        from the same instant."""
        assert self.time is not None
        self.time = MockTime(current_time_ms=self.time.milliseconds(),
                             current_high_res_time_ns=self.time.nanoseconds())

    # -- the state ----------------------------------------------------------------------------------

    def state(self, log: Log) -> dict[str, Any]:
        """The contract's state of ``log`` (its offsets, segments, producers, leader epochs and the clock)."""
        assert self.time is not None
        cache = log.leader_epoch_cache
        return {
            "logStartOffset": log.log_start_offset,
            "logEndOffset": log.log_end_offset,
            "highWatermark": log.high_watermark,
            "lastStableOffset": log.last_stable_offset,
            "firstUnstableOffset": log.first_unstable_offset,
            "recoveryPoint": log.recovery_point,
            "segments": [[segment.base_offset, segment.size()] for segment in log.log_segments()],
            "activeProducers": [
                [producer_id, entry.producer_epoch, entry.last_seq, entry.last_data_offset,
                 entry.current_txn_first_offset]
                for producer_id, entry in sorted(log.active_producers().items())],
            "leaderEpochs": [] if cache is None else [[e.epoch, e.start_offset] for e in cache.epoch_entries()],
            "timeMs": self.time.milliseconds(),
        }

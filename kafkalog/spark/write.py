"""``df.write.format("kafkalog").mode("append").save(log_dir)``: appending a DataFrame to Kafka logs.

The write runs in two phases, as Spark's data-source protocol intends:

1. **tasks stage**: each Spark task turns its rows into record batches (v2, with the producer codec,
   encoded by the ``encode_v2_records`` kernel, so compression runs in parallel) and writes them to a
   staging file per topic-partition inside the partition dir, ``<job>-<attempt>.kafkalog-staging``.
   A broker ignores files of that name (only ``.log``, index, ``.swap``, ``.cleaned`` and ``.deleted``
   files are its own), and so does kafkalog;
2. **the driver commits**: with the log dir's lock held (a running broker or another writer is refused
   with Kafka's message), it appends each partition's staged batches through :class:`~kafkalog.log.unified_log.Log`
   in task order (one writer per topic-partition: offsets are assigned, the topic's
   ``compression.type`` and ``message.format.version`` applied and the size limits checked by
   ``LogValidator``, segments rolled), flushes, checkpoints, and deletes the staging files.

So a failed or retried task leaves nothing in the log (an abort deletes the job's staging files), a
write is all-or-nothing per partition, and no two processes ever append to one log at once.

Columns: ``value`` (binary or string, required), ``key`` (binary or string), ``topic`` (string: else
the ``topic`` option), ``partition`` (int: else the key's hash, Kafka's default partitioner, over the
topic's partitions; keyless records stay on one partition per task, as Kafka's sticky partitioner
does), ``timestamp`` (timestamp: else the time of the write), ``headers``
(array<struct<key: string, value: binary>>); ``offset`` and ``timestampType``, the columns a read has that
a write cannot keep, are ignored, so a DataFrame read from kafkalog is written back as it is.

Options: ``topic``, ``numPartitions`` (for a new topic; an existing one keeps its count), ``compression`` (the
producer's codec: none, gzip, snappy, lz4, zstd; default: the topic's ``compression.type`` when that names a
codec), ``batchBytes`` (records per batch, by encoded size; default 1 MiB, within ``max.message.bytes``), and
any topic config by Kafka's name (``segment.bytes``, ``compression.type``, ``message.format.version``,
``max.message.bytes``, ``message.timestamp.type``, ``cleanup.policy`` ...).
"""

from __future__ import annotations

import contextlib
import os
import random
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..clients.partitioner import partition_for_key
from ..config.log_config import LogConfig
from ..errors import KafkaLogError
from ..file_message_set import FileMessageSet
from ..fsutil import DirLock
from ..record import CompressionType, MemoryRecords
from ..tools.log_dir_writer import LogDirWriter
from ..tools.partition_dir import classify_dir, partition_dirs
from ..topic import TopicPartition, parse_topic_partition_name
from .options import SparkOptionError, check_option_names

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["STAGING_SUFFIX", "WRITE_OPTIONS", "StagedFile", "WriteOptions", "WritePlan", "commit", "stage"]

STAGING_SUFFIX = ".kafkalog-staging"
DEFAULT_BATCH_BYTES = 1024 * 1024
#: Options of the writer itself, as the docs spell them; every other option with a '.' is a topic config
#: (``LogConfig`` refuses a name Kafka does not have); any other option is an error.
WRITE_OPTIONS = ("path", "topic", "numPartitions", "compression", "batchBytes")
_WRITER_OPTIONS = {name.lower() for name in WRITE_OPTIONS}
_COLUMNS = {"key", "value", "topic", "partition", "timestamp", "headers"}
#: Columns a kafkalog (or Spark Kafka source) read has and a write cannot keep: the log assigns offsets,
#: and a written record's timestamp is CreateTime.  Spark's Kafka sink ignores them too, so a DataFrame
#: read from one log can be written to another as it is.
_READ_ONLY_COLUMNS = {"offset", "timestampType"}


@dataclass(frozen=True)
class WriteOptions:
    """What a write was asked for, checked on the driver before any task runs."""

    root: str
    topic: str | None
    fixed_partition: int | None
    num_partitions: int | None
    compression: CompressionType
    batch_bytes: int
    topic_config: dict[str, str]

    @classmethod
    def parse(cls, options: Mapping[str, str], columns: list[str]) -> WriteOptions:
        options = {k.lower(): v for k, v in options.items()}
        check_option_names(options, WRITE_OPTIONS, "a kafkalog write", accept=lambda key: "." in key)
        path = options.get("path")
        if not path:
            raise SparkOptionError("no path given: save() to a log dir (or a partition dir)")
        unknown = [c for c in columns if c not in _COLUMNS and c not in _READ_ONLY_COLUMNS]
        if unknown:
            # Unlike Spark's Kafka sink, which ignores any other column, a column kafkalog does not know is
            # refused: a misspelt 'headers' would otherwise be dropped without a word.
            raise SparkOptionError(f"the kafkalog writer takes the columns {sorted(_COLUMNS)} (and ignores "
                                   f"{sorted(_READ_ONLY_COLUMNS)}, as a read gives them); unknown: {unknown}")
        if "value" not in columns:
            raise SparkOptionError("a DataFrame written to kafkalog needs a 'value' column (binary or string)")
        root, topic, fixed = Path(path), options.get("topic"), None
        if root.is_dir() and _is_partition_dir(root):
            tp = parse_topic_partition_name(root.name)
            root, topic, fixed = root.parent, tp.topic, tp.partition
            if "topic" in columns or "partition" in columns:
                raise SparkOptionError(f"{path} is a partition dir: every row goes to {tp}, so the DataFrame "
                                       "may not have topic or partition columns")
        if topic is None and "topic" not in columns:
            raise SparkOptionError("no topic: give a 'topic' column or the topic option")
        topic_config = {k: v for k, v in options.items() if k not in _WRITER_OPTIONS and "." in k}
        try:
            config = LogConfig(topic_config)
        except (KafkaLogError, ValueError) as e:
            raise SparkOptionError(f"bad topic config: {e}") from None
        codec_name = options.get("compression")
        if codec_name is None:
            compression = config.compression or CompressionType.NONE
        else:
            try:
                compression = CompressionType.of(codec_name.strip().lower())
            except (KafkaLogError, ValueError, KeyError):
                raise SparkOptionError(f"compression must be none, gzip, snappy, lz4 or zstd, got {codec_name!r}"
                                       ) from None
        batch_bytes = int(options.get("batchbytes", DEFAULT_BATCH_BYTES))
        if batch_bytes <= 0:
            raise SparkOptionError(f"batchBytes must be positive, got {batch_bytes}")
        num_partitions = options.get("numpartitions")
        return cls(str(root), topic, fixed, int(num_partitions) if num_partitions is not None else None,
                   compression, min(batch_bytes, max(config.max_message_size // 2, 1)), topic_config)


def _is_partition_dir(path: Path) -> bool:
    try:
        return classify_dir(path) == "partition"
    except KafkaLogError:
        return False


@dataclass(frozen=True)
class StagedFile:
    """A task's staged batches for one partition (a task's commit message carries a list of them)."""

    topic_partition: TopicPartition
    path: str
    task_order: int
    records: int
    size: int


@dataclass(frozen=True)
class WritePlan:
    """What the driver settles before the tasks run: the job id and each topic's partition count."""

    options: WriteOptions
    job_id: str
    partition_counts: dict[str, int]
    #: The partition dirs there before the job: the ones a failed job created (to stage) are removed.
    existing: frozenset[str]

    @classmethod
    def create(cls, options: WriteOptions) -> WritePlan:
        root = Path(options.root)
        if root.exists():
            # Fail before any task runs when the log dir is in use; the commit takes the lock for real.
            DirLock(root).release()
        counts: dict[str, int] = {}
        existing = frozenset(p.name for p in partition_dirs(root)) if root.is_dir() else frozenset()
        if root.is_dir():
            for directory in partition_dirs(root):
                if directory.name.endswith(("-delete", "-future")):
                    continue
                tp = parse_topic_partition_name(directory.name)
                counts[tp.topic] = max(counts.get(tp.topic, 0), tp.partition + 1)
        return cls(options, uuid.uuid4().hex, counts, existing)

    def partitions_of(self, topic: str) -> int:
        if topic in self.partition_counts:
            return self.partition_counts[topic]
        return self.options.num_partitions or 1


class _PartitionStage:
    """Rows of one partition waiting to be encoded, and the staging file they go to."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.file: Any = None
        self.pending: list[tuple[Any, ...]] = []
        self.pending_bytes = 0
        self.records = 0
        self.size = 0


def stage(plan: WritePlan, batches: Iterator[pa.RecordBatch], task_order: int) -> list[StagedFile]:
    """A task's part of the write: encode its rows into batches in staging files; returns what it staged."""
    options = plan.options
    attempt = uuid.uuid4().hex[:12]
    stages: dict[TopicPartition, _PartitionStage] = {}
    sticky: dict[str, int] = {}
    root = Path(options.root)

    def flush(stage_: _PartitionStage) -> None:
        if not stage_.pending:
            return
        records = MemoryRecords.with_records(stage_.pending, compression=options.compression)
        data = records.buffer
        if stage_.file is None:
            stage_.path.parent.mkdir(parents=True, exist_ok=True)
            stage_.file = open(stage_.path, "wb")  # noqa: SIM115 - closed when the task ends
        stage_.file.write(data)
        stage_.size += len(data)
        stage_.records += len(stage_.pending)
        stage_.pending = []
        stage_.pending_bytes = 0

    try:
        for batch in batches:
            columns = batch.schema.names
            n = batch.num_rows
            values = _bytes_column(batch, "value")
            keys = _bytes_column(batch, "key") if "key" in columns else [None] * n
            topics = batch.column("topic").to_pylist() if "topic" in columns else [options.topic] * n
            partitions = batch.column("partition").to_pylist() if "partition" in columns else [None] * n
            timestamps = _timestamps(batch) if "timestamp" in columns else None
            headers = _headers(batch) if "headers" in columns else [None] * n
            now = _now_ms()
            for i in range(n):
                topic = topics[i]
                if topic is None:
                    raise KafkaLogError(f"row {i} of a batch has a null topic and no topic option is set")
                partition = partitions[i]
                if options.fixed_partition is not None:
                    partition = options.fixed_partition
                elif partition is None:
                    count = plan.partitions_of(topic)
                    key = keys[i]
                    if key is not None:
                        partition = partition_for_key(key, count)
                    else:
                        partition = sticky.setdefault(topic, random.randrange(count))
                tp = TopicPartition(topic, int(partition))
                stage_ = stages.get(tp)
                if stage_ is None:
                    stage_ = _PartitionStage(root / str(tp) / f"{plan.job_id}-{attempt}{STAGING_SUFFIX}")
                    stages[tp] = stage_
                timestamp = timestamps[i] if timestamps is not None and timestamps[i] is not None else now
                value, key = values[i], keys[i]
                stage_.pending.append((key, value, timestamp, headers[i] or []))
                stage_.pending_bytes += (len(value) if value else 0) + (len(key) if key else 0) + 16
                if stage_.pending_bytes >= options.batch_bytes:
                    flush(stage_)
        for stage_ in stages.values():
            flush(stage_)
    finally:
        for stage_ in stages.values():
            if stage_.file is not None:
                stage_.file.close()
    return [StagedFile(tp, str(s.path), task_order, s.records, s.size) for tp, s in stages.items() if s.records]


def _bytes_column(batch: pa.RecordBatch, name: str) -> list[bytes | None]:
    import pyarrow as pa

    column = batch.column(name)
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        return [None if v is None else v.encode() for v in column.to_pylist()]
    if pa.types.is_binary(column.type) or pa.types.is_large_binary(column.type):
        return list(column.to_pylist())
    raise KafkaLogError(f"column {name!r} must be binary or string, not {column.type}")


def _timestamps(batch: pa.RecordBatch) -> list[int | None]:
    import pyarrow as pa
    import pyarrow.compute as pc

    column = batch.column("timestamp")
    if pa.types.is_timestamp(column.type):
        micros = pc.cast(column, pa.timestamp("us", tz=column.type.tz)).cast(pa.int64())
        return [None if v is None else v // 1000 for v in micros.to_pylist()]
    if pa.types.is_integer(column.type):
        return list(column.to_pylist())
    raise KafkaLogError(f"column 'timestamp' must be a timestamp or milliseconds (long), not {column.type}")


def _headers(batch: pa.RecordBatch) -> list[list[tuple[str, bytes | None]] | None]:
    out: list[list[tuple[str, bytes | None]] | None] = []
    for headers in batch.column("headers").to_pylist():
        if headers is None:
            out.append(None)
            continue
        row = []
        for header in headers:
            value = header.get("value")
            row.append((header["key"], value.encode() if isinstance(value, str) else value))
        out.append(row)
    return out


def _now_ms() -> int:
    import time

    return int(time.time() * 1000)


def commit(plan: WritePlan, staged: list[StagedFile]) -> dict[str, int]:
    """The driver's part: append every partition's staged batches in task order, under the log dir's lock,
    then delete the staging files.  Returns records appended per partition name."""
    options = plan.options
    by_partition: dict[TopicPartition, list[StagedFile]] = {}
    for item in staged:
        by_partition.setdefault(item.topic_partition, []).append(item)
    appended: dict[str, int] = {}
    config = LogConfig(options.topic_config)
    try:
        with LogDirWriter(options.root, config) as writer:
            for tp in sorted(by_partition, key=lambda t: (t.topic, t.partition)):
                log = writer.log(tp)
                for item in sorted(by_partition[tp], key=lambda s: (s.task_order, s.path)):
                    with FileMessageSet(item.path, writable=False) as source:
                        # One producer batch an append, as a broker receives them.
                        for _position, records in source.memory_chunks(chunk_bytes=1):
                            log.append(records)
                appended[str(tp)] = appended.get(str(tp), 0) + sum(s.records for s in by_partition[tp])
    finally:
        discard(plan, remove_new_dirs=not appended)
    return appended


def discard(plan: WritePlan, remove_new_dirs: bool = True) -> None:
    """Delete every staging file of the job (committed, aborted, or left by a failed task attempt), and,
    after a failed job, the partition dirs its tasks created that are empty again."""
    root = Path(plan.options.root)
    if not root.is_dir():
        return
    for directory in partition_dirs(root):
        for file in directory.glob(f"{plan.job_id}-*{STAGING_SUFFIX}"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(file)
        if remove_new_dirs and directory.name not in plan.existing:
            # Not empty: another writer's staging, or a log by now.
            with contextlib.suppress(OSError):
                directory.rmdir()

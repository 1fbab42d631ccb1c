"""The cleaner and the statistics as Spark jobs: one Spark task per partition, or per log dir.

``stats(spark, log_dirs)`` runs :func:`kafkalog.tools.stats.partition_stats` on every partition dir, read-only,
and returns a DataFrame with a row per partition.

``compact(spark, log_dirs)`` runs Kafka's cleaner (:meth:`kafkalog.cleaner.log_cleaner.LogCleaner.run_once`) on every
partition whose ``cleanup.policy`` compacts, until nothing is left to clean, and returns a DataFrame of the
:class:`~kafkalog.cleaner.stats.CleanerStats` of every round, and a row for every partition it did not compact,
saying why (its policy, or nothing to clean: Kafka's cleaner never cleans the active segment, which
``roll=True`` rolls first).  Which partitions compact is decided on the driver, before any task runs
(:func:`~kafkalog.tools.cleanup_policy.decide_cleanup`): the KRaft metadata log (and any Raft log) never; a
topic by the config the KRaft metadata log of its broker gives it, when the log dirs hold that log; ``config``
and ``topic_configs`` laid over that, winning; a partition whose policy neither says is not compacted.
One task a log dir (:func:`clean_log_dir`) holds its ``.lock`` while it cleans the dir's partitions one after
the other, as a broker's cleaner thread works under the broker's lock: log dirs are cleaned at once, and a
running broker is never cleaned under (a task waits up to ``lock_timeout_s`` for the lock, then fails).

What the user should know is logged on the driver (``kafkalog.spark.jobs``) at WARNING: a partition whose
policy is not known and the metadata log refused (one line a topic), a ``config``/``topic_configs`` policy that
overrides the metadata log's, and records dropped for having no key (per partition).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..cleaner import LogCleaner
from ..cleaner.config import CleanerConfig
from ..config.log_config import LogConfig
from ..errors import IllegalArgumentError, LogDirInUseError
from ..fsutil import DirLock
from ..log import Log
from ..partition_view.facts import Found
from ..partition_view.tiered import TieredPartition
from ..tools.cleanup_policy import CleanupDecision, decide_cleanup, raft_log
from ..tools.cluster_metadata import MetadataLogs
from ..tools.partition_dir import PartitionDir
from ..tools.stats import partition_stats, remote_partition_stats
from ..topic import TopicPartition
from ..urls.location import StorageLocation, is_url
from .options import SparkOptionError
from .plan import find_partitions

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["CLEANER_STATS_SCHEMA", "ROUND_SCHEMA", "STATS_SCHEMA", "clean_log_dir", "clean_partition", "compact",
           "stats"]

logger = logging.getLogger(__name__)

STATS_SCHEMA = ("topic string, partition int, dir string, segments int, size long, log_start_offset long, "
                "log_end_offset long, batches long, records long, min_timestamp long, max_timestamp long, "
                "magics map<string, long>, codecs map<string, long>, keyed_records long, distinct_keys long, "
                "tombstones long, first_dirty_offset long, dirty_ratio double")

#: The columns of a cleaning round, as :func:`clean_log_dir` returns them (``invalid_messages_read`` is Kafka's
#: ``CleanerStats.invalidMessagesRead``: the records dropped for having no key, the only invalid record its
#: cleaner counts).
ROUND_SCHEMA = ("topic string, partition int, round int, first_dirty_offset long, end_offset long, "
                "bytes_read long, bytes_written long, messages_read long, messages_written long, "
                "invalid_messages_read long, map_messages_read long, buffer_utilization double, "
                "elapsed_secs double, elapsed_index_secs double, size_before long, size_after long")

#: What :func:`compact` returns: a row per round, and a row per partition not compacted (``round`` 0, the
#: counts null, ``skipped`` saying why); every row says the ``cleanup_policy`` it was judged by (null when not
#: known) and where that came from (``policy_source``).
CLEANER_STATS_SCHEMA = ROUND_SCHEMA + ", cleanup_policy string, policy_source string, skipped string"
_ROUND_COLUMNS = len(ROUND_SCHEMA.split(","))


def _paths(log_dirs: str | Iterable[str]) -> tuple[str, ...]:
    return (log_dirs,) if isinstance(log_dirs, str) else tuple(str(p) for p in log_dirs)


def _partitions(log_dirs: str | Iterable[str]) -> list[tuple[TopicPartition, str]]:
    """The local partition dirs under ``log_dirs``; a URL is refused before it is looked at (these jobs write)."""
    paths = _paths(log_dirs)
    remote = [p for p in paths if is_url(p) and not p.lower().startswith("file:")]
    if remote:
        raise SparkOptionError(f"{remote[0]} is a URL: compaction writes, and kafkalog reads URLs only")
    return [(tp, str(path)) for tp, path in _broker_dirs(find_partitions(paths))]


def _broker_dirs(found: list[tuple[TopicPartition, Found]]) -> list[tuple[TopicPartition, Path | StorageLocation]]:
    """The partition dirs found; a partition of a tiered-storage layout is refused (these jobs read a broker's
    dirs; the data source reads tiered storage)."""
    for _tp, path in found:
        if isinstance(path, TieredPartition):
            raise SparkOptionError(f"{path} is tiered storage: this job reads a broker's log dirs; read tiered "
                                   "storage with spark.read.format('kafkalog')")
    return [(tp, path) for tp, path in found if not isinstance(path, TieredPartition)]


def stats(spark: SparkSession, log_dirs: str | Iterable[str],
          storage_options: Mapping[str, Any] | None = None) -> DataFrame:
    """Per-partition statistics of every partition under ``log_dirs`` (log dirs or partition dirs, local or
    URLs read with ``storage_options``: :mod:`kafkalog.urls`)."""
    paths = [path for _tp, path in _broker_dirs(find_partitions(_paths(log_dirs), storage_options=storage_options))]

    def run(chunk: Iterable[Path | StorageLocation]) -> Iterator[tuple[Any, ...]]:
        for path in chunk:
            s = remote_partition_stats(path) if isinstance(path, StorageLocation) else partition_stats(path)
            yield (s.topic, s.partition, s.dir, s.segments, s.size, s.log_start_offset, s.log_end_offset, s.batches,
                   s.records, s.min_timestamp, s.max_timestamp, s.magics, s.codecs, s.keyed_records,
                   s.distinct_keys, s.tombstones, s.first_dirty_offset, s.dirty_ratio)

    # Collected at once: the rows are few, and the DataFrame must not recompute them on every action.
    rows = spark.sparkContext.parallelize(paths, max(1, len(paths))).mapPartitions(run).collect()
    return spark.createDataFrame(rows, STATS_SCHEMA)


def _locked(log_dir: Path, timeout_s: float) -> DirLock:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return DirLock(log_dir, holder="a Spark clean task")
        except LogDirInUseError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.05)


def _clean_under(lock: DirLock, path: str, config: dict[str, str], dedupe_buffer_size: int,
                 roll: bool = False) -> list[tuple[Any, ...]]:
    """Clean one partition dir of the log dir ``lock`` holds until nothing is left to clean; a row of statistics
    per round.  With ``roll``, the log is rolled first when its active segment holds records (Kafka:
    ``UnifiedLog.roll``, as ``kafkalog clean --roll`` does), since Kafka's cleaner never cleans the active segment.
    The caller puts the clean-shutdown marker back once its logs are closed."""
    partition = PartitionDir.of(path)
    log_config = LogConfig({"min.cleanable.dirty.ratio": "0", **config})
    if not log_config.compact:
        return []
    cleaner_config = CleanerConfig(1, dedupe_buffer_size, 0.9, 1024 * 1024, log_config.max_message_size)
    rows: list[tuple[Any, ...]] = []
    tp = partition.topic_partition
    log = Log(partition.path, log_config, recovery_point=partition.recovery_point,
              log_start_offset=partition.log_start_offset, dir_lock=lock)
    try:
        if roll and log.active_segment.size() > 0:
            log.roll()
        cleaner = LogCleaner(cleaner_config, [partition.log_dir], {tp: log})
        round_ = 0
        while True:
            first_dirty = partition.cleaned_up_to(log.log_start_offset)
            size_before = log.size
            done = cleaner.run_once(max_rounds=1)
            if not done:
                break
            round_ += 1
            s = done[0]
            rows.append((tp.topic, tp.partition, round_, first_dirty, partition.cleaned_up_to(first_dirty),
                         s.bytes_read, s.bytes_written, s.messages_read, s.messages_written,
                         s.invalid_messages_read, s.map_messages_read, float(s.buffer_utilization),
                         float(s.elapsed_secs()), float(s.elapsed_index_secs()), size_before, log.size))
        # As a broker's shutdown flushes each log before its marker goes back (LogManager.shutdown).
        log.flush(including_offset=True)
    finally:
        log.close()
    return rows


def clean_partition(path: str, config: dict[str, str], dedupe_buffer_size: int = 128 * 1024 * 1024,
                    lock_timeout_s: float = 600.0, roll: bool = False) -> list[tuple[Any, ...]]:
    """Clean one partition dir until nothing is left to clean; a row of statistics per round (usable on its
    own; the job cleans a whole log dir at a time, :func:`clean_log_dir`)."""
    return clean_log_dir([(path, config)], dedupe_buffer_size, lock_timeout_s, roll)


def clean_log_dir(partitions: Iterable[tuple[str, dict[str, str]]], dedupe_buffer_size: int = 128 * 1024 * 1024,
                  lock_timeout_s: float = 600.0, roll: bool = False) -> list[tuple[Any, ...]]:
    """Clean partition dirs of one log dir, given with their configs, one after the other under one hold of
    the log dir's lock (the job's task); a row of statistics per round (:data:`ROUND_SCHEMA`).  Taking the lock
    once, rather than once a partition, is what a broker's cleaner thread does too: it works under the broker's
    lock.  The configs are taken as given (a partition whose ``cleanup.policy`` does not compact is left
    alone); :func:`compact` is what decides them.  ``roll`` rolls each log first (:func:`_clean_under`).

    Raises:
        IllegalArgumentError: a partition dir is a Raft log (the KRaft metadata log), whatever its config.
    """
    work = [(path, config) for path, config in partitions
            if LogConfig({"min.cleanable.dirty.ratio": "0", **config}).compact]
    for path, _config in work:
        raft = raft_log(path, PartitionDir.of(path).topic_partition)
        if raft is not None:
            raise IllegalArgumentError(f"{path} is not compacted: {raft}, a Raft log, which Kafka's cleaner never "
                                       "compacts")
    if not work:
        return []
    log_dirs = {PartitionDir.of(path).log_dir for path, _config in work}
    if len(log_dirs) != 1:
        raise ValueError(f"clean_log_dir cleans the partitions of one log dir, not of {len(log_dirs)}")
    lock = _locked(log_dirs.pop(), lock_timeout_s)
    try:
        rows = [row for path, config in work for row in _clean_under(lock, path, config, dedupe_buffer_size, roll)]
        lock.restore_clean_shutdown_marker()  # the first open removed it, if it was there
    finally:
        lock.release()
    return rows


def compact(spark: SparkSession, log_dirs: str | Iterable[str], config: Mapping[str, Any] | None = None, *,
            topic_configs: Mapping[str, Mapping[str, Any]] | None = None,
            dedupe_buffer_size: int = 128 * 1024 * 1024, lock_timeout_s: float = 600.0,
            roll: bool = False) -> DataFrame:
    """Compact every partition under ``log_dirs`` whose ``cleanup.policy`` compacts; one Spark task a
    log dir.  Returns the cleaner's statistics, a row per cleaning round, and a row per partition not compacted
    saying why (:data:`CLEANER_STATS_SCHEMA`): its policy does not compact, or is not known, or the cleaner
    found nothing to clean in it.

    As in Kafka, the active segment (the last one) is never cleaned, so a partition whose records past the
    cleaned part are all in it is not compacted; ``roll=True`` rolls each log first when its active segment
    holds records (as ``kafkalog clean --roll`` does), so that every record is cleaned.

    A partition's config is what the KRaft metadata log of its broker says of its topic, when ``log_dirs`` hold
    that log (the ``__cluster_metadata-0`` of its log dir, or of another log dir of the same broker), overlaid
    with ``config``, then with ``topic_configs[topic]`` (Kafka's topic config names): what is passed wins, and a
    warning is logged when it overrides the metadata log's ``cleanup.policy``.  There is no default policy: a
    partition neither the metadata log nor the arguments give one is not compacted (a ZooKeeper-mode broker's
    dirs, a copy without the metadata log: ``topic_configs={"orders": {"cleanup.policy": "compact"}}`` says it).
    The metadata log itself is never compacted.  All is decided on the driver, so a bad value fails before any
    task runs.
    """
    base = {k: str(v) for k, v in (config or {}).items()}
    overrides = {topic: {k: str(v) for k, v in c.items()} for topic, c in (topic_configs or {}).items()}
    found = _partitions(log_dirs)
    metadata_logs = MetadataLogs({Path(path).parent for _tp, path in found})
    decisions: dict[tuple[str, int], CleanupDecision] = {}
    work = []
    for tp, path in found:
        user = [("config", base), (f"topic_configs[{tp.topic!r}]", overrides.get(tp.topic, {}))]
        decision = decide_cleanup(path, tp, user=user, metadata_logs=metadata_logs, hint=_hint(tp.topic))
        decisions[(tp.topic, tp.partition)] = decision
        for note in decision.notes:
            logger.warning("compact: %s: %s", tp, note)
        if decision.config is not None:
            work.append((path, decision.config))
    _log_skipped(decisions.values())

    # One task a log dir: its partitions are cleaned one after the other under its lock in any case, and a task
    # a partition left task slots idle waiting for that lock (and paid a task's start and the lock's fsyncs
    # for each partition).
    by_log_dir: dict[Path, list[tuple[str, dict[str, str]]]] = {}
    for path, topic_config in work:
        by_log_dir.setdefault(PartitionDir.of(path).log_dir, []).append((path, topic_config))
    groups = list(by_log_dir.values())

    def run(chunk: Iterable[list[tuple[str, dict[str, str]]]]) -> Iterator[tuple[Any, ...]]:
        for group in chunk:
            yield from clean_log_dir(group, dedupe_buffer_size, lock_timeout_s, roll)

    # Run now, once: a lazy DataFrame would clean again on every action.
    rounds = spark.sparkContext.parallelize(groups, max(1, len(groups))).mapPartitions(run).collect() \
        if groups else []
    rows: list[tuple[Any, ...]] = []
    dropped: dict[tuple[str, int], int] = {}
    for row in rounds:
        decision = decisions[(row[0], row[1])]
        rows.append((*row, decision.cleanup_policy, decision.source, None))
        dropped[(row[0], row[1])] = dropped.get((row[0], row[1]), 0) + int(row[9])
    for (topic, partition), count in sorted(dropped.items()):
        if count:
            logger.warning("compact: %s-%d: dropped %d record%s without a key (a compacted topic keeps each key's "
                           "latest record; Kafka's cleaner drops records without one)", topic, partition, count,
                           "s" if count != 1 else "")
    cleaned = {(row[0], row[1]) for row in rounds}
    # Not compacted although its policy compacts: the cleaner found nothing to clean.  Said, so that every
    # partition the job was given comes back as rows.
    nothing = ("the cleaner found nothing to clean: " + ("no record past the cleaned part" if roll else
               "Kafka's cleaner never cleans the active segment (the last one), and roll=True rolls it first"))
    for decision in decisions.values():
        tp = decision.topic_partition
        skipped = decision.skipped
        if skipped is None and (tp.topic, tp.partition) not in cleaned:
            skipped = nothing
        if skipped is not None:
            rows.append((tp.topic, tp.partition, 0, *([None] * (_ROUND_COLUMNS - 3)), decision.cleanup_policy,
                         decision.source, skipped))
    return spark.createDataFrame(rows, CLEANER_STATS_SCHEMA)


def _hint(topic: str) -> Callable[[str, str], str]:
    """How to give ``topic`` a property: the ``topic_configs`` argument that does it."""
    return lambda name, value: f"topic_configs={{{topic!r}: {{{name!r}: {value!r}}}}}"


def _log_skipped(decisions: Iterable[CleanupDecision]) -> None:
    """One line a topic and reason for the partitions not compacted: a warning when the policy is not known or
    the partition is a Raft log, information when the policy says not to (Kafka's cleaner is silent then)."""
    by_reason: dict[tuple[str, str, str], list[int]] = {}
    for decision in decisions:
        if decision.skipped is not None:
            tp = decision.topic_partition
            by_reason.setdefault((tp.topic, decision.kind, decision.skipped), []).append(tp.partition)
    for (topic, kind, reason), partitions in sorted(by_reason.items()):
        named = ", ".join(f"{topic}-{p}" for p in sorted(partitions))
        level = logging.INFO if kind == "no-compact" else logging.WARNING
        logger.log(level, "compact: %s not compacted: %s", named, reason)

"""``kafkalog clean DIR``: compact a partition dir once, or until nothing is left to clean.

Runs Kafka's cleaner (:class:`~kafkalog.cleaner.log_cleaner.LogCleaner`, in the calling thread) on the one partition:
each round builds the offset map over the dirty section, recopies the segments keeping each key's
latest record, swaps the cleaned segments in and advances the log dir's ``cleaner-offset-checkpoint``.
After each round it prints the cleaner's summary, as Kafka's cleaner logs it.  Holds the log dir's ``.lock``
throughout; a Ctrl-C leaves no ``.cleaned`` file behind (the round's output is deleted, and a swap under way
finishes first and is kept).  Another error (an I/O error, a corrupt batch) leaves the round's ``.cleaned`` files,
as Kafka's cleaner does; the next open of the log deletes them.

Which partitions it compacts (:func:`~kafkalog.tools.cleanup_policy.decide_cleanup`).  Kafka's cleaner
compacts only a topic whose ``cleanup.policy`` holds ``compact``, and never a Raft log; a compaction of a
topic written without keys removes every record.  So:

- the KRaft metadata log (``__cluster_metadata-0``), or any Raft log, is refused, whatever ``--config`` says;
- the topic's config is read from the KRaft metadata log of the partition's broker when its log dirs hold it:
  the one ``--metadata-log-dir`` names, else the ``__cluster_metadata-0`` of the partition's log dir
  (:class:`~kafkalog.tools.cluster_metadata.MetadataLogs`);
- ``--config`` is laid over it and wins: a ``cleanup.policy`` given there overrides the metadata log's (a line
  on stderr says so when they differ);
- a partition whose ``cleanup.policy`` neither says (a ZooKeeper-mode broker's dir, a partition dir copied
  without its metadata log, a topic the metadata log does not know) is not cleaned.

Refusals print one line on stderr, saying why and how to have the partition compacted, and exit with status 2
without opening the log: the metadata log, a policy that is not known, a policy without ``compact``.
``min.cleanable.dirty.ratio`` is 0 unless ``--config`` says otherwise, since asking for a clean is asking for
one now.  Records dropped for having no key (Kafka's cleaner drops them: a compacted topic keeps each key's
latest record, and a record without key has none) are counted on stderr after the rounds, with the partition.

As in Kafka, the active segment (the last one, where appends go) is never cleaned, so records in it keep
their duplicates.  ``--roll`` first rolls the log (Kafka: ``UnifiedLog.roll``) when the active segment holds
any record, so that what it holds becomes cleanable; the new active segment is empty.
"""

from __future__ import annotations

import argparse
import itertools
import time
from typing import Any

from ..cleaner import LogCleaner
from ..cleaner.config import CleanerConfig
from ..config.log_config import LogConfig
from ..fsutil import DirLock
from ..log import Log
from ..tools.cleanup_policy import decide_cleanup
from ..tools.cluster_metadata import MetadataLogs
from ..tools.partition_dir import PartitionDir
from .config_argument import add_config_argument, config_pairs
from .console import EXIT_USAGE, Console, counted, format_bytes, report_undeleted_files

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "clean", help="compact a partition dir (one cleaning round, or --until-clean)",
        description="Compact a partition dir with Kafka's log cleaner and print the cleaner's statistics. "
                    "The topic's cleanup.policy comes from the KRaft metadata log in the partition's log dir "
                    "(or --metadata-log-dir), and --config overrides it. A partition whose policy is not known, "
                    "or does not compact, and the metadata log itself are refused with exit status 2. "
                    "The active segment is never cleaned (--roll makes it cleanable).")
    parser.add_argument("dir", metavar="DIR", help="the partition dir (<topic>-<partition>)")
    parser.add_argument("--until-clean", action="store_true",
                        help="run rounds until no dirty section is left (default: one round)")
    parser.add_argument("--roll", action="store_true",
                        help="roll the log first, so the records of the active segment (never cleaned) are cleaned")
    parser.add_argument("--dedupe-buffer-size", type=int, default=128 * 1024 * 1024, metavar="BYTES",
                        help="memory for the offset map (log.cleaner.dedupe.buffer.size, default %(default)s)")
    add_config_argument(parser, help="a topic config (Kafka's name, e.g. cleanup.policy=compact); repeatable. "
                                     "Overrides what the KRaft metadata log says of the topic")
    parser.add_argument("--metadata-log-dir", metavar="PATH",
                        help="the log dir holding the broker's KRaft metadata log (__cluster_metadata-0), or that "
                             "dir itself (default: the partition's log dir)")
    parser.add_argument("--json", action="store_true", help="one JSON object per cleaning round")
    parser.set_defaults(run=run, input_paths=lambda a: [a.dir])
    return parser


def run(args: argparse.Namespace, console: Console) -> int:
    partition = PartitionDir.of(args.dir)
    tp = partition.topic_partition
    decision = decide_cleanup(partition.path, tp, user=[("--config", config_pairs(args.config))],
                              metadata_logs=MetadataLogs([partition.log_dir], args.metadata_log_dir),
                              hint=lambda name, value: f"--config {name}={value}")
    for note in decision.notes:
        console.error(f"kafkalog clean: {tp}: {note}")
    if decision.config is None:
        console.error(f"kafkalog clean: {tp} not cleaned: {decision.skipped}")
        return EXIT_USAGE
    config = LogConfig(decision.config)
    cleaner_config = CleanerConfig(1, args.dedupe_buffer_size, 0.9, 1024 * 1024, config.max_message_size)
    rounds = 0
    keyless = 0
    try:
        with DirLock(partition.log_dir, holder="kafkalog clean") as lock:
            log = Log(partition.path, config, recovery_point=partition.recovery_point,
                      log_start_offset=partition.log_start_offset, dir_lock=lock)
            try:
                for name, reason in log.load_report.skipped_files:
                    console.error(f"kafkalog clean: skipped {name}, left as it is: {reason}")
                if args.roll:
                    _roll(console, args.json, log)
                size_before = log.size
                cleaner = LogCleaner(cleaner_config, [partition.log_dir], {partition.topic_partition: log})
                started = time.monotonic()
                while True:
                    first_dirty = partition.cleaned_up_to(log.log_start_offset)
                    with console.progress(_bytes_to_read(log, first_dirty), f"clean {partition.topic_partition}",
                                          unit="B", unit_scale=True) as bar:
                        stats = cleaner.run_once(max_rounds=1, on_read=bar.update)
                    if not stats:
                        break
                    rounds += 1
                    keyless += stats[0].invalid_messages_read
                    _print_round(console, args.json, log.name, stats[0], first_dirty,
                                 partition.cleaned_up_to(first_dirty))
                    if not args.until_clean:
                        break
                size_after = log.size
                elapsed = time.monotonic() - started
                # What a broker's shutdown does before the marker goes back (LogManager.shutdown): the marker
                # vouches for flushed logs, and an empty active segment (--roll) gets its index files.
                log.flush(including_offset=True)
            finally:
                log.close()
                report_undeleted_files(console, "clean", log.undeleted_files)
            lock.restore_clean_shutdown_marker()  # the open removed it, if it was there
    finally:
        if keyless:
            # Kafka logs these at WARN ("Found N invalid messages during compaction"); without -v that is unseen,
            # and they are records gone.
            console.error(f"kafkalog clean: {tp}: dropped {keyless:,} {'record' if keyless == 1 else 'records'} "
                          "without a key (a compacted topic keeps each key's latest record; Kafka's cleaner drops "
                          "records without one)")
    if not args.json:
        if rounds == 0:
            console.print(f"Nothing to clean in {partition.topic_partition}: no dirty section outside the active "
                          "segment")
        console.print(f"{partition.topic_partition}: {counted(rounds, 'round')} in {elapsed:.2f} s, "
                      f"{format_bytes(size_before)} -> {format_bytes(size_after)}")
    return 0


def _roll(console: Console, as_json: bool, log: Log) -> None:
    """``--roll``: a new, empty active segment, so that the records of the old one can be cleaned."""
    active = log.active_segment
    if active.size() == 0:
        if not as_json:
            console.print(f"{log.name}: the active segment {active.base_offset} is empty; nothing to roll")
        return
    new = log.roll()
    if not as_json:
        console.print(f"{log.name}: rolled the active segment {active.base_offset}; the new active segment "
                      f"starts at offset {new.base_offset}")


def _bytes_to_read(log: Log, first_dirty: int) -> int:
    """About what one round reads, for its progress bar: the offset map's pass over the dirty segments,
    then the recopy of every segment below the active one (the cleaner may stop short of either)."""
    segments = log.log_segments()
    recopied = sum(s.size() for s in segments[:-1])
    # A segment holds offsets below the next one's base offset.
    mapped = sum(s.size() for s, following in itertools.pairwise(segments) if following.base_offset > first_dirty)
    return recopied + mapped


def _print_round(console: Console, as_json: bool, name: str, stats: Any, first_dirty: int, end: int) -> None:
    if as_json:
        console.json_line({
            "log": name, "firstDirtyOffset": first_dirty, "endOffset": end, "bytesRead": stats.bytes_read,
            "bytesWritten": stats.bytes_written, "messagesRead": stats.messages_read,
            "messagesWritten": stats.messages_written, "invalidMessagesRead": stats.invalid_messages_read,
            "mapMessagesRead": stats.map_messages_read, "bufferUtilization": stats.buffer_utilization,
            "elapsedSecs": stats.elapsed_secs(), "elapsedIndexSecs": stats.elapsed_index_secs()})
    else:
        console.print(stats.summary(0, name, first_dirty, end).strip("\n"))

"""``kafkalog clean DIR``: compact a partition dir once, or until nothing is left to clean.

Runs Kafka's cleaner (:class:`~kafkalog.cleaner.LogCleaner`, in the calling thread) on the one partition:
each round builds the offset map over the dirty section, recopies the segments keeping each key's
latest record, swaps the cleaned segments in and advances the log dir's ``cleaner-offset-checkpoint``.
After each round it prints the cleaner's summary, as Kafka's cleaner logs it.  ``cleanup.policy`` is
``compact`` and ``min.cleanable.dirty.ratio`` 0 unless ``--config`` says otherwise, since asking for a
clean is asking for one now.  Holds the log dir's ``.lock`` throughout; a Ctrl-C leaves no ``.cleaned``
file behind (the round's output is deleted, and a swap under way finishes first and is kept).  Another error
(an I/O error, a corrupt batch) leaves the round's ``.cleaned`` files, as Kafka's cleaner does; the next open of
the log deletes them.

As in Kafka, the active segment (the last one, where appends go) is never cleaned, so records in it keep
their duplicates.  ``--roll`` first rolls the log (Kafka: ``UnifiedLog.roll``) when the active segment holds
any record, so that what it holds becomes cleanable; the new active segment is empty.

A partition whose ``cleanup.policy`` (from ``--config``) does not include ``compact`` is not cleaned: a
broker's cleaner would leave it alone, so ``clean`` prints one line saying so and exits with status 2 without
opening the log.  ``--config cleanup.policy=compact`` (the default) is how to compact it anyway.
"""

from __future__ import annotations

import argparse
import itertools
import time
from typing import Any

from ..cleaner import LogCleaner
from ..cleaner_config import CleanerConfig
from ..fsutil import DirLock
from ..log import Log
from ..tools.partition_dir import PartitionDir
from .config_argument import add_config_argument, log_config_from
from .console import EXIT_USAGE, Console, format_bytes

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "clean", help="compact a partition dir (one cleaning round, or --until-clean)",
        description="Compact a partition dir with Kafka's log cleaner and print the cleaner's statistics. "
                    "The active segment is never cleaned (--roll makes it cleanable). A cleanup.policy "
                    "without compact (--config cleanup.policy=delete) is refused with exit status 2.")
    parser.add_argument("dir", metavar="DIR", help="the partition dir (<topic>-<partition>)")
    parser.add_argument("--until-clean", action="store_true",
                        help="run rounds until no dirty section is left (default: one round)")
    parser.add_argument("--roll", action="store_true",
                        help="roll the log first, so the records of the active segment (never cleaned) are cleaned")
    parser.add_argument("--dedupe-buffer-size", type=int, default=128 * 1024 * 1024, metavar="BYTES",
                        help="memory for the offset map (log.cleaner.dedupe.buffer.size, default %(default)s)")
    add_config_argument(parser)
    parser.add_argument("--json", action="store_true", help="one JSON object per cleaning round")
    parser.set_defaults(run=run, input_paths=lambda a: [a.dir])
    return parser


def run(args: argparse.Namespace, console: Console) -> int:
    partition = PartitionDir.of(args.dir)
    config = log_config_from(args.config, {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0"})
    if not config.compact:
        console.error(f"kafkalog clean: {partition.topic_partition} not cleaned: cleanup.policy="
                      f"{','.join(config.cleanup_policy)} does not compact (Kafka's cleaner leaves such a log alone); "
                      "--config cleanup.policy=compact compacts it anyway")
        return EXIT_USAGE
    cleaner_config = CleanerConfig(1, args.dedupe_buffer_size, 0.9, 1024 * 1024, config.max_message_size)
    rounds = 0
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
                _print_round(console, args.json, log.name, stats[0], first_dirty, partition.cleaned_up_to(first_dirty))
                if not args.until_clean:
                    break
            size_after = log.size
            elapsed = time.monotonic() - started
        finally:
            log.close()
        lock.restore_clean_shutdown_marker()  # the open removed it, if it was there
    if not args.json:
        if rounds == 0:
            console.print(f"Nothing to clean in {partition.topic_partition}: no dirty section outside the active "
                          "segment")
        console.print(f"{partition.topic_partition}: {rounds} round{'s' if rounds != 1 else ''} in {elapsed:.2f} s, "
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

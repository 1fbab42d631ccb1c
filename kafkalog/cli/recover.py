"""``kafkalog recover DIR``: recover a partition dir in place, as a broker's open after a crash does.

Opens the log as after an unclean shutdown (Kafka: ``LogLoader.load`` with ``hadCleanShutdown`` false):
leftover ``.deleted``/``.cleaned`` files are removed and interrupted swaps completed, missing or corrupt
indexes rebuilt, and every segment from the recovery point on checked batch by batch, the log cut at
the first torn or corrupt batch and later segments deleted.  ``--full`` checks every segment from the
first (rebuilding all the indexes).  Then the log is flushed, this partition's recovery point written
to the log dir's checkpoint, and what changed is reported.  Holds the log dir's ``.lock`` throughout.

A kill at any moment leaves a log the next ordinary open recovers whole.  Recovering a segment tears it down
before it builds it again (Kafka's ``LogSegment.recover``: the offset, time and transaction indexes are reset,
then refilled from the batches; the producer snapshots past the segment are deleted first), and a broker's open
recovers only the segments from the checkpointed recovery point on (``LogLoader.recoverLog``): Kafka's recovery
only ever tears down segments the checkpoint does not vouch for, and the checkpoint moves up only once they are
flushed.  ``--full`` (kafkalog's; Kafka has no such recovery) also tears down segments below the checkpointed
recovery point, so before it opens the log it moves this partition's checkpointed recovery point down to the
offset it recovers from (0), durably, as Kafka's ``LogManager.truncateTo`` writes the recovery-point checkpoint
at once after a truncation lowered it.  A kill before the new recovery point is written then leaves a checkpoint
that vouches for nothing the run may have emptied, and the next open recovers every segment again.  (Rebuilding
each segment's indexes into temporary files and renaming them into place was the other way: it would cover the
three indexes but not the producer snapshots recovery deletes, and would give the recovery every open runs a
second code path, for the sake of a command whose runs are rare.)

A run that fails part way (an error, Ctrl-C; not a kill) puts the log dir's ``.kafka_cleanshutdown`` back as it
found it, byte for byte, and says so with the error: the open removed it, and left removed it would have the
broker's next start recover every partition of the log dir, which this run never touched.  That is safe for this
partition because of what a load does with a segment whose offset index is missing: it recovers it, clean
shutdown or not (Kafka: ``LogLoader.loadSegmentFiles``).  So before the marker goes back, each segment whose files
this run changed (their size, modification time or inode differ from before the open: an index emptied, a log
cut, a segment added) loses its offset index, and the next open rebuilds it from its batches.  Where that removal
fails, the marker stays removed, and the error says so.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any

from ..checkpoint import RECOVERY_POINT_CHECKPOINT_FILE
from ..dir_layout import SEGMENT_FILE_NAME, TEMP_FILE_SUFFIXES
from ..errors import KafkaLogError
from ..filenames import index_filename
from ..fsutil import DirLock, clean_shutdown_marker_present, fsync_dir
from ..log import Log
from ..tools.partition_dir import PartitionDir
from .config_argument import add_config_argument, log_config_from
from .console import Console, counted, format_bytes, report_undeleted_files

__all__ = ["RecoverFailedError", "add_parser", "run"]


class RecoverFailedError(KafkaLogError):
    """A recovery that failed part way: the error, and what became of the log dir's clean-shutdown marker."""


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "recover", help="recover a partition dir in place, as a broker does after a crash",
        description="Recover a partition dir as opening it after a crash would: truncate torn writes, rebuild "
                    "indexes, complete interrupted swaps; then report what changed.")
    parser.add_argument("dir", metavar="DIR", help="the partition dir (<topic>-<partition>)")
    parser.add_argument("--full", action="store_true",
                        help="check every segment, not only those past the checkpointed recovery point (which "
                             "is set to 0 first, so a run killed part way is recovered whole by the next open)")
    add_config_argument(parser)
    parser.add_argument("--json", action="store_true", help="print the report as one JSON object")
    parser.set_defaults(run=run, input_paths=lambda a: [a.dir])
    return parser


def run(args: argparse.Namespace, console: Console) -> int:
    partition = PartitionDir.of(args.dir)
    config = log_config_from(args.config)
    with DirLock(partition.log_dir, holder="kafkalog recover") as lock:
        recovery_point = 0 if args.full else partition.recovery_point
        # No checkpoint may vouch for a segment this run tears down (see the module docstring).
        partition.lower_checkpoint(RECOVERY_POINT_CHECKPOINT_FILE, recovery_point)
        started = time.monotonic()
        files = _segment_files(partition.path)
        try:
            with console.progress(None, f"recover {partition.topic_partition}", unit="B", unit_scale=True) as bar:
                log = Log(partition.path, config, recovery_point=recovery_point,
                          log_start_offset=partition.log_start_offset, had_clean_shutdown=False,
                          recovery_progress=bar.reach, dir_lock=lock)
            try:
                log.flush(including_offset=True)
                end_offset = log.log_end_offset
                report = log.load_report
                segments, size = log.number_of_segments, log.size
            finally:
                log.close()
                report_undeleted_files(console, "recover", log.undeleted_files)
            partition.update_checkpoint(RECOVERY_POINT_CHECKPOINT_FILE, end_offset)
        except (KafkaLogError, OSError) as e:
            raise RecoverFailedError(f"{e}; {_after_failure(lock, partition.path, files)}") from e
        except KeyboardInterrupt:
            console.error(f"kafkalog recover: {_after_failure(lock, partition.path, files)}")
            raise
        # The log is whole again: a marker the open removed goes back, the other partitions untouched.
        lock.restore_clean_shutdown_marker()
        elapsed = time.monotonic() - started
    if args.json:
        console.json_line({
            "partition": str(partition.topic_partition), "dir": str(partition.path),
            "recoveredFrom": recovery_point, "logEndOffset": end_offset, "segments": segments, "bytes": size,
            "removedFiles": report.removed_files, "completedSwaps": report.completed_swaps,
            "replacedFiles": report.replaced_files,
            "rebuiltIndexes": [{"baseOffset": b, "reason": r} for b, r in report.rebuilt_indexes],
            "recoveredSegments": [{"baseOffset": b, "truncatedBytes": n} for b, n in report.recovered_segments],
            "deletedSegments": report.deleted_segments, "splitSegments": report.split_segments,
            "truncatedBytes": report.truncated_bytes,
            "skippedFiles": [{"name": n, "reason": r} for n, r in report.skipped_files],
            "seconds": round(elapsed, 3)})
        return 0
    console.print(f"Recovered {partition.topic_partition} ({partition.path}) in {elapsed:.2f} s, checking segments "
                  f"from offset {recovery_point}")
    for name, reason in report.skipped_files:
        console.print(f"  skipped {name}, left as it is: {reason}")
    for name in report.removed_files:
        console.print(f"  removed leftover file {name}")
    for name in report.completed_swaps:
        console.print(f"  completed interrupted swap {name}")
    for name in report.replaced_files:
        console.print(f"  deleted {name}, replaced by a completed swap")
    for base, reason in report.rebuilt_indexes:
        console.print(f"  rebuilt the indexes of segment {base}: {reason}")
    for base, truncated in report.recovered_segments:
        what = f"truncated {format_bytes(truncated)} ({counted(truncated, 'byte')}) of torn or corrupt data" \
            if truncated else "intact, indexes rebuilt"
        console.print(f"  segment {base}: {what}")
    for base in report.deleted_segments:
        console.print(f"  deleted segment {base}, which followed the truncation")
    for base in report.split_segments:
        console.print(f"  split segment {base}: its offsets overflowed the index")
    if not report.changed and not report.recovered_segments:
        console.print("  nothing to check: no segment lies past the recovery point")
    console.print(f"Truncated {counted(report.truncated_bytes, 'byte')} in all")
    console.print(f"Log end offset {end_offset}, {counted(segments, 'segment')}, {format_bytes(size)}; recovery "
                  f"point checkpointed at {end_offset}")
    return 0


def _segment_files(directory: Path) -> dict[str, tuple[int, int, int]]:
    """The inode, size and modification time of each of the partition's segment files (``<base>.log`` and its
    indexes, also while swapped, cleaned or deleted), by name; not the producer snapshots, which a load with or
    without the marker reads as they are."""
    files: dict[str, tuple[int, int, int]] = {}
    with os.scandir(directory) as entries:
        for entry in entries:
            name = entry.name.removesuffix(next((s for s in TEMP_FILE_SUFFIXES if entry.name.endswith(s)), ""))
            match = SEGMENT_FILE_NAME.match(name)
            if match and match.group(2) != "snapshot":
                st = entry.stat(follow_symlinks=False)
                files[entry.name] = (st.st_ino, st.st_size, st.st_mtime_ns)
    return files


def _after_failure(lock: DirLock, directory: Path, before: dict[str, tuple[int, int, int]]) -> str:
    """Put the clean-shutdown marker back as the failed run found it, once every segment the run changed has no
    offset index left (see the module docstring); what was done, for the error."""
    try:
        after = _segment_files(directory)
        changed = sorted({int(name[:20]) for name in before.keys() | after.keys()
                          if before.get(name) != after.get(name)})
        for base in changed:
            index_filename(directory, base).unlink(missing_ok=True)
        if changed:
            fsync_dir(directory)
    except OSError as e:
        return (f"the clean-shutdown marker of {lock.directory} stays removed, so the broker's next start recovers "
                f"every partition there: the offset index of a segment this run changed could not be removed ({e})")
    try:
        if not lock.put_back_clean_shutdown_marker():
            # Not taken (the open failed before it loaded anything), or not there: the log dir is as it was.
            return ("the clean-shutdown marker was left as it was" if clean_shutdown_marker_present(lock.directory)
                    else "the log dir had no clean-shutdown marker to put back")
    except KafkaLogError as e:
        return f"the clean-shutdown marker stays removed, so the broker's next start recovers the log dir: {e}"
    rebuilt = f"; the next open rebuilds segment{'s' if len(changed) != 1 else ''} " \
              f"{', '.join(map(str, changed))}, whose offset index was removed" if changed else ""
    return f"the clean-shutdown marker of {lock.directory} was put back as it was{rebuilt}"

"""``kafkalog stats DIR...``: per-partition statistics as a table, ``--json`` or ``--csv``.

Each DIR is a partition dir or a log dir (all its partitions), local or a URL (``s3://bucket/logs`` with
``--storage-option endpoint_url=...``: :mod:`kafkalog.urls`, read by range); see
:mod:`kafkalog.tools.stats` for what is counted.  Partitions are opened read-only: a live broker's directory can
be read.  A batch that fails its CRC check is counted like the others, and reported: a warning line on stderr
per partition, ``crcFailures`` in the ``--json`` and ``--csv`` output, and exit status 1.  Bytes at the end of a
segment that are no whole batch (a torn write, which a broker's recovery truncates) are reported the same way, in
the words ``kafkalog verify`` finds them with (how many bytes, at which position): a warning line a segment,
``invalidTailBytes`` (and ``invalidTails``, the lines, in ``--json``), exit status 1.

``--json`` and ``--csv`` name their fields in camelCase, as every ``--json`` of the command line does (Kafka's
tools print camelCase JSON): :class:`~kafkalog.tools.stats.PartitionStats`'s ``log_end_offset`` is
``logEndOffset`` there.  The JSON object has every field of :class:`~kafkalog.tools.stats.PartitionStats`;
the CSV leaves out ``dir``, ``skippedFiles`` and ``invalidTails`` and writes the format and codec counts as
``v2:3 v1:1``.
"""

from __future__ import annotations

import argparse
import datetime
import os
from pathlib import Path
from typing import Any

from ..errors import KafkaLogError
from ..tools.partition_dir import classify_dir, partition_dirs
from ..tools.stats import PartitionStats, partition_stats, remote_partition_stats
from ..urls.location import StorageLocation
from ..urls.partition import classify_remote_dir, remote_partition_dirs
from .console import EXIT_FOUND, Console, counted, format_bytes, offset_range
from .storage_option import add_storage_option_argument, locate_argument

__all__ = ["COLUMNS", "add_parser", "camel_case", "run"]

#: The CSV columns: fields of PartitionStats, in this order (their headers are :func:`camel_case` of these).
COLUMNS = ["topic", "partition", "segments", "size", "log_start_offset", "log_end_offset", "batches", "records",
           "min_timestamp", "max_timestamp", "magics", "codecs", "keyed_records", "distinct_keys", "tombstones",
           "first_dirty_offset", "dirty_ratio", "crc_failures", "invalid_tail_bytes"]


def camel_case(name: str) -> str:
    """A snake_case field name as the command line's JSON and CSV spell it: ``log_end_offset`` ->
    ``logEndOffset``."""
    first, *rest = name.split("_")
    return first + "".join(word.capitalize() for word in rest)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "stats", help="per-partition statistics: offsets, records, timestamps, codecs, keys, dirty ratio",
        description="Per-partition statistics of partition dirs or whole log dirs, read-only. Batches that "
                    "fail their CRC check are counted and reported (a warning, crcFailures, exit status 1), and "
                    "so is a torn tail, bytes at the end of a segment that are no whole batch (invalidTailBytes). "
                    "JSON and CSV fields are camelCase (logEndOffset), as in every kafkalog --json.")
    parser.add_argument("dirs", nargs="+", metavar="DIR", help="a partition dir or a log dir, local or a URL "
                                                                "(s3://bucket/logs, gs://, abfs://, hdfs://)")
    add_storage_option_argument(parser)
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="one JSON object per partition")
    output.add_argument("--csv", action="store_true", help="CSV with a header row")
    parser.set_defaults(run=run, input_paths=lambda a: a.dirs)
    return parser


def _time(ms: int | None) -> str | None:
    if ms is None:
        return None
    try:
        return datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC).strftime("%Y-%m-%d %H:%M:%S")
    except (OverflowError, OSError, ValueError):
        return str(ms)


def _counts(counts: dict[str, int]) -> str:
    return " ".join(f"{name}:{n}" for name, n in counts.items()) or "-"


def _partitions(arg: str, args: argparse.Namespace) -> list[tuple[Path | StorageLocation, int]]:
    """The partition dirs ``arg`` names (itself, or a log dir's), each with its bytes of log."""
    where = locate_argument(arg, args)
    if isinstance(where, StorageLocation):
        found = [where] if classify_remote_dir(where) == "partition" else remote_partition_dirs(where)
        return [(d, sum(size for name, _kind, size in d.entries() if name.endswith(".log"))) for d in found]
    dirs = [where] if classify_dir(where) == "partition" else partition_dirs(where)
    return [(d, sum(e.stat().st_size for e in os.scandir(d) if e.name.endswith(".log"))) for d in dirs]


def run(args: argparse.Namespace, console: Console) -> int:
    status = 0
    dirs: list[tuple[Path | StorageLocation, int]] = []
    for arg in args.dirs:
        try:
            dirs.extend(_partitions(arg, args))
        except (OSError, KafkaLogError) as e:
            console.error(f"kafkalog stats: {e}")
            status = 2
            continue
    if status and not dirs:
        return status  # nothing could be read: the errors said why, no empty table follows
    total = sum(size for _d, size in dirs)
    results: list[PartitionStats] = []
    with console.progress(total, "stats", unit="B", unit_scale=True) as bar:
        for directory, _size in dirs:
            bar.describe(directory.name)
            try:
                if isinstance(directory, StorageLocation):
                    results.append(remote_partition_stats(directory, progress=bar.update))
                else:
                    results.append(partition_stats(directory, progress=bar.update))
                if results[-1].crc_failures:
                    n = results[-1].crc_failures
                    console.error(f"kafkalog stats: {directory}: warning: {counted(n, 'batch', 'batches')} "
                                  "failed the CRC check (counted all the same; kafkalog verify says where)")
                    status = max(status, EXIT_FOUND)
                for tail in results[-1].invalid_tails:
                    # What verify reports of the same bytes, in its words: readers stop before them.
                    console.error(f"kafkalog stats: {directory}: warning: {tail}; the batches before them are "
                                  "counted (kafkalog verify says more)")
                    status = max(status, EXIT_FOUND)
                for name in results[-1].skipped_files:
                    console.error(f"kafkalog stats: {directory}: skipped {name}: not named for an offset the way a "
                                  "segment's files are")
            except (OSError, KafkaLogError) as e:
                console.error(f"kafkalog stats: {directory}: {e}")
                status = 2
    if args.json:
        for stats in results:
            console.json_line({camel_case(key): value for key, value in stats.as_dict().items()})
    elif args.csv:
        console.csv([camel_case(c) for c in COLUMNS], [[_csv_value(getattr(s, c)) for c in COLUMNS] for s in results])
    else:
        console.table(
            ["PARTITION", "SEGS", "SIZE", "OFFSETS", "RECORDS", "FIRST TIMESTAMP", "LAST TIMESTAMP", "FORMATS",
             "CODECS", "KEYS", "TOMBSTONES", "DIRTY"],
            [[f"{s.topic}-{s.partition}", s.segments, format_bytes(s.size),
              offset_range(s.log_start_offset, s.log_end_offset), s.records, _time(s.min_timestamp),
              _time(s.max_timestamp), _counts(s.magics), _counts(s.codecs), s.distinct_keys, s.tombstones,
              None if s.dirty_ratio is None else f"{s.dirty_ratio:.2f}"] for s in results],
            align_right=(1, 2, 4, 9, 10, 11))
    return status


def _csv_value(value: Any) -> Any:
    if isinstance(value, dict):
        return _counts(value)
    return value

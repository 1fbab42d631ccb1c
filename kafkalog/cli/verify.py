"""``kafkalog verify DIR...``: a read-only check of partition dirs or whole log.dirs.

Runs :mod:`kafkalog.tools.verify` on each directory (a partition dir is checked alone; a log dir with all its
partitions and its checkpoint files), prints one table row per partition, then the findings: errors
and warnings always, notes with ``--notes``.  Exit status 0 when no error was found, 1 when one was,
2 when a directory could not be checked at all.  ``--json`` prints one object per partition instead.

A URL (``s3://bucket/logs``, with ``--storage-option NAME=VALUE``) is checked through its filesystem, read by
range and never changed, with the checks and the findings of a local directory
(:func:`~kafkalog.tools.verify.verify_remote_partition`, :func:`~kafkalog.tools.verify.verify_remote_log_dir`):
segments, indexes, leader-epoch checkpoint, producer snapshots, transaction indexes, and a log dir's offset
checkpoints against its partitions.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from ..errors import KafkaLogError
from ..tools.partition_dir import classify_dir, partition_dirs
from ..tools.verify import (
    LogDirReport,
    PartitionReport,
    Severity,
    iter_findings,
    verify_log_dir,
    verify_partition,
    verify_remote_log_dir,
    verify_remote_partition,
)
from ..urls.location import StorageLocation
from ..urls.partition import classify_remote_dir, remote_partition_dirs
from .console import Console, counted, format_bytes, offset_range
from .storage_option import add_storage_option_argument, locate_argument

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "verify", help="check partition dirs or log.dirs without changing them",
        description="Check CRCs, offsets, both indexes and the checkpoint files of partition dirs or whole "
                    "log.dirs, read-only. Exit status: 0 no error found, 1 errors found, 2 a directory could "
                    "not be checked.")
    parser.add_argument("dirs", nargs="+", metavar="DIR",
                        help="a partition dir (<topic>-<partition>) or a log dir, local or a URL (s3://bucket/logs)")
    add_storage_option_argument(parser)
    parser.add_argument("--shallow", action="store_true",
                        help="check batch headers and CRCs only, without decoding every record")
    parser.add_argument("--notes", action="store_true", help="also list notes (normal states worth knowing)")
    parser.add_argument("--json", action="store_true", help="one JSON object per partition, findings included")
    parser.set_defaults(run=run, input_paths=lambda a: a.dirs)
    return parser


def _log_bytes(directory: Path) -> int:
    try:
        return sum(e.stat().st_size for e in os.scandir(directory) if e.name.endswith(".log") and e.is_file())
    except OSError:
        return 0


def _remote_log_bytes(directory: StorageLocation) -> int:
    return sum(size for name, kind, size in directory.entries() if kind == "file" and name.endswith(".log"))


def _remote_target(location: StorageLocation) -> tuple[StorageLocation, str, int]:
    """A URL to check: what it is (``"partition"`` or ``"logdir"``) and its bytes of log (all its partition
    dirs', as :func:`~kafkalog.tools.verify.verify_remote_log_dir` reads them)."""
    kind = classify_remote_dir(location)
    dirs = [location] if kind == "partition" else remote_partition_dirs(location)
    return location, kind, sum(_remote_log_bytes(d) for d in dirs)


def run(args: argparse.Namespace, console: Console) -> int:
    targets: list[tuple[Path, str]] = []
    remote: list[tuple[StorageLocation, str, int]] = []
    status = 0
    for arg in args.dirs:
        try:
            where = locate_argument(arg, args)
            if isinstance(where, StorageLocation):
                remote.append(_remote_target(where))
            else:
                targets.append((where, classify_dir(where)))
        except (OSError, KafkaLogError) as e:
            console.error(f"kafkalog verify: {e}")
            status = 2
    if not targets and not remote:
        return status  # nothing could be checked: the errors said why, no empty table follows
    total = sum(size for _d, _kind, size in remote)
    for directory, kind in targets:
        total += _log_bytes(directory) if kind == "partition" else sum(
            _log_bytes(p) for p in partition_dirs(directory))
    reports: list[PartitionReport | LogDirReport] = []
    with console.progress(total, "verify", unit="B", unit_scale=True) as bar:
        for directory, kind in targets:
            bar.describe(directory.name)
            try:
                if kind == "partition":
                    reports.append(verify_partition(directory, deep=not args.shallow, progress=bar.update))
                else:
                    reports.append(verify_log_dir(directory, deep=not args.shallow, progress=bar.update))
            except (OSError, KafkaLogError) as e:
                console.error(f"kafkalog verify: {directory}: {e}")
                status = 2
        for location, kind, _size in remote:
            bar.describe(location.name)
            try:
                # Read-only by construction: objects are read by range, nothing is recovered or written.
                if kind == "partition":
                    reports.append(verify_remote_partition(location, deep=not args.shallow, progress=bar.update))
                else:
                    reports.append(verify_remote_log_dir(location, deep=not args.shallow, progress=bar.update))
            except (OSError, KafkaLogError) as e:
                console.error(f"kafkalog verify: {location}: {e}")
                status = 2
    partitions = [p for r in reports for p in (r.partitions if isinstance(r, LogDirReport) else [r])]
    findings = [f for f in iter_findings(reports) if args.notes or f.severity is not Severity.NOTE]
    if args.json:
        for report in reports:
            for partition in report.partitions if isinstance(report, LogDirReport) else [report]:
                console.json_line(_partition_json(partition))
            if isinstance(report, LogDirReport):
                console.json_line({"type": "logDir", "dir": str(report.dir), "ok": report.ok,
                                   "findings": [_finding_json(f) for f in report.findings]})
    else:
        console.table(
            ["PARTITION", "SEGMENTS", "BATCHES", "RECORDS", "SIZE", "OFFSETS", "RESULT"],
            [[str(p.topic_partition) if p.topic_partition else p.dir.name, p.segments, p.batches, p.records,
              format_bytes(p.size),
              None if p.log_start_offset is None or p.log_end_offset is None
              else offset_range(p.log_start_offset, p.log_end_offset),
              "ok" if p.ok else counted(len(p.errors), "error")] for p in partitions],
            align_right=(1, 2, 3, 4))
        if findings:
            console.print()
            for finding in findings:
                console.print(str(finding))
        errors = sum(1 for f in iter_findings(reports) if f.severity is Severity.ERROR)
        console.print()
        console.print(f"{counted(len(partitions), 'partition')} checked, {counted(errors, 'error')}")
    if any(f.severity is Severity.ERROR for f in iter_findings(reports)):
        status = max(status, 1)
    return status


def _finding_json(finding: Any) -> dict[str, Any]:
    return {"severity": finding.severity.value, "path": finding.path, "message": finding.message}


def _partition_json(p: PartitionReport) -> dict[str, Any]:
    return {"type": "partition", "dir": str(p.dir),
            "topic": p.topic_partition.topic if p.topic_partition else None,
            "partition": p.topic_partition.partition if p.topic_partition else None,
            "segments": p.segments, "batches": p.batches, "records": p.records, "bytes": p.size,
            "logStartOffset": p.log_start_offset, "logEndOffset": p.log_end_offset, "ok": p.ok,
            "findings": [_finding_json(f) for f in p.findings]}

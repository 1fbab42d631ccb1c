"""``kafkalog demo`` / ``make tour``: a narrated tour of Kafka's log layer on a fresh directory.

Each step says what Kafka does and shows it happening on disk:

1. a LogManager creates two partitions in a log dir laid out as a broker's;
2. appends in every message format (v0, v1 gzip, v2 with zstd, headers, LogAppendTime), rolling
   segments as ``segment.bytes`` fills;
3. reads by offset (the offset index finds the position) and by timestamp (the time index);
4. retention by size deletes the oldest segments and moves the log start offset;
5. the cleaner compacts a keyed topic: each key's latest value is kept, tombstones remove keys;
6. a crash: a torn write and a lost index, then recovery truncates and rebuilds;
7. the result, dumped as Kafka's ``kafka-dump-log.sh`` prints it.

Run ``kafkalog demo [--dir DIR]`` (or ``python -m kafkalog demo``); without ``--dir`` a temporary
directory is used and removed afterwards.  ``make demo`` is the other demo, the Spark job
(:mod:`kafkalog.spark.demo`).
"""

from __future__ import annotations

import argparse
import io
import sys
from typing import Any, TextIO

from .. import implementation
from ..cleaner.config import CleanerConfig
from ..config.log_config import LogConfig
from ..fsutil import work_directory
from ..log import Log
from ..manager.log_manager import LogManager
from ..record import MemoryRecords
from ..topic import TopicPartition
from .console import Console, counted
from .dump import DumpLogSegments, DumpOptions
from .help_text import description

__all__ = ["add_parser", "run", "tour"]

BASE_TIME = 1_700_000_000_000


class _Narrator:
    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.step = 0

    def heading(self, text: str) -> None:
        self.step += 1
        self.out.write(f"\n== {self.step}. {text}\n")

    def say(self, text: str) -> None:
        self.out.write(f"   {text}\n")


def _segments(log: Log) -> str:
    return ", ".join(f"{s.base_offset}({s.size()} B)" for s in log.log_segments())


def _show(value: bytes | None) -> str:
    return "null" if value is None else value.decode("utf-8", errors="replace")


def _append_formats(say: _Narrator, log: Log) -> None:
    leo = log.log_end_offset
    # A follower's append keeps each batch as written, so old formats can sit beside new ones.
    v0 = MemoryRecords.with_records([(b"k0", f"v0 message {i}".encode(), BASE_TIME + i) for i in range(3)],
                                    magic=0, base_offset=leo)
    log.append(v0, assign_offsets=False)
    say.say(f"v0 messages (Kafka 0.8-0.9, no timestamps)      offsets {leo}..{log.log_end_offset - 1}")
    leo = log.log_end_offset
    v1 = MemoryRecords.with_records([(b"k1", f"v1 gzip {i}".encode(), BASE_TIME + 10 + i) for i in range(5)],
                                    magic=1, compression="gzip", base_offset=leo)
    log.append(v1, assign_offsets=False)
    say.say(f"a v1 gzip wrapper (Kafka 0.10, CreateTime)       offsets {leo}..{log.log_end_offset - 1}")
    for n in range(12):
        records = [(f"order-{n}".encode(), f"created #{n}.{i} {'x' * 60}".encode(), BASE_TIME + 100 * n + i,
                    [("trace", f"{n}-{i}".encode())]) for i in range(4)]
        info = log.append(MemoryRecords.with_records(records, compression="zstd" if n % 2 else "none"))
        if n in (0, 1):
            codec = "zstd" if n % 2 else "none"
            say.say(f"a v2 batch, {codec:<4}, with headers (leader append)   offsets "
                    f"{info.first_offset}..{info.last_offset}")
    say.say(f"... and 10 more v2 batches. Log end offset {log.log_end_offset}; segments (base offset and size): "
            f"{_segments(log)}")


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "demo", help="a narrated tour: append, roll, read, retention, compaction, crash and recovery, dump",
        description=description(__doc__))
    parser.add_argument("--dir", help="work in this directory (kept afterwards) instead of a temporary one")
    parser.set_defaults(run=run)
    return parser


def run(args: argparse.Namespace, console: Console) -> int:
    return tour(args.dir, console.out)


def tour(directory: str | None = None, out: TextIO = sys.stdout) -> int:
    """Run the tour in ``directory`` (kept), or in a temporary directory (removed), narrating to ``out``."""
    say = _Narrator(out)
    out.write(f"kafkalog tour ({implementation()} kernels)\n")
    with work_directory(directory, "kafkalog-demo-") as root:
        log_dir = root / "kafka-logs"
        config = LogConfig({"segment.bytes": 1024, "index.interval.bytes": 256, "retention.ms": -1})
        compacted = LogConfig({"segment.bytes": 1024, "cleanup.policy": "compact", "min.cleanable.dirty.ratio": 0.01})

        say.heading("A log dir, laid out as a broker's log.dirs")
        with LogManager(log_dir, config, {"users": compacted}, CleanerConfig.from_enable(True)) as manager:
            orders = manager.create_log(TopicPartition("orders", 0))
            users = manager.create_log(TopicPartition("users", 0))
            say.say(f"{log_dir}: {', '.join(sorted(p.name for p in log_dir.iterdir()))}")
            say.say("Each partition is a directory <topic>-<partition>; the checkpoints record per partition "
                    "how far it is flushed and where it starts.")

            say.heading("Appending in every message format; segments roll at segment.bytes (1 KiB here)")
            _append_formats(say, orders)
            names = sorted(p.name for p in orders.dir.iterdir())
            say.say(f"{orders.dir.name}/ holds {counted(len(names), 'file')}, e.g. {', '.join(names[:3])}")
            say.say("A segment is <base offset>.log with its .index (offset -> byte position, every "
                    "index.interval.bytes) and .timeindex (timestamp -> offset).")

            say.heading("Reading by offset and by timestamp")
            fetch = orders.read(20, max_length=300)
            first = next(iter(fetch.records.records()))
            say.say(f"read(20): the offset index points into segment {fetch.fetch_offset_metadata.segment_base_offset}"
                    f" at byte {fetch.fetch_offset_metadata.relative_position_in_segment}; first record: offset "
                    f"{first.offset}, key {_show(first.key)}, headers {first.headers}")
            found = orders.find_offset_by_timestamp(BASE_TIME + 500)
            answer = "no record" if found is None else f"offset {found.offset} (timestamp {found.timestamp})"
            say.say(f"find_offset_by_timestamp({BASE_TIME + 500}): the time index answers {answer}")

            say.heading("Retention: retention.bytes deletes the oldest segments")
            before = orders.log_start_offset, orders.number_of_segments
            orders.config = LogConfig({**config.to_props(), "retention.bytes": 3000})
            deleted = orders.delete_old_segments()
            say.say(f"deleted {counted(deleted, 'segment')}; log start offset {before[0]} -> "
                    f"{orders.log_start_offset}, {counted(before[1], 'segment')} -> "
                    f"{counted(orders.number_of_segments, 'segment')}")

            say.heading("Compaction: the cleaner keeps each key's latest record")
            for round_ in range(6):
                batch: list[tuple[bytes, bytes | None, int]] = [
                    (f"user-{u}".encode(), f"profile v{round_} of user {u}".encode(), BASE_TIME + round_)
                         for u in range(8)]
                if round_ == 5:
                    batch.append((b"user-3", None, BASE_TIME + 9))  # a tombstone deletes user-3
                users.append(MemoryRecords.with_records(batch))
            users.roll()
            records_before = sum(1 for _ in users.records())
            size_before = users.size
            stats = manager.cleaner.run_once() if manager.cleaner is not None else []
            latest = {r.key: r.value for r in users.records()}
            say.say(f"{counted(len(stats), 'cleaning round')}: {counted(records_before, 'record')}, {size_before} B -> "
                    f"{counted(sum(1 for _ in users.records()), 'record')}, {users.size} B")
            say.say(f"user-0 -> {_show(latest.get(b'user-0'))!r}; user-3 -> {_show(latest.get(b'user-3'))} "
                    "(its tombstone stays for delete.retention.ms, then goes too)")
            orders_dir = orders.dir

        say.heading("A crash: a torn write and a lost index, then recovery")
        active = sorted(orders_dir.glob("*.log"))[-1]
        with open(active, "ab") as f:
            f.write(b"\x00\x00\x00\x00\x00\x00\x00\x99\x00\x00\x01\x00half a batch")
        sorted(orders_dir.glob("*.index"))[0].unlink()
        (log_dir / ".kafka_cleanshutdown").unlink(missing_ok=True)
        say.say(f"appended 24 bytes of a torn batch to {active.name}, deleted an index, removed the clean-shutdown "
                "marker")
        with Log(orders_dir, config, had_clean_shutdown=False) as reopened:
            report = reopened.load_report
            for base, reason in report.rebuilt_indexes:
                say.say(f"segment {base}: indexes rebuilt ({reason})")
            for base, truncated in report.recovered_segments:
                if truncated:
                    say.say(f"segment {base}: {counted(truncated, 'byte')} of torn write truncated")
            say.say(f"log end offset after recovery: {reopened.log_end_offset}")

        say.heading("The result, as kafka-dump-log.sh --deep-iteration prints it")
        buffer = io.StringIO()
        console = Console(buffer, buffer, progress=False)
        DumpLogSegments(DumpOptions([str(active)], deep_iteration=True), console).run()
        lines = buffer.getvalue().splitlines()
        for line in lines[:8]:
            say.say(line if len(line) <= 160 else line[:157] + "...")
        if len(lines) > 8:
            say.say(f"... {counted(len(lines) - 8, 'more line')}")
    out.write("\nDone: every step above ran on real segment files through kafkalog's port of Kafka's log layer.\n")
    return 0



if __name__ == "__main__":  # python -m kafkalog.cli.demo: the same as kafkalog demo
    from . import main

    sys.exit(main(["demo", *sys.argv[1:]]))

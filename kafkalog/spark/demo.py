"""``make demo``: kafkalog's main job, end to end on Spark.

1. A keyed workload (:mod:`kafkalog.spark.workload`: four topics, 12 partitions, message formats v0 snappy,
   v1 gzip, v2 zstd/none and v2 lz4 with headers, updates and deletes) is written into two log dirs
   through :class:`~kafkalog.manager.log_manager.LogManager`, as a broker would have written them.
2. Spark reads it back with the ``kafkalog`` data source and computes per-topic statistics and the
   latest value of every key (``max_by(value, offset)``), which it saves as Parquet: the answer the
   cleaner must reach.
3. :func:`kafkalog.spark.compact` runs Kafka's cleaner on every partition whose ``cleanup.policy`` compacts,
   one Spark task a log dir.
4. The compacted log, read through Spark again, must hold exactly the latest record of every key (same
   offset, same value, tombstones aside) and the ``delete``-policy topic must be untouched.  The job
   prints a summary (records and bytes before and after, throughput) and exits 1 if a check fails.

With ``--cluster`` the same job runs on a Spark standalone cluster started on this machine (a master and two
workers, :mod:`kafkalog.spark.standalone`), and step 2 reads the log dirs from an S3-compatible server on
127.0.0.1 they were uploaded to: the executors see the data only through S3, as on a real cluster.  Both are
stopped when the job ends.  ``make demo-cluster`` runs it.

Run ``python -m kafkalog.spark.demo [--master URL | --cluster] [--records N] [--keys K] [--keep DIR]``.  Without
``--keep`` the job works in a temporary directory, removed when it exits, and says so; ``--keep DIR`` works
in ``DIR`` and leaves the log dirs and the Parquet file there.  Spark starts quietly
(:mod:`kafkalog.spark.quiet`).  The narrated tour of the log layer itself is ``kafkalog demo``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from .. import implementation
from ..cli.help_text import description
from ..fsutil import work_directory
from ..urls.local_s3 import S3Server
from .workload import TOPICS, WorkloadResult, topic_configs, write_workload

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["Checks", "DemoResult", "check_compacted", "main", "run"]

#: The bucket ``--cluster`` uploads the log dirs to.
DEMO_BUCKET = "kafkalog-demo"


@dataclass
class DemoResult:
    """What :func:`run` found: the checks and the figures of the summary."""

    workload: WorkloadResult
    rows_read: int
    read_s: float
    latest_keys: int
    compact_s: float
    records_before: int
    records_after: int
    bytes_before: int
    bytes_after: int
    missing: int
    unexpected: int
    duplicate_keys: int
    untouched_topics_ok: bool

    @property
    def ok(self) -> bool:
        return self.missing == 0 and self.unexpected == 0 and self.duplicate_keys == 0 and self.untouched_topics_ok


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def _table(out: TextIO, header: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    cells = [list(header)] + [[f"{c:,}" if isinstance(c, int) else str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    for n, row in enumerate(cells):
        # The first column (a name) is left-aligned, the figures right-aligned.
        aligned = (c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True)))
        out.write("   " + "  ".join(aligned) + "\n")
        if n == 0:
            out.write("   " + "  ".join("-" * w for w in widths) + "\n")


def _per_topic_sizes(spark: SparkSession, log_dirs: list[str]) -> dict[str, tuple[int, int, int]]:
    from pyspark.sql import functions as F

    from . import stats

    rows = stats(spark, log_dirs).groupBy("topic").agg(
        F.sum("records").alias("records"), F.sum("size").alias("size"), F.sum("segments").alias("segments")).collect()
    return {r.topic: (int(r.records), int(r.size), int(r.segments)) for r in rows}


def _latest_values(df: DataFrame) -> DataFrame:
    """The last record of every key of every partition: what compaction keeps (a null value is a delete)."""
    from pyspark.sql import functions as F

    return (df.where(F.col("key").isNotNull())
              .groupBy("topic", "partition", "key")
              .agg(F.max("offset").alias("offset"), F.max_by("value", "offset").alias("value")))


def run(master: str = "local[*]", records: int = 1_000_000, keys: int | None = None, directory: str | None = None,
        out: TextIO = sys.stdout, spark: SparkSession | None = None, s3: S3Server | None = None) -> DemoResult:
    """Run the job (see the module docstring) and print its summary to ``out``.  ``spark``: an existing
    session to use (the ``kafkalog`` source is registered on it); by default one is started on ``master``
    and stopped at the end.  ``s3``: an S3-compatible server; the log dirs are then uploaded to it once
    written, and step 2 reads them from there."""
    from pyspark.sql import functions as F

    from . import compact, register, session

    own_session = spark is None
    # The job's own summary is the output: session() starts Spark without its start-up lines, at ERROR.
    spark = session(master, "kafkalog-demo") if spark is None else register(spark)
    cores = spark.sparkContext.defaultParallelism
    try:
        with work_directory(directory, "kafkalog-spark-demo-") as root:
            log_dirs = [str(root / "kafka-logs-1"), str(root / "kafka-logs-2")]
            compacted = [t.name for t in TOPICS if t.compacted]
            kept = [t.name for t in TOPICS if not t.compacted]
            where = (f"in {root}" if directory is not None else
                     f"in the temporary directory {root}, removed at exit (--keep DIR keeps the files)")
            out.write(f"kafkalog demo on Spark {spark.version} ({spark.sparkContext.master}, {cores} task slots, "
                      f"{implementation()} kernels), {where}\n")

            out.write(f"\n1. Writing {records:,} records into {len(log_dirs)} log dirs through LogManager\n")
            workload = write_workload(log_dirs, records, keys=keys)
            sizes_before = _per_topic_sizes(spark, log_dirs)
            out.write(f"   {workload.total_records:,} records in {workload.batches:,} producer batches, "
                      f"{workload.elapsed_s:.1f} s ({workload.total_records / max(workload.elapsed_s, 1e-9):,.0f} "
                      "records/s)\n")
            _table(out, ("topic", "partitions", "format", "records", "deletes", "segments", "bytes"), [
                (t.name, t.partitions, _format_of(t.config, t.producer_codecs), workload.records[t.name],
                 workload.deletes[t.name], sizes_before[t.name][2], _size(sizes_before[t.name][1]))
                for t in TOPICS])

            if s3 is None:
                out.write('\n2. Reading it back: spark.read.format("kafkalog")\n')
                df = spark.read.format("kafkalog").load(log_dirs)
            else:
                started = time.perf_counter()
                urls = [s3.upload(Path(d), f"{DEMO_BUCKET}/{Path(d).name}") for d in log_dirs]
                out.write(f"\n2. Reading it back from S3: the log dirs uploaded to {s3.endpoint} "
                          f"({time.perf_counter() - started:.1f} s), spark.read.format(\"kafkalog\")"
                          f".load({urls[0]!r}, ...)\n")
                reader = spark.read.format("kafkalog")
                for name, value in s3.options.items():
                    reader = reader.option(f"storage.{name}", value)
                df = reader.load(urls)
            started = time.perf_counter()
            per_topic = (df.groupBy("topic").agg(
                F.count(F.lit(1)).alias("rows"), F.countDistinct("partition").alias("partitions"),
                F.countDistinct("key").alias("keys"), F.sum(F.col("value").isNull().cast("long")).alias("deletes"),
                F.sum(F.length("key") + F.coalesce(F.length("value"), F.lit(0))).alias("bytes"),
                # v0 messages have no timestamp (timestampType -1): left out of the range
                F.min(F.when(F.col("timestampType") >= 0, F.col("timestamp"))).alias("first"),
                F.max(F.when(F.col("timestampType") >= 0, F.col("timestamp"))).alias("last"))
                .orderBy("topic").collect())
            read_s = time.perf_counter() - started
            rows_read = sum(r.rows for r in per_topic)
            payload = sum(r.bytes for r in per_topic)
            out.write(f"   {rows_read:,} rows read and aggregated in {read_s:.1f} s: {rows_read / read_s:,.0f} rows/s, "
                      f"{_size(payload / read_s)}/s of keys and values\n")
            _table(out, ("topic", "rows", "distinct keys", "deletes", "key+value bytes", "first timestamp",
                         "last timestamp"), [
                (r.topic, r.rows, r.keys, r.deletes, _size(r.bytes), _when(r.first), _when(r.last))
                for r in per_topic])

            latest_path = str(root / "latest-values.parquet")
            _latest_values(df.where(F.col("topic").isin(compacted))).write.mode("overwrite").parquet(latest_path)
            latest = spark.read.parquet(latest_path)
            latest_keys = latest.where(F.col("value").isNotNull()).count()
            kept_rows = df.where(F.col("topic").isin(kept)).count() if kept else 0
            out.write(f"   latest value per key of the compacted topics: {latest_keys:,} live keys "
                      f"({latest.count() - latest_keys:,} deleted), saved to {Path(latest_path).name}"
                      f"{'' if directory is not None else ' (temporary)'}\n")

            out.write(f"\n3. Compacting: kafkalog.spark.compact(spark, log_dirs) over {len(compacted)} topics\n")
            started = time.perf_counter()
            # The workload says each topic's cleanup.policy (its log dirs hold no KRaft metadata log to say
            # it); the clicks topic, cleanup.policy=delete, comes back as a row that says it was skipped.
            rounds = compact(spark, log_dirs, topic_configs=topic_configs()).where(F.col("skipped").isNull())
            cleaned = rounds.groupBy("topic").agg(
                F.count(F.lit(1)).alias("rounds"), F.sum("bytes_read").alias("read"),
                F.sum("bytes_written").alias("written"), F.sum("messages_read").alias("messages_read"),
                F.sum("messages_written").alias("messages_written")).orderBy("topic").collect()
            compact_s = time.perf_counter() - started
            bytes_read = sum(r.read for r in cleaned)
            out.write(f"   {len(cleaned)} topics, {sum(r.rounds for r in cleaned)} cleaning rounds in "
                      f"{compact_s:.1f} s "
                      f"({_size(bytes_read / compact_s)}/s read by the cleaners)\n")
            sizes_after = _per_topic_sizes(spark, log_dirs)
            _table(out, ("topic", "records before", "records after", "bytes before", "bytes after", "kept"), [
                (t.name, sizes_before[t.name][0], sizes_after[t.name][0], _size(sizes_before[t.name][1]),
                 _size(sizes_after[t.name][1]), f"{sizes_after[t.name][1] / max(sizes_before[t.name][1], 1):.0%}")
                for t in TOPICS])

            out.write("\n4. Checking the compacted log, read through Spark, against the latest values\n")
            after = spark.read.format("kafkalog").load(log_dirs)
            checks = check_compacted(after, latest, compacted, kept, kept_rows)
            missing, unexpected, duplicate_keys = checks.missing, checks.unexpected, checks.duplicate_keys
            kept_after, untouched_ok = checks.kept_rows, checks.kept_rows == kept_rows
            out.write(f"   every live key's latest record kept (same offset, same value): "
                      f"{_verdict(missing == 0)} ({missing:,} missing)\n")
            out.write(f"   nothing else left but tombstones: {_verdict(unexpected == 0)} "
                      f"({unexpected:,} other records)\n")
            out.write(f"   no key twice in a partition: {_verdict(duplicate_keys == 0)} ({duplicate_keys:,} keys)\n")
            out.write(f"   {', '.join(kept)} (cleanup.policy=delete) untouched: {_verdict(untouched_ok)} "
                      f"({kept_rows:,} -> {kept_after:,} rows)\n")

            records_before = sum(v[0] for v in sizes_before.values())
            records_after = sum(v[0] for v in sizes_after.values())
            bytes_before = sum(v[1] for v in sizes_before.values())
            bytes_after = sum(v[1] for v in sizes_after.values())
            result = DemoResult(workload, rows_read, read_s, latest_keys, compact_s, records_before, records_after,
                                bytes_before, bytes_after, missing, unexpected, duplicate_keys, untouched_ok)
            out.write(f"\nSummary: {records_before:,} records ({_size(bytes_before)}) -> {records_after:,} records "
                      f"({_size(bytes_after)}); read {rows_read / read_s:,.0f} rows/s; compacted "
                      f"{_size(bytes_read / compact_s)}/s.  "
                      f"{'All checks passed.' if result.ok else 'CHECKS FAILED.'}\n")
            if directory is not None:
                out.write(f"Kept in {root}: {', '.join(Path(d).name for d in log_dirs)} (the compacted log dirs) and "
                          f"{Path(latest_path).name}\n")
            return result
    finally:
        if own_session:
            spark.stop()


@dataclass
class Checks:
    """What :func:`check_compacted` counted (every count is 0 for a correctly compacted log)."""

    missing: int
    unexpected: int
    duplicate_keys: int
    kept_rows: int


def check_compacted(after: DataFrame, latest: DataFrame, compacted: Sequence[str], kept: Sequence[str],
                    kept_rows: int) -> Checks:
    """Compare a compacted log (``after``, as the data source reads it) with the latest records computed
    before compaction (``latest``: topic, partition, key, offset, value).

    ``missing``: latest live records (non-null value) not in the compacted topics of ``after`` with the
    same offset and value; ``unexpected``: live records of ``after`` that are not latest; ``duplicate_keys``:
    keys found more than once in a partition of ``after``; ``kept_rows``: rows of the ``kept`` topics (not
    compacted), to compare with ``kept_rows`` before.
    """
    from pyspark.sql import functions as F

    columns = ("topic", "partition", "key", "offset", "value")
    live_after = after.where(F.col("topic").isin(list(compacted)) & F.col("value").isNotNull()).select(*columns)
    live_latest = latest.where(F.col("value").isNotNull()).select(*columns)
    duplicate_keys = (after.where(F.col("topic").isin(list(compacted))).groupBy("topic", "partition", "key")
                      .count().where(F.col("count") > 1).count())
    return Checks(live_latest.exceptAll(live_after).count(), live_after.exceptAll(live_latest).count(),
                  duplicate_keys, after.where(F.col("topic").isin(list(kept))).count() if kept else 0)


def _format_of(config: Any, producer_codecs: Sequence[str]) -> str:
    from ..config.log_config import LogConfig

    log_config = LogConfig(dict(config))
    codec = log_config.compression_type
    codecs = "/".join(producer_codecs) if codec == "producer" else codec
    return f"v{log_config.record_version()} {codecs}"


def _when(value: Any) -> str:
    return "-" if value is None else value.strftime("%Y-%m-%d %H:%M:%S")


def _verdict(ok: bool) -> str:
    return "ok" if ok else "FAILED"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kafkalog.spark.demo", description=description(__doc__))
    parser.add_argument("--master", default=None,
                        help="Spark master URL (default $KAFKALOG_SPARK_MASTER, or local[*]: an embedded Spark using "
                             "every core)")
    parser.add_argument("--records", type=_positive, default=1_000_000, help="records to write (default 1,000,000)")
    parser.add_argument("--keys", type=_positive, default=None,
                        help="distinct keys per topic (default records / 20)")
    parser.add_argument("--keep", "--dir", dest="dir", metavar="DIR",
                        help="work in DIR and keep the log dirs and the Parquet file there (default: a temporary "
                             "directory, removed at exit)")
    parser.add_argument("--cluster", action="store_true",
                        help="run on a Spark standalone cluster started on this machine (a master and two workers) "
                             "and read the log dirs through an S3-compatible server on 127.0.0.1, both stopped at "
                             "the end (needs the storage and test extras: moto's server)")
    args = parser.parse_args(argv)
    if args.dir is not None and any(Path(args.dir).glob("kafka-logs-*/*-*")):
        parser.error(f"{args.dir} already holds partitions from an earlier run; give an empty or new directory")
    if args.cluster and args.master is not None:
        parser.error("--cluster starts its own master: give --cluster or --master, not both")
    if not args.cluster:
        master = args.master or os.environ.get("KAFKALOG_SPARK_MASTER", "local[*]")
        result = run(master, args.records, args.keys, args.dir)
        return 0 if result.ok else 1
    return _run_on_cluster(args.records, args.keys, args.dir)


def _run_on_cluster(records: int, keys: int | None, directory: str | None) -> int:
    """The job on a local standalone cluster, reading through a local S3 server: the way past one machine,
    in small (see :mod:`kafkalog.spark.standalone`)."""
    from ..urls.local_s3 import s3_server
    from .standalone import StandaloneCluster

    started = time.perf_counter()
    with s3_server(buckets=(DEMO_BUCKET,)) as s3, StandaloneCluster(workers=2, cores=1) as cluster:
        print(f"A Spark standalone cluster ({cluster.master_url}, two workers of one core) and an S3 server "
              f"({s3.endpoint}) started in {time.perf_counter() - started:.1f} s", flush=True)
        # Executors are the workers' processes: each gets its own memory, not the driver's.
        from . import session

        spark = session(cluster.master_url, "kafkalog-demo-cluster", spark_executor_cores=1,
                        spark_executor_memory="1g")
        try:
            result = run(cluster.master_url, records, keys, directory, spark=spark, s3=s3)
        finally:
            spark.stop()
    return 0 if result.ok else 1


def _positive(text: str) -> int:
    try:
        value = int(text.replace("_", "").replace(",", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


if __name__ == "__main__":
    sys.exit(main())

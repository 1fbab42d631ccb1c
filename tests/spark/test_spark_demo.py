"""``make demo``'s job (:mod:`kafkalog.spark.demo`) on a small workload, on the test session's Spark, with
its verdicts checked independently through the library."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

pyspark = pytest.importorskip("pyspark", reason="the spark extra is not installed")

from kafkalog.spark.demo import check_compacted, main, run  # noqa: E402
from kafkalog.spark.workload import TOPICS, write_workload  # noqa: E402
from kafkalog.tools.partition_dir import PartitionDir  # noqa: E402

pytestmark = pytest.mark.slow

RECORDS = 12_000


def latest_by_library(root: Path) -> dict[tuple[str, int, bytes], tuple[int, bytes | None]]:
    """Each key's last record (offset, value) in every partition under ``root``, read with the library."""
    latest: dict[tuple[str, int, bytes], tuple[int, bytes | None]] = {}
    for path in sorted(p for p in root.glob("kafka-logs-*/*-*") if p.is_dir()):
        partition = PartitionDir.of(path)
        tp = partition.topic_partition
        with partition.open_read_only() as log:
            for record in log.records():
                assert record.key is not None
                latest[(tp.topic, tp.partition, record.key)] = (record.offset, record.value)
    return latest


def test_the_demo_compacts_to_the_latest_values(spark: Any, tmp_path: Path) -> None:
    out = io.StringIO()
    result = run(records=RECORDS, keys=300, directory=str(tmp_path / "run"), out=out, spark=spark)
    text = out.getvalue()
    assert result.ok, text
    assert "All checks passed." in text and "FAILED" not in text
    for heading in ("1. Writing", "2. Reading", "3. Compacting", "4. Checking", "Summary:"):
        assert heading in text
    assert result.workload.total_records == result.rows_read == result.records_before == RECORDS
    assert result.records_after < result.records_before and result.bytes_after < result.bytes_before

    # The same workload again (it is deterministic but for timestamps), uncompacted, read by the library.
    write_workload([tmp_path / "again" / "kafka-logs-1", tmp_path / "again" / "kafka-logs-2"], RECORDS, keys=300)
    compacted = {t.name for t in TOPICS if t.compacted}
    before = latest_by_library(tmp_path / "again")
    live = {k: v for k, v in before.items() if k[0] in compacted and v[1] is not None}
    assert result.latest_keys == len(live)
    after = latest_by_library(tmp_path / "run")
    assert {k: v for k, v in after.items() if k[0] in compacted and v[1] is not None} == live
    clicks_before = sum(1 for k in before if k[0] == "clicks")
    assert clicks_before == sum(1 for k in after if k[0] == "clicks")


def test_the_checks_catch_a_log_that_was_not_compacted(spark: Any, tmp_path: Path) -> None:
    dirs = [str(tmp_path / "kafka-logs-1"), str(tmp_path / "kafka-logs-2")]
    write_workload(dirs, 4000, keys=50)
    from pyspark.sql import functions as F

    df = spark.read.format("kafkalog").load(dirs)
    compacted = [t.name for t in TOPICS if t.compacted]
    latest = (df.where(F.col("topic").isin(compacted)).groupBy("topic", "partition", "key")
              .agg(F.max("offset").alias("offset"), F.max_by("value", "offset").alias("value")))
    clean = check_compacted(df, latest, compacted, ["clicks"], 0)
    assert clean.missing == 0  # every latest record is there ...
    assert clean.unexpected > 0 and clean.duplicate_keys > 0  # ... among the older ones
    assert clean.kept_rows == df.where(F.col("topic") == "clicks").count() > 0
    # and latest values that are not in the log are missing (deleted keys given a value included)
    wrong = latest.withColumn("value", F.lit(b"not what was written"))
    assert check_compacted(df, wrong, compacted, [], 0).missing == latest.count()


def test_demo_command_line_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["--records", "0"], ["--records", "many"], ["--keys", "-3"]):
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        assert exit_info.value.code == 2
    assert "must be at least 1" in capsys.readouterr().err
    write_workload([tmp_path / "kafka-logs-1"], 100)
    with pytest.raises(SystemExit) as exit_info:
        main(["--dir", str(tmp_path), "--records", "100"])
    assert exit_info.value.code == 2
    assert "earlier run" in capsys.readouterr().err


def test_without_keep_the_demo_says_its_directory_is_temporary(spark: Any) -> None:
    out = io.StringIO()
    assert run(records=2000, keys=50, out=out, spark=spark).ok
    text = out.getvalue()
    first = text.splitlines()[0]
    assert first.endswith("removed at exit (--keep DIR keeps the files)")
    root = Path(first.split("in the temporary directory ")[1].split(",")[0])
    assert not root.exists()  # removed, as it said
    assert "saved to latest-values.parquet (temporary)" in text and "Kept in" not in text


def test_make_demo_starts_spark_quietly_and_keeps_what_it_saved(tmp_path: Path) -> None:
    """The job as ``make demo`` runs it, in its own process and JVM: stderr holds none of the start-up lines
    a default local session prints, the JDK's incubator-module warning included (kafkalog.spark.quiet): it
    is empty.  With --keep, what it says it saved is there when it exits."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_LOCAL_IP", "KAFKALOG_SPARK_MASTER")}
    keep = tmp_path / "kept"
    done = subprocess.run([sys.executable, "-m", "kafkalog.spark.demo", "--records", "3000", "--keys", "100",
                           "--master", "local[1]", "--keep", str(keep)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stderr == ""
    assert f"in {keep}\n" in done.stdout and "All checks passed." in done.stdout
    assert done.stdout.rstrip().endswith(f"Kept in {keep}: kafka-logs-1, kafka-logs-2 (the compacted log dirs) and "
                                         "latest-values.parquet")
    assert (keep / "latest-values.parquet").is_dir() and list((keep / "latest-values.parquet").glob("*.parquet"))
    assert list((keep / "kafka-logs-1").glob("users-*/*.log"))

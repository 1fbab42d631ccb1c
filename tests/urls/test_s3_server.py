"""Reading through a real S3-compatible server: moto's server on 127.0.0.1 (:mod:`tests.support.s3_server`),
holding a log dir written by kafkalog and, when ``../shared/golden`` is there, broker-written ones.  What the
URL read gives (dump's output, stats, verify, records, the planner's facts) is what the local read gives."""

from __future__ import annotations

import io
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("s3fs")
pytest.importorskip("moto.server")

from kafkalog.cli import main
from kafkalog.log.consumer_view import ConsumerView
from kafkalog.partition_view.sources import UrlDir
from kafkalog.tools.partition_dir import PartitionDir, partition_dirs
from kafkalog.urls import StorageLocation, locate
from kafkalog.urls.local_s3 import S3Server
from kafkalog.urls.partition import UrlPartition, remote_partition_dirs
from tests.support.golden_data import BULLSHIT, GOLDEN, SHARAWEIL
from tests.urls.remote_data import PARTITIONS, uploaded_logs

# A server started for the module and every read a request to it: the module takes ~10 s in all.
pytestmark = pytest.mark.slow

BUCKET = "kafkalog-test"
GOLDEN_DIRS = {"bullshit": BULLSHIT, "sharaweil": SHARAWEIL}


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[S3Server, Path]]:
    """The server, with the test log dir at ``s3://kafkalog-test/logs`` and the golden dirs (when present) at
    ``s3://kafkalog-test/golden/<name>``; the local copies beside."""
    with uploaded_logs(tmp_path_factory.mktemp("s3-data"), BUCKET, GOLDEN_DIRS) as found:
        yield found


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main(["--no-progress", *argv], stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


def _dirs(s3: tuple[S3Server, Path], golden: bool) -> list[tuple[Path, str]]:
    _server, root = s3
    if not golden:
        return [(root / "logs", f"s3://{BUCKET}/logs")]
    if not (root / "golden").is_dir():
        pytest.skip(f"golden data not found at {GOLDEN}")
    return [(root / "golden" / name, f"s3://{BUCKET}/golden/{name}") for name in GOLDEN_DIRS]


@pytest.mark.parametrize("golden", [False, True], ids=["kafkalog", "golden"])
def test_dump_of_a_url_prints_what_the_local_dump_prints(s3: tuple[S3Server, Path], golden: bool) -> None:
    server, _root = s3
    for local, url in _dirs(s3, golden):
        for partition in partition_dirs(local):
            if partition.name.endswith(("-delete", "-future")):
                continue
            remote = f"{url}/{partition.name}"
            status, out, err = run("dump", "--deep-iteration", "--print-data-log", "--files", remote,
                                   *server.cli_options())
            local_status, local_out, local_err = run("dump", "--deep-iteration", "--print-data-log", "--files",
                                                     str(partition))
            assert status == local_status, (err, local_err)
            assert out == local_out.replace(str(local), url)
            assert err == local_err.replace(str(local), url)


def _normalised(text: str, local: Path, url: str) -> str:
    """The output with the dir's name, local or remote, made one (a verify report's ``dir`` is the object's
    path, ``bucket/prefix/...``)."""
    return text.replace(url, "<dir>").replace(url.removeprefix("s3://"), "<dir>").replace(str(local), "<dir>")


def _assert_same_output(server: S3Server, local: Path, url: str, *argv: str) -> tuple[int, str]:
    status, out, err = run(*argv, url, *server.cli_options())
    local_status, local_out, local_err = run(*argv, str(local))
    assert status == local_status, (err, local_err)
    assert _normalised(out, local, url) == _normalised(local_out, local, url)
    assert _normalised(err, local, url) == _normalised(local_err, local, url)
    return status, _normalised(out, local, url)


@pytest.mark.parametrize("golden", [False, True], ids=["kafkalog", "golden"])
def test_stats_and_verify_of_a_url_match_the_local_ones(s3: tuple[S3Server, Path], golden: bool) -> None:
    """Every line alike: the partitions' rows and findings (segments, indexes, snapshots, leader-epoch
    checkpoints, transaction indexes), the log dir's checkpoint findings, the dirty ratios."""
    server, _root = s3
    for local, url in _dirs(s3, golden):
        _status, out = _assert_same_output(server, local, url, "stats", "--json")
        assert len(out.splitlines()) > 0
        _assert_same_output(server, local, url, "verify", "--json", "--notes")
        _assert_same_output(server, local, url, "verify", "--notes")


def test_damaged_and_empty_small_objects_give_the_local_findings(s3: tuple[S3Server, Path],
                                                                 tmp_path: Path) -> None:
    """Through a real S3 server: a corrupt snapshot, a corrupt leader-epoch checkpoint, a corrupt log-dir
    checkpoint, and empty objects (which S3 refuses a byte range of) read as the files read locally."""
    server, root = s3
    local = tmp_path / "logs"
    shutil.copytree(root / "logs", local)
    (local / "events-0" / "00000000000000000078.snapshot").write_bytes(b"\x00\x01\x00\x00\x00\x00\x00")
    (local / "events-0" / "00000000000000000156.snapshot").write_bytes(b"")
    (local / "events-0" / "leader-epoch-checkpoint").write_bytes(b"0\n3\n0 0\n")
    (local / "events-1" / "leader-epoch-checkpoint").write_bytes(b"")
    (local / "events-1" / "00000000000000000000.txnindex").write_bytes(b"")
    (local / "cleaner-offset-checkpoint").write_bytes(b"")
    (local / "replication-offset-checkpoint").write_bytes(b"0\n1\nevents 0 x\n")
    url = server.upload(local, f"{BUCKET}/damaged")
    status, out = _assert_same_output(server, local, url, "verify", "--notes")
    assert status == 1
    for line in ("ERROR <dir>/events-0/00000000000000000078.snapshot: cannot be read: Snapshot failed schema "
                 "validation: <dir>/events-0/00000000000000000078.snapshot is 7 bytes, shorter than the 10-byte "
                 "header",
                 "ERROR <dir>/events-0/00000000000000000156.snapshot: cannot be read: Snapshot failed schema "
                 "validation",
                 "ERROR <dir>/events-0/leader-epoch-checkpoint: cannot be read: Expected [3] entries",
                 "ERROR <dir>/replication-offset-checkpoint: cannot be read: Malformed line in checkpoint file "
                 "[<dir>/replication-offset-checkpoint]: 'events 0 x' (line 3)"):
        assert line in out
    status, _out = _assert_same_output(server, local, url, "stats", "--json")
    assert status == 0


def test_records_and_offsets_through_s3_match_the_local_read(s3: tuple[S3Server, Path]) -> None:
    server, root = s3
    where = locate(f"s3://{BUCKET}/logs", server.options)
    assert isinstance(where, StorageLocation)
    found = remote_partition_dirs(where)
    assert [d.name for d in found] == sorted(f"{tp.topic}-{tp.partition}" for tp in PARTITIONS)
    for directory in found:
        with UrlPartition.open(directory) as remote, \
                PartitionDir.of(root / "logs" / directory.name).open_read_only() as log:
            assert (remote.log_start_offset, remote.log_end_offset) == (log.log_start_offset, log.log_end_offset)
            view = ConsumerView.of(log, 5)
            got = [(r.offset, r.key, r.value) for r in
                   view.records((s.log, p) for s, p in remote.batches_from(view.start_offset))]
            assert got == [(r.offset, r.key, r.value) for r in view.records(
                (s.log, 0) for s in log.log_segments())]


def test_planner_facts_through_s3_match_the_local_ones(s3: tuple[S3Server, Path]) -> None:
    # The read model needs no PySpark: the facts come from kafkalog.partition_view.
    from kafkalog.partition_view.facts import partition_facts

    server, root = s3
    where = locate(f"s3://{BUCKET}/logs/events-0", server.options)
    assert isinstance(where, StorageLocation)
    stamps = [0, 1_700_000_000_000, 1_700_000_001_234, 1_800_000_000_000]
    facts = partition_facts(where, stamps)
    local = partition_facts(root / "logs" / "events-0", stamps)
    assert facts.dir == f"s3://{BUCKET}/logs/events-0"
    for name in ("topic_partition", "log_start_offset", "log_end_offset", "transactions", "segments",
                 "offsets_for_times"):
        assert getattr(facts, name) == getattr(local, name), name


def test_missing_bucket_and_bad_credentials_are_kafkalog_errors(s3: tuple[S3Server, Path]) -> None:
    server, _root = s3
    status, out, err = run("stats", f"s3://no-such-bucket-{BUCKET}/logs", *server.cli_options())
    assert status == 2 and out == "" and "no such object" in err
    status, out, err = run("dump", "--files", f"s3://{BUCKET}/logs/events-0/00000000000000000099.log",
                           *server.cli_options())
    assert status == 2 and "no such object" in err


def _rows(tasks: list[Any]) -> list[tuple[Any, ...]]:
    rows = []
    for task in tasks:
        for batch in task.read():
            for row in batch.to_pylist():
                rows.append((row["topic"], row["partition"], row["offset"], row["key"], row["value"]))
    return sorted(rows)


def test_read_tasks_of_a_url_pickle_without_a_filesystem_and_read_what_local_tasks_read(
        s3: tuple[S3Server, Path]) -> None:
    pytest.importorskip("pyarrow")
    import pickle

    from kafkalog.spark.options import ReadOptions
    from kafkalog.spark.plan import plan_read

    server, root = s3
    shape = {"maxPartitionBytes": "1500", "startingOffsets": '{"events": {"0": 37, "1": -2}, "audit.log": {"0": 5}}',
             "endingOffsets": '{"events": {"0": 250, "1": -1}, "audit.log": {"0": -1}}'}
    remote_options = ReadOptions.parse({"path": f"s3://{BUCKET}/logs", **shape,
                                        **{f"storage.{k}": str(v) for k, v in server.options.items()}})
    assert remote_options.storage_options == server.options
    remote_tasks = plan_read(remote_options)
    local_tasks = plan_read(ReadOptions.parse({"path": str(root / "logs"), **shape}))
    assert [(t.topic, t.partition, t.slices) for t in remote_tasks] == [
        (t.topic, t.partition, t.slices) for t in local_tasks]
    assert len(remote_tasks) > len(PARTITIONS)  # large segments cut at batch boundaries
    # What Spark ships to a worker: no filesystem, which the worker builds at its first read.
    shipped = [pickle.loads(pickle.dumps(t)) for t in remote_tasks]
    assert all(isinstance(t.source, UrlDir) and t.source.storage._fs == [] for t in shipped)
    rows = _rows(shipped)
    assert rows == _rows(local_tasks) and len(rows) > 100


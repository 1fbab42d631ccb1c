"""kafkalog.urls over memory:// (fsspec's in-process filesystem): URLs and options, partition dirs read by
range giving what the local read-only open gives, ``verify`` and ``stats`` of a URL printing what they print for
the same dir on disk (kafkalog-written, broker-written from ../shared/golden, and damaged), and bad input (URLs,
options, objects) as kafkalog errors."""

from __future__ import annotations

import io
import json
import pickle
import shutil
import struct
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

fsspec = pytest.importorskip("fsspec")

from kafkalog import MemoryRecords, _impl  # noqa: E402
from kafkalog.cli import main  # noqa: E402
from kafkalog.config.log_config import LogConfig  # noqa: E402
from kafkalog.dir_layout import NotAPartitionDirError  # noqa: E402
from kafkalog.errors import (  # noqa: E402
    KafkaLogError,
    KafkaStorageError,
    RemoteResourceNotFoundError,
    RemoteStorageError,
    StorageNotFoundError,
    StorageOptionError,
    StorageURLError,
)
from kafkalog.index import OffsetIndex  # noqa: E402
from kafkalog.log import Log  # noqa: E402
from kafkalog.log.consumer_view import ConsumerView  # noqa: E402
from kafkalog.tools.partition_dir import PartitionDir  # noqa: E402
from kafkalog.tools.verify import verify_remote_partition  # noqa: E402
from kafkalog.transaction_index import AbortedTxn  # noqa: E402
from kafkalog.urls import Storage, StorageLocation, locate, parse_storage_options  # noqa: E402
from kafkalog.urls.channel import RemoteChannel, read_index  # noqa: E402
from kafkalog.urls.partition import UrlPartition, classify_remote_dir, remote_partition_dirs  # noqa: E402
from tests.support.golden_data import ARTHUR, BULLSHIT, DANIELOWO, RONEM, SHARAWEIL  # noqa: E402
from tests.urls.remote_data import FIRST_TIMESTAMP, PARTITIONS, write_log_dir  # noqa: E402


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main(["--no-progress", *argv], stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


@pytest.fixture
def memory_root() -> Iterator[str]:
    """A fresh directory of the process's memory filesystem, removed after the test."""
    fs = fsspec.filesystem("memory")
    root = f"/kafkalog-{uuid.uuid4().hex}"
    fs.mkdir(root)
    yield root
    fs.rm(root, recursive=True)


@pytest.fixture
def logs(impl: ModuleType, tmp_path: Path, memory_root: str) -> tuple[Path, str]:
    """The test log dir on disk and the same bytes at a memory:// URL."""
    local = write_log_dir(tmp_path / "logs")
    fsspec.filesystem("memory").put(str(local), f"{memory_root}/logs", recursive=True)
    return local, f"memory://{memory_root}/logs"


# -- URLs and options --------------------------------------------------------------------------------------

def test_local_paths_and_file_urls_are_local(tmp_path: Path) -> None:
    assert locate(str(tmp_path)) == tmp_path
    assert locate(f"file://{tmp_path}") == tmp_path
    with pytest.raises(StorageURLError, match="not a host"):
        locate("file://somehost/data")


def test_a_url_is_a_location_with_its_options() -> None:
    where = locate("memory://bucket/logs/", {"skip_instance_cache": "true"})
    assert isinstance(where, StorageLocation)
    assert where.path == "/bucket/logs"
    assert where.storage.options == {"skip_instance_cache": True}
    assert where.name == "logs" and where.parent.name == "bucket"


def test_unknown_protocol_is_refused() -> None:
    with pytest.raises(StorageURLError, match="unknown protocol 'nosuch'"):
        locate("nosuch://bucket/logs")


def test_a_missing_filesystem_package_names_the_extra() -> None:
    pytest.importorskip("fsspec")
    try:
        import gcsfs  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("gcsfs is installed")
    with pytest.raises(StorageURLError, match=r"pip install 'kafkalog\[gcs\]'"):
        locate("gs://bucket/logs")


def test_an_option_the_filesystem_does_not_take_is_refused() -> None:
    with pytest.raises(StorageOptionError, match="takes no option no_such_option"):
        locate("memory://bucket/logs", {"no_such_option": "1"})


def test_options_with_a_local_path_are_refused(tmp_path: Path) -> None:
    with pytest.raises(StorageOptionError, match="local path"):
        locate(str(tmp_path), {"key": "x"})


@pytest.mark.parametrize("text", ["endpoint_url", "=x", "bad name=1", ""])
def test_malformed_storage_options(text: str) -> None:
    with pytest.raises(StorageOptionError, match="NAME=VALUE"):
        parse_storage_options([text])


def test_option_values_read_as_json_or_text() -> None:
    assert parse_storage_options(["anon=true", "n=5", "endpoint_url=http://127.0.0.1:9/x=y",
                                  'client_kwargs={"region_name": "eu"}', "key=12345", "secret=null",
                                  'max_paths="7"']) == {
        "anon": True, "n": 5, "endpoint_url": "http://127.0.0.1:9/x=y", "client_kwargs": {"region_name": "eu"},
        "key": "12345", "secret": "null", "max_paths": "7"}
    storage = Storage("memory", {"client_kwargs": {"a": 1}})
    assert hash(storage) == hash(Storage("memory", {"client_kwargs": {"a": 1}}))


def test_storage_pickles_without_its_filesystem_and_builds_it_again() -> None:
    storage = Storage("memory", {})
    assert storage.fs is fsspec.filesystem("memory")
    copy = pickle.loads(pickle.dumps(storage))
    assert copy == storage and copy._fs == []
    assert copy.fs is fsspec.filesystem("memory")


def test_missing_object_and_directory(memory_root: str) -> None:
    where = locate(f"memory://{memory_root}/nothing")
    assert isinstance(where, StorageLocation)
    assert not where.exists()
    with pytest.raises(StorageNotFoundError):
        where.entries()
    with pytest.raises(StorageNotFoundError):
        classify_remote_dir(where)


# -- a partition read by range gives what the local read-only open gives ------------------------------------

def test_listing_follows_the_local_rules(logs: tuple[Path, str]) -> None:
    _local, url = logs
    where = locate(url)
    assert isinstance(where, StorageLocation)
    assert classify_remote_dir(where) == "logdir"
    assert [d.name for d in remote_partition_dirs(where)] == sorted(tp.topic + f"-{tp.partition}" for tp in PARTITIONS)
    assert classify_remote_dir(where / "events-0") == "partition"
    with pytest.raises(NotAPartitionDirError, match="log dir"):
        UrlPartition.open(where)


def test_offsets_lookups_and_records_match_the_local_open(logs: tuple[Path, str]) -> None:
    local, url = logs
    for tp, count in PARTITIONS.items():
        name = f"{tp.topic}-{tp.partition}"
        where = locate(f"{url}/{name}")
        assert isinstance(where, StorageLocation)
        with UrlPartition.open(where) as remote, PartitionDir.of(local / name).open_read_only() as log:
            assert remote.topic_partition == tp
            assert (remote.log_start_offset, remote.log_end_offset) == (log.log_start_offset, log.log_end_offset)
            assert remote.log_end_offset == count
            assert [(s.base_offset, s.size()) for s in remote.segments] == [
                (s.base_offset, s.size()) for s in log.log_segments()]
            assert len(remote.segments) > 1 or count < 100
            for segment, local_segment in zip(remote.segments, log.log_segments(), strict=True):
                assert segment.read_next_offset() == local_segment.read_next_offset()
                for offset in range(segment.base_offset, remote.log_end_offset + 1, 7):
                    assert segment.translate_offset(offset) == local_segment.translate_offset(offset)
            for stamp in range(FIRST_TIMESTAMP - 5, FIRST_TIMESTAMP + 10 * count + 10, 37):
                assert remote.find_offset_by_timestamp(stamp) == log.find_offset_by_timestamp(stamp)
            view = ConsumerView.of(log)
            remote_records = [(r.offset, r.key, r.value, r.timestamp) for r in
                              view.records((s.log, p) for s, p in remote.batches_from(view.start_offset))]
            local_records = [(r.offset, r.key, r.value, r.timestamp) for r in log.records()]
            assert remote_records == local_records and len(remote_records) == count


def test_an_index_is_one_ranged_read(logs: tuple[Path, str]) -> None:
    _local, url = logs
    where = locate(f"{url}/events-0/00000000000000000000.index")
    assert isinstance(where, StorageLocation)
    calls: list[tuple[Any, ...]] = []
    fs = where.fs
    original = fs.cat_file

    def counting(path: str, start: int | None = None, end: int | None = None, **kw: Any) -> bytes:
        calls.append((path, start, end))
        data: bytes = original(path, start=start, end=end, **kw)
        return data

    fs.cat_file = counting
    try:
        index = read_index(OffsetIndex, where, 0)
        entries = index.entries
        for offset in range(0, 60):
            index.lookup(offset)
        index.close()
        assert entries > 1
        assert len(calls) == 1 and calls[0][1:] == (0, entries * 8)
        # A segment's scans and chunked reads share one read-ahead block.
        channel = RemoteChannel(where.parent / "00000000000000000000.log")
        calls.clear()
        for position in range(0, channel.size(), 100):
            channel.pread_upto(position, 100)
        channel.close()
        assert len(calls) == 1
    finally:
        del fs.cat_file


# -- the command line on URLs ----------------------------------------------------------------------------

def test_cli_over_memory_urls_matches_local(logs: tuple[Path, str]) -> None:
    local, url = logs
    status, out, err = run("dump", "--deep-iteration", "--print-data-log", "--files", f"{url}/events-0")
    local_status, local_out, local_err = run("dump", "--deep-iteration", "--print-data-log", "--files",
                                             str(local / "events-0"))
    assert (status, err) == (local_status, local_err) == (0, "")
    assert out == local_out.replace(str(local), url)
    status, out, err = run("stats", "--json", url)
    assert status == 0, err
    assert out.count("\n") == len(PARTITIONS)


def test_cli_reports_bad_urls_and_options(memory_root: str, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run("stats", f"memory://{memory_root}/nothing")
    assert status == 2 and out == "" and "no such object" in err
    status, out, err = run("verify", "nosuch://bucket/x")
    assert status == 2 and "unknown protocol" in err
    status, _out, err = run("dump", "--files", f"memory://{memory_root}/nothing/00000000000000000000.log")
    assert status == 2 and "no such object" in err
    status, _out, _err = run("stats", "--storage-option", "novalue", f"memory://{memory_root}")
    assert status == 2 and "NAME=VALUE" in capsys.readouterr().err  # argparse's own usage error
    status, _out, err = run("stats", "--storage-option", "no_such_option=1", f"memory://{memory_root}")
    assert status == 2 and "takes no option no_such_option" in err
    status, _out, err = run("stats", "--storage-option", "key=x", str(tmp_path))
    assert status == 2 and "local path" in err


def test_verify_reads_remote_damage_and_changes_nothing(logs: tuple[Path, str]) -> None:
    local, url = logs
    fs = fsspec.filesystem("memory")
    root = url.removeprefix("memory://")
    log_object = f"{root}/events-1/00000000000000000000.log"
    data = fs.cat_file(log_object)
    # A torn tail, and a hostile length in the next segment's second batch header.
    fs.pipe_file(log_object, data + data[:20])
    second = sorted(n for n in fs.ls(f"{root}/events-1", detail=False) if n.endswith(".log"))[1]
    body = bytearray(fs.cat_file(second))
    first_size = int.from_bytes(body[8:12], "big")
    body[12 + first_size + 8:12 + first_size + 12] = (0x7FFFFFF0).to_bytes(4, "big")
    fs.pipe_file(second, bytes(body))
    # The same damage on disk: the local check is the oracle.
    (local / "events-1" / "00000000000000000000.log").write_bytes(fs.cat_file(log_object))
    (local / "events-1" / second.rsplit("/", 1)[1]).write_bytes(bytes(body))
    before = {p: fs.cat_file(p) for p in fs.find(root)}
    status, out, err = run("verify", "--json", f"{url}/events-1")
    local_status, local_out, _err = run("verify", "--json", str(local / "events-1"))
    assert status == local_status == 1, err
    remote_report, local_report = json.loads(out), json.loads(local_out)
    # The segments' and their indexes' findings are the same (the messages name the file as it was given).
    errors = [(f["path"].rsplit("/", 1)[1], f["message"].replace(url, "")) for f in remote_report["findings"]
              if f["severity"] == "error"]
    assert errors == [(f["path"].rsplit("/", 1)[1], f["message"].replace(str(local), ""))
                      for f in local_report["findings"] if f["severity"] == "error"]
    assert len(errors) > 2 and "not a whole batch" in errors[0][1]
    assert any(name.endswith(".index") for name, _message in errors)
    for key in ("segments", "batches", "records", "bytes", "logStartOffset", "logEndOffset", "ok"):
        assert remote_report[key] == local_report[key]
    status, out, err = run("dump", "--files", f"{url}/events-1")
    local_status, local_out, _local_err = run("dump", "--files", str(local / "events-1"))
    assert status == local_status == 1
    assert "invalid bytes" in out and out == local_out.replace(str(local), url)
    # Stats counts what it can read and, as for a local dir, warns of each torn tail and exits 1 (issue 30).
    status, out, err = run("stats", f"{url}/events-1")
    local_status, _local_out, local_err = run("stats", str(local / "events-1"))
    assert status == local_status == 1
    assert "not a whole batch (a torn write" in err and err == local_err.replace(str(local), url)
    assert {p: fs.cat_file(p) for p in fs.find(root)} == before


def test_a_corrupt_remote_index_is_read_around(logs: tuple[Path, str]) -> None:
    local, url = logs
    fs = fsspec.filesystem("memory")
    root = url.removeprefix("memory://")
    index = f"{root}/events-0/00000000000000000000.index"
    fs.pipe_file(index, b"\x00\x00\x00\x00\x00\x00\x00\x00" * 3 + b"\xff\xff\xff\xff\x00\x00\x00\x01")
    where = locate(f"{url}/events-0")
    assert isinstance(where, StorageLocation)
    with UrlPartition.open(where) as remote, PartitionDir.of(local / "events-0").open_read_only() as log:
        segment = remote.segments[0]
        assert segment.offset_index.entries == 0
        for offset in range(0, 40):
            assert segment.translate_offset(offset) == log.log_segments()[0].translate_offset(offset)


def test_a_live_dirs_active_indexes_copied_to_a_url_are_read_by_their_live_entries(
        impl: ModuleType, tmp_path: Path, memory_root: str) -> None:
    """A partition dir copied while its writer had it open: the last segment's indexes are preallocated, entries
    then zeros.  Read at a URL they keep their live entries, as a local read-only open reads them, instead of
    being dropped as failing Kafka's sanity check (the zero "last entry" of the time index)."""
    writer = Log(tmp_path / "logs" / "live-0", LogConfig({"segment.bytes": 600, "index.interval.bytes": 1}))
    try:
        for i in range(22):
            writer.append(MemoryRecords.with_records([(None, f"value {i}".encode() * 4, 1_700_000_000_000 + i)]))
        active = writer.active_segment
        live = (active.offset_index.entries, active.time_index.entries)
        assert live[1] > 1 and active.time_index.path.stat().st_size > live[1] * 12
        url = _upload(tmp_path / "logs", memory_root, "logs")
    finally:
        writer.close()
    where = locate(f"{url}/live-0")
    assert isinstance(where, StorageLocation)
    with UrlPartition.open(where) as remote:
        last = remote.segments[-1]
        assert (last.offset_index.entries, last.time_index.entries) == live
        for i in range(22):
            found = remote.find_offset_by_timestamp(1_700_000_000_000 + i)
            assert found is not None and found.offset == i


def test_an_object_cut_short_reads_as_what_is_there(logs: tuple[Path, str]) -> None:
    _local, url = logs
    where = locate(f"{url}/events-0/00000000000000000000.log")
    assert isinstance(where, StorageLocation)
    size = where.size()
    channel = RemoteChannel(where, size + 100)  # listed longer than it is
    assert len(channel.pread_upto(size - 10, 50)) == 10
    with pytest.raises(KafkaLogError, match="Short read"):
        channel.pread(size - 10, 50)
    channel.close()


def test_a_file_is_no_partition_dir_and_a_huge_index_is_refused(logs: tuple[Path, str]) -> None:
    _local, url = logs
    log_object = locate(f"{url}/events-0/00000000000000000000.log")
    assert isinstance(log_object, StorageLocation)
    with pytest.raises(NotAPartitionDirError, match="is a file"):
        classify_remote_dir(log_object)
    status, _out, err = run("stats", log_object.url)
    assert status == 2 and "is a file" in err
    with pytest.raises(KafkaLogError, match="larger than an index can be"):
        read_index(OffsetIndex, log_object.parent / "00000000000000000000.index", 0, 1 << 40)


def test_blocks_are_fetched_once_while_they_fit_the_cache(memory_root: str) -> None:
    fs = fsspec.filesystem("memory")
    data = bytes(range(256)) * 40  # 10240 bytes: 10 blocks of 1 KiB, the last one whole
    fs.pipe_file(f"{memory_root}/object", data)
    where = locate(f"memory://{memory_root}/object")
    assert isinstance(where, StorageLocation)
    calls: list[tuple[int | None, int | None]] = []
    original = fs.cat_file

    def counting(path: str, start: int | None = None, end: int | None = None, **kw: Any) -> bytes:
        calls.append((start, end))
        got: bytes = original(path, start=start, end=end, **kw)
        return got

    fs.cat_file = counting
    try:
        channel = RemoteChannel(where, block_bytes=1024, cache_bytes=16 * 1024)
        # A scan's small steps, then reads across block boundaries: every block is fetched once.
        assert b"".join(channel.pread_upto(p, 100) for p in range(0, len(data), 100)) == data
        assert channel.pread_upto(1000, 5000) == data[1000:6000]
        assert channel.pread_upto(10000, 1000) == data[10000:]
        assert len(calls) == 10 and calls[0] == (0, 1024)
        channel.close()
        # A cache of two blocks: a read of four missing blocks is one request; older blocks are dropped.
        calls.clear()
        small = RemoteChannel(where, block_bytes=1024, cache_bytes=2048)
        assert small.pread_upto(0, 4096) == data[:4096]
        assert calls == [(0, 4096)]
        assert small.pread_upto(3000, 100) == data[3000:3100] and len(calls) == 1
        assert small.pread_upto(0, 10) == data[:10] and len(calls) == 2
        small.close()
    finally:
        del fs.cat_file


# -- verify and stats of a URL print what they print locally -----------------------------------------------

#: Broker-written log dirs whose verify and stats are compared: snapshots, leader-epoch and offset checkpoints,
#: a cleaner checkpoint, errors found, empty partitions, dirty ratios of 0 and 1.
GOLDEN_COMPARED = (BULLSHIT, SHARAWEIL, ARTHUR, DANIELOWO, RONEM)


def _normalised(text: str, local: Path, url: str) -> str:
    """The output with the dir's name, local or remote, made one (a report's ``dir`` is the object's path)."""
    return text.replace(url, "<dir>").replace(url.split("://", 1)[1], "<dir>").replace(str(local), "<dir>")


def assert_same_output(local: Path, url: str, *argv: str) -> tuple[int, str]:
    """Run a command on the URL and on the local dir: the same status, stdout and stderr; returns both."""
    status, out, err = run(*argv, url)
    local_status, local_out, local_err = run(*argv, str(local))
    assert status == local_status, (err, local_err)
    assert _normalised(out, local, url) == _normalised(local_out, local, url)
    assert _normalised(err, local, url) == _normalised(local_err, local, url)
    return status, out


def _upload(local: Path, memory_root: str, name: str) -> str:
    fsspec.filesystem("memory").put(str(local), f"{memory_root}/{name}", recursive=True)
    return f"memory://{memory_root}/{name}"


def _same_everywhere(local: Path, url: str, relative: str, data: bytes) -> None:
    """Write the same bytes to a file of the local dir and to its object."""
    (local / relative).write_bytes(data)
    fsspec.filesystem("memory").pipe_file(f"{url.removeprefix('memory://')}/{relative}", data)


def snapshot_bytes(entries: int = 1) -> bytes:
    """A producer snapshot as a broker writes it (version 1, the CRC-32C of all after it, the entries)."""
    body = struct.pack(">i", entries) + b"".join(
        struct.pack(">qhiqiqiq", 1000 + i, 0, 4, 10 * i, 2, FIRST_TIMESTAMP, -1, -1) for i in range(entries))
    return struct.pack(">hI", 1, int(_impl.core.crc32c(body))) + body


def test_verify_and_stats_of_a_url_print_the_local_output(logs: tuple[Path, str]) -> None:
    local, url = logs
    # What the kafkalog-written dir lacks of a broker's: a cleaner checkpoint (for the dirty ratio), a
    # producer snapshot, a leader-epoch checkpoint, a transaction index.
    _same_everywhere(local, url, "cleaner-offset-checkpoint", b"0\n2\nevents 0 156\naudit.log 0 40\n")
    _same_everywhere(local, url, "events-0/00000000000000000156.snapshot", snapshot_bytes(3))
    _same_everywhere(local, url, "events-0/leader-epoch-checkpoint", b"0\n2\n0 0\n4 200\n")
    _same_everywhere(local, url, "events-1/00000000000000000000.txnindex", b"")
    # A partition with no segment yet reads as an empty log at its log start offset.
    (local / "fresh-0").mkdir()
    _same_everywhere(local, url, "fresh-0/leader-epoch-checkpoint", b"0\n0\n")
    for argv in (["verify", "--notes"], ["verify", "--json", "--notes"], ["verify", "--shallow"],
                 ["stats"], ["stats", "--json"], ["stats", "--csv"]):
        status, _out = assert_same_output(local, url, *argv)
        assert status == 0
    for name in ("events-0", "audit.log-0"):
        assert_same_output(local / name, f"{url}/{name}", "verify", "--json", "--notes")
        assert_same_output(local / name, f"{url}/{name}", "stats", "--json")
    _status, out, _err = run("stats", "--json", url)
    rows = {row["topic"] + f"-{row['partition']}": row for row in map(json.loads, out.splitlines())}
    # The cleaner's view from the checkpoint: events-0 is dirty from 156, audit.log-0 is clean to its end (its one
    # segment counts as clean bytes), events-1 (no entry) is dirty from its start.
    assert rows["events-0"]["firstDirtyOffset"] == 156 and 0 < rows["events-0"]["dirtyRatio"] < 1
    assert rows["events-1"]["firstDirtyOffset"] == 0 and rows["events-1"]["dirtyRatio"] == 1.0
    assert rows["audit.log-0"]["firstDirtyOffset"] == 40 and rows["audit.log-0"]["dirtyRatio"] == 0.0
    assert rows["fresh-0"]["segments"] == 0 and rows["fresh-0"]["dirtyRatio"] is None
    # Reports name the URL, as stats rows do.
    _status, out, _err = run("verify", "--json", url)
    assert {report["dir"] for report in map(json.loads, out.splitlines())} == {
        url, *(f"{url}/{name}" for name in ("audit.log-0", "events-0", "events-1", "fresh-0"))}


def test_verify_and_stats_of_golden_dirs_at_a_url_print_the_local_output(golden: Path, tmp_path: Path,
                                                                         memory_root: str) -> None:
    for number, relative in enumerate(GOLDEN_COMPARED):
        local = tmp_path / f"golden-{number}"
        shutil.copytree(golden / relative, local)  # what is compared is the bytes uploaded
        url = _upload(local, memory_root, f"golden-{number}")
        for argv in (["verify", "--json", "--notes"], ["verify", "--notes"], ["stats", "--json"]):
            assert_same_output(local, url, *argv)


def test_damaged_small_files_at_a_url_give_the_local_findings(logs: tuple[Path, str]) -> None:
    local, url = logs
    good = snapshot_bytes(2)
    damaged = {
        "events-0/00000000000000000078.snapshot": good[:12] + bytes([good[12] ^ 1]) + good[13:],  # CRC
        "events-0/00000000000000000156.snapshot": b"\x00\x09" + good[2:],  # version
        "events-0/00000000000000000231.snapshot": good[:-3],  # cut short: its entries are not all there
        "events-0/leader-epoch-checkpoint": b"0\n2\n0 0\n",  # count
        "events-1/leader-epoch-checkpoint": b"0\n2\n3 0\n1 50\n",  # out of order
        "events-1/00000000000000000000.txnindex": bytes(34) + b"\x00",  # a part-entry
        "audit.log-0/leader-epoch-checkpoint": b"0\n1\n0 x\n",  # malformed line
        "replication-offset-checkpoint": b"1\n0\n",  # version
        "recovery-point-offset-checkpoint": b"0\n2\nevents 0 999\nevents 1 120\n",  # past the log end
        "cleaner-offset-checkpoint": b"0\n1\nevents 0 five\n",  # malformed number
    }
    for relative, data in damaged.items():
        _same_everywhere(local, url, relative, data)
    fs = fsspec.filesystem("memory")
    root = url.removeprefix("memory://")
    before = {p: fs.cat_file(p) for p in fs.find(root)}
    status, out = assert_same_output(local, url, "verify", "--notes")
    assert status == 1
    findings = _normalised(out, local, url)
    for expected in [
        "ERROR <dir>/events-0/00000000000000000078.snapshot: cannot be read: Snapshot is corrupt (CRC is no longer "
        "valid)",
        "ERROR <dir>/events-0/00000000000000000156.snapshot: cannot be read: Snapshot contained an unknown file "
        "version 9",
        "ERROR <dir>/events-0/00000000000000000231.snapshot: cannot be read: Snapshot failed schema validation: 2 "
        "entries need 102 bytes, the file <dir>/events-0/00000000000000000231.snapshot has 99",
        "ERROR <dir>/events-0/leader-epoch-checkpoint: cannot be read: Expected [2] entries in checkpoint file "
        "[<dir>/events-0/leader-epoch-checkpoint], but found only [1]",
        "ERROR <dir>/events-1/leader-epoch-checkpoint: epochs out of order: (3, 0) then (1, 50)",
        "WARNING <dir>/events-1/00000000000000000000.txnindex: ends in a part-entry (a write cut short)",
        "ERROR <dir>/audit.log-0/leader-epoch-checkpoint: cannot be read: Malformed line in checkpoint file "
        "[<dir>/audit.log-0/leader-epoch-checkpoint]: '0 x' (line 3)",
        "ERROR <dir>/replication-offset-checkpoint: cannot be read: Unrecognised version:1, expected version: 0 in "
        "checkpoint file at: <dir>/replication-offset-checkpoint",
        "ERROR <dir>/recovery-point-offset-checkpoint: recovery point 999 of events-0 is past its log end offset "
        "300: records that were flushed are missing",
        "ERROR <dir>/cleaner-offset-checkpoint: cannot be read: Malformed line in checkpoint file "
        "[<dir>/cleaner-offset-checkpoint]: 'events 0 five' (line 3)",
    ]:
        assert expected in findings
    # stats reads the cleaner checkpoint too, and fails the partition the same way locally and by URL.
    status, _out = assert_same_output(local, url, "stats", "--json")
    assert status == 2
    assert {p: fs.cat_file(p) for p in fs.find(root)} == before


def test_a_negative_leader_epoch_gives_one_answer_locally_and_at_a_url(logs: tuple[Path, str]) -> None:
    """A leader-epoch checkpoint holding a negative epoch, which a broker's load refuses
    (``LeaderEpochFileCache.assign``): ``verify`` reports it, naming the file and the line, and exits 1; ``stats``
    reads the partition, whose records do not need the epochs, and exits 0, locally as at a URL (a local
    read-only open failed on it, exit 2, while a reader at a URL never looked)."""
    local, url = logs
    _same_everywhere(local, url, "events-0/leader-epoch-checkpoint", b"0\n2\n-1 0\n4 200\n")
    status, out = assert_same_output(local, url, "verify", "--notes")
    assert status == 1
    assert ("ERROR <dir>/events-0/leader-epoch-checkpoint: line 3: Received invalid partition leader epoch entry "
            "EpochEntry(epoch=-1, startOffset=0): a broker refuses to load the partition") in _normalised(out, local,
                                                                                                     url)
    status, _out = assert_same_output(local, url, "verify", "--json")
    assert status == 1
    for argv in (["stats"], ["stats", "--json"]):
        status, _out = assert_same_output(local, url, *argv)
        assert status == 0
    assert_same_output(local / "events-0", f"{url}/events-0", "stats", "--json")


def test_a_transaction_index_of_an_unknown_version_gives_one_answer_locally_and_at_a_url(
        logs: tuple[Path, str]) -> None:
    """A ``.txnindex`` entry of version 1, which a broker's load refuses (``TransactionIndex.sanityCheck`` reads every
    entry: ``KafkaException``): a read-only open fails on it, locally as at a URL, so ``stats`` exits 2 either way
    (the reader at a URL read the index only for a ``read_committed`` read, and said 0); ``verify`` reports it."""
    local, url = logs
    _same_everywhere(local, url, "events-0/00000000000000000000.txnindex",
                     struct.pack(">hqqqq", 1, 7, 0, 5, 6))
    status, _out = assert_same_output(local, url, "stats", "--json")
    assert status == 2
    _status, _out, err = run("stats", f"{url}/events-0")
    assert "Unexpected aborted transaction version 1 in transaction index" in err
    status, _out = assert_same_output(local, url, "verify", "--notes")
    assert status == 1
    # An entry that ends below its segment (CorruptIndexException) leaves that index untrusted, the segment's
    # offset and time indexes still in use, as a read-only open reads it, and the same statistics either way.
    _same_everywhere(local, url, "events-0/00000000000000000078.txnindex", struct.pack(">hqqqq", 0, 7, 0, 5, 6))
    (local / "events-0/00000000000000000000.txnindex").unlink()
    fsspec.filesystem("memory").rm(f"{url.removeprefix('memory://')}/events-0/00000000000000000000.txnindex")
    status, _out = assert_same_output(local, url, "stats", "--json")
    assert status == 0
    with Log(local / "events-0", read_only=True) as reader, UrlPartition.open(locate(f"{url}/events-0")) as remote:
        for segment in (reader.log_segments()[1], remote.segment_for(78)):
            assert segment.base_offset == 78
            assert segment.offset_index.entries > 0 and segment.time_index.entries > 0
        assert reader.log_segments()[1].txn_index.file_ignored
        assert reader.in_place_transactions() == remote.transactions()


def test_each_small_object_is_one_read_of_its_listed_size(logs: tuple[Path, str]) -> None:
    _local, url = logs
    fs = fsspec.filesystem("memory")
    root = url.removeprefix("memory://")
    small = {f"{root}/events-0/00000000000000000078.snapshot": snapshot_bytes(2),
             f"{root}/events-0/leader-epoch-checkpoint": b"0\n1\n0 0\n",
             # An entry that passes Kafka's sanity check (its last offset is not below the segment's base).
             f"{root}/events-0/00000000000000000078.txnindex": AbortedTxn(1, 78, 79, 80).to_bytes()}
    for path, data in small.items():
        fs.pipe_file(path, data)
    calls: list[tuple[str, Any]] = []
    original_cat, original_info = fs.cat_file, fs.info

    def cat_file(path: str, start: int | None = None, end: int | None = None, **kw: Any) -> bytes:
        calls.append(("cat", (path, start, end)))
        data: bytes = original_cat(path, start=start, end=end, **kw)
        return data

    def info(path: str, **kw: Any) -> dict[str, Any]:
        calls.append(("info", path))
        found: dict[str, Any] = original_info(path, **kw)
        return found

    fs.cat_file, fs.info = cat_file, info
    try:
        where = locate(f"{url}/events-0")
        assert isinstance(where, StorageLocation)
        report = verify_remote_partition(where, deep=False)
    finally:
        del fs.cat_file, fs.info
    assert report.ok, report.findings
    for path, data in small.items():
        assert [call for call in calls if call[1] == path or call[1][0] == path] == [("cat", (path, 0, len(data)))]


def test_one_not_found_class_for_urls_and_tiered_layouts(tmp_path: Path, memory_root: str) -> None:
    from kafkalog.remote import local_tiered

    # Kafka's names stay what they were, and a missing object is a StorageNotFoundError whoever found it.
    assert issubclass(RemoteResourceNotFoundError, RemoteStorageError)
    assert issubclass(RemoteResourceNotFoundError, StorageNotFoundError)
    assert issubclass(RemoteStorageError, KafkaStorageError) and issubclass(StorageNotFoundError, FileNotFoundError)
    with pytest.raises(StorageNotFoundError) as info:
        local_tiered.list_partitions(fsspec.filesystem("memory"), f"{memory_root}/no-such-store")
    assert isinstance(info.value, RemoteResourceNotFoundError)
    where = locate(f"memory://{memory_root}/nothing")
    assert isinstance(where, StorageLocation)
    with pytest.raises(StorageNotFoundError) as found:
        where.entries()
    assert not isinstance(found.value, RemoteStorageError)

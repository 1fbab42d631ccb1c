"""kafkalog.checkpoint: the text checkpoint files of a log dir and of each partition dir.

Cases follow Kafka 3.8.0 ``OffsetCheckpointFileWithFailureHandlerTest`` and
``LeaderEpochCheckpointFileWithFailureHandlerTest`` (core), the reader rules of ``CheckpointFile`` and
0.10.1.1 ``OffsetCheckpoint``, the write protocol (tmp file, fsync, rename, directory fsync) and every
checkpoint file a broker wrote into the golden folder.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import stat

import pytest

from kafkalog.checkpoint import (
    CLEANER_OFFSET_CHECKPOINT_FILE,
    LEADER_EPOCH_CHECKPOINT_FILE,
    LOG_START_OFFSET_CHECKPOINT_FILE,
    RECOVERY_POINT_CHECKPOINT_FILE,
    REPLICATION_OFFSET_CHECKPOINT_FILE,
    CheckpointFile,
    CheckpointFileWithFailureHandler,
    CorruptCheckpointError,
    EpochEntry,
    LazyOffsetCheckpoints,
    LeaderEpochCheckpoint,
    OffsetCheckpoint,
    parse_checkpoint,
)
from kafkalog.errors import IllegalArgumentError, KafkaLogError, KafkaStorageError, ReadOnlyError
from kafkalog.filenames import CLEAN_SHUTDOWN_FILE, LOCK_FILE
from kafkalog.log_dir_failure_channel import LogDirFailureChannel
from kafkalog.topic import TopicPartition
from tests.support.golden_data import ARTHUR, BERKAYAKCAY, BULLSHIT, DANIELOWO, MSCALDAS, RONEM, SHARAWEIL, YUANLIUBEI

OFFSET_FILES = {
    RECOVERY_POINT_CHECKPOINT_FILE,
    LOG_START_OFFSET_CHECKPOINT_FILE,
    REPLICATION_OFFSET_CHECKPOINT_FILE,
    CLEANER_OFFSET_CHECKPOINT_FILE,
}


def tp(topic: str, partition: int) -> TopicPartition:
    return TopicPartition(topic, partition)


class LineFormatter:
    """A formatter of plain strings, for the generic CheckpointFile."""

    def to_string(self, entry: str) -> str:
        return entry

    def from_string(self, line: str) -> str | None:
        return line if line.startswith("e") else None


def test_file_names() -> None:
    assert RECOVERY_POINT_CHECKPOINT_FILE == "recovery-point-offset-checkpoint"
    assert LOG_START_OFFSET_CHECKPOINT_FILE == "log-start-offset-checkpoint"
    assert REPLICATION_OFFSET_CHECKPOINT_FILE == "replication-offset-checkpoint"
    assert CLEANER_OFFSET_CHECKPOINT_FILE == "cleaner-offset-checkpoint"
    assert CLEAN_SHUTDOWN_FILE == ".kafka_cleanshutdown"
    assert LOCK_FILE == ".lock"
    assert LEADER_EPOCH_CHECKPOINT_FILE == "leader-epoch-checkpoint"
    assert LeaderEpochCheckpoint.new_file("/d/foo-0") == pathlib.Path("/d/foo-0/leader-epoch-checkpoint")


# --- the format, byte for byte ------------------------------------------------------------------------


def test_offset_checkpoint_bytes(tmp_path: pathlib.Path) -> None:
    path = tmp_path / RECOVERY_POINT_CHECKPOINT_FILE
    checkpoint = OffsetCheckpoint(path)
    checkpoint.write({tp("foo", 0): 5, tp("bar", 3): 7})
    assert path.read_bytes() == b"0\n2\nfoo 0 5\nbar 3 7\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [RECOVERY_POINT_CHECKPOINT_FILE]  # no .tmp left
    assert checkpoint.read() == {tp("foo", 0): 5, tp("bar", 3): 7}
    assert list(checkpoint.read()) == [tp("foo", 0), tp("bar", 3)]  # file order
    # plain (topic, partition) tuples are accepted as keys; big and negative offsets are Java longs
    checkpoint.write({("__consumer_offsets", 49): 2**63 - 1, ("x", 0): -1})
    assert path.read_bytes() == b"0\n2\n__consumer_offsets 49 9223372036854775807\nx 0 -1\n"
    assert checkpoint.read() == {tp("__consumer_offsets", 49): 2**63 - 1, tp("x", 0): -1}


def test_leader_epoch_checkpoint_bytes(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "foo-0" / LEADER_EPOCH_CHECKPOINT_FILE
    path.parent.mkdir()
    checkpoint = LeaderEpochCheckpoint(path)
    assert path.read_bytes() == b""  # created empty
    checkpoint.write([EpochEntry(0, 0), EpochEntry(3, 1944), (5, 4309)])
    assert path.read_bytes() == b"0\n3\n0 0\n3 1944\n5 4309\n"
    assert checkpoint.read() == [EpochEntry(0, 0), EpochEntry(3, 1944), EpochEntry(5, 4309)]
    assert checkpoint.read()[1].start_offset == 1944
    checkpoint.write([])
    assert path.read_bytes() == b"0\n0\n"
    assert checkpoint.read() == []


def test_generic_checkpoint_file(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "generic"
    checkpoint = CheckpointFile(path, 3, LineFormatter())
    assert checkpoint.version == 3 and checkpoint.read_only is False
    assert checkpoint.path == path and checkpoint.temp_path == tmp_path / "generic.tmp"
    checkpoint.write(["e1", "e2 with spaces", "e3"])
    assert path.read_bytes() == b"3\n3\ne1\ne2 with spaces\ne3\n"
    assert checkpoint.read() == ["e1", "e2 with spaces", "e3"]
    checkpoint.write(iter(["e9"]))  # any iterable
    assert checkpoint.read() == ["e9"]
    path.write_bytes(b"3\n1\nx\n")
    with pytest.raises(CorruptCheckpointError, match=r"Malformed line .*'x' \(line 3\)"):
        checkpoint.read()
    # a version other than the expected one, even the "usual" 0
    path.write_bytes(b"0\n0\n")
    with pytest.raises(CorruptCheckpointError, match="Unrecognised version:0, expected version: 3"):
        checkpoint.read()
    assert "version=3" in repr(checkpoint)


def test_utf8_topic(tmp_path: pathlib.Path) -> None:
    # Kafka writes UTF-8 (topic names are ASCII, but the file format is not limited to them)
    checkpoint = OffsetCheckpoint(tmp_path / "cp")
    checkpoint.write({tp("tópico", 1): 2})
    assert (tmp_path / "cp").read_bytes() == "0\n1\ntópico 1 2\n".encode()
    assert checkpoint.read() == {tp("tópico", 1): 2}


# --- Kafka's tests ------------------------------------------------------------------------------------


def test_should_persist_and_overwrite_and_reload_file(tmp_path: pathlib.Path) -> None:
    checkpoint = OffsetCheckpoint(tmp_path / "cp")
    offsets = {tp("foo", 1): 5, tp("bar", 2): 10}
    checkpoint.write(offsets)
    assert checkpoint.read() == offsets
    offsets2 = {tp("foo", 2): 15, tp("bar", 3): 20}
    checkpoint.write(offsets2)
    assert checkpoint.read() == offsets2
    assert OffsetCheckpoint(tmp_path / "cp").read() == offsets2  # reopened


def test_should_handle_multiple_lines(tmp_path: pathlib.Path) -> None:
    checkpoint = OffsetCheckpoint(tmp_path / "cp")
    offsets = {tp("foo", i): 5 for i in range(1, 6)} | {tp("bar", i): 10 for i in range(6, 11)}
    checkpoint.write(offsets)
    assert checkpoint.read() == offsets
    assert len((tmp_path / "cp").read_text().splitlines()) == 12


def test_should_return_empty_map_for_empty_file(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "cp"
    checkpoint = OffsetCheckpoint(path)
    assert path.exists() and path.stat().st_size == 0  # created by the constructor
    assert checkpoint.read() == {}
    checkpoint.write({})
    assert path.read_bytes() == b"0\n0\n"
    assert checkpoint.read() == {}


def test_should_throw_if_version_is_not_recognised(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "cp"
    CheckpointFileWithFailureHandler(
        path, OffsetCheckpoint.CURRENT_VERSION + 1, OffsetCheckpoint.FORMATTER
    ).write([(tp("foo", 5), 10)])
    assert path.read_bytes() == b"1\n1\nfoo 5 10\n"
    with pytest.raises(KafkaStorageError) as info:
        OffsetCheckpoint(path).read()
    assert str(info.value) == f"Unrecognised version:1, expected version: 0 in checkpoint file at: {path}"
    assert isinstance(info.value, CorruptCheckpointError)
    assert info.value.path == str(path) and info.value.line_number == 1


def test_leader_epoch_persist_overwrite_and_recreate(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "temp-checkpoint-file"
    checkpoint = LeaderEpochCheckpoint(path)
    epochs = [EpochEntry(0, 1), EpochEntry(1, 2), EpochEntry(2, 3)]
    checkpoint.write(epochs)
    assert checkpoint.read() == epochs
    # shouldRetainValuesEvenIfCheckpointIsRecreated
    assert LeaderEpochCheckpoint(path).read() == epochs
    epochs2 = [EpochEntry(3, 4), EpochEntry(4, 5)]
    checkpoint.write(epochs2)
    assert checkpoint.read() == epochs2


def test_lazy_offset_checkpoints(tmp_path: pathlib.Path) -> None:
    reads: list[pathlib.Path] = []

    class Counting(OffsetCheckpoint):
        def read(self) -> dict[TopicPartition, int]:
            reads.append(self.file)
            return super().read()

    log_dir = str(tmp_path)
    checkpoint = Counting(tmp_path / REPLICATION_OFFSET_CHECKPOINT_FILE)
    checkpoint.write({tp("foo", 0): 1000, tp("foo", 1): 2000})
    lazy = LazyOffsetCheckpoints({log_dir: checkpoint})
    assert reads == []  # testLazyOffsetCheckpoint: nothing read before the first fetch
    assert lazy.fetch(log_dir, tp("foo", 0)) == 1000
    assert lazy.fetch(log_dir, tp("foo", 1)) == 2000
    assert lazy.fetch(log_dir, tp("foo", 2)) is None
    assert len(reads) == 1
    # testLazyOffsetCheckpointFileInvalidLogDir
    with pytest.raises(IllegalArgumentError, match="No checkpoint file for log dir /invalid/kafka-logs"):
        lazy.fetch("/invalid/kafka-logs", tp("foo", 0))


def test_write_if_dir_exists_does_not_throw_when_dir_is_gone(tmp_path: pathlib.Path,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    # testWriteIfDirExistsShouldNotThrowWhenDirNotExists
    directory = tmp_path / "foo-0"
    directory.mkdir()
    channel = LogDirFailureChannel()
    checkpoint = LeaderEpochCheckpoint(directory / LEADER_EPOCH_CHECKPOINT_FILE, log_dir_failure_channel=channel)
    assert checkpoint.checkpoint.log_dir == str(tmp_path)  # the log dir is the partition dir's parent
    directory.rename(tmp_path / "foo-0.renamed-delete")
    with caplog.at_level("ERROR", logger="kafkalog.log_dir_failure_channel"):
        checkpoint.write_for_truncation([EpochEntry(1, 42)])
        assert channel.offline_log_dirs() == []
        assert not directory.exists()
        assert (tmp_path / "foo-0.renamed-delete" / LEADER_EPOCH_CHECKPOINT_FILE).read_bytes() == b""
        # a plain write reports to the failure channel, which takes the log dir offline, and raises
        with pytest.raises(KafkaStorageError, match="Error while writing to checkpoint file"):
            checkpoint.write([EpochEntry(1, 42)])
    assert channel.offline_log_dirs() == [str(tmp_path)]
    assert channel.take_next_offline_log_dir(0) == str(tmp_path)
    [reported] = caplog.records
    assert str(directory / LEADER_EPOCH_CHECKPOINT_FILE) in reported.getMessage()
    assert reported.exc_info is not None
    error = reported.exc_info[1]
    assert isinstance(error, KafkaStorageError) and isinstance(error.__cause__, FileNotFoundError)


def test_failure_channel_is_told_of_read_errors(tmp_path: pathlib.Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "cp"
    path.write_bytes(b"0\n1\nfoo 0\n")
    channel = LogDirFailureChannel()
    checkpoint = OffsetCheckpoint(path, log_dir_failure_channel=channel)
    with caplog.at_level("ERROR", logger="kafkalog.log_dir_failure_channel"), pytest.raises(CorruptCheckpointError):
        checkpoint.read()
    assert channel.has_offline_log_dir(str(tmp_path))
    [reported] = caplog.records
    assert reported.exc_info is not None and isinstance(reported.exc_info[1], CorruptCheckpointError)
    assert "Malformed line" in reported.getMessage()


# --- reading: the lenient cases Kafka accepts ----------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"", {}),  # empty file
        (b"0", {}),  # no second line
        (b"0\n", {}),
        (b"0\n0\n", {}),
        (b"0\n0", {}),
        (b"0\n1\nfoo 0 5", {tp("foo", 0): 5}),  # no final line break
        (b"0\r\n2\r\nfoo 0 5\r\nbar 3 7\r\n", {tp("foo", 0): 5, tp("bar", 3): 7}),  # readLine: \r\n
        (b"0\r1\rfoo 0 5\r", {tp("foo", 0): 5}),  # and a lone \r
        (b"0\n1\nfoo\t0  \t 5\n", {tp("foo", 0): 5}),  # fields split at runs of whitespace
        (b"0\n1\nfoo 0 5 \t\n", {tp("foo", 0): 5}),  # trailing empty fields dropped (String.split)
        (b"0\n1\nfoo 0 5\x0b\n", {tp("foo", 0): 5}),  # \x0b is Java whitespace
        (b"+0\n+1\nfoo +0 +5\n", {tp("foo", 0): 5}),  # parseInt takes a '+'
        (b"0\n1\nfoo 0 -1\n", {tp("foo", 0): -1}),
        (b"0\n1\n 0 5\n", {tp("", 0): 5}),  # a leading separator gives an empty first field: 3 fields
        (b"0\n2\nfoo 0 5\nfoo 0 6\n", {tp("foo", 0): 6}),  # modern: count lines, later wins
        (b"0\n1\nfoo 2147483647 9223372036854775807\n", {tp("foo", 2**31 - 1): 2**63 - 1}),
    ],
)
def test_read_accepts(tmp_path: pathlib.Path, content: bytes, expected: dict[TopicPartition, int]) -> None:
    path = tmp_path / "cp"
    path.write_bytes(content)
    assert OffsetCheckpoint(path).read() == expected
    assert OffsetCheckpoint(path, read_only=True).read() == expected
    assert path.read_bytes() == content
    # The bytes read elsewhere (an object at a URL) parse the same through the public seam.
    assert OffsetCheckpoint.parse(content, "s3://bucket/logs/cp") == expected
    assert dict(parse_checkpoint(content, 0, OffsetCheckpoint.FORMATTER, "cp")) == expected


# --- reading: malformed files --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "message", "line_number"),
    [
        (b"1\n0\n", "Unrecognised version:1, expected version: 0", 1),
        (b"-1\n", "Unrecognised version:-1, expected version: 0", 1),
        (b"x\n", "Malformed line in checkpoint file [{path}]: 'x' (line 1)", 1),
        (b"\n", "Malformed line in checkpoint file [{path}]: '' (line 1)", 1),
        (b"0 \n0\n", "Malformed line in checkpoint file [{path}]: '0 ' (line 1)", 1),
        (b"\xef\xbb\xbf0\n0\n", "Malformed line", 1),  # a BOM is not stripped (Java does not either)
        (b"2147483648\n", "Malformed line", 1),  # not an int
        (b"0\nabc\n", "Malformed line in checkpoint file [{path}]: 'abc' (line 2)", 2),
        (b"0\n-1\n", "Negative entry count [-1] in checkpoint file [{path}] (line 2)", 2),
        (b"0\n2\nfoo 0 5\n", "Expected [2] entries in checkpoint file [{path}], but found only [1]", None),
        (
            b"0\n1\nfoo 0 5\nbar 1 2\n",
            "Expected [1] entries in checkpoint file [{path}], but found only [2]",
            None,
        ),
        (b"0\n1\n", "Expected [1] entries in checkpoint file [{path}], but found only [0]", None),
        (b"0\n1\nfoo 0\n", "Malformed line in checkpoint file [{path}]: 'foo 0' (line 3)", 3),
        (b"0\n1\nfoo 0 5 6\n", "Malformed line in checkpoint file [{path}]: 'foo 0 5 6' (line 3)", 3),
        (b"0\n1\nfoo 0 five\n", "'foo 0 five' (line 3)", 3),  # non-int offset
        (b"0\n1\nfoo x 5\n", "'foo x 5' (line 3)", 3),  # non-int partition
        (b"0\n1\nfoo 0 5.0\n", "'foo 0 5.0' (line 3)", 3),
        (b"0\n1\nfoo 0 1_000\n", "'foo 0 1_000' (line 3)", 3),  # Python's int() would take it
        (b"0\n1\nfoo 0 9223372036854775808\n", "(line 3)", 3),  # past Long.MAX_VALUE
        (b"0\n1\nfoo 2147483648 0\n", "(line 3)", 3),  # past Integer.MAX_VALUE
        (b"0\n1\n\n", "Malformed line in checkpoint file [{path}]: '' (line 3)", 3),
        (b"0\n1\n foo 0 5\n", "(line 3)", 3),  # leading whitespace: 4 fields
        (b"0\n2\nfoo 0 5\nbar 1\n", "'bar 1' (line 4)", 4),
        (b"0\n1\nfoo 0 \xff\n", "is not UTF-8: byte 10 cannot be decoded", None),
    ],
)
def test_read_rejects(tmp_path: pathlib.Path, content: bytes, message: str, line_number: int | None) -> None:
    path = tmp_path / "cp"
    path.write_bytes(content)
    for read_only in (False, True):
        with pytest.raises(CorruptCheckpointError) as info:
            OffsetCheckpoint(path, read_only=read_only).read()
        error = info.value
        assert message.format(path=path) in str(error)
        assert str(path) in str(error)  # every error names the file
        assert error.path == str(path)
        assert error.line_number == line_number
        assert isinstance(error, KafkaStorageError)
        assert isinstance(error, KafkaLogError)
        assert isinstance(error, ValueError)
        assert isinstance(error, OSError)
    assert path.read_bytes() == content
    # The public seam, given the bytes and a name (a URL), raises the same error naming that name instead.
    url = "s3://bucket/logs/recovery-point-offset-checkpoint"
    for parse in (lambda: OffsetCheckpoint.parse(content, url),
                  lambda: CheckpointFile(path, 0, OffsetCheckpoint.FORMATTER, read_only=True).parse(content),
                  lambda: parse_checkpoint(content, 0, OffsetCheckpoint.FORMATTER, url)):
        with pytest.raises(CorruptCheckpointError) as info:
            parse()
        named = str(path) if url not in str(info.value) else url
        assert str(info.value) == str(error).replace(str(path), named)
        assert (info.value.path, info.value.line_number) == (named, line_number)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"0\n1\n0\n", "'0' (line 3)"),
        (b"0\n1\n0 1 2\n", "'0 1 2' (line 3)"),
        (b"0\n1\n2147483648 0\n", "(line 3)"),
        (b"0\n1\nx 0\n", "'x 0' (line 3)"),
        (b"0\n2\n0 0\n", "Expected [2] entries"),
        (b"1\n0\n", "Unrecognised version:1"),
    ],
)
def test_leader_epoch_read_rejects(tmp_path: pathlib.Path, content: bytes, message: str) -> None:
    path = tmp_path / LEADER_EPOCH_CHECKPOINT_FILE
    path.write_bytes(content)
    with pytest.raises(CorruptCheckpointError, match=r"checkpoint file") as info:
        LeaderEpochCheckpoint(path, read_only=True).read()
    assert message in str(info.value)
    assert str(path) in str(info.value)
    with pytest.raises(CorruptCheckpointError) as parsed:
        LeaderEpochCheckpoint.parse(content, "memory:///logs/t-0/leader-epoch-checkpoint")
    assert str(parsed.value) == str(info.value).replace(str(path), "memory:///logs/t-0/leader-epoch-checkpoint")


def test_parse_seam_reads_what_the_file_reads(tmp_path: pathlib.Path) -> None:
    """The public parse of a checkpoint's bytes, beside :meth:`read` of the file holding them: version 0 of
    both kinds, the entries in file order, and an empty or version-only text holding none."""
    epochs = b"0\n3\n0 0\n2 17\n5 400\n"
    path = tmp_path / LEADER_EPOCH_CHECKPOINT_FILE
    path.write_bytes(epochs)
    assert LeaderEpochCheckpoint.parse(epochs, "x") == LeaderEpochCheckpoint(path, read_only=True).read() == [
        EpochEntry(0, 0), EpochEntry(2, 17), EpochEntry(5, 400)]
    for empty in (b"", b"0\n"):
        assert OffsetCheckpoint.parse(empty, "x") == {} and LeaderEpochCheckpoint.parse(empty, "x") == []
    assert parse_checkpoint(b"3\n2\nea\neb\n", 3, LineFormatter(), "x") == ["ea", "eb"]
    with pytest.raises(CorruptCheckpointError, match=r"Malformed line in checkpoint file \[x\]: 'b' \(line 3\)"):
        parse_checkpoint(b"3\n1\nb\n", 3, LineFormatter(), "x")
    with pytest.raises(CorruptCheckpointError, match="Unrecognised version:0, expected version: 3"):
        parse_checkpoint(b"0\n0\n", 3, LineFormatter(), "x")


def test_io_errors_name_the_file(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "cp"
    checkpoint = OffsetCheckpoint(path)
    path.unlink()
    # opened writable the file is Kafka's: gone means an I/O error, not an empty checkpoint
    with pytest.raises(KafkaStorageError, match=f"Error while reading checkpoint file {path}") as info:
        checkpoint.read()
    assert isinstance(info.value.__cause__, FileNotFoundError)
    assert not isinstance(info.value, CorruptCheckpointError)
    # a directory where the file should be
    (tmp_path / "dir").mkdir()
    with pytest.raises(KafkaStorageError, match="Error while reading checkpoint file"):
        OffsetCheckpoint(tmp_path / "dir", read_only=True).read()
    # the constructor cannot create a file in a missing directory
    with pytest.raises(KafkaStorageError, match="Error while creating checkpoint file"):
        OffsetCheckpoint(tmp_path / "missing" / "cp")


# --- read-only mode ----------------------------------------------------------------------------------


def test_read_only_never_creates_or_writes(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "cp"
    checkpoint = OffsetCheckpoint(path, read_only=True)
    assert not path.exists()
    assert checkpoint.read() == {}
    with pytest.raises(ReadOnlyError, match="opened read-only"):
        checkpoint.write({tp("foo", 0): 1})
    assert list(tmp_path.iterdir()) == []
    epochs = LeaderEpochCheckpoint(tmp_path / LEADER_EPOCH_CHECKPOINT_FILE, read_only=True)
    assert epochs.read() == []
    with pytest.raises(ReadOnlyError):
        epochs.write([EpochEntry(0, 0)])
    with pytest.raises(ReadOnlyError):
        epochs.write_for_truncation([EpochEntry(0, 0)])
    assert list(tmp_path.iterdir()) == []
    generic = CheckpointFile(tmp_path / "g", 0, LineFormatter(), read_only=True)
    assert generic.read() == [] and "read_only=True" in repr(generic)
    assert list(tmp_path.iterdir()) == []


def _snapshot(root: pathlib.Path) -> dict[str, tuple[bytes, int, int]]:
    return {
        str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime_ns, p.stat().st_mode)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _golden_checkpoints(golden: pathlib.Path) -> list[pathlib.Path]:
    return sorted(
        p for p in golden.rglob("*") if p.name in OFFSET_FILES or p.name == LEADER_EPOCH_CHECKPOINT_FILE
    )


def test_every_golden_checkpoint_reads_read_only(golden: pathlib.Path) -> None:
    files = _golden_checkpoints(golden)
    assert len(files) == 101
    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in files}
    listing = sorted(golden.rglob("*"))
    totals = {"offset": 0, "epoch": 0}
    for path in files:
        data = path.read_bytes()
        lines = data.decode().split("\n")
        # what the file says it holds: an independent look at the header
        declared = int(lines[1]) if len(lines) > 2 else 0
        assert data == b"" or lines[0] == "0"
        if path.name == LEADER_EPOCH_CHECKPOINT_FILE:
            epochs = LeaderEpochCheckpoint(path, read_only=True).read()
            assert len(epochs) == declared
            assert [f"{e.epoch} {e.start_offset}" for e in epochs] == lines[2 : 2 + declared]
            assert [e.epoch for e in epochs] == sorted(e.epoch for e in epochs)
            totals["epoch"] += len(epochs)
        else:
            offsets = OffsetCheckpoint(path, read_only=True).read()
            assert len(offsets) == declared  # no partition listed twice
            assert [f"{k.topic} {k.partition} {v}" for k, v in offsets.items()] == lines[2 : 2 + declared]
            totals["offset"] += len(offsets)
    assert totals == {"offset": 1274, "epoch": 81}
    assert {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in files} == before
    assert sorted(golden.rglob("*")) == listing  # nothing created (no .tmp, no new file)


def test_golden_values(golden: pathlib.Path) -> None:
    def offsets(relative: str) -> dict[TopicPartition, int]:
        return OffsetCheckpoint(golden / relative, read_only=True).read()

    def epochs(relative: str) -> list[EpochEntry]:
        return LeaderEpochCheckpoint(golden / relative, read_only=True).read()

    # Kafka 0.10.1 broker: 53 entries, 50 of them __consumer_offsets
    recovery = offsets(f"{BULLSHIT}/recovery-point-offset-checkpoint")
    assert len(recovery) == 53
    assert sum(1 for k in recovery if k.topic == "__consumer_offsets") == 50
    assert list(recovery)[:2] == [tp("__consumer_offsets", 32), tp("__consumer_offsets", 16)]
    assert recovery[tp("TEST-TOPIC", 0)] == 0
    replication = offsets(f"{BULLSHIT}/replication-offset-checkpoint")
    assert len(replication) == 53
    # high watermarks = the message counts DETAILS.md gives for those logs
    assert replication[tp("TEST-TOPIC", 0)] == 21211
    assert replication[tp("foo", 0)] == 204
    assert replication[tp("topic1", 0)] == 5
    assert offsets(f"{BULLSHIT}/cleaner-offset-checkpoint") == {}  # 0 bytes
    assert offsets(f"{DANIELOWO}/cleaner-offset-checkpoint") == {}
    # Kafka 0.11.0 broker
    assert offsets(f"{SHARAWEIL}/recovery-point-offset-checkpoint") == {
        tp("test0", 1): 11,
        tp("test0", 0): 11,
        tp("mac_test", 0): 78,
        tp("test0", 2): 11,
    }
    assert offsets(f"{SHARAWEIL}/log-start-offset-checkpoint") == {}  # "0\n0\n"
    assert epochs(f"{SHARAWEIL}/mac_test-0/leader-epoch-checkpoint") == []
    assert epochs(f"{SHARAWEIL}/test0-0/leader-epoch-checkpoint") == [(0, 0)]
    # cleaner positions
    assert offsets(f"{ARTHUR}/cleaner-offset-checkpoint") == {
        tp("__consumer_offsets", 19): 258527
    }
    assert offsets(f"{RONEM}/cleaner-offset-checkpoint") == {
        tp("__consumer_offsets", 31): 3,
        tp("__consumer_offsets", 44): 9,
    }
    assert offsets(f"{YUANLIUBEI}/cleaner-offset-checkpoint") == {
        tp("__consumer_offsets", 17): 58
    }
    # a recovery point behind the high watermark: the broker was not shut down cleanly
    base = f"{BERKAYAKCAY}/"
    assert offsets(base + "recovery-point-offset-checkpoint") == {
        tp("topic-logx-001", 2): 7,
        tp("topic-logx-001", 0): 6,
        tp("topic-logx-001", 1): 6,
    }
    assert offsets(base + "replication-offset-checkpoint") == {
        tp("topic-logx-001", 0): 17,
        tp("topic-logx-001", 2): 17,
        tp("topic-logx-001", 1): 16,
    }
    log_start = offsets(f"{DANIELOWO}/log-start-offset-checkpoint")
    assert log_start == {
        tp("_confluent-ksql-default_query_CTAS_RIDERSNEARMOUNTAINVIEW_5-Aggregate-GroupBy-repartition", 0): 5,
        tp("_confluent-ksql-default_query_CTAS_CURRENTLOCATION_3-Aggregate-GroupBy-repartition", 0): 5,
    }
    assert (
        len(offsets(f"{MSCALDAS}/recovery-point-offset-checkpoint"))
        == 104
    )
    arthur = offsets(f"{ARTHUR}/replication-offset-checkpoint")
    assert len(arthur) == 60 and arthur[tp("oms_order_created", 3)] == 95134
    # leader epochs of a KRaft metadata log and of a consumer-offsets partition
    assert epochs(
        f"{ARTHUR}/__cluster_metadata-0/leader-epoch-checkpoint"
    ) == [
        (1, 0),
        (2, 255),
        (3, 1944),
        (4, 3178),
        (5, 4309),
        (6, 5151),
        (7, 6302),
        (8, 7094),
    ]
    assert epochs(
        f"{RONEM}/__consumer_offsets-44/leader-epoch-checkpoint"
    ) == [
        (0, 0),
        (4, 9),
        (10, 11),
    ]
    assert epochs(f"{YUANLIUBEI}/topic1-0/leader-epoch-checkpoint") == [
        (0, 2722402)
    ]


def test_golden_checkpoints_rewrite_to_the_same_bytes(golden: pathlib.Path, tmp_path: pathlib.Path) -> None:
    # What kafkalog writes is what the broker wrote: read each file, write it to a copy, compare.
    rewritten = 0
    for index, path in enumerate(_golden_checkpoints(golden)):
        data = path.read_bytes()
        if not data:
            continue  # a never-written file: a write would give "0\n0\n"
        copy = tmp_path / f"{index}-{path.name}"
        shutil.copyfile(path, copy)
        if path.name == LEADER_EPOCH_CHECKPOINT_FILE:
            checkpoint = LeaderEpochCheckpoint(copy)
            checkpoint.write(checkpoint.read())
        else:
            offset_checkpoint = OffsetCheckpoint(copy)
            offset_checkpoint.write(offset_checkpoint.read())
        assert copy.read_bytes() == data, path
        rewritten += 1
    assert rewritten == 95


def test_writable_open_of_a_broker_dir_copy(golden: pathlib.Path, tmp_path: pathlib.Path) -> None:
    source = golden / SHARAWEIL
    log_dir = tmp_path / "data"
    shutil.copytree(source, log_dir)
    for p in log_dir.rglob("*"):  # the golden copies are read-only files
        p.chmod(p.stat().st_mode | stat.S_IWUSR)
    before = _snapshot(log_dir)
    # opening writable an existing file changes nothing
    recovery = OffsetCheckpoint(log_dir / RECOVERY_POINT_CHECKPOINT_FILE)
    cleaner = OffsetCheckpoint(log_dir / CLEANER_OFFSET_CHECKPOINT_FILE)  # missing in this broker dir
    assert cleaner.read() == {}
    assert (log_dir / CLEANER_OFFSET_CHECKPOINT_FILE).read_bytes() == b""
    after = _snapshot(log_dir)
    del after[CLEANER_OFFSET_CHECKPOINT_FILE]
    assert after == before
    # the broker's next checkpoint: one partition moved on
    offsets = recovery.read()
    offsets[tp("test0", 1)] = 12
    recovery.write(offsets)
    assert (log_dir / RECOVERY_POINT_CHECKPOINT_FILE).read_bytes() == (
        b"0\n4\ntest0 1 12\ntest0 0 11\nmac_test 0 78\ntest0 2 11\n"
    )


# --- the write protocol and crashes -------------------------------------------------------------------


def test_stale_tmp_never_damages_the_checkpoint(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "cp"
    OffsetCheckpoint(path).write({tp("foo", 0): 5})
    good = path.read_bytes()
    # a crash in the middle of the last write left a half-written .tmp behind
    tmp = tmp_path / "cp.tmp"
    tmp.write_bytes(b"0\n3\nfoo 0 9\nba")
    reopened = OffsetCheckpoint(path)
    assert reopened.read() == {tp("foo", 0): 5}
    assert OffsetCheckpoint(path, read_only=True).read() == {tp("foo", 0): 5}
    assert path.read_bytes() == good
    assert tmp.read_bytes() == b"0\n3\nfoo 0 9\nba"  # opening and reading leave it alone
    reopened.write({tp("foo", 0): 6, tp("bar", 1): 2})
    assert path.read_bytes() == b"0\n2\nfoo 0 6\nbar 1 2\n"
    assert not tmp.exists()


def test_failure_while_writing_tmp_keeps_the_old_checkpoint(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "cp"
    checkpoint = OffsetCheckpoint(path)
    checkpoint.write({tp("foo", 0): 5})
    good = path.read_bytes()

    def broken_fsync(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(KafkaStorageError, match=f"Error while writing to checkpoint file {path}") as info:
        checkpoint.write({tp("foo", 0): 99})
    assert isinstance(info.value.__cause__, OSError)
    assert path.read_bytes() == good  # the rename never happened
    monkeypatch.undo()
    assert checkpoint.read() == {tp("foo", 0): 5}
    checkpoint.write({tp("foo", 0): 7})
    assert checkpoint.read() == {tp("foo", 0): 7}
    assert not (tmp_path / "cp.tmp").exists()


def test_unwritable_entries_write_nothing(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "cp"
    checkpoint = OffsetCheckpoint(path)
    checkpoint.write({tp("foo", 0): 5})
    good = path.read_bytes()
    bad: list[tuple[dict[TopicPartition, int], str]] = [
        ({tp("foo bar", 0): 1}, "holds whitespace"),
        ({tp("foo\n2", 0): 1}, "holds whitespace"),
        ({tp("foo", 2**31): 1}, "does not fit a Java int"),
        ({tp("foo", 0): 2**63}, "does not fit a Java long"),
    ]
    for offsets, message in bad:
        with pytest.raises(IllegalArgumentError, match=message):
            checkpoint.write(offsets)
    with pytest.raises(IllegalArgumentError, match="does not fit a Java int"):
        LeaderEpochCheckpoint(tmp_path / "le").write([EpochEntry(2**31, 0)])
    with pytest.raises(IllegalArgumentError, match="does not fit a Java long"):
        LeaderEpochCheckpoint(tmp_path / "le").write([EpochEntry(0, -(2**63) - 1)])
    with pytest.raises(IllegalArgumentError, match="holds a line break"):
        CheckpointFile(tmp_path / "g", 0, LineFormatter()).write(["e1\re2"])
    assert path.read_bytes() == good
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cp", "g", "le"]


def test_write_fsyncs_file_then_directory(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[str] = []
    real_fsync = os.fsync

    def recording_fsync(fd: int) -> None:
        mode = os.fstat(fd).st_mode
        synced.append("dir" if stat.S_ISDIR(mode) else "file")
        real_fsync(fd)

    checkpoint = OffsetCheckpoint(tmp_path / "cp")
    monkeypatch.setattr(os, "fsync", recording_fsync)
    checkpoint.write({tp("foo", 0): 5})
    expected = ["file", "dir"] if os.name != "nt" else ["file"]
    assert synced == expected


def test_atomic_move_fallback(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "cp"
    checkpoint = OffsetCheckpoint(path)
    checkpoint.write({tp("foo", 0): 5})
    real_replace = os.replace
    calls: list[str] = []

    def refusing_replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        calls.append(os.path.basename(src))
        raise OSError(18, "Invalid cross-device link")

    # the atomic rename is refused: the non-atomic move still lands the new checkpoint
    monkeypatch.setattr(os, "replace", refusing_replace)
    checkpoint.write({tp("foo", 0): 6})
    assert calls == ["cp.tmp"]
    assert path.read_bytes() == b"0\n1\nfoo 0 6\n"
    assert not (tmp_path / "cp.tmp").exists()

    # both moves fail: an error naming the file, and the old checkpoint is still whole
    def failing_copy(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(shutil, "copyfile", failing_copy)
    with pytest.raises(KafkaStorageError, match="Error while writing to checkpoint file") as info:
        checkpoint.write({tp("foo", 0): 7})
    assert isinstance(info.value.__cause__, OSError)
    assert info.value.__cause__.__cause__ is not None  # the refused atomic move, kept as the cause
    monkeypatch.setattr(os, "replace", real_replace)
    assert checkpoint.read() == {tp("foo", 0): 6}


def test_concurrent_writers_never_tear_the_file(tmp_path: pathlib.Path) -> None:
    import threading

    path = tmp_path / "cp"
    checkpoint = OffsetCheckpoint(path)
    maps = [{tp("t", p): n for p in range(20)} for n in range(8)]
    errors: list[BaseException] = []

    def run(offsets: dict[TopicPartition, int]) -> None:
        try:
            for _ in range(5):
                checkpoint.write(offsets)
                got = checkpoint.read()
                assert len(got) == 20 and len(set(got.values())) == 1
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=run, args=(m,)) for m in maps]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    final = checkpoint.read()
    assert set(final) == {tp("t", p) for p in range(20)}
    assert len(set(final.values())) == 1

"""The Cleaner's swap and what survives a crash in it (Kafka 3.8.0 ``LogCleanerTest``: testRecoveryAfterCrash
and the port's crash at each stage of the swap, done by hand on the files), segments whose offsets overflow
an index, and logs of legacy formats, corrupt and oversized messages.  Both kernel twins; helpers in
:mod:`tests.support.cleaner_utils`.
"""

from __future__ import annotations

import errno
import gzip
import os
import signal
import struct
import zlib
from pathlib import Path
from types import ModuleType
from typing import Any

import cramjam
import pytest

from kafkalog import MemoryRecords
from kafkalog.cleaner import CleanedTransactionMetadata, Cleaner, CleaningRound
from kafkalog.cleaner.manager import LogCleaningAbortedError, LogToClean
from kafkalog.cleaner.stats import CleanerStats
from kafkalog.config.log_config import LogConfig
from kafkalog.errors import CorruptRecordError
from kafkalog.file_message_set import FileMessageSet
from kafkalog.filenames import CLEANED_FILE_SUFFIX
from kafkalog.log import Log
from kafkalog.log import local_log as local_log_module
from kafkalog.segment import LogSegment
from tests.support.cleaner_utils import (
    INT_MAX,
    LONG_MAX,
    MB,
    XERIAL_HEADER,
    Env,
    FakeOffsetMap,
    abort_check_done,
    batches_in,
    decompress_legacy,
    files_with_suffix,
    fill_segments,
    key,
    keys_in_log,
    large_record,
    message_with_offset,
    record,
    same,
    to_clean,
    write_to_log,
)
from tests.support.log_test_utils import first_overflow_segment, initialize_log_dir_with_overflowed_segment

# -- crash recovery -----------------------------------------------------------------------------------------


def segment_file_names(directory: Path, base_offset: int) -> list[Path]:
    prefix = f"{base_offset:020d}."
    return sorted(
        p
        for p in directory.iterdir()
        if p.name.startswith(prefix) and p.name.split(".", 1)[1] in ("log", "index", "timeindex", "txnindex")
    )


def add_suffix(directory: Path, base_offset: int, suffix: str, only: str | None = None) -> None:
    """Rename a live segment's files by hand (Kafka: ``changeFileSuffixes("", suffix)``)."""
    renamed = 0
    for path in segment_file_names(directory, base_offset):
        if only is None or path.name.endswith("." + only):
            path.rename(path.with_name(path.name + suffix))
            renamed += 1
    assert renamed >= 1


def restore_deleted(directory: Path) -> None:
    """Rename every ``.deleted`` file back to its live name."""
    for path in directory.iterdir():
        if path.name.endswith(".deleted"):
            path.rename(path.with_name(path.name[: -len(".deleted")]))


def test_recovery_after_crash(env: Env) -> None:
    """Kafka's testRecoveryAfterCrash: a crash at each stage of the swap, simulated on the files."""
    cleaner = env.make_cleaner(INT_MAX)
    config = env.config(segment_bytes=300, index_interval_bytes=1, file_delete_delay_ms=10)
    directory = env.dir

    def clean_nine(log: Log, offset_map: FakeOffsetMap) -> list[int]:
        """Clean the first 9 segments, and keep the old segments' files (renamed .deleted) as a crash would:
        the deferred deletion is dropped and their handles closed.  The log's books of those deletions go too
        (a crash loses them with the scheduler's tasks), or the close below would finish them (kafkalog's close
        deletes what is pending, where Kafka's leaves it to the next open)."""
        old = log.log_segments()[:9]
        cleaner.clean_segments(
            log, old,
            CleaningRound(offset_map,
                          0,
                          CleanerStats(env.time),
                          CleanedTransactionMetadata(),
                          -1,
                          old[-1].read_next_offset()),
        )
        env.time.scheduler.clear()
        log.local_log.release_pending_deletions(delete=False)
        for segment in old:
            segment.close_handlers()
        assert len(files_with_suffix(directory, ".deleted")) >= 9 * 2
        return keys_in_log(log)

    def recover_and_check(expected_keys: list[int]) -> Log:
        """Kafka's ``LogTestUtils.recoverAndCheck``: reopen after an unclean shutdown, run the deferred
        deletes, and find no temporary file left and the expected keys."""
        recovered = env.make_log(config, clean_shutdown=False)
        env.time.sleep(config.file_delete_delay_ms + 1)
        for suffix in (".deleted", ".cleaned", ".swap"):
            assert files_with_suffix(directory, suffix) == [], f"Unexpected {suffix} file after recovery"
        assert keys_in_log(recovered) == expected_keys
        for segment in recovered.log_segments():
            for batch in segment.log.batches():
                assert segment.base_offset <= batch.base_offset
                assert batch.last_offset <= segment.base_offset + INT_MAX
        return recovered

    def refill(log: Log, offset_map: FakeOffsetMap) -> None:
        nonlocal message_count
        while log.number_of_segments < 10:
            log.append_as_leader(record(log.log_end_offset, log.log_end_offset), 0)
            message_count += 1
        for k in range(1, message_count, 2):
            offset_map.put(key(k), LONG_MAX)

    log = env.make_log(config)
    message_count = 0
    while log.number_of_segments < 10:
        log.append_as_leader(record(log.log_end_offset, log.log_end_offset), 0)
        message_count += 1
    all_keys = keys_in_log(log)
    assert all_keys == list(range(message_count))

    # pretend we have odd-numbered keys
    offset_map = FakeOffsetMap(INT_MAX)
    for k in range(1, message_count, 2):
        offset_map.put(key(k), LONG_MAX)

    cleaned_keys = clean_nine(log, offset_map)
    assert cleaned_keys == [k for k in all_keys if k % 2 == 0 or k >= log.log_segments()[1].base_offset]
    log.close()

    # 1) a crash just after the .cleaned files were written, before the rename to .swap: the clean is
    #    abandoned at recovery, and every message is there
    add_suffix(directory, 0, ".cleaned")
    restore_deleted(directory)
    log = recover_and_check(all_keys)

    # 2) a crash after some .cleaned files were renamed to .swap: the clean is abandoned
    cleaned_keys = clean_nine(log, offset_map)
    log.close()
    add_suffix(directory, 0, ".cleaned")
    (directory / f"{0:020d}.log.cleaned").rename(directory / f"{0:020d}.log.swap")
    restore_deleted(directory)
    log = recover_and_check(all_keys)

    # 3) a crash after the swap files were made, before the old segments were renamed .deleted: the swap is
    #    completed at recovery
    cleaned_keys = clean_nine(log, offset_map)
    log.close()
    add_suffix(directory, 0, ".swap")
    restore_deleted(directory)
    log = recover_and_check(cleaned_keys)

    # 4) a crash after the old segments were renamed .deleted: the swap is completed
    refill(log, offset_map)
    cleaned_keys = clean_nine(log, offset_map)
    log.close()
    add_suffix(directory, 0, ".swap")
    log = recover_and_check(cleaned_keys)

    # 5) a crash after some of the swap files lost their suffix: the swap is completed
    refill(log, offset_map)
    cleaned_keys = clean_nine(log, offset_map)
    log.close()
    add_suffix(directory, 0, ".swap", only="timeindex")
    log = recover_and_check(cleaned_keys)

    # 6) a crash after the swap, before the deferred deletion: the .deleted files go at recovery
    refill(log, offset_map)
    cleaned_keys = clean_nine(log, offset_map)
    log.close()
    log = recover_and_check(cleaned_keys)


# -- errors inside a cleaning ------------------------------------------------------------------------------


def _odd_keys_map(log: Log) -> FakeOffsetMap:
    """A map that says every odd key was overwritten later: cleaning drops those records."""
    offset_map = FakeOffsetMap(INT_MAX)
    for k in keys_in_log(log):
        if k % 2:
            offset_map.put(key(k), LONG_MAX)
    return offset_map


def _clean_three(cleaner: Cleaner, log: Log, offset_map: FakeOffsetMap, env: Env) -> None:
    """Clean the first three of the log's segments into one."""
    segments = log.log_segments()[:3]
    cleaner.clean_segments(log, segments, CleaningRound(offset_map, 0, CleanerStats(env.time),
                                                        CleanedTransactionMetadata(), -1,
                                                        segments[-1].read_next_offset()))


def test_clean_segments_leaves_the_cleaned_files_on_an_io_error(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    """A write to the cleaned segment fails with ENOSPC.  As in Kafka's ``cleanSegments``, where only a
    ``LogCleaningAbortedException`` deletes the cleaned segment, the error goes up and the ``.cleaned`` files stay
    (the log itself is unchanged); the next load of the log deletes them, as after a crash."""
    cleaner = env.make_cleaner(INT_MAX)
    config = env.config(segment_bytes=1024)
    log = env.make_log(config)
    fill_segments(log, 4)
    keys = keys_in_log(log)
    segments_before = [s.base_offset for s in log.log_segments()]
    live_files = sorted(p.name for p in env.dir.iterdir())
    real_append = FileMessageSet.append

    def disk_full(self: FileMessageSet, records: Any) -> int:
        if self.file.name.endswith(CLEANED_FILE_SUFFIX):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self.file))
        return real_append(self, records)

    monkeypatch.setattr(FileMessageSet, "append", disk_full)
    with pytest.raises(OSError, match="No space left") as raised:
        _clean_three(cleaner, log, _odd_keys_map(log), env)
    assert raised.value.errno == errno.ENOSPC
    monkeypatch.undo()

    left = files_with_suffix(env.dir, CLEANED_FILE_SUFFIX)
    assert f"{0:020d}.log{CLEANED_FILE_SUFFIX}" in left
    assert sorted(p.name for p in env.dir.iterdir() if not p.name.endswith(CLEANED_FILE_SUFFIX)) == live_files
    assert [s.base_offset for s in log.log_segments()] == segments_before
    assert keys_in_log(log) == keys

    log.close()
    reopened = env.make_log(config)
    assert files_with_suffix(env.dir, CLEANED_FILE_SUFFIX) == []
    assert sorted(reopened.load_report.removed_files) == left
    assert keys_in_log(reopened) == keys
    # and a cleaning now goes through
    _clean_three(cleaner, reopened, _odd_keys_map(reopened), env)
    assert keys_in_log(reopened) == [k for k in keys if k % 2 == 0 or k >= reopened.log_segments()[1].base_offset]


def test_an_error_after_the_swap_keeps_the_cleaned_segment(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    """The swap renames every file, then the fsync of the directory fails.  The cleaned segment is the log's
    by then, under its live name: the error goes up and the segment stays, readable now and after a reopen
    (kafkalog used to delete the cleaned segment on any error, this one too, losing the records it held)."""
    cleaner = env.make_cleaner(INT_MAX)
    config = env.config(segment_bytes=1024)
    log = env.make_log(config)
    fill_segments(log, 4)
    keys = keys_in_log(log)
    offset_map = _odd_keys_map(log)
    expected = [k for k in keys if k % 2 == 0 or k >= log.log_segments()[3].base_offset]

    def fsync_fails(directory: Any) -> None:
        raise OSError(errno.EIO, os.strerror(errno.EIO), str(directory))

    monkeypatch.setattr(local_log_module, "fsync_dir", fsync_fails)
    with pytest.raises(OSError, match="Input/output error"):
        _clean_three(cleaner, log, offset_map, env)
    monkeypatch.undo()

    assert [s.base_offset for s in log.log_segments()] == [0, log.active_segment.base_offset]
    assert keys_in_log(log) == expected
    assert log.log_segments()[0].log.file.name == f"{0:020d}.log"
    assert files_with_suffix(env.dir, CLEANED_FILE_SUFFIX) == []
    assert files_with_suffix(env.dir, ".swap") == []
    log.close()
    assert keys_in_log(env.make_log(config, clean_shutdown=False)) == expected


def test_a_ctrl_c_during_the_swap_keeps_the_cleaned_segment(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Ctrl-C (SIGINT) that arrives while the swap renames files is held until the swap is done
    (:func:`~kafkalog.fsutil.interrupts_deferred`), then raised: the cleaned segment is the log's by then, and
    stays (kafkalog used to delete it, as it deletes the cleaned segment of a round a Ctrl-C stops before the
    swap)."""
    cleaner = env.make_cleaner(INT_MAX)
    config = env.config(segment_bytes=1024)
    log = env.make_log(config)
    fill_segments(log, 4)
    keys = keys_in_log(log)
    offset_map = _odd_keys_map(log)
    expected = [k for k in keys if k % 2 == 0 or k >= log.log_segments()[3].base_offset]
    real_change = LogSegment.change_file_suffixes
    interrupted: list[bool] = []

    def ctrl_c_in_swap(self: LogSegment, old_suffix: str, new_suffix: str) -> None:
        if old_suffix == CLEANED_FILE_SUFFIX and not interrupted:
            interrupted.append(True)
            os.kill(os.getpid(), signal.SIGINT)
        real_change(self, old_suffix, new_suffix)

    monkeypatch.setattr(LogSegment, "change_file_suffixes", ctrl_c_in_swap)
    earlier = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            _clean_three(cleaner, log, offset_map, env)
    finally:
        signal.signal(signal.SIGINT, earlier)
    monkeypatch.undo()

    assert interrupted == [True]
    assert [s.base_offset for s in log.log_segments()] == [0, log.active_segment.base_offset]
    assert keys_in_log(log) == expected
    log.close()
    assert keys_in_log(env.make_log(config, clean_shutdown=False)) == expected


def test_a_failed_delete_of_an_aborted_cleaning_goes_with_the_abort(env: Env,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """An aborted cleaning deletes its cleaned segment; when that deletion fails, the abort still goes up, and
    carries the failure with it (Kafka adds it to the abort as a suppressed exception)."""
    cleaner = env.make_cleaner(INT_MAX, abort_check_done)
    log = env.make_log(env.config(segment_bytes=1024))
    fill_segments(log, 4)

    real_delete = FileMessageSet.delete

    def undeletable(self: FileMessageSet) -> bool:
        if self.file.name.endswith(CLEANED_FILE_SUFFIX):
            raise OSError(errno.EACCES, os.strerror(errno.EACCES), str(self.file))
        return real_delete(self)

    monkeypatch.setattr(FileMessageSet, "delete", undeletable)
    with pytest.raises(LogCleaningAbortedError) as raised:
        _clean_three(cleaner, log, _odd_keys_map(log), env)
    monkeypatch.undo()
    notes = getattr(raised.value, "__notes__", [])
    assert len(notes) == 1
    assert "Permission denied" in notes[0] and f"{0:020d}.log{CLEANED_FILE_SUFFIX}" in notes[0]
    # what could not be deleted is left to the next load
    assert f"{0:020d}.log{CLEANED_FILE_SUFFIX}" in files_with_suffix(env.dir, CLEANED_FILE_SUFFIX)


# -- legacy formats, corrupt and large messages -------------------------------------------------------------


def legacy_message(
    offset: int, magic: int, attributes: int, timestamp: int, k: bytes | None, v: bytes | None
) -> bytes:
    """One framed v0/v1 message, written from the format (spec §1.2), CRC-32 over magic..end."""
    body = struct.pack(">bb", magic, attributes)
    if magic == 1:
        body += struct.pack(">q", timestamp)
    for field in (k, v):
        body += struct.pack(">i", -1) if field is None else struct.pack(">i", len(field)) + field
    message = struct.pack(">I", zlib.crc32(body)) + body
    return struct.pack(">qi", offset, len(message)) + message




def compress_legacy(codec: str, data: bytes) -> bytes:
    """gzip, or snappy in the xerial framing Kafka's legacy snappy streams use (header, then length-prefixed
    raw snappy blocks)."""
    if codec == "gzip":
        return gzip.compress(data)
    block = bytes(cramjam.snappy.compress_raw(data))
    return XERIAL_HEADER + struct.pack(">i", len(block)) + block


def invalid_cleaned_message(initial_offset: int, pairs: list[tuple[int, int]], codec: str = "gzip") -> bytes:
    """Kafka's ``invalidCleanedMessage`` (KAFKA-4298): a v1 wrapper around v0 messages, as old cleaners wrote
    it; inner offsets relative to the first, the wrapper at the last offset."""
    inner = b"".join(legacy_message(i, 0, 0, -1, key(k), key(v)) for i, (k, v) in enumerate(pairs))
    codec_id = {"gzip": 1, "snappy": 2}[codec]
    return legacy_message(
        initial_offset + len(pairs) - 1, 1, codec_id, -1, None, compress_legacy(codec, inner)
    )


def inner_magics(codec: str, batch: Any) -> list[int]:
    """The magic byte of every inner message of a legacy wrapper, read from the bytes."""
    raw = batch.raw_bytes()
    key_size_at = 12 + 4 + 2 + (8 if batch.magic == 1 else 0)
    key_size = struct.unpack_from(">i", raw, key_size_at)[0]
    value_at = key_size_at + 4 + max(key_size, 0)
    value_size = struct.unpack_from(">i", raw, value_at)[0]
    inner = decompress_legacy(codec, raw[value_at + 4 : value_at + 4 + value_size])
    magics, position = [], 0
    while position < len(inner):
        size = struct.unpack_from(">i", inner, position + 8)[0]
        magics.append(inner[position + 12 + 4])
        position += 12 + size
    return magics


@pytest.mark.parametrize("codec", ["gzip", "snappy"])
def test_clean_corrupt_message_set(env: Env, codec: str) -> None:
    """KAFKA-4298: a wrapper whose inner messages have another magic is rewritten with matching magics."""
    log = env.make_log(LogConfig({"compression.type": codec}))
    cleaner = env.make_cleaner(10)
    # the payload of each message is its offset, to check the offsets after cleaning
    dup_set = list(zip([0, 1, 0, 1], range(25, 29), strict=True))  # one compressed entry with duplicates
    no_dup_set = list(zip([3, 4], range(50, 52), strict=True))  # and one without (which must be fixed too)
    log.append_as_follower(invalid_cleaned_message(25, dup_set, codec))
    log.append_as_follower(invalid_cleaned_message(50, no_dup_set, codec))
    log.roll()
    assert [inner_magics(codec, b) for b in batches_in(log)] == [[0, 0, 0, 0], [0, 0]]

    cleaner.clean(to_clean(log, 0))
    batches = batches_in(log)
    assert [r.offset for b in batches for r in b.records()] == [27, 28, 50, 51]
    for batch in batches:
        assert batch.magic == 1
        assert batch.compression.kafka_name == codec
        assert inner_magics(codec, batch) == [batch.magic] * batch.count
        for r in batch.records():
            assert int(r.value) == r.offset


def test_client_handling_of_corrupt_message_set(impl: ModuleType) -> None:
    keys = range(1, 10)
    offset = 50
    corrupted = MemoryRecords(
        invalid_cleaned_message(offset, list(zip(keys, range(offset, offset + len(keys)), strict=True)))
    )
    records = list(corrupted.records())
    assert len(records) == 9
    for r in records:
        assert int(r.value) == r.offset
    assert [r.key for r in records] == [key(k) for k in keys]


def test_large_message(env: Env) -> None:
    large_message_size = MB
    # a cleaner with a very small default max message size: its buffers grow for the large batches
    cleaner = env.make_cleaner(INT_MAX, max_message_size=1024)
    log = env.make_log(
        env.config(segment_bytes=large_message_size * 16, max_message_bytes=large_message_size * 2)
    )
    value = bytes(large_message_size)
    while log.number_of_segments < 2:
        log.append_as_leader(large_record(log.log_end_offset, value), 0)
    assert keys_in_log(log) == list(range(log.log_end_offset))

    keys = [1, 3, 5, 7, 9]
    offset_map = FakeOffsetMap(INT_MAX)
    for k in keys:
        offset_map.put(key(k), LONG_MAX)
    stats = CleanerStats(env.time)
    should_remain = [k for k in keys_in_log(log) if k not in keys]
    cleaner.clean_segments(
        log, [log.log_segments()[0]],
        CleaningRound(offset_map, 0, stats, CleanedTransactionMetadata(), -1, log.log_segments()[0].read_next_offset()),
    )
    assert keys_in_log(log) == should_remain
    assert stats.messages_written == len(should_remain) - 1  # the active segment's record was not cleaned


def assert_cleaned_files_left_for_the_next_load(env: Env, log: Log) -> None:
    """A cleaning that failed on corrupt input (not an abort) leaves its ``.cleaned`` files, as Kafka's
    ``cleanSegments`` does, and the log as it was; the next load of the log deletes them."""
    left = files_with_suffix(env.dir, CLEANED_FILE_SUFFIX)
    assert f"{log.log_segments()[0].base_offset:020d}.log{CLEANED_FILE_SUFFIX}" in left
    segments = [s.base_offset for s in log.log_segments()]
    config = log.config
    log.close()
    reopened = env.make_log(config)
    assert files_with_suffix(env.dir, CLEANED_FILE_SUFFIX) == []
    assert sorted(reopened.load_report.removed_files) == left
    assert [s.base_offset for s in reopened.log_segments()] == segments


def create_log_with_messages_larger_than_max_size(
    env: Env, large_message_size: int
) -> tuple[Log, FakeOffsetMap]:
    """Kafka's ``createLogWithMessagesLargerThanMaxSize``: the log's max.message.bytes is lowered after the
    appends, so its batches are larger than the limit."""
    log = env.make_log(
        env.config(segment_bytes=large_message_size * 16, max_message_bytes=large_message_size * 2)
    )
    value = bytes(large_message_size)
    while log.number_of_segments < 2:
        log.append_as_leader(large_record(log.log_end_offset, value), 0)
    assert keys_in_log(log) == list(range(log.log_end_offset))
    log.config = env.config(segment_bytes=large_message_size * 16, max_message_bytes=large_message_size // 2)
    offset_map = FakeOffsetMap(INT_MAX)
    for k in (1, 3, 5, 7, 9):
        offset_map.put(key(k), LONG_MAX)
    return log, offset_map


def test_message_larger_than_max_message_size(env: Env) -> None:
    log, offset_map = create_log_with_messages_larger_than_max_size(env, MB)
    cleaner = env.make_cleaner(INT_MAX, max_message_size=1024)
    head = log.log_segments()[0]
    cleaner.clean_segments(
        log, [head],
        CleaningRound(offset_map, 0, CleanerStats(env.time), CleanedTransactionMetadata(), -1, head.read_next_offset()),
    )
    should_remain = [k for k in keys_in_log(log) if str(k) not in offset_map.map]
    assert keys_in_log(log) == should_remain
    assert 1 not in keys_in_log(log) and 2 in keys_in_log(log)


def test_message_larger_than_max_message_size_with_corrupt_header(env: Env) -> None:
    log, offset_map = create_log_with_messages_larger_than_max_size(env, MB)
    head = log.log_segments()[0]
    with open(head.log.file, "r+b") as f:
        f.seek(16)  # Records.MAGIC_OFFSET
        f.write(b"\xff")
    cleaner = env.make_cleaner(INT_MAX, max_message_size=1024)
    with pytest.raises(CorruptRecordError):
        cleaner.clean_segments(
            log, [head],
            CleaningRound(offset_map,
                          0,
                          CleanerStats(env.time),
                          CleanedTransactionMetadata(),
                          -1,
                          head.base_offset + 1),
        )
    assert_cleaned_files_left_for_the_next_load(env, log)


def test_corrupt_message_size_larger_than_bytes_available(env: Env) -> None:
    log, offset_map = create_log_with_messages_larger_than_max_size(env, MB)
    config = log.config
    # Kafka cuts the file under the open log; kafkalog maps its segment files (a read of a mapped page past
    # the end of the file is a SIGBUS), so the log is closed, the file cut to 1024 bytes, and the log reopened
    head_file = log.log_segments()[0].log.file
    log.close()
    os.truncate(head_file, 1024)
    log = env.make_log(config)
    head = log.log_segments()[0]
    assert head.size() == 1024
    cleaner = env.make_cleaner(INT_MAX, max_message_size=1024)
    with pytest.raises(CorruptRecordError):
        cleaner.clean_segments(
            log, [head],
            CleaningRound(offset_map,
                          0,
                          CleanerStats(env.time),
                          CleanedTransactionMetadata(),
                          -1,
                          head.base_offset + 1),
        )
    assert_cleaned_files_left_for_the_next_load(env, log)


def test_cleaning_beyond_missing_offsets(env: Env) -> None:
    config = LogConfig({"segment.bytes": 1024 * 1024, "cleanup.policy": "compact"})
    cleaner = env.make_cleaner(INT_MAX)

    log = env.make_log(config, env.root / "test-1")
    write_to_log(log, same(range(10)), range(10))
    # roll a new segment at 11, leaving a hole at [10, 10]
    log.roll(11)
    log.append_as_follower(message_with_offset(1015, 1015, 11))  # the active segment
    next_dirty_offset, _ = cleaner.clean(
        LogToClean(log.topic_partition, log, 0, log.active_segment.base_offset, need_compaction_now=True)
    )
    assert next_dirty_offset == log.active_segment.base_offset == 11, "Cleaning point should pass offset gap"

    log = env.make_log(config, env.root / "test-2")
    write_to_log(log, same(range(10)), range(10))
    log.roll(15)  # a hole at [10, 14]
    write_to_log(log, same(range(15, 25)), range(15, 25))
    log.roll(30)  # a hole at [25, 29]
    log.append_as_follower(message_with_offset(1015, 1015, 30))
    next_dirty_offset, _ = cleaner.clean(
        LogToClean(log.topic_partition, log, 0, log.active_segment.base_offset, need_compaction_now=True)
    )
    assert next_dirty_offset == log.active_segment.base_offset == 30, (
        "Cleaning point should pass offset gap in multiple segments"
    )


# -- offset overflow ----------------------------------------------------------------------------------------


def test_segment_with_offset_overflow(env: Env) -> None:
    cleaner = env.make_cleaner(INT_MAX)
    config = env.config(index_interval_bytes=1, file_delete_delay_ms=1000)
    initialize_log_dir_with_overflowed_segment(env.dir)
    log = env.make_log(config, recovery_point=LONG_MAX)
    segment_with_overflow = first_overflow_segment(log)
    assert segment_with_overflow is not None, (
        "Failed to create log with a segment which has overflowed offsets"
    )

    num_segments_initial = log.number_of_segments
    all_keys = keys_in_log(log)
    expected_keys_after_cleaning = []
    # pretend we want to clean every alternate key
    offset_map = FakeOffsetMap(INT_MAX)
    for k in range(1, len(all_keys), 2):
        expected_keys_after_cleaning.append(all_keys[k - 1])
        offset_map.put(key(all_keys[k]), LONG_MAX)

    # cleaning the segment with overflow splits it, and the cleaning itself aborts
    with pytest.raises(LogCleaningAbortedError):
        cleaner.clean_segments(
            log, [segment_with_overflow],
            CleaningRound(offset_map,
                          0,
                          CleanerStats(env.time),
                          CleanedTransactionMetadata(),
                          -1,
                          segment_with_overflow.read_next_offset()),
        )
    assert log.number_of_segments == num_segments_initial + 1
    assert keys_in_log(log) == all_keys
    assert first_overflow_segment(log) is None
    assert files_with_suffix(env.dir, ".cleaned") == []

    # now each segment can be cleaned
    for segment in log.log_segments():
        cleaner.clean_segments(
            log, [segment],
            CleaningRound(offset_map,
                          0,
                          CleanerStats(env.time),
                          CleanedTransactionMetadata(),
                          -1,
                          segment.read_next_offset()),
        )
    assert keys_in_log(log) == expected_keys_after_cleaning
    assert first_overflow_segment(log) is None

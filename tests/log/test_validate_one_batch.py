"""The one-batch leader path, ``assign_offsets_v2_batch`` (both twins) and its caller: checked against
``LogValidator``'s general path (``assignOffsetsNonCompressed``) on the same bytes.  Where the kernel takes a
batch, the bytes it leaves and the offsets and timestamp it gives are the general path's; where it declines,
it has written nothing, and the general path either raises or handles a batch the kernel does not take."""

from __future__ import annotations

import pickle
import re
from types import ModuleType
from typing import Any

import pytest

from kafkalog import MemoryRecords
from kafkalog.append_origin import AppendOrigin
from kafkalog.config.log_config import LogConfig
from kafkalog.errors import KafkaLogError
from kafkalog.log.validator import (
    InvalidTimestampError,
    LogValidator,
    RecordValidationError,
    ValidationResult,
    validate_messages_and_assign_offsets,
)
from kafkalog.log.validator_one_batch import assign_offsets_one_compressed_batch
from kafkalog.record import CompressionType
from tests.support.validator_utils import put_field, with_crc

NOW = 1_700_000_000_000
LONG_MAX = (1 << 63) - 1
NEXT = 1_234
EPOCH = 7

RECORDS = [
    (b"k0", b"v" * 200, NOW - 10),
    (b"k1", b"", NOW + 5, [("h\u00e9", b"1"), ("n", None)]),
    (b"k2", None, -1),
]


def _data(records: list[Any] = RECORDS, **kwargs: Any) -> bytearray:
    return bytearray(MemoryRecords.with_records(records, **kwargs).buffer)



# Batches the kernel takes and ones it must decline, each as bytes a client could send.
CASES: dict[str, bytearray] = {
    "plain": _data(),
    "one record": _data([(b"key", b"value", NOW)]),
    "no timestamps": _data([(b"a", b"1", -1), (b"b", b"2", -1)]),
    "max timestamp stale": put_field(_data(), ">q", 35, NOW - 99),
    "unknown attribute bits": with_crc(put_field(put_field(_data(), ">h", 21, 0x0180), ">q", 35, 0)),
    "idempotent": _data(producer_id=5, producer_epoch=1, base_sequence=3),
    "transactional": _data(producer_id=5, producer_epoch=1, base_sequence=3, is_transactional=True),
    "idempotent, no sequence": put_field(_data(producer_id=5, producer_epoch=1, base_sequence=3), ">i", 53, -1),
    "no key": _data([(None, b"v", NOW)]),
    "too old": _data([(b"k", b"v", NOW - 3_600_001)]),
    "count above offsets": put_field(_data(), ">i", 57, 4),
    "count below offsets": put_field(_data(), ">i", 57, 2),
    "count zero": put_field(put_field(_data(), ">i", 57, 0), ">i", 23, -1),
    "control": put_field(_data(), ">h", 21, 0x20),
    "log append time": _data(timestamp_type="LogAppendTime", log_append_time=NOW),
    "compressed": _data(compression="lz4"),
    "record framing": put_field(_data([(b"k", b"v", NOW)]), ">b", 61, 0x7E),
    "trailing bytes": put_field(_data() + b"\0", ">i", 8, len(_data()) - 11),
}

CONFIGS = {
    "default": LogConfig(),
    "compact": LogConfig({"cleanup.policy": "compact"}),
    "one hour": LogConfig({"message.timestamp.before.max.ms": 3_600_000,
                           "message.timestamp.after.max.ms": 3_600_000}),
}


def _kernel(impl: ModuleType, data: bytearray, config: LogConfig, client: bool) -> Any:
    return impl.assign_offsets_v2_batch(
        data, NEXT, EPOCH, now=NOW, timestamp_before_max_ms=config.message_timestamp_before_max_ms,
        timestamp_after_max_ms=config.message_timestamp_after_max_ms, compacted=config.compact, client=client)


def _general(data: bytearray, config: LogConfig, origin: AppendOrigin) -> Any:
    validator = LogValidator(
        MemoryRecords(data), now_ms=NOW, source_compression=MemoryRecords(data).only_batch().compression,  # type: ignore[union-attr]
        target_compression="none" if not data[22] & 7 else "lz4", compacted_topic=config.compact,
        timestamp_type=config.message_timestamp_type,
        timestamp_before_max_ms=config.message_timestamp_before_max_ms,
        timestamp_after_max_ms=config.message_timestamp_after_max_ms, partition_leader_epoch=EPOCH, origin=origin)
    return validator.validate_messages_and_assign_offsets(NEXT)


@pytest.mark.parametrize("origin", [AppendOrigin.CLIENT, AppendOrigin.COORDINATOR])
@pytest.mark.parametrize("config_name", list(CONFIGS))
@pytest.mark.parametrize("case", list(CASES))
def test_kernel_matches_the_general_path(impl: ModuleType, case: str, config_name: str,
                                         origin: AppendOrigin) -> None:
    config = CONFIGS[config_name]
    data = bytearray(CASES[case])
    expected_bytes = bytearray(data)
    try:
        expected: Any = _general(expected_bytes, config, origin)
    except KafkaLogError as e:
        expected = e
    taken = _kernel(impl, data, config, origin is AppendOrigin.CLIENT)
    if taken is None:
        assert data == CASES[case], "a declined batch is left as it was"
        # It declined a batch the general path refuses, or one it does not take (another codec, another
        # timestamp type, bytes after the batch).
        assert isinstance(expected, Exception) or case in {"log append time", "compressed", "trailing bytes"}
        return
    assert not isinstance(expected, Exception), expected
    assert data == expected_bytes
    last_offset, max_timestamp = taken
    assert last_offset == expected.last_offset
    assert max_timestamp == expected.max_timestamp
    assert (last_offset if max_timestamp > -1 else -1) == expected.shallow_offset_of_max_timestamp


def test_kernel_takes_what_a_producer_sends(impl: ModuleType) -> None:
    # The cases a v2 log with default settings must take, so the fast path is really used.
    for case in ("plain", "one record", "no timestamps", "max timestamp stale", "unknown attribute bits",
                 "idempotent", "transactional"):
        assert _kernel(impl, bytearray(CASES[case]), LogConfig(), True) is not None, case


def test_kernel_arguments(impl: ModuleType) -> None:
    with pytest.raises((ValueError, TypeError, BufferError)):
        _kernel(impl, bytes(CASES["plain"]), LogConfig(), True)  # type: ignore[arg-type]
    with pytest.raises(OverflowError):
        impl.assign_offsets_v2_batch(bytearray(CASES["plain"]), 0, 1 << 31, now=NOW, timestamp_before_max_ms=0,
                                     timestamp_after_max_ms=0, compacted=False, client=True)
    assert _kernel(impl, bytearray(10), LogConfig(), True) is None
    # offsets past the long range are left to the general path
    assert impl.assign_offsets_v2_batch(bytearray(CASES["plain"]), LONG_MAX - 1, 0, now=NOW,
                                        timestamp_before_max_ms=LONG_MAX, timestamp_after_max_ms=LONG_MAX,
                                        compacted=False, client=True) is None


@pytest.mark.parametrize(("case", "config_name", "error"), [
    ("no key", "compact", RecordValidationError),
    ("too old", "one hour", InvalidTimestampError),
    ("control", "default", KafkaLogError),
])
def test_entry_point_raises_the_general_paths_error(impl: ModuleType, case: str, config_name: str,
                                                    error: type[Exception]) -> None:
    records = MemoryRecords(bytearray(CASES[case]))
    batches = list(records.batches())
    with pytest.raises(error) as raised:
        validate_messages_and_assign_offsets(records, NEXT, NOW, CONFIGS[config_name],
                                             source_compression=CompressionType.NONE, origin=AppendOrigin.CLIENT,
                                             batches=batches)
    with pytest.raises(error) as general:
        _general(bytearray(CASES[case]), CONFIGS[config_name], AppendOrigin.CLIENT)
    assert str(raised.value) == str(general.value)
    assert records.buffer == CASES[case]


@pytest.mark.parametrize("case", ["plain", "no timestamps"])
def test_entry_point_result(impl: ModuleType, case: str) -> None:
    records = MemoryRecords(bytearray(CASES[case]))
    result = validate_messages_and_assign_offsets(records, NEXT, NOW, LogConfig(),
                                                  source_compression=CompressionType.NONE,
                                                  origin=AppendOrigin.CLIENT, partition_leader_epoch=EPOCH,
                                                  batches=list(records.batches()))
    expected_bytes = bytearray(CASES[case])
    expected = _general(expected_bytes, LogConfig(), AppendOrigin.CLIENT)
    assert result.valid_records is records and records.buffer == expected_bytes
    assert result == ValidationResult(records, expected.max_timestamp, expected.shallow_offset_of_max_timestamp,
                                      False, NOW, expected.next_offset)
    assert (result.max_timestamp, result.shallow_offset_of_max_timestamp, result.message_size_maybe_changed,
            result.log_append_time, result.next_offset) == \
        (expected.max_timestamp, expected.shallow_offset_of_max_timestamp, False, NOW, expected.next_offset)


@pytest.mark.parametrize("case", ["plain", "no timestamps", "log append time", "control"])
def test_entry_point_copies_read_only_bytes_once(impl: ModuleType, case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Records over ``bytes`` take the kernel's path as a ``bytearray`` does, in one copy of the buffer, the
    batches the shallow pass read carried over to it: the caller's bytes unchanged, the copy rewritten as the
    ``bytearray`` is.  When the kernel declines, the general path rewrites that same copy, without listing its
    batches again."""
    config = LogConfig()
    writable = MemoryRecords(bytearray(CASES[case]))
    try:
        expected: Any = validate_messages_and_assign_offsets(
            writable, NEXT, NOW, config, source_compression=CompressionType.NONE, partition_leader_epoch=EPOCH,
            batches=list(writable.batches()))
    except KafkaLogError as e:
        expected = e
    records = MemoryRecords(bytes(CASES[case]))
    batches = list(records.batches())

    def no_walk(self: MemoryRecords, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the copy's batches are the ones already read")

    monkeypatch.setattr(MemoryRecords, "batches", no_walk)
    monkeypatch.setattr(MemoryRecords, "only_batch", no_walk)
    monkeypatch.setattr(MemoryRecords, "scan", no_walk)
    if isinstance(expected, Exception):
        with pytest.raises(type(expected), match=re.escape(str(expected))):
            validate_messages_and_assign_offsets(records, NEXT, NOW, config, source_compression=CompressionType.NONE,
                                                 partition_leader_epoch=EPOCH, batches=batches)
        assert records.buffer == CASES[case]
        return
    result = validate_messages_and_assign_offsets(records, NEXT, NOW, config, source_compression=CompressionType.NONE,
                                                  partition_leader_epoch=EPOCH, batches=batches)
    assert records.buffer == CASES[case]
    assert result.valid_records is not records and type(result.valid_records.buffer) is bytearray
    assert result.valid_records.buffer == writable.buffer
    assert (result.max_timestamp, result.shallow_offset_of_max_timestamp, result.next_offset) == \
        (expected.max_timestamp, expected.shallow_offset_of_max_timestamp, expected.next_offset)


@pytest.mark.parametrize(("props", "terms"), [
    ({}, (True, True, False, LONG_MAX, LONG_MAX)),
    ({"compression.type": "uncompressed", "cleanup.policy": "compact",
      "message.timestamp.before.max.ms": "1000", "message.timestamp.after.max.ms": "2000"},
     (True, True, True, 1000, 2000)),
    ({"compression.type": "gzip"}, (True, False, False, LONG_MAX, LONG_MAX)),
    ({"message.format.version": "0.10.2"}, (False, True, False, LONG_MAX, LONG_MAX)),
    ({"message.timestamp.type": "LogAppendTime"}, (False, True, False, LONG_MAX, LONG_MAX)),
])
def test_config_terms_are_worked_out_once_per_config(props: dict[str, str], terms: tuple[Any, ...]) -> None:
    config = LogConfig(props)
    assert config.one_batch_append_terms == terms
    assert config.one_batch_append_terms is config.one_batch_append_terms
    # not part of what a config is: equality, hashing and pickling ignore the cached terms
    fresh = LogConfig(props)
    assert fresh == config and hash(fresh) == hash(config)
    assert pickle.loads(pickle.dumps(config)).one_batch_append_terms == terms


# -- one compressed batch kept in its codec -----------------------------------------------------------------

COMPRESSED_RECORDS = [(b"k%d" % i, b"value %d" % i * 20, NOW - 50 + i, [("h", b"%d" % i)] if i % 2 else None)
                      for i in range(40)]


def _compressed(codec: str, records: list[Any] = COMPRESSED_RECORDS, **kwargs: Any) -> bytearray:
    return _data(records, compression=codec, **kwargs)


COMPRESSED_CASES: dict[str, tuple[bytearray, str, dict[str, Any]]] = {
    # name: (batch, codec, config properties)
    "lz4": (_compressed("lz4"), "lz4", {}),
    "zstd": (_compressed("zstd"), "zstd", {}),
    "gzip": (_compressed("gzip"), "gzip", {}),
    "snappy": (_compressed("snappy"), "snappy", {}),
    "lz4 on an lz4 log, compacted": (_compressed("lz4"), "lz4", {"compression.type": "lz4",
                                                                 "cleanup.policy": "compact"}),
    "idempotent": (_compressed("lz4", producer_id=5, producer_epoch=1, base_sequence=3), "lz4", {}),
    "max timestamp stale": (with_crc(put_field(_compressed("lz4"), ">q", 35, NOW - 99)), "lz4", {}),
    # declined: the general path raises or rebuilds
    "no key, compacted": (_compressed("lz4", [(None, b"v", NOW)]), "lz4", {"cleanup.policy": "compact"}),
    "too old": (_compressed("lz4", [(b"k", b"v", NOW - 3_600_001)]), "lz4",
                {"message.timestamp.before.max.ms": "3600000"}),
    "recompressed": (_compressed("lz4"), "lz4", {"compression.type": "zstd"}),
    "log append time batch": (_compressed("lz4", timestamp_type="LogAppendTime", log_append_time=NOW), "lz4", {}),
    "v1 log": (_compressed("gzip"), "gzip", {"message.format.version": "0.10.2"}),
    "count above offsets": (with_crc(put_field(_compressed("lz4"), ">i", 57, 41)), "lz4", {}),
    "control": (with_crc(put_field(_compressed("lz4"), ">h", 21, 0x23)), "lz4", {}),
    "idempotent, no sequence": (with_crc(put_field(_compressed("lz4", producer_id=5, producer_epoch=1, base_sequence=3),
                                            ">i", 53, -1)), "lz4", {}),
}
TAKEN = {"lz4", "zstd", "gzip", "snappy", "lz4 on an lz4 log, compacted", "idempotent", "max timestamp stale"}


def _entry(data: bytearray, codec: str, config: LogConfig, origin: AppendOrigin = AppendOrigin.CLIENT) -> Any:
    records = MemoryRecords(data)
    return records, validate_messages_and_assign_offsets(
        records, NEXT, NOW, config, source_compression=CompressionType.of(codec), origin=origin,
        partition_leader_epoch=EPOCH, batches=list(records.batches()))


def _fields(result: ValidationResult) -> tuple[Any, ...]:
    """A result's fields but its records (a new buffer on each side, compared by its bytes) and the time a
    rebuild took."""
    stats = result.record_validation_stats
    return (bytes(result.valid_records.buffer), result.max_timestamp, result.shallow_offset_of_max_timestamp,
            result.message_size_maybe_changed, result.log_append_time, result.next_offset,
            stats.temporary_memory_bytes, stats.num_records_converted)


def _general_compressed(data: bytearray, codec: str, config: LogConfig) -> Any:
    validator = LogValidator(
        MemoryRecords(data), now_ms=NOW, source_compression=codec,
        target_compression=config.compression_type.record_compression or codec, compacted_topic=config.compact,
        to_magic=config.record_version(), timestamp_type=config.message_timestamp_type,
        timestamp_before_max_ms=config.message_timestamp_before_max_ms,
        timestamp_after_max_ms=config.message_timestamp_after_max_ms, partition_leader_epoch=EPOCH)
    return validator.validate_messages_and_assign_offsets(NEXT)


@pytest.mark.parametrize("case", list(COMPRESSED_CASES))
def test_compressed_path_matches_the_general_path(impl: ModuleType, case: str) -> None:
    data, codec, props = COMPRESSED_CASES[case]
    config = LogConfig(props)
    records = MemoryRecords(bytearray(data))
    taken = assign_offsets_one_compressed_batch(records, NEXT, NOW, config, CompressionType.of(codec), EPOCH,
                                                list(records.batches()))
    assert (taken is not None) == (case in TAKEN)
    if taken is None:
        assert records.buffer == data  # nothing written
    try:
        expected = _general_compressed(expected_bytes := bytearray(data), codec, config)
    except KafkaLogError as e:
        with pytest.raises(type(e)) as raised:
            _entry(bytearray(data), codec, config)
        assert str(raised.value) == str(e)
        return
    got_records, got = _entry(bytearray(data), codec, config)
    assert _fields(got) == _fields(expected)
    assert got_records.buffer == expected_bytes  # the input as the general path leaves it (in place or not)
    if taken is not None:
        assert taken[0] is records and records.buffer == expected_bytes  # a bytearray is rewritten where it is
        assert taken[1:] == (expected.shallow_offset_of_max_timestamp, expected.max_timestamp,
                             expected.record_validation_stats.temporary_memory_bytes)
    # Read-only bytes: the same answer, in a copy made once the batch is known to be kept.
    read_only = MemoryRecords(bytes(data))
    from_bytes = assign_offsets_one_compressed_batch(read_only, NEXT, NOW, config, CompressionType.of(codec), EPOCH,
                                                     list(read_only.batches()))
    assert read_only.buffer == data
    if taken is None:
        assert from_bytes is None
    else:
        assert from_bytes is not None and from_bytes[0] is not read_only
        assert type(from_bytes[0].buffer) is bytearray and from_bytes[0].buffer == expected_bytes
        assert from_bytes[1:] == taken[1:]


def test_compressed_path_leaves_other_origins_and_protocols_to_the_general_path() -> None:
    data, codec, _props = COMPRESSED_CASES["lz4"]
    for origin in (AppendOrigin.COORDINATOR, AppendOrigin.REPLICATION):
        records, result = _entry(bytearray(data), codec, LogConfig(), origin)
        assert result.next_offset == NEXT + 40
    records = MemoryRecords(bytearray(data))
    result = validate_messages_and_assign_offsets(records, NEXT, NOW, LogConfig(), source_compression="lz4",
                                                  partition_leader_epoch=EPOCH, batches=list(records.batches()),
                                                  inter_broker_protocol_version="2.0-IV1")
    assert _fields(result) == _fields(_general_compressed(bytearray(data), codec, LogConfig()))

"""The ``encode_legacy_messages`` kernel, both twins: v0/v1 messages as ``legacy_entry`` writes one, and the
message sets built from it byte for byte what a message-at-a-time build gives."""

from __future__ import annotations

import gzip
from types import ModuleType

import pytest

from kafkalog.record.legacy import build_legacy_message_set, build_legacy_message_set_sized, legacy_entry

KEYS = [b"k", None, bytearray(b"key-3"), memoryview(b""), b"x" * 300]
VALUES = [b"v" * 100, b"value", None, b"", None]
TIMESTAMPS = [5, -1, 2**40, 0, 2**63 - 1]
OFFSETS = [0, 1, 7, 2**62, 2**63 - 1]


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("attributes", [0, 1, 0x0A, 0x108])
def test_messages_are_legacy_entries(impl: ModuleType, magic: int, attributes: int) -> None:
    expected = b"".join(legacy_entry(o, magic, attributes, t, k, v)
                        for k, v, t, o in zip(KEYS, VALUES, TIMESTAMPS, OFFSETS, strict=True))
    assert impl.encode_legacy_messages(KEYS, VALUES, TIMESTAMPS, OFFSETS, magic, attributes) == expected
    assert impl.encode_legacy_messages([], [], [], [], magic, attributes) == b""


def test_bad_arguments(impl: ModuleType) -> None:
    with pytest.raises(ValueError, match="the columns differ in length"):
        impl.encode_legacy_messages([b"k"], [b"v"], [0], [], 1, 0)
    with pytest.raises(ValueError, match="magic 0 or 1, not 2"):
        impl.encode_legacy_messages([b"k"], [b"v"], [0], [0], 2, 0)
    with pytest.raises(OverflowError):
        impl.encode_legacy_messages([b"k"], [b"v"], [0], [2**63], 1, 0)
    with pytest.raises(OverflowError):
        impl.encode_legacy_messages([b"k"], [b"v"], [-(2**63) - 1], [0], 1, 0)


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4"])
@pytest.mark.parametrize("timestamp_type", ["CreateTime", "LogAppendTime"])
def test_message_sets_and_their_size(impl: ModuleType, magic: int, codec: str, timestamp_type: str) -> None:
    if magic == 0 and timestamp_type == "LogAppendTime":
        return
    records = [(b"key-%d" % i, None if i % 7 == 3 else b"value %d" % i, 1_000 + 3 * i) for i in range(50)]
    append_time = 9_999 if timestamp_type == "LogAppendTime" else None
    data, size = build_legacy_message_set_sized(records, magic=magic, base_offset=40, compression=codec,
                                                timestamp_type=timestamp_type, log_append_time=append_time)
    assert data == build_legacy_message_set(records, magic=magic, base_offset=40, compression=codec,
                                            timestamp_type=timestamp_type, log_append_time=append_time)
    # the messages as legacy_entry writes them, one at a time
    type_bit = 0x08 if timestamp_type == "LogAppendTime" and magic == 1 else 0
    messages = b"".join(
        legacy_entry((40 + i if codec == "none" or magic == 0 else i), magic, type_bit,
                     (append_time if append_time is not None else t) if magic else -1, k, v)
        for i, (k, v, t) in enumerate(records))
    assert size == len(messages)
    if codec == "none":
        assert data == messages


def test_a_log_append_time_wrapper_holds_the_append_time_in_every_message(impl: ModuleType) -> None:
    """Kafka's ``appendLegacyRecord`` writes the append time into each v1 message of a LogAppendTime set, the
    inner messages of a compressed wrapper too (not only the wrapper): the compressed bytes, and so the wrapper's
    size, depend on it (found by the oracle, 3.9.2 seed 5104: a converted v1 gzip wrapper 31 bytes larger than
    Kafka's)."""
    records = [(b"key-%d" % i, b"value %d" % i, 1_000 + 3 * i) for i in range(5)]
    data = build_legacy_message_set(records, magic=1, base_offset=40, compression="gzip",
                                    timestamp_type="LogAppendTime", log_append_time=9_999)
    inner = gzip.decompress(data[34:])  # the wrapper: offset, size, crc, magic, attributes, timestamp, null key
    expected = b"".join(legacy_entry(i, 1, 0x08, 9_999, k, v) for i, (k, v, _) in enumerate(records))
    assert inner == expected

"""The schema-driven message writer (:mod:`kafkalog.messages.writer`), the reader's inverse (issue 34).

Two checks of the bytes: every record a real broker wrote into a ``__consumer_offsets`` log in ``golden/`` reads
and writes back to the same bytes (so the writer is byte-exact for the versions brokers write: group metadata
v1-v3, offset commits v1, v3 and v4); and every message the coordinators keep (the group coordinator's, the
transaction log's, the consumer protocol's embedded ones) round-trips through the writer and the reader at every
one of its versions, tagged fields included.  Then the refusals Kafka's generated writer makes.

The writer is plain Python (no kernel twin), so these tests do not take the ``impl`` fixture.
"""

from __future__ import annotations

import struct
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from kafkalog.messages import (
    MessageReadError,
    MessageWriteError,
    read_version_prefix,
    schema,
    schema_names,
    write_message,
    write_version_prefixed,
)
from kafkalog.messages.reader import FieldSpec, StructSpec
from kafkalog.record.memory import MemoryRecords

GOLDEN = Path(__file__).resolve().parents[2].parent / "shared" / "golden"
if not GOLDEN.is_dir():  # the checkout's own copy, when there is one
    GOLDEN = Path("/work/shared/golden")

#: Kafka: ``CoordinatorRecordSerde``'s key versions of a classic group's records.
OFFSETS_RECORDS = {0: ("OffsetCommitKey", "OffsetCommitValue"), 1: ("OffsetCommitKey", "OffsetCommitValue"),
                   2: ("GroupMetadataKey", "GroupMetadataValue")}

#: The messages the coordinators write: the group coordinator's, the transaction coordinator's, and the consumer
#: protocol's, which a group's members embed.
COORDINATOR_SCHEMAS = ["OffsetCommitKey", "OffsetCommitValue", "GroupMetadataKey", "GroupMetadataValue",
                       "TransactionLogKey", "TransactionLogValue", "ConsumerProtocolSubscription",
                       "ConsumerProtocolAssignment"]


def _offsets_logs() -> list[Path]:
    return sorted(GOLDEN.glob("**/__consumer_offsets-*/*.log"))


def test_golden_offsets_records_write_back_byte_for_byte() -> None:
    logs = _offsets_logs()
    assert len(logs) >= 10, f"the golden __consumer_offsets logs are missing under {GOLDEN}"
    seen: Counter[tuple[str, int]] = Counter()
    tombstones = 0
    for log in logs:
        for record in MemoryRecords(log.read_bytes()).records():
            key = bytes(record.key)
            key_version = struct.unpack_from(">h", key)[0]
            key_name, value_name = OFFSETS_RECORDS[key_version]
            key_data, end = schema(key_name).read(key, key_version, pos=2)
            assert end == len(key)
            assert write_version_prefixed(key_name, key_data, key_version) == key
            seen[(key_name, key_version)] += 1
            if record.value is None:
                tombstones += 1
                continue
            value = bytes(record.value)
            value_version = struct.unpack_from(">h", value)[0]
            value_data, end = schema(value_name).read(value, value_version, pos=2)
            assert end == len(value)
            assert write_version_prefixed(value_name, value_data, value_version) == value, (log, record.offset)
            seen[(value_name, value_version)] += 1
    # What the golden brokers wrote (Kafka 0.10.1 to 3.x): every key and value version they use.
    assert set(seen) == {("OffsetCommitKey", 1), ("GroupMetadataKey", 2), ("GroupMetadataValue", 1),
                         ("GroupMetadataValue", 2), ("GroupMetadataValue", 3), ("OffsetCommitValue", 1),
                         ("OffsetCommitValue", 3), ("OffsetCommitValue", 4)}
    assert seen[("OffsetCommitKey", 1)] + seen[("GroupMetadataKey", 2)] == 2165
    assert tombstones > 0


def _sample(spec: StructSpec, version: int, seed: int) -> dict[str, Any]:
    """A message with a value different from its default in every field the version has (tagged ones too), so a
    field the writer dropped or misplaced shows in the round trip."""
    out: dict[str, Any] = {}
    for i, f in enumerate(spec.fields):
        if not f.versions[0] <= version <= f.versions[1]:
            continue
        if f.struct is not None and f.struct.common and not f.struct.versions[0] <= version <= f.struct.versions[1]:
            continue
        out[f.json_name] = _sample_value(f, version, seed + i)
    return out


def _sample_value(f: FieldSpec, version: int, seed: int) -> Any:
    if f.is_array:
        if f.struct is not None:
            return [_sample(f.struct, version, seed), _sample(f.struct, version, seed + 7)]
        return [_scalar(f.element, seed), _scalar(f.element, seed + 1)]
    if f.struct is not None:
        return _sample(f.struct, version, seed)
    return _scalar(f.type, seed)


def _scalar(type_name: str, seed: int) -> Any:
    if type_name == "bool":
        return True
    if type_name in ("int8", "int16", "int32", "int64"):
        return -(seed % 100) - 2 if seed % 2 else seed % 100 + 3
    if type_name in ("uint16", "uint32"):
        return seed + 3
    if type_name == "float64":
        return seed + 0.5
    if type_name == "uuid":
        return "AAECAwQFBgcICQoLDA0ODw"
    if type_name == "string":
        return f"s-{seed}-é"
    if type_name in ("bytes", "records"):
        return bytes([seed % 256, 1, 2])
    raise AssertionError(type_name)


@pytest.mark.parametrize("name", COORDINATOR_SCHEMAS + sorted(set(schema_names()) - set(COORDINATOR_SCHEMAS)))
def test_every_version_round_trips_through_the_reader(name: str) -> None:
    """The coordinators' messages first; then every other vendored schema, for the tagged fields, nullable
    structs and uuids only they have."""
    message = schema(name)
    low, high = message.valid
    assert high < 0x7FFF
    for version in range(low, high + 1):
        data = _sample(message.root, version, seed=version)
        written = write_message(message, data, version)
        read, end = message.read(written, version)
        assert end == len(written)
        assert read == data, (name, version)
        # and the prefixed frame
        framed = write_version_prefixed(name, data, version)
        assert framed == struct.pack(">h", version) + written


def test_missing_fields_write_their_defaults() -> None:
    written = write_version_prefixed("OffsetCommitValue", {"offset": 42}, 3)
    read, _ = schema("OffsetCommitValue").read(written, 3, pos=2)
    assert read == {"offset": 42, "leaderEpoch": -1, "metadata": "", "commitTimestamp": 0}


def test_the_version_prefix_reads_back() -> None:
    """``read_version_prefix`` is ``write_version_prefixed``'s inverse for the version (Kafka:
    ``CoordinatorRecordSerde.readVersion``, whose message ``CoordinatorRecordSerdeTest`` asserts)."""
    written = write_version_prefixed("OffsetCommitValue", {"offset": 42}, 3)
    assert read_version_prefix(written, "value") == 3
    assert read_version_prefix(b"\xff\xfe", "key") == -2
    for short in (b"", b"\x00"):
        with pytest.raises(MessageReadError, match=r"^Could not read version from key's buffer\.$"):
            read_version_prefix(short, "key")


def test_a_non_default_field_the_version_lacks_is_refused() -> None:
    with pytest.raises(MessageWriteError, match="Attempted to write a non-default leaderEpoch at version 1"):
        write_message("OffsetCommitValue", {"offset": 1, "leaderEpoch": 5, "metadata": "", "commitTimestamp": 0}, 1)
    # at its default it is left out, as Kafka's writer leaves it
    assert write_message("OffsetCommitValue", {"offset": 1, "leaderEpoch": -1, "metadata": "",
                                               "commitTimestamp": 0, "expireTimestamp": -1}, 1) == (
        struct.pack(">q", 1) + struct.pack(">h", 0) + struct.pack(">q", 0) + struct.pack(">q", -1))


def test_null_in_a_non_nullable_field_is_refused() -> None:
    with pytest.raises(MessageWriteError, match="non-nullable field protocolType was serialized as null"):
        write_message("GroupMetadataValue", {"protocolType": None, "generation": 1, "members": []}, 3)
    # the protocol is nullable: written as the length -1
    written = write_message("GroupMetadataValue", {"protocolType": "consumer", "generation": 1, "protocol": None,
                                                   "leader": None, "currentStateTimestamp": 5, "members": []}, 3)
    assert schema("GroupMetadataValue").read(written, 3)[0]["protocol"] is None


def test_a_string_too_long_is_refused() -> None:
    with pytest.raises(MessageWriteError, match="'metadata' field is too long to be serialized"):
        write_message("OffsetCommitValue", {"offset": 1, "metadata": "x" * 0x8000}, 3)


def test_a_version_outside_the_valid_ones_is_refused() -> None:
    with pytest.raises(MessageWriteError, match="Can't write version 9 of OffsetCommitValue"):
        write_message("OffsetCommitValue", {"offset": 1}, 9)
    with pytest.raises(MessageWriteError, match="Version 40000 does not fit int16"):
        write_version_prefixed("OffsetCommitValue", {"offset": 1}, 40000)


@pytest.mark.parametrize(("data", "message"), [
    ({"offset": 1 << 63}, "does not fit int64"),
    ({"offset": "1"}, "does not fit int64"),
    ({"offset": True}, "does not fit int64"),
    ({"offset": 1, "metadata": b"x"}, "is not a string"),
])
def test_values_of_the_wrong_type_or_range_are_refused(data: dict[str, Any], message: str) -> None:
    with pytest.raises(MessageWriteError, match=message):
        write_message("OffsetCommitValue", data, 3)


def test_flexible_versions_carry_a_tagged_field_section() -> None:
    # OffsetCommitValue v4 is flexible: compact string, then an empty tagged-field section.
    written = write_message("OffsetCommitValue", {"offset": 7, "leaderEpoch": 2, "metadata": "m",
                                                  "commitTimestamp": 9}, 4)
    assert written == (struct.pack(">q", 7) + struct.pack(">i", 2) + b"\x02m" + struct.pack(">q", 9) + b"\x00")

"""The ``__remote_log_metadata`` topic: ``RemoteLogMetadataSerde`` (Kafka 3.8.0), the dump's
``--remote-log-metadata-decoder`` (Kafka 3.9.0 ``DumpLogSegmentsTest.testDumpRemoteLogMetadata*``, with the
strings Kafka's test expects), and the replay that keeps only the segments whose copy finished.  Record bytes
are built here by hand, field by field, as Kafka's generated ``write`` lays them out."""

from __future__ import annotations

import base64
import io
import struct
from pathlib import Path

import pytest

from kafkalog.cli import main
from kafkalog.config.log_config import LogConfig
from kafkalog.log import Log
from kafkalog.messages.reader import MessageReadError
from kafkalog.record import MemoryRecords
from kafkalog.record.batch import build_default_batch
from kafkalog.remote.metadata import copied_segment_ids, copied_segments, deserialize, metadata_values
from kafkalog.tools.dump_decoders import RemoteMetadataLogMessageParser

TOPIC_ID = "lZ6vvmajTWKDBUTV6SQAtQ"
SEGMENT_ID = "adh9f8BMS4anaUnD8KWfWg"
OTHER_SEGMENT_ID = "tqimKeZwStOEOwRzT3L5oQ"


def uuid(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "==")


def uvarint(v: int) -> bytes:
    out = bytearray()
    while v >= 0x80:
        out.append(v & 0x7F | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def compact_string(s: str) -> bytes:
    data = s.encode()
    return uvarint(len(data) + 1) + data


def compact_bytes(b: bytes | None) -> bytes:
    return b"\x00" if b is None else uvarint(len(b) + 1) + b


TAGS = b"\x00"  # an empty tagged-field section


def frame(api_key: int, body: bytes) -> bytes:
    """``AbstractApiMessageSerde.write``: frame version 1, api key, version 0, the message."""
    return uvarint(1) + uvarint(api_key) + uvarint(0) + body


def topic_id_partition(topic: str = "foo", partition: int = 0) -> bytes:
    return compact_string(topic) + uuid(TOPIC_ID) + struct.pack(">i", partition) + TAGS


def segment_id_entry(segment: str = SEGMENT_ID) -> bytes:
    return topic_id_partition() + uuid(segment) + TAGS


def segment_metadata(segment: str = SEGMENT_ID, start: int = 0, end: int = 99, state: int = 0,
                     epochs: tuple[tuple[int, int], ...] = ((0, 0), (1, 40)), custom: bytes | None = None) -> bytes:
    """``RemoteLogSegmentMetadataRecord`` (api key 0)."""
    body = (segment_id_entry(segment) + struct.pack(">qqiqq", start, end, 1, 1_700_000_000_500, 1_700_000_000_000)
            + uvarint(len(epochs) + 1) + b"".join(struct.pack(">iq", e, o) + TAGS for e, o in epochs)
            + struct.pack(">i", 4096) + compact_bytes(custom) + struct.pack(">b", state) + TAGS)
    return frame(0, body)


def segment_update(segment: str = SEGMENT_ID, state: int = 1, custom: bytes | None = None, time: int = 0) -> bytes:
    """``RemoteLogSegmentMetadataUpdateRecord`` (api key 1)."""
    return frame(1, segment_id_entry(segment) + struct.pack(">iq", 0, time) + compact_bytes(custom)
                 + struct.pack(">b", state) + TAGS)


def partition_delete(state: int = 0) -> bytes:
    """``RemotePartitionDeleteMetadataRecord`` (api key 2)."""
    return frame(2, topic_id_partition() + struct.pack(">iqb", 0, 0, state) + TAGS)


def snapshot() -> bytes:
    """``RemoteLogSegmentMetadataSnapshotRecord`` (api key 3)."""
    body = (uuid(SEGMENT_ID) + struct.pack(">qqiqq", 0, 99, 1, 5, 6) + uvarint(2) + struct.pack(">iq", 3, 7) + TAGS
            + struct.pack(">i", 10) + compact_bytes(b"xy") + struct.pack(">b", 1) + TAGS)
    return frame(3, body)


def test_the_four_records_print_as_kafka_prints_them() -> None:
    assert str(deserialize(segment_metadata(custom=b"\x00\x01"))) == (
        f"RemoteLogSegmentMetadata{{remoteLogSegmentId=RemoteLogSegmentId{{topicIdPartition={TOPIC_ID}:foo-0, "
        f"id={SEGMENT_ID}}}, startOffset=0, endOffset=99, brokerId=1, maxTimestampMs=1700000000500, "
        "eventTimestampMs=1700000000000, segmentLeaderEpochs={0=0, 1=40}, segmentSizeInBytes=4096, "
        "customMetadata=Optional[CustomMetadata{2 bytes}], state=COPY_SEGMENT_STARTED}")
    # DumpLogSegmentsTest's expected payloads
    assert str(deserialize(segment_update(custom=bytes([0, 1, 2, 3])))) == (
        f"RemoteLogSegmentMetadataUpdate{{remoteLogSegmentId=RemoteLogSegmentId{{topicIdPartition={TOPIC_ID}:foo-0, "
        f"id={SEGMENT_ID}}}, customMetadata=Optional[CustomMetadata{{4 bytes}}], state=COPY_SEGMENT_FINISHED, "
        "eventTimestampMs=0, brokerId=0}")
    assert str(deserialize(partition_delete())) == (
        f"RemotePartitionDeleteMetadata{{topicPartition={TOPIC_ID}:foo-0, state=DELETE_PARTITION_MARKED, "
        "eventTimestampMs=0, brokerId=0}")
    assert str(deserialize(snapshot())) == (
        f"RemoteLogSegmentMetadataSnapshot{{segmentId={SEGMENT_ID}, startOffset=0, endOffset=99, maxTimestampMs=5, "
        "segmentLeaderEpochs={3=7}, segmentSizeInBytes=10, customMetadata=Optional[CustomMetadata{2 bytes}], "
        "state=COPY_SEGMENT_FINISHED}")
    assert "customMetadata=Optional.empty" in str(deserialize(segment_update()))


@pytest.mark.parametrize(("value", "message"), [
    (b"corrupted", "Could not deserialize metadata record due to unknown frame version 99(only frame version 1 "
                   "is supported)"),
    (frame(7, b""), "org.apache.kafka.common.errors.UnsupportedVersionException: Unknown metadata id 7"),
    (segment_update()[:-3], "Failed to deserialize record with type 1"),
    (segment_update() + b"\x00", "Found 1 byte(s) of garbage after 1"),
    (segment_update(state=9), "state can not be null"),
    (partition_delete(state=9), "null"),
    (segment_metadata(start=-1), "Unexpected start offset = -1. StartOffset for a remote segment cannot be negative"),
    (segment_metadata(start=10, end=5), "Unexpected end offset = 5. EndOffset for a remote segment cannot be less "
                                        "than startOffset = 10"),
    (segment_metadata(epochs=()), "segmentLeaderEpochs can not be null or empty"),
    (None, "the record has no value"),
])
def test_bad_records_say_what_kafka_says(value: bytes | None, message: str) -> None:
    with pytest.raises(MessageReadError) as e:
        deserialize(value)
    assert str(e.value) == message
    assert RemoteMetadataLogMessageParser()(5, None, value) == (None, f"Error at offset 5, skipping. {message}")


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main(["--no-progress", *argv], stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


def test_dump_remote_log_metadata(tmp_path: Path) -> None:
    """``testDumpRemoteLogMetadataMultipleRecordsMultipleBatches`` and ``...WithCorruption``."""
    values = [segment_update(custom=bytes([0, 1, 2, 3])), partition_delete()]
    batch = build_default_batch([(None, v, 1_700_000_000_000) for v in values])
    log = tmp_path / "00000000000000000000.log"
    log.write_bytes(batch + build_default_batch([(None, v, 1_700_000_000_000) for v in values], base_offset=2)
                    + build_default_batch([(None, b"corrupted", 1_700_000_000_000)], base_offset=4))
    status, out, err = run("dump", "--remote-log-metadata-decoder", "--files", str(log))
    assert status == 0, err
    assert "Log starting offset: 0" in out
    records = [line for line in out.splitlines() if line.startswith("| offset:")]
    assert len(records) == 5
    assert out.count(f"payload: {deserialize(values[0])}") == 2
    assert out.count(f"payload: {deserialize(values[1])}") == 2
    assert records[4].endswith("payload: Error at offset 4, skipping. Could not deserialize metadata record due to "
                               "unknown frame version 99(only frame version 1 is supported)")
    assert " key: " not in out  # no keys for metadata records


def test_copied_segments_replays_the_states(tmp_path: Path) -> None:
    values = [
        segment_metadata(SEGMENT_ID), segment_update(SEGMENT_ID, state=1, time=7),  # copied
        segment_metadata(OTHER_SEGMENT_ID, start=100, end=199),  # started, never finished
        segment_update(OTHER_SEGMENT_ID, state=3),  # an invalid transition: ignored
        segment_update("AAAAAAAAAAAAAAAAAAAAAA", state=1),  # an update of a segment never added: ignored
    ]
    copied = copied_segments(values)
    assert list(copied) == [SEGMENT_ID]
    assert copied[SEGMENT_ID].state == "COPY_SEGMENT_FINISHED" and copied[SEGMENT_ID].event_timestamp_ms == 7
    assert copied[SEGMENT_ID].end_offset == 99
    assert copied_segment_ids([*values, segment_update(SEGMENT_ID, state=2)]) == frozenset()  # deletion started
    assert copied_segment_ids([*values, partition_delete()]) == frozenset()
    with pytest.raises(MessageReadError):
        copied_segment_ids([*values, b"corrupted"])
    # read from a __remote_log_metadata partition kafkalog wrote
    directory = tmp_path / "__remote_log_metadata-0"
    log = Log(directory, LogConfig())
    try:
        for v in values:
            log.append_as_leader(MemoryRecords.with_records([(None, v)]), leader_epoch=0)
    finally:
        log.close()
    assert copied_segment_ids(metadata_values([directory])) == frozenset({SEGMENT_ID})

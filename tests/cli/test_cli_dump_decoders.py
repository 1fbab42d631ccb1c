"""``kafkalog dump --offsets-decoder / --transaction-log-decoder / --cluster-metadata-decoder``.

Ports the decoder cases of Kafka's ``DumpLogSegmentsTest`` (core/src/test/scala/unit/kafka/tools, tag 3.8.0:
``testOffsetsMessageParser``, ``testDumpMetadataRecords``) with the strings Kafka's test expects, on records
whose bytes this file builds by hand with ``struct`` (what Kafka's serializers write, field by field), and
runs the decoders over the ``__consumer_offsets`` and ``__cluster_metadata`` partitions of the golden folder.
"""

from __future__ import annotations

import base64
import io
import json
import shutil
import struct
from pathlib import Path

import pytest

from kafkalog.cli import main
from kafkalog.messages.reader import java_double
from kafkalog.record.batch import build_default_batch
from tests.messages.test_reader import bounded_reads

LOG = "00000000000000000000.log"


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main(["--no-progress", *argv], stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


def write_log(directory: Path, records: list[tuple[bytes | None, bytes | None]]) -> Path:
    """One batch per record, so each decodes (or fails) on its own."""
    path = directory / LOG
    path.write_bytes(b"".join(build_default_batch([(key, value, 1_700_000_000_000)], base_offset=offset)
                              for offset, (key, value) in enumerate(records)))
    return path


def payloads(out: str) -> list[str]:
    """What follows the record metadata on each record line (``key: ...`` and ``payload: ...``)."""
    return [line.split(" headerKeys: []", 1)[1].removeprefix(" ") for line in out.splitlines()
            if line.startswith("| offset:")]


# -- hand encoders: Kafka's wire types ---------------------------------------------------------------------

def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


def s16(text: str) -> bytes:  # a non-flexible string
    return i16(len(text)) + text.encode()


def uvarint(v: int) -> bytes:
    out = b""
    while v >= 0x80:
        out += bytes([v & 0x7F | 0x80])
        v >>= 7
    return out + bytes([v])


def compact(text: str | bytes | None) -> bytes:  # a flexible string or bytes
    if text is None:
        return b"\x00"
    data = text.encode() if isinstance(text, str) else text
    return uvarint(len(data) + 1) + data


# The records of Kafka's testOffsetsMessageParser, as CoordinatorRecordSerde writes them.
CG_KEY = i16(3) + s16("group")  # ConsumerGroupMetadataKey v3
CG_VALUE = i16(0) + i32(10) + b"\x00"  # ConsumerGroupMetadataValue v0: epoch, no tagged fields
GROUP_KEY = i16(2) + s16("group")  # GroupMetadataKey v2
# ConsumerProtocol.serializeSubscription(topics [foo], no user data, owned foo-0, generation 0, rack "rack"), v3
SUBSCRIPTION = (i16(3) + i32(1) + s16("foo") + i32(-1) + i32(1) + s16("foo") + i32(1) + i32(0) + i32(0)
                + s16("rack"))
ASSIGNMENT = i16(3) + i32(1) + s16("foo") + i32(1) + i32(0) + i32(-1)  # assigned foo-0, no user data


def group_value(subscription: bytes, assignment: bytes) -> bytes:
    """GroupMetadataValue v4 (flexible) with the one member of Kafka's test."""
    member = (compact("member") + compact("instance") + compact("client") + compact("host") + i32(1000)
              + i32(100) + compact(subscription) + compact(assignment) + b"\x00")
    return (i16(4) + compact("consumer") + i32(10) + compact("range") + compact("member") + i64(-1)
            + uvarint(2) + member + b"\x00")


# A default ConsumerGroupMemberMetadataValue v0: null instance and rack ids, empty client id, host and
# topics, null regex, rebalance timeout -1, empty server assignor, no tagged field.
MEMBER_VALUE = i16(0) + b"\x00\x00\x01\x01\x01\x00" + i32(-1) + b"\x01\x00"

KAFKA_GROUP_VALUE = (
    '{"version":"4","data":{"protocolType":"consumer","generation":10,"protocol":"range",'
    '"leader":"member","currentStateTimestamp":-1,"members":[{"memberId":"member",'
    '"groupInstanceId":"instance","clientId":"client","clientHost":"host",'
    '"rebalanceTimeout":1000,"sessionTimeout":100,"subscription":{"topics":["foo"],'
    '"userData":null,"ownedPartitions":[{"topic":"foo","partitions":[0]}],'
    '"generationId":0,"rackId":"rack"},"assignment":{"assignedPartitions":'
    '[{"topic":"foo","partitions":[0]}],"userData":null}}]}}')


def test_offsets_decoder_prints_what_kafkas_test_expects(tmp_path: Path) -> None:
    """Kafka's testOffsetsMessageParser, case by case, through the command line."""
    log = write_log(tmp_path, [
        (CG_KEY, CG_VALUE),
        (GROUP_KEY, group_value(SUBSCRIPTION, ASSIGNMENT)),
        (GROUP_KEY, group_value(b"Subscription", b"Assignment")),  # not the consumer protocol's bytes
        (CG_KEY, None),
        (i16(32767) + s16("group"), CG_VALUE),
        (CG_KEY, MEMBER_VALUE),  # the value does not match the record type
    ])
    status, out, err = run("dump", "--offsets-decoder", "--files", str(log))
    assert (status, err) == (0, "")
    assert payloads(out) == [
        'key: {"type":"3","data":{"groupId":"group"}} payload: {"version":"0","data":{"epoch":10}}',
        'key: {"type":"2","data":{"group":"group"}} payload: ' + KAFKA_GROUP_VALUE,
        'key: {"type":"2","data":{"group":"group"}} payload: ' + KAFKA_GROUP_VALUE.split(',"subscription"')[0]
        + ',"subscription":"U3Vic2NyaXB0aW9u","assignment":"QXNzaWdubWVudA=="}]}}',
        'key: {"type":"3","data":{"groupId":"group"}} payload: <DELETE>',
        "key: Unknown record type 32767 at offset 4, skipping.",
        "key: Error at offset 5, skipping. Could not read record with version 0 from value's buffer due to: "
        "Error reading byte array of 536870911 byte(s): only 1 byte(s) available.",
    ]


def test_offsets_decoder_reads_every_offset_commit_version(tmp_path: Path) -> None:
    """OffsetCommitKey v0/v1 and OffsetCommitValue v0..v4 (v1 carries expireTimestamp, v3 leaderEpoch, v4 is
    flexible), as the brokers from 0.9 to 3.x wrote them; with --skip-record-metadata the line starts at
    ``key:``, and --json carries the same objects, as JSON (not as text to parse again)."""
    key = i16(1) + s16("g") + s16("t") + i32(7)
    values = [i16(0) + i64(42) + s16("m") + i64(1000),
              i16(1) + i64(42) + s16("m") + i64(1000) + i64(2000),
              i16(2) + i64(42) + s16("m") + i64(1000),
              i16(3) + i64(42) + i32(5) + s16("m") + i64(1000),
              i16(4) + i64(42) + i32(5) + compact("m") + i64(1000) + b"\x00"]
    log = write_log(tmp_path, [(i16(0) + s16("g") + s16("t") + i32(7), values[0])] + [(key, v) for v in values[1:]])
    status, out, _err = run("dump", "--offsets-decoder", "--skip-record-metadata", "--files", str(log))
    lines = [line for line in out.splitlines() if line.startswith("| ")]
    commit = '"data":{"offset":42,%s"metadata":"m","commitTimestamp":1000%s}}'
    assert lines == [
        '| key: {"type":"0","data":{"group":"g","topic":"t","partition":7}} payload: {"version":"0",'
        + commit % ("", ""),
        '| key: {"type":"1","data":{"group":"g","topic":"t","partition":7}} payload: {"version":"1",'
        + commit % ("", ',"expireTimestamp":2000'),
        '| key: {"type":"1","data":{"group":"g","topic":"t","partition":7}} payload: {"version":"2",'
        + commit % ("", ""),
        '| key: {"type":"1","data":{"group":"g","topic":"t","partition":7}} payload: {"version":"3",'
        + commit % ('"leaderEpoch":5,', ""),
        '| key: {"type":"1","data":{"group":"g","topic":"t","partition":7}} payload: {"version":"4",'
        + commit % ('"leaderEpoch":5,', ""),
    ]
    assert status == 0
    status, out, _err = run("dump", "--offsets-decoder", "--json", "--files", str(log))
    assert status == 0
    records = [json.loads(line) for line in out.splitlines() if json.loads(line)["type"] == "record"]
    assert records[1]["key"] == {"type": "1", "data": {"group": "g", "topic": "t", "partition": 7}}
    assert records[1]["payload"]["data"]["expireTimestamp"] == 2000
    assert [json.dumps(r["payload"], separators=(",", ":")) for r in records] == [
        line.split(" payload: ")[1] for line in lines]


def test_offsets_decoder_refuses_nonsense_cleanly(tmp_path: Path) -> None:
    """A record without a key (Kafka's tool throws, and stops) is one line on stderr and exit 1, and the dump
    goes on; a cut-short key or value, and a record of another topic are Kafka's ``Error at offset N,
    skipping.`` lines.  A value version outside the schema's is read as Kafka's generated code reads it: a
    message's reader checks no version, and a field is read where the generated code's tests let it (the dump
    oracle holds both to Kafka 3.9.2's tool), so version 9 reads as the highest and -1 as the lowest."""
    log = write_log(tmp_path, [
        (None, b"x"),
        (CG_KEY, i16(9) + i32(10) + b"\x00"),
        (i16(1) + b"\x00", None),  # the group name's length cut short
        (i16(1) + s16("g")[:2], None),  # the group name itself missing
        (CG_KEY[:1], None),
        (b"user-key", b"user-value"),
        (CG_KEY, CG_VALUE),
        (GROUP_KEY, i16(9) + group_value(SUBSCRIPTION, ASSIGNMENT)[2:]),
        (i16(1) + s16("g") + s16("t") + i32(7), i16(-2) + i64(42) + s16("m") + i64(1000)),
    ])
    status, out, err = run("dump", "--offsets-decoder", "--files", str(log))
    assert status == 1
    assert err == (f"kafkalog dump: {log}: Failed to decode message at offset 0 using offset topic decoder "
                   "(message had a missing key)\n")
    assert payloads(out) == [
        "",  # the record Kafka's tool would have died on: its metadata, then nothing
        'key: {"type":"3","data":{"groupId":"group"}} payload: {"version":"9","data":{"epoch":10}}',
        "key: Error at offset 2, skipping. Could not read record with version 1 from key's buffer due to: null.",
        "key: Error at offset 3, skipping. Could not read record with version 1 from key's buffer due to: "
        "Error reading byte array of 1 byte(s): only 0 byte(s) available.",
        "key: Error at offset 4, skipping. Could not read version from key's buffer.",
        f"key: Unknown record type {struct.unpack('>h', b'us')[0]} at offset 5, skipping.",
        'key: {"type":"3","data":{"groupId":"group"}} payload: {"version":"0","data":{"epoch":10}}',
        'key: {"type":"2","data":{"group":"group"}} payload: ' + KAFKA_GROUP_VALUE.replace('"4"', '"9"', 1),
        'key: {"type":"1","data":{"group":"g","topic":"t","partition":7}} payload: {"version":"-2","data":'
        '{"offset":42,"metadata":"m","commitTimestamp":1000}}',
    ]
    assert "Traceback" not in out + err


# -- __transaction_state --------------------------------------------------------------------------------

def txn_value(status: int, partitions: list[tuple[str, list[int]]] | None) -> bytes:
    """TransactionLogValue v0 as TransactionLog.valueToBytes writes it."""
    body = b"" if partitions is None else b"".join(s16(t) + i32(len(ps)) + b"".join(i32(p) for p in ps)
                                                 for t, ps in partitions)
    array = i32(-1) if partitions is None else i32(len(partitions)) + body
    return i16(0) + i64(1000) + i16(2) + i32(60000) + bytes([status]) + array + i64(1_700_000_000_123) + i64(17)


def test_transaction_log_decoder(tmp_path: Path) -> None:
    """TransactionLog.formatRecordKeyAndValue's text.  The partitions print in the order of Scala's
    mutable.HashSet: for ``foo-p`` the improved hash is (31 * (31 + p) + "foo".hashCode()) ^ 1 with
    "foo".hashCode() = 101574, so the buckets (hash & 15) of foo-0, foo-1, foo-2 are 6, 7 and 4."""
    key = i16(0) + s16("my-txn")
    log = write_log(tmp_path, [
        (key, txn_value(1, [("foo", [0, 1, 2])])),
        (key, txn_value(0, None)),
        (key, None),
        (i16(5) + s16("my-txn"), txn_value(4, [])),
        (key, txn_value(9, [])),
        (key, i16(3) + b"\x00"),
    ])
    status, out, err = run("dump", "--transaction-log-decoder", "--files", str(log))
    prefix = "key: transaction_metadata::transactionalId=my-txn payload: "
    assert payloads(out) == [
        prefix + "producerId:1000,producerEpoch:2,state=Ongoing,partitions=[foo-2,foo-0,foo-1],"
        "txnLastUpdateTimestamp=1700000000123,txnTimeoutMs=60000",
        prefix + "producerId:1000,producerEpoch:2,state=Empty,partitions=[],txnLastUpdateTimestamp=1700000000123,"
        "txnTimeoutMs=60000",
        prefix + "<DELETE>",
        "key: unknown::version=5",
        "",
        "",
    ]
    assert status == 1
    assert err.splitlines() == [
        f"kafkalog dump: {log}: Unknown transaction state id 9 from the transaction status message",
        f"kafkalog dump: {log}: Unknown version 3 from the transaction log message value",
    ]


# -- __cluster_metadata ----------------------------------------------------------------------------------

TOPIC_ID = bytes(range(16))
TOPIC_ID_TEXT = base64.urlsafe_b64encode(TOPIC_ID).decode().rstrip("=")


def metadata(api_key: int, version: int, body: bytes) -> bytes:
    """MetadataRecordSerde: frame version 1, apiKey, version, the record."""
    return uvarint(1) + uvarint(api_key) + uvarint(version) + body


REGISTER_BROKER = metadata(0, 0, i32(1) + TOPIC_ID + i64(20) + uvarint(1) + uvarint(1) + compact(None) + b"\x00")
TOPIC = metadata(2, 0, compact("test-topic") + TOPIC_ID + b"\x00")
# PartitionChangeRecord v0 as Kafka's test builds it: leader 1 and isr [0, 1, 2] are tagged fields (tags 1, 0).
ISR = uvarint(4) + i32(0) + i32(1) + i32(2)
PARTITION_CHANGE = metadata(5, 0, i32(0) + TOPIC_ID + uvarint(2) + uvarint(0) + uvarint(len(ISR)) + ISR
                            + uvarint(1) + uvarint(4) + i32(1))
CLIENT_QUOTA = metadata(14, 0, uvarint(2) + compact("user") + compact(None) + b"\x00" + compact("producer_byte_rate")
                        + struct.pack(">d", 1048576.0) + b"\x00" + b"\x00")


def test_cluster_metadata_decoder(tmp_path: Path) -> None:
    """Kafka's testDumpMetadataRecords: records by type, as MetadataJsonConverters writes them (tagged
    fields only when set; the bogus record of Kafka's test is an ``Error at N, skipping.`` line)."""
    bogus = uvarint(10000) + uvarint(10000)
    log = write_log(tmp_path, [(None, TOPIC), (None, PARTITION_CHANGE), (None, CLIENT_QUOTA), (None, bogus),
                               (None, metadata(99, 0, b"")), (None, metadata(2, 7, b"")),
                               (None, TOPIC + b"!!"), (None, TOPIC[:-3]), (b"k", None)])
    status, out, err = run("dump", "--cluster-metadata-decoder", "--skip-record-metadata", "--files", str(log))
    assert (status, err) == (0, "")
    # Kafka's quirk: with --skip-record-metadata and no key, " payload:" opens the line, without "| ".
    assert [line for line in out.splitlines() if line.startswith(" payload: ")] == [
        f' payload: {{"type":"TOPIC_RECORD","version":0,"data":{{"name":"test-topic","topicId":"{TOPIC_ID_TEXT}"}}}}',
        f' payload: {{"type":"PARTITION_CHANGE_RECORD","version":0,"data":{{"partitionId":0,'
        f'"topicId":"{TOPIC_ID_TEXT}","isr":[0,1,2],"leader":1}}}}',
        ' payload: {"type":"CLIENT_QUOTA_RECORD","version":0,"data":{"entity":[{"entityType":"user",'
        '"entityName":null}],"key":"producer_byte_rate","value":1048576.0,"remove":false}}',
        " payload: Error at 3, skipping. Could not deserialize metadata record due to unknown frame version "
        "10000(only frame version 1 is supported)",
        " payload: Error at 4, skipping. org.apache.kafka.common.errors.UnsupportedVersionException: Unknown "
        "metadata id 99",
        " payload: Error at 5, skipping. Failed to deserialize record with type 2",
        " payload: Error at 6, skipping. Found 2 byte(s) of garbage after 2",
        " payload: Error at 7, skipping. Failed to deserialize record with type 2",
        # Kafka 3.9.2's serde reads the frame version from a null buffer (the dump oracle's finding)
        " payload: Error at 8, skipping. Error while reading frame version",
    ]


# A tagged-field section that claims 2^31 - 1 fields, the first of unknown tag 99 and size -6 (the bytes of
# its tag and size): before issue 28 the reader went back to the tag on each field, for two billion rounds.
HOSTILE_TAGS = uvarint(2**31 - 1) + uvarint(99) + uvarint(2**32 - 6)
TOO_MANY_TAGS = "Tried to read 2147483647 tagged field(s), but there are only 6 bytes remaining."
# TransactionLogValue v1 (flexible): producer id, epoch, timeout, state Empty, no partitions, two timestamps.
TXN_VALUE_V1 = i16(1) + i64(1000) + i16(2) + i32(60000) + b"\x00" + b"\x00" + i64(5) + i64(6) + b"\x00"


@pytest.mark.parametrize(("flag", "key", "value", "line", "problem"), [
    ("--offsets-decoder", CG_KEY, CG_VALUE[:-1] + HOSTILE_TAGS,
     "key: Error at offset 0, skipping. Could not read record with version 0 from value's buffer due to: "
     f"{TOO_MANY_TAGS}.", None),
    ("--transaction-log-decoder", i16(0) + s16("my-txn"), TXN_VALUE_V1[:-1] + HOSTILE_TAGS, "",
     f"record at offset 0: {TOO_MANY_TAGS}"),
    ("--cluster-metadata-decoder", None, TOPIC[:-1] + HOSTILE_TAGS,
     "payload: Error at 0, skipping. Failed to deserialize record with type 2", None),
    ("--remote-log-metadata-decoder", None, metadata(2, 0, compact("foo") + TOPIC_ID + i32(0) + b"\x00"
                                                     + i32(0) + i64(0) + b"\x00" + HOSTILE_TAGS),
     "payload: Error at offset 0, skipping. Failed to deserialize record with type 2", None),
])
def test_decoders_fail_at_once_on_a_tagged_field_count_past_the_bytes(
        tmp_path: Path, flag: str, key: bytes | None, value: bytes, line: str, problem: str | None) -> None:
    """Issue 28: the record that made every decoder spin for hours is Kafka's ``Error at ..., skipping.``
    line (or, where Kafka's parser throws out of the tool, one line on stderr), after a handful of reads;
    the healthy record after it decodes."""
    healthy = {"--offsets-decoder": (CG_KEY, CG_VALUE), "--transaction-log-decoder": (i16(0) + s16("my-txn"),
                                                                                      TXN_VALUE_V1),
               "--cluster-metadata-decoder": (None, TOPIC),
               "--remote-log-metadata-decoder": (None, value[:-len(HOSTILE_TAGS)] + b"\x00")}[flag]
    log = write_log(tmp_path, [(key, value), healthy])
    with bounded_reads(1000):
        status, out, err = run("dump", flag, "--files", str(log))
    lines = payloads(out)
    assert lines[0] == line
    assert "skipping" not in lines[1] and lines[1]
    if problem is None:
        assert (status, err) == (0, "")
    else:
        assert (status, err) == (1, f"kafkalog dump: {log}: {problem}\n")


def test_decoders_leave_control_records_to_the_control_line(tmp_path: Path) -> None:
    """Control batches print their control part, never a decoded payload (Kafka: ``!batch.isControlBatch``);
    the first decoder named wins, as in Kafka's ``messageParser``."""
    path = tmp_path / LOG
    path.write_bytes(build_default_batch([(b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x05", 5)], is_control=True,
                                         is_transactional=True, producer_id=1, producer_epoch=0)
                     + build_default_batch([(CG_KEY, CG_VALUE, 6)], base_offset=1))
    status, out, _err = run("dump", "--offsets-decoder", "--cluster-metadata-decoder", "--files", str(path))
    lines = [line for line in out.splitlines() if line.startswith("| ")]
    assert lines[0].endswith("endTxnMarker: COMMIT coordinatorEpoch: 5")
    assert lines[1].endswith('key: {"type":"3","data":{"groupId":"group"}} '
                             'payload: {"version":"0","data":{"epoch":10}}')
    assert status == 0


def test_java_double_prints_as_java_does() -> None:
    assert [java_double(v) for v in (1.0, 1048576.0, 0.5, 1e7, 12345678.9, 1e-4, -2.5e-10, 0.0, float("nan"))] == [
        "1.0", "1048576.0", "0.5", "1.0E7", "1.23456789E7", "1.0E-4", "-2.5E-10", "0.0", '"NaN"']


def test_removed_decoders_of_later_kafka_say_so(tmp_path: Path) -> None:
    log = write_log(tmp_path, [(CG_KEY, CG_VALUE)])
    status, out, err = run("dump", "--share-group-state-decoder", "--files", str(log))
    assert (status, out) == (2, "")
    assert "--share-group-state-decoder is not supported" in err


# -- golden data --------------------------------------------------------------------------------------

def golden_partitions(golden: Path, prefix: str) -> list[Path]:
    return sorted(p for p in golden.rglob(f"{prefix}*") if p.is_dir() and any(p.glob("*.log")))


def golden_copies(golden: Path, prefix: str, tmp_path: Path) -> list[Path]:
    """Copies of the golden partitions named ``prefix*`` (several sets have one of the same name)."""
    partitions = golden_partitions(golden, prefix)
    assert partitions
    copies = [tmp_path / str(i) / partition.name for i, partition in enumerate(partitions)]
    for partition, copy in zip(partitions, copies, strict=True):
        shutil.copytree(partition, copy)
    return copies


def test_golden_consumer_offsets(golden: Path, tmp_path: Path) -> None:
    """Every golden ``__consumer_offsets`` partition decodes without a skipped record: offset commits and
    group metadata, the consumer-protocol members decoded too."""
    seen: set[str] = set()
    for partition in golden_copies(golden, "__consumer_offsets-", tmp_path):
        status, out, err = run("dump", "--offsets-decoder", "--skip-record-metadata", "--files", str(partition))
        assert "Traceback" not in err and "kafkalog dump:" not in err, partition
        assert status in (0, 1), partition  # 1: Kafka's index check reports gaps the cleaner left
        for line in out.splitlines():
            if line.startswith("| key: "):
                assert "skipping" not in line, (partition, line)
                seen.add(line[len('| key: {"type":"'):][:1])
    assert {"1", "2"} <= seen
    status, out, _err = run("dump", "--offsets-decoder", "--skip-record-metadata", "--files",
                            str(golden / "KAIPASUBHASH__kafka-logs/__consumer_offsets-2/" / LOG))
    assert ('| key: {"type":"2","data":{"group":"console-consumer-23934"}} payload: {"version":"1","data":'
            '{"protocolType":"consumer","generation":2,"protocol":null,"leader":null,"members":[]}}') in out


def test_golden_cluster_metadata(golden: Path, tmp_path: Path) -> None:
    """The golden ``__cluster_metadata`` partitions (KRaft brokers) decode record by record with no skipped
    record; the bootstrap transaction, the feature levels, broker and controller registrations, topics and
    partitions are all there."""
    types: set[str] = set()
    for partition in golden_copies(golden, "__cluster_metadata-", tmp_path):
        status, out, err = run("dump", "--cluster-metadata-decoder", "--files", str(partition))
        assert (status, err) == (0, ""), partition
        for line in out.splitlines():
            if " payload: " in line:
                payload = line.split(" payload: ", 1)[1]
                assert payload.startswith('{"type":"'), (partition, line)
                types.add(payload.split('"')[3])
    assert {"BEGIN_TRANSACTION_RECORD", "FEATURE_LEVEL_RECORD", "END_TRANSACTION_RECORD", "REGISTER_BROKER_RECORD",
            "REGISTER_CONTROLLER_RECORD", "TOPIC_RECORD", "PARTITION_RECORD", "PARTITION_CHANGE_RECORD",
            "BROKER_REGISTRATION_CHANGE_RECORD", "NO_OP_RECORD", "CONFIG_RECORD"} <= types


@pytest.mark.parametrize("flag", ["--offsets-decoder", "--transaction-log-decoder", "--cluster-metadata-decoder"])
def test_every_decoder_over_every_golden_internal_log_without_a_traceback(golden: Path, flag: str,
                                                                          tmp_path: Path) -> None:
    """A decoder pointed at the other internal topic's records prints Kafka's error lines or reports a
    problem, never a traceback."""
    for partition in golden_copies(golden, "__", tmp_path):
        status, _out, err = run("dump", flag, "--files", str(partition))
        assert status in (0, 1), (flag, partition, err)
        assert "Traceback" not in err


def test_integer_decoders_read_the_first_bytes_as_kafkas_do(tmp_path: Path) -> None:
    """Kafka's ``IntegerDecoder`` and ``LongDecoder`` are ``ByteBuffer.wrap(bytes).getInt()`` (``getLong()``):
    longer input reads its first 4 (8) bytes; shorter is a ``BufferUnderflowException`` that stops Kafka's tool,
    here one line on stderr, exit 1, and the dump goes on.  Before, any other size printed ``<not an int: 6
    bytes>`` (the dump oracle's finding: Kafka 3.9.2 and 4.4.0 print ``payload: 7``)."""
    log = write_log(tmp_path, [(i64(-5) + b"xy", i32(7) + b"zz"), (i64(1), i32(2)[:2]), (None, i32(-1))])
    status, out, err = run("dump", "--key-decoder-class", "org.apache.kafka.tools.api.LongDecoder",
                           "--value-decoder-class", "org.apache.kafka.tools.api.IntegerDecoder", "--files", str(log))
    assert payloads(out) == ["key: -5 payload: 7", "", "payload: -1"]
    assert status == 1
    assert err == f"kafkalog dump: {log}: record at offset 1: 2 bytes do not hold an int (4 bytes)\n"

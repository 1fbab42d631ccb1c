"""The files the dump oracle has Kafka's ``DumpLogSegments`` and ``kafkalog dump`` print: logs kafkalog writes
for the purpose, and the golden broker directories.

:func:`write_inputs` writes, under one root, partition dirs made through kafkalog's own ``Log`` (appends as a
leader and as a follower, rolls, the cleaner, producer state), plus files the log never writes on its own,
made by hand where the point is the bytes (a torn tail, a flipped byte, a zero-filled index tail, records of
Kafka's internal topics):

- ``codecs-0``: v2 batches of every codec, keys, null keys and values, headers, three leader epochs, several
  segments, an index entry per batch;
- ``legacy-0``: v0 and v1 message sets of every codec they have, appended as a follower, then v2 (an upgraded
  broker's log); ``v0-0``, ``v1-0``, ``v1append-0``, ``logappend-0``: leader appends a ``message.format.version``
  converts, and ``LogAppendTime`` topics;
- ``txn-0``: idempotent and transactional producers, commit and abort markers over two segments, a
  transaction left open: ``.txnindex`` and producer ``.snapshot`` files;
- ``compacted-0``: a segment the cleaner has compacted, with the tombstones it keeps (a delete horizon);
- ``utf8-0``: keys, values and header keys that are not UTF-8 (Java's replacement rules);
- ``numbers-0``: 4- and 8-byte keys and values, and a few of other sizes, for the integer decoders;
- ``torn-0`` (a batch cut short at the end), ``flipped-0`` (a byte flipped in a record: a bad CRC),
  ``corrupt-0`` (a byte flipped in a gzip payload: the records do not decompress), ``crashed-0`` (index and
  time index with the zero-filled tail a crash leaves), ``badindex-0`` (an index entry at the wrong batch, time
  index entries out of order and at the wrong timestamp), ``badsnapshot-0`` (a snapshot whose CRC fails);
- ``__consumer_offsets-0`` (every offsets record type and version the tests know how to write), ``-1`` (records
  the decoder cannot read: unknown types, cut-short keys, versions past the schema's), ``-2`` (a record without a
  key, where Kafka's tool stops);
- ``__transaction_state-0`` (values v0 and v1, a tombstone, an unknown key version), ``-1`` and ``-2`` (a state
  and a value version Kafka does not know, where its tool stops);
- ``kraft/__cluster_metadata-0`` (metadata records, a transaction, a KRaft snapshot with its header and footer
  control records, a leader-change control record), ``kraft/__cluster_metadata-1`` (records the metadata decoder
  cannot read).

Every timestamp comes from one mock clock (:data:`T0` on), so the files are the same on every run.
"""

from __future__ import annotations

import shutil
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import crcmod.predefined

from kafkalog.config.log_config import LogConfig
from kafkalog.log import Log
from kafkalog.record import ControlRecordType, EndTransactionMarker, MemoryRecords
from kafkalog.record.batch import build_default_batch
from kafkalog.scheduler import MockTime
from tests.cli import test_cli_dump_decoders as coordinator
from tests.support import cleaner_utils, kraft_metadata

__all__ = ["T0", "DumpInputs", "golden_inputs", "write_inputs"]

T0 = 1_700_000_000_000
#: The suffixes the tool dumps (and ``.deleted``, which it names as unknown).
SEGMENT_SUFFIXES = (".log", ".index", ".timeindex", ".txnindex", ".snapshot")
_crc32c = crcmod.predefined.mkCrcFun("crc-32c")


@dataclass
class DumpInputs:
    """The files of each kind, as absolute paths, in the order they are dumped."""

    segments: list[str] = field(default_factory=list)  # every file of the plain logs, and one unknown suffix
    numbers: list[str] = field(default_factory=list)
    offsets: list[str] = field(default_factory=list)  # records the offsets decoder reads
    offsets_errors: list[str] = field(default_factory=list)  # records it cannot read, or stops on
    transactions: list[str] = field(default_factory=list)
    transactions_errors: list[str] = field(default_factory=list)
    metadata: list[str] = field(default_factory=list)

    @property
    def logs(self) -> list[str]:
        return [f for f in self.segments if f.endswith(".log")]

    @property
    def indexes(self) -> list[str]:
        return [f for f in self.segments if f.endswith((".index", ".timeindex", ".txnindex"))]


def _files(directory: Path, suffixes: Sequence[str] = SEGMENT_SUFFIXES) -> list[str]:
    return sorted(str(p) for p in directory.rglob("*") if p.is_file() and p.name.endswith(tuple(suffixes)))


def _log(root: Path, name: str, **config: object) -> tuple[Log, MockTime]:
    time = MockTime(current_time_ms=T0)
    props = {key.replace("_", "."): value for key, value in config.items()}
    return Log(root / name, LogConfig(props), scheduler=time.scheduler, time=time), time


def _close(log: Log, time: MockTime) -> None:
    """Close as a broker does, after the deferred deletions (60 s on) have run."""
    time.sleep(61_000)
    log.close()
    time.scheduler.shutdown()


def _fix_crc(batch: bytearray) -> bytes:
    struct.pack_into(">I", batch, 17, _crc32c(bytes(batch[21:])))
    return bytes(batch)


def _write_batches(directory: Path, records: Iterable[tuple[bytes | None, bytes | None]]) -> None:
    """One v2 batch a record, at offsets 0, 1, ..., so each decodes (or fails) on its own."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "00000000000000000000.log").write_bytes(b"".join(
        build_default_batch([(key, value, T0)], base_offset=offset) for offset, (key, value) in enumerate(records)))


def _plain_logs(root: Path) -> None:
    log, time = _log(root, "codecs-0", segment_bytes=1500, index_interval_bytes=1)
    n = 0
    for epoch in range(3):
        for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
            records = []
            for j in range(3):
                key = None if j == 1 else f"key-{n}".encode()
                value = None if (j == 2 and epoch == 1) else f"välue-{n} ".encode() * (j + 1)
                records.append((key, value, T0 + n, [("h1", b"x"), ("h2", None)] if j == 0 else []))
                n += 1
            log.append_as_leader(MemoryRecords.with_records(records, compression=codec), leader_epoch=epoch)
    _close(log, time)

    # An upgraded broker's log: v0 and v1 message sets as a follower copies them, then v2.
    log, time = _log(root, "legacy-0", segment_bytes=2000, index_interval_bytes=1)
    offset = 0
    for magic in (0, 1):
        for codec in ("none", "gzip", "snappy", "lz4"):
            records = [(None if j == 1 else f"k{offset + j}".encode(), None if j == 2 else f"v{offset + j}".encode(),
                        T0 + offset + j) for j in range(3)]
            log.append_as_follower(MemoryRecords.with_records(
                [(k, v) for k, v, _ in records] if magic == 0 else records, magic=magic, compression=codec,
                base_offset=offset))
            offset += 3
    for codec in ("none", "gzip"):
        log.append_as_follower(MemoryRecords.with_records([(b"k", b"v", T0 + offset)], compression=codec,
                                                          base_offset=offset, partition_leader_epoch=0))
        offset += 1
    _close(log, time)

    for name, version, timestamp_type in (("v0-0", "0.9.0", "CreateTime"), ("v1-0", "0.10.2", "CreateTime"),
                                          ("v1append-0", "0.10.2", "LogAppendTime"),
                                          ("logappend-0", "3.0-IV1", "LogAppendTime")):
        log, time = _log(root, name, message_format_version=version, message_timestamp_type=timestamp_type,
                         index_interval_bytes=1, segment_bytes=700)
        codecs = ("none", "gzip", "snappy", "lz4", "zstd" if version.startswith("3") else "gzip")
        for i, codec in enumerate(codecs):
            log.append_as_leader(MemoryRecords.with_records(
                [(f"k{i}-{j}".encode(), f"value {i} {j}".encode(), T0 + 10 * i + j) for j in range(4)],
                compression=codec), leader_epoch=0)
            time.sleep(5)
        _close(log, time)


def _marker(log: Log, time: MockTime, producer_id: int, epoch: int, kind: ControlRecordType,
            coordinator_epoch: int) -> None:
    log.append_as_leader(MemoryRecords.with_end_transaction_marker(
        producer_id, epoch, EndTransactionMarker(kind, coordinator_epoch), timestamp=time.milliseconds(),
        partition_leader_epoch=0), 0, origin="coordinator")


def _transactions(root: Path) -> None:
    log, time = _log(root, "txn-0", segment_bytes=900, index_interval_bytes=1)
    env = cleaner_utils.Env(root)
    env.time = time
    idempotent = cleaner_utils.TxnProducer(env, log, 7, 1, transactional=False)
    first = cleaner_utils.TxnProducer(env, log, 11, 0)
    second = cleaner_utils.TxnProducer(env, log, 12, 3)
    idempotent([1, 2])
    first([3, 4])
    second([5])
    idempotent([6])
    time.sleep(10)
    second([7, 8])
    _marker(log, time, 11, 0, ControlRecordType.COMMIT, 4)
    first([9])
    time.sleep(10)
    _marker(log, time, 12, 3, ControlRecordType.ABORT, 5)
    idempotent([10, 11])
    _marker(log, time, 11, 0, ControlRecordType.ABORT, 4)
    log.roll()
    cleaner_utils.TxnProducer(env, log, 13, 0)([12])  # left open
    _close(log, time)

    # The cleaner's output: the latest value of each key, and tombstones kept until their delete horizon.
    log, time = _log(root, "compacted-0", segment_bytes=600, index_interval_bytes=1, cleanup_policy="compact",
                     delete_retention_ms=1000, min_cleanable_dirty_ratio=0)
    for round_ in range(3):
        for k in range(5):
            value = None if (round_ == 2 and k % 2) else f"r{round_}-{k}".encode()
            log.append_as_leader(MemoryRecords.with_records([(f"key{k}".encode(), value, time.milliseconds())],
                                                            compression="gzip" if k == 4 else "none"), 0)
            time.sleep(1)
    log.roll()
    env = cleaner_utils.Env(root)
    env.time = time
    env.make_cleaner(1000).clean(cleaner_utils.to_clean(log, 0))
    _close(log, time)


def _odd_bytes(root: Path) -> None:
    log, time = _log(root, "utf8-0")
    # Malformed UTF-8 where Java's decoder and Python's "replace" differ or agree: encoded surrogates, overlong
    # forms, sequences cut short in the middle and at the end, stray continuation bytes.
    samples = [b"\xed\xa0\x80", b"\xed\xa0", b"\xed\xa0A", b"\xed\xbf\xbf", b"\xc0\x80", b"\xe0\x80\x80",
               b"\xf0\x80\x80\x80", b"\xf4\x90\x80\x80", b"\xe2\x82", b"\xe2\x82A", b"\xf0\x9f\x98A", b"\xf0\x9fA",
               b"\x80\x80", b"\xf8\x88\x80\x80\x80", b"\xc3", b"ok \xe2\x82\xac", b"\xf0\x9f\x98\x80", b"\xef\xbf\xbf",
               b"\xf0\x9f\x98", b"\xe0\xa0"]
    for sample in samples:
        log.append_as_leader(MemoryRecords.with_records([(sample, b"v" + sample + b"!", T0)]), 0)
    _close(log, time)
    # Header keys are Java strings too: the same bytes as header keys, in batches written by hand (the record
    # builder takes header keys as text).
    with (root / "utf8-0" / "00000000000000000000.log").open("ab") as out:
        base = len(samples)
        for i, sample in enumerate(samples):
            placeholder = "\x01" * len(sample)
            batch = bytearray(build_default_batch([(b"k", b"v", T0, [(placeholder, b"h"), ("ok", None)])],
                                                  base_offset=base + i))
            at = batch.index(placeholder.encode())
            batch[at:at + len(sample)] = sample
            out.write(_fix_crc(batch))

    log, time = _log(root, "numbers-0")
    for key, value in ((struct.pack(">q", -5), struct.pack(">i", 7)), (struct.pack(">q", 2**40), struct.pack(">i", -1)),
                       (b"12345678", b"1234"), (None, struct.pack(">i", 2**31 - 1)),
                       (struct.pack(">q", 3) + b"xy", struct.pack(">i", 7) + b"zz"),  # the first 8 (4) bytes
                       (b"\x00\x01", b"\x00\x00\x00\x01")):  # too short: Kafka's tool stops
        log.append_as_leader(MemoryRecords.with_records([(key, value, T0)]), 0)
    _close(log, time)


def _damaged(root: Path) -> None:
    log, time = _log(root, "torn-0", index_interval_bytes=1)
    for n in range(6):
        log.append_as_leader(MemoryRecords.with_records([(b"k%d" % n, b"value-%d " % n * 5, T0 + n)],
                                                        compression="gzip" if n % 2 else "none"), 0)
    _close(log, time)
    for name in ("flipped-0", "corrupt-0", "crashed-0", "badindex-0"):
        shutil.copytree(root / "torn-0", root / name)
    segment = "00000000000000000000"
    log_file = root / "torn-0" / f"{segment}.log"
    data = log_file.read_bytes()
    log_file.write_bytes(data[:-7])  # the last batch cut short: "Found 7 invalid bytes"

    def flip(path: Path, position: int) -> None:
        data = bytearray(path.read_bytes())
        data[position] ^= 0xFF
        path.write_bytes(bytes(data))

    batches = list(MemoryRecords(data).batches())
    first, second = batches[0], batches[1]  # uncompressed, gzip
    flip(root / "flipped-0" / f"{segment}.log", first.position + first.size_in_bytes - 3)  # in the value
    flip(root / "corrupt-0" / f"{segment}.log", second.position + 61 + 20)  # inside the deflate stream
    for name, size in ((f"{segment}.index", 8 * 20), (f"{segment}.timeindex", 12 * 20)):
        index = root / "crashed-0" / name
        index.write_bytes(index.read_bytes() + bytes(size))
    index = root / "badindex-0" / f"{segment}.index"
    entries = bytearray(index.read_bytes())
    entries[8:16] = entries[16:24]  # the second entry points at the third batch
    index.write_bytes(bytes(entries))
    time_index = root / "badindex-0" / f"{segment}.timeindex"
    entries = bytearray(time_index.read_bytes())
    struct.pack_into(">q", entries, 12, T0 - 5)  # earlier than the one before it
    struct.pack_into(">q", entries, 24, T0 + 99)  # not its batch's timestamp
    time_index.write_bytes(bytes(entries))
    (root / "badsnapshot-0").mkdir()
    snapshot = sorted((root / "txn-0").glob("*.snapshot"))[-1]
    shutil.copy(snapshot, root / "badsnapshot-0" / snapshot.name)
    flip(root / "badsnapshot-0" / snapshot.name, 40)


def _internal_topics(root: Path) -> None:
    c = coordinator
    commit_key = c.i16(1) + c.s16("g") + c.s16("t") + c.i32(7)
    _write_batches(root / "__consumer_offsets-0", [
        (c.CG_KEY, c.CG_VALUE),
        (c.GROUP_KEY, c.group_value(c.SUBSCRIPTION, c.ASSIGNMENT)),
        (c.GROUP_KEY, c.group_value(b"Subscription", b"Assignment")),  # not the consumer protocol's bytes
        (c.CG_KEY, None),
        (c.i16(0) + c.s16("g") + c.s16("t") + c.i32(7), c.i16(0) + c.i64(42) + c.s16("m") + c.i64(1000)),
        (commit_key, c.i16(1) + c.i64(42) + c.s16("m") + c.i64(1000) + c.i64(2000)),
        (commit_key, c.i16(2) + c.i64(42) + c.s16("m") + c.i64(1000)),
        (commit_key, c.i16(3) + c.i64(42) + c.i32(5) + c.s16("m") + c.i64(1000)),
        (commit_key, c.i16(4) + c.i64(42) + c.i32(5) + c.compact("m") + c.i64(1000) + b"\x00"),
        (commit_key, None),
    ])
    _write_batches(root / "__consumer_offsets-1", [
        (c.i16(32767) + c.s16("group"), c.CG_VALUE),
        (c.CG_KEY, c.MEMBER_VALUE),  # the value is not the record type's
        (c.CG_KEY, c.i16(9) + c.i32(10) + b"\x00"),  # a value version past the schema's
        (c.GROUP_KEY, c.group_value(c.SUBSCRIPTION, c.ASSIGNMENT)[:2] + b"\x00"),
        (c.i16(1) + b"\x00", None),
        (c.i16(1) + c.s16("g")[:2], None),
        (c.CG_KEY[:1], None),
        (b"user-key", b"user-value"),
        (c.CG_KEY, c.CG_VALUE[:-1] + c.HOSTILE_TAGS),
        # Versions outside the schema's, read as Kafka's generated code reads them (no check of its own).
        (c.GROUP_KEY, c.i16(9) + c.group_value(c.SUBSCRIPTION, c.ASSIGNMENT)[2:]),
        (c.i16(1) + c.s16("g") + c.s16("t") + c.i32(7), c.i16(-2) + c.i64(42) + c.s16("m") + c.i64(1000)),
        (c.GROUP_KEY, c.i16(-1) + c.group_value(c.SUBSCRIPTION, c.ASSIGNMENT)[2:]),
    ])
    _write_batches(root / "__consumer_offsets-2", [(c.CG_KEY, c.CG_VALUE), (None, b"x"), (c.CG_KEY, c.CG_VALUE)])

    key = c.i16(0) + c.s16("my-txn")
    _write_batches(root / "__transaction_state-0", [
        (key, c.txn_value(1, [("foo", [0, 1, 2])])),
        (key, c.txn_value(0, None)),
        (key, None),
        (c.i16(5) + c.s16("my-txn"), c.txn_value(4, [])),
        (key, c.TXN_VALUE_V1),
        (key, c.txn_value(3, [("bar", [3]), ("foo", [1])])),
    ])
    _write_batches(root / "__transaction_state-1", [(key, c.txn_value(2, [])), (key, c.txn_value(9, []))])
    _write_batches(root / "__transaction_state-2", [(key, c.i16(3) + b"\x00")])

    k = kraft_metadata
    metadata = k.write_metadata_log(root / "kraft", [
        [k.topic_record("orders", k.topic_id(1)), k.config_record(2, "orders", "cleanup.policy", "compact")],
        [k.begin_transaction(), k.no_op_record(), k.end_transaction()],
        [k.remove_topic_record(k.topic_id(1)), k.abort_transaction()],
    ])
    with Log(metadata, LogConfig()) as log:
        # A controller's leader change: leader 1, voters [1], granting voters [1] (LeaderChangeMessage v0).
        voter = struct.pack(">i", 1) + b"\x00"
        value = struct.pack(">hi", 0, 1) + b"\x02" + voter + b"\x02" + voter + b"\x00"
        log.append(MemoryRecords.with_control_record(ControlRecordType.LEADER_CHANGE, value, timestamp=T0,
                                                     partition_leader_epoch=1), leader_epoch=1, origin="raft_leader")
    snapshot = k.write_snapshot(metadata, 6, 1, [k.topic_record("orders", k.topic_id(1))])
    header = MemoryRecords.with_control_record(ControlRecordType.SNAPSHOT_HEADER, struct.pack(">hq", 0, T0) + b"\x00",
                                               timestamp=T0)
    footer = MemoryRecords.with_control_record(ControlRecordType.SNAPSHOT_FOOTER, struct.pack(">h", 0) + b"\x00",
                                               timestamp=T0, base_offset=2)
    body = bytearray(snapshot.read_bytes())
    struct.pack_into(">q", body, 0, 1)  # the records after the header
    snapshot.write_bytes(bytes(header.buffer) + bytes(body) + bytes(footer.buffer))
    _write_batches(root / "kraft" / "__cluster_metadata-1", [
        (None, c.TOPIC), (None, c.PARTITION_CHANGE), (None, c.CLIENT_QUOTA), (None, c.REGISTER_BROKER),
        (None, c.uvarint(10000) + c.uvarint(10000)), (None, c.metadata(99, 0, b"")), (None, c.metadata(2, 7, b"")),
        (None, c.TOPIC + b"!!"), (None, c.TOPIC[:-3]), (b"k", None), (None, c.TOPIC[:-1] + c.HOSTILE_TAGS),
    ])


def write_inputs(root: Path) -> DumpInputs:
    """Write every input under ``root`` (which must not exist) and list them."""
    root.mkdir(parents=True)
    plain = root / "plain"
    plain.mkdir()
    _plain_logs(plain)
    _transactions(plain)
    _odd_bytes(plain)
    _damaged(plain)
    numbers = plain / "numbers-0"
    moved = root / "numbers-0"
    shutil.move(str(numbers), moved)
    topics = root / "topics"
    _internal_topics(topics)
    inputs = DumpInputs(segments=_files(plain), numbers=_files(moved, (".log",)))
    # A file of a suffix the tool does not know: Kafka says so on stderr and goes on.
    unknown = plain / "codecs-0" / "00000000000000000000.log.deleted"
    unknown.write_bytes((plain / "codecs-0" / "00000000000000000000.log").read_bytes())
    inputs.segments.append(str(unknown))
    # A name without a dot: Kafka 3.x's tool dies on it (StringIndexOutOfBoundsException), 4.x ignores it.
    inputs.segments.append(str(plain / "codecs-0" / "leader-epoch-checkpoint"))
    inputs.offsets = _files(topics / "__consumer_offsets-0", (".log",))
    inputs.offsets_errors = _files(topics / "__consumer_offsets-1", (".log",)) + _files(
        topics / "__consumer_offsets-2", (".log",))
    inputs.transactions = _files(topics / "__transaction_state-0", (".log",))
    inputs.transactions_errors = _files(topics / "__transaction_state-1", (".log",)) + _files(
        topics / "__transaction_state-2", (".log",))
    inputs.metadata = _files(topics / "kraft", (".log", ".checkpoint"))
    return inputs


@dataclass
class GoldenInputs:
    """The golden folder's files (a copy's), by kind."""

    segments: list[str]
    indexes: list[str]
    offsets: list[str]
    metadata: list[str]


def golden_inputs(copy: Path) -> GoldenInputs:
    """The files of a copy of the golden folder: every segment file and producer snapshot; the indexes; the
    ``__consumer_offsets`` logs; the KRaft metadata logs, snapshots and bootstrap files."""
    segments = _files(copy, (*SEGMENT_SUFFIXES, ".checkpoint"))
    segments = [f for f in segments if not f.endswith(("-checkpoint",))]
    return GoldenInputs(
        segments=segments,
        indexes=[f for f in segments if f.endswith((".index", ".timeindex", ".txnindex"))],
        offsets=[f for f in segments if "/__consumer_offsets-" in f and f.endswith(".log")],
        metadata=[f for f in segments if ("/__cluster_metadata-" in f and f.endswith((".log", ".checkpoint")))
                  or f.endswith("/bootstrap.checkpoint")])

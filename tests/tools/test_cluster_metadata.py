"""Replaying a KRaft metadata log into topics and effective topic configs (kafkalog.tools.cluster_metadata),
and reading a partition's ``partition.metadata`` (kafkalog.manager.partition_metadata)."""

from __future__ import annotations

import shutil
from pathlib import Path
from types import ModuleType

import pytest

from kafkalog.checkpoint import CorruptCheckpointError
from kafkalog.config.log_config import (
    ALL_SERVER_CONFIG_SYNONYMS,
    SERVER_CONFIG_SYNONYMS,
    ConfigSynonym,
    hours_to_milliseconds,
)
from kafkalog.errors import MetadataLogError
from kafkalog.log import Log
from kafkalog.manager.log_manager import LogManager
from kafkalog.manager.partition_metadata import read_partition_metadata
from kafkalog.record import MemoryRecords
from kafkalog.tools.cluster_metadata import (
    ConfigEntry,
    ConfigSource,
    MetadataLogs,
    read_metadata_log,
    resolve_effective_topic_configs,
)
from tests.support.golden_data import ARTHUR, RONEM
from tests.support.kraft_metadata import (
    BROKER,
    METADATA_DIR,
    TOPIC,
    abort_transaction,
    batch,
    begin_transaction,
    config_record,
    end_transaction,
    frame,
    no_op_record,
    remove_topic_record,
    topic_id,
    topic_record,
    write_meta_properties,
    write_metadata_log,
    write_partition_metadata,
    write_snapshot,
)

ORDERS, ORDERS_AGAIN, USERS = topic_id(1), topic_id(2), topic_id(3)


# -- the effective config (Kafka: KafkaConfigSchema.resolveEffectiveTopicConfigs) ----------------------------

def test_resolve_effective_topic_config() -> None:
    """KafkaConfigSchemaTest.testResolveEffectiveTopicConfig: the topic's own value, then the node's dynamic
    config through the synonyms (converted: 789 hours), then the cluster's dynamic default, then the static
    config, then the schema's default.  Kafka's ConfigEntry also carries the type, documentation and
    sensitivity of each; kafkalog's carries name, value and source (and the synonym the value came from)."""
    defaults = {"abc": None, "def": None, "ghi": "true", "xyz": "thedefault"}
    synonyms = {"abc": [ConfigSynonym("foo.bar")], "def": [ConfigSynonym("quux", hours_to_milliseconds)],
                "ghi": [ConfigSynonym("ghi")], "xyz": [ConfigSynonym("quuux"), ConfigSynonym("quuux2")]}
    static_node = {"foo.bar": "the,static,value", "quux": "123", "ghi": "false"}
    dynamic_cluster = {"foo.bar": "the,dynamic,cluster,config,value", "quux": "456"}
    dynamic_node = {"quux": "789"}
    dynamic_topic = {"ghi": "true"}
    resolved = resolve_effective_topic_configs(static_node, dynamic_cluster, dynamic_node, dynamic_topic,
                                               defaults=defaults, synonyms=synonyms)
    assert {name: (e.name, e.value, e.source) for name, e in resolved.items()} == {
        "abc": ("abc", "the,dynamic,cluster,config,value", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
        "def": ("def", "2840400000", ConfigSource.DYNAMIC_BROKER_CONFIG),
        "ghi": ("ghi", "true", ConfigSource.DYNAMIC_TOPIC_CONFIG),
        "xyz": ("xyz", "thedefault", ConfigSource.DEFAULT_CONFIG),
    }
    assert resolved["def"].synonym == "quux" and resolved["xyz"].synonym is None


def test_the_synonyms_are_kafkas() -> None:
    """ServerTopicConfigSynonyms.ALL_TOPIC_CONFIG_SYNONYMS: the first synonym of each is the one LogConfig
    knows; the older, coarser properties follow, converted to milliseconds."""
    assert {name: s[0].name for name, s in ALL_SERVER_CONFIG_SYNONYMS.items()} == dict(SERVER_CONFIG_SYNONYMS)
    retention = ALL_SERVER_CONFIG_SYNONYMS["retention.ms"]
    assert [s.name for s in retention] == ["log.retention.ms", "log.retention.minutes", "log.retention.hours"]
    assert [s.converter("2") for s in retention] == ["2", "120000", "7200000"]
    assert [s.name for s in ALL_SERVER_CONFIG_SYNONYMS["segment.ms"]] == ["log.roll.ms", "log.roll.hours"]
    assert [s.name for s in ALL_SERVER_CONFIG_SYNONYMS["flush.ms"]] == ["log.flush.interval.ms",
                                                                        "log.flush.scheduler.interval.ms"]
    assert ALL_SERVER_CONFIG_SYNONYMS["cleanup.policy"] == (ConfigSynonym("log.cleanup.policy"),)
    # ConfigSynonym.valueToInt: blank or not an int reads as 0 (Kafka logs an error and goes on).
    assert [hours_to_milliseconds(v) for v in (" 3 ", "", "x", "99999999999")] == ["10800000", "0", "0", "0"]


# -- the replay ---------------------------------------------------------------------------------------------

def _cluster(tmp_path: Path) -> Path:
    """A metadata log over three segments: topics created, configs set and deleted, a topic deleted and created
    again under its name, broker defaults for the cluster and for broker 1."""
    write_metadata_log(tmp_path, [
        [topic_record("orders", ORDERS), config_record(TOPIC, "orders", "cleanup.policy", "compact"),
         config_record(TOPIC, "orders", "segment.bytes", "4096")],
        [topic_record("users", USERS), config_record(TOPIC, "users", "retention.ms", "1000"),
         config_record(TOPIC, "users", "retention.ms", None), no_op_record()],
        [config_record(BROKER, "", "log.cleanup.policy", "compact,delete"),
         config_record(BROKER, "", "log.retention.ms", "5000"),
         config_record(BROKER, "1", "log.retention.hours", "2"),
         config_record(BROKER, "2", "log.cleanup.policy", "delete")],
        [remove_topic_record(ORDERS)],
        [topic_record("orders", ORDERS_AGAIN), config_record(TOPIC, "orders", "max.message.bytes", "2048"),
         config_record(TOPIC, "orders", "confluent.placement.constraints", "{}")],
    ], segment_bytes=300)
    return tmp_path / METADATA_DIR


def test_a_metadata_log_replays_into_topics_and_their_configs(tmp_path: Path, impl: ModuleType) -> None:
    path = _cluster(tmp_path)
    with Log(path, read_only=True) as log:
        assert log.number_of_segments > 2
        end = log.log_end_offset
    metadata = read_metadata_log(path)
    assert (metadata.path, metadata.snapshot, metadata.end_offset) == (path, None, end)
    assert dict(metadata.topic_ids) == {"orders": ORDERS_AGAIN, "users": USERS}
    # The old orders' configs went with it; users' retention.ms was set and deleted again.
    assert dict(metadata.configs) == {
        (TOPIC, "orders"): {"max.message.bytes": "2048", "confluent.placement.constraints": "{}"},
        (BROKER, ""): {"log.cleanup.policy": "compact,delete", "log.retention.ms": "5000"},
        (BROKER, "1"): {"log.retention.hours": "2"},
        (BROKER, "2"): {"log.cleanup.policy": "delete"}}
    orders = metadata.topic_config("orders", 1)
    assert orders is not None
    assert orders["cleanup.policy"] == ConfigEntry("cleanup.policy", "compact,delete",
                                                   ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, "log.cleanup.policy")
    # Broker 1's own log.retention.hours wins over the cluster's log.retention.ms, converted.
    assert orders["retention.ms"] == ConfigEntry("retention.ms", "7200000", ConfigSource.DYNAMIC_BROKER_CONFIG,
                                                 "log.retention.hours")
    assert orders["max.message.bytes"].source is ConfigSource.DYNAMIC_TOPIC_CONFIG
    assert orders["segment.bytes"] == ConfigEntry("segment.bytes", "1073741824", ConfigSource.DEFAULT_CONFIG)
    assert "confluent.placement.constraints" not in orders  # not a topic property this schema has
    assert metadata.topic_props("orders", 2) == {"cleanup.policy": "delete", "retention.ms": "5000",
                                                 "max.message.bytes": "2048"}
    assert metadata.topic_props("orders") == {"cleanup.policy": "compact,delete", "retention.ms": "5000",
                                              "max.message.bytes": "2048"}
    assert metadata.topic_config("gone") is None and metadata.topic_props("gone") is None
    # What a LogManager takes to open the broker's dirs with its topics' configs.
    assert metadata.topic_configs(1) == {
        "orders": {"cleanup.policy": "compact,delete", "retention.ms": "7200000", "max.message.bytes": "2048"},
        "users": {"cleanup.policy": "compact,delete", "retention.ms": "7200000"}}


def test_metadata_transactions_apply_at_their_end_and_not_when_aborted(tmp_path: Path, impl: ModuleType) -> None:
    """MetadataBatchLoader.replay: a transaction's records count once EndTransactionRecord is read; an abort
    drops them; one still open at the end of the log is not applied."""
    write_metadata_log(tmp_path, [
        [topic_record("orders", ORDERS)],
        [begin_transaction(), config_record(TOPIC, "orders", "cleanup.policy", "compact")],
        [no_op_record(), end_transaction()],
        [begin_transaction(), config_record(TOPIC, "orders", "cleanup.policy", "delete"), abort_transaction()],
        [begin_transaction(), topic_record("users", USERS)],
    ])
    metadata = read_metadata_log(tmp_path / METADATA_DIR)
    assert dict(metadata.topic_ids) == {"orders": ORDERS}
    assert dict(metadata.configs) == {(TOPIC, "orders"): {"cleanup.policy": "compact"}}


@pytest.mark.parametrize(("records", "message"), [
    ([end_transaction()], "Encountered EndTransactionRecord without having seen a BeginTransactionRecord"),
    ([abort_transaction()], "Encountered AbortTransactionRecord without having seen a BeginTransactionRecord"),
    ([begin_transaction(), begin_transaction()], "Encountered BeginTransactionRecord while already in a transaction"),
    ([remove_topic_record(USERS)], f"Unable to delete topic with id {USERS}: no such topic found."),
    ([frame(2, b"\x07ord")], "does not decode: Failed to deserialize record with type 2"),
    ([frame(4, b"", frame_version=0)], "Could not deserialize metadata record with frame version 0"),
    ([frame(4, b"", frame_version=2)], "unknown frame version 2(only frame version 1 is supported)"),
])
def test_a_record_kafkas_loader_would_stop_on_is_an_error(tmp_path: Path, impl: ModuleType, records: list[bytes],
                                                          message: str) -> None:
    write_metadata_log(tmp_path, [[topic_record("orders", ORDERS)], records])
    with pytest.raises(MetadataLogError, match=f"offset {len(records)}") as raised:
        read_metadata_log(tmp_path / METADATA_DIR)
    assert message in str(raised.value) and str(tmp_path / METADATA_DIR) in str(raised.value)


def test_record_types_the_replay_does_not_need_are_not_decoded(tmp_path: Path, impl: ModuleType) -> None:
    """A type a newer Kafka added (an apiKey 3.8 does not know) or a record of a type that does not matter
    here is skipped unread; a record without a value is an error."""
    write_metadata_log(tmp_path, [[topic_record("orders", ORDERS), frame(99, b"\x01\x02"), frame(20, b"\xff"),
                                   config_record(TOPIC, "orders", "cleanup.policy", "compact")]])
    metadata = read_metadata_log(tmp_path / METADATA_DIR)
    assert dict(metadata.configs) == {(TOPIC, "orders"): {"cleanup.policy": "compact"}}
    with Log(tmp_path / METADATA_DIR) as log:
        log.append(MemoryRecords.with_records([(None, None, 1_700_000_000_000)]))
    with pytest.raises(MetadataLogError, match="offset 4 has no value"):
        read_metadata_log(tmp_path / METADATA_DIR)


def test_a_snapshot_starts_the_replay(tmp_path: Path, impl: ModuleType) -> None:
    """KafkaMetadataLog.recoverSnapshots and MetadataLoader: the latest snapshot, then the log from its end
    offset; a log that does not start at 0 needs a snapshot at or past its start."""
    path = write_metadata_log(tmp_path, [[no_op_record()] * 3 for _ in range(12)], segment_bytes=300)
    with Log(path, read_only=True) as log:
        bases = [s.base_offset for s in log.log_segments()]
    assert len(bases) > 3
    # An older snapshot and the latest, which stands for the records below offset 20; the log then goes on.
    write_snapshot(path, 9, 1, [topic_record("orders", ORDERS), config_record(TOPIC, "orders", "x", "old")])
    write_snapshot(path, 20, 1, [topic_record("orders", ORDERS), topic_record("users", USERS),
                                 config_record(TOPIC, "orders", "cleanup.policy", "delete")])
    with Log(path) as log:
        log.append(batch([config_record(TOPIC, "orders", "cleanup.policy", "compact")]))
        end = log.log_end_offset
    metadata = read_metadata_log(path)
    assert metadata.snapshot == path / f"{20:020d}-{1:010d}.checkpoint" and metadata.end_offset == end
    assert dict(metadata.topic_ids) == {"orders": ORDERS, "users": USERS}
    assert dict(metadata.configs) == {(TOPIC, "orders"): {"cleanup.policy": "compact"}}
    # The segments before the snapshot are gone, as a broker deletes them: the snapshot still covers the start.
    for base in bases[:2]:
        for suffix in (".log", ".index", ".timeindex"):
            (path / f"{base:020d}{suffix}").unlink(missing_ok=True)
    assert dict(read_metadata_log(path).topic_ids) == {"orders": ORDERS, "users": USERS}
    # Without a snapshot at or past the log start, the state before it is not there.
    for snapshot in path.glob("*.checkpoint"):
        snapshot.unlink()
    with pytest.raises(MetadataLogError, match=f"log start offset {bases[2]}, but the latest snapshot is none"):
        read_metadata_log(path)


def test_damaged_files_are_errors_but_a_write_in_progress_is_not(tmp_path: Path, impl: ModuleType) -> None:
    """A batch that fails its CRC anywhere, or a cut-short snapshot, stops the replay: the records after it
    could be the ones that matter.  A partial last batch of the last segment is a write in progress."""
    path = write_metadata_log(tmp_path / "a", [[topic_record("orders", ORDERS)],
                                               [config_record(TOPIC, "orders", "cleanup.policy", "compact")]])
    segment = path / f"{0:020d}.log"
    with open(segment, "ab") as f:
        f.write(segment.read_bytes()[:30])  # a torn append
    assert dict(read_metadata_log(path).configs) == {(TOPIC, "orders"): {"cleanup.policy": "compact"}}
    data = bytearray(segment.read_bytes())
    data[-40] ^= 0xFF  # inside the last whole batch
    segment.write_bytes(bytes(data[:-30]))
    with pytest.raises(MetadataLogError, match=f"{segment} cannot be replayed: .*crc"):
        read_metadata_log(path)

    path = write_metadata_log(tmp_path / "b", [[no_op_record()]])
    snapshot = write_snapshot(path, 1, 1, [topic_record("orders", ORDERS)])
    snapshot.write_bytes(snapshot.read_bytes()[:-5])
    with pytest.raises(MetadataLogError, match=f"{snapshot.name} cannot be replayed: it ends in a partial batch"):
        read_metadata_log(path)


def test_the_golden_metadata_logs(golden: Path, impl: ModuleType) -> None:
    """Two brokers' metadata logs: one from offset 0 over two segments, one from its latest snapshot
    (1734780) over a segment that starts at 1725413 (the broker deleted what the snapshots cover).  What they
    hold is what kafkalog dump --cluster-metadata-decoder prints of them."""
    arthur = read_metadata_log(golden / ARTHUR / METADATA_DIR)
    assert (arthur.snapshot, arthur.end_offset) == (None, 7320)
    assert dict(arthur.topic_ids) == {"oms_order_created": "0CM0rYlfQiqSTCH-x54Zhw",
                                      "oms_order_status_changed": "h21Hd1FxRjC-20k1lF5oYA",
                                      "__consumer_offsets": "LJ-0nObETNu9zQf653GiTA"}
    for topic in ("oms_order_created", "oms_order_status_changed"):
        assert arthur.topic_props(topic, 1) == {"cleanup.policy": "delete", "retention.ms": "86400000"}
    assert arthur.topic_props("__consumer_offsets", 1) == {
        "cleanup.policy": "compact", "segment.bytes": "104857600", "compression.type": "producer"}
    ronem = read_metadata_log(golden / RONEM / METADATA_DIR)
    assert ronem.snapshot is not None and ronem.snapshot.name == "00000000000001734780-0000000001.checkpoint"
    assert ronem.end_offset == 1737569
    assert dict(ronem.topic_ids) == {"topic_transactions": "3aJOBeUFT2i-2s4EZqlyqQ",
                                     "__consumer_offsets": "dqK7-AskTSux4so_l6jJXg"}
    transactions = ronem.topic_config("topic_transactions", 1)
    assert transactions is not None
    assert transactions["cleanup.policy"] == ConfigEntry("cleanup.policy", "delete", ConfigSource.DEFAULT_CONFIG)
    assert transactions["min.insync.replicas"].source is ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
    assert ronem.topic_props("__consumer_offsets", 1)["cleanup.policy"] == "compact"  # type: ignore[index]


# -- which metadata log is a log dir's --------------------------------------------------------------------

def test_a_log_dir_finds_its_brokers_metadata_log(tmp_path: Path, impl: ModuleType) -> None:
    """The one named; else its own; else the one of another log dir of the same broker (same cluster and node
    in meta.properties), never another broker's."""
    first, second, other_broker, bare = (tmp_path / n for n in ("first", "second", "other", "bare"))
    for d in (first, second, other_broker, bare):
        d.mkdir()
    write_meta_properties(first, 1)
    write_meta_properties(second, 1)
    write_meta_properties(other_broker, 2)
    write_metadata_log(first, [[topic_record("orders", ORDERS)]])
    logs = MetadataLogs([first, second, other_broker, bare])
    assert logs.metadata_log_of(first) == first / METADATA_DIR
    assert logs.metadata_log_of(second) == first / METADATA_DIR
    assert logs.metadata_log_of(other_broker) is None and logs.metadata_log_of(bare) is None
    found = logs.for_log_dir(second)
    assert found.node_id == 1 and found.metadata is not None and dict(found.metadata.topic_ids) == {"orders": ORDERS}
    assert logs.for_log_dir(first).metadata is found.metadata  # replayed once
    missing = logs.for_log_dir(bare)
    assert missing.metadata is None and missing.node_id is None
    assert missing.why_not is not None and f"no KRaft metadata log (__cluster_metadata-0) in {bare}" in missing.why_not
    named = MetadataLogs([bare], first)
    assert named.metadata_log_of(bare) == first / METADATA_DIR
    assert MetadataLogs([bare], first / METADATA_DIR).metadata_log_of(bare) == first / METADATA_DIR
    named_elsewhere = MetadataLogs([first], bare)  # named, even where the log dir holds one
    assert named_elsewhere.metadata_log_of(first) == bare / METADATA_DIR
    assert named_elsewhere.for_log_dir(first).why_not == f"no KRaft metadata log at {bare / METADATA_DIR}"
    # A metadata log that does not replay is said so, with why.
    shutil.rmtree(first / METADATA_DIR)
    write_metadata_log(first, [[end_transaction()]])
    broken = MetadataLogs([first]).for_log_dir(first)
    assert broken.metadata is None and broken.why_not is not None
    assert "cannot be read: Encountered EndTransactionRecord" in broken.why_not


def test_a_log_manager_opens_a_kraft_brokers_dirs_with_its_topic_configs(tmp_path: Path, impl: ModuleType) -> None:
    """ClusterMetadata.topic_configs gives a LogManager what Kafka's ConfigRepository gives its own; the
    manager never loads the metadata log itself (LogManager.loadLogs skips __cluster_metadata)."""
    write_metadata_log(tmp_path, [[topic_record("orders", ORDERS), topic_record("users", USERS),
                                   config_record(TOPIC, "users", "cleanup.policy", "compact")]])
    with Log(tmp_path / "users-0"), Log(tmp_path / "orders-0"):
        pass
    metadata = read_metadata_log(tmp_path / METADATA_DIR)
    with LogManager(tmp_path, topic_configs=metadata.topic_configs(), read_only=True) as manager:
        assert {str(log.topic_partition) for log in manager.all_logs()} == {"orders-0", "users-0"}
        assert manager.config_for("users").compact and not manager.config_for("orders").compact


# -- partition.metadata (Kafka: PartitionMetadataReadBuffer) ----------------------------------------------

def test_read(tmp_path: Path) -> None:
    """PartitionMetadataFileTest.testRead, over the file as PartitionMetadata#encode writes it (kafkalog only
    reads it): version 0 and the topic id."""
    write_partition_metadata(tmp_path, ORDERS)
    assert (tmp_path / "partition.metadata").read_text() == f"version: 0\ntopic_id: {ORDERS}\n"
    assert read_partition_metadata(tmp_path) == ORDERS
    assert read_partition_metadata(tmp_path / "nowhere") is None
    (tmp_path / "partition.metadata").write_text(f"version: 1\r\ntopic_id:\t{USERS}")  # a later version reads
    assert read_partition_metadata(tmp_path) == USERS


@pytest.mark.parametrize(("text", "message"), [
    ("", "Malformed line in checkpoint file [{path}]: null"),
    ("version:0\ntopic_id: x\n", "Malformed line in checkpoint file [{path}]: version:0"),
    ("version: zero\ntopic_id: x\n", "Malformed line in checkpoint file [{path}]: version: zero"),
    ("version: 99999999999\n", "Malformed line in checkpoint file [{path}]: version: 99999999999"),
    ("version: -1\ntopic_id: x\n", "Unrecognized version of partition metadata file + ({path}): -1"),
    ("version: 0\n", "Malformed line in checkpoint file [{path}]: null"),
    ("version: 0\ntopic_id: a: b\n", "Malformed line in checkpoint file [{path}]: topic_id: a: b"),
    ("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA\n", "Invalid topic ID in partition metadata file ({path})"),
    ("version: 0\ntopic_id: short\n", "decoded as"),
])
def test_a_partition_metadata_file_that_does_not_parse(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "partition.metadata"
    path.write_text(text)
    with pytest.raises(CorruptCheckpointError) as raised:
        read_partition_metadata(tmp_path)
    assert message.format(path=path) in str(raised.value)

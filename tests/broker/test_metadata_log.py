"""The broker's metadata log (kafkalog.broker.metadata_log): topics, ids and configuration overrides kept in
``__cluster_metadata-0`` as a KRaft node keeps them, so a restart keeps them and kafkalog's KRaft readers find them;
and the two states a crash can leave between the metadata log and the data directories."""

from __future__ import annotations

import shutil
from pathlib import Path

from kafkalog.broker import serve
from kafkalog.broker.metadata_log import MetadataLog
from kafkalog.broker.topic_ids import topic_id_text
from kafkalog.manager.partition_metadata import read_partition_metadata
from kafkalog.tools.cluster_metadata import read_metadata_log

#: One partition for each internal topic: the coordinators create them at start, 50 each by default.
SMALL = {"offsets.topic.num.partitions": "1", "transaction.state.log.num.partitions": "1"}


def test_topics_and_their_overrides_survive_a_restart(tmp_path: Path) -> None:
    with serve(tmp_path, config=SMALL) as broker:
        broker.create_topic("compacted", 2, {"cleanup.policy": "compact", "segment.bytes": "100000"})
        broker.create_topic("gone")
        broker.call(lambda: broker.broker.partitions.set_overrides("compacted", {"cleanup.policy": "compact"}))
        broker.call(lambda: broker.broker.partitions.add_partitions("compacted", 3))
        broker.call(lambda: broker.broker.partitions.delete_topic("gone"))
        topic_id = broker.call(lambda: broker.broker.partitions.get("compacted")).topic_id
    image = read_metadata_log(tmp_path / "__cluster_metadata-0")
    assert image.topic_ids["compacted"] == topic_id_text(topic_id)
    assert "gone" not in image.topic_ids
    assert image.topic_props("compacted") == {"cleanup.policy": "compact"}
    with serve(tmp_path, config=SMALL) as broker:
        topic = broker.call(lambda: broker.broker.partitions.get("compacted"))
        assert topic.topic_id == topic_id
        assert topic.overrides == {"cleanup.policy": "compact"}
        assert [log.config.compact for log in topic.logs] == [True, True, True]
        assert topic.logs[0].config.segment_bytes == 1024 * 1024 * 1024  # the override removed is the default again
        assert broker.call(lambda: broker.broker.partitions.get("gone")) is None
    assert read_partition_metadata(tmp_path / "compacted-2") == topic_id_text(topic_id)


def test_a_topic_whose_creation_did_not_finish_is_removed(tmp_path: Path) -> None:
    with serve(tmp_path, config=SMALL) as broker:
        broker.create_topic("half")
    # the crash: the metadata log has the topic, its directory never came to be
    shutil.rmtree(tmp_path / "half-0")
    with serve(tmp_path, config=SMALL) as broker:
        assert broker.call(lambda: broker.broker.partitions.get("half")) is None
    assert "half" not in read_metadata_log(tmp_path / "__cluster_metadata-0").topic_ids


def test_directories_the_metadata_log_does_not_know_are_taken_on(tmp_path: Path) -> None:
    with serve(tmp_path, config=SMALL) as broker:
        broker.create_topic("kept")
    metadata = MetadataLog(tmp_path, 1)
    assert "kept" in metadata.topic_ids
    shutil.rmtree(tmp_path / "__cluster_metadata-0")  # directories without a metadata log (another tool's)
    with serve(tmp_path, config=SMALL) as broker:
        topic = broker.call(lambda: broker.broker.partitions.get("kept"))
        assert topic is not None and topic.overrides == {}
        assert topic_id_text(topic.topic_id) == read_partition_metadata(tmp_path / "kept-0")
    assert read_metadata_log(tmp_path / "__cluster_metadata-0").topic_ids["kept"] == topic_id_text(topic.topic_id)

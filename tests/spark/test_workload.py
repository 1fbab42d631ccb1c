"""The demo's workload generator (:mod:`kafkalog.spark.workload`): what it writes, checked by reading the log dirs
back with the library."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from kafkalog.clients.partitioner import partition_for_key
from kafkalog.errors import IllegalStateError
from kafkalog.log import Log
from kafkalog.spark.workload import TOPICS, write_workload
from kafkalog.tools.partition_dir import PartitionDir
from kafkalog.tools.stats import partition_stats


def partitions(root: Path) -> dict[str, list[Path]]:
    found: dict[str, list[Path]] = {}
    for path in sorted(p for p in root.glob("d*/*-*") if p.is_dir()):
        found.setdefault(PartitionDir.of(path).topic_partition.topic, []).append(path)
    return found


def records_of(path: Path) -> list[tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]]:
    with PartitionDir.of(path).open_read_only() as log:
        return [(r.offset, r.key, r.value, list(r.headers)) for r in log.records()]


def test_the_workload_has_every_format_and_the_counts_it_reports(tmp_path: Path) -> None:
    result = write_workload([tmp_path / "d1", tmp_path / "d2"], 6000, keys=40, segment_bytes=64 * 1024,
                            batch_records=50)
    assert result.total_records == 6000
    found = partitions(tmp_path)
    expected_formats = {"users": ({"v2"}, {"zstd", "none"}), "inventory": ({"v1"}, {"gzip"}),
                        "sessions": ({"v0"}, {"snappy"}), "clicks": ({"v2"}, {"lz4"})}
    for spec in TOPICS:
        dirs = found[spec.name]
        assert sorted(PartitionDir.of(d).topic_partition.partition for d in dirs) == list(range(spec.partitions))
        assert {d.parent.name for d in dirs} == {"d1", "d2"} or spec.partitions == 1  # spread over the dirs
        stats = [partition_stats(d) for d in dirs]
        assert sum(s.records for s in stats) == result.records[spec.name] > 0
        assert sum(s.tombstones for s in stats) == result.deletes[spec.name]
        assert set().union(*(s.magics for s in stats)) == expected_formats[spec.name][0]
        assert set().union(*(s.codecs for s in stats)) == expected_formats[spec.name][1]
        assert (result.deletes[spec.name] > 0) == spec.compacted
        for d in dirs:
            rows = records_of(d)
            partition = PartitionDir.of(d).topic_partition.partition
            assert [offset for offset, *_ in rows] == list(range(len(rows)))
            # Kafka's default partitioner put every key where a producer would have
            assert all(key is not None and partition_for_key(key, spec.partitions) == partition
                       for _o, key, _v, _h in rows)
            assert all(bool(headers) == (spec.name == "clicks") for *_r, headers in rows)
            keys = Counter(key for _o, key, _v, _h in rows)
            assert len(keys) <= 40 and max(keys.values()) > 1  # updates, not one record a key
    assert sum(len(dirs) for dirs in found.values()) == sum(t.partitions for t in TOPICS)


def test_the_workload_is_deterministic_and_left_as_after_a_clean_shutdown(tmp_path: Path) -> None:
    write_workload([tmp_path / "a" / "d1"], 3000, seed=3, segment_bytes=32 * 1024)
    write_workload([tmp_path / "b" / "d1"], 3000, seed=3, segment_bytes=32 * 1024)
    write_workload([tmp_path / "c" / "d1"], 3000, seed=4, segment_bytes=32 * 1024)

    def content(root: Path) -> dict[str, list[tuple[object, ...]]]:
        dirs = sorted(d for d in (root / "d1").glob("*-*") if d.is_dir())
        return {d.name: [(o, k, v) for o, k, v, _h in records_of(d)] for d in dirs}

    assert content(tmp_path / "a") == content(tmp_path / "b") != content(tmp_path / "c")
    assert (tmp_path / "a" / "d1" / ".kafka_cleanshutdown").exists()
    for d in sorted(p for p in (tmp_path / "a" / "d1").glob("*-*") if p.is_dir()):
        partition = PartitionDir.of(d)
        with Log(d, recovery_point=partition.recovery_point) as log:
            # rolled: the active segment is empty and has its indexes, so nothing is rebuilt
            assert log.active_segment.size() == 0
            assert log.load_report.rebuilt_indexes == [] and log.load_report.recovered_segments == []
            assert partition.recovery_point == log.log_end_offset


def test_workload_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="records"):
        write_workload([tmp_path], -1)
    with pytest.raises(ValueError, match="batch_records"):
        write_workload([tmp_path], 10, batch_records=0)
    write_workload([tmp_path / "d"], 10)
    before = {p: p.read_bytes() for p in (tmp_path / "d").rglob("*.log")}
    with pytest.raises(IllegalStateError, match="already"):
        write_workload([tmp_path / "d"], 10)  # the partitions exist already
    assert {p: p.read_bytes() for p in (tmp_path / "d").rglob("*.log")} == before

"""Scenario files: loading, the canonical form with defaults, and a clear error naming the file, the op's index
and the field for anything wrong (``tests/oracle/scenario.py``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.oracle.scenario import (
    DEFAULT_TIME_MS,
    OP_FIELDS,
    ScenarioError,
    canonical_op,
    load_scenario,
    parse_scenario,
    wire_op,
)

RECORD = {"key": "k", "value": "v", "timestamp": 1}


def append(**fields: Any) -> dict[str, Any]:
    return {"op": "append", "records": [dict(RECORD)], **fields}


def scenario(*ops: Any, **top: Any) -> dict[str, Any]:
    return {"kafka": "3.9", "ops": list(ops), **top}


def test_defaults_make_every_op_canonical() -> None:
    loaded = parse_scenario(scenario(append(), {"op": "reopen", "clean_shutdown": False}, {"op": "roll"},
                                     {"op": "read", "offset": 0, "max_bytes": 100},
                                     {"op": "marker", "type": "abort", "producer": {"id": 1, "epoch": 2}}))
    assert loaded.config == {}
    assert loaded.time_ms == DEFAULT_TIME_MS
    assert loaded.ops[0] == {"op": "append", "records": [{**RECORD, "headers": {}}], "compression": "none",
                             "magic": 2, "leader_epoch": 0, "origin": "client", "producer": None,
                             "base_offset": None}
    assert loaded.ops[1] == {"op": "reopen", "clean_shutdown": False, "recovery_point": None, "truncate_bytes": 0,
                             "corrupt_byte": 0}
    assert loaded.ops[2] == {"op": "roll"}
    assert loaded.ops[3] == {"op": "read", "offset": 0, "max_bytes": 100, "isolation": "log_end",
                             "min_one_message": True}
    assert loaded.ops[4] == {"op": "marker", "type": "abort", "producer": {"id": 1, "epoch": 2},
                             "coordinator_epoch": 0, "leader_epoch": 0}
    # every op has its fields in OP_FIELDS' order
    for op in loaded.ops:
        assert list(op) == ["op", *OP_FIELDS[op["op"]]]


def test_config_values_become_strings_as_java_writes_them() -> None:
    loaded = parse_scenario(scenario(config={"segment.bytes": 1024, "preallocate": True,
                                             "min.cleanable.dirty.ratio": 0.25, "cleanup.policy": "compact",
                                             "producer.id.expiration.ms": 1000}))
    assert loaded.config == {"segment.bytes": "1024", "preallocate": "true", "min.cleanable.dirty.ratio": "0.25",
                             "cleanup.policy": "compact", "producer.id.expiration.ms": "1000"}


def test_dumps_reads_back_the_same_scenario(tmp_path: Path) -> None:
    loaded = parse_scenario(scenario(append(producer={"id": 3, "epoch": 0, "sequence": 0}), {"op": "flush"},
                                     description="two ops", config={"segment.bytes": "400"}, time_ms=5))
    path = tmp_path / "s.json"
    path.write_text(loaded.dumps())
    again = load_scenario(path)
    assert again.to_json() == loaded.to_json()
    assert again.source == str(path)
    # one op a line, so that two scenarios diff op by op
    assert len(path.read_text().splitlines()) == 1 + len(loaded.ops) + 1


@pytest.mark.parametrize(("data", "op_index", "field", "reason"), [
    # the top level
    ([], None, None, "expected a JSON object"),
    ({"ops": []}, None, "kafka", "missing field"),
    ({"kafka": "3.9"}, None, "ops", "missing field"),
    ({"kafka": "3.8", "ops": []}, None, "kafka", 'expected one of "3.9", "4", got string \'3.8\''),
    ({"kafka": 4, "ops": []}, None, "kafka", "got number 4"),
    (scenario(extra=1), None, "extra", "unknown field"),
    (scenario(config={"segment.byte": "1"}), None, "config.segment.byte", "unknown config"),
    (scenario(config={"segment.bytes": None}), None, "config.segment.bytes", "expected a string, number or boolean"),
    (scenario(config=[]), None, "config", "expected an object"),
    (scenario(time_ms=-1), None, "time_ms", "in [0,"),
    (scenario(time_ms="1"), None, "time_ms", "expected a time in ms"),
    ({"kafka": "3.9", "ops": {}}, None, "ops", "expected a list of ops"),
    # ops
    (scenario(append(), 5), 1, None, "expected an object with an \"op\" field, got number 5"),
    (scenario({"records": []}), 0, "op", "missing field"),
    (scenario({"op": "compact"}), 0, "op", 'unknown op "compact"'),
    (scenario({"op": "roll", "now": True}), 0, "now", "unknown field"),
    (scenario({"op": "truncate_to"}), 0, "offset", "missing field"),
    (scenario({"op": "truncate_to", "offset": "3"}), 0, "offset", "got string '3'"),
    (scenario({"op": "truncate_to", "offset": 3.0}), 0, "offset", "got number 3.0"),
    (scenario({"op": "truncate_to", "offset": True}), 0, "offset", "got boolean true"),
    (scenario({"op": "truncate_to", "offset": -1}), 0, "offset", "in [0, 9223372036854775807], got -1"),
    (scenario({"op": "truncate_to", "offset": 2**63}), 0, "offset", "got 9223372036854775808"),
    (scenario({"op": "advance_time", "ms": -5}), 0, "ms", "got -5"),
    (scenario({"op": "reopen"}), 0, "clean_shutdown", "missing field"),
    (scenario({"op": "reopen", "clean_shutdown": 1}), 0, "clean_shutdown", "expected true or false, got number 1"),
    (scenario({"op": "read", "offset": 0, "max_bytes": 1, "isolation": "read_committed"}), 0, "isolation",
     'expected one of "log_end", "high_watermark", "txn_committed"'),
    (scenario({"op": "marker", "type": "commit"}), 0, "producer", "missing field"),
    (scenario({"op": "marker", "type": "end", "producer": {"id": 1, "epoch": 0}}), 0, "type", "expected one of"),
    (scenario({"op": "marker", "type": "commit", "producer": {"id": 1}}), 0, "producer.epoch", "missing field"),
    (scenario({"op": "marker", "type": "commit", "producer": {"id": 1, "epoch": 2**15}}), 0, "producer.epoch",
     "16-bit"),
    # appends
    (scenario({"op": "append"}), 0, "records", "missing field"),
    (scenario({"op": "append", "records": []}), 0, "records", "at least 1 item"),
    (scenario({"op": "append", "records": [{"key": "k", "value": "v"}]}), 0, "records[0].timestamp",
     "missing field"),
    (scenario({"op": "append", "records": [{**RECORD, "key": 5}]}), 0,
     "records[0].key", "expected a string or null, got number 5"),
    (scenario({"op": "append", "records": [{**RECORD, "headers": {"h": None}}]}), 0, "records[0].headers.h",
     "expected a string, got null"),
    (scenario({"op": "append", "records": [{**RECORD, "headers": [["h", "v"]]}]}), 0, "records[0].headers",
     "expected an object of string values"),
    (scenario({"op": "append", "records": [RECORD, {**RECORD, "offset": 3}]}), 0, "records[1].offset",
     "unknown field"),
    (scenario(append(compression="brotli")), 0, "compression", 'got string \'brotli\''),
    (scenario(append(magic=3)), 0, "magic", "expected one of 0, 1, 2, got number 3"),
    (scenario(append(magic=2.0)), 0, "magic", "got number 2.0"),
    (scenario(append(origin="leader")), 0, "origin", "expected one of"),
    (scenario(append(leader_epoch=-2)), 0, "leader_epoch", "got -2"),
    (scenario(append(producer={"id": 1, "epoch": 0})), 0, "producer.sequence", "missing field"),
    (scenario(append(producer={"id": -1, "epoch": 0, "sequence": 0})), 0, "producer.id", "got -1"),
    # what Kafka's record builder refuses below magic 2, and what makes no sense
    (scenario(append(magic=1, producer={"id": 1, "epoch": 0, "sequence": 0})), 0, "producer", "needs magic 2"),
    (scenario({"op": "append", "magic": 0, "records": [{**RECORD, "headers": {"h": "v"}}]}), 0,
     "records[0].headers", "headers need magic 2"),
    (scenario(append(magic=1, compression="zstd")), 0, "compression", "zstd needs magic 2"),
    (scenario(append(base_offset=4)), 0, "base_offset", "only a replication append keeps its offsets"),
    (scenario({"op": "reopen", "clean_shutdown": True, "truncate_bytes": 3}), 0, "truncate_bytes",
     "only an unclean reopen"),
])
def test_bad_scenarios_name_the_file_op_and_field(tmp_path: Path, data: Any, op_index: int | None,
                                                   field: str | None, reason: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    error = caught.value
    assert (error.source, error.op_index, error.field_name) == (str(path), op_index, field)
    assert reason in error.reason
    message = str(error)
    assert message.startswith(f"{path}: ")
    if op_index is not None:
        assert f"ops[{op_index}]" in message
    if field is not None:
        assert f": {field}: " in message


def test_the_op_name_is_in_the_message(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(scenario({"op": "roll"}, {"op": "delete_records", "offset": -3})))
    with pytest.raises(ScenarioError, match=r"bad\.json: ops\[1\] \(delete_records\): offset: expected an offset"):
        load_scenario(path)


@pytest.mark.parametrize(("text", "reason"), [
    ("", "not JSON: Expecting value at line 1 column 1"),
    ('{"kafka": "3.9", "ops": [}', "not JSON: Expecting value at line 1 column 26"),
    ("[" * 100_000, "nested too deeply"),
])
def test_files_that_are_not_json(tmp_path: Path, text: str, reason: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(ScenarioError, match=reason):
        load_scenario(path)


def test_missing_and_undecodable_files(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match=r"nowhere\.json: cannot read the file"):
        load_scenario(tmp_path / "nowhere.json")
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"\xff\xfe{")
    with pytest.raises(ScenarioError, match="cannot read the file"):
        load_scenario(binary)


def test_wire_op_leaves_out_the_optional_fields_not_given() -> None:
    """The runner protocol's form of an op: an optional field at its "not given" default is absent (the Java
    runner refuses ``corrupt_byte: 0`` and any damage field on a clean reopen); given ones stay."""
    clean = canonical_op({"op": "reopen", "clean_shutdown": True})
    assert wire_op(clean) == {"op": "reopen", "clean_shutdown": True}
    unclean = canonical_op({"op": "reopen", "clean_shutdown": False, "truncate_bytes": 3})
    assert wire_op(unclean) == {"op": "reopen", "clean_shutdown": False, "truncate_bytes": 3}
    append = canonical_op({"op": "append", "records": [{"key": "k", "value": None, "timestamp": 5}]})
    assert "producer" not in wire_op(append) and "base_offset" not in wire_op(append)
    assert wire_op(append)["records"] == append["records"] and canonical_op(wire_op(append)) == append
    follower = canonical_op({"op": "append", "records": [{"key": None, "value": "v", "timestamp": 5}],
                             "origin": "replication", "base_offset": 0})
    assert wire_op(follower)["base_offset"] == 0

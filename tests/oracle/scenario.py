"""The oracle's scenario files: what they hold, how they are read and checked, and their canonical form.

A scenario is one JSON object (issue 29, ``docs/oracle.rst``)::

    {"kafka": "3.9" | "4",                 Kafka line to compare with (required)
     "config": {"segment.bytes": "1024"},  topic configs by Kafka's names (optional, default {})
     "time_ms": 1700000000000,             the mock clock at the start (optional, default DEFAULT_TIME_MS)
     "description": "...",                 free text (optional)
     "ops": [{"op": "append", ...}, ...]}  the operations, in order (required)

Every op names its kind in ``"op"`` and carries the fields of :data:`OP_FIELDS`; a field that is not required
has a default, and :func:`load_scenario` fills every default in, so that the Java runner and the kafkalog side
are sent the same, complete operations (the *canonical* op).  Anything wrong - JSON that does not parse, an
unknown key or op, a value of the wrong type or out of range, a missing field, a combination Kafka's record
builder refuses (headers, producer ids or zstd below magic 2) - is a :class:`ScenarioError` naming the file, the
op's index and the field: the command exits 2 on it.

Invariants of a loaded :class:`Scenario`: ``kafka`` is a key of :data:`KAFKA_LINES`; ``config`` maps known
property names (:data:`CONFIG_NAMES`) to strings, as Kafka's ``Properties`` hold them; every op is a plain
``dict`` with exactly the fields of its kind, in the order of :data:`OP_FIELDS`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafkalog.config.log_config import PROPERTY_ATTRIBUTES

__all__ = [
    "BROKER_CONFIG_NAMES",
    "CONFIG_NAMES",
    "DEFAULT_TIME_MS",
    "KAFKA_LINES",
    "OP_FIELDS",
    "InvalidOp",
    "Scenario",
    "ScenarioError",
    "canonical_op",
    "load_scenario",
    "parse_scenario",
    "wire_op",
]

#: The scenario's ``"kafka"`` values and the Kafka release each stands for (``tests/oracle/jvm.py``'s
#: ``kafka_versions()`` resolves the same keys to the jars).
KAFKA_LINES: dict[str, str] = {"3.9": "3.9.2", "4": "4.4.0"}

#: The clock at the start when a scenario does not say: November 2023, so that record timestamps near it are
#: plausible and the segments' real modification times (read where a batch has no timestamp) lie after it.
DEFAULT_TIME_MS = 1_700_000_000_000

#: The broker properties a scenario may set beside the topic configs: the runner reads them for the producer
#: state (``ProducerStateManagerConfig``), not for ``LogConfig``.
BROKER_CONFIG_NAMES = frozenset({"producer.id.expiration.ms"})

#: Every config name a scenario may use: Kafka 3.8's topic configs (as kafkalog's ``LogConfig`` knows them) and
#: :data:`BROKER_CONFIG_NAMES`.
CONFIG_NAMES = frozenset(PROPERTY_ATTRIBUTES) | BROKER_CONFIG_NAMES

_JAVA_LONG = (-(2**63), 2**63 - 1)
_JAVA_INT = (-(2**31), 2**31 - 1)
_JAVA_SHORT = (-(2**15), 2**15 - 1)


class ScenarioError(ValueError):
    """A scenario that cannot be run: its file, the op's index (``None`` outside ``ops``) and the field.

    ``str()`` reads ``file: ops[3] (append): records[0].key: expected a string or null, got 5``.
    """

    def __init__(self, source: str, message: str, op_index: int | None = None, op_name: str | None = None,
                 field_name: str | None = None) -> None:
        self.source = source
        self.op_index = op_index
        self.op_name = op_name
        self.field_name = field_name
        self.reason = message
        where = [source]
        if op_index is not None:
            where.append(f"ops[{op_index}]" + (f" ({op_name})" if op_name else ""))
        if field_name is not None:
            where.append(field_name)
        super().__init__(": ".join([*where, message]))


# ---------------------------------------------------------------------------------------------------------
# Field types: each checks a value and returns its canonical form, or raises InvalidOp with the reason.


class InvalidOp(Exception):
    """A field's value is wrong; ``field`` is the path below the field when the fault is inside it."""

    def __init__(self, reason: str, field: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.field = field


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {json.dumps(value)}"
    if isinstance(value, int | float):
        return f"number {value!r}"
    if isinstance(value, str):
        return f"string {value!r}"
    if isinstance(value, list):
        return "a list"
    return "an object"


Check = Callable[[Any], Any]


def _integer(low: int, high: int, what: str = "an integer") -> Check:
    def check(value: Any) -> int:
        # JSON has one number type: 3.0 is refused as an integer, as a bool is (Python's bool is an int).
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidOp(f"expected {what}, got {_type_name(value)}")
        if not low <= value <= high:
            raise InvalidOp(f"expected {what} in [{low}, {high}], got {value}")
        return value
    return check


def _boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise InvalidOp(f"expected true or false, got {_type_name(value)}")
    return value


def _choice(*choices: Any) -> Check:
    def check(value: Any) -> Any:
        # 2 == 2.0 == True in Python: the type must match too.
        if not any(type(value) is type(c) and value == c for c in choices):
            raise InvalidOp(f"expected one of {', '.join(json.dumps(c) for c in choices)}, got {_type_name(value)}")
        return value
    return check


def _text_or_null(value: Any) -> str | None:
    if value is not None and not isinstance(value, str):
        raise InvalidOp(f"expected a string or null, got {_type_name(value)}")
    return value


def _object(fields: Mapping[str, tuple[Check, Any]]) -> Check:
    """A JSON object with exactly ``fields`` (name -> (check, default)); :data:`REQUIRED` marks a required one."""
    def check(value: Any) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise InvalidOp(f"expected an object, got {_type_name(value)}")
        for name in value:
            if name not in fields:
                raise InvalidOp(f"unknown field (known: {', '.join(fields)})", name)
        out: dict[str, Any] = {}
        for name, (field_check, default) in fields.items():
            if name not in value:
                if default is REQUIRED:
                    raise InvalidOp("missing field", name)
                out[name] = default
                continue
            try:
                out[name] = field_check(value[name])
            except InvalidOp as e:
                raise InvalidOp(e.reason, _join(name, e.field)) from None
        return out
    return check


def _list_of(item: Check, min_items: int = 0) -> Check:
    def check(value: Any) -> list[Any]:
        if not isinstance(value, list):
            raise InvalidOp(f"expected a list, got {_type_name(value)}")
        if len(value) < min_items:
            raise InvalidOp(f"expected at least {min_items} item(s), got {len(value)}")
        out = []
        for i, element in enumerate(value):
            try:
                out.append(item(element))
            except InvalidOp as e:
                raise InvalidOp(e.reason, _join(f"[{i}]", e.field)) from None
        return out
    return check


def _headers(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        raise InvalidOp(f"expected an object of string values, got {_type_name(value)}")
    for name, header_value in value.items():
        if not isinstance(header_value, str):
            raise InvalidOp(f"expected a string, got {_type_name(header_value)}", name)
    return dict(value)


def _join(parent: str, child: str) -> str:
    if not child:
        return parent
    return f"{parent}{child}" if child.startswith("[") else f"{parent}.{child}"


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


#: The default of a field that must be given.
REQUIRED: Any = _Required()

_LONG = _integer(*_JAVA_LONG, "a 64-bit integer")
_INT = _integer(*_JAVA_INT, "a 32-bit integer")
_OFFSET = _integer(0, _JAVA_LONG[1], "an offset (a non-negative 64-bit integer)")
_RECORD = _object({
    "key": (_text_or_null, REQUIRED),
    "value": (_text_or_null, REQUIRED),
    "timestamp": (_LONG, REQUIRED),
    "headers": (_headers, {}),
})
_PRODUCER = _object({
    "id": (_integer(0, _JAVA_LONG[1], "a producer id (a non-negative 64-bit integer)"), REQUIRED),
    "epoch": (_integer(0, _JAVA_SHORT[1], "a producer epoch (a non-negative 16-bit integer)"), REQUIRED),
    "sequence": (_integer(0, _JAVA_INT[1], "a sequence (a non-negative 32-bit integer)"), REQUIRED),
    "transactional": (_boolean, False),
})
_MARKER_PRODUCER = _object({
    "id": (_integer(0, _JAVA_LONG[1], "a producer id (a non-negative 64-bit integer)"), REQUIRED),
    "epoch": (_integer(0, _JAVA_SHORT[1], "a producer epoch (a non-negative 16-bit integer)"), REQUIRED),
})
_EPOCH = _integer(-1, _JAVA_INT[1], "a leader epoch (-1 or a non-negative 32-bit integer)")

#: Every op: its fields, each with its check and its default (:data:`REQUIRED` if it has none), in the order of
#: the canonical op.  ``base_offset`` of an append is ``None`` (the log end offset) unless given; it applies to a
#: ``replication`` append only.  ``recovery_point`` of a reopen is ``None``: the abandoned log's.
OP_FIELDS: dict[str, dict[str, tuple[Check, Any]]] = {
    "append": {
        "records": (_list_of(_RECORD, 1), REQUIRED),
        "compression": (_choice("none", "gzip", "snappy", "lz4", "zstd"), "none"),
        "magic": (_choice(0, 1, 2), 2),
        "leader_epoch": (_EPOCH, 0),
        "origin": (_choice("client", "replication", "coordinator"), "client"),
        "producer": (lambda v: None if v is None else _PRODUCER(v), None),
        "base_offset": (lambda v: None if v is None else _OFFSET(v), None),
    },
    "marker": {
        "type": (_choice("commit", "abort"), REQUIRED),
        "producer": (_MARKER_PRODUCER, REQUIRED),
        "coordinator_epoch": (_integer(0, _JAVA_INT[1], "a coordinator epoch (a non-negative 32-bit integer)"), 0),
        "leader_epoch": (_EPOCH, 0),
    },
    "roll": {},
    "truncate_to": {"offset": (_OFFSET, REQUIRED)},
    "truncate_fully_and_start_at": {"offset": (_OFFSET, REQUIRED)},
    "delete_records": {"offset": (_OFFSET, REQUIRED)},
    "advance_time": {"ms": (_integer(0, 10**15, "a number of milliseconds (0 or more)"), REQUIRED)},
    "update_high_watermark": {"offset": (_OFFSET, REQUIRED)},
    "retention": {},
    "clean": {},
    "flush": {},
    "reopen": {
        "clean_shutdown": (_boolean, REQUIRED),
        "recovery_point": (lambda v: None if v is None else _OFFSET(v), None),
        "truncate_bytes": (_integer(0, _JAVA_INT[1], "a byte count (0 or more)"), 0),
        "corrupt_byte": (_integer(0, _JAVA_INT[1], "a position from the end (1 = the last byte; 0 = none)"), 0),
    },
    "read": {
        "offset": (_OFFSET, REQUIRED),
        "max_bytes": (_integer(0, _JAVA_INT[1], "a byte count (0 or more)"), REQUIRED),
        "isolation": (_choice("log_end", "high_watermark", "txn_committed"), "log_end"),
        "min_one_message": (_boolean, True),
    },
}


def _check_combinations(op: dict[str, Any]) -> None:
    """What each field allows alone is checked by its type; these are the rules between fields (the ones
    Kafka's ``MemoryRecordsBuilder`` enforces with an ``IllegalArgumentException`` before any log sees the
    records, and the ones that make an op meaningless)."""
    kind = op["op"]
    if kind == "append":
        magic = op["magic"]
        if magic < 2:
            if op["producer"] is not None:
                raise InvalidOp("a producer id needs magic 2 (Kafka's builder refuses it below)", "producer")
            for i, record in enumerate(op["records"]):
                if record["headers"]:
                    raise InvalidOp("headers need magic 2 (Kafka's builder refuses them below)",
                                   f"records[{i}].headers")
            if op["compression"] == "zstd":
                raise InvalidOp("zstd needs magic 2 (Kafka's builder refuses it below)", "compression")
        if op["base_offset"] is not None and op["origin"] != "replication":
            raise InvalidOp("only a replication append keeps its offsets: a leader assigns them", "base_offset")
    elif kind == "reopen" and op["clean_shutdown"]:
        for name, default in (("recovery_point", None), ("truncate_bytes", 0), ("corrupt_byte", 0)):
            if op[name] != default:
                raise InvalidOp("only an unclean reopen (clean_shutdown false) leaves files a crash can damage "
                               "and a recovery point to choose", name)


def canonical_op(op: Any) -> dict[str, Any]:
    """``op`` checked and completed with its defaults (the op sent to both sides).

    Raises:
        InvalidOp: with the field at fault (:func:`parse_scenario` turns it into a :class:`ScenarioError`).
    """
    if not isinstance(op, dict):
        raise InvalidOp(f"expected an object with an \"op\" field, got {_type_name(op)}")
    kind = op.get("op", REQUIRED)
    if kind is REQUIRED:
        raise InvalidOp("missing field", "op")
    if not isinstance(kind, str) or kind not in OP_FIELDS:
        raise InvalidOp(f"unknown op {json.dumps(kind)} (known: {', '.join(OP_FIELDS)})", "op")
    body = {name: value for name, value in op.items() if name != "op"}
    out = {"op": kind, **_object(OP_FIELDS[kind])(body)}
    _check_combinations(out)
    return out


#: The optional fields whose default means "not given": the wire form leaves them out at that value.
_ABSENT_WHEN: dict[str, dict[str, Any]] = {
    "append": {"producer": None, "base_offset": None},
    "reopen": {"recovery_point": None, "truncate_bytes": 0, "corrupt_byte": 0},
}


def wire_op(op: dict[str, Any]) -> dict[str, Any]:
    """The canonical ``op`` as the runner protocol sends it: the optional fields the contract marks as such left
    out where they hold their "not given" default (the Java runner refuses ``corrupt_byte: 0``, and any of a
    reopen's damage fields on a clean reopen, as the contract has them absent there)."""
    absent = _ABSENT_WHEN.get(op["op"], {})
    return {name: value for name, value in op.items() if name not in absent or value != absent[name]}


# ---------------------------------------------------------------------------------------------------------
# Scenarios


@dataclass
class Scenario:
    """A loaded, checked scenario (see the module docstring); ``source`` names where it came from."""

    kafka: str
    ops: list[dict[str, Any]]
    config: dict[str, str] = field(default_factory=dict)
    time_ms: int = DEFAULT_TIME_MS
    description: str | None = None
    source: str = "<scenario>"

    def to_json(self) -> dict[str, Any]:
        """The scenario as a file holds it (canonical ops: every field written out)."""
        out: dict[str, Any] = {"kafka": self.kafka}
        if self.description is not None:
            out["description"] = self.description
        out["config"] = dict(self.config)
        out["time_ms"] = self.time_ms
        out["ops"] = [dict(op) for op in self.ops]
        return out

    def dumps(self) -> str:
        """The file text: one op a line, so that a diff of two scenarios reads op by op."""
        head = self.to_json()
        ops = head.pop("ops")
        lines = [json.dumps(head)[:-1] + ', "ops": [']
        lines += [f"  {json.dumps(op)}{',' if i < len(ops) - 1 else ''}" for i, op in enumerate(ops)]
        lines.append("]}")
        return "\n".join(lines) + "\n"

    def with_ops(self, ops: list[dict[str, Any]]) -> Scenario:
        """The same scenario with other (canonical) ops: what the shrinker tries."""
        return Scenario(self.kafka, list(ops), dict(self.config), self.time_ms, self.description, self.source)


def _config_value(value: Any) -> str:
    """A config value as Kafka's ``Properties`` holds it: a string; numbers and booleans are written as Java's
    ``toString`` writes them."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidOp(f"expected a finite number, got {value!r}")
        return repr(value)
    if isinstance(value, str):
        return value
    raise InvalidOp(f"expected a string, number or boolean, got {_type_name(value)}")


_TOP_FIELDS = ("kafka", "description", "config", "time_ms", "ops")


def parse_scenario(data: Any, source: str = "<scenario>") -> Scenario:
    """Check a scenario's JSON value and return it loaded, its ops canonical.

    Raises:
        ScenarioError: the first fault found, with the file, op index and field.
    """
    if not isinstance(data, dict):
        raise ScenarioError(source, f"expected a JSON object with \"kafka\" and \"ops\", got {_type_name(data)}")
    for name in data:
        if name not in _TOP_FIELDS:
            raise ScenarioError(source, f"unknown field (known: {', '.join(_TOP_FIELDS)})", field_name=name)
    for name in ("kafka", "ops"):
        if name not in data:
            raise ScenarioError(source, "missing field", field_name=name)
    kafka = data["kafka"]
    if not isinstance(kafka, str) or kafka not in KAFKA_LINES:
        raise ScenarioError(source, f"expected one of {', '.join(json.dumps(k) for k in KAFKA_LINES)}, got "
                                    f"{_type_name(kafka)}", field_name="kafka")
    description = data.get("description")
    if description is not None and not isinstance(description, str):
        raise ScenarioError(source, f"expected a string, got {_type_name(description)}", field_name="description")
    config_in = data.get("config", {})
    if not isinstance(config_in, dict):
        raise ScenarioError(source, f"expected an object, got {_type_name(config_in)}", field_name="config")
    config: dict[str, str] = {}
    for name, value in config_in.items():
        if name not in CONFIG_NAMES:
            raise ScenarioError(source, "unknown config (not a topic config of Kafka 3.8 nor one of "
                                        f"{', '.join(sorted(BROKER_CONFIG_NAMES))})", field_name=f"config.{name}")
        try:
            config[name] = _config_value(value)
        except InvalidOp as e:
            raise ScenarioError(source, e.reason, field_name=f"config.{name}") from None
    try:
        time_ms = _integer(0, _JAVA_LONG[1] // 2, "a time in ms (0 or more)")(data.get("time_ms", DEFAULT_TIME_MS))
    except InvalidOp as e:
        raise ScenarioError(source, e.reason, field_name="time_ms") from None
    ops_in = data["ops"]
    if not isinstance(ops_in, list):
        raise ScenarioError(source, f"expected a list of ops, got {_type_name(ops_in)}", field_name="ops")
    ops = []
    for i, op in enumerate(ops_in):
        try:
            ops.append(canonical_op(op))
        except InvalidOp as e:
            name = op.get("op") if isinstance(op, dict) and isinstance(op.get("op"), str) else None
            raise ScenarioError(source, e.reason, i, name if name in OP_FIELDS else None, e.field or None) from None
    return Scenario(kafka, ops, config, time_ms, description, source)


def load_scenario(path: str | Path) -> Scenario:
    """Read and check a scenario file.

    Raises:
        ScenarioError: the file cannot be read, is not JSON, or is not a valid scenario.
    """
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ScenarioError(source, f"cannot read the file: {e}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ScenarioError(source, f"not JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    except RecursionError:
        raise ScenarioError(source, "not JSON this reader can take: nested too deeply") from None
    return parse_scenario(data, source)

"""The broker's configuration: Kafka's broker property names, types and defaults, for what a single-node broker does.

Kafka's ``KafkaConfig`` (``core/src/main/scala/kafka/server/KafkaConfig.scala`` and the ``*Configs`` classes of
``server/``, ``server-common/``, ``group-coordinator/`` and ``transaction-coordinator/``, 3.8.0) has some three
hundred properties.  :class:`BrokerConfig` takes those a one-process broker over kafkalog's logs acts on, under
Kafka's names with Kafka's defaults and checks, plus every topic default (``log.segment.bytes``,
``log.retention.hours``, ``log.cleanup.policy``, ...: the broker synonyms of :class:`~kafkalog.config.LogConfig`'s
properties, read in Kafka's order of preference) and the cleaner's (``log.cleaner.*``).

A few of Kafka's properties are taken and checked but change nothing here, because what they tune does not exist in
one process on one node: :data:`ACCEPTED_WITHOUT_EFFECT` lists them (a ``server.properties`` written for Kafka
carries them).  A name that is neither is a :class:`~kafkalog.config.ConfigError`, as kafkalog treats every unknown
option (Kafka only logs "was supplied but isn't a known config"), so that a misspelt setting is never silently
ignored.

Where kafkalog's default differs from Kafka's, and why:

* ``listeners`` is ``PLAINTEXT://127.0.0.1:9092``: Kafka's ``PLAINTEXT://:9092`` listens on every interface; a
  broker meant for tests and local work should not.  ``PLAINTEXT`` is the only security protocol.
* ``node.id`` is 1: Kafka requires it in KRaft mode and has no default.
* ``queued.max.request.bytes`` is 256 MiB: Kafka's -1 lets a thousand clients each sending a frame of
  ``socket.request.max.bytes`` make the broker hold 100 GB.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any, Final

from ..cleaner.config import PROPERTY_ATTRIBUTES as CLEANER_PROPERTIES
from ..cleaner.config import PROPERTY_TYPES as CLEANER_PROPERTY_TYPES
from ..cleaner.config import CleanerConfig
from ..config import LogConfig
from ..config.config_def import ConfigError, Validator, at_least, between, parse_type
from ..config.log_config import ALL_SERVER_CONFIG_SYNONYMS
from .coordinator_config import declared_properties
from .group_config import GroupCoordinatorConfig
from .txn_config import TransactionCoordinatorConfig

__all__ = ["ACCEPTED_WITHOUT_EFFECT", "BROKER_PROPERTIES", "COORDINATOR_CONFIGS", "BrokerConfig", "Listener",
           "parse_listener", "property_help"]


@dataclasses.dataclass(frozen=True)
class _Property:
    type_: str
    default: object
    validator: Validator | None = None
    doc: str = ""


def _listeners(name: str, value: Any) -> None:
    for item in str(value).split(","):
        parse_listener(name, item)


#: The broker's own properties (the coordinators' are declared on their configuration classes).
_OWN_PROPERTIES: Final[Mapping[str, _Property]] = {
    "listeners": _Property("STRING", "PLAINTEXT://127.0.0.1:9092", _listeners,
                           "where the broker listens: PLAINTEXT://host:port (port 0 picks a free one)"),
    "advertised.listeners": _Property("STRING", None, None,
                                      "the address clients are told to use (default: the listener's)"),
    "log.dirs": _Property("STRING", None, None, "the data directories, comma-separated"),
    "log.dir": _Property("STRING", "/tmp/kafka-logs", None, "the data directory when log.dirs is not set"),
    "node.id": _Property("INT", 1, at_least(0), "this broker's id"),
    "broker.id": _Property("INT", -1, None, "an older name of node.id; used when set"),
    "num.partitions": _Property("INT", 1, at_least(1), "partitions of an automatically created topic"),
    "auto.create.topics.enable": _Property("BOOLEAN", True, None,
                                           "create a topic on a metadata request or a produce that names it"),
    "delete.topic.enable": _Property("BOOLEAN", True, None, "whether DeleteTopics may delete"),
    "default.replication.factor": _Property("INT", 1, between(1, 1), "one node: 1"),
    "message.max.bytes": _Property("INT", 1024 * 1024 + 12, at_least(0),
                                   "the largest record batch (topic default max.message.bytes)"),
    "socket.request.max.bytes": _Property("INT", 100 * 1024 * 1024, at_least(1),
                                          "the largest request frame; a larger one closes the connection"),
    "fetch.max.bytes": _Property("INT", 55 * 1024 * 1024, at_least(1024), "the most bytes one fetch returns"),
    "max.request.partition.size.limit": _Property("INT", 2000, at_least(1),
                                                  "the most partitions one DescribeTopicPartitions answers"),
    "queued.max.request.bytes": _Property("LONG", 256 * 1024 * 1024, at_least(-1),
                                          "the request bytes held at once, all connections together (-1: no bound)"),
    "socket.listen.backlog.size": _Property("INT", 50, at_least(1),
                                            "connections waiting to be accepted before new ones are refused"),
    "connections.max.idle.ms": _Property("LONG", 600_000, None, "close a connection idle this long"),
    "num.recovery.threads.per.data.dir": _Property("INT", 1, at_least(1), "threads recovering each data dir"),
    "log.retention.check.interval.ms": _Property("LONG", 300_000, at_least(1), "how often retention runs"),
    "log.flush.scheduler.interval.ms": _Property("LONG", 2**63 - 1, None, "how often the flusher looks"),
    "log.flush.offset.checkpoint.interval.ms": _Property("INT", 60_000, at_least(0),
                                                         "how often recovery points are checkpointed"),
    "log.flush.start.offset.checkpoint.interval.ms": _Property("INT", 60_000, at_least(0),
                                                               "how often log start offsets are checkpointed"),
    "log.initial.task.delay.ms": _Property("LONG", 30_000, at_least(0), "delay before the first log tasks"),
    "producer.id.expiration.ms": _Property("INT", 86_400_000, at_least(1), "how long an idle producer id lives"),
    "producer.id.expiration.check.interval.ms": _Property("INT", 600_000, at_least(1),
                                                          "how often idle producer ids are removed"),
    "replica.high.watermark.checkpoint.interval.ms": _Property(
        "LONG", 5000, at_least(1), "how often the high watermarks are written to replication-offset-checkpoint"),
    "max.incremental.fetch.session.cache.slots": _Property("INT", 1000, at_least(0),
                                                           "fetch sessions kept (0: none)"),
}

#: The coordinators' configurations, each declaring its own broker properties (``group.*``, ``offsets.*``,
#: ``transaction*``): the broker knows their names, types, defaults and checks from there.
COORDINATOR_CONFIGS: Final = (GroupCoordinatorConfig, TransactionCoordinatorConfig)

#: Broker property -> its type, default, check and meaning (Kafka's, unless the module docstring says otherwise):
#: the broker's own and the coordinators'.
BROKER_PROPERTIES: Final[Mapping[str, _Property]] = {
    **_OWN_PROPERTIES,
    **{p.name: _Property(p.type_, p.default, p.validator, p.doc)
       for config in COORDINATOR_CONFIGS for p in declared_properties(config)},
}

#: Kafka broker properties taken and checked for their type, that change nothing in one process on one node.
ACCEPTED_WITHOUT_EFFECT: Final[Mapping[str, str]] = {
    "num.network.threads": "INT", "num.io.threads": "INT", "background.threads": "INT",
    "socket.send.buffer.bytes": "INT", "socket.receive.buffer.bytes": "INT", "queued.max.requests": "INT",
    "num.replica.fetchers": "INT", "replica.lag.time.max.ms": "LONG",
    "process.roles": "LIST", "controller.quorum.voters": "LIST", "controller.listener.names": "STRING",
    "inter.broker.listener.name": "STRING", "listener.security.protocol.map": "STRING",
    "controller.quorum.bootstrap.servers": "LIST", "zookeeper.connect": "STRING",
    "group.consumer.heartbeat.interval.ms": "INT", "metadata.log.dir": "STRING",
}

_LISTENER = re.compile(r"(?P<name>[A-Za-z_][A-Za-z0-9_]*)://(?P<host>\[[^\]]*\]|[^:/]*):(?P<port>[0-9]+)")


@dataclasses.dataclass(frozen=True)
class Listener:
    """One listener: ``PLAINTEXT://host:port``."""

    name: str
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.name}://{self.host}:{self.port}"


def parse_listener(name: str, text: str) -> Listener:
    """A listener from ``PLAINTEXT://host:port`` (Kafka: ``CoreUtils.listenerListToEndPoints``); only PLAINTEXT."""
    match = _LISTENER.fullmatch(text.strip())
    if match is None:
        raise ConfigError.invalid(name, text, "Expected a listener of the form PLAINTEXT://host:port")
    if match["name"].upper() != "PLAINTEXT":
        raise ConfigError.invalid(name, text, "kafkalog's broker speaks PLAINTEXT only (no TLS or SASL)")
    port = int(match["port"])
    if port > 65535:
        raise ConfigError.invalid(name, text, "A port is at most 65535")
    host = match["host"].strip("[]")
    return Listener("PLAINTEXT", host, port)


def _type_of(name: str) -> str | None:
    if name in BROKER_PROPERTIES:
        return BROKER_PROPERTIES[name].type_
    if name in ACCEPTED_WITHOUT_EFFECT:
        return ACCEPTED_WITHOUT_EFFECT[name]
    if name in CLEANER_PROPERTIES or name in _TOPIC_SYNONYMS:
        return "STRING"  # checked by CleanerConfig and LogConfig, which parse them
    return None


#: Every broker property that supplies a topic default (``log.segment.bytes``, ``log.retention.hours``, ...).
_TOPIC_SYNONYMS: Final = frozenset(s.name for synonyms in ALL_SERVER_CONFIG_SYNONYMS.values() for s in synonyms)


def property_help() -> list[tuple[str, str, str, str]]:
    """Every property the broker takes, as rows of (name, type, default, meaning), by name: its own and the
    coordinators', the topic defaults (``log.*``: the broker synonyms of LogConfig's properties), the cleaner's, and
    those accepted without effect (``kafkalog serve --help-config`` prints them)."""
    rows: list[tuple[str, str, str, str]] = []
    for name, prop in BROKER_PROPERTIES.items():
        rows.append((name, prop.type_, "" if prop.default is None else _as_text(prop.default), prop.doc))
    topic_defaults = LogConfig({}).to_props()
    for topic_name, synonyms in ALL_SERVER_CONFIG_SYNONYMS.items():
        for synonym in synonyms:
            if synonym.name in BROKER_PROPERTIES:
                continue  # message.max.bytes: the broker's own, and a topic default too
            first = synonym is synonyms[0]
            rows.append((synonym.name, LogConfig.config_type(topic_name) or "STRING",
                         topic_defaults.get(topic_name, "") if first else "",
                         f"the topics' default {topic_name}" + ("" if first else f" (when {synonyms[0].name} is "
                                                                                  "not given)")))
    cleaner = CleanerConfig()
    for name, type_ in CLEANER_PROPERTY_TYPES.items():
        if name not in BROKER_PROPERTIES:
            attribute = CLEANER_PROPERTIES[name]
            rows.append((name, type_, _as_text(getattr(cleaner, attribute)), f"the log cleaner's {attribute}"))
    for name, type_ in ACCEPTED_WITHOUT_EFFECT.items():
        rows.append((name, type_, "", "accepted and checked; no effect on one node in one process"))
    return sorted(rows)


class BrokerConfig:
    """The broker's properties, parsed and checked when the object is made.

    ``BrokerConfig({"log.dirs": "/data", "num.partitions": "3"})``; values may be strings (as in a
    ``server.properties`` file) or Python values.  ``config["num.partitions"]`` is the parsed value (the default when
    not given); :attr:`topic_defaults` the topics' :class:`~kafkalog.config.LogConfig` defaults and
    :attr:`cleaner` the :class:`~kafkalog.cleaner.config.CleanerConfig`, :attr:`group_coordinator` and
    :attr:`transaction_coordinator` the coordinators' configurations, all from the same properties.

    Raises:
        ConfigError: an unknown name (all of them are named), or a value Kafka would refuse.
    """

    def __init__(self, props: Mapping[str, object] | None = None) -> None:
        given = dict(props or {})
        unknown = sorted(name for name in given if _type_of(name) is None)
        if unknown:
            raise ConfigError(f"Unknown broker configuration {', '.join(unknown)} (kafkalog serve --help-config "
                              f"lists the ones it takes)", names=unknown)
        self._given = given
        values: dict[str, object] = {}
        for name, prop in _OWN_PROPERTIES.items():
            value = given.get(name, prop.default)
            if value is not None:
                value = parse_type(name, value, prop.type_)
                if prop.validator is not None:
                    prop.validator(name, value)
            values[name] = value
        for name, type_ in ACCEPTED_WITHOUT_EFFECT.items():
            if name in given:
                values[name] = parse_type(name, given[name], type_)
        if "broker.id" in given and "node.id" not in given and int(values["broker.id"]) >= 0:  # type: ignore[call-overload]
            values["node.id"] = values["broker.id"]
        # Each coordinator reads, checks and keeps its own properties; the broker shows their values.
        as_text = {name: _as_text(value) for name, value in given.items()}
        self.group_coordinator: GroupCoordinatorConfig = GroupCoordinatorConfig.from_properties(as_text)
        self.transaction_coordinator: TransactionCoordinatorConfig = (
            TransactionCoordinatorConfig.from_properties(as_text))
        for coordinator in (self.group_coordinator, self.transaction_coordinator):
            for f in dataclasses.fields(coordinator):
                if "property" in f.metadata:
                    values[f.metadata["property"]] = getattr(coordinator, f.name)
        self._values = values
        self.topic_defaults: LogConfig = LogConfig(self._topic_default_props())
        cleaner_props = {name: given[name] for name in CLEANER_PROPERTIES if name in given}
        self.cleaner: CleanerConfig = CleanerConfig.from_props(cleaner_props)
        self.listeners: list[Listener] = [parse_listener("listeners", item)
                                          for item in str(values["listeners"]).split(",")]
        advertised = values["advertised.listeners"]
        self.advertised_listeners: list[Listener] | None = (
            None if advertised is None else [parse_listener("advertised.listeners", item)
                                             for item in str(advertised).split(",")])
        dirs = values["log.dirs"] if values["log.dirs"] is not None else values["log.dir"]
        self.log_dirs: list[str] = [d.strip() for d in str(dirs).split(",") if d.strip()]
        if not self.log_dirs:
            raise ConfigError.invalid("log.dirs", dirs, "At least one data directory is needed")

    def _topic_default_props(self) -> dict[str, str]:
        # Kafka's LogConfig defaults from the broker: the first synonym set wins (KafkaConfig.extractLogConfigMap).
        props: dict[str, str] = {}
        for topic_name, synonyms in ALL_SERVER_CONFIG_SYNONYMS.items():
            for synonym in synonyms:
                if synonym.name in self._given:
                    props[topic_name] = synonym.converter(str(_as_text(self._given[synonym.name])))
                    break
        if "message.max.bytes" in self._given and "max.message.bytes" not in props:
            props["max.message.bytes"] = str(self._values["message.max.bytes"])
        return props

    def __getitem__(self, name: str) -> Any:
        if name in self._values:
            return self._values[name]
        if name in self._given:
            return self._given[name]
        raise KeyError(name)

    def given(self) -> dict[str, object]:
        """The properties as given (what ``kafkalog serve --config`` received)."""
        return dict(self._given)

    def __repr__(self) -> str:
        return f"BrokerConfig({self._given!r})"


def _as_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)

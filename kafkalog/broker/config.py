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
from ..cleaner.config import CleanerConfig
from ..config import LogConfig
from ..config.config_def import ConfigError, Validator, at_least, between, parse_type
from ..config.log_config import ALL_SERVER_CONFIG_SYNONYMS

__all__ = ["ACCEPTED_WITHOUT_EFFECT", "BROKER_PROPERTIES", "BrokerConfig", "Listener", "parse_listener"]


@dataclasses.dataclass(frozen=True)
class _Property:
    type_: str
    default: object
    validator: Validator | None = None
    doc: str = ""


def _listeners(name: str, value: Any) -> None:
    for item in str(value).split(","):
        parse_listener(name, item)


#: Broker property -> its type, default, check and meaning (Kafka's, unless the module docstring says otherwise).
BROKER_PROPERTIES: Final[Mapping[str, _Property]] = {
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
    "offsets.topic.num.partitions": _Property("INT", 50, at_least(1), "partitions of __consumer_offsets"),
    "offsets.topic.segment.bytes": _Property("INT", 100 * 1024 * 1024, at_least(1),
                                             "segment size of __consumer_offsets"),
    "offsets.topic.compression.codec": _Property("INT", 0, None, "compression of the offsets records"),
    "offsets.retention.minutes": _Property("INT", 7 * 24 * 60, at_least(1), "how long committed offsets live"),
    "offsets.retention.check.interval.ms": _Property("LONG", 600_000, at_least(1),
                                                     "how often expired offsets are removed"),
    "offset.metadata.max.bytes": _Property("INT", 4096, None, "the largest offset commit metadata"),
    "offsets.commit.timeout.ms": _Property("INT", 5000, at_least(1), "how long a commit may wait"),
    "offsets.load.buffer.size": _Property("INT", 5 * 1024 * 1024, at_least(1), "read size when loading"),
    "group.min.session.timeout.ms": _Property("INT", 6000, None, "the shortest session a member may ask for"),
    "group.max.session.timeout.ms": _Property("INT", 1_800_000, None, "the longest session a member may ask for"),
    "group.initial.rebalance.delay.ms": _Property("INT", 3000, None,
                                                  "how long a new group waits for more members"),
    "group.max.size": _Property("INT", 2**31 - 1, at_least(1), "the most members a group may have"),
    "transaction.state.log.num.partitions": _Property("INT", 50, at_least(1),
                                                      "partitions of __transaction_state"),
    "transaction.state.log.segment.bytes": _Property("INT", 100 * 1024 * 1024, at_least(1),
                                                     "segment size of __transaction_state"),
    "transaction.max.timeout.ms": _Property("INT", 900_000, at_least(1), "the longest transaction timeout"),
    "transactional.id.expiration.ms": _Property("INT", 604_800_000, at_least(1),
                                                "how long an idle transactional id lives"),
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": _Property(
        "INT", 10_000, at_least(1), "how often timed-out transactions are aborted"),
    "transaction.remove.expired.transaction.cleanup.interval.ms": _Property(
        "INT", 3_600_000, at_least(1), "how often expired transactional ids are removed"),
    "producer.id.expiration.ms": _Property("INT", 86_400_000, at_least(1), "how long an idle producer id lives"),
    "producer.id.expiration.check.interval.ms": _Property("INT", 600_000, at_least(1),
                                                          "how often idle producer ids are removed"),
    "replica.high.watermark.checkpoint.interval.ms": _Property(
        "LONG", 5000, at_least(1), "how often the high watermarks are written to replication-offset-checkpoint"),
    "max.incremental.fetch.session.cache.slots": _Property("INT", 1000, at_least(0),
                                                           "fetch sessions kept (0: none)"),
}

#: Kafka broker properties taken and checked for their type, that change nothing in one process on one node.
ACCEPTED_WITHOUT_EFFECT: Final[Mapping[str, str]] = {
    "num.network.threads": "INT", "num.io.threads": "INT", "background.threads": "INT",
    "socket.send.buffer.bytes": "INT", "socket.receive.buffer.bytes": "INT", "queued.max.requests": "INT",
    "offsets.topic.replication.factor": "SHORT", "transaction.state.log.replication.factor": "SHORT",
    "transaction.state.log.min.isr": "INT", "num.replica.fetchers": "INT", "replica.lag.time.max.ms": "LONG",
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
        return ACCEPTED_WITHOUT_EFFECT[name].replace("SHORT", "INT")
    if name in CLEANER_PROPERTIES or name in _TOPIC_SYNONYMS:
        return "STRING"  # checked by CleanerConfig and LogConfig, which parse them
    return None


#: Every broker property that supplies a topic default (``log.segment.bytes``, ``log.retention.hours``, ...).
_TOPIC_SYNONYMS: Final = frozenset(s.name for synonyms in ALL_SERVER_CONFIG_SYNONYMS.values() for s in synonyms)


class BrokerConfig:
    """The broker's properties, parsed and checked when the object is made.

    ``BrokerConfig({"log.dirs": "/data", "num.partitions": "3"})``; values may be strings (as in a
    ``server.properties`` file) or Python values.  ``config["num.partitions"]`` is the parsed value (the default when
    not given); :attr:`topic_defaults` the topics' :class:`~kafkalog.config.LogConfig` defaults and
    :attr:`cleaner` the :class:`~kafkalog.cleaner.config.CleanerConfig`, both from the same properties.

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
        for name, prop in BROKER_PROPERTIES.items():
            value = given.get(name, prop.default)
            if value is not None:
                value = parse_type(name, value, prop.type_)
                if prop.validator is not None:
                    prop.validator(name, value)
            values[name] = value
        for name, type_ in ACCEPTED_WITHOUT_EFFECT.items():
            if name in given:
                values[name] = parse_type(name, given[name], type_.replace("SHORT", "INT"))
        if "broker.id" in given and "node.id" not in given and int(values["broker.id"]) >= 0:  # type: ignore[call-overload]
            values["node.id"] = values["broker.id"]
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
        if int(values["group.min.session.timeout.ms"]) > int(values["group.max.session.timeout.ms"]):  # type: ignore[call-overload]
            raise ConfigError("group.min.session.timeout.ms must not be larger than group.max.session.timeout.ms",
                              name="group.min.session.timeout.ms")

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

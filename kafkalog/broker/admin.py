"""The admin APIs: topics created, grown and deleted, configurations described and changed, records deleted, and where
a leader epoch ends.

Ports of what Kafka 3.8.0's KRaft broker and controller do for each (``ControllerApis.createTopics``/``deleteTopics``/
``createPartitions`` with ``ReplicationControlManager``; ``KafkaApis.handleDescribeConfigsRequest`` with
``ConfigHelper``; ``handleIncrementalAlterConfigsRequest`` and ``handleAlterConfigsRequest`` with
``ConfigurationControlManager``; ``handleDeleteRecordsRequest`` with ``Partition.deleteRecordsOnLeader``;
``handleOffsetForLeaderEpochRequest`` with ``Partition.lastOffsetForLeaderEpoch``), with one node:

- a replication factor is 1 (``-1`` asks for the default, ``default.replication.factor``, which is 1); more is
  ``INVALID_REPLICATION_FACTOR`` ("only 1 broker(s) are registered"), and a manual assignment must name this node;
- a topic's configuration overrides are checked by :class:`~kafkalog.config.LogConfig` and applied to its logs at
  once; ``validate_only`` checks and changes nothing.

Where kafkalog differs:

- the internal topics (``__consumer_offsets``, ``__transaction_state``) cannot be deleted
  (``INVALID_TOPIC_EXCEPTION``): the coordinators keep their logs open.  Kafka lets a client try.
- a topic's configurations are :class:`~kafkalog.config.LogConfig`'s, Kafka 3.8's: a Kafka 4 broker no longer has
  ``message.format.version``, ``message.downconversion.enable`` and ``message.timestamp.difference.max.ms``, has
  six that came after 3.8 (``max.decompressed.message.bytes``, ``errors.deadletterqueue.group.enable``,
  ``remote.copy.lag.bytes``, ``remote.copy.lag.ms``, ``remote.log.copy.disable``, ``remote.log.delete.on.disable``),
  and defaults ``message.timestamp.after.max.ms`` to one hour (KIP-1030) where 3.8 allows any.
- there are no dynamic broker configurations: a topic's configuration not overridden is described as
  ``STATIC_BROKER_CONFIG`` or ``DEFAULT_CONFIG`` (:func:`topic_config_synonyms`).  A Kafka 4 controller writes a
  cluster-wide ``min.insync.replicas`` when the cluster is formatted (KIP-966), so there every topic describes that
  one as ``DYNAMIC_DEFAULT_BROKER_CONFIG`` (not a default), with the same value.
"""

from __future__ import annotations

import datetime
import logging
from collections import Counter
from typing import Any, Final

from kio.schema.errors import ErrorCode

from ..config import DEFAULTS, LogConfig
from ..config.config_def import ConfigError
from ..config.log_config import ALL_SERVER_CONFIG_SYNONYMS
from ..errors import KafkaLogError, OffsetOutOfRangeError
from ..topic import InvalidTopicError
from .config import ACCEPTED_WITHOUT_EFFECT, BROKER_PROPERTIES
from .context import RequestContext
from .error_codes import error_code_for
from .fetch import epoch_error
from .kio_values import build
from .partitions import INTERNAL_TOPICS, UnknownTopicError

__all__ = ["handle_alter_configs", "handle_create_partitions", "handle_create_topics", "handle_delete_records",
           "handle_delete_topics", "handle_describe_configs", "handle_incremental_alter_configs",
           "handle_offset_for_leader_epoch", "topic_config_synonyms"]

logger = logging.getLogger(__name__)

_NO_THROTTLE: Final = datetime.timedelta(0)
#: ``ConfigResource.Type``.
TOPIC_RESOURCE: Final = 2
BROKER_RESOURCE: Final = 4
#: ``DescribeConfigsResponse.ConfigSource``.
DYNAMIC_TOPIC_CONFIG: Final = 1
STATIC_BROKER_CONFIG: Final = 4
DEFAULT_CONFIG: Final = 5
#: ``DescribeConfigsResponse.ConfigType`` by ConfigDef type.
_CONFIG_TYPES: Final = {"BOOLEAN": 1, "STRING": 2, "INT": 3, "SHORT": 4, "LONG": 5, "DOUBLE": 6, "LIST": 7}
#: ``IncrementalAlterConfigsRequest`` operations.
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def _replication_error(factor: int) -> tuple[ErrorCode, str] | None:
    if factor == -1 or factor == 1:
        return None
    if factor < 1:
        return ErrorCode.invalid_replication_factor, ("Replication factor must be larger than 0, or -1 to use the "
                                                      "default value.")
    return ErrorCode.invalid_replication_factor, (f"Unable to replicate the partition {factor} time(s): The target "
                                                  f"replication factor of {factor} cannot be reached because only 1 "
                                                  f"broker(s) are registered.")


#: The broker synonyms whose Kafka default is not the topic property's own default (``ServerLogConfigs``, 3.8.0):
#: ``None``, no default; else the default as Kafka's ``ConfigDef.convertToString`` writes it.  Every other first
#: synonym defaults to its topic property's default.
_BROKER_SYNONYM_DEFAULTS: Final[dict[str, str | None]] = {
    "log.roll.ms": None, "log.roll.hours": "168",
    "log.roll.jitter.ms": None, "log.roll.jitter.hours": "0",
    "log.retention.ms": None, "log.retention.minutes": None, "log.retention.hours": "168",
    "log.flush.interval.ms": None, "log.flush.scheduler.interval.ms": str(2**63 - 1),
}
_TOPIC_DEFAULTS: Final = LogConfig().to_props()


def _broker_default(topic_name: str, synonym: str) -> str | None:
    if synonym in _BROKER_SYNONYM_DEFAULTS:
        return _BROKER_SYNONYM_DEFAULTS[synonym]
    return _TOPIC_DEFAULTS.get(topic_name)


def _as_text(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def topic_config_synonyms(ctx: RequestContext, name: str, value: str | None,
                          overrides: dict[str, str]) -> list[tuple[str, str | None, int]]:
    """The synonyms of a topic's configuration ``name``, most preferred first, as ``(name, value, source)``; the
    first one's source is the configuration's (Kafka: ``ConfigHelper.createTopicConfigEntry`` and
    ``configSynonyms``, 3.8.0).

    The topic's override, if any (``DYNAMIC_TOPIC_CONFIG``); then each broker property that supplies the default
    (``ALL_SERVER_CONFIG_SYNONYMS``), first those set in the broker's configuration (``STATIC_BROKER_CONFIG``),
    then those with a default (``DEFAULT_CONFIG``), each group in order of preference, and the whole broker list cut
    to start at the first synonym's own entry: so ``retention.ms`` lists no broker synonym at all unless
    ``log.retention.ms`` itself is set, as Kafka's does.  kafkalog has no dynamic broker configurations, which Kafka
    lists before the static ones.
    """
    synonyms = [s.name for s in ALL_SERVER_CONFIG_SYNONYMS.get(name, ())]
    found: list[tuple[str, str | None, int]] = []
    if synonyms:
        given = ctx.broker.config.given()
        found += [(s, _as_text(given[s]), STATIC_BROKER_CONFIG) for s in synonyms if s in given]
        found += [(s, default, DEFAULT_CONFIG) for s in synonyms
                  if (default := _broker_default(name, s)) is not None]
        while found and found[0][0] != synonyms[0]:
            found.pop(0)
    if name in overrides:
        found.insert(0, (name, value, DYNAMIC_TOPIC_CONFIG))
    return found


def _config_source(ctx: RequestContext, name: str, value: str | None, overrides: dict[str, str]) -> int:
    found = topic_config_synonyms(ctx, name, value, overrides)
    return found[0][2] if found else DEFAULT_CONFIG


def _config_entries(ctx: RequestContext, name: str, overrides: dict[str, str], type_name: str) -> tuple[Any, ...]:
    entry_type = ctx.response_type(type_name)
    if entry_type is None:
        return ()
    config = ctx.broker.partitions.log(name, 0).config if ctx.broker.partitions.get(name) else None
    props = config.to_props() if config is not None else {}
    return tuple(build(entry_type, name=key, value=value, read_only=False,
                       config_source=_config_source(ctx, key, value, overrides), is_sensitive=False)
                 for key, value in sorted(props.items()))


async def handle_create_topics(ctx: RequestContext, request: Any) -> Any:
    registry = ctx.broker.partitions
    result_type = ctx.response_type("CreatableTopicResult")
    counts = Counter(t.name for t in request.topics)
    results = []
    for wanted in request.topics:
        code, message = ErrorCode.none, None
        topic_id = None
        partitions = wanted.num_partitions
        overrides = {c.name: c.value for c in wanted.configs}
        if counts[wanted.name] > 1:
            code, message = ErrorCode.invalid_request, "Duplicate topic name."
        elif (problem := _replication_error(wanted.replication_factor)) is not None:
            code, message = problem
        elif wanted.assignments and (wanted.num_partitions != -1 or wanted.replication_factor != -1):
            code, message = ErrorCode.invalid_request, ("A manual partition assignment was specified, but "
                                                        "numPartitions or replicationFactor was not set to -1.")
        elif any(list(a.broker_ids) != [ctx.broker.node_id] for a in wanted.assignments):
            code, message = ErrorCode.invalid_replica_assignment, (
                f"Only broker {ctx.broker.node_id} exists: every partition's replicas must be [{ctx.broker.node_id}].")
        elif any(v is None for v in overrides.values()):
            code, message = ErrorCode.invalid_config, "Null value not supported for topic configs: " + ",".join(
                k for k, v in overrides.items() if v is None)
        else:
            if wanted.assignments:
                partitions = len(wanted.assignments)
            elif partitions == -1:
                partitions = ctx.broker.config["num.partitions"]
            if partitions < 1:
                code, message = ErrorCode.invalid_partitions, ("Number of partitions was set to an invalid "
                                                               "non-positive value.")
            else:
                try:
                    if request.validate_only:
                        registry.validate_new_topic(wanted.name, partitions, overrides)
                    else:
                        topic_id = registry.create_topic(wanted.name, partitions, overrides).topic_id
                except (KafkaLogError, ConfigError) as e:
                    code, message = error_code_for(e), str(e)
        if code is not ErrorCode.none:
            results.append(build(result_type, name=wanted.name, topic_id=None, error_code=code, error_message=message,
                                 topic_config_error_code=0, num_partitions=-1, replication_factor=-1, configs=None))
            continue
        configs = _config_entries(ctx, wanted.name, overrides, "CreatableTopicConfigs") if not request.validate_only \
            else ()
        results.append(build(result_type, name=wanted.name, topic_id=topic_id, error_code=ErrorCode.none,
                             error_message=None, topic_config_error_code=0, num_partitions=partitions,
                             replication_factor=1, configs=configs))
    return ctx.response(throttle_time=_NO_THROTTLE, topics=tuple(results))


async def handle_delete_topics(ctx: RequestContext, request: Any) -> Any:
    registry = ctx.broker.partitions
    result_type = ctx.response_type("DeletableTopicResult")
    if not ctx.broker.config["delete.topic.enable"]:
        # before v3 Kafka throws InvalidRequestException, which answers every topic with INVALID_REQUEST
        code = ErrorCode.topic_deletion_disabled if ctx.api_version >= 3 else ErrorCode.invalid_request
        names = [getattr(t, "name", None) for t in getattr(request, "topics", ())] or list(request.topic_names)
        return ctx.response(throttle_time=_NO_THROTTLE, responses=tuple(
            build(result_type, name=n, topic_id=None, error_code=code, error_message=None) for n in names))
    if ctx.api_version >= 6:
        wanted = [(t.name, t.topic_id) for t in request.topics]
    else:
        wanted = [(n, None) for n in request.topic_names]
    counts = Counter(n for n, _ in wanted if n is not None)
    results = []
    for name, topic_id in wanted:
        code, message = ErrorCode.none, None
        topic = None
        if name is not None and topic_id is not None and topic_id.int:
            code, message = ErrorCode.invalid_request, "You may not specify both topic name and topic id."
        elif name is None and (topic_id is None or not topic_id.int):
            code, message = ErrorCode.invalid_request, "Neither topic name nor id were specified."
        elif name is not None and counts[name] > 1:
            code, message = ErrorCode.invalid_request, "Duplicate topic name."
        else:
            topic = registry.get(name) if name is not None else registry.by_id(topic_id)
            if topic is None:
                code = ErrorCode.unknown_topic_or_partition if name is not None else ErrorCode.unknown_topic_id
            elif topic.name in INTERNAL_TOPICS:
                code, message = ErrorCode.invalid_topic_exception, f"Cannot delete internal topic {topic.name}"
            else:
                registry.delete_topic(topic.name)
        results.append(build(result_type, name=topic.name if topic is not None else name,
                             topic_id=topic.topic_id if topic is not None else topic_id, error_code=code,
                             error_message=message))
    return ctx.response(throttle_time=_NO_THROTTLE, responses=tuple(results))


async def handle_create_partitions(ctx: RequestContext, request: Any) -> Any:
    registry = ctx.broker.partitions
    result_type = ctx.response_type("CreatePartitionsTopicResult")
    counts = Counter(t.name for t in request.topics)
    results = []
    for wanted in request.topics:
        code, message = ErrorCode.none, None
        topic = registry.get(wanted.name)
        if counts[wanted.name] > 1:
            code, message = ErrorCode.invalid_request, "Duplicate topic name."
        elif topic is None:
            code, message = ErrorCode.unknown_topic_or_partition, f"Topic '{wanted.name}' does not exist."
        elif wanted.count < len(topic.logs):
            code, message = ErrorCode.invalid_partitions, (f"The topic {wanted.name} currently has {len(topic.logs)} "
                                                           f"partition(s); {wanted.count} would not be an increase.")
        elif wanted.count == len(topic.logs):
            code, message = ErrorCode.invalid_partitions, f"Topic already has {wanted.count} partition(s)."
        elif wanted.assignments is not None and (
                len(wanted.assignments) != wanted.count - len(topic.logs)
                or any(list(a.broker_ids) != [ctx.broker.node_id] for a in wanted.assignments)):
            code, message = ErrorCode.invalid_replica_assignment, (
                f"Only broker {ctx.broker.node_id} exists: give one assignment [{ctx.broker.node_id}] per new "
                f"partition.")
        elif not request.validate_only:
            try:
                registry.add_partitions(wanted.name, wanted.count)
            except KafkaLogError as e:
                code, message = error_code_for(e), str(e)
        results.append(build(result_type, name=wanted.name, error_code=code, error_message=message))
    return ctx.response(throttle_time=_NO_THROTTLE, results=tuple(results))


def _broker_entries(ctx: RequestContext, entry_type: Any, keys: set[str] | None, synonym_type: Any) -> list[Any]:
    config = ctx.broker.config
    given = config.given()
    entries = []
    names = sorted(set(BROKER_PROPERTIES) | {n for n in given if n in ACCEPTED_WITHOUT_EFFECT})
    for name in names:
        if keys is not None and name not in keys:
            continue
        try:
            value = config[name]
        except KeyError:
            continue
        text = None if value is None else (str(value).lower() if isinstance(value, bool) else str(value))
        prop = BROKER_PROPERTIES.get(name)
        entries.append(build(entry_type, name=name, value=text, read_only=True,
                             config_source=STATIC_BROKER_CONFIG if name in given else DEFAULT_CONFIG,
                             is_default=name not in given, is_sensitive=False, synonyms=(),
                             config_type=_CONFIG_TYPES.get(prop.type_ if prop else "STRING", 0),
                             documentation=prop.doc if prop else None))
    return entries


async def handle_describe_configs(ctx: RequestContext, request: Any) -> Any:
    registry = ctx.broker.partitions
    result_type = ctx.response_type("DescribeConfigsResult")
    entry_type = ctx.response_type("DescribeConfigsResourceResult")
    synonym_type = ctx.response_type("DescribeConfigsSynonym")
    results = []
    for resource in request.resources:
        keys = None if resource.configuration_keys is None else set(resource.configuration_keys)
        code, message, entries = ErrorCode.none, None, []
        if resource.resource_type == TOPIC_RESOURCE:
            topic = registry.get(resource.resource_name)
            if topic is None:
                code, message = ErrorCode.unknown_topic_or_partition, (
                    f"Topic '{resource.resource_name}' does not exist.")
            else:
                props = topic.logs[0].config.to_props()
                for key, value in sorted(props.items()):
                    if keys is not None and key not in keys:
                        continue
                    found = topic_config_synonyms(ctx, key, value, topic.overrides)
                    source = found[0][2] if found else DEFAULT_CONFIG
                    synonyms: tuple[Any, ...] = ()
                    if getattr(request, "include_synonyms", False) and synonym_type is not None:
                        synonyms = tuple(build(synonym_type, name=n, value=v, source=src) for n, v, src in found)
                    entries.append(build(entry_type, name=key, value=value, read_only=False, config_source=source,
                                         is_default=source == DEFAULT_CONFIG, is_sensitive=False, synonyms=synonyms,
                                         config_type=_CONFIG_TYPES.get(LogConfig.config_type(key) or "", 0),
                                         documentation=None))
        elif resource.resource_type == BROKER_RESOURCE:
            if resource.resource_name not in ("", str(ctx.broker.node_id)):
                code, message = ErrorCode.invalid_request, f"Unknown broker {resource.resource_name}"
            else:
                entries = _broker_entries(ctx, entry_type, keys, synonym_type)
        else:
            code, message = ErrorCode.invalid_request, f"Unsupported resource type {resource.resource_type}"
        results.append(build(result_type, error_code=code, error_message=message,
                             resource_type=resource.resource_type, resource_name=resource.resource_name,
                             configs=tuple(entries)))
    return ctx.response(throttle_time=_NO_THROTTLE, results=tuple(results))


def _alter(ctx: RequestContext, request: Any, incremental: bool) -> Any:
    registry = ctx.broker.partitions
    result_type = ctx.response_type("AlterConfigsResourceResponse")
    results = []
    for resource in request.resources:
        code, message = ErrorCode.none, None
        if resource.resource_type != TOPIC_RESOURCE:
            code, message = ErrorCode.invalid_request, ("kafkalog's broker takes its own configuration at start; only "
                                                        "topic configurations can be changed")
        else:
            topic = registry.get(resource.resource_name)
            if topic is None:
                code, message = ErrorCode.unknown_topic_or_partition, (
                    f"Topic '{resource.resource_name}' does not exist.")
            else:
                try:
                    overrides = _new_overrides(topic.overrides, resource.configs, incremental)
                    LogConfig.from_props(registry.topic_defaults.to_props(), overrides)
                    if not request.validate_only:
                        registry.set_overrides(topic.name, overrides)
                except (ConfigError, KafkaLogError) as e:
                    code, message = ErrorCode.invalid_config, str(e)
        results.append(build(result_type, error_code=code, error_message=message,
                             resource_type=resource.resource_type, resource_name=resource.resource_name))
    return ctx.response(throttle_time=_NO_THROTTLE, responses=tuple(results))


def _default_text(name: str) -> str:
    """A topic property's ``ConfigDef`` default as its string (Kafka: ``KafkaConfigSchema.getDefault``, which is
    ``ConfigDef.convertToString`` of the default: a list joined with commas), ``""`` for none."""
    value = DEFAULTS.get(name)
    if value is None:
        return ""
    if isinstance(value, (tuple, list)):
        return ",".join(str(v) for v in value)
    return str(value)


def _new_overrides(current: dict[str, str], changes: Any, incremental: bool) -> dict[str, str]:
    """The overrides after ``changes`` (Kafka: ``ConfigurationControlManager.incrementalAlterConfig`` /
    ``legacyAlterConfig``: a legacy alter replaces them all).

    APPEND and SUBTRACT work on the topic's current value: its override, or without one the property's default
    (Kafka's ``getParts``), not the broker's ``log.*`` setting: the controller resolves a list against the topic
    schema's default, as here."""
    names = [c.name for c in changes]
    if len(names) != len(set(names)):
        raise ConfigError("Error due to duplicate config keys")
    if not incremental:
        result = {}
        for change in changes:
            if change.value is None:
                raise ConfigError(f"Null value not supported for : {change.name}", name=change.name)
            result[change.name] = change.value
        LogConfig.validate_names(result)
        return result
    result = dict(current)
    for change in changes:
        LogConfig.validate_names({change.name: ""})
        op = change.config_operation
        if op == SET:
            if change.value is None:
                raise ConfigError(f"Null value not supported for : {change.name}", name=change.name)
            result[change.name] = change.value
        elif op == DELETE:
            result.pop(change.name, None)
        elif op in (APPEND, SUBTRACT):
            if LogConfig.config_type(change.name) != "LIST":
                raise ConfigError(f"Config value append is not allowed for config key: {change.name}",
                                  name=change.name)
            # no override yet: the list starts from the property's default, as Kafka's getParts does (APPEND of
            # compact to a topic without a cleanup.policy of its own gives "delete,compact", not "compact")
            start = result[change.name] if change.name in result else _default_text(change.name)
            items = [x for x in start.split(",") if x]
            given = [x.strip() for x in (change.value or "").split(",") if x.strip()]
            if op == APPEND:
                items += [x for x in given if x not in items]
            else:
                items = [x for x in items if x not in given]
            result[change.name] = ",".join(items)
        else:
            raise ConfigError(f"Unknown alter config operation {op}", name=change.name)
    return result


async def handle_incremental_alter_configs(ctx: RequestContext, request: Any) -> Any:
    return _alter(ctx, request, incremental=True)


async def handle_alter_configs(ctx: RequestContext, request: Any) -> Any:
    return _alter(ctx, request, incremental=False)


async def handle_delete_records(ctx: RequestContext, request: Any) -> Any:
    registry = ctx.broker.partitions
    partition_type = ctx.response_type("DeleteRecordsPartitionResult")
    topics = []
    for wanted_topic in request.topics:
        answers = []
        for wanted in wanted_topic.partitions:
            code, low = ErrorCode.none, -1
            try:
                log = registry.log(wanted_topic.name, wanted.partition_index)
                offset = log.high_watermark if wanted.offset == -1 else wanted.offset
                if offset < 0:
                    raise OffsetOutOfRangeError(f"The offset {offset} for partition {log.topic_partition} is not "
                                                f"valid")
                log.maybe_increment_log_start_offset(offset)
                low = log.log_start_offset
            except UnknownTopicError:
                code = ErrorCode.unknown_topic_or_partition
            except KafkaLogError as e:
                code = error_code_for(e)
            answers.append(build(partition_type, partition_index=wanted.partition_index, low_watermark=low,
                                 error_code=code))
        topics.append(build(ctx.response_type("DeleteRecordsTopicResult"), name=wanted_topic.name,
                            partitions=tuple(answers)))
    return ctx.response(throttle_time=_NO_THROTTLE, topics=tuple(topics))


async def handle_offset_for_leader_epoch(ctx: RequestContext, request: Any) -> Any:
    registry = ctx.broker.partitions
    entry_type = ctx.response_type("EpochEndOffset")
    topics = []
    for wanted_topic in request.topics:
        answers = []
        for wanted in wanted_topic.partitions:
            code, epoch, end = ErrorCode.none, -1, -1
            try:
                log = registry.log(wanted_topic.topic, wanted.partition)
                code = epoch_error(getattr(wanted, "current_leader_epoch", -1), log)
                if code is ErrorCode.none:
                    found = log.end_offset_for_epoch(wanted.leader_epoch)
                    if found is not None:
                        epoch, end = found.leader_epoch, found.offset
            except UnknownTopicError:
                code = ErrorCode.unknown_topic_or_partition
            except (KafkaLogError, InvalidTopicError) as e:
                code = error_code_for(e)
            answers.append(build(entry_type, error_code=code, partition=wanted.partition, leader_epoch=epoch,
                                 end_offset=end))
        topics.append(build(ctx.response_type("OffsetForLeaderTopicResult"), topic=wanted_topic.topic,
                            partitions=tuple(answers)))
    return ctx.response(throttle_time=_NO_THROTTLE, topics=tuple(topics))


"""LogManagerConfigs: the topic configs of a :class:`~kafkalog.manager.log_manager.LogManager` - the broker's defaults,
each topic's overrides, and how a change reaches the live logs.

Port of the config methods of ``core/src/main/scala/kafka/log/LogManager.scala`` (Apache Kafka, tag 3.8.0):
``currentDefaultConfig``, ``reconfigureDefaultLogConfig``, ``updateTopicConfig``, ``fetchLogConfig``
(``fetchTopicConfigOverrides``), and the bookkeeping of partitions whose log is being created while a config
changes (``initializingLog``, ``topicConfigUpdated``, ``brokerConfigUpdated``, ``finishedInitializingLog``,
KAFKA-8813).  A broker reads topic overrides from its ``ConfigRepository`` (ZooKeeper or the KRaft metadata
log); a library has none, so the manager is its own repository: ``topic_configs`` given to the constructor,
changed with :meth:`~LogManagerConfigs.update_topic_config`.

A mixin of :class:`~kafkalog.manager.log_manager.LogManager`: the methods are the manager's own
(``manager.update_topic_config(...)``), kept in their own file as one concern; :class:`_ConfiguredManager`
names what they use of the manager.  Invariant: a log's config is always the current defaults with its
topic's overrides laid over them (or the whole :class:`~kafkalog.config.log_config.LogConfig` given for the topic).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from ..config.log_config import LogConfig
from ..topic import TopicPartition, validate_topic

if TYPE_CHECKING:
    from ..log import Log

__all__ = ["LogManagerConfigs"]


class _ConfiguredManager(Protocol):
    """What the config methods use of their manager (:class:`~kafkalog.manager.log_manager.LogManager`)."""

    _lock: threading.RLock
    _current_default_config: LogConfig
    _topic_overrides: dict[str, LogConfig | Mapping[str, Any]]
    partitions_initializing: dict[TopicPartition, bool]

    @property
    def current_default_config(self) -> LogConfig: ...
    def _topic_config_overrides(self, topic: str) -> LogConfig | Mapping[str, Any]: ...
    def _fetch_log_config(self, topic: str) -> LogConfig: ...
    def config_for(self, topic: str) -> LogConfig: ...
    def topic_config_updated(self, topic: str) -> None: ...
    def broker_config_updated(self) -> None: ...
    def all_logs(self) -> list[Log]: ...
    def logs_by_topic(self, topic: str) -> list[Log]: ...
    def abort_cleaning(self, topic_partition: TopicPartition) -> None: ...


class LogManagerConfigs:
    """The config methods of :class:`~kafkalog.manager.log_manager.LogManager` (a mixin; see the module docstring)."""

    @property
    def current_default_config(self: _ConfiguredManager) -> LogConfig:
        """The broker's topic defaults (Kafka: ``currentDefaultConfig``)."""
        return self._current_default_config

    @property
    def default_config(self: _ConfiguredManager) -> LogConfig:
        """Alias of :attr:`current_default_config`."""
        return self._current_default_config

    @property
    def topic_configs(self: _ConfiguredManager) -> dict[str, LogConfig]:
        """The configuration of every topic that has overrides."""
        return {topic: self.config_for(topic) for topic in self._topic_overrides}

    def _topic_config_overrides(self: _ConfiguredManager, topic: str) -> LogConfig | Mapping[str, Any]:
        """The overrides stored for ``topic``, empty when it has none (Kafka:
        ``ConfigRepository.topicConfig``)."""
        return self._topic_overrides.get(topic, {})

    def _fetch_log_config(self: _ConfiguredManager, topic: str) -> LogConfig:
        """The defaults with ``topic``'s overrides laid over them (Kafka: ``fetchLogConfig`` /
        ``fetchTopicConfigOverrides``).  A topic given a whole :class:`LogConfig` gets that config."""
        default = self._current_default_config
        overrides = self._topic_config_overrides(topic)
        if isinstance(overrides, LogConfig):
            return overrides
        if not overrides:
            return default
        return LogConfig.from_props(default.to_props(), overrides)

    def config_for(self: _ConfiguredManager, topic: str) -> LogConfig:
        """The configuration a log of ``topic`` gets: its overrides on the defaults."""
        return self._fetch_log_config(topic)

    def reconfigure_default_log_config(self: _ConfiguredManager, log_config: LogConfig) -> None:
        """Make ``log_config`` the broker's topic defaults (Kafka: ``reconfigureDefaultLogConfig``), and give
        every log the new defaults under its own overrides, marking the logs being created for a reload
        (what the broker does right after, in ``DynamicLogConfig.reconfigure``/``updateLogsConfig``:
        a library has no dynamic broker config to do it)."""
        self._current_default_config = log_config
        self.broker_config_updated()
        defaults = log_config.to_props()
        for log in self.all_logs():
            overridden = {name: value for name, value in log.config.to_props().items()
                          if name in log.config.overridden_configs}
            log.update_config(LogConfig.from_props(defaults, overridden))

    def update_topic_config(self: _ConfiguredManager, topic: str, new_topic_config: Mapping[str, Any],
                            is_remote_log_storage_system_enabled: bool = False) -> None:
        """Replace ``topic``'s overrides by ``new_topic_config`` and apply them to its live logs (Kafka:
        ``updateTopicConfig``): the partitions of the topic being created are marked for a reload, each
        log gets the defaults with the new overrides, and cleaning is aborted where ``compact`` went away.
        An empty mapping removes the overrides.

        The change is checked first, as a broker checks one before storing it (``LogConfig.validate`` over the
        defaults, with the tiered-storage checks); Kafka's ``updateTopicConfig`` then checks again that a
        stored config does not ask for remote storage the broker has lost.

        Raises:
            ConfigError: a property is unknown or a value invalid (nothing is changed), or the topic asks for
                remote storage that ``is_remote_log_storage_system_enabled`` says the broker does not have.
            InvalidTopicError: ``topic`` is not a legal topic name.
        """
        validate_topic(topic)
        # What the broker checks before it stores a change (ConfigAdminManager: LogConfig.validate).
        LogConfig.validate(new_topic_config, self._current_default_config.to_props(),
                           is_remote_log_storage_system_enabled)
        new_log_config = LogConfig.from_props(self._current_default_config.to_props(), new_topic_config)
        # Validated whether or not the topic has logs here (Kafka: a tiered topic must not outlive the
        # broker-wide switch).
        LogConfig.validate_remote_storage_only_if_system_enabled(
            new_log_config.values(), is_remote_log_storage_system_enabled, True)
        # Kafka's caller has stored the new overrides in its config repository before this; here the manager
        # is the repository.
        with self._lock:
            if new_topic_config:
                self._topic_overrides[topic] = dict(new_topic_config)
            else:
                self._topic_overrides.pop(topic, None)
        self.topic_config_updated(topic)
        for log in self.logs_by_topic(topic):
            old_log_config = log.update_config(new_log_config)
            if old_log_config.compact and not new_log_config.compact:
                self.abort_cleaning(log.topic_partition)

    def initializing_log(self: _ConfiguredManager, topic_partition: TopicPartition) -> None:
        """Say that the log of ``topic_partition`` is being created (Kafka: ``initializingLog``); to be
        followed by :meth:`finished_initializing_log`.  :meth:`create_log` does both."""
        with self._lock:
            self.partitions_initializing[topic_partition] = False

    def topic_config_updated(self: _ConfiguredManager, topic: str) -> None:
        """Mark the partitions of ``topic`` being created for a config reload (Kafka: ``topicConfigUpdated``)."""
        with self._lock:
            for tp in self.partitions_initializing:
                if tp.topic == topic:
                    self.partitions_initializing[tp] = True

    def broker_config_updated(self: _ConfiguredManager) -> None:
        """Mark every partition being created for a config reload (Kafka: ``brokerConfigUpdated``)."""
        with self._lock:
            for tp in self.partitions_initializing:
                self.partitions_initializing[tp] = True

    def finished_initializing_log(self: _ConfiguredManager, topic_partition: TopicPartition,
                                  maybe_log: Log | None) -> None:
        """Say that the log of ``topic_partition`` is created (or failed to be, ``None``); if its config
        changed meanwhile, fetch it again and apply it (Kafka: ``finishedInitializingLog``, KAFKA-8813)."""
        with self._lock:
            changed = self.partitions_initializing.pop(topic_partition, None)
        if changed and maybe_log is not None:
            maybe_log.update_config(self._fetch_log_config(topic_partition.topic))

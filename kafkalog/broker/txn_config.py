"""The transaction coordinator's broker properties, with Kafka 3.8.0's names, defaults and validators.

Port of the transaction properties of ``core/src/main/scala/kafka/server/KafkaConfig.scala`` (their ``define``
lines), named and defaulted by ``transaction-coordinator/src/main/java/org/apache/kafka/coordinator/transaction/``
``TransactionLogConfigs.java`` and ``TransactionStateManagerConfigs.java``, and of the object Kafka builds of them,
``TransactionConfig`` (``TransactionStateManager.scala``):

===============================================================  =====  =========  ==========
property                                                         type   default    validator
===============================================================  =====  =========  ==========
``transactional.id.expiration.ms``                               INT    604800000  at least 1
``transaction.max.timeout.ms``                                   INT    900000     at least 1
``transaction.state.log.num.partitions``                         INT    50         at least 1
``transaction.state.log.replication.factor``                     SHORT  3          at least 1
``transaction.state.log.segment.bytes``                          INT    104857600  at least 1
``transaction.state.log.load.buffer.size``                       INT    5242880    at least 1
``transaction.state.log.min.isr``                                INT    2          at least 1
``transaction.abort.timed.out.transaction.cleanup.interval.ms``  INT    10000      at least 1
``transaction.remove.expired.transaction.cleanup.interval.ms``   INT    3600000    at least 1
``request.timeout.ms``                                           INT    30000      at least 0
===============================================================  =====  =========  ==========

The replication factor and the minimum in-sync replicas are kept for a configuration written for a real broker
(``min.insync.replicas`` is one of the topic configs ``__transaction_state`` is created with), but a single node
waits for no replica.  A name that is not one of these is left to the rest of the broker's configuration.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..config.config_def import ConfigError, Validator, at_least, parse_type

__all__ = ["TransactionCoordinatorConfig"]

#: name -> (attribute, ConfigDef type, default, validator)
_PROPERTIES: dict[str, tuple[str, str, int, Validator | None]] = {
    "transactional.id.expiration.ms": ("transactional_id_expiration_ms", "INT", 7 * 24 * 3600 * 1000, at_least(1)),
    "transaction.max.timeout.ms": ("transaction_max_timeout_ms", "INT", 15 * 60 * 1000, at_least(1)),
    "transaction.state.log.num.partitions": ("transaction_state_log_num_partitions", "INT", 50, at_least(1)),
    "transaction.state.log.replication.factor": ("transaction_state_log_replication_factor", "SHORT", 3,
                                                 at_least(1)),
    "transaction.state.log.segment.bytes": ("transaction_state_log_segment_bytes", "INT", 100 * 1024 * 1024,
                                            at_least(1)),
    "transaction.state.log.load.buffer.size": ("transaction_state_log_load_buffer_size", "INT", 5 * 1024 * 1024,
                                               at_least(1)),
    "transaction.state.log.min.isr": ("transaction_state_log_min_isr", "INT", 2, at_least(1)),
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": (
        "transaction_abort_timed_out_transaction_cleanup_interval_ms", "INT", 10_000, at_least(1)),
    "transaction.remove.expired.transaction.cleanup.interval.ms": (
        "transaction_remove_expired_transaction_cleanup_interval_ms", "INT", 3_600_000, at_least(1)),
    "request.timeout.ms": ("request_timeout_ms", "INT", 30_000, at_least(0)),
}

_RANGES = {"SHORT": (-(2**15), 2**15 - 1), "INT": (-(2**31), 2**31 - 1)}


@dataclass(frozen=True)
class TransactionCoordinatorConfig:
    """The transaction coordinator's configuration (Kafka: ``TransactionConfig``); the attributes are the property
    names in snake_case, the defaults Kafka 3.8's (module docstring)."""

    transactional_id_expiration_ms: int = 7 * 24 * 3600 * 1000
    transaction_max_timeout_ms: int = 15 * 60 * 1000
    transaction_state_log_num_partitions: int = 50
    transaction_state_log_replication_factor: int = 3
    transaction_state_log_segment_bytes: int = 100 * 1024 * 1024
    transaction_state_log_load_buffer_size: int = 5 * 1024 * 1024
    transaction_state_log_min_isr: int = 2
    transaction_abort_timed_out_transaction_cleanup_interval_ms: int = 10_000
    transaction_remove_expired_transaction_cleanup_interval_ms: int = 3_600_000
    request_timeout_ms: int = 30_000

    def __post_init__(self) -> None:
        for name, (attribute, type_, _default, validator) in _PROPERTIES.items():
            value = getattr(self, attribute)
            if not isinstance(value, int) or isinstance(value, bool):
                raise ConfigError.invalid(name, value, f"Expected value to be a {type_.lower()}, but it was a "
                                                       f"{type(value).__name__}")
            low, high = _RANGES[type_]
            if not low <= value <= high:
                raise ConfigError.invalid(name, value, f"Value does not fit a Java {type_.lower()}")
            if validator is not None:
                validator(name, value)

    @classmethod
    def from_properties(cls, properties: Mapping[str, str]) -> TransactionCoordinatorConfig:
        """The configuration of a broker's properties (Kafka name -> value); names that are not the transaction
        coordinator's are left to the rest of the broker.

        Raises:
            ConfigError: a value of the wrong type or out of range (Kafka's ``ConfigException`` messages).
        """
        values: dict[str, int] = {}
        for name, (attribute, type_, _default, _validator) in _PROPERTIES.items():
            if name not in properties:
                continue
            raw = properties[name]
            parsed = parse_type(name, raw, "INT")
            assert isinstance(parsed, int)
            if type_ == "SHORT" and not _RANGES["SHORT"][0] <= parsed <= _RANGES["SHORT"][1]:
                raise ConfigError.invalid(name, raw, "Value does not fit a Java short")
            values[attribute] = parsed
        return cls(**values)

    def transaction_topic_configs(self) -> dict[str, str]:
        """Kafka: ``TransactionStateManager.transactionTopicConfigs``: the topic configs ``__transaction_state`` is
        created with."""
        return {"unclean.leader.election.enable": "false", "compression.type": "uncompressed",
                "cleanup.policy": "compact", "min.insync.replicas": str(self.transaction_state_log_min_isr),
                "segment.bytes": str(self.transaction_state_log_segment_bytes)}

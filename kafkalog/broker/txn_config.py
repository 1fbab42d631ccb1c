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

from dataclasses import dataclass

from ..config.config_def import at_least
from .coordinator_config import CoordinatorConfig, broker_property

__all__ = ["TransactionCoordinatorConfig"]


@dataclass(frozen=True)
class TransactionCoordinatorConfig(CoordinatorConfig):
    """The transaction coordinator's configuration (Kafka: ``TransactionConfig``); the attributes are the property
    names in snake_case, the defaults Kafka 3.8's (module docstring).  Checked when made, and read from a broker's
    properties by :meth:`~kafkalog.broker.coordinator_config.CoordinatorConfig.from_properties`."""

    transactional_id_expiration_ms: int = broker_property(
        "transactional.id.expiration.ms", "INT", 7 * 24 * 3600 * 1000, at_least(1),
        doc="how long an idle transactional id lives")
    transaction_max_timeout_ms: int = broker_property("transaction.max.timeout.ms", "INT", 15 * 60 * 1000, at_least(1),
                                                      doc="the longest transaction timeout")
    transaction_state_log_num_partitions: int = broker_property(
        "transaction.state.log.num.partitions", "INT", 50, at_least(1), doc="partitions of __transaction_state")
    transaction_state_log_replication_factor: int = broker_property(
        "transaction.state.log.replication.factor", "SHORT", 3, at_least(1),
        doc="replicas of __transaction_state (one node: kept, not acted on)")
    transaction_state_log_segment_bytes: int = broker_property(
        "transaction.state.log.segment.bytes", "INT", 100 * 1024 * 1024, at_least(1),
        doc="segment size of __transaction_state")
    transaction_state_log_load_buffer_size: int = broker_property(
        "transaction.state.log.load.buffer.size", "INT", 5 * 1024 * 1024, at_least(1),
        doc="read size when loading __transaction_state")
    transaction_state_log_min_isr: int = broker_property("transaction.state.log.min.isr", "INT", 2, at_least(1),
                                                         doc="min.insync.replicas of __transaction_state")
    transaction_abort_timed_out_transaction_cleanup_interval_ms: int = broker_property(
        "transaction.abort.timed.out.transaction.cleanup.interval.ms", "INT", 10_000, at_least(1),
        doc="how often timed-out transactions are aborted")
    transaction_remove_expired_transaction_cleanup_interval_ms: int = broker_property(
        "transaction.remove.expired.transaction.cleanup.interval.ms", "INT", 3_600_000, at_least(1),
        doc="how often expired transactional ids are removed")
    request_timeout_ms: int = broker_property("request.timeout.ms", "INT", 30_000, at_least(0),
                                              doc="how long the coordinator waits on a write of its own")

    def transaction_topic_configs(self) -> dict[str, str]:
        """Kafka: ``TransactionStateManager.transactionTopicConfigs``: the topic configs ``__transaction_state`` is
        created with."""
        return {"unclean.leader.election.enable": "false", "compression.type": "uncompressed",
                "cleanup.policy": "compact", "min.insync.replicas": str(self.transaction_state_log_min_isr),
                "segment.bytes": str(self.transaction_state_log_segment_bytes)}

"""kafkalog as a broker: Kafka's wire protocol in front of kafkalog's logs, for real clients on 127.0.0.1.

A single-node, Kafka-compatible broker in Python (``kafkalog serve``, :func:`serve`, and the pytest fixture of
:mod:`kafkalog.pytest_plugin`) whose data directories are real Kafka log dirs.  The modules, from the wire in:

- :mod:`~kafkalog.broker.codec`, :mod:`~kafkalog.broker.wire_writer` and :mod:`~kafkalog.broker.protocol`: frames,
  headers, and kio's message types read with Kafka's bounds and written by generated writers;
- :mod:`~kafkalog.broker.server`: the listener, connections, and the dispatch of API keys to handlers;
  :mod:`~kafkalog.broker.error_responses`: the answer to a request whose handler failed;
- the handlers: :mod:`~kafkalog.broker.metadata`, :mod:`~kafkalog.broker.produce`, :mod:`~kafkalog.broker.fetch`,
  :mod:`~kafkalog.broker.admin`, :mod:`~kafkalog.broker.replicas`, :mod:`~kafkalog.broker.log_dir_moves` (partitions
  moved between log dirs);
- the coordinators: the classic group coordinator (:mod:`~kafkalog.broker.group_coordinator` and the ``group_*``
  modules, offsets in ``__consumer_offsets``) and the transaction coordinator
  (:mod:`~kafkalog.broker.txn_coordinator` and the ``txn_*`` modules, state in ``__transaction_state``), wired to
  the dispatch by :mod:`~kafkalog.broker.group_apis` and :mod:`~kafkalog.broker.txn_apis`; producer ids from
  :mod:`~kafkalog.broker.producer_ids`;
- the storage behind them: :mod:`~kafkalog.broker.partitions` (topics over a LogManager),
  :mod:`~kafkalog.broker.metadata_log` (topics and their configurations in ``__cluster_metadata-0``) and
  :mod:`~kafkalog.broker.data_dirs` (``meta.properties``);
- :mod:`~kafkalog.broker.config`: Kafka's broker properties;
- :mod:`~kafkalog.broker.running`: a broker on a thread of its own.

It needs the ``broker`` extra (``pip install kafkalog[broker]``: kio, the protocol's message types).
"""

from __future__ import annotations

from .config import BrokerConfig
from .running import RunningBroker, serve, start
from .server import Broker

__all__ = ["Broker", "BrokerConfig", "RunningBroker", "serve", "start"]

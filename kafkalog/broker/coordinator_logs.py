"""The storage both coordinators write through (Kafka: the ``ReplicaManager`` calls of ``GroupMetadataManager`` and
``TransactionStateManager``: create the internal topic, find a partition's log, append as the coordinator).

The group coordinator keeps its state in ``__consumer_offsets`` and the transaction coordinator in
``__transaction_state``; neither owns a log.  The broker's :class:`~kafkalog.broker.partitions.PartitionRegistry`
implements this protocol over its ``LogManager``; the tests implement it over a bare one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ..log.append_info import LogAppendInfo
    from ..log.unified_log import Log
    from ..record import MemoryRecords

__all__ = ["CoordinatorLogs"]


class CoordinatorLogs(Protocol):
    """The storage a coordinator writes through; the broker implements it over its ``LogManager``."""

    def ensure_internal_topic(self, name: str, partitions: int, configs: Mapping[str, str]) -> None:
        """Create the topic's logs if absent, with ``configs`` (``cleanup.policy=compact`` ...); idempotent."""
        ...

    def log(self, name: str, partition: int) -> Log:
        """The :class:`kafkalog.log.Log` of that partition."""
        ...

    def append_as_coordinator(self, name: str, partition: int, records: MemoryRecords) -> LogAppendInfo:
        """``Log.append(records, origin="coordinator")``, then the high watermark moves to the log end."""
        ...

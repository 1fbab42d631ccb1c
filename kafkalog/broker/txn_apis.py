"""The transaction APIs wired to the transaction coordinator, and the coordinators wired to each other.

InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, DescribeTransactions and ListTransactions go to
:class:`~kafkalog.broker.txn_coordinator.TransactionCoordinator` (Kafka: ``KafkaApis`` hands them to its
``TransactionCoordinator``); TxnOffsetCommit goes to the group coordinator, which keeps a transaction's offsets
pending until its marker (:meth:`~kafkalog.broker.group_coordinator.GroupCoordinator.txn_offset_commit`).  The
markers the transaction coordinator writes to ``__consumer_offsets`` are told to the group coordinator
(:class:`GroupCompletion`, Kafka's ``GroupCoordinator.onTransactionCompleted``), which then commits or drops those
offsets.

The versions are the clients' (Kafka 3.8's ranges): EndTxn v5 and TxnOffsetCommit v5 (KIP-890's second part, in
Kafka 4) and AddPartitionsToTxn's broker-to-broker versions are left out.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final

from .context import RequestContext as BrokerRequestContext
from .group_apis import group_context
from .group_coordinator import GroupCoordinator
from .protocol import ApiKey, kio_versions
from .txn_coordinator import TransactionCoordinator

__all__ = ["TRANSACTION_APIS", "GroupCompletion", "find_coordinator_handler", "transaction_handlers"]

#: API key -> (lowest, highest version, the transaction coordinator's method).
TRANSACTION_APIS: Final = {
    ApiKey.INIT_PRODUCER_ID: (0, 5, "init_producer_id"),
    ApiKey.ADD_PARTITIONS_TO_TXN: (0, 3, "add_partitions_to_txn"),
    ApiKey.ADD_OFFSETS_TO_TXN: (0, 4, "add_offsets_to_txn"),
    ApiKey.END_TXN: (0, 4, "end_txn"),
    ApiKey.DESCRIBE_TRANSACTIONS: (0, 0, "describe_transactions"),
    ApiKey.LIST_TRANSACTIONS: (0, 1, "list_transactions"),
}
#: TxnOffsetCommit's versions (the group coordinator answers it).
TXN_OFFSET_COMMIT_VERSIONS: Final = (0, 4)


class GroupCompletion:
    """Tells the group coordinator of each transaction marker written to a ``__consumer_offsets`` partition."""

    def __init__(self, groups: GroupCoordinator) -> None:
        self._groups = groups

    def on_transaction_completed(self, topic: str, partition: int, producer_id: int, committed: bool) -> None:
        self._groups.schedule_handle_txn_completion(producer_id, [partition], committed)


def transaction_handlers(transactions: TransactionCoordinator, groups: GroupCoordinator
                         ) -> dict[int, tuple[int, int, Callable[..., Awaitable[Any]]]]:
    """API key -> (lowest, highest version, handler) for the transaction APIs and TxnOffsetCommit."""
    handlers: dict[int, tuple[int, int, Callable[..., Awaitable[Any]]]] = {}
    for api_key, (lo, hi, method_name) in TRANSACTION_APIS.items():
        method = getattr(transactions, method_name)

        def handler(ctx: BrokerRequestContext, request: Any, method: Any = method) -> Awaitable[Any]:
            return method(group_context(ctx), request)  # type: ignore[no-any-return]
        handlers[api_key] = (lo, hi, handler)

    def txn_offset_commit(ctx: BrokerRequestContext, request: Any) -> Awaitable[Any]:
        return groups.txn_offset_commit(group_context(ctx), request)
    handlers[ApiKey.TXN_OFFSET_COMMIT] = (*TXN_OFFSET_COMMIT_VERSIONS, txn_offset_commit)
    return handlers


#: FindCoordinator's key types (``CoordinatorType``).
GROUP_KEY_TYPE: Final = 0
TRANSACTION_KEY_TYPE: Final = 1


def find_coordinator_handler(groups: GroupCoordinator, transactions: TransactionCoordinator
                             ) -> tuple[int, int, Callable[..., Awaitable[Any]]]:
    """FindCoordinator, answered by the group coordinator once the internal topic its keys live in exists (Kafka:
    ``KafkaApis.getCoordinator`` asks the auto-topic-creation manager to create ``__consumer_offsets`` or
    ``__transaction_state`` the first time a coordinator is looked for; here it is created and loaded before the
    answer, where Kafka answers ``COORDINATOR_NOT_AVAILABLE`` until its controller has made it)."""
    async def find_coordinator(ctx: BrokerRequestContext, request: Any) -> Any:
        key_type = getattr(request, "key_type", GROUP_KEY_TYPE)
        if key_type == GROUP_KEY_TYPE:
            await groups.ensure_topic()
        elif key_type == TRANSACTION_KEY_TYPE:
            await transactions.ensure_topic()
        return await groups.find_coordinator(group_context(ctx), request)
    lo, hi = kio_versions(ApiKey.FIND_COORDINATOR)  # type: ignore[misc]
    return lo, hi, find_coordinator

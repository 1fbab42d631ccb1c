"""Kafka's delayed operations and their purgatory, on asyncio timers, for the group coordinator.

Port of ``server-common/.../DelayedOperation`` and ``DelayedOperationPurgatory`` as the classic coordinator uses
them (``core/src/main/scala/kafka/server/DelayedOperation.scala``, tag 3.8.0), and of
``core/src/main/scala/kafka/coordinator/group/DelayedHeartbeat.scala``, ``DelayedJoin.scala`` (with
``InitialDelayedJoin``), ``DelayedSync.scala`` and ``DelayedRebalance.scala``.

An operation completes once: when a check (``check_and_complete`` on one of its keys, or the check made when it
is watched) finds ``try_complete`` true, or when its timeout fires.  Completing runs ``on_complete``; a timeout
then runs ``on_expiration`` too.  Kafka's purgatory guards each operation with the group's lock and a timing
wheel on its own thread; kafkalog's broker has one event loop, so an operation's callbacks run on it, between
requests, and the lock has nothing left to guard.  The timers come from a :class:`Timer` (the loop's
``call_later`` by default; tests give a clock they move by hand).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Hashable, Iterable
from typing import Protocol

from .group_metadata import GroupMetadata

__all__ = ["DelayedHeartbeat", "DelayedJoin", "DelayedOperation", "DelayedOperationPurgatory", "DelayedSync",
           "GroupCallbacks", "InitialDelayedJoin", "LoopTimer", "Timer", "TimerHandle", "group_join_key",
           "group_sync_key", "member_key"]


class TimerHandle(Protocol):
    def cancel(self) -> None: ...


class Timer(Protocol):
    """The coordinator's clock and timers (Kafka: ``Time`` and the purgatory's ``Timer``)."""

    def time_ms(self) -> int:
        """Milliseconds since the epoch (Kafka: ``time.milliseconds()``)."""
        ...

    def call_later(self, delay_ms: int, callback: Callable[[], None]) -> TimerHandle:
        """Run ``callback`` on the coordinator's loop ``delay_ms`` from now."""
        ...


class LoopTimer:
    """The wall clock and the running event loop's ``call_later``."""

    def time_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def call_later(self, delay_ms: int, callback: Callable[[], None]) -> TimerHandle:
        return asyncio.get_running_loop().call_later(max(delay_ms, 0) / 1000, callback)


class DelayedOperation:
    """Kafka: ``DelayedOperation``: subclasses give ``try_complete``, ``on_complete`` and ``on_expiration``."""

    def __init__(self, delay_ms: int) -> None:
        self.delay_ms = delay_ms
        self._completed = False
        self._timer: TimerHandle | None = None

    @property
    def is_completed(self) -> bool:
        return self._completed

    def force_complete(self) -> bool:
        """Kafka: ``forceComplete``: complete now, once; ``False`` when already completed."""
        if self._completed:
            return False
        self._completed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self.on_complete()
        return True

    def try_complete(self) -> bool:
        raise NotImplementedError

    def on_complete(self) -> None:
        raise NotImplementedError

    def on_expiration(self) -> None:
        raise NotImplementedError

    def _expire(self) -> None:
        self._timer = None
        if self.force_complete():
            self.on_expiration()


class DelayedOperationPurgatory:
    """Kafka: ``DelayedOperationPurgatory``: operations watched under keys, checked when a key changes, expired
    by timers."""

    def __init__(self, name: str, timer: Timer) -> None:
        self.name = name
        self._timer = timer
        self._watchers: dict[Hashable, list[DelayedOperation]] = {}

    def try_complete_else_watch(self, operation: DelayedOperation, keys: Iterable[Hashable]) -> bool:
        """Kafka: ``tryCompleteElseWatch``: complete now if it can, else watch it under ``keys`` and start its
        timer."""
        if operation.try_complete():
            return True
        for key in keys:
            self._watchers.setdefault(key, []).append(operation)
        if operation.is_completed:
            return True
        operation._timer = self._timer.call_later(operation.delay_ms, operation._expire)
        return False

    def check_and_complete(self, key: Hashable) -> int:
        """Kafka: ``checkAndComplete``: try the operations watched under ``key``; how many completed."""
        watched = self._watchers.get(key)
        if not watched:
            return 0
        completed = 0
        for operation in list(watched):
            if not operation.is_completed and operation.try_complete():
                completed += 1
        remaining = [op for op in self._watchers.get(key, []) if not op.is_completed]
        if remaining:
            self._watchers[key] = remaining
        else:
            self._watchers.pop(key, None)
        return completed

    def watched(self, key: Hashable) -> int:
        """The operations not yet completed under ``key`` (Kafka: ``watched``, for tests)."""
        return sum(1 for op in self._watchers.get(key, []) if not op.is_completed)

    def shutdown(self) -> None:
        """Cancel every timer; the operations stay uncompleted (Kafka: ``shutdown``)."""
        for ops in self._watchers.values():
            for op in ops:
                if op._timer is not None:
                    op._timer.cancel()
                    op._timer = None
        self._watchers.clear()


# -- the group coordinator's operations --------------------------------------------------------------------

class GroupCallbacks(Protocol):
    """What the group coordinator's delayed operations call back (Kafka: the ``GroupCoordinator`` methods they
    name)."""

    def try_complete_join(self, group: GroupMetadata, force_complete: Callable[[], bool]) -> bool: ...
    def on_complete_join(self, group: GroupMetadata) -> None: ...
    def try_complete_pending_sync(self, group: GroupMetadata, generation_id: int,
                                  force_complete: Callable[[], bool]) -> bool: ...
    def on_expire_pending_sync(self, group: GroupMetadata, generation_id: int) -> None: ...
    def try_complete_heartbeat(self, group: GroupMetadata, member_id: str, is_pending: bool,
                               force_complete: Callable[[], bool]) -> bool: ...
    def on_expire_heartbeat(self, group: GroupMetadata, member_id: str, is_pending: bool) -> None: ...


class DelayedHeartbeat(DelayedOperation):
    """Kafka: ``DelayedHeartbeat``: a member's session timeout (or a pending member's wait for its rejoin)."""

    def __init__(self, coordinator: GroupCallbacks, group: GroupMetadata, member_id: str, is_pending: bool,
                 timeout_ms: int) -> None:
        super().__init__(timeout_ms)
        self.coordinator, self.group, self.member_id, self.is_pending = coordinator, group, member_id, is_pending

    def try_complete(self) -> bool:
        return self.coordinator.try_complete_heartbeat(self.group, self.member_id, self.is_pending,
                                                       self.force_complete)

    def on_expiration(self) -> None:
        self.coordinator.on_expire_heartbeat(self.group, self.member_id, self.is_pending)

    def on_complete(self) -> None:
        pass


class DelayedJoin(DelayedOperation):
    """Kafka: ``DelayedJoin``: the wait for every member to rejoin, at most the group's rebalance timeout."""

    def __init__(self, coordinator: GroupCallbacks, group: GroupMetadata, rebalance_timeout_ms: int) -> None:
        super().__init__(rebalance_timeout_ms)
        self.coordinator, self.group = coordinator, group

    def try_complete(self) -> bool:
        return self.coordinator.try_complete_join(self.group, self.force_complete)

    def on_expiration(self) -> None:
        # Kafka completes the actions the join queued for the replica manager here; a single node has none.
        pass

    def on_complete(self) -> None:
        self.coordinator.on_complete_join(self.group)


class InitialDelayedJoin(DelayedJoin):
    """Kafka: ``InitialDelayedJoin``: an empty group's first rebalance waits ``group.initial.rebalance.delay.ms``,
    again for as long as members keep arriving, up to the rebalance timeout."""

    def __init__(self, coordinator: GroupCallbacks, purgatory: DelayedOperationPurgatory, group: GroupMetadata,
                 configured_rebalance_delay: int, delay_ms: int, remaining_ms: int) -> None:
        super().__init__(coordinator, group, delay_ms)
        self.purgatory = purgatory
        self.configured_rebalance_delay = configured_rebalance_delay
        self.remaining_ms = remaining_ms

    def try_complete(self) -> bool:
        return False

    def on_complete(self) -> None:
        group = self.group
        if group.new_member_added and self.remaining_ms != 0:
            group.new_member_added = False
            delay = min(self.configured_rebalance_delay, self.remaining_ms)
            remaining = max(self.remaining_ms - self.delay_ms, 0)
            self.purgatory.try_complete_else_watch(
                InitialDelayedJoin(self.coordinator, self.purgatory, group, self.configured_rebalance_delay,
                                   delay, remaining), [group_join_key(group.group_id)])
        else:
            super().on_complete()


class DelayedSync(DelayedOperation):
    """Kafka: ``DelayedSync``: the wait for every member's SyncGroup after a rebalance, at most the rebalance
    timeout; who did not send one is removed and the group rebalances."""

    def __init__(self, coordinator: GroupCallbacks, group: GroupMetadata, generation_id: int,
                 rebalance_timeout_ms: int) -> None:
        super().__init__(rebalance_timeout_ms)
        self.coordinator, self.group, self.generation_id = coordinator, group, generation_id

    def try_complete(self) -> bool:
        return self.coordinator.try_complete_pending_sync(self.group, self.generation_id, self.force_complete)

    def on_expiration(self) -> None:
        self.coordinator.on_expire_pending_sync(self.group, self.generation_id)

    def on_complete(self) -> None:
        pass


def member_key(group_id: str, member_id: str) -> Hashable:
    """Kafka: ``MemberKey``."""
    return ("member", group_id, member_id)


def group_join_key(group_id: str) -> Hashable:
    """Kafka: ``GroupJoinKey``."""
    return ("join", group_id)


def group_sync_key(group_id: str) -> Hashable:
    """Kafka: ``GroupSyncKey``."""
    return ("sync", group_id)

"""What kafkalog writes into a stopped broker's log dir for the broker to serve (kafkalog to broker).

kafkalog's :class:`~kafkalog.manager.log_manager.LogManager` opens the broker's log dir (its ``meta.properties``, the
KRaft metadata log it leaves alone, the checkpoints it keeps) and appends, as a leader, to a partition the broker
created (so its topic id, ``partition.metadata`` and the KRaft records exist): batches of every codec, keys,
headers and null values, an idempotent producer's appends, transactions that commit and that abort, interleaved,
with the coordinator's markers, rolls, tombstones, and one compaction by kafkalog's cleaner (a cleaned segment
with the delete horizon set), then more appends after it.

:func:`write_partition` does that in this process (the manager then shuts down cleanly, as a broker does);
``python -m tests.oracle.broker.kafkalog_writes LOG_DIR TOPIC`` does it in a process that then kills itself
with SIGKILL: a crash, which leaves the files as the page cache has them, with no clean-shutdown marker, no
final producer snapshot and the indexes not trimmed.

The producer ids are far above the blocks a broker hands out (from 0, a thousand at a time), so that no client
of the broker is given one of them later; the leader epoch is 0, the epoch of a partition just created.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from kafkalog.log import Log
from kafkalog.manager.log_manager import LogManager
from kafkalog.record import ControlRecordType, EndTransactionMarker, MemoryRecords
from kafkalog.topic import TopicPartition

__all__ = ["PRODUCER_ID_BASE", "TOPIC_CONFIG", "write_partition"]

#: kafkalog's producer ids: above any a one-node broker hands out in a test.
PRODUCER_ID_BASE = 5_000_000_000
#: The config kafkalog's manager gives the partition: compacted (so its cleaner may clean it), small segments,
#: a dense index, tombstones kept for a day.
TOPIC_CONFIG = {"cleanup.policy": "compact", "segment.bytes": 4096, "index.interval.bytes": 256,
                "min.cleanable.dirty.ratio": 0.0, "delete.retention.ms": 86_400_000}
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
LEADER_EPOCH = 0


def _value(i: int, tag: str) -> bytes:
    return (f"{tag} {i} " + "kafkalog " * (i % 17)).encode()


def _append(log: Log, records: list[tuple[Any, ...]], **builder: Any) -> None:
    log.append(MemoryRecords.with_records(records, **builder), leader_epoch=LEADER_EPOCH)


def _marker(log: Log, producer_id: int, commit: bool, now: int) -> None:
    kind = ControlRecordType.COMMIT if commit else ControlRecordType.ABORT
    log.append(MemoryRecords.with_end_transaction_marker(producer_id, 0, EndTransactionMarker(kind, 3), timestamp=now,
                                                         partition_leader_epoch=LEADER_EPOCH),
               leader_epoch=LEADER_EPOCH, origin="coordinator")


class _Transactions:
    """Two transactional producers (one commits, one aborts), their sequences kept across rounds."""

    def __init__(self, log: Log, now: int) -> None:
        self.log, self.now = log, now
        self.committed, self.aborted = PRODUCER_ID_BASE + 1, PRODUCER_ID_BASE + 2
        self.sequences = {self.committed: 0, self.aborted: 0}

    def _batch(self, producer_id: int, tag: str, codec: str) -> None:
        _append(self.log, [(f"{tag}-{i % 3}".encode(), _value(i, tag), self.now + i) for i in range(6)],
                compression=codec, producer_id=producer_id, producer_epoch=0,
                base_sequence=self.sequences[producer_id], is_transactional=True)
        self.sequences[producer_id] += 6

    def round(self, n: int) -> None:
        """Two transactions open at once, one commits and one aborts; a plain batch falls between them."""
        self._batch(self.committed, f"commit-{n}", CODECS[n % 4 + 1])
        self._batch(self.aborted, f"abort-{n}", CODECS[(n + 1) % 4 + 1])
        _append(self.log, [(b"between", _value(n, "plain between"), self.now)])
        self._batch(self.committed, f"commit-more-{n}", "none")
        _marker(self.log, self.aborted, False, self.now)
        _marker(self.log, self.committed, True, self.now)


def write_batches(log: Log, now: int) -> _Transactions:
    """Appends of every kind (see the module docstring) but the compaction; ends on a plain batch."""
    headers = [("source", b"kafkalog"), ("empty", None), ("source", b"again")]
    for n, codec in enumerate(CODECS):
        _append(log, [(f"key-{i % 9}".encode(), _value(i, codec), now - 60_000 + n * 1000 + i, headers[: i % 4])
                      for i in range(12)], compression=codec)
    _append(log, [(b"no-value", None, now), (b"empty", b"", now)])  # a compacted topic takes no keyless record
    idempotent = PRODUCER_ID_BASE
    for n, codec in enumerate(CODECS):
        _append(log, [(f"idem-{i % 4}".encode(), _value(i, "idempotent"), now + i) for i in range(8)],
                compression=codec, producer_id=idempotent, producer_epoch=0, base_sequence=8 * n)
    transactions = _Transactions(log, now)
    for n in range(3):
        transactions.round(n)
    log.roll()
    _append(log, [(f"key-{i}".encode(), None, now) for i in range(0, 9, 2)], compression="zstd")
    _append(log, [(f"key-{i}".encode(), _value(i, "last"), now) for i in range(9)], compression="lz4")
    return transactions


def write_partition(manager: LogManager, tp: TopicPartition) -> Log:
    """Everything of :func:`write_batches`, then a compaction of all but the active segment (which drops the aborted
    transactions' records), then another round of transactions and a last plain append."""
    log = manager.get_log(tp)
    if log is None:
        raise AssertionError(f"{tp} has no log in {manager.log_dirs}: the broker did not create it")
    now = int(time.time() * 1000)
    transactions = write_batches(log, now)
    log.roll()
    stats = manager.compact(tp.topic)
    if not stats:
        raise AssertionError(f"kafkalog's cleaner did not clean {tp}")
    transactions.round(3)
    _append(log, [(f"after-{i % 3}".encode(), _value(i, "after the cleaning"), now) for i in range(10)],
            compression="gzip")
    return log


def crash(log_dir: Path, topic: str) -> None:
    """Open ``log_dir``, write the partition, then die by SIGKILL with every file as it is."""
    manager = LogManager(log_dir, topic_configs={topic: TOPIC_CONFIG})
    write_partition(manager, TopicPartition(topic, 0))
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGKILL)


if __name__ == "__main__":
    crash(Path(sys.argv[1]), sys.argv[2])

"""Aborted transactions (``AbortedTxn``) and the transaction index files (``<offset>.txnindex``) that list them.

Port of ``AbortedTxn`` and the read side of ``TransactionIndex`` (storage,
``org.apache.kafka.storage.internals.log``, tag 3.8.0).  kafkalog derives aborted transactions from
the log's control batches rather than keeping this index (:class:`kafkalog.transactions.TransactionState`
makes the same :class:`AbortedTxn` entries a broker writes), so it only reads broker-written files.

Layout: a sequence of 34-byte entries, big-endian, no header and no preallocation::

    0  version           int16   0
    2  producerId        int64
    10 firstOffset       int64   the transaction's first offset
    18 lastOffset        int64   the offset of its ABORT marker (strictly increasing down the file)
    26 lastStableOffset  int64   the last stable offset when the abort was written

A trailing part-entry (a write cut short) is not read, as Kafka's iterator stops before it.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import NamedTuple

from .errors import KafkaLogError
from .fsutil import open_regular

__all__ = ["AbortedTxn", "TransactionIndexError", "parse_aborted_txns", "read_aborted_txns"]

ABORTED_TXN_VERSION = 0
_ENTRY = struct.Struct(">hqqqq")
ABORTED_TXN_SIZE = _ENTRY.size
#: The most entries read from one file; a broker's hold a handful per segment.
MAX_ENTRIES = 1 << 24


class TransactionIndexError(KafkaLogError, ValueError):
    """An entry of a version this reader does not know."""


class AbortedTxn(NamedTuple):
    """A transaction that ended with an ABORT marker (Kafka: ``AbortedTxn``, one entry of a ``.txnindex``).

    ``first_offset`` is the offset of the transaction's first batch, ``last_offset`` the offset of its
    ABORT marker, and ``last_stable_offset`` the partition's last stable offset when the marker was written:
    the first offset of the earliest transaction of another producer still open then, else
    ``last_offset + 1`` (Kafka: ``ProducerStateManager.lastStableOffset(CompletedTxn)``).  The fields come in
    the order of Kafka's constructor; ``version`` is the entry format's, 0 in every release so far.
    """

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int
    version: int = ABORTED_TXN_VERSION


def read_aborted_txns(path: str | os.PathLike[str]) -> list[AbortedTxn]:
    """Every whole entry of a ``.txnindex`` file (Kafka: ``TransactionIndex.allAbortedTxns``)."""
    file = Path(path)
    with os.fdopen(open_regular(file, os.O_RDONLY), "rb") as f:
        data = f.read(min(os.fstat(f.fileno()).st_size, MAX_ENTRIES * ABORTED_TXN_SIZE))
    return parse_aborted_txns(data, str(file.absolute()))


def parse_aborted_txns(data: bytes, name: str) -> list[AbortedTxn]:
    """Every whole entry of the bytes of a ``.txnindex`` named ``name`` (at most :data:`MAX_ENTRIES`)."""
    entries: list[AbortedTxn] = []
    for at in range(0, min(len(data) // ABORTED_TXN_SIZE, MAX_ENTRIES) * ABORTED_TXN_SIZE, ABORTED_TXN_SIZE):
        version, producer_id, first_offset, last_offset, last_stable_offset = _ENTRY.unpack_from(data, at)
        entry = AbortedTxn(producer_id, first_offset, last_offset, last_stable_offset, version)
        if entry.version > ABORTED_TXN_VERSION:
            raise TransactionIndexError(
                f"Unexpected aborted transaction version {entry.version} in transaction index "
                f"{name}, current version is {ABORTED_TXN_VERSION}")
        entries.append(entry)
    return entries

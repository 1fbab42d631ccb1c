"""Transaction index files (``<offset>.txnindex``): reading the aborted transactions they list.

Port of the read side of ``TransactionIndex`` and ``AbortedTxn`` (storage,
``org.apache.kafka.storage.internals.log``, tag 3.8.0).  kafkalog derives aborted transactions from
the log's control batches rather than keeping this index, so it only reads broker-written files.

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

__all__ = ["AbortedTxn", "TransactionIndexError", "read_aborted_txns"]

ABORTED_TXN_VERSION = 0
_ENTRY = struct.Struct(">hqqqq")
ABORTED_TXN_SIZE = _ENTRY.size
#: The most entries read from one file; a broker's hold a handful per segment.
MAX_ENTRIES = 1 << 24


class TransactionIndexError(KafkaLogError, ValueError):
    """An entry of a version this reader does not know."""


class AbortedTxn(NamedTuple):
    version: int
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


def read_aborted_txns(path: str | os.PathLike[str]) -> list[AbortedTxn]:
    """Every whole entry of a ``.txnindex`` file (Kafka: ``TransactionIndex.allAbortedTxns``)."""
    file = Path(path)
    entries: list[AbortedTxn] = []
    with os.fdopen(open_regular(file, os.O_RDONLY), "rb") as f:
        while len(entries) < MAX_ENTRIES:
            raw = f.read(ABORTED_TXN_SIZE)
            if len(raw) < ABORTED_TXN_SIZE:
                break
            entry = AbortedTxn(*_ENTRY.unpack(raw))
            if entry.version > ABORTED_TXN_VERSION:
                raise TransactionIndexError(
                    f"Unexpected aborted transaction version {entry.version} in transaction index "
                    f"{file.absolute()}, current version is {ABORTED_TXN_VERSION}")
            entries.append(entry)
    return entries

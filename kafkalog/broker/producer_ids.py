"""Producer ids: handed out in blocks, never twice, across restarts.

Kafka's controller hands producer ids to brokers in blocks of 1000 (``ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE``,
``ProducerIdControlManager``, 3.8.0) and records each block it gave (a ``ProducerIdsRecord`` in the metadata log),
so a restarted cluster starts after the last block.  kafkalog's single node keeps the same promise with a file of
its own in the first data directory, ``kafkalog-producer-ids``: one line, the first id of the next block, written
(to a temporary file, fsynced, renamed) *before* any id of the new block is handed out.  A crash therefore skips at
most the rest of a block, and never gives an id twice.

The transaction coordinator (:mod:`kafkalog.broker.txn_coordinator`) hands these ids out, to idempotent producers
(a new id with epoch 0) and transactional ones alike.
"""

from __future__ import annotations

import datetime
import os
from pathlib import Path
from typing import Final

from ..errors import KafkaLogError
from ..fsutil import fsync_dir

__all__ = ["BLOCK_SIZE", "PRODUCER_IDS_FILE", "ProducerIdManager"]

BLOCK_SIZE: Final = 1000
PRODUCER_IDS_FILE: Final = "kafkalog-producer-ids"
_NO_THROTTLE: Final = datetime.timedelta(0)


class ProducerIdManager:
    """Producer ids for this broker (Kafka: ``ProducerIdManager`` with the controller's blocks)."""

    def __init__(self, data_dir: str | os.PathLike[str]) -> None:
        self._path = Path(data_dir) / PRODUCER_IDS_FILE
        self._next = 0
        self._block_end = 0
        if self._path.exists():
            text = self._path.read_text(encoding="ascii").strip()
            if not text.isdigit():
                raise KafkaLogError(f"{self._path} does not hold a producer id: {text[:40]!r}")
            self._next = self._block_end = int(text)

    def generate(self) -> int:
        """The next producer id (Kafka: ``generateProducerId``)."""
        if self._next >= self._block_end:
            end = self._next + BLOCK_SIZE
            tmp = self._path.with_name(PRODUCER_IDS_FILE + ".tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                os.write(fd, f"{end}\n".encode())
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, self._path)
            fsync_dir(self._path.parent)
            self._block_end = end
        pid = self._next
        self._next += 1
        return pid

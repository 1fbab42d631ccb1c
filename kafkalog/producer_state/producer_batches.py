"""Which batches of a log the producer state reads: those with a producer id (Kafka's ``batches()`` of a
segment or a fetch, filtered by ``RecordBatch.hasProducerId``).

Only v2 batches carry a producer id.  A file (a segment's log or a slice of it) is read from its header scan:
the producer ids of its v2 batches come from one kernel call
(:meth:`~kafkalog.file_message_set.FileMessageSet.producer_fields`), and only the batches that have one are
read whole, as :class:`~kafkalog.record.batch.DefaultRecordBatch` (which is a
:class:`~kafkalog.producer_state.batch_info.ProducerBatchInfo`); a log without producers costs the scan alone.

Segment recovery (:meth:`LogSegment.recover <kafkalog.segment.LogSegment.recover>`) and the log's producer-state
updates (:mod:`kafkalog.log.producer_state_updates`) both read batches through it, so it sits below the segment.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

from .._common import MAGIC_V2
from ..file_message_set import FileMessageSet
from ..record import MemoryRecords
from ..record.batch import DefaultRecordBatch, RecordBatch

__all__ = ["producer_batches"]


def producer_batches(records: FileMessageSet | MemoryRecords | Iterable[RecordBatch],
                     rows: npt.NDArray[Any] | None = None) -> Iterator[RecordBatch]:
    """The batches of ``records`` that have a producer id, in order (Kafka: ``batches`` filtered by
    ``hasProducerId``).

    A file (a segment's log, or a slice of it) is read from its header scan (``rows``, when the caller scanned
    it already): the producer ids of its v2 batches in one kernel call, then only the batches with one, each
    read whole (a marker is parsed from its record).  Batches past a torn or corrupt entry are not returned:
    recovery cuts the log there.
    """
    if not isinstance(records, FileMessageSet):
        batches = records.batches() if isinstance(records, MemoryRecords) else records
        for batch in batches:
            if batch.has_producer_id:
                yield batch
        return
    if rows is None:
        rows = records.scan(check_crc=False, stop_on_invalid=True).batches
    rows = rows[rows["magic"] == MAGIC_V2]
    if not len(rows):
        return
    producer_ids, _epochs = records.producer_fields(rows["position"])
    origin = records.start
    for i in np.flatnonzero(producer_ids >= 0).tolist():
        position, size = int(rows["position"][i]), int(rows["size"][i])
        yield DefaultRecordBatch(records.read_bytes(position - origin, size), 0, size, origin=position)

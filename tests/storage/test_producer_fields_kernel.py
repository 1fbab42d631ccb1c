"""``producer_fields``: the producer id and epoch of many v2 batches in one call, with each twin.

The oracle is the batch object's own fields (``DefaultRecordBatch.producer_id`` / ``producer_epoch``); the
log's producer walk (``transactions.scan_producer_batches``) reads them through
``FileMessageSet.producer_fields``, over the map or, when the file is not mapped, a read a batch.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from kafkalog.file_message_set import FileMessageSet
from kafkalog.record import ControlRecordType, EndTransactionMarker, MemoryRecords


def _log_bytes() -> bytes:
    parts = [
        MemoryRecords.with_records([(b"k", b"v")], base_offset=0),
        MemoryRecords.with_records([(b"k", b"v"), (None, b"w")], base_offset=1, producer_id=7, producer_epoch=3,
                                   base_sequence=0),
        MemoryRecords.with_records([(b"a", None)], base_offset=3, producer_id=2**40, producer_epoch=32767,
                                   base_sequence=5, is_transactional=True),
        MemoryRecords.with_end_transaction_marker(2**40, 32767, EndTransactionMarker(ControlRecordType.COMMIT, 0),
                                                  base_offset=4),
        MemoryRecords.with_records([(b"b", b"v")], base_offset=5, compression="gzip", producer_id=0,
                                   producer_epoch=0, base_sequence=0),
    ]
    return b"".join(bytes(part.buffer) for part in parts)


def _expected(data: bytes) -> tuple[list[int], list[int], list[int]]:
    batches = list(MemoryRecords(data).batches())
    return ([batch.position for batch in batches], [batch.producer_id for batch in batches],
            [batch.producer_epoch for batch in batches])


def test_fields_are_the_batches_own(impl: ModuleType) -> None:
    data = _log_bytes()
    positions, ids, epochs = _expected(data)
    got_ids, got_epochs = impl.producer_fields(data, np.array(positions, dtype=np.int64))
    assert (got_ids.dtype, got_epochs.dtype) == (np.int64, np.int16)
    assert got_ids.tolist() == ids == [-1, 7, 2**40, 2**40, 0]
    assert got_epochs.tolist() == epochs == [-1, 3, 32767, 32767, 0]
    empty = impl.producer_fields(data, np.empty(0, dtype=np.int64))
    assert [len(column) for column in empty] == [0, 0]


@pytest.mark.parametrize("position", [-1, "past"])
def test_a_position_without_a_whole_header_is_refused(impl: ModuleType, position: object) -> None:
    data = _log_bytes()
    at = len(data) - 60 if position == "past" else -1
    with pytest.raises(ValueError, match="outside the buffer"):
        impl.producer_fields(data, np.array([0, at], dtype=np.int64))


@pytest.mark.parametrize("writable", [True, False])
def test_file_message_set_reads_them_mapped_or_not(tmp_path: Path, impl: ModuleType, writable: bool) -> None:
    data = _log_bytes()
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"\0" * 100 + data)  # positions are file positions, the set starting past these bytes
    whole = FileMessageSet.open(path, file_already_exists=True, writable=writable)
    try:
        records = whole.read(100, len(data))
        assert whole._channel.mappable is writable  # a read-only file is never mapped
        rows = records.scan(check_crc=False, stop_on_invalid=False).batches
        ids, epochs = records.producer_fields(rows["position"])
        _, expected_ids, expected_epochs = _expected(data)
        assert (ids.tolist(), epochs.tolist()) == (expected_ids, expected_epochs)
    finally:
        whole.close()

"""A leader's append of records over a read-only buffer: the ``bytes`` that ``MemoryRecords.with_records``
builds (the README's ``log.append(MemoryRecords.with_records([...]))``, and :class:`~kafkalog.clients.Producer`'s
every send), a read-only ``memoryview`` of the caller's ``bytearray``, a file mapped read-only.

Kafka's ``LogValidator`` rewrites the headers in the request's own buffer; a Python caller's read-only buffer is
copied once instead (:mod:`kafkalog.log.validator_one_batch`).  Here, on both twins, uncompressed and compressed,
on the paths that rewrite in place and on those that rebuild:

* the caller's buffer is left as it was, and the log holds the offsets the append assigned: byte for byte what
  the same appends from ``bytearray`` buffers leave;
* the append reads the buffer as often as from a ``bytearray`` (the same walks, the same decodes, no
  ``LogValidator`` where a ``bytearray`` needs none): the copy is its only extra cost.
"""

from __future__ import annotations

import mmap
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from kafkalog import MemoryRecords
from kafkalog.config.log_config import LogConfig
from kafkalog.log import Log
from kafkalog.log import validator as validator_module
from kafkalog.record.batch import DefaultRecordBatch
from kafkalog.record.legacy import LegacyRecordBatch
from kafkalog.scheduler import MockTime
from tests.support.log_test_utils import LogFactory

NOW = MockTime().milliseconds()
EPOCH = 5
RECORDS = [(b"k%d" % i, b"value %d" % i * 10, NOW - 100 + i) for i in range(20)]

# name: (the log's properties, with_records' arguments, whether the append rewrites the caller's batches in place)
CASES: dict[str, tuple[dict[str, str], dict[str, Any], bool]] = {
    "v2 uncompressed": ({}, {}, True),
    "v2 one record": ({}, {"records": RECORDS[:1]}, True),
    "v2 lz4": ({}, {"compression": "lz4"}, True),
    "v2 zstd": ({}, {"compression": "zstd"}, True),
    "v2 gzip, idempotent": ({}, {"compression": "gzip", "producer_id": 9, "producer_epoch": 0,
                                 "base_sequence": 0}, True),
    "v1 messages on a v1 log": ({"message.format.version": "0.10.2"}, {"magic": 1}, True),
    "v1 gzip wrapper on a v1 log": ({"message.format.version": "0.10.2"}, {"magic": 1, "compression": "gzip"},
                                    True),
    "v2 lz4 on a zstd log": ({"compression.type": "zstd"}, {"compression": "lz4"}, False),
    "v2 on a v1 log": ({"message.format.version": "0.10.2"}, {}, False),
}
KINDS = ("bytes", "read-only view", "read-only mmap")


def _batch(case: str, sequence: int = 0) -> bytes:
    _props, kwargs, _in_place = CASES[case]
    kwargs = dict(kwargs)
    records = kwargs.pop("records", RECORDS)
    if "base_sequence" in kwargs:
        kwargs["base_sequence"] = sequence
    data = MemoryRecords.with_records(records, **kwargs).buffer
    assert type(data) is bytes  # what a user's append is given
    return data


@contextmanager
def _read_only(kind: str, data: bytes, scratch: Path) -> Iterator[tuple[MemoryRecords, Callable[[], bytes]]]:
    """Records over ``data`` in a read-only buffer of ``kind``, and what the caller's bytes are now."""
    if kind == "bytes":
        yield MemoryRecords(data), lambda: data
    elif kind == "read-only view":
        owner = bytearray(data)
        with memoryview(owner) as view, view.toreadonly() as read_only:
            yield MemoryRecords(read_only), lambda: bytes(owner)
    else:
        path = scratch / f"batch-{len(list(scratch.iterdir()))}.bin"
        path.write_bytes(data)
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            yield MemoryRecords(mapped), path.read_bytes


def _log_bytes(log: Log) -> bytes:
    return log.read(0, log.size).records.read_bytes()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("case", list(CASES))
def test_read_only_records_are_left_as_they_were(create_log: LogFactory, scratch: Path, case: str,
                                                 kind: str) -> None:
    """Two appends of read-only records: the caller's bytes do not change, and the log holds what two appends
    of ``bytearray`` copies leave, the second batch at the offsets after the first's."""
    props = CASES[case][0]
    by_copies = create_log(LogConfig(props), scratch / "copies-0")
    for sequence in (0, len(RECORDS)):
        by_copies.append_as_leader(MemoryRecords(bytearray(_batch(case, sequence))), leader_epoch=EPOCH)
    log = create_log(LogConfig(props), scratch / "topic-0")
    infos = []
    for sequence in (0, len(RECORDS)):
        data = _batch(case, sequence)
        with _read_only(kind, data, scratch) as (records, callers_bytes):
            infos.append(log.append_as_leader(records, leader_epoch=EPOCH))
            assert callers_bytes() == data
            assert bytes(records.buffer) == data
    count = len(CASES[case][1].get("records", RECORDS))
    assert [(info.first_offset, info.last_offset) for info in infos] == [(0, count - 1), (count, 2 * count - 1)] \
        or CASES[case][1].get("magic") == 1  # a v1 wrapper's first offset is not known before validation
    assert infos[-1].last_offset == 2 * count - 1 == log.log_end_offset - 1
    assert _log_bytes(log) == _log_bytes(by_copies)
    stored = list(log.read(0, log.size).records.batches())
    assert stored[0].base_offset == 0 and stored[-1].last_offset == 2 * count - 1
    assert all(b.is_valid() for b in stored)
    assert all(b.partition_leader_epoch == EPOCH for b in stored if isinstance(b, DefaultRecordBatch))
    assert [(r.offset, r.key, r.value) for r in log.records()] == \
        [(offset, key, value) for offset, (key, value, _ts) in enumerate(RECORDS[:count] * 2)]


class _Walks:
    """Counts of what an append does to its records: walks of the buffer (the batch scan, the one-batch framing
    check), batch decodes (record reads, decompressions included), validators built, and batches read from a
    buffer (each read of a header)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.counts: Counter[str] = Counter()
        for owner, name in ((MemoryRecords, "scan"), (MemoryRecords, "only_batch"),
                            (DefaultRecordBatch, "_decode"), (LegacyRecordBatch, "legacy_records"),
                            (validator_module.LogValidator, "__init__")):
            monkeypatch.setattr(owner, name, self._counted(f"{owner.__name__}.{name}", getattr(owner, name)))

    def _counted(self, key: str, method: Callable[..., Any]) -> Callable[..., Any]:
        def counted(*args: Any, **kwargs: Any) -> Any:
            self.counts[key] += 1
            return method(*args, **kwargs)
        return counted


@pytest.mark.parametrize("case", list(CASES))
def test_read_only_records_are_read_as_often_as_a_bytearray(create_log: LogFactory, scratch: Path,
                                                            monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    """What the append of read-only records does to them is what the append of a ``bytearray`` does: the same
    walks of the buffer, the same decodes, a ``LogValidator`` only where the ``bytearray`` needs one too.  The
    one difference is the copy itself, on the paths that rewrite in place."""
    props = CASES[case][0]
    walks = _Walks(monkeypatch)
    counts = {}
    for kind in ("bytearray", "bytes"):
        log = create_log(LogConfig(props), scratch / f"{kind}-0")
        for sequence in (0, len(RECORDS)):
            data = _batch(case, sequence)
            records = MemoryRecords(bytearray(data) if kind == "bytearray" else data)
            walks.counts.clear()
            log.append_as_leader(records, leader_epoch=EPOCH)
            counts[kind, sequence] = dict(walks.counts)
    for sequence in (0, len(RECORDS)):
        assert counts["bytes", sequence] == counts["bytearray", sequence], sequence
    if not case.startswith("v1") and CASES[case][2]:
        assert "LogValidator.__init__" not in counts["bytes", 0]

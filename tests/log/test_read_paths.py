"""Every public read path of a partition decodes its records the same way (issue 32).

A consumer reads a log two ways: ``Log.records()`` (the consumer's view) and a fetch's, ``Log.read(offset,
max_length).records.records()``, a slice of a segment (:class:`~kafkalog.file_message_set.FileMessageSet`) as
Kafka's ``FetchDataInfo`` holds it.  Both go through one decode, ``FileMessageSet.chunk_record_runs``: the slice is
scanned once for its framing, each chunk's CRCs checked in one pass, and its records made by the run kernel, a
call per run of batches, handed out by ``itertools.chain``; no Python frame of the reading layers runs per record.
What a fetch returns is Kafka's (whole batches from the fetch offset's, ``max_length``, min-one-message, the
isolation bound), and its records are those ``Log.records()`` gives, control records included.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any

import pytest

import kafkalog
from kafkalog import file_message_set
from kafkalog.config.log_config import LogConfig
from kafkalog.log import Log
from kafkalog.record import MemoryRecords
from kafkalog.record.legacy import build_legacy_message_set
from tests.support.log_test_utils import LogFactory, append_transaction_sample

KAFKALOG = str(Path(kafkalog.__file__).parent)
#: The plain-Python kernel twin: its decode runs Python per record by design, so it is not counted.
PURE_KERNELS = str(Path(kafkalog.__file__).parent / "_core_py")
BATCHES, PER_BATCH = 12, 250


def batches_log(create_log: LogFactory, codecs: Iterable[str] = ("none",)) -> Log:
    log = create_log(LogConfig({"segment.bytes": 64 * 1024}))
    kinds = list(codecs)
    rng = random.Random(32)  # values that do not compress, so that every codec's log has several segments
    for b in range(BATCHES):
        log.append(MemoryRecords.with_records(
            [(b"k%d" % i, rng.randbytes(40), 1_000 + i) for i in range(PER_BATCH)],
            compression=kinds[b % len(kinds)]))
    log.flush()
    assert log.number_of_segments > 1
    return log


def fetched(log: Log, max_length: int = 1 << 20, isolation: str = "high_watermark") -> list[Any]:
    """Every record of the partition through fetches, as a consumer polls: from the fetch position, the records
    at or past it (a fetch starts at its offset's batch), the next fetch after the last."""
    out: list[Any] = []
    offset, end = log.log_start_offset, log.high_watermark
    while offset < end:
        fetch = log.read(offset, max_length, isolation=isolation)
        got = [r for r in fetch.records.records() if r.offset >= offset]
        assert got, f"a fetch at {offset} returned no record"
        out.extend(got)
        offset = got[-1].offset + 1
    return out


def reading_frames(read: Callable[[], Iterable[Any]]) -> tuple[int, int]:
    """How many records iterating ``read()`` gives, and how many Python frames of kafkalog's reading layers
    (every module but the plain-Python kernels) start or resume meanwhile: a profile hook counts them."""
    calls = 0

    def profile(frame: FrameType, event: str, _arg: Any) -> None:
        nonlocal calls
        filename = frame.f_code.co_filename
        if event == "call" and filename.startswith(KAFKALOG) and not filename.startswith(PURE_KERNELS):
            calls += 1

    records = read()
    n = 0
    sys.setprofile(profile)
    try:
        for _record in records:
            n += 1
    finally:
        sys.setprofile(None)
    return n, calls


def test_a_fetch_runs_no_python_frame_per_record(impl: ModuleType, create_log: LogFactory) -> None:
    """A fetch's records are handed out run by run: the frames the reading layers start (or resume) while 3,000
    records are iterated are a few per batch, not one per record (a generator yielding record by record, as
    ``FileMessageSet.records`` was, resumes once per record), and no more than ``Log.records()``'s."""
    log = batches_log(create_log)
    n, fetch_calls = reading_frames(lambda: log.read(0, 1 << 20).records.records())
    first_segment = log.log_segments()[0].read_next_offset()
    assert n == first_segment and n >= 3 * PER_BATCH
    assert fetch_calls < n // 20
    view_n, view_calls = reading_frames(lambda: log.records(0, first_segment))
    assert view_n == n
    assert fetch_calls <= view_calls + 5
    # The same for a whole segment file read deeply, and for a slice of it.
    segment = log.log_segments()[0].log
    assert reading_frames(segment.records)[1] < n // 20
    assert reading_frames(lambda: segment.read(0, segment.size_in_bytes() // 2).records())[1] < n // 20


@pytest.mark.parametrize("check_crcs", [True, False])
def test_each_chunk_is_scanned_once(impl: ModuleType, create_log: LogFactory, monkeypatch: pytest.MonkeyPatch,
                                    check_crcs: bool) -> None:
    """The rows the file's scan found are the ones decoded: a chunk's bytes are walked again only for the CRC
    check (one pass a chunk), never scanned a second time for their framing, by a fetch or by the consumer view."""
    log = batches_log(create_log)
    scans: list[bool] = []
    real_scan = MemoryRecords.scan

    def counted_scan(self: MemoryRecords, *args: Any, **kwargs: Any) -> Any:
        scans.append(bool(kwargs.get("check_crc", args[0] if args else True)))
        return real_scan(self, *args, **kwargs)

    monkeypatch.setattr(MemoryRecords, "scan", counted_scan)
    fetch = log.read(0, 1 << 20)
    assert len(list(fetch.records.records(check_crcs=check_crcs))) == log.log_segments()[0].read_next_offset()
    assert scans == ([True] if check_crcs else [])
    scans.clear()
    assert len(list(log.records(check_crcs=check_crcs))) == BATCHES * PER_BATCH
    assert scans == ([True] * log.number_of_segments if check_crcs else [])


@pytest.mark.parametrize("codecs", [("none",), ("lz4",), ("zstd", "none", "gzip")])
@pytest.mark.parametrize("max_length", [1, 1_000, 20_000, 1 << 20])
def test_fetches_give_the_records_of_the_consumer_view(impl: ModuleType, create_log: LogFactory,
                                                       codecs: tuple[str, ...], max_length: int) -> None:
    """A consumer fetching the partition ``max_length`` bytes at a time (min-one-message: a fetch smaller than a
    batch gets that batch whole) sees the records ``Log.records()`` gives, whatever the codec."""
    log = batches_log(create_log, codecs)
    assert [r.as_tuple() for r in fetched(log, max_length)] == [r.as_tuple() for r in log.records()]


def test_fetch_records_across_reused_chunks(impl: ModuleType, create_log: LogFactory,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A fetch larger than a chunk is read a chunk at a time into one reused buffer: the records of every chunk,
    uncompressed, compressed and legacy, are whole after the next chunk overwrote the buffer.  (Appended as a
    follower replicates, offsets and formats as given, so that one segment mixes them.)"""
    log = create_log()
    offset = 0
    for i, codec in enumerate(["none", "zstd", "lz4", "none", "gzip", "snappy"]):
        values = [bytes([65 + i]) * (40 + 300 * i) for _ in range(3)]
        log.append(MemoryRecords.with_records([(b"k", v, 1_000) for v in values], base_offset=offset,
                                              compression=codec, partition_leader_epoch=0), assign_offsets=False)
        offset += 3
    log.append(MemoryRecords(build_legacy_message_set([(b"k", b"legacy-%d" % i, 1_000) for i in range(3)],
                                                      magic=1, base_offset=offset)), assign_offsets=False)
    log.append(MemoryRecords(build_legacy_message_set([(b"k", b"wrapped-%d" % i, 1_000) for i in range(3)],
                                                      magic=1, compression="gzip", base_offset=offset + 3)),
               assign_offsets=False)
    log.flush()
    whole = [r.as_tuple() for r in MemoryRecords(log.log_segments()[0].log.read_bytes()).records()]
    assert len(whole) == 24 and whole[-1][3] == b"wrapped-2"
    monkeypatch.setattr(file_message_set, "MEMORY_CHUNK_BYTES", 200)
    fetch = log.read(0, 1 << 20)
    assert [r.as_tuple() for r in fetch.records.records()] == whole
    assert [r.as_tuple() for r in log.log_segments()[0].log.records()] == whole


def test_a_fetch_keeps_control_records_the_consumer_view_leaves_out(impl: ModuleType,
                                                                    create_log: LogFactory) -> None:
    """A fetch's records are the slice's, deeply: transaction markers included (each says ``is_control``), the
    records of aborted transactions too (a ``read_committed`` consumer skips them with the fetch's
    ``aborted_transactions``); ``Log.records()`` leaves the markers out."""
    log = create_log()
    append_transaction_sample(log)
    log.high_watermark = log.log_end_offset
    fetch = log.read(0, 1 << 20, isolation="txn_committed")
    records = list(fetch.records.records())
    assert [(r.offset, r.is_control) for r in records] == [(0, False), (1, False), (2, True), (3, False),
                                                           (4, True)]
    assert [(t.producer_id, t.first_offset) for t in fetch.aborted_transactions or []] == [(7, 1)]
    assert [r.offset for r in log.records()] == [0, 1, 3, 5, 6]
    assert [r.offset for r in log.records(isolation="read_committed")] == [0, 3]

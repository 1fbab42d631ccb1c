"""The fused leader append (:mod:`kafkalog.log.leader_append`) against ``Log.append``'s general path, on both
kernel twins.

The kernel, ``leader_append_v2_batch``, is checked against the shallow pass and ``assign_offsets_v2_batch`` on
the same bytes: what it takes it rewrites as they do, what it declines it leaves as it was, and it reads the
clock only once the shallow checks pass.  The log is checked by running the same appends on two logs, one with
the fused path and one without it (``append_one_batch_as_leader`` replaced by a function that declines
everything, so the general path runs alone): the same segment, index and time-index files byte for byte, the
same log state (log end offset, high watermark, recovery point, producer state, leader epochs, first unstable
offset), the same return values, the same errors with the same messages, the same debug lines and the same
number of reads of a clock that ticks on every read.  The appends mix batches the fused path takes with ones it
does not (compressed, idempotent, transactional, v1, a bad CRC, a base offset other than 0, a timestamp out of
range, a batch past ``max.message.bytes``), rolls on size, time, a full index and offset overflow in the middle,
and ``flush.messages=1``.
"""

from __future__ import annotations

import dataclasses
import logging
import struct
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from kafkalog import MemoryRecords
from kafkalog.errors import KafkaLogError
from kafkalog.log import Log, unified_log
from kafkalog.log.append_info import LogAppendInfo
from kafkalog.scheduler import MockTime
from tests.support.log_test_utils import config
from tests.support.validator_utils import put_field, with_crc

NOW = 1_700_000_000_000
LONG_MAX = (1 << 63) - 1


def _batch(records: list[Any] | None = None, **kwargs: Any) -> bytearray:
    records = [(b"key", b"value", NOW)] if records is None else records
    return bytearray(MemoryRecords.with_records(records, **kwargs).buffer)



# -- the kernel ---------------------------------------------------------------------------------------------

#: Batches as a client could send them, and whether the fused kernel takes them (``True``), declines them in
#: the shallow checks before reading the clock (``None``) or declines them after (``"clock"``).
KERNEL_CASES: dict[str, tuple[bytearray, bool | str | None]] = {
    "plain": (_batch(), True),
    "two records and headers": (_batch([(b"a", b"1", NOW - 5), (b"b", None, NOW, [("h", b"x")])]), True),
    "no timestamps": (_batch([(b"a", b"1", -1)]), True),
    "stale max timestamp": (with_crc(put_field(_batch(), ">q", 35, NOW - 99)), True),
    "sent with an epoch": (_batch(partition_leader_epoch=3), True),
    "base offset 5": (_batch(base_offset=5), None),
    "bad crc": (put_field(_batch(), ">I", 17, 12345), None),
    "magic 1": (bytearray(MemoryRecords.with_records([(b"k", b"v", NOW)], magic=1).buffer), None),
    "idempotent": (_batch(producer_id=5, producer_epoch=1, base_sequence=0), None),
    "partial": (_batch()[:-1], None),
    "trailing byte": (_batch() + b"\0", None),
    "too short": (bytearray(40), None),
    "too old": (_batch([(b"k", b"v", 0)]), "clock"),
    "compressed": (_batch(compression="lz4"), "clock"),
    "log append time": (_batch(timestamp_type="LogAppendTime", log_append_time=NOW), "clock"),
    "control": (with_crc(put_field(_batch(), ">h", 21, 0x20)), "clock"),
    "record framing": (with_crc(put_field(_batch(), ">b", 61, 0x7E)), "clock"),
    "count off": (with_crc(put_field(_batch(), ">i", 57, 2)), "clock"),
}


class _Clock:
    def __init__(self) -> None:
        self.reads = 0

    def __call__(self) -> int:
        self.reads += 1
        return NOW


def _fused(impl: ModuleType, data: bytearray, clock: Callable[[], int], *, max_size: int = 1 << 20,
           before: int = 3_600_000) -> Any:
    return impl.leader_append_v2_batch(data, 1_234, 7, clock, timestamp_before_max_ms=before,
                                       timestamp_after_max_ms=3_600_000, compacted=False, max_size=max_size)


@pytest.mark.parametrize("case", list(KERNEL_CASES))
def test_kernel_against_the_one_batch_kernel(impl: ModuleType, case: str) -> None:
    data, expected = KERNEL_CASES[case]
    data = bytearray(data)
    clock = _Clock()
    taken = _fused(impl, data, clock)
    if expected is True:
        reference = bytearray(KERNEL_CASES[case][0])
        assigned = impl.assign_offsets_v2_batch(reference, 1_234, 7, now=NOW, timestamp_before_max_ms=3_600_000,
                                                timestamp_after_max_ms=3_600_000, compacted=False, client=True)
        sent_epoch = struct.unpack_from(">i", KERNEL_CASES[case][0], 12)[0]
        assert taken == (*assigned, sent_epoch)
        assert data == reference
        assert clock.reads == 1
        return
    assert data == KERNEL_CASES[case][0], "a declined batch is left as it was"
    if expected is None:
        assert (taken, clock.reads) == (None, 0)
    else:
        assert (taken, clock.reads) == (NOW, 1)


def test_kernel_size_limit_and_arguments(impl: ModuleType) -> None:
    data = _batch()
    clock = _Clock()
    assert _fused(impl, bytearray(data), clock, max_size=len(data) - 1) is None
    assert _fused(impl, bytearray(data), clock, max_size=len(data))[0] == 1_234
    assert clock.reads == 1
    with pytest.raises((ValueError, TypeError, BufferError)):
        _fused(impl, bytes(data), clock)  # type: ignore[arg-type]
    with pytest.raises(OverflowError):
        impl.leader_append_v2_batch(bytearray(data), 0, 1 << 31, clock, timestamp_before_max_ms=0,
                                    timestamp_after_max_ms=0, compacted=False, max_size=1 << 20)

    def broken() -> int:
        raise RuntimeError("clock")

    with pytest.raises(RuntimeError, match="clock"):
        _fused(impl, bytearray(data), broken)
    # an offset past the long range is declined after the clock, for the general path
    assert impl.leader_append_v2_batch(bytearray(data), LONG_MAX, 0, clock, timestamp_before_max_ms=LONG_MAX,
                                       timestamp_after_max_ms=LONG_MAX, compacted=False, max_size=1 << 20) == NOW


# -- the log: fused against general ------------------------------------------------------------------------


def _records(*timestamps: int, **kwargs: Any) -> MemoryRecords:
    return MemoryRecords.with_records([(b"k%d" % i, b"v" * 40, ts) for i, ts in enumerate(timestamps)], **kwargs)


def _plain(timestamp: int = NOW) -> MemoryRecords:
    return _records(timestamp)


# Each step: ("append", records, leader_epoch) with records a MemoryRecords or a callable of the step index,
# ("follower", records) or ("sleep", ms).
Step = tuple[Any, ...]


def _producer(seq: int, **kwargs: Any) -> MemoryRecords:
    return _records(NOW, producer_id=11, producer_epoch=0, base_sequence=seq, **kwargs)


SCENARIOS: dict[str, tuple[dict[str, Any], list[Step]]] = {
    "plain": ({}, [("append", _plain(), -1)] * 30),
    "with an epoch": ({}, [("append", _plain(), 0)] * 5 + [("append", _plain(), 3)] * 5),
    "mixed": ({"index_interval_bytes": 1}, [
        ("append", _plain(), 0),
        ("append", _records(NOW, NOW + 1, compression="lz4"), 0),
        ("append", _plain(NOW + 2), 0),
        ("append", _producer(0), 0),
        ("append", _producer(1, is_transactional=True), 0),
        ("append", _plain(), 0),  # an open transaction: the first unstable offset is kept by the general steps
        ("append", MemoryRecords.with_records([(b"a", b"b", NOW)], magic=1), 0),
        ("append", _plain(NOW - 5), 1),
        ("append", MemoryRecords(b""), 1),
        ("append", MemoryRecords(bytes(_batch()) + bytes(_batch())), 1),  # two batches
        ("append", MemoryRecords(bytes(_batch())[:-3]), 1),  # only a partial batch
        ("append", MemoryRecords(bytes(_batch()) + bytes(_batch())[:20]), 1),  # a partial batch after one
        ("append", _plain(), 1),
    ]),
    "errors": ({"message_timestamp_before_max_ms": 3_600_000, "max_message_bytes": 200}, [
        ("append", _plain(), 0),
        ("append", MemoryRecords(put_field(_batch(), ">I", 17, 1)), 0),  # bad CRC
        ("append", _records(NOW, base_offset=4), 0),  # base offset not 0
        ("append", _records(NOW - 3_600_001), 0),  # timestamp out of range
        ("append", _records(NOW, NOW, NOW), 0),  # past max.message.bytes
        ("append", MemoryRecords(with_crc(put_field(_batch(), ">b", 61, 0x7E))), 0),  # record framing
        ("append", MemoryRecords(with_crc(put_field(_batch(), ">h", 21, 0x20))), 0),  # control batch from a client
        ("append", _plain(), 0),
    ]),
    "compacted, no key": ({"cleanup_policy": "compact"}, [
        ("append", _plain(), 0),
        ("append", MemoryRecords.with_records([(None, b"v", NOW)]), 0),
        ("append", _plain(), 0),
    ]),
    "roll on size": ({"segment_bytes": 600}, [("append", _plain(), 0)] * 12),
    "roll on time": ({"segment_ms": 100}, [
        ("append", _plain(NOW), 0), ("append", _plain(NOW + 50), 0), ("append", _plain(NOW + 150), 0),
        ("append", _plain(NOW + 160), 0), ("append", _plain(NOW + 400), 0),
    ]),
    "roll on wall time": ({"segment_ms": 100}, [
        ("append", _plain(-1), 0), ("sleep", 60), ("append", _plain(-1), 0), ("sleep", 60),
        ("append", _plain(-1), 0), ("append", _plain(-1), 0),
    ]),
    "roll on a full index": ({"segment_index_bytes": 32, "index_interval_bytes": 1}, [("append", _plain(), 0)] * 12),
    "roll on offset overflow": ({}, [
        ("follower", _records(NOW, partition_leader_epoch=0)),
        ("follower", _records(NOW, base_offset=(1 << 31) - 1, partition_leader_epoch=0)),
        ("append", _plain(), 0),
        ("append", _plain(), 0),
    ]),
    "flush every message": ({"flush_messages": 1}, [("append", _plain(), 0)] * 4),
    "log append time": ({"message_timestamp_type": "LogAppendTime"}, [("append", _plain(), 0)] * 3),
    "lz4 log": ({"compression_type": "lz4"}, [("append", _plain(), 0)] * 3),
    "v1 log": ({"message_format_version": "0.10.2"}, [("append", _plain(), 0)] * 3),
}


def _general_only(log: Log, records: MemoryRecords, leader_epoch: int) -> None:
    return None  # declines before the clock: Log.append's general path runs alone


def _run(tmp: Path, name: str, props: dict[str, Any], steps: list[Step], listen: bool) -> dict[str, Any]:
    mock = MockTime(auto_tick_ms=1, current_time_ms=NOW)
    log = Log(tmp / name / "topic-0", config(**props), scheduler=mock.scheduler, time=mock)
    heard: list[int] = []
    if listen:
        log.set_log_offsets_listener(type("Listener", (), {"on_high_watermark_updated": lambda self, hw:
                                                           heard.append(hw)})())
    results: list[Any] = []
    try:
        for step in steps:
            if step[0] == "sleep":
                mock.sleep(step[1])
                continue
            records = MemoryRecords(bytes(step[1].buffer))  # each log its own copy of the caller's bytes
            try:
                if step[0] == "follower":
                    results.append(log.append_as_follower(records))
                else:
                    info = log.append(records, leader_epoch=step[2])
                    # A conversion's time is the clock's, not the log's: it is left out of the comparison.
                    info.record_validation_stats = dataclasses.replace(info.record_validation_stats,
                                                                       conversion_time_nanos=0)
                    results.append(info)
            except KafkaLogError as e:
                results.append((type(e), str(e)))
            assert records.buffer == step[1].buffer, "the caller's bytes are never written"
        state = {
            "results": results,
            "heard": heard,
            "log_end_offset": log.log_end_offset_metadata,
            "high_watermark": log.high_watermark,
            "recovery_point": log.recovery_point,
            "log_start_offset": log.log_start_offset,
            "last_stable_offset": log.last_stable_offset,
            "first_unstable": log._first_unstable_offset_metadata,
            "map_end_offset": log.producer_state_manager.map_end_offset,
            "producers": {pid: (e.producer_epoch, e.last_seq, e.last_data_offset, e.current_txn_first_offset)
                          for pid, e in log.producer_state_manager.active_producers().items()},
            "epochs": None if log.leader_epoch_cache is None else list(log.leader_epoch_cache._epochs),
            "segments": [(s.base_offset, s.size(), s.max_timestamp_so_far, s.offset_of_max_timestamp_so_far)
                         for s in log.log_segments()],
            "time": mock.milliseconds(),
        }
        log.flush(including_offset=True)
        log.close()
        state["files"] = {p.name: p.read_bytes() for p in sorted((tmp / name / "topic-0").iterdir())
                          if p.suffix in (".log", ".index", ".timeindex", ".txnindex", ".snapshot")
                          or p.name == "leader-epoch-checkpoint"}
        return state
    finally:
        log.close_handlers()


@pytest.fixture
def kernel_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """What the fused kernel returned, call by call (the real kernel, watched)."""
    calls: list[Any] = []
    from kafkalog import _impl

    class Watched:
        def __getattr__(self, name: str) -> Any:
            return getattr(core, name)

        @staticmethod
        def leader_append_v2_batch(*args: Any, **kwargs: Any) -> Any:
            result = core.leader_append_v2_batch(*args, **kwargs)
            calls.append(result)
            return result

    core = _impl.core
    monkeypatch.setattr(_impl, "core", Watched())
    yield calls


@pytest.mark.parametrize("listen", [False, True], ids=["no listener", "listener"])
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_fused_append_is_the_general_append(impl: ModuleType, tmp_path: Path, scenario: str, listen: bool,
                                            kernel_calls: list[Any], monkeypatch: pytest.MonkeyPatch,
                                            caplog: pytest.LogCaptureFixture) -> None:
    props, steps = SCENARIOS[scenario]
    caplog.set_level(logging.DEBUG, logger="kafkalog.log")
    fused = _run(tmp_path, "fused", props, steps, listen)
    fused_lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Appended message set")]
    taken = sum(isinstance(call, tuple) for call in kernel_calls)
    caplog.clear()
    monkeypatch.setattr(unified_log, "append_one_batch_as_leader", _general_only)
    general = _run(tmp_path, "general", props, steps, listen)
    general_lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Appended message set")]
    for key in general:
        assert fused[key] == general[key], key
    assert fused_lines == general_lines
    for result in fused["results"]:
        assert not isinstance(result, LogAppendInfo) or type(result.record_errors) is list
    # The fused path is really taken where it can be, and only there.
    expected_taken = {"plain": 30, "with an epoch": 10, "mixed": 5, "errors": 2, "compacted, no key": 2,
                      "roll on size": 12, "roll on time": 5, "roll on wall time": 4, "roll on a full index": 12,
                      "roll on offset overflow": 2, "flush every message": 4, "log append time": 0, "lz4 log": 0,
                      "v1 log": 0}
    assert taken == expected_taken[scenario]


def test_scenarios_roll_and_flush_where_they_say(impl: ModuleType, tmp_path: Path) -> None:
    """The scenarios do what they are named for, so the comparison above covers it."""
    def segments(name: str) -> list[int]:
        props, steps = SCENARIOS[name]
        return [base for base, *_ in _run(tmp_path, name, props, steps, False)["segments"]]

    assert len(segments("roll on size")) > 2
    assert segments("roll on time") == [0, 2, 4]
    assert len(segments("roll on wall time")) > 1
    assert len(segments("roll on a full index")) > 2
    assert segments("roll on offset overflow") == [0, 1 << 31]
    props, steps = SCENARIOS["flush every message"]
    state = _run(tmp_path, "flush", props, steps, False)
    assert state["recovery_point"] == state["log_end_offset"].message_offset == 4
    props, steps = SCENARIOS["errors"]
    errors = [r for r in _run(tmp_path, "errors", props, steps, False)["results"] if isinstance(r, tuple)]
    assert [e[0].__name__ for e in errors] == ["CorruptRecordError", "InvalidRecordError", "InvalidTimestampError",
                                               "RecordTooLargeError", "InvalidRecordError", "InvalidRecordError"]


def test_fused_append_of_read_only_and_writable_buffers(impl: ModuleType, tmp_path: Path) -> None:
    """A ``bytes`` batch is copied once and the caller's object never changes; a ``bytearray`` is rewritten in
    place, as the general path rewrites it; a read-only ``memoryview`` is copied."""
    mock = MockTime(current_time_ms=NOW)
    log = Log(tmp_path / "topic-0", config(), scheduler=mock.scheduler, time=mock)
    try:
        sent = bytes(_batch())
        assert log.append(MemoryRecords(sent), leader_epoch=2).last_offset == 0
        assert sent == bytes(_batch())
        own = _batch()
        assert log.append(MemoryRecords(own), leader_epoch=2).last_offset == 1
        assert struct.unpack_from(">qii", own) == (1, len(own) - 12, 2)
        view = memoryview(bytes(_batch()))
        assert log.append(MemoryRecords(view), leader_epoch=2).last_offset == 2
        assert bytes(view) == bytes(_batch())
        assert [b.base_offset for b in log.read(0, log.size).records.batches()] == [0, 1, 2]
    finally:
        log.close()

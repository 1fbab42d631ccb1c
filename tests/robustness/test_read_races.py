"""A read racing the deletion of its segment (issue 15, defect 9).

Retention, truncation and the cleaner close a segment's files while a reader may be inside a read of
them.  A read used to take the file's descriptor number, then call ``pread`` with it: if the deleting
thread closed the descriptor in between, the read failed with ``OSError: Bad file descriptor`` (about once
in 105,000 reads of a log under retention), and had anything opened a file meanwhile, that file got the
number and the read returned its bytes as the segment's.

Now a read counts itself in and out of the descriptor, and a close leaves it open until the last read in
progress is done: a read either completes on the file it started on, or, starting after the close, fails
with a kafkalog error.  The interleaving is forced here: the reader is stopped inside ``os.pread``, after
it took the descriptor, while the other thread deletes the segment and opens a decoy file that would get
the freed descriptor number.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from kafkalog import MemoryRecords
from kafkalog.errors import IllegalStateError, KafkaLogError
from kafkalog.file_message_set import FileMessageSet
from kafkalog.filenames import log_filename
from kafkalog.scheduler import MockTime
from tests.support.log_test_utils import LogFactory, config

T0 = 1_700_000_000_000
WAIT = 10.0  # seconds: only reached when the interleaving is broken


class _PausedRead:
    """Stops the first ``os.pread`` of one thread, after it has its descriptor, until released."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.reader: threading.Thread | None = None
        self.inside = threading.Event()
        self.release = threading.Event()
        real = os.pread

        def pread(fd: int, n: int, offset: int) -> bytes:
            if threading.current_thread() is self.reader and not self.inside.is_set():
                self.inside.set()
                assert self.release.wait(WAIT), "never released"
            return real(fd, n, offset)

        monkeypatch.setattr(os, "pread", pread)

    def run(self, read: Callable[[], Any], meanwhile: Callable[[], None]) -> dict[str, Any]:
        """``read`` in a thread, ``meanwhile`` here while it is stopped in ``os.pread``; what the read
        returned (``"value"``) or raised (``"error"``)."""
        outcome: dict[str, Any] = {}

        def reader() -> None:
            try:
                outcome["value"] = read()
            except BaseException as e:
                outcome["error"] = e

        self.reader = threading.Thread(target=reader, name="reader")
        self.reader.start()
        try:
            assert self.inside.wait(WAIT), "the read never reached os.pread"
            meanwhile()
        finally:
            self.release.set()
            self.reader.join(WAIT)
        assert not self.reader.is_alive()
        return outcome


@pytest.fixture
def decoys(tmp_path: Path) -> Iterator[list[int]]:
    """Descriptors opened on a decoy file while a reader is stopped; closed after the test."""
    opened: list[int] = []
    yield opened
    for fd in opened:
        os.close(fd)


def _open_decoy(tmp_path: Path, size: int, opened: list[int]) -> None:
    """Open a file of ``size`` bytes of 'X' a few times: the first takes the lowest free descriptor,
    which is the one a close just freed."""
    decoy = tmp_path / "decoy"
    decoy.write_bytes(b"X" * size)
    opened.extend(os.open(decoy, os.O_RDONLY) for _ in range(4))


def _check(outcome: dict[str, Any], expected: bytes) -> None:
    """A consistent answer (the segment's bytes), or a kafkalog error; never another file's bytes, never a
    bare OSError."""
    if "error" in outcome:
        error = outcome["error"]
        assert isinstance(error, KafkaLogError), repr(error)
    else:
        assert outcome["value"] == expected


def test_read_racing_delete_reads_its_own_file(impl: ModuleType, tmp_path: Path, decoys: list[int],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    path = log_filename(tmp_path, 0)
    fms = FileMessageSet.open(path)
    for i in range(10):
        fms.append(MemoryRecords.with_records([(b"k", b"v" * 100, T0 + i)], base_offset=i))
    expected = path.read_bytes()
    paused = _PausedRead(monkeypatch)

    def delete() -> None:
        fms.delete()  # closes and unlinks, as retention's deletion does
        _open_decoy(tmp_path, len(expected), decoys)

    _check(paused.run(fms.read_bytes, delete), expected)
    # A read that starts after the close fails as a kafkalog error.
    with pytest.raises(IllegalStateError, match="is closed"):
        fms.read_bytes()


def test_log_read_racing_retention(create_log: LogFactory, mock_time: MockTime, tmp_path: Path,
                                   decoys: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    """``Log.read``, then the records read, while retention deletes the segment (file.delete.delay.ms=0:
    the files are closed at once)."""
    log = create_log(config(segment_bytes=1 << 20, retention_ms=1000, file_delete_delay_ms=0))
    for i in range(5):
        log.append_as_leader(MemoryRecords.with_records([(b"k", b"v" * 100, mock_time.milliseconds() + i)]),
                             leader_epoch=0)
    log.roll()
    mock_time.sleep(2000)  # the first segment is past retention, the next one's record is not
    log.append_as_leader(MemoryRecords.with_records([(b"k", b"new", mock_time.milliseconds())]), leader_epoch=0)
    log.update_high_watermark(log.log_end_offset)
    first = log.segments.first_segment()
    assert first is not None
    expected = first.log.read_bytes()
    paused = _PausedRead(monkeypatch)

    def read() -> bytes:
        return log.read(0, 1 << 20).records.read_bytes()

    def retention() -> None:
        assert log.delete_old_segments() == 1
        assert first.log.channel.closed
        _open_decoy(tmp_path, len(expected), decoys)

    _check(paused.run(read, retention), expected)

"""The LogDirFailureChannel and its handler, alone (Kafka 3.8.0 ``LogDirFailureChannel`` and
``LocalLog.maybeHandleIOException``, which Kafka tests only through the logs and the manager): which errors take
a log dir offline, what the handler raises, and the queue the manager takes the failed dirs from.
"""

from __future__ import annotations

import errno
import logging
import os
import threading
from pathlib import Path

import pytest

from kafkalog.errors import (
    CorruptRecordError,
    IllegalStateError,
    KafkaStorageError,
    LogDirInUseError,
    ReadOnlyError,
)
from kafkalog.fsutil import open_regular, storage_error
from kafkalog.log_dir_failure_channel import LogDirFailureChannel, io_failure, is_io_failure


def _raised(error: BaseException) -> BaseException:
    """``error`` as it is when caught: raised, so that its context and traceback are set."""
    try:
        raise error
    except BaseException as caught:
        return caught


def _converted(path: Path) -> KafkaStorageError:
    """What kafkalog raises where the system refuses a file: ``storage_error(e, ...) from e``, passed on again
    with ``raise storage_error(e, ...) from e`` as the layers above do (which makes it its own cause)."""
    try:
        try:
            open_regular(path, os.O_RDWR)
        except OSError as e:
            raise storage_error(e, f"Opening {path}") from e
    except KafkaStorageError as e:
        try:
            raise storage_error(e, "Opening it again") from e
        except KafkaStorageError as again:
            return again
    raise AssertionError("opened a directory as a file")


def test_which_errors_take_a_log_dir_offline(tmp_path: Path) -> None:
    """Kafka's handler takes an ``IOException``; here an ``OSError`` of the system's own, or a KafkaStorageError
    made from one, even when re-raised as its own cause; not kafkalog's own refusals."""
    eio = OSError(errno.EIO, "Input/output error")
    assert io_failure(eio) is eio
    made = _raised(KafkaStorageError(errno.ENOSPC, "Appending: No space left on device", "/x/0.log"))
    assert io_failure(made) is made
    converted = _converted(tmp_path)  # a directory opened for writing: EISDIR
    assert isinstance(converted, KafkaStorageError) and converted.__cause__ is converted
    found = io_failure(converted)
    assert isinstance(found, IsADirectoryError) and found.errno == errno.EISDIR
    with pytest.raises(KafkaStorageError, match="is a directory, not a regular file") as wrong_kind:
        open_regular(tmp_path, os.O_RDONLY)  # opens, then is found to be a directory: kafkalog's own refusal
    assert not is_io_failure(wrong_kind.value)
    handled = KafkaStorageError("already handled")
    handled.log_dir = "/x"
    handled.__cause__ = eio
    for not_io in (KafkaStorageError("The memory mapped buffer for log of t-0 is already closed"), handled,
                   ReadOnlyError("opened read-only"), LogDirInUseError("held by a LogManager"),
                   CorruptRecordError("bad CRC"), ValueError("not an OSError")):
        assert not is_io_failure(not_io), not_io


def test_a_dir_goes_offline_once_and_is_queued_once(caplog: pytest.LogCaptureFixture) -> None:
    """Kafka's ``maybeAddOfflineLogDir``: logged at every report, marked offline and queued the first time;
    ``takeNextOfflineLogDir`` hands each dir out once, in order."""
    channel = LogDirFailureChannel(2)
    with caplog.at_level(logging.ERROR, logger="kafkalog.log_dir_failure_channel"):
        for log_dir in ("/a", "/b", "/a"):
            channel.maybe_add_offline_log_dir(log_dir, f"{log_dir} failed", OSError(errno.EIO, "EIO"))
    assert [r.getMessage() for r in caplog.records] == ["/a failed", "/b failed", "/a failed"]
    assert channel.has_offline_log_dir("/a") and channel.has_offline_log_dir(Path("/b"))
    assert not channel.has_offline_log_dir("/c")
    assert channel.offline_log_dirs() == ["/a", "/b"]
    assert [channel.take_next_offline_log_dir(0) for _ in range(3)] == ["/a", "/b", None]
    assert channel.has_offline_log_dir("/a")  # offline for good: taking it from the queue changes nothing


def test_taking_waits_for_the_next_failure() -> None:
    """``takeNextOfflineLogDir`` blocks until a dir fails (here: a thread reports one while the test waits)."""
    channel = LogDirFailureChannel()
    waiting = threading.Event()
    taken: list[str | None] = []

    def take() -> None:
        waiting.set()
        taken.append(channel.take_next_offline_log_dir())

    thread = threading.Thread(target=take)
    thread.start()
    assert waiting.wait(10)
    channel.maybe_add_offline_log_dir("/a", "failed", OSError(errno.EIO, "EIO"))
    thread.join(10)
    assert taken == ["/a"]
    assert channel.take_next_offline_log_dir(0.01) is None


def test_more_failed_dirs_than_the_queue_holds() -> None:
    """Kafka's queue holds one entry per log dir (``ArrayBlockingQueue.add`` throws past it); the dir is offline
    all the same."""
    channel = LogDirFailureChannel(1)
    channel.maybe_add_offline_log_dir("/a", "failed", OSError(errno.EIO, "EIO"))
    with pytest.raises(IllegalStateError, match="Queue full"):
        channel.maybe_add_offline_log_dir("/b", "failed", OSError(errno.EIO, "EIO"))
    assert channel.has_offline_log_dir("/b")


def test_the_handler_takes_the_dir_offline_and_then_refuses_it() -> None:
    """``maybeHandleIOException``: an I/O error becomes a KafkaStorageError saying what was being done, with the
    error as its cause, its errno, and the dir; the dir is offline, and the next use of the handler refuses to
    start.  Its message is only made when it is needed."""
    channel = LogDirFailureChannel()
    made: list[str] = []

    def message() -> str:
        made.append("made")
        return "Error while appending records to t-0 in dir /a"

    with channel.maybe_handle_io_exception("/a", message):
        pass
    assert made == []
    eio = OSError(errno.EIO, "Input/output error")
    with pytest.raises(KafkaStorageError) as raised, channel.maybe_handle_io_exception("/a", message):
        raise eio
    assert str(raised.value) == "Error while appending records to t-0 in dir /a: [Errno 5] Input/output error"
    assert raised.value.__cause__ is eio and raised.value.errno == errno.EIO and raised.value.log_dir == "/a"
    assert channel.has_offline_log_dir("/a") and made == ["made"]
    entered = False
    offline = r"^The log dir /a is already offline due to a previous IO exception\.$"
    with pytest.raises(KafkaStorageError, match=offline) as refused, channel.maybe_handle_io_exception("/a", "flush"):
        entered = True
    assert not entered and refused.value.log_dir == "/a"
    with channel.maybe_handle_io_exception("/b", "another dir"):
        pass


def test_the_handler_lets_other_errors_through_and_nests() -> None:
    """An error that is not an I/O error leaves the handler unchanged and the dir online; an error an inner
    handler raised passes an outer one unchanged (a flush inside an append), as Kafka's KafkaStorageException
    passes its handler."""
    channel = LogDirFailureChannel()
    closed = KafkaStorageError("The memory mapped buffer for log of t-0 is already closed")
    with pytest.raises(KafkaStorageError) as raised, channel.maybe_handle_io_exception("/a", "closing"):
        raise closed
    assert raised.value is closed and not channel.has_offline_log_dir("/a")
    with pytest.raises(CorruptRecordError), channel.maybe_handle_io_exception("/a", "appending"):
        raise CorruptRecordError("bad CRC")
    assert not channel.has_offline_log_dir("/a")
    with pytest.raises(KafkaStorageError) as nested, channel.maybe_handle_io_exception("/a", "appending"), \
            channel.maybe_handle_io_exception("/a", "flushing"):
        raise OSError(errno.EIO, "Input/output error")
    assert str(nested.value).startswith("flushing: ")
    assert isinstance(nested.value.__cause__, OSError) and not isinstance(nested.value.__cause__, KafkaStorageError)
